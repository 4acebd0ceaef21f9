#!/bin/bash
# Commit 66c45ec (token inputs requested before the buffer position; early PDL blocks pass over their slice while
# their keys arrive): the decode, PDL and stateless GPU tests, racecheck on the PDL decode check, then A/B runs of
# KVBuffer decode against f4f7b76 (the committed kernels), interleaved.
ROOT=$PWD
B=$ROOT/.carry/b53
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=$OUT/w53; mkdir -p $W
cp $ROOT/.carry/dev53.sh $W/
xz -dc $ROOT/.carry/base48/kvb.xz > /tmp/kvb_base && chmod +x /tmp/kvb_base
$B/tests/kvb_tests --gtest_filter='KVBufferDecodeGpu.*:StatelessGpu.*:PdlLaunchGpu.*:ShortContextGpu.*' > $W/gtest_gpu.txt 2>&1; rc=$?; echo "gtest rc=$rc"; grep -E "^\[  FAILED|PASSED  \]" $W/gtest_gpu.txt | head
[ $rc -eq 0 ] || exit 1
timeout 60 compute-sanitizer --tool racecheck $B/tests/kvb_tests --gtest_filter='PdlLaunchGpu.CheckAgainst*:KVBufferDecodeGpu.Padding*' > $W/racecheck.txt 2>&1; echo "racecheck rc=$?"; grep "RACECHECK SUMMARY" $W/racecheck.txt
for r in 1 2; do for v in base new; do
  bin=/tmp/kvb_base; [ $v = new ] && bin=$B/kvb
  timeout 40 $bin sweep --config experiments/decode_latency.toml --set variant=kvbuffer --set launch=pdl,plain --set batch=32,64,256 --set buffer_size=8 --no-cupti --max-seconds 0.4 --out /tmp/ab_${v}_$r.csv > /dev/null 2>&1; echo "ab $v $r rc=$?"
done; done
python3 - <<'PY' | tee $W/summary.txt
import csv, statistics, collections
runs = collections.defaultdict(dict)
for v in ('base', 'new'):
  for r in (1, 2):
    for row in csv.DictReader(open('/tmp/ab_%s_%d.csv' % (v, r))):
      if row['status'] == 'ok': runs['%s_%d' % (v, r)][(row['launch'], int(row['batch']))] = float(row['latency_us_median'])
names = sorted(runs)
print('KVBuffer decode B = 8, us per layer:', ' '.join(names), '| new/base')
for k in sorted(runs['base_1']):
  b = statistics.mean(runs[n][k] for n in names if n.startswith('base')); nw = statistics.mean(runs[n][k] for n in names if n.startswith('new'))
  print(*k, ' '.join('%.2f' % runs[n][k] for n in names), '| %.4f' % (nw / b))
PY
