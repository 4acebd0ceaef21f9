#!/bin/bash
# The final commit of this work (kernels of 6a6d3bb; the raw form's fold through fma_rows, its PTX differing in
# register names only): every GPU test, and the CI verify smoke grid against the committed spec_verify.csv.
ROOT=$PWD
B=$ROOT/.carry/b62
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
xz -dc $B/kvb.xz > $B/kvb && chmod +x $B/kvb
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w62; mkdir -p $W
trap 'cp $ROOT/.carry/dev62.sh $W/; tar czf $OUT/dev62.tgz -C $W .' EXIT
$B/tests/kvb_tests --gtest_filter='*Gpu*:CapacityProbe*:LaunchValidation*' > $W/gtest_gpu.txt 2>&1; rc=$?; echo "gtest rc=$rc"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_gpu.txt | head -20
timeout 60 $B/kvb sweep --config experiments/ci_smoke_verify.toml --no-cupti --out $W/smoke_verify.csv > $W/smoke_verify.log 2>&1; echo "smoke verify rc=$?"
$B/kvb compare results/spec_verify.csv $W/smoke_verify.csv > $W/compare_smoke_verify.txt 2>&1; echo "compare rc=$?"; head -3 $W/compare_smoke_verify.txt
