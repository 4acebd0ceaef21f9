#!/bin/bash
# Commit of main (kernels of a769df6; the long-buffer fold test's V = 100 case): every GPU test. Then the exploration
# stream_shape (a standalone kernel shaped like KVBuffer verify's block: 256 threads, a 64 KB slice in four
# cp.async groups, three blocks an SM), its three variants, and the chain before the pass at 0 to 4 us of work.
ROOT=$PWD
W=/tmp/w107; mkdir -p $W
B=$ROOT/.carry/b107
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
xz -dc $B/kvb.xz > $B/kvb && chmod +x $B/kvb
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
trap 'cp $ROOT/.carry/dev107.sh $ROOT/.carry/ss/stream_shape.cu $W/; tar czf $OUT/dev107.tgz -C $W .' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $W/info.txt
(cd /work/main && $B/tests/kvb_tests --gtest_filter='*Gpu*:CapacityProbe*:LaunchValidation*' > $W/gtest_gpu.txt 2>&1); echo "gtest rc=$? $SECONDS s"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_gpu.txt | head
S=$ROOT/.carry/ss/stream_shape
{ $S 0; $S 1; for ns in 0 500 1000 2000 3000 4000 6000; do $S 2 $ns; done; } > $W/stream_shape.txt 2>&1; echo "rc=$? $SECONDS s"
cat $W/stream_shape.txt
