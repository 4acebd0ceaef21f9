// Float64 reference of the KVBuffer raw form (DESIGN.md section 3): the chunkwise rebuild against the delta form and
// recurrent decoding over many steps with flushes, and raw verify / accept against recurrent verification for every
// accepted count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "reference/kvbuffer_raw_reference.h"
#include "reference/qwen3_next_inputs.h"

namespace kvb::ref {
namespace {

constexpr double kExact = 1e-12;  // raw form vs delta form vs recurrent, all float64

GdnShape test_shape() { return GdnShape{2, 4, 32, 48}; }

class RawVsDeltaVsRecurrent : public ::testing::TestWithParam<int> {};

// Requests starting at several phases of the flush cycle; o and the materialised state compared after every token.
TEST_P(RawVsDeltaVsRecurrent, EveryStepFor120Steps) {
  const GdnShape s = test_shape();
  const int B = GetParam();
  Qwen3NextInputs in(s, 2000 + B);
  const GateParams gp = in.gate_params();
  int flushes = 0;
  for (int phase : std::set<int>{0, 1, B - 1}) {
    const std::vector<double> start = in.state();
    std::vector<double> rec = start, o_rec, o_delta, o_raw;
    KVBufferSlot delta{start, {}};
    RawKVBufferSlot raw{start, {}};
    const std::vector<TokenRaw> tokens = draw_tokens(s, phase + 120, in.rng());
    for (int i = 0; i < int(tokens.size()); ++i) {
      const TokenPrepared t = prepare_token(s, tokens[i], gp);
      recurrent_decode(s, t, rec, o_rec);
      kvbuffer_decode(s, B, t, delta, o_delta);
      kvbuffer_raw_decode(s, B, gp, tokens[i], raw, o_raw);
      ASSERT_EQ(int(raw.entries.size()), (i + 1) % B) << "flush at the wrong step " << i;
      if (raw.entries.empty()) ++flushes;
      ASSERT_LE(max_rel_err(o_rec, o_raw, s.heads_v), kExact) << "o vs recurrent, phase " << phase << " step " << i;
      ASSERT_LE(max_rel_err(o_delta, o_raw, s.heads_v), kExact) << "o vs delta, phase " << phase << " step " << i;
      ASSERT_LE(max_rel_err(rec, kvbuffer_raw_state(s, gp, raw), s.heads_v), kExact) << "state, step " << i;
      if (raw.entries.empty()) {  // just flushed: the checkpoints of both forms agree
        ASSERT_LE(max_rel_err(delta.checkpoint, raw.checkpoint, s.heads_v), kExact) << "checkpoint, step " << i;
      }
    }
  }
  EXPECT_GT(flushes, 0);
}

INSTANTIATE_TEST_SUITE_P(BufferSizes, RawVsDeltaVsRecurrent, ::testing::Values(1, 2, 3, 8, 16, 64),
                         [](const ::testing::TestParamInfo<int>& i) { return "B" + std::to_string(i.param); });

// For m drafts after n buffered tokens and every accepted count a: raw verify outputs equal recurrent verification,
// verify leaves the slot alone, and accept leaves the state of recurrent intermediate a (folding when n + a >= B).
TEST(RawKVBufferVerify, MatchesRecurrentVerifyForEveryAcceptedCount) {
  const GdnShape s = test_shape();
  Qwen3NextInputs in(s, 91);
  const GateParams gp = in.gate_params();
  int folds = 0;
  for (int B : {1, 4, 8}) {
    for (int n = 0; n < B; ++n) {
      const std::vector<double> start = in.state();
      std::vector<double> rec = start, o_unused;
      RawKVBufferSlot slot{start, {}};
      for (const TokenRaw& t : draw_tokens(s, B + n, in.rng())) {  // one flush, then n entries
        recurrent_decode(s, prepare_token(s, t, gp), rec, o_unused);
        kvbuffer_raw_decode(s, B, gp, t, slot, o_unused);
      }
      ASSERT_EQ(int(slot.entries.size()), n);
      for (int m : {1, 3, 8}) {
        const std::vector<TokenRaw> drafts = draw_tokens(s, m, in.rng());
        std::vector<TokenPrepared> prepared;
        for (const TokenRaw& d : drafts) prepared.push_back(prepare_token(s, d, gp));
        std::vector<double> o_rec, inter, o_raw;
        recurrent_verify(s, prepared, rec, o_rec, inter);
        const RawKVBufferSlot before = slot;
        kvbuffer_raw_verify(s, gp, drafts, slot, o_raw);
        ASSERT_LE(max_rel_err(o_rec, o_raw, int64_t(m) * s.heads_v), kExact) << "B " << B << " n " << n << " m " << m;
        ASSERT_EQ(slot.checkpoint, before.checkpoint);
        ASSERT_EQ(slot.entries.size(), before.entries.size());
        for (int a = 0; a <= m; ++a) {
          RawKVBufferSlot after = slot;
          kvbuffer_raw_accept(s, B, gp, drafts, a, after);
          ASSERT_EQ(int(after.entries.size()), n + a >= B ? 0 : n + a);
          if (n + a >= B) ++folds;
          const std::vector<double> want =
              a == 0 ? rec
                     : std::vector<double>(inter.begin() + size_t(a - 1) * s.state_elems(),
                                           inter.begin() + size_t(a) * s.state_elems());
          ASSERT_LE(max_rel_err(want, kvbuffer_raw_state(s, gp, after), s.heads_v), kExact)
              << "B " << B << " n " << n << " m " << m << " a " << a;
        }
      }
    }
  }
  EXPECT_GT(folds, 0);
}

// The kernels' output shortcut (kernels/kvbuffer_raw_params.h), step by step as the device code takes it, in float64:
// raw dot products, norms, cumulative G, A and c in place, d = (I + A)^-T c by back substitution, the effective query
// and the value weights; o = S0^T qeff + sum_j d_j beta_j v_j must equal the chunkwise reference.
TEST(RawKVBufferReference, EffectiveQueryShortcutEqualsTheRebuild) {
  const GdnShape s = test_shape();
  const int K = s.head_dim_k, V = s.head_dim_v;
  Qwen3NextInputs in(s, 17);
  const GateParams gp = in.gate_params();
  for (int n : {0, 1, 6}) {
    RawKVBufferSlot slot{in.state(), draw_tokens(s, n, in.rng())};
    const TokenRaw t = in.token();
    std::vector<double> o_ref;
    RawKVBufferSlot copy = slot;
    kvbuffer_raw_decode(s, 64, gp, t, copy, o_ref);
    std::vector<TokenRaw> rows = slot.entries;
    rows.push_back(t);
    const int T = n + 1;
    for (int h = 0; h < s.heads_v; ++h) {
      const int kh = h / s.group();
      auto key = [&](int j, int k) { return rows[j].k[size_t(kh) * K + k]; };
      auto dot = [&](const double* x, const double* y) {
        double r = 0;
        for (int k = 0; k < K; ++k) r += x[k] * y[k];
        return r;
      };
      std::vector<double> G(T), beta(T), rk(T);
      double sum = 0;
      for (int j = 0; j < T; ++j) {
        const TokenPrepared pj = prepare_token(s, rows[j], gp);
        sum += pj.g[h];
        G[j] = sum;
        beta[j] = pj.beta[h];
        const double* kj = rows[j].k.data() + size_t(kh) * K;
        rk[j] = 1 / std::sqrt(dot(kj, kj) + gp.l2norm_eps);
      }
      const double* q = t.q.data() + size_t(kh) * K;
      const double rq = gp.scale / std::sqrt(dot(q, q) + gp.l2norm_eps);
      std::vector<double> r(T);
      for (int j = 0; j < T; ++j)
        r[j] = std::exp(G[T - 1] - G[j]) * rk[j] * rq * dot(rows[j].k.data() + size_t(kh) * K, q);
      for (int j = T - 1; j > 0; --j)  // back substitution: d_j = r_j is final
        for (int k = 0; k < j; ++k)
          r[k] -= beta[j] * std::exp(G[j] - G[k]) * rk[j] * rk[k] *
                  dot(rows[j].k.data() + size_t(kh) * K, rows[k].k.data() + size_t(kh) * K) * r[j];
      std::vector<double> qeff(K);
      for (int k = 0; k < K; ++k) {
        qeff[k] = std::exp(G[T - 1]) * rq * q[k];
        for (int j = 0; j < T; ++j) qeff[k] -= r[j] * beta[j] * std::exp(G[j]) * rk[j] * key(j, k);
      }
      double err = 0, big = 0;
      for (int c = 0; c < V; ++c) {
        double o = 0;
        for (int k = 0; k < K; ++k) o += slot.checkpoint[(size_t(h) * K + k) * V + c] * qeff[k];
        for (int j = 0; j < T; ++j) o += r[j] * beta[j] * rows[j].v[size_t(h) * V + c];
        err = std::max(err, std::abs(o - o_ref[size_t(h) * V + c]));
        big = std::max(big, std::abs(o_ref[size_t(h) * V + c]));
      }
      ASSERT_GT(big, 0.0);
      // The reference normalises keys in fp32 (as the kernels do); this mirror in float64: agreement to ~1e-7.
      EXPECT_LE(err / big, 1e-6) << "n " << n << " head " << h;
    }
  }
}

TEST(RawKVBufferReference, RejectsBadArguments) {
  const GdnShape s = test_shape();
  Qwen3NextInputs in(s, 3);
  const GateParams gp = in.gate_params();
  RawKVBufferSlot slot{in.state(), {}};
  const std::vector<TokenRaw> drafts = draw_tokens(s, 2, in.rng());
  std::vector<double> o;
  EXPECT_THROW(kvbuffer_raw_decode(s, 0, gp, drafts[0], slot, o), std::invalid_argument);
  EXPECT_THROW(kvbuffer_raw_accept(s, 4, gp, drafts, 3, slot), std::invalid_argument);
  EXPECT_THROW(kvbuffer_raw_accept(s, 4, gp, drafts, -1, slot), std::invalid_argument);
  slot.checkpoint.pop_back();
  EXPECT_THROW(kvbuffer_raw_decode(s, 4, gp, drafts[0], slot, o), std::invalid_argument);
}

}  // namespace
}  // namespace kvb::ref
