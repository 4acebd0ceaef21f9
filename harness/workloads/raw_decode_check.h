// Checks one raw-form decode launch of a DecodeProblem against the float64 reference (ref::kvbuffer_raw_decode)
// before it is timed (DESIGN.md section 4).
#pragma once

#include <cuda_runtime_api.h>

#include "harness/workloads/check_support.h"
#include "harness/workloads/decode_problem.h"

namespace kvb {

/// Launches the raw decode of layer-set 0 once (no advance) on poisoned outputs and compares up to three rows (the
/// first, the last, and one that flushes on this step) with the reference: o (tolerance by output dtype); the
/// checkpoint after a flush (the fp32 bar, tol::kStateFp32); otherwise the appended raw entry, which must equal the inputs
/// exactly. Leaves set 0 one token further on. Throws CudaError.
LaunchCheck check_raw_decode_step(const DecodeProblem& p, cudaStream_t stream);

}  // namespace kvb
