// Pieces shared by the sweep workloads (DecodeProblem, VerifyProblem): device memory that counts toward a problem's
// footprint, the seeds of its random fills, token inputs and gate parameters per layer set drawn with Qwen3-Next
// distributions (reference/qwen3_next_inputs.h), states, KVBuffer entries, slot permutations and buffer positions.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "core/cuda_check.h"
#include "kernels/gdn_params.h"

namespace kvb {

/// Allocates device memory and counts its bytes (a problem's device_bytes column).
class DeviceFootprint {
 public:
  /// `n` uninitialised elements of T. Throws CudaError.
  template <typename T>
  DeviceBuffer<T> alloc(size_t n) {
    DeviceBuffer<T> b(n);
    bytes_ += b.bytes();
    return b;
  }
  /// A device copy of `host`. Throws CudaError.
  template <typename T>
  DeviceBuffer<T> copy(const std::vector<T>& host) {
    DeviceBuffer<T> b = upload(host);
    bytes_ += b.bytes();
    return b;
  }
  /// Bytes allocated so far.
  size_t bytes() const { return bytes_; }

 private:
  size_t bytes_ = 0;
};

/// The seeds of one problem's device fills: a fixed sequence derived from the point's seed, so that the same seed
/// draws the same values.
class FillSeeds {
 public:
  explicit FillSeeds(uint64_t seed) : state_(seed * 0x100000001b3ull + 17) {}
  uint64_t next() { return state_ += 0x9e3779b97f4a7c15ull; }

 private:
  uint64_t state_;
};

/// Token inputs of `sets` layer sets, each of `rows` rows with `tokens` tokens (decode 1, verify m), bf16 ~ N(0, 1):
/// q, k [sets][rows, tokens, H, K]; v [sets][rows, tokens, HV, V]; a, b [sets][rows, tokens, HV]. Gate parameters
/// A_log, dt_bias [sets][HV] fp32 with Qwen3-Next's initialisation: A = U(1, 16), dt = exp(U(log 1e-3, log 1e-1)),
/// dt_bias = softplus^-1(dt), drawn from `rng`.
class TokenInputSets {
 public:
  TokenInputSets() = default;
  /// Allocates and fills everything (q, k, v, a, b from `seeds` in that order, then the gates from `rng`).
  /// Throws CudaError.
  TokenInputSets(DeviceFootprint& mem, const GdnShape& s, int sets, int rows, int tokens, FillSeeds& seeds,
                 std::mt19937_64& rng);

  /// Launch inputs of one set (scale K^-1/2, tokens as constructed).
  TokenInputs inputs(int set) const;
  const bf16* q(int set) const { return q_.get() + size_t(set) * per_set_qk(); }
  const bf16* k(int set) const { return k_.get() + size_t(set) * per_set_qk(); }
  const bf16* v(int set) const { return v_.get() + size_t(set) * per_set_v(); }
  const bf16* a(int set) const { return a_.get() + size_t(set) * per_set_gate(); }
  const bf16* b(int set) const { return b_.get() + size_t(set) * per_set_gate(); }
  const float* A_log(int set) const { return A_log_.get() + size_t(set) * shape_.heads_v; }
  const float* dt_bias(int set) const { return dt_bias_.get() + size_t(set) * shape_.heads_v; }

 private:
  size_t per_set_qk() const { return size_t(rows_) * tokens_ * shape_.heads_qk * shape_.head_dim_k; }
  size_t per_set_v() const { return size_t(rows_) * tokens_ * shape_.heads_v * shape_.head_dim_v; }
  size_t per_set_gate() const { return size_t(rows_) * tokens_ * shape_.heads_v; }

  GdnShape shape_;
  int rows_ = 0, tokens_ = 0;
  DeviceBuffer<bf16> q_, k_, v_, a_, b_;
  DeviceBuffer<float> A_log_, dt_bias_;
};

/// A launch params struct (RecurrentDecodeParams, KVBufferDecodeParams, RecurrentVerifyParams, KVBufferVerifyParams,
/// KVBufferPrefillParams and the raw form's RawKVBufferDecodeParams, RawKVBufferVerifyParams) with the fields they all
/// have set: shape, batch, inputs, slot indices, outputs and their dtype.
template <typename Params>
Params token_launch(const GdnShape& s, int batch, const TokenInputs& in, const int32_t* slot, void* o,
                    OutputDtype o_dtype) {
  Params p;
  p.shape = s;
  p.batch = batch;
  p.in = in;
  p.slot = slot;
  p.o = o;
  p.o_dtype = o_dtype;
  return p;
}

/// The same from a problem config `c` (DecodeConfig, VerifyConfig): its shape, batch and output dtype, and its tile
/// (params with a tile field only: not KVBufferPrefillParams).
template <typename Params, typename Config>
Params token_launch(const Config& c, const TokenInputs& in, const int32_t* slot, void* o) {
  auto p = token_launch<Params>(c.shape, c.batch, in, slot, o, c.o_dtype);
  p.tile = c.tile;
  return p;
}

/// Sets the fields a KVBuffer pool of either form (KVBufferPool, RawKVBufferPool) has besides its entries: the
/// checkpoints, the buffer positions, `slots` rows of `capacity` entries, and the buffer size B.
template <typename Pool, typename Checkpoint>
void set_pool_rows(Pool& p, Checkpoint* checkpoints, int32_t* fill, int slots, int capacity, int buffer_size) {
  p.checkpoint = checkpoints;
  p.fill = fill;
  p.num_slots = slots;
  p.capacity = capacity;
  p.buffer_size = buffer_size;
}

/// `count` state values ~ N(0, 1/sqrt(K)), so that S^T k^ has the scale of v, in StateDtype `d` (bf16: drawn as
/// bf16), as the bytes of `count` elements. Throws CudaError.
DeviceBuffer<unsigned char> random_states(DeviceFootprint& mem, const GdnShape& s, size_t count, StateDtype d,
                                          FillSeeds& seeds);

/// Buffered entries of KVBuffer pools (delta form, kernels/gdn_params.h KVBufferPool) for `sets` layer sets of
/// `slots` slots with `capacity` entries each: raw keys bf16 ~ N(0, 1) [sets][slots, capacity, H, K], deltas of
/// `delta_dtype` (fp32, or drawn as bf16) ~ N(0, 0.5) [sets][slots, capacity, HV, V], log-decays [sets][slots,
/// capacity, HV] drawn with each set's gates.
class KVBufferEntrySets {
 public:
  KVBufferEntrySets() = default;
  /// Allocates and fills the entries (keys, deltas, then the log-decays set by set, from `seeds`). Throws CudaError.
  KVBufferEntrySets(DeviceFootprint& mem, const GdnShape& s, int sets, int slots, int capacity,
                    const TokenInputSets& gates, FillSeeds& seeds, StateDtype delta_dtype = StateDtype::fp32);
  /// The pool of one set: its entries (delta_dtype: the constructor's), the given checkpoints [slots, HV, K, V] of
  /// `state_dtype` elements and buffer positions [slots].
  KVBufferPool pool(int set, void* checkpoints, int32_t* fill, int buffer_size,
                    StateDtype state_dtype = StateDtype::fp32) const;

 private:
  GdnShape shape_;
  int slots_ = 0, capacity_ = 0;
  StateDtype delta_dtype_ = StateDtype::fp32;
  DeviceBuffer<bf16> keys_;
  DeviceBuffer<unsigned char> deltas_;  // delta_dtype_ elements
  DeviceBuffer<float> log_decay_;
};

/// Slot of each of `rows` rows: a random permutation of 0 .. rows-1 drawn from `rng`, as a scheduler hands them out.
std::vector<int32_t> shuffled_slots(int rows, std::mt19937_64& rng);

/// Buffer positions per slot shared by all layers of a group: `groups` arrays of [slots.size()], indexed by slot.
/// Staggered: row i starts at position i mod buffer_size; aligned: every row at 0.
class BufferPositions {
 public:
  BufferPositions() = default;
  /// Allocates the device arrays and sets them to the initial positions. Throws CudaError.
  BufferPositions(DeviceFootprint& mem, int groups, const std::vector<int32_t>& slots, int buffer_size,
                  bool staggered);
  /// Every slot of every group at position `fill` (stateless requests holding their whole context). Throws CudaError.
  BufferPositions(DeviceFootprint& mem, int groups, size_t slots, int32_t fill);
  /// Device positions of `group` [slots].
  int32_t* fill(int group) const { return fill_.get() + size_t(group) * slots_; }
  /// Host copy of the initial positions, [groups][slots].
  const std::vector<int32_t>& initial() const { return initial_; }
  /// Resets every group's positions to the initial ones (asynchronous on `stream`). Throws CudaError.
  void restore(cudaStream_t stream) const;

 private:
  void upload_initial(DeviceFootprint& mem);  // device arrays from initial_, positions set

  size_t slots_ = 0;
  std::vector<int32_t> initial_;
  DeviceBuffer<int32_t> fill_, initial_dev_;
};

}  // namespace kvb
