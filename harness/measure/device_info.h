// Facts about the CUDA device a run uses: name, SMs, L2, memory, driver and runtime versions.
#pragma once

#include <cstdint>
#include <string>

namespace kvb {

/// One CUDA device, as cudaGetDeviceProperties and the version queries report it.
struct DeviceInfo {
  int index = 0;
  std::string name;            ///< e.g. "NVIDIA H200"
  int sm_count = 0;            ///< streaming multiprocessors
  int64_t l2_bytes = 0;        ///< L2 cache size, bytes
  int64_t memory_bytes = 0;    ///< global memory, bytes
  int cc_major = 0, cc_minor = 0;  ///< compute capability
  std::string cuda_driver;     ///< CUDA version the driver supports (cudaDriverGetVersion), e.g. "13.0"
  std::string nvidia_driver;   ///< kernel driver version from /proc/driver/nvidia/version, "" when unavailable
  std::string cuda_runtime;    ///< CUDA runtime linked into kvb (cudaRuntimeGetVersion), e.g. "13.0"

  /// The driver as written in the CSV "driver" column: the NVIDIA driver version when known, else "cuda " +
  /// cuda_driver.
  std::string driver_label() const;
};

/// Number of CUDA devices; 0 when there is none or no usable driver. Never throws; clears the CUDA error state.
int cuda_device_count() noexcept;

/// True when at least one CUDA device is usable. Never throws.
bool cuda_device_present() noexcept;

/// Queries device `index`. Throws kvb::CudaError when the CUDA calls fail (for example no such device).
DeviceInfo query_device_info(int index);

/// "13.0" from a CUDA version integer such as 13000.
std::string cuda_version_string(int version);

/// Version of the loaded NVIDIA kernel driver (for example "580.65.06") read from /proc/driver/nvidia/version;
/// "" when the file is absent or has no version. Never throws.
std::string nvidia_driver_version() noexcept;

}  // namespace kvb
