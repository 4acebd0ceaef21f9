// The "spec_verify" experiment kind: per-layer latency of speculative verification, recurrent (intermediate states
// in a scratch pool, then copy back) against KVBuffer (drafts verified from checkpoint + buffer, accepted entries
// appended) (DESIGN.md sections 3 and 4).
#pragma once

#include "harness/sweep/experiment_kind.h"

namespace kvb {

/// Axes: variant (recurrent_verify, kvbuffer_verify), batch, draft_tokens (1 to 8), accepted (all, none, or an
/// acceptance rate in (0, 1)), buffer_size (1 to 64; 1 to kMaxRawBuffer in raw form), buffer_form (delta: corrected
/// deltas; raw: the raw k, v, a, b of DESIGN.md section 3) and phase (staggered, aligned) for kvbuffer_verify only,
/// layers, heads_qk, heads_v, head_dim_k, head_dim_v, seed, state_dtype (fp32; bf16 for kvbuffer_verify in the
/// delta form on the tensor-core kernel only: validate_verify_state_dtype_point; rows of older CSVs, which held a
/// result column of that name, read fp32). Each point times verify alone (verify_us_*) and verify +
/// accept (verify_accept_us_*, the per-step advance of buffer positions included), each with half of the point's time
/// budget; both per layer.
ExperimentKind spec_verify_experiment_kind();

}  // namespace kvb
