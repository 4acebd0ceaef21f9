#!/bin/bash
# Commit cdc1fa0 (KVBuffer decode: six 64-column blocks an SM at B <= 8, at most 80 registers, the row reduction in turn):
# every GPU test, compute-sanitizer on the KVBuffer decode and PDL check tests and on a small sweep point at batch 64
# (the 64-column kernel), then A/B of KVBuffer decode against 44bdfba (the committed kernels), three interleaved rounds.
ROOT=$PWD
B=$ROOT/.carry/b85
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
xz -dc $B/kvb.xz > $B/kvb && chmod +x $B/kvb
xz -dc $ROOT/.carry/b84/kvb.xz > /tmp/kvb_base && chmod +x /tmp/kvb_base
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w85; mkdir -p $W/ab
trap 'cp $ROOT/.carry/dev85.sh $W/; cp /tmp/ab_*.csv $W/ab/ 2>/dev/null; tar czf $OUT/dev85.tgz -C $W .' EXIT
$B/kvb info > $W/info.txt 2>&1; tail -2 $W/info.txt
$B/tests/kvb_tests --gtest_filter='*Gpu*:CapacityProbe*:LaunchValidation*' > $W/gtest_gpu.txt 2>&1; echo "gtest rc=$? $SECONDS s"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_gpu.txt | head
F='KVBufferDecodeGpu.PaddingRows*:KVBufferDecodeGpu.Bf16*:PdlLaunchGpu.CheckAgainstReferencePassesWithPdl:PdlLaunchGpu.KVBufferStepsMatch*'
timeout 100 compute-sanitizer --tool racecheck $B/tests/kvb_tests --gtest_filter=$F > $W/sanitizer_racecheck.txt 2>&1; echo "racecheck rc=$? $SECONDS s"; grep -E "RACECHECK SUMMARY" $W/sanitizer_racecheck.txt | tail -1
timeout 60 compute-sanitizer --tool memcheck $B/tests/kvb_tests --gtest_filter=$F > $W/sanitizer_memcheck.txt 2>&1; echo "memcheck rc=$? $SECONDS s"; grep -E "ERROR SUMMARY" $W/sanitizer_memcheck.txt | tail -1
timeout 60 compute-sanitizer --tool memcheck $B/kvb sweep --config experiments/decode_latency.toml --set variant=kvbuffer --set launch=pdl --set batch=64 --set buffer_size=4,8 --set layers=2 --no-cupti --min-samples 1 --max-seconds 0.01 --out /tmp/san_sweep.csv > $W/sanitizer_memcheck_sweep.txt 2>&1; echo "memcheck sweep rc=$? $SECONDS s"; grep -E "ERROR SUMMARY" $W/sanitizer_memcheck_sweep.txt | tail -1; cp /tmp/san_sweep.csv $W/ 2>/dev/null
for r in 1 2 3; do vs="base new"; [ $r = 2 ] && vs="new base"; for v in $vs; do
  bin=/tmp/kvb_base; [ $v = new ] && bin=$B/kvb
  timeout 90 $bin sweep --config experiments/decode_latency.toml --set variant=kvbuffer --set launch=pdl,plain --set batch=64,128,256,512 --set buffer_size=2,4,8,16 --no-cupti --max-seconds 0.4 --out /tmp/ab_${v}_$r.csv > /dev/null 2>$W/ab/err_${v}_$r.txt; echo "ab $v $r rc=$? $SECONDS s"
done; done
python3 - <<'PY' | tee $W/ab/summary.txt
import csv, statistics, collections
runs = collections.defaultdict(dict)
for v in ('base', 'new'):
  for r in (1, 2, 3):
    try: rows = list(csv.DictReader(open('/tmp/ab_%s_%d.csv' % (v, r))))
    except OSError: continue
    for row in rows:
      if row['status'] == 'ok': runs['%s_%d' % (v, r)][(row['launch'], int(row['batch']), int(row['buffer_size']))] = (float(row['latency_us_median']), float(row['latency_over_floor']), row['max_rel_err'])
names = sorted(runs)
print('KVBuffer decode, us per layer:', ' '.join(names), '| new/base | new over floor')
for k in sorted(runs['base_1']):
  have = [n for n in names if k in runs[n]]
  b = statistics.mean(runs[n][k][0] for n in have if n.startswith('base')); nw = statistics.mean(runs[n][k][0] for n in have if n.startswith('new'))
  f = statistics.mean(runs[n][k][1] for n in have if n.startswith('new'))
  print(*k, ' '.join('%.2f' % runs[n][k][0] for n in have), '| %.4f | %.3f' % (nw / b, f))
PY
