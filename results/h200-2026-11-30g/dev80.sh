#!/bin/bash
# e1c0fe3, second half: short_context, spec_verify and buffer_form_verify grids with the corrected bandwidths.
ROOT=$PWD
B=$ROOT/.carry/b78
mkdir -p $B/tests && xz -dc $B/kvb.xz > $B/kvb && chmod +x $B/kvb
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w80; mkdir -p $W
trap 'cp $ROOT/.carry/dev80.sh $W/; tar czf $OUT/dev80.tgz -C $W .' EXIT
timeout 300 $B/kvb sweep --config experiments/spec_verify.toml --out $W/spec_verify.csv > $W/spec_verify.log 2>&1; echo "spec rc=$? $SECONDS s"; tail -1 $W/spec_verify.log
timeout 60 $B/kvb sweep --config experiments/buffer_form_verify.toml --set draft_tokens=4 --out $W/buffer_form_verify.csv > $W/bfv.log 2>&1; echo "bfv rc=$? $SECONDS s"; tail -1 $W/bfv.log
timeout 200 $B/kvb sweep --config experiments/short_context.toml --out $W/short_context.csv > $W/short_context.log 2>&1; echo "short rc=$? $SECONDS s"; tail -1 $W/short_context.log
