#include "harness/measure/sampling.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

namespace kvb {

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const double pos = q * double(v.size() - 1);
  const size_t lo = size_t(std::floor(pos)), hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - double(lo)) * (v[hi] - v[lo]);
}

SampleStats summarize(const std::vector<double>& values) {
  SampleStats s;
  s.samples = int(values.size());
  s.median = percentile(values, 0.5);
  s.p10 = percentile(values, 0.1);
  s.p90 = percentile(values, 0.9);
  s.noise_pct = s.median > 0 ? (s.p90 - s.p10) / (2 * s.median) * 100 : 0;
  return s;
}

SampleStats sample_until(const std::function<double()>& sample, const SamplingRule& rule) {
  std::vector<double> values;
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    values.push_back(sample());
    const int n = int(values.size());
    if (n < rule.min_samples) continue;
    const SampleStats s = summarize(values);
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (s.noise_pct <= rule.target_noise_pct) return SampleStats{s.median, s.p10, s.p90, s.noise_pct, n, "noise"};
    if (elapsed >= rule.max_seconds || n >= rule.max_samples)
      return SampleStats{s.median, s.p10, s.p90, s.noise_pct, n, "time"};
  }
}

}  // namespace kvb
