// The GPU side of `kvb check-golden`: runs the kernels on a golden case and compares them with its float64 values.
#pragma once

#include <string>
#include <vector>

#include "reference/golden_case.h"

namespace kvb {

/// The engines check_golden_gpu runs: "gpu-recurrent" (recurrent decode) and "gpu-kvbuffer" (KVBuffer decode and
/// flush).
inline const std::vector<std::string>& golden_gpu_engines() {
  static const std::vector<std::string> engines{"gpu-recurrent", "gpu-kvbuffer"};
  return engines;
}

/// Why the GPU kernels cannot run golden case `c` (its shape is one they do not take: validate_shape, with the
/// shapes they take), or "" when they can. Host code: needs no device.
std::string golden_gpu_skip_reason(const ref::GoldenCase& c);

/// Runs the GPU kernels (engine "gpu") on golden case `c` (tokens one at a time from its initial state) and compares
/// their outputs o, final_state and, when present, states with the golden values: max_rel_err per head relative to
/// that head's largest golden magnitude, against the DESIGN.md section 4 tolerances. One TensorCheck per tensor and
/// kernel. Requires a CUDA device and a case golden_gpu_skip_reason passes; throws std::invalid_argument for a case
/// it does not pass, kvb::CudaError on CUDA failures.
std::vector<ref::TensorCheck> check_golden_gpu(const ref::GoldenCase& c);

}  // namespace kvb
