// GPU test of the accuracy run (harness/workloads/accuracy_run.h): recurrent and KVBuffer decode with fp32 and bf16
// states over 64 tokens at a small shape against the exact float64 reference. fp32 stays within the fp32 tolerance;
// bf16 storage shows a drift above it and far below a wrong kernel's. Skipped without a CUDA device.
#include <gtest/gtest.h>

#include "harness/workloads/accuracy_run.h"
#include "core/tolerances.h"
#include "tests/gpu/gpu_test_util.h"

namespace kvb {
namespace {

AccuracyConfig small(bool kvbuffer, StateDtype d) {
  AccuracyConfig c;
  c.kvbuffer = kvbuffer;
  c.shape = GdnShape{2, 4, 64, 64};
  c.batch = 2;
  c.buffer_size = 8;
  c.state_dtype = d;
  c.tokens = 64;
  c.seed = 5;
  return c;
}

TEST(AccuracyRunGpu, Fp32StaysWithinItsToleranceAndBf16DriftsBoundedly) {
  KVB_REQUIRE_GPU();
  for (bool kvbuffer : {false, true}) {
    SCOPED_TRACE(kvbuffer ? "kvbuffer" : "recurrent");
    const std::vector<AccuracyPoint> f = run_accuracy(small(kvbuffer, StateDtype::fp32));
    ASSERT_EQ(f.size(), 2u);  // tokens 1 and 64
    EXPECT_EQ(f[0].tokens, 1);
    EXPECT_EQ(f[1].tokens, 64);
    for (const AccuracyPoint& p : f) {
      EXPECT_LE(p.state_err, tol::kStateFp32) << p.tokens;
      EXPECT_LE(p.o_err, tol::kOutputFp32) << p.tokens;
      EXPECT_GT(p.state_err, 0.0) << "nothing compared";
    }
    const std::vector<AccuracyPoint> b = run_accuracy(small(kvbuffer, StateDtype::bf16));
    ASSERT_EQ(b.size(), 2u);
    EXPECT_GT(b[1].state_err, tol::kStateFp32);
    EXPECT_LE(b[1].state_err, 5e-2);
    EXPECT_LE(b[1].o_err, 5e-2);
  }
}

}  // namespace
}  // namespace kvb
