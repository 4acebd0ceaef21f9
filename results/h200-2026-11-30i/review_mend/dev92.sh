#!/bin/bash
# Review mend (test helpers; decode PTX identical to 63e183a): every GPU test.
ROOT=$PWD
B=$ROOT/.carry/b92
xz -dc $B/kvb_tests.xz > /tmp/kvb_tests && chmod +x /tmp/kvb_tests
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w92; mkdir -p $W
trap 'cp $ROOT/.carry/dev92.sh $W/; tar czf $OUT/dev92.tgz -C $W .' EXIT
timeout 100 /tmp/kvb_tests --gtest_filter='*Gpu*:CapacityProbe*:LaunchValidation*' > $W/gtest_gpu.txt 2>&1; echo "gtest rc=$? $SECONDS s"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_gpu.txt | head
