#!/bin/bash
ROOT=$PWD
ln -sfn $ROOT/.carry/build-lead $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
B=$ROOT/build-lead
W=/tmp/w24; mkdir -p $W/results
trap 'cp $ROOT/.carry/dev24.sh $W/; tar czf $OUT/dev24.tgz -C $W .' EXIT
for t in default 64,256 32,128; do
  if [ $t = default ]; then unset KVB_TILE; else export KVB_TILE=$t; fi
  n=${t/,/_}
  timeout 150 $B/kvb sweep --config experiments/decode_latency.toml --set variant=kvbuffer --set batch=32,64,128,256,512 --set buffer_size=8 --set launch=plain,pdl --no-cupti --max-seconds 0.5 --out $W/results/tile_$n.csv > $W/tile_$n.log 2>&1; echo "$t rc=$?"
done
python3 - <<'PY'
import csv,glob
for f in sorted(glob.glob('/tmp/w24/results/tile_*.csv')):
  for r in csv.DictReader(open(f)):
    print(f.split('/')[-1], r['batch'], r['launch'], r['latency_us_median'], r['sm_clock_mhz'], r['status'][:30])
PY
