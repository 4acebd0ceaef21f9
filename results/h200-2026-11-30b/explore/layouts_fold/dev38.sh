#!/bin/bash
# Commit 4446697 (recurrent verify in row bands; fold_entries shared by the folds): GPU tests, the recurrent verify
# tests at every layout, sanitizers, decode A/B against 4fc32b9 (fold codegen), recurrent verify layout A/B.
ROOT=$PWD
ln -sfn $ROOT/.carry/b38 $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
B=$ROOT/build-lead; A=/tmp/a38; mkdir -p $A; xz -dc $ROOT/.carry/a38/kvb.xz > $A/kvb && chmod +x $A/kvb
W=/tmp/w38; mkdir -p $W/results
trap 'cp $ROOT/.carry/dev38.sh $W/; tar czf $OUT/dev38.tgz -C $W .' EXIT
nvidia-smi > $W/nvidia_smi.txt 2>&1
$B/tests/kvb_tests --gtest_filter='*Gpu*:CapacityProbe*' > $W/gtest_gpu.txt 2>&1; echo "gtest rc=$?"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST|tests ran" $W/gtest_gpu.txt | head -20
for t in 64,128 128,512; do KVB_TILE=$t $B/tests/kvb_tests --gtest_filter='RecurrentVerifyGpu.*' > $W/gtest_rv_$t.txt 2>&1; echo "rv $t rc=$?"; grep -E "PASSED  \]|FAILED" $W/gtest_rv_$t.txt | head -5; done
timeout 120 compute-sanitizer --tool memcheck $B/tests/kvb_tests --gtest_filter='RecurrentVerifyGpu.*:KVBufferVerifyGpu.SlicedHeads*:VerifyGpu.GoldenDraft4:KVBufferFlushGpu.*:KVBufferDecodeGpu.PaddingRows*' > $W/sanitizer_memcheck.txt 2>&1; echo "memcheck rc=$?"; tail -1 $W/sanitizer_memcheck.txt
timeout 150 compute-sanitizer --tool racecheck $B/tests/kvb_tests --gtest_filter='RecurrentVerifyGpu.*:VerifyGpu.GoldenDraft4:KVBufferVerifyGpu.SlicedHeads*:KVBufferFlushGpu.*' > $W/sanitizer_racecheck.txt 2>&1; echo "racecheck rc=$?"; tail -1 $W/sanitizer_racecheck.txt
# Decode A/B: 4fc32b9 (a) against this commit (b), interleaved, KVBuffer B = 8 and 16, batch 64 and 256, PDL.
for r in 1 2; do for v in a b; do
  BIN=$B/kvb; [ $v = a ] && BIN=$A/kvb
  timeout 60 $BIN sweep --config experiments/decode_latency.toml --set variant=kvbuffer --set batch=64,256 --set buffer_size=8,16 --set launch=pdl --no-cupti --max-seconds 0.5 --out $W/results/dec_ab_${v}$r.csv > $W/dec_ab_${v}$r.log 2>&1; echo "dec $v$r rc=$?"
done; done
# Recurrent verify layouts: bands of 16 rows (default), column warps (64,128), bands of 8 rows (128,512), interleaved.
for r in 1 2; do for t in default 64,128 128,512; do
  [ $r = 2 ] && [ $t = 128,512 ] && continue
  if [ $t = default ]; then E=""; else E="KVB_TILE=$t"; fi
  env $E timeout 90 $B/kvb sweep --config experiments/spec_verify.toml --set variant=recurrent_verify --set accepted=all --no-cupti --max-seconds 0.5 --out $W/results/rv_${t/,/_}_$r.csv > $W/rv_${t/,/_}_$r.log 2>&1; echo "rv $t $r rc=$?"
done; done
python3 - <<'PY'
import csv, glob, os
for f in sorted(glob.glob('/tmp/w38/results/*.csv')):
  for r in csv.DictReader(open(f)):
    k = os.path.basename(f)[:-4]
    if 'verify_us_median' in r:
      print(k, r['batch'], r['draft_tokens'], 'v', r['verify_us_median'], 'va', r['verify_accept_us_median'], r['sm_clock_mhz'], r['status'][:30])
    else:
      print(k, r['batch'], r['buffer_size'], r['launch'], r['latency_us_median'], r['sm_clock_mhz'], r['status'][:30])
PY
# Nsight Compute on one KVBuffer decode launch (batch 256, B = 8, PDL), for where the decode kernel's time goes.
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
timeout 110 $NCU --kernel-name regex:kvbuffer_decode_kernel --launch-skip 40 --launch-count 1 --set full --import-source yes -o $W/prof_decode $B/kvb sweep --config experiments/decode_latency.toml --set variant=kvbuffer --set batch=256 --set buffer_size=8 --set launch=pdl --no-cupti --max-seconds 0.2 --out $W/ncu_dec.csv > $W/ncu_dec_run.log 2>&1; echo "ncu rc=$?"; tail -2 $W/ncu_dec_run.log
[ -f $W/prof_decode.ncu-rep ] && $NCU --import $W/prof_decode.ncu-rep --page details > $W/ncu_decode_details.txt 2>&1
[ -f $W/prof_decode.ncu-rep ] && $NCU --import $W/prof_decode.ncu-rep --page source --csv --print-source sass > $W/ncu_decode_sass.csv 2>&1
grep -E "Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Issue Slots Busy|Eligible Warps|No Eligible|Registers Per|Block Limit" $W/ncu_decode_details.txt | head -20
