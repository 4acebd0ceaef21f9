#!/bin/bash
# Instructions executed by the verify kernels of the two-kernel build (branch verify-prepare, b108): preparation and
# relieved verify kernel against the fused kernel of the same build (KVB_VERIFY_FUSED=1), batch 64, 4 drafts, B = 8,
# all accepted, plain; Nsight Compute, 4 launches after the first 300 of each.
ROOT=$PWD
xz -dc $ROOT/.carry/b108/kvb.xz > /tmp/kvb108 && chmod +x /tmp/kvb108
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w111; mkdir -p $W
trap 'cp $ROOT/.carry/dev111.sh $W/; tar czf $OUT/dev111.tgz -C $W .' EXIT
M="--metrics smsp__inst_executed.sum,gpu__time_duration.sum,sm__cycles_elapsed.max,smsp__issue_active.avg.pct_of_peak_sustained_elapsed"
P="--config experiments/spec_verify.toml --set variant=kvbuffer_verify --set draft_tokens=4 --set buffer_size=8 --set batch=64 --set accepted=all --set launch=plain --no-cupti --max-seconds 0.05"
timeout 120 ncu $M --kernel-name regex:kvbuffer_verify --launch-skip 300 --launch-count 4 --csv /tmp/kvb108 sweep $P --out $W/pt_prep.csv > $W/ncu_prep.csv 2>&1; echo "prep rc=$? $SECONDS s"
KVB_VERIFY_FUSED=1 timeout 120 ncu $M --kernel-name regex:kvbuffer_verify --launch-skip 300 --launch-count 4 --csv /tmp/kvb108 sweep $P --out $W/pt_fused.csv > $W/ncu_fused.csv 2>&1; echo "fused rc=$? $SECONDS s"
grep -h "gpu__time\|inst_executed\|cycles_elapsed\|issue_active" $W/ncu_prep.csv $W/ncu_fused.csv | awk -F'","' '{print $5, $(NF-2), $NF}' | cut -c1-160
