#!/bin/bash
# Stage stamps of the two-kernel verify (branch verify-prepare-timeline: verify-prepare with the timeline stamps):
# batch 64 and 256, 4 drafts, B = 8, all accepted, PDL; the relieved verify kernel (prep) and the fused kernel of the
# same build (KVB_VERIFY_FUSED=1, fused), analysed here.
ROOT=$PWD
xz -dc $ROOT/.carry/b112/kvb.xz > /tmp/kvb112 && chmod +x /tmp/kvb112
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w112; mkdir -p $W/prep $W/fused
trap 'cp $ROOT/.carry/dev112.sh $ROOT/.carry/an_verify_timeline.py $W/; tar czf $OUT/dev112.tgz -C $W .' EXIT
P="--config experiments/spec_verify.toml --set variant=kvbuffer_verify --set draft_tokens=4 --set buffer_size=8 --set batch=64,256 --set accepted=all --set launch=pdl --no-cupti --max-seconds 0.3"
KVB_TIMELINE=$W/prep timeout 120 /tmp/kvb112 sweep $P --out $W/pt_prep.csv > $W/prep.log 2>&1; echo "prep rc=$? $SECONDS s"
KVB_VERIFY_FUSED=1 KVB_TIMELINE=$W/fused timeout 120 /tmp/kvb112 sweep $P --out $W/pt_fused.csv > $W/fused.log 2>&1; echo "fused rc=$? $SECONDS s"
for m in prep fused; do for f in $W/$m/*.csv; do echo "### $m" >> $W/an_$m.txt; python3 $ROOT/.carry/an_verify_timeline.py $f >> $W/an_$m.txt 2>&1; done; done; echo "an $SECONDS s"
grep -E "==|late/|early/" $W/an_prep.txt $W/an_fused.txt | grep -v fold | cut -c1-330
gzip -9 $W/prep/verify_b64_B8_all_pdl_v.csv
rm -f $W/prep/*.csv $W/fused/*.csv
