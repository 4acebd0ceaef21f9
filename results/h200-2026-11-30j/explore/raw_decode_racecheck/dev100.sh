#!/bin/bash
# The raw form's decode kernel under racecheck: commit d4d0d89 (base, kvb_tests of b98, same kernels) against a
# diagnostic build whose helper warps' named barrier (bar.sync 1, 96) is a block barrier that warp 0 meets after its
# chain (uncommitted). The same tests in both, RawDecodeGpu.* (the first, 1000 steps with flushes, finishes in 150 s).
ROOT=$PWD
mkdir -p /tmp/t
xz -dc $ROOT/.carry/b98/kvb_tests.xz > /tmp/t/base && xz -dc $ROOT/.carry/b100/kvb_tests.xz > /tmp/t/diag && chmod +x /tmp/t/*
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w100; mkdir -p $W
trap 'cp $ROOT/.carry/dev100.sh $W/; tar czf $OUT/dev100.tgz -C $W .' EXIT
for v in base diag; do
  timeout 150 compute-sanitizer --tool racecheck /tmp/t/$v --gtest_filter='RawDecodeGpu.*' > $W/racecheck_raw_decode_$v.txt 2>&1; echo "$v rc=$? $SECONDS s"
  grep -E "RACECHECK SUMMARY|PASSED|FAILED" $W/racecheck_raw_decode_$v.txt | tail -3
done
