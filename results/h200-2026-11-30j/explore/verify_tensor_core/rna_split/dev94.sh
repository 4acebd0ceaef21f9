#!/bin/bash
# Verify's pass on tensor cores (3xTF32), uncommitted tree on 4e79973: GPU tests, compute-sanitizer on the verify
# tests, and an interleaved A/B of spec_verify against 63e183a's kvb (verify kernels of the committed CSV).
ROOT=$PWD
B=$ROOT/.carry/b94
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
xz -dc $B/kvb.xz > $B/kvb && chmod +x $B/kvb
xz -dc $ROOT/.carry/b91/kvb.xz > /tmp/kvb_base && chmod +x /tmp/kvb_base
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w94; mkdir -p $W
trap 'cp $ROOT/.carry/dev94.sh $W/; tar czf $OUT/dev94.tgz -C $W .' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $W/info.txt
$B/tests/kvb_tests --gtest_filter='*Gpu*:CapacityProbe*:LaunchValidation*' > $W/gtest_gpu.txt 2>&1; echo "gtest rc=$? $SECONDS s"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_gpu.txt | head
grep -B3 -A12 "Failure" $W/gtest_gpu.txt | head -60
F='KVBufferVerifyGpu.*:VerifyGpu.*'
timeout 60 compute-sanitizer --tool racecheck $B/tests/kvb_tests --gtest_filter=$F > $W/sanitizer_racecheck.txt 2>&1; echo "racecheck rc=$? $SECONDS s"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $W/sanitizer_racecheck.txt | tail -3
timeout 45 compute-sanitizer --tool memcheck $B/tests/kvb_tests --gtest_filter=$F > $W/sanitizer_memcheck.txt 2>&1; echo "memcheck rc=$? $SECONDS s"; grep -E "ERROR SUMMARY|PASSED|FAILED" $W/sanitizer_memcheck.txt | tail -2
SV="--config experiments/spec_verify.toml --set variant=kvbuffer_verify --set draft_tokens=4 --set buffer_size=8,16 --set batch=64,256 --no-cupti --max-seconds 0.4"
for r in 1 2; do for v in base new; do bin=/tmp/kvb_base; [ $v = new ] && bin=$B/kvb
  timeout 45 $bin sweep $SV --out $W/ab_${v}_$r.csv > $W/ab_${v}_$r.log 2>&1; echo "ab $v $r rc=$? $SECONDS s"
done; done
SV2="--config experiments/spec_verify.toml --set variant=kvbuffer_verify --set draft_tokens=1,2,8 --set buffer_size=8 --set batch=64,256 --set accepted=all --no-cupti --max-seconds 0.3"
for v in base new; do bin=/tmp/kvb_base; [ $v = new ] && bin=$B/kvb
  timeout 45 $bin sweep $SV2 --out $W/m_${v}.csv > $W/m_${v}.log 2>&1; echo "m $v rc=$? $SECONDS s"
done
tail -3 $W/ab_new_1.log
