#!/bin/bash
# The due row's fold in 4-row bands (v5, d4d3056) against the final kernels (head, 2a3fb87): the verify GPU tests,
# interleaved A/B runs (PDL) of KVBuffer verify, and the CUPTI bytes of v5 on four points.
ROOT=$PWD
B=$ROOT/.carry/b63
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
xz -dc $B/kvb.xz > $B/kvb && chmod +x $B/kvb
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
T=/tmp/t63; mkdir -p $T
xz -dc $B/kvb_head.xz > $T/kvb_head && chmod +x $T/kvb_head
cp $B/kvb $T/kvb_v5
W=/tmp/w63; mkdir -p $W/ab
trap 'cp $ROOT/.carry/dev63.sh $W/; tar czf $OUT/dev63.tgz -C $W .' EXIT
$B/tests/kvb_tests --gtest_filter='KVBufferVerifyGpu.*:VerifyGpu.*:PdlLaunchGpu.*Verify*:VerifyProblemGpu.*' > $W/gtest_verify.txt 2>&1; rc=$?; echo "gtest rc=$rc"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_verify.txt | head
[ $rc -eq 0 ] || exit 1
run() {  # name binary
  timeout 60 $T/kvb_$2 sweep --config experiments/spec_verify.toml --set variant=kvbuffer_verify --set launch=pdl --set batch=64,256 --set draft_tokens=4 --set accepted=all,0.7 --set buffer_size=8,16,32 --no-cupti --max-seconds 0.4 --out $W/ab/sv_$1.csv > $W/ab/sv_$1.log 2>&1; echo "sv $1 rc=$?"
}
for r in 1 2; do run head_$r head; run v5_$r v5; done
python3 - <<'PY' > $W/ab/summary.txt
import csv, glob, statistics, collections, os
W = '/tmp/w63/ab'
for col in ('verify_us_median', 'verify_accept_us_median'):
  runs = collections.defaultdict(dict)
  for f in sorted(glob.glob(W + '/sv_*.csv')):
    name = os.path.basename(f)[3:-4]
    for r in csv.DictReader(open(f)):
      if r['status'] == 'ok': runs[name][(r['batch'], r['buffer_size'], r['accepted'])] = float(r[col])
  names = sorted(runs)
  print(col, ' '.join(names), '| v5/head')
  for k in sorted(runs['head_1']):
    m = {v: statistics.mean(runs[n][k] for n in names if n.startswith(v + '_') and k in runs[n]) for v in ('head', 'v5')}
    print(*k, ' '.join('%.2f' % runs[n][k] if k in runs[n] else 'nan' for n in names), '| %.4f' % (m['v5'] / m['head']))
PY
cat $W/ab/summary.txt
timeout 40 $B/kvb sweep --config experiments/spec_verify.toml --set variant=kvbuffer_verify --set launch=pdl --set batch=64 --set draft_tokens=4 --set accepted=all,0.7 --set buffer_size=8,16 --max-seconds 0.2 --out $W/ab/cupti_v5.csv > $W/ab/cupti_v5.log 2>&1; echo "cupti rc=$?"
python3 -c "import csv; [print(r['batch'], r['buffer_size'], r['accepted'], r['measured_over_model'], r['dram_write_bytes'], r['verify_accept_model_write_bytes']) for r in csv.DictReader(open('$W/ab/cupti_v5.csv'))]"
