#!/bin/bash
# Diagnostics of the KVBuffer verify kernel (commit 4e79973 + KVB_DIAG switches, not committed): where its time goes.
# KVB_DIAG bits: 1 fold without entries, 2 pass with draft 0's FMAs only, 4 every block copies its slice first.
ROOT=$PWD
xz -dc $ROOT/.carry/b91/kvb.xz > /tmp/kvb_base && chmod +x /tmp/kvb_base
xz -dc $ROOT/.carry/b93/kvb.xz > /tmp/kvb_diag && chmod +x /tmp/kvb_diag
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w93; mkdir -p $W
trap 'cp $ROOT/.carry/dev93.sh $W/; tar czf $OUT/dev93.tgz -C $W .' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $W/info.txt
SV="--config experiments/spec_verify.toml --set variant=kvbuffer_verify --set draft_tokens=4 --set buffer_size=8,16 --set batch=64,256 --no-cupti --max-seconds 0.4"
for r in 1 2; do
  timeout 40 /tmp/kvb_base sweep $SV --out $W/sv_base_$r.csv > /dev/null 2>&1; echo "base $r rc=$? $SECONDS s"
  for d in 0 4 1 2 3; do
    KVB_DIAG=$d timeout 40 /tmp/kvb_diag sweep $SV --out $W/sv_d${d}_$r.csv > /dev/null 2>&1; echo "d$d $r rc=$? $SECONDS s"
  done
done
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
timeout 150 $NCU --clock-control none --kernel-name regex:kvbuffer_verify_kernel --launch-skip 40 --launch-count 2 --set full --import-source yes -o $W/prof_verify /tmp/kvb_base sweep --config experiments/spec_verify.toml --set variant=kvbuffer_verify --set batch=64 --set draft_tokens=4 --set accepted=all --set buffer_size=8 --set launch=plain --no-cupti --max-seconds 0.1 --out $W/ncu_sv.csv > $W/ncu_run.log 2>&1; echo "ncu rc=$? $SECONDS s"
$NCU --import $W/prof_verify.ncu-rep --page details > $W/ncu_verify_details.txt 2>&1
$NCU --import $W/prof_verify.ncu-rep --page source --csv --print-source cuda,sass > $W/ncu_verify_source.csv 2>&1; gzip -f $W/ncu_verify_source.csv
rm -f $W/prof_verify.ncu-rep
grep -E "Duration|DRAM Throughput|Issue Slots Busy|Registers Per|Achieved Occupancy|No Eligible|Local Memory Spilling Req" $W/ncu_verify_details.txt | head -20
