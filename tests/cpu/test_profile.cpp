// CPU tests of the profiling layer: CUPTI result classification, the throttle rule, and NVML being absent.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstdlib>

#include "harness/measure/cupti_range_profiler.h"
#include "harness/measure/gpu_clock.h"
#include "harness/measure/nvtx.h"

namespace kvb {
namespace {

using Code = ProfilerStatus::Code;

TEST(ProfileClassify, SuccessIsOk) {
  const ProfilerStatus s = classify_cupti_result(CUPTI_SUCCESS, "");
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.reason, "ok");
}

TEST(ProfileClassify, KnownCausesMapToTheirReason) {
  struct Case {
    CUptiResult result;
    Code code;
    const char* reason;
  };
  const Case cases[] = {
      {CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, Code::insufficient_privileges, "insufficient privileges"},
      {CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED, Code::virtualised_device, "virtualised device"},
      {CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES, Code::virtualised_device, "virtualised device"},
      {CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, Code::another_profiler, "another profiler attached"},
      {CUPTI_ERROR_HARDWARE_BUSY, Code::another_profiler, "another profiler attached"},
      {CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED, Code::another_profiler, "another profiler attached"},
      {CUPTI_ERROR_NOT_SUPPORTED, Code::unsupported_device, "unsupported device"},
      {CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED, Code::unsupported_device, "unsupported device"},
      {CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED, Code::unsupported_device, "unsupported device"},
      {CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED, Code::unsupported_device, "unsupported device"},
      {CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED, Code::unsupported_device, "unsupported device"},
      {CUPTI_ERROR_INVALID_CHIP_NAME, Code::unsupported_device, "unsupported device"},
      {CUPTI_ERROR_INVALID_DEVICE, Code::no_device, "no device"},
  };
  for (const Case& c : cases) {
    const ProfilerStatus s = classify_cupti_result(c.result, "message from CUPTI");
    EXPECT_EQ(s.code, c.code) << "CUptiResult " << int(c.result);
    EXPECT_EQ(s.reason, c.reason) << "CUptiResult " << int(c.result);
    EXPECT_FALSE(s.ok());
  }
}

TEST(ProfileClassify, OtherErrorsCarryCuptisOwnMessage) {
  const std::string message = cupti_result_message(CUPTI_ERROR_INVALID_PARAMETER);
  EXPECT_FALSE(message.empty());
  const ProfilerStatus s = classify_cupti_result(CUPTI_ERROR_INVALID_PARAMETER, message);
  EXPECT_EQ(s.code, Code::error);
  EXPECT_EQ(s.reason, "error: " + message);

  const ProfilerStatus unknown = classify_cupti_result(CUPTI_ERROR_UNKNOWN, "");
  EXPECT_EQ(unknown.code, Code::error);
  EXPECT_EQ(unknown.reason, "error: CUPTI error 999");
}

TEST(ProfileClassify, CuptiMessagesDifferPerResult) {
  // cuptiGetResultString works without a device: the texts name the condition, not one generic string.
  EXPECT_NE(cupti_result_message(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES), cupti_result_message(CUPTI_ERROR_NOT_SUPPORTED));
}

ClockSample clock_at(unsigned mhz, std::optional<uint64_t> reasons = std::nullopt) {
  ClockSample s;
  s.sm_mhz = mhz;
  s.max_sm_mhz = 1980;
  s.event_reasons = reasons;
  s.status = "ok";
  return s;
}

TEST(ProfileClock, FallBeyondTolerance) {
  EXPECT_FALSE(clock_fell(clock_at(1980), clock_at(1980)));
  EXPECT_FALSE(clock_fell(clock_at(1980), clock_at(1900)));  // -4.0 %
  EXPECT_TRUE(clock_fell(clock_at(1980), clock_at(1860)));   // -6.1 %
  EXPECT_FALSE(clock_fell(clock_at(1980), clock_at(1860), 10.0));
  EXPECT_FALSE(clock_fell(clock_at(1500), clock_at(1980)));  // a rise is not a fall
}

TEST(ProfileClock, ThermalOrPowerReasonFlagsEvenAtSameClock) {
  EXPECT_TRUE(clock_fell(clock_at(1980), clock_at(1980, clock_event::kHwThermalSlowdown)));
  EXPECT_TRUE(clock_fell(clock_at(1980), clock_at(1980, clock_event::kSwPowerCap)));
  EXPECT_TRUE(clock_fell(clock_at(1980), clock_at(1980, clock_event::kHwPowerBrakeSlowdown)));
  EXPECT_FALSE(clock_fell(clock_at(1980), clock_at(1980, 0x2)));  // applications-clocks setting is not throttling
}

TEST(ProfileClock, IdleGpuIsNotThrottled) {
  EXPECT_FALSE(clock_fell(clock_at(1980), clock_at(345, clock_event::kGpuIdle)));
  EXPECT_TRUE(clock_fell(clock_at(1980), clock_at(345, clock_event::kGpuIdle | clock_event::kSwThermalSlowdown)));
}

TEST(ProfileClock, UnknownClocksDecideNothing) {
  ClockSample unknown;
  EXPECT_FALSE(unknown.ok());
  EXPECT_FALSE(clock_fell(unknown, clock_at(1000)));
  EXPECT_FALSE(clock_fell(clock_at(1980), unknown));
}

TEST(ProfileClock, MissingNvmlLibraryGivesAStatus) {
  NvmlLibrary missing("libkvb-no-such-nvml.so.1");
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("nvml unavailable"), std::string::npos) << missing.error();
  const ClockSample s = missing.sample(0);
  EXPECT_FALSE(s.ok());
  EXPECT_FALSE(s.sm_mhz.has_value());
  EXPECT_EQ(s.status, missing.error());
}

TEST(ProfileClock, DefaultSampleNeverThrows) {
  // Without a driver this is a status; with one (the GPU machine) a plausible clock.
  const ClockSample s = sample_sm_clock(0);
  if (s.ok()) {
    EXPECT_GT(*s.sm_mhz, 0u);
    EXPECT_LT(*s.sm_mhz, 5000u);
    EXPECT_EQ(s.status, "ok");
  } else {
    EXPECT_FALSE(s.status.empty());
    EXPECT_NE(s.status, "ok");
  }
}

TEST(ProfileNvtx, RangesNestWithoutATool) {
  ScopedRange point("decode batch=8 buffer=4");
  { ScopedRange check("check"); }
  { ScopedRange timing("timing"); }
  SUCCEED();
}

TEST(ProfileRangeProfiler, RefusesUnderAnInjectedTool) {
  // ncu and nsys set CUDA_INJECTION64_PATH; the profiler must step aside before any CUPTI call.
  const char* old = std::getenv("CUDA_INJECTION64_PATH");
  const std::string saved = old ? old : "";
  setenv("CUDA_INJECTION64_PATH", "/opt/tool/libinjection.so", 1);
  RangeProfilerOrStatus created = RangeProfiler::create();
  if (old) setenv("CUDA_INJECTION64_PATH", saved.c_str(), 1); else unsetenv("CUDA_INJECTION64_PATH");
  EXPECT_FALSE(created.profiler.has_value());
  EXPECT_EQ(created.status.code, Code::another_profiler);
  EXPECT_EQ(created.status.reason, "another profiler attached");
  EXPECT_NE(created.status.detail.find("CUDA_INJECTION64_PATH"), std::string::npos);
}

TEST(ProfileRangeProfiler, NoDeviceGivesNoDeviceStatus) {
  int count = 0;
  if (cudaGetDeviceCount(&count) == cudaSuccess && count > 0) GTEST_SKIP() << "a CUDA device is present";
  cudaGetLastError();
  RangeProfilerOrStatus created = RangeProfiler::create();
  EXPECT_FALSE(created.profiler.has_value());
  EXPECT_EQ(created.status.code, Code::no_device);
  EXPECT_EQ(created.status.reason, "no device");
  EXPECT_FALSE(created.status.detail.empty());
}

}  // namespace
}  // namespace kvb
