// A speculative-verification workload on the GPU (DESIGN.md sections 3 and 4): every layer's pools, m draft tokens per
// row and the accepted counts, filled with Qwen3-Next distributions; the launches of one model step of verify alone
// and of verify + accept (one verify and one accept per layer, KVBuffer positions advanced once per step). A KVBuffer
// workload holds its buffer in delta form or in raw form (kernels/kvbuffer_raw_params.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "harness/workloads/problem_setup.h"
#include "harness/workloads/raw_entry_sets.h"
#include "harness/workloads/verify_accepted.h"
#include "byte_model/byte_model.h"
#include "core/cuda_check.h"
#include "kernels/gdn_params.h"

namespace kvb {

enum class VerifyVariant { recurrent, kvbuffer };

/// What to build. `groups` > 1 replicates the whole model (pools, inputs, buffer positions) for cold-L2 rotation;
/// `share_pools` makes every layer of every group use one set (hot L2), as in DecodeConfig.
struct VerifyConfig {
  VerifyVariant variant = VerifyVariant::recurrent;
  GdnShape shape;
  int batch = 1;
  int draft_tokens = 1;      ///< m, 1 .. kMaxDraftTokens
  AcceptedSpec accepted;     ///< accepted drafts per row, drawn once on the host (draw_accepted with `seed`)
  int buffer_size = 1;       ///< B (kvbuffer only); the pool's capacity is VerifyProblem::capacity()
  BufferForm form = BufferForm::delta;  ///< what the buffer stores (kvbuffer only); raw: B <= kMaxRawBuffer
  bool staggered = true;     ///< row i starts at buffer position i mod B; else every row at 0 (aligned)
  int layers = 36;
  int groups = 1;
  bool share_pools = false;
  /// Recurrent scratch pools [slots, m, HV, K, V] allocated; layer-set s uses scratch s mod scratch_sets.
  /// 0: one per layer-set when device memory allows (free memory minus 2 GiB), else as many as fit (at least one).
  /// A shared scratch pool is then at least 2 GiB, far beyond L2, so its writes still reach DRAM.
  int scratch_sets = 0;
  uint64_t seed = 0;
  OutputDtype o_dtype = OutputDtype::bf16;
  /// Launch every verify, accept and commit with programmatic dependent launch (kernels/pdl.cuh): a layer's verify
  /// streams its states or checkpoints while the previous launch finishes. Needs distinct pools per layer-set (sets()
  /// >= 2) and the recurrent or delta-form kernels; VerifyProblem throws std::invalid_argument otherwise.
  bool pdl = false;
  /// Tile of every verify and accept launch (kernels/gdn_params.h TileShape; auto: the launcher's own choice).
  TileShape tile;
  /// The KVBuffer verify kernel (delta form): automatic (the launcher's choice), cuda_cores or tensor_cores.
  VerifyKernel kernel = VerifyKernel::automatic;
  /// Delta form: every verify launch takes the rows in the order launch_kvbuffer_order_rows writes once per step
  /// (due rows spread over all but the last wave, kernels/row_order.h); false: batch order.
  bool order_rows = true;
  /// Element type of the KVBuffer checkpoints (KVBufferPool::state_dtype). bf16: kvbuffer in the delta form only
  /// (VerifyProblem throws std::invalid_argument for recurrent verification and the raw form, whose kernels keep fp32
  /// states); the verify kernel itself refuses what it cannot take (validate: kernel = cuda_cores, for one).
  StateDtype state_dtype = StateDtype::fp32;
  /// Element type of the KVBuffer's corrected deltas (KVBufferPool::delta_dtype). bf16: kvbuffer in the delta form
  /// with bf16 checkpoints only (VerifyProblem throws std::invalid_argument otherwise), on the staged kernel (the one
  /// verify kernel that takes them; validate refuses a forced cuda_cores or tensor_cores).
  StateDtype delta_dtype = StateDtype::fp32;
};

/// Device memory and launch parameters of one verification workload. Move-only; frees everything on destruction.
/// Layer-steps of one model step: groups * layers. Throws std::invalid_argument on a bad config and CudaError when
/// an allocation or a fill fails.
class VerifyProblem {
 public:
  explicit VerifyProblem(const VerifyConfig& cfg);

  const VerifyConfig& config() const { return cfg_; }
  bool kvbuffer() const { return cfg_.variant == VerifyVariant::kvbuffer; }
  /// KVBuffer in raw form: raw_verify_params / raw_accept_params launch (the delta form has no accept launch).
  bool raw() const { return kvbuffer() && cfg_.form == BufferForm::raw; }
  /// Pool/input sets allocated (1 when share_pools, else groups * layers).
  int sets() const { return sets_; }
  /// Kernel launches of one kind (verify, or accept) per model step: groups * layers.
  int layer_steps() const { return cfg_.groups * cfg_.layers; }
  /// Entries per KVBuffer slot. Delta form: B - 1 + m (verify writes the drafts' deltas after up to B - 1 entries,
  /// and an accept may take the buffer past B until the next verify folds it; KVBufferVerifyParams). Raw form:
  /// max(B - 1, 1) (its accept flushes at B).
  int capacity() const {
    return raw() ? std::max(cfg_.buffer_size - 1, 1) : cfg_.buffer_size - 1 + cfg_.draft_tokens;
  }
  /// Recurrent scratch pools allocated (0 for kvbuffer).
  int scratch_sets() const { return scratch_sets_; }

  /// One model step of verification alone: one verify launch per layer of every group (no state or position moves).
  /// Throws CudaError on a launch failure (also during graph capture).
  void enqueue_verify(cudaStream_t stream) const;
  /// One model step of verify + accept: per layer its verify then its accept (none for the delta form, whose verify
  /// writes the drafts' entries); for kvbuffer then, per group, one launch_kvbuffer_commit_accepted (raw form:
  /// launch_kvbuffer_advance_accepted). Throws CudaError.
  void enqueue_verify_accept(cudaStream_t stream) const;
  /// The verify, or the accept, of one layer-set alone (used by the checks). Throws CudaError.
  void enqueue_verify_layer(int set, cudaStream_t stream) const;
  void enqueue_accept_layer(int set, cudaStream_t stream) const;
  /// Moves the buffer positions of group `group` by the accepted counts, once per model step after its layers'
  /// verifies (and accepts): delta form launch_kvbuffer_commit_accepted (with PDL when configured), raw form
  /// launch_kvbuffer_advance_accepted, then the row order (enqueue_order_rows); nothing for recurrent verification.
  /// Throws CudaError.
  void enqueue_advance_positions(int group, cudaStream_t stream) const;
  /// Writes the row order of position group `group` (0 .. position_groups() - 1) from its buffer positions (nothing
  /// without a row order).
  void enqueue_order_rows(int group, cudaStream_t stream) const;

  /// Parameters of the launches of one set (pointers into this problem's memory).
  RecurrentVerifyParams recurrent_verify_params(int set) const;
  RecurrentAcceptParams recurrent_accept_params(int set) const;
  KVBufferVerifyParams kvbuffer_verify_params(int set) const;
  RawKVBufferVerifyParams raw_verify_params(int set) const;
  RawKVBufferAcceptParams raw_accept_params(int set) const;

  /// Token inputs [sets][N, m, ...] and gate parameters of every set.
  const TokenInputSets& inputs() const { return inputs_; }
  /// Recurrent state pool or KVBuffer checkpoints of a set, [N, HV, K, V] of config().state_dtype elements
  /// (slot-indexed; always fp32 for recurrent and the raw form), and their element and byte counts.
  void* state(int set) const { return state_.get() + size_t(set) * state_bytes_per_set(); }
  size_t state_elems_per_set() const { return size_t(cfg_.batch) * size_t(cfg_.shape.state_elems()); }
  size_t state_bytes_per_set() const { return state_elems_per_set() * size_t(state_elem_bytes(cfg_.state_dtype)); }
  /// Recurrent scratch pool used by a set, [N, m, HV, K, V] fp32.
  float* scratch(int set) const;
  /// KVBuffer verify's arrival counters [N, H] (delta form; else null), zero between launches; one array serves every
  /// set, since launches run one after another on a stream.
  int32_t* group_arrivals() const { return group_arrivals_.get(); }
  /// Outputs [N, m, HV, V] of a set in o_dtype.
  void* o(int set) const { return o_.get() + size_t(set) * o_bytes_per_set(); }
  size_t o_bytes_per_set() const;

  /// The rows in the order group `group`'s verify launches take them, [N] {row, slot} (delta form with order_rows;
  /// else null), written by restore_fill and by each step's commit.
  const OrderedRow* row_order(int group) const {
    return row_order_.get() ? row_order_.get() + size_t(group) * cfg_.batch : nullptr;
  }
  /// Buffer positions of `group` [N] (device, slot-indexed; kvbuffer).
  int32_t* fill(int group) const { return positions_.fill(group); }
  /// Host copy of the positions each group started with, [groups][N] slot-indexed (kvbuffer; empty for recurrent).
  const std::vector<int32_t>& initial_fill() const { return positions_.initial(); }
  /// Resets every group's positions to the initial ones (so that a replay repeats identical work).
  void restore_fill(cudaStream_t stream) const;
  const int32_t* slots() const { return slot_.get(); }
  const std::vector<int32_t>& host_slots() const { return host_slot_; }
  /// Accepted drafts of each row [N] (host copy; the device copy is what the accept launches read).
  const std::vector<int32_t>& accepted() const { return host_accepted_; }
  const int32_t* accepted_device() const { return accepted_.get(); }
  /// Mean accepted drafts per row.
  double mean_accepted() const;

  /// Model bytes per layer-step of verify alone, at the initial positions (verify_bytes.h).
  ByteCount verify_bytes_per_layer_step() const;
  /// Model bytes per layer-step of verify + accept over `steps` model steps from the initial positions, the
  /// advance's share included (verify_bytes.h).
  ByteCount verify_accept_bytes_per_layer_step(int steps) const;
  /// Bytes of device memory this problem holds.
  size_t device_bytes() const { return mem_.bytes(); }

 private:
  int group_of(int set) const { return cfg_.share_pools ? 0 : set / cfg_.layers; }
  /// Groups with their own buffer positions (and row order): one when the pools are shared.
  int position_groups() const { return cfg_.share_pools ? 1 : cfg_.groups; }

  VerifyConfig cfg_;
  int sets_ = 1;
  int scratch_sets_ = 0;
  DeviceFootprint mem_;
  TokenInputSets inputs_;
  DeviceBuffer<unsigned char> state_;  // recurrent state pools, or KVBuffer checkpoints (state_dtype elements)
  DeviceBuffer<float> scratch_;
  KVBufferEntrySets entries_;
  RawKVBufferEntrySets raw_entries_;
  DeviceBuffer<int32_t> group_arrivals_;
  BufferPositions positions_;
  DeviceBuffer<OrderedRow> row_order_;  // [position groups][N]
  int wave_rows_ = 0;             // kvbuffer_verify_wave_rows of the launches
  DeviceBuffer<int32_t> slot_, accepted_;
  DeviceBuffer<unsigned char> o_;
  std::vector<int32_t> host_slot_, host_accepted_;
};

}  // namespace kvb
