#!/bin/bash
# Stateless decode A/B: the buffer-only block over a whole value head (default) against 64- and 32-column slices
# (KVB_TILE=64,128 / 32,128, the stateless path only at K = 128); stateless GPU tests under each; two interleaved rounds.
ROOT=$PWD
B=$ROOT/.carry/b81
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
xz -dc $B/kvb.xz > $B/kvb && chmod +x $B/kvb
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w81; mkdir -p $W
trap 'cp $ROOT/.carry/dev81.sh $W/; tar czf $OUT/dev81.tgz -C $W .' EXIT
for T in head 64,128 32,128; do
  n=${T/,/_}; if [ $T = head ]; then unset KVB_TILE; else export KVB_TILE=$T; fi
  $B/tests/kvb_tests --gtest_filter='Stateless*:ShortContext*' > $W/gtest_$n.txt 2>&1; echo "tests $T rc=$? $(grep -E 'PASSED|FAILED' $W/gtest_$n.txt | head -3 | tr '\n' ' ')"
done
for round in 1 2; do for T in head 64,128 32,128; do
  n=${T/,/_}; if [ $T = head ]; then unset KVB_TILE; else export KVB_TILE=$T; fi
  timeout 100 $B/kvb sweep --config experiments/short_context.toml --set variant=kvbuffer --set context_len=1,8,15,32,63 --no-cupti --max-seconds 0.5 --out $W/sc_${n}_r$round.csv > $W/sc_${n}_r$round.log 2>&1; echo "sweep $T r$round rc=$? $SECONDS s"
done; done
unset KVB_TILE
