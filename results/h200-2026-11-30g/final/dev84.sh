#!/bin/bash
# Final commit 44bdfba (review mend, PTX identical to b3f9109): every GPU test, compute-sanitizer on the stateless and
# KVBuffer decode tests, kvb info.
ROOT=$PWD
B=$ROOT/.carry/b84
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
xz -dc $B/kvb.xz > $B/kvb && chmod +x $B/kvb
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w84; mkdir -p $W
trap 'cp $ROOT/.carry/dev84.sh $W/; tar czf $OUT/dev84.tgz -C $W .' EXIT
$B/kvb info > $W/info.txt 2>&1; tail -2 $W/info.txt
$B/tests/kvb_tests --gtest_filter='*Gpu*:CapacityProbe*:LaunchValidation*' > $W/gtest_gpu.txt 2>&1; echo "gtest rc=$? $SECONDS s"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_gpu.txt | head
timeout 90 compute-sanitizer --tool racecheck $B/tests/kvb_tests --gtest_filter='StatelessGpu.*:KVBufferDecodeGpu.*' > $W/sanitizer_racecheck.txt 2>&1; echo "racecheck rc=$? $SECONDS s"; grep -E "RACECHECK SUMMARY" $W/sanitizer_racecheck.txt | tail -1
timeout 90 compute-sanitizer --tool memcheck $B/tests/kvb_tests --gtest_filter='StatelessGpu.*:KVBufferDecodeGpu.*' > $W/sanitizer_memcheck.txt 2>&1; echo "memcheck rc=$? $SECONDS s"; grep -E "ERROR SUMMARY" $W/sanitizer_memcheck.txt | tail -1
