// 16-byte kernels for dram_probe.h.
#include "harness/measure/dram_probe.h"

#include <algorithm>
#include <atomic>


namespace kvb {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxDevices = 64;

__device__ __forceinline__ uint32_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return static_cast<uint32_t>(x) | 1u;  // never zero
}

__global__ void fill_probe_kernel(uint4* dst, size_t n, uint32_t value) {
  const uint4 v = make_uint4(value, value, value, value);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) dst[i] = v;
}

/// Fills n 16-byte words with non-zero pseudo-random data.
__global__ void fill_random_probe_kernel(uint4* __restrict__ dst, size_t n, uint64_t seed) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const uint64_t base = (seed + i) * 4;
    dst[i] = make_uint4(mix(base), mix(base + 1), mix(base + 2), mix(base + 3));
  }
}

/// dst[i] = src[i] for n 16-byte words; four independent loads in flight per thread.
__global__ void copy_probe_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, size_t n) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
    dst[i] = a;
    dst[i + stride] = b;
    dst[i + 2 * stride] = c;
    dst[i + 3 * stride] = d;
  }
  for (; i < n; i += stride) dst[i] = src[i];
}

__device__ __forceinline__ uint32_t fold(uint4 v) { return v.x ^ v.y ^ v.z ^ v.w; }

/// Independent loads in flight per thread of the read kernel.
constexpr int kReadDepth = 8;

/// XOR-reduces n 16-byte words, kReadDepth independent read-only loads in flight per thread; writes *sink only when
/// the result equals `never` (a run-time value), so the compiler must keep every load.
__global__ void read_probe_kernel(const uint4* __restrict__ src, size_t n, uint32_t never,
                                  uint32_t* __restrict__ sink) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  uint32_t acc = 0;
  for (; i + (kReadDepth - 1) * stride < n; i += kReadDepth * stride) {
    uint4 v[kReadDepth];
#pragma unroll
    for (int d = 0; d < kReadDepth; ++d) v[d] = __ldg(src + i + d * stride);
#pragma unroll
    for (int d = 0; d < kReadDepth; ++d) acc ^= fold(v[d]);
  }
  for (; i < n; i += stride) acc ^= fold(__ldg(src + i));
  if (acc == never) *sink = acc;
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

/// Blocks of kThreads for n 16-byte words: as many as `Kernel` keeps resident on every SM of the current device at
/// once (at least one per SM; the saturating grid of a grid-stride loop), fewer when the data is small. The
/// occupancy is read once per device.
template <auto Kernel>
unsigned grid_for(size_t n_vec) {
  static std::atomic<int> cached_blocks[kMaxDevices] = {};  // resident blocks on the whole device
  int device = 0, blocks = 132;
  if (cudaGetDevice(&device) == cudaSuccess && device >= 0 && device < kMaxDevices) {
    blocks = cached_blocks[device].load();
    if (blocks == 0) {
      int per_sm = 1, sms = 132;
      if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Kernel, kThreads, 0) != cudaSuccess) per_sm = 1;
      if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) sms = 132;
      blocks = std::max(1, per_sm) * std::max(1, sms);
      cached_blocks[device].store(blocks);
    }
  }
  const size_t wanted = (n_vec + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::max<size_t>(1, std::min<size_t>(wanted, size_t(blocks))));
}

}  // namespace

cudaError_t launch_fill_probe(void* dst, size_t bytes, uint32_t value, cudaStream_t stream) {
  if (!aligned16(dst) || bytes % 16) return cudaErrorInvalidValue;
  if (bytes == 0) return cudaSuccess;
  const size_t n = bytes / 16;
  fill_probe_kernel<<<grid_for<fill_probe_kernel>(n), kThreads, 0, stream>>>(static_cast<uint4*>(dst), n, value);
  return cudaGetLastError();
}

cudaError_t launch_fill_random_probe(void* dst, size_t bytes, uint64_t seed, cudaStream_t stream) {
  if (!aligned16(dst) || bytes % 16) return cudaErrorInvalidValue;
  if (bytes == 0) return cudaSuccess;
  const size_t n = bytes / 16;
  fill_random_probe_kernel<<<grid_for<fill_random_probe_kernel>(n), kThreads, 0, stream>>>(static_cast<uint4*>(dst),
                                                                                           n, seed);
  return cudaGetLastError();
}

cudaError_t launch_copy_probe(const void* src, void* dst, size_t bytes, cudaStream_t stream) {
  if (!aligned16(src) || !aligned16(dst) || bytes % 16) return cudaErrorInvalidValue;
  if (bytes == 0) return cudaSuccess;
  const size_t n = bytes / 16;
  copy_probe_kernel<<<grid_for<copy_probe_kernel>(n), kThreads, 0, stream>>>(static_cast<const uint4*>(src),
                                                                             static_cast<uint4*>(dst), n);
  return cudaGetLastError();
}

cudaError_t launch_read_probe(const void* src, size_t bytes, uint32_t never, uint32_t* sink, cudaStream_t stream) {
  if (!aligned16(src) || bytes % 16 || sink == nullptr) return cudaErrorInvalidValue;
  if (bytes == 0) return cudaSuccess;
  const size_t n = bytes / 16;
  // One pass: every thread issues its kReadDepth loads once and exits, so blocks stream through the SMs instead of
  // looping over the buffer, which reads faster than a grid of resident blocks only (docs/FINDINGS.md, "Measuring").
  const size_t per_block = size_t(kThreads) * kReadDepth;
  const unsigned grid = static_cast<unsigned>(std::min<size_t>((n + per_block - 1) / per_block, 0x7fffffffu));
  read_probe_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const uint4*>(src), n, never, sink);
  return cudaGetLastError();
}

}  // namespace kvb
