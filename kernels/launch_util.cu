#include "kernels/launch_util.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <map>
#include <tuple>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>

#include "kernels/gdn_device.cuh"

namespace kvb {

std::string validate_inputs(const TokenInputs& in, int batch) {
  if (batch < 1) return "batch = " + std::to_string(batch) + " must be >= 1";
  if (in.tokens < 1) return "tokens = " + std::to_string(in.tokens) + " must be >= 1";
  if (!in.q || !in.k || !in.v) return "q, k and v must be set";
  if (!in.g && (!in.a || !in.A_log || !in.dt_bias)) return "gates: set either g, or a, A_log and dt_bias";
  if (!in.beta && !in.b) return "gates: set either beta or b";
  if (!(in.scale > 0.f)) return "scale must be > 0";
  return "";
}

std::string validate_draft_tokens(int m) {
  if (m < 1 || m > kMaxDraftTokens)
    return "draft_tokens = " + std::to_string(m) + " is out of range (allowed: 1 to " +
           std::to_string(kMaxDraftTokens) + ")";
  return "";
}

cudaError_t static_smem_bytes(const void* kernel, size_t& bytes) {
  static std::mutex mutex;
  static std::unordered_map<const void*, size_t> cache;
  std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = cache.find(kernel); it != cache.end()) {
    bytes = it->second;
    return cudaSuccess;
  }
  cudaFuncAttributes attr{};
  if (const cudaError_t e = cudaFuncGetAttributes(&attr, kernel); e != cudaSuccess) return e;
  bytes = cache[kernel] = attr.sharedSizeBytes;
  return cudaSuccess;
}

cudaError_t cached_blocks_per_sm(const void* kernel, int threads, size_t dynamic_smem, int& blocks) {
  int dev = 0;
  if (const cudaError_t e = cudaGetDevice(&dev); e != cudaSuccess) return e;
  static std::mutex mutex;
  static std::map<std::tuple<int, const void*, int, size_t>, int> cache;
  const auto key = std::make_tuple(dev, kernel, threads, dynamic_smem);
  std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = cache.find(key); it != cache.end()) {
    blocks = it->second;
    return cudaSuccess;
  }
  if (const cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, dynamic_smem);
      e != cudaSuccess)
    return e;
  cache[key] = blocks;
  return cudaSuccess;
}

int tile_override() {
  static const int value = [] {
    const char* s = std::getenv("KVB_TILE");
    int vb = 0, threads = 0;
    if (!s || std::sscanf(s, "%d,%d", &vb, &threads) != 2) return 0;
    return vb * 1000 + threads;
  }();
  return value;
}

int sm_count() {
  static std::atomic<int> cached[64] = {};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) return 132;
  int n = cached[dev].load();
  if (n == 0) {
    if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || n <= 0) n = 132;
    cached[dev].store(n);
  }
  return n;
}

bool narrow_slices(int batch, const GdnShape& shape) {
  return int64_t(batch) * shape.heads_v * dev::num_slices(shape.head_dim_v, 32) < 4 * sm_count();
}

}  // namespace kvb
