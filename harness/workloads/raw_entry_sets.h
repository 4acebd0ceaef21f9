// Raw-form KVBuffer entries of the sweep workloads (kernels/kvbuffer_raw_params.h RawKVBufferPool), drawn with the
// Qwen3-Next input distributions (reference/qwen3_next_inputs.h): every stored value is a token input, so keys,
// values and the gate inputs a, b are all bf16 ~ N(0, 1).
#pragma once

#include "harness/workloads/problem_setup.h"
#include "kernels/kvbuffer_raw_params.h"
#include "reference/kvbuffer_raw_reference.h"

namespace kvb {

/// Raw entries of `sets` layer sets of `slots` slots with `capacity` entries each: keys [sets][slots, capacity, H, K],
/// values [sets][slots, capacity, HV, V], a and b [sets][slots, capacity, HV], all bf16 ~ N(0, 1).
class RawKVBufferEntrySets {
 public:
  RawKVBufferEntrySets() = default;
  /// Allocates and fills the entries (keys, values, a, b from `seeds`). Throws CudaError.
  RawKVBufferEntrySets(DeviceFootprint& mem, const GdnShape& s, int sets, int slots, int capacity, FillSeeds& seeds);
  /// The pool of one set: its entries, the given checkpoints [slots, HV, K, V] and buffer positions [slots].
  RawKVBufferPool pool(int set, float* checkpoints, int32_t* fill, int buffer_size) const;

 private:
  GdnShape shape_;
  int slots_ = 0, capacity_ = 0;
  DeviceBuffer<bf16> keys_, values_, gate_a_, gate_b_;
};

/// The raw buffer of `slot` in `pool` with its first `entries` entries (their k, v, a, b as double; q left empty) and
/// its checkpoint, read back from the device. Throws CudaError.
ref::RawKVBufferSlot download_raw_kvbuffer_slot(const RawKVBufferPool& pool, const GdnShape& s, int slot,
                                                int entries);

}  // namespace kvb
