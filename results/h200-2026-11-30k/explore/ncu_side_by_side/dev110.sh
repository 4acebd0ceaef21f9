#!/bin/bash
# Nsight Compute side by side: the committed fused verify kernel (batch 64, 4 drafts, B = 8, all accepted, plain; one
# launch after the first 300) and the stream_shape kernel (variants 1 and 2, spin 0, batch 64; one launch after the
# first 100), same sections.
ROOT=$PWD
B=$ROOT/.carry/b107
xz -dc $B/kvb.xz > /tmp/kvb107 && chmod +x /tmp/kvb107
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w110; mkdir -p $W
trap 'cp $ROOT/.carry/dev110.sh $W/; tar czf $OUT/dev110.tgz -C $W .' EXIT
S="--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis"
P="--config experiments/spec_verify.toml --set variant=kvbuffer_verify --set draft_tokens=4 --set buffer_size=8 --set batch=64 --set accepted=all --set launch=plain --no-cupti --max-seconds 0.05"
timeout 200 ncu $S --kernel-name regex:kvbuffer_verify_kernel --launch-skip 300 --launch-count 1 /tmp/kvb107 sweep $P --out $W/pt.csv > $W/ncu_verify.txt 2>&1; echo "verify rc=$? $SECONDS s"
for v in 1 2; do
  timeout 120 ncu $S --kernel-name regex:stream_kernel --launch-skip 100 --launch-count 1 $ROOT/.carry/ss/stream_shape $v 0 > $W/ncu_stream_shape_v$v.txt 2>&1; echo "stream $v rc=$? $SECONDS s"
done
for f in $W/ncu_*.txt; do echo "== $f"; grep -E "Duration|DRAM Throughput|Memory Throughput|Issue Slots Busy|Executed Ipc Active|Achieved Occupancy|Warp Cycles Per Issued|Registers Per|Theoretical Occ|Elapsed Cycles|SM Frequency|L2 Hit|Mem Busy|Max Bandwidth" $f | head -20; done
