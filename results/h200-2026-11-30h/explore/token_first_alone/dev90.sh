#!/bin/bash
# Exploration (branch explore-token-first, patch token_first.patch) against fd355f2 (base): the token's inputs
# requested before the buffer position (KVB_TOKEN_FIRST=1), alone; the same build's default path (x) checks that the
# refactor changed nothing. KVBuffer decode, batch 32 to 512, B = 4, 8, plain and PDL, three interleaved rounds.
ROOT=$PWD
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w90; mkdir -p $W
trap 'cp $ROOT/.carry/dev90.sh $W/; cp /tmp/ab_*.csv $W/ 2>/dev/null; tar czf $OUT/dev90.tgz -C $W .' EXIT
xz -dc $ROOT/.carry/b86/kvb.xz > /tmp/kvb_base && chmod +x /tmp/kvb_base
xz -dc $ROOT/.carry/x90/kvb.xz > /tmp/kvb_x && chmod +x /tmp/kvb_x
run() {  # name, binary, env
  env $3 timeout 90 $2 sweep --config experiments/decode_latency.toml --set variant=kvbuffer --set launch=pdl,plain --set batch=32,64,128,256,512 --set buffer_size=4,8 --no-cupti --max-seconds 0.4 --out /tmp/ab_$1.csv > /dev/null 2>$W/err_$1.txt; echo "$1 rc=$? $SECONDS s"
}
for r in 1 2 3; do
  run base_$r /tmp/kvb_base X=0
  run tokenfirst_$r /tmp/kvb_x KVB_TOKEN_FIRST=1
  run x_$r /tmp/kvb_x X=0
done
python3 - <<'PY' | tee $W/summary.txt
import csv, statistics, collections, glob, os
runs = collections.defaultdict(lambda: collections.defaultdict(list))
bad = []
for f in glob.glob('/tmp/ab_*.csv'):
  v = os.path.basename(f)[3:-4].rsplit('_', 1)[0]
  for row in csv.DictReader(open(f)):
    if row['status'] == 'ok': runs[v][(row['launch'], int(row['batch']), int(row['buffer_size']))].append(float(row['latency_us_median']))
    else: bad.append((f, row['status']))
print('failed points:', bad)
print('KVBuffer decode, mean of rounds, us per layer (ratio to base)')
for k in sorted(runs['base']):
  b = statistics.mean(runs['base'][k])
  print(*k, 'base %.2f' % b, ' '.join('%s %.2f (%.4f)' % (v, statistics.mean(runs[v][k]), statistics.mean(runs[v][k]) / b) for v in ('tokenfirst', 'x') if runs[v][k]))
PY
