// Random GDN layer inputs drawn on the CPU from the Qwen3-Next initialisation distributions, rounded to the dtypes
// the kernels read, so that the float64 reference and a GPU kernel see exactly the same values (DESIGN.md
// sections 2 and 4: never time or check on zeros).
//
// Qwen3-Next initialisation distributions (shape s: H = heads_qk, HV = heads_v, K = head_dim_k, V = head_dim_v):
//   q, k [H][K], v [HV][V]      ~ N(0, 1), rounded to bf16
//   a, b [HV]                   ~ N(0, 1), rounded to bf16
//   A_log[h]                    = log(U(1, 16)), rounded to fp32
//   dt_bias[h]                  = dt + log(-expm1(-dt)) (inverse softplus of dt), dt = exp(U(log 1e-3, log 1e-1)),
//                                 rounded to fp32
//   scale                       = K^-1/2, rounded to fp32; l2norm_eps = 1e-6
//   state S [HV][K][V]          ~ N(0, sd = K^-1/2), rounded to fp32
// Every value is held as double and is exact in its dtype. Draws come from std::mt19937_64; a seed gives the same
// values on every machine that uses the same C++ standard library (the distributions' algorithms are the library's).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "core/gdn_shape.h"
#include "reference/gdn_reference.h"

namespace kvb::ref {

/// One decode token: q, k [H][K], v [HV][V], a, b [HV], all N(0, 1) rounded to bf16.
TokenRaw draw_token(const GdnShape& s, std::mt19937_64& rng);

/// n tokens drawn one after the other with draw_token.
std::vector<TokenRaw> draw_tokens(const GdnShape& s, int n, std::mt19937_64& rng);

/// Gate parameters of one layer: A_log, dt_bias [HV] (fp32-exact), scale = K^-1/2 (fp32-exact), l2norm_eps = 1e-6.
GateParams draw_gate_params(const GdnShape& s, std::mt19937_64& rng);

/// One request's state [HV][K][V] (kv layout), N(0, sd = K^-1/2), rounded to fp32.
std::vector<double> draw_state(const GdnShape& s, std::mt19937_64& rng);

/// Seeded generator bundling the draws above for one shape.
class Qwen3NextInputs {
 public:
  Qwen3NextInputs(const GdnShape& s, uint64_t seed) : shape_(s), rng_(seed) {}

  TokenRaw token() { return draw_token(shape_, rng_); }
  std::vector<TokenRaw> tokens(int n) { return draw_tokens(shape_, n, rng_); }
  GateParams gate_params() { return draw_gate_params(shape_, rng_); }
  std::vector<double> state() { return draw_state(shape_, rng_); }

  const GdnShape& shape() const { return shape_; }
  std::mt19937_64& rng() { return rng_; }

 private:
  GdnShape shape_;
  std::mt19937_64 rng_;
};

}  // namespace kvb::ref
