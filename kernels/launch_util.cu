#include "kernels/launch_util.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <functional>
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

cudaError_t resident_blocks_per_sm(const void* kernel, int threads, size_t smem, int& per_sm) {
  struct Key {
    int dev, threads;
    const void* kernel;
    size_t smem;
    bool operator==(const Key& o) const {
      return dev == o.dev && threads == o.threads && kernel == o.kernel && smem == o.smem;
    }
  };
  struct Hash {
    size_t operator()(const Key& k) const {
      return std::hash<const void*>()(k.kernel) ^ (k.smem * 31 + size_t(k.threads) * 7 + size_t(k.dev));
    }
  };
  static std::mutex mutex;
  static std::unordered_map<Key, int, Hash> cache;
  Key key{0, threads, kernel, smem};
  if (const cudaError_t e = cudaGetDevice(&key.dev); e != cudaSuccess) return e;
  std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = cache.find(key); it != cache.end()) {
    per_sm = it->second;
    return cudaSuccess;
  }
  if (const cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem);
      e != cudaSuccess)
    return e;
  cache[key] = per_sm;
  return cudaSuccess;
}

int smem_blocks_per_sm(size_t block_bytes) {
  struct SmemLimits {
    int per_sm = 0, reserved_per_block = 0;
  };
  static std::mutex mutex;
  static std::unordered_map<int, SmemLimits> cache;
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 2;
  SmemLimits lim;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (const auto it = cache.find(dev); it != cache.end()) {
      lim = it->second;
    } else {
      if (cudaDeviceGetAttribute(&lim.per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev) != cudaSuccess ||
          cudaDeviceGetAttribute(&lim.reserved_per_block, cudaDevAttrReservedSharedMemoryPerBlock, dev) !=
              cudaSuccess)
        return 2;
      cache[dev] = lim;
    }
  }
  constexpr size_t kUnit = 128;  // shared-memory allocation unit (sm_80 and later)
  return int(size_t(lim.per_sm) / ((block_bytes + kUnit - 1) / kUnit * kUnit + size_t(lim.reserved_per_block)));
}

int wave_rows(int resident_blocks_per_sm, int64_t blocks_per_row) {
  return blocks_per_row < 1 ? 0 : int(int64_t(resident_blocks_per_sm) * sm_count() / blocks_per_row);
}

bool wide_grid(int batch, const GdnShape& shape) {
  return int64_t(batch) * shape.heads_v >= int64_t(kWideGridBlocksPerSm) * sm_count();
}

bool narrow_slices(int batch, const GdnShape& shape) {
  return int64_t(batch) * shape.heads_v * dev::num_slices(shape.head_dim_v, 32) < 4 * sm_count();
}

}  // namespace kvb
