#!/bin/bash
# Commit 11dccaf (padding rows return before the PDL copy): every GPU test, sanitizers on the PDL verify tests, a
# plain-launch A/B of verify against 2b67fd0 (before PDL) on the same machine, then the spec_verify grid (plain and
# PDL) and buffer_form_verify (4 drafts).
ROOT=$PWD
ln -sfn $ROOT/.carry/b43 $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
B=$ROOT/build-lead; T=/tmp/t43; mkdir -p $T
xz -dc $ROOT/.carry/a43/kvb.xz > $T/kvb_2b67fd0 && chmod +x $T/kvb_2b67fd0
cp $B/kvb $T/kvb_11dccaf
W=/tmp/w43; mkdir -p $W/results $W/ab
trap 'cp $ROOT/.carry/dev43.sh $W/; tar czf $OUT/dev43.tgz -C $W .' EXIT
nvidia-smi > $W/nvidia_smi.txt 2>&1
$B/kvb info > $W/info.txt 2>&1
$B/tests/kvb_tests --gtest_filter='*Gpu*:CapacityProbe*' > $W/gtest_gpu.txt 2>&1; rc=$?; echo "gtest rc=$rc"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_gpu.txt | head -20
[ $rc -eq 0 ] || exit 1
timeout 100 compute-sanitizer --tool memcheck $B/tests/kvb_tests --gtest_filter='PdlLaunchGpu.*Verify*:RecurrentVerifyGpu.*:KVBufferVerifyGpu.SlicedHeads*' > $W/sanitizer_memcheck.txt 2>&1; echo "memcheck rc=$?"; tail -1 $W/sanitizer_memcheck.txt
timeout 100 compute-sanitizer --tool racecheck $B/tests/kvb_tests --gtest_filter='PdlLaunchGpu.VerifyCheck*:VerifyGpu.GoldenDraft4' > $W/sanitizer_racecheck.txt 2>&1; echo "racecheck rc=$?"; tail -1 $W/sanitizer_racecheck.txt
for r in 1 2; do for v in 2b67fd0 11dccaf; do
  timeout 60 $T/kvb_$v sweep --config experiments/spec_verify.toml --set launch=plain --set batch=64,256 --set draft_tokens=1,4,8 --set accepted=all --set buffer_size=8 --no-cupti --max-seconds 0.4 --out $W/ab/plain_${v}_$r.csv > $W/ab/plain_${v}_$r.log 2>&1; echo "ab $v $r rc=$?"
done; done
timeout 300 $B/kvb sweep --config experiments/spec_verify.toml --out $W/results/spec_verify.csv > $W/spec_verify.log 2>&1; echo "sv rc=$?"; tail -1 $W/spec_verify.log
timeout 50 $B/kvb sweep --config experiments/buffer_form_verify.toml --set draft_tokens=4 --out $W/results/buffer_form_verify.csv > $W/buffer_form_verify.log 2>&1; echo "bfv rc=$?"; tail -1 $W/buffer_form_verify.log
python3 - <<'PY'
import csv, glob
key = lambda r: (r['variant'][:4], r['batch'], r['draft_tokens'], r['buffer_size'])
runs = {}
for f in sorted(glob.glob('/tmp/w43/ab/*.csv')):
  runs[f.split('/')[-1][6:-4]] = {key(r): r for r in csv.DictReader(open(f))}
names = sorted(runs)
print('A/B plain verify (us):', ' '.join(names))
for k in runs[names[0]]:
  print(*k, ' '.join('%.1f' % float(runs[n][k]['verify_us_median']) for n in names if k in runs[n]))
PY
