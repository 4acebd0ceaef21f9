// DRAM bytes that the decode kernels really move (CUPTI range profiler) against the byte model. Skipped without a
// device, and when another CUDA tool (ncu, nsys) is attached.
#include <gtest/gtest.h>

#include <cstdlib>

#include "harness/workloads/decode_problem.h"
#include "harness/measure/point_profiler.h"
#include "tests/gpu/gpu_test_util.h"

namespace kvb {
namespace {

/// Measured (read + write) bytes over model bytes for one whole flush cycle of a one-layer problem.
double measured_over_model(DecodeVariant variant, int batch, int buffer_size) {
  DecodeConfig cfg;
  cfg.variant = variant;
  cfg.batch = batch;
  cfg.buffer_size = buffer_size;
  cfg.layers = 1;
  DecodeProblem prob(cfg);
  CudaStream stream;
  const int cycle = prob.cycle_steps();
  const RangeMeasurement m = profile_range(
      0,
      [&] {
        for (int i = 0; i < cycle; ++i) prob.enqueue_step(stream.get());
        KVB_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
      },
      [&] {
        prob.restore_fill(stream.get());
        KVB_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
      });
  release_profile_sessions();  // leave CUPTI free for the other tests of this process
  EXPECT_TRUE(m.status.ok()) << m.status.reason << " " << m.status.detail;
  EXPECT_GT(m.dram_read_bytes, 0.0);
  EXPECT_GT(m.dram_write_bytes, 0.0);
  const double per_step = (m.dram_read_bytes + m.dram_write_bytes) / cycle;
  return per_step / prob.model_bytes_per_layer_step().total();
}

TEST(DecodeBytesGpu, RecurrentBatch256MovesItsModelBytes) {
  KVB_REQUIRE_GPU();
  if (std::getenv("CUDA_INJECTION64_PATH")) KVB_SKIP_GPU_TEST("another CUDA tool is attached (ncu or nsys)");
  const double r = measured_over_model(DecodeVariant::recurrent, 256, 1);
  RecordProperty("measured_over_model", std::to_string(r));
  EXPECT_NEAR(r, 1.0, 0.10);
}

TEST(DecodeBytesGpu, KVBufferCycleMovesItsModelBytes) {
  KVB_REQUIRE_GPU();
  if (std::getenv("CUDA_INJECTION64_PATH")) KVB_SKIP_GPU_TEST("another CUDA tool is attached (ncu or nsys)");
  const double r = measured_over_model(DecodeVariant::kvbuffer, 256, 8);
  RecordProperty("measured_over_model", std::to_string(r));
  EXPECT_NEAR(r, 1.0, 0.10);
}

}  // namespace
}  // namespace kvb
