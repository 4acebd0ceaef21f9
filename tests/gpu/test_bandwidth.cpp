// The bandwidth measurement behind every floor (harness/measure/bandwidth.h): a read measured right after the copy
// measurement, whose two buffers were just freed, must not read low. Skipped without a CUDA device.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "gpu_test_util.h"
#include "harness/measure/bandwidth.h"

namespace kvb {
namespace {

// Before the warm-up spanned 25 ms, the read measured right after the copy read 3.98 TB/s on the H200 against 4.59
// TB/s measured later: the best of its ten launches all fell in the few milliseconds in which the driver's work after
// the copy's frees held DRAM bandwidth.
TEST(BandwidthGpu, ReadMeasuredRightAfterTheCopyMatchesASettledRead) {
  KVB_REQUIRE_GPU();
  const double copy = measure_copy_gbps(0);
  const double right_after = measure_read_gbps(0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const double settled = measure_read_gbps(0);
  EXPECT_GT(copy, 0);
  EXPECT_GT(right_after, 0.97 * settled) << "read right after the copy " << right_after << " GB/s, settled "
                                         << settled << " GB/s";
}

// A copy moves each byte twice, a read once: on HBM a read-only stream is never slower per byte than a copy counted
// as read + write bytes (H200: 4.57 TB/s read, 4.26 TB/s copy).
TEST(BandwidthGpu, ReadIsAtLeastCopyCountedAsReadPlusWrite) {
  KVB_REQUIRE_GPU();
  const double copy = measure_copy_gbps(0);
  const double read = measure_read_gbps(0);
  EXPECT_GE(read, copy) << "read " << read << " GB/s, copy " << copy << " GB/s";
}

}  // namespace
}  // namespace kvb
