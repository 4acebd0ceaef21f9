// The one validation of result CSVs (harness/sweep/result_csv.h): the shared fixture files (tests/data/csv/cases.csv,
// also run against plots/result_csv.py by tests/plots), the schemas file the figures read, the committed results, and
// every reader refusing what the validation refuses (a resuming sweep, merge, compare, the claims).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/kinds/registry.h"
#include "harness/reports/claims.h"
#include "harness/reports/compare.h"
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
using test::read_text;
using test::TempDir;
using test::write_text;

const std::string kCases = std::string(KVB_TEST_DATA_DIR) + "/csv";

/// The message of the UsageError `f` throws ("" and a test failure when it throws none).
template <typename F>
std::string refusal(F&& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted";
  return "";
}

/// The result CSV at `path` as kvb merge and kvb compare judge it: read_result_csv, then validate_axis_values for a
/// CSV of a sweep's kind.
void judged(const std::string& path) {
  const CsvTable t = read_result_csv(path, result_schemas());
  if (const ExperimentKind* kind = csv_kind(t.header, experiment_kinds())) validate_axis_values(t, *kind, path);
}

TEST(CsvValidation, SharedCasesAreAcceptedOrRefusedNamingFileLineAndColumn) {
  const CsvTable cases = parse_csv(read_text(kCases + "/cases.csv"), "cases.csv");
  ASSERT_GE(cases.rows.size(), 10u);
  for (const auto& c : cases.rows) {
    const std::string path = kCases + "/cases/" + c[0];
    SCOPED_TRACE(path);
    if (c[1] == "valid") {
      EXPECT_NO_THROW(judged(path));
      continue;
    }
    const std::string message = refusal([&] { judged(path); });
    EXPECT_NE(message.find(path + c[1]), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
  }
  // Every fixture is listed, so that both implementations see the same cases.
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(kCases + "/cases")) files += e.path().extension() == ".csv";
  EXPECT_EQ(files, cases.rows.size());
}

TEST(CsvValidation, BomAndCrlfReadAsThePlainFile) {
  const CsvTable plain = parse_csv(read_text(kCases + "/decode_aligned_before_launch_axis.csv"), "plain.csv");
  const CsvTable bom = read_result_csv(kCases + "/cases/valid_bom_crlf.csv", result_schemas());
  EXPECT_EQ(bom.header, plain.header);
  ASSERT_EQ(bom.rows.size(), 2u);
  EXPECT_EQ(bom.rows[0], plain.rows[0]);
  EXPECT_EQ(bom.rows[1], plain.rows[1]);
  EXPECT_EQ(bom.header[0], "experiment");
}

/// plots/result_schemas.csv: the schemas as the figures read them. KVB_UPDATE_SCHEMAS=1 writes it from the kinds.
std::string schemas_csv() {
  CsvTable t;
  t.header = {"kind", "column", "key", "added_later", "count"};
  const auto flag = [](const std::vector<std::string>& v, const std::string& c) {
    return std::find(v.begin(), v.end(), c) != v.end() ? "yes" : "no";
  };
  for (const CsvSchema& s : result_schemas())
    for (const auto& c : s.columns) t.rows.push_back({s.kind, c, flag(s.key, c), flag(s.added_later, c), flag(s.counts, c)});
  return format_csv(t);
}

/// Expects plots/NAME to hold `text`, what kvb's kinds give; with KVB_UPDATE_SCHEMAS=1 writes it first.
void expect_plots_file(const std::string& name, const std::string& text, const std::string& test) {
  const std::string path = std::string(KVB_SOURCE_DIR) + "/plots/" + name;
  const char* update = std::getenv("KVB_UPDATE_SCHEMAS");
  if (update && std::string(update) == "1") write_file_atomic(path, text);
  EXPECT_EQ(read_text(path), text) << "plots/" << name << " differs from the kinds kvb knows; write it again with "
                                   << "KVB_UPDATE_SCHEMAS=1 kvb_tests --gtest_filter=CsvValidation." << test;
}

TEST(CsvValidation, SchemasFileMatchesTheKinds) {
  expect_plots_file("result_schemas.csv", schemas_csv(), "SchemasFileMatchesTheKinds");
}

/// plots/result_axes.csv: each kind's axes and what their checks allow (AxisCheck::rule, words, low, high, allowed),
/// as the figures read them. KVB_UPDATE_SCHEMAS=1 writes it from the kinds.
std::string axes_csv() {
  CsvTable t;
  t.header = {"kind", "axis", "rule", "words", "low", "high", "allowed", "applies_to"};
  for (const ExperimentKind& kind : experiment_kinds()) {
    const auto variant = std::find_if(kind.axes.begin(), kind.axes.end(), [](const AxisSpec& a) {
      return a.name == "variant";
    });
    for (const AxisSpec& a : kind.axes) {
      const std::string words = fmt::format("{}", fmt::join(a.check.words, " "));
      std::string applies_to;
      if (variant != kind.axes.end() && a.name != "variant")
        for (const auto& v : variant->check.words)
          if (!kind.applies || kind.applies(v, a.name)) applies_to += (applies_to.empty() ? "" : " ") + v;
      t.rows.push_back({kind.name, a.name, a.check.rule, words, a.check.low, a.check.high, a.check.allowed, applies_to});
    }
  }
  return format_csv(t);
}

TEST(CsvValidation, AxesFileMatchesTheKinds) {
  expect_plots_file("result_axes.csv", axes_csv(), "AxesFileMatchesTheKinds");
}

TEST(CsvValidation, EveryAxisCheckAllowsWhatItsRuleStates) {
  // The file states each check as data (AxisCheck::rule and its words and bounds); the checks themselves must allow
  // just that, with the message form the figures' reader writes for the rule.
  for (const ExperimentKind& kind : experiment_kinds())
    for (const AxisSpec& a : kind.axes) {
      const AxisCheck& c = a.check;
      SCOPED_TRACE(kind.name + "." + a.name + " (" + c.rule + ")");
      const auto refused = [&](const std::string& value, const std::string& how) {
        EXPECT_EQ(a.refusal(value), a.name + " = '" + value + "' " + how + " (allowed: " + c.allowed + ")");
      };
      ASSERT_FALSE(c.allowed.empty());
      for (const auto& w : c.words) {
        EXPECT_EQ(w.find_first_of(" \t\n\v\f\r,"), std::string::npos) << "the file separates words by spaces: " << w;
        EXPECT_EQ(a.refusal(w), "") << w;
        EXPECT_EQ(a.refusal(" " + w), a.name + " = ' " + w + "' has white space around it (allowed: " + c.allowed + ")");
      }
      if (c.rule == "words") {
        ASSERT_FALSE(c.words.empty());
        refused(c.words[0] + "x", "is not known");
        refused("", "is not known");
      } else if (c.rule == "integers") {
        const long long lo = std::stoll(c.low), hi = std::stoll(c.high);
        ASSERT_LE(lo, hi);
        EXPECT_EQ(c.allowed, "integers " + c.low + " to " + c.high);
        for (const auto& v : {c.low, c.high, "+" + c.high, "0" + c.low}) EXPECT_EQ(a.refusal(v), "") << v;
        refused(std::to_string(lo - 1), "is out of range");
        refused(std::to_string(hi + 1), "is out of range");
        refused(c.low + ".0", "is not an integer");
        refused("99999999999999999999", "is out of range");
        refused("-99999999999999999999", "is out of range");
        refused("+-1", "is not an integer");
      } else if (c.rule == "integer_set") {
        ASSERT_FALSE(c.words.empty());
        EXPECT_EQ(a.refusal("+" + c.words[0]), "");
        refused(c.words[0] + "1", "is not supported");
        refused("x", "is not supported");
      } else if (c.rule == "words_or_rate") {
        EXPECT_EQ(c.low, "0");
        EXPECT_EQ(c.high, "1");
        for (const char* v : {"0.5", ".25", "5e-1", "+0.999"}) EXPECT_EQ(a.refusal(v), "") << v;
        for (const char* v : {"0", "1", "1.0", "-0.5", "nan", "inf", "0x0.8p0", "0.5x", "half"})
          refused(v, "is not allowed");
        refused(std::string("0.5\0x", 5), "is not allowed");
      } else {
        ADD_FAILURE() << "a rule the figures' reader does not know";
      }
    }
}

TEST(CsvValidation, CommittedResultsPass) {
  size_t checked = 0;
  for (const auto& e : fs::directory_iterator(std::string(KVB_SOURCE_DIR) + "/results")) {
    if (e.path().extension() != ".csv" || e.path().filename() == "anchors.csv") continue;
    SCOPED_TRACE(e.path().string());
    EXPECT_NO_THROW(judged(e.path().string()));
    ++checked;
  }
  EXPECT_GE(checked, 5u);
}

TEST(CsvValidation, EmptyFileAndFolderAreRefused) {
  TempDir dir;
  write_text(dir.file("empty.csv"), "");
  EXPECT_NE(refusal([&] { read_result_csv(dir.file("empty.csv"), result_schemas()); }).find("empty file"),
            std::string::npos);
  EXPECT_NE(refusal([&] { read_result_csv(dir.path().string(), result_schemas(), "IN"); }).find("is a directory"),
            std::string::npos);
  EXPECT_NE(refusal([&] { read_result_csv(dir.file("absent.csv"), result_schemas(), "IN"); })
                .find("IN " + dir.file("absent.csv") + ": no such file"),
            std::string::npos);
}

/// A decode result table of 3 points whose row `bad` holds latencies (p10, median, p90).
CsvTable decode_table(size_t bad = 99, double p10 = 0, double median = 0, double p90 = 0) {
  const ExperimentKind& kind = find_experiment_kind("decode");
  return test::synthetic_table(kind, "smoke", test::decode_grid(kind, "1, 64", "4"), [&](size_t i, const Point& p) {
    if (i == bad) return test::SyntheticRow{median, p10, p90};
    return test::scaled(1.0, 0.01)(i, p);
  });
}

TEST(CsvValidation, TextThatIsNotUtf8IsRefusedNamingLineColumnAndByte) {
  // A stray Latin-1 byte, an encoded surrogate and an overlong '/', in the git_sha of the second row; then in a
  // column name. Well-formed UTF-8 (é, 𝄞) passes.
  const CsvTable good = decode_table();
  const size_t sha = size_t(std::find(good.header.begin(), good.header.end(), "git_sha") - good.header.begin());
  ASSERT_LT(sha, good.header.size());
  TempDir dir;
  const std::string path = dir.file("d.csv");
  const auto judge = [&](const CsvTable& t) {
    write_text(path, format_csv(t));
    return refusal([&] { read_result_csv(path, result_schemas()); });
  };
  for (const auto& [bytes, lead] : std::vector<std::pair<std::string, std::string>>{
           {"\xE9", "0xE9"}, {"\xED\xA0\x80", "0xED"}, {"\xC0\xAF", "0xC0"}, {"\xF4\x90\x80\x80", "0xF4"},
           {"\xE2\x82", "0xE2"}}) {
    CsvTable t = good;
    t.rows[1][sha] = "ab" + bytes + "c";
    EXPECT_EQ(judge(t), path + ":3: git_sha holds a byte that is not UTF-8 text (" + lead +
                            ", byte 3 of the value; allowed: UTF-8 text)");
  }
  CsvTable named = good;
  named.header[sha] = "git\xE9sha";
  EXPECT_EQ(judge(named), path + ":1: the name of column " + std::to_string(sha + 1) +
                              " holds a byte that is not UTF-8 text (0xE9, byte 4 of the name; allowed: UTF-8 text)");
  CsvTable fine = good;
  fine.rows[1][sha] = "caf\xC3\xA9 \xF0\x9D\x84\x9E";
  write_text(path, format_csv(fine));
  EXPECT_NO_THROW(read_result_csv(path, result_schemas()));
}

TEST(CsvValidation, EveryReaderRefusesImpossibleLatencies) {
  TempDir dir;
  const CsvTable good = decode_table(), negative = decode_table(1, -310, -300, -290),
                 crossed = decode_table(2, 12, 10, 11);  // p10 above p90
  write_text(dir.file("good.csv"), format_csv(good));
  write_text(dir.file("negative.csv"), format_csv(negative));
  write_text(dir.file("crossed.csv"), format_csv(crossed));
  const std::string neg_line = dir.file("negative.csv") + ":3: latency_us_";
  const std::string crossed_line = dir.file("crossed.csv") + ":4: latency_us_p10 = ";

  // compare
  const CsvInput base{dir.file("good.csv"), good};
  EXPECT_NE(refusal([&] {
              compare_tables(base, {dir.file("negative.csv"), negative}, experiment_kinds(), CompareOptions{});
            }).find(neg_line),
            std::string::npos);
  EXPECT_NE(refusal([&] {
              compare_tables(base, {dir.file("crossed.csv"), crossed}, experiment_kinds(), CompareOptions{});
            }).find(crossed_line),
            std::string::npos);
  // merge
  EXPECT_NE(refusal([&] { merge_csv_tables({{dir.file("crossed.csv"), crossed}}, experiment_kinds()); })
                .find(crossed_line),
            std::string::npos);
  // a resuming sweep
  EXPECT_NE(refusal([&] { load_resume_table(find_experiment_kind("decode"), dir.file("negative.csv")); })
                .find("--out " + neg_line),
            std::string::npos);
  // the claims
  EXPECT_NE(refusal([&] {
              claims::compute_claims(dir.file("crossed.csv"), dir.file("a.csv"), dir.file("b.csv"), dir.file("c.csv"),
                                     result_schemas());
            }).find(crossed_line),
            std::string::npos);
}

TEST(CsvValidation, MergeAndCompareRefuseAxisValuesNoSweepWrites) {
  TempDir dir;
  const ExperimentKind& kind = find_experiment_kind("decode");
  const CsvTable good = decode_table();
  const size_t launch = size_t(std::find(good.header.begin(), good.header.end(), "launch") - good.header.begin());
  ASSERT_LT(launch, good.header.size());
  CsvTable bad = good;
  bad.rows[1][launch] = "foo";
  write_text(dir.file("bad.csv"), format_csv(bad));
  const std::string line = dir.file("bad.csv") + ":3: launch = 'foo' is not known (allowed: plain, pdl)";
  // The axis's own check: the same words a config giving launch = "foo" gets.
  EXPECT_EQ(kind.axes[size_t(launch - 1)].refusal("foo"), "launch = 'foo' is not known (allowed: plain, pdl)");
  EXPECT_NE(refusal([&] { merge_csv_tables({{dir.file("bad.csv"), bad}}, experiment_kinds()); }).find(line),
            std::string::npos);
  const CsvInput base{dir.file("good.csv"), good};
  EXPECT_NE(refusal([&] {
              compare_tables(base, {dir.file("bad.csv"), bad}, experiment_kinds(), CompareOptions{});
            }).find(line),
            std::string::npos);
  EXPECT_NE(refusal([&] {
              compare_tables({dir.file("bad.csv"), bad}, base, experiment_kinds(), CompareOptions{});
            }).find(line),
            std::string::npos);
  // A resuming sweep keeps the row, as one outside its grid.
  EXPECT_NO_THROW(load_resume_table(kind, dir.file("bad.csv")));
}

TEST(CsvValidation, ClaimsRefuseANegativeKvbufferOrZeroRecurrentLatency) {
  // A KVBuffer median of -300 us printed "156.2% lower"; a recurrent 0 us moved the claim to another batch.
  CsvTable t;
  t.header = {"experiment", "variant", "batch", "buffer_size", "phase", "latency_us_median", "status"};
  t.rows = {{"x", "recurrent", "64", "", "", "533.6", "ok"}, {"x", "kvbuffer", "64", "8", "staggered", "-300", "ok"}};
  TempDir dir;
  write_text(dir.file("d.csv"), format_csv(test::as_result_table(t, "decode")));
  EXPECT_NE(refusal([&] {
              claims::compute_claims(dir.file("d.csv"), dir.file("a"), dir.file("b"), dir.file("c"), result_schemas());
            }).find("d.csv:3: latency_us_p10 = '-300'"),
            std::string::npos);
  EXPECT_NE(refusal([&] { claims::best_reduction_vs_recurrent(t, "d.csv"); }).find("'-300'"), std::string::npos);
  t.rows[0][5] = "0";
  t.rows[1][5] = "300";
  EXPECT_NE(refusal([&] { claims::best_reduction_vs_recurrent(t, "d.csv"); }).find("value '0'"), std::string::npos);
}

TEST(CsvValidation, ResumeReadsAFileWithoutTheDiscardedSamplesColumn) {
  // A decode CSV written before discarded_samples resumes, the column read empty.
  TempDir dir;
  const ExperimentKind& kind = find_experiment_kind("decode");
  const std::string path = dir.file("old.csv");
  fs::copy_file(kCases + "/decode_aligned_before_launch_axis.csv", path);
  const CsvTable t = load_resume_table(kind, path);
  EXPECT_EQ(t.header, csv_columns(kind));
  const size_t col = size_t(std::find(t.header.begin(), t.header.end(), "discarded_samples") - t.header.begin());
  ASSERT_LT(col, t.header.size());
  for (const auto& row : t.rows) EXPECT_EQ(row[col], "");
}

TEST(CsvValidation, MergeRefusesShardsOfTwoGpus) {
  TempDir dir;
  const ExperimentKind& kind = find_experiment_kind("decode");
  const auto grid = test::decode_grid(kind, "1, 64", "4");
  const auto tight = test::scaled(1.0, 0.01);
  const CsvTable a = test::synthetic_table(kind, "smoke", {grid[0]}, tight);
  const CsvTable b = test::synthetic_table(kind, "smoke", {grid[1]}, [&](size_t i, const Point& p) {
    auto r = tight(i, p);
    r.gpu = "NVIDIA H100";
    return r;
  });
  const std::string message = refusal([&] { merge_csv_tables({{"a.csv", a}, {"b.csv", b}}, experiment_kinds()); });
  EXPECT_NE(message.find("b.csv: gpu 'NVIDIA H100' differs from 'NVIDIA H200' in a.csv"), std::string::npos)
      << message;
}

}  // namespace
}  // namespace kvb
