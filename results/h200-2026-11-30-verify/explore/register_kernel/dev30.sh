#!/bin/bash
ROOT=$PWD
ln -sfn $ROOT/.carry/b30 $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
B=$ROOT/build-lead
W=/tmp/w30; mkdir -p $W
trap 'cp $ROOT/.carry/dev30.sh $W/; tar czf $OUT/dev30.tgz -C $W .' EXIT
$B/tests/kvb_tests --gtest_filter='*Verify*:*Capacity*' > $W/gtest_verify.txt 2>&1; echo "gtest rc=$?"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_verify.txt | head
timeout 150 compute-sanitizer --tool memcheck $B/tests/kvb_tests --gtest_filter='KVBufferVerifyGpu.*:VerifyGpu.GoldenDraft4' > $W/memcheck_verify.txt 2>&1; echo "memcheck rc=$?"; tail -1 $W/memcheck_verify.txt
timeout 150 compute-sanitizer --tool racecheck $B/tests/kvb_tests --gtest_filter='VerifyGpu.GoldenDraft4:VerifyProblemGpu.KVBufferCheck*' > $W/racecheck_verify.txt 2>&1; echo "racecheck rc=$?"; tail -1 $W/racecheck_verify.txt
timeout 200 $B/kvb sweep --config experiments/spec_verify.toml --set variant=kvbuffer_verify --set draft_tokens=1,4,8 --no-cupti --out $W/sv_reg8.csv > $W/sv_reg8.log 2>&1; echo "sv rc=$?"; tail -1 $W/sv_reg8.log
KVB_TILE=64,128 timeout 100 $B/kvb sweep --config experiments/spec_verify.toml --set variant=kvbuffer_verify --set draft_tokens=4 --no-cupti --out $W/sv_reg4.csv > $W/sv_reg4.log 2>&1; echo "sv4 rc=$?"; tail -1 $W/sv_reg4.log
python3 - <<'PY'
import csv
for f in ['sv_reg8','sv_reg4']:
  for r in csv.DictReader(open(f'/tmp/w30/{f}.csv')):
    print(f,r['batch'],r['draft_tokens'],r['accepted'],r['buffer_size'],'v',r['verify_us_median'],'x',r['verify_over_floor'],'va',r['verify_accept_us_median'],r['sm_clock_mhz'],r['status'][:50])
PY
