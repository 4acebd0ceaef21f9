// GPU tests of stateless short contexts (DESIGN.md section 3) against the float64 reference: the prefill of every
// prompt length L = 1 .. B (the L = B transition included), then decode steps across the flush that materialises each
// state, with stateful, stateless and padding rows mixed in every launch; outputs poisoned before each launch; the
// checkpoint pool compared byte for byte around every launch (only the rows a launch may write can change). Also the
// standalone flush of stateless slots, launch validation, and one short_context sweep point end to end.
// Skipped without a CUDA device (except the validation test).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <set>

#include "harness/kinds/registry.h"
#include "harness/workloads/problem_setup.h"
#include "harness/kinds/short_context_runner.h"
#include "kernels/kvbuffer_prefill.h"
#include "reference/qwen3_next_inputs.h"
#include "core/tolerances.h"
#include "tests/gpu/gpu_test_util.h"

namespace kvb {
namespace {

using test::DeviceTokens;

GdnShape shape(int H, int HV, int K, int V) { return GdnShape{H, HV, K, V}; }

/// Worst errors of a run.
struct StatelessErrors {
  double o = 0, state = 0;       ///< outputs; checkpoints and buffered deltas
  bool outputs_written = true;   ///< no NaN poison left
  bool pool_untouched = true;    ///< checkpoint rows no launch may write kept their bytes
  int materialised = 0;          ///< states materialised (by the prefill at L = B or by a decode flush)
};

/// Rows: 0 .. 2 stateful (random checkpoints, buffer positions 0, 1, B - 1), 3 padding, then B stateless rows with
/// prompts of L = 1 .. B tokens. Buffer slots are a shuffled permutation; checkpoint rows are handed out separately
/// (stateful rows 0 .. 2, each materialised state the highest free row), so buffer and checkpoint indices differ.
StatelessErrors run_mixed(const GdnShape& s, int B, OutputDtype odt, uint64_t seed) {
  ref::Qwen3NextInputs gen(s, seed);
  const ref::GateParams gp = gen.gate_params();
  const int first_stateless = 4, N = first_stateless + B, C = N + 2;  // C checkpoint rows, some never used
  const int HV = s.heads_v, V = s.head_dim_v, cap = std::max(B - 1, 1);
  const size_t se = size_t(s.state_elems()), qk = size_t(s.heads_qk) * s.head_dim_k, vv = size_t(HV) * V;
  const size_t o_elem = odt == OutputDtype::bf16 ? 2 : 4;
  std::mt19937_64 rng(seed);

  std::vector<int32_t> slot(N);
  std::iota(slot.begin(), slot.end(), 0);
  std::shuffle(slot.begin(), slot.end(), rng);
  slot[3] = -1;  // padding
  std::vector<ref::KVBufferSlot> rs(N);
  std::vector<int32_t> state_slot(N, -1);
  std::vector<uint8_t> has_state(N, 0);
  std::vector<float> ck_h(size_t(C) * se);
  std::memset(ck_h.data(), 0x5a, ck_h.size() * sizeof(float));  // rows nobody owns: a recognisable pattern
  int next_free = C - 1;
  std::vector<int32_t> fill_h(N, 0);
  for (int r = 0; r < 3; ++r) {
    rs[r].checkpoint = gen.state();
    state_slot[r] = r;
    has_state[r] = 1;
    std::copy(rs[r].checkpoint.begin(), rs[r].checkpoint.end(), ck_h.begin() + r * se);
  }
  DeviceBuffer<float> ck = upload(ck_h);
  DeviceBuffer<bf16> keys(size_t(N) * cap * qk);
  DeviceBuffer<float> deltas(size_t(N) * cap * vv), log_decay(size_t(N) * cap * HV);
  KVB_CUDA_CHECK(cudaMemset(keys.get(), 0x7f, keys.bytes()));
  KVB_CUDA_CHECK(cudaMemset(deltas.get(), 0x7f, deltas.bytes()));
  KVB_CUDA_CHECK(cudaMemset(log_decay.get(), 0x7f, log_decay.bytes()));
  DeviceBuffer<int32_t> fill = upload(std::vector<int32_t>(N, 0));
  KVBufferPool pool{ck.get(), keys.get(), deltas.get(), log_decay.get(), fill.get(), N, cap, B};
  pool.num_checkpoints = C;
  StatelessErrors err;

  // Stateful rows reach their starting positions with ordinary decode steps (rows 1 and 2 only).
  const int warm[3] = {0, 1, B - 1};
  for (int step = 0; step < B - 1; ++step) {
    std::vector<int32_t> sl(N, -1);
    for (int r = 0; r < 3; ++r)
      if (step < warm[r]) sl[r] = slot[r];
    if (std::all_of(sl.begin(), sl.end(), [](int32_t x) { return x < 0; })) break;
    const auto toks = gen.tokens(N);
    const DeviceTokens dt(toks, gp);
    const DeviceBuffer<int32_t> sl_d = upload(sl), ss_d = upload(state_slot);
    const DeviceBuffer<uint8_t> hs_d = upload(has_state);
    DeviceBuffer<float> o(size_t(N) * vv);
    auto p = token_launch<KVBufferDecodeParams>(s, N, dt.inputs(), sl_d.get(), o.get(), OutputDtype::fp32);
    p.pool = pool;
    p.state_slot = ss_d.get();
    p.has_state = hs_d.get();
    KVB_CUDA_CHECK(launch_kvbuffer_decode(p, nullptr));
    KVB_CUDA_CHECK(launch_kvbuffer_advance(fill.get(), sl_d.get(), N, B, nullptr));
    std::vector<double> o_ref;
    for (int r = 0; r < 3; ++r)
      if (sl[r] >= 0) ref::kvbuffer_decode(s, B, ref::prepare_token(s, toks[r], gp), rs[r], o_ref);
  }

  // Which checkpoint rows a launch may write: rows_written; every other row must keep its bytes.
  auto compare_pool = [&](const std::vector<float>& before, const std::set<int>& rows_written) {
    const std::vector<float> after = download(ck.get(), ck.size());
    for (int c = 0; c < C; ++c)
      if (!rows_written.count(c) && std::memcmp(before.data() + c * se, after.data() + c * se, se * 4) != 0)
        err.pool_untouched = false;
    return after;
  };
  // Every row with a state: its checkpoint; every buffered entry: its delta.
  auto compare_states = [&](const std::vector<float>& ck_got) {
    const std::vector<float> d_got = download(deltas.get(), deltas.size());
    const std::vector<int32_t> f_got = download(fill.get(), fill.size());
    for (int r = 0; r < N; ++r) {
      if (slot[r] < 0) continue;
      EXPECT_EQ(f_got[slot[r]], int(rs[r].entries.size())) << "row " << r;
      EXPECT_EQ(rs[r].checkpoint.empty(), has_state[r] == 0) << "row " << r;
      if (has_state[r]) {
        const std::vector<double> c(ck_got.begin() + state_slot[r] * se, ck_got.begin() + (state_slot[r] + 1) * se);
        err.state = std::max(err.state, ref::max_rel_err(rs[r].checkpoint, c, HV));
      }
      for (size_t j = 0; j < rs[r].entries.size(); ++j) {
        const size_t e = size_t(slot[r]) * cap + j;
        const std::vector<double> u(d_got.begin() + e * vv, d_got.begin() + (e + 1) * vv);
        err.state = std::max(err.state, ref::max_rel_err(rs[r].entries[j].u, u, HV));
      }
    }
  };

  // Prefill of the stateless rows (the others are padding in this launch); L = B materialises its state.
  {
    const int Lmax = B;
    std::vector<int32_t> sl(N, -1), len(N, 0), ss(N, -1);
    std::set<int> written;
    for (int r = first_stateless; r < N; ++r) {
      sl[r] = slot[r];
      len[r] = r - first_stateless + 1;
      if (len[r] == B) {
        ss[r] = state_slot[r] = next_free--;
        written.insert(ss[r]);
      }
    }
    std::vector<ref::TokenRaw> toks = gen.tokens(N * Lmax);
    const DeviceTokens dt(toks, gp);
    const DeviceBuffer<int32_t> sl_d = upload(sl), len_d = upload(len), ss_d = upload(ss);
    DeviceBuffer<unsigned char> o(size_t(N) * Lmax * vv * o_elem);
    KVB_CUDA_CHECK(cudaMemset(o.get(), 0xff, o.bytes()));
    auto p = token_launch<KVBufferPrefillParams>(s, N, dt.inputs(), sl_d.get(), o.get(), odt);
    p.in.tokens = Lmax;
    p.prompt_len = len_d.get();
    p.pool = pool;
    p.state_slot = ss_d.get();
    EXPECT_EQ(validate(p), "");
    const std::vector<float> before = download(ck.get(), ck.size());
    KVB_CUDA_CHECK(launch_kvbuffer_prefill(p, nullptr));
    KVB_CUDA_CHECK(launch_kvbuffer_advance_prefill(fill.get(), sl_d.get(), len_d.get(), N, B, nullptr));
    const std::vector<double> o_got = test::outputs(o.get(), size_t(N) * Lmax * vv, odt);
    err.outputs_written = err.outputs_written && test::all_finite(o_got);
    for (int r = 0; r < N; ++r) {
      for (int t = len[r]; t < Lmax; ++t)  // past the prompt, and rows that are padding here: zeros
        for (size_t i = 0; i < vv; ++i)
          if (o_got[(size_t(r) * Lmax + t) * vv + i] != 0.0) err.o = 1.0;
      if (len[r] == 0) continue;
      std::vector<ref::TokenPrepared> prompt;
      for (int t = 0; t < len[r]; ++t) prompt.push_back(ref::prepare_token(s, toks[size_t(r) * Lmax + t], gp));
      std::vector<double> o_ref;
      ref::kvbuffer_prefill(s, B, prompt, rs[r], o_ref);
      const std::vector<double> got(o_got.begin() + size_t(r) * Lmax * vv,
                                    o_got.begin() + (size_t(r) * Lmax + len[r]) * vv);
      err.o = std::max(err.o, ref::max_rel_err(o_ref, got, int64_t(len[r]) * HV));
      if (len[r] == B) {
        has_state[r] = 1;
        ++err.materialised;
      }
    }
    compare_states(compare_pool(before, written));
  }

  // Decode steps until every stateless row has flushed once (B steps for L = 1), and one more.
  for (int step = 0; step <= B; ++step) {
    std::vector<int32_t> sl = slot;
    std::set<int> written;
    for (int r = 0; r < N; ++r) {
      if (sl[r] < 0) continue;
      const bool flushes = int(rs[r].entries.size()) + 1 == B;
      if (!has_state[r] && flushes) state_slot[r] = next_free--;  // the scheduler assigns the row exactly now
      if (!has_state[r] && !flushes) state_slot[r] = -1;
      if (flushes) written.insert(state_slot[r]);
    }
    const auto toks = gen.tokens(N);
    const DeviceTokens dt(toks, gp);
    const DeviceBuffer<int32_t> sl_d = upload(sl), ss_d = upload(state_slot);
    const DeviceBuffer<uint8_t> hs_d = upload(has_state);
    DeviceBuffer<unsigned char> o(size_t(N) * vv * o_elem);
    KVB_CUDA_CHECK(cudaMemset(o.get(), 0xff, o.bytes()));
    auto p = token_launch<KVBufferDecodeParams>(s, N, dt.inputs(), sl_d.get(), o.get(), odt);
    p.pool = pool;
    p.state_slot = ss_d.get();
    p.has_state = hs_d.get();
    EXPECT_EQ(validate(p), "");
    const std::vector<float> before = download(ck.get(), ck.size());
    KVB_CUDA_CHECK(launch_kvbuffer_decode(p, nullptr));
    KVB_CUDA_CHECK(launch_kvbuffer_advance(fill.get(), sl_d.get(), N, B, nullptr));
    const std::vector<double> o_got = test::outputs(o.get(), size_t(N) * vv, odt);
    err.outputs_written = err.outputs_written && test::all_finite(o_got);
    for (int r = 0; r < N; ++r) {
      const std::vector<double> got(o_got.begin() + r * vv, o_got.begin() + (r + 1) * vv);
      if (sl[r] < 0) {
        for (double x : got)
          if (x != 0.0) err.o = 1.0;
        continue;
      }
      const bool stateless_before = rs[r].checkpoint.empty();
      std::vector<double> o_ref;
      ref::kvbuffer_decode(s, B, ref::prepare_token(s, toks[r], gp), rs[r], o_ref);
      err.o = std::max(err.o, ref::max_rel_err(o_ref, got, HV));
      if (stateless_before && !rs[r].checkpoint.empty()) {
        has_state[r] = 1;
        ++err.materialised;
      }
    }
    compare_states(compare_pool(before, written));
  }
  return err;
}

TEST(StatelessGpu, PrefillAndDecodeMatchReferenceForEveryContextLengthAcrossTheTransition) {
  KVB_REQUIRE_GPU();
  const GdnShape s = shape(2, 4, 128, 128);
  for (int B : {4, 16, 64}) {
    const StatelessErrors e = run_mixed(s, B, OutputDtype::fp32, 40 + B);
    EXPECT_TRUE(e.outputs_written) << "B=" << B;
    EXPECT_TRUE(e.pool_untouched) << "B=" << B << ": a checkpoint row changed that no row may write";
    EXPECT_LE(e.o, tol::kOutputFp32) << "B=" << B;
    EXPECT_LE(e.state, tol::kStateFp32) << "B=" << B;
    EXPECT_GT(e.state, 0.0) << "B=" << B << ": nothing compared";
    EXPECT_EQ(e.materialised, B) << "B=" << B << ": every stateless row materialises its state once";
  }
}

TEST(StatelessGpu, Bf16OutputsAndOddShapes) {
  KVB_REQUIRE_GPU();
  for (const GdnShape& s : {shape(2, 4, 128, 128), shape(2, 2, 32, 48), shape(1, 3, 64, 64), shape(2, 4, 256, 64)}) {
    const StatelessErrors e = run_mixed(s, 8, OutputDtype::bf16, 7);
    const std::string at = std::to_string(s.head_dim_k) + "x" + std::to_string(s.head_dim_v);
    EXPECT_TRUE(e.outputs_written) << at;
    EXPECT_TRUE(e.pool_untouched) << at;
    EXPECT_LE(e.o, tol::kOutputBf16) << at;
    EXPECT_LE(e.state, tol::kStateFp32) << at;
    EXPECT_EQ(e.materialised, 8) << at;
  }
}

// Standalone flush: stateless slots fold into a zero state at their state_slot; state_slot -1 writes nothing; an empty
// stateless buffer materialises a zero state.
TEST(StatelessGpu, StandaloneFlushMaterialisesFromZero) {
  KVB_REQUIRE_GPU();
  const GdnShape s = shape(2, 4, 128, 64);
  const int N = 3, B = 8, cap = B - 1, C = 4;
  const size_t se = size_t(s.state_elems()), qk = size_t(s.heads_qk) * s.head_dim_k, vv = size_t(s.heads_v) * 64;
  ref::Qwen3NextInputs gen(s, 23);
  const ref::GateParams gp = gen.gate_params();
  DeviceBuffer<float> ck(size_t(C) * se);
  KVB_CUDA_CHECK(cudaMemset(ck.get(), 0x5a, ck.bytes()));
  DeviceBuffer<bf16> keys(size_t(N) * cap * qk);
  DeviceBuffer<float> deltas(size_t(N) * cap * vv), log_decay(size_t(N) * cap * s.heads_v);
  DeviceBuffer<int32_t> fill = upload(std::vector<int32_t>(N, 0));
  KVBufferPool pool{ck.get(), keys.get(), deltas.get(), log_decay.get(), fill.get(), N, cap, B};
  pool.num_checkpoints = C;
  const std::vector<int32_t> slot = {1, 2, 0}, len = {3, 5, 0};
  const int Lmax = 5;
  const auto toks = gen.tokens(N * Lmax);
  const DeviceTokens dt(toks, gp);
  const DeviceBuffer<int32_t> slot_d = upload(slot), len_d = upload(len);
  DeviceBuffer<float> o(size_t(N) * Lmax * vv);
  auto pp = token_launch<KVBufferPrefillParams>(s, N, dt.inputs(), slot_d.get(), o.get(), OutputDtype::fp32);
  pp.in.tokens = Lmax;
  pp.prompt_len = len_d.get();
  pp.pool = pool;
  KVB_CUDA_CHECK(launch_kvbuffer_prefill(pp, nullptr));
  KVB_CUDA_CHECK(launch_kvbuffer_advance_prefill(fill.get(), slot_d.get(), len_d.get(), N, B, nullptr));
  const std::vector<float> before = download(ck.get(), ck.size());

  const std::vector<int32_t> state_slot = {3, -1, 1};  // row 0 to checkpoint 3; row 1 dropped; row 2 (empty) to 1
  const DeviceBuffer<int32_t> ss_d = upload(state_slot);
  const DeviceBuffer<uint8_t> hs_d = upload(std::vector<uint8_t>(N, 0));
  KVBufferFlushParams f;
  f.shape = s;
  f.count = N;
  f.slot = slot_d.get();
  f.pool = pool;
  f.state_slot = ss_d.get();
  f.has_state = hs_d.get();
  EXPECT_EQ(validate(f), "");
  KVB_CUDA_CHECK(launch_kvbuffer_flush(f, nullptr));
  const std::vector<float> after = download(ck.get(), ck.size());

  std::vector<ref::TokenPrepared> prompt;
  for (int t = 0; t < len[0]; ++t) prompt.push_back(ref::prepare_token(s, toks[t], gp));
  ref::KVBufferSlot rs;
  std::vector<double> o_ref;
  ref::kvbuffer_prefill(s, B, prompt, rs, o_ref);
  const std::vector<double> want = ref::kvbuffer_state(s, rs);
  const std::vector<double> got(after.begin() + 3 * se, after.end());
  EXPECT_LE(ref::max_rel_err(want, got, s.heads_v), tol::kStateFp32);
  EXPECT_GT(ref::max_rel_err(want, std::vector<double>(se, 0.0), s.heads_v), 0.5) << "reference state is zero";
  for (size_t i = 0; i < se; ++i) ASSERT_EQ(after[1 * se + i], 0.f) << "empty stateless buffer: a zero state";
  EXPECT_EQ(0, std::memcmp(before.data(), after.data(), se * 4)) << "checkpoint 0 is nobody's";
  EXPECT_EQ(0, std::memcmp(before.data() + 2 * se, after.data() + 2 * se, se * 4)) << "row 1 had no checkpoint row";
}

TEST(StatelessValidation, BadParamsAreRejectedWithReasons) {
  KVBufferPrefillParams p;
  p.shape = shape(2, 4, 128, 128);
  p.batch = 1;
  int32_t dummy = 0;
  bf16 b16{};
  float f = 1.f;
  p.in.q = p.in.k = p.in.v = p.in.a = p.in.b = &b16;
  p.in.A_log = p.in.dt_bias = &f;
  p.in.scale = 1.f;
  p.in.tokens = kMaxPrefillTokens + 1;
  EXPECT_NE(validate(p).find("tokens"), std::string::npos);
  EXPECT_EQ(launch_kvbuffer_prefill(p, nullptr), cudaErrorInvalidValue);
  p.in.tokens = 4;
  p.pool = KVBufferPool{&f, &b16, &f, &f, &dummy, 1, 3, 4};
  p.pool.num_checkpoints = -1;
  EXPECT_NE(validate(p).find("num_checkpoints"), std::string::npos);
  p.pool.num_checkpoints = 0;
  EXPECT_NE(validate(p).find("prompt_len"), std::string::npos);
  p.slot = p.prompt_len = &dummy;
  p.o = &f;
  EXPECT_EQ(validate(p), "");
}

/// A result column of `r` ("" when absent).
std::string column(const Row& r, const std::string& name) {
  for (const auto& [k, v] : r)
    if (k == name) return v;
  return "";
}

TEST(ShortContextGpu, TinyPointsRunEndToEnd) {
  KVB_REQUIRE_GPU();
  const ExperimentKind& kind = find_experiment_kind("short_context");
  SweepContext ctx;
  ctx.copy_gbps = ctx.read_gbps = 3000;
  ctx.cupti = false;
  ctx.min_samples = 3;
  ctx.max_seconds_per_point = 0.2;
  // Stateless (L = 3), stateless whose step materialises the state (L = B - 1), stateful (L = B), recurrent.
  for (const char* L : {"3", "7", "8", ""}) {
    Point pt;
    const bool kvb = *L != 0;
    pt.axes = {{"variant", kvb ? "kvbuffer" : "recurrent"}, {"context_len", L}, {"batch", "8"},
               {"buffer_size", kvb ? "8" : ""}, {"phase", kvb ? "staggered" : ""}, {"layers", "2"},
               {"heads_qk", "2"}, {"heads_v", "4"}, {"head_dim_k", "128"}, {"head_dim_v", "128"}, {"seed", "3"}};
    const Row r = kind.run(pt, ctx);
    const bool stateless = kvb && std::stoi(L) < 8;
    EXPECT_EQ(column(r, "stateless"), stateless ? "true" : "false") << pt.label();
    EXPECT_EQ(std::stod(column(r, "state_bytes_per_request")), stateless ? 0.0 : 2.0 * 4 * 128 * 128 * 4)
        << pt.label();
    EXPECT_EQ(std::stod(column(r, "buffer_bytes_per_request")) > 0, kvb) << pt.label();
    EXPECT_GT(std::stod(column(r, "latency_us_median")), 0.0) << pt.label();
    EXPECT_LE(std::stod(column(r, "max_rel_err")), tol::kStateFp32) << pt.label();
    EXPECT_LE(std::stod(column(r, "max_rel_err_o")), tol::kOutputBf16) << pt.label();
    for (const auto& [k, v] : r) {
      const auto& cols = kind.result_columns;
      EXPECT_NE(std::find(cols.begin(), cols.end(), k), cols.end()) << "undeclared column " << k;
    }
  }
}

}  // namespace
}  // namespace kvb
