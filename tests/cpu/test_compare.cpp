// kvb compare's matching and verdicts on synthetic CSV pairs (harness/reports/compare.h, compare_report.h,
// table_keys.h).
#include <gtest/gtest.h>

#include "harness/kinds/registry.h"
#include "harness/reports/compare.h"
#include "harness/reports/compare_report.h"
#include "harness/sweep/table_keys.h"
#include "test_regression_support.h"

namespace kvb {
namespace {

using test::decode_grid;
using test::scaled;
using test::synthetic_median_us;
using test::synthetic_table;
using test::SyntheticRow;

struct CompareTest : ::testing::Test {
  const ExperimentKind& kind = find_experiment_kind("decode");
  std::vector<Point> points = decode_grid(kind, "1, 64, 256", "4, 16");  // 3 recurrent + 6 kvbuffer
  CsvInput base{"base.csv", synthetic_table(kind, "smoke", points, scaled(1.0, 0.01))};

  Comparison run(const CsvTable& cand, CompareOptions o = {}) {
    return compare_tables(base, CsvInput{"cand.csv", cand}, experiment_kinds(), o);
  }
  std::string usage_error(const CsvTable& cand, CompareOptions o = {}) {
    try {
      run(cand, o);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "";
  }
};

TEST(CompareRule, SpreadAndThresholdBothDecide) {
  const Latency base{100, 99, 101};
  EXPECT_EQ(classify(base, {120, 119, 121}, 5), Verdict::slower);
  EXPECT_EQ(classify(base, {120, 119, 121}, 25), Verdict::same);  // beyond the spread, below the threshold
  EXPECT_EQ(classify(base, {120, 100, 140}, 5), Verdict::same);   // candidate p10 inside the baseline's spread
  EXPECT_EQ(classify(base, {80, 79, 81}, 5), Verdict::faster);
  EXPECT_EQ(classify(base, {80, 70, 100}, 5), Verdict::same);    // candidate p90 inside the baseline's spread
  EXPECT_EQ(classify(base, {103, 102, 104}, 5), Verdict::same);  // outside the spread but only 3% slower
  EXPECT_EQ(classify(base, {100, 99, 101}, 0), Verdict::same);
}

TEST(CompareRule, ThresholdDecidesOnBothSidesWithTheSpreadsApart) {
  // Tight spreads that never overlap the baseline's: only the threshold decides. A change of 3% at a 5% threshold is
  // no change either way; 6% is, faster or slower; exactly 5% is not (the rule's inequalities are strict).
  const Latency base{100, 99.9, 100.1};
  const auto at = [](double median) { return Latency{median, median - 0.1, median + 0.1}; };
  EXPECT_EQ(classify(base, at(97), 5), Verdict::same);
  EXPECT_EQ(classify(base, at(103), 5), Verdict::same);
  EXPECT_EQ(classify(base, at(94), 5), Verdict::faster);
  EXPECT_EQ(classify(base, at(106), 5), Verdict::slower);
  EXPECT_EQ(classify(base, at(95), 5), Verdict::same);
  EXPECT_EQ(classify(base, at(105), 5), Verdict::same);
  EXPECT_EQ(classify(base, at(97), 2), Verdict::faster);
  EXPECT_EQ(classify(base, at(103), 2), Verdict::slower);
  EXPECT_EQ(classify(base, at(50), 60), Verdict::same);
  EXPECT_EQ(classify(base, at(39), 60), Verdict::faster);
}

TEST_F(CompareTest, IdenticalFilesAreAllSame) {
  const Comparison c = run(base.table);
  ASSERT_EQ(c.points.size(), points.size());
  EXPECT_EQ(c.count(Verdict::same), points.size());
  EXPECT_EQ(c.exit_code(), 0);
  for (size_t i = 0; i < points.size(); ++i) {
    EXPECT_EQ(c.points[i].label, points[i].label());
    EXPECT_DOUBLE_EQ(c.points[i].ratio, 1.0);
    EXPECT_NEAR(c.points[i].baseline.median, synthetic_median_us(points[i]), 1e-5);
  }
  EXPECT_TRUE(c.only_baseline.empty());
  EXPECT_TRUE(c.only_candidate.empty());
  EXPECT_EQ(c.baseline_gpu, "NVIDIA H200");
}

TEST_F(CompareTest, OnePointTwentyPercentSlowerWithTightSpreadIsSlower) {
  const size_t slow = 4;
  const auto tight = scaled(1.0, 0.01), slower = scaled(1.2, 0.01);
  const CsvTable cand = synthetic_table(
      kind, "smoke", points, [&](size_t i, const Point& p) { return i == slow ? slower(i, p) : tight(i, p); });
  const Comparison c = run(cand);
  EXPECT_EQ(c.exit_code(), 1);
  EXPECT_EQ(c.count(Verdict::slower), 1u);
  EXPECT_EQ(c.count(Verdict::same), points.size() - 1);
  EXPECT_EQ(c.points[slow].verdict, Verdict::slower);
  EXPECT_EQ(c.points[slow].label, points[slow].label());
  EXPECT_NEAR(c.points[slow].ratio, 1.2, 1e-6);

  // A 25% threshold lets the same change pass.
  CompareOptions loose;
  loose.threshold_pct = 25;
  EXPECT_EQ(run(cand, loose).exit_code(), 0);

  const std::string text = format_comparison_text(c, "base.csv", "cand.csv");
  EXPECT_NE(text.find("1 slower, 0 faster, 8 same"), std::string::npos) << text;
  EXPECT_NE(text.find("1.200 (+20.0%)"), std::string::npos) << text;
  const std::string md = format_comparison_markdown(c, "base.csv", "cand.csv");
  EXPECT_EQ(md.rfind("### kvb compare", 0), 0u) << md;
  EXPECT_NE(md.find("|---|---:|---:|---:|---|"), std::string::npos) << md;
  EXPECT_NE(md.find("**slower**"), std::string::npos) << md;
  // Short labels: the varying axes only (variant, batch, buffer_size); the fixed shape once, above the table.
  EXPECT_NE(md.find("| variant=kvbuffer,batch=1,buffer_size=16 |"), std::string::npos) << md;
  EXPECT_EQ(md.find("heads_qk"), md.rfind("heads_qk")) << md;
  EXPECT_LT(md.find("Every point: "), md.find("| point |")) << md;
  EXPECT_NE(md.find("heads_qk=16"), std::string::npos) << md;
  const size_t common = text.find("\nevery point: ");
  ASSERT_NE(common, std::string::npos) << text;
  const std::string line = text.substr(common + 1, text.find('\n', common + 1) - common - 1);
  EXPECT_NE(line.find("heads_qk=16"), std::string::npos) << line;
  EXPECT_EQ(line.find("batch="), std::string::npos) << line;  // batch varies: in the labels
  EXPECT_EQ(line.find("variant="), std::string::npos) << line;
  EXPECT_EQ(line.find("buffer_size="), std::string::npos) << line;  // recurrent points hold none
  EXPECT_EQ(line.find("phase="), std::string::npos) << line;
}

TEST_F(CompareTest, AllFasterBeyondSpreadIsFaster) {
  const Comparison c = run(synthetic_table(kind, "smoke", points, scaled(0.8, 0.01)));
  EXPECT_EQ(c.count(Verdict::faster), points.size());
  EXPECT_EQ(c.exit_code(), 0);
}

TEST_F(CompareTest, NoisyOverlapIsSame) {
  // Medians 20% slower, but each side's p10..p90 spans +-25%: the spreads overlap.
  const CsvInput noisy_base{"base.csv", synthetic_table(kind, "smoke", points, scaled(1.0, 0.25))};
  const Comparison c = compare_tables(
      noisy_base, {"cand.csv", synthetic_table(kind, "smoke", points, scaled(1.2, 0.25))}, experiment_kinds(), {});
  EXPECT_EQ(c.count(Verdict::same), points.size());
  EXPECT_EQ(c.exit_code(), 0);
  EXPECT_NEAR(c.points[0].ratio, 1.2, 1e-6);
}

TEST_F(CompareTest, NoCommonPointsIsUsageError) {
  const std::string other_experiment = usage_error(synthetic_table(kind, "other", points, scaled(1.0, 0.01)));
  EXPECT_NE(other_experiment.find("no common points"), std::string::npos) << other_experiment;
  EXPECT_NE(other_experiment.find("other"), std::string::npos) << other_experiment;
  const auto disjoint = decode_grid(kind, "2, 3", "4, 16");
  const std::string other_points = usage_error(synthetic_table(kind, "smoke", disjoint, scaled(1.0, 0.01)));
  EXPECT_NE(other_points.find("no common points"), std::string::npos) << other_points;
}

TEST_F(CompareTest, DifferentGpuNeedsTheFlag) {
  const auto h100 = [](size_t i, const Point& p) {
    SyntheticRow r = scaled(1.0, 0.01)(i, p);
    r.gpu = "NVIDIA H100 80GB HBM3";
    return r;
  };
  const CsvTable cand = synthetic_table(kind, "smoke", points, h100);
  const std::string e = usage_error(cand);
  EXPECT_NE(e.find("--allow-different-gpu"), std::string::npos) << e;
  EXPECT_NE(e.find("H100"), std::string::npos) << e;
  CompareOptions allow;
  allow.allow_different_gpu = true;
  const Comparison c = run(cand, allow);
  EXPECT_EQ(c.candidate_gpu, "NVIDIA H100 80GB HBM3");
  EXPECT_NE(format_comparison_text(c, "b", "c").find("GPUs differ"), std::string::npos);
}

TEST_F(CompareTest, FailedAndMissingRowsAreListedNotCompared) {
  const auto base_rows = scaled(1.0, 0.01);
  CsvTable cand = synthetic_table(kind, "smoke", points, [&](size_t i, const Point& p) {
    SyntheticRow r = base_rows(i, p);
    if (i == 2) r.status = "failed: out of memory";
    return r;
  });
  const auto extra = decode_grid(kind, "512", "4");
  cand.rows.push_back(synthetic_table(kind, "smoke", extra, base_rows).rows[0]);
  const Comparison c = run(cand);
  EXPECT_EQ(c.points.size(), points.size() - 1);
  ASSERT_EQ(c.only_baseline.size(), 1u);
  EXPECT_EQ(c.only_baseline[0], points[2].label());
  ASSERT_EQ(c.only_candidate.size(), 1u);
  EXPECT_EQ(c.only_candidate[0], extra[0].label());
  EXPECT_EQ(c.exit_code(), 0);
}

TEST_F(CompareTest, BadInputNamesTheFileAndColumn) {
  CsvTable cand = base.table;
  cand.rows[1][require_column(cand.header, "latency_us_p90", "x")] = "fast";
  std::string e = usage_error(cand);
  EXPECT_NE(e.find("cand.csv"), std::string::npos) << e;
  EXPECT_NE(e.find("latency_us_p90 = 'fast'"), std::string::npos) << e;

  cand = base.table;
  cand.rows.push_back(cand.rows[0]);
  e = usage_error(cand);
  EXPECT_NE(e.find("listed twice"), std::string::npos) << e;
  // Also when the second row spells the point another way (batch 064 for 64).
  cand = base.table;
  cand.rows.push_back(cand.rows[0]);
  std::string& batch = cand.rows.back()[require_column(cand.header, "batch", "x")];
  batch = "0" + batch;
  e = usage_error(cand);
  EXPECT_NE(e.find("listed twice (first on line 2"), std::string::npos) << e;

  CompareOptions negative;
  negative.threshold_pct = -1;
  e = usage_error(base.table, negative);
  EXPECT_NE(e.find("--threshold"), std::string::npos) << e;

  CsvTable no_p10 = base.table;
  const size_t p10 = require_column(no_p10.header, "latency_us_p10", "x");
  no_p10.header[p10] = "latency_p10";
  e = usage_error(no_p10);
  EXPECT_NE(e.find("latency_us_p10"), std::string::npos) << e;
}

TEST_F(CompareTest, ASubnormalLatencyIsTakenAsTheResultReadersTakeIt) {
  // validate_result_table, kvb merge and the figures take any finite latency > 0; compare does as well.
  CsvTable cand = base.table;
  cand.rows[0][require_column(cand.header, "latency_us_p10", "x")] = "1e-310";
  const Comparison c = run(cand);
  EXPECT_EQ(c.points.size(), points.size());
  EXPECT_EQ(c.points[0].candidate.p10, 1e-310);
}

/// `t` without column `name`, as a CSV written before its kind gained that axis.
CsvTable without_column(CsvTable t, const std::string& name) {
  const size_t c = require_column(t.header, name, "t");
  t.header.erase(t.header.begin() + long(c));
  for (auto& row : t.rows) row.erase(row.begin() + long(c));
  return t;
}

TEST_F(CompareTest, OlderCsvWithoutTheLaunchColumnHoldsPlainLaunches) {
  const CsvTable old = without_column(base.table, "launch");
  EXPECT_EQ(csv_kind(old.header, experiment_kinds()), &kind);
  EXPECT_EQ(csv_axis_columns(old.header, experiment_kinds(), "old.csv"),
            csv_axis_columns(base.table.header, experiment_kinds(), "new.csv"));
  // The older file against the newer: every point pairs up, as launch = plain.
  const Comparison c = compare_tables(CsvInput{"old.csv", old}, base, experiment_kinds(), {});
  ASSERT_EQ(c.points.size(), points.size());
  EXPECT_EQ(c.count(Verdict::same), points.size());
  EXPECT_TRUE(c.only_baseline.empty());
  EXPECT_TRUE(c.only_candidate.empty());
  for (const auto& p : c.points) EXPECT_NE(p.label.find("launch=plain"), std::string::npos) << p.label;
  // The newer file's pdl rows are listed as only in it, labelled from its own columns.
  CsvTable both = base.table;
  const size_t launch_col = require_column(both.header, "launch", "t");
  for (const auto& row : base.table.rows) {
    both.rows.push_back(row);
    both.rows.back()[launch_col] = "pdl";
  }
  const Comparison e = compare_tables(CsvInput{"old.csv", old}, CsvInput{"both.csv", both}, experiment_kinds(), {});
  EXPECT_EQ(e.points.size(), points.size());
  ASSERT_EQ(e.only_candidate.size(), points.size());
  for (size_t i = 0; i < points.size(); ++i) {
    Point p = points[i];
    for (auto& [axis, value] : p.axes)
      if (axis == "launch") value = "pdl";
    EXPECT_EQ(e.only_candidate[i], p.label());
  }
  // A newer file's pdl rows have no counterpart in the older one: no common points.
  CsvTable pdl = base.table;
  const size_t launch = require_column(pdl.header, "launch", "t");
  for (auto& row : pdl.rows) row[launch] = "pdl";
  try {
    compare_tables(CsvInput{"old.csv", old}, CsvInput{"pdl.csv", pdl}, experiment_kinds(), {});
    ADD_FAILURE() << "old against pdl compared";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("no common points"), std::string::npos) << e.what();
  }
  // Only an axis added later may be absent: without phase the header is no longer the decode kind's.
  EXPECT_EQ(csv_kind(without_column(base.table, "phase").header, experiment_kinds()), nullptr);
}

TEST(TableKeys, AxisColumnsFromTheKindOrBeforeTheLatency) {
  const ExperimentKind& decode = find_experiment_kind("decode");
  const auto cols = csv_columns(decode);
  const auto axes = csv_axis_columns(cols, experiment_kinds(), "f.csv");
  ASSERT_EQ(axes.size(), decode.axes.size());
  for (size_t a = 0; a < axes.size(); ++a) EXPECT_EQ(axes[a], decode.axes[a].name);
  // A header no kind knows: the columns between experiment and latency_us_median.
  const std::vector<std::string> old{"experiment", "variant", "batch", "latency_us_median", "status"};
  EXPECT_EQ(csv_axis_columns(old, experiment_kinds(), "old.csv"), (std::vector<std::string>{"variant", "batch"}));
  EXPECT_THROW(csv_axis_columns({"variant", "batch"}, experiment_kinds(), "x.csv"), UsageError);
  EXPECT_THROW(csv_axis_columns({"experiment", "a", "b"}, experiment_kinds(), "x.csv"), UsageError);
}

}  // namespace
}  // namespace kvb
