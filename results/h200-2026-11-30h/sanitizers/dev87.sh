#!/bin/bash
# Commit fd355f2: compute-sanitizer racecheck and memcheck on the 64-column KVBuffer decode tests and a batch-64 sweep point.
ROOT=$PWD
B=$ROOT/.carry/b86
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
xz -dc $B/kvb.xz > $B/kvb && chmod +x $B/kvb
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w87; mkdir -p $W
trap 'cp $ROOT/.carry/dev87.sh $W/; tar czf $OUT/dev87.tgz -C $W .' EXIT
F='KVBufferDecodeGpu.WideSlices*:KVBufferDecodeLaunchGpu.*'
timeout 200 compute-sanitizer --tool racecheck $B/tests/kvb_tests --gtest_filter=$F > $W/sanitizer_racecheck.txt 2>&1; echo "racecheck rc=$? $SECONDS s"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $W/sanitizer_racecheck.txt | tail -3
timeout 100 compute-sanitizer --tool memcheck $B/tests/kvb_tests --gtest_filter=$F:KVBufferDecodeGpu.Padding* > $W/sanitizer_memcheck.txt 2>&1; echo "memcheck rc=$? $SECONDS s"; grep -E "ERROR SUMMARY|PASSED|FAILED" $W/sanitizer_memcheck.txt | tail -3
timeout 60 compute-sanitizer --tool memcheck $B/kvb sweep --config experiments/decode_latency.toml --set variant=kvbuffer --set launch=pdl,plain --set batch=64 --set buffer_size=4,8 --set layers=2 --no-cupti --min-samples 1 --max-seconds 0.01 --out $W/san_sweep.csv > $W/sanitizer_memcheck_sweep.txt 2>&1; echo "memcheck sweep rc=$? $SECONDS s"; grep -E "ERROR SUMMARY" $W/sanitizer_memcheck_sweep.txt | tail -1
