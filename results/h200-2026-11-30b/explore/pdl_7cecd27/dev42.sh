#!/bin/bash
# Commit 7cecd27 (PDL for verify, accept and commit; spec_verify's launch axis): every GPU test, sanitizers on the
# PDL verify tests, the spec_verify grid (plain and PDL) and buffer_form_verify (4 drafts).
ROOT=$PWD
ln -sfn $ROOT/.carry/b42 $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
B=$ROOT/build-lead
W=/tmp/w42; mkdir -p $W/results
trap 'cp $ROOT/.carry/dev42.sh $W/; tar czf $OUT/dev42.tgz -C $W .' EXIT
nvidia-smi > $W/nvidia_smi.txt 2>&1
$B/kvb info > $W/info.txt 2>&1
$B/tests/kvb_tests --gtest_filter='*Gpu*:CapacityProbe*' > $W/gtest_gpu.txt 2>&1; rc=$?; echo "gtest rc=$rc"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_gpu.txt | head -20
[ $rc -eq 0 ] || exit 1
timeout 100 compute-sanitizer --tool memcheck $B/tests/kvb_tests --gtest_filter='PdlLaunchGpu.*Verify*' > $W/sanitizer_memcheck_pdl_verify.txt 2>&1; echo "memcheck rc=$?"; tail -1 $W/sanitizer_memcheck_pdl_verify.txt
timeout 100 compute-sanitizer --tool racecheck $B/tests/kvb_tests --gtest_filter='PdlLaunchGpu.VerifyCheck*' > $W/sanitizer_racecheck_pdl_verify.txt 2>&1; echo "racecheck rc=$?"; tail -1 $W/sanitizer_racecheck_pdl_verify.txt
timeout 330 $B/kvb sweep --config experiments/spec_verify.toml --out $W/results/spec_verify.csv > $W/spec_verify.log 2>&1; echo "sv rc=$?"; tail -1 $W/spec_verify.log
timeout 60 $B/kvb sweep --config experiments/buffer_form_verify.toml --set draft_tokens=4 --out $W/results/buffer_form_verify.csv > $W/buffer_form_verify.log 2>&1; echo "bfv rc=$?"; tail -1 $W/buffer_form_verify.log
python3 - <<'PY'
import csv
rows = list(csv.DictReader(open('/tmp/w42/results/spec_verify.csv')))
key = lambda r: (r['variant'][:4], r['batch'], r['draft_tokens'], r['accepted'], r['buffer_size'])
P = {key(r): r for r in rows if r['launch'] == 'plain'}
for r in rows:
  if r['launch'] != 'pdl': continue
  q = P.get(key(r))
  if not q: continue
  print(*key(r), 'v %s -> %s  va %s -> %s' % (q['verify_us_median'], r['verify_us_median'], q['verify_accept_us_median'], r['verify_accept_us_median']), q['sm_clock_mhz'], r['sm_clock_mhz'], r['status'][:10])
PY
