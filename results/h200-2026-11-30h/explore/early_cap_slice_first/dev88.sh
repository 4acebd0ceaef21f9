#!/bin/bash
# Exploration (branch explore-b64, commit ceb351e) against fd355f2 (base): early PDL blocks capped at 5 and 4 per SM
# (KVB_EARLY_PER_SM), and early blocks passing over their slice before the keys' barrier (KVB_SLICE_FIRST=1);
# KVBuffer decode, PDL, batch 64, 128, 256, B = 4, 8, three interleaved rounds.
ROOT=$PWD
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w88; mkdir -p $W
trap 'cp $ROOT/.carry/dev88.sh $W/; cp /tmp/ab_*.csv $W/ 2>/dev/null; tar czf $OUT/dev88.tgz -C $W .' EXIT
xz -dc $ROOT/.carry/b86/kvb.xz > /tmp/kvb_base && chmod +x /tmp/kvb_base
xz -dc $ROOT/.carry/x88/kvb.xz > /tmp/kvb_x && chmod +x /tmp/kvb_x
run() {  # name, binary, env
  env $3 timeout 60 $2 sweep --config experiments/decode_latency.toml --set variant=kvbuffer --set launch=pdl --set batch=64,128,256 --set buffer_size=4,8 --no-cupti --max-seconds 0.4 --out /tmp/ab_$1.csv > /dev/null 2>$W/err_$1.txt; echo "$1 rc=$? $SECONDS s"
}
for r in 1 2 3; do
  run base_$r /tmp/kvb_base X=0
  run cap5_$r /tmp/kvb_x KVB_EARLY_PER_SM=5
  run slicefirst_$r /tmp/kvb_x KVB_SLICE_FIRST=1
  run cap4_$r /tmp/kvb_x KVB_EARLY_PER_SM=4
done
python3 - <<'PY' | tee $W/summary.txt
import csv, statistics, collections, glob, os
runs = collections.defaultdict(lambda: collections.defaultdict(list))
for f in glob.glob('/tmp/ab_*.csv'):
  v = os.path.basename(f)[3:-4].rsplit('_', 1)[0]
  for row in csv.DictReader(open(f)):
    if row['status'] == 'ok': runs[v][(int(row['batch']), int(row['buffer_size']))].append(float(row['latency_us_median']))
print('KVBuffer decode PDL, mean of rounds, us per layer (ratio to base)')
for k in sorted(runs['base']):
  b = statistics.mean(runs['base'][k])
  print(*k, 'base %.2f' % b, ' '.join('%s %.2f (%.4f)' % (v, statistics.mean(runs[v][k]), statistics.mean(runs[v][k]) / b) for v in ('cap5', 'cap4', 'slicefirst') if runs[v][k]))
PY
