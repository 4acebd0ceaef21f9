// The "decode" experiment kind: per-layer decode latency of recurrent and KVBuffer decoding (DESIGN.md section 4).
#pragma once

#include <string>
#include <vector>

#include "harness/workloads/decode_problem.h"
#include "harness/sweep/experiment_kind.h"

namespace kvb {

/// The decode kind's result columns, in order (kinds that time decode steps share them): output_dtype, entry_dtypes
/// (entry_dtypes.h), the timing, byte model, check and run columns.
std::vector<std::string> decode_result_columns();

/// Times one decode workload and returns its row (decode_result_columns; entry_dtypes of cfg's variant and buffer
/// form): lays `cfg` out for the context's L2 mode (cold: replicas from step_working_set_bytes), checks a step against
/// the reference, times CUDA-graph replays of whole flush cycles, profiles their DRAM bytes. `label` names the NVTX
/// range. Throws on failure.
Row run_decode(DecodeConfig cfg, const std::string& label, SweepContext& ctx);

/// Axes: variant (recurrent, kvbuffer, and the peers of harness/kinds/peer_variants.h, measured by the peer runner:
/// peer_point.h), batch, buffer_size, buffer_form (delta: corrected deltas; raw: the raw k, v, a, b of DESIGN.md
/// section 3), phase (staggered, aligned), launch, tile, layers, heads_qk, heads_v, head_dim_k, head_dim_v, seed.
/// A recurrent point has no buffer_size, buffer_form or phase; a peer point none of those, nor launch or tile (it is
/// launched as its package launches it, one plain launch per layer, with its own tiles). Result columns:
/// decode_result_columns(), then peer_result_columns() (added later, as discarded_samples and entry_dtypes: older
/// CSVs resume with them empty).
ExperimentKind decode_experiment_kind();

}  // namespace kvb
