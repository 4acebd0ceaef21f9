#!/bin/bash
# Final verify kernels (commit 74cb87d: review mends over 5df8bc6): every GPU test, compute-sanitizer on the verify
# tests, kvb info, the spec_verify grid (bounded to finish inside the session's device time) and kvb compare against
# the run of 5df8bc6.
ROOT=$PWD
B=$ROOT/.carry/b70
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
xz -dc $B/kvb.xz > $B/kvb && chmod +x $B/kvb
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w70; mkdir -p $W/results
trap 'cp $ROOT/.carry/dev70.sh $W/; tar czf $OUT/dev70.tgz -C $W .' EXIT
nvidia-smi > $W/nvidia_smi.txt 2>&1
$B/kvb info > $W/info.txt 2>&1
$B/tests/kvb_tests --gtest_filter='*Gpu*:CapacityProbe*:LaunchValidation*' > $W/gtest_gpu.txt 2>&1; rc=$?; echo "gtest rc=$rc"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_gpu.txt | head -20
[ $rc -eq 0 ] || exit 1
timeout 60 compute-sanitizer --tool racecheck $B/tests/kvb_tests --gtest_filter='VerifyGpu.GoldenDraft4:PdlLaunchGpu.VerifyCheck*:KVBufferVerifyGpu.LongBuffers*:KVBufferVerifyGpu.SlicedHeads*' > $W/sanitizer_racecheck.txt 2>&1; echo "racecheck rc=$?"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $W/sanitizer_racecheck.txt | tail -2
timeout 60 compute-sanitizer --tool memcheck $B/tests/kvb_tests --gtest_filter='VerifyGpu.GoldenDraft4:PdlLaunchGpu.VerifyCheck*:KVBufferVerifyGpu.*:RecurrentVerifyGpu.OutputsIntermediate*:WarpSumScatterGpu.*' > $W/sanitizer_memcheck.txt 2>&1; echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $W/sanitizer_memcheck.txt | tail -2
left=$((300 - SECONDS)); echo "spec_verify gets ${left} s (resumable)"
timeout $left $B/kvb sweep --config experiments/spec_verify.toml --out $W/results/spec_verify.csv > $W/spec_verify.log 2>&1; echo "sv rc=$?"; tail -1 $W/spec_verify.log
$B/kvb compare results/spec_verify.csv $W/results/spec_verify.csv --markdown > $W/compare_spec_verify.md 2>&1; echo "compare rc=$?"
$B/kvb compare results/spec_verify.csv $W/results/spec_verify.csv --metric verify_us --markdown > $W/compare_spec_verify_alone.md 2>&1
grep "kvb compare" $W/compare_spec_verify.md $W/compare_spec_verify_alone.md
