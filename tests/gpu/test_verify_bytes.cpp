// DRAM bytes that KVBuffer verify + accept really moves (CUPTI range profiler) against the byte model
// (byte_model/verify_bytes.h), for each verify kernel: within 5% over a whole flush cycle of model steps. The
// batch's checkpoints (256 rows x 2 MiB at the Qwen3-Next shape) are over eight times the H200's 60 MB L2, so that
// each step's reads come from DRAM. Skipped without a device, where CUPTI may not profile, and when another CUDA tool
// (ncu, nsys) is attached (failed instead with KVB_REQUIRE_GPU_TESTS=1).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <ostream>
#include <string>

#include "harness/measure/point_profiler.h"
#include "harness/workloads/verify_accepted.h"
#include "harness/workloads/verify_problem.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/kvbuffer_rig.h"

namespace kvb {
namespace {

/// One point: m drafts, buffer size B, the acceptance setting (VerifyConfig::accepted).
struct BytesPoint {
  const char* name;
  int m, B;
  const char* accepted;
};
void PrintTo(const BytesPoint& pt, std::ostream* os) { *os << pt.name; }

/// A one-layer KVBuffer verify problem at the Qwen3-Next shape, batch 256, rows staggered over the buffer positions.
VerifyConfig bytes_config(const BytesPoint& pt) {
  VerifyConfig c;
  c.variant = VerifyVariant::kvbuffer;
  c.shape = GdnShape{16, 32, 128, 128};
  c.batch = 256;
  c.draft_tokens = pt.m;
  c.accepted = parse_accepted(pt.accepted);
  c.buffer_size = pt.B;
  c.layers = 1;
  c.seed = 31;
  return c;
}

/// One model step of verify + accept of a one-layer problem with kernel k: the layer's verify, then the commit
/// (VerifyProblem::enqueue_verify_accept with the kernel chosen).
void enqueue_verify_accept(const VerifyProblem& prob, VerifyKernel k, cudaStream_t stream) {
  KVBufferVerifyParams p = prob.kvbuffer_verify_params(0);
  p.kernel = k;
  KVB_CUDA_CHECK(launch_kvbuffer_verify(p, stream));
  prob.enqueue_advance_positions(0, stream);
}

class VerifyBytesGpu : public ::testing::TestWithParam<BytesPoint> {};

TEST_P(VerifyBytesGpu, VerifyAcceptMovesItsModelBytes) {
  KVB_REQUIRE_GPU();
  if (std::getenv("CUDA_INJECTION64_PATH")) KVB_SKIP_GPU_TEST("another CUDA tool is attached (ncu or nsys)");
  const BytesPoint& pt = GetParam();
  VerifyProblem prob(bytes_config(pt));
  ASSERT_EQ(prob.config().layers, 1);
  CudaStream stream;
  const int steps = pt.B;  // whole flush cycles, as the sweep's verify + accept samples (verify_runner.cpp)
  const ByteCount model = prob.verify_accept_bytes_per_layer_step(steps);
  for (const VerifyKernel k : test::verify_kernels_for(prob.kvbuffer_verify_params(0))) {
    KVBufferVerifyParams p = prob.kvbuffer_verify_params(0);
    p.kernel = k;
    KVBufferVerifyLaunch d;
    ASSERT_EQ(describe_kvbuffer_verify_launch(p, d), cudaSuccess);
    SCOPED_TRACE(test::verify_case(k, pt.B, pt.m) + ", accepted " + pt.accepted + ", " + test::launch_words(d));
    const RangeMeasurement meas = profile_range(
        0,
        [&] {
          for (int i = 0; i < steps; ++i) enqueue_verify_accept(prob, k, stream.get());
          KVB_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
        },
        [&] {
          prob.restore_fill(stream.get());
          KVB_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
        });
    release_profile_sessions();  // leave CUPTI free for the other tests of this process
    if (!meas.status.ok() && meas.status.code != ProfilerStatus::Code::error)
      KVB_SKIP_GPU_TEST("CUPTI cannot profile on this machine: " << meas.status.reason);
    ASSERT_TRUE(meas.status.ok()) << meas.status.reason << " " << meas.status.detail;
    EXPECT_GT(meas.dram_read_bytes, 0.0);
    EXPECT_GT(meas.dram_write_bytes, 0.0);
    const double measured = (meas.dram_read_bytes + meas.dram_write_bytes) / steps;
    const double r = measured / model.total();
    RecordProperty(std::string("measured_over_model_") + to_string(k), fmt::format("{:.4f}", r));
    EXPECT_NEAR(r, 1.0, 0.05) << fmt::format(
        "per step: measured {:.2f} MB (read {:.2f}, written {:.2f}), model {:.2f} MB (read {:.2f}, written {:.2f})",
        measured / 1e6, meas.dram_read_bytes / steps / 1e6, meas.dram_write_bytes / steps / 1e6, model.total() / 1e6,
        model.read / 1e6, model.write / 1e6);
  }
}

// Points that meet the CUDA-core kernel's variants at whole value heads (keys in shared memory; packed draft rows at
// m = 4 and B = 13 to 16; keys from the pool at m = 5 and 6 from B = 8: the trace names the one each point takes),
// with every draft accepted or each with probability 0.7.
INSTANTIATE_TEST_SUITE_P(Points, VerifyBytesGpu,
                         ::testing::Values(BytesPoint{"m1_B8_all", 1, 8, "all"}, BytesPoint{"m2_B16_p07", 2, 16, "0.7"},
                                           BytesPoint{"m4_B16_all", 4, 16, "all"},
                                           BytesPoint{"m6_B8_p07", 6, 8, "0.7"},
                                           BytesPoint{"m8_B32_all", 8, 32, "all"}),
                         [](const ::testing::TestParamInfo<BytesPoint>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace kvb
