#!/bin/bash
ROOT=$PWD
ln -sfn $ROOT/.carry/build-lead $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
B=$ROOT/build-lead
W=/tmp/w22; mkdir -p $W/results
trap 'cp $ROOT/.carry/dev22.sh $W/; tar czf $OUT/dev22.tgz -C $W .' EXIT
nvidia-smi > $W/nvidia_smi.txt 2>&1
$B/kvb info > $W/info.txt 2>&1
$B/tests/kvb_tests --gtest_filter='*Gpu*' > $W/gtest_gpu.txt 2>&1; echo "gtest rc=$?"; grep -E "^\[  FAILED|PASSED  \]|tests ran" $W/gtest_gpu.txt | head
timeout 120 compute-sanitizer --tool memcheck $B/tests/kvb_tests --gtest_filter='PdlLaunchGpu.*:KVBufferDecodeGpu.PaddingRows*:KVBufferDecodeGpu.Bf16OutputsAndOddShapes' > $W/sanitizer_memcheck_pdl.txt 2>&1; echo "memcheck rc=$?"; tail -1 $W/sanitizer_memcheck_pdl.txt
timeout 100 compute-sanitizer --tool racecheck $B/tests/kvb_tests --gtest_filter='PdlLaunchGpu.CheckAgainstReferencePassesWithPdl:KVBufferDecodeGpu.PaddingRows*' > $W/sanitizer_racecheck_pdl.txt 2>&1; echo "racecheck rc=$?"; tail -1 $W/sanitizer_racecheck_pdl.txt
timeout 150 $B/kvb sweep --config experiments/decode_latency.toml --set batch=32,64,128,256,512 --set buffer_size=8,16 --out $W/results/pdl_ab.csv > $W/pdl_ab.log 2>&1; echo "ab rc=$?"; tail -1 $W/pdl_ab.log
python3 - <<'PY'
import csv
for r in csv.DictReader(open('/tmp/w22/results/pdl_ab.csv')):
  print('ab',r['variant'][:4],r['batch'],r['buffer_size'],r['launch'],r['latency_us_median'],r['floor_us'],r['measured_over_model'],r['status'][:40])
PY
timeout 400 $B/kvb sweep --config experiments/decode_latency.toml --out $W/results/decode_latency.csv > $W/decode.log 2>&1; echo "dec rc=$?"; tail -1 $W/decode.log
$B/kvb sweep --config experiments/ci_smoke.toml --out $W/ci_smoke.csv > $W/ci_smoke.log 2>&1; echo "smoke rc=$?"; tail -1 $W/ci_smoke.log
