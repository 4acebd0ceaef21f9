#!/bin/bash
# Commit storing the drafts' raw keys from registers: GPU tests (stop on failure), sanitizers, spec_verify, buffer_form_verify.
ROOT=$PWD
ln -sfn $ROOT/.carry/b36 $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
B=$ROOT/build-lead
W=/tmp/w36; mkdir -p $W/results
trap 'cp $ROOT/.carry/dev36.sh $W/; tar czf $OUT/dev36.tgz -C $W .' EXIT
nvidia-smi > $W/nvidia_smi.txt 2>&1
$B/tests/kvb_tests --gtest_filter='*Gpu*:CapacityProbe*' > $W/gtest_gpu.txt 2>&1; rc=$?; echo "gtest rc=$rc"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_gpu.txt | head -20
[ $rc -eq 0 ] || exit 1
timeout 120 compute-sanitizer --tool memcheck $B/tests/kvb_tests --gtest_filter='KVBufferVerifyGpu.SlicedHeads*:VerifyGpu.GoldenDraft4:VerifyProblemGpu.KVBufferCheck*' > $W/sanitizer_memcheck_verify.txt 2>&1; echo "memcheck rc=$?"; tail -1 $W/sanitizer_memcheck_verify.txt
timeout 90 compute-sanitizer --tool racecheck $B/tests/kvb_tests --gtest_filter='VerifyGpu.GoldenDraft4:KVBufferVerifyGpu.SlicedHeads*' > $W/sanitizer_racecheck_verify.txt 2>&1; echo "racecheck rc=$?"; tail -1 $W/sanitizer_racecheck_verify.txt
timeout 200 $B/kvb sweep --config experiments/spec_verify.toml --out $W/results/spec_verify.csv > $W/spec_verify.log 2>&1; echo "sv rc=$?"; tail -1 $W/spec_verify.log
timeout 80 $B/kvb sweep --config experiments/buffer_form_verify.toml --set draft_tokens=4 --out $W/results/buffer_form_verify.csv > $W/buffer_form_verify.log 2>&1; echo "bfv rc=$?"; tail -1 $W/buffer_form_verify.log
