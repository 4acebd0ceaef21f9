// Checks one decode launch of a DecodeProblem against the float64 reference before it is timed (DESIGN.md section 4).
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "harness/workloads/check_support.h"
#include "harness/workloads/decode_problem.h"

namespace kvb {

/// Result of a decode check; state_err covers states (recurrent), checkpoints after a flush and appended deltas
/// (kvbuffer).
using DecodeCheck = LaunchCheck;

/// Launches the decode of layer-set 0 once (no advance) on poisoned outputs and compares up to three rows (the first,
/// the last and, for kvbuffer, one that flushes on this step) with the reference: o (tolerance by output dtype),
/// state or checkpoint or appended entry (fp32: 2e-5); stateless rows from S0 = 0 (a flush's checkpoint is the one
/// materialised). Leaves set 0 one token further on (harmless for timing).
/// Throws CudaError on CUDA failures.
DecodeCheck check_decode_step(const DecodeProblem& p, cudaStream_t stream);

}  // namespace kvb
