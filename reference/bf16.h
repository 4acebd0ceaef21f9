// bf16 and fp32 rounding of float64 values, for drawing inputs that are exact in the dtypes the kernels read.
// Header-only plain C++ (usable from CUDA host code).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace kvb::ref {

/// Rounds x to the nearest fp32 value (IEEE round-to-nearest-even), returned as double.
inline double round_to_fp32(double x) { return double(static_cast<float>(x)); }

/// bf16 bit pattern of fp32 value f, round-to-nearest-even on the 16 dropped mantissa bits. NaN stays a (quiet) NaN;
/// values beyond the bf16 range round to +-inf.
inline uint16_t bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if (std::isnan(f)) return uint16_t((u >> 16) | 0x0040u);
  const uint32_t lsb = (u >> 16) & 1u;
  u += 0x7FFFu + lsb;
  return uint16_t(u >> 16);
}

/// fp32 value of a bf16 bit pattern (exact).
inline float bf16_to_float(uint16_t bits) {
  const uint32_t u = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// Rounds x to bf16 (8 significant bits) through fp32: x -> fp32 (nearest even) -> bf16 (nearest even), returned
/// as double. The result is exactly representable in bf16, fp32 and double.
inline double round_to_bf16(double x) { return double(bf16_to_float(bf16_bits(static_cast<float>(x)))); }

}  // namespace kvb::ref
