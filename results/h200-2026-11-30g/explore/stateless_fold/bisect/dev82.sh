#!/bin/bash
# Stateless short-context steps: which commit made them slower. kvb of c70f71f (the stateless kernel as measured in
# the 2026-11-29 CSV), df8be42, 94db82b and e1c0fe3 (committed), the same stateless grid, three interleaved rounds.
ROOT=$PWD
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w82; mkdir -p $W
trap 'cp $ROOT/.carry/dev82.sh $W/; tar czf $OUT/dev82.tgz -C $W .' EXIT
for c in c70f71f df8be42 94db82b; do xz -dc .carry/bo/kvb_$c.xz > /tmp/kvb_$c; chmod +x /tmp/kvb_$c; done
xz -dc .carry/b78/kvb.xz > /tmp/kvb_e1c0fe3; chmod +x /tmp/kvb_e1c0fe3
for round in 1 2 3; do for c in c70f71f df8be42 94db82b e1c0fe3; do
  timeout 60 /tmp/kvb_$c sweep --config experiments/short_context.toml --set variant=kvbuffer --set context_len=1,8,15,32,63 --no-cupti --max-seconds 0.5 --out $W/sc_${c}_r$round.csv > $W/sc_${c}_r$round.log 2>&1; echo "$c r$round rc=$? $SECONDS s $(tail -1 $W/sc_${c}_r$round.log | cut -c1-80)"
done; done
