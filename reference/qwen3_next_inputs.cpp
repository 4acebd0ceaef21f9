// Draws from the Qwen3-Next initialisation distributions (see qwen3_next_inputs.h).
#include "reference/qwen3_next_inputs.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "reference/bf16.h"

namespace kvb::ref {
namespace {

std::vector<double> normal_bf16(size_t n, std::mt19937_64& rng) {
  std::normal_distribution<double> dist(0.0, 1.0);
  std::vector<double> x(n);
  for (double& v : x) v = round_to_bf16(dist(rng));
  return x;
}

void check_dims(const GdnShape& s) {
  if (s.heads_qk < 1 || s.heads_v < 1 || s.head_dim_k < 1 || s.head_dim_v < 1) {
    throw std::invalid_argument("GdnShape: head counts and head dims must be >= 1");
  }
}

}  // namespace

TokenRaw draw_token(const GdnShape& s, std::mt19937_64& rng) {
  check_dims(s);
  TokenRaw t;
  t.q = normal_bf16(size_t(s.heads_qk) * s.head_dim_k, rng);
  t.k = normal_bf16(size_t(s.heads_qk) * s.head_dim_k, rng);
  t.v = normal_bf16(size_t(s.heads_v) * s.head_dim_v, rng);
  t.a = normal_bf16(size_t(s.heads_v), rng);
  t.b = normal_bf16(size_t(s.heads_v), rng);
  return t;
}

std::vector<TokenRaw> draw_tokens(const GdnShape& s, int n, std::mt19937_64& rng) {
  std::vector<TokenRaw> out;
  out.reserve(size_t(std::max(n, 0)));
  for (int i = 0; i < n; ++i) out.push_back(draw_token(s, rng));
  return out;
}

GateParams draw_gate_params(const GdnShape& s, std::mt19937_64& rng) {
  check_dims(s);
  std::uniform_real_distribution<double> a_dist(1.0, 16.0);
  std::uniform_real_distribution<double> log_dt_dist(std::log(1e-3), std::log(1e-1));
  GateParams p;
  p.A_log.resize(s.heads_v);
  p.dt_bias.resize(s.heads_v);
  for (int h = 0; h < s.heads_v; ++h) p.A_log[h] = round_to_fp32(std::log(a_dist(rng)));
  for (int h = 0; h < s.heads_v; ++h) {
    const double dt = std::exp(log_dt_dist(rng));
    p.dt_bias[h] = round_to_fp32(dt + std::log(-std::expm1(-dt)));
  }
  p.scale = round_to_fp32(1.0 / std::sqrt(double(s.head_dim_k)));
  p.l2norm_eps = 1e-6;
  return p;
}

std::vector<double> draw_state(const GdnShape& s, std::mt19937_64& rng) {
  check_dims(s);
  std::normal_distribution<double> dist(0.0, 1.0 / std::sqrt(double(s.head_dim_k)));
  std::vector<double> x(size_t(s.state_elems()));
  for (double& v : x) v = round_to_fp32(dist(rng));
  return x;
}

}  // namespace kvb::ref
