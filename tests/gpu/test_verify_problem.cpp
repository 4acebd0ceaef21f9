// The spec_verify workload on the GPU (harness/workloads/verify_problem.h, verify_check.h, raw_verify_check.h): a small
// VerifyProblem, recurrent or KVBuffer in delta or raw form, passes its pre-timing check against the float64
// reference, and model steps of verify and of verify + accept move what they must (states copied back from scratch,
// buffer positions advanced by the accepted counts).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "harness/workloads/raw_verify_check.h"
#include "byte_model/verify_bytes.h"
#include "harness/workloads/verify_check.h"
#include "harness/workloads/verify_problem.h"
#include "byte_model/byte_model_raw.h"
#include "core/tolerances.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/row_order_checks.h"

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

/// From the initial buffer positions, one verify and five verify + accept steps: every slot's fill must be where
/// fill_after (the problem's buffer form) puts it. `accepted` names the acceptance setting in failure messages.
void expect_positions_follow_accepted(VerifyProblem& prob, cudaStream_t stream, const char* accepted) {
  prob.restore_fill(stream);
  const int steps = 5;
  prob.enqueue_verify(stream);
  for (int t = 0; t < steps; ++t) prob.enqueue_verify_accept(stream);
  KVB_CUDA_CHECK(cudaStreamSynchronize(stream));
  const int N = prob.config().batch;
  const std::vector<int32_t> fill = download(prob.fill(0), size_t(N));
  for (int r = 0; r < N; ++r) {
    const int slot = prob.host_slots()[r];
    int want = prob.initial_fill()[slot];
    for (int t = 0; t < steps; ++t)
      want = fill_after(prob.config().form, want, prob.accepted()[r], prob.config().buffer_size);
    EXPECT_EQ(fill[slot], want) << accepted << " row " << r;
  }
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
    const std::vector<float> state = download(static_cast<const float*>(prob.state(1)) + slot * se, se);
    const std::vector<float> scratch = download(prob.scratch(1) + (slot * m + a - 1) * se, se);
    EXPECT_EQ(state, scratch) << "row " << r << " accepted " << a;
  }
}

TEST(VerifyProblemGpu, KVBufferCheckPassesAndPositionsFollowTheAcceptedCounts) {
  KVB_REQUIRE_GPU();
  for (const char* accepted : {"all", "none", "0.6"}) {
    VerifyProblem prob(small_config(VerifyVariant::kvbuffer, accepted));
    EXPECT_EQ(prob.capacity(), 4 - 1 + 3);  // B - 1 entries, then the m drafts' entries
    CudaStream stream;
    const VerifyCheck chk = check_verify_step(prob, stream.get());
    EXPECT_TRUE(chk.pass()) << accepted << ": " << chk.detail;
    EXPECT_LE(chk.o_err, 8e-3);
    // B = 4, m = 3, staggered: with every draft accepted the overflowing row is due, and its second verify folds.
    if (std::string(accepted) == "all") {
      EXPECT_GT(chk.folded_rows, 0);
    } else if (std::string(accepted) == "none") {
      EXPECT_EQ(chk.folded_rows, 0);
    }

    expect_positions_follow_accepted(prob, stream.get(), accepted);
  }
}

VerifyConfig small_raw_config(const char* accepted) {
  VerifyConfig c = small_config(VerifyVariant::kvbuffer, accepted);
  c.form = BufferForm::raw;
  return c;
}

TEST(VerifyProblemGpu, RawCheckPassesAndPositionsFollowTheAcceptedCounts) {
  KVB_REQUIRE_GPU();
  for (const char* accepted : {"all", "none", "0.6"}) {
    VerifyProblem prob(small_raw_config(accepted));
    ASSERT_TRUE(prob.raw());
    EXPECT_EQ(prob.group_arrivals(), nullptr);  // raw verify writes no entries
    EXPECT_EQ(prob.capacity(), 4 - 1);          // its accept flushes at B
    CudaStream stream;
    // B = 4, m = 3, staggered: with "all" some rows fold on accept, so the checkpoint is compared; with "none"
    // nothing moves and the buffers must come back bit for bit.
    const VerifyCheck chk = check_verify_step(prob, stream.get());
    EXPECT_TRUE(chk.pass()) << accepted << ": " << chk.detail;
    // Rows 0 and N - 1, plus a row whose accept folds (none folds when nothing is accepted).
    EXPECT_EQ(chk.rows, std::string(accepted) == "none" ? 2 : 3) << accepted;
    EXPECT_LE(chk.o_err, tol::kOutputBf16) << accepted;
    EXPECT_LE(chk.state_err, tol::kStateFp32) << accepted;
    if (std::string(accepted) == "all") {
      EXPECT_GT(chk.state_err, 0.0);
    } else if (std::string(accepted) == "none") {
      EXPECT_EQ(chk.state_err, 0.0);
    }

    expect_positions_follow_accepted(prob, stream.get(), accepted);
    // After the timed-style steps the check still passes from the positions reached (another phase of the cycle).
    const LaunchCheck again = check_raw_verify_step(prob, stream.get());
    EXPECT_TRUE(again.pass()) << accepted << ": " << again.detail;
  }
}

TEST(VerifyProblemGpu, RawModelBytesUseTheRawFormCounts) {
  KVB_REQUIRE_GPU();
  VerifyProblem prob(small_raw_config("all"));
  const GdnShape& s = prob.config().shape;
  ByteCount sum;
  sum.read = gate_param_bytes(s);
  for (int r = 0; r < prob.config().batch; ++r)
    sum += kvbuffer_raw_verify_bytes(s, prob.initial_fill()[prob.host_slots()[r]], 3, OutputDtype::bf16);
  EXPECT_DOUBLE_EQ(prob.verify_bytes_per_layer_step().read, sum.read);
  EXPECT_DOUBLE_EQ(prob.verify_bytes_per_layer_step().write, sum.write);
  // The delta form folds a full buffer inside verify, from the checkpoint it reads anyway; the raw form's accept
  // reads the checkpoint again to fold: at B = 4, m = 3, all accepted, the raw form moves more.
  VerifyProblem delta(small_config(VerifyVariant::kvbuffer, "all"));
  EXPECT_GT(prob.verify_accept_bytes_per_layer_step(4).total(), delta.verify_accept_bytes_per_layer_step(4).total());
}

/// Both verify kernels: outputs, checkpoints and buffer positions after verify + accept steps are the same bit for
/// bit whether the launches take the rows in batch order or in the row order (due rows spread early), and the row
/// order written after each commit is a permutation whose due rows sit before the last wave.
TEST(VerifyProblemGpu, RowOrderChangesNoResultAndPlacesDueRowsBeforeTheLastWave) {
  KVB_REQUIRE_GPU();
  for (VerifyKernel kernel : {VerifyKernel::cuda_cores, VerifyKernel::tensor_cores}) {
    VerifyConfig c = small_config(VerifyVariant::kvbuffer, "all");
    c.shape = GdnShape{2, 4, 128, 128};
    c.batch = 40;
    c.kernel = kernel;
    VerifyConfig batch_order = c;
    batch_order.order_rows = false;
    VerifyProblem ordered(c), plain(batch_order);
    ASSERT_NE(ordered.row_order(0), nullptr);
    ASSERT_EQ(plain.row_order(0), nullptr);
    CudaStream stream;
    const int N = c.batch, wave_rows = kvbuffer_verify_wave_rows(ordered.kvbuffer_verify_params(0));
    for (int step = 0; step < 6; ++step) {
      // The order the next step's launches take, from the positions its verifies read.
      KVB_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
      const std::vector<int32_t> fill = download(ordered.fill(0), size_t(N));
      const int due_rows = test::expect_spread_order(
          download(ordered.row_order(0), size_t(N)), ordered.host_slots(), fill, wave_rows,
          [&](int32_t f) { return f >= c.buffer_size; }, "step " + std::to_string(step));
      if (step == 5) {
        EXPECT_GT(due_rows, 0);
      }
      ordered.enqueue_verify_accept(stream.get());
      plain.enqueue_verify_accept(stream.get());
    }
    KVB_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    const size_t o_bytes = ordered.o_bytes_per_set(), states = ordered.state_bytes_per_set();
    for (int set = 0; set < ordered.sets(); ++set) {
      EXPECT_EQ(download(static_cast<const unsigned char*>(ordered.o(set)), o_bytes),
                download(static_cast<const unsigned char*>(plain.o(set)), o_bytes))
          << to_string(kernel) << " set " << set;
      EXPECT_EQ(download(static_cast<const unsigned char*>(ordered.state(set)), states),
                download(static_cast<const unsigned char*>(plain.state(set)), states))
          << to_string(kernel) << " set " << set;
    }
    EXPECT_EQ(download(ordered.fill(0), size_t(N)), download(plain.fill(0), size_t(N)));
  }
}

TEST(VerifyProblem, RawBufferBeyondTheRawLimitIsRejectedBeforeAllocating) {
  VerifyConfig c = small_raw_config("all");
  c.buffer_size = kMaxRawBuffer + 1;
  try {
    VerifyProblem prob(c);
    ADD_FAILURE() << "buffer_size " << c.buffer_size << " was taken in raw form";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("raw form"), std::string::npos) << e.what();
  }
}

TEST(VerifyProblemGpu, ModelBytesCountEveryRow) {
  KVB_REQUIRE_GPU();
  VerifyProblem prob(small_config(VerifyVariant::kvbuffer, "all"));
  const GdnShape& s = prob.config().shape;
  ByteCount sum;
  sum.read = gate_param_bytes(s);
  for (int r = 0; r < prob.config().batch; ++r)
    sum += kvbuffer_verify_bytes(s, prob.initial_fill()[prob.host_slots()[r]], 3, 4, OutputDtype::bf16);
  EXPECT_DOUBLE_EQ(prob.verify_bytes_per_layer_step().read, sum.read);
  EXPECT_DOUBLE_EQ(prob.verify_bytes_per_layer_step().write, sum.write);
  EXPECT_DOUBLE_EQ(prob.mean_accepted(), 3.0);
  EXPECT_GT(prob.verify_accept_bytes_per_layer_step(4).total(), prob.verify_bytes_per_layer_step().total());
}

}  // namespace
}  // namespace kvb
