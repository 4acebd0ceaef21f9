// GPU tests of recurrent and KVBuffer decode with bf16 stored states (StateDtype::bf16) against the float64 reference
// that rounds the stored state where the kernel stores it (DESIGN.md section 4). Each step starts the reference from
// the state the kernel stored (so rounding differences do not accumulate): every stored element must then be the
// reference's value rounded to bf16, or its neighbour where the fp32 and float64 values straddle a rounding boundary
// (Bf16StateUnits, harness/workloads/check_support.h); outputs and buffered deltas, computed in fp32 from the same
// stored values, keep the fp32 tolerances. Every tile and the automatic choice, padding rows, an unused slot,
// poisoned outputs, buffers of 1 to 32 entries and a row that materialises its state. Skipped without a CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "harness/workloads/check_support.h"
#include "harness/workloads/problem_setup.h"
#include "kernels/launch_util.h"
#include "reference/qwen3_next_inputs.h"
#include "core/tolerances.h"
#include "tests/gpu/gpu_test_util.h"

namespace kvb {
namespace {

using test::DeviceTokens;

const GdnShape kShape{2, 4, 128, 128};
const std::vector<int32_t> kSlots = {2, 0, -1, 1};  // row 2 is padding; slot 3 is never used
constexpr int kNumSlots = 4, kUnused = 3;

/// Every element of a bf16 state pool on the device, as double.
std::vector<double> download_pool(const DeviceBuffer<unsigned char>& pool) {
  return download_state(pool.get(), StateDtype::bf16, 0, pool.size() / 2);
}

/// Elements [first, first + n) of a downloaded pool.
std::vector<double> slot_values(const std::vector<double>& pool, size_t first, size_t n) {
  return std::vector<double>(pool.begin() + first, pool.begin() + first + n);
}

std::vector<double> unused_slot(const std::vector<double>& pool, size_t se) {
  return slot_values(pool, kUnused * se, se);
}

void expect_poison_gone_and_padding_zero(const std::vector<double>& o, size_t vv, int step) {
  for (size_t r = 0; r < kSlots.size(); ++r) {
    for (size_t i = 0; i < vv; ++i) {
      const double x = o[r * vv + i];
      ASSERT_TRUE(std::isfinite(x)) << "output not written, step " << step << " row " << r;
      if (kSlots[r] < 0) {
        ASSERT_EQ(x, 0.0) << "padding row " << r << " step " << step;
      }
    }
  }
}

/// Recurrent decode with a bf16 state pool over `steps` steps with `tile`.
void run_recurrent_bf16(int steps, TileShape tile, uint64_t seed) {
  const GdnShape& s = kShape;
  ref::Qwen3NextInputs gen(s, seed);
  const ref::GateParams gp = gen.gate_params();
  const int N = int(kSlots.size());
  const size_t se = size_t(s.state_elems()), vv = size_t(s.heads_v) * s.head_dim_v;
  std::vector<double> init;
  for (int i = 0; i < kNumSlots; ++i) {
    const std::vector<double> st = gen.state();
    init.insert(init.end(), st.begin(), st.end());
  }
  DeviceBuffer<unsigned char> pool = upload_state(init, StateDtype::bf16);
  const std::vector<double> unused_before = unused_slot(download_pool(pool), se);
  const DeviceBuffer<int32_t> slot = upload(kSlots);
  DeviceBuffer<float> o(N * vv);
  Bf16StateUnits ulps;
  double eo = 0;
  for (int step = 0; step < steps; ++step) {
    const std::vector<double> before = download_pool(pool);
    const std::vector<ref::TokenRaw> toks = gen.tokens(N);
    const DeviceTokens dt(toks, gp);
    KVB_CUDA_CHECK(cudaMemset(o.get(), 0xff, o.bytes()));
    auto p = token_launch<RecurrentDecodeParams>(s, N, dt.inputs(), slot.get(), o.get(), OutputDtype::fp32);
    p.state = pool.get();
    p.state_dtype = StateDtype::bf16;
    p.num_slots = kNumSlots;
    p.tile = tile;
    ASSERT_EQ(validate(p), "");
    KVB_CUDA_CHECK(launch_recurrent_decode(p, nullptr));
    const std::vector<double> o_got = test::outputs(o.get(), N * vv, OutputDtype::fp32);
    expect_poison_gone_and_padding_zero(o_got, vv, step);
    const std::vector<double> after = download_pool(pool);
    for (int r = 0; r < N; ++r) {
      if (kSlots[r] < 0) continue;
      std::vector<double> st = slot_values(before, kSlots[r] * se, se), o_ref;
      ref::recurrent_decode(s, ref::prepare_token(s, toks[r], gp), st, o_ref, StateDtype::bf16);
      ulps.add(st, slot_values(after, kSlots[r] * se, se), s.heads_v);
      const std::vector<double> got(o_got.begin() + r * vv, o_got.begin() + (r + 1) * vv);
      eo = std::max(eo, ref::max_rel_err(o_ref, got, s.heads_v));
    }
    ASSERT_EQ(unused_slot(after, se), unused_before) << "unused slot changed at step " << step;
  }
  EXPECT_EQ(ulps.more, 0u) << to_string(tile) << ": stored elements more than one bf16 unit off";
  EXPECT_GE(double(ulps.equal), 0.999 * double(ulps.equal + ulps.one)) << to_string(tile);
  EXPECT_LE(eo, tol::kOutputFp32) << to_string(tile);
}

TEST(Bf16StateDecodeGpu, RecurrentStoresTheRoundedStateForEveryTile) {
  KVB_REQUIRE_GPU();
  run_recurrent_bf16(24, TileShape{}, 71);
  for (const TileShape& t : recurrent_decode_tiles()) run_recurrent_bf16(6, t, 72);
}

/// KVBuffer decode with a bf16 checkpoint pool, buffer size B, over `steps` steps with `tile`: every step compares
/// the outputs, the appended delta (fp32) and, on a flush, the stored checkpoint. With `stateless_slot0`, the row of
/// slot 0 starts without a state (has_state 0: its checkpoint row holds garbage the kernel must not read) and its
/// first flush materialises it.
void run_kvbuffer_bf16(int B, int steps, TileShape tile, uint64_t seed, bool stateless_slot0 = false) {
  const GdnShape& s = kShape;
  ref::Qwen3NextInputs gen(s, seed);
  const ref::GateParams gp = gen.gate_params();
  const int N = int(kSlots.size()), HV = s.heads_v;
  const size_t se = size_t(s.state_elems()), qk = size_t(s.heads_qk) * s.head_dim_k, vv = size_t(HV) * s.head_dim_v;
  std::vector<ref::KVBufferSlot> ref_slot(kNumSlots);
  std::vector<double> init;
  for (auto& rs : ref_slot) {
    rs.checkpoint = gen.state();
    ref::round_stored_state(rs.checkpoint, StateDtype::bf16);
    init.insert(init.end(), rs.checkpoint.begin(), rs.checkpoint.end());
  }
  if (stateless_slot0) ref_slot[0].checkpoint.clear();  // the pool row keeps the random state as garbage
  std::vector<uint8_t> has_state(N, 1);
  for (int r = 0; r < N; ++r)
    if (stateless_slot0 && kSlots[r] == 0) has_state[r] = 0;
  DeviceBuffer<unsigned char> ck = upload_state(init, StateDtype::bf16);
  const std::vector<double> unused_before = unused_slot(download_pool(ck), se);
  const int cap = std::max(B - 1, 1);
  DeviceBuffer<bf16> keys(size_t(kNumSlots) * cap * qk);
  DeviceBuffer<float> deltas(size_t(kNumSlots) * cap * vv), log_decay(size_t(kNumSlots) * cap * HV);
  KVB_CUDA_CHECK(cudaMemset(deltas.get(), 0x7f, deltas.bytes()));
  DeviceBuffer<int32_t> fill = upload(std::vector<int32_t>(kNumSlots, 0));
  KVBufferPool pool{ck.get(), keys.get(), deltas.get(), log_decay.get(), fill.get(), kNumSlots, cap, B};
  pool.state_dtype = StateDtype::bf16;
  const DeviceBuffer<int32_t> slot = upload(kSlots);
  DeviceBuffer<float> o(N * vv);
  Bf16StateUnits ulps;
  double eo = 0, eu = 0;
  int flushes = 0;
  for (int step = 0; step < steps; ++step) {
    const std::vector<ref::TokenRaw> toks = gen.tokens(N);
    const DeviceTokens dt(toks, gp);
    KVB_CUDA_CHECK(cudaMemset(o.get(), 0xff, o.bytes()));
    auto p = token_launch<KVBufferDecodeParams>(s, N, dt.inputs(), slot.get(), o.get(), OutputDtype::fp32);
    p.pool = pool;
    p.tile = tile;
    DeviceBuffer<uint8_t> hs;
    if (stateless_slot0) {
      hs = upload(has_state);
      p.has_state = hs.get();
    }
    ASSERT_EQ(validate(p), "");
    KVB_CUDA_CHECK(launch_kvbuffer_decode(p, nullptr));
    KVB_CUDA_CHECK(launch_kvbuffer_advance(fill.get(), slot.get(), N, B, nullptr));
    const std::vector<double> o_got = test::outputs(o.get(), N * vv, OutputDtype::fp32);
    expect_poison_gone_and_padding_zero(o_got, vv, step);
    const std::vector<double> ck_got = download_pool(ck);
    const std::vector<float> d_got = download(deltas.get(), deltas.size());
    for (int r = 0; r < N; ++r) {
      if (kSlots[r] < 0) continue;
      ref::KVBufferSlot& rs = ref_slot[kSlots[r]];
      const bool flush = int(rs.entries.size()) + 1 >= B;
      std::vector<double> o_ref;
      ref::kvbuffer_decode(s, B, ref::prepare_token(s, toks[r], gp), rs, o_ref, StateDtype::bf16);
      const std::vector<double> got(o_got.begin() + r * vv, o_got.begin() + (r + 1) * vv);
      eo = std::max(eo, ref::max_rel_err(o_ref, got, HV));
      if (flush) {
        std::vector<double> c = slot_values(ck_got, kSlots[r] * se, se);
        ulps.add(rs.checkpoint, c, HV);
        rs.checkpoint = std::move(c);  // the next cycle starts from what the kernel stored
        has_state[r] = 1;
        ++flushes;
      } else {
        const size_t e = size_t(kSlots[r]) * cap + rs.entries.size() - 1;
        const std::vector<double> u(d_got.begin() + e * vv, d_got.begin() + (e + 1) * vv);
        eu = std::max(eu, ref::max_rel_err(rs.entries.back().u, u, HV));
      }
    }
    ASSERT_EQ(unused_slot(ck_got, se), unused_before) << "unused slot changed at step " << step;
  }
  const std::string what = "B=" + std::to_string(B) + " tile " + to_string(tile);
  EXPECT_GT(flushes, 0) << what;
  EXPECT_EQ(ulps.more, 0u) << what << ": stored elements more than one bf16 unit off";
  EXPECT_GE(double(ulps.equal), 0.999 * double(ulps.equal + ulps.one)) << what;
  EXPECT_LE(eo, tol::kOutputFp32) << what;
  EXPECT_LE(eu, tol::kStateFp32) << what;
}

TEST(Bf16StateDecodeGpu, KVBufferFlushStoresTheRoundedCheckpointForEveryTile) {
  KVB_REQUIRE_GPU();
  for (int B : {1, 4, 16}) run_kvbuffer_bf16(B, 2 * B + 3, TileShape{}, 80 + B);
  for (const TileShape& t : kvbuffer_decode_tiles()) run_kvbuffer_bf16(4, 9, t, 90);
  // The automatic bf16 tile of the wide grid (whole-head blocks) with a long buffer: up to 15 entries a step, each
  // row group of a block taking several, folded at the 16th token.
  run_kvbuffer_bf16(16, 35, TileShape{128, 128}, 94);
}

TEST(Bf16StateDecodeGpu, WholeHeadFlushForShortAndLongBuffersAndFromZero) {
  KVB_REQUIRE_GPU();
  // The whole-head blocks' flush with 0 to 31 buffered entries (one to two 16-row passes over them, the boundaries
  // next to 8, 16 and 17 entries), and a row without a state whose first flush materialises one.
  for (int B : {1, 2, 8, 9, 10, 17, 18, 32}) run_kvbuffer_bf16(B, B + 2, TileShape{128, 128}, 100 + B);
  for (int B : {8, 16}) run_kvbuffer_bf16(B, 2 * B + 1, TileShape{128, 128}, 140 + B, /*stateless_slot0=*/true);
}

TEST(Bf16StateDecodeValidation, LayoutVkAndOtherKernelsRefuseBf16NamingStateDtype) {
  RecurrentDecodeParams p;
  p.shape = kShape;
  p.batch = 1;
  p.in = test::unread_token_inputs(1);
  int32_t slot = 0;
  p.slot = &slot;
  p.state = reinterpret_cast<void*>(16);
  p.o = reinterpret_cast<void*>(16);
  p.num_slots = 1;
  p.state_dtype = StateDtype::bf16;
  EXPECT_EQ(validate(p), "");
  p.layout = StateLayout::vk;
  EXPECT_NE(validate(p).find("state_dtype = bf16 with layout vk"), std::string::npos) << validate(p);
  int32_t fill = 0;
  KVBufferPool pool = test::unread_pool(&fill, 1, 15, 16);
  pool.state_dtype = StateDtype::bf16;
  EXPECT_EQ(validate_pool(pool), "");
  EXPECT_NE(validate_fp32_checkpoint(pool, "kvbuffer flush").find("state_dtype = bf16: kvbuffer flush"),
            std::string::npos);
}

}  // namespace
}  // namespace kvb
