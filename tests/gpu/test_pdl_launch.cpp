// Programmatic dependent launch (kernels/pdl.cuh) of the decode and verify kernels: a model step of several layers
// launched with PDL, captured in a CUDA graph and replayed over whole flush cycles, leaves every output, state,
// checkpoint, buffered delta and buffer position bit-for-bit equal to the same steps launched plainly (the kernels
// only move the state or checkpoint copy before the wait; the arithmetic is the same), and the pre-timing checks
// against the float64 reference pass in PDL mode. Skipped without a CUDA device.
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <vector>

#include "harness/workloads/decode_check.h"
#include "harness/workloads/decode_problem.h"
#include "harness/measure/cuda_graph.h"
#include "harness/workloads/verify_accepted.h"
#include "harness/workloads/verify_check.h"
#include "harness/workloads/verify_problem.h"
#include "tests/gpu/gpu_test_util.h"

namespace kvb {
namespace {

DecodeConfig pdl_config(DecodeVariant variant, int buffer_size, bool pdl) {
  DecodeConfig c;
  c.variant = variant;
  c.batch = 64;  // thousands of blocks per layer: the next layer's blocks do start during the last wave
  c.buffer_size = buffer_size;
  c.layers = 3;
  c.seed = 11;
  c.o_dtype = OutputDtype::fp32;
  c.pdl = pdl;
  return c;
}

/// What replays of one model step leave behind, gathered from every pool set: outputs, states (or checkpoints), and
/// for KVBuffer verify its buffered deltas and buffer positions.
struct StepResult {
  std::vector<unsigned char> o, states;  // outputs and states as their bytes
  std::vector<float> deltas;
  std::vector<int32_t> fill;
};

/// Captures the model step `enqueue(prob, stream)` in a CUDA graph, replays it `steps` times and gathers the result
/// with `collect(prob, result)`.
template <class Problem, class Enqueue, class Collect>
StepResult replay_steps(Problem& prob, int steps, Enqueue enqueue, Collect collect) {
  CudaStream stream;
  const CudaGraph graph = CudaGraph::capture(stream.get(), [&](cudaStream_t s) { enqueue(prob, s); });
  for (int i = 0; i < steps; ++i) graph.launch(stream.get());
  KVB_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  StepResult r;
  collect(prob, r);
  return r;
}

/// Appends n elements of device array p to `to`.
template <class T>
void append_download(std::vector<T>& to, const T* p, size_t n) {
  const auto v = download(p, n);
  to.insert(to.end(), v.begin(), v.end());
}

/// PDL replays match plain ones bit for bit, and moved the states (the comparison is not between untouched pools).
/// Whether two byte ranges of equal length hold the same bytes (empty ranges, which may have no storage, are equal).
bool same_bytes(const void* a, const void* b, size_t bytes) { return bytes == 0 || std::memcmp(a, b, bytes) == 0; }

void expect_same_bits(const StepResult& plain, const StepResult& pdl, const StepResult& fresh) {
  ASSERT_EQ(plain.o.size(), pdl.o.size());
  ASSERT_EQ(plain.states.size(), pdl.states.size());
  ASSERT_EQ(plain.deltas.size(), pdl.deltas.size());
  ASSERT_EQ(fresh.states.size(), pdl.states.size());
  ASSERT_FALSE(pdl.states.empty());
  EXPECT_TRUE(same_bytes(plain.o.data(), pdl.o.data(), plain.o.size())) << "outputs differ";
  EXPECT_TRUE(same_bytes(plain.states.data(), pdl.states.data(), plain.states.size()))
      << "states or checkpoints differ";
  EXPECT_TRUE(same_bytes(plain.deltas.data(), pdl.deltas.data(), plain.deltas.size() * sizeof(float)))
      << "buffered deltas differ";
  EXPECT_EQ(plain.fill, pdl.fill) << "buffer positions differ";
  EXPECT_FALSE(same_bytes(fresh.states.data(), pdl.states.data(), pdl.states.size()))
      << "the steps left the states as they started";
}

StepResult run_steps(const DecodeConfig& cfg, int steps) {
  DecodeProblem prob(cfg);
  return replay_steps(
      prob, steps, [](DecodeProblem& p, cudaStream_t s) { p.enqueue_step(s); },
      [](DecodeProblem& p, StepResult& r) {
        for (int set = 0; set < p.sets(); ++set) {
          append_download(r.o, static_cast<const unsigned char*>(p.o(set)), p.o_bytes_per_set());
          append_download(r.states, static_cast<const unsigned char*>(p.state(set)), p.state_bytes_per_set());
        }
      });
}

void expect_pdl_matches_plain(DecodeVariant variant, int buffer_size) {
  const int steps = 2 * buffer_size + 1;  // two whole flush cycles and one step more
  expect_same_bits(run_steps(pdl_config(variant, buffer_size, false), steps),
                   run_steps(pdl_config(variant, buffer_size, true), steps),
                   run_steps(pdl_config(variant, buffer_size, false), 0));
}

TEST(PdlLaunchGpu, RecurrentStepsMatchPlainLaunchesBitForBit) {
  KVB_REQUIRE_GPU();
  expect_pdl_matches_plain(DecodeVariant::recurrent, 1);
}

TEST(PdlLaunchGpu, KVBufferStepsMatchPlainLaunchesBitForBit) {
  KVB_REQUIRE_GPU();
  expect_pdl_matches_plain(DecodeVariant::kvbuffer, 4);
}

TEST(PdlLaunchGpu, CheckAgainstReferencePassesWithPdl) {
  KVB_REQUIRE_GPU();
  for (const DecodeVariant v : {DecodeVariant::recurrent, DecodeVariant::kvbuffer}) {
    CudaStream stream;
    DecodeProblem prob(pdl_config(v, 8, true));
    const DecodeCheck chk = check_decode_step(prob, stream.get());
    EXPECT_TRUE(chk.pass()) << chk.detail;
    EXPECT_TRUE(chk.outputs_written);
  }
}

TEST(PdlLaunchGpu, OnePoolSetIsRefused) {
  KVB_REQUIRE_GPU();
  DecodeConfig c = pdl_config(DecodeVariant::recurrent, 1, true);
  c.layers = 1;  // consecutive launches would read the state the previous one writes
  EXPECT_THROW(DecodeProblem{c}, std::invalid_argument);
  c.layers = 3;
  c.share_pools = true;
  EXPECT_THROW(DecodeProblem{c}, std::invalid_argument);
}

VerifyConfig verify_pdl_config(VerifyVariant variant, bool pdl) {
  VerifyConfig c;
  c.variant = variant;
  c.batch = 64;
  c.draft_tokens = 4;
  c.accepted = parse_accepted("0.7");  // rows accept different counts, some none
  c.buffer_size = 4;                   // a due row, folded by verify, every step or two
  c.layers = 3;
  c.seed = 17;
  c.o_dtype = OutputDtype::fp32;
  c.pdl = pdl;
  return c;
}

StepResult run_verify_steps(const VerifyConfig& cfg, int steps) {
  VerifyProblem prob(cfg);
  return replay_steps(
      prob, steps, [](VerifyProblem& p, cudaStream_t s) { p.enqueue_verify_accept(s); },
      [&cfg](VerifyProblem& p, StepResult& r) {
        const size_t N = size_t(cfg.batch);
        for (int set = 0; set < p.sets(); ++set) {
          append_download(r.o, static_cast<const unsigned char*>(p.o(set)), p.o_bytes_per_set());
          append_download(r.states, static_cast<const unsigned char*>(p.state(set)), p.state_bytes_per_set());
          if (p.kvbuffer()) {
            const KVBufferPool pool = p.kvbuffer_verify_params(set).pool;
            append_download(r.deltas, pool.fp32_deltas(),
                            N * pool.capacity * cfg.shape.heads_v * cfg.shape.head_dim_v);
          }
        }
        if (p.kvbuffer()) append_download(r.fill, p.fill(0), N);
      });
}

void expect_verify_pdl_matches_plain(VerifyVariant variant) {
  const int steps = 9;  // two cycles of a 4-entry buffer and one step more (accepts and folds move the states)
  expect_same_bits(run_verify_steps(verify_pdl_config(variant, false), steps),
                   run_verify_steps(verify_pdl_config(variant, true), steps),
                   run_verify_steps(verify_pdl_config(variant, false), 0));
}

TEST(PdlLaunchGpu, RecurrentVerifyAcceptStepsMatchPlainLaunchesBitForBit) {
  KVB_REQUIRE_GPU();
  expect_verify_pdl_matches_plain(VerifyVariant::recurrent);
}

TEST(PdlLaunchGpu, KVBufferVerifyAcceptStepsMatchPlainLaunchesBitForBit) {
  KVB_REQUIRE_GPU();
  expect_verify_pdl_matches_plain(VerifyVariant::kvbuffer);
}

TEST(PdlLaunchGpu, VerifyCheckAgainstReferencePassesWithPdl) {
  KVB_REQUIRE_GPU();
  for (const VerifyVariant v : {VerifyVariant::recurrent, VerifyVariant::kvbuffer}) {
    CudaStream stream;
    VerifyProblem prob(verify_pdl_config(v, true));
    const VerifyCheck chk = check_verify_step(prob, stream.get());
    EXPECT_TRUE(chk.pass()) << chk.detail;
  }
}

TEST(PdlLaunchGpu, VerifyWithOnePoolSetOrTheRawFormIsRefused) {
  KVB_REQUIRE_GPU();
  VerifyConfig c = verify_pdl_config(VerifyVariant::kvbuffer, true);
  c.layers = 1;  // consecutive launches would read the checkpoints the previous one folds into
  EXPECT_THROW(VerifyProblem{c}, std::invalid_argument);
  c.layers = 3;
  c.share_pools = true;
  EXPECT_THROW(VerifyProblem{c}, std::invalid_argument);
  c.share_pools = false;
  c.form = BufferForm::raw;
  EXPECT_THROW(VerifyProblem{c}, std::invalid_argument);
}

}  // namespace
}  // namespace kvb
