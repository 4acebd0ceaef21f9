#!/bin/bash
# Commit fd355f2 (KVBuffer decode: six 64-column blocks an SM at B <= 8): kvb info, every GPU test, then the decode grid,
# the aligned-phase grid, the buffer-form grid and the short-context grid.
ROOT=$PWD
B=$ROOT/.carry/b86
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
xz -dc $B/kvb.xz > $B/kvb && chmod +x $B/kvb
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w86; mkdir -p $W
trap 'cp $ROOT/.carry/dev86.sh $W/; tar czf $OUT/dev86.tgz -C $W .' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $W/info.txt
$B/kvb info >> $W/info.txt 2>&1; tail -2 $W/info.txt
$B/tests/kvb_tests --gtest_filter='*Gpu*:CapacityProbe*:LaunchValidation*' > $W/gtest_gpu.txt 2>&1; echo "gtest rc=$? $SECONDS s"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_gpu.txt | head
timeout 300 $B/kvb sweep --config experiments/decode_latency.toml --out $W/decode_latency.csv > $W/decode.log 2>&1; echo "decode rc=$? $SECONDS s"; tail -1 $W/decode.log
timeout 50 $B/kvb sweep --config experiments/decode_latency.toml --set variant=kvbuffer --set batch=64,256 --set buffer_size=8,16 --set phase=aligned,staggered --out $W/decode_aligned.csv > $W/aligned.log 2>&1; echo "aligned rc=$? $SECONDS s"; tail -1 $W/aligned.log
timeout 60 $B/kvb sweep --config experiments/buffer_form.toml --out $W/buffer_form.csv > $W/buffer_form.log 2>&1; echo "buffer_form rc=$? $SECONDS s"; tail -1 $W/buffer_form.log
timeout 170 $B/kvb sweep --config experiments/short_context.toml --out $W/short_context.csv > $W/short_context.log 2>&1; echo "short rc=$? $SECONDS s"; tail -1 $W/short_context.log
