#!/bin/bash
# Verify with unpadded draft rows, subgroups 4-5 and 6-7 swapped (conflict-free), and no decode products in its buffer
# arrays (commit 382ad50) against the committed kernels (base, 74cb87d): every GPU test, compute-sanitizer on
# the verify tests, the reference check at 3, 5, 6 and 7 drafts at B = 8 and 16, interleaved A/B (PDL), then the spec_verify
# grid as far as the time allows (resumable).
ROOT=$PWD
B=$ROOT/.carry/b73
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
xz -dc $B/kvb.xz > $B/kvb && chmod +x $B/kvb
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
xz -dc $ROOT/.carry/b70/kvb.xz > /tmp/kvb_base && chmod +x /tmp/kvb_base
W=/tmp/w73; mkdir -p $W/ab $W/results $W/check
trap 'cp $ROOT/.carry/dev73.sh $W/; tar czf $OUT/dev73.tgz -C $W .' EXIT
nvidia-smi > $W/nvidia_smi.txt 2>&1
$B/kvb info > $W/info.txt 2>&1
$B/tests/kvb_tests --gtest_filter='*Gpu*:CapacityProbe*:LaunchValidation*' > $W/gtest_gpu.txt 2>&1; rc=$?; echo "gtest rc=$rc"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_gpu.txt | head -20
[ $rc -eq 0 ] || exit 1
timeout 100 compute-sanitizer --tool racecheck $B/tests/kvb_tests --gtest_filter='VerifyGpu.GoldenDraft4:PdlLaunchGpu.VerifyCheck*:KVBufferVerifyGpu.LongBuffers*:KVBufferVerifyGpu.SlicedHeads*' > $W/sanitizer_racecheck.txt 2>&1; echo "racecheck rc=$?"; grep -E "RACECHECK SUMMARY" $W/sanitizer_racecheck.txt | tail -1
timeout 100 compute-sanitizer --tool memcheck $B/tests/kvb_tests --gtest_filter='VerifyGpu.GoldenDraft4:PdlLaunchGpu.VerifyCheck*:KVBufferVerifyGpu.*:RecurrentVerifyGpu.OutputsIntermediate*:WarpSumScatterGpu.*' > $W/sanitizer_memcheck.txt 2>&1; echo "memcheck rc=$?"; grep -E "ERROR SUMMARY" $W/sanitizer_memcheck.txt | tail -1
timeout 60 $B/kvb sweep --config experiments/spec_verify.toml --set variant=kvbuffer_verify --set launch=pdl --set batch=64 --set draft_tokens=3,5,6,7 --set accepted=all,0.7 --set buffer_size=8,16 --no-cupti --max-seconds 0.05 --out $W/check/check_B16.csv > $W/check/check_B16.log 2>&1; echo "check rc=$? $(grep -c ',ok,' $W/check/check_B16.csv) ok rows"
run() {  # name binary
  timeout 90 $2 sweep --config experiments/spec_verify.toml --set variant=kvbuffer_verify --set launch=pdl --set batch=64,256 --set draft_tokens=4 --set accepted=all,0.7 --set buffer_size=8,16,32 --no-cupti --max-seconds 0.3 --out $W/ab/sv_$1.csv > $W/ab/sv_$1.log 2>&1; echo "sv $1 rc=$? $SECONDS s"
}
for r in 1 2; do run base_$r /tmp/kvb_base; run new_$r $B/kvb; done
python3 - <<'PY' | tee $W/ab/summary.txt
import csv, glob, statistics, collections, os
W = '/tmp/w73/ab'
for col in ('verify_us_median', 'verify_accept_us_median'):
  runs = collections.defaultdict(dict)
  for f in sorted(glob.glob(W + '/sv_*.csv')):
    name = os.path.basename(f)[3:-4]
    for r in csv.DictReader(open(f)):
      if r['status'] == 'ok': runs[name][(int(r['batch']), int(r['buffer_size']), r['accepted'])] = (float(r[col]), float(r[col.replace('us_median', 'floor_us')]))
  names = sorted(runs)
  print(col, ' '.join(names), '| new/base | new/floor')
  for k in sorted(runs['base_1']):
    m = {v: statistics.mean(runs[n][k][0] for n in names if n.startswith(v + '_') and k in runs[n]) for v in ('base', 'new')}
    print(*k, ' '.join('%.2f' % runs[n][k][0] if k in runs[n] else 'nan' for n in names), '| %.4f | %.3f' % (m['new'] / m['base'], m['new'] / runs['new_1'][k][1]))
PY
left=$((585 - SECONDS)); echo "spec_verify gets ${left} s (resumable)"
timeout $left $B/kvb sweep --config experiments/spec_verify.toml --out $W/results/spec_verify.csv > $W/spec_verify.log 2>&1; echo "sv rc=$?"; tail -1 $W/spec_verify.log
