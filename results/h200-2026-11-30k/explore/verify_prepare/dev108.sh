#!/bin/bash
# Verify in two kernels (branch verify-prepare): the verify GPU tests (fused and prepared), compute-sanitizer racecheck
# and memcheck on the KVBuffer verify tests, and two interleaved rounds of spec_verify (4 drafts, B = 8 and 16, batch 64
# and 256) of this build (prep) and this build with one fused kernel (KVB_VERIFY_FUSED=1, fused: the committed kernel).
ROOT=$PWD
B=$ROOT/.carry/b108
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
xz -dc $B/kvb.xz > $B/kvb && chmod +x $B/kvb
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w108; mkdir -p $W/ab
trap 'cp $ROOT/.carry/dev108.sh $W/; tar czf $OUT/dev108.tgz -C $W .' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $W/info.txt
$B/tests/kvb_tests --gtest_filter='*Verify*Gpu*:VerifyGpu*:PdlLaunchGpu.*Verify*' > $W/gtest_verify.txt 2>&1; echo "gtest rc=$? $SECONDS s"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_verify.txt | head
grep -E "Failure|Expected|actual|Which is|which is" $W/gtest_verify.txt | head -20
SV="--config experiments/spec_verify.toml --set variant=kvbuffer_verify --set draft_tokens=4 --set buffer_size=8,16 --set batch=64,256 --no-cupti --max-seconds 0.4"
for r in 1 2; do
  timeout 60 $B/kvb sweep $SV --out $W/ab/ab_prep_$r.csv > $W/ab/prep_$r.log 2>&1; echo "prep $r rc=$? $SECONDS s"
  KVB_VERIFY_FUSED=1 timeout 60 $B/kvb sweep $SV --out $W/ab/ab_fused_$r.csv > /dev/null 2>&1; echo "fused $r rc=$? $SECONDS s"
done
grep -h "status\|failed" $W/ab/prep_1.log | head -5
F='KVBufferVerifyGpu.*'
timeout 150 compute-sanitizer --tool racecheck $B/tests/kvb_tests --gtest_filter=$F > $W/sanitizer_racecheck.txt 2>&1; echo "racecheck rc=$? $SECONDS s"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $W/sanitizer_racecheck.txt | tail -3
timeout 120 compute-sanitizer --tool memcheck $B/tests/kvb_tests --gtest_filter=$F > $W/sanitizer_memcheck.txt 2>&1; echo "memcheck rc=$? $SECONDS s"; grep -E "ERROR SUMMARY|PASSED|FAILED" $W/sanitizer_memcheck.txt | tail -2
