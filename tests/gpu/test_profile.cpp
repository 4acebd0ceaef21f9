// GPU tests of the profiling layer: CUPTI DRAM bytes of kernels whose traffic is known, repeatability, multi-pass
// replay, the L2 flusher, and the SM clock. Skips without a CUDA device, and where CUPTI may not profile here (fails
// instead with KVB_REQUIRE_GPU_TESTS=1, tests/gpu/gpu_test_util.h).
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "harness/measure/cupti_range_profiler.h"
#include "harness/measure/dram_probe.h"
#include "harness/measure/gpu_clock.h"
#include "harness/measure/l2_flush.h"
#include "harness/measure/nvtx.h"
#include "core/cuda_check.h"
#include "tests/gpu/gpu_test_util.h"

namespace kvb {
namespace {

constexpr size_t kMiB = size_t(1) << 20;
constexpr size_t kProbeBytes = 256 * kMiB;

class ProfileGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
      cudaGetLastError();
      KVB_SKIP_GPU_TEST("no CUDA device: " << (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices"));
    }
    KVB_CUDA_CHECK(cudaSetDevice(0));
  }

  /// A profiler, or a skip when this machine does not let CUPTI profile (a CUPTI or CUDA error fails the test).
  static std::optional<RangeProfiler> make_profiler(const RangeProfilerOptions& options = {}) {
    RangeProfilerOrStatus created = RangeProfiler::create(options);
    if (!created.status.ok()) {
      EXPECT_NE(created.status.code, ProfilerStatus::Code::error)
          << created.status.reason << " (" << created.status.detail << ")";
      EXPECT_FALSE(created.profiler.has_value());
      return std::nullopt;
    }
    EXPECT_TRUE(created.profiler.has_value());
    return std::move(created.profiler);
  }

  static void expect_near_bytes(double measured, double expected, double rel, const char* what) {
    EXPECT_NEAR(measured, expected, rel * expected)
        << what << ": measured " << measured / kMiB << " MiB, expected " << expected / kMiB << " MiB";
  }
};

#define KVB_PROFILER_OR_SKIP(var, ...)                                                      \
  std::optional<RangeProfiler> var = make_profiler(__VA_ARGS__);                            \
  if (::testing::Test::HasFailure()) return;                                                \
  if (!var) KVB_SKIP_GPU_TEST("CUPTI cannot profile on this machine (see the status above)")

TEST_F(ProfileGpu, CopyMovesItsBytesInOnePass) {
  KVB_PROFILER_OR_SKIP(profiler);
  EXPECT_EQ(profiler->passes(), 1u) << "dram read/write + gpu time should need one pass on Hopper";
  DeviceBuffer<uint4> src(kProbeBytes / sizeof(uint4)), dst(kProbeBytes / sizeof(uint4));
  KVB_CUDA_CHECK(launch_fill_probe(src.get(), kProbeBytes, 0x3f800000u, nullptr));
  KVB_CUDA_CHECK(cudaDeviceSynchronize());

  int before_passes = 0;
  ScopedRange range("profile copy 256 MiB");
  const RangeMeasurement m = profiler->measure(
      [&] { KVB_CUDA_CHECK(launch_copy_probe(src.get(), dst.get(), kProbeBytes, nullptr)); },
      [&] { ++before_passes; });
  ASSERT_TRUE(m.status.ok()) << m.status.reason << " (" << m.status.detail << ")";
  EXPECT_EQ(m.passes, profiler->passes());
  EXPECT_EQ(before_passes, static_cast<int>(m.passes));
  expect_near_bytes(m.dram_read_bytes, double(kProbeBytes), 0.10, "copy reads");
  expect_near_bytes(m.dram_write_bytes, double(kProbeBytes), 0.10, "copy writes");
  // 512 MiB of traffic at 0.5 to 5 TB/s (5 TB/s = 5000 bytes/ns).
  EXPECT_GT(m.gpu_time_ns, 2.0 * kProbeBytes / 5000.0);
  EXPECT_LT(m.gpu_time_ns, 2.0 * kProbeBytes / 500.0);
  std::printf("copy 256 MiB: read %.3f MiB, write %.3f MiB, gpu time %.1f us, passes %zu, chip %s\n",
              m.dram_read_bytes / kMiB, m.dram_write_bytes / kMiB, m.gpu_time_ns / 1e3, m.passes,
              profiler->chip_name().c_str());
}

TEST_F(ProfileGpu, RepeatedMeasurementsDoNotAccumulate) {
  KVB_PROFILER_OR_SKIP(profiler);
  DeviceBuffer<uint4> src(kProbeBytes / sizeof(uint4)), dst(kProbeBytes / sizeof(uint4));
  KVB_CUDA_CHECK(launch_fill_probe(src.get(), kProbeBytes, 7u, nullptr));
  const auto copy = [&] { KVB_CUDA_CHECK(launch_copy_probe(src.get(), dst.get(), kProbeBytes, nullptr)); };
  const RangeMeasurement first = profiler->measure(copy);
  const RangeMeasurement second = profiler->measure(copy);
  const RangeMeasurement third = profiler->measure(copy);
  ASSERT_TRUE(first.status.ok()) << first.status.reason;
  ASSERT_TRUE(second.status.ok()) << second.status.reason;
  ASSERT_TRUE(third.status.ok()) << third.status.reason;
  for (const RangeMeasurement* m : {&second, &third}) {
    expect_near_bytes(m->dram_read_bytes, first.dram_read_bytes, 0.02, "repeated reads");
    expect_near_bytes(m->dram_write_bytes, first.dram_write_bytes, 0.02, "repeated writes");
  }
}

TEST_F(ProfileGpu, ReadOnlyKernelWritesAlmostNothing) {
  KVB_PROFILER_OR_SKIP(profiler);
  DeviceBuffer<uint4> src(kProbeBytes / sizeof(uint4));
  DeviceBuffer<uint32_t> sink(1);
  KVB_CUDA_CHECK(launch_fill_probe(src.get(), kProbeBytes, 0u, nullptr));
  const RangeMeasurement m =
      profiler->measure([&] { KVB_CUDA_CHECK(launch_read_probe(src.get(), kProbeBytes, 1u, sink.get(), nullptr)); });
  ASSERT_TRUE(m.status.ok()) << m.status.reason << " (" << m.status.detail << ")";
  expect_near_bytes(m.dram_read_bytes, double(kProbeBytes), 0.10, "read-only reads");
  EXPECT_LT(m.dram_write_bytes, 0.01 * kProbeBytes) << "read-only writes: " << m.dram_write_bytes << " bytes";
  std::printf("read 256 MiB: read %.3f MiB, write %.3f KiB\n", m.dram_read_bytes / kMiB, m.dram_write_bytes / 1024);
}

TEST_F(ProfileGpu, FlushMakesL2Cold) {
  // An 8 MiB buffer read in before_pass is resident in L2 when the range starts, unless the flush evicts it.
  constexpr size_t bytes = 8 * kMiB;
  DeviceBuffer<uint4> src(bytes / sizeof(uint4));
  DeviceBuffer<uint32_t> sink(1);
  KVB_CUDA_CHECK(launch_fill_probe(src.get(), bytes, 0u, nullptr));
  const auto read = [&] { KVB_CUDA_CHECK(launch_read_probe(src.get(), bytes, 1u, sink.get(), nullptr)); };
  const auto warm = [&] {
    read();
    KVB_CUDA_CHECK(cudaDeviceSynchronize());
  };
  RangeMeasurement cold, hot;
  {
    KVB_PROFILER_OR_SKIP(profiler);
    cold = profiler->measure(read, warm);
  }
  {
    RangeProfilerOptions options;
    options.flush_l2 = false;
    KVB_PROFILER_OR_SKIP(profiler, options);
    hot = profiler->measure(read, warm);
  }
  ASSERT_TRUE(cold.status.ok()) << cold.status.reason;
  ASSERT_TRUE(hot.status.ok()) << hot.status.reason;
  expect_near_bytes(cold.dram_read_bytes, double(bytes), 0.10, "cold reads");
  EXPECT_LT(hot.dram_read_bytes, 0.5 * bytes) << "hot reads should hit L2";
  std::printf("8 MiB read: cold %.3f MiB, hot %.3f MiB from DRAM\n", cold.dram_read_bytes / kMiB,
              hot.dram_read_bytes / kMiB);
}

TEST_F(ProfileGpu, L2FlusherWritesAndReadsTwiceL2) {
  KVB_PROFILER_OR_SKIP(profiler);
  L2Flusher flusher;
  ASSERT_GT(flusher.l2_bytes(), 0u);
  EXPECT_EQ(flusher.drain_bytes(), 2 * flusher.l2_bytes());
  const RangeMeasurement m = profiler->measure([&] { flusher.flush(nullptr); });
  ASSERT_TRUE(m.status.ok()) << m.status.reason;
  const double region = 2.0 * flusher.l2_bytes();
  expect_near_bytes(m.dram_read_bytes, region, 0.10, "flush reads");
  expect_near_bytes(m.dram_write_bytes, region, 0.10, "flush writes");
}

TEST_F(ProfileGpu, MultiPassMetricsReplayTheWork) {
  RangeProfilerOptions options;
  options.metrics.extra = {"lts__t_bytes.sum", "l1tex__t_bytes.sum", "sm__cycles_active.avg",
                           "smsp__inst_executed.sum", "lts__t_sectors_op_read.sum", "lts__t_sectors_op_write.sum",
                           "sm__warps_active.avg.pct_of_peak_sustained_active", "dram__cycles_elapsed.avg",
                           "gpc__cycles_elapsed.max", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                           "dram__throughput.avg.pct_of_peak_sustained_elapsed",
                           "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"};
  KVB_PROFILER_OR_SKIP(profiler, options);
  DeviceBuffer<uint4> src(kProbeBytes / sizeof(uint4)), dst(kProbeBytes / sizeof(uint4));
  KVB_CUDA_CHECK(launch_fill_probe(src.get(), kProbeBytes, 5u, nullptr));
  int before_passes = 0;
  const RangeMeasurement m = profiler->measure(
      [&] { KVB_CUDA_CHECK(launch_copy_probe(src.get(), dst.get(), kProbeBytes, nullptr)); },
      [&] { ++before_passes; });
  ASSERT_TRUE(m.status.ok()) << m.status.reason << " (" << m.status.detail << ")";
  EXPECT_EQ(m.passes, profiler->passes());
  EXPECT_EQ(before_passes, static_cast<int>(m.passes));
  ASSERT_EQ(m.extra_values.size(), options.metrics.extra.size());
  expect_near_bytes(m.dram_read_bytes, double(kProbeBytes), 0.10, "multi-pass copy reads");
  expect_near_bytes(m.dram_write_bytes, double(kProbeBytes), 0.10, "multi-pass copy writes");
  EXPECT_GT(m.extra_values[0], 0.9 * kProbeBytes) << "lts__t_bytes.sum";
  std::printf("multi-pass: %zu passes for %zu metrics\n", m.passes, 3 + options.metrics.extra.size());
}

TEST_F(ProfileGpu, ExceptionFromWorkLeavesTheProfilerUsable) {
  KVB_PROFILER_OR_SKIP(profiler);
  EXPECT_THROW(profiler->measure([] { throw std::runtime_error("work failed"); }), std::runtime_error);
  DeviceBuffer<uint4> src(kProbeBytes / sizeof(uint4)), dst(kProbeBytes / sizeof(uint4));
  KVB_CUDA_CHECK(launch_fill_probe(src.get(), kProbeBytes, 1u, nullptr));
  const RangeMeasurement m =
      profiler->measure([&] { KVB_CUDA_CHECK(launch_copy_probe(src.get(), dst.get(), kProbeBytes, nullptr)); });
  ASSERT_TRUE(m.status.ok()) << m.status.reason << " (" << m.status.detail << ")";
  expect_near_bytes(m.dram_read_bytes, double(kProbeBytes), 0.10, "reads after a failed measurement");
}

TEST_F(ProfileGpu, SmClockIsPlausible) {
  const ClockSample s = sample_sm_clock(0);
  if (!s.ok()) KVB_SKIP_GPU_TEST("NVML not available: " << s.status);
  EXPECT_GT(*s.sm_mhz, 100u);
  EXPECT_LT(*s.sm_mhz, 3500u);
  if (s.max_sm_mhz) {
    EXPECT_LE(*s.sm_mhz, *s.max_sm_mhz + 50);
  }
  std::printf("SM clock %u MHz (max %u), reasons 0x%llx\n", *s.sm_mhz, s.max_sm_mhz.value_or(0),
              static_cast<unsigned long long>(s.event_reasons.value_or(0)));
}

}  // namespace
}  // namespace kvb
