// A KVBuffer pool (delta form) on the device with its float64 twin, and one speculative round on it: verify m drafts
// of every row, check them against the reference, then accept (the commit). Shared by the verify tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cuda_check.h"
#include "kernels/gdn_params.h"
#include "reference/gdn_reference.h"
#include "reference/qwen3_next_inputs.h"

namespace kvb::test {

/// A KVBuffer pool on the device with its float64 twin: slots brought to given buffer positions by real decode steps.
/// Entries past a slot's fill are poisoned (NaN) before every verify round, so that a kernel that reads one fails.
struct KVBufferRig {
  GdnShape s;
  int S, B;
  ref::Qwen3NextInputs gen;
  ref::GateParams gp;
  std::vector<ref::KVBufferSlot> ref_slot;
  DeviceBuffer<float> ck, deltas, log_decay;
  DeviceBuffer<bf16> keys;
  DeviceBuffer<int32_t> fill;

  int cap;  ///< entries per slot: B - 1 + the most drafts verified (capacity rule of KVBufferVerifyParams)
  int max_rows;  ///< rows a verify launch may have (group_arrivals is sized for them)
  DeviceBuffer<int32_t> arrivals;

  /// `slots` slots with random checkpoints (one Qwen3-Next state draw, shifted and sign-flipped per slot) and
  /// empty buffers; verify launches of up to `max_rows` rows (0: slots + 1,
  /// room for one padding row).
  KVBufferRig(const GdnShape& shape, int slots, int buffer_size, uint64_t seed, int max_drafts, int max_rows = 0);

  KVBufferPool pool() const;
  /// Decodes one token on every slot listed (row r -> slots[r], -1 skips), on the device and in the reference.
  void decode(const std::vector<int32_t>& slots);
  /// Brings slot i (row i) from an empty buffer to buffer position positions[i] (at most B - 1): B - 1 decode steps,
  /// row i padding once its slot has reached its position.
  void decode_to_positions(const std::vector<int>& positions);
  /// Slots whose buffer is due (fill >= B): the next verify folds them.
  int due_slots() const;
  /// Sets every entry at or past each slot's fill (keys, deltas, log-decays) to NaN (0xff bytes): no kernel may read
  /// them.
  void poison_entries_past_fill();
  /// Expects each slot's fill on the device to equal its reference entry count.
  void expect_fill_matches_reference() const;
  /// Largest per-head error of every slot's materialised state against the reference (a fold of every entry into
  /// the checkpoint on both sides: costly at the Qwen3-Next shape); expects the fills to match too.
  double state_err() const;
  /// Per-head error of slot `slot`'s checkpoint against the reference's.
  double checkpoint_err(int slot) const;
  /// Largest checkpoint_err over every slot (no fold: cheap beside state_err).
  double checkpoints_err() const;
};

/// How a verify + accept round launches and what it checks besides every output and entry.
struct RoundLaunch {
  VerifyKernel kernel = VerifyKernel::cuda_cores;
  OutputDtype o_dtype = OutputDtype::fp32;
  /// After accept, every slot's materialised state (KVBufferRig::state_err, costly at the Qwen3-Next shape); without
  /// it, every slot's fill (the checkpoints a due row's fold writes are checked either way).
  bool materialised_states = true;
};

/// Largest errors one round met, relative per head: outputs, drafts' corrected deltas, and the checkpoints its
/// verify folded (due rows); and how many rows it folded.
struct RoundErrors {
  double o = 0, delta = 0, checkpoint = 0;
  int folded = 0;
  /// The larger of the delta and checkpoint errors: what a state built from them is off by.
  double state() const { return delta > checkpoint ? delta : checkpoint; }
};

/// One round on the rig: poisons the entries past every fill and the outputs, verifies m fresh drafts of each row
/// (row r -> slots[r], -1 padding) with launch.kernel, and checks against ref::kvbuffer_verify every row's outputs
/// (launch.o_dtype, verify_output_tol), the drafts' entries in the pool (raw keys bit for bit, corrected deltas
/// within tol::kStateFp32, log-decays), the checkpoints of due rows after their fold (tol::kStateFp32), zero outputs
/// of padding rows and the arrival counters back at zero; then accepts acc[r] drafts of row r
/// (launch_kvbuffer_commit_accepted and ref::kvbuffer_accept) and checks the states (RoundLaunch). Failure messages
/// name the row, the slot and the draft; the caller's SCOPED_TRACE names the kernel, B, m and round. `errors`
/// (optional) receives the largest errors.
void verify_accept_round(KVBufferRig& rig, const std::vector<int32_t>& slots, int m, const std::vector<int32_t>& acc,
                         const RoundLaunch& launch = {}, RoundErrors* errors = nullptr);

/// The fewest rows at which the verify launcher gives the CUDA-core kernel whole value heads (128-column blocks at
/// K = 128; kernels/kvbuffer_verify.cu, dispatch_verify: batch x HV >= 4 blocks an SM): a production batch.
int whole_head_rows(const GdnShape& s);

/// "cuda_cores B=8 m=4": what a SCOPED_TRACE of a verify test names.
std::string verify_case(VerifyKernel k, int buffer_size, int m);

/// The launch describe_kvbuffer_verify_launch reports, in words, for a trace: the CUDA-core kernel's variant (keys
/// in shared memory, packed draft rows, keys from the pool), its shared memory and blocks an SM.
std::string launch_words(const KVBufferVerifyLaunch& d);

}  // namespace kvb::test
