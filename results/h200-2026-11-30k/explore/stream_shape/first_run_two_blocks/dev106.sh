#!/bin/bash
# Exploration: stream_shape (a standalone kernel shaped like KVBuffer verify's block: 256 threads, a 64 KB slice in four
# cp.async groups, three blocks an SM), its three variants, and the chain before the pass at 0 to 4 us of work.
ROOT=$PWD
W=/tmp/w106; mkdir -p $W
trap 'cp $ROOT/.carry/dev106.sh $ROOT/.carry/ss/stream_shape.cu $W/; tar czf $OUT/dev106.tgz -C $W .' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $W/info.txt
S=$ROOT/.carry/ss/stream_shape
{ $S 0; $S 1; for ns in 0 1000 2000 3000 4000 6000; do $S 2 $ns; done; } > $W/stream_shape.txt 2>&1; echo "rc=$? $SECONDS s"
cat $W/stream_shape.txt
