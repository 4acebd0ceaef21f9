// Sampling until the spread settles, with samples the GPU ran throttled discarded (harness/measure/sampling.h), on
// the CPU with a fake SM clock; and the CSV column that counts them.
#include <gtest/gtest.h>

#include <stdexcept>
#include <utility>
#include <vector>

#include "harness/kinds/runner_support.h"
#include "harness/measure/gpu_clock.h"
#include "harness/measure/sampling.h"

namespace kvb {
namespace {

constexpr unsigned kMaxMhz = 1980;

ClockSample clock_at(unsigned mhz, uint64_t reasons = 0) {
  ClockSample s;
  s.sm_mhz = mhz;
  s.max_sm_mhz = kMaxMhz;
  s.event_reasons = reasons;
  s.status = "ok";
  return s;
}

TEST(ClockFloor, BelowTheFractionOfTheMaximumIsThrottled) {
  EXPECT_TRUE(below_clock_floor(clock_at(1455), 0.75));  // 73% of 1980 MHz: the committed run's throttled rows
  EXPECT_FALSE(below_clock_floor(clock_at(1485), 0.75));  // exactly 75%
  EXPECT_FALSE(below_clock_floor(clock_at(1980), 0.75));
  EXPECT_TRUE(below_clock_floor(clock_at(1700), 0.9));
  // Idle alone lowers the clock without throttling; idle with a power cap does not excuse it.
  EXPECT_FALSE(below_clock_floor(clock_at(345, clock_event::kGpuIdle), 0.75));
  EXPECT_TRUE(below_clock_floor(clock_at(345, clock_event::kGpuIdle | clock_event::kSwPowerCap), 0.75));
  // Unknown clock or maximum: nothing to decide.
  ClockSample unknown;
  EXPECT_FALSE(below_clock_floor(unknown, 0.75));
  ClockSample no_max = clock_at(100);
  no_max.max_sm_mhz.reset();
  EXPECT_FALSE(below_clock_floor(no_max, 0.75));
  // Unknown reasons: a low clock may be an idle GPU's, so nothing is discarded (and no wait can last for ever).
  ClockSample no_reasons = clock_at(345);
  no_reasons.event_reasons.reset();
  EXPECT_FALSE(below_clock_floor(no_reasons, 0.75));
}

/// A fake GPU: a list of SM clock readings given out in order (the last one repeated), and samples numbered in the
/// order they are taken, each recording the clock reading it followed.
struct FakeGpu {
  explicit FakeGpu(std::vector<unsigned> r = {}) : readings(std::move(r)) {}
  std::vector<unsigned> readings;
  size_t next_reading = 0;
  unsigned last_mhz = 0;
  std::vector<unsigned> clock_before_sample;

  ClockSample read() {
    last_mhz = readings[std::min(next_reading, readings.size() - 1)];
    ++next_reading;
    return clock_at(last_mhz);
  }
  double sample() {
    clock_before_sample.push_back(last_mhz);
    return double(clock_before_sample.size());  // sample k has the value k
  }
};

SamplingRule quick_rule(int min_samples) {
  SamplingRule rule;
  rule.min_samples = min_samples;
  rule.max_samples = 50;
  rule.target_noise_pct = 1000;  // stop as soon as min_samples are kept
  rule.recovery_poll_seconds = 0;
  return rule;
}

TEST(Sampling, SamplesTakenThrottledAreDiscardedAndCounted) {
  // Readings: one before the first sample, one after each sample, and one per poll while waiting. Samples 2 and 3
  // end throttled, and each time the next poll finds the clock back.
  FakeGpu gpu({1980, 1980, 1400, 1980, 1400, 1980, 1980, 1980});
  const SampleStats s =
      sample_until([&] { return gpu.sample(); }, quick_rule(4), [&] { return gpu.read(); });
  EXPECT_EQ(s.discarded, 2);
  EXPECT_TRUE(s.clock_checked);
  EXPECT_EQ(s.samples, 4);
  // Kept: samples 1, 4, 5, 6 (values 1, 4, 5, 6): median 4.5.
  EXPECT_DOUBLE_EQ(s.median, 4.5);
  EXPECT_DOUBLE_EQ(s.p10, percentile({1, 4, 5, 6}, 0.1));
}

TEST(Sampling, NoSampleStartsBeforeTheClockRecovers) {
  // Throttled from the start: the sampler polls until the clock is back, then samples; after a throttled sample it
  // waits again. Every sample starts after a reading at or above the floor.
  FakeGpu gpu({1000, 1100, 1200, 1980, 1300, 1350, 1990, 1980});
  const SampleStats s = sample_until([&] { return gpu.sample(); }, quick_rule(3), [&] { return gpu.read(); });
  for (unsigned mhz : gpu.clock_before_sample) EXPECT_GE(mhz, 0.75 * kMaxMhz);
  EXPECT_EQ(s.discarded, 1);  // the sample after which the clock read 1300
  EXPECT_EQ(s.samples, 3);
  EXPECT_EQ(gpu.clock_before_sample.size(), 4u);
}

TEST(Sampling, WithoutAClockNothingIsDiscardedAndTheCountIsUnknown) {
  FakeGpu gpu({1980});
  const SampleStats none = sample_until([&] { return gpu.sample(); }, quick_rule(5));
  EXPECT_EQ(none.discarded, 0);
  EXPECT_FALSE(none.clock_checked);
  EXPECT_EQ(none.samples, 5);
  // A clock that cannot be read (no NVML): the same.
  const SampleStats unread =
      sample_until([&] { return gpu.sample(); }, quick_rule(5), [] { return ClockSample{}; });
  EXPECT_EQ(unread.discarded, 0);
  EXPECT_FALSE(unread.clock_checked);
}

TEST(Sampling, AClockThatNeverRecoversFailsThePointNamingIt) {
  FakeGpu gpu({1400});
  SamplingRule rule = quick_rule(3);
  rule.max_throttled_seconds = 0.05;
  rule.recovery_poll_seconds = 0.001;
  try {
    sample_until([&] { return gpu.sample(); }, rule, [&] { return gpu.read(); });
    ADD_FAILURE() << "a throttled GPU was timed";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("SM clock below 75% of its maximum (1400 of 1980 MHz)"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(gpu.clock_before_sample.empty());
  // A clock that recovers just long enough for each sample to end throttled: given up after max_samples discards.
  FakeGpu flicker;
  for (int i = 0; i < 200; ++i) flicker.readings.insert(flicker.readings.end(), {1980, 1400});
  EXPECT_THROW(sample_until([&] { return flicker.sample(); }, quick_rule(3), [&] { return flicker.read(); }),
               std::runtime_error);
}

TEST(Sampling, TimingColumnsCountTheDiscardedSamples) {
  StepTiming t;
  t.stats.median = t.stats.p10 = t.stats.p90 = 10;
  t.stats.samples = 12;
  t.stats.discarded = 3;
  t.stats.clock_checked = true;
  Row r;
  add_timing_columns(r, "verify", "verify_", t);
  EXPECT_EQ(r.back(), (std::pair<std::string, std::string>{"verify_discarded_samples", "3"}));
  t.stats.clock_checked = false;
  r.clear();
  add_timing_columns(r, "latency", "", t);
  EXPECT_EQ(r.back(), (std::pair<std::string, std::string>{"discarded_samples", ""}));
}

}  // namespace
}  // namespace kvb
