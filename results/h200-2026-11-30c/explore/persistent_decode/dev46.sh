#!/bin/bash
# Commit d5c62d3 (KVBuffer decode in persistent blocks, 8dffc46; capacity warm-up at the wide batch): every GPU test, sanitizers on the decode tests that walk
# many items per block, an interleaved A/B of KVBuffer decode against 13fac37 (plain and PDL), and the whole decode
# grid when the new kernel is faster at the PDL points.
ROOT=$PWD
B=$ROOT/.carry/b46
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
T=/tmp/t46; mkdir -p $T
xz -dc $ROOT/.carry/base13/kvb_13fac37.xz > $T/kvb_13fac37 && chmod +x $T/kvb_13fac37
cp $B/kvb $T/kvb_d5c62d3
W=/tmp/w46; mkdir -p $W/results $W/ab
trap 'cp $ROOT/.carry/dev46.sh $W/; tar czf $OUT/dev46.tgz -C $W .' EXIT
nvidia-smi > $W/nvidia_smi.txt 2>&1
$B/kvb info > $W/info.txt 2>&1
$B/tests/kvb_tests --gtest_filter='*Gpu*:CapacityProbe*:LaunchValidation*' > $W/gtest_gpu.txt 2>&1; rc=$?; echo "gtest rc=$rc"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_gpu.txt | head -20
[ $rc -eq 0 ] || exit 1
timeout 150 compute-sanitizer --tool memcheck $B/tests/kvb_tests --gtest_filter='KVBufferDecodeGpu.FewPersistent*:StatelessGpu.TwoPersistent*:KVBufferDecodeGpu.Padding*:PdlLaunchGpu.CheckAgainst*:KVBufferVerifyGpu.LongBuffers*' > $W/sanitizer_memcheck.txt 2>&1; echo "memcheck rc=$?"; tail -1 $W/sanitizer_memcheck.txt
timeout 150 compute-sanitizer --tool racecheck $B/tests/kvb_tests --gtest_filter='KVBufferDecodeGpu.FewPersistent*:StatelessGpu.TwoPersistent*:PdlLaunchGpu.CheckAgainst*' > $W/sanitizer_racecheck.txt 2>&1; echo "racecheck rc=$?"; tail -1 $W/sanitizer_racecheck.txt
for r in 1 2; do for v in 13fac37 d5c62d3; do
  timeout 100 $T/kvb_$v sweep --config experiments/decode_latency.toml --set variant=kvbuffer --set batch=32,64,128,256,512 --set buffer_size=8,16 --no-cupti --max-seconds 0.4 --out $W/ab/dec_${v}_$r.csv > $W/ab/dec_${v}_$r.log 2>&1; echo "ab $v $r rc=$?"
done; done
python3 - <<'PY' > $W/ab/summary.txt
import csv, glob, statistics
key = lambda r: (r['batch'], r['buffer_size'], r['launch'])
runs = {}
for f in sorted(glob.glob('/tmp/w46/ab/dec_*.csv')):
  runs[f.split('/')[-1][4:-4]] = {key(r): r for r in csv.DictReader(open(f))}
names = sorted(runs)
print('A/B KVBuffer decode (us, per layer):', ' '.join(names), ' new/old (mean of rounds)')
ratios = {'plain': [], 'pdl': []}
for k in runs[names[0]]:
  v = {n: float(runs[n][k]['latency_us_median']) for n in names if k in runs[n]}
  old = statistics.mean(v[n] for n in v if n.startswith('13fac37')); new = statistics.mean(v[n] for n in v if n.startswith('d5c62d3'))
  ratios[k[2]].append(new / old)
  print(*k, ' '.join('%.2f' % v[n] for n in names), ' %.4f' % (new / old))
for l in ratios: print(l, 'mean new/old %.4f' % statistics.mean(ratios[l]))
print('VERDICT', 'faster' if statistics.mean(ratios['pdl']) < 0.995 else 'not faster')
PY
cat $W/ab/summary.txt
if grep -q "VERDICT faster" $W/ab/summary.txt; then
  left=$((575 - SECONDS)); echo "decode sweep gets ${left} s (resumable)"
  timeout $left $B/kvb sweep --config experiments/decode_latency.toml --out $W/results/decode_latency.csv > $W/decode.log 2>&1; echo "decode rc=$?"; tail -1 $W/decode.log
fi
