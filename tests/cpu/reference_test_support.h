// Test support for the float64 reference tests: prepared tokens drawn from the Qwen3-Next distributions.
#pragma once

#include <random>
#include <vector>

#include "reference/gdn_reference.h"
#include "reference/qwen3_next_inputs.h"

namespace kvb::ref {

/// n tokens drawn one after the other (draw_tokens) and prepared with gate parameters p.
inline std::vector<TokenPrepared> prepared_tokens(const GdnShape& s, const GateParams& p, int n,
                                                  std::mt19937_64& rng) {
  std::vector<TokenPrepared> out;
  for (const TokenRaw& t : draw_tokens(s, n, rng)) out.push_back(prepare_token(s, t, p));
  return out;
}

}  // namespace kvb::ref
