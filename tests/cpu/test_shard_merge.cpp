// --shard and --devices splits, the shard merge, and the worker processes of multi-GPU sweeps
// (harness/sweep/shard.h, merge.h, workers.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>

#include "harness/kinds/registry.h"
#include "harness/sweep/merge.h"
#include "harness/sweep/shard.h"
#include "harness/sweep/sweep.h"
#include "harness/sweep/table_keys.h"
#include "harness/sweep/workers.h"
#include "test_regression_support.h"
#include "test_sweep_support.h"

namespace kvb {
namespace {

using test::decode_grid;
using test::scaled;
using test::synthetic_table;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(Shard, ParsesIOverN) {
  const Shard s = parse_shard("3/7");
  EXPECT_EQ(s.index, 3);
  EXPECT_EQ(s.count, 7);
  EXPECT_EQ(s.tag(), "3-of-7");
  EXPECT_EQ(parse_shard("0/1").count, 1);
  // Integers as every integer flag takes them (--device +1 alike): a sign, leading zeros.
  EXPECT_EQ(parse_shard("+1/02").index, 1);
  EXPECT_EQ(parse_shard("+1/02").count, 2);
  for (const char* bad : {"7/7", "-1/3", "1", "a/b", "1/0", "", "/", "1/", "/2", "1/2/3", " 1/2", "0/100001",
                          "0/99999999999999999999", "1/2 ", "1/\xd9\xa2"}) {
    const std::string e = error_of([&] { parse_shard(bad); });
    EXPECT_NE(e.find("--shard"), std::string::npos) << bad << ": " << e;
    EXPECT_NE(e.find("0 <= I < N"), std::string::npos) << bad << ": " << e;
  }
}

TEST(Shard, CoversEveryPointExactlyOnceForOneToSevenShards) {
  const ExperimentKind& kind = find_experiment_kind("decode");
  const auto grid = decode_grid(kind, "1, 2, 4, 8, 16", "1, 4, 16");  // 5 recurrent + 15 kvbuffer
  ASSERT_EQ(grid.size(), 20u);
  for (int n = 1; n <= 7; ++n) {
    std::map<std::string, int> seen;
    for (int i = 0; i < n; ++i) {
      const auto part = shard_points(grid, Shard{i, n});
      // Round-robin: sizes differ by at most one, larger shards first.
      EXPECT_EQ(part.size(), grid.size() / size_t(n) + (size_t(i) < grid.size() % size_t(n) ? 1 : 0)) << i << "/" << n;
      for (const auto& p : part) ++seen[p.label()];
    }
    EXPECT_EQ(seen.size(), grid.size()) << "N = " << n;
    for (const auto& p : grid) EXPECT_EQ(seen[p.label()], 1) << p.label() << ", N = " << n;
  }
}

TEST(Shard, SubShardSplitsAnOuterShardAmongWorkers) {
  const ExperimentKind& kind = find_experiment_kind("decode");
  const auto grid = decode_grid(kind, "1, 2, 4, 8, 16", "1, 4, 16");
  const Shard outer{1, 3};
  std::vector<std::string> outer_labels, worker_labels;
  for (const auto& p : shard_points(grid, outer)) outer_labels.push_back(p.label());
  for (int w = 0; w < 2; ++w)
    for (const auto& p : shard_points(grid, sub_shard(outer, w, 2))) worker_labels.push_back(p.label());
  std::sort(outer_labels.begin(), outer_labels.end());
  std::sort(worker_labels.begin(), worker_labels.end());
  EXPECT_EQ(worker_labels, outer_labels);
  EXPECT_EQ(sub_shard(Shard{}, 1, 2).tag(), "1-of-2");
  // The workers' shards stay within what a worker's --shard takes.
  EXPECT_NO_THROW(check_worker_shards(Shard{0, 50000}, 2, "0,1"));
  EXPECT_EQ(error_of([] { check_worker_shards(Shard{0, 60000}, 2, "0,1"); }),
            "--shard 0/60000 with --devices 0,1: 60000 shards x 2 devices make 120000 worker shards (allowed: at most "
            "100000)");
}

TEST(Devices, ParsesListsAndAll) {
  EXPECT_EQ(parse_device_list("all", 2), (std::vector<int>{0, 1}));
  EXPECT_EQ(parse_device_list("1,0", 4), (std::vector<int>{1, 0}));
  for (const auto& [text, count] : std::vector<std::pair<std::string, int>>{
           {"2", 2}, {"0,0", 2}, {"", 2}, {"0,", 2}, {"x", 2}, {"-1", 2}, {"all", 0}, {"0", 0}}) {
    const std::string e = error_of([&] { parse_device_list(text, count); });
    EXPECT_NE(e.find("--devices"), std::string::npos) << text << ": " << e;
  }
  // The form alone (device count unknown, as without a GPU): indices are taken as given, "all" names none.
  EXPECT_EQ(parse_device_list("all", -1), (std::vector<int>{}));
  EXPECT_EQ(parse_device_list("3,1", -1), (std::vector<int>{3, 1}));
  EXPECT_EQ(parse_device_list("+0,01", -1), (std::vector<int>{0, 1}));  // as --device +0 takes it
  EXPECT_NE(error_of([] { parse_device_list("0,+0", -1); }).find("device 0 is listed twice"), std::string::npos);
  EXPECT_NE(error_of([] { parse_device_list("0,99999999999999999999", -1); })
                .find("--devices '0,99999999999999999999': 99999999999999999999 is out of range (allowed: all, or "
                      "distinct device indices in 0..1023"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_device_list("0,1", 1); })
                .find("--devices '0,1': '1' is not a device of this machine (allowed: all, or distinct indices in 0..0"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_device_list("one", 2); }).find("'one' is not a device index"), std::string::npos);
  for (const std::string text : {"x", "ALL", "-1", "1024", "0,,1", "0,0", ""}) {
    const std::string e = error_of([&] { parse_device_list(text, -1); });
    EXPECT_NE(e.find("--devices '" + text + "'"), std::string::npos) << text << ": " << e;
    EXPECT_NE(e.find("allowed: all, or distinct device indices in 0..1023"), std::string::npos) << text << ": " << e;
  }
}

/// Runs the fake kind's sweep on each shard of a grid, and once on the whole grid, into `dir`.
struct ShardRuns : ::testing::Test {
  test::TempDir dir;
  test::FakeKind fake;
  ExperimentKind kind;
  std::vector<Point> grid;
  SweepContext ctx;
  void SetUp() override {
    fake.fail_batch = -1;
    kind = fake.kind();
    const SweepConfig c = parse_sweep_config(
        "[experiment]\nname = \"fake_shards\"\n[axes]\nbatch = [1, 2, 3, 4]\nbuffer_size = [4, 8]\n", "f.toml");
    grid = make_grid(kind, resolve_axes(kind, c, {}));
    ctx.gpu = "Fake GPU";
  }
  std::string run(const std::vector<Point>& points, const std::string& name) {
    SweepOptions o;
    o.experiment = "fake_shards";
    o.out_path = dir.file(name);
    o.progress = o.summary = nullptr;
    run_sweep(kind, points, ctx, o);
    return o.out_path;
  }
  CsvInput input(const std::string& path) { return {path, read_csv_file(path)}; }
  std::vector<std::string> grid_keys() const {
    std::vector<std::string> keys;
    for (const auto& p : grid) keys.push_back(point_row_key("fake_shards", p));
    return keys;
  }
};

/// The table without its timestamp column (the only column that differs between runs of the fake kind).
CsvTable without_timestamps(CsvTable t) {
  const size_t col = require_column(t.header, "timestamp", "t");
  t.header.erase(t.header.begin() + long(col));
  for (auto& r : t.rows) r.erase(r.begin() + long(col));
  return t;
}

TEST_F(ShardRuns, MergedShardsEqualOneRunInGridOrder) {
  const CsvTable whole = read_csv_file(run(grid, "whole.csv"));
  ASSERT_EQ(whole.rows.size(), grid.size());
  for (int n : {2, 3, 5}) {
    std::vector<CsvInput> inputs;
    for (int i = n - 1; i >= 0; --i)  // shards given out of order
      inputs.push_back(
          input(run(shard_points(grid, Shard{i, n}), "s" + std::to_string(i) + "of" + std::to_string(n) + ".csv")));
    MergeSpec spec;
    spec.header = csv_columns(kind);
    spec.experiment = "fake_shards";
    spec.grid_keys = grid_keys();
    const MergeResult m = merge_csv_tables(inputs, {kind}, spec);
    EXPECT_EQ(without_timestamps(m.table).rows, without_timestamps(whole).rows) << "N = " << n;
    EXPECT_EQ(m.gpu, "Fake GPU");

    // Without a grid the rows keep the input order: the last shard's rows first.
    const MergeResult unordered = merge_csv_tables(inputs, {kind});
    ASSERT_EQ(unordered.table.rows.size(), grid.size());
    EXPECT_EQ(unordered.table.rows.front(), inputs.front().table.rows.front());
  }
}

TEST_F(ShardRuns, HeaderOnlyShardIsAccepted) {
  std::vector<CsvInput> inputs{input(run(grid, "all.csv")), {"empty.csv", CsvTable{csv_columns(kind), {}}}};
  EXPECT_EQ(merge_csv_tables(inputs, {kind}).table.rows.size(), grid.size());
}

// A decode CSV written before the kind had its launch axis (tests/data/csv/) merges with one that has it:
// its rows are read as plain launches, as resuming and kvb compare read them.
TEST(Merge, ReadsACsvWrittenBeforeAnAxisWasAdded) {
  const ExperimentKind& decode = find_experiment_kind("decode");
  const CsvInput old{"decode_aligned_before_launch_axis.csv",
                     read_csv_file(std::string(KVB_SOURCE_DIR) +
                                   "/tests/data/csv/decode_aligned_before_launch_axis.csv")};
  ASSERT_EQ(std::count(old.table.header.begin(), old.table.header.end(), "launch"), 0);
  ASSERT_FALSE(old.table.rows.empty());
  // The same points with launch = pdl, in the whole header: distinct points, so both merge.
  CsvInput pdl{"pdl.csv", old.table};
  upgrade_older_header(decode, pdl.table, pdl.path);
  ASSERT_EQ(pdl.table.header, csv_columns(decode));
  const size_t launch = size_t(std::find(pdl.table.header.begin(), pdl.table.header.end(), "launch") -
                               pdl.table.header.begin());
  for (auto& row : pdl.table.rows) row[launch] = "pdl";
  const MergeResult m = merge_csv_tables({old, pdl}, experiment_kinds());
  EXPECT_EQ(m.table.header, csv_columns(decode));
  ASSERT_EQ(m.table.rows.size(), 2 * old.table.rows.size());
  size_t plain = 0;
  for (const auto& row : m.table.rows) plain += row[launch] == "plain";
  EXPECT_EQ(plain, old.table.rows.size());
}

TEST_F(ShardRuns, MergeRejectsMismatches) {
  const CsvInput a = input(run(shard_points(grid, Shard{0, 2}), "a.csv"));
  const CsvInput b = input(run(shard_points(grid, Shard{1, 2}), "b.csv"));
  ASSERT_NO_THROW(merge_csv_tables({a, b}, {kind}));

  // A header with a column more.
  CsvInput wide = b;
  wide.path = "wide.csv";
  wide.table.header.push_back("extra");
  for (auto& r : wide.table.rows) r.push_back("1");
  std::string e = error_of([&] { merge_csv_tables({a, wide}, {kind}); });
  EXPECT_NE(e.find("wide.csv:1: unknown column 'extra'"), std::string::npos) << e;

  // Another experiment.
  CsvInput other = b;
  other.path = "other.csv";
  for (auto& r : other.table.rows) r[0] = "another_experiment";
  e = error_of([&] { merge_csv_tables({a, other}, {kind}); });
  EXPECT_NE(e.find("other.csv: experiment 'another_experiment' differs from 'fake_shards'"), std::string::npos) << e;
  MergeSpec spec;
  spec.experiment = "another_experiment";
  e = error_of([&] { merge_csv_tables({other, a}, {kind}, spec); });
  EXPECT_NE(e.find(a.path), std::string::npos) << e;

  // The same point twice.
  CsvInput dup = a;
  dup.path = "dup.csv";
  e = error_of([&] { merge_csv_tables({a, b, dup}, {kind}); });
  EXPECT_NE(e.find("dup.csv: point"), std::string::npos) << e;
  EXPECT_NE(e.find("is also in " + a.path), std::string::npos) << e;
  // The same point spelled another way (batch 01 for 1): one point, as the sweep writes one spelling.
  CsvInput respelled = a;
  respelled.path = "respelled.csv";
  const size_t batch_col = require_column(a.table.header, "batch", a.path);
  for (auto& r : respelled.table.rows) r[batch_col] = "0" + r[batch_col];
  e = error_of([&] { merge_csv_tables({a, b, respelled}, {kind}); });
  EXPECT_NE(e.find("respelled.csv: point"), std::string::npos) << e;
  EXPECT_NE(e.find("is also in " + a.path), std::string::npos) << e;

  // No header, or not the config kind's header.
  e = error_of([&] { merge_csv_tables({a, {"blank.csv", {}}}, {kind}); });
  EXPECT_NE(e.find("blank.csv: empty file"), std::string::npos) << e;
  MergeSpec decode_spec;
  decode_spec.header = csv_columns(find_experiment_kind("decode"));
  e = error_of([&] { merge_csv_tables({a}, {kind}, decode_spec); });
  EXPECT_NE(e.find(a.path + ": header differs from the config's experiment kind"), std::string::npos) << e;
  EXPECT_THROW(merge_csv_tables({}, {kind}), UsageError);
}

TEST_F(ShardRuns, KeyedRowsFoldWorkerRowsLikeASweep) {
  // An earlier file: every point of shard 0/2, the first one failed.
  CsvTable earlier = read_csv_file(run(shard_points(grid, Shard{0, 2}), "earlier.csv"));
  const size_t status = require_column(earlier.header, "status", "earlier.csv");
  earlier.rows[0][status] = "failed: out of memory";
  KeyedRows rows(kind, earlier);
  EXPECT_EQ(rows.key(earlier.rows[1]), point_row_key("fake_shards", grid[2]));
  ASSERT_NE(rows.find(point_row_key("fake_shards", grid[2])), nullptr);
  EXPECT_EQ(rows.find(point_row_key("fake_shards", grid[1])), nullptr);

  // keep_ok (recovering leftovers): a failed row does not replace an ok one, an ok row replaces a failed one.
  std::vector<std::string> failed_again = earlier.rows[1];
  failed_again[status] = "failed: again";
  rows.put(failed_again, true);
  EXPECT_TRUE(rows.ok(*rows.find(rows.key(earlier.rows[1]))));
  std::vector<std::string> fixed = earlier.rows[0];
  fixed[status] = "ok";
  rows.put(fixed, true);
  EXPECT_EQ(rows.table().rows[0], fixed);

  // The other shard's rows are appended in the order given; existing rows keep their place.
  const CsvTable other = read_csv_file(run(shard_points(grid, Shard{1, 2}), "other.csv"));
  for (const auto& r : other.rows) rows.put(r, false);
  ASSERT_EQ(rows.table().rows.size(), grid.size());
  EXPECT_EQ(rows.table().rows[1], earlier.rows[1]);
  EXPECT_EQ(rows.table().rows[earlier.rows.size()], other.rows[0]);
  EXPECT_EQ(KeyedRows(kind, CsvTable{}).table().header, csv_columns(kind));
}

// A row whose state_dtype is empty (a CSV edited by hand, or written before the column had a value) is the fp32 point
// to every reader: a resume's KeyedRows and done-set, RowKeyer (merge, compare) and the grid's point_row_key.
TEST(PointKeys, AnEmptyStateDtypeIsTheFp32Point) {
  const ExperimentKind& kind = find_experiment_kind("short_context");
  Point fp32;
  for (const auto& a : kind.axes) fp32.axes.emplace_back(a.name, a.name == "state_dtype" ? "fp32" : a.defaults[0]);
  std::vector<std::string> row{"short_context"};
  for (const auto& a : fp32.axes) row.push_back(a.first == "state_dtype" ? "" : a.second);
  row.resize(csv_columns(kind).size(), "");
  const std::string key = point_row_key("short_context", fp32);
  EXPECT_EQ(kind_row_key(kind, row), key);
  CsvTable t;
  t.header = csv_columns(kind);
  t.rows = {row};
  EXPECT_EQ(KeyedRows(kind, t).key(row), key);
  std::vector<std::string> axis_columns;
  for (const auto& a : kind.axes) axis_columns.push_back(a.name);
  EXPECT_EQ(RowKeyer(t.header, axis_columns, "short.csv", &kind).key(row), key);
  row[1 + std::distance(kind.axes.begin(), std::find_if(kind.axes.begin(), kind.axes.end(), [](const AxisSpec& a) {
                          return a.name == "state_dtype";
                        }))] = "bf16";
  EXPECT_NE(kind_row_key(kind, row), key);
}

TEST(Workers, RelayPrefixedOutputAndExitCodes) {
  std::FILE* out = std::tmpfile();
  ASSERT_TRUE(out);
  const std::vector<WorkerSpec> workers{{{"/bin/sh", "-c", "echo one; echo two >&2; printf tail; exit 3"}, "[gpu 0] "},
                                        {{"/bin/sh", "-c", "echo three"}, "[gpu 1] "},
                                        {{"/bin/sh", "-c", "kill -TERM $$"}, "[gpu 2] "}};
  const std::vector<int> codes = run_workers(workers, out);
  EXPECT_EQ(codes, (std::vector<int>{3, 0, 128 + 15}));
  std::rewind(out);
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, out)) > 0) text.append(buf, n);
  std::fclose(out);
  for (const char* line : {"[gpu 0] one\n", "[gpu 0] two\n", "[gpu 0] tail\n", "[gpu 1] three\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << " in:\n" << text;
  EXPECT_THROW(run_workers({{{"/nonexistent/kvb"}, ""}}, nullptr), std::runtime_error);
  EXPECT_NE(current_executable().find("kvb_tests"), std::string::npos);
}

}  // namespace
}  // namespace kvb
