// The kvb binary's compare, merge and --shard/--devices: exit codes, one-line errors, nothing written on bad input.
#include <gtest/gtest.h>

#include <filesystem>

#include <fmt/format.h>

#include "cli_runner.h"
#include "harness/kinds/registry.h"
#include "harness/measure/device_info.h"
#include "test_regression_support.h"
#include "test_sweep_support.h"

namespace kvb {
namespace {

using test::count_lines;
using test::shell_quote;
using test::Result;
using test::run_kvb;
using test::TempDir;
using test::write_text;

/// Writes the synthetic CSVs of the decode kind: base.csv, same.csv (identical), slower.csv (one point 20% slower,
/// tight spread), noisy_base.csv / noisy.csv (20% slower with overlapping spreads), other.csv (another experiment),
/// h100.csv (another GPU).
struct CliCompare : ::testing::Test {
  TempDir dir;
  void SetUp() override {
    const ExperimentKind& kind = find_experiment_kind("decode");
    const auto points = test::decode_grid(kind, "1, 64, 256", "4, 16");
    auto save = [&](const std::string& name, const std::string& experiment,
                    const std::function<test::SyntheticRow(size_t, const Point&)>& row) {
      write_text(dir.file(name), format_csv(test::synthetic_table(kind, experiment, points, row)));
    };
    const auto tight = test::scaled(1.0, 0.01);
    save("base.csv", "smoke", tight);
    save("same.csv", "smoke", tight);
    save("slower.csv", "smoke",
         [&](size_t i, const Point& p) { return i == 5 ? test::scaled(1.2, 0.01)(i, p) : tight(i, p); });
    save("noisy_base.csv", "smoke", test::scaled(1.0, 0.25));
    save("noisy.csv", "smoke", test::scaled(1.2, 0.25));
    save("other.csv", "other", tight);
    save("h100.csv", "smoke", [&](size_t i, const Point& p) {
      auto r = tight(i, p);
      r.gpu = "NVIDIA H100";
      return r;
    });
  }
  Result compare(const std::string& base, const std::string& cand, const std::string& flags = "") {
    return run_kvb(dir, "compare " + shell_quote(dir.file(base)) + " " + shell_quote(dir.file(cand)) + " " + flags);
  }
};

TEST_F(CliCompare, ExitCodesFollowTheVerdicts) {
  Result r = compare("base.csv", "same.csv");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("0 slower, 0 faster, 9 same"), std::string::npos) << r.out;

  r = compare("base.csv", "slower.csv");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("1 slower"), std::string::npos) << r.out;
  EXPECT_EQ(compare("base.csv", "slower.csv", "--threshold 30").code, 0);

  r = compare("noisy_base.csv", "noisy.csv");
  EXPECT_EQ(r.code, 0) << r.out << r.err;

  r = compare("base.csv", "slower.csv", "--markdown");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out.rfind("### kvb compare", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("**slower**"), std::string::npos) << r.out;
}

TEST_F(CliCompare, UnusableInputExits2WithOneLine) {
  std::filesystem::create_directories(dir.file("folder"));
  struct Case {
    std::string base, cand, flags, needle;
  };
  for (const Case& c : {Case{"base.csv", "other.csv", "", "no common points"},
                        Case{"base.csv", "h100.csv", "", "--allow-different-gpu"},
                        Case{"base.csv", "absent.csv", "", "absent.csv: no such file"},
                        Case{"base.csv", "same.csv", "--threshold -3", "--threshold"},
                        Case{"base.csv", "same.csv", "--threshold abc", "--threshold"},
                        Case{"base.csv", "same.csv", "--metric ''", "--metric"},
                        Case{"base.csv", "same.csv", "--metric latency", "--metric"},
                        Case{"base.csv", "folder", "", "folder: is a directory"}}) {
    const Result r = compare(c.base, c.cand, c.flags);
    EXPECT_EQ(r.code, 2) << c.cand << " " << c.flags << ": " << r.err;
    EXPECT_NE(r.err.find(c.needle), std::string::npos) << r.err;
    EXPECT_EQ(count_lines(r.err), 1u) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
  EXPECT_EQ(compare("base.csv", "h100.csv", "--allow-different-gpu").code, 0);
  EXPECT_EQ(run_kvb(dir, "compare " + shell_quote(dir.file("base.csv"))).code, 2);  // CANDIDATE is required
}

TEST_F(CliCompare, SpecVerifyCsvsCompareOnTheirLatencyColumns) {
  // The committed spec_verify results against themselves: verify + accept by default, verify alone on request.
  const std::string spec = shell_quote(std::string(KVB_SOURCE_DIR) + "/results/spec_verify.csv");
  const Result dflt = run_kvb(dir, "compare " + spec + " " + spec);
  EXPECT_EQ(dflt.code, 0) << dflt.err;
  const size_t rows = read_csv_file(std::string(KVB_SOURCE_DIR) + "/results/spec_verify.csv").rows.size();
  EXPECT_NE(dflt.out.find(fmt::format("{} same", rows)), std::string::npos) << dflt.out;
  EXPECT_EQ(run_kvb(dir, "compare " + spec + " " + spec + " --metric verify_us").code, 0);
  const Result bad = run_kvb(dir, "compare " + spec + " " + spec + " --metric latency_us");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--metric"), std::string::npos) << bad.err;
  EXPECT_EQ(count_lines(bad.err), 1u) << bad.err;
}

TEST_F(CliCompare, MergeJoinsAndRejects) {
  // Two halves of base.csv merge back into it.
  const CsvTable base = read_csv_file(dir.file("base.csv"));
  CsvTable even{base.header, {}}, odd{base.header, {}};
  for (size_t i = 0; i < base.rows.size(); ++i) (i % 2 ? odd : even).rows.push_back(base.rows[i]);
  write_text(dir.file("even.csv"), format_csv(even));
  write_text(dir.file("odd.csv"), format_csv(odd));
  Result r = run_kvb(dir, "merge " + shell_quote(dir.file("out/merged.csv")) + " " + shell_quote(dir.file("even.csv")) +
                              " " + shell_quote(dir.file("odd.csv")));
  EXPECT_EQ(r.code, 0) << r.err;
  const CsvTable merged = read_csv_file(dir.file("out/merged.csv"));
  EXPECT_EQ(merged.rows.size(), base.rows.size());
  EXPECT_EQ(compare("base.csv", "out/merged.csv").code, 0);
  // An existing OUT is never replaced by accident (the first argument is the output).
  const std::string again = "merge " + shell_quote(dir.file("out/merged.csv")) + " " + shell_quote(dir.file("even.csv"));
  r = run_kvb(dir, again);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--force"), std::string::npos) << r.err;
  EXPECT_EQ(read_csv_file(dir.file("out/merged.csv")).rows.size(), base.rows.size());
  EXPECT_EQ(run_kvb(dir, again + " --force").code, 0);
  EXPECT_EQ(read_csv_file(dir.file("out/merged.csv")).rows.size(), even.rows.size());

  for (const std::string bad : {"other.csv", "base.csv", "absent.csv"}) {
    r = run_kvb(dir, "merge " + shell_quote(dir.file("bad.csv")) + " " + shell_quote(dir.file("even.csv")) + " " +
                         shell_quote(dir.file(bad)));
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_NE(r.err.find(bad), std::string::npos) << r.err;
    EXPECT_EQ(count_lines(r.err), 1u) << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir.file("bad.csv"))) << bad;
  }
  r = run_kvb(dir, "merge " + shell_quote(dir.file("bad.csv")) + " " + shell_quote(dir.file("even.csv")) +
                       " --config " + shell_quote(std::string(KVB_SOURCE_DIR) + "/experiments/decode_latency.toml"));
  EXPECT_EQ(r.code, 2);  // experiment smoke is not decode_latency
  EXPECT_NE(r.err.find("differs from 'decode_latency'"), std::string::npos) << r.err;
  EXPECT_EQ(run_kvb(dir, "merge " + shell_quote(dir.file("bad.csv"))).code, 2);  // an input is required
}

struct CliShard : ::testing::Test {
  TempDir dir;
  std::string config = std::string(KVB_SOURCE_DIR) + "/experiments/decode_latency.toml";
  Result sweep(const std::string& flags) { return run_kvb(dir, "sweep --config " + shell_quote(config) + " " + flags); }
};

TEST_F(CliShard, BadShardExits2WithoutOutput) {
  for (const std::string bad : {"3/3", "x", "1/0", "-1/2", "1", "1/2/3"}) {
    const Result r = sweep("--shard " + shell_quote(bad) + " --out " + shell_quote(dir.file("r/s.csv")));
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_NE(r.err.find("--shard"), std::string::npos) << r.err;
    EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("r")));
}

TEST_F(CliShard, DryRunListsTheShardsPointsAndItsDefaultFile) {
  const Result all = sweep("--dry-run --set batch=1,2 --out " + shell_quote(dir.file("all.csv")));
  ASSERT_EQ(all.code, 0) << all.err;
  const size_t total = count_lines(all.out) - 1;  // minus the heading
  size_t listed = 0;
  for (int i = 0; i < 3; ++i) {
    const Result r = sweep("--dry-run --set batch=1,2 --shard " + std::to_string(i) + "/3");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("results/decode_latency.shard" + std::to_string(i) + "-of-3.csv"), std::string::npos) << r.out;
    listed += count_lines(r.out) - 1;
    // Grid positions i+1, i+4, ... of the full grid, numbered as in the full list.
    EXPECT_NE(r.out.find("[" + std::to_string(i + 1) + "/" + std::to_string(total) + "]"), std::string::npos) << r.out;
  }
  EXPECT_EQ(listed, total);
  EXPECT_FALSE(std::filesystem::exists(std::string(KVB_SOURCE_DIR) + "/results/decode_latency.shard0-of-3.csv"));
}

TEST_F(CliShard, DevicesIsCheckedBeforeRunning) {
  Result r = sweep("--dry-run --devices all");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--devices"), std::string::npos) << r.err;
  r = sweep("--devices 0,1 --device 1 --out " + shell_quote(dir.file("d.csv")));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--devices"), std::string::npos) << r.err;
  if (cuda_device_present()) {
    r = sweep("--devices 0,9999 --out " + shell_quote(dir.file("d.csv")));
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("--devices"), std::string::npos) << r.err;
  } else {
    r = sweep("--devices all --set batch=1 --out " + shell_quote(dir.file("d.csv")));
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("no CUDA device found"), std::string::npos) << r.err;
  }
  // A malformed list is named on any machine, before the GPU is looked for.
  for (const std::string bad : {"a", "0,0", "0,,1", "ALL", "-1"}) {
    r = sweep("--devices " + shell_quote(bad) + " --set batch=1 --out " + shell_quote(dir.file("d.csv")));
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_NE(r.err.find("--devices '" + bad + "'"), std::string::npos) << r.err;
    EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("d.csv")));
  EXPECT_FALSE(std::filesystem::exists(dir.file("d.csv.parts")));
}

// Resuming into a CSV that holds rows of another grid says so before anything runs (without a GPU too).
TEST_F(CliShard, RowsOfAnotherGridAreReported) {
  const std::string csv = dir.file("other.csv");
  std::filesystem::copy_file(std::string(KVB_SOURCE_DIR) + "/results/decode_latency.csv", csv);
  const Result r = sweep("--dry-run --set variant=recurrent --set batch=3 --out " + shell_quote(csv));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("row(s) of " + csv + " are no point of this grid"), std::string::npos) << r.err;
}

// More shards than points: a shard without points writes the header only, so that merge sees every shard, on any
// machine (it measures nothing).
TEST_F(CliShard, AShardWithoutPointsWritesItsHeaderWithoutAGpu) {
  const std::string csv = dir.file("s.csv");
  const Result r =
      sweep("--set batch=1,2 --set variant=recurrent --set launch=plain --shard 2/3 --out " + shell_quote(csv));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("shard 2/3 of a grid of 2 points holds no points"), std::string::npos) << r.err;
  const CsvTable t = read_csv_file(csv);
  EXPECT_FALSE(t.header.empty());
  EXPECT_TRUE(t.rows.empty());
}

TEST_F(CliShard, NonIntegerAxisValueIsCalledSo) {
  const Result r = sweep("--dry-run --set batch=1e2");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("batch = '1e2' is not an integer (allowed: integers 1 to"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kvb
