#!/bin/bash
# Verify with a look-ahead L2 prefetch of a later block's checkpoint slice (branch verify-lookahead, b115): the
# verify GPU tests with the look-ahead off and at one wave, and two interleaved rounds of spec_verify (4 drafts, B = 8
# and 16, batch 64 and 256) of main's final build (base, b113) and this build at look-aheads of 0, 100, 50 and 200
# percent of a wave (KVB_VERIFY_LOOKAHEAD).
ROOT=$PWD
B=$ROOT/.carry/b115; A=$ROOT/.carry/b113
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
xz -dc $B/kvb.xz > $B/kvb && chmod +x $B/kvb
xz -dc $A/kvb.xz > $A/kvb && chmod +x $A/kvb
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w115; mkdir -p $W/ab
trap 'cp $ROOT/.carry/dev115.sh $W/; tar czf $OUT/dev115.tgz -C $W .' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $W/info.txt
$B/tests/kvb_tests --gtest_filter='*Verify*Gpu*:VerifyGpu*:PdlLaunchGpu.*Verify*' > $W/gtest_verify.txt 2>&1; echo "gtest rc=$? $SECONDS s"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_verify.txt | head
grep -E "Failure|Expected|actual|Which is|which is" $W/gtest_verify.txt | head -20
SV="--config experiments/spec_verify.toml --set variant=kvbuffer_verify --set draft_tokens=4 --set buffer_size=8,16 --set batch=64,256 --no-cupti --max-seconds 0.4"
KVB_VERIFY_LOOKAHEAD=100 $B/tests/kvb_tests --gtest_filter='*Verify*Gpu*:VerifyGpu*:PdlLaunchGpu.*Verify*' > $W/gtest_verify_la100.txt 2>&1; echo "gtest la100 rc=$? $SECONDS s"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_verify_la100.txt | head
for r in 1 2; do
  timeout 60 $A/kvb sweep $SV --out $W/ab/ab_base_$r.csv > /dev/null 2>&1; echo "base $r rc=$? $SECONDS s"
  for la in 0 100 50 200; do
    KVB_VERIFY_LOOKAHEAD=$la timeout 60 $B/kvb sweep $SV --out $W/ab/ab_la${la}_$r.csv > $W/ab/la${la}_$r.log 2>&1; echo "la$la $r rc=$? $SECONDS s"
  done
done
grep -h "status\|failed" $W/ab/la100_1.log | head -5
