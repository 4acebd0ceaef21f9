// Copy and read bandwidth kernels and their timing (bandwidth.h).
#include "harness/device/bandwidth.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda_check.h"

namespace kvb {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ uint32_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return static_cast<uint32_t>(x) | 1u;  // never zero
}

/// Fills n 16-byte words with non-zero pseudo-random data.
__global__ void fill_kernel(uint4* __restrict__ dst, size_t n, uint64_t seed) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const uint64_t base = (seed + i) * 4;
    dst[i] = make_uint4(mix(base), mix(base + 1), mix(base + 2), mix(base + 3));
  }
}

/// dst[i] = src[i] for n 16-byte words; four independent loads in flight per thread.
__global__ void copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, size_t n) {
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

/// XOR-reduces n 16-byte words, eight independent read-only loads in flight per thread; writes *sink only when the
/// result equals `never` (a run-time value), so the compiler must keep every load.
__global__ void read_kernel(const uint4* __restrict__ src, size_t n, uint32_t never, uint32_t* __restrict__ sink) {
  constexpr int kDepth = 8;
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  uint32_t acc = 0;
  for (; i + (kDepth - 1) * stride < n; i += kDepth * stride) {
    uint4 v[kDepth];
#pragma unroll
    for (int d = 0; d < kDepth; ++d) v[d] = __ldg(src + i + d * stride);
#pragma unroll
    for (int d = 0; d < kDepth; ++d) acc ^= fold(v[d]);
  }
  for (; i < n; i += stride) acc ^= fold(__ldg(src + i));
  if (acc == never) *sink = acc;
}

/// RAII pair of CUDA events.
struct EventPair {
  cudaEvent_t start = nullptr, stop = nullptr;
  EventPair() {
    KVB_CUDA_CHECK(cudaEventCreate(&start));
    KVB_CUDA_CHECK(cudaEventCreate(&stop));
  }
  ~EventPair() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
};

/// Blocks of kThreads that fill every SM at full occupancy for `kernel`.
template <typename Kernel>
int saturating_grid(int device, Kernel kernel) {
  int sms = 0, per_sm = 0;
  KVB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  KVB_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0));
  return std::max(1, sms * std::max(1, per_sm));
}

/// Bytes per buffer: the request, shrunk so that `buffers` of them fit in 80% of free memory, in whole MiB.
size_t fitted_bytes(size_t requested, int buffers) {
  size_t free_bytes = 0, total = 0;
  KVB_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  const size_t fit = static_cast<size_t>(double(free_bytes) * 0.8) / size_t(buffers);
  const size_t bytes = (std::min(requested, fit) >> 20) << 20;
  if (bytes < (size_t(64) << 20))
    throw std::runtime_error("bandwidth measurement: only " + std::to_string(free_bytes >> 20) +
                             " MiB of device memory free (need 64 MiB per buffer)");
  return bytes;
}

void fill(uint4* dst, size_t n, uint64_t seed, int device) {
  fill_kernel<<<saturating_grid(device, fill_kernel), kThreads>>>(dst, n, seed);
  KVB_CUDA_CHECK(cudaGetLastError());
}

/// Best (shortest) time in ms of `repeats` launches of `launch` after one warm-up.
template <typename Launch>
float best_ms(int repeats, Launch launch) {
  EventPair ev;
  launch();
  KVB_CUDA_CHECK(cudaDeviceSynchronize());
  float best = 0;
  for (int r = 0; r < std::max(1, repeats); ++r) {
    KVB_CUDA_CHECK(cudaEventRecord(ev.start));
    launch();
    KVB_CUDA_CHECK(cudaEventRecord(ev.stop));
    KVB_CUDA_CHECK(cudaEventSynchronize(ev.stop));
    float ms = 0;
    KVB_CUDA_CHECK(cudaEventElapsedTime(&ms, ev.start, ev.stop));
    if (r == 0 || ms < best) best = ms;
  }
  return best;
}

}  // namespace

double measure_copy_gbps(int device, size_t buffer_bytes, int repeats) {
  KVB_CUDA_CHECK(cudaSetDevice(device));
  const size_t bytes = fitted_bytes(buffer_bytes, 2);
  const size_t n = bytes / sizeof(uint4);
  DeviceBuffer<uint4> src(n), dst(n);
  fill(src.get(), n, 1, device);
  fill(dst.get(), n, 0x9e3779b97f4a7c15ULL, device);
  const int grid = saturating_grid(device, copy_kernel);
  const float ms = best_ms(repeats, [&] {
    copy_kernel<<<grid, kThreads>>>(src.get(), dst.get(), n);
    KVB_CUDA_CHECK(cudaGetLastError());
  });
  KVB_CUDA_CHECK(cudaDeviceSynchronize());

  // Check the first and last 64 KiB of the copy.
  const size_t sample = std::min<size_t>(n, 4096);
  std::vector<uint4> a(sample), b(sample);
  for (size_t offset : {size_t(0), n - sample}) {
    KVB_CUDA_CHECK(cudaMemcpy(a.data(), src.get() + offset, sample * sizeof(uint4), cudaMemcpyDeviceToHost));
    KVB_CUDA_CHECK(cudaMemcpy(b.data(), dst.get() + offset, sample * sizeof(uint4), cudaMemcpyDeviceToHost));
    if (std::memcmp(a.data(), b.data(), sample * sizeof(uint4)) != 0)
      throw std::runtime_error("bandwidth measurement: the copy kernel's output differs from its input");
  }
  return 2.0 * double(bytes) / (double(ms) * 1e-3) / 1e9;
}

double measure_read_gbps(int device, size_t buffer_bytes, int repeats) {
  KVB_CUDA_CHECK(cudaSetDevice(device));
  const size_t bytes = fitted_bytes(buffer_bytes, 1);
  const size_t n = bytes / sizeof(uint4);
  DeviceBuffer<uint4> src(n);
  DeviceBuffer<uint32_t> sink(1);
  fill(src.get(), n, 7, device);
  KVB_CUDA_CHECK(cudaMemset(sink.get(), 0, sizeof(uint32_t)));
  const int grid = saturating_grid(device, read_kernel);
  const float ms = best_ms(repeats, [&] {
    read_kernel<<<grid, kThreads>>>(src.get(), n, 0u, sink.get());
    KVB_CUDA_CHECK(cudaGetLastError());
  });
  KVB_CUDA_CHECK(cudaDeviceSynchronize());
  return double(bytes) / (double(ms) * 1e-3) / 1e9;
}

}  // namespace kvb
