#!/bin/bash
# Branch explore-timeline: per-block %globaltimer stamps (entry, after the PDL wait, exit) of two replayed model steps
# of decode at batch 64 (KVBuffer B = 8 and recurrent, plain and PDL launches).
ROOT=$PWD
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=$OUT/tl; mkdir -p $W
cp $ROOT/.carry/dev50.sh $W/
export KVB_TIMELINE=$W
timeout 120 $ROOT/.carry/b50/kvb sweep --config experiments/decode_latency.toml --set variant=kvbuffer,recurrent --set batch=64 --set buffer_size=8 --set launch=plain,pdl --no-cupti --max-seconds 0.3 --out $W/points.csv > $W/sweep.log 2>&1; echo "sweep rc=$?"; tail -6 $W/sweep.log
gzip $W/*_b*.csv; ls -la $W
