// The spec_verify workload on the GPU (harness/runners/verify_problem.h, verify_check.h): a small VerifyProblem passes
// its pre-timing check against the float64 reference, and model steps of verify and of verify + accept move what
// they must (states copied back from scratch, buffer positions advanced by the accepted counts).
#include <gtest/gtest.h>

#include "harness/runners/verify_bytes.h"
#include "harness/runners/verify_check.h"
#include "harness/runners/verify_problem.h"
#include "tests/gpu/gpu_test_util.h"

namespace kvb {
namespace {

VerifyConfig small_config(VerifyVariant variant, const char* accepted) {
  VerifyConfig c;
  c.variant = variant;
  c.shape = GdnShape{2, 4, 128, 64};
  c.batch = 12;
  c.draft_tokens = 3;
  c.accepted = parse_accepted(accepted);
  c.buffer_size = 4;
  c.layers = 2;
  c.seed = 5;
  return c;
}

TEST(VerifyProblemGpu, RecurrentCheckPassesAndAcceptCopiesTheAcceptedState) {
  KVB_REQUIRE_GPU();
  VerifyProblem prob(small_config(VerifyVariant::recurrent, "0.6"));
  EXPECT_EQ(prob.scratch_sets(), prob.sets());
  CudaStream stream;
  const VerifyCheck chk = check_verify_step(prob, stream.get());
  EXPECT_TRUE(chk.pass()) << chk.detail;
  EXPECT_EQ(chk.rows, 3);
  EXPECT_LE(chk.state_err, 2e-5);

  prob.enqueue_verify(stream.get());
  prob.enqueue_verify_accept(stream.get());
  KVB_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  // Layer-set 1 after one verify + accept: each row's state is its scratch state a - 1 (a >= 1), or unchanged.
  const size_t se = size_t(prob.config().shape.state_elems()), m = prob.config().draft_tokens;
  for (int r = 0; r < prob.config().batch; ++r) {
    const int slot = prob.host_slots()[r], a = prob.accepted()[r];
    if (a == 0) continue;
    const std::vector<float> state = download(prob.state(1) + slot * se, se);
    const std::vector<float> scratch = download(prob.scratch(1) + (slot * m + a - 1) * se, se);
    EXPECT_EQ(state, scratch) << "row " << r << " accepted " << a;
  }
}

TEST(VerifyProblemGpu, KVBufferCheckPassesAndPositionsFollowTheAcceptedCounts) {
  KVB_REQUIRE_GPU();
  for (const char* accepted : {"all", "none", "0.6"}) {
    VerifyProblem prob(small_config(VerifyVariant::kvbuffer, accepted));
    EXPECT_EQ(prob.capacity(), 4 - 1);  // a slot never holds B entries
    CudaStream stream;
    const VerifyCheck chk = check_verify_step(prob, stream.get());
    EXPECT_TRUE(chk.pass()) << accepted << ": " << chk.detail;
    EXPECT_LE(chk.o_err, 8e-3);

    prob.restore_fill(stream.get());
    const int steps = 5;
    prob.enqueue_verify(stream.get());
    for (int t = 0; t < steps; ++t) prob.enqueue_verify_accept(stream.get());
    KVB_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    const int N = prob.config().batch;
    const std::vector<int32_t> fill = download(prob.fill(0), size_t(N));
    for (int r = 0; r < N; ++r) {
      const int slot = prob.host_slots()[r];
      int want = prob.initial_fill()[slot];
      for (int t = 0; t < steps; ++t) want = fill_after_accept(want, prob.accepted()[r], prob.config().buffer_size);
      EXPECT_EQ(fill[slot], want) << accepted << " row " << r;
    }
  }
}

TEST(VerifyProblemGpu, ModelBytesCountEveryRow) {
  KVB_REQUIRE_GPU();
  VerifyProblem prob(small_config(VerifyVariant::kvbuffer, "all"));
  const GdnShape& s = prob.config().shape;
  ByteCount sum;
  sum.read = gate_param_bytes(s);
  for (int r = 0; r < prob.config().batch; ++r)
    sum += kvbuffer_verify_bytes(s, prob.initial_fill()[prob.host_slots()[r]], 3, OutputDtype::bf16);
  EXPECT_DOUBLE_EQ(prob.verify_bytes_per_layer_step().read, sum.read);
  EXPECT_DOUBLE_EQ(prob.verify_bytes_per_layer_step().write, sum.write);
  EXPECT_DOUBLE_EQ(prob.mean_accepted(), 3.0);
  EXPECT_GT(prob.verify_accept_bytes_per_layer_step(4).total(), prob.verify_bytes_per_layer_step().total());
}

}  // namespace
}  // namespace kvb
