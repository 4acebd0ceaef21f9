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

// The chain decode kernel's effective query (kernels/kvbuffer_raw_decode.cu), in float64 as the device code takes it:
// z = q^, then entries t .. 0 two at a time from one set of dot products (k_j . z, k_i . z, k_i . k_j, |k_j|^2,
// |k_i|^2), vw_j = beta_j e^{G_t - G_j} rk_j s_j, z -= beta_j rk_j^2 s_j k_j; o = S0^T (e^{G_t} z) + sum_j vw_j v_j must
// equal the chunkwise reference.
TEST(RawKVBufferReference, EffectiveQueryChainEqualsTheRebuild) {
  const GdnShape s = test_shape();
  const int K = s.head_dim_k, V = s.head_dim_v;
  Qwen3NextInputs in(s, 23);
  const GateParams gp = in.gate_params();
  for (int n : {0, 1, 2, 5, 6, 13}) {
    RawKVBufferSlot slot{in.state(), draw_tokens(s, n, in.rng())};
    const TokenRaw t = in.token();
    std::vector<double> o_ref;
    RawKVBufferSlot copy = slot;
    kvbuffer_raw_decode(s, 64, gp, t, copy, o_ref);
    std::vector<TokenRaw> rows = slot.entries;
    rows.push_back(t);
    for (int h = 0; h < s.heads_v; ++h) {
      const int kh = h / s.group();
      auto key = [&](int j) { return rows[j].k.data() + size_t(kh) * K; };
      auto dot = [&](const double* x, const double* y) {
        double r = 0;
        for (int k = 0; k < K; ++k) r += x[k] * y[k];
        return r;
      };
      const double* q = t.q.data() + size_t(kh) * K;
      const double rq = gp.scale / std::sqrt(dot(q, q) + gp.l2norm_eps);
      std::vector<double> z(q, q + K), vw(n + 1), zero(K, 0.0);
      for (double& x : z) x *= rq;
      double gs = 0;
      auto step = [&](int j, double sj, double kk) {  // entry j with s_j = k_j . z and kk = |k_j|^2
        const TokenPrepared pj = prepare_token(s, rows[j], gp);
        const double rk = 1 / std::sqrt(kk + gp.l2norm_eps), c = pj.beta[h] * rk * rk * sj;
        vw[j] = pj.beta[h] * std::exp(gs) * rk * sj;
        for (int k = 0; k < K; ++k) z[k] -= c * key(j)[k];
        gs += pj.g[h];
        return c;
      };
      for (int j = n; j >= 0; j -= 2) {
        const int i = j - 1;
        const double* ki = i >= 0 ? key(i) : zero.data();
        const double a = dot(key(j), z.data()), b = dot(ki, z.data()), c = dot(ki, key(j));
        const double cj = step(j, a, dot(key(j), key(j)));
        if (i >= 0) step(i, b - cj * c, dot(ki, ki));
      }
      double err = 0, big = 0;
      for (int c = 0; c < V; ++c) {
        double o = 0;
        for (int k = 0; k < K; ++k) o += slot.checkpoint[(size_t(h) * K + k) * V + c] * std::exp(gs) * z[k];
        for (int j = 0; j <= n; ++j) o += vw[j] * rows[j].v[size_t(h) * V + c];
        err = std::max(err, std::abs(o - o_ref[size_t(h) * V + c]));
        big = std::max(big, std::abs(o_ref[size_t(h) * V + c]));
      }
      ASSERT_GT(big, 0.0);
      EXPECT_LE(err / big, 1e-6) << "n " << n << " head " << h;  // fp32 key norms in the reference: ~1e-7
    }
  }
}

// The chain decode kernel's flush (kernels/kvbuffer_raw_decode.cu), in float64: the entries fold in chunks of 8, each
// a UT transform against the state the earlier chunks left (P = S^T k_j, A and decays from the chunk's first entry),
// and must give the state of the whole-buffer rebuild.
TEST(RawKVBufferReference, ChunkedFoldEqualsTheWholeFold) {
  const GdnShape s = test_shape();
  const int K = s.head_dim_k, V = s.head_dim_v, C = 8;
  Qwen3NextInputs in(s, 29);
  const GateParams gp = in.gate_params();
  for (int T : {1, 5, 8, 9, 16, 21, 64}) {
    const RawKVBufferSlot slot{in.state(), draw_tokens(s, T, in.rng())};
    const std::vector<double> want = kvbuffer_raw_state(s, gp, slot);
    std::vector<TokenPrepared> pe;
    for (const TokenRaw& e : slot.entries) pe.push_back(prepare_token(s, e, gp));
    std::vector<double> state = slot.checkpoint;
    for (int h = 0; h < s.heads_v; ++h) {
      const int kh = h / s.group();
      double* S = state.data() + size_t(h) * K * V;
      auto key = [&](int j) { return slot.entries[j].k.data() + size_t(kh) * K; };
      auto rk = [&](int j) {
        double x = 0;
        for (int k = 0; k < K; ++k) x += key(j)[k] * key(j)[k];
        return 1 / std::sqrt(x + gp.l2norm_eps);
      };
      for (int c0 = 0; c0 < T; c0 += C) {
        const int c1 = std::min(c0 + C, T), cn = c1 - c0;
        std::vector<double> gc(cn), u(size_t(cn) * V);
        double sum = 0;
        for (int i = 0; i < cn; ++i) gc[i] = sum += pe[c0 + i].g[h];
        for (int i = 0; i < cn; ++i) {
          const int e = c0 + i;
          const double beta = pe[e].beta[h];
          for (int c = 0; c < V; ++c) {
            double P = 0;
            for (int k = 0; k < K; ++k) P += S[size_t(k) * V + c] * key(e)[k];
            double x = beta * slot.entries[e].v[size_t(h) * V + c] - beta * std::exp(gc[i]) * rk(e) * P;
            for (int j = 0; j < i; ++j) {
              double kk = 0;
              for (int k = 0; k < K; ++k) kk += key(e)[k] * key(c0 + j)[k];
              x -= beta * std::exp(gc[i] - gc[j]) * rk(e) * rk(c0 + j) * kk * u[size_t(j) * V + c];
            }
            u[size_t(i) * V + c] = x;
          }
        }
        const double dend = std::exp(gc[cn - 1]);
        for (int k = 0; k < K; ++k)
          for (int c = 0; c < V; ++c) {
            double x = dend * S[size_t(k) * V + c];
            for (int j = 0; j < cn; ++j)
              x += key(c0 + j)[k] * std::exp(gc[cn - 1] - gc[j]) * rk(c0 + j) * u[size_t(j) * V + c];
            S[size_t(k) * V + c] = x;
          }
      }
    }
    EXPECT_LE(max_rel_err(want, state, s.heads_v), 1e-6) << "T " << T;  // fp32 key norms in the reference
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
