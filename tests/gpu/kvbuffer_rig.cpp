#include "tests/gpu/kvbuffer_rig.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "harness/workloads/problem_setup.h"
#include "kernels/launch_util.h"
#include "core/tolerances.h"
#include "tests/gpu/gpu_test_util.h"

namespace kvb::test {
namespace {

/// `per_row` tokens for each row ([N][per_row]): fresh draws for the rows with a slot; the padding rows, whose inputs
/// no kernel reads, share one draw (drawing is a good part of the reference's time at the Qwen3-Next shape).
std::vector<ref::TokenRaw> row_tokens(ref::Qwen3NextInputs& gen, const std::vector<int32_t>& slots, int per_row) {
  std::vector<ref::TokenRaw> toks, padding;
  toks.reserve(slots.size() * per_row);
  for (const int32_t slot : slots) {
    if (slot < 0 && padding.empty()) padding = gen.tokens(per_row);
    const std::vector<ref::TokenRaw> t = slot < 0 ? padding : gen.tokens(per_row);
    toks.insert(toks.end(), t.begin(), t.end());
  }
  return toks;
}

/// Checkpoints of `slots` slots, [slot][HV][K][V]: one state drawn with the Qwen3-Next distribution (gen.state()),
/// and each slot's that state shifted cyclically by a random offset with every value's sign flipped at random: as
/// distributed, exact in fp32, different in every slot, and far cheaper than a draw per slot (15 ms each at the
/// Qwen3-Next shape).
std::vector<std::vector<double>> slot_checkpoints(ref::Qwen3NextInputs& gen, int slots) {
  const std::vector<double> base = gen.state();
  const size_t n = base.size();
  std::vector<std::vector<double>> r(slots, std::vector<double>(n));
  for (auto& c : r) {
    const size_t shift = gen.rng()() % n;
    uint64_t signs = 0;
    for (size_t i = 0; i < n; ++i) {
      if (i % 64 == 0) signs = gen.rng()();
      c[i] = (signs >> (i % 64) & 1 ? -1 : 1) * base[(i + shift) % n];
    }
  }
  return r;
}

/// Largest |got - want| / (1 + |want|) over n values; NaN counts as infinite.
double max_abs_rel_diff(const float* got, const double* want, size_t n) {
  double worst = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = std::abs(double(got[i]) - want[i]) / (1 + std::abs(want[i]));
    worst = std::max(worst, std::isnan(d) ? std::numeric_limits<double>::infinity() : d);
  }
  return worst;
}

/// Index of the first raw key value that differs from `want` (its exact bf16 values held as double), or -1.
long first_key_mismatch(const bf16* got, const std::vector<double>& want) {
  for (size_t i = 0; i < want.size(); ++i)
    if (!(double(__bfloat162float(got[i])) == want[i])) return long(i);
  return -1;
}

}  // namespace

KVBufferRig::KVBufferRig(const GdnShape& shape, int slots, int buffer_size, uint64_t seed, int max_drafts,
                         int rows)
    : s(shape), S(slots), B(buffer_size), gen(shape, seed), gp(gen.gate_params()), ref_slot(slots),
      cap(buffer_size - 1 + max_drafts), max_rows(rows > 0 ? rows : slots + 1) {
  std::vector<std::vector<double>> checkpoints = slot_checkpoints(gen, slots);
  std::vector<float> h;
  for (int i = 0; i < slots; ++i) {
    ref_slot[i].checkpoint = std::move(checkpoints[i]);
    h.insert(h.end(), ref_slot[i].checkpoint.begin(), ref_slot[i].checkpoint.end());
  }
  ck = upload(h);
  keys = DeviceBuffer<bf16>(size_t(S) * cap * s.heads_qk * s.head_dim_k);
  deltas = DeviceBuffer<float>(size_t(S) * cap * s.heads_v * s.head_dim_v);
  log_decay = DeviceBuffer<float>(size_t(S) * cap * s.heads_v);
  poison(keys);  // every buffer starts empty: nothing in it may be read
  poison(deltas);
  poison(log_decay);
  fill = upload(std::vector<int32_t>(S, 0));
  arrivals = upload(std::vector<int32_t>(size_t(max_rows) * s.heads_qk, 0));
}

KVBufferPool KVBufferRig::pool() const {
  return KVBufferPool{ck.get(), keys.get(), deltas.get(), log_decay.get(), fill.get(), S, cap, B};
}

void KVBufferRig::decode(const std::vector<int32_t>& slots) {
  const int N = int(slots.size());
  const auto toks = row_tokens(gen, slots, 1);
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

void KVBufferRig::decode_to_positions(const std::vector<int>& positions) {
  std::vector<int32_t> slots(positions.size());
  for (int step = 0; step < B - 1; ++step) {
    for (size_t i = 0; i < positions.size(); ++i) slots[i] = step < positions[i] ? int32_t(i) : -1;
    decode(slots);
  }
}

int KVBufferRig::due_slots() const {
  int due = 0;
  for (int32_t f : download(fill.get(), S)) due += f >= B;
  return due;
}

void KVBufferRig::poison_entries_past_fill() {
  const std::vector<int32_t> f = download(fill.get(), S);
  const size_t qk = size_t(s.heads_qk) * s.head_dim_k, vv = size_t(s.heads_v) * s.head_dim_v;
  for (int slot = 0; slot < S; ++slot) {
    const size_t first = size_t(slot) * cap + std::clamp(f[slot], 0, cap), end = size_t(slot + 1) * cap;
    if (first == end) continue;
    KVB_CUDA_CHECK(cudaMemset(keys.get() + first * qk, 0xff, (end - first) * qk * sizeof(bf16)));
    KVB_CUDA_CHECK(cudaMemset(deltas.get() + first * vv, 0xff, (end - first) * vv * sizeof(float)));
    KVB_CUDA_CHECK(cudaMemset(log_decay.get() + first * s.heads_v, 0xff, (end - first) * s.heads_v * sizeof(float)));
  }
}

void KVBufferRig::expect_fill_matches_reference() const {
  const std::vector<int32_t> f = download(fill.get(), S);
  for (int slot = 0; slot < S; ++slot)
    EXPECT_EQ(f[slot], int(ref_slot[slot].entries.size())) << "buffer position of slot " << slot;
}

double KVBufferRig::state_err() const {
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
    for (int j = 0; j < std::min(f[slot], cap); ++j) {
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

double KVBufferRig::checkpoint_err(int slot) const {
  const size_t se = size_t(s.state_elems());
  const std::vector<float> c = download(ck.get() + slot * se, se);
  return ref::max_rel_err(ref_slot[slot].checkpoint, std::vector<double>(c.begin(), c.end()), s.heads_v);
}

double KVBufferRig::checkpoints_err() const {
  double err = 0;
  for (int slot = 0; slot < S; ++slot) err = std::max(err, checkpoint_err(slot));
  return err;
}

void verify_accept_round(KVBufferRig& rig, const std::vector<int32_t>& slots, int m, const std::vector<int32_t>& acc,
                         const RoundLaunch& launch, RoundErrors* errors) {
  const GdnShape& s = rig.s;
  const int N = int(slots.size()), HV = s.heads_v;
  ASSERT_LE(N, rig.max_rows) << "group_arrivals holds " << rig.max_rows << " rows";
  ASSERT_EQ(acc.size(), slots.size());
  const size_t vv = size_t(HV) * s.head_dim_v, qk = size_t(s.heads_qk) * s.head_dim_k, o_elems = size_t(N) * m * vv;
  const auto toks = row_tokens(rig.gen, slots, m);  // [N][m]
  const DeviceTokens dt(toks, rig.gp);
  const DeviceBuffer<int32_t> sl = upload(slots), ac = upload(acc);
  const std::vector<int32_t> fill_before = download(rig.fill.get(), rig.S);
  rig.poison_entries_past_fill();
  DeviceBuffer<unsigned char> o(o_elems * (launch.o_dtype == OutputDtype::bf16 ? sizeof(bf16) : sizeof(float)));
  poison(o);
  auto vp = token_launch<KVBufferVerifyParams>(s, N, dt.inputs(), sl.get(), o.get(), launch.o_dtype);
  vp.in.tokens = m;
  vp.pool = rig.pool();
  vp.group_arrivals = rig.arrivals.get();
  vp.kernel = launch.kernel;
  ASSERT_EQ(validate(vp), "");
  KVB_CUDA_CHECK(launch_kvbuffer_verify(vp, nullptr));
  const std::vector<double> o_got = outputs(o.get(), o_elems, launch.o_dtype);
  const auto d_got = download(rig.deltas.get(), rig.deltas.size());
  const auto g_got = download(rig.log_decay.get(), rig.log_decay.size());
  const auto k_got = download(rig.keys.get(), rig.keys.size());
  for (int32_t x : download(rig.arrivals.get(), size_t(N) * s.heads_qk)) ASSERT_EQ(x, 0) << "arrival counters reset";
  const double o_tol = verify_output_tol(launch.kernel, launch.o_dtype);
  RoundErrors e;
  for (int r = 0; r < N; ++r) {
    const size_t o0 = size_t(r) * m * vv;
    if (slots[r] < 0) {
      const auto end = o_got.begin() + o0 + m * vv;
      const auto nonzero = std::find_if(o_got.begin() + o0, end, [](double x) { return x != 0; });
      EXPECT_TRUE(nonzero == end)
          << "padding row " << r << ": output " << (nonzero - o_got.begin() - o0) << " is " << *nonzero << ", not 0";
      continue;
    }
    const int slot = slots[r], n = fill_before[slot];
    ref::KVBufferSlot& rs = rig.ref_slot[slot];
    ASSERT_EQ(n, int(rs.entries.size())) << "buffer position of slot " << slot << " before verify";
    const bool due = n >= rig.B;
    const std::string where = fmt::format("row {} (slot {}, {} entries{})", r, slot, n, due ? ", due" : "");
    std::vector<ref::TokenPrepared> drafts;
    for (int i = 0; i < m; ++i) drafts.push_back(ref::prepare_token(s, toks[size_t(r) * m + i], rig.gp));
    std::vector<double> o_ref;
    std::vector<ref::BufferEntry> entries;
    ref::kvbuffer_verify(s, rig.B, drafts, rs, o_ref, entries);  // folds a due slot, as the kernel does
    const double eo = ref::max_rel_err(o_ref, std::vector<double>(o_got.begin() + o0, o_got.begin() + o0 + m * vv),
                                       int64_t(m) * HV);
    EXPECT_LE(eo, o_tol) << "outputs (" << to_string(launch.o_dtype) << ") of the " << m << " drafts, " << where;
    e.o = std::max(e.o, eo);
    const size_t base = size_t(slot) * rig.cap + (due ? 0 : n);  // the drafts' first entry
    for (int i = 0; i < m; ++i) {
      const size_t entry = base + i;
      const double eu = ref::max_rel_err(
          entries[i].u, std::vector<double>(d_got.begin() + entry * vv, d_got.begin() + (entry + 1) * vv), HV);
      EXPECT_LE(eu, tol::kStateFp32) << "corrected delta of draft " << i << ", " << where;
      e.delta = std::max(e.delta, eu);
      EXPECT_LE(max_abs_rel_diff(g_got.data() + entry * HV, entries[i].g.data(), HV), 1e-6)
          << "log-decay of draft " << i << ", " << where;
      const long k_bad = first_key_mismatch(k_got.data() + entry * qk, toks[size_t(r) * m + i].k);
      EXPECT_EQ(k_bad, -1) << "raw key of draft " << i << ", " << where << ": element " << k_bad
                           << " differs from the input";
    }
    if (due) {
      const double ec = rig.checkpoint_err(slot);
      EXPECT_LE(ec, tol::kStateFp32) << "checkpoint folded by verify, " << where;
      e.checkpoint = std::max(e.checkpoint, ec);
      ++e.folded;
    }
    ref::kvbuffer_accept(s, rig.B, entries, acc[r], rs);
  }
  KVB_CUDA_CHECK(launch_kvbuffer_commit_accepted(rig.fill.get(), sl.get(), ac.get(), N, rig.B, m, nullptr));
  if (launch.materialised_states) {
    EXPECT_LE(rig.state_err(), tol::kStateFp32) << "materialised states after accept";
  } else {
    rig.expect_fill_matches_reference();
  }
  if (errors) *errors = e;
}

int whole_head_rows(const GdnShape& s) { return (4 * sm_count() + s.heads_v - 1) / s.heads_v; }

std::string verify_case(VerifyKernel k, int buffer_size, int m) {
  return fmt::format("{} B={} m={}", to_string(k), buffer_size, m);
}

std::string launch_words(const KVBufferVerifyLaunch& d) {
  if (d.kernel == VerifyKernel::tensor_cores) return "tensor-core kernel";
  return fmt::format("{}, {} bytes of shared memory, {} blocks an SM",
                     d.packed ? "packed draft rows" : d.smem_keys ? "keys in shared memory" : "keys from the pool",
                     d.smem_bytes, d.resident_blocks_per_sm);
}

}  // namespace kvb::test
