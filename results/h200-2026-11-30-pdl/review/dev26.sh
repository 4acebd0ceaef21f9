#!/bin/bash
ROOT=$PWD
ln -sfn $ROOT/.carry/b26 $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
B=$ROOT/build-lead
W=/tmp/w26; mkdir -p $W
trap 'cp $ROOT/.carry/dev26.sh $W/; tar czf $OUT/dev26.tgz -C $W .' EXIT
$B/tests/kvb_tests --gtest_filter='*Gpu*' > $W/gtest_gpu_review.txt 2>&1; echo "gtest rc=$?"; grep -E "^\[  FAILED|PASSED  \]" $W/gtest_gpu_review.txt | head
timeout 120 compute-sanitizer --tool memcheck $B/tests/kvb_tests --gtest_filter='PdlLaunchGpu.CheckAgainstReferencePassesWithPdl:VerifyProblemGpu.*' > $W/sanitizer_memcheck_review.txt 2>&1; echo "memcheck rc=$?"; tail -1 $W/sanitizer_memcheck_review.txt
$B/kvb sweep --config experiments/ci_smoke.toml --no-cupti --max-seconds 0.3 --out $W/ci_smoke_review.csv > $W/ci_smoke_review.log 2>&1; echo "smoke rc=$?"; tail -1 $W/ci_smoke_review.log
