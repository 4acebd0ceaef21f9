#!/bin/bash
# b3f9109 (stateless whole-head blocks fold 16 rows a pass under a 128-register cap): every GPU test, compute-sanitizer
# on the stateless tests, interleaved A/B of the stateless grid (e1c0fe3 /
# b3f9109), then the short-context grid on b3f9109.
ROOT=$PWD
B=$ROOT/.carry/b83
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
xz -dc $B/kvb.xz > $B/kvb && chmod +x $B/kvb

xz -dc $B/kvb_e1c0fe3.xz > /tmp/kvb_e1c0fe3 && chmod +x /tmp/kvb_e1c0fe3
cp $B/kvb /tmp/kvb_b3f9109
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w83; mkdir -p $W
trap 'cp $ROOT/.carry/dev83.sh $W/; tar czf $OUT/dev83.tgz -C $W .' EXIT
$B/tests/kvb_tests --gtest_filter='*Gpu*:CapacityProbe*:LaunchValidation*' > $W/gtest_gpu.txt 2>&1; echo "gtest rc=$? $SECONDS s"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_gpu.txt | head
timeout 90 compute-sanitizer --tool racecheck $B/tests/kvb_tests --gtest_filter='StatelessGpu.*' > $W/sanitizer_racecheck_stateless.txt 2>&1; echo "racecheck rc=$? $SECONDS s"; grep -E "RACECHECK SUMMARY" $W/sanitizer_racecheck_stateless.txt | tail -1
timeout 90 compute-sanitizer --tool memcheck $B/tests/kvb_tests --gtest_filter='StatelessGpu.*' > $W/sanitizer_memcheck_stateless.txt 2>&1; echo "memcheck rc=$? $SECONDS s"; grep -E "ERROR SUMMARY" $W/sanitizer_memcheck_stateless.txt | tail -1
for round in 1 2 3; do for c in e1c0fe3 b3f9109; do
  timeout 60 /tmp/kvb_$c sweep --config experiments/short_context.toml --set variant=kvbuffer --set context_len=1,8,15,32,63 --no-cupti --max-seconds 0.5 --out $W/ab_${c}_r$round.csv > $W/ab_${c}_r$round.log 2>&1; echo "$c r$round rc=$? $SECONDS s"
done; done
timeout 200 $B/kvb sweep --config experiments/short_context.toml --out $W/short_context.csv > $W/short_context.log 2>&1; echo "short rc=$? $SECONDS s"; tail -1 $W/short_context.log
