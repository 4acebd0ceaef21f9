#!/bin/bash
# Commit 5a5595c (review: host-side only, kernel PTX unchanged): every GPU test and the capacity probe, and the CI
# smoke grid through --devices all (the multi-GPU path now reads --out once).
ROOT=$PWD
B=$ROOT/.carry/b54
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=$OUT/w54; mkdir -p $W
cp $ROOT/.carry/dev54.sh $W/
$B/tests/kvb_tests --gtest_filter='*Gpu*:CapacityProbe*:LaunchValidation*' > $W/gtest_gpu.txt 2>&1; echo "gtest rc=$?"; grep -E "^\[  FAILED|PASSED  \]" $W/gtest_gpu.txt | head
timeout 60 $B/kvb sweep --config experiments/ci_smoke.toml --devices all --no-cupti --max-seconds 0.1 --out $W/smoke_devices.csv > $W/smoke_devices.log 2>&1; echo "devices rc=$?"; tail -1 $W/smoke_devices.log
