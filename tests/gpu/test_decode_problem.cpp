// The decode workload's row order (harness/workloads/decode_problem.h, kernels/row_order.h): KVBuffer decode steps
// whose launches take the rows in the order written after each advance leave every output, checkpoint, buffered
// delta and buffer position bit-for-bit equal to the same steps in batch order, in fp32 and bf16 checkpoints, plain and
// with PDL; the order is a permutation of the rows whose flushing rows sit before the last wave. Skipped without a
// CUDA device.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/workloads/decode_problem.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/row_order_checks.h"

namespace kvb {
namespace {

/// Qwen3-Next's heads at a batch wide enough for the bf16 whole-head blocks (batch x value heads >= 8 blocks an SM
/// on an H200), B = 4: a quarter of the rows flush at every step.
DecodeConfig order_config(StateDtype dtype, bool pdl, DecodeRowOrder order) {
  DecodeConfig c;
  c.variant = DecodeVariant::kvbuffer;
  c.shape = GdnShape{16, 32, 128, 128};
  c.batch = 40;
  c.buffer_size = 4;
  c.layers = 2;
  c.seed = 23;
  c.o_dtype = OutputDtype::fp32;
  c.state_dtype = dtype;
  c.pdl = pdl;
  c.row_order = order;
  return c;
}

/// Every set's outputs, checkpoints and buffered deltas, and group 0's buffer positions, as bytes.
std::vector<unsigned char> everything(const DecodeProblem& prob) {
  std::vector<unsigned char> all;
  const auto append = [&](const void* p, size_t bytes) {
    const auto v = download(static_cast<const unsigned char*>(p), bytes);
    all.insert(all.end(), v.begin(), v.end());
  };
  const DecodeConfig& c = prob.config();
  for (int set = 0; set < prob.sets(); ++set) {
    const KVBufferPool pool = prob.kvbuffer_params(set).pool;
    append(prob.o(set), prob.o_bytes_per_set());
    append(prob.state(set), prob.state_bytes_per_set());
    append(pool.deltas, size_t(pool.num_slots) * pool.capacity * c.shape.heads_v * c.shape.head_dim_v * sizeof(float));
  }
  append(prob.fill(0), size_t(c.batch) * sizeof(int32_t));
  return all;
}

TEST(DecodeProblemGpu, RowOrderChangesNoResultAndPlacesFlushingRowsBeforeTheLastWave) {
  KVB_REQUIRE_GPU();
  for (StateDtype dtype : {StateDtype::fp32, StateDtype::bf16}) {
    for (bool pdl : {false, true}) {
      SCOPED_TRACE(std::string(to_string(dtype)) + (pdl ? " pdl" : " plain"));
      DecodeProblem ordered(order_config(dtype, pdl, DecodeRowOrder::spread)),
          plain(order_config(dtype, false, DecodeRowOrder::batch));
      ASSERT_NE(ordered.row_order(0), nullptr);
      ASSERT_EQ(plain.row_order(0), nullptr);
      // automatic: the order with bf16 checkpoints, batch order with fp32 ones.
      DecodeProblem automatic(order_config(dtype, false, DecodeRowOrder::automatic));
      EXPECT_EQ(automatic.row_order(0) != nullptr, dtype == StateDtype::bf16);
      const DecodeConfig& c = ordered.config();
      const int N = c.batch, wave_rows = kvbuffer_decode_wave_rows(ordered.kvbuffer_params(0));
      ASSERT_GT(wave_rows, 0);
      ASSERT_LT(wave_rows, N);  // the order has positions before the last wave to spread over
      CudaStream stream;
      for (int step = 0; step < 2 * c.buffer_size + 1; ++step) {
        KVB_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
        const std::vector<int32_t> fill = download(ordered.fill(0), size_t(N));
        const int flushing = test::expect_spread_order(
            download(ordered.row_order(0), size_t(N)), ordered.host_slots(), fill, wave_rows,
            [&](int32_t f) { return f + 1 >= c.buffer_size; }, "step " + std::to_string(step));
        EXPECT_GT(flushing, 0) << "step " << step;
        ordered.enqueue_step(stream.get());
        plain.enqueue_step(stream.get());
      }
      KVB_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
      EXPECT_TRUE(everything(ordered) == everything(plain)) << "row order changed a result";
      // restore_fill writes the order of the initial positions again.
      ordered.restore_fill(stream.get());
      KVB_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
      const std::vector<OrderedRow> order = download(ordered.row_order(0), size_t(N));
      for (int pos = 0; pos < N; ++pos) {
        EXPECT_EQ(order[pos].fill, ordered.initial_fill()[order[pos].slot]);
      }
    }
  }
}

}  // namespace
}  // namespace kvb
