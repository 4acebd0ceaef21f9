#!/bin/bash
# Early key-group arrival of a due row with the keys in shared memory (v3, commit 5df8bc6) against the committed
# kernels (v2, cdce0e8): every GPU test, compute-sanitizer on the verify tests, interleaved A/B runs (PDL, 4 drafts),
# then the spec_verify grid and buffer_form_verify (4 drafts) on v3 and kvb compare against the committed CSV.
ROOT=$PWD
B=$ROOT/.carry/b69
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
xz -dc $B/kvb.xz > $B/kvb && chmod +x $B/kvb
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
T=/tmp/t69; mkdir -p $T
xz -dc $B/kvb_v2.xz > $T/kvb_v2 && chmod +x $T/kvb_v2
cp $B/kvb $T/kvb_v3
W=/tmp/w69; mkdir -p $W/ab $W/results
trap 'cp $ROOT/.carry/dev69.sh $W/; tar czf $OUT/dev69.tgz -C $W .' EXIT
nvidia-smi > $W/nvidia_smi.txt 2>&1
$B/kvb info > $W/info.txt 2>&1
$B/tests/kvb_tests --gtest_filter='*Gpu*:CapacityProbe*:LaunchValidation*' > $W/gtest_gpu.txt 2>&1; rc=$?; echo "gtest rc=$rc"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_gpu.txt | head -20
[ $rc -eq 0 ] || exit 1
timeout 100 compute-sanitizer --tool racecheck $B/tests/kvb_tests --gtest_filter='VerifyGpu.GoldenDraft4:PdlLaunchGpu.VerifyCheck*:KVBufferVerifyGpu.LongBuffers*:KVBufferVerifyGpu.SlicedHeads*' > $W/sanitizer_racecheck.txt 2>&1; echo "racecheck rc=$?"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $W/sanitizer_racecheck.txt | tail -2
timeout 100 compute-sanitizer --tool memcheck $B/tests/kvb_tests --gtest_filter='VerifyGpu.GoldenDraft4:PdlLaunchGpu.VerifyCheck*:KVBufferVerifyGpu.*:RecurrentVerifyGpu.OutputsIntermediate*:WarpSumScatterGpu.*' > $W/sanitizer_memcheck.txt 2>&1; echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $W/sanitizer_memcheck.txt | tail -2
run() {  # name binary
  timeout 45 $T/kvb_$2 sweep --config experiments/spec_verify.toml --set variant=kvbuffer_verify --set launch=pdl --set batch=64,256 --set draft_tokens=4 --set accepted=all,0.7 --set buffer_size=8,16 --no-cupti --max-seconds 0.3 --out $W/ab/sv_$1.csv > $W/ab/sv_$1.log 2>&1; echo "sv $1 rc=$?"
}
for r in 1 2; do run v2_$r v2; run v3_$r v3; done
python3 - <<'PY' > $W/ab/summary.txt
import csv, glob, statistics, collections, os
W = '/tmp/w69/ab'
for col in ('verify_us_median', 'verify_accept_us_median'):
  runs = collections.defaultdict(dict)
  for f in sorted(glob.glob(W + '/sv_*.csv')):
    name = os.path.basename(f)[3:-4]
    for r in csv.DictReader(open(f)):
      if r['status'] == 'ok': runs[name][(int(r['draft_tokens']), int(r['batch']), int(r['buffer_size']), r['accepted'])] = float(r[col])
  names = sorted(runs)
  print(col, ' '.join(names), '| v3/v2')
  for k in sorted(runs['v2_1']):
    m = {v: statistics.mean(runs[n][k] for n in names if n.startswith(v + '_') and k in runs[n]) for v in ('v2', 'v3')}
    print(*k, ' '.join('%.2f' % runs[n][k] if k in runs[n] else 'nan' for n in names), '| %.4f' % (m['v3'] / m['v2']))
PY
cat $W/ab/summary.txt
left=$((560 - SECONDS)); echo "spec_verify gets ${left} s (resumable)"
timeout $left $B/kvb sweep --config experiments/spec_verify.toml --out $W/results/spec_verify.csv > $W/spec_verify.log 2>&1; echo "sv rc=$?"; tail -1 $W/spec_verify.log
left=$((592 - SECONDS)); echo "buffer_form_verify gets ${left} s"
[ $left -gt 20 ] && { timeout $left $B/kvb sweep --config experiments/buffer_form_verify.toml --set draft_tokens=4 --out $W/results/buffer_form_verify.csv > $W/buffer_form_verify.log 2>&1; echo "bfv rc=$?"; tail -1 $W/buffer_form_verify.log; }
$B/kvb compare results/spec_verify.csv $W/results/spec_verify.csv --markdown > $W/compare_spec_verify.md 2>&1; echo "compare rc=$?"
$B/kvb compare results/spec_verify.csv $W/results/spec_verify.csv --metric verify_us --markdown > $W/compare_spec_verify_alone.md 2>&1
grep "kvb compare" $W/compare_spec_verify.md $W/compare_spec_verify_alone.md
