#!/bin/bash
ROOT=$PWD
ln -sfn $ROOT/.carry/build-lead $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
B=$ROOT/build-lead
W=/tmp/w15; mkdir -p $W/results
trap 'cp $ROOT/.carry/dev15.sh $W/; tar czf $OUT/dev15.tgz -C $W .' EXIT
$B/tests/kvb_tests --gtest_filter='VerifyGpu.*:KVBufferVerifyGpu.*:VerifyProblemGpu.*' > $W/gtest_verify.txt 2>&1; echo "gtest rc=$?"; grep -E "PASSED|FAILED" $W/gtest_verify.txt
timeout 100 compute-sanitizer --tool racecheck $B/tests/kvb_tests --gtest_filter='VerifyGpu.GoldenDraft4:KVBufferVerifyGpu.*' > $W/sanitizer_racecheck_verify.txt 2>&1; echo "race rc=$?"; tail -1 $W/sanitizer_racecheck_verify.txt
$B/kvb sweep --config experiments/decode_latency.toml --set batch=1 --set buffer_size=1,2 --out $W/results/decode_b1.csv > $W/decode_b1.log 2>&1; echo "b1 rc=$?"
$B/kvb sweep --config experiments/spec_verify.toml --out $W/results/spec_verify.csv > $W/spec_verify.log 2>&1; echo "sv rc=$?"
python3 - <<'PY'
import csv
for f in ['decode_b1','spec_verify']:
  for r in csv.DictReader(open(f'/tmp/w15/results/{f}.csv')):
    mo=float(r['measured_over_model'])
    if f=='decode_b1' or abs(mo-1)>0.03 or (r['draft_tokens']=='4' and r['variant'][0]=='k'): print(f, r['variant'][:9], r['batch'], r.get('draft_tokens',''), r.get('accepted',''), r['buffer_size'], mo, r.get('verify_us_median',r.get('latency_us_median')), r.get('verify_accept_us_median',''))
PY
