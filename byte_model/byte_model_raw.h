// Byte model of the KVBuffer raw form (kernels/kvbuffer_raw_params.h; DESIGN.md sections 3 and 4), beside the delta
// form's in byte_model/byte_model.h and counted the same way, for rows that are not padding:
//   raw entry          H*K*2 (key, per key head) + HV*V*2 (value) + 2*HV*2 (a, b): all bf16
//   raw decode         checkpoint read + n raw entries read + fill (4); then the new raw entry written, or on the flush
//                      step (n + 1 = B) the checkpoint written; inputs, output, slot as for every decode.
//   raw verify         checkpoint + n raw entries read, m tokens' inputs and outputs; nothing else written.
//   raw accept         a drafts' raw inputs (k, v, a, b) read and appended; or, when n + a >= B, the checkpoint read
//                      and written with the n buffered entries and the a drafts' raw inputs read.
// Memory per request of a raw buffer of L entries: L raw entries (Qwen3-Next TP1, L = 64: 794,624 B per layer,
// 0.38 of the 2 MiB fp32 state).
#pragma once

#include "byte_model/byte_model.h"

namespace kvb {

/// Bytes of one raw entry of one request in one layer: H*K*2 + HV*V*2 + 2*HV*2.
double raw_entry_bytes(const GdnShape& s);

/// Device memory one request's raw buffer of `entries` entries holds in one layer.
double raw_buffer_bytes(const GdnShape& s, int entries);

/// Raw-form decode of `rows` rows that all hold `fill` entries before the step (one layer, one step).
ByteCount kvbuffer_raw_decode_bytes(const GdnShape& s, int rows, int buffer_size, int fill, OutputDtype o_dtype);

/// Raw-form decode averaged over a whole flush cycle (one layer, per step), any phase arrangement.
ByteCount kvbuffer_raw_decode_cycle_bytes(const GdnShape& s, int rows, int buffer_size, OutputDtype o_dtype);

/// Raw-form verification of one row holding `fill` entries, m drafts (add gate_param_bytes once per launch).
ByteCount kvbuffer_raw_verify_bytes(const GdnShape& s, int fill, int draft_tokens, OutputDtype o_dtype);

/// Raw-form accept of one row holding `fill` entries that accepted a drafts.
ByteCount kvbuffer_raw_accept_bytes(const GdnShape& s, int fill, int accepted, int buffer_size);

}  // namespace kvb
