#!/bin/bash
ROOT=$PWD
ln -sfn $ROOT/.carry/build-lead $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
B=$ROOT/build-lead
W=/tmp/w18; mkdir -p $W
trap 'cp $ROOT/.carry/dev18.sh $W/; tar czf $OUT/dev18.tgz -C $W .' EXIT
timeout 170 $B/tests/kvb_tests > $W/gtest_all_mended.txt 2>&1; echo "gtest rc=$?"; grep -E "^\[  FAILED|PASSED  \]|tests ran" $W/gtest_all_mended.txt | head
F='VerifyGpu.GoldenDraft4:KVBufferVerifyGpu.*:RawVerifyGpu.*'
for tool in memcheck racecheck; do
timeout 50 compute-sanitizer --tool $tool $B/tests/kvb_tests --gtest_filter="$F" > $W/sanitizer_${tool}_mended.txt 2>&1; echo "$tool rc=$?"; grep -E "PASSED|FAILED" $W/sanitizer_${tool}_mended.txt; tail -1 $W/sanitizer_${tool}_mended.txt
done
