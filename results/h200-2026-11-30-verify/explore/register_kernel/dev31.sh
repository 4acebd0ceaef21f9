#!/bin/bash
ROOT=$PWD
ln -sfn $ROOT/.carry/b31 $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
B=$ROOT/build-lead
W=/tmp/w31; mkdir -p $W
trap 'cp $ROOT/.carry/dev31.sh $W/; tar czf $OUT/dev31.tgz -C $W .' EXIT
$B/tests/kvb_tests --gtest_filter='*Verify*' > $W/gtest_verify.txt 2>&1; echo "gtest rc=$?"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_verify.txt | head
timeout 150 $B/kvb sweep --config experiments/spec_verify.toml --set variant=kvbuffer_verify --set draft_tokens=1,4,8 --set accepted=all --no-cupti --out $W/sv_pref.csv > $W/sv_pref.log 2>&1; echo "sv rc=$?"; tail -1 $W/sv_pref.log
python3 - <<'PY'
import csv
for r in csv.DictReader(open('/tmp/w31/sv_pref.csv')):
    print(r['batch'],r['draft_tokens'],r['accepted'],r['buffer_size'],'v',r['verify_us_median'],'x',r['verify_over_floor'],'va',r['verify_accept_us_median'],r['sm_clock_mhz'],r['status'][:50])
PY
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
timeout 200 $NCU --kernel-name regex:kvbuffer_verify_kernel --launch-skip 3 --launch-count 1 --set full --import-source yes -o $W/prof $B/kvb sweep --config experiments/spec_verify.toml --set variant=kvbuffer_verify --set batch=64 --set draft_tokens=4 --set accepted=all --set buffer_size=16 --no-cupti --max-seconds 0.2 --out $W/ncu_sv.csv > $W/ncu_run.log 2>&1; echo "ncu rc=$?"; tail -3 $W/ncu_run.log
$NCU --import $W/prof.ncu-rep --page details > $W/ncu_details.txt 2>&1; echo "details rc=$?"
$NCU --import $W/prof.ncu-rep --page source --csv --print-source cuda > $W/ncu_source_cuda.csv 2>&1; echo "src rc=$?"; head -c 600 $W/ncu_source_cuda.csv
$NCU --import $W/prof.ncu-rep --page source --csv --print-source sass > $W/ncu_source_sass.csv 2>&1; echo "sass rc=$?"
rm -f $W/prof.ncu-rep
