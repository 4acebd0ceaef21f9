// Grid-stride 16-byte kernels for dram_probe.h.
#include "harness/profile/dram_probe.h"

#include <algorithm>

namespace kvb {
namespace {

constexpr int kThreads = 256;

__global__ void fill_probe_kernel(uint4* dst, size_t n, uint32_t value) {
  const uint4 v = make_uint4(value, value, value, value);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) dst[i] = v;
}

__global__ void copy_probe_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

__global__ void read_probe_kernel(const uint4* __restrict__ src, size_t n, uint32_t never, uint32_t* sink) {
  uint32_t acc = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const uint4 v = src[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == never) *sink = acc;
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

/// Enough blocks to fill the device several times over, fewer when the data is small.
unsigned grid_for(size_t n_vec) {
  int device = 0, sms = 132;
  if (cudaGetDevice(&device) == cudaSuccess) cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  const size_t wanted = (n_vec + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::max<size_t>(1, std::min<size_t>(wanted, size_t(sms) * 8)));
}

}  // namespace

cudaError_t launch_fill_probe(void* dst, size_t bytes, uint32_t value, cudaStream_t stream) {
  if (!aligned16(dst) || bytes % 16) return cudaErrorInvalidValue;
  if (bytes == 0) return cudaSuccess;
  const size_t n = bytes / 16;
  fill_probe_kernel<<<grid_for(n), kThreads, 0, stream>>>(static_cast<uint4*>(dst), n, value);
  return cudaGetLastError();
}

cudaError_t launch_copy_probe(const void* src, void* dst, size_t bytes, cudaStream_t stream) {
  if (!aligned16(src) || !aligned16(dst) || bytes % 16) return cudaErrorInvalidValue;
  if (bytes == 0) return cudaSuccess;
  const size_t n = bytes / 16;
  copy_probe_kernel<<<grid_for(n), kThreads, 0, stream>>>(static_cast<const uint4*>(src), static_cast<uint4*>(dst), n);
  return cudaGetLastError();
}

cudaError_t launch_read_probe(const void* src, size_t bytes, uint32_t never, uint32_t* sink, cudaStream_t stream) {
  if (!aligned16(src) || bytes % 16 || sink == nullptr) return cudaErrorInvalidValue;
  if (bytes == 0) return cudaSuccess;
  const size_t n = bytes / 16;
  read_probe_kernel<<<grid_for(n), kThreads, 0, stream>>>(static_cast<const uint4*>(src), n, never, sink);
  return cudaGetLastError();
}

}  // namespace kvb
