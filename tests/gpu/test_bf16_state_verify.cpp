// GPU tests of KVBuffer verify with bf16 checkpoints (VerifyConfig::state_dtype, KVBufferPool::state_dtype) through
// the spec_verify workload (VerifyProblem) and its pre-timing check against the float64 reference (verify_check.h,
// DESIGN.md section 4): at the Qwen3-Next shape, B = 8 and 16, m = 1 .. 8, staggered positions (due and not-due rows),
// one round of the check (verify, accept, commit, then verify again, which folds the rows the commit made due),
// outputs poisoned before every launch. Further rounds would verify the same drafts again, which the buffer then
// holds repeatedly: there the drafts' deltas leave the fp32 bar with fp32 checkpoints as well, so such rounds would
// not test the state dtype. A due row's folded
// checkpoint is stored rounded to bf16 once and its drafts read that rounded value, so every stored element must be
// the reference's fold rounded the same way or one bf16 unit from it (Bf16StateUnits), nearly all equal; the values
// computed from a checkpoint both sides hold keep the fp32 bar. Padding rows among the staged kernel's: zeros, the
// other rows' outputs unchanged. The CUDA-core kernel refuses bf16 checkpoints naming
// state_dtype. With bf16 deltas (VerifyConfig::delta_dtype) the staged kernel stores the drafts' deltas rounded, each
// the reference's rounded delta or one bf16 unit from it; every other kernel refuses them naming delta_dtype. The
// workload tests skip without a CUDA device; the refusals need none.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "harness/workloads/verify_check.h"
#include "harness/workloads/verify_problem.h"
#include "core/tolerances.h"
#include "kernels/launch_util.h"
#include "tests/gpu/gpu_test_util.h"

namespace kvb {
namespace {

const GdnShape kQwen3Next{16, 32, 128, 128};

/// Verify of kvbuffer_verify with bf16 checkpoints: 32 rows, so that staggered positions cover 0 .. B - 1 twice and
/// some rows fill or overflow their buffer with each commit; two layers (two pool sets, set 0 checked).
VerifyConfig bf16_config(int buffer_size, int draft_tokens, VerifyKernel kernel, const char* accepted) {
  VerifyConfig c;
  c.variant = VerifyVariant::kvbuffer;
  c.shape = kQwen3Next;
  c.batch = 32;
  c.draft_tokens = draft_tokens;
  c.accepted = parse_accepted(accepted);
  c.buffer_size = buffer_size;
  c.layers = 2;
  c.seed = uint64_t(100 + 10 * buffer_size + draft_tokens);
  c.kernel = kernel;
  c.state_dtype = StateDtype::bf16;
  return c;
}

/// True when `x` holds a finite non-zero value and no NaN or infinity.
bool real_and_nonzero(const std::vector<double>& x) {
  bool nonzero = false;
  for (double v : x) {
    if (!std::isfinite(v)) return false;
    nonzero = nonzero || v != 0.0;
  }
  return nonzero;
}

/// `rounds` rounds of the pre-timing check on a bf16 problem, each followed by the commit of its second verify (so
/// that the next round starts from positions a model step would leave): every round passes with real values; over
/// the rounds some rows fold, and their stored checkpoints are the reference's rounded fold or one bf16 unit off.
void run_bf16_rounds(const VerifyConfig& cfg, int rounds) {
  const std::string what = "B=" + std::to_string(cfg.buffer_size) + " m=" + std::to_string(cfg.draft_tokens) + " " +
                           to_string(cfg.kernel);
  SCOPED_TRACE(what);
  VerifyProblem prob(cfg);
  ASSERT_EQ(validate(prob.kvbuffer_verify_params(0)), "");
  KVBufferVerifyLaunch launch;
  ASSERT_EQ(describe_kvbuffer_verify_launch(prob.kvbuffer_verify_params(0), launch), cudaSuccess);
  // automatic takes the staged kernel for bf16 checkpoints from 6 drafts at this batch (32 rows: too few items an
  // SM for the rule's every-draft-count half), the tensor-core kernel below; bf16 deltas always the staged kernel.
  const bool bf16_deltas = cfg.delta_dtype == StateDtype::bf16;
  const VerifyKernel automatic =
      cfg.draft_tokens >= 6 || bf16_deltas ? VerifyKernel::staged : VerifyKernel::tensor_cores;
  EXPECT_EQ(launch.kernel, cfg.kernel == VerifyKernel::automatic ? automatic : cfg.kernel);
  CudaStream stream;
  Bf16StateUnits units, deltas;
  int folded = 0, rows = 0;
  for (int round = 0; round < rounds; ++round) {
    const VerifyCheck chk = check_verify_step(prob, stream.get());
    ASSERT_TRUE(chk.pass()) << "round " << round << ": " << chk.detail;
    EXPECT_TRUE(chk.outputs_written) << "round " << round;
    EXPECT_GE(chk.rows, 2) << "round " << round;
    EXPECT_GT(chk.state_err, 0.0) << "round " << round;  // compared against float64: never exactly equal
    EXPECT_GT(chk.o_err, 0.0) << "round " << round;
    EXPECT_LE(chk.state_err, tol::state(StateDtype::bf16)) << "round " << round;
    // A folded row's outputs read its rounded fold, as its deltas do: 2^-7 (DESIGN.md section 4).
    EXPECT_LE(chk.o_err, tol::folded_bf16_verify_output(cfg.o_dtype)) << "round " << round;
    folded += chk.folded_rows;
    rows += chk.rows;
    units.equal += chk.folded_checkpoints.equal;
    units.one += chk.folded_checkpoints.one;
    units.more += chk.folded_checkpoints.more;
    deltas.equal += chk.stored_deltas.equal;
    deltas.one += chk.stored_deltas.one;
    deltas.more += chk.stored_deltas.more;
    // The second verify's outputs and the checked rows' checkpoints hold real values, not zeros.
    const size_t o_elems = prob.o_bytes_per_set() / (cfg.o_dtype == OutputDtype::bf16 ? 2 : 4);
    const std::vector<double> o = test::outputs(prob.o(0), o_elems, cfg.o_dtype);
    EXPECT_TRUE(real_and_nonzero(o)) << "round " << round;
    const size_t se = size_t(cfg.shape.state_elems());
    const int slot = prob.host_slots()[0];
    EXPECT_TRUE(real_and_nonzero(download_state(prob.state(0), StateDtype::bf16, size_t(slot) * se, se)))
        << "round " << round;
    // Commit the check's second verify: its folds and drafts become the next round's starting state.
    prob.enqueue_advance_positions(0, stream.get());
    KVB_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  }
  EXPECT_GT(folded, 0) << "no checked row folded";
  EXPECT_GT(units.compared(), 0u);
  EXPECT_EQ(units.more, 0u) << "stored checkpoint elements more than one bf16 unit off";
  EXPECT_GE(double(units.equal), 0.999 * double(units.compared()));
  if (bf16_deltas) {  // every draft's stored delta of the checked rows, rounded as the reference rounds it
    EXPECT_EQ(deltas.compared(), size_t(rows) * cfg.draft_tokens * cfg.shape.heads_v * cfg.shape.head_dim_v);
    EXPECT_EQ(deltas.more, 0u) << "stored deltas more than one bf16 unit off";
    EXPECT_GE(double(deltas.equal), 0.99 * double(deltas.compared()));
  } else {
    EXPECT_EQ(deltas.compared(), 0u);
  }
}

// Both kernels that take bf16 checkpoints at every draft count: the tensor-core kernel, and the staged one (forced,
// or as automatic's choice).
TEST(Bf16StateVerifyGpu, KVBufferVerifyStoresTheRoundedFoldAtB8) {
  KVB_REQUIRE_GPU();
  for (int m = 1; m <= kMaxDraftTokens; ++m) {
    run_bf16_rounds(bf16_config(8, m, VerifyKernel::tensor_cores, "all"), 1);
    run_bf16_rounds(bf16_config(8, m, m % 2 ? VerifyKernel::automatic : VerifyKernel::staged, "all"), 1);
  }
}

TEST(Bf16StateVerifyGpu, KVBufferVerifyStoresTheRoundedFoldAtB16) {
  KVB_REQUIRE_GPU();
  for (int m = 1; m <= kMaxDraftTokens; ++m) {
    const char* accepted = m <= 4 ? "all" : "0.7";
    run_bf16_rounds(bf16_config(16, m, VerifyKernel::tensor_cores, accepted), 1);
    run_bf16_rounds(bf16_config(16, m, m % 2 ? VerifyKernel::staged : VerifyKernel::automatic, accepted), 1);
  }
}

// bf16 deltas (VerifyConfig::delta_dtype): the staged kernel, forced or as automatic's only choice, stores the drafts'
// deltas rounded to bf16 and reads them back exactly; due and not-due rows, every draft count.
TEST(Bf16StateVerifyGpu, StagedKernelStoresRoundedBf16Deltas) {
  KVB_REQUIRE_GPU();
  for (int B : {8, 16})
    for (int m = 1; m <= kMaxDraftTokens; ++m) {
      VerifyConfig cfg = bf16_config(B, m, m % 2 ? VerifyKernel::automatic : VerifyKernel::staged,
                                     B == 16 && m > 4 ? "0.7" : "all");
      cfg.delta_dtype = StateDtype::bf16;
      run_bf16_rounds(cfg, 1);
    }
}

// fp32 outputs from bf16 checkpoints: the staged kernel stores either output dtype (a due row's drafts too).
TEST(Bf16StateVerifyGpu, StagedKernelWritesFp32Outputs) {
  KVB_REQUIRE_GPU();
  for (int m : {3, 8}) {
    VerifyConfig cfg = bf16_config(16, m, VerifyKernel::staged, "all");
    cfg.o_dtype = OutputDtype::fp32;
    run_bf16_rounds(cfg, 1);
  }
}

// Padding rows (slot -1) among the others in a staged launch of 2048 blocks (batch 64, batch order): zeros for them
// and, for every other row, the outputs a launch without padding writes from the same problem, bit for bit; no
// poison is left in either.
TEST(Bf16StateVerifyGpu, StagedKernelZeroesPaddingRowsAndLeavesTheOthersAlone) {
  KVB_REQUIRE_GPU();
  for (int m : {2, 8}) {
    SCOPED_TRACE("m=" + std::to_string(m));
    VerifyConfig cfg = bf16_config(16, m, VerifyKernel::staged, "all");
    cfg.batch = 64;
    VerifyProblem whole(cfg), padded(cfg);
    KVBufferVerifyParams pw = whole.kvbuffer_verify_params(0), pp = padded.kvbuffer_verify_params(0);
    pw.row_order = pp.row_order = nullptr;  // batch order: the slots below
    std::vector<int32_t> slots = padded.host_slots();
    const std::vector<int> pad_rows = {0, 5, 6, 31, 63};
    for (int r : pad_rows) slots[size_t(r)] = -1;
    const DeviceBuffer<int32_t> pad_slots = upload(slots);
    pp.slot = pad_slots.get();
    const size_t bytes = whole.o_bytes_per_set();
    KVB_CUDA_CHECK(cudaMemset(pw.o, 0xff, bytes));
    KVB_CUDA_CHECK(cudaMemset(pp.o, 0xff, bytes));
    ASSERT_EQ(launch_kvbuffer_verify(pw, nullptr), cudaSuccess);
    ASSERT_EQ(launch_kvbuffer_verify(pp, nullptr), cudaSuccess);
    KVB_CUDA_CHECK(cudaDeviceSynchronize());
    const size_t n = bytes / sizeof(bf16), per_row = n / size_t(cfg.batch);
    const std::vector<double> ow = test::outputs(pw.o, n, OutputDtype::bf16);
    const std::vector<double> op = test::outputs(pp.o, n, OutputDtype::bf16);
    ASSERT_TRUE(test::all_finite(ow)) << "poison left in the launch without padding";
    ASSERT_TRUE(test::all_finite(op)) << "poison left in the launch with padding";
    size_t nonzero = 0;
    for (size_t r = 0; r < size_t(cfg.batch); ++r) {
      const bool pad = slots[r] < 0;
      for (size_t i = r * per_row; i < (r + 1) * per_row; ++i) {
        ASSERT_EQ(op[i], pad ? 0.0 : ow[i]) << "row " << r << (pad ? " (padding)" : "") << ", element " << i % per_row;
        nonzero += ow[i] != 0.0;
      }
    }
    EXPECT_GT(nonzero, n / 2);
  }
}

// Where the pool holds more entries than the staged kernel stages (B = 32, m = 8: capacity 39), automatic takes the
// tensor-core kernel, which passes the same check.
TEST(Bf16StateVerifyGpu, AutomaticTakesTheTensorCoreKernelPastTheStagedKernelsCapacity) {
  KVB_REQUIRE_GPU();
  VerifyConfig cfg = bf16_config(32, 8, VerifyKernel::automatic, "all");
  VerifyProblem prob(cfg);
  KVBufferVerifyLaunch launch;
  ASSERT_EQ(describe_kvbuffer_verify_launch(prob.kvbuffer_verify_params(0), launch), cudaSuccess);
  EXPECT_EQ(launch.kernel, VerifyKernel::tensor_cores);
  CudaStream stream;
  const VerifyCheck chk = check_verify_step(prob, stream.get());
  EXPECT_TRUE(chk.pass()) << chk.detail;
}

TEST(Bf16StateVerifyGpu, CudaCoreKernelRefusesTheProblemsBf16Checkpoints) {
  KVB_REQUIRE_GPU();
  VerifyProblem prob(bf16_config(8, 4, VerifyKernel::cuda_cores, "all"));
  const std::string e = validate(prob.kvbuffer_verify_params(0));
  EXPECT_NE(e.find("state_dtype"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  EXPECT_EQ(launch_kvbuffer_verify(prob.kvbuffer_verify_params(0), nullptr), cudaErrorInvalidValue);
}

TEST(Bf16StateVerifyValidation, StagedKernelRefusesFp32CheckpointsAndLargeBuffersNamingTheField) {
  KVBufferVerifyParams p = test::unread_verify_params(kQwen3Next, 64, 4, 16, OutputDtype::bf16);
  p.kernel = VerifyKernel::staged;
  p.pool.state_dtype = StateDtype::fp32;
  std::string e = validate(p);
  EXPECT_NE(e.find("state_dtype = fp32"), std::string::npos) << e;
  EXPECT_NE(e.find("staged"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  p.pool.state_dtype = StateDtype::bf16;
  EXPECT_EQ(validate(p), "");
  p = test::unread_verify_params(kQwen3Next, 64, 4, 32, OutputDtype::bf16);
  p.kernel = VerifyKernel::staged;
  p.pool.state_dtype = StateDtype::bf16;
  e = validate(p);
  EXPECT_NE(e.find("pool.capacity = 35"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  p.kernel = VerifyKernel::automatic;  // the tensor-core kernel takes it
  EXPECT_EQ(validate(p), "");
  p = test::unread_verify_params(GdnShape{1 << 15, 1 << 17, 128, 128}, 1, 4, 16, OutputDtype::bf16);
  p.kernel = VerifyKernel::staged;
  p.pool.state_dtype = StateDtype::bf16;
  e = validate(p);
  EXPECT_NE(e.find("heads_v = 131072"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

TEST(Bf16StateVerifyValidation, OnlyTheStagedVerifyTakesBf16DeltasTheOthersNameDeltaDtype) {
  KVBufferVerifyParams p = test::unread_verify_params(kQwen3Next, 64, 4, 16, OutputDtype::bf16);
  p.pool.state_dtype = StateDtype::bf16;
  p.pool.delta_dtype = StateDtype::bf16;
  for (VerifyKernel k : {VerifyKernel::automatic, VerifyKernel::staged}) {
    p.kernel = k;
    EXPECT_EQ(validate(p), "") << to_string(k);
  }
  for (VerifyKernel k : {VerifyKernel::cuda_cores, VerifyKernel::tensor_cores}) {
    p.kernel = k;
    const std::string e = validate(p);
    EXPECT_NE(e.find("delta_dtype = bf16"), std::string::npos) << e;
    EXPECT_NE(e.find(to_string(k)), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  p = test::unread_verify_params(kQwen3Next, 64, 4, 32, OutputDtype::bf16);  // 35 entries: past the staged kernel
  p.pool.state_dtype = StateDtype::bf16;
  p.pool.delta_dtype = StateDtype::bf16;
  std::string e = validate(p);
  EXPECT_NE(e.find("delta_dtype = bf16"), std::string::npos) << e;
  EXPECT_NE(e.find("pool.capacity = 35"), std::string::npos) << e;
  // The kernels that read or write a pool's deltas outside verify.
  KVBufferPool pool = p.pool;
  pool.buffer_size = 16;
  pool.capacity = 16;
  EXPECT_NE(validate_fp32_deltas(pool, "kvbuffer flush").find("delta_dtype = bf16: kvbuffer flush"),
            std::string::npos);
  pool.delta_dtype = StateDtype::fp32;
  EXPECT_EQ(validate_fp32_deltas(pool, "kvbuffer flush"), "");
}

TEST(Bf16StateVerifyValidation, CudaCoreKernelRefusesBf16CheckpointsNamingStateDtype) {
  for (int m : {1, 4, 8}) {
    KVBufferVerifyParams p = test::unread_verify_params(kQwen3Next, 64, m, 16, OutputDtype::bf16);
    p.pool.state_dtype = StateDtype::bf16;
    p.kernel = VerifyKernel::cuda_cores;
    const std::string e = validate(p);
    EXPECT_NE(e.find("state_dtype"), std::string::npos) << "m=" << m << ": " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace kvb
