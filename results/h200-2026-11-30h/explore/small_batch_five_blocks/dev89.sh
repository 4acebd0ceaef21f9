#!/bin/bash
# Exploration (commit 1c0bb97, patch explore_b16.patch) against fd355f2 (base) at small batches, where six blocks an SM
# measured slower with PDL at batch 16: the 64-column blocks padded to five an SM (KVB_DECODE_PAD5=32: batch <= 32),
# and early PDL blocks capped at 5 an SM (KVB_EARLY_PER_SM=5, batch <= 32); KVBuffer decode, batch 8 to 32,
# B = 2, 4, 8, PDL and plain, two interleaved rounds.
ROOT=$PWD
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w89; mkdir -p $W
trap 'cp $ROOT/.carry/dev89.sh $W/; cp /tmp/ab_*.csv $W/ 2>/dev/null; tar czf $OUT/dev89.tgz -C $W .' EXIT
xz -dc $ROOT/.carry/b86/kvb.xz > /tmp/kvb_base && chmod +x /tmp/kvb_base
xz -dc $ROOT/.carry/x89/kvb.xz > /tmp/kvb_x && chmod +x /tmp/kvb_x
run() {  # name, binary, env
  env $3 timeout 90 $2 sweep --config experiments/decode_latency.toml --set variant=kvbuffer --set launch=pdl,plain --set batch=8,12,16,20,24,32 --set buffer_size=2,4,8 --no-cupti --max-seconds 0.4 --out /tmp/ab_$1.csv > /dev/null 2>$W/err_$1.txt; echo "$1 rc=$? $SECONDS s"
}
for r in 1 2; do
  run base_$r /tmp/kvb_base X=0
  run pad5_$r /tmp/kvb_x KVB_DECODE_PAD5=32
  run cap5_$r /tmp/kvb_x KVB_EARLY_PER_SM=5
done
python3 - <<'PY' | tee $W/summary.txt
import csv, statistics, collections, glob, os
runs = collections.defaultdict(lambda: collections.defaultdict(list))
for f in glob.glob('/tmp/ab_*.csv'):
  v = os.path.basename(f)[3:-4].rsplit('_', 1)[0]
  for row in csv.DictReader(open(f)):
    if row['status'] == 'ok': runs[v][(row['launch'], int(row['batch']), int(row['buffer_size']))].append(float(row['latency_us_median']))
print('KVBuffer decode, mean of rounds, us per layer (ratio to base)')
for k in sorted(runs['base']):
  b = statistics.mean(runs['base'][k])
  print(*k, 'base %.2f' % b, ' '.join('%s %.2f (%.4f)' % (v, statistics.mean(runs[v][k]), statistics.mean(runs[v][k]) / b) for v in ('pad5', 'cap5') if runs[v][k]))
PY
