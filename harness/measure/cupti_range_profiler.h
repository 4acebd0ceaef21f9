// DRAM bytes and GPU time of one user range, through CUDA 13's CUPTI Profiler Host API and Range Profiler
// (cupti_profiler_host.h, cupti_range_profiler.h), with user ranges and user replay. DESIGN.md section 4 ("measure
// what it did move"); the call order is the one CUPTI needs, and the traps below are those it sets on an H200.
#pragma once

#include <cupti_result.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kvb {

/// Why CUPTI can or cannot profile. `reason` is what the CSV column cupti_status holds: exactly one of "ok",
/// "insufficient privileges", "virtualised device", "another profiler attached", "unsupported device", "no device",
/// or "error: <message>" (CUPTI's own message from cuptiGetResultString, or the CUDA runtime's). `detail` names the
/// failing call for a log line ("cuptiRangeProfilerEnable: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES ...").
struct ProfilerStatus {
  enum class Code { ok, insufficient_privileges, virtualised_device, another_profiler, unsupported_device, no_device, error };
  Code code = Code::ok;
  std::string reason = "ok";
  std::string detail;
  bool ok() const { return code == Code::ok; }
};

/// Classifies a CUPTI result into ProfilerStatus (pure, no CUPTI call): CUPTI_SUCCESS -> ok; insufficient privileges;
/// virtualised device (VIRTUALIZED_DEVICE_*); another profiler attached (MULTIPLE_SUBSCRIBERS, HARDWARE_BUSY,
/// OLD_PROFILER_API_INITIALIZED); unsupported device (NOT_SUPPORTED, MIG, SLI, WSL, CMP, confidential computing,
/// INVALID_CHIP_NAME, LEGACY_PROFILER_NOT_SUPPORTED); no device (INVALID_DEVICE); otherwise "error: <cupti_message>"
/// ("error: CUPTI error <code>" when the message is empty).
ProfilerStatus classify_cupti_result(CUptiResult result, const std::string& cupti_message);

/// CUPTI's own text for a result (cuptiGetResultString), or "CUPTI error <code>" when CUPTI has none.
std::string cupti_result_message(CUptiResult result);

/// Metric names. The first three fill RangeMeasurement's named fields; `extra` are evaluated too, in order.
struct ProfilerMetrics {
  std::string dram_read = "dram__bytes_read.sum";    ///< bytes
  std::string dram_write = "dram__bytes_write.sum";  ///< bytes
  std::string gpu_time = "gpu__time_duration.sum";   ///< ns
  std::vector<std::string> extra;
};

/// How the profiler is set up.
struct RangeProfilerOptions {
  int cuda_device = 0;       ///< CUDA device ordinal to profile; made current by create() and measure()
  ProfilerMetrics metrics;
  /// L2Flusher::flush() before every pass and after the last one, outside the range, so that no earlier data is
  /// resident or dirty when the range starts and nothing of this range lands in the next one.
  bool flush_l2 = true;
  /// L2Flusher::drain() at the end of the range (inside it): the range's own dirty lines (about 25 MiB on an H200)
  /// are written back while it is counted. Its reads (L2Flusher::drain_bytes()) are subtracted from dram_read_bytes
  /// and its event time from gpu_time_ns. Needs flush_l2.
  bool drain_writes = true;
  /// Refuse (status "another profiler attached") when CUDA_INJECTION64_PATH is set, i.e. when ncu, nsys or another
  /// CUDA tool injected itself: two profilers on one context can crash inside CUPTI.
  bool refuse_under_injected_tool = true;
  std::string range_name = "kvb_profile";  ///< name of the one user range
};

/// What one measure() saw. The values are for the whole range (all of `work`); divide by steps and layers yourself.
/// Seen on an H200 (drain on): a 256 MiB copy reads 256.02 MiB and writes 256.11 MiB; an empty range reads about
/// 0.01 MiB, writes 0.1 to 0.3 MiB (CUPTI's own) and lasts 20 to 40 us, so profile a whole step or flush cycle, not a
/// single small kernel. gpu_time_ns is CUPTI's range duration, not a latency: time with CUDA events.
struct RangeMeasurement {
  ProfilerStatus status;            ///< not ok: the values below are 0 and must not be used
  double dram_read_bytes = 0;       ///< bytes read from DRAM in the range
  double dram_write_bytes = 0;      ///< bytes written to DRAM in the range
  double gpu_time_ns = 0;           ///< GPU duration of the range, ns
  size_t passes = 0;                ///< times `work` ran (CUPTI replay passes)
  std::vector<double> extra_values; ///< ProfilerMetrics::extra, same order
};

struct RangeProfilerOrStatus;

/// Owner of one CUPTI range-profiling session on one device: profiler initialisation, host object with the metric
/// configuration, the range profiler enabled on the device's primary context, the counter-data image and the L2
/// flusher. Destruction disables and deinitialises in reverse order. Move-only; one per process at a time; use it
/// from one thread. Cost on an H200: create() about 0.25 s, measure() about 14 ms plus `work` per pass.
class RangeProfiler {
 public:
  /// Runs the whole setup (cuptiProfilerInitialize, chip name, counter availability, host initialise, add metrics,
  /// config image, cuptiRangeProfilerEnable, counter-data size), then one empty measurement: it absorbs the first
  /// session's set-up writes and surfaces refusals that only Start reports. Never throws for CUPTI or CUDA failures:
  /// the result holds a profiler, or no profiler and the status saying why (see ProfilerStatus).
  static RangeProfilerOrStatus create(const RangeProfilerOptions& options = {});

  /// Measures `work` inside ONE user range. Each pass: `before_pass` (outside the range: restore states and
  /// buffers so that every pass does identical work), L2 flush, cuptiRangeProfilerStart, PushRange, `work`, device
  /// synchronise, drain, PopRange, Stop; until CUPTI says all passes are submitted; then one more L2 flush, decode
  /// and evaluate. The counter-data image is re-initialised and the configuration set again for every call, so
  /// measurements never accumulate. `work` may launch on any stream of the device or replay a CUDA graph.
  /// CUPTI and CUDA failures come back in `status` (non-finite values too); an exception thrown by `work` or
  /// `before_pass` is rethrown after the range and session are closed.
  RangeMeasurement measure(const std::function<void()>& work, const std::function<void()>& before_pass = {});

  /// CUPTI replay passes that the configured metrics need (1 for the three defaults on an H200).
  size_t passes() const;
  /// The chip CUPTI reports ("GH100" on an H200).
  const std::string& chip_name() const;
  const RangeProfilerOptions& options() const;

  ~RangeProfiler();
  RangeProfiler(RangeProfiler&&) noexcept;
  RangeProfiler& operator=(RangeProfiler&&) noexcept;
  RangeProfiler(const RangeProfiler&) = delete;
  RangeProfiler& operator=(const RangeProfiler&) = delete;

 private:
  struct Impl;
  explicit RangeProfiler(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// create()'s result: `profiler` is set exactly when status.ok().
struct RangeProfilerOrStatus {
  ProfilerStatus status;
  std::optional<RangeProfiler> profiler;
};

}  // namespace kvb
