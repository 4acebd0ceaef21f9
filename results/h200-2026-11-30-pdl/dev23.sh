#!/bin/bash
ROOT=$PWD
ln -sfn $ROOT/.carry/build-lead $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
B=$ROOT/build-lead
W=/tmp/w23; mkdir -p $W/results
trap 'cp $ROOT/.carry/dev23.sh $W/; tar czf $OUT/dev23.tgz -C $W .' EXIT
$B/kvb sweep --config experiments/decode_latency.toml --set variant=recurrent,kvbuffer --set batch=512,1 --set buffer_size=1 --set launch=plain --out $W/results/diag_after_large.csv > $W/diag_after_large.log 2>&1; echo "diag rc=$?"
$B/kvb sweep --config experiments/decode_latency.toml --set batch=1 --set buffer_size=1,2 --out $W/results/decode_b1.csv > $W/decode_b1.log 2>&1; echo "b1 rc=$?"
python3 - <<'PY'
import csv
for f in ['diag_after_large','decode_b1']:
  for r in csv.DictReader(open(f'/tmp/w23/results/{f}.csv')):
    print(f, r['variant'][:4], r['batch'], r['buffer_size'], r['launch'], r['measured_over_model'], r['dram_write_bytes'], r['latency_us_median'], r['status'])
PY
