#!/bin/bash
# Commit 2b67fd0 (recurrent verify in row bands; verify's fold stages its entries in the freed tile rows): every GPU
# test, sanitizers on the changed kernels, then the spec_verify grid and buffer_form_verify (4 drafts).
ROOT=$PWD
ln -sfn $ROOT/.carry/b40 $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
B=$ROOT/build-lead
W=/tmp/w40; mkdir -p $W/results
trap 'cp $ROOT/.carry/dev40.sh $W/; tar czf $OUT/dev40.tgz -C $W .' EXIT
nvidia-smi > $W/nvidia_smi.txt 2>&1
$B/kvb info > $W/info.txt 2>&1
$B/tests/kvb_tests --gtest_filter='*Gpu*:CapacityProbe*' > $W/gtest_gpu.txt 2>&1; rc=$?; echo "gtest rc=$rc"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_gpu.txt | head -20
[ $rc -eq 0 ] || exit 1
timeout 120 compute-sanitizer --tool memcheck $B/tests/kvb_tests --gtest_filter='RecurrentVerifyGpu.*:KVBufferVerifyGpu.*:VerifyGpu.GoldenDraft4:VerifyProblemGpu.KVBufferCheck*:KVBufferFlushGpu.*:KVBufferDecodeGpu.PaddingRows*' > $W/sanitizer_memcheck.txt 2>&1; echo "memcheck rc=$?"; tail -1 $W/sanitizer_memcheck.txt
timeout 120 compute-sanitizer --tool racecheck $B/tests/kvb_tests --gtest_filter='RecurrentVerifyGpu.WideBatch*:VerifyGpu.GoldenDraft4:KVBufferVerifyGpu.SlicedHeads*:KVBufferFlushGpu.*' > $W/sanitizer_racecheck.txt 2>&1; echo "racecheck rc=$?"; tail -1 $W/sanitizer_racecheck.txt
timeout 240 $B/kvb sweep --config experiments/spec_verify.toml --out $W/results/spec_verify.csv > $W/spec_verify.log 2>&1; echo "sv rc=$?"; tail -1 $W/spec_verify.log
timeout 100 $B/kvb sweep --config experiments/buffer_form_verify.toml --set draft_tokens=4 --out $W/results/buffer_form_verify.csv > $W/buffer_form_verify.log 2>&1; echo "bfv rc=$?"; tail -1 $W/buffer_form_verify.log
python3 - <<'PY'
import csv
for r in csv.DictReader(open('/tmp/w40/results/spec_verify.csv')):
  print(r['variant'][:4], r['batch'], r['draft_tokens'], r['accepted'], r['buffer_size'], 'v %s va %s' % (r['verify_us_median'], r['verify_accept_us_median']), r['sm_clock_mhz'], r['measured_over_model'][:5], r['status'][:12])
PY
