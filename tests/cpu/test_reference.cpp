// Float64 reference: KVBuffer delta form against recurrent decoding (DESIGN.md section 3), speculative verify and
// accept, stateless slots, preparation, max_rel_err.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "reference/gdn_reference.h"
#include "reference/qwen3_next_inputs.h"
#include "reference_test_support.h"

namespace kvb::ref {
namespace {

constexpr double kExact = 1e-12;  // KVBuffer vs recurrent, both float64

GdnShape test_shape() { return GdnShape{2, 4, 32, 48}; }

/// Gate parameters that make g about -20 (e^g ~ 2e-9) for a = 0: A_log = log(20 / softplus(dt_bias)).
GateParams strong_gates(GateParams p) {
  for (size_t h = 0; h < p.A_log.size(); ++h) p.A_log[h] = std::log(20.0 / std::log1p(std::exp(p.dt_bias[h])));
  return p;
}

/// Largest error of o [HV][V] relative to the bound |o_j| <= |S[:, j]| |q^| of each value head (S [HV][K][V], the
/// state after the token): the precision float64 can promise when o itself cancels to far below that bound.
double o_err_vs_bound(const GdnShape& s, const TokenPrepared& t, const std::vector<double>& state,
                      const std::vector<double>& ref, const std::vector<double>& got) {
  const int K = s.head_dim_k, V = s.head_dim_v;
  double worst = 0;
  for (int h = 0; h < s.heads_v; ++h) {
    double q2 = 0, col_max = 0, err = 0;
    for (int i = 0; i < K; ++i) q2 += t.q_hat[(h / s.group()) * K + i] * t.q_hat[(h / s.group()) * K + i];
    for (int j = 0; j < V; ++j) {
      double c2 = 0;
      for (int i = 0; i < K; ++i) c2 += state[(size_t(h) * K + i) * V + j] * state[(size_t(h) * K + i) * V + j];
      col_max = std::max(col_max, std::sqrt(c2));
      err = std::max(err, std::abs(got[h * V + j] - ref[h * V + j]));
    }
    worst = std::max(worst, err / (col_max * std::sqrt(q2)));
  }
  return worst;
}

struct DecodeCase {
  int buffer_size;
  bool strong;
};

class KVBufferVsRecurrent : public ::testing::TestWithParam<DecodeCase> {};

// Several requests, each starting `phase` tokens into a flush cycle, so that flushes land at every buffer position;
// o and the materialised state are compared after every token.
TEST_P(KVBufferVsRecurrent, EveryStepFor300Steps) {
  const GdnShape s = test_shape();
  const int B = GetParam().buffer_size;
  Qwen3NextInputs in(s, 1000 + B + (GetParam().strong ? 7 : 0));
  GateParams p = in.gate_params();
  if (GetParam().strong) p = strong_gates(p);
  std::set<int> phases = {0, 1, B / 2, B - 1};

  double worst_o = 0, worst_state = 0;
  std::vector<double> all_g;
  int flushes = 0;
  for (int phase : phases) {
    const std::vector<double> start = in.state();
    std::vector<double> rec_state = start, o_rec, o_kvb;
    KVBufferSlot slot{start, {}};
    const std::vector<TokenPrepared> tokens = prepared_tokens(s, p, phase + 300, in.rng());
    for (int i = 0; i < int(tokens.size()); ++i) {
      all_g.insert(all_g.end(), tokens[i].g.begin(), tokens[i].g.end());
      recurrent_decode(s, tokens[i], rec_state, o_rec);
      kvbuffer_decode(s, B, tokens[i], slot, o_kvb);
      ASSERT_EQ(int(slot.entries.size()), (i + 1) % B) << "flush at the wrong step " << i;
      if (slot.entries.empty()) ++flushes;
      const double eo = max_rel_err(o_rec, o_kvb, s.heads_v);
      const double es = max_rel_err(rec_state, kvbuffer_state(s, slot), s.heads_v);
      // Strong gates leave S close to k^ u^T; when k^ . q^ is tiny, o = S^T q^ cancels far below |S| |q^| and its
      // rounding, relative to o itself, grows: there o is held to 1e-12 of that bound and 1e-10 of itself.
      ASSERT_LE(o_err_vs_bound(s, tokens[i], rec_state, o_rec, o_kvb), kExact) << "o, phase " << phase << " step " << i;
      ASSERT_LE(eo, GetParam().strong ? 1e-10 : kExact) << "o, phase " << phase << " step " << i;
      ASSERT_LE(es, kExact) << "state, phase " << phase << " step " << i;
      worst_o = std::max(worst_o, eo);
      worst_state = std::max(worst_state, es);
    }
  }
  EXPECT_GT(flushes, 0);
  std::nth_element(all_g.begin(), all_g.begin() + all_g.size() / 2, all_g.end());
  const double g_median = all_g[all_g.size() / 2];
  if (GetParam().strong) {
    EXPECT_GT(g_median, -40.0);
    EXPECT_LT(g_median, -8.0);
  } else {
    EXPECT_LT(g_median, 0.0);
    EXPECT_GT(g_median, -1.0);
  }
  char line[96];
  std::snprintf(line, sizeof line, "o %.3e state %.3e", worst_o, worst_state);
  RecordProperty("max_rel_err", line);
  std::printf("  kvbuffer vs recurrent, B %d%s: max_rel_err %s\n", B, GetParam().strong ? " strong" : "", line);
}

INSTANTIATE_TEST_SUITE_P(BufferSizes, KVBufferVsRecurrent,
                         ::testing::Values(DecodeCase{1, false}, DecodeCase{2, false}, DecodeCase{3, false},
                                           DecodeCase{8, false}, DecodeCase{16, false}, DecodeCase{64, false},
                                           DecodeCase{1, true}, DecodeCase{2, true}, DecodeCase{3, true},
                                           DecodeCase{8, true}, DecodeCase{16, true}, DecodeCase{64, true}),
                         [](const ::testing::TestParamInfo<DecodeCase>& i) {
                           return "B" + std::to_string(i.param.buffer_size) + (i.param.strong ? "_strong" : "");
                         });

// For m drafts after n buffered tokens and every accepted count a: verify outputs match recurrent verify, the slot is
// untouched by verify, accept leaves the state of recurrent intermediate a (overflowing the buffer when n + a >= B),
// and decoding continues identically.
TEST(KVBufferVerify, MatchesRecurrentVerifyForEveryAcceptedCount) {
  const GdnShape s = test_shape();
  Qwen3NextInputs in(s, 77);
  const GateParams p = in.gate_params();
  int overflow_cases = 0;
  for (int B : {4, 8}) {
    for (int n = 0; n < B; ++n) {
      const std::vector<double> start = in.state();
      std::vector<double> rec_state = start, o_rec, o_kvb;
      KVBufferSlot slot{start, {}};
      for (const TokenPrepared& t : prepared_tokens(s, p, B + n, in.rng())) {  // one flush, then n entries
        recurrent_decode(s, t, rec_state, o_rec);
        kvbuffer_decode(s, B, t, slot, o_kvb);
      }
      ASSERT_EQ(int(slot.entries.size()), n);
      for (int m = 1; m <= 8; ++m) {
        const std::vector<TokenPrepared> drafts = prepared_tokens(s, p, m, in.rng());
        std::vector<double> vo_rec, inter, vo_kvb;
        std::vector<BufferEntry> draft_entries;
        recurrent_verify(s, drafts, rec_state, vo_rec, inter);
        const KVBufferSlot before = slot;
        kvbuffer_verify(s, B, drafts, slot, vo_kvb, draft_entries);
        ASSERT_EQ(int(draft_entries.size()), m);
        ASSERT_LE(max_rel_err(vo_rec, vo_kvb, int64_t(m) * s.heads_v), kExact) << "B " << B << " n " << n << " m " << m;
        ASSERT_EQ(slot.checkpoint, before.checkpoint);  // n < B: nothing due, nothing written
        ASSERT_EQ(slot.entries.size(), before.entries.size());

        for (int a = 0; a <= m; ++a) {
          KVBufferSlot accepted = slot;
          kvbuffer_accept(s, B, draft_entries, a, accepted);
          ASSERT_EQ(int(accepted.entries.size()), n + a);  // no flush at accept
          std::vector<double> want = a == 0 ? rec_state
                                            : std::vector<double>(inter.begin() + size_t(a - 1) * s.state_elems(),
                                                                  inter.begin() + size_t(a) * s.state_elems());
          ASSERT_LE(max_rel_err(want, kvbuffer_state(s, accepted), s.heads_v), kExact)
              << "B " << B << " n " << n << " m " << m << " a " << a;
          if (n + a >= B) {  // due: the next verify folds the n + a entries first, then verifies from the new S0
            ++overflow_cases;
            KVBufferSlot due = accepted;
            const std::vector<TokenPrepared> next = prepared_tokens(s, p, 2, in.rng());
            std::vector<double> vo_due, vo_want, inter_want;
            std::vector<BufferEntry> next_entries;
            kvbuffer_verify(s, B, next, due, vo_due, next_entries);
            ASSERT_TRUE(due.entries.empty());
            ASSERT_LE(max_rel_err(want, kvbuffer_state(s, due), s.heads_v), kExact) << "folded by verify";
            recurrent_verify(s, next, want, vo_want, inter_want);
            ASSERT_LE(max_rel_err(vo_want, vo_due, 2 * s.heads_v), kExact) << "verify of a due slot";
          }
          if (a != m && a != 0 && m != 5) continue;  // continue decoding for a subset, every B and n
          for (const TokenPrepared& t : prepared_tokens(s, p, 2 * B, in.rng())) {
            recurrent_decode(s, t, want, o_rec);
            kvbuffer_decode(s, B, t, accepted, o_kvb);
            ASSERT_LE(max_rel_err(o_rec, o_kvb, s.heads_v), kExact);
            ASSERT_LE(max_rel_err(want, kvbuffer_state(s, accepted), s.heads_v), kExact);
          }
        }
      }
    }
  }
  EXPECT_GT(overflow_cases, 0);
}

// A stateless slot (no checkpoint: S0 == 0) equals recurrent decoding from a zero state across its first flush.
TEST(KVBufferStateless, MatchesRecurrentFromZeroAcrossFirstFlush) {
  const GdnShape s = test_shape();
  Qwen3NextInputs in(s, 5);
  const GateParams p = in.gate_params();
  const int B = 8;
  std::vector<double> rec_state(size_t(s.state_elems()), 0.0), o_rec, o_kvb;
  KVBufferSlot slot;
  const std::vector<TokenPrepared> tokens = prepared_tokens(s, p, 3 * B + 3, in.rng());
  for (int i = 0; i < int(tokens.size()); ++i) {
    recurrent_decode(s, tokens[i], rec_state, o_rec);
    kvbuffer_decode(s, B, tokens[i], slot, o_kvb);
    EXPECT_EQ(slot.checkpoint.empty(), i + 1 < B) << "checkpoint materialised at the first flush only, step " << i;
    ASSERT_LE(max_rel_err(o_rec, o_kvb, s.heads_v), kExact) << "step " << i;
    ASSERT_LE(max_rel_err(rec_state, kvbuffer_state(s, slot), s.heads_v), kExact) << "step " << i;
  }
  // Speculative verify on a stateless slot holding part of its context.
  KVBufferSlot fresh;
  std::vector<double> zero(size_t(s.state_elems()), 0.0), o_unused;
  for (int i = 0; i < 3; ++i) {
    recurrent_decode(s, tokens[i], zero, o_unused);
    kvbuffer_decode(s, B, tokens[i], fresh, o_unused);
  }
  const std::vector<TokenPrepared> drafts = prepared_tokens(s, p, 4, in.rng());
  std::vector<double> vo_rec, inter, vo_kvb;
  std::vector<BufferEntry> entries;
  recurrent_verify(s, drafts, zero, vo_rec, inter);
  kvbuffer_verify(s, B, drafts, fresh, vo_kvb, entries);
  EXPECT_TRUE(fresh.checkpoint.empty());
  EXPECT_LE(max_rel_err(vo_rec, vo_kvb, 4 * s.heads_v), kExact);
}

// The delta form's output identity o = e^g S_old^T q^ + (k^ . q^) u (DESIGN.md section 2), written with plain loops.
TEST(RecurrentDecode, MatchesPlainLoopFormula) {
  const GdnShape s = test_shape();
  Qwen3NextInputs in(s, 9);
  const GateParams p = in.gate_params();
  std::vector<double> state = in.state();
  const std::vector<double> old = state;
  const TokenPrepared t = prepare_token(s, in.token(), p);
  std::vector<double> o;
  recurrent_decode(s, t, state, o);
  const int K = s.head_dim_k, V = s.head_dim_v;
  double worst = 0;
  for (int h = 0; h < s.heads_v; ++h) {
    const int kh = h / s.group();
    const double* S = old.data() + size_t(h) * K * V;
    const double* q = t.q_hat.data() + kh * K;
    const double* k = t.k_hat.data() + kh * K;
    const double decay = std::exp(t.g[h]);
    double kq = 0;
    for (int i = 0; i < K; ++i) kq += k[i] * q[i];
    for (int j = 0; j < V; ++j) {
      double sk = 0, sq = 0;
      for (int i = 0; i < K; ++i) sk += S[i * V + j] * k[i], sq += S[i * V + j] * q[i];
      const double u = t.beta[h] * (t.v[h * V + j] - decay * sk);
      const double want = decay * sq + kq * u;
      worst = std::max(worst, std::abs(o[h * V + j] - want) / (std::abs(want) + 1e-3));
      for (int i = 0; i < K; ++i) {
        const double s_new = decay * S[i * V + j] + k[i] * u;
        ASSERT_NEAR(state[size_t(h) * K * V + i * V + j], s_new, 1e-13);
      }
    }
  }
  EXPECT_LE(worst, 1e-13);
}

TEST(PrepareToken, GatesNormsAndSoftplusThreshold) {
  GdnShape s = test_shape();
  Qwen3NextInputs in(s, 11);
  GateParams p = in.gate_params();
  TokenRaw t = in.token();
  t.a[0] = 24.0 - p.dt_bias[0];  // softplus argument above 20: softplus(x) = x
  t.a[1] = 20.5 - p.dt_bias[1];
  const TokenPrepared r = prepare_token(s, t, p);
  EXPECT_DOUBLE_EQ(r.g[0], double(float(-std::exp(p.A_log[0]) * (t.a[0] + p.dt_bias[0]))));
  EXPECT_DOUBLE_EQ(r.g[1], double(float(-std::exp(p.A_log[1]) * (t.a[1] + p.dt_bias[1]))));
  for (int h = 2; h < s.heads_v; ++h) {
    const double want = -std::exp(p.A_log[h]) * std::log1p(std::exp(t.a[h] + p.dt_bias[h]));
    EXPECT_NEAR(r.g[h], want, 1e-7 * std::abs(want));
    EXPECT_LT(r.g[h], 0.0);
  }
  for (int h = 0; h < s.heads_v; ++h) {
    EXPECT_NEAR(r.beta[h], 1.0 / (1.0 + std::exp(-t.b[h])), 1e-7);
    EXPECT_EQ(r.beta[h], double(float(r.beta[h])));  // fp32 beta, not bf16
  }
  const int K = s.head_dim_k;
  for (int h = 0; h < s.heads_qk; ++h) {
    double nq = 0, nk = 0;
    for (int i = 0; i < K; ++i) nq += r.q_hat[h * K + i] * r.q_hat[h * K + i], nk += r.k_hat[h * K + i] * r.k_hat[h * K + i];
    EXPECT_NEAR(std::sqrt(nq), p.scale, 1e-6 * p.scale);
    EXPECT_NEAR(std::sqrt(nk), 1.0, 1e-6);
    for (int i = 0; i < K; ++i) EXPECT_EQ(r.k_hat[h * K + i], double(float(r.k_hat[h * K + i])));
  }
  const std::vector<double> k0 = l2_normalize(t.k.data(), K);
  EXPECT_EQ(std::vector<double>(r.k_hat.begin(), r.k_hat.begin() + K), k0);

  TokenRaw bad = t;
  bad.q.pop_back();
  EXPECT_THROW(prepare_token(s, bad, p), std::invalid_argument);
}

TEST(KVBufferAccept, RejectsBadCounts) {
  const GdnShape s = test_shape();
  Qwen3NextInputs in(s, 13);
  const GateParams p = in.gate_params();
  KVBufferSlot slot{in.state(), {}};
  std::vector<double> o;
  std::vector<BufferEntry> entries;
  kvbuffer_verify(s, 4, prepared_tokens(s, p, 3, in.rng()), slot, o, entries);
  EXPECT_THROW(kvbuffer_accept(s, 4, entries, 4, slot), std::invalid_argument);
  EXPECT_THROW(kvbuffer_accept(s, 4, entries, -1, slot), std::invalid_argument);
  EXPECT_THROW(kvbuffer_accept(s, 0, entries, 1, slot), std::invalid_argument);
  EXPECT_THROW(kvbuffer_verify(s, 0, prepared_tokens(s, p, 1, in.rng()), slot, o, entries), std::invalid_argument);
  EXPECT_THROW(kvbuffer_verify(s, 4, {}, slot, o, entries), std::invalid_argument);
  EXPECT_TRUE(slot.entries.empty());
  // A due slot (B or more entries after an accept) must be verified, which folds it, before the next accept.
  kvbuffer_verify(s, 4, prepared_tokens(s, p, 3, in.rng()), slot, o, entries);
  kvbuffer_accept(s, 2, entries, 3, slot);
  EXPECT_EQ(slot.entries.size(), 3u);
  EXPECT_THROW(kvbuffer_accept(s, 2, entries, 1, slot), std::invalid_argument);
}

TEST(MaxRelErr, PerHeadNormalisationAndNaN) {
  // Head 0 has magnitude 1, head 1 magnitude 1e-6: the same absolute error counts 1e6 times more in head 1.
  const std::vector<double> ref = {1.0, -0.5, 1e-6, -2e-7};
  std::vector<double> got = ref;
  got[0] += 1e-9;
  EXPECT_NEAR(max_rel_err(ref, got, 2), 1e-9, 1e-15);
  got[3] += 1e-9;
  EXPECT_NEAR(max_rel_err(ref, got, 2), 1e-3, 1e-9);
  EXPECT_NEAR(max_rel_err(ref, got, 1), 1e-9, 1e-15);  // one head: relative to the largest value, 1

  got[1] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(max_rel_err(ref, got, 2), std::numeric_limits<double>::infinity());
  got[1] = std::numeric_limits<double>::infinity();
  EXPECT_EQ(max_rel_err(ref, got, 2), std::numeric_limits<double>::infinity());

  const std::vector<double> zero_head = {0.0, 0.0, 1.0, 1.0}, got_zero = {1e-7, 0.0, 1.0, 1.0};
  EXPECT_NEAR(max_rel_err(zero_head, got_zero, 2), 1e-7, 1e-20);  // all-zero reference head: absolute error
  EXPECT_EQ(max_rel_err(ref, ref, 2), 0.0);
  EXPECT_THROW(max_rel_err(ref, std::vector<double>(3, 0.0), 1), std::invalid_argument);
  EXPECT_THROW(max_rel_err(ref, got, 3), std::invalid_argument);
}

}  // namespace
}  // namespace kvb::ref
