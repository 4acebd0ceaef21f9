#!/bin/bash
ROOT=$PWD
xz -dc $ROOT/.carry/xz/kvb_base.xz > $ROOT/.carry/b25/kvb_base && xz -dc $ROOT/.carry/xz/kvb_tests.xz > $ROOT/.carry/b25/tests/kvb_tests && chmod +x $ROOT/.carry/b25/kvb_base $ROOT/.carry/b25/tests/kvb_tests
ln -sfn $ROOT/.carry/b25 $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
B=$ROOT/build-lead
W=/tmp/w25; mkdir -p $W/results $W/ab
trap 'cp $ROOT/.carry/dev25.sh $W/; tar czf $OUT/dev25.tgz -C $W .' EXIT
AB="--config experiments/decode_latency.toml --set batch=64,128,256,512 --set buffer_size=8 --set launch=plain,pdl --no-cupti --max-seconds 0.5"
for round in 1 2; do
  for bin in base new; do
    exe=$B/kvb; [ $bin = base ] && exe=$B/kvb_base
    $exe sweep $AB --out $W/ab/${bin}_$round.csv > $W/ab/${bin}_$round.log 2>&1; echo "$bin $round rc=$?"
  done
done
python3 - <<'PY' > $W/ab/decision.txt
import csv,glob,statistics
tot={}
for b in ['base','new']:
  rows={}
  for f in glob.glob(f'/tmp/w25/ab/{b}_*.csv'):
    for r in csv.DictReader(open(f)):
      rows.setdefault((r['variant'],r['batch'],r['launch']),[]).append(float(r['latency_us_median']))
  tot[b]={k:statistics.mean(v) for k,v in rows.items()}
for k in sorted(tot['base']): print(k, round(tot['base'][k],2), round(tot['new'][k],2), round(tot['new'][k]/tot['base'][k],4))
kv=[k for k in tot['base'] if k[0]=='kvbuffer']
ratio=sum(tot['new'][k] for k in kv)/sum(tot['base'][k] for k in kv)
print('kvbuffer new/base', round(ratio,4)); print('RUN' if ratio<0.99 else 'SKIP')
PY
cat $W/ab/decision.txt
if tail -1 $W/ab/decision.txt | grep -q RUN; then
  timeout 300 $B/kvb sweep --config experiments/decode_latency.toml --out $W/results/decode_latency.csv > $W/decode.log 2>&1; echo "dec rc=$?"; tail -1 $W/decode.log
  $B/tests/kvb_tests --gtest_filter='*Gpu*' > $W/gtest_gpu.txt 2>&1; echo "gtest rc=$?"; grep -E "^\[  FAILED|PASSED  \]" $W/gtest_gpu.txt | head
  $B/kvb sweep --config experiments/ci_smoke.toml --out $W/ci_smoke.csv > $W/ci_smoke.log 2>&1; echo "smoke rc=$?"
fi
