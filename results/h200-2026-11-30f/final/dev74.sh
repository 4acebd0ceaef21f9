#!/bin/bash
# Verify with the drafts' rows packed only where that keeps the keys in shared memory (commit e9bfe3c: a buffer of 16
# at 4 drafts; every other launch PTX-identical to 74cb87d) against the committed kernels (base, 74cb87d): every GPU
# test, compute-sanitizer on the verify tests, the spec_verify grid, then interleaved A/B at B = 16 (PDL).
ROOT=$PWD
B=$ROOT/.carry/b74
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
xz -dc $B/kvb.xz > $B/kvb && chmod +x $B/kvb
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
xz -dc $ROOT/.carry/b70/kvb.xz > /tmp/kvb_base && chmod +x /tmp/kvb_base
W=/tmp/w74; mkdir -p $W/ab $W/results
trap 'cp $ROOT/.carry/dev74.sh $W/; tar czf $OUT/dev74.tgz -C $W .' EXIT
nvidia-smi > $W/nvidia_smi.txt 2>&1
$B/kvb info > $W/info.txt 2>&1
$B/tests/kvb_tests --gtest_filter='*Gpu*:CapacityProbe*:LaunchValidation*' > $W/gtest_gpu.txt 2>&1; rc=$?; echo "gtest rc=$rc $SECONDS s"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_gpu.txt | head -20
[ $rc -eq 0 ] || exit 1
timeout 60 compute-sanitizer --tool racecheck $B/tests/kvb_tests --gtest_filter='VerifyGpu.GoldenDraft4:PdlLaunchGpu.VerifyCheck*:KVBufferVerifyGpu.LongBuffers*:KVBufferVerifyGpu.SlicedHeads*' > $W/sanitizer_racecheck.txt 2>&1; echo "racecheck rc=$?"; grep -E "RACECHECK SUMMARY" $W/sanitizer_racecheck.txt | tail -1
timeout 60 compute-sanitizer --tool memcheck $B/tests/kvb_tests --gtest_filter='VerifyGpu.GoldenDraft4:PdlLaunchGpu.VerifyCheck*:KVBufferVerifyGpu.*:RecurrentVerifyGpu.OutputsIntermediate*:WarpSumScatterGpu.*' > $W/sanitizer_memcheck.txt 2>&1; echo "memcheck rc=$? $SECONDS s"; grep -E "ERROR SUMMARY" $W/sanitizer_memcheck.txt | tail -1
timeout 300 $B/kvb sweep --config experiments/spec_verify.toml --out $W/results/spec_verify.csv > $W/spec_verify.log 2>&1; echo "sv rc=$? $SECONDS s"; tail -1 $W/spec_verify.log
$B/kvb compare results/spec_verify.csv $W/results/spec_verify.csv --markdown > $W/compare_spec_verify.md 2>&1; echo "compare rc=$?"
$B/kvb compare results/spec_verify.csv $W/results/spec_verify.csv --metric verify_us --markdown > $W/compare_spec_verify_alone.md 2>&1
grep "kvb compare" $W/compare_spec_verify.md $W/compare_spec_verify_alone.md
run() {  # name binary
  timeout 40 $2 sweep --config experiments/spec_verify.toml --set variant=kvbuffer_verify --set launch=pdl --set batch=64,256 --set draft_tokens=4 --set accepted=all,0.7 --set buffer_size=16 --no-cupti --max-seconds 0.3 --out $W/ab/sv_$1.csv > $W/ab/sv_$1.log 2>&1; echo "sv $1 rc=$? $SECONDS s"
}
for r in 1 2; do [ $SECONDS -lt 480 ] && { run base_$r /tmp/kvb_base; run new_$r $B/kvb; }; done
python3 - <<'PY' | tee $W/ab/summary.txt
import csv, glob, statistics, collections, os
W = '/tmp/w74/ab'
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
