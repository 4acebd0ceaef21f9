#!/bin/bash
# main after the verify tests' rig helpers (commit HEAD; kernels as f396513): every GPU GoogleTest test, and
# compute-sanitizer racecheck and memcheck on the KVBuffer verify tests.
ROOT=$PWD
B=$ROOT/.carry/b117
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
xz -dc $B/kvb.xz > $B/kvb && chmod +x $B/kvb  # the CLI tests run it
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w117; mkdir -p $W
trap 'cp $ROOT/.carry/dev117.sh $W/; tar czf $OUT/dev117.tgz -C $W .' EXIT
(cd /work/main && $B/tests/kvb_tests --gtest_filter='*Gpu*:CapacityProbe*:LaunchValidation*' > $W/gtest_gpu.txt 2>&1); echo "gtest rc=$? $SECONDS s"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_gpu.txt | head
F='KVBufferVerifyGpu.*'
timeout 200 compute-sanitizer --tool racecheck $B/tests/kvb_tests --gtest_filter=$F > $W/sanitizer_racecheck.txt 2>&1; echo "racecheck rc=$? $SECONDS s"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $W/sanitizer_racecheck.txt | tail -3
timeout 200 compute-sanitizer --tool memcheck $B/tests/kvb_tests --gtest_filter=$F > $W/sanitizer_memcheck.txt 2>&1; echo "memcheck rc=$? $SECONDS s"; grep -E "ERROR SUMMARY|PASSED|FAILED" $W/sanitizer_memcheck.txt | tail -2
