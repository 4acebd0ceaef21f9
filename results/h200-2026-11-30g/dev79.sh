#!/bin/bash
# e1c0fe3 (bandwidth measured with the runtime's copy and a one-pass read after a 25 ms warm-up; kernels unchanged
# since e9bfe3c): every GPU test, kvb info, then the decode grid, the aligned-phase grid and the buffer-form grid.
ROOT=$PWD
B=$ROOT/.carry/b78
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
xz -dc $B/kvb.xz > $B/kvb && chmod +x $B/kvb
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w79; mkdir -p $W
trap 'cp $ROOT/.carry/dev79.sh $W/; tar czf $OUT/dev79.tgz -C $W .' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $W/info.txt
$B/kvb info >> $W/info.txt 2>&1; tail -3 $W/info.txt
$B/tests/kvb_tests --gtest_filter='*Gpu*:CapacityProbe*:LaunchValidation*' > $W/gtest_gpu.txt 2>&1; rc=$?; echo "gtest rc=$rc $SECONDS s"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_gpu.txt | head -20; grep -A4 "RUN.*BandwidthGpu" $W/gtest_gpu.txt | head -12
timeout 400 $B/kvb sweep --config experiments/decode_latency.toml --out $W/decode_latency.csv > $W/decode.log 2>&1; echo "decode rc=$? $SECONDS s"; tail -2 $W/decode.log
timeout 50 $B/kvb sweep --config experiments/decode_latency.toml --set variant=kvbuffer --set batch=64,256 --set buffer_size=8,16 --set phase=aligned,staggered --out $W/decode_aligned.csv > $W/aligned.log 2>&1; echo "aligned rc=$? $SECONDS s"; tail -1 $W/aligned.log
timeout 60 $B/kvb sweep --config experiments/buffer_form.toml --out $W/buffer_form.csv > $W/buffer_form.log 2>&1; echo "buffer_form rc=$? $SECONDS s"; tail -1 $W/buffer_form.log
