#!/bin/bash
# Commit f4f7b76 (the kernels of 13fac37; capacity warm-up at the wide batch; cached occupancy queries): every GPU
# test, then the whole decode grid (resumable), then the capacity run when time is left.
ROOT=$PWD
B=$ROOT/.carry/b48
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w48; mkdir -p $W/results
trap 'cp $ROOT/.carry/dev48.sh $W/; tar czf $OUT/dev48.tgz -C $W .' EXIT
nvidia-smi > $W/nvidia_smi.txt 2>&1
$B/kvb info > $W/info.txt 2>&1
$B/tests/kvb_tests --gtest_filter='*Gpu*:CapacityProbe*:LaunchValidation*' > $W/gtest_gpu.txt 2>&1; rc=$?; echo "gtest rc=$rc"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_gpu.txt | head -20
[ $rc -eq 0 ] || exit 1
left=$((585 - SECONDS)); echo "decode sweep gets ${left} s (resumable)"
timeout $left $B/kvb sweep --config experiments/decode_latency.toml --out $W/results/decode_latency.csv > $W/decode.log 2>&1; echo "decode rc=$?"; tail -2 $W/decode.log
