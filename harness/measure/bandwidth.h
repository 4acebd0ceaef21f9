// Measured device memory bandwidth: the floor's denominator (DESIGN.md section 4: floor = model bytes / bandwidth
// measured on the same GPU in the same run).
#pragma once

#include <cstddef>

namespace kvb {

/// Default size of each buffer the bandwidth kernels stream over: 2 GiB, far beyond any L2.
inline constexpr size_t kBandwidthBufferBytes = size_t(2) << 30;

/// Device copy bandwidth of `device` in GB/s (1e9 bytes/s), counting bytes read plus bytes written: the CUDA
/// runtime's device-to-device copy (cudaMemcpyAsync) of one buffer of `buffer_bytes` into another (both filled with
/// non-zero data), after a warm-up of at least 25 ms; the best of at least `repeats` copies timed with CUDA events,
/// spanning at least 25 ms (bandwidth.cu says why). The buffers shrink to fit 80% of free memory. Checks samples of
/// the copy (the runtime's copy is faster than a grid-stride copy kernel; docs/FINDINGS.md). Throws kvb::CudaError
/// on CUDA failures, std::runtime_error when the copy is wrong or memory is too small (< 64 MiB per buffer).
double measure_copy_gbps(int device, size_t buffer_bytes = kBandwidthBufferBytes, int repeats = 10);

/// Device read bandwidth of `device` in GB/s: a kernel with 16-byte loads (launch_read_probe, one pass) XOR-reduces
/// a buffer of `buffer_bytes` (non-zero data) and writes the result only when it equals a run-time value, so the
/// loads cannot be removed. Warm-up and timing as measure_copy_gbps. Same errors as measure_copy_gbps.
double measure_read_gbps(int device, size_t buffer_bytes = kBandwidthBufferBytes, int repeats = 10);

}  // namespace kvb
