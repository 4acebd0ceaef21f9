// Device queries (device_info.h).
#include "harness/measure/device_info.h"

#include <cuda_runtime_api.h>

#include <fstream>
#include <regex>

#include "core/cuda_check.h"

namespace kvb {

std::string DeviceInfo::driver_label() const {
  return nvidia_driver.empty() ? "cuda " + cuda_driver : nvidia_driver;
}

int cuda_device_count() noexcept {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

bool cuda_device_present() noexcept { return cuda_device_count() > 0; }

std::string cuda_version_string(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

std::string nvidia_driver_version() noexcept {
  try {
    std::ifstream in("/proc/driver/nvidia/version");
    std::string line;
    if (!in || !std::getline(in, line)) return "";
    // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 ..."
    static const std::regex version(R"((\d+\.\d+(\.\d+)?))");
    std::smatch m;
    const auto pos = line.find("Kernel Module");
    const std::string tail = pos == std::string::npos ? line : line.substr(pos);
    if (std::regex_search(tail, m, version)) return m[1].str();
  } catch (...) {
  }
  return "";
}

DeviceInfo query_device_info(int index) {
  DeviceInfo info;
  info.index = index;
  cudaDeviceProp prop{};
  KVB_CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
  info.name = prop.name;
  info.sm_count = prop.multiProcessorCount;
  info.l2_bytes = prop.l2CacheSize;
  info.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  int driver = 0, runtime = 0;
  KVB_CUDA_CHECK(cudaDriverGetVersion(&driver));
  KVB_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  info.cuda_driver = cuda_version_string(driver);
  info.cuda_runtime = cuda_version_string(runtime);
  info.nvidia_driver = nvidia_driver_version();
  return info;
}

}  // namespace kvb
