// `kvb info`: device facts and measured bandwidth (commands.h).
#include <cuda_runtime_api.h>

#include <fmt/format.h>

#include "harness/cli/build_info.h"
#include "harness/cli/commands.h"
#include "harness/measure/bandwidth.h"
#include "harness/measure/device_info.h"
#include "harness/sweep/experiment_kind.h"

namespace kvb::cli {

int run_info(const InfoOptions& options) {
  const int count = cuda_device_count();
  if (options.gpu_present_only) return count > 0 ? 0 : 1;

  int runtime = 0;
  const bool have_runtime = cudaRuntimeGetVersion(&runtime) == cudaSuccess;
  cudaGetLastError();
  fmt::print("kvb (git {})\n", build_git_sha());
  fmt::print("CUDA runtime: {}\n", have_runtime ? cuda_version_string(runtime) : "unknown");
  if (count == 0) {
    const std::string driver = nvidia_driver_version();
    fmt::print("NVIDIA driver: {}\n", driver.empty() ? "not loaded" : driver);
    fmt::print("CUDA devices: none (kvb sweep and the GPU side of check-golden need one)\n");
    return 0;
  }
  if (options.device < 0 || options.device >= count)
    throw UsageError(fmt::format("--device {}: there are {} CUDA devices (allowed: 0..{})", options.device, count,
                                 count - 1));
  if (!(options.buffer_mib >= 64))
    throw UsageError(fmt::format("--buffer-mib {}: must be >= 64", options.buffer_mib));

  fmt::print("CUDA devices: {}\n", count);
  for (int d = 0; d < count; ++d) {
    const DeviceInfo info = query_device_info(d);
    fmt::print("GPU {}: {}\n", d, info.name);
    fmt::print("  compute capability {}.{}, {} SMs, L2 {:.1f} MiB, memory {:.1f} GiB\n", info.cc_major,
               info.cc_minor, info.sm_count, double(info.l2_bytes) / (1 << 20), double(info.memory_bytes) / (1 << 30));
    fmt::print("  NVIDIA driver {}, CUDA driver {}, CUDA runtime {}\n",
               info.nvidia_driver.empty() ? "unknown" : info.nvidia_driver, info.cuda_driver, info.cuda_runtime);
  }
  const size_t bytes = static_cast<size_t>(options.buffer_mib * double(1 << 20));
  const double copy = measure_copy_gbps(options.device, bytes);
  const double read = measure_read_gbps(options.device, bytes);
  fmt::print("GPU {} measured bandwidth ({:.0f} MiB buffers, best launch after a 25 ms warm-up):\n", options.device, options.buffer_mib);
  fmt::print("  copy (bytes read + written): {:.1f} GB/s\n", copy);
  fmt::print("  read:                        {:.1f} GB/s\n", read);
  return 0;
}

}  // namespace kvb::cli
