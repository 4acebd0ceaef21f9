// SM clock of a CUDA device through NVML, loaded at run time (dlopen "libnvidia-ml.so.1"), so that the harness runs
// and reports "nvml unavailable" where no driver is installed. Used to flag sweep points whose clock fell (throttled).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace kvb {

/// NVML clocks-event reason bits (nvmlClocksEventReason*; the older name is nvmlClocksThrottleReason*).
namespace clock_event {
inline constexpr uint64_t kGpuIdle = 0x1;
inline constexpr uint64_t kSwPowerCap = 0x4;
inline constexpr uint64_t kHwSlowdown = 0x8;
inline constexpr uint64_t kSwThermalSlowdown = 0x20;
inline constexpr uint64_t kHwThermalSlowdown = 0x40;
inline constexpr uint64_t kHwPowerBrakeSlowdown = 0x80;
/// The thermal and power reasons that count as throttling in clock_fell().
inline constexpr uint64_t kThermalOrPower =
    kSwPowerCap | kHwSlowdown | kSwThermalSlowdown | kHwThermalSlowdown | kHwPowerBrakeSlowdown;
}  // namespace clock_event

/// One reading of a device's clocks. `status` is "ok" when sm_mhz holds a value, else the reason (for example
/// "nvml unavailable: libnvidia-ml.so.1: cannot open shared object file"); the other fields may still be empty.
struct ClockSample {
  std::optional<unsigned> sm_mhz;          ///< current SM clock, MHz
  std::optional<unsigned> max_sm_mhz;      ///< maximum SM clock, MHz
  std::optional<uint64_t> event_reasons;   ///< active NVML clocks-event reason bits (clock_event::*)
  std::string status = "nvml unavailable";
  bool ok() const { return sm_mhz.has_value(); }
};

/// Reads the SM clock of CUDA device `cuda_device` (its NVML handle is found by PCI bus id, so CUDA_VISIBLE_DEVICES
/// is honoured; by index when the bus id is unknown). Never throws: when NVML, the device or a query is unavailable
/// the returned sample says why in `status`. NVML is loaded once per process and kept loaded.
ClockSample sample_sm_clock(int cuda_device);

/// Throttle rule for a sweep point sampled before and after: true when
///  - `after` shows an active thermal or power reason (clock_event::kThermalOrPower), or
///  - both clocks are known and after.sm_mhz < before.sm_mhz * (1 - tolerance_pct / 100), unless `after` reports the
///    GPU idle (clock_event::kGpuIdle): an idle GPU lowers its clock without being throttled.
/// False when neither sample holds the data to decide. tolerance_pct in percent (default 5).
bool clock_fell(const ClockSample& before, const ClockSample& after, double tolerance_pct = 5.0);

/// Throttle rule for one sample (the sampler's, sampling.h): true when `s` holds the SM clock and its maximum and
/// the clock is below `min_fraction` of the maximum, unless the only clocks-event reason active is the GPU being
/// idle (an idle GPU lowers its clock without being throttled). False when the clock, its maximum or the clocks-event
/// reasons are unknown (an idle GPU could not be told from a throttled one).
bool below_clock_floor(const ClockSample& s, double min_fraction);

/// A loaded NVML library (dlopen + nvmlInit_v2; nvmlShutdown + dlclose on destruction). Move-only.
/// sample_sm_clock() uses one process-wide instance of "libnvidia-ml.so.1"; tests may load another name.
class NvmlLibrary {
 public:
  explicit NvmlLibrary(const char* soname = "libnvidia-ml.so.1");
  ~NvmlLibrary();
  NvmlLibrary(NvmlLibrary&&) noexcept;
  NvmlLibrary& operator=(NvmlLibrary&&) noexcept;
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  /// True when the library loaded, its symbols resolved and nvmlInit_v2 succeeded.
  bool ok() const;
  /// "" when ok(), else why not ("nvml unavailable: <dlerror>" or "nvml error: <nvmlErrorString>").
  const std::string& error() const;
  /// See sample_sm_clock(); never throws.
  ClockSample sample(int cuda_device) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvb
