#!/bin/bash
ROOT=$PWD
ln -sfn $ROOT/.carry/build-lead $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
B=$ROOT/build-lead
W=/tmp/w14; mkdir -p $W
trap 'cp $ROOT/.carry/dev14.sh $W/; tar czf $OUT/dev14.tgz -C $W .' EXIT
F='VerifyGpu.GoldenDraft4:KVBufferVerifyGpu.*:RecurrentVerifyGpu.*'
timeout 150 compute-sanitizer --tool racecheck $B/tests/kvb_tests --gtest_filter="$F" > $W/sanitizer_racecheck_verify.txt 2>&1; echo "racecheck rc=$?"; grep -E "PASSED|FAILED" $W/sanitizer_racecheck_verify.txt; tail -1 $W/sanitizer_racecheck_verify.txt
$B/kvb sweep --config experiments/ci_smoke.toml --out $W/ci_smoke.csv > $W/ci_smoke.log 2>&1; echo "smoke rc=$?"
$B/kvb compare results/baseline/ci_smoke.csv $W/ci_smoke.csv --threshold 5 --markdown > $W/compare_smoke_old_baseline.md 2>&1; echo "compare rc=$?"; cat $W/compare_smoke_old_baseline.md | tail -15
