#!/bin/bash
# Verify of b56 (chunked slice, reduce-scatter, pre-scaled fold keys): 128-column blocks (default at batch >= 17)
# against 64-column blocks (KVB_TILE=64,128: twice the blocks, about 40 KB each), interleaved, PDL; then Nsight
# Compute on the default kernel (batch 64, 4 drafts, B = 8, all accepted: the check's first two verify launches).
ROOT=$PWD
B=$ROOT/.carry/b56
xz -dc $B/kvb.xz > $B/kvb && chmod +x $B/kvb
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w57; mkdir -p $W/ab
trap 'cp $ROOT/.carry/dev57.sh $W/; tar czf $OUT/dev57.tgz -C $W .' EXIT
run() {  # name [tile]
  if [ -n "$2" ]; then export KVB_TILE=$2; else unset KVB_TILE; fi
  timeout 90 $B/kvb sweep --config experiments/spec_verify.toml --set variant=kvbuffer_verify --set launch=pdl --set batch=64,256 --set draft_tokens=4 --set accepted=all,0.7 --set buffer_size=8,16,32 --no-cupti --max-seconds 0.4 --out $W/ab/sv_$1.csv > $W/ab/sv_$1.log 2>&1; echo "sv $1 rc=$?"
}
for r in 1 2; do run v2_$r ""; run t64_$r 64,128; done
unset KVB_TILE
python3 - <<'PY' > $W/ab/summary.txt
import csv, glob, statistics, collections, os
W = '/tmp/w57/ab'
for col in ('verify_us_median', 'verify_accept_us_median'):
  runs = collections.defaultdict(dict)
  for f in sorted(glob.glob(W + '/sv_*.csv')):
    name = os.path.basename(f)[3:-4]
    for r in csv.DictReader(open(f)):
      if r['status'] == 'ok': runs[name][(r['batch'], r['buffer_size'], r['accepted'])] = float(r[col])
  names = sorted(runs)
  print(col, ' '.join(names), '| t64/v2')
  for k in sorted(runs['v2_1']):
    m = {v: statistics.mean(runs[n][k] for n in names if n.startswith(v + '_') and k in runs[n]) for v in ('v2', 't64')}
    print(*k, ' '.join('%.2f' % runs[n][k] if k in runs[n] else 'nan' for n in names), '| %.4f' % (m['t64'] / m['v2']))
PY
cat $W/ab/summary.txt
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
timeout 200 $NCU --clock-control none --kernel-name regex:kvbuffer_verify_kernel --launch-skip 0 --launch-count 2 --set full --import-source yes -o $W/prof_verify $B/kvb sweep --config experiments/spec_verify.toml --set variant=kvbuffer_verify --set batch=64 --set draft_tokens=4 --set accepted=all --set buffer_size=8 --set launch=plain --no-cupti --max-seconds 0.1 --out $W/ncu_sv.csv > $W/ncu_run.log 2>&1; echo "ncu rc=$?"
$NCU --import $W/prof_verify.ncu-rep --page details > $W/ncu_verify_details.txt 2>&1
$NCU --import $W/prof_verify.ncu-rep --page source --csv --print-source sass > $W/ncu_verify_sass.csv 2>&1
rm -f $W/prof_verify.ncu-rep
grep -E "kvbuffer_verify_kernel|Duration|DRAM Throughput|Issue Slots Busy|Eligible Warps|No Eligible|Registers Per|Achieved Occupancy|SM Frequency" $W/ncu_verify_details.txt | head -30
