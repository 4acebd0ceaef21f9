#!/bin/bash
# Exploration (branch explore-verify-timeline, never on main): per-block stamps of the KVBuffer verify kernel at its
# stage boundaries (KVB_TIMELINE), 4 drafts, batch 64 (B = 8, 16, accepted all and 0.7, PDL and plain) and batch 256
# (B = 8, all, PDL), analysed here (an_verify_timeline.py); the same points timed with 63e183a's kvb (base) for the
# stamps' cost.
ROOT=$PWD
B=$ROOT/.carry/b104
xz -dc $B/kvb.xz > /tmp/kvb104 && chmod +x /tmp/kvb104
xz -dc $ROOT/.carry/b91/kvb.xz > /tmp/kvb_base && chmod +x /tmp/kvb_base
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w104; mkdir -p $W/tl
trap 'cp $ROOT/.carry/dev104.sh $ROOT/.carry/an_verify_timeline.py $W/; tar czf $OUT/dev104.tgz -C $W .' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $W/info.txt
SV="--config experiments/spec_verify.toml --set variant=kvbuffer_verify --set draft_tokens=4 --no-cupti --max-seconds 0.4"
P64="--set buffer_size=8,16 --set batch=64"
P256="--set buffer_size=8 --set batch=256 --set accepted=all --set launch=pdl"
KVB_TIMELINE=$W/tl timeout 120 /tmp/kvb104 sweep $SV $P64 --out $W/tl_points_b64.csv > $W/tl_b64.log 2>&1; echo "tl b64 rc=$? $SECONDS s"
KVB_TIMELINE=$W/tl timeout 120 /tmp/kvb104 sweep $SV $P256 --out $W/tl_points_b256.csv > $W/tl_b256.log 2>&1; echo "tl b256 rc=$? $SECONDS s"
timeout 60 /tmp/kvb_base sweep $SV $P64 --out $W/base_points_b64.csv > /dev/null 2>&1; echo "base b64 rc=$? $SECONDS s"
timeout 60 /tmp/kvb_base sweep $SV $P256 --out $W/base_points_b256.csv > /dev/null 2>&1; echo "base b256 rc=$? $SECONDS s"
ls -la $W/tl | head -30
for f in $W/tl/*.csv; do python3 $ROOT/.carry/an_verify_timeline.py $f >> $W/an_verify_timeline.txt 2>&1; done; echo "an rc=$? $SECONDS s"
head -c 3000 $W/an_verify_timeline.txt
gzip -9 $W/tl/verify_b64_B8_all_pdl_*.csv
rm -f $W/tl/*.csv
