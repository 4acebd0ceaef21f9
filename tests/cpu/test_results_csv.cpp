// The committed decode results: every column the decode kind declares is present (in the order the engine writes),
// and every row is typed: numbers where numbers belong, statuses, and bytes measured against the model.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "harness/sweep/csv.h"
#include "harness/sweep/experiment_kind.h"

namespace kvb {
namespace {

double number(const std::string& s, const std::string& column) {
  char* end = nullptr;
  const double x = std::strtod(s.c_str(), &end);
  EXPECT_TRUE(!s.empty() && end && *end == '\0' && std::isfinite(x)) << column << " = '" << s << "' is not a number";
  return x;
}

TEST(ResultsCsv, DecodeLatencyHasEveryColumnTyped) {
  const CsvTable t = read_csv_file(std::string(KVB_SOURCE_DIR) + "/results/decode_latency.csv");
  EXPECT_EQ(t.header, csv_columns(find_experiment_kind("decode")));
  auto col = [&](const std::string& name) {
    for (size_t i = 0; i < t.header.size(); ++i)
      if (t.header[i] == name) return i;
    ADD_FAILURE() << "missing column " << name;
    return size_t(0);
  };
  ASSERT_EQ(t.rows.size(), 80u);  // 10 recurrent + 70 KVBuffer points of experiments/decode_latency.toml
  for (const auto& row : t.rows) {
    ASSERT_EQ(row.size(), t.header.size());
    EXPECT_EQ(row[col("status")], "ok");
    EXPECT_EQ(row[col("cupti_status")], "ok");
    for (const char* c : {"batch", "layers", "latency_us_median", "latency_us_p10", "latency_us_p90", "samples",
                          "noise_pct", "model_bytes", "floor_us", "latency_over_floor", "max_rel_err",
                          "max_rel_err_o", "copy_gbps", "read_gbps", "dram_read_bytes", "dram_write_bytes",
                          "measured_over_model", "sm_clock_mhz"})
      number(row[col(c)], c);
    const double p10 = number(row[col("latency_us_p10")], "p10"), med = number(row[col("latency_us_median")], "median"),
                 p90 = number(row[col("latency_us_p90")], "p90");
    EXPECT_LE(p10, med);
    EXPECT_LE(med, p90);
    EXPECT_GE(number(row[col("samples")], "samples"), 10);
    EXPECT_NEAR(number(row[col("measured_over_model")], "measured_over_model"), 1.0, 0.05);
    EXPECT_LE(number(row[col("max_rel_err")], "max_rel_err"), 2e-5);
    EXPECT_LE(number(row[col("max_rel_err_o")], "max_rel_err_o"), 8e-3);
    const bool kvb = row[col("variant")] == "kvbuffer";
    EXPECT_EQ(row[col("buffer_size")].empty(), !kvb);
    EXPECT_TRUE(row[col("throttled")] == "yes" || row[col("throttled")] == "no");
  }
}

}  // namespace
}  // namespace kvb
