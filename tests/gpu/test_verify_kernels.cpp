// GPU tests of speculative verification against the float64 reference: KVBuffer verify (every draft's output and
// entry in the buffer), its accept for every accepted count (the commit; rows left due, B entries or more, folded by
// their next verify), decoding after accept, recurrent verify (outputs and intermediate states) and its accept,
// padding rows, and the golden draft4 case.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "harness/workloads/problem_setup.h"
#include "kernels/launch_util.h"
#include "reference/golden_case.h"
#include "reference/qwen3_next_inputs.h"
#include "core/tolerances.h"
#include "tests/gpu/gpu_test_util.h"

namespace kvb {
namespace {

using test::DeviceTokens;

GdnShape small_shape() { return GdnShape{2, 4, 128, 64}; }

/// A KVBuffer pool on the device with its float64 twin: slots brought to given buffer positions by real decode steps.
struct KVBufferRig {
  GdnShape s;
  int S, B;
  ref::Qwen3NextInputs gen;
  ref::GateParams gp;
  std::vector<ref::KVBufferSlot> ref_slot;
  DeviceBuffer<float> ck, deltas, log_decay;
  DeviceBuffer<bf16> keys;
  DeviceBuffer<int32_t> fill;

  int cap;  ///< entries per slot: B - 1 + the most drafts verified (capacity rule of KVBufferVerifyParams)
  DeviceBuffer<int32_t> arrivals;

  KVBufferRig(const GdnShape& shape, int slots, int buffer_size, uint64_t seed, int max_drafts)
      : s(shape), S(slots), B(buffer_size), gen(shape, seed), gp(gen.gate_params()), ref_slot(slots),
        cap(buffer_size - 1 + max_drafts) {
    std::vector<float> h;
    for (auto& r : ref_slot) {
      r.checkpoint = gen.state();
      h.insert(h.end(), r.checkpoint.begin(), r.checkpoint.end());
    }
    ck = upload(h);
    keys = DeviceBuffer<bf16>(size_t(S) * cap * s.heads_qk * s.head_dim_k);
    deltas = DeviceBuffer<float>(size_t(S) * cap * s.heads_v * s.head_dim_v);
    log_decay = DeviceBuffer<float>(size_t(S) * cap * s.heads_v);
    fill = upload(std::vector<int32_t>(S, 0));
    arrivals = upload(std::vector<int32_t>(size_t(S + 1) * s.heads_qk, 0));  // up to S + 1 rows (one padding)
  }
  KVBufferPool pool() const {
    return KVBufferPool{ck.get(), keys.get(), deltas.get(), log_decay.get(), fill.get(), S, cap, B};
  }
  /// Decodes one token on every slot listed (row r -> slots[r], -1 skips), on the device and in the reference.
  void decode(const std::vector<int32_t>& slots) {
    const int N = int(slots.size());
    const auto toks = gen.tokens(N);
    const DeviceTokens dt(toks, gp);
    const DeviceBuffer<int32_t> sl = upload(slots);
    DeviceBuffer<float> o(size_t(N) * s.heads_v * s.head_dim_v);
    auto p = token_launch<KVBufferDecodeParams>(s, N, dt.inputs(), sl.get(), o.get(), OutputDtype::fp32);
    p.pool = pool();
    KVB_CUDA_CHECK(launch_kvbuffer_decode(p, nullptr));
    KVB_CUDA_CHECK(launch_kvbuffer_advance(fill.get(), sl.get(), N, B, nullptr));
    std::vector<double> o_ref;
    for (int r = 0; r < N; ++r)
      if (slots[r] >= 0) ref::kvbuffer_decode(s, B, ref::prepare_token(s, toks[r], gp), ref_slot[slots[r]], o_ref);
  }
  /// Brings slot i (row i) from an empty buffer to buffer position positions[i] (at most B - 1): B - 1 decode steps,
  /// row i padding once its slot has reached its position.
  void decode_to_positions(const std::vector<int>& positions) {
    std::vector<int32_t> slots(positions.size());
    for (int step = 0; step < B - 1; ++step) {
      for (size_t i = 0; i < positions.size(); ++i) slots[i] = step < positions[i] ? int32_t(i) : -1;
      decode(slots);
    }
  }
  /// Slots whose buffer is due (fill >= B): the next verify folds them.
  int due_slots() const {
    int due = 0;
    for (int32_t f : download(fill.get(), S)) due += f >= B;
    return due;
  }
  /// Largest per-head error of every slot's materialised state against the reference.
  double state_err() const {
    const auto c = download(ck.get(), ck.size());
    const auto d = download(deltas.get(), deltas.size());
    const auto g = download(log_decay.get(), log_decay.size());
    const auto kraw = download(keys.get(), keys.size());
    const auto f = download(fill.get(), S);
    const size_t se = size_t(s.state_elems()), qk = size_t(s.heads_qk) * s.head_dim_k,
                 vv = size_t(s.heads_v) * s.head_dim_v;
    double err = 0;
    for (int slot = 0; slot < S; ++slot) {
      EXPECT_EQ(f[slot], int(ref_slot[slot].entries.size())) << "slot " << slot;
      ref::KVBufferSlot got;
      got.checkpoint.assign(c.begin() + slot * se, c.begin() + (slot + 1) * se);
      for (int j = 0; j < f[slot]; ++j) {
        const size_t e = size_t(slot) * cap + j;
        ref::BufferEntry be;
        for (int hk = 0; hk < s.heads_qk; ++hk) {
          std::vector<double> raw(s.head_dim_k);
          for (int i = 0; i < s.head_dim_k; ++i) raw[i] = __bfloat162float(kraw[e * qk + hk * s.head_dim_k + i]);
          const auto kh = ref::l2_normalize(raw.data(), s.head_dim_k);
          be.k_hat.insert(be.k_hat.end(), kh.begin(), kh.end());
        }
        be.u.assign(d.begin() + e * vv, d.begin() + (e + 1) * vv);
        be.g.assign(g.begin() + e * s.heads_v, g.begin() + (e + 1) * s.heads_v);
        got.entries.push_back(be);
      }
      err = std::max(err, ref::max_rel_err(ref::kvbuffer_state(s, ref_slot[slot]), ref::kvbuffer_state(s, got),
                                           s.heads_v));
    }
    return err;
  }
};

/// Verify m drafts for `slots` and check outputs and the drafts' entries in the buffer; then accept `accepted` (the
/// commit) and check every state.
void verify_accept_round(KVBufferRig& rig, const std::vector<int32_t>& slots, int m, const std::vector<int32_t>& acc,
                         VerifyKernel kernel = VerifyKernel::automatic) {
  const GdnShape& s = rig.s;
  const int N = int(slots.size()), HV = s.heads_v;
  const size_t vv = size_t(HV) * s.head_dim_v;
  const auto toks = rig.gen.tokens(N * m);  // [N][m]
  const DeviceTokens dt(toks, rig.gp);
  const DeviceBuffer<int32_t> sl = upload(slots), ac = upload(acc);
  const std::vector<int32_t> fill_before = download(rig.fill.get(), rig.S);
  DeviceBuffer<float> o(size_t(N) * m * vv);
  KVB_CUDA_CHECK(cudaMemset(o.get(), 0xff, o.bytes()));
  auto vp = token_launch<KVBufferVerifyParams>(s, N, dt.inputs(), sl.get(), o.get(), OutputDtype::fp32);
  vp.in.tokens = m;
  vp.pool = rig.pool();
  vp.group_arrivals = rig.arrivals.get();
  vp.kernel = kernel;
  ASSERT_EQ(validate(vp), "");
  KVB_CUDA_CHECK(launch_kvbuffer_verify(vp, nullptr));
  const auto o_got = download(o.get(), o.size());
  const auto d_got = download(rig.deltas.get(), rig.deltas.size());
  const auto g_got = download(rig.log_decay.get(), rig.log_decay.size());
  for (int32_t x : download(rig.arrivals.get(), rig.arrivals.size())) ASSERT_EQ(x, 0) << "arrival counters reset";
  for (int r = 0; r < N; ++r) {
    if (slots[r] < 0) {
      for (size_t i = 0; i < m * vv; ++i) ASSERT_EQ(o_got[r * m * vv + i], 0.f) << "padding row output";
      continue;
    }
    std::vector<ref::TokenPrepared> drafts;
    for (int i = 0; i < m; ++i) drafts.push_back(ref::prepare_token(s, toks[r * m + i], rig.gp));
    std::vector<double> o_ref;
    std::vector<ref::BufferEntry> entries;
    ref::KVBufferSlot& slot = rig.ref_slot[slots[r]];
    const bool due = int(slot.entries.size()) >= rig.B;
    ref::kvbuffer_verify(s, rig.B, drafts, slot, o_ref, entries);  // folds a due slot, as the kernel does
    const std::vector<double> og(o_got.begin() + r * m * vv, o_got.begin() + (r + 1) * m * vv);
    EXPECT_LE(ref::max_rel_err(o_ref, og, int64_t(m) * HV), tol::kOutputFp32) << "outputs, m=" << m << " row " << r;
    const int n = fill_before[slots[r]];
    EXPECT_EQ(due, n >= rig.B);
    const size_t base = size_t(slots[r]) * rig.cap + (n >= rig.B ? 0 : n);
    for (int i = 0; i < m; ++i) {
      const std::vector<double> u(d_got.begin() + (base + i) * vv, d_got.begin() + (base + i + 1) * vv);
      EXPECT_LE(ref::max_rel_err(entries[i].u, u, HV), tol::kStateFp32) << "delta of draft " << i << ", m=" << m;
      for (int h = 0; h < HV; ++h)
        EXPECT_NEAR(g_got[(base + i) * HV + h], entries[i].g[h], 1e-6 * (1 + std::abs(entries[i].g[h])))
            << "log-decay of draft " << i << ", head " << h;
    }
    ref::kvbuffer_accept(s, rig.B, entries, acc[r], slot);
  }
  KVB_CUDA_CHECK(launch_kvbuffer_commit_accepted(rig.fill.get(), sl.get(), ac.get(), N, rig.B, m, nullptr));
  EXPECT_LE(rig.state_err(), tol::kStateFp32) << "state after accept, m=" << m;
}

TEST(KVBufferVerifyGpu, EveryDraftCountAndAcceptedCountMatchesReference) {
  KVB_REQUIRE_GPU();
  int due_rows = 0;
  for (int B : {4, 8}) {
    for (int m = 1; m <= kMaxDraftTokens; ++m) {
      KVBufferRig rig(small_shape(), 4, B, 1000 + 10 * B + m, m);
      rig.decode_to_positions({0, 1, B / 2, B - 1});
      ASSERT_LE(rig.state_err(), tol::kStateFp32);
      // Accepted counts 0..m spread over the rows; one padding row.
      for (int a0 = 0; a0 <= m; ++a0) {
        const std::vector<int32_t> slots = {2, -1, 0, 3, 1};
        const std::vector<int32_t> acc = {a0, m, (a0 + 1) % (m + 1), m - a0, (a0 + 2) % (m + 1)};
        due_rows += rig.due_slots();
        verify_accept_round(rig, slots, m, acc);
      }
      // Decoding continues identically after the accepts.
      for (int step = 0; step < 3; ++step) rig.decode({0, 1, 2, 3});
      EXPECT_LE(rig.state_err(), tol::kStateFp32) << "decode after accept, B=" << B << " m=" << m;
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
  const int B = 4, rows = 4 * sm_count() / s.heads_v + 1;
  std::vector<int32_t> every(rows);
  for (int r = 0; r < rows; ++r) every[r] = r;
  int32_t dummy[4] = {};
  for (const int m : {3, 4, 8}) {
    SCOPED_TRACE("m=" + std::to_string(m));
    // The launch these rows take on CUDA cores stages a whole value head's 128 x 128 fp32 slice.
    KVBufferVerifyParams v =
        token_launch<KVBufferVerifyParams>(s, rows, test::unread_token_inputs(m), dummy, dummy, OutputDtype::fp32);
    v.pool = test::unread_pool(dummy, 4, B - 1 + m, B);
    v.group_arrivals = dummy;
    v.kernel = VerifyKernel::cuda_cores;
    KVBufferVerifyLaunch d;
    ASSERT_EQ(describe_kvbuffer_verify_launch(v, d), cudaSuccess);
    ASSERT_GE(d.smem_bytes, size_t(128) * 128 * sizeof(float)) << "not a whole-head launch";
    KVBufferRig rig(s, rows, B, 900 + m, m);
    std::vector<int> positions(rows);  // row r at buffer position r % B
    for (int r = 0; r < rows; ++r) positions[r] = r % B;
    rig.decode_to_positions(positions);
    int due_rows = 0;
    for (int round = 0; round < 3; ++round) {
      std::vector<int32_t> acc(rows);
      for (int r = 0; r < rows; ++r) acc[r] = (r + round) % (m + 1);
      due_rows += rig.due_slots();
      verify_accept_round(rig, every, m, acc, VerifyKernel::cuda_cores);
    }
    EXPECT_GT(due_rows, 0) << "some verify must fold a due row";
  }
}

// The tensor-core kernel at the Qwen3-Next shape against the float64 reference: every draft count, buffer sizes from
// recurrent (B = 1) to 17, rows at every buffer position, rounds of every draft accepted (rows due every few rounds,
// folded by the next verify) and of partial accepts, a padding row.
TEST(KVBufferVerifyGpu, TensorCoresMatchReferenceAtQwen3NextShape) {
  KVB_REQUIRE_GPU();
  const GdnShape s{16, 32, 128, 128};
  for (const int B : {1, 3, 8, 16, 17}) {  // capacity B - 1 + m up to 24, what the kernel stages at 8 drafts
    for (int m = 1; m <= kMaxDraftTokens; ++m) {
      SCOPED_TRACE(fmt::format("B={} m={}", B, m));
      KVBufferRig rig(s, 4, B, 7000 + 16 * B + m, m);
      rig.decode_to_positions({0, B / 3, B / 2, B - 1});
      int due_rows = 0;
      for (int round = 0; round < 4; ++round) {
        const std::vector<int32_t> acc = {m, 0, round % 2 ? 0 : m, (round + 1) % (m + 1), m};  // one per row
        due_rows += rig.due_slots();
        verify_accept_round(rig, {3, -1, 1, 0, 2}, m, acc, VerifyKernel::tensor_cores);
      }
      if (B <= 8) {
        EXPECT_GT(due_rows, 0) << "some verify must fold a due row";
      }
      for (int step = 0; step < 2; ++step) rig.decode({0, 1, 2, 3});
      EXPECT_LE(rig.state_err(), tol::kStateFp32) << "decode after the rounds";
    }
  }
}

// Value heads split into two column slices (V = 128, 64 columns a block): four blocks of a key group read the keys
// a due row's drafts replace, and the last of them to finish writes the drafts' keys and log-decays.
TEST(KVBufferVerifyGpu, SlicedHeadsWriteTheirEntriesAfterTheWholeGroupHasRead) {
  KVB_REQUIRE_GPU();
  const int B = 4, m = 3;
  KVBufferRig rig(GdnShape{2, 4, 64, 128}, 4, B, 77, m);
  for (int step = 0; step < B - 1; ++step) rig.decode({0, step < 1 ? -1 : 1, step < 2 ? -1 : 2, 3});
  ASSERT_LE(rig.state_err(), tol::kStateFp32);
  for (int round = 0; round < 4; ++round) verify_accept_round(rig, {3, 1, 0, 2}, m, {m, 2, m - round % 2, 1});
  for (int step = 0; step < 2; ++step) rig.decode({0, 1, 2, 3});
  EXPECT_LE(rig.state_err(), tol::kStateFp32) << "decode after the rounds";
}

// Due rows with long buffers at the edge shapes of the verify fold (kernels/kvbuffer_verify.cu, fold_verify_tile):
// K = 32 frees only 32 tile rows, so 43 entries take the fold's path that reads every delta from the pool; K = 256
// folds in four rounds of bands from 43 staged entries; V = 100 leaves the second 64-column slice 36 live columns, so
// the fold's masked columns are cut inside one warp's.
TEST(KVBufferVerifyGpu, LongBuffersFoldAtTheEdgeHeadSizes) {
  KVB_REQUIRE_GPU();
  const int B = 40, m = 4;
  for (const auto& [K, V] : {std::pair{32, 64}, std::pair{256, 64}, std::pair{64, 100}}) {
    SCOPED_TRACE("K=" + std::to_string(K) + " V=" + std::to_string(V));
    KVBufferRig rig(GdnShape{2, 4, K, V}, 3, B, 500 + K + V, m);
    rig.decode_to_positions({B - 1, B - 2, 5});
    ASSERT_LE(rig.state_err(), tol::kStateFp32);
    // Every draft accepted: slots 0 and 1 reach B - 1 + m and B - 2 + m entries, due; the next round folds them.
    verify_accept_round(rig, {0, 1, 2}, m, {m, m, 1});
    const std::vector<int32_t> fill = download(rig.fill.get(), rig.S);
    ASSERT_GE(fill[0], B);
    ASSERT_GE(fill[1], B);
    verify_accept_round(rig, {1, 2, 0}, m, {2, m, 0});
    for (int step = 0; step < 2; ++step) rig.decode({0, 1, 2});
    EXPECT_LE(rig.state_err(), tol::kStateFp32) << "decode after the folds";
  }
}

/// Recurrent verify and accept of N rows over S = N - 1 slots (row 1 padding, the others in reverse slot order, the
/// accepted counts cycling down from m through 0) against the reference, for each draft count in ms: outputs for every
/// draft, every intermediate state, the pool untouched by verify, and the state after accept.
void check_recurrent_verify(const GdnShape& s, int N, const std::vector<int>& ms) {
  const int S = N - 1, HV = s.heads_v;
  const size_t se = size_t(s.state_elems()), vv = size_t(HV) * s.head_dim_v;
  for (const int m : ms) {
    SCOPED_TRACE("N=" + std::to_string(N) + " m=" + std::to_string(m));
    ref::Qwen3NextInputs gen(s, 77 + m + 100 * N);
    const ref::GateParams gp = gen.gate_params();
    std::vector<std::vector<double>> st(S);
    std::vector<float> pool_h;
    for (auto& x : st) {
      x = gen.state();
      pool_h.insert(pool_h.end(), x.begin(), x.end());
    }
    DeviceBuffer<float> pool = upload(pool_h), scratch(size_t(S) * m * se);
    std::vector<int32_t> slots(N), acc(N);
    for (int r = 0; r < N; ++r) {
      slots[r] = r == 1 ? -1 : S - 1 - (r < 1 ? r : r - 1);  // every slot once, in reverse order
      acc[r] = ((m - r) % (m + 1) + m + 1) % (m + 1);         // m, m - 2, ...: all and none among the first rows
    }
    const auto toks = gen.tokens(N * m);
    const DeviceTokens dt(toks, gp);
    const DeviceBuffer<int32_t> sl = upload(slots), ac = upload(acc);
    DeviceBuffer<float> o(size_t(N) * m * vv);
    KVB_CUDA_CHECK(cudaMemset(o.get(), 0xff, o.bytes()));
    auto p = token_launch<RecurrentVerifyParams>(s, N, dt.inputs(), sl.get(), o.get(), OutputDtype::fp32);
    p.in.tokens = m;
    p.state = pool.get();
    p.num_slots = S;
    p.scratch = scratch.get();
    ASSERT_EQ(validate(p), "");
    KVB_CUDA_CHECK(launch_recurrent_verify(p, nullptr));
    EXPECT_EQ(download(pool.get(), pool.size()), pool_h) << "verify must not touch the pool";
    const auto o_got = download(o.get(), o.size());
    const auto sc = download(scratch.get(), scratch.size());
    std::vector<std::vector<double>> inter(S);
    for (int r = 0; r < N; ++r) {
      const std::vector<float> og_f(o_got.begin() + r * m * vv, o_got.begin() + (r + 1) * m * vv);
      if (slots[r] < 0) {
        EXPECT_TRUE(std::all_of(og_f.begin(), og_f.end(), [](float x) { return x == 0.f; })) << "padding row " << r;
        continue;
      }
      std::vector<ref::TokenPrepared> drafts;
      for (int i = 0; i < m; ++i) drafts.push_back(ref::prepare_token(s, toks[r * m + i], gp));
      std::vector<double> o_ref, states;
      ref::recurrent_verify(s, drafts, st[slots[r]], o_ref, states);
      const std::vector<double> og(og_f.begin(), og_f.end());
      EXPECT_LE(ref::max_rel_err(o_ref, og, int64_t(m) * HV), tol::kOutputFp32) << "row " << r;
      const std::vector<double> sg(sc.begin() + slots[r] * m * se, sc.begin() + (slots[r] + 1) * m * se);
      EXPECT_LE(ref::max_rel_err(states, sg, int64_t(m) * HV), tol::kStateFp32) << "row " << r;
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
  // (4 entries), so the next verify folds them into the checkpoint, which must then equal the final state.
  {
    const int B = 4, cap = B - 1 + m;
    DeviceBuffer<float> ck = upload(init), deltas(size_t(N) * cap * vv), ld(size_t(N) * cap * HV),
                        o(size_t(N) * m * vv);
    DeviceBuffer<bf16> keys(size_t(N) * cap * s.heads_qk * s.head_dim_k);
    DeviceBuffer<int32_t> fill = upload(std::vector<int32_t>(N, 0));
    DeviceBuffer<int32_t> arrivals = upload(std::vector<int32_t>(size_t(N) * s.heads_qk, 0));
    const KVBufferPool pool{ck.get(), keys.get(), deltas.get(), ld.get(), fill.get(), N, cap, B};
    auto p = token_launch<KVBufferVerifyParams>(s, N, in, slot.get(), o.get(), OutputDtype::fp32);
    p.pool = pool;
    p.group_arrivals = arrivals.get();
    KVB_CUDA_CHECK(launch_kvbuffer_verify(p, nullptr));
    EXPECT_LE(ref::max_rel_err(c.tensor("o").values, test::to_double(download(o.get(), o.size())), int64_t(N) * m * HV),
              tol::kOutputFp32);
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
  int32_t dummy[4] = {};
  KVBufferVerifyParams v = token_launch<KVBufferVerifyParams>(small_shape(), 1, test::unread_token_inputs(2), dummy,
                                                              dummy, OutputDtype::fp32);
  v.pool = test::unread_pool(dummy, 4, 5, 4);
  v.group_arrivals = dummy;
  EXPECT_EQ(validate(v), "");
  v.pool.num_checkpoints = 2;
  EXPECT_NE(validate(v).find("num_checkpoints"), std::string::npos);
  EXPECT_EQ(launch_kvbuffer_verify(v, nullptr), cudaErrorInvalidValue);
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
  int32_t dummy[4] = {};
  const GdnShape shape{16, 32, 128, 128};  // Qwen3-Next TP1
  bool saw_packed = false, saw_pool_keys = false, saw_smem_keys = false;
  for (const int batch : {16, 256}) {  // 64-column blocks below 4 blocks per SM, whole value heads above
    for (int m = 1; m <= kMaxDraftTokens; ++m) {
      for (const int B : {2, 4, 8, 12, 13, 16, 24, 32, 64, 128}) {
        KVBufferVerifyParams v = token_launch<KVBufferVerifyParams>(shape, batch, test::unread_token_inputs(m), dummy,
                                                                    dummy, OutputDtype::fp32);
        v.pool = test::unread_pool(dummy, 4, B - 1 + m, B);
        v.group_arrivals = dummy;
        v.kernel = VerifyKernel::cuda_cores;
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

}  // namespace
}  // namespace kvb
