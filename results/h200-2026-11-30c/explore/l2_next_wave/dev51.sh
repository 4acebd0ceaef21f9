#!/bin/bash
# Commit d0f7648 (early PDL blocks prefetch the next wave's checkpoint slices into L2): the decode, PDL and stateless
# GPU tests, then PDL and plain A/B runs of KVBuffer decode against f4f7b76 (the committed kernels), interleaved.
ROOT=$PWD
B=$ROOT/.carry/b51
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=$OUT/w51; mkdir -p $W/ab
cp $ROOT/.carry/dev51.sh $W/
xz -dc $ROOT/.carry/base48/kvb.xz > /tmp/kvb_base && chmod +x /tmp/kvb_base
$B/tests/kvb_tests --gtest_filter='KVBufferDecodeGpu.*:StatelessGpu.*:PdlLaunchGpu.*:ShortContextGpu.*:DecodeBytesGpu.*' > $W/gtest_gpu.txt 2>&1; rc=$?; echo "gtest rc=$rc"; grep -E "^\[  FAILED|PASSED  \]" $W/gtest_gpu.txt | head
[ $rc -eq 0 ] || exit 1
for r in 1 2; do for v in base new; do
  bin=/tmp/kvb_base; [ $v = new ] && bin=$B/kvb
  timeout 70 $bin sweep --config experiments/decode_latency.toml --set variant=kvbuffer --set launch=pdl,plain --set batch=32,64,128,256,512 --set buffer_size=8,16 --no-cupti --max-seconds 0.4 --out $W/ab/dec_${v}_$r.csv > $W/ab/dec_${v}_$r.log 2>&1; echo "ab $v $r rc=$?"
done; done
python3 - <<'PY' | tee $W/ab/summary.txt
import csv, glob, statistics, collections, os
W = os.environ['OUT'] + '/w51/ab'
runs = collections.defaultdict(dict)
for f in sorted(glob.glob(W + '/dec_*.csv')):
  n = os.path.basename(f)[4:-4]
  for r in csv.DictReader(open(f)):
    if r['status'] == 'ok': runs[n][(r['launch'], int(r['batch']), int(r['buffer_size']))] = float(r['latency_us_median'])
names = sorted(runs)
print('KVBuffer decode, us per layer:', ' '.join(names), '| new/base')
for k in sorted(runs['base_1']):
  b = statistics.mean(runs[n][k] for n in names if n.startswith('base')); nw = statistics.mean(runs[n][k] for n in names if n.startswith('new'))
  print(*k, ' '.join('%.2f' % runs[n][k] for n in names), '| %.4f' % (nw / b))
PY
