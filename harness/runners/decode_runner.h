// The "decode" experiment kind: per-layer decode latency of recurrent and KVBuffer decoding (DESIGN.md section 4).
#pragma once

#include "harness/sweep/experiment_kind.h"

namespace kvb {

/// Axes: variant (recurrent, kvbuffer, kvbuffer_raw: the raw-form buffer, CSV buffer_form "raw"), batch,
/// buffer_size, phase (staggered, aligned), layers, heads_qk, heads_v,
/// head_dim_k, head_dim_v, seed. A recurrent point has no buffer_size or phase.
ExperimentKind decode_experiment_kind();

}  // namespace kvb
