// The "accuracy" experiment kind: how far recurrent decode and KVBuffer decode drift from the float64 reference over
// a long decode, with fp32 or bf16 states, from the same inputs (DESIGN.md section 4; harness/workloads/accuracy_run.h).
#pragma once

#include <string>
#include <vector>

#include "harness/sweep/experiment_kind.h"

namespace kvb {

/// Axes: variant (recurrent, kvbuffer), batch (rows, 1 to 64; default 2), buffer_size (kvbuffer), tokens (1 to
/// 16384; default 4096), heads_qk, heads_v, head_dim_k, head_dim_v, seed, state_dtype (fp32, bf16; default both). One
/// layer.
/// Result columns: output_dtype (fp32: the outputs are compared unrounded), entry_dtypes (entry_dtypes.h: the delta
/// form's on kvbuffer rows, empty on recurrent ones; absent from older CSVs), then for each token count T of
/// accuracy_checkpoints() state_err_at_T (the state after T tokens; KVBuffer: its checkpoint with the buffered
/// entries folded in) and o_err_at_T (the largest output error over the first T tokens), empty past the run's length;
/// then tokens_run, state_err_last, o_err_last (at the run's last token). Errors per head, relative to the head's
/// largest element of the float64 reference, the largest over the rows. Nothing is timed.
ExperimentKind accuracy_experiment_kind();

/// The result columns of the kind, in order.
std::vector<std::string> accuracy_result_columns();

}  // namespace kvb
