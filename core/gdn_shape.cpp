#include "core/gdn_shape.h"

#include <string>

namespace kvb {

std::string validate_shape(const GdnShape& s) {
  const int k = s.head_dim_k;
  if (k != 32 && k != 64 && k != 128 && k != 256)
    return "head_dim_k = " + std::to_string(k) + " is not supported (allowed: 32, 64, 128, 256)";
  if (s.head_dim_v < 4 || s.head_dim_v > 1024 || s.head_dim_v % 4 != 0)
    return "head_dim_v = " + std::to_string(s.head_dim_v) + " is not supported (allowed: a multiple of 4 in [4, 1024])";
  if (s.heads_qk < 1) return "heads_qk = " + std::to_string(s.heads_qk) + " must be >= 1";
  if (s.heads_v < 1 || s.heads_v % s.heads_qk != 0)
    return "heads_v = " + std::to_string(s.heads_v) + " must be a positive multiple of heads_qk = " +
           std::to_string(s.heads_qk);
  return "";
}

}  // namespace kvb
