#!/bin/bash
# Decode: one warp_sum_scatter per buffer entry's coefficients and for the token's q/k norms, float4 row reduction
# (new, 74cb87d + working tree) against the committed kernels (base, 74cb87d): GPU tests of every kernel touched,
# racecheck on decode, interleaved A/B of KVBuffer decode (PDL), then Nsight Compute (full set, source) on base decode.
ROOT=$PWD
B=$ROOT/.carry/b71
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
xz -dc $B/kvb.xz > $B/kvb && chmod +x $B/kvb
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
xz -dc $ROOT/.carry/b70/kvb.xz > /tmp/kvb_base && chmod +x /tmp/kvb_base
W=/tmp/w71; mkdir -p $W/ab
trap 'cp $ROOT/.carry/dev71.sh $W/; tar czf $OUT/dev71.tgz -C $W .' EXIT
nvidia-smi > $W/nvidia_smi.txt 2>&1
$B/tests/kvb_tests --gtest_filter='*Gpu*:LaunchValidation*' > $W/gtest_gpu.txt 2>&1; rc=$?; echo "gtest rc=$rc"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_gpu.txt | head -20
[ $rc -eq 0 ] || exit 1
timeout 60 compute-sanitizer --tool racecheck $B/tests/kvb_tests --gtest_filter='PdlLaunchGpu.CheckAgainst*:KVBufferDecodeGpu.Padding*:KVBufferFlushGpu.*' > $W/racecheck.txt 2>&1; echo "racecheck rc=$?"; grep "RACECHECK SUMMARY" $W/racecheck.txt
for r in 1 2; do for v in base new; do
  bin=/tmp/kvb_base; [ $v = new ] && bin=$B/kvb
  timeout 90 $bin sweep --config experiments/decode_latency.toml --set variant=kvbuffer,recurrent --set launch=pdl --set batch=64,128,256,512 --set buffer_size=4,8,16 --no-cupti --max-seconds 0.4 --out $W/ab/dec_${v}_$r.csv > $W/ab/dec_${v}_$r.log 2>&1; echo "ab $v $r rc=$? $SECONDS s"
done; done
python3 - <<'PY' | tee $W/ab/summary.txt
import csv, statistics, collections
W = '/tmp/w71/ab'
runs = collections.defaultdict(dict)
for v in ('base', 'new'):
  for r in (1, 2):
    for row in csv.DictReader(open('%s/dec_%s_%d.csv' % (W, v, r))):
      if row['status'] == 'ok': runs['%s_%d' % (v, r)][(row['variant'], int(row['batch']), int(row['buffer_size'] or 0))] = (float(row['latency_us_median']), float(row['floor_us']))
names = sorted(runs)
print('decode, PDL, us per layer:', ' '.join(names), '| new/base | new/floor')
for k in sorted(runs['base_1']):
  b = statistics.mean(runs[n][k][0] for n in names if n.startswith('base') and k in runs[n]); nw = statistics.mean(runs[n][k][0] for n in names if n.startswith('new') and k in runs[n])
  print(*k, ' '.join('%.2f' % runs[n][k][0] if k in runs[n] else 'nan' for n in names), '| %.4f | %.3f' % (nw / b, nw / runs['new_1'][k][1]))
PY
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
for cfg in "256 8" "256 16" "64 8"; do set -- $cfg
  timeout 150 $NCU --clock-control none --kernel-name regex:kvbuffer_decode_kernel --launch-skip 40 --launch-count 1 --set full --import-source yes -o $W/prof_b$1_B$2 /tmp/kvb_base sweep --config experiments/decode_latency.toml --set variant=kvbuffer --set batch=$1 --set buffer_size=$2 --set launch=plain --no-cupti --max-seconds 0.1 --out $W/ncu_b$1_B$2.csv > $W/ncu_b$1_B$2.log 2>&1; echo "ncu $cfg rc=$? $SECONDS s"
  $NCU --import $W/prof_b$1_B$2.ncu-rep --page details > $W/ncu_b$1_B$2_details.txt 2>&1
  $NCU --import $W/prof_b$1_B$2.ncu-rep --page source --csv --print-source cuda,sass > $W/ncu_b$1_B$2_source.csv 2>&1; gzip -f $W/ncu_b$1_B$2_source.csv
  rm -f $W/prof_b$1_B$2.ncu-rep
  grep -E "Duration|DRAM Throughput|Issue Slots Busy|Executed Instructions  |Achieved Occupancy" $W/ncu_b$1_B$2_details.txt | head -6
  [ $SECONDS -gt 540 ] && break
done
