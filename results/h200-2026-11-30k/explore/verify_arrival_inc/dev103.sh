#!/bin/bash
# Commit of the non-aggregated key-group arrival (atom.inc): every GPU test, compute-sanitizer racecheck and memcheck
# on the KVBuffer verify tests, and two interleaved rounds of spec_verify (4 drafts, B = 8, 16) against 63e183a's kvb
# (base: the verify kernels of results/spec_verify.csv); one round of the same build with 64-column verify blocks
# (KVB_TILE=64,128, rows tile64).
ROOT=$PWD
B=$ROOT/.carry/b103
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
xz -dc $B/kvb.xz > $B/kvb && chmod +x $B/kvb
xz -dc $ROOT/.carry/b91/kvb.xz > /tmp/kvb_base && chmod +x /tmp/kvb_base
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w103; mkdir -p $W/ab
trap 'cp $ROOT/.carry/dev103.sh $W/; tar czf $OUT/dev103.tgz -C $W .' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $W/info.txt
$B/kvb info >> $W/info.txt 2>&1; tail -1 $W/info.txt
$B/tests/kvb_tests --gtest_filter='*Gpu*:CapacityProbe*:LaunchValidation*' > $W/gtest_gpu.txt 2>&1; echo "gtest rc=$? $SECONDS s"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_gpu.txt | head
grep -E "^\[  FAILED" $W/gtest_gpu.txt -B30 | grep -E "Failure|Expected|actual|which is|tolerance|<=" | head -20
SV="--config experiments/spec_verify.toml --set variant=kvbuffer_verify --set draft_tokens=4 --set buffer_size=8,16 --set batch=64,256 --no-cupti --max-seconds 0.4"
for r in 1 2; do
  timeout 60 /tmp/kvb_base sweep $SV --out $W/ab/ab_base_$r.csv > /dev/null 2>&1; echo "base $r rc=$? $SECONDS s"
  timeout 60 $B/kvb sweep $SV --out $W/ab/ab_new_$r.csv > $W/ab/new_$r.log 2>&1; echo "new $r rc=$? $SECONDS s"
done
KVB_TILE=64,128 timeout 60 $B/kvb sweep $SV --out $W/ab/ab_tile64_1.csv > /dev/null 2>&1; echo "tile64 rc=$? $SECONDS s"
F='KVBufferVerifyGpu.*'
timeout 150 compute-sanitizer --tool racecheck $B/tests/kvb_tests --gtest_filter=$F > $W/sanitizer_racecheck.txt 2>&1; echo "racecheck rc=$? $SECONDS s"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $W/sanitizer_racecheck.txt | tail -3
timeout 120 compute-sanitizer --tool memcheck $B/tests/kvb_tests --gtest_filter=$F > $W/sanitizer_memcheck.txt 2>&1; echo "memcheck rc=$? $SECONDS s"; grep -E "ERROR SUMMARY|PASSED|FAILED" $W/sanitizer_memcheck.txt | tail -2
