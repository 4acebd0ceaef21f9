// Byte model: the fewest bytes each kernel family must move through device memory, and the floor they imply.
// One place for every family; the sweep's model_bytes and floor_us come from here (DESIGN.md section 4).
//
// Counted, per layer and decode step, for rows that are not padding:
//   recurrent decode   state read + state write (fp32, HV*K*V*4 each), q, k (H*K bf16 each), v (HV*V bf16),
//                      a, b (HV bf16 each), slot index (4), output o (HV*V in the output dtype); A_log and dt_bias
//                      once per launch (HV*4 each).
//   kvbuffer decode    checkpoint read (HV*K*V*4); the n buffered entries read, each H*K*2 (raw bf16 keys, per key
//                      head) + HV*V*4 (fp32 corrected deltas) + HV*4 (fp32 log-decay); then either the new entry
//                      written (same size) or, on the flush step (n + 1 = B), the checkpoint written; inputs, output,
//                      slot as above, plus fill (4).
//   stateless decode   (has_state 0) no checkpoint read: the n entries, inputs, output, slot, state_slot, has_state
//                      and fill read; the new entry written, or on the flush step the materialised state (not read).
//   stateless prefill  L tokens' inputs and outputs, slot, state_slot, prompt_len; L entries written (or one state
//                      when L = B); nothing read from the pool.
//   kvbuffer advance   once per model step: slot (4) + fill read and write (8) per row; a per-layer figure divides it
//                      by the layer count.
//   recurrent verify   state read once, m intermediate states written, m tokens' inputs and outputs.
//   recurrent accept   a state read and written per row that accepted at least one draft.
//   kvbuffer verify    checkpoint and the n entries read, m tokens' inputs and outputs, m deltas and log-decays
//                      written (no state written).
//   kvbuffer accept    a entries read from the draft arrays and appended; or, when n + a >= B, the checkpoint read
//                      and written with all n + a entries read.
// Every state, checkpoint and intermediate state term counts HV*K*V elements of the state dtype (StateDtype: 4 bytes
// fp32, the default, or 2 bf16); the buffered entries keep their fp32 deltas and log-decays either way, except in
// KVBuffer verify, whose deltas may be bf16 (delta_dtype: HV*V*2 an entry).
// Cycle means: over a whole flush cycle a row sees n = 0 .. B-1 once each: mean entries read (B-1)/2, one checkpoint
// write and B-1 appends per B steps. This holds for staggered and aligned phases alike.
#pragma once

#include <cstdint>

#include "core/gdn_shape.h"

namespace kvb {

/// Bytes read and written through device memory.
struct ByteCount {
  double read = 0;
  double write = 0;
  double total() const { return read + write; }
  ByteCount& operator+=(const ByteCount& o) {
    read += o.read;
    write += o.write;
    return *this;
  }
};

/// Bytes of one buffered entry of one request in one layer (delta form): H*K*2 + HV*V*d + HV*4, d the deltas' bytes
/// an element (4 fp32, the default; 2 bf16: KVBufferPool::delta_dtype).
double kvbuffer_entry_bytes(const GdnShape& s, StateDtype delta_dtype = StateDtype::fp32);

/// Inputs (q, k, v, a, b) and outputs of `tokens` tokens of one layer.
ByteCount token_io_bytes(const GdnShape& s, int tokens, OutputDtype o_dtype);
/// A_log and dt_bias, read once per launch: 2 * HV * 4.
double gate_param_bytes(const GdnShape& s);

/// Inputs, output and slot index of `rows` decode rows, plus the per-launch gate parameters.
ByteCount decode_io_bytes(const GdnShape& s, int rows, OutputDtype o_dtype);

/// Recurrent decode of `rows` rows (one layer, one step).
ByteCount recurrent_decode_bytes(const GdnShape& s, int rows, OutputDtype o_dtype,
                                 StateDtype state_dtype = StateDtype::fp32);

/// A buffered decode step of `rows` rows holding `fill` entries of `entry_bytes` each (the delta and raw forms differ
/// only in the entry): checkpoint and entries read, then the new entry written, or the checkpoint when the step
/// flushes (fill + 1 = buffer_size); plus the token's inputs and outputs.
ByteCount buffered_decode_bytes(const GdnShape& s, int rows, int buffer_size, int fill, double entry_bytes,
                                OutputDtype o_dtype, StateDtype state_dtype = StateDtype::fp32);

/// buffered_decode_bytes averaged over fill = 0 .. buffer_size - 1 (one whole flush cycle, per step).
ByteCount buffered_decode_cycle_bytes(const GdnShape& s, int rows, int buffer_size, double entry_bytes,
                                      OutputDtype o_dtype, StateDtype state_dtype = StateDtype::fp32);

/// KVBuffer decode of `rows` rows that all hold `fill` entries before the step (one layer, one step).
ByteCount kvbuffer_decode_bytes(const GdnShape& s, int rows, int buffer_size, int fill, OutputDtype o_dtype,
                                StateDtype state_dtype = StateDtype::fp32);

/// KVBuffer decode averaged over a whole flush cycle (one layer, per step), any phase arrangement.
ByteCount kvbuffer_decode_cycle_bytes(const GdnShape& s, int rows, int buffer_size, OutputDtype o_dtype,
                                      StateDtype state_dtype = StateDtype::fp32);

/// The once-per-model-step advance of buffer positions for `rows` rows.
ByteCount kvbuffer_advance_bytes(int rows);

/// Stateless KVBuffer decode (has_state 0, DESIGN.md section 3) of `rows` rows that all hold `fill` entries before
/// the step (one layer, one step): no checkpoint read; the fill entries, inputs, output and the per-row slot,
/// state_slot, has_state and fill (13 bytes) read; the new entry written, or on the flush step (fill + 1 = B) the
/// state materialised from zero written (not read).
ByteCount kvbuffer_stateless_decode_bytes(const GdnShape& s, int rows, int buffer_size, int fill, OutputDtype o_dtype,
                                          StateDtype state_dtype = StateDtype::fp32);

/// Stateless prefill of `rows` rows with `prompt_len` tokens each (one layer): the tokens' inputs and outputs, slot,
/// state_slot and prompt_len (12 bytes) per row, gate parameters once; nothing read from the pool; the prompt_len
/// entries written when prompt_len < B, else the state materialised from zero written.
ByteCount kvbuffer_prefill_bytes(const GdnShape& s, int rows, int prompt_len, int buffer_size, OutputDtype o_dtype,
                                 StateDtype state_dtype = StateDtype::fp32);

/// Recurrent verification of `rows` rows with m drafts: state read once, m intermediate states written, m tokens'
/// inputs and outputs, slot indices, gate parameters once.
ByteCount recurrent_verify_bytes(const GdnShape& s, int rows, int draft_tokens, OutputDtype o_dtype,
                                 StateDtype state_dtype = StateDtype::fp32);
/// Recurrent accept of one row that accepted a drafts: a state read and written when a >= 1, else nothing.
ByteCount recurrent_accept_bytes(const GdnShape& s, int accepted, StateDtype state_dtype = StateDtype::fp32);
/// KVBuffer verification of one row holding `fill` entries, m drafts (KVBufferVerifyParams, accept folded in):
/// checkpoint, entries, m tokens' inputs and outputs, m entries written into the buffer (kvbuffer_entry_bytes
/// each); a due row (fill >= B) also writes its checkpoint once, the flush folded into verify, and reads and writes
/// its H arrival counters. Add gate_param_bytes once per launch; the accept itself is the per-step position move.
/// Entries read and written count their deltas in `delta_dtype`.
ByteCount kvbuffer_verify_bytes(const GdnShape& s, int fill, int draft_tokens, int buffer_size, OutputDtype o_dtype,
                                StateDtype state_dtype = StateDtype::fp32,
                                StateDtype delta_dtype = StateDtype::fp32);

/// Floor in microseconds for a kernel moving `b` bytes: each written byte is paired with one read byte at the
/// measured copy bandwidth (which counts read + write bytes), the remaining reads go at the measured read bandwidth:
///   floor = 2 * min(R, W) / copy + (R - min(R, W)) / read + (W - min(R, W)) / copy.
/// Bandwidths in GB/s (1e9 bytes per second). For the recurrent kernel (R ~ W) this is (R + W) / copy.
double floor_us(const ByteCount& b, double copy_gbps, double read_gbps);

}  // namespace kvb
