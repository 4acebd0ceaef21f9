// Matching and classification of two result CSVs (compare.h).
#include "harness/reports/compare.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/sweep/result_csv.h"
#include "harness/sweep/table_keys.h"

namespace kvb {
namespace {

/// The ok rows of one file, keyed by point.
struct Side {
  const CsvInput* input = nullptr;
  const ExperimentKind* kind = nullptr;  // csv_kind of its header (nullptr: a header no kind knows)
  std::vector<std::string> axis_columns;
  std::vector<std::string> keys;  // ok rows, in file order
  std::map<std::string, const std::vector<std::string>*> row_of;
  std::set<std::string> experiments;
  size_t med = 0, p10 = 0, p90 = 0, gpu = 0;
};

double positive_number(const Side& s, const std::vector<std::string>& row, size_t col, const std::string& label) {
  const std::string& text = row[col];
  // The row passed validate_result_table; this holds the same rule (a subnormal number is taken, as there).
  char* end = nullptr;
  const double x = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(x) || !(x > 0))
    throw UsageError(fmt::format("{}: point {}: {} = '{}' (allowed: a positive number of microseconds)", s.input->path,
                                 label, s.input->table.header[col], text));
  return x;
}

/// The latency column prefix of `h`: `metric`, or when empty latency_us or else verify_accept_us.
std::string latency_metric(const std::vector<std::string>& h, const std::string& metric, const std::string& path) {
  auto has = [&](const std::string& c) { return std::find(h.begin(), h.end(), c) != h.end(); };
  if (!metric.empty()) {
    if (!has(metric + "_median"))
      throw UsageError(fmt::format("--metric = '{}': {} has no column {}_median (allowed: latency_us for decode CSVs, "
                                   "verify_us or verify_accept_us for spec_verify CSVs)",
                                   metric, path, metric));
    return metric;
  }
  return has("latency_us_median") || !has("verify_accept_us_median") ? "latency_us" : "verify_accept_us";
}

Side read_side(const CsvInput& in, const std::vector<ExperimentKind>& kinds, const std::string& metric) {
  Side s;
  s.input = &in;
  const auto& h = in.table.header;
  if (h.empty()) throw UsageError(fmt::format("{}: empty file (no header; is it a kvb sweep CSV?)", in.path));
  s.kind = csv_kind(h, kinds);
  // A kind whose rows hold no latency (accuracy) is refused as such, naming the kinds that hold one.
  const auto timed = [](const std::vector<std::string>& columns) {
    return std::any_of(columns.begin(), columns.end(), [](const std::string& c) {
      return c.size() > 10 && c.compare(c.size() - 10, 10, "_us_median") == 0;
    });
  };
  if (s.kind && !timed(s.kind->result_columns)) {
    std::string with_latency;
    for (const auto& k : kinds)
      if (timed(k.result_columns)) with_latency += (with_latency.empty() ? "" : ", ") + k.name;
    throw UsageError(fmt::format("{}: a CSV of kind {} holds no latency to compare (allowed: a CSV of kind {})",
                                 in.path, s.kind->name, with_latency));
  }
  s.axis_columns = csv_axis_columns(h, kinds, in.path);
  const RowKeyer keyer(h, s.axis_columns, in.path, s.kind);
  const std::string m = latency_metric(h, metric, in.path);
  s.med = require_column(h, m + "_median", in.path);
  s.p10 = require_column(h, m + "_p10", in.path);
  s.p90 = require_column(h, m + "_p90", in.path);
  s.gpu = require_column(h, "gpu", in.path);
  const size_t status = require_column(h, "status", in.path);
  for (const auto& row : in.table.rows) {
    if (row[status] != "ok") continue;
    const std::string key = keyer.key(row);
    if (!s.row_of.emplace(key, &row).second)
      throw UsageError(
          fmt::format("{}: point {} is listed twice (merge shards with kvb merge first)", in.path, keyer.label(row)));
    s.keys.push_back(key);
    s.experiments.insert(row[0]);
  }
  return s;
}

Latency latency(const Side& s, const std::vector<std::string>& row, const std::string& label) {
  return {positive_number(s, row, s.med, label), positive_number(s, row, s.p10, label),
          positive_number(s, row, s.p90, label)};
}

}  // namespace

const char* to_string(Verdict v) {
  switch (v) {
    case Verdict::faster: return "faster";
    case Verdict::slower: return "slower";
    default: return "same";
  }
}

Verdict classify(const Latency& baseline, const Latency& candidate, double threshold_pct) {
  const double ratio = candidate.median / baseline.median;
  const double t = threshold_pct / 100.0;
  if (candidate.p10 > baseline.p90 && ratio > 1.0 + t) return Verdict::slower;
  if (candidate.p90 < baseline.p10 && ratio < 1.0 - t) return Verdict::faster;
  return Verdict::same;
}

size_t Comparison::count(Verdict v) const {
  size_t n = 0;
  for (const auto& p : points) n += p.verdict == v;
  return n;
}

Comparison compare_tables(const CsvInput& baseline, const CsvInput& candidate, const std::vector<ExperimentKind>& kinds,
                          const CompareOptions& options) {
  if (!(options.threshold_pct >= 0 && options.threshold_pct <= 1000))
    throw UsageError(fmt::format("--threshold {}: allowed: a percentage in [0, 1000]", options.threshold_pct));
  const std::vector<CsvSchema> schemas = csv_schemas(kinds);
  for (const CsvInput* in : {&baseline, &candidate}) validate_result_input(in->table, schemas, kinds, in->path);
  const Side base = read_side(baseline, kinds, options.metric), cand = read_side(candidate, kinds, options.metric);
  if (base.axis_columns != cand.axis_columns)
    throw UsageError(fmt::format("{}: axis columns ({}) differ from {}'s ({}); compare CSVs of one experiment kind",
                                 candidate.path, fmt::join(cand.axis_columns, ","), baseline.path,
                                 fmt::join(base.axis_columns, ",")));
  // One keyer per file: a file written before its kind gained an axis has fewer columns.
  const RowKeyer keyer(baseline.table.header, base.axis_columns, baseline.path, base.kind);
  const RowKeyer cand_keyer(candidate.table.header, cand.axis_columns, candidate.path, cand.kind);

  Comparison c;
  c.threshold_pct = options.threshold_pct;
  for (const auto& key : base.keys) {
    const auto& brow = *base.row_of.at(key);
    const auto it = cand.row_of.find(key);
    if (it == cand.row_of.end()) {
      c.only_baseline.push_back(keyer.label(brow));
      continue;
    }
    const auto& crow = *it->second;
    PointComparison p;
    p.axes = keyer.axes(brow);
    p.label = keyer.label(brow);
    if (!options.allow_different_gpu && brow[base.gpu] != crow[cand.gpu])
      throw UsageError(
          fmt::format("gpu: point {} ran on '{}' in {} and on '{}' in {} (allowed: the same GPU; pass "
                      "--allow-different-gpu to compare anyway)",
                      p.label, brow[base.gpu], baseline.path, crow[cand.gpu], candidate.path));
    if (c.points.empty()) {
      c.baseline_gpu = brow[base.gpu];
      c.candidate_gpu = crow[cand.gpu];
    }
    p.baseline = latency(base, brow, p.label);
    p.candidate = latency(cand, crow, p.label);
    p.ratio = p.candidate.median / p.baseline.median;
    p.verdict = classify(p.baseline, p.candidate, options.threshold_pct);
    c.points.push_back(std::move(p));
  }
  for (const auto& key : cand.keys)
    if (!base.row_of.count(key)) c.only_candidate.push_back(cand_keyer.label(*cand.row_of.at(key)));

  if (c.points.empty())
    throw UsageError(fmt::format(
        "no common points: {} has {} ok points (experiment {}), {} has {} (experiment {}); compare runs of one "
        "experiment",
        baseline.path, base.keys.size(),
        base.experiments.empty() ? "-" : fmt::format("{}", fmt::join(base.experiments, ", ")), candidate.path,
        cand.keys.size(), cand.experiments.empty() ? "-" : fmt::format("{}", fmt::join(cand.experiments, ", "))));
  return c;
}

}  // namespace kvb
