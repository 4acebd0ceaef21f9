// The accuracy experiment kind on the CPU: its default grid (recurrent and KVBuffer, fp32 and bf16 states), the
// axes a recurrent point leaves empty, the bounds of `tokens` named with the allowed values, and the result columns
// at every checkpoint of the run.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "harness/kinds/accuracy_runner.h"
#include "harness/workloads/accuracy_run.h"
#include "test_regression_support.h"

namespace kvb {
namespace {

TEST(AccuracyKind, DefaultGridIsBothVariantsAndBothStateDtypes) {
  const auto pts = test::grid_with("accuracy", {});
  ASSERT_EQ(pts.size(), 4u);
  const ExperimentKind& kind = find_experiment_kind("accuracy");
  for (const Point& p : pts) {
    EXPECT_EQ(kind.validate(p), "") << p.label();
    EXPECT_EQ(p.get("tokens"), "4096");
    EXPECT_EQ(p.get("buffer_size").empty(), p.get("variant") == "recurrent") << p.label();
  }
}

TEST(AccuracyKind, TokensOutOfRangeNamesTheAxis) {
  try {
    test::grid_with("accuracy", {"tokens=20000"});
    FAIL() << "tokens=20000 resolved";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("tokens"), std::string::npos) << m;
    EXPECT_NE(m.find("16384"), std::string::npos) << m;
  }
}

TEST(AccuracyKind, ResultColumnsCoverEveryCheckpoint) {
  const std::vector<std::string> cols = accuracy_result_columns();
  for (int t : accuracy_checkpoints())
    for (const char* q : {"state_err_at_", "o_err_at_"})
      EXPECT_NE(std::find(cols.begin(), cols.end(), q + std::to_string(t)), cols.end()) << q << t;
  EXPECT_EQ(cols.back(), "o_err_last");
}

}  // namespace
}  // namespace kvb
