#!/bin/bash
# Verify blocks asking L2 for the checkpoint slice of the block one resident wave on (uncommitted, on c7f4a02;
# KVB_NO_AHEAD=1 turns it off in the same build): the verify GPU tests, and interleaved rounds of spec_verify (4 drafts)
# against 63e183a's kvb (base) and the same build without the prefetch (off).
ROOT=$PWD
B=$ROOT/.carry/b99
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
xz -dc $B/kvb.xz > $B/kvb && chmod +x $B/kvb
xz -dc $ROOT/.carry/b91/kvb.xz > /tmp/kvb_base && chmod +x /tmp/kvb_base
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w99; mkdir -p $W/ab
trap 'cp $ROOT/.carry/dev99.sh $W/; tar czf $OUT/dev99.tgz -C $W .' EXIT
$B/tests/kvb_tests --gtest_filter='*Verify*Gpu*:VerifyGpu*:PdlLaunchGpu.*Verify*' > $W/gtest_verify.txt 2>&1; echo "gtest rc=$? $SECONDS s"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_verify.txt | head
SV="--config experiments/spec_verify.toml --set variant=kvbuffer_verify --set draft_tokens=4 --set buffer_size=8,16 --set batch=64,256 --no-cupti --max-seconds 0.4"
for r in 1 2; do
  timeout 45 /tmp/kvb_base sweep $SV --out $W/ab/ab_base_$r.csv > /dev/null 2>&1; echo "base $r rc=$? $SECONDS s"
  timeout 45 $B/kvb sweep $SV --out $W/ab/ab_new_$r.csv > /dev/null 2>&1; echo "new $r rc=$? $SECONDS s"
  KVB_NO_AHEAD=1 timeout 45 $B/kvb sweep $SV --out $W/ab/ab_off_$r.csv > /dev/null 2>&1; echo "off $r rc=$? $SECONDS s"
done
