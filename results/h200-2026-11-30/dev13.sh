#!/bin/bash
ROOT=$PWD
ln -sfn $ROOT/.carry/build-lead $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
B=$ROOT/build-lead
W=/tmp/w13; mkdir -p $W/results
trap 'cp $ROOT/.carry/dev13.sh $W/; tar czf $OUT/dev13.tgz -C $W .' EXIT
nvidia-smi > $W/nvidia_smi.txt 2>&1
$B/kvb info > $W/info.txt 2>&1
$B/kvb sweep --config experiments/spec_verify.toml --out $W/results/spec_verify.csv > $W/spec_verify.log 2>&1; echo "sv rc=$?"; tail -1 $W/spec_verify.log
python3 - <<'PY'
import csv
for r in csv.DictReader(open('/tmp/w13/results/spec_verify.csv')):
  if r['draft_tokens'] in ('4','8'): print('sv',r['variant'][:9],r['batch'],r['draft_tokens'],r['accepted'],r['buffer_size'],r['verify_us_median'],r['verify_accept_us_median'],r['status'])
PY
$B/tests/kvb_tests > $W/gtest_all.txt 2>&1; echo "gtest rc=$?"; grep -E "^\[  FAILED|PASSED  \]|tests ran" $W/gtest_all.txt | head
F='VerifyGpu.GoldenDraft4:KVBufferVerifyGpu.*:KVBufferFlushGpu.*:KVBufferDecodeGpu.Bf16OutputsAndOddShapes:KVBufferDecodeGpu.PaddingRows*:StatelessGpu.Bf16OutputsAndOddShapes:StatelessGpu.StandaloneFlushMaterialisesFromZero:RecurrentVerifyGpu.*:ShortContextGpu.*'
for tool in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool $tool $B/tests/kvb_tests --gtest_filter="$F" > $W/sanitizer_$tool.txt 2>&1; echo "$tool rc=$?"; tail -1 $W/sanitizer_$tool.txt
done
timeout 280 $B/kvb sweep --config experiments/decode_latency.toml --out $W/results/decode_latency.csv > $W/decode.log 2>&1; echo "dec rc=$?"; tail -1 $W/decode.log
python3 - <<'PY'
import csv
for r in csv.DictReader(open('/tmp/w13/results/decode_latency.csv')):
  if int(r['batch'])>=32 and (r['variant']=='recurrent' or int(r['buffer_size'])<=32): print('dec',r['variant'][:4],r['batch'],r['buffer_size'],r['latency_us_median'],r['floor_us'],r['status'])
PY
