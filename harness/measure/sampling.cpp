#include "harness/measure/sampling.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

namespace kvb {
namespace {

using steady = std::chrono::steady_clock;

double seconds_since(steady::time_point t) { return std::chrono::duration<double>(steady::now() - t).count(); }

std::string clock_text(const ClockSample& c) {
  return fmt::format("{} of {} MHz", c.sm_mhz ? std::to_string(*c.sm_mhz) : "?",
                     c.max_sm_mhz ? std::to_string(*c.max_sm_mhz) : "?");
}

}  // namespace

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

SampleStats sample_until(const std::function<double()>& sample, const SamplingRule& rule, const ClockSource& clock) {
  std::vector<double> values;
  int discarded = 0;
  bool clock_read = false;
  double throttled_s = 0;  // spent on discarded samples and on waiting for the clock
  ClockSample last;
  const auto read_clock = [&] {
    last = clock();
    clock_read = clock_read || last.ok();
    return below_clock_floor(last, rule.min_clock_fraction);
  };
  const auto give_up = [&](const std::string& why) {
    throw std::runtime_error(fmt::format("SM clock below {:g}% of its maximum ({}): {} samples discarded; {}",
                                         rule.min_clock_fraction * 100, clock_text(last), discarded, why));
  };
  const auto wait_for_clock = [&] {
    const auto start = steady::now();
    while (below_clock_floor(last, rule.min_clock_fraction)) {
      if (throttled_s + seconds_since(start) > rule.max_throttled_seconds)
        give_up(fmt::format("it did not recover within {:g} s", rule.max_throttled_seconds));
      std::this_thread::sleep_for(std::chrono::duration<double>(rule.recovery_poll_seconds));
      read_clock();
    }
    throttled_s += seconds_since(start);
  };

  const auto start = steady::now();
  if (clock && read_clock()) wait_for_clock();
  for (;;) {
    const auto taken = steady::now();
    const double value = sample();
    if (clock && read_clock()) {
      ++discarded;
      throttled_s += seconds_since(taken);
      if (discarded > rule.max_samples) give_up(fmt::format("more than {} samples", rule.max_samples));
      wait_for_clock();
      continue;
    }
    values.push_back(value);
    const int n = int(values.size());
    if (n < rule.min_samples) continue;
    SampleStats s = summarize(values);
    s.discarded = discarded;
    s.clock_checked = clock_read;
    const double elapsed = seconds_since(start) - throttled_s;
    if (s.noise_pct <= rule.target_noise_pct) {
      s.stop = "noise";
      return s;
    }
    if (elapsed >= rule.max_seconds || n >= rule.max_samples) {
      s.stop = "time";
      return s;
    }
  }
}

}  // namespace kvb
