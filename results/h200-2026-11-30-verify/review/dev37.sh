#!/bin/bash
# Review commit: the verify workload's GPU tests (the check now commits and verifies again) and the extended check on
# Qwen3-Next points (a short sweep, not timed for comparison).
ROOT=$PWD
ln -sfn $ROOT/.carry/b37 $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
B=$ROOT/build-lead
W=/tmp/w37; mkdir -p $W
trap 'cp $ROOT/.carry/dev37.sh $W/; tar czf $OUT/dev37.tgz -C $W .' EXIT
$B/tests/kvb_tests --gtest_filter='VerifyProblemGpu.*:KVBufferVerifyGpu.SlicedHeads*:VerifyGpu.*:VerifyValidation.*' > $W/gtest_verify_review.txt 2>&1; echo "gtest rc=$?"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_verify_review.txt | head
timeout 60 $B/kvb sweep --config experiments/spec_verify.toml --set variant=kvbuffer_verify --set draft_tokens=1,4,8 --set buffer_size=8 --no-cupti --max-seconds 0.2 --out $W/check_review.csv > $W/check_review.log 2>&1; echo "sweep rc=$?"; tail -1 $W/check_review.log
python3 -c "
import csv
for r in csv.DictReader(open('/tmp/w37/check_review.csv')): print(r['batch'],r['draft_tokens'],r['accepted'],r['max_rel_err'],r['max_rel_err_o'],r['status'][:80])
"
