// GPU tests of the decode kernels against the float64 reference: recurrent and KVBuffer decode over 1,000 steps with
// flushes, padding rows, poisoned outputs, both state layouts, bf16 outputs, the standalone flush, odd shapes and the
// golden cases. Skipped without a CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <random>

#include "harness/workloads/golden_gpu.h"
#include "harness/workloads/problem_setup.h"
#include "kernels/launch_util.h"
#include "reference/golden_case.h"
#include "reference/qwen3_next_inputs.h"
#include "core/tolerances.h"
#include "tests/gpu/gpu_test_util.h"

namespace kvb {
namespace {

using test::DeviceTokens;
using test::RunErrors;

GdnShape shape(int H, int HV, int K, int V) { return GdnShape{H, HV, K, V}; }

/// Row r of the batch uses slot slots[r]; rows listed in `padding_until` are padding (slot -1) before that step.
struct BatchPlan {
  std::vector<int32_t> slots;
  std::vector<int> active_from;  ///< step from which row r is live (padding before): staggers buffer phases
  int num_slots = 0;
};

BatchPlan default_plan() { return BatchPlan{{2, 0, 3, 1}, {0, 1, 3, 6}, 5}; }  // slot 4 never used

std::vector<int32_t> slots_at(const BatchPlan& p, int step) {
  std::vector<int32_t> s(p.slots.size());
  for (size_t r = 0; r < s.size(); ++r) s[r] = step >= p.active_from[r] ? p.slots[r] : -1;
  return s;
}

size_t o_elems(const GdnShape& s, int rows) { return size_t(rows) * s.heads_v * s.head_dim_v; }

/// Recurrent decode of `batch` rows: tokens `dt`, state pool `state` ([num_slots, HV, ...] in `layout`), row slots
/// `slot` ([batch]), outputs `o` ([batch, HV, V] in `odt`).
RecurrentDecodeParams recurrent_params(const GdnShape& s, int batch, const DeviceTokens& dt, float* state,
                                       int num_slots, StateLayout layout, const int32_t* slot, void* o,
                                       OutputDtype odt) {
  auto p = token_launch<RecurrentDecodeParams>(s, batch, dt.inputs(), slot, o, odt);
  p.state = state;
  p.num_slots = num_slots;
  p.layout = layout;
  return p;
}

/// KVBuffer decode of `batch` rows: tokens `dt`, `pool`, row slots `slot` ([batch]), outputs `o` ([batch, HV, V] in
/// `odt`).
KVBufferDecodeParams kvbuffer_params(const GdnShape& s, int batch, const DeviceTokens& dt, const KVBufferPool& pool,
                                     const int32_t* slot, void* o, OutputDtype odt) {
  auto p = token_launch<KVBufferDecodeParams>(s, batch, dt.inputs(), slot, o, odt);
  p.pool = pool;
  return p;
}

/// Recurrent decode over `steps` steps against ref::recurrent_decode, comparing o and every live state each step.
RunErrors run_recurrent(const GdnShape& s, int steps, StateLayout layout, OutputDtype odt, uint64_t seed,
                        TileShape tile = {}) {
  ref::Qwen3NextInputs gen(s, seed);
  const ref::GateParams gp = gen.gate_params();
  const BatchPlan plan = default_plan();
  const int N = int(plan.slots.size());
  const size_t se = size_t(s.state_elems());
  std::vector<std::vector<double>> ref_state(plan.num_slots);
  std::vector<float> pool_h;
  for (auto& st : ref_state) {
    st = gen.state();
    const std::vector<double> dev = layout == StateLayout::vk ? ref::kv_to_vk(s, st) : st;  // vk: stored [V][K]
    pool_h.insert(pool_h.end(), dev.begin(), dev.end());
  }
  DeviceBuffer<float> pool = upload(pool_h);
  DeviceBuffer<unsigned char> o(o_elems(s, N) * (odt == OutputDtype::bf16 ? 2 : 4));
  RunErrors err;
  for (int step = 0; step < steps; ++step) {
    const std::vector<ref::TokenRaw> toks = gen.tokens(N);
    const DeviceTokens dt(toks, gp);
    const std::vector<int32_t> sl = slots_at(plan, step);
    const DeviceBuffer<int32_t> slot = upload(sl);
    KVB_CUDA_CHECK(cudaMemset(o.get(), 0xff, o.bytes()));
    RecurrentDecodeParams p = recurrent_params(s, N, dt, pool.get(), plan.num_slots, layout, slot.get(), o.get(), odt);
    p.tile = tile;
    EXPECT_EQ(validate(p), "");
    KVB_CUDA_CHECK(launch_recurrent_decode(p, nullptr));
    const std::vector<double> o_got = test::outputs(o.get(), o_elems(s, N), odt);
    err.outputs_written = err.outputs_written && test::all_finite(o_got);
    const std::vector<float> pool_got = download(pool.get(), pool.size());
    double eo = 0, es = 0;
    for (int r = 0; r < N; ++r) {
      const size_t ov = size_t(s.heads_v) * s.head_dim_v;
      std::vector<double> got(o_got.begin() + r * ov, o_got.begin() + (r + 1) * ov);
      if (sl[r] < 0) {  // padding: zeros
        for (double x : got) eo = std::max(eo, std::abs(x) > 0 ? 1.0 : 0.0);
        continue;
      }
      std::vector<double> o_ref;
      ref::recurrent_decode(s, ref::prepare_token(s, toks[r], gp), ref_state[sl[r]], o_ref);
      eo = std::max(eo, ref::max_rel_err(o_ref, got, s.heads_v));
      std::vector<double> st(pool_got.begin() + sl[r] * se, pool_got.begin() + (sl[r] + 1) * se);
      if (layout == StateLayout::vk) st = ref::vk_to_kv(s, st);
      es = std::max(es, ref::max_rel_err(ref_state[sl[r]], st, s.heads_v));
    }
    // The never-used slot keeps its initial bytes.
    EXPECT_EQ(0, std::memcmp(pool_got.data() + 4 * se, pool_h.data() + 4 * se, se * sizeof(float)))
        << "slot 4 (unused) changed at step " << step;
    err.o.push_back(eo);
    err.state.push_back(es);
  }
  return err;
}

TEST(RecurrentDecodeGpu, MatchesReferenceOver1000StepsWithoutGrowingError) {
  KVB_REQUIRE_GPU();
  const GdnShape s = shape(2, 4, 128, 128);
  const RunErrors e = run_recurrent(s, 1000, StateLayout::kv, OutputDtype::fp32, 11);
  EXPECT_TRUE(e.outputs_written);
  EXPECT_LE(e.max_o(), tol::kOutputFp32);
  EXPECT_LE(e.max_state(), tol::kStateFp32);
  EXPECT_GT(e.max_state(), 0.0) << "a zero error means nothing was compared";
  EXPECT_LE(RunErrors::mean(e.state, 900, 1000), 3 * RunErrors::mean(e.state, 0, 100) + 1e-7) << "error grows";
}

// Every explicit tile (the `tile` axis) at a batch too small for the launcher to pick it on its own.
TEST(RecurrentDecodeGpu, EveryTileMatchesReference) {
  KVB_REQUIRE_GPU();
  for (const TileShape& t : recurrent_decode_tiles()) {
    const RunErrors e = run_recurrent(shape(2, 4, 128, 128), 40, StateLayout::kv, OutputDtype::fp32, 15, t);
    EXPECT_TRUE(e.outputs_written) << to_string(t);
    EXPECT_LE(e.max_o(), tol::kOutputFp32) << to_string(t);
    EXPECT_LE(e.max_state(), tol::kStateFp32) << to_string(t);
    EXPECT_GT(e.max_state(), 0.0) << to_string(t);
  }
}

TEST(RecurrentDecodeGpu, VkLayoutMatchesReference) {
  KVB_REQUIRE_GPU();
  for (int K : {32, 64, 128}) {
    const RunErrors e = run_recurrent(shape(2, 4, K, 64), 60, StateLayout::vk, OutputDtype::fp32, 12 + K);
    EXPECT_TRUE(e.outputs_written) << "K=" << K;
    EXPECT_LE(e.max_o(), tol::kOutputFp32) << "K=" << K;
    EXPECT_LE(e.max_state(), tol::kStateFp32) << "K=" << K;
  }
}

TEST(RecurrentDecodeGpu, Bf16OutputsAndOddShapes) {
  KVB_REQUIRE_GPU();
  for (const GdnShape& s : {shape(2, 4, 128, 128), shape(2, 2, 32, 48), shape(1, 3, 64, 64), shape(2, 4, 256, 64)}) {
    const RunErrors e = run_recurrent(s, 40, StateLayout::kv, OutputDtype::bf16, 13);
    EXPECT_TRUE(e.outputs_written) << s.head_dim_k << "x" << s.head_dim_v;
    EXPECT_LE(e.max_o(), tol::kOutputBf16) << s.head_dim_k << "x" << s.head_dim_v;
    EXPECT_LE(e.max_state(), tol::kStateFp32) << s.head_dim_k << "x" << s.head_dim_v;
  }
}

TEST(RecurrentDecodeGpu, StateReadInTheWrongLayoutGivesGarbage) {
  KVB_REQUIRE_GPU();
  // A [K][V] state read as [V][K]: the first step's outputs are already far off (the layout fault serving systems have shipped), so
  // the layout parameter is really honoured.
  const GdnShape s = shape(1, 2, 64, 64);
  ref::Qwen3NextInputs gen(s, 21);
  const ref::GateParams gp = gen.gate_params();
  const std::vector<double> st = gen.state();
  DeviceBuffer<float> pool = upload(test::to_float(st));
  const std::vector<ref::TokenRaw> toks = gen.tokens(1);
  const DeviceTokens dt(toks, gp);
  const DeviceBuffer<int32_t> slot = upload(std::vector<int32_t>{0});
  DeviceBuffer<float> o(o_elems(s, 1));
  KVB_CUDA_CHECK(launch_recurrent_decode(
      recurrent_params(s, 1, dt, pool.get(), 1, StateLayout::vk, slot.get(), o.get(), OutputDtype::fp32), nullptr));
  std::vector<double> ref_state = st, o_ref;
  ref::recurrent_decode(s, ref::prepare_token(s, toks[0], gp), ref_state, o_ref);
  EXPECT_GT(ref::max_rel_err(o_ref, test::outputs(o.get(), o_elems(s, 1), OutputDtype::fp32), s.heads_v), 0.05);
}

/// KVBuffer decode over `steps` steps against ref::kvbuffer_decode; each step compares o, every live checkpoint
/// and every buffered delta. Rows start at different steps, so their buffers sit at different positions.
RunErrors run_kvbuffer(const GdnShape& s, int B, int steps, OutputDtype odt, uint64_t seed, TileShape tile = {}) {
  ref::Qwen3NextInputs gen(s, seed);
  const ref::GateParams gp = gen.gate_params();
  const BatchPlan plan = default_plan();
  const int N = int(plan.slots.size()), S = plan.num_slots, HV = s.heads_v, V = s.head_dim_v;
  const size_t se = size_t(s.state_elems()), qk = size_t(s.heads_qk) * s.head_dim_k, vv = size_t(HV) * V;
  std::vector<ref::KVBufferSlot> ref_slot(S);
  std::vector<float> ck_h;
  for (auto& rs : ref_slot) {
    rs.checkpoint = gen.state();
    ck_h.insert(ck_h.end(), rs.checkpoint.begin(), rs.checkpoint.end());
  }
  DeviceBuffer<float> ck = upload(ck_h);
  DeviceBuffer<bf16> keys(size_t(S) * B * qk);
  DeviceBuffer<float> deltas(size_t(S) * B * vv), log_decay(size_t(S) * B * HV);
  KVB_CUDA_CHECK(cudaMemset(keys.get(), 0x7f, keys.bytes()));
  KVB_CUDA_CHECK(cudaMemset(deltas.get(), 0x7f, deltas.bytes()));
  KVB_CUDA_CHECK(cudaMemset(log_decay.get(), 0x7f, log_decay.bytes()));
  DeviceBuffer<int32_t> fill = upload(std::vector<int32_t>(S, 0));
  const KVBufferPool pool{ck.get(), keys.get(), deltas.get(), log_decay.get(), fill.get(), S, B, B};
  const std::vector<unsigned char> unused_before(reinterpret_cast<const unsigned char*>(ck_h.data() + 4 * se),
                                                 reinterpret_cast<const unsigned char*>(ck_h.data() + 5 * se));
  DeviceBuffer<unsigned char> o(o_elems(s, N) * (odt == OutputDtype::bf16 ? 2 : 4));
  RunErrors err;
  for (int step = 0; step < steps; ++step) {
    const std::vector<ref::TokenRaw> toks = gen.tokens(N);
    const DeviceTokens dt(toks, gp);
    const std::vector<int32_t> sl = slots_at(plan, step);
    const DeviceBuffer<int32_t> slot = upload(sl);
    KVB_CUDA_CHECK(cudaMemset(o.get(), 0xff, o.bytes()));
    KVBufferDecodeParams p = kvbuffer_params(s, N, dt, pool, slot.get(), o.get(), odt);
    p.tile = tile;
    EXPECT_EQ(validate(p), "");
    KVB_CUDA_CHECK(launch_kvbuffer_decode(p, nullptr));
    KVB_CUDA_CHECK(launch_kvbuffer_advance(fill.get(), slot.get(), N, B, nullptr));
    const std::vector<double> o_got = test::outputs(o.get(), o_elems(s, N), odt);
    err.outputs_written = err.outputs_written && test::all_finite(o_got);
    const std::vector<float> ck_got = download(ck.get(), ck.size());
    const std::vector<float> d_got = download(deltas.get(), deltas.size());
    const std::vector<int32_t> fill_got = download(fill.get(), fill.size());
    double eo = 0, es = 0;
    for (int r = 0; r < N; ++r) {
      std::vector<double> got(o_got.begin() + r * vv, o_got.begin() + (r + 1) * vv);
      if (sl[r] < 0) {
        for (double x : got) eo = std::max(eo, std::abs(x) > 0 ? 1.0 : 0.0);
        continue;
      }
      ref::KVBufferSlot& rs = ref_slot[sl[r]];
      std::vector<double> o_ref;
      ref::kvbuffer_decode(s, B, ref::prepare_token(s, toks[r], gp), rs, o_ref);
      eo = std::max(eo, ref::max_rel_err(o_ref, got, HV));
      EXPECT_EQ(fill_got[sl[r]], int(rs.entries.size())) << "step " << step << " row " << r;
      const std::vector<double> c(ck_got.begin() + sl[r] * se, ck_got.begin() + (sl[r] + 1) * se);
      es = std::max(es, ref::max_rel_err(rs.checkpoint, c, HV));
      for (size_t j = 0; j < rs.entries.size(); ++j) {
        const size_t e = size_t(sl[r]) * B + j;
        const std::vector<double> u(d_got.begin() + e * vv, d_got.begin() + (e + 1) * vv);
        es = std::max(es, ref::max_rel_err(rs.entries[j].u, u, HV));
      }
    }
    EXPECT_EQ(0, std::memcmp(ck_got.data() + 4 * se, unused_before.data(), unused_before.size()))
        << "unused slot 4 changed at step " << step;
    err.o.push_back(eo);
    err.state.push_back(es);
  }
  return err;
}

TEST(KVBufferDecodeGpu, MatchesReferenceOver1000StepsForEveryBufferSize) {
  KVB_REQUIRE_GPU();
  const GdnShape s = shape(2, 4, 128, 128);
  for (int B : {1, 2, 5, 16, 64}) {
    const RunErrors e = run_kvbuffer(s, B, 1000, OutputDtype::fp32, 100 + B);
    EXPECT_TRUE(e.outputs_written) << "B=" << B;
    EXPECT_LE(e.max_o(), tol::kOutputFp32) << "B=" << B;
    EXPECT_LE(e.max_state(), tol::kStateFp32) << "B=" << B;
    EXPECT_GT(e.max_state(), 0.0) << "B=" << B;
    EXPECT_LE(RunErrors::mean(e.state, 900, 1000), 3 * RunErrors::mean(e.state, 0, 100) + 1e-7)
        << "error grows, B=" << B;
  }
}

// Every explicit tile (the `tile` axis) with flushes, at a batch too small for the launcher to pick it on its own.
TEST(KVBufferDecodeGpu, EveryTileMatchesReferenceWithFlushes) {
  KVB_REQUIRE_GPU();
  for (const TileShape& t : kvbuffer_decode_tiles())
    for (int B : {4, 16}) {
      const RunErrors e = run_kvbuffer(shape(2, 4, 128, 128), B, 2 * B + 8, OutputDtype::fp32, 400 + B, t);
      EXPECT_TRUE(e.outputs_written) << to_string(t) << " B=" << B;
      EXPECT_LE(e.max_o(), tol::kOutputFp32) << to_string(t) << " B=" << B;
      EXPECT_LE(e.max_state(), tol::kStateFp32) << to_string(t) << " B=" << B;
      EXPECT_GT(e.max_state(), 0.0) << to_string(t) << " B=" << B;
    }
}

// The shapes above take the narrow 16-column slices (4 rows, few value heads); 34 value heads give 4 rows enough
// blocks for the 64-column slices Qwen3-Next's batches take (128-thread blocks, six an SM up to B = 8).
TEST(KVBufferDecodeGpu, WideSlicesMatchReferenceWithFlushes) {
  KVB_REQUIRE_GPU();
  const GdnShape s = shape(2, 34, 128, 128);
  for (int B : {2, 4, 8, 16}) {
    const RunErrors e = run_kvbuffer(s, B, 2 * B + 8, OutputDtype::fp32, 300 + B);
    EXPECT_TRUE(e.outputs_written) << "B=" << B;
    EXPECT_LE(e.max_o(), tol::kOutputFp32) << "B=" << B;
    EXPECT_LE(e.max_state(), tol::kStateFp32) << "B=" << B;
    EXPECT_GT(e.max_state(), 0.0) << "B=" << B;
  }
}

// Qwen3-Next TP1 at batch >= 64 takes 64-column slices of 128 threads. Their registers are held to six blocks an SM
// and their shared memory fits six up to B = 8 on a GPU with 228 KB an SM (the H200): one block more than B = 16
// (docs/FINDINGS.md says what that block is worth). A change that costs a block shows here first.
TEST(KVBufferDecodeLaunchGpu, SixSliceBlocksAnSmUpToBufferSize8) {
  KVB_REQUIRE_GPU();
  int dev = 0, smem_per_sm = 0;
  KVB_CUDA_CHECK(cudaGetDevice(&dev));
  KVB_CUDA_CHECK(cudaDeviceGetAttribute(&smem_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
  int32_t dummy[4] = {};
  for (const int B : {1, 2, 4, 8, 16, 32, 64}) {
    auto p = token_launch<KVBufferDecodeParams>(shape(16, 32, 128, 128), 64, test::unread_token_inputs(1), dummy,
                                                dummy, OutputDtype::fp32);
    p.pool = test::unread_pool(dummy, 4, std::max(B - 1, 1), B);
    ASSERT_EQ(validate(p), "") << "B " << B;
    KVBufferDecodeLaunch d;
    ASSERT_EQ(describe_kvbuffer_decode_launch(p, d), cudaSuccess) << "B " << B;
    EXPECT_EQ(d.slice_columns, 64) << "B " << B;
    EXPECT_EQ(d.threads, 128) << "B " << B;
    // Shared memory alone decides: the registers allow six.
    EXPECT_EQ(d.resident_blocks_per_sm, std::min(6, smem_blocks_per_sm(d.smem_bytes)))
        << "B " << B << ", " << d.smem_bytes << " bytes";
    if (smem_per_sm >= 228 * 1024 && B <= 8) {
      EXPECT_EQ(d.resident_blocks_per_sm, 6) << "B " << B << ", " << d.smem_bytes << " bytes";
    }
  }
}

// From the wide grid on (batch x heads_v >= 8 blocks an SM) a bf16 checkpoint takes whole value heads in 128-thread
// blocks, as many checkpoint bytes a block as an fp32 half head; an fp32 one keeps the 64-column slices; below it
// (batch 32 on the H200's 132 SMs) both keep them.
TEST(KVBufferDecodeLaunchGpu, Bf16CheckpointsTakeWholeHeadsFromTheWideGrid) {
  KVB_REQUIRE_GPU();
  int32_t dummy[4] = {};
  for (const StateDtype dtype : {StateDtype::fp32, StateDtype::bf16}) {
    for (const int batch : {32, 64, 256}) {
      auto p = token_launch<KVBufferDecodeParams>(shape(16, 32, 128, 128), batch, test::unread_token_inputs(1), dummy,
                                                  dummy, OutputDtype::fp32);
      p.pool = test::unread_pool(dummy, 4, 7, 8);
      p.pool.state_dtype = dtype;
      ASSERT_EQ(validate(p), "") << to_string(dtype) << " batch " << batch;
      KVBufferDecodeLaunch d;
      ASSERT_EQ(describe_kvbuffer_decode_launch(p, d), cudaSuccess);
      const bool whole = dtype == StateDtype::bf16 && wide_grid(batch, p.shape);
      EXPECT_EQ(d.slice_columns, whole ? 128 : 64) << to_string(dtype) << " batch " << batch;
      EXPECT_EQ(d.threads, 128) << to_string(dtype) << " batch " << batch;
    }
  }
}

TEST(KVBufferDecodeGpu, Bf16OutputsAndOddShapes) {
  KVB_REQUIRE_GPU();
  for (const GdnShape& s : {shape(2, 4, 128, 128), shape(2, 2, 32, 48), shape(1, 3, 64, 64), shape(2, 4, 256, 64)}) {
    for (int B : {3, 8}) {
      const RunErrors e = run_kvbuffer(s, B, 30, OutputDtype::bf16, 7 * B);
      EXPECT_TRUE(e.outputs_written) << s.head_dim_k << "x" << s.head_dim_v << " B=" << B;
      EXPECT_LE(e.max_o(), tol::kOutputBf16) << s.head_dim_k << "x" << s.head_dim_v << " B=" << B;
      EXPECT_LE(e.max_state(), tol::kStateFp32) << s.head_dim_k << "x" << s.head_dim_v << " B=" << B;
    }
  }
}

TEST(KVBufferDecodeGpu, PaddingRowsLeaveEveryPoolByteUnchanged) {
  KVB_REQUIRE_GPU();
  const GdnShape s = shape(2, 4, 64, 64);
  const int S = 4, B = 4, N = 4;
  const size_t se = size_t(s.state_elems()), qk = size_t(s.heads_qk) * s.head_dim_k, vv = size_t(s.heads_v) * 64;
  ref::Qwen3NextInputs gen(s, 5);
  const ref::GateParams gp = gen.gate_params();
  std::vector<float> ck_h;
  for (int i = 0; i < S; ++i) {
    const auto st = gen.state();
    ck_h.insert(ck_h.end(), st.begin(), st.end());
  }
  DeviceBuffer<float> ck = upload(ck_h);
  DeviceBuffer<bf16> keys(size_t(S) * B * qk);
  DeviceBuffer<float> deltas(size_t(S) * B * vv), log_decay(size_t(S) * B * s.heads_v);
  KVB_CUDA_CHECK(cudaMemset(keys.get(), 0x3c, keys.bytes()));
  KVB_CUDA_CHECK(cudaMemset(deltas.get(), 0x3c, deltas.bytes()));
  KVB_CUDA_CHECK(cudaMemset(log_decay.get(), 0xbc, log_decay.bytes()));
  DeviceBuffer<int32_t> fill = upload(std::vector<int32_t>{3, 2, 3, 1});  // slot 0 and 2 would flush
  const std::vector<int32_t> sl = {1, -1, 3, -1};  // slots 0 and 2 only appear as padding
  const DeviceBuffer<int32_t> slot = upload(sl);
  const auto toks = gen.tokens(N);
  const DeviceTokens dt(toks, gp);
  DeviceBuffer<float> o(o_elems(s, N));
  KVB_CUDA_CHECK(cudaMemset(o.get(), 0xff, o.bytes()));
  auto bytes_of = [&](int slot_index) {
    std::vector<unsigned char> r;
    auto add = [&](const void* p, size_t n) {
      const auto h = download(static_cast<const unsigned char*>(p), n);
      r.insert(r.end(), h.begin(), h.end());
    };
    add(ck.get() + slot_index * se, se * 4);
    add(keys.get() + size_t(slot_index) * B * qk, B * qk * 2);
    add(deltas.get() + size_t(slot_index) * B * vv, B * vv * 4);
    add(log_decay.get() + size_t(slot_index) * B * s.heads_v, size_t(B) * s.heads_v * 4);
    add(fill.get() + slot_index, 4);
    return r;
  };
  const auto before0 = bytes_of(0), before2 = bytes_of(2);
  const KVBufferPool pool{ck.get(), keys.get(), deltas.get(), log_decay.get(), fill.get(), S, B, B};
  KVB_CUDA_CHECK(
      launch_kvbuffer_decode(kvbuffer_params(s, N, dt, pool, slot.get(), o.get(), OutputDtype::fp32), nullptr));
  KVB_CUDA_CHECK(launch_kvbuffer_advance(fill.get(), slot.get(), N, B, nullptr));
  EXPECT_EQ(before0, bytes_of(0));
  EXPECT_EQ(before2, bytes_of(2));
  const auto out = test::outputs(o.get(), o_elems(s, N), OutputDtype::fp32);
  EXPECT_TRUE(test::all_finite(out));
  for (int r : {1, 3})
    for (size_t i = 0; i < vv; ++i) ASSERT_EQ(out[r * vv + i], 0.0) << "padding row " << r << " output not zero";
}

TEST(KVBufferFlushGpu, FlushEqualsMaterialisedState) {
  KVB_REQUIRE_GPU();
  const GdnShape s = shape(2, 4, 128, 96);
  const int S = 3, B = 16, N = 3;
  ref::Qwen3NextInputs gen(s, 9);
  const ref::GateParams gp = gen.gate_params();
  const size_t se = size_t(s.state_elems()), qk = size_t(s.heads_qk) * s.head_dim_k, vv = size_t(s.heads_v) * 96;
  std::vector<ref::KVBufferSlot> rs(S);
  std::vector<float> ck_h;
  for (auto& r : rs) {
    r.checkpoint = gen.state();
    ck_h.insert(ck_h.end(), r.checkpoint.begin(), r.checkpoint.end());
  }
  DeviceBuffer<float> ck = upload(ck_h);
  DeviceBuffer<bf16> keys(size_t(S) * B * qk);
  DeviceBuffer<float> deltas(size_t(S) * B * vv), log_decay(size_t(S) * B * s.heads_v);
  DeviceBuffer<int32_t> fill = upload(std::vector<int32_t>(S, 0));
  const KVBufferPool pool{ck.get(), keys.get(), deltas.get(), log_decay.get(), fill.get(), S, B, B};
  const std::vector<int32_t> sl = {2, 0, 1};
  const DeviceBuffer<int32_t> slot = upload(sl);
  DeviceBuffer<float> o(o_elems(s, N));
  // Rows reach 11 entries (no flush yet), then flush all listed slots standalone.
  for (int step = 0; step < 11; ++step) {
    const auto toks = gen.tokens(N);
    const DeviceTokens dt(toks, gp);
    KVB_CUDA_CHECK(
        launch_kvbuffer_decode(kvbuffer_params(s, N, dt, pool, slot.get(), o.get(), OutputDtype::fp32), nullptr));
    KVB_CUDA_CHECK(launch_kvbuffer_advance(fill.get(), slot.get(), N, B, nullptr));
    std::vector<double> o_ref;
    for (int r = 0; r < N; ++r) ref::kvbuffer_decode(s, B, ref::prepare_token(s, toks[r], gp), rs[sl[r]], o_ref);
  }
  KVBufferFlushParams f;
  f.shape = s;
  f.count = N;
  f.slot = slot.get();
  f.pool = pool;
  KVB_CUDA_CHECK(launch_kvbuffer_flush(f, nullptr));
  KVB_CUDA_CHECK(launch_kvbuffer_clear(fill.get(), slot.get(), N, nullptr));
  const auto got = download(ck.get(), ck.size());
  for (int r = 0; r < S; ++r) {
    const std::vector<double> want = ref::kvbuffer_state(s, rs[r]);
    const std::vector<double> g(got.begin() + r * se, got.begin() + (r + 1) * se);
    EXPECT_LE(ref::max_rel_err(want, g, s.heads_v), tol::kStateFp32) << "slot " << r;
  }
  EXPECT_EQ(download(fill.get(), S), std::vector<int32_t>(S, 0));
}

TEST(GoldenGpu, EveryGoldenCasePasses) {
  KVB_REQUIRE_GPU();
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(KVB_TEST_DATA_DIR) + "/golden")) {
    if (e.path().extension() != ".gdn") continue;
    ++files;
    const ref::GoldenCase c = ref::load_golden_case(e.path().string());
    for (const ref::TensorCheck& chk : check_golden_gpu(c))
      EXPECT_TRUE(chk.pass()) << c.name << " " << chk.engine << " " << chk.tensor << " err " << chk.max_rel_err;
  }
  EXPECT_EQ(files, 6);
}

TEST(LaunchValidation, BadParamsAreRejectedWithReasons) {
  RecurrentDecodeParams p;
  p.shape = shape(2, 3, 128, 128);  // HV not a multiple of H
  p.batch = 1;
  EXPECT_NE(validate(p).find("heads_v"), std::string::npos);
  p.shape = shape(2, 4, 48, 128);
  EXPECT_NE(validate(p).find("head_dim_k"), std::string::npos);
  EXPECT_EQ(launch_recurrent_decode(p, nullptr), cudaErrorInvalidValue);
  KVBufferDecodeParams k;
  k.shape = shape(2, 4, 128, 128);
  k.batch = 0;
  EXPECT_NE(validate(k).find("batch"), std::string::npos);
}

}  // namespace
}  // namespace kvb
