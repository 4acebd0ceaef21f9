#!/bin/bash
# Commit 9793e82 (the kernels of 4e79973, plus the GPU test of whole-head verify blocks with flushes): every GPU test,
# compute-sanitizer racecheck and memcheck on the new test.
ROOT=$PWD
B=$ROOT/.carry/b98
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
xz -dc $B/kvb.xz > $B/kvb && chmod +x $B/kvb
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w98; mkdir -p $W
trap 'cp $ROOT/.carry/dev98.sh $W/; tar czf $OUT/dev98.tgz -C $W .' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $W/info.txt
$B/kvb info >> $W/info.txt 2>&1; tail -1 $W/info.txt
$B/tests/kvb_tests --gtest_filter='*Gpu*:CapacityProbe*:LaunchValidation*' > $W/gtest_gpu.txt 2>&1; echo "gtest rc=$? $SECONDS s"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST|WholeHead" $W/gtest_gpu.txt | head
F='KVBufferVerifyGpu.WholeHead*'
timeout 120 compute-sanitizer --tool racecheck $B/tests/kvb_tests --gtest_filter=$F > $W/sanitizer_racecheck.txt 2>&1; echo "racecheck rc=$? $SECONDS s"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $W/sanitizer_racecheck.txt | tail -3
timeout 60 compute-sanitizer --tool memcheck $B/tests/kvb_tests --gtest_filter=$F > $W/sanitizer_memcheck.txt 2>&1; echo "memcheck rc=$? $SECONDS s"; grep -E "ERROR SUMMARY|PASSED|FAILED" $W/sanitizer_memcheck.txt | tail -2
