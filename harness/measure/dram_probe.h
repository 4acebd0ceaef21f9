// Kernels that move a known number of DRAM bytes: the L2 flush, the checks of the CUPTI range profiler and the
// bandwidth measurement (harness/measure/bandwidth.h). Loops over 16-byte words, 256 threads per block: grid-stride
// with as many blocks as fit on the device at once (fewer for small data), except the read kernel, whose blocks make
// one pass each. Launchers return the launch's cudaError_t (never throw, never synchronise).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace kvb {

/// Writes `value` to every 32-bit word of dst[0, bytes). Moves `bytes` bytes of writes.
/// `dst` must be 16-byte aligned and `bytes` a multiple of 16 (cudaErrorInvalidValue otherwise).
cudaError_t launch_fill_probe(void* dst, size_t bytes, uint32_t value, cudaStream_t stream);

/// Writes non-zero pseudo-random 32-bit words (a hash of `seed` and the position) to dst[0, bytes). Moves `bytes`
/// bytes of writes. Same alignment rules as launch_fill_probe.
cudaError_t launch_fill_random_probe(void* dst, size_t bytes, uint64_t seed, cudaStream_t stream);

/// Copies src[0, bytes) to dst[0, bytes) (device to device, no overlap), four independent loads in flight per thread.
/// Moves `bytes` of reads and `bytes` of writes.
/// Both pointers 16-byte aligned, `bytes` a multiple of 16 (cudaErrorInvalidValue otherwise).
cudaError_t launch_copy_probe(const void* src, void* dst, size_t bytes, cudaStream_t stream);

/// Reads src[0, bytes) and writes nothing but, when the xor of all 32-bit words equals `never` (chosen by the caller
/// as a value the data cannot produce), one word to *sink; this keeps the loads alive. Eight independent read-only
/// (__ldg) loads in flight per thread, one pass (as many blocks as that takes). Moves `bytes` of reads.
/// `src` 16-byte aligned, `bytes` a multiple of 16, `sink` a device pointer to one uint32_t.
cudaError_t launch_read_probe(const void* src, size_t bytes, uint32_t never, uint32_t* sink, cudaStream_t stream);

}  // namespace kvb
