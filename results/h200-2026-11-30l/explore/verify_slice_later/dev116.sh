#!/bin/bash
# When a later verify block issues its checkpoint slice's copies (branch verify-slice-later, b116,
# KVB_VERIFY_SLICE_AT): 0 as main (right after its buffer entries), 1 after the drafts are normalised, 2 half at each,
# 3 half at 0 and half after the drafts' barrier. The verify GPU tests at 1, 2 and 3, and two interleaved rounds of
# spec_verify (4 drafts, B = 8 and 16, batch 64 and 256) of main's final build (base, b113) and this build at each.
ROOT=$PWD
B=$ROOT/.carry/b116; A=$ROOT/.carry/b113
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
xz -dc $B/kvb.xz > $B/kvb && chmod +x $B/kvb
xz -dc $A/kvb.xz > $A/kvb && chmod +x $A/kvb
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w116; mkdir -p $W/ab
trap 'cp $ROOT/.carry/dev116.sh $W/; tar czf $OUT/dev116.tgz -C $W .' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $W/info.txt
for at in 1 2 3; do
  KVB_VERIFY_SLICE_AT=$at $B/tests/kvb_tests --gtest_filter='*Verify*Gpu*:VerifyGpu*:PdlLaunchGpu.*Verify*' > $W/gtest_verify_at$at.txt 2>&1; echo "gtest at$at rc=$? $SECONDS s"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_verify_at$at.txt | head -5
done
SV="--config experiments/spec_verify.toml --set variant=kvbuffer_verify --set draft_tokens=4 --set buffer_size=8,16 --set batch=64,256 --no-cupti --max-seconds 0.4"
for r in 1 2; do
  timeout 60 $A/kvb sweep $SV --out $W/ab/ab_base_$r.csv > /dev/null 2>&1; echo "base $r rc=$? $SECONDS s"
  for at in 0 1 2 3; do
    KVB_VERIFY_SLICE_AT=$at timeout 60 $B/kvb sweep $SV --out $W/ab/ab_at${at}_$r.csv > $W/ab/at${at}_$r.log 2>&1; echo "at$at $r rc=$? $SECONDS s"
  done
done
grep -h "status\|failed" $W/ab/at3_1.log | head -5
