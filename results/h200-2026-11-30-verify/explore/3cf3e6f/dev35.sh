#!/bin/bash
# Commit where rows not due write their drafts keys and log-decays early: GPU tests, sanitizers on the verify kernels, spec_verify and buffer_form_verify.
ROOT=$PWD
ln -sfn $ROOT/.carry/b35 $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
B=$ROOT/build-lead
W=/tmp/w35; mkdir -p $W/results
trap 'cp $ROOT/.carry/dev35.sh $W/; tar czf $OUT/dev35.tgz -C $W .' EXIT
nvidia-smi > $W/nvidia_smi.txt 2>&1
$B/tests/kvb_tests --gtest_filter='*Gpu*:CapacityProbe*' > $W/gtest_gpu.txt 2>&1; echo "gtest rc=$?"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_gpu.txt | head -20
timeout 150 compute-sanitizer --tool memcheck $B/tests/kvb_tests --gtest_filter='KVBufferVerifyGpu.SlicedHeads*:VerifyGpu.GoldenDraft4:VerifyProblemGpu.KVBufferCheck*' > $W/sanitizer_memcheck_verify.txt 2>&1; echo "memcheck rc=$?"; tail -1 $W/sanitizer_memcheck_verify.txt
timeout 120 compute-sanitizer --tool racecheck $B/tests/kvb_tests --gtest_filter='VerifyGpu.GoldenDraft4:KVBufferVerifyGpu.SlicedHeads*' > $W/sanitizer_racecheck_verify.txt 2>&1; echo "racecheck rc=$?"; tail -1 $W/sanitizer_racecheck_verify.txt
timeout 240 $B/kvb sweep --config experiments/spec_verify.toml --out $W/results/spec_verify.csv > $W/spec_verify.log 2>&1; echo "sv rc=$?"; tail -1 $W/spec_verify.log
timeout 100 $B/kvb sweep --config experiments/buffer_form_verify.toml --set draft_tokens=4 --out $W/results/buffer_form_verify.csv > $W/buffer_form_verify.log 2>&1; echo "bfv rc=$?"; tail -1 $W/buffer_form_verify.log
