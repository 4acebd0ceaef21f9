// Tolerances against the float64 reference, per head, relative to the largest magnitude of that tensor in that head
// (DESIGN.md section 4).
#pragma once

#include "core/gdn_shape.h"

namespace kvb::tol {

constexpr double kStateFp32 = 2e-5;    ///< fp32 states, checkpoints and buffered deltas (CUDA cores), any step count
constexpr double kOutputFp32 = 2e-5;   ///< fp32 outputs
constexpr double kOutputBf16 = 8e-3;   ///< bf16 outputs (8 significant bits)
constexpr double kTensorCore = 1e-3;   ///< bf16/TF32 matrix-unit paths, states and fp32 outputs
constexpr double kGolden = 1e-6;       ///< float64 reference against the golden files

/// Output tolerance for an output dtype.
constexpr double output(OutputDtype d) { return d == OutputDtype::bf16 ? kOutputBf16 : kOutputFp32; }

}  // namespace kvb::tol
