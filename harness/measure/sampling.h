// Repeated samples until their spread settles, and their median and spread (DESIGN.md section 4: warm up, repeat,
// report median and spread). Plain C++.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace kvb {

/// Median and spread of timed samples.
struct SampleStats {
  double median = 0, p10 = 0, p90 = 0;  ///< per-sample values (the caller's unit)
  double noise_pct = 0;                 ///< (p90 - p10) / (2 median) * 100
  int samples = 0;
  std::string stop;                     ///< "noise" (spread under target) or "time" (time limit reached)
};

/// Percentile q in [0, 1] of values (linear interpolation between order statistics). Empty input gives NaN.
double percentile(std::vector<double> values, double q);
/// Median, p10, p90 and noise of `values`.
SampleStats summarize(const std::vector<double>& values);

/// Rules for how long to sample one point.
struct SamplingRule {
  int min_samples = 10;
  int max_samples = 1000;
  double max_seconds = 3.0;       ///< wall-clock limit on sampling (after min_samples are taken)
  double target_noise_pct = 1.0;  ///< stop once noise_pct falls under this
};

/// Calls `sample()` (returns one sample's value, e.g. microseconds per layer-step) until the rule stops it.
SampleStats sample_until(const std::function<double()>& sample, const SamplingRule& rule);

}  // namespace kvb
