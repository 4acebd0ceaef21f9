#!/bin/bash
# Verify's coefficient phase, two steps further than v1 (f802019): v2a, the weights and drafts' decays on the last
# warp and the draft-draft pairs enumerated (ip <= i) with both sums at once; v2b, v2a plus each lane's first delta
# requested before the first barrier (drafts read from shared memory per entry). Correctness of every draft count
# (the sweep's reference check), then interleaved A/B runs (PDL) of KVBuffer verify with 4 drafts, three rounds.
ROOT=$PWD
B=$ROOT/.carry/b66
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
T=/tmp/t66; mkdir -p $T
for v in v1 v2a v2b; do xz -dc $B/kvb_$v.xz > $T/kvb_$v && chmod +x $T/kvb_$v; done
W=/tmp/w66; mkdir -p $W/ab $W/check
trap 'cp $ROOT/.carry/dev66.sh $W/; tar czf $OUT/dev66.tgz -C $W .' EXIT
for v in v2a v2b; do
  timeout 60 $T/kvb_$v sweep --config experiments/spec_verify.toml --set variant=kvbuffer_verify --set launch=plain,pdl --set batch=64 --set draft_tokens=1,2,3,5,6,7,8 --set accepted=all,0.7 --set buffer_size=8 --no-cupti --max-seconds 0.02 --out $W/check/sv_$v.csv > $W/check/sv_$v.log 2>&1; echo "check $v rc=$?"
  python3 -c "import csv,sys; r=list(csv.DictReader(open('$W/check/sv_$v.csv'))); print(len(r), 'points', sorted(set(x['status'] for x in r)), 'max_rel_err', max(float(x['max_rel_err']) for x in r))"
done
run() {  # name binary
  timeout 70 $T/kvb_$2 sweep --config experiments/spec_verify.toml --set variant=kvbuffer_verify --set launch=pdl --set batch=64,256 --set draft_tokens=4 --set accepted=all,0.7 --set buffer_size=8,16,32 --no-cupti --max-seconds 0.3 --out $W/ab/sv_$1.csv > $W/ab/sv_$1.log 2>&1; echo "sv $1 rc=$?"
}
for r in 1 2 3; do run v1_$r v1; run v2a_$r v2a; run v2b_$r v2b; done
python3 - <<'PY' > $W/ab/summary.txt
import csv, glob, statistics, collections, os
W = '/tmp/w66/ab'
for col in ('verify_us_median', 'verify_accept_us_median'):
  runs = collections.defaultdict(dict)
  for f in sorted(glob.glob(W + '/sv_*.csv')):
    name = os.path.basename(f)[3:-4]
    for r in csv.DictReader(open(f)):
      if r['status'] == 'ok': runs[name][(int(r['draft_tokens']), int(r['batch']), int(r['buffer_size']), r['accepted'])] = float(r[col])
  names = sorted(runs)
  print(col, ' '.join(names), '| v2a/v1 v2b/v1')
  for k in sorted(runs['v1_1']):
    m = {v: statistics.mean(runs[n][k] for n in names if n.startswith(v + '_') and k in runs[n]) for v in ('v1', 'v2a', 'v2b')}
    print(*k, ' '.join('%.2f' % runs[n][k] if k in runs[n] else 'nan' for n in names), '| %.4f %.4f' % (m['v2a'] / m['v1'], m['v2b'] / m['v1']))
PY
cat $W/ab/summary.txt
