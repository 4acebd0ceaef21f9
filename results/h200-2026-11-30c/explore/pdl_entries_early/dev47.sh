#!/bin/bash
# Commit 02610c4 (one block per item again; early PDL blocks read buffer positions and entries before the wait where
# the previous kernel is another layer's): the decode and PDL GPU tests, then PDL-launch A/B runs, interleaved, of
# KVBuffer decode (B = 8, 16) and KVBuffer verify (4 drafts, B = 8) against 13fac37, with the first wave's early
# blocks per SM capped through KVB_PDL_EARLY (unset: all the SM holds).
ROOT=$PWD
B=$ROOT/.carry/b47
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
T=/tmp/t47; mkdir -p $T
xz -dc $ROOT/.carry/base13/kvb_13fac37.xz > $T/kvb_13fac37 && chmod +x $T/kvb_13fac37
cp $B/kvb $T/kvb_02610c4
W=/tmp/w47; mkdir -p $W/ab
trap 'cp $ROOT/.carry/dev47.sh $W/; tar czf $OUT/dev47.tgz -C $W .' EXIT
nvidia-smi > $W/nvidia_smi.txt 2>&1
$B/tests/kvb_tests --gtest_filter='KVBufferDecodeGpu.*:StatelessGpu.*:PdlLaunchGpu.*:KVBufferFlushGpu.*:LaunchValidation*' > $W/gtest_gpu.txt 2>&1; rc=$?; echo "gtest rc=$rc"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_gpu.txt | head -20
[ $rc -eq 0 ] || exit 1
run() {  # name binary early
  if [ -n "$3" ]; then export KVB_PDL_EARLY=$3; else unset KVB_PDL_EARLY; fi
  timeout 60 $T/kvb_$2 sweep --config experiments/decode_latency.toml --set variant=kvbuffer --set launch=pdl --set batch=32,64,128,256,512 --set buffer_size=8,16 --no-cupti --max-seconds 0.4 --out $W/ab/dec_$1.csv > $W/ab/dec_$1.log 2>&1; echo "dec $1 rc=$?"
  timeout 60 $T/kvb_$2 sweep --config experiments/spec_verify.toml --set variant=kvbuffer_verify --set launch=pdl --set batch=64,256 --set draft_tokens=4 --set accepted=all,0.7 --set buffer_size=8 --no-cupti --max-seconds 0.4 --out $W/ab/sv_$1.csv > $W/ab/sv_$1.log 2>&1; echo "sv $1 rc=$?"
}
for r in 1 2; do
  run base_$r 13fac37 ""
  run new_$r 02610c4 ""
  run new4_$r 02610c4 4
  run new3_$r 02610c4 3
done
unset KVB_PDL_EARLY
python3 - <<'PY' > $W/ab/summary.txt
import csv, glob, statistics, collections
for kind, col, keyf in (('dec', 'latency_us_median', lambda r: (r['batch'], r['buffer_size'])),
                        ('sv', 'verify_accept_us_median', lambda r: (r['batch'], r['accepted']))):
  runs = collections.defaultdict(dict)
  for f in sorted(glob.glob('/tmp/w47/ab/%s_*.csv' % kind)):
    name = f.split('/')[-1][len(kind) + 1:-4]
    for r in csv.DictReader(open(f)):
      if r['status'] == 'ok': runs[name][keyf(r)] = float(r[col])
  names = sorted(runs)
  print(kind, col, ' '.join(names))
  for k in sorted(runs['base_1'], key=lambda k: tuple(map(str, k))):
    base = statistics.mean(runs[n][k] for n in names if n.startswith('base') and k in runs[n])
    line = ' '.join('%.2f' % runs[n].get(k, float('nan')) for n in names)
    rat = ' '.join('%s %.4f' % (v, statistics.mean(runs[n][k] for n in names if n.startswith(v + '_') and k in runs[n]) / base) for v in ('new', 'new4', 'new3'))
    print(*k, line, '|', rat)
PY
cat $W/ab/summary.txt
