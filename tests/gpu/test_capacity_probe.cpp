// The GPU proof of the capacity model (harness/kinds/capacity_probe.h): with 2 GiB free and 2 GDN layers of
// Qwen3-Next, the pools of the modelled number of requests fit, one step runs at that batch, and one more request does
// not fit. Skipped without a CUDA device.
#include <gtest/gtest.h>

#include <filesystem>

#include "../cpu/cli_runner.h"
#include "gpu_test_util.h"
#include "harness/kinds/capacity_model.h"
#include "harness/kinds/capacity_probe.h"
#include "harness/kinds/capacity_table.h"
#include "harness/sweep/csv.h"

namespace kvb::capacity {
namespace {

constexpr int64_t kGiB = int64_t(1) << 30;

TEST(CapacityProbe, ModelledRequestsFitAndOneMoreDoesNot) {
  KVB_REQUIRE_GPU();
  ModelShape m;
  m.layers = 2;
  std::vector<CapacityPlan> plans;
  const std::vector<CapacityCase> cases{{Variant::recurrent_decode, 0, 0},
                                        {Variant::recurrent_verify, 0, 4},
                                        {Variant::kvbuffer_decode, 4, 0},
                                        {Variant::kvbuffer_verify, 4, 4}};
  for (const CapacityCase& c : cases) plans.push_back(make_plan(c, m));
  warm_up(plans, 7);
  BudgetBlocker blocker(2 * kGiB);
  const int64_t budget = blocker.budget_bytes();
  EXPECT_LE(budget, 2 * kGiB);
  EXPECT_GT(budget, 2 * kGiB - kAllocationGranule);
  for (const CapacityPlan& p : plans) {
    SCOPED_TRACE(to_string(p.c.variant));
    const int64_t n = max_requests(p, budget);
    ASSERT_GT(n, 10);  // 2 GiB over at most 20 MiB per request (recurrent verify, m = 4, 2 layers)
    const ProbeResult r = probe_capacity(p, budget, n, 11);
    EXPECT_TRUE(r.model_fitted) << r.status;
    // Requests beyond the model fit only inside the headroom it keeps free; one more than measured never fits.
    EXPECT_GE(r.measured, n) << r.status;
    EXPECT_LE(footprint_bytes(p, r.measured), budget) << r.status;
    if (r.measured == n) {
      EXPECT_TRUE(r.one_more_failed) << r.status;
    }
    EXPECT_TRUE(r.step == "ok" || r.step == "kernel not available") << r.step;
    EXPECT_EQ(r.status, r.step) << r.status;
    EXPECT_EQ(device_free_bytes(), budget);  // everything freed
  }
}

TEST(CapacityProbe, CommandWritesMeasuredRows) {
  KVB_REQUIRE_GPU();
  test::TempDir dir;
  const std::string csv = dir.file("capacity.csv");
  const test::Result r = test::run_kvb(dir, "capacity --budget-gib 2 --layers 2 --buffer-sizes 4 --draft-tokens 4 "
                                            "--out '" + csv + "'");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const CsvTable t = read_csv_file(csv);
  ASSERT_EQ(t.rows.size(), 4u);
  for (const auto& row : t.rows) {
    EXPECT_TRUE(row[7] == "ok" || row[7] == "kernel not available") << row[0] << ": " << row[7];
    EXPECT_GE(std::stoll(row[6]), std::stoll(row[5])) << row[0];  // measured >= model (headroom may fit more)
    EXPECT_LE(std::stoll(row[6]), std::stoll(row[5]) + 1) << row[0];
    EXPECT_NE(row[23], "") << "gpu column";
  }
}

}  // namespace
}  // namespace kvb::capacity
