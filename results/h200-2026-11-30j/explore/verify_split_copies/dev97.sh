#!/bin/bash
# Verify with the checkpoint slice copied by the block's upper half, requested before the buffer position (uncommitted,
# on 9793e82): the verify GPU tests, and an interleaved A/B of spec_verify (4 drafts) against 63e183a's kvb.
ROOT=$PWD
B=$ROOT/.carry/b97
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
xz -dc $B/kvb.xz > $B/kvb && chmod +x $B/kvb
xz -dc $ROOT/.carry/b91/kvb.xz > /tmp/kvb_base && chmod +x /tmp/kvb_base
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w97; mkdir -p $W/ab
trap 'cp $ROOT/.carry/dev97.sh $W/; tar czf $OUT/dev97.tgz -C $W .' EXIT
$B/tests/kvb_tests --gtest_filter='*Verify*Gpu*:VerifyGpu*:PdlLaunchGpu.*Verify*' > $W/gtest_verify.txt 2>&1; echo "gtest rc=$? $SECONDS s"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_verify.txt | head
SV="--config experiments/spec_verify.toml --set variant=kvbuffer_verify --set draft_tokens=4 --set buffer_size=8,16 --set batch=64,256 --no-cupti --max-seconds 0.4"
for r in 1 2; do for v in base new; do bin=/tmp/kvb_base; [ $v = new ] && bin=$B/kvb
  timeout 45 $bin sweep $SV --out $W/ab/ab_${v}_$r.csv > $W/ab/ab_${v}_$r.log 2>&1; echo "ab $v $r rc=$? $SECONDS s"
done; done
