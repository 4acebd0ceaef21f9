#!/bin/bash
# Branch explore-timeline: per-block %globaltimer stamps (entry, after the PDL wait, after the keys' barrier, after the
# slice pass, after the reduction, exit) of two replayed model steps of KVBuffer decode, B = 8, PDL, batch 64 and 256.
ROOT=$PWD
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=$OUT/tl; mkdir -p $W
cp $ROOT/.carry/dev52.sh $W/
export KVB_TIMELINE=$W
timeout 120 $ROOT/.carry/b52/kvb sweep --config experiments/decode_latency.toml --set variant=kvbuffer --set batch=64,256 --set buffer_size=8 --set launch=pdl --no-cupti --max-seconds 0.3 --out $W/points.csv > $W/sweep.log 2>&1; echo "sweep rc=$?"; tail -6 $W/sweep.log
gzip $W/*_b*.csv; ls -la $W
