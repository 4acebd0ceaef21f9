// GPU tests of speculative verification against the float64 reference: KVBuffer verify (every draft's output and
// entry in the buffer), its accept for every accepted count (the commit; rows left due, B entries or more, folded by
// their next verify), decoding after accept, recurrent verify (outputs and intermediate states) and its accept,
// padding rows, and the golden draft4 case. Every KVBuffer verify test runs each verify kernel that takes its launch
// (test::verify_kernels_for), with outputs and unused pool entries poisoned (NaN) before each launch.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "harness/workloads/problem_setup.h"
#include "kernels/launch_util.h"
#include "reference/golden_case.h"
#include "reference/qwen3_next_inputs.h"
#include "core/tolerances.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/kvbuffer_rig.h"

namespace kvb {
namespace {

using test::DeviceTokens;
using test::KVBufferRig;
using test::verify_accept_round;

GdnShape small_shape() { return GdnShape{2, 4, 128, 64}; }

/// A round's launch: the kernel, outputs in bf16 when `bf16`, else fp32.
test::RoundLaunch round_launch(VerifyKernel k, bool bf16) {
  test::RoundLaunch launch;
  launch.kernel = k;
  launch.o_dtype = bf16 ? OutputDtype::bf16 : OutputDtype::fp32;
  return launch;
}

TEST(KVBufferVerifyGpu, EveryDraftCountAndAcceptedCountMatchesReference) {
  KVB_REQUIRE_GPU();
  int due_rows = 0;
  for (int B : {4, 8}) {
    for (int m = 1; m <= kMaxDraftTokens; ++m) {
      for (const VerifyKernel k :
           test::verify_kernels_for(test::unread_verify_params(small_shape(), 5, m, B, OutputDtype::fp32))) {
        SCOPED_TRACE(test::verify_case(k, B, m));
        KVBufferRig rig(small_shape(), 4, B, 1000 + 10 * B + m, m);
        rig.decode_to_positions({0, 1, B / 2, B - 1});
        ASSERT_LE(rig.state_err(), tol::kStateFp32);
        // Accepted counts 0..m spread over the rows; one padding row; outputs in fp32 and bf16 by turns.
        for (int a0 = 0; a0 <= m; ++a0) {
          const std::vector<int32_t> slots = {2, -1, 0, 3, 1};
          const std::vector<int32_t> acc = {a0, m, (a0 + 1) % (m + 1), m - a0, (a0 + 2) % (m + 1)};
          due_rows += rig.due_slots();
          verify_accept_round(rig, slots, m, acc, round_launch(k, a0 % 2 == 1));
        }
        // Decoding continues identically after the accepts.
        for (int step = 0; step < 3; ++step) rig.decode({0, 1, 2, 3});
        EXPECT_LE(rig.state_err(), tol::kStateFp32) << "decode after accept";
      }
    }
  }
  EXPECT_GT(due_rows, 0) << "some verify must fold a due row";
}

// Qwen3-Next's batches verify whole value heads of 128 columns (eight warps, a 64 KB checkpoint slice; kernels/
// kvbuffer_verify.cu) once batch x HV reaches four blocks an SM; the other tests launch 64-column blocks. Draft
// counts held to three blocks an SM (3, 4) and to two (8); rows at every buffer position, so that the later rounds
// fold due rows.
TEST(KVBufferVerifyGpu, WholeHeadBlocksMatchReferenceWithFlushes) {
  KVB_REQUIRE_GPU();
  const GdnShape s{2, 34, 128, 128};
  const int B = 4, rows = test::whole_head_rows(s);
  std::vector<int32_t> every(rows);
  for (int r = 0; r < rows; ++r) every[r] = r;
  for (const int m : {3, 4, 8}) {
    KVBufferVerifyParams v = test::unread_verify_params(s, rows, m, B, OutputDtype::fp32);
    for (const VerifyKernel k : test::verify_kernels_for(v)) {
      SCOPED_TRACE(test::verify_case(k, B, m));
      // The CUDA-core launch these rows take stages a whole value head's 128 x 128 fp32 slice.
      v.kernel = k;
      KVBufferVerifyLaunch d;
      ASSERT_EQ(describe_kvbuffer_verify_launch(v, d), cudaSuccess);
      ASSERT_EQ(d.kernel, k);
      if (k == VerifyKernel::cuda_cores) {
        ASSERT_GE(d.smem_bytes, size_t(128) * 128 * sizeof(float)) << "not whole heads";
      }
      KVBufferRig rig(s, rows, B, 900 + m, m);
      std::vector<int> positions(rows);  // row r at buffer position r % B
      for (int r = 0; r < rows; ++r) positions[r] = r % B;
      rig.decode_to_positions(positions);
      int due_rows = 0;
      for (int round = 0; round < 3; ++round) {
        std::vector<int32_t> acc(rows);
        for (int r = 0; r < rows; ++r) acc[r] = (r + round) % (m + 1);
        due_rows += rig.due_slots();
        verify_accept_round(rig, every, m, acc, round_launch(k, round == 1));
      }
      EXPECT_GT(due_rows, 0) << "some verify must fold a due row";
    }
  }
}

// The tensor-core kernel at the Qwen3-Next shape with few rows (small enough for compute-sanitizer's racecheck):
// rows at every buffer position, every draft accepted in the first round (due rows, folded by the second), a padding
// row, bf16 and fp32 outputs by turns.
TEST(KVBufferVerifyGpu, TensorCoresFoldDueRowsAtQwen3NextShape) {
  KVB_REQUIRE_GPU();
  const GdnShape s{16, 32, 128, 128};
  const int B = 4;
  for (const int m : {1, 4, 8}) {
    SCOPED_TRACE(test::verify_case(VerifyKernel::tensor_cores, B, m));
    ASSERT_EQ(validate_tensor_core_verify(test::unread_verify_params(s, 3, m, B, OutputDtype::fp32)), "");
    KVBufferRig rig(s, 3, B, 4100 + m, m);
    rig.decode_to_positions({0, 1, B - 1});
    for (int round = 0; round < 3; ++round)
      verify_accept_round(rig, {2, -1, 0, 1}, m, {m, 0, m, round % (m + 1)},
                          round_launch(VerifyKernel::tensor_cores, round % 2 == 1));
    EXPECT_LE(rig.state_err(), tol::kStateFp32) << "states after the rounds";
  }
}

// Value heads split into two column slices (V = 128, 64 columns a block): four blocks of a key group read the keys
// a due row's drafts replace, and the last of them to finish writes the drafts' keys and log-decays.
TEST(KVBufferVerifyGpu, SlicedHeadsWriteTheirEntriesAfterTheWholeGroupHasRead) {
  KVB_REQUIRE_GPU();
  const int B = 4, m = 3;
  const GdnShape s{2, 4, 64, 128};
  for (const VerifyKernel k : test::verify_kernels_for(test::unread_verify_params(s, 4, m, B, OutputDtype::fp32))) {
    SCOPED_TRACE(test::verify_case(k, B, m));
    KVBufferRig rig(s, 4, B, 77, m);
    for (int step = 0; step < B - 1; ++step) rig.decode({0, step < 1 ? -1 : 1, step < 2 ? -1 : 2, 3});
    ASSERT_LE(rig.state_err(), tol::kStateFp32);
    for (int round = 0; round < 4; ++round)
      verify_accept_round(rig, {3, 1, 0, 2}, m, {m, 2, m - round % 2, 1}, round_launch(k, round % 2 == 1));
    for (int step = 0; step < 2; ++step) rig.decode({0, 1, 2, 3});
    EXPECT_LE(rig.state_err(), tol::kStateFp32) << "decode after the rounds";
  }
}

// Due rows with long buffers at the edge shapes of the verify fold (kernels/kvbuffer_verify.cu, fold_verify_tile):
// K = 32 frees only 32 tile rows, so 43 entries take the fold's path that reads every delta from the pool; K = 256
// folds in four rounds of bands from 43 staged entries; V = 100 leaves the second 64-column slice 36 live columns, so
// the fold's masked columns are cut inside one warp's.
TEST(KVBufferVerifyGpu, LongBuffersFoldAtTheEdgeHeadSizes) {
  KVB_REQUIRE_GPU();
  const int B = 40, m = 4;
  for (const auto& [K, V] : {std::pair{32, 64}, std::pair{256, 64}, std::pair{64, 100}}) {
    const GdnShape s{2, 4, K, V};
    for (const VerifyKernel k : test::verify_kernels_for(test::unread_verify_params(s, 3, m, B, OutputDtype::fp32))) {
      SCOPED_TRACE(test::verify_case(k, B, m) + fmt::format(" K={} V={}", K, V));
      KVBufferRig rig(s, 3, B, 500 + K + V, m);
      rig.decode_to_positions({B - 1, B - 2, 5});
      ASSERT_LE(rig.state_err(), tol::kStateFp32);
      // Every draft accepted: slots 0 and 1 reach B - 1 + m and B - 2 + m entries, due; the next round folds them.
      verify_accept_round(rig, {0, 1, 2}, m, {m, m, 1}, round_launch(k, false));
      const std::vector<int32_t> fill = download(rig.fill.get(), rig.S);
      ASSERT_GE(fill[0], B);
      ASSERT_GE(fill[1], B);
      verify_accept_round(rig, {1, 2, 0}, m, {2, m, 0}, round_launch(k, true));
      for (int step = 0; step < 2; ++step) rig.decode({0, 1, 2});
      EXPECT_LE(rig.state_err(), tol::kStateFp32) << "decode after the folds";
    }
  }
}

/// Recurrent verify and accept of N rows over S = N slots (row 1 padding, the others in reverse slot order, slot 0
/// never listed, the accepted counts cycling down from m through 0) against the reference, for each draft count in
/// ms: outputs for every draft (fp32 at odd m, bf16 at even m), every intermediate state, the pool untouched by
/// verify, and the state after accept. Outputs and scratch start as NaN: every element verify must write is checked,
/// and slot 0's scratch must stay NaN and its state unchanged.
void check_recurrent_verify(const GdnShape& s, int N, const std::vector<int>& ms) {
  const int S = N, HV = s.heads_v;
  const size_t se = size_t(s.state_elems()), vv = size_t(HV) * s.head_dim_v;
  for (const int m : ms) {
    const OutputDtype odt = m % 2 == 0 ? OutputDtype::bf16 : OutputDtype::fp32;
    SCOPED_TRACE(fmt::format("N={} m={} {} outputs", N, m, to_string(odt)));
    ref::Qwen3NextInputs gen(s, 77 + m + 100 * N);
    const ref::GateParams gp = gen.gate_params();
    std::vector<std::vector<double>> st(S);
    std::vector<float> pool_h;
    for (auto& x : st) {
      x = gen.state();
      pool_h.insert(pool_h.end(), x.begin(), x.end());
    }
    DeviceBuffer<float> pool = upload(pool_h), scratch(size_t(S) * m * se);
    test::poison(scratch);
    std::vector<int32_t> slots(N), acc(N);
    for (int r = 0; r < N; ++r) {
      slots[r] = r == 1 ? -1 : S - 1 - (r < 1 ? r : r - 1);  // every slot but 0 once, in reverse order
      acc[r] = ((m - r) % (m + 1) + m + 1) % (m + 1);         // m, m - 2, ...: all and none among the first rows
    }
    const auto toks = gen.tokens(N * m);
    const DeviceTokens dt(toks, gp);
    const DeviceBuffer<int32_t> sl = upload(slots), ac = upload(acc);
    DeviceBuffer<unsigned char> o(size_t(N) * m * vv * (odt == OutputDtype::bf16 ? sizeof(bf16) : sizeof(float)));
    test::poison(o);
    auto p = token_launch<RecurrentVerifyParams>(s, N, dt.inputs(), sl.get(), o.get(), odt);
    p.in.tokens = m;
    p.state = pool.get();
    p.num_slots = S;
    p.scratch = scratch.get();
    ASSERT_EQ(validate(p), "");
    KVB_CUDA_CHECK(launch_recurrent_verify(p, nullptr));
    EXPECT_EQ(download(pool.get(), pool.size()), pool_h) << "verify must not touch the pool";
    const auto o_got = test::outputs(o.get(), size_t(N) * m * vv, odt);
    const auto sc = download(scratch.get(), scratch.size());
    EXPECT_TRUE(std::all_of(sc.begin(), sc.begin() + m * se, [](float x) { return std::isnan(x); }))
        << "verify wrote the scratch of slot 0, which no row lists";
    std::vector<std::vector<double>> inter(S);
    for (int r = 0; r < N; ++r) {
      const std::vector<double> og(o_got.begin() + r * m * vv, o_got.begin() + (r + 1) * m * vv);
      if (slots[r] < 0) {
        EXPECT_TRUE(std::all_of(og.begin(), og.end(), [](double x) { return x == 0; })) << "padding row " << r;
        continue;
      }
      std::vector<ref::TokenPrepared> drafts;
      for (int i = 0; i < m; ++i) drafts.push_back(ref::prepare_token(s, toks[r * m + i], gp));
      std::vector<double> o_ref, states;
      ref::recurrent_verify(s, drafts, st[slots[r]], o_ref, states);
      EXPECT_LE(ref::max_rel_err(o_ref, og, int64_t(m) * HV), tol::output(odt)) << "outputs of row " << r;
      const std::vector<double> sg(sc.begin() + slots[r] * m * se, sc.begin() + (slots[r] + 1) * m * se);
      EXPECT_LE(ref::max_rel_err(states, sg, int64_t(m) * HV), tol::kStateFp32) << "intermediate states of row " << r;
      inter[slots[r]] = states;
    }
    RecurrentAcceptParams ap;
    ap.shape = s;
    ap.batch = N;
    ap.draft_tokens = m;
    ap.state = pool.get();
    ap.scratch = scratch.get();
    ap.num_slots = S;
    ap.slot = sl.get();
    ap.accepted = ac.get();
    ASSERT_EQ(validate(ap), "");
    KVB_CUDA_CHECK(launch_recurrent_accept(ap, nullptr));
    const auto after = download(pool.get(), pool.size());
    EXPECT_TRUE(std::equal(after.begin(), after.begin() + se, pool_h.begin())) << "accept changed slot 0's state";
    for (int r = 0; r < N; ++r) {
      if (slots[r] < 0) continue;
      const int a = acc[r];
      const std::vector<double> want =
          a == 0 ? st[slots[r]] : std::vector<double>(inter[slots[r]].begin() + (a - 1) * se,
                                                      inter[slots[r]].begin() + a * se);
      const std::vector<double> got(after.begin() + slots[r] * se, after.begin() + (slots[r] + 1) * se);
      EXPECT_LE(ref::max_rel_err(want, got, HV), tol::kStateFp32) << "accept a=" << a << " row " << r;
    }
  }
}

// A batch too small to fill the GPU (column warps, 32-column blocks), every draft count.
TEST(RecurrentVerifyGpu, OutputsIntermediateStatesAndAcceptMatchReference) {
  KVB_REQUIRE_GPU();
  check_recurrent_verify(small_shape(), 4, {1, 2, 3, 4, 5, 6, 7, 8});
}

// A batch that fills the GPU (the wide layout; its 128-column blocks are half masked at V = 64), at 1, 4 and 8 drafts.
TEST(RecurrentVerifyGpu, WideBatchMatchesReference) {
  KVB_REQUIRE_GPU();
  check_recurrent_verify(small_shape(), 4 * sm_count() / small_shape().heads_v + 3, {1, 4, 8});
}

TEST(VerifyGpu, GoldenDraft4) {
  KVB_REQUIRE_GPU();
  const ref::GoldenCase c = ref::load_golden_case(std::string(KVB_TEST_DATA_DIR) + "/golden/draft4.gdn");
  const GdnShape& s = c.shape;
  const int N = c.N, m = c.T, HV = s.heads_v;
  const size_t se = size_t(s.state_elems()), vv = size_t(HV) * s.head_dim_v;
  std::vector<float> init(c.tensor("initial_state").values.begin(), c.tensor("initial_state").values.end());
  auto bf = [](const ref::GoldenTensor& t) {
    std::vector<bf16> r(t.values.size());
    for (size_t i = 0; i < r.size(); ++i) r[i] = __float2bfloat16_rn(float(t.values[i]));
    return r;
  };
  auto f32 = [](const ref::GoldenTensor& t) { return std::vector<float>(t.values.begin(), t.values.end()); };
  const DeviceBuffer<bf16> q = upload(bf(c.tensor("q"))), k = upload(bf(c.tensor("k"))), v = upload(bf(c.tensor("v")));
  const DeviceBuffer<float> g = upload(f32(c.tensor("g"))), beta = upload(f32(c.tensor("beta")));
  TokenInputs in;
  in.q = q.get();
  in.k = k.get();
  in.v = v.get();
  in.g = g.get();
  in.beta = beta.get();
  in.scale = float(c.scale);
  in.tokens = m;
  std::vector<int32_t> slot_h(N);
  for (int i = 0; i < N; ++i) slot_h[i] = i;
  const DeviceBuffer<int32_t> slot = upload(slot_h);
  // Recurrent verify: outputs and every intermediate state.
  {
    DeviceBuffer<float> pool = upload(init), scratch(size_t(N) * m * se), o(size_t(N) * m * vv);
    auto p = token_launch<RecurrentVerifyParams>(s, N, in, slot.get(), o.get(), OutputDtype::fp32);
    p.state = pool.get();
    p.num_slots = N;
    p.scratch = scratch.get();
    KVB_CUDA_CHECK(launch_recurrent_verify(p, nullptr));
    EXPECT_LE(ref::max_rel_err(c.tensor("o").values, test::to_double(download(o.get(), o.size())), int64_t(N) * m * HV),
              tol::kOutputFp32);
    EXPECT_LE(ref::max_rel_err(c.tensor("states").values, test::to_double(download(scratch.get(), scratch.size())),
                               int64_t(N) * m * HV),
              tol::kStateFp32);
  }
  // KVBuffer verify from an empty buffer, then accept all four drafts with B = 4: the commit leaves every row due
  // (4 entries), so the next verify folds them into the checkpoint, which must then equal the final state. Outputs
  // and the pool's entries start as NaN.
  const int B = 4, cap = B - 1 + m;
  for (const VerifyKernel k : test::verify_kernels_for(test::unread_verify_params(s, N, m, B, OutputDtype::fp32))) {
    SCOPED_TRACE(test::verify_case(k, B, m));
    DeviceBuffer<float> ck = upload(init), deltas(size_t(N) * cap * vv), ld(size_t(N) * cap * HV),
                        o(size_t(N) * m * vv);
    DeviceBuffer<bf16> keys(size_t(N) * cap * s.heads_qk * s.head_dim_k);
    test::poison(deltas);
    test::poison(ld);
    test::poison(keys);
    test::poison(o);
    DeviceBuffer<int32_t> fill = upload(std::vector<int32_t>(N, 0));
    DeviceBuffer<int32_t> arrivals = upload(std::vector<int32_t>(size_t(N) * s.heads_qk, 0));
    const KVBufferPool pool{ck.get(), keys.get(), deltas.get(), ld.get(), fill.get(), N, cap, B};
    auto p = token_launch<KVBufferVerifyParams>(s, N, in, slot.get(), o.get(), OutputDtype::fp32);
    p.pool = pool;
    p.group_arrivals = arrivals.get();
    p.kernel = k;
    KVB_CUDA_CHECK(launch_kvbuffer_verify(p, nullptr));
    EXPECT_LE(ref::max_rel_err(c.tensor("o").values, test::to_double(download(o.get(), o.size())), int64_t(N) * m * HV),
              test::verify_output_tol(k, OutputDtype::fp32));
    const DeviceBuffer<int32_t> all = upload(std::vector<int32_t>(N, m));
    KVB_CUDA_CHECK(launch_kvbuffer_commit_accepted(fill.get(), slot.get(), all.get(), N, B, m, nullptr));
    EXPECT_EQ(download(fill.get(), N), std::vector<int32_t>(N, m));
    KVB_CUDA_CHECK(launch_kvbuffer_verify(p, nullptr));  // the same drafts again: only the fold matters here
    EXPECT_LE(ref::max_rel_err(c.tensor("final_state").values, test::to_double(download(ck.get(), ck.size())),
                               int64_t(N) * HV),
              tol::kStateFp32);
    const DeviceBuffer<int32_t> none = upload(std::vector<int32_t>(N, 0));
    KVB_CUDA_CHECK(launch_kvbuffer_commit_accepted(fill.get(), slot.get(), none.get(), N, B, m, nullptr));
    EXPECT_EQ(download(fill.get(), N), std::vector<int32_t>(N, 0)) << "a due row starts again at 0";
  }
}

TEST(VerifyValidation, BadParamsAreRejectedWithReasons) {
  KVBufferVerifyParams p;
  p.shape = small_shape();
  p.batch = 1;
  EXPECT_NE(validate(p), "");
  // A pool too small for the drafts after B - 1 entries is refused, naming the capacity.
  KVBufferPool pool;
  pool.buffer_size = 8;
  pool.capacity = 10;
  EXPECT_EQ(validate_verify_capacity(pool, 3), "");
  EXPECT_NE(validate_verify_capacity(pool, 4).find("pool.capacity = 10"), std::string::npos);
  pool.buffer_size = 250;
  pool.capacity = 256;
  EXPECT_NE(validate_verify_capacity(pool, 8).find("buffer_size - 1 + draft_tokens"), std::string::npos);
  // A pool whose checkpoint rows differ from its buffer rows (stateless requests) is refused: verify indexes
  // checkpoints by slot.
  KVBufferVerifyParams v = test::unread_verify_params(small_shape(), 1, 2, 4, OutputDtype::fp32);
  EXPECT_EQ(validate(v), "");
  v.pool.num_checkpoints = 2;
  EXPECT_NE(validate(v).find("num_checkpoints"), std::string::npos);
  EXPECT_EQ(launch_kvbuffer_verify(v, nullptr), cudaErrorInvalidValue);
  // A forced kernel is refused with that kernel's own reason where it cannot take the launch (test::verify_kernels_for
  // asks validate_tensor_core_verify); the tensor-core kernel takes head_dim_k 128 only.
  v.pool.num_checkpoints = 0;
  v.kernel = VerifyKernel::tensor_cores;
  EXPECT_EQ(validate(v), validate_tensor_core_verify(v));
  v.shape = GdnShape{2, 4, 64, 64};
  EXPECT_NE(validate(v), "");
  RecurrentVerifyParams r;
  r.shape = small_shape();
  r.batch = 2;
  r.in = test::unread_token_inputs(9);
  EXPECT_NE(validate(r).find("draft_tokens"), std::string::npos);
  EXPECT_EQ(launch_recurrent_verify(r, nullptr), cudaErrorInvalidValue);
}


// The launcher picks among keys from the pool, keys in shared memory and keys in shared memory with packed draft rows
// by a size model (no kernel loaded). Registers can hold a kernel to fewer blocks than its shared memory allows, so
// the prediction is an upper bound; where the launcher may pack (whole value heads, up to 4 drafts, registers held
// to three blocks) it must be exact, since the choice there turns on a few bytes.
TEST(VerifyLaunchGpu, PredictedBlocksPerSmMatchTheOccupancyOfTheKernelChosen) {
  KVB_REQUIRE_GPU();
  const GdnShape shape{16, 32, 128, 128};  // Qwen3-Next TP1
  bool saw_packed = false, saw_pool_keys = false, saw_smem_keys = false;
  for (const int batch : {16, 256}) {  // 64-column blocks below 4 blocks per SM, whole value heads above
    for (int m = 1; m <= kMaxDraftTokens; ++m) {
      for (const int B : {2, 4, 8, 12, 13, 16, 24, 32, 64, 128}) {
        KVBufferVerifyParams v = test::unread_verify_params(shape, batch, m, B, OutputDtype::fp32);
        v.kernel = VerifyKernel::cuda_cores;  // the variants below are the CUDA-core kernel's
        ASSERT_EQ(validate(v), "") << "batch " << batch << ", m " << m << ", B " << B;
        KVBufferVerifyLaunch d;
        ASSERT_EQ(describe_kvbuffer_verify_launch(v, d), cudaSuccess);
        const std::string where = fmt::format("batch {}, m {}, B {}: keys in shared memory {}, packed {}, {} bytes",
                                              batch, m, B, d.smem_keys, d.packed, d.smem_bytes);
        EXPECT_GE(d.predicted_blocks_per_sm, d.resident_blocks_per_sm) << where;
        if (batch == 256 && m <= 4) {
          EXPECT_EQ(d.predicted_blocks_per_sm, d.resident_blocks_per_sm) << where;
        }
        EXPECT_GE(d.resident_blocks_per_sm, 1);
        saw_packed |= d.packed;
        saw_smem_keys |= d.smem_keys;
        saw_pool_keys |= !d.smem_keys && !d.packed;
      }
    }
  }
  EXPECT_TRUE(saw_packed && saw_smem_keys && saw_pool_keys) << "every kind of launch should be met";
}

// automatic runs the tensor-core kernel where it was measured the faster: batch 64 and 256 of Qwen3-Next (HV = 32),
// every draft count; smaller batches stay on CUDA cores. The batches are read against a GPU of 64 to
// 136 SMs (an H100 or H200: batch 64 is 15 to 32 items an SM); the tensor-core kernel's predicted blocks per SM bound
// its occupancy.
TEST(VerifyLaunchGpu, AutomaticTakesTensorCoresWhereMeasuredFaster) {
  KVB_REQUIRE_GPU();
  const bool sized = sm_count() >= 64 && sm_count() <= 136;  // elsewhere only the occupancy is checked
  const GdnShape shape{16, 32, 128, 128};  // Qwen3-Next TP1
  for (const int batch : {16, 64, 256}) {
    for (int m = 1; m <= kMaxDraftTokens; ++m) {
      KVBufferVerifyParams v = test::unread_verify_params(shape, batch, m, 16, OutputDtype::bf16);
      ASSERT_EQ(v.kernel, VerifyKernel::automatic);
      KVBufferVerifyLaunch d;
      ASSERT_EQ(describe_kvbuffer_verify_launch(v, d), cudaSuccess);
      const bool tc = batch >= 64;
      if (sized) {
        EXPECT_EQ(d.kernel, tc ? VerifyKernel::tensor_cores : VerifyKernel::cuda_cores) << "batch " << batch
                                                                                        << ", m " << m;
      }
      // Blocks a row: the tensor-core kernel's take two value heads; the CUDA-core kernel's half a head below 4
      // (row, value head) items an SM, a whole one from there.
      const int cuda_core_blocks = batch * shape.heads_v < 4 * sm_count() ? 2 * shape.heads_v : shape.heads_v;
      EXPECT_EQ(d.blocks_per_row, d.kernel == VerifyKernel::tensor_cores ? shape.heads_v / 2 : cuda_core_blocks)
          << "batch " << batch << ", m " << m;
      if (d.kernel == VerifyKernel::tensor_cores) {
        EXPECT_GE(d.predicted_blocks_per_sm, d.resident_blocks_per_sm) << "batch " << batch << ", m " << m;
        EXPECT_GE(d.resident_blocks_per_sm, 1);
      }
    }
  }
  // Head dims the tensor-core kernel does not take stay on CUDA cores.
  KVBufferVerifyParams v = test::unread_verify_params(GdnShape{16, 32, 64, 128}, 256, 4, 16, OutputDtype::bf16);
  KVBufferVerifyLaunch d;
  ASSERT_EQ(describe_kvbuffer_verify_launch(v, d), cudaSuccess);
  EXPECT_EQ(d.kernel, VerifyKernel::cuda_cores);
}

}  // namespace
}  // namespace kvb
