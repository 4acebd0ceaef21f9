// Host-drawn token inputs on the device: the tokens a float64 reference step reads, uploaded in the dtypes a kernel
// reads them (bf16 q, k, v, a, b; fp32 gate parameters), for runs that draw fresh tokens every step on the host.
#pragma once

#include <vector>

#include "core/cuda_check.h"
#include "kernels/gdn_params.h"
#include "reference/gdn_reference.h"

namespace kvb {

/// `x` rounded to bf16 (nearest even): exact for values drawn as bf16.
std::vector<bf16> to_bf16(const std::vector<double>& x);

/// The tokens of `rows` (one each, [N] of ref::TokenRaw, exact in bf16 as drawn) and the layer's gate parameters on
/// the device; inputs() gives the TokenInputs of a launch (tokens = 1, raw gates). Throws CudaError.
struct DeviceTokens {
  DeviceBuffer<bf16> q, k, v, a, b;
  DeviceBuffer<float> A_log, dt_bias;
  float scale = 0;

  DeviceTokens(const std::vector<ref::TokenRaw>& rows, const ref::GateParams& gp);
  TokenInputs inputs() const;
};

}  // namespace kvb
