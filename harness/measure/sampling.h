// Repeated samples until their spread settles, and their median and spread (DESIGN.md section 4: warm up, repeat,
// report median and spread); samples taken while the GPU throttles are discarded. Plain C++: the SM clock comes from
// a ClockSource (NVML on a GPU, harness/measure/gpu_clock.h; a fake one in the tests).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "harness/measure/gpu_clock.h"

namespace kvb {

/// Median and spread of timed samples.
struct SampleStats {
  double median = 0, p10 = 0, p90 = 0;  ///< per-sample values (the caller's unit)
  double noise_pct = 0;                 ///< (p90 - p10) / (2 median) * 100
  int samples = 0;                      ///< samples kept
  std::string stop;                     ///< "noise" (spread under target) or "time" (time limit reached)
  int discarded = 0;                    ///< samples discarded because the SM clock was below the rule's floor
  bool clock_checked = false;           ///< the SM clock could be read (otherwise nothing was discarded: unknown)
};

/// Percentile q in [0, 1] of values (linear interpolation between order statistics). Empty input gives NaN.
double percentile(std::vector<double> values, double q);
/// Median, p10, p90 and noise of `values`.
SampleStats summarize(const std::vector<double>& values);

/// Rules for how long to sample one point, and for throttling.
struct SamplingRule {
  int min_samples = 10;
  int max_samples = 1000;
  double max_seconds = 3.0;       ///< limit on sampling, seconds (after min_samples are kept; throttled time excluded)
  double target_noise_pct = 1.0;  ///< stop once noise_pct falls under this
  /// A sample after which the SM clock reads below this fraction of its maximum is discarded, and the next one waits
  /// until the clock is back above it (nvbench's default threshold, 0.75).
  double min_clock_fraction = 0.75;
  double recovery_poll_seconds = 0.05;  ///< how often the clock is read while waiting for it to recover
  /// Longest time a point may spend on discarded samples and waiting for the clock, seconds; past it the point fails.
  double max_throttled_seconds = 30.0;
};

/// The SM clock now (sample_sm_clock on a GPU). An empty ClockSource: the clock is not checked.
using ClockSource = std::function<ClockSample()>;

/// Calls `sample()` (returns one sample's value, e.g. microseconds per layer-step) until the rule stops it: at least
/// min_samples kept, then until the noise is under target_noise_pct or max_seconds (or max_samples) is reached. With
/// a `clock`: read once before the first sample and after every sample; a sample after which the clock is below the
/// floor (below_clock_floor with rule.min_clock_fraction) is discarded and counted, and before the next sample the
/// clock is read every recovery_poll_seconds until it is back. Throws std::runtime_error naming the clock when more
/// than max_throttled_seconds went into discarded samples and waiting, or more than max_samples were discarded.
SampleStats sample_until(const std::function<double()>& sample, const SamplingRule& rule,
                         const ClockSource& clock = {});

}  // namespace kvb
