// bf16 rounding and the Qwen3-Next input generator.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "reference/bf16.h"
#include "reference/qwen3_next_inputs.h"

namespace kvb::ref {
namespace {

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(round_to_bf16(1.0), 1.0);
  EXPECT_EQ(round_to_bf16(1.0 + std::ldexp(1.0, -8)), 1.0);                            // tie, even is 1
  EXPECT_EQ(round_to_bf16(1.0 + 3 * std::ldexp(1.0, -8)), 1.0 + std::ldexp(1.0, -6));  // tie, even is up
  EXPECT_EQ(round_to_bf16(1.0 + 0.6 * std::ldexp(1.0, -7)), 1.0 + std::ldexp(1.0, -7));
  EXPECT_EQ(round_to_bf16(-3.14159), -3.140625);
  EXPECT_EQ(round_to_bf16(1e-3), 0.00099945068359375);
  EXPECT_TRUE(std::isnan(round_to_bf16(std::numeric_limits<double>::quiet_NaN())));
  EXPECT_EQ(round_to_bf16(1e39), std::numeric_limits<double>::infinity());
  EXPECT_EQ(bf16_bits(1.0f), 0x3F80);
  EXPECT_EQ(bf16_to_float(0xC000), -2.0f);
  EXPECT_EQ(round_to_fp32(0.1), double(0.1f));
}

TEST(Qwen3NextInputs, DrawsAreExactInTheirDtypesAndReproducible) {
  GdnShape s;
  s.heads_qk = 2;
  s.heads_v = 4;
  s.head_dim_k = 64;
  s.head_dim_v = 32;
  Qwen3NextInputs a(s, 42), b(s, 42), c(s, 43);
  const TokenRaw ta = a.token(), tb = b.token(), tc = c.token();
  EXPECT_EQ(ta.q, tb.q);
  EXPECT_EQ(ta.v, tb.v);
  EXPECT_NE(ta.q, tc.q);
  ASSERT_EQ(ta.q.size(), 2u * 64);
  ASSERT_EQ(ta.k.size(), 2u * 64);
  ASSERT_EQ(ta.v.size(), 4u * 32);
  ASSERT_EQ(ta.a.size(), 4u);
  ASSERT_EQ(ta.b.size(), 4u);
  for (const std::vector<double>* x : {&ta.q, &ta.k, &ta.v, &ta.a, &ta.b}) {
    for (double v : *x) EXPECT_EQ(v, round_to_bf16(v));
  }
  const GateParams p = a.gate_params();
  EXPECT_EQ(p.scale, double(float(0.125)));
  EXPECT_EQ(p.l2norm_eps, 1e-6);
  for (int h = 0; h < s.heads_v; ++h) {
    EXPECT_EQ(p.A_log[h], round_to_fp32(p.A_log[h]));
    EXPECT_GE(p.A_log[h], 0.0);
    EXPECT_LE(p.A_log[h], std::log(16.0) + 1e-6);
    EXPECT_EQ(p.dt_bias[h], round_to_fp32(p.dt_bias[h]));
    const double dt = std::log1p(std::exp(p.dt_bias[h]));  // softplus inverts the inverse softplus
    EXPECT_GE(dt, 1e-3 * (1 - 1e-5));
    EXPECT_LE(dt, 1e-1 * (1 + 1e-5));
  }
  const std::vector<double> st = a.state();
  ASSERT_EQ(st.size(), size_t(s.state_elems()));
  for (double v : st) EXPECT_EQ(v, round_to_fp32(v));
}

TEST(Qwen3NextInputs, MomentsMatchTheDistributions) {
  GdnShape s;
  s.heads_qk = 16;
  s.heads_v = 32;
  s.head_dim_k = 128;
  s.head_dim_v = 128;
  Qwen3NextInputs in(s, 7);
  double sum = 0, sum2 = 0;
  int64_t n = 0;
  for (const TokenRaw& t : in.tokens(8)) {
    for (double v : t.q) sum += v, sum2 += v * v, ++n;
    for (double v : t.v) sum += v, sum2 += v * v, ++n;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.03);
  EXPECT_NEAR(sum2 / n, 1.0, 0.03);
  const std::vector<double> st = in.state();
  double s2 = 0;
  for (double v : st) s2 += v * v;
  EXPECT_NEAR(s2 / st.size(), 1.0 / 128, 0.02 / 128);  // variance 1/K
}

}  // namespace
}  // namespace kvb::ref
