// Checks one verify and one accept launch of a VerifyProblem against the float64 reference before they are timed
// (DESIGN.md sections 3 and 4).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "harness/workloads/check_support.h"
#include "harness/workloads/verify_problem.h"

namespace kvb {

/// Result of a verify check. state_err covers, recurrent: the intermediate states in scratch and the state after
/// accept; KVBuffer: the draft deltas and the state after accept, materialised (ref::kvbuffer_state) from the
/// device's checkpoint and buffer, and a folded row's stored checkpoint. o_err covers the outputs of every draft of
/// the checked rows (with bf16 checkpoints a folded row's held to 2^-7, as its deltas: DESIGN.md section 4).
struct VerifyCheck : LaunchCheck {
  /// bf16 checkpoints: the stored checkpoints of the rows that folded, element by element against the reference's
  /// fold rounded the same way (empty with fp32 checkpoints).
  Bf16StateUnits folded_checkpoints;
  /// bf16 deltas (VerifyConfig::delta_dtype): the drafts' stored deltas of the first verify, element by element against
  /// the reference's rounded the same way (empty with fp32 deltas).
  Bf16StateUnits stored_deltas;
};

/// The row a check compares besides the first and the last, or -1: kvbuffer, the first whose accept from its position
/// `fill[slot]` overflows the buffer, else the first it fills (either leaves the row due, holding B entries or more);
/// recurrent, the first whose accepted count differs from those of the first and the last row. `fill` [N]
/// slot-indexed (unused for recurrent).
int verify_check_row(const VerifyProblem& p, const std::vector<int32_t>& fill);

/// Launches layer-set 0's verify on NaN-poisoned outputs (and poisoned scratch, or the buffer positions that receive
/// the drafts' entries), then its accept (no advance of positions), and compares up to three rows with the reference
/// (ref::recurrent_verify, ref::kvbuffer_verify, ref::kvbuffer_accept): the first, the last, and a third row chosen
/// to differ (kvbuffer: one whose accept overflows or fills the buffer; recurrent: one whose accepted count differs
/// from the other two). Compared: o of every draft (tolerance by output dtype); recurrent: scratch states and the
/// pool's state after accept (state a - 1, or the old state for a = 0); kvbuffer: the drafts' deltas in the buffer,
/// their log-decays and the materialised state after accepting a drafts, read at position
/// fill_after_commit(fill, a, B). KVBuffer then runs the step's commit (launch_kvbuffer_commit_accepted: positions
/// compared with fill_after_commit) and verifies the same drafts again: rows left due (B entries or more) fold their
/// buffer into the checkpoint there; outputs and the materialised state are compared once more (folded_rows counts
/// them), and the second verify's draft deltas and log-decays too. States 2e-5.
/// bf16 checkpoints (VerifyConfig::state_dtype; DESIGN.md section 4): the reference starts from the bf16 values the
/// device holds, folds a due row's checkpoint and rounds it to bf16 before its drafts read it (as the kernel does),
/// and starts the second verify from what the device then holds (so that one rounding difference is not carried
/// into the next). Values both sides compute from the same stored checkpoint (a row that did not fold: its drafts'
/// deltas, its state after accept) keep the fp32 bar, 2e-5; a folded row's stored checkpoint, drafts' deltas and
/// state after accept are within tol::state(bf16) = 2^-7, and every element of its stored checkpoint within one
/// bf16 unit of the reference's (Bf16StateUnits; folded_checkpoints counts them); outputs as with fp32.
/// bf16 deltas (VerifyConfig::delta_dtype, with bf16 checkpoints): the reference rounds its drafts' deltas to bf16 as
/// the pool stores them (their outputs take them unrounded, as the kernel's do); the stored deltas and the state after
/// accept are within 2^-7 and every stored delta within one bf16 unit of the reference's (stored_deltas counts them).
/// A raw-form problem is checked by check_raw_verify_step (raw_verify_check.h).
/// Leaves set 0 with its pools changed and, for kvbuffer, its positions one commit further (timing restores them
/// with restore_fill). Throws CudaError.
VerifyCheck check_verify_step(const VerifyProblem& p, cudaStream_t stream);

}  // namespace kvb
