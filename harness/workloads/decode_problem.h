// A decode workload on the GPU: every layer's pools, inputs and outputs for one sweep point, filled with Qwen3-Next
// distributions, and the launches of one model step (DESIGN.md section 4: one kernel per layer, each layer with its
// own pools; KVBuffer positions advanced once per step).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "harness/workloads/problem_setup.h"
#include "harness/workloads/raw_entry_sets.h"
#include "byte_model/byte_model.h"
#include "core/cuda_check.h"
#include "kernels/gdn_params.h"

namespace kvb {

enum class DecodeVariant { recurrent, kvbuffer };

/// The order a KVBuffer decode step's launches take the rows in. spread: the order launch_kvbuffer_order_decode_rows
/// writes once per step, after the advance (the flushing rows spread over all but the last wave, kernels/row_order.h);
/// batch: batch order; automatic: spread with bf16 checkpoints, whose flushing blocks take much longer than the others,
/// batch order with fp32 ones, whose blocks' checkpoint stream sets the launch's length (docs/FINDINGS.md).
enum class DecodeRowOrder { automatic, batch, spread };

/// What to build. `groups` > 1 replicates the whole model (its own pools, inputs and buffer positions per group) so
/// that a step's working set exceeds L2 (cold-L2 rotation); `share_pools` makes every layer of every group use one
/// set of pools and inputs (hot L2).
struct DecodeConfig {
  DecodeVariant variant = DecodeVariant::recurrent;
  GdnShape shape;
  int batch = 1;
  int buffer_size = 1;      ///< B (kvbuffer only)
  BufferForm form = BufferForm::delta;  ///< what the buffer stores (kvbuffer only; raw: kernels/kvbuffer_raw_params.h)
  bool staggered = true;    ///< row i starts at buffer position i mod B; else every row at 0 (aligned)
  int layers = 36;
  int groups = 1;
  bool share_pools = false;
  uint64_t seed = 0;
  OutputDtype o_dtype = OutputDtype::bf16;
  StateLayout layout = StateLayout::kv;
  /// kvbuffer only. 0: stateful requests at the phases above. 1 .. buffer_size - 1: stateless short contexts (DESIGN.md
  /// section 3): every request holds context_len entries and no state (has_state 0); positions are not advanced, so
  /// every step is the step at that context (it appends entry context_len, the same position each time). At
  /// context_len = buffer_size - 1 that step is the flush that materialises the state (checkpoint rows assigned then).
  int context_len = 0;
  /// Launch every layer's kernel with programmatic dependent launch (kernels/pdl.cuh): a layer's state streams in
  /// while the previous layer's kernel finishes. Needs consecutive launches on distinct pools (at least two sets, not
  /// share_pools); DecodeProblem throws std::invalid_argument otherwise.
  bool pdl = false;
  /// Tile of every decode launch (kernels/gdn_params.h TileShape; auto: the launcher's own choice).
  TileShape tile;
  /// Element type of the states (recurrent) or checkpoints (kvbuffer). bf16: layout kv and the delta form only
  /// (DecodeProblem throws std::invalid_argument otherwise).
  StateDtype state_dtype = StateDtype::fp32;
  /// kvbuffer, delta form, with states: the order a step's decode launches take the rows in (DecodeRowOrder).
  DecodeRowOrder row_order = DecodeRowOrder::automatic;
};

/// Bytes one model step of `c` touches per group (for the cold-L2 rotation): states (recurrent, stateful KVBuffer), or
/// the buffered entries read and written (stateless, plus the materialised states when the step flushes).
double step_working_set_bytes(const DecodeConfig& c);

/// Device memory and launch parameters of one decode workload. Move-only; frees everything on destruction.
/// Layer-steps of one enqueue_step: groups * layers. Throws CudaError when an allocation or a fill fails.
class DecodeProblem {
 public:
  explicit DecodeProblem(const DecodeConfig& cfg);

  const DecodeConfig& config() const { return cfg_; }
  /// Pool/input sets allocated (1 when share_pools, else groups * layers).
  int sets() const { return sets_; }
  /// Kernel launches (layer-steps) per enqueue_step.
  int layer_steps() const { return cfg_.groups * cfg_.layers; }
  /// Steps in one whole flush cycle: B for kvbuffer, 1 for recurrent and stateless (every step the same).
  int cycle_steps() const { return cfg_.variant == DecodeVariant::kvbuffer && !stateless() ? cfg_.buffer_size : 1; }
  /// Requests are stateless (config context_len > 0, kvbuffer).
  bool stateless() const { return cfg_.variant == DecodeVariant::kvbuffer && cfg_.context_len > 0; }
  /// The stateless step flushes (context_len + 1 = B) and materialises every request's state.
  bool materialises() const { return stateless() && cfg_.context_len + 1 == cfg_.buffer_size; }

  /// Enqueues one model step for every group: one decode launch per layer, then (stateful kvbuffer) the advance of
  /// that group's buffer positions. Throws CudaError on a launch failure (also during graph capture).
  void enqueue_step(cudaStream_t stream) const;
  /// Enqueues the decode of one layer-step (set index) without advancing positions (used by the checks).
  /// `after_order`: the kernel just before it wrote the set's row order, so a PDL launch goes out plain
  /// (KVBufferDecodeParams::row_order).
  void enqueue_layer(int set, cudaStream_t stream, bool after_order = false) const;
  /// Enqueues launch_kvbuffer_order_decode_rows for `group`'s positions (nothing without a row order).
  void enqueue_order_rows(int group, cudaStream_t stream) const;

  /// Parameters of the launch for one set (pointers into this problem's memory).
  RecurrentDecodeParams recurrent_params(int set) const;
  KVBufferDecodeParams kvbuffer_params(int set) const;
  RawKVBufferDecodeParams raw_params(int set) const;
  /// Buffer positions of `group` [batch] (device).
  int32_t* fill(int group) const { return positions_.fill(group); }
  const int32_t* slots() const { return slot_.get(); }
  /// Host copy of the slot index of each row.
  const std::vector<int32_t>& host_slots() const { return host_slot_; }
  /// Host copy of the buffer positions each group started with.
  const std::vector<int32_t>& initial_fill() const { return positions_.initial(); }
  /// Resets every group's buffer positions to their initial values (so that a replay repeats identical work), and
  /// their row orders with them.
  void restore_fill(cudaStream_t stream) const;
  /// The rows in the order group `group`'s decode launches take them, [N] (config row_order, stateful delta form);
  /// null: batch order.
  const OrderedRow* row_order(int group) const {
    return row_order_.get() ? row_order_.get() + size_t(group) * cfg_.batch : nullptr;
  }

  /// Model bytes per layer-step (kernel plus the advance's share), averaged over a whole flush cycle; stateless: the
  /// step at context_len (kvbuffer_stateless_decode_bytes, no advance).
  ByteCount model_bytes_per_layer_step() const;
  /// Bytes of device memory this problem holds.
  size_t device_bytes() const { return mem_.bytes(); }

  // Per-set tensors (device), for checks.
  const bf16* q(int set) const { return inputs_.q(set); }
  const bf16* k(int set) const { return inputs_.k(set); }
  const bf16* v(int set) const { return inputs_.v(set); }
  const bf16* a(int set) const { return inputs_.a(set); }
  const bf16* b(int set) const { return inputs_.b(set); }
  const float* A_log(int set) const { return inputs_.A_log(set); }
  const float* dt_bias(int set) const { return inputs_.dt_bias(set); }
  void* o(int set) const;
  size_t o_bytes_per_set() const;
  /// States (recurrent) or checkpoints (kvbuffer) of one set, [rows, HV, K, V] of config().state_dtype elements, and
  /// their element and byte counts.
  void* state(int set) const { return state_.get() + size_t(set) * state_bytes_per_set(); }
  size_t state_elems_per_set() const { return state_rows_ * size_t(cfg_.shape.state_elems()); }
  size_t state_bytes_per_set() const { return state_elems_per_set() * size_t(state_elem_bytes(cfg_.state_dtype)); }

 private:
  size_t tok_v() const { return size_t(cfg_.shape.heads_v) * cfg_.shape.head_dim_v; }
  int capacity() const { return std::max(cfg_.buffer_size - 1, 1); }  // a slot never holds B entries
  int group_of(int set) const { return cfg_.share_pools ? 0 : set / cfg_.layers; }  // buffer positions of a set
  int position_groups() const { return cfg_.share_pools ? 1 : cfg_.groups; }          // groups of buffer positions

  DecodeConfig cfg_;
  int sets_ = 1;
  DeviceFootprint mem_;
  TokenInputSets inputs_;
  DeviceBuffer<unsigned char> state_;  // recurrent state pool, or KVBuffer checkpoints (state_dtype elements)
  size_t state_rows_ = 0;      // rows per set; 0: stateless without a flush, one placeholder row shared, never touched
  DeviceBuffer<int32_t> state_slot_;  // stateless: checkpoint row of each row (its slot when it materialises, else -1)
  DeviceBuffer<uint8_t> has_state_;   // stateless: zeros
  KVBufferEntrySets entries_;
  DeviceBuffer<OrderedRow> row_order_;  // [position groups][N] (row_order spread)
  int wave_rows_ = 0;                   // kvbuffer_decode_wave_rows of the launches
  RawKVBufferEntrySets raw_entries_;
  BufferPositions positions_;
  DeviceBuffer<int32_t> slot_;
  DeviceBuffer<unsigned char> o_;
  std::vector<int32_t> host_slot_;
};

}  // namespace kvb
