#include "harness/workloads/device_random.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "core/cuda_check.h"

namespace kvb {
namespace {

__device__ __forceinline__ uint64_t mix64(uint64_t z) {  // splitmix64 finaliser
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// Standard normal from (seed, index) by Box-Muller on two 32-bit uniforms in (0, 1].
__device__ __forceinline__ float normal01(uint64_t seed, uint64_t i) {
  const uint64_t r = mix64(seed ^ mix64(i));
  const float u1 = (float((r >> 40) & 0xffffffu) + 1.f) * (1.f / 16777216.f);
  const float u2 = float((r >> 8) & 0xffffffu) * (1.f / 16777216.f);
  return sqrtf(-2.f * logf(u1)) * cospif(2.f * u2);
}

template <typename T>
__global__ void fill_normal_kernel(T* x, size_t n, float mean, float std, uint64_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const float v = mean + std * normal01(seed, i);
    if constexpr (std::is_same_v<T, float>) x[i] = v;
    else x[i] = __float2bfloat16_rn(v);
  }
}

__global__ void fill_log_decay_kernel(float* g, size_t n, int HV, const float* A_log, const float* dt_bias,
                                      uint64_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const int h = int(i % HV);
    const float a = __bfloat162float(__float2bfloat16_rn(normal01(seed, i))) + dt_bias[h];
    const float sp = a > 20.f ? a : log1pf(expf(a));
    g[i] = -expf(A_log[h]) * sp;
  }
}

unsigned grid_for(size_t n) { return unsigned(std::min<size_t>((n + 255) / 256, 132 * 32)); }

}  // namespace

void fill_normal(float* x, size_t n, float mean, float std, uint64_t seed, cudaStream_t stream) {
  if (!n) return;
  fill_normal_kernel<float><<<grid_for(n), 256, 0, stream>>>(x, n, mean, std, seed);
  KVB_CUDA_CHECK(cudaGetLastError());
}

void fill_normal(__nv_bfloat16* x, size_t n, float mean, float std, uint64_t seed, cudaStream_t stream) {
  if (!n) return;
  fill_normal_kernel<__nv_bfloat16><<<grid_for(n), 256, 0, stream>>>(x, n, mean, std, seed);
  KVB_CUDA_CHECK(cudaGetLastError());
}

void fill_log_decay(float* g, size_t n, int heads_v, const float* A_log, const float* dt_bias, uint64_t seed,
                    cudaStream_t stream) {
  if (!n) return;
  fill_log_decay_kernel<<<grid_for(n), 256, 0, stream>>>(g, n, heads_v, A_log, dt_bias, seed);
  KVB_CUDA_CHECK(cudaGetLastError());
}

void fill_bytes(void* x, size_t bytes, unsigned char value, cudaStream_t stream) {
  KVB_CUDA_CHECK(cudaMemsetAsync(x, value, bytes, stream));
}

}  // namespace kvb
