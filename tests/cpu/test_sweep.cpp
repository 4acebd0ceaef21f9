// Grid product and the sweep engine with a fake experiment kind (harness/sweep/grid.h, sweep.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>

#include "harness/sweep/config.h"
#include "harness/sweep/csv.h"
#include "harness/sweep/grid.h"
#include "harness/sweep/interrupt.h"
#include "harness/sweep/sweep.h"
#include "test_sweep_support.h"

namespace kvb {
namespace {

using test::FakeKind;
using test::read_text;
using test::TempDir;
using test::write_text;

std::vector<AxisValues> small_axes(const ExperimentKind& kind, const std::string& batches) {
  const SweepConfig c = parse_sweep_config(
      "[experiment]\nname = \"fake_small\"\n[axes]\nvariant = [\"recurrent\", \"kvbuffer\"]\nbatch = [" + batches +
          "]\nbuffer_size = [4, 8]\n",
      "small.toml");
  return resolve_axes(kind, c, {});
}

TEST(Grid, ProductFirstAxisSlowest) {
  ExperimentKind kind;
  kind.name = "plain";
  const std::vector<AxisValues> axes{{"a", {"1", "2"}}, {"b", {"x", "y", "z"}}};
  const auto points = make_grid(kind, axes);
  ASSERT_EQ(points.size(), 6u);
  size_t i = 0;
  for (const auto& a : axes[0].second)
    for (const auto& b : axes[1].second) {
      EXPECT_EQ(points[i].get("a"), a);
      EXPECT_EQ(points[i].get("b"), b);
      ++i;
    }
  EXPECT_EQ(points[4].label(), "a=2,b=y");
}

TEST(Grid, NonApplyingAxesEmptiedAndDeduplicated) {
  FakeKind fake;
  const ExperimentKind kind = fake.kind();
  const auto points = make_grid(kind, small_axes(kind, "1, 2"));
  // recurrent: one point per batch (buffer_size does not apply); kvbuffer: batch x buffer_size.
  std::vector<std::string> labels;
  for (const auto& p : points) labels.push_back(p.label());
  const std::vector<std::string> expected{
      "variant=recurrent,batch=1,heads_qk=16,heads_v=32,head_dim_k=128,seed=0",
      "variant=recurrent,batch=2,heads_qk=16,heads_v=32,head_dim_k=128,seed=0",
      "variant=kvbuffer,batch=1,buffer_size=4,heads_qk=16,heads_v=32,head_dim_k=128,seed=0",
      "variant=kvbuffer,batch=1,buffer_size=8,heads_qk=16,heads_v=32,head_dim_k=128,seed=0",
      "variant=kvbuffer,batch=2,buffer_size=4,heads_qk=16,heads_v=32,head_dim_k=128,seed=0",
      "variant=kvbuffer,batch=2,buffer_size=8,heads_qk=16,heads_v=32,head_dim_k=128,seed=0"};
  EXPECT_EQ(labels, expected);
  EXPECT_EQ(points[0].get("buffer_size"), "");
  EXPECT_EQ(points[0].axes.size(), kind.axes.size());  // every axis present, in kind order
  EXPECT_THROW(points[0].get("layers"), std::out_of_range);
  EXPECT_THROW(points[0].get_int("variant"), UsageError);
}

struct SweepRun : ::testing::Test {
  TempDir dir;
  FakeKind fake;
  SweepContext ctx;
  SweepOptions options;
  void SetUp() override {
    ctx.gpu = "Fake GPU";
    ctx.driver = "1.2.3";
    ctx.cuda = "13.0";
    ctx.git_sha = "abc123";
    ctx.copy_gbps = 4100.5;
    options.experiment = "fake_small";
    options.out_path = dir.file("out/fake_small.csv");
    options.progress = nullptr;
    options.summary = nullptr;
  }
  std::vector<Point> points(const ExperimentKind& kind, const std::string& batches) {
    auto p = make_grid(kind, small_axes(kind, batches));
    validate_points(kind, p);
    return p;
  }
  CsvTable table() { return parse_csv(read_text(options.out_path), options.out_path); }
};

size_t col(const CsvTable& t, const std::string& name) {
  for (size_t i = 0; i < t.header.size(); ++i)
    if (t.header[i] == name) return i;
  throw std::out_of_range(name);
}

TEST_F(SweepRun, FailedPointIsRecordedAndSweepGoesOn) {
  const ExperimentKind kind = fake.kind();
  const auto pts = points(kind, "1, 3, 4");
  const SweepSummary s = run_sweep(kind, pts, ctx, options);
  EXPECT_EQ(s.points, pts.size());
  EXPECT_EQ(fake.calls, int(pts.size()));
  EXPECT_EQ(s.failed, 3u);  // batch 3: recurrent + two buffer sizes
  EXPECT_EQ(s.ok, pts.size() - 3);

  const CsvTable t = table();
  EXPECT_EQ(t.header, csv_columns(kind));
  ASSERT_EQ(t.rows.size(), pts.size());
  for (size_t i = 0; i < pts.size(); ++i) {
    const auto& row = t.rows[i];
    EXPECT_EQ(row[col(t, "experiment")], "fake_small");
    for (const auto& [axis, value] : pts[i].axes) EXPECT_EQ(row[col(t, axis)], value);
    EXPECT_EQ(row[col(t, "gpu")], "Fake GPU");
    EXPECT_EQ(row[col(t, "git_sha")], "abc123");
    EXPECT_EQ(row[col(t, "timestamp")].size(), 20u);  // 2026-01-01T00:00:00Z
    if (pts[i].get("batch") == "3") {
      EXPECT_EQ(row[col(t, "status")], "failed: out of memory, \"batch\" 3 second line");
      EXPECT_EQ(row[col(t, "latency_us_median")], "");
    } else {
      EXPECT_EQ(row[col(t, "status")], "ok");
      EXPECT_DOUBLE_EQ(std::stod(row[col(t, "latency_us_median")]), std::stod(std::to_string(test::fake_latency_us(pts[i]))));
      EXPECT_EQ(row[col(t, "note")], "copy " + std::to_string(ctx.copy_gbps));
    }
  }
  EXPECT_FALSE(std::filesystem::exists(options.out_path + ".tmp"));
}

TEST_F(SweepRun, ResumeSkipsOkRowsAndRerunsFailedOnes) {
  const ExperimentKind kind = fake.kind();
  const auto pts = points(kind, "1, 3");
  run_sweep(kind, pts, ctx, options);
  const CsvTable first = table();
  ASSERT_EQ(first.rows.size(), pts.size());

  // Second run: the failure is gone; only the 3 failed points run again, replaced in place.
  fake.calls = 0;
  fake.fail_batch = -1;
  const SweepSummary s = run_sweep(kind, pts, ctx, options);
  EXPECT_EQ(fake.calls, 3);
  EXPECT_EQ(s.skipped, pts.size() - 3);
  EXPECT_EQ(s.failed, 0u);
  const CsvTable second = table();
  ASSERT_EQ(second.rows.size(), first.rows.size());
  for (size_t i = 0; i < pts.size(); ++i) {
    EXPECT_EQ(second.rows[i][col(second, "status")], "ok");
    if (pts[i].get("batch") == "1") {
      EXPECT_EQ(second.rows[i], first.rows[i]);  // untouched
    }
  }

  // Third run: everything is done; nothing runs and the file does not change.
  fake.calls = 0;
  const std::string before = read_text(options.out_path);
  run_sweep(kind, pts, ctx, options);
  EXPECT_EQ(fake.calls, 0);
  EXPECT_EQ(read_text(options.out_path), before);

  // A wider grid appends the new points and keeps the old rows.
  const auto wider = points(kind, "1, 3, 5");
  run_sweep(kind, wider, ctx, options);
  EXPECT_EQ(fake.calls, 3);
  EXPECT_EQ(table().rows.size(), wider.size());

  // A file that spells the batches another way (01 for 1): the same points, done; nothing runs, no row is added.
  CsvTable respelled = table();
  for (auto& row : respelled.rows) row[col(respelled, "batch")] = "0" + row[col(respelled, "batch")];
  write_text(options.out_path, format_csv(respelled));
  fake.calls = 0;
  const SweepSummary again = run_sweep(kind, wider, ctx, options);
  EXPECT_EQ(fake.calls, 0);
  EXPECT_EQ(again.skipped, wider.size());
  EXPECT_EQ(table().rows.size(), wider.size());
}

TEST_F(SweepRun, ResumeWithMismatchedHeaderIsUsageError) {
  const ExperimentKind kind = fake.kind();
  std::filesystem::create_directories(dir.file("out"));
  write_text(options.out_path, "experiment,variant,batch\nx,recurrent,1\n");
  try {
    run_sweep(kind, points(kind, "1"), ctx, options);
    ADD_FAILURE() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(options.out_path), std::string::npos) << e.what();
  }
  EXPECT_EQ(fake.calls, 0);
  EXPECT_EQ(read_text(options.out_path), "experiment,variant,batch\nx,recurrent,1\n");
}

// A file written before the kind gained an axis (added_later, one default: `launch` in spec_verify and decode) is
// resumed: its rows count as that default where the axis applies, and the next write carries the whole header.
TEST_F(SweepRun, ResumeReadsAFileWrittenBeforeAnAxisWasAdded) {
  ExperimentKind older = fake.kind();
  const auto old_pts = points(older, "1");
  fake.fail_batch = -1;
  run_sweep(older, old_pts, ctx, options);
  ASSERT_EQ(table().rows.size(), old_pts.size());

  ExperimentKind kind = fake.kind();  // the same kind with an axis `launch` added after buffer_size
  kind.axes.insert(kind.axes.begin() + 3, AxisSpec{"launch", {"plain"},
                                                    [](const std::string& v) -> std::string {
                                                      return v == "plain" || v == "pdl" ? "" : "launch: plain, pdl";
                                                    },
                                                    /*added_later=*/true});
  const SweepConfig c = parse_sweep_config(
      "[experiment]\nname = \"fake_small\"\n[axes]\nvariant = [\"recurrent\", \"kvbuffer\"]\nbatch = [1]\n"
      "buffer_size = [4, 8]\nlaunch = [\"plain\", \"pdl\"]\n",
      "small.toml");
  auto pts = make_grid(kind, resolve_axes(kind, c, {}));
  validate_points(kind, pts);
  ASSERT_EQ(pts.size(), 2 * old_pts.size());
  fake.calls = 0;
  const SweepSummary s = run_sweep(kind, pts, ctx, options);
  EXPECT_EQ(s.skipped, old_pts.size());  // the older rows are the plain points
  EXPECT_EQ(fake.calls, int(old_pts.size()));
  const CsvTable t = table();
  EXPECT_EQ(t.header, csv_columns(kind));
  ASSERT_EQ(t.rows.size(), pts.size());
  size_t plain = 0;
  for (const auto& row : t.rows) plain += row[col(t, "launch")] == "plain";
  EXPECT_EQ(plain, old_pts.size());

  // A header that is not the kind's columns less added axes is still refused.
  write_text(options.out_path, "experiment,variant,batch,launch\nx,recurrent,1,plain\n");
  EXPECT_THROW(run_sweep(kind, pts, ctx, options), UsageError);
}

// An axis added later with an older value (what rows written before it measured, no longer what its default means):
// the older rows hold that value, so the default's points are measured anew and the older rows are kept beside them.
TEST_F(SweepRun, ResumeGivesOlderRowsTheAxisOlderValue) {
  ExperimentKind older = fake.kind();
  const auto old_pts = points(older, "1");
  fake.fail_batch = -1;
  run_sweep(older, old_pts, ctx, options);

  ExperimentKind kind = fake.kind();
  AxisSpec engine{"engine", {"auto"},
                  [](const std::string& v) -> std::string { return v == "auto" || v == "old" ? "" : "engine"; },
                  /*added_later=*/true, /*older_value=*/"old"};
  kind.axes.insert(kind.axes.begin() + 3, engine);
  auto pts = make_grid(kind, resolve_axes(kind, parse_sweep_config(
                                                    "[experiment]\nname = \"fake_small\"\n[axes]\n"
                                                    "variant = [\"recurrent\", \"kvbuffer\"]\nbatch = [1]\n"
                                                    "buffer_size = [4, 8]\n",
                                                    "small.toml"),
                                            {}));
  validate_points(kind, pts);
  ASSERT_EQ(pts.size(), old_pts.size());
  fake.calls = 0;
  const SweepSummary s = run_sweep(kind, pts, ctx, options);
  EXPECT_EQ(s.skipped, 0u);  // the older rows are the "old" points, not the default's
  EXPECT_EQ(fake.calls, int(pts.size()));
  const CsvTable t = table();
  ASSERT_EQ(t.rows.size(), 2 * pts.size());
  size_t old_rows = 0;
  for (const auto& row : t.rows) old_rows += row[col(t, "engine")] == "old";
  EXPECT_EQ(old_rows, old_pts.size());
}

TEST_F(SweepRun, ResumeRefusesRowsFromAnotherGpu) {
  const ExperimentKind kind = fake.kind();
  const auto pts = points(kind, "1, 3");
  run_sweep(kind, pts, ctx, options);
  const std::string before = read_text(options.out_path);
  ctx.gpu = "another GPU";
  fake.calls = 0;
  try {
    run_sweep(kind, pts, ctx, options);
    ADD_FAILURE() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--out"), std::string::npos) << e.what();
  }
  EXPECT_EQ(fake.calls, 0);
  EXPECT_EQ(read_text(options.out_path), before);
}

TEST_F(SweepRun, UnwritableOutputIsUsageErrorBeforeRunning) {
  const ExperimentKind kind = fake.kind();
  write_text(dir.file("afile"), "x");
  options.out_path = dir.file("afile/sub/r.csv");
  EXPECT_THROW(check_output_writable(options.out_path), UsageError);
  EXPECT_THROW(run_sweep(kind, points(kind, "1"), ctx, options), UsageError);
  EXPECT_EQ(fake.calls, 0);
}

TEST_F(SweepRun, UndeclaredColumnFailsThePoint) {
  ExperimentKind kind = fake.kind();
  kind.run = [](const Point&, SweepContext&) -> Row { return {{"latency_us_median", "1.0"}, {"bogus", "2"}}; };
  const SweepSummary s = run_sweep(kind, points(kind, "1"), ctx, options);
  EXPECT_EQ(s.failed, s.points);
  const CsvTable t = table();
  EXPECT_NE(t.rows[0][col(t, "status")].find("bogus"), std::string::npos);
}

TEST_F(SweepRun, RowStatusFromTheRunnerIsKept) {
  ExperimentKind kind = fake.kind();
  kind.run = [](const Point& p, SweepContext&) -> Row {
    return {{"latency_us_median", std::to_string(test::fake_latency_us(p))},
            {"status", "failed: max_rel_err above tolerance"}};
  };
  const auto pts = points(kind, "2");
  const SweepSummary s = run_sweep(kind, pts, ctx, options);
  EXPECT_EQ(s.failed, pts.size());
  const CsvTable t = table();
  EXPECT_EQ(t.rows[0][col(t, "status")], "failed: max_rel_err above tolerance");
  EXPECT_FALSE(t.rows[0][col(t, "latency_us_median")].empty());
}

TEST_F(SweepRun, ProgressAndSummaryAreReported) {
  const ExperimentKind kind = fake.kind();
  std::FILE* progress = std::tmpfile();
  std::FILE* summary = std::tmpfile();
  ASSERT_TRUE(progress && summary);
  options.progress = progress;
  options.summary = summary;
  const auto pts = points(kind, "1, 3");
  run_sweep(kind, pts, ctx, options);
  auto slurp = [](std::FILE* f) {
    std::rewind(f);
    std::string s;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
    std::fclose(f);
    return s;
  };
  const std::string p = slurp(progress), s = slurp(summary);
  EXPECT_NE(p.find("[1/" + std::to_string(pts.size()) + "] " + pts[0].label()), std::string::npos) << p;
  EXPECT_NE(p.find("ETA"), std::string::npos) << p;
  EXPECT_NE(p.find("failed: out of memory"), std::string::npos) << p;
  EXPECT_NE(s.find("latency_us_median"), std::string::npos) << s;
  EXPECT_NE(s.find("buffer_size"), std::string::npos) << s;  // varies, so shown
  EXPECT_EQ(s.find("head_dim_k"), std::string::npos) << s;   // fixed, so not shown
  EXPECT_NE(s.find("3 failed"), std::string::npos) << s;
}

TEST_F(SweepRun, RowsOfAnotherGridAreKeptAndReported) {
  const ExperimentKind kind = fake.kind();
  const auto pts = points(kind, "1, 4");
  run_sweep(kind, pts, ctx, options);
  EXPECT_EQ(rows_outside_grid(kind, options.experiment, pts, table()), 0u);
  // One row gets a variant this kvb does not know, and two are appended from grids of batch 2 and 5: three rows are
  // no point of the grid.
  CsvTable t = table();
  t.rows[0][col(t, "variant")] = "mystery";
  for (const char* batch : {"2", "5"}) {
    std::vector<std::string> other = t.rows[1];
    other[col(t, "batch")] = batch;
    t.rows.push_back(other);
  }
  write_file_atomic(options.out_path, format_csv(t));
  EXPECT_EQ(rows_outside_grid(kind, options.experiment, pts, table()), 3u);
  EXPECT_EQ(rows_outside_grid(kind, options.experiment, points(kind, "1, 2, 4"), table()), 2u);
  std::FILE* progress = std::tmpfile();
  ASSERT_TRUE(progress);
  report_rows_outside_grid(progress, 3, options.out_path);
  report_rows_outside_grid(progress, 0, "unused.csv");
  report_rows_outside_grid(progress, 1, "two\nlines.csv");  // a path's line break escaped: the notice stays one line
  std::rewind(progress);
  std::string p(4096, '\0');
  p.resize(std::fread(p.data(), 1, p.size(), progress));
  std::fclose(progress);
  EXPECT_NE(p.find("3 row(s) of " + options.out_path + " are no point of this grid"), std::string::npos) << p;
  EXPECT_EQ(p.find("unused.csv"), std::string::npos) << p;
  EXPECT_NE(p.find("1 row(s) of two\\nlines.csv are no point of this grid"), std::string::npos) << p;
  EXPECT_EQ(std::count(p.begin(), p.end(), '\n'), 2) << p;
  // Resuming runs the changed row's point again and keeps every row.
  fake.calls = 0;
  const SweepSummary s = run_sweep(kind, pts, ctx, options);
  EXPECT_EQ(fake.calls, 1);
  EXPECT_EQ(s.skipped, pts.size() - 1);
  const CsvTable after = table();
  EXPECT_EQ(after.rows.size(), pts.size() + 3);
  EXPECT_EQ(after.rows[0][col(after, "variant")], "mystery");
}

TEST_F(SweepRun, SignalStopsBetweenPointsAndTheSameRunResumes) {
  ExperimentKind kind = fake.kind();
  const auto pts = points(kind, "1, 2, 4");
  bool signalled = false;
  kind.run = [&, run = kind.run](const Point& p, SweepContext& c) {
    Row r = run(p, c);
    if (fake.calls == 2 && !signalled) {  // during the second point of the first run
      signalled = true;
      ::raise(SIGINT);
    }
    return r;
  };
  SweepSummary s;
  {
    const InterruptHandlers handlers(InterruptMode::between_steps);
    s = run_sweep(kind, pts, ctx, options);
  }
  EXPECT_EQ(s.signal, SIGINT);
  EXPECT_EQ(fake.calls, 2);  // the point under way finished; no other started
  EXPECT_EQ(s.ok, 2u);
  EXPECT_EQ(s.not_run, pts.size() - 2);
  EXPECT_EQ(table().rows.size(), 2u);  // the file holds both finished points, whole

  fake.calls = 0;
  const SweepSummary again = run_sweep(kind, pts, ctx, options);
  EXPECT_EQ(again.signal, 0);
  EXPECT_EQ(again.skipped, 2u);
  EXPECT_EQ(fake.calls, int(pts.size()) - 2);
  EXPECT_EQ(table().rows.size(), pts.size());
}

TEST(Sweep, FormatDuration) {
  EXPECT_EQ(format_duration(0), "0s");
  EXPECT_EQ(format_duration(59.4), "59s");
  EXPECT_EQ(format_duration(185), "3m05s");
  EXPECT_EQ(format_duration(3725), "1h02m");
}

}  // namespace
}  // namespace kvb
