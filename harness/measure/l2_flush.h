// Leaves no earlier data resident (and nothing dirty) in the device's L2 cache, between timed samples and around
// profiled ranges (DESIGN.md section 4: "flush it between samples and say so"; writes lag in L2 on the H200).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "core/cuda_check.h"

namespace kvb {

/// RAII owner of the scratch buffers that evict L2. Construction allocates, on the current device, three regions of
/// 2 x L2 bytes each (cudaDevAttrL2CacheSize; about 3 x 100 MiB on an H200) and zero-fills them; it throws
/// kvb::CudaError when there is no device or the allocation fails. Move-only.
class L2Flusher {
 public:
  L2Flusher();

  /// Evicts L2 and leaves it clean: writes the whole write region (every earlier line, dirty or not, leaves L2),
  /// then reads the whole clean region (the write region's own dirty lines reach DRAM now, not in the next kernel).
  /// Afterwards L2 holds only clean lines of a region nobody else uses. Asynchronous on `stream`; the launches are
  /// checked with KVB_CUDA_CHECK (throws kvb::CudaError). Moves 2 x L2 bytes of writes and 2 x L2 bytes of reads.
  void flush(cudaStream_t stream = nullptr);

  /// Writes back the dirty lines that earlier kernels left in L2, without writing anything itself: reads the whole
  /// drain region (not touched by flush()). When flush() ran before the kernels, the drain reads exactly
  /// drain_bytes() from DRAM, so a profiled range that ends with drain() counts all of its kernels' writes and
  /// drain_bytes() extra reads. Asynchronous on `stream`; throws kvb::CudaError on a failed launch.
  void drain(cudaStream_t stream = nullptr);

  /// Bytes that one drain() reads: 2 x L2.
  size_t drain_bytes() const { return region_bytes_; }
  /// The device's L2 size in bytes.
  size_t l2_bytes() const { return l2_bytes_; }

 private:
  size_t l2_bytes_ = 0;
  size_t region_bytes_ = 0;
  DeviceBuffer<uint4> write_region_;
  DeviceBuffer<uint4> clean_region_;
  DeviceBuffer<uint4> drain_region_;
  DeviceBuffer<uint32_t> sink_;
};

}  // namespace kvb
