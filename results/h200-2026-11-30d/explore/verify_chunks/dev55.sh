#!/bin/bash
# Commit of the chunked, reduce-scatter KVBuffer verify: every GPU test, compute-sanitizer on the verify tests, then
# interleaved A/B runs (PDL launches) of KVBuffer verify against f4f7b76 (the committed kernels).
ROOT=$PWD
B=$ROOT/.carry/b55
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
xz -dc $B/kvb.xz > $B/kvb && chmod +x $B/kvb
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
T=/tmp/t55; mkdir -p $T
xz -dc $ROOT/.carry/base48/kvb.xz > $T/kvb_base && chmod +x $T/kvb_base
cp $B/kvb $T/kvb_new
W=$OUT/w55; mkdir -p $W/ab
cp $ROOT/.carry/dev55.sh $W/
nvidia-smi > $W/nvidia_smi.txt 2>&1
$B/tests/kvb_tests --gtest_filter='*Gpu*:CapacityProbe*:LaunchValidation*' > $W/gtest_gpu.txt 2>&1; rc=$?; echo "gtest rc=$rc"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_gpu.txt | head -20
[ $rc -eq 0 ] || exit 1
timeout 150 compute-sanitizer --tool racecheck $B/tests/kvb_tests --gtest_filter='VerifyGpu.GoldenDraft4:PdlLaunchGpu.VerifyCheck*:KVBufferVerifyGpu.LongBuffers*:KVBufferVerifyGpu.SlicedHeads*' > $W/sanitizer_racecheck.txt 2>&1; echo "racecheck rc=$?"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $W/sanitizer_racecheck.txt | tail -3
timeout 150 compute-sanitizer --tool memcheck $B/tests/kvb_tests --gtest_filter='VerifyGpu.GoldenDraft4:PdlLaunchGpu.VerifyCheck*:KVBufferVerifyGpu.SlicedHeads*:KVBufferVerifyGpu.Every*' > $W/sanitizer_memcheck.txt 2>&1; echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $W/sanitizer_memcheck.txt | tail -3
run() {  # name binary
  timeout 90 $T/kvb_$2 sweep --config experiments/spec_verify.toml --set variant=kvbuffer_verify --set launch=pdl --set batch=64,256 --set draft_tokens=4 --set accepted=all,0.7 --set buffer_size=8,16,32 --no-cupti --max-seconds 0.4 --out $W/ab/sv_$1.csv > $W/ab/sv_$1.log 2>&1; echo "sv $1 rc=$?"
}
for r in 1 2; do run base_$r base; run new_$r new; done
timeout 60 $T/kvb_new sweep --config experiments/spec_verify.toml --set variant=kvbuffer_verify --set launch=pdl,plain --set batch=64 --set draft_tokens=1,2,8 --set accepted=all --set buffer_size=8 --no-cupti --max-seconds 0.3 --out $W/ab/m_new.csv > $W/ab/m_new.log 2>&1; echo "m new rc=$?"
timeout 60 $T/kvb_base sweep --config experiments/spec_verify.toml --set variant=kvbuffer_verify --set launch=pdl,plain --set batch=64 --set draft_tokens=1,2,8 --set accepted=all --set buffer_size=8 --no-cupti --max-seconds 0.3 --out $W/ab/m_base.csv > $W/ab/m_base.log 2>&1; echo "m base rc=$?"
python3 - <<'PY' > $W/ab/summary.txt
import csv, glob, statistics, collections, os
W = os.environ['OUT'] + '/w55/ab'
for col in ('verify_us_median', 'verify_accept_us_median'):
  runs = collections.defaultdict(dict)
  for f in sorted(glob.glob(W + '/sv_*.csv')):
    name = os.path.basename(f)[3:-4]
    for r in csv.DictReader(open(f)):
      if r['status'] == 'ok': runs[name][(r['batch'], r['buffer_size'], r['accepted'])] = (float(r[col]), r['verify_accept_floor_us' if 'accept' in col else 'verify_floor_us'])
  names = sorted(runs)
  print(col, ' '.join(names), '| new/base, floor')
  for k in sorted(runs['base_1']):
    base = statistics.mean(runs[n][k][0] for n in names if n.startswith('base') and k in runs[n])
    new = statistics.mean(runs[n][k][0] for n in names if n.startswith('new') and k in runs[n])
    print(*k, ' '.join('%.2f' % runs[n][k][0] if k in runs[n] else 'nan' for n in names), '| %.4f' % (new / base), runs['base_1'][k][1])
for f in ('m_base', 'm_new'):
  for r in csv.DictReader(open(W + '/%s.csv' % f)):
    print(f, r['draft_tokens'], r['launch'], r['status'], r['verify_us_median'], r['verify_accept_us_median'], r['max_rel_err'])
PY
cat $W/ab/summary.txt
