// Byte model of one speculative-verification model step, summed over a batch whose rows have their own buffer
// positions and accepted counts (per-row formulas in byte_model/byte_model.h, and byte_model/byte_model_raw.h for the
// raw form; DESIGN.md sections 3 and 4).
#pragma once

#include <cstdint>
#include <vector>

#include "byte_model/byte_model.h"
#include "core/gdn_shape.h"

namespace kvb {

/// Buffer position after a raw-form accept of `accepted` drafts (launch_kvbuffer_advance_accepted): 0 when
/// fill + accepted >= buffer_size (the accept flushed), else fill + accepted.
int fill_after_accept(int fill, int accepted, int buffer_size);
/// Buffer position after a delta-form accept of `accepted` drafts (launch_kvbuffer_commit_accepted):
/// (fill >= buffer_size ? 0 : fill) + accepted, up to B - 1 + m; the next verify folds a row at B or beyond.
int fill_after_commit(int fill, int accepted, int buffer_size);
/// Buffer position after one accept of the given form.
int fill_after(BufferForm form, int fill, int accepted, int buffer_size);

/// One launch_kvbuffer_advance_accepted or launch_kvbuffer_commit_accepted over `rows` rows: slot, accepted count
/// and fill read, fill written (12 bytes read and 4 written per row).
ByteCount kvbuffer_advance_accepted_bytes(int rows);

/// What the per-row sums need. Rows are not padding.
struct VerifyBatch {
  GdnShape shape;
  bool kvbuffer = false;        ///< KVBuffer verify + accept, else recurrent verify + accept
  BufferForm form = BufferForm::delta;  ///< what the KVBuffer stores (kvbuffer)
  int draft_tokens = 1;         ///< m
  int buffer_size = 1;          ///< B (kvbuffer)
  int layers = 1;               ///< layers per model step (the advance's share is divided among them)
  OutputDtype o_dtype = OutputDtype::bf16;
  /// Element type of the states (recurrent) or checkpoints (KVBuffer): every state and checkpoint term counts 4
  /// bytes an element for fp32, 2 for bf16 (a due row's checkpoint read and written); the buffered entries do not
  /// change with it.
  StateDtype state_dtype = StateDtype::fp32;
  /// Element type of the KVBuffer's deltas (delta form): 4 bytes an element for fp32, 2 for bf16, in every entry
  /// read and written.
  StateDtype delta_dtype = StateDtype::fp32;
  std::vector<int32_t> fill;      ///< [rows] buffer position of each row before the first step (kvbuffer)
  std::vector<int32_t> accepted;  ///< [rows] accepted drafts of each row, 0 .. m
};

/// Rows: accepted in [0, draft_tokens], fill in [0, B - 1 + m] (delta form) or [0, B - 1] (raw form); else the sums
/// throw std::invalid_argument naming the row (and so they do for the raw form with state_dtype bf16).
///
/// Model bytes of one layer's verify launch. Recurrent: recurrent_verify_bytes; KVBuffer: the sum over rows of
/// kvbuffer_verify_bytes (raw form: kvbuffer_raw_verify_bytes) at each row's position, plus gate_param_bytes once;
/// state terms in b.state_dtype.
/// Verify moves no buffer position, so every verify-only step costs the same. Throws std::invalid_argument when fill
/// and accepted differ in length.
ByteCount verify_layer_step_bytes(const VerifyBatch& b);

/// Model bytes per layer-step of verify + accept, averaged over `steps` model steps that start at the rows' positions.
/// Recurrent: the verify bytes plus recurrent_accept_bytes per row (the same every step). KVBuffer: per step, verify of
/// every row at its position of that step (raw form: and kvbuffer_raw_accept_bytes; the delta form has no accept
/// launch), plus the step's kvbuffer_advance_accepted_bytes divided by `layers`; positions then move by fill_after,
/// simulated here on the host exactly as the device moves them (a delta-form row due at a step pays its flush in that
/// verify). Throws std::invalid_argument when steps < 1.
ByteCount verify_accept_layer_step_bytes(const VerifyBatch& b, int steps);

}  // namespace kvb
