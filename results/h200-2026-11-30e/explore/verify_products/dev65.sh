#!/bin/bash
# Verify's buffer products summed at once with batched key requests (v1, f802019 + PDL test refactor 2b6aa33) against
# the previous kernels (v0, 8780913): every GPU test, compute-sanitizer on the verify tests, interleaved A/B runs
# (PDL) of KVBuffer verify, and the CUPTI bytes of v1 on four points.
ROOT=$PWD
B=$ROOT/.carry/b65
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
xz -dc $B/kvb.xz > $B/kvb && chmod +x $B/kvb
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
T=/tmp/t65; mkdir -p $T
xz -dc $B/kvb_v0.xz > $T/kvb_v0 && chmod +x $T/kvb_v0
cp $B/kvb $T/kvb_v1
W=/tmp/w65; mkdir -p $W/ab
trap 'cp $ROOT/.carry/dev65.sh $W/; tar czf $OUT/dev65.tgz -C $W .' EXIT
nvidia-smi > $W/nvidia_smi.txt 2>&1
$B/tests/kvb_tests --gtest_filter='*Gpu*:CapacityProbe*:LaunchValidation*' > $W/gtest_gpu.txt 2>&1; rc=$?; echo "gtest rc=$rc"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST|SKIPPED \]" $W/gtest_gpu.txt | head -20
[ $rc -eq 0 ] || exit 1
timeout 150 compute-sanitizer --tool racecheck $B/tests/kvb_tests --gtest_filter='VerifyGpu.GoldenDraft4:PdlLaunchGpu.VerifyCheck*:KVBufferVerifyGpu.LongBuffers*:KVBufferVerifyGpu.SlicedHeads*' > $W/sanitizer_racecheck.txt 2>&1; echo "racecheck rc=$?"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $W/sanitizer_racecheck.txt | tail -3
timeout 150 compute-sanitizer --tool memcheck $B/tests/kvb_tests --gtest_filter='VerifyGpu.GoldenDraft4:PdlLaunchGpu.VerifyCheck*:KVBufferVerifyGpu.*' > $W/sanitizer_memcheck.txt 2>&1; echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $W/sanitizer_memcheck.txt | tail -3
run() {  # name binary
  timeout 80 $T/kvb_$2 sweep --config experiments/spec_verify.toml --set variant=kvbuffer_verify --set launch=pdl --set batch=64,256 --set draft_tokens=4,8 --set accepted=all,0.7 --set buffer_size=8,16,32 --no-cupti --max-seconds 0.3 --out $W/ab/sv_$1.csv > $W/ab/sv_$1.log 2>&1; echo "sv $1 rc=$?"
}
for r in 1 2; do run v0_$r v0; run v1_$r v1; done
python3 - <<'PY' > $W/ab/summary.txt
import csv, glob, statistics, collections, os
W = '/tmp/w65/ab'
for col in ('verify_us_median', 'verify_accept_us_median'):
  runs = collections.defaultdict(dict)
  for f in sorted(glob.glob(W + '/sv_*.csv')):
    name = os.path.basename(f)[3:-4]
    for r in csv.DictReader(open(f)):
      if r['status'] == 'ok': runs[name][(int(r['draft_tokens']), int(r['batch']), int(r['buffer_size']), r['accepted'])] = float(r[col])
  names = sorted(runs)
  print(col, ' '.join(names), '| v1/v0')
  for k in sorted(runs['v0_1']):
    m = {v: statistics.mean(runs[n][k] for n in names if n.startswith(v + '_') and k in runs[n]) for v in ('v0', 'v1')}
    print(*k, ' '.join('%.2f' % runs[n][k] if k in runs[n] else 'nan' for n in names), '| %.4f' % (m['v1'] / m['v0']))
PY
cat $W/ab/summary.txt
timeout 60 $B/kvb sweep --config experiments/spec_verify.toml --set variant=kvbuffer_verify --set launch=pdl --set batch=64 --set draft_tokens=4 --set accepted=all,0.7 --set buffer_size=8,16 --max-seconds 0.2 --out $W/ab/cupti_v1.csv > $W/ab/cupti_v1.log 2>&1; echo "cupti rc=$?"
python3 -c "import csv; [print(r['batch'], r['buffer_size'], r['accepted'], r['measured_over_model'], r['dram_write_bytes'], r['verify_accept_model_write_bytes']) for r in csv.DictReader(open('$W/ab/cupti_v1.csv'))]"
