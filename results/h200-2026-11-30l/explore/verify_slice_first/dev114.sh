#!/bin/bash
# Verify with the checkpoint slice copied first (branch verify-slice-first, b114): the verify GPU tests, racecheck on
# the KVBuffer verify tests, and two interleaved rounds of spec_verify (4 drafts, B = 8 and 16, batch 64 and 256) of
# main's final build (base, b113), this build (new), and this build with a due row's fold not storing (diag, timing
# only: KVB_DIAG_FOLD_NO_STORE).
ROOT=$PWD
B=$ROOT/.carry/b114; A=$ROOT/.carry/b113
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
xz -dc $B/kvb.xz > $B/kvb && chmod +x $B/kvb
xz -dc $A/kvb.xz > $A/kvb && chmod +x $A/kvb
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w114; mkdir -p $W/ab
trap 'cp $ROOT/.carry/dev114.sh $W/; tar czf $OUT/dev114.tgz -C $W .' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $W/info.txt
$B/tests/kvb_tests --gtest_filter='*Verify*Gpu*:VerifyGpu*:PdlLaunchGpu.*Verify*' > $W/gtest_verify.txt 2>&1; echo "gtest rc=$? $SECONDS s"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_verify.txt | head
grep -E "Failure|Expected|actual|Which is|which is" $W/gtest_verify.txt | head -20
SV="--config experiments/spec_verify.toml --set variant=kvbuffer_verify --set draft_tokens=4 --set buffer_size=8,16 --set batch=64,256 --no-cupti --max-seconds 0.4"
for r in 1 2; do
  timeout 60 $A/kvb sweep $SV --out $W/ab/ab_base_$r.csv > /dev/null 2>&1; echo "base $r rc=$? $SECONDS s"
  timeout 60 $B/kvb sweep $SV --out $W/ab/ab_new_$r.csv > $W/ab/new_$r.log 2>&1; echo "new $r rc=$? $SECONDS s"
  KVB_DIAG_FOLD_NO_STORE=1 timeout 60 $B/kvb sweep $SV --out $W/ab/ab_diag_$r.csv > /dev/null 2>&1; echo "diag $r rc=$? $SECONDS s"
done
grep -h "status\|failed" $W/ab/new_1.log | head -5
F='KVBufferVerifyGpu.*'
timeout 150 compute-sanitizer --tool racecheck $B/tests/kvb_tests --gtest_filter=$F > $W/sanitizer_racecheck.txt 2>&1; echo "racecheck rc=$? $SECONDS s"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $W/sanitizer_racecheck.txt | tail -3
