// The GPU proof of the capacity model (harness/kinds/capacity_probe.h): with 2 GiB free and 2 GDN layers of
// Qwen3-Next, with fp32 and bf16 states, the pools of the modelled number of requests fit, one step runs at that batch
// (decode and KVBuffer verify with either dtype; recurrent verify with fp32 only: its bf16 row keeps the allocation
// proof, status "kernel not available: ..."), and one more request does not fit. Skipped without a CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

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
  for (const StateDtype d : {StateDtype::fp32, StateDtype::bf16})
    for (CapacityCase c : cases) {
      c.state_dtype = d;
      plans.push_back(make_plan(c, m));
    }
  warm_up(plans, 7, 2 * kGiB);
  BudgetBlocker blocker(2 * kGiB);
  const int64_t budget = blocker.budget_bytes();
  EXPECT_LE(budget, 2 * kGiB);
  EXPECT_GT(budget, 2 * kGiB - kAllocationGranule);
  for (const CapacityPlan& p : plans) {
    SCOPED_TRACE(std::string(to_string(p.c.variant)) + " " + to_string(p.c.state_dtype));
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
    if (p.c.state_dtype == StateDtype::bf16 && p.c.variant == Variant::recurrent_verify)
      EXPECT_EQ(r.step.rfind("kernel not available: ", 0), 0u) << r.step;  // its kernel stores fp32 states only
    else
      EXPECT_EQ(r.step, "ok");
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
  ASSERT_EQ(t.rows.size(), 8u);  // fp32 and bf16 states
  const auto col = [&](const std::string& name) {
    return size_t(std::find(t.header.begin(), t.header.end(), name) - t.header.begin());
  };
  const size_t variant = col("variant"), dtype = col("state_dtype"), model = col("max_requests_model"),
               measured = col("max_requests_measured"), status = col("status"), gpu = col("gpu"),
               bytes = col("bytes_per_request");
  ASSERT_LT(gpu, t.header.size());
  for (const auto& row : t.rows) {
    SCOPED_TRACE(row[variant] + " " + row[dtype]);
    EXPECT_TRUE(row[status] == "ok" || row[status].rfind("kernel not available", 0) == 0) << row[status];
    // measured >= model; beyond one more request, only those that fit in the headroom the model keeps free (two
    // layers of bf16 recurrent decode take 2 MiB a request: two of them fit in the 4 MiB).
    const int64_t extra = std::stoll(row[measured]) - std::stoll(row[model]);
    EXPECT_GE(extra, 0);
    EXPECT_LE((extra - 1) * std::stoll(row[bytes]), kDriverHeadroom);
    EXPECT_NE(row[gpu], "") << "gpu column";
  }
}

}  // namespace
}  // namespace kvb::capacity
