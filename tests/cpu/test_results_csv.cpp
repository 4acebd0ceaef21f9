// The committed decode and spec_verify results: read as a resumed sweep reads them (a file written before an axis
// existed gets that axis's default), every column the kind declares is present in the order the engine writes, and
// every row is typed: numbers where numbers belong, statuses, and bytes measured against the model.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "harness/kinds/peer_variants.h"
#include "harness/kinds/registry.h"
#include "harness/sweep/csv.h"
#include "harness/sweep/experiment_kind.h"
#include "harness/sweep/sweep.h"
#include "test_regression_support.h"

namespace kvb {
namespace {

double number(const std::string& s, const std::string& column) {
  char* end = nullptr;
  const double x = std::strtod(s.c_str(), &end);
  EXPECT_TRUE(!s.empty() && end && *end == '\0' && std::isfinite(x)) << column << " = '" << s << "' is not a number";
  return x;
}

/// Index of column `name` in `t`'s header (a failure, and 0, when missing).
size_t column(const CsvTable& t, const std::string& name) {
  for (size_t i = 0; i < t.header.size(); ++i)
    if (t.header[i] == name) return i;
  ADD_FAILURE() << "missing column " << name;
  return 0;
}

TEST(ResultsCsv, DecodeLatencyHasEveryColumnTyped) {
  const CsvTable t =
      load_resume_table(find_experiment_kind("decode"), std::string(KVB_SOURCE_DIR) + "/results/decode_latency.csv");
  EXPECT_EQ(t.header, csv_columns(find_experiment_kind("decode")));
  auto col = [&](const std::string& name) { return column(t, name); };
  // One row per point of this project's kernels in the committed config's grid ((10 recurrent + 70 KVBuffer points)
  // x 2 launches), and at most one per peer point (a peer that was not installed has none).
  const auto grid = test::config_grid("decode", std::string(KVB_SOURCE_DIR) + "/experiments/decode_latency.toml");
  size_t own_points = 0, own_rows = 0, peer_rows = 0;
  for (const Point& p : grid) own_points += !is_peer_variant(p.get("variant"));
  for (const auto& row : t.rows) (is_peer_variant(row[col("variant")]) ? peer_rows : own_rows) += 1;
  ASSERT_EQ(own_rows, own_points);
  ASSERT_EQ(own_rows, 160u);
  EXPECT_LE(peer_rows, grid.size() - own_points);
  for (const auto& row : t.rows) {
    ASSERT_EQ(row.size(), t.header.size());
    const bool peer = is_peer_variant(row[col("variant")]);
    EXPECT_EQ(row[col("status")], "ok");
    // A peer runs in the runner's process, where CUPTI does not reach: its row has no DRAM bytes, and its versions.
    EXPECT_EQ(row[col("cupti_status")], peer ? "skipped (peer kernels run in the runner's process)" : "ok");
    EXPECT_EQ(row[col("package_version")].empty(), !peer);
    for (const char* c : {"batch", "layers", "latency_us_median", "latency_us_p10", "latency_us_p90", "samples",
                          "noise_pct", "model_bytes", "floor_us", "latency_over_floor", "max_rel_err",
                          "max_rel_err_o", "copy_gbps", "read_gbps", "sm_clock_mhz"})
      number(row[col(c)], c);
    if (!peer)
      for (const char* c : {"dram_read_bytes", "dram_write_bytes", "measured_over_model"}) number(row[col(c)], c);
    const double p10 = number(row[col("latency_us_p10")], "p10"), med = number(row[col("latency_us_median")], "median"),
                 p90 = number(row[col("latency_us_p90")], "p90");
    EXPECT_LE(p10, med);
    EXPECT_LE(med, p90);
    EXPECT_GE(number(row[col("samples")], "samples"), 10);
    if (!peer) {
      EXPECT_NEAR(number(row[col("measured_over_model")], "measured_over_model"), 1.0, 0.05);
    }
    EXPECT_LE(number(row[col("max_rel_err")], "max_rel_err"), 2e-5);
    EXPECT_LE(number(row[col("max_rel_err_o")], "max_rel_err_o"), 8e-3);
    const bool kvb = row[col("variant")] == "kvbuffer";
    EXPECT_EQ(row[col("buffer_size")].empty(), !kvb);
    EXPECT_EQ(row[col("tile")], peer ? "" : "auto");  // the launchers' own tiles; a peer's are its own
    EXPECT_TRUE(row[col("throttled")] == "yes" || row[col("throttled")] == "no");
  }
}

TEST(ResultsCsv, SpecVerifyHasEveryColumnTyped) {
  const CsvTable t =
      load_resume_table(find_experiment_kind("spec_verify"), std::string(KVB_SOURCE_DIR) + "/results/spec_verify.csv");
  EXPECT_EQ(t.header, csv_columns(find_experiment_kind("spec_verify")));
  auto col = [&](const std::string& name) { return column(t, name); };
  // One row per point of the committed config's grid.
  ASSERT_EQ(t.rows.size(),
            test::config_grid("spec_verify", std::string(KVB_SOURCE_DIR) + "/experiments/spec_verify.toml").size());
  // One run: every row measured its DRAM bytes with CUPTI, or none did (a run with --no-cupti, whose byte model the
  // GPU test VerifyBytesGpu checks against CUPTI instead).
  ASSERT_FALSE(t.rows.empty());
  const std::string cupti_status = t.rows.front()[col("cupti_status")];
  EXPECT_TRUE(cupti_status == "ok" || cupti_status == "skipped (--no-cupti)") << cupti_status;
  const bool cupti = cupti_status == "ok";
  for (const auto& row : t.rows) {
    ASSERT_EQ(row.size(), t.header.size());
    EXPECT_EQ(row[col("status")], "ok");
    EXPECT_EQ(row[col("cupti_status")], cupti_status);
    for (const char* c : {"batch", "draft_tokens", "layers", "mean_accepted", "verify_us_median",
                          "verify_accept_us_median", "verify_model_bytes", "verify_accept_model_bytes", "max_rel_err",
                          "max_rel_err_o", "dram_read_bytes", "dram_write_bytes", "measured_over_model"})
      number(row[col(c)], c);
    for (const std::string p : {"verify_us_", "verify_accept_us_"}) {
      const double p10 = number(row[col(p + "p10")], p + "p10"), med = number(row[col(p + "median")], p + "median"),
                   p90 = number(row[col(p + "p90")], p + "p90");
      EXPECT_LE(p10, med);
      EXPECT_LE(med, p90);
    }
    if (cupti) {
      EXPECT_NEAR(number(row[col("measured_over_model")], "measured_over_model"), 1.0, 0.05);
    } else {
      EXPECT_EQ(number(row[col("dram_read_bytes")], "dram_read_bytes"), 0.0);  // nothing that looks measured
      EXPECT_EQ(number(row[col("measured_over_model")], "measured_over_model"), 0.0);
    }
    EXPECT_LE(number(row[col("max_rel_err")], "max_rel_err"), 2e-5);
    EXPECT_LE(number(row[col("max_rel_err_o")], "max_rel_err_o"), 8e-3);
    // The committed grid holds delta-form buffers (experiments/buffer_form_verify.toml compares the raw form).
    const bool kvb = row[col("variant")] == "kvbuffer_verify";
    EXPECT_EQ(row[col("buffer_size")].empty(), !kvb);
    EXPECT_EQ(row[col("buffer_form")], kvb ? "delta" : "");
    EXPECT_EQ(row[col("phase")], kvb ? "staggered" : "");
  }
}

}  // namespace
}  // namespace kvb
