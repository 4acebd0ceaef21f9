#!/bin/bash
# Commit 5b3e49a (review mend; kernels of 4e79973): the verify GPU tests, the whole-head test with its launch check.
ROOT=$PWD
mkdir -p /tmp/t && xz -dc $ROOT/.carry/b101/kvb_tests.xz > /tmp/t/kvb_tests && chmod +x /tmp/t/kvb_tests
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w101; mkdir -p $W
trap 'cp $ROOT/.carry/dev101.sh $W/; tar czf $OUT/dev101.tgz -C $W .' EXIT
/tmp/t/kvb_tests --gtest_filter='*Verify*Gpu*:VerifyGpu*:PdlLaunchGpu.*Verify*' > $W/gtest_verify.txt 2>&1; echo "gtest rc=$? $SECONDS s"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST|WholeHead" $W/gtest_verify.txt | head
