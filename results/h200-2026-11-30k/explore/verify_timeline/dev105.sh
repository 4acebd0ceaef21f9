#!/bin/bash
# Two explorations (never on main): (1) verify's checkpoint slice copied with an L2 prefetch hint of 256 bytes
# (branch explore-l2-256, kvb b105: rows l2) against 63e183a's kvb (base), two interleaved rounds of spec_verify,
# 4 drafts, B = 8 and 16, batch 64 and 256; (2) the verify timeline with stamps inside the fold (branch
# explore-verify-timeline, kvb b106) at batch 64, all accepted, PDL, B = 8 and 16, analysed here.
ROOT=$PWD
xz -dc $ROOT/.carry/b105/kvb.xz > /tmp/kvb_l2 && chmod +x /tmp/kvb_l2
xz -dc $ROOT/.carry/b106/kvb.xz > /tmp/kvb_tl && chmod +x /tmp/kvb_tl
xz -dc $ROOT/.carry/b91/kvb.xz > /tmp/kvb_base && chmod +x /tmp/kvb_base
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w105; mkdir -p $W/ab $W/tl
trap 'cp $ROOT/.carry/dev105.sh $ROOT/.carry/an_verify_timeline.py $W/; tar czf $OUT/dev105.tgz -C $W .' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $W/info.txt
SV="--config experiments/spec_verify.toml --set variant=kvbuffer_verify --set draft_tokens=4 --set buffer_size=8,16 --set batch=64,256 --no-cupti --max-seconds 0.4"
for r in 1 2; do
  timeout 60 /tmp/kvb_base sweep $SV --out $W/ab/ab_base_$r.csv > /dev/null 2>&1; echo "base $r rc=$? $SECONDS s"
  timeout 60 /tmp/kvb_l2 sweep $SV --out $W/ab/ab_l2_$r.csv > $W/ab/l2_$r.log 2>&1; echo "l2 $r rc=$? $SECONDS s"
done
TL="--config experiments/spec_verify.toml --set variant=kvbuffer_verify --set draft_tokens=4 --set buffer_size=8,16 --set batch=64 --set accepted=all --set launch=pdl --no-cupti --max-seconds 0.4"
KVB_TIMELINE=$W/tl timeout 60 /tmp/kvb_tl sweep $TL --out $W/tl_points.csv > $W/tl.log 2>&1; echo "tl rc=$? $SECONDS s"
for f in $W/tl/*_va.csv; do python3 $ROOT/.carry/an_verify_timeline.py $f >> $W/an_verify_timeline_fold.txt 2>&1; done; echo "an rc=$? $SECONDS s"
grep -E "==|fold|life|late/|early/" $W/an_verify_timeline_fold.txt | cut -c1-400
gzip -9 $W/tl/verify_b64_B8_all_pdl_va.csv
rm -f $W/tl/*.csv
