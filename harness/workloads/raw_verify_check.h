// Checks one raw-form verify and accept launch of a VerifyProblem against the float64 reference
// (ref::kvbuffer_raw_verify, ref::kvbuffer_raw_accept) before they are timed (DESIGN.md sections 3 and 4).
#pragma once

#include <cuda_runtime_api.h>

#include "harness/workloads/check_support.h"
#include "harness/workloads/verify_problem.h"

namespace kvb {

/// For a raw-form problem (p.raw()): launches layer-set 0's raw verify on NaN-poisoned outputs, then its raw accept
/// (no advance of positions), and compares the rows of verify_check_row (the first, the last, and one whose accept
/// flushes) with the reference. o_err: o [m, HV, V] of every draft (tolerance by output dtype). state_err: the
/// checkpoint [HV, K, V] fp32 after an accept that flushes (fill + a >= B; the fp32 bar, tol::kStateFp32, which the
/// accept's TF32 hi + lo fold meets). Otherwise the checkpoint must be unchanged and the buffer's raw entries (k, v, a, b, bf16), the a appended
/// drafts' inputs included, must equal the reference's exactly. Leaves set 0 with one accept applied and its
/// positions not advanced. Throws CudaError.
LaunchCheck check_raw_verify_step(const VerifyProblem& p, cudaStream_t stream);

}  // namespace kvb
