// The "short_context" experiment kind: per-layer decode latency and memory per request over the context length, for
// recurrent decoding and KVBuffer decoding, whose requests are stateless while their context is shorter than the
// buffer (DESIGN.md sections 3 and 4).
#pragma once

#include "harness/sweep/experiment_kind.h"
#include "core/gdn_shape.h"

namespace kvb {

/// Axes: variant (recurrent, kvbuffer), context_len (1 to 65536), batch, buffer_size, phase, layers, heads_qk,
/// heads_v, head_dim_k, head_dim_v, seed. Every request of a point has context length L = context_len.
///   kvbuffer, L < B: stateless requests holding L entries and no state; each timed step is the decode step at
///     context L (positions held at L, no advance: see DecodeConfig::context_len); phase does not matter.
///   kvbuffer, L >= B: stateful requests (the prefill's flush at L = B materialised the state) timed exactly as the
///     decode kind times them, over whole flush cycles at the point's phase.
///   recurrent: a state per request; latency does not depend on L, so its points have no context_len (nor
///     buffer_size, phase): one row per batch, drawn as a horizontal line against the KVBuffer rows.
/// Columns: the decode kind's, plus stateless (true, false), state_bytes_per_request and buffer_bytes_per_request
/// (device bytes reserved per request over all `layers` GDN layers: states of the point's state_dtype; buffers of
/// max(B - 1, 1) entries), after the state_dtype axis (fp32 or bf16; the kind's, decode_runner.h).
ExperimentKind short_context_experiment_kind();

/// Bytes of state one request holds over `layers` layers: 0 when stateless, else layers x HV x K x V x the element
/// bytes of `state_dtype`.
double state_bytes_per_request(const GdnShape& s, int layers, bool stateless,
                               StateDtype state_dtype = StateDtype::fp32);
/// Bytes of KVBuffer one request holds over `layers` layers: layers x max(B - 1, 1) x kvbuffer_entry_bytes
/// (0 for recurrent decoding, buffer_size 0).
double buffer_bytes_per_request(const GdnShape& s, int layers, int buffer_size);

}  // namespace kvb
