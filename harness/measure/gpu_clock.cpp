// NVML through dlopen/dlsym with the few prototypes it needs declared here (no nvml.h on the build machine).
#include "harness/measure/gpu_clock.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <utility>

namespace kvb {
namespace {

// Minimal NVML ABI (nvml.h): return codes are ints, 0 is NVML_SUCCESS; handles are opaque pointers.
using NvmlReturn = int;
using NvmlDevice = struct NvmlDeviceOpaque*;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr int kNvmlClockSm = 1;  // NVML_CLOCK_SM

using InitFn = NvmlReturn (*)();
using ShutdownFn = NvmlReturn (*)();
using ErrorStringFn = const char* (*)(NvmlReturn);
using HandleByBusIdFn = NvmlReturn (*)(const char*, NvmlDevice*);
using HandleByIndexFn = NvmlReturn (*)(unsigned, NvmlDevice*);
using ClockInfoFn = NvmlReturn (*)(NvmlDevice, int, unsigned*);
using EventReasonsFn = NvmlReturn (*)(NvmlDevice, unsigned long long*);

template <typename Fn>
Fn symbol(void* lib, const char* name) {
  return reinterpret_cast<Fn>(dlsym(lib, name));
}

}  // namespace

struct NvmlLibrary::Impl {
  void* lib = nullptr;
  bool initialised = false;
  std::string error;
  ShutdownFn shutdown = nullptr;
  ErrorStringFn error_string = nullptr;
  HandleByBusIdFn handle_by_bus_id = nullptr;
  HandleByIndexFn handle_by_index = nullptr;
  ClockInfoFn clock_info = nullptr;
  ClockInfoFn max_clock_info = nullptr;
  EventReasonsFn event_reasons = nullptr;  // optional

  std::string message(NvmlReturn r) const {
    const char* s = error_string ? error_string(r) : nullptr;
    return s ? std::string(s) : "NVML error " + std::to_string(r);
  }

  ~Impl() {
    if (initialised && shutdown) shutdown();
    if (lib) dlclose(lib);
  }
};

NvmlLibrary::NvmlLibrary(const char* soname) : impl_(std::make_unique<Impl>()) {
  Impl& n = *impl_;
  n.lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (!n.lib) {
    const char* why = dlerror();
    n.error = std::string("nvml unavailable: ") + (why ? why : soname);
    return;
  }
  const auto init = symbol<InitFn>(n.lib, "nvmlInit_v2");
  n.shutdown = symbol<ShutdownFn>(n.lib, "nvmlShutdown");
  n.error_string = symbol<ErrorStringFn>(n.lib, "nvmlErrorString");
  n.handle_by_bus_id = symbol<HandleByBusIdFn>(n.lib, "nvmlDeviceGetHandleByPciBusId_v2");
  n.handle_by_index = symbol<HandleByIndexFn>(n.lib, "nvmlDeviceGetHandleByIndex_v2");
  n.clock_info = symbol<ClockInfoFn>(n.lib, "nvmlDeviceGetClockInfo");
  n.max_clock_info = symbol<ClockInfoFn>(n.lib, "nvmlDeviceGetMaxClockInfo");
  n.event_reasons = symbol<EventReasonsFn>(n.lib, "nvmlDeviceGetCurrentClocksEventReasons");
  if (!n.event_reasons) n.event_reasons = symbol<EventReasonsFn>(n.lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
  if (!init || !n.shutdown || !n.handle_by_index || !n.clock_info) {
    n.error = std::string("nvml unavailable: ") + soname + " lacks nvmlInit_v2/nvmlDeviceGetClockInfo";
    return;
  }
  const NvmlReturn r = init();
  if (r != kNvmlSuccess) {
    n.error = "nvml error: nvmlInit_v2: " + n.message(r);
    return;
  }
  n.initialised = true;
}

NvmlLibrary::~NvmlLibrary() = default;
NvmlLibrary::NvmlLibrary(NvmlLibrary&&) noexcept = default;
NvmlLibrary& NvmlLibrary::operator=(NvmlLibrary&&) noexcept = default;

bool NvmlLibrary::ok() const { return impl_ && impl_->initialised; }

const std::string& NvmlLibrary::error() const {
  static const std::string moved_from = "nvml unavailable: moved-from NvmlLibrary";
  return impl_ ? impl_->error : moved_from;
}

ClockSample NvmlLibrary::sample(int cuda_device) const {
  ClockSample s;
  if (!ok()) {
    s.status = error();
    return s;
  }
  const Impl& n = *impl_;
  NvmlDevice device = nullptr;
  NvmlReturn r = -1;
  char bus_id[64] = {};
  if (n.handle_by_bus_id && cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), cuda_device) == cudaSuccess)
    r = n.handle_by_bus_id(bus_id, &device);
  else
    cudaGetLastError();  // clears the failed query's error so later runtime calls do not see it
  if (r != kNvmlSuccess) r = n.handle_by_index(static_cast<unsigned>(cuda_device), &device);
  if (r != kNvmlSuccess) {
    s.status = "nvml error: no handle for CUDA device " + std::to_string(cuda_device) + ": " + n.message(r);
    return s;
  }
  unsigned mhz = 0;
  r = n.clock_info(device, kNvmlClockSm, &mhz);
  if (r != kNvmlSuccess) {
    s.status = "nvml error: nvmlDeviceGetClockInfo: " + n.message(r);
    return s;
  }
  s.sm_mhz = mhz;
  if (n.max_clock_info && n.max_clock_info(device, kNvmlClockSm, &mhz) == kNvmlSuccess) s.max_sm_mhz = mhz;
  unsigned long long reasons = 0;
  if (n.event_reasons && n.event_reasons(device, &reasons) == kNvmlSuccess) s.event_reasons = reasons;
  s.status = "ok";
  return s;
}

ClockSample sample_sm_clock(int cuda_device) {
  static const NvmlLibrary library;
  return library.sample(cuda_device);
}

bool clock_fell(const ClockSample& before, const ClockSample& after, double tolerance_pct) {
  if (after.event_reasons && (*after.event_reasons & clock_event::kThermalOrPower)) return true;
  if (!before.sm_mhz || !after.sm_mhz) return false;
  const bool idle = after.event_reasons && (*after.event_reasons & clock_event::kGpuIdle);
  return !idle && double(*after.sm_mhz) < double(*before.sm_mhz) * (1.0 - tolerance_pct / 100.0);
}

bool below_clock_floor(const ClockSample& s, double min_fraction) {
  // Without the clock, its maximum or the reasons it is low, an idle GPU cannot be told from a throttled one.
  if (!s.sm_mhz || !s.max_sm_mhz || *s.max_sm_mhz == 0 || !s.event_reasons) return false;
  if (double(*s.sm_mhz) >= min_fraction * double(*s.max_sm_mhz)) return false;
  const bool idle_only = s.event_reasons && (*s.event_reasons & clock_event::kGpuIdle) &&
                         !(*s.event_reasons & clock_event::kThermalOrPower);
  return !idle_only;
}

}  // namespace kvb
