// Copy and read bandwidth timing (bandwidth.h): the CUDA runtime's device-to-device copy, and the read kernel of
// harness/measure/dram_probe.h.
#include "harness/measure/bandwidth.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/cuda_check.h"
#include "harness/measure/dram_probe.h"
#include "harness/measure/event_timer.h"

namespace kvb {
namespace {

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

/// Least time, ms, that the warm-up and then the timed launches each span. Freeing device memory leaves the driver
/// work that takes DRAM bandwidth for a few milliseconds after it, so a best of short launches right after the
/// allocation would measure that disturbance, not the memory.
constexpr float kSpanMs = 25.f;

/// Best (shortest) time in ms of the launches of `launch`: a warm-up of at least kSpanMs, then at least `repeats`
/// timed launches (CUDA events around each) that together span at least kSpanMs.
template <typename Launch>
float best_ms(int repeats, Launch launch) {
  EventTimer timer;
  const auto timed = [&] { return timer.ms(nullptr, [&](cudaStream_t) { launch(); }); };
  for (float warm = 0; warm < kSpanMs;) warm += timed();
  float best = 0, span = 0;
  for (int r = 0; r < std::max(1, repeats) || span < kSpanMs; ++r) {
    const float ms = timed();
    span += ms;
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
  KVB_CUDA_CHECK(launch_fill_random_probe(src.get(), bytes, 1, nullptr));
  KVB_CUDA_CHECK(launch_fill_random_probe(dst.get(), bytes, 0x9e3779b97f4a7c15ULL, nullptr));
  const float ms = best_ms(repeats, [&] {
    KVB_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, nullptr));
  });
  KVB_CUDA_CHECK(cudaDeviceSynchronize());

  // Check the first and last 64 KiB of the copy.
  const size_t sample = std::min<size_t>(n, 4096);
  for (size_t offset : {size_t(0), n - sample}) {
    const std::vector<uint4> a = download(src.get() + offset, sample), b = download(dst.get() + offset, sample);
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
  KVB_CUDA_CHECK(launch_fill_random_probe(src.get(), bytes, 7, nullptr));
  KVB_CUDA_CHECK(cudaMemset(sink.get(), 0, sizeof(uint32_t)));
  const float ms =
      best_ms(repeats, [&] { KVB_CUDA_CHECK(launch_read_probe(src.get(), bytes, 0u, sink.get(), nullptr)); });
  KVB_CUDA_CHECK(cudaDeviceSynchronize());
  return double(bytes) / (double(ms) * 1e-3) / 1e9;
}

}  // namespace kvb
