#!/bin/bash
# Nsight Compute on the final verify kernel (commit cdce0e8): one batch-64 launch, 4 drafts, B = 8, all accepted
# (plain launch), full set with source correlation; details page and per-instruction source page (CUDA and SASS).
ROOT=$PWD
B=$ROOT/.carry/b67
xz -dc $B/kvb.xz > /tmp/kvb && chmod +x /tmp/kvb
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w68; mkdir -p $W
trap 'cp $ROOT/.carry/dev68.sh $W/; tar czf $OUT/dev68.tgz -C $W .' EXIT
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
timeout 240 $NCU --clock-control none --kernel-name regex:kvbuffer_verify_kernel --launch-skip 40 --launch-count 2 --set full --import-source yes -o $W/prof_verify /tmp/kvb sweep --config experiments/spec_verify.toml --set variant=kvbuffer_verify --set batch=64 --set draft_tokens=4 --set accepted=all --set buffer_size=8 --set launch=plain --no-cupti --max-seconds 0.1 --out $W/ncu_sv.csv > $W/ncu_run.log 2>&1; echo "ncu rc=$?"; tail -3 $W/ncu_run.log
$NCU --import $W/prof_verify.ncu-rep --page details > $W/ncu_verify_details.txt 2>&1
$NCU --import $W/prof_verify.ncu-rep --page source --csv --print-source cuda,sass > $W/ncu_verify_source.csv 2>&1; echo "source rc=$? $(wc -c < $W/ncu_verify_source.csv) bytes"
head -c 600 $W/ncu_verify_source.csv; echo
gzip -f $W/ncu_verify_source.csv
rm -f $W/prof_verify.ncu-rep
grep -E "Duration|DRAM Throughput|Issue Slots Busy|Registers Per|Achieved Occupancy|No Eligible|Local" $W/ncu_verify_details.txt | head -20
