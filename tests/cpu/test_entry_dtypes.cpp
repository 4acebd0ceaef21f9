// The entry_dtypes column (harness/kinds/entry_dtypes.h): its value for every variant of every kind in both buffer
// forms, its place in each kind's CSV, and CSVs written before it, which still validate, resume and merge with their
// rows reading it empty.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>

#include "harness/kinds/capacity_model.h"
#include "harness/kinds/capacity_table.h"
#include "harness/kinds/entry_dtypes.h"
#include "harness/kinds/registry.h"
#include "harness/sweep/csv.h"
#include "harness/sweep/merge.h"
#include "harness/sweep/result_csv.h"
#include "harness/sweep/sweep.h"
#include "harness/sweep/table_keys.h"
#include "test_regression_support.h"
#include "test_sweep_support.h"

namespace kvb {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDelta = "k=bf16 u=fp32 g=fp32";
constexpr const char* kRaw = "k=bf16 v=bf16 a=bf16 b=bf16";

/// Index of column `name` in `header` (a test failure, and header.size(), when absent).
size_t column(const std::vector<std::string>& header, const std::string& name) {
  const auto at = std::find(header.begin(), header.end(), name);
  EXPECT_NE(at, header.end()) << name;
  return size_t(at - header.begin());
}

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

TEST(EntryDtypes, KVBufferVariantsStateTheirFormsEntriesTheOthersNothing) {
  for (const char* v : {"kvbuffer", "kvbuffer_verify", "kvbuffer_decode"}) {
    EXPECT_EQ(entry_dtypes(v, BufferForm::delta), kDelta) << v;
    EXPECT_EQ(entry_dtypes(v, BufferForm::raw), kRaw) << v;
  }
  for (const char* v : {"recurrent", "recurrent_verify", "recurrent_decode", "fla_recurrent", "flashinfer_recurrent",
                        "replayssm_decode", "", "kvbuffer_raw", "KVBuffer"}) {
    EXPECT_EQ(entry_dtypes(v, BufferForm::delta), "") << v;
    EXPECT_EQ(entry_dtypes(v, BufferForm::raw), "") << v;
  }
}

// Which variant of each kind holds a buffer, stated here one by one: a variant a kind gains must be placed here. A
// buffered variant is the one the buffer_form axis applies to, where the kind has that axis.
TEST(EntryDtypes, EveryVariantOfEveryKindIsPlaced) {
  const std::map<std::string, bool> buffered{
      {"decode/recurrent", false},          {"decode/kvbuffer", true},
      {"decode/fla_recurrent", false},      {"decode/flashinfer_recurrent", false},
      {"decode/replayssm_decode", false},   {"spec_verify/recurrent_verify", false},
      {"spec_verify/kvbuffer_verify", true}, {"short_context/recurrent", false},
      {"short_context/kvbuffer", true},     {"accuracy/recurrent", false},
      {"accuracy/kvbuffer", true}};
  size_t placed = 0;
  for (const ExperimentKind& kind : experiment_kinds()) {
    const auto variant =
        std::find_if(kind.axes.begin(), kind.axes.end(), [](const AxisSpec& a) { return a.name == "variant"; });
    ASSERT_NE(variant, kind.axes.end()) << kind.name;
    const bool has_form = std::any_of(kind.axes.begin(), kind.axes.end(),
                                      [](const AxisSpec& a) { return a.name == "buffer_form"; });
    for (const auto& v : variant->check.words) {
      const std::string name = kind.name + "/" + v;
      SCOPED_TRACE(name);
      ASSERT_EQ(buffered.count(name), 1u);
      ++placed;
      const bool buffers = buffered.at(name);
      EXPECT_EQ(entry_dtypes(v, BufferForm::delta), buffers ? kDelta : "");
      if (has_form) {
        EXPECT_EQ(kind.applies(v, "buffer_form"), buffers);
        EXPECT_EQ(entry_dtypes(v, BufferForm::raw), buffers ? kRaw : "");
      }
    }
  }
  EXPECT_EQ(placed, buffered.size());
  // The capacity table's variants: its KVBuffer rows hold the delta form's entries.
  using capacity::Variant;
  for (const Variant v : {Variant::recurrent_decode, Variant::recurrent_verify, Variant::kvbuffer_decode,
                          Variant::kvbuffer_verify})
    EXPECT_EQ(entry_dtypes(capacity::to_string(v), BufferForm::delta), capacity::is_kvbuffer(v) ? kDelta : "")
        << capacity::to_string(v);
}

TEST(EntryDtypes, ColumnFollowsOutputDtypeAndIsAddedLater) {
  for (const ExperimentKind& kind : experiment_kinds()) {
    SCOPED_TRACE(kind.name);
    const std::vector<std::string> cols = csv_columns(kind);
    const size_t at = column(cols, "entry_dtypes");
    ASSERT_GT(at, 0u);
    ASSERT_LT(at, cols.size());
    EXPECT_EQ(cols[at - 1], "output_dtype");
    EXPECT_EQ(std::count(cols.begin(), cols.end(), "entry_dtypes"), 1);
    EXPECT_TRUE(contains(kind.results_added_later, "entry_dtypes"));
    const CsvSchema s = csv_schema(kind);
    EXPECT_TRUE(contains(s.added_later, "entry_dtypes"));
    EXPECT_FALSE(contains(s.key, "entry_dtypes"));  // a result, not part of a point
  }
  const std::vector<std::string>& cap = capacity::capacity_csv_columns();
  const size_t at = column(cap, "entry_dtypes");
  ASSERT_GT(at, 0u);
  EXPECT_EQ(cap[at - 1], "state_dtype");
  EXPECT_EQ(cap[at + 1], "budget_bytes");
  const CsvSchema s = capacity::capacity_csv_schema();
  EXPECT_TRUE(contains(s.added_later, "entry_dtypes"));
  EXPECT_FALSE(contains(s.key, "entry_dtypes"));
}

// Every committed result CSV of a sweep kind validates and resumes with every cell as it was: one that predates the
// column reads it put back empty, one measured since keeps its values.
TEST(EntryDtypes, CommittedSweepCsvsResumeWithTheColumnEmptyWhereTheyPredateIt) {
  test::TempDir dir;
  size_t resumed = 0, carrying = 0;
  std::map<std::string, size_t> kinds;
  for (const auto& e : fs::directory_iterator(std::string(KVB_SOURCE_DIR) + "/results")) {
    if (e.path().extension() != ".csv" || e.path().filename() == "anchors.csv") continue;
    SCOPED_TRACE(e.path().string());
    const CsvTable before = read_result_csv(e.path().string(), result_schemas());
    const ExperimentKind* kind = csv_kind(before.header, experiment_kinds());
    if (!kind) continue;  // the capacity table: no sweep resumes it
    const bool has_column = contains(before.header, "entry_dtypes");
    const std::string copy = dir.file(e.path().filename().string());
    fs::copy_file(e.path(), copy);
    const CsvTable after = load_resume_table(*kind, copy);
    EXPECT_EQ(after.header, csv_columns(*kind));
    ASSERT_EQ(after.rows.size(), before.rows.size());
    const size_t entries = column(after.header, "entry_dtypes");
    for (size_t r = 0; r < after.rows.size(); ++r) {
      if (!has_column) EXPECT_EQ(after.rows[r][entries], "") << "line " << after.line(r);
      for (size_t c = 0; c < before.header.size(); ++c)
        EXPECT_EQ(after.rows[r][column(after.header, before.header[c])], before.rows[r][c])
            << before.header[c] << ", line " << before.line(r);
    }
    if (has_column) {
      ++carrying;
    } else {
      ++kinds[kind->name];
      ++resumed;
    }
  }
  EXPECT_GE(resumed, 5u);
  EXPECT_GE(carrying, 1u);  // results/spec_verify_bf16.csv
  for (const char* k : {"decode", "spec_verify", "short_context", "accuracy"}) EXPECT_GE(kinds[k], 1u) << k;
}

/// A stand-in for the decode kind's runner: the row kvb's runner writes, with a closed-form latency, entry_dtypes
/// from the point's variant and buffer form; it throws for `fail_batch`, as a point that fails does.
Row stand_in_decode_row(const Point& p, long long fail_batch) {
  if (p.get_int("batch") == fail_batch) throw std::runtime_error("stand-in failure");
  const std::string median = std::to_string(test::synthetic_median_us(p));
  const BufferForm form = p.get("buffer_form") == "raw" ? BufferForm::raw : BufferForm::delta;
  return {{"output_dtype", "bf16"},          {"entry_dtypes", entry_dtypes(p.get("variant"), form)},
          {"latency_us_median", median},     {"latency_us_p10", median},
          {"latency_us_p90", median}};
}

// A sweep resuming a decode CSV written before the column (tests/data/csv/decode_aligned_before_launch_axis.csv, eight
// kvbuffer delta rows): its finished points are skipped and keep the column empty, the points it runs state their
// entries, a point that fails leaves it empty as it leaves every result column, and the file it writes validates.
TEST(EntryDtypes, ADecodeSweepResumesAFileWithoutTheColumn) {
  test::TempDir dir;
  const std::string out = dir.file("decode.csv");
  fs::copy_file(std::string(KVB_TEST_DATA_DIR) + "/csv/decode_aligned_before_launch_axis.csv", out);
  const CsvTable older = read_csv_file(out);
  ExperimentKind kind = find_experiment_kind("decode");
  kind.run = [](const Point& p, SweepContext&) { return stand_in_decode_row(p, 256); };
  // recurrent at 64 and 256; kvbuffer B = 8 aligned at 64 and 256, delta (in the file) and raw (new).
  const std::vector<Point> points = test::grid_with("decode", {"variant=recurrent,kvbuffer", "batch=64,256",
                                                               "buffer_size=8", "phase=aligned",
                                                               "buffer_form=delta,raw"});
  ASSERT_EQ(points.size(), 6u);
  SweepContext ctx;
  ctx.gpu = older.rows.at(0).at(column(older.header, "gpu"));
  SweepOptions options;
  options.experiment = "decode_latency";
  options.out_path = out;
  options.progress = nullptr;
  options.summary = nullptr;
  const SweepSummary s = run_sweep(kind, points, ctx, options);
  EXPECT_EQ(s.skipped, 2u);  // kvbuffer B = 8 aligned delta at 64 and 256
  EXPECT_EQ(s.ok, 4u);
  EXPECT_EQ(s.failed, 2u);   // the new points at batch 256

  const CsvTable t = read_result_csv(out, result_schemas());
  EXPECT_EQ(t.header, csv_columns(kind));
  ASSERT_EQ(t.rows.size(), older.rows.size() + 4);
  const size_t entries = column(t.header, "entry_dtypes"), output = column(t.header, "output_dtype"),
               variant = column(t.header, "variant"), form = column(t.header, "buffer_form"),
               batch = column(t.header, "batch"), status = column(t.header, "status");
  for (size_t r = 0; r < older.rows.size(); ++r) EXPECT_EQ(t.rows[r][entries], "") << "older row " << r;
  std::map<std::string, std::string> got;
  for (size_t r = older.rows.size(); r < t.rows.size(); ++r) {
    const auto& row = t.rows[r];
    got[row[variant] + "/" + row[form] + "/" + row[batch]] = row[entries];
    if (row[batch] == "256") {
      EXPECT_EQ(row[status].rfind("failed: ", 0), 0u) << row[status];
      EXPECT_EQ(row[output], "");
    }
  }
  EXPECT_EQ(got, (std::map<std::string, std::string>{{"recurrent//64", ""},
                                                     {"kvbuffer/raw/64", kRaw},
                                                     {"recurrent//256", ""},
                                                     {"kvbuffer/raw/256", ""}}));
}

// kvb merge of a shard written before the column and one written with it: one table with the whole header, the older
// rows reading the column empty, the newer keeping their values.
TEST(EntryDtypes, MergeJoinsAFileWithoutTheColumnAndOneWithIt) {
  const ExperimentKind& kind = find_experiment_kind("decode");
  const CsvInput older{"older.csv",
                       read_csv_file(std::string(KVB_TEST_DATA_DIR) + "/csv/decode_aligned_before_launch_axis.csv")};
  CsvTable newer =
      test::synthetic_table(kind, "decode_latency", test::decode_grid(kind, "1", "4"), test::scaled(1.0, 0.01));
  const size_t entries = column(newer.header, "entry_dtypes"), variant = column(newer.header, "variant");
  for (auto& row : newer.rows) row[entries] = entry_dtypes(row[variant], BufferForm::delta);
  const MergeResult m = merge_csv_tables({older, {"newer.csv", newer}}, experiment_kinds());
  EXPECT_EQ(m.table.header, csv_columns(kind));
  ASSERT_EQ(m.table.rows.size(), older.table.rows.size() + newer.rows.size());
  for (size_t r = 0; r < older.table.rows.size(); ++r) EXPECT_EQ(m.table.rows[r][entries], "") << r;
  std::map<std::string, std::string> got;
  for (size_t r = older.table.rows.size(); r < m.table.rows.size(); ++r)
    got[m.table.rows[r][variant]] = m.table.rows[r][entries];
  EXPECT_EQ(got, (std::map<std::string, std::string>{{"recurrent", ""}, {"kvbuffer", kDelta}}));
  EXPECT_NO_THROW(validate_result_table(m.table, result_schemas(), "merged.csv"));
  // The other order: the newer file first.
  EXPECT_EQ(merge_csv_tables({{"newer.csv", newer}, older}, experiment_kinds()).table.header, csv_columns(kind));
}

}  // namespace
}  // namespace kvb
