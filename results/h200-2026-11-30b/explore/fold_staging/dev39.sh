#!/bin/bash
# Verify's fold of due rows with its deltas (and pool keys) staged in the freed tile rows, drafts' deltas parked in
# shared memory: GPU tests, sanitizers on the verify tests, spec_verify (KVBuffer) A/B of 4fc32b9 (base), the
# staging without keys (nokeys) and with keys (keys, this build), decode A/B against 4fc32b9.
ROOT=$PWD
ln -sfn $ROOT/.carry/b39 $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
B=$ROOT/build-lead; T=/tmp/t39; mkdir -p $T
xz -dc $ROOT/.carry/b39/tests/kvb_tests.xz > $T/kvb_tests && chmod +x $T/kvb_tests
xz -dc $ROOT/.carry/a38/kvb.xz > $T/kvb_base && chmod +x $T/kvb_base
xz -dc $ROOT/.carry/v39/kvb_nokeys.xz > $T/kvb_nokeys && chmod +x $T/kvb_nokeys
cp $B/kvb $T/kvb_keys
W=/tmp/w39; mkdir -p $W/results
trap 'cp $ROOT/.carry/dev39.sh $W/; tar czf $OUT/dev39.tgz -C $W .' EXIT
nvidia-smi > $W/nvidia_smi.txt 2>&1
$T/kvb_tests --gtest_filter='*Gpu*:CapacityProbe*' > $W/gtest_gpu.txt 2>&1; echo "gtest rc=$?"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_gpu.txt | head -20
timeout 100 compute-sanitizer --tool memcheck $T/kvb_tests --gtest_filter='KVBufferVerifyGpu.*:VerifyGpu.GoldenDraft4:VerifyProblemGpu.KVBufferCheck*' > $W/sanitizer_memcheck.txt 2>&1; echo "memcheck rc=$?"; tail -1 $W/sanitizer_memcheck.txt
timeout 100 compute-sanitizer --tool racecheck $T/kvb_tests --gtest_filter='VerifyGpu.GoldenDraft4:KVBufferVerifyGpu.SlicedHeads*' > $W/sanitizer_racecheck.txt 2>&1; echo "racecheck rc=$?"; tail -1 $W/sanitizer_racecheck.txt
for v in base nokeys keys; do
  timeout 120 $T/kvb_$v sweep --config experiments/spec_verify.toml --set variant=kvbuffer_verify --set accepted=all --no-cupti --max-seconds 0.4 --out $W/results/sv_$v.csv > $W/sv_$v.log 2>&1; echo "sv $v rc=$?"; tail -1 $W/sv_$v.log
done
for v in base keys; do
  timeout 60 $T/kvb_$v sweep --config experiments/decode_latency.toml --set variant=kvbuffer --set batch=64,256 --set buffer_size=8,16 --set launch=pdl --no-cupti --max-seconds 0.5 --out $W/results/dec_$v.csv > $W/dec_$v.log 2>&1; echo "dec $v rc=$?"
done
python3 - <<'PY'
import csv
def load(f):
  try: return list(csv.DictReader(open(f)))
  except Exception as e: print('missing', f, e); return []
b, n, k = (load('/tmp/w39/results/sv_%s.csv' % v) for v in ('base', 'nokeys', 'keys'))
key = lambda r: (r['batch'], r['draft_tokens'], r['buffer_size'])
N = {key(r): r for r in n}; K = {key(r): r for r in k}
print('batch m B | verify base nokeys keys | v+accept base nokeys keys | status')
for r in b:
  x, y = N.get(key(r)), K.get(key(r))
  if not x or not y: continue
  f = lambda z, c: float(z[c]) if z[c] else float('nan')
  print(*key(r), '| %.1f %.1f %.1f | %.1f %.1f %.1f |' % (f(r,'verify_us_median'), f(x,'verify_us_median'), f(y,'verify_us_median'), f(r,'verify_accept_us_median'), f(x,'verify_accept_us_median'), f(y,'verify_accept_us_median')), r['status'][:10], x['status'][:10], y['status'][:30])
for v in ('base', 'keys'):
  for r in load('/tmp/w39/results/dec_%s.csv' % v): print('dec', v, r['batch'], r['buffer_size'], r['latency_us_median'], r['sm_clock_mhz'], r['status'][:20])
PY
