// Tolerances against the float64 reference, per head, relative to the largest magnitude of that tensor in that head
// (DESIGN.md section 4).
#pragma once

#include "core/gdn_shape.h"

namespace kvb::tol {

constexpr double kStateFp32 = 2e-5;    ///< fp32 states, checkpoints and buffered deltas (CUDA cores), any step count
constexpr double kOutputFp32 = 2e-5;   ///< fp32 outputs
/// fp32 outputs of speculative verification: each sums the checkpoint's, the buffer's and the earlier drafts' shares
/// (products of 128 terms and more, with cancellation), whose fp32 rounding reaches 7e-5 of a head's largest output
/// on CUDA cores (FMA chains) and 1.3e-4 on tensor cores (whose fp32 accumulation truncates) where the buffer is
/// short.
constexpr double kVerifyOutputFp32 = 2e-4;
constexpr double kOutputBf16 = 8e-3;   ///< bf16 outputs (8 significant bits)
constexpr double kTensorCore = 1e-3;   ///< bf16/TF32 matrix-unit paths, states and fp32 outputs
constexpr double kGolden = 1e-6;       ///< float64 reference against the golden files
/// bf16 stored states and checkpoints, against a float64 run that rounds them where the kernel stores them: the
/// kernel's fp32 value and the float64 one can round to neighbouring bf16 values, one unit in the last place, which
/// is at most 2^-7 of the head's largest element (8 significant bits).
constexpr double kStateBf16 = 1.0 / 128;

/// State tolerance for a stored state dtype (CUDA-core kernels).
constexpr double state(StateDtype d) { return d == StateDtype::bf16 ? kStateBf16 : kStateFp32; }
/// Output tolerance for an output dtype.
constexpr double output(OutputDtype d) { return d == OutputDtype::bf16 ? kOutputBf16 : kOutputFp32; }
/// Output tolerance of KVBuffer verify's drafts: kOutputBf16 for bf16 outputs, kVerifyOutputFp32 for fp32 ones.
constexpr double verify_output(OutputDtype d) { return d == OutputDtype::bf16 ? kOutputBf16 : kVerifyOutputFp32; }
/// The same for a row that folded its bf16 checkpoint: its drafts read its own rounded fold, which can sit one bf16
/// unit from the reference's in a few elements, so its outputs, like its deltas, are held to at least kStateBf16
/// (DESIGN.md section 4).
constexpr double folded_bf16_verify_output(OutputDtype d) {
  return verify_output(d) > kStateBf16 ? verify_output(d) : kStateBf16;
}

}  // namespace kvb::tol
