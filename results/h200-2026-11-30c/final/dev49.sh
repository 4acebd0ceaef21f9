#!/bin/bash
# The final kernels (f4f7b76, those of 13fac37): compute-sanitizer racecheck and memcheck on the KVBuffer verify
# tests (golden draft4, PDL verify check, long buffers at the edge head sizes, sliced heads) and the decode padding
# and PDL check tests.
ROOT=$PWD
B=$ROOT/.carry/b48
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=$OUT/w49; mkdir -p $W
cp $ROOT/.carry/dev49.sh $W/
timeout 200 compute-sanitizer --tool racecheck $B/tests/kvb_tests --gtest_filter='VerifyGpu.GoldenDraft4:PdlLaunchGpu.VerifyCheck*:KVBufferVerifyGpu.LongBuffers*:KVBufferVerifyGpu.SlicedHeads*:KVBufferDecodeGpu.Padding*' > $W/sanitizer_racecheck.txt 2>&1; echo "racecheck rc=$?"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $W/sanitizer_racecheck.txt | tail -3
timeout 200 compute-sanitizer --tool memcheck $B/tests/kvb_tests --gtest_filter='VerifyGpu.GoldenDraft4:PdlLaunchGpu.VerifyCheck*:PdlLaunchGpu.CheckAgainst*:KVBufferVerifyGpu.SlicedHeads*:KVBufferDecodeGpu.Padding*:StatelessGpu.Bf16*' > $W/sanitizer_memcheck.txt 2>&1; echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $W/sanitizer_memcheck.txt | tail -3
