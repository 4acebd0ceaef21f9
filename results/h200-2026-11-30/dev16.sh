#!/bin/bash
ROOT=$PWD
ln -sfn $ROOT/.carry/build-lead $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
B=$ROOT/build-lead
W=/tmp/w16; mkdir -p $W
trap 'cp $ROOT/.carry/dev16.sh $W/; tar czf $OUT/dev16.tgz -C $W .' EXIT
timeout 120 compute-sanitizer --tool memcheck $B/tests/kvb_tests --gtest_filter='VerifyGpu.GoldenDraft4:KVBufferVerifyGpu.*:VerifyProblemGpu.KVBuffer*' > $W/sanitizer_memcheck_verify.txt 2>&1; echo "mem rc=$?"; grep -E "PASSED|FAILED" $W/sanitizer_memcheck_verify.txt; tail -1 $W/sanitizer_memcheck_verify.txt
