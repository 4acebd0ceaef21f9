#!/bin/bash
# Nsight Compute on KVBuffer verify (commit 2b67fd0), batch 64, 4 drafts, B = 8, all accepted: the check's first two
# verify launches (the first: rows at staggered positions, none due; the second: after the commit, about half due).
ROOT=$PWD
ln -sfn $ROOT/.carry/b40 $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
B=$ROOT/build-lead
W=/tmp/w41; mkdir -p $W
trap 'cp $ROOT/.carry/dev41.sh $W/; tar czf $OUT/dev41.tgz -C $W .' EXIT
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
timeout 200 $NCU --kernel-name regex:kvbuffer_verify_kernel --launch-skip 0 --launch-count 2 --set full --import-source yes -o $W/prof_verify $B/kvb sweep --config experiments/spec_verify.toml --set variant=kvbuffer_verify --set batch=64 --set draft_tokens=4 --set accepted=all --set buffer_size=8 --no-cupti --max-seconds 0.1 --out $W/ncu_sv.csv > $W/ncu_run.log 2>&1; echo "ncu rc=$?"; tail -2 $W/ncu_run.log
$NCU --import $W/prof_verify.ncu-rep --page details > $W/ncu_verify_details.txt 2>&1
$NCU --import $W/prof_verify.ncu-rep --page source --csv --print-source sass > $W/ncu_verify_sass.csv 2>&1
$NCU --import $W/prof_verify.ncu-rep --page source --csv --print-source cuda > $W/ncu_verify_cuda.csv 2>&1
grep -E "kvbuffer_verify_kernel|Duration|DRAM Throughput|Issue Slots Busy|Eligible Warps|No Eligible|Registers Per|Achieved Occupancy|Local" $W/ncu_verify_details.txt | head -30
