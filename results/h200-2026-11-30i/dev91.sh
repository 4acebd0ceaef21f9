#!/bin/bash
# Commit 63e183a (decode: the gate's inputs requested with the token's): kvb info, every GPU test, compute-sanitizer on
# the decode tests, a short interleaved A/B against fd355f2, then the decode, aligned, buffer-form and short-context grids.
ROOT=$PWD
B=$ROOT/.carry/b91
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
xz -dc $B/kvb.xz > $B/kvb && chmod +x $B/kvb
xz -dc $ROOT/.carry/b86/kvb.xz > /tmp/kvb_base && chmod +x /tmp/kvb_base
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w91; mkdir -p $W/ab
trap 'cp $ROOT/.carry/dev91.sh $W/; cp /tmp/ab_*.csv $W/ab/ 2>/dev/null; tar czf $OUT/dev91.tgz -C $W .' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $W/info.txt
$B/kvb info >> $W/info.txt 2>&1; tail -2 $W/info.txt
$B/tests/kvb_tests --gtest_filter='*Gpu*:CapacityProbe*:LaunchValidation*' > $W/gtest_gpu.txt 2>&1; echo "gtest rc=$? $SECONDS s"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_gpu.txt | head
F='KVBufferDecodeGpu.WideSlices*:KVBufferDecodeGpu.Padding*:RecurrentDecodeGpu.Bf16*:RecurrentDecodeGpu.VkLayout*'
timeout 45 compute-sanitizer --tool racecheck $B/tests/kvb_tests --gtest_filter=$F > $W/sanitizer_racecheck.txt 2>&1; echo "racecheck rc=$? $SECONDS s"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $W/sanitizer_racecheck.txt | tail -3
timeout 30 compute-sanitizer --tool memcheck $B/tests/kvb_tests --gtest_filter=$F > $W/sanitizer_memcheck.txt 2>&1; echo "memcheck rc=$? $SECONDS s"; grep -E "ERROR SUMMARY|PASSED|FAILED" $W/sanitizer_memcheck.txt | tail -2
for r in 1 2; do for v in base new; do bin=/tmp/kvb_base; [ $v = new ] && bin=$B/kvb
  timeout 40 $bin sweep --config experiments/decode_latency.toml --set variant=recurrent,kvbuffer --set buffer_size=8 --set launch=pdl,plain --set batch=64,256 --no-cupti --max-seconds 0.4 --out /tmp/ab_${v}_$r.csv > /dev/null 2>&1; echo "ab $v $r rc=$? $SECONDS s"
done; done
timeout 300 $B/kvb sweep --config experiments/decode_latency.toml --out $W/decode_latency.csv > $W/decode.log 2>&1; echo "decode rc=$? $SECONDS s"; tail -1 $W/decode.log
timeout 50 $B/kvb sweep --config experiments/decode_latency.toml --set variant=kvbuffer --set batch=64,256 --set buffer_size=8,16 --set phase=aligned,staggered --out $W/decode_aligned.csv > $W/aligned.log 2>&1; echo "aligned rc=$? $SECONDS s"; tail -1 $W/aligned.log
timeout 60 $B/kvb sweep --config experiments/buffer_form.toml --out $W/buffer_form.csv > $W/buffer_form.log 2>&1; echo "buffer_form rc=$? $SECONDS s"; tail -1 $W/buffer_form.log
timeout 150 $B/kvb sweep --config experiments/short_context.toml --out $W/short_context.csv > $W/short_context.log 2>&1; echo "short rc=$? $SECONDS s"; tail -1 $W/short_context.log
