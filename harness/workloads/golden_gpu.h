// The GPU side of `kvb check-golden`: runs the kernels on a golden case and compares them with its float64 values.
#pragma once

#include <vector>

#include "reference/golden_case.h"

namespace kvb {

/// Runs the GPU kernels (engine "gpu") on golden case `c` (tokens one at a time from its initial state) and compares
/// their outputs o, final_state and, when present, states with the golden values: max_rel_err per head relative to
/// that head's largest golden magnitude, against the DESIGN.md section 4 tolerances. One TensorCheck per tensor and
/// kernel. Requires a CUDA device; throws kvb::CudaError on CUDA failures.
std::vector<ref::TensorCheck> check_golden_gpu(const ref::GoldenCase& c);

}  // namespace kvb
