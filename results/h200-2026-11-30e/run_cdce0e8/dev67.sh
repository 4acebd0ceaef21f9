#!/bin/bash
# Final verify kernels of this work (buffer products summed at once with batched key requests, weights on the last
# warp, draft pairs enumerated, early first delta with the keys in shared memory; commit cdce0e8): every GPU test,
# compute-sanitizer on the verify tests, kvb info, the spec_verify grid and buffer_form_verify (4 drafts), and kvb
# compare against the committed spec_verify.csv.
ROOT=$PWD
B=$ROOT/.carry/b67
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
xz -dc $B/kvb.xz > $B/kvb && chmod +x $B/kvb
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w67; mkdir -p $W/results
trap 'cp $ROOT/.carry/dev67.sh $W/; tar czf $OUT/dev67.tgz -C $W .' EXIT
nvidia-smi > $W/nvidia_smi.txt 2>&1
$B/kvb info > $W/info.txt 2>&1
$B/tests/kvb_tests --gtest_filter='*Gpu*:CapacityProbe*:LaunchValidation*' > $W/gtest_gpu.txt 2>&1; rc=$?; echo "gtest rc=$rc"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_gpu.txt | head -20
[ $rc -eq 0 ] || exit 1
timeout 100 compute-sanitizer --tool racecheck $B/tests/kvb_tests --gtest_filter='VerifyGpu.GoldenDraft4:PdlLaunchGpu.VerifyCheck*:KVBufferVerifyGpu.LongBuffers*:KVBufferVerifyGpu.SlicedHeads*' > $W/sanitizer_racecheck.txt 2>&1; echo "racecheck rc=$?"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $W/sanitizer_racecheck.txt | tail -2
timeout 100 compute-sanitizer --tool memcheck $B/tests/kvb_tests --gtest_filter='VerifyGpu.GoldenDraft4:PdlLaunchGpu.VerifyCheck*:KVBufferVerifyGpu.*:RecurrentVerifyGpu.OutputsIntermediate*:WarpSumScatterGpu.*' > $W/sanitizer_memcheck.txt 2>&1; echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $W/sanitizer_memcheck.txt | tail -2
left=$((560 - SECONDS)); echo "spec_verify gets ${left} s (resumable)"
timeout $left $B/kvb sweep --config experiments/spec_verify.toml --out $W/results/spec_verify.csv > $W/spec_verify.log 2>&1; echo "sv rc=$?"; tail -1 $W/spec_verify.log
left=$((590 - SECONDS)); echo "buffer_form_verify gets ${left} s"
[ $left -gt 20 ] && { timeout $left $B/kvb sweep --config experiments/buffer_form_verify.toml --set draft_tokens=4 --out $W/results/buffer_form_verify.csv > $W/buffer_form_verify.log 2>&1; echo "bfv rc=$?"; tail -1 $W/buffer_form_verify.log; }
$B/kvb compare results/spec_verify.csv $W/results/spec_verify.csv --markdown > $W/compare_spec_verify.md 2>&1; echo "compare rc=$?"
$B/kvb compare results/spec_verify.csv $W/results/spec_verify.csv --metric verify_us --markdown > $W/compare_spec_verify_alone.md 2>&1
tail -5 $W/compare_spec_verify.md
