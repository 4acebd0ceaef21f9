#!/bin/bash
# buffer_form_verify (4 drafts) on the final kernels (commit e9bfe3c): the delta form's B = 16 rows now keep their keys
# in shared memory.
ROOT=$PWD
B=$ROOT/.carry/b74
xz -dc $B/kvb.xz > $B/kvb && chmod +x $B/kvb
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w75; mkdir -p $W/results
trap 'cp $ROOT/.carry/dev75.sh $W/; tar czf $OUT/dev75.tgz -C $W .' EXIT
nvidia-smi > $W/nvidia_smi.txt 2>&1
timeout 150 $B/kvb sweep --config experiments/buffer_form_verify.toml --set draft_tokens=4 --out $W/results/buffer_form_verify.csv > $W/buffer_form_verify.log 2>&1; echo "bfv rc=$? $SECONDS s"; tail -1 $W/buffer_form_verify.log
$B/kvb compare results/buffer_form_verify.csv $W/results/buffer_form_verify.csv --markdown > $W/compare_buffer_form_verify.md 2>&1; grep "kvb compare" $W/compare_buffer_form_verify.md
