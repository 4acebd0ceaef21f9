// The claims table (harness/reports/claims.h) on small synthetic CSVs, and `kvb reproduce` without a GPU end to end.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli_runner.h"
#include "harness/measure/device_info.h"
#include "harness/kinds/registry.h"
#include "harness/reports/claims.h"
#include "harness/sweep/csv.h"
#include "harness/sweep/experiment_kind.h"
#include "test_regression_support.h"
#include "test_sweep_support.h"

namespace kvb {
namespace {

using test::Result;
using test::run_kvb;
using test::TempDir;

/// A decode CSV: recurrent and KVBuffer (B = 2, 4) at batches 32, 64, 128 of the anchor's shape, plus a faster
/// KVBuffer row that failed and one of another shape at batch 64.
CsvTable synthetic_decode() {
  CsvTable t;
  t.header = {"experiment", "variant", "batch", "buffer_size", "phase", "heads_v", "head_dim_k", "head_dim_v",
              "state_dtype", "latency_us_median", "status"};
  auto add = [&](const char* variant, int batch, const char* b, double us, const char* status = "ok",
                 const char* hv = "32") {
    t.rows.push_back({"x", variant, std::to_string(batch), b, *b ? "staggered" : "", hv, "128", "128", "fp32",
                      fmt::format("{}", us), status});
  };
  add("recurrent", 32, "", 40.0);
  add("kvbuffer", 32, "4", 10.0);  // below min_batch: never counts
  add("recurrent", 64, "", 80.0);
  add("kvbuffer", 64, "2", 60.0);
  add("kvbuffer", 64, "4", 50.0);
  add("kvbuffer", 64, "8", 5.0, "failed: check");
  add("kvbuffer", 64, "16", 4.0, "ok", "16");  // another shape: meets neither the anchor nor recurrent
  add("recurrent", 128, "", 150.0);
  add("kvbuffer", 128, "2", 120.0);
  add("kvbuffer", 128, "4", 105.0);
  return t;
}

/// fla's recurrent decode, the first of the recurrent peers.
const claims::RecurrentPeer& fla() { return claims::recurrent_peers().at(0); }

/// synthetic_decode() with the decode kind's peer columns and live peer rows: fla slower than recurrent at every batch,
/// FlashInfer faster than recurrent at batch 128 only, and a faster fla row that failed.
CsvTable synthetic_decode_with_peers() {
  CsvTable t = synthetic_decode();
  t.header.insert(t.header.end(), {"package", "package_version"});
  for (auto& row : t.rows) row.insert(row.end(), {"", ""});
  auto add = [&](const char* variant, int batch, double us, const char* package, const char* status = "ok") {
    t.rows.push_back({"x", variant, std::to_string(batch), "", "", "32", "128", "128", "fp32", fmt::format("{}", us),
                      status, package, "0.6.0"});
  };
  add("fla_recurrent", 64, 100.0, "fla-core");
  add("fla_recurrent", 128, 190.0, "fla-core");
  add("fla_recurrent", 64, 1.0, "fla-core", "failed: check failed: state error 0.5 above 2e-05");
  add("flashinfer_recurrent", 64, 81.0, "flashinfer-python");
  add("flashinfer_recurrent", 128, 140.0, "flashinfer-python");
  return t;
}

TEST(Claims, DecodeReductionAgainstRecurrentTakesTheFastestRecurrentMeasured) {
  const auto d = claims::best_reduction_vs_recurrent(synthetic_decode_with_peers(), "peers.csv", 128);
  ASSERT_TRUE(d.has_value());
  // batch 128: FlashInfer (140 us) is faster than this project's recurrent kernel (150 us), so it is the baseline.
  EXPECT_EQ(d->baseline, "flashinfer_recurrent");
  EXPECT_TRUE(d->measured);
  EXPECT_EQ(d->version, "flashinfer-python 0.6.0");
  EXPECT_DOUBLE_EQ(d->baseline_us, 140.0);
  EXPECT_DOUBLE_EQ(d->reduction, 1.0 - 105.0 / 140.0);
  // batch 64: recurrent (80 us) beats FlashInfer (81 us) and fla (100 us; its failed 1 us row does not count).
  const auto at64 = claims::best_reduction_vs_recurrent(synthetic_decode_with_peers(), "peers.csv", 64);
  ASSERT_TRUE(at64.has_value());
  EXPECT_EQ(at64->batch, 64);
  EXPECT_EQ(at64->baseline, "recurrent");
  EXPECT_DOUBLE_EQ(at64->baseline_us, 80.0);
}

TEST(Claims, DecodeReductionAgainstAPeerUsesItsRowsOverItsAnchor) {
  const auto d = claims::best_reduction_vs_peer(synthetic_decode_with_peers(), "peers.csv", fla());
  ASSERT_TRUE(d.has_value());
  EXPECT_TRUE(d->measured);
  EXPECT_EQ(d->baseline, "fla_recurrent");
  EXPECT_EQ(d->version, "fla-core 0.6.0");
  // batch 64: 1 - 50 / 100 beats batch 128: 1 - 105 / 190; the KVBuffer row of another shape does not count.
  EXPECT_EQ(d->batch, 64);
  EXPECT_DOUBLE_EQ(d->reduction, 0.5);
  const auto flashinfer = claims::best_reduction_vs_peer(synthetic_decode(), "synthetic.csv",
                                                         claims::recurrent_peers().at(1));
  ASSERT_TRUE(flashinfer.has_value());
  EXPECT_FALSE(flashinfer->measured);
  EXPECT_EQ(flashinfer->batch, 64);  // the FlashInfer anchor has batches 1, 8, 64, 256, 512
}

TEST(Claims, TableSaysWhetherAPeerWasMeasuredOrRecorded) {
  TempDir dir;
  const std::string with = dir.file("with.csv"), without = dir.file("without.csv");
  CsvTable peers = synthetic_decode_with_peers();
  peers.rows[peers.rows.size() - 2][9] = "70";  // FlashInfer at batch 64: faster than recurrent (80 us) there
  // A file holds one row per point: the failed fla row at batch 64 (beside its ok row) stays in memory only.
  peers.rows.erase(std::remove_if(peers.rows.begin(), peers.rows.end(),
                                  [](const std::vector<std::string>& r) { return r[10].rfind("failed", 0) == 0; }),
                   peers.rows.end());
  test::write_text(with, format_csv(test::as_result_table(peers, "decode")));
  test::write_text(without, format_csv(test::as_result_table(synthetic_decode(), "decode")));
  const std::string live = claims::format_claims(claims::compute_claims(with, "", "", "", result_schemas()));
  EXPECT_NE(live.find("vs flashinfer_recurrent (flashinfer-python 0.6.0, measured here, the fastest recurrent)"),
            std::string::npos)
      << live;
  EXPECT_NE(live.find("vs fla_recurrent (fla-core 0.6.0, measured here)"), std::string::npos) << live;
  const std::string recorded = claims::format_claims(claims::compute_claims(without, "", "", "", result_schemas()));
  EXPECT_NE(recorded.find("vs fla Triton anchor (NVIDIA H200; fla_recurrent not measured here)"), std::string::npos)
      << recorded;
  EXPECT_NE(recorded.find("vs FlashInfer anchor (NVIDIA H200; flashinfer_recurrent not measured here)"),
            std::string::npos)
      << recorded;
  EXPECT_NE(recorded.find("staggered vs recurrent\n"), std::string::npos) << recorded;
}

TEST(Claims, DecodeReductionAgainstRecurrentTakesTheBestBatchAndBufferSize) {
  const auto d = claims::best_reduction_vs_recurrent(synthetic_decode(), "synthetic.csv");
  ASSERT_TRUE(d.has_value());
  // batch 64: B = 4 (50 us) against recurrent's 80 us, better than batch 128's 105 against 150; the other-shape row
  // (4 us, 16 value heads) has no recurrent row of its model, so it meets none.
  EXPECT_EQ(d->batch, 64);
  EXPECT_EQ(d->buffer_size, 4);
  EXPECT_DOUBLE_EQ(d->reduction, 1.0 - 50.0 / 80.0);
  EXPECT_EQ(d->phase, "staggered");
}

TEST(Claims, DecodeReductionLeavesBf16StateRowsOut) {
  // bf16 rows (the state_dtype axis) faster than every fp32 row: the claims are made with fp32 states, so the result
  // is the fp32 one of DecodeReductionAgainstRecurrentTakesTheBestBatchAndBufferSize.
  CsvTable t = synthetic_decode();
  const size_t dtype = 8;
  ASSERT_EQ(t.header[dtype], "state_dtype");
  for (const char* variant : {"recurrent", "kvbuffer"}) {
    std::vector<std::string> row = t.rows[2];  // recurrent, batch 64
    row[1] = variant;
    row[3] = std::string(variant) == "kvbuffer" ? "2" : "";
    row[4] = std::string(variant) == "kvbuffer" ? "staggered" : "";
    row[dtype] = "bf16";
    row[9] = std::string(variant) == "kvbuffer" ? "1" : "40";
    t.rows.push_back(row);
  }
  const auto d = claims::best_reduction_vs_recurrent(t, "synthetic.csv");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->batch, 64);
  EXPECT_EQ(d->buffer_size, 4);
  EXPECT_DOUBLE_EQ(d->reduction, 1.0 - 50.0 / 80.0);
}

TEST(Claims, DecodeReductionAgainstTritonKeepsTheAnchorShape) {
  const auto d = claims::best_reduction_vs_peer(synthetic_decode(), "synthetic.csv", fla());
  ASSERT_TRUE(d.has_value());
  const double at64 = 1.0 - 50.0 / claims::fla_triton_anchor_us().at(64);
  const double at128 = 1.0 - 105.0 / claims::fla_triton_anchor_us().at(128);
  ASSERT_GT(at64, at128);
  EXPECT_EQ(d->batch, 64);
  EXPECT_EQ(d->buffer_size, 4);
  EXPECT_DOUBLE_EQ(d->reduction, at64);
  EXPECT_DOUBLE_EQ(d->baseline_us, 94.0);
  EXPECT_FALSE(d->measured);  // no fla_recurrent row: the anchor
  EXPECT_EQ(d->baseline, "fla_recurrent_decode");
}

TEST(Claims, DecodeReductionComparesLikeLaunchesOnly) {
  // A launch column: plain rows against plain rows, PDL rows against PDL rows; a faster PDL row never joins the
  // plain comparison, and a CSV without the column holds plain launches only.
  CsvTable t;
  t.header = {"experiment", "variant", "batch", "buffer_size", "phase", "launch", "latency_us_median", "status"};
  t.rows = {{"x", "recurrent", "64", "", "", "plain", "80", "ok"},
            {"x", "kvbuffer", "64", "8", "staggered", "plain", "50", "ok"},
            {"x", "recurrent", "64", "", "", "pdl", "76", "ok"},
            {"x", "kvbuffer", "64", "8", "staggered", "pdl", "38", "ok"}};
  const auto plain = claims::best_reduction_vs_recurrent(t, "launch.csv");
  ASSERT_TRUE(plain.has_value());
  EXPECT_DOUBLE_EQ(plain->reduction, 1.0 - 50.0 / 80.0);
  const auto pdl = claims::best_reduction_vs_recurrent(t, "launch.csv", 64, "pdl");
  ASSERT_TRUE(pdl.has_value());
  EXPECT_DOUBLE_EQ(pdl->reduction, 1.0 - 38.0 / 76.0);
  const auto triton = claims::best_reduction_vs_peer(t, "launch.csv", fla(), 64, "pdl");
  ASSERT_TRUE(triton.has_value());
  EXPECT_DOUBLE_EQ(triton->kvbuffer_us, 38.0);
  EXPECT_FALSE(claims::best_reduction_vs_recurrent(synthetic_decode(), "synthetic.csv", 64, "pdl").has_value());
}

TEST(Claims, DecodeReductionNeedsBothVariantsAndItsColumns) {
  CsvTable t = synthetic_decode();
  EXPECT_FALSE(claims::best_reduction_vs_recurrent(t, "x.csv", 256).has_value());
  t.header[9] = "latency";
  EXPECT_THROW(claims::best_reduction_vs_recurrent(t, "x.csv"), UsageError);
  CsvTable bad = synthetic_decode();
  bad.rows[2][9] = "fast";
  EXPECT_THROW(claims::best_reduction_vs_recurrent(bad, "x.csv"), UsageError);
}

CsvTable synthetic_capacity(bool measured) {
  CsvTable t;
  t.header = {"variant", "buffer_size", "draft_tokens", "max_requests_model", "max_requests_measured", "status"};
  auto add = [&](const char* v, const char* b, const char* m, int model, int meas) {
    t.rows.push_back({v, b, m, std::to_string(model), measured ? std::to_string(meas) : "", "ok"});
  };
  add("recurrent_decode", "", "", 1000, 990);
  add("recurrent_verify", "", "2", 400, 390);
  add("recurrent_verify", "", "4", 200, 190);
  add("kvbuffer_verify", "4", "4", 950, 931);
  add("kvbuffer_verify", "8", "4", 900, 893);
  add("kvbuffer_verify", "4", "2", 970, 960);
  return t;
}

TEST(Claims, CapacityRatioPrefersMeasuredCounts) {
  const auto r = claims::capacity_ratio(synthetic_capacity(true), "c.csv", 4, 4);
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->measured);
  EXPECT_EQ(r->kvbuffer_requests, 931);
  EXPECT_EQ(r->recurrent_requests, 190);
  EXPECT_DOUBLE_EQ(r->ratio, 931.0 / 190.0);

  const auto m = claims::capacity_ratio(synthetic_capacity(false), "c.csv", 8, 4);
  ASSERT_TRUE(m.has_value());
  EXPECT_FALSE(m->measured);
  EXPECT_DOUBLE_EQ(m->ratio, 900.0 / 200.0);

  EXPECT_FALSE(claims::capacity_ratio(synthetic_capacity(true), "c.csv", 16, 4).has_value());
  CsvTable no_col = synthetic_capacity(true);
  no_col.header[3] = "requests";
  EXPECT_THROW(claims::capacity_ratio(no_col, "c.csv", 4, 4), UsageError);
}

// The capacity claim is the paper's, with fp32 states: bf16 rows (kvb capacity writes both) are left out, and a CSV
// without a state_dtype column (written before it) reads fp32.
TEST(Claims, CapacityRatioTakesTheFp32Rows) {
  // synthetic_capacity with a state_dtype column: its rows as `first`, then (when `second` is set) the same points
  // with `second` states holding twice the requests plus 7.
  const auto with_dtypes = [](const std::string& first, const std::optional<std::string>& second, bool bf16_first) {
    CsvTable t = synthetic_capacity(true);
    t.header.push_back("state_dtype");
    std::vector<std::vector<std::string>> other;
    for (auto& row : t.rows) {
      row.push_back(first);
      if (!second) continue;
      auto o = row;
      o[3] = std::to_string(2 * std::stoi(o[3]) + 7);
      o[4] = std::to_string(2 * std::stoi(o[4]) + 7);
      o.back() = *second;
      other.push_back(o);
    }
    t.rows.insert(bf16_first ? t.rows.begin() : t.rows.end(), other.begin(), other.end());
    return t;
  };
  for (const bool bf16_first : {true, false}) {
    const auto r = claims::capacity_ratio(with_dtypes("fp32", "bf16", bf16_first), "c.csv", 4, 4);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->kvbuffer_requests, 931);
    EXPECT_EQ(r->recurrent_requests, 190);
  }
  // An empty state_dtype reads fp32; a table of bf16 rows alone has no claim.
  EXPECT_EQ(claims::capacity_ratio(with_dtypes("", std::nullopt, false), "c.csv", 4, 4)->kvbuffer_requests, 931);
  EXPECT_FALSE(claims::capacity_ratio(with_dtypes("bf16", std::nullopt, false), "c.csv", 4, 4).has_value());

  // Through the claims table from a whole capacity CSV with both dtypes: the fp32 numbers.
  TempDir dir;
  const std::string cap = dir.file("cap.csv");
  test::write_text(cap, format_csv(test::as_result_table(with_dtypes("fp32", "bf16", false), "capacity")));
  const std::string table = claims::format_claims(
      claims::compute_claims(dir.file("d.csv"), cap, dir.file("s.csv"), dir.file("v.csv"), result_schemas()));
  EXPECT_NE(table.find(fmt::format("{:.2f}x (931 vs 190)", 931.0 / 190.0)), std::string::npos) << table;
  EXPECT_NE(table.find(fmt::format("{:.2f}x (893 vs 190)", 893.0 / 190.0)), std::string::npos) << table;
}

/// A short_context CSV: recurrent at batches 32, 64, 256; stateless KVBuffer rows at batch 32 (below min_batch), 64
/// (L = 1 and L = 14 of B = 16) and 256 (L = 8), a stateful row, a failed stateless row, a stateless row at a
/// batch without a recurrent row, and the materialising step L = B - 1 (writes the first state: never counts).
/// Worst ratio at batch >= 64: 36 / 80 at batch 64, B = 16, L = 14.
CsvTable synthetic_short_context() {
  CsvTable t;
  t.header = {"experiment", "variant", "context_len", "batch", "buffer_size", "stateless", "state_bytes_per_request",
              "buffer_bytes_per_request", "latency_us_median", "status"};
  auto add = [&](const char* variant, const char* len, int batch, const char* b, const char* stateless,
                 double state_bytes, double us, const char* status = "ok") {
    t.rows.push_back({"x", variant, len, std::to_string(batch), b, stateless, fmt::format("{}", state_bytes), "100",
                      fmt::format("{}", us), status});
  };
  add("recurrent", "", 32, "", "false", 1000, 40);
  add("kvbuffer", "1", 32, "16", "true", 0, 35);  // below min_batch: never counts
  add("recurrent", "", 64, "", "false", 1000, 80);
  add("kvbuffer", "1", 64, "16", "true", 0, 20);
  add("kvbuffer", "14", 64, "16", "true", 0, 36);
  add("kvbuffer", "16", 64, "16", "false", 1000, 70);  // stateful: not a stateless point
  add("kvbuffer", "4", 64, "64", "true", 0, 79, "failed: check");
  add("recurrent", "", 256, "", "false", 1000, 300);
  add("kvbuffer", "8", 256, "16", "true", 0, 120);
  add("kvbuffer", "8", 512, "16", "true", 0, 999);  // no recurrent row at batch 512
  add("kvbuffer", "15", 64, "16", "true", 0, 90);   // L = B - 1: the step that materialises the state
  return t;
}

TEST(Claims, StatelessRatioTakesTheWorstStatelessPointAtBatch64AndAbove) {
  const auto s = claims::worst_stateless_ratio(synthetic_short_context(), "short.csv");
  ASSERT_TRUE(s.has_value());
  EXPECT_DOUBLE_EQ(s->ratio, 36.0 / 80.0);
  EXPECT_EQ(s->batch, 64);
  EXPECT_EQ(s->buffer_size, 16);
  EXPECT_EQ(s->context_len, 14);
  EXPECT_DOUBLE_EQ(s->kvbuffer_us, 36.0);
  EXPECT_DOUBLE_EQ(s->recurrent_us, 80.0);
  EXPECT_EQ(s->points, 3);
  EXPECT_DOUBLE_EQ(s->max_state_bytes, 0.0);

  const auto low = claims::worst_stateless_ratio(synthetic_short_context(), "short.csv", 1);
  ASSERT_TRUE(low.has_value());
  EXPECT_DOUBLE_EQ(low->ratio, 35.0 / 40.0);
  EXPECT_EQ(low->points, 4);
  EXPECT_FALSE(claims::worst_stateless_ratio(synthetic_short_context(), "short.csv", 512).has_value());
}

TEST(Claims, StatelessRatioNeedsItsColumnsAndABooleanFlag) {
  for (const char* column : {"variant", "batch", "buffer_size", "context_len", "stateless", "state_bytes_per_request",
                             "latency_us_median"}) {
    CsvTable t = synthetic_short_context();
    *std::find(t.header.begin(), t.header.end(), column) = "renamed";
    EXPECT_THROW(claims::worst_stateless_ratio(t, "short.csv"), UsageError) << column;
  }
  CsvTable bad = synthetic_short_context();
  bad.rows[3][5] = "yes";
  try {
    claims::worst_stateless_ratio(bad, "short.csv");
    ADD_FAILURE() << "a stateless value other than true or false was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("short.csv:5: stateless = 'yes' (allowed: true, false)"), std::string::npos)
        << e.what();
  }
}

TEST(Claims, TableNamesEveryClaimAndItsSource) {
  TempDir dir;
  const std::string decode = dir.file("decode.csv"), cap = dir.file("cap.csv"), shortc = dir.file("short.csv");
  test::write_text(decode, format_csv(test::as_result_table(synthetic_decode(), "decode")));
  test::write_text(cap, format_csv(test::as_result_table(synthetic_capacity(true), "capacity")));
  test::write_text(shortc, format_csv(test::as_result_table(synthetic_short_context(), "short_context")));
  const std::string table =
      claims::format_claims(claims::compute_claims(decode, cap, shortc, dir.file("spec.csv"), result_schemas()));
  EXPECT_NE(table.find(fmt::format("{:.1f}%", (1.0 - 50.0 / 80.0) * 100)), std::string::npos) << table;
  EXPECT_NE(table.find(fmt::format("{:.2f}x (931 vs 190)", 931.0 / 190.0)), std::string::npos) << table;
  EXPECT_NE(table.find(fmt::format("{:.2f}x (893 vs 190)", 893.0 / 190.0)), std::string::npos) << table;
  EXPECT_NE(table.find("45.17%"), std::string::npos);
  EXPECT_NE(table.find("5x"), std::string::npos);
  EXPECT_NE(table.find("max_requests_measured"), std::string::npos);
  EXPECT_NE(table.find("0.45x (36.00 vs 80.00 us), state bytes 0; target <= 0.5x, no state: met"), std::string::npos)
      << table;
  EXPECT_NE(table.find("short.csv: worst of 3 stateless steps (L + 1 < B: buffer only), batch 64, KVBuffer B = 16, "
                       "L = 14 vs recurrent"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find(decode), std::string::npos);

  const std::string missing = claims::format_claims(claims::compute_claims(
      dir.file("a.csv"), dir.file("b.csv"), dir.file("c.csv"), dir.file("d.csv"), result_schemas()));
  EXPECT_NE(missing.find("a.csv not found"), std::string::npos) << missing;
  EXPECT_NE(missing.find("b.csv not found"), std::string::npos) << missing;
  EXPECT_NE(missing.find("c.csv not found"), std::string::npos) << missing;
  EXPECT_NE(missing.find("stateless short contexts"), std::string::npos) << missing;
  EXPECT_NE(missing.find("d.csv not found"), std::string::npos) << missing;
}

/// A spec_verify CSV: recurrent and KVBuffer verify + accept with 4 drafts at batches 64 and 256 (all accepted) and
/// 64 (0.7), plain launches; at batch 64 (the worst against recurrent) three buffer sizes, the fastest of them
/// failed; a row with 1 draft and one launched with PDL.
CsvTable synthetic_spec_verify() {
  CsvTable t;
  t.header = {"experiment", "variant", "batch", "draft_tokens", "accepted", "buffer_size", "launch",
              "verify_accept_us_median", "verify_accept_floor_us", "verify_accept_over_floor", "status",
              "verify_us_median"};
  // Verify alone takes 0.8 of verify + accept in every row.
  auto add = [&](const char* variant, int batch, int m, const char* acc, const char* b, const char* launch,
                 double us, double floor_us, const char* status = "ok") {
    t.rows.push_back({"spec_verify", variant, std::to_string(batch), std::to_string(m), acc, b, launch,
                      fmt::format("{}", us), floor_us > 0 ? fmt::format("{}", floor_us) : "",
                      floor_us > 0 ? fmt::format("{}", us / floor_us) : "", status, fmt::format("{}", 0.8 * us)});
  };
  add("recurrent_verify", 64, 4, "all", "", "plain", 200, 0);
  add("recurrent_verify", 256, 4, "all", "", "plain", 960, 0);
  add("recurrent_verify", 64, 4, "0.7", "", "plain", 220, 0);
  add("kvbuffer_verify", 64, 4, "all", "8", "plain", 60, 40);
  add("kvbuffer_verify", 64, 4, "all", "16", "plain", 55, 44);
  add("kvbuffer_verify", 64, 4, "all", "32", "plain", 20, 40, "failed: check");
  add("kvbuffer_verify", 256, 4, "all", "8", "plain", 250, 200);
  add("kvbuffer_verify", 64, 4, "0.7", "8", "plain", 50, 40);
  add("kvbuffer_verify", 64, 1, "all", "8", "plain", 10, 9);
  add("kvbuffer_verify", 256, 4, "all", "8", "pdl", 100, 200);
  return t;
}

TEST(Claims, VerifySpeedupTakesTheWorstBatchAndTheFastestBufferSize) {
  const CsvTable t = synthetic_spec_verify();
  const auto rec = claims::worst_verify_speedup(t, "spec.csv", 4, "all", false, 4.0);
  ASSERT_TRUE(rec.has_value());
  // batch 64: 200 / 55 (B = 16: B = 8 is slower, B = 32 failed), the worse; batch 256: 960 / 250.
  EXPECT_EQ(rec->points, 2);
  EXPECT_EQ(rec->batch, 64);
  EXPECT_EQ(rec->buffer_size, 16);
  EXPECT_DOUBLE_EQ(rec->speedup, 200.0 / 55.0);
  EXPECT_DOUBLE_EQ(rec->over_floor, 55.0 / 44.0);
  EXPECT_DOUBLE_EQ(rec->needed_over_floor, 200.0 / (4.0 * 44.0));

  const auto sg = claims::worst_verify_speedup(t, "spec.csv", 4, "all", true, 4.5);
  ASSERT_TRUE(sg.has_value());
  EXPECT_EQ(sg->batch, 256);  // 709.4 / 250 against 187.6 / 55 at batch 64
  EXPECT_EQ(sg->buffer_size, 8);
  EXPECT_DOUBLE_EQ(sg->baseline_us, claims::sglang_verify_anchor_us().at(4).at(256));
  EXPECT_DOUBLE_EQ(sg->needed_over_floor, sg->baseline_us / (4.5 * 200.0));

  // PDL rows have no recurrent counterpart here; the anchor is compared with them all the same.
  EXPECT_FALSE(claims::worst_verify_speedup(t, "spec.csv", 4, "all", false, 4.0, 64, "pdl").has_value());
  const auto sg_pdl = claims::worst_verify_speedup(t, "spec.csv", 4, "all", true, 4.5, 64, "pdl");
  ASSERT_TRUE(sg_pdl.has_value());
  EXPECT_DOUBLE_EQ(sg_pdl->speedup, claims::sglang_verify_anchor_us().at(4).at(256) / 100.0);
  // No 2-draft rows at all.
  EXPECT_FALSE(claims::worst_verify_speedup(t, "spec.csv", 2, "all", false, 4.0).has_value());

  // Bad input names the file and the column.
  const auto refused = [](const CsvTable& bad, const std::string& expected) {
    try {
      claims::worst_verify_speedup(bad, "spec.csv", 4, "all", false, 4.0);
      ADD_FAILURE() << "accepted: " << expected;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  CsvTable bad = t;
  bad.header[8] = "floor";
  refused(bad, "spec.csv: no column 'verify_accept_floor_us'");
  bad = t;
  bad.rows[3][7] = "0";  // a KVBuffer latency of zero would hide its batch
  refused(bad, "spec.csv: column 'verify_accept_us_median' of a kvbuffer_verify row is '0'");
  bad = t;
  bad.rows[4][8] = "";  // the fastest row at batch 64 without its floor
  refused(bad, "spec.csv: column 'verify_accept_floor_us' of a kvbuffer_verify row is ''");
  bad = t;
  bad.rows[0][2] = "64.5";
  refused(bad, "spec.csv: column 'batch' value '64.5' is not a whole number of requests");
}

TEST(Claims, VerifyLinesGiveEveryAcceptedSettingAndTheTargets) {
  TempDir dir;
  const std::string spec = dir.file("spec.csv");
  test::write_text(spec, format_csv(test::as_result_table(synthetic_spec_verify(), "spec_verify")));
  const std::string table = claims::format_claims(
      claims::compute_claims(dir.file("a.csv"), dir.file("b.csv"), dir.file("c.csv"), spec, result_schemas()));
  EXPECT_NE(table.find("all: 3.64x (worst of 2 batches: 64, B = 16: 55.00 vs 200.0 us, 1.25x its floor, 4x needs "
                       "1.14x); 0.7: 4.40x (worst of 1 batch: 64, B = 8: 50.00 vs 220.0 us, 1.25x its floor, 4x "
                       "needs 1.38x); target >= 4x: missed"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find(fmt::format("all: {:.2f}x (worst of 2 batches: 256, B = 8: 250.00 vs 709.4 us", 709.4 / 250.0)),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("target >= 4.5x: missed"), std::string::npos) << table;
  EXPECT_NE(table.find("SGLang measured with plain launches; target >= 4.5x: met"), std::string::npos) << table;
  EXPECT_NE(table.find("KVBuffer vs recurrent verify + accept, PDL launches  parallel, no states (no number)  "
                       "not measured"),
            std::string::npos)
      << table;
  const auto& rs = claims::replayssm_verify_commit_anchor_us();
  const double w = std::max(55.0 / rs.at(4).at(64), 250.0 / rs.at(4).at(256));
  EXPECT_NE(table.find("KVBuffer / ReplaySSM verify + commit"), std::string::npos) << table;
  EXPECT_NE(table.find(fmt::format("worst {:.2f}x", w)), std::string::npos) << table;
  EXPECT_NE(table.find(fmt::format("of 3 points); target <= 0.90x: {}", w <= 0.9 ? "met" : "missed")),
            std::string::npos)
      << table;
}

TEST(Claims, VerifyRatioAgainstReplaySsmTakesTheWorstPointOfItsAnchor) {
  const CsvTable t = synthetic_spec_verify();
  const auto& anchor = claims::replayssm_verify_commit_anchor_us();
  // All accepted, plain: batch 64 (fastest B = 16: 55 us; B = 32 failed) and 256 (250 us) at m = 4, 64 at m = 1
  // (10 us); the 0.7 and PDL rows are not compared.
  const auto r = claims::worst_verify_ratio(t, "spec.csv", "verify_accept_us_median", anchor);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->points, 3);
  const double r64 = 55.0 / anchor.at(4).at(64), r256 = 250.0 / anchor.at(4).at(256);
  EXPECT_DOUBLE_EQ(r->ratio, std::max(r64, r256));
  EXPECT_EQ(r->draft_tokens, 4);
  EXPECT_EQ(r->batch, r64 > r256 ? 64 : 256);
  const auto alone = claims::worst_verify_ratio(t, "spec.csv", "verify_us_median", claims::replayssm_verify_anchor_us());
  ASSERT_TRUE(alone.has_value());
  EXPECT_DOUBLE_EQ(alone->kvbuffer_us, 0.8 * (alone->batch == 64 ? 55.0 : 250.0));
  // Nothing at the anchor's points below min_batch; a compared row without its latency names the file and column.
  EXPECT_FALSE(claims::worst_verify_ratio(t, "spec.csv", "verify_accept_us_median", anchor, 512).has_value());
  CsvTable bad = t;
  bad.rows[4][11] = "";  // kvbuffer_verify, batch 64, m = 4, B = 16, all, plain
  try {
    claims::worst_verify_ratio(bad, "spec.csv", "verify_us_median", claims::replayssm_verify_anchor_us());
    ADD_FAILURE() << "accepted a blank verify_us_median";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("spec.csv: column 'verify_us_median' of a kvbuffer_verify row is ''"),
              std::string::npos)
        << e.what();
  }
}

TEST(Claims, VerifyClaimsLeaveBf16StateRowsOut) {
  // The spec_verify CSV with its state_dtype column (the axis): every row above fp32, plus bf16 rows (a sweep with
  // --set state_dtype=bf16 into the same file) faster than every fp32 row and a recurrent one slower. The claims are
  // made with fp32 states, so every result is the fp32 one of the tests above.
  const CsvTable fp32 = synthetic_spec_verify();
  CsvTable t = fp32;
  t.header.push_back("state_dtype");
  for (auto& row : t.rows) row.push_back("fp32");
  const size_t lat = 7, verify = 11;
  ASSERT_EQ(t.header[lat], "verify_accept_us_median");
  ASSERT_EQ(t.header[verify], "verify_us_median");
  for (const auto& row : fp32.rows) {
    if (row[1] == "recurrent_verify") continue;
    std::vector<std::string> fast = row;
    fast[lat] = "1";
    fast[verify] = "0.8";
    fast[10] = "ok";
    fast.push_back("bf16");
    t.rows.push_back(fast);
  }
  std::vector<std::string> slow_recurrent = fp32.rows[0];  // recurrent_verify, batch 64, m = 4, all, plain
  slow_recurrent[lat] = "5000";
  slow_recurrent.push_back("bf16");
  t.rows.push_back(slow_recurrent);

  const auto rec = claims::worst_verify_speedup(t, "spec.csv", 4, "all", false, 4.0);
  ASSERT_TRUE(rec.has_value());
  EXPECT_EQ(rec->batch, 64);
  EXPECT_EQ(rec->buffer_size, 16);
  EXPECT_DOUBLE_EQ(rec->speedup, 200.0 / 55.0);
  const auto sg = claims::worst_verify_speedup(t, "spec.csv", 4, "all", true, 4.5);
  ASSERT_TRUE(sg.has_value());
  EXPECT_EQ(sg->batch, 256);
  EXPECT_DOUBLE_EQ(sg->kvbuffer_us, 250.0);
  const auto& anchor = claims::replayssm_verify_commit_anchor_us();
  const auto r = claims::worst_verify_ratio(t, "spec.csv", "verify_accept_us_median", anchor);
  const auto r32 = claims::worst_verify_ratio(fp32, "spec.csv", "verify_accept_us_median", anchor);
  ASSERT_TRUE(r.has_value() && r32.has_value());
  EXPECT_EQ(r->points, 3);
  EXPECT_DOUBLE_EQ(r->ratio, r32->ratio);
  EXPECT_DOUBLE_EQ(r->kvbuffer_us, r32->kvbuffer_us);
}

TEST(Claims, ClaimsAgainstAnchorsLeaveOtherModelsOut) {
  // The anchors were measured on Qwen3-Next at tensor parallelism 1 (16 key heads, 32 value heads, K = V = 128):
  // rows of another model, faster than every row of that shape, never meet an anchor.
  const CsvTable spec = synthetic_spec_verify();
  CsvTable t = spec;
  t.header.insert(t.header.end(), {"heads_qk", "heads_v", "head_dim_k", "head_dim_v"});
  for (auto& row : t.rows) row.insert(row.end(), {"16", "32", "128", "128"});
  const size_t lat = 7, verify = 11;
  for (const size_t base : {4, 6})  // kvbuffer_verify, m = 4, all, plain: batch 64 (B = 16) and 256 (B = 8)
    for (const char* shape : {"32 32 128 128", "16 16 128 128", "16 32 64 128"}) {
      std::vector<std::string> fast = t.rows[base];
      fast[lat] = "1";
      fast[verify] = "0.8";
      std::istringstream words(shape);
      for (size_t col = spec.header.size(); col < t.header.size(); ++col) words >> fast[col];
      t.rows.push_back(fast);
    }
  const auto& anchor = claims::replayssm_verify_commit_anchor_us();
  const auto r = claims::worst_verify_ratio(t, "spec.csv", "verify_accept_us_median", anchor);
  const auto r0 = claims::worst_verify_ratio(spec, "spec.csv", "verify_accept_us_median", anchor);
  ASSERT_TRUE(r.has_value() && r0.has_value());
  EXPECT_DOUBLE_EQ(r->ratio, r0->ratio);
  EXPECT_DOUBLE_EQ(r->kvbuffer_us, r0->kvbuffer_us);
  EXPECT_EQ(r->points, r0->points);
  const auto sg = claims::worst_verify_speedup(t, "spec.csv", 4, "all", true, 4.5);
  ASSERT_TRUE(sg.has_value());
  EXPECT_EQ(sg->batch, 256);  // 709.4 / 250 against 187.6 / 55, as without the other models' rows
  EXPECT_DOUBLE_EQ(sg->kvbuffer_us, 250.0);

  CsvTable decode = synthetic_decode();
  decode.header.push_back("heads_qk");
  for (auto& row : decode.rows) row.push_back("16");
  std::vector<std::string> fast = decode.rows[3];  // kvbuffer, batch 64, B = 2
  fast[9] = "1";
  fast.back() = "32";
  decode.rows.push_back(fast);
  ASSERT_EQ(decode.header[9], "latency_us_median");
  const auto d = claims::best_reduction_vs_peer(decode, "synthetic.csv", fla());
  ASSERT_TRUE(d.has_value());
  EXPECT_DOUBLE_EQ(d->reduction, 1.0 - 50.0 / claims::fla_triton_anchor_us().at(64));
}

TEST(Claims, StatelessTargetIsMissedAboveHalfOrWithStateBytes) {
  TempDir dir;
  const std::string decode = dir.file("decode.csv"), cap = dir.file("cap.csv"), shortc = dir.file("short.csv");
  CsvTable slow = synthetic_short_context();
  slow.rows[4][8] = "48";  // batch 64, L = 14: 0.6x recurrent
  test::write_text(shortc, format_csv(test::as_result_table(slow, "short_context")));
  std::string table =
      claims::format_claims(claims::compute_claims(decode, cap, shortc, dir.file("spec.csv"), result_schemas()));
  EXPECT_NE(table.find("0.60x (48.00 vs 80.00 us), state bytes 0; target <= 0.5x, no state: missed"),
            std::string::npos)
      << table;

  CsvTable with_state = synthetic_short_context();
  with_state.rows[3][6] = "4096";  // batch 64, L = 1: a stateless row that reports state bytes
  test::write_text(shortc, format_csv(test::as_result_table(with_state, "short_context")));
  table = claims::format_claims(claims::compute_claims(decode, cap, shortc, dir.file("spec.csv"), result_schemas()));
  EXPECT_NE(table.find("0.45x (36.00 vs 80.00 us), state bytes 4096; target <= 0.5x, no state: missed"),
            std::string::npos)
      << table;

  CsvTable no_stateless = synthetic_short_context();
  for (auto& row : no_stateless.rows) row[5] = "false";
  test::write_text(shortc, format_csv(test::as_result_table(no_stateless, "short_context")));
  table = claims::format_claims(claims::compute_claims(decode, cap, shortc, dir.file("spec.csv"), result_schemas()));
  EXPECT_NE(table.find("no stateless KVBuffer row at batch >= 64 with a recurrent row at its batch"),
            std::string::npos)
      << table;
}

bool python_has_matplotlib() { return std::system("python3 -c 'import matplotlib' >/dev/null 2>&1") == 0; }

TEST(CliReproduce, WithoutGpuRunsWhatNeedsNoneAndPrintsTheCommittedClaims) {
  if (cuda_device_present()) GTEST_SKIP() << "a CUDA device is present: kvb reproduce would run the GPU sweeps";
  TempDir dir;
  const std::string out = dir.file("repro");
  const Result r = run_kvb(dir, "reproduce --out-dir " + test::shell_quote(out));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("skipped: kvb sweep --config experiments/decode_latency.toml"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("skipped: kvb sweep --config experiments/spec_verify.toml"), std::string::npos);
  EXPECT_NE(r.out.find("skipped: kvb sweep --config experiments/short_context.toml"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("skipped: kvb sweep --config experiments/buffer_form.toml"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("skipped: kvb capacity allocation proof"), std::string::npos);

  const CsvTable model = read_csv_file(out + "/capacity_model.csv");
  ASSERT_FALSE(model.rows.empty());
  const auto col = [&](const std::string& name) {
    return size_t(std::find(model.header.begin(), model.header.end(), name) - model.header.begin());
  };
  ASSERT_LT(col("status"), model.header.size());
  ASSERT_LT(col("budget_bytes"), model.header.size());
  for (const auto& row : model.rows) {
    EXPECT_EQ(row[col("status")].rfind("model only", 0), 0u) << row[col("status")];
    EXPECT_EQ(row[col("budget_bytes")], std::to_string(135LL << 30));
  }

  // The claims computed from the committed H200 CSVs, each measured value printed as the table has it.
  const std::filesystem::path src(KVB_SOURCE_DIR);
  const auto committed = claims::compute_claims((src / "results/decode_latency.csv").string(),
                                                (src / "results/capacity.csv").string(),
                                                (src / "results/short_context.csv").string(),
                                                (src / "results/spec_verify.csv").string(), result_schemas());
  ASSERT_FALSE(committed.empty());
  for (const auto& line : committed)
    EXPECT_NE(r.out.find(line.measured), std::string::npos) << line.measured << "\n" << r.out;
  EXPECT_NE(r.out.find("results/decode_latency.csv"), std::string::npos);
  EXPECT_NE(r.out.find("results/capacity.csv"), std::string::npos);
  // The stateless claim comes from the committed short_context CSV when there is one.
  const bool short_committed =
      std::filesystem::is_regular_file(std::filesystem::path(KVB_SOURCE_DIR) / "results/short_context.csv");
  if (short_committed)
    EXPECT_NE(r.out.find("results/short_context.csv:"), std::string::npos) << r.out;
  else
    EXPECT_NE(r.out.find("results/short_context.csv not found"), std::string::npos) << r.out;

  if (python_has_matplotlib()) {
    for (const char* name : {"decode_latency", "spec_verify", "capacity"})
      EXPECT_TRUE(std::filesystem::is_regular_file(out + "/figures/" + name + ".png")) << name << "\n" << r.out;
    for (const char* name : {"short_context", "buffer_form"}) {
      const std::string csv = std::string("results/") + name + ".csv";
      if (std::filesystem::is_regular_file(std::filesystem::path(KVB_SOURCE_DIR) / csv))
        EXPECT_TRUE(std::filesystem::is_regular_file(out + "/figures/" + name + ".png")) << name << "\n" << r.out;
      else
        EXPECT_NE(r.out.find(fmt::format("{} ({} not found", name, csv)), std::string::npos) << name << "\n" << r.out;
    }
  } else {
    EXPECT_NE(r.out.find("skipped: figures"), std::string::npos) << r.out;
  }
}

TEST(CliReproduce, NoPlotsAndBadOutDir) {
  if (cuda_device_present()) GTEST_SKIP() << "a CUDA device is present: kvb reproduce would run the GPU sweeps";
  TempDir dir;
  const std::string out = dir.file("repro");
  Result r = run_kvb(dir, "reproduce --no-plots --out-dir " + test::shell_quote(out));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("skipped: figures (--no-plots)"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(out + "/figures"));

  test::write_text(dir.file("file"), "x");
  // A file, a path through a file, a name over the file system's limit: exit 2 naming --out-dir, nothing written.
  const std::vector<std::string> bad_dirs = {dir.file("file"), dir.file("file") + "/sub",
                                             dir.file(std::string(300, 'a'))};
  for (const std::string& bad : bad_dirs) {
    r = run_kvb(dir, "reproduce --no-plots --out-dir " + test::shell_quote(bad));
    EXPECT_EQ(r.code, 2) << bad << ": " << r.err;
    EXPECT_EQ(r.err.rfind("kvb: --out-dir ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_EQ(test::read_text(dir.file("file")), "x");
}

TEST(Claims, KVBufferRowsMeetBaselinesOfTheirOwnModelOnly) {
  // Each claim against this project's recurrent rows pairs rows of one model (layers, heads, head dims): a KVBuffer
  // row of another model, however fast, meets that model's recurrent row or none.
  CsvTable decode = synthetic_decode();
  std::vector<std::string> rec16 = decode.rows[2];  // recurrent, batch 64, as 16 value heads: 10 us
  rec16[5] = "16";
  rec16[9] = "10";
  decode.rows.push_back(rec16);
  const auto d = claims::best_reduction_vs_recurrent(decode, "synthetic.csv");
  ASSERT_TRUE(d.has_value());  // 16 value heads: 4 against 10 us, the best; never 4 against 32 heads' 80 us
  EXPECT_EQ(d->buffer_size, 16);
  EXPECT_DOUBLE_EQ(d->baseline_us, 10.0);
  EXPECT_DOUBLE_EQ(d->reduction, 1.0 - 4.0 / 10.0);

  CsvTable spec = synthetic_spec_verify();
  spec.header.push_back("layers");
  for (auto& row : spec.rows) row.push_back("36");
  std::vector<std::string> fast = spec.rows[4];  // kvbuffer_verify, batch 64, m = 4, all, B = 16: 55 us
  fast[7] = "1";
  fast.back() = "48";  // another layer count, no recurrent_verify row of its own
  spec.rows.push_back(fast);
  const auto v = claims::worst_verify_speedup(spec, "spec.csv", 4, "all", false, 4.0);
  ASSERT_TRUE(v.has_value());  // as without the 48-layer row
  EXPECT_EQ(v->points, 2);
  EXPECT_EQ(v->batch, 64);
  EXPECT_DOUBLE_EQ(v->speedup, 200.0 / 55.0);

  CsvTable short_context = synthetic_short_context();
  const auto s0 = claims::worst_stateless_ratio(short_context, "short.csv");
  ASSERT_TRUE(s0.has_value());
  short_context.header.push_back("heads_v");
  for (auto& row : short_context.rows) row.push_back("32");
  for (size_t i = 0, n = short_context.rows.size(); i < n; ++i)
    if (short_context.rows[i][1] == "kvbuffer") {  // the same KVBuffer rows, 1000x slower, of a model never recurrent
      std::vector<std::string> slow = short_context.rows[i];
      slow.back() = "8";
      const size_t lat = size_t(std::find(short_context.header.begin(), short_context.header.end(),
                                          "latency_us_median") - short_context.header.begin());
      slow[lat] = fmt::format("{}", 1000.0 * std::stod(slow[lat]));
      short_context.rows.push_back(slow);
    }
  const auto s = claims::worst_stateless_ratio(short_context, "short.csv");
  ASSERT_TRUE(s.has_value());
  EXPECT_DOUBLE_EQ(s->ratio, s0->ratio);
  EXPECT_EQ(s->points, s0->points);

  CsvTable capacity = synthetic_capacity(true);
  capacity.header.push_back("heads_v");
  for (auto& row : capacity.rows) row.push_back("32");
  capacity.rows.push_back({"recurrent_verify", "", "4", "2", "1", "ok", "8"});  // last, of a model KVBuffer lacks
  capacity.rows.push_back({"kvbuffer_verify", "4", "4", "2", "1", "failed: out of memory", "32"});  // not ok
  const auto c = claims::capacity_ratio(capacity, "c.csv", 4, 4);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->kvbuffer_requests, 931);
  EXPECT_EQ(c->recurrent_requests, 190);
  EXPECT_DOUBLE_EQ(c->ratio, 931.0 / 190.0);

  // A model's fields are read as numbers: 32 and 32.0 (or 032) are one model.
  CsvTable spelled = synthetic_decode();
  spelled.rows[4][5] = "32.0";  // kvbuffer, batch 64, B = 4
  const auto sp = claims::best_reduction_vs_recurrent(spelled, "synthetic.csv");
  ASSERT_TRUE(sp.has_value());
  EXPECT_DOUBLE_EQ(sp->reduction, 1.0 - 50.0 / 80.0);
}

TEST(Claims, EachModelOfTheAnchorsShapeMeetsTheAnchorOnItsOwn) {
  // Two layer counts of Qwen3-Next's shape: against an anchor the worst of the two counts, not the fastest row of
  // either.
  CsvTable spec = synthetic_spec_verify();
  spec.header.push_back("layers");
  for (auto& row : spec.rows) row.push_back("36");
  const auto& anchor = claims::replayssm_verify_commit_anchor_us();
  const auto r36 = claims::worst_verify_ratio(spec, "spec.csv", "verify_accept_us_median", anchor);
  const auto sg36 = claims::worst_verify_speedup(spec, "spec.csv", 4, "all", true, 4.5);
  ASSERT_TRUE(r36.has_value() && sg36.has_value());
  for (const double scale : {0.1, 10.0}) {
    CsvTable t = spec;
    for (size_t i = 0, n = spec.rows.size(); i < n; ++i)
      if (spec.rows[i][1] == "kvbuffer_verify") {
        std::vector<std::string> row = spec.rows[i];
        row[7] = fmt::format("{}", scale * std::stod(row[7]));
        row.back() = "48";
        t.rows.push_back(row);
      }
    const auto r = claims::worst_verify_ratio(t, "spec.csv", "verify_accept_us_median", anchor);
    const auto sg = claims::worst_verify_speedup(t, "spec.csv", 4, "all", true, 4.5);
    ASSERT_TRUE(r.has_value() && sg.has_value());
    if (scale < 1) {  // the faster layer count hides nothing: the 36-layer rows stay the worst
      EXPECT_DOUBLE_EQ(r->ratio, r36->ratio);
      EXPECT_DOUBLE_EQ(sg->speedup, sg36->speedup);
    } else {
      EXPECT_DOUBLE_EQ(r->ratio, 10.0 * r36->ratio);
      EXPECT_DOUBLE_EQ(sg->speedup, sg36->speedup / 10.0);
    }
    EXPECT_EQ(r->points, 2 * r36->points);
  }
}

}  // namespace
}  // namespace kvb
