#!/bin/bash
# Verify in two kernels (branch verify-prepare): Nsight Compute's duration of each kernel (preparation, verify) against
# the fused verify kernel of the same build (KVB_VERIFY_FUSED=1), 4 drafts, B = 8, all accepted, plain, batch 64 and 256.
ROOT=$PWD
B=$ROOT/.carry/b108
xz -dc $B/kvb.xz > /tmp/kvb108 && chmod +x /tmp/kvb108
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w109; mkdir -p $W
trap 'cp $ROOT/.carry/dev109.sh $W/; tar czf $OUT/dev109.tgz -C $W .' EXIT
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1); echo "ncu=$NCU"
for b in 64 256; do
  P="--config experiments/spec_verify.toml --set variant=kvbuffer_verify --set draft_tokens=4 --set buffer_size=8 --set batch=$b --set accepted=all --set launch=plain --no-cupti --max-seconds 0.05"
  for mode in prep fused; do
    E=""; [ $mode = fused ] && E="KVB_VERIFY_FUSED=1"
    env $E timeout 150 $NCU --metrics gpu__time_duration.sum --kernel-name regex:kvbuffer_verify --launch-skip 300 --launch-count 24 --csv /tmp/kvb108 sweep $P --out $W/pt_${mode}_$b.csv > $W/ncu_${mode}_$b.csv 2> $W/ncu_${mode}_$b.err; echo "$mode $b rc=$? $SECONDS s"
    python3 - "$W/ncu_${mode}_$b.csv" <<'PY'
import csv,sys,collections
rows=[r for r in csv.reader(open(sys.argv[1])) if len(r)>10]
h=rows[0]; ki=h.index('Kernel Name'); vi=h.index('Metric Value'); ui=h.index('Metric Unit')
d=collections.defaultdict(list)
for r in rows[1:]:
    name='prepare' if 'prepare' in r[ki] else 'verify'
    v=float(r[vi].replace(',','')); u=r[ui]
    d[name].append(v/1000 if u=='nsecond' else v*1000 if u=='msecond' else v)
for k,v in d.items(): v.sort(); print(k, 'n', len(v), 'median us', round(v[len(v)//2],2), 'min', round(v[0],2), 'max', round(v[-1],2))
PY
  done
done
