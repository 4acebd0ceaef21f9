#!/bin/bash
# Commit fd025e9 (verify's pass on tensor cores, 3xTF32): every GPU test, compute-sanitizer on the verify tests, an
# A/B of spec_verify (4 drafts) against 63e183a's kvb, then, when verify + accept is faster, the spec_verify and
# buffer_form_verify grids.
ROOT=$PWD
B=$ROOT/.carry/b96
mkdir -p $B/tests && xz -dc $B/kvb_tests.xz > $B/tests/kvb_tests && chmod +x $B/tests/kvb_tests
xz -dc $B/kvb.xz > $B/kvb && chmod +x $B/kvb
xz -dc $ROOT/.carry/b91/kvb.xz > /tmp/kvb_base && chmod +x /tmp/kvb_base
ln -sfn $B $ROOT/build-lead
mkdir -p /work && ln -sfn $ROOT /work/main
cd /work/main
W=/tmp/w96; mkdir -p $W/ab
trap 'cp $ROOT/.carry/dev96.sh $W/; tar czf $OUT/dev96.tgz -C $W .' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $W/info.txt
$B/kvb info >> $W/info.txt 2>&1; tail -1 $W/info.txt
$B/tests/kvb_tests --gtest_filter='*Gpu*:CapacityProbe*:LaunchValidation*' > $W/gtest_gpu.txt 2>&1; echo "gtest rc=$? $SECONDS s"; grep -E "^\[  FAILED|PASSED  \]|FAILED TEST" $W/gtest_gpu.txt | head
grep -B3 -A10 "Failure" $W/gtest_gpu.txt | head -40
F='KVBufferVerifyGpu.EveryDraft*:KVBufferVerifyGpu.Sliced*:KVBufferVerifyGpu.LongBuffers*:VerifyGpu.*'
timeout 60 compute-sanitizer --tool racecheck $B/tests/kvb_tests --gtest_filter=$F > $W/sanitizer_racecheck.txt 2>&1; echo "racecheck rc=$? $SECONDS s"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $W/sanitizer_racecheck.txt | tail -3
timeout 60 compute-sanitizer --tool memcheck $B/tests/kvb_tests --gtest_filter="$F:KVBufferVerifyGpu.WholeHead*" > $W/sanitizer_memcheck.txt 2>&1; echo "memcheck rc=$? $SECONDS s"; grep -E "ERROR SUMMARY|PASSED|FAILED" $W/sanitizer_memcheck.txt | tail -2
SV="--config experiments/spec_verify.toml --set variant=kvbuffer_verify --set draft_tokens=4 --set buffer_size=8,16 --set batch=64,256 --no-cupti --max-seconds 0.4"
for v in base new; do bin=/tmp/kvb_base; [ $v = new ] && bin=$B/kvb
  timeout 45 $bin sweep $SV --out $W/ab/ab_${v}.csv > $W/ab/ab_${v}.log 2>&1; echo "ab $v rc=$? $SECONDS s"
done
R=$(python3 - <<'PY'
import csv,math
def load(f): return {(r['batch'],r['buffer_size'],r['accepted'],r['launch']):float(r['verify_accept_us_median']) for r in csv.DictReader(open(f)) if r['status']=='ok'}
a=load('/tmp/w96/ab/ab_base.csv'); b=load('/tmp/w96/ab/ab_new.csv')
k=[x for x in a if x in b]
print(f"{math.exp(sum(math.log(b[x]/a[x]) for x in k)/len(k)):.4f} {len(k)}" if k else "9 0")
PY
); echo "new/base v+a geomean $R"
if python3 -c "import sys; r,n=sys.argv[1:3]; sys.exit(0 if float(r)<0.98 and int(n)==16 else 1)" $R; then
  timeout 300 $B/kvb sweep --config experiments/spec_verify.toml --out $W/spec_verify.csv > $W/spec_verify.log 2>&1; echo "spec_verify rc=$? $SECONDS s"; tail -1 $W/spec_verify.log
  timeout 200 $B/kvb sweep --config experiments/buffer_form_verify.toml --out $W/buffer_form_verify.csv > $W/buffer_form_verify.log 2>&1; echo "bfv rc=$? $SECONDS s"; tail -1 $W/buffer_form_verify.log
fi
