// Axis columns of a result CSV and row keys (table_keys.h).
#include "harness/sweep/table_keys.h"

#include <algorithm>

#include <fmt/format.h>

#include "harness/sweep/config.h"

namespace kvb {

size_t require_column(const std::vector<std::string>& header, const std::string& name, const std::string& origin) {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return i;
  throw UsageError(fmt::format("{}: no column '{}' in the header (is it a kvb sweep CSV?)", origin, name));
}

bool may_be_absent(const AxisSpec& axis) { return axis.added_later && axis.defaults.size() == 1; }

namespace {

/// True when the header's columns after "experiment" begin with the kind's axes in order, where `allow_absent` lets
/// the axes that may_be_absent be left out.
bool carries_axes(const std::vector<std::string>& header, const ExperimentKind& kind, bool allow_absent) {
  size_t col = 1;
  for (const auto& axis : kind.axes) {
    if (col < header.size() && header[col] == axis.name) {
      ++col;
      continue;
    }
    if (!allow_absent || !may_be_absent(axis)) return false;
  }
  return true;
}

}  // namespace

const ExperimentKind* csv_kind(const std::vector<std::string>& header, const std::vector<ExperimentKind>& kinds) {
  if (header.empty() || header[0] != "experiment") return nullptr;
  for (const bool allow_absent : {false, true})
    for (const auto& kind : kinds)
      if (carries_axes(header, kind, allow_absent)) return &kind;
  return nullptr;
}

std::vector<std::string> csv_axis_columns(const std::vector<std::string>& header,
                                          const std::vector<ExperimentKind>& kinds, const std::string& origin) {
  if (header.empty() || header[0] != "experiment")
    throw UsageError(fmt::format("{}: the header must start with 'experiment' (is it a kvb sweep CSV?)", origin));
  if (const ExperimentKind* kind = csv_kind(header, kinds)) {
    std::vector<std::string> axes;
    for (const auto& spec : kind->axes) axes.push_back(spec.name);
    return axes;
  }
  for (size_t i = 1; i < header.size(); ++i)
    if (header[i] == "latency_us_median") return {header.begin() + 1, header.begin() + long(i)};
  throw UsageError(fmt::format(
      "{}: cannot tell the axis columns: the header matches no known experiment kind and has no latency_us_median",
      origin));
}

RowKeyer::RowKeyer(const std::vector<std::string>& header, const std::vector<std::string>& axis_columns,
                   const std::string& origin, const ExperimentKind* kind)
    : kind_(kind) {
  names_.push_back("experiment");
  for (const auto& a : axis_columns) names_.push_back(a);
  bool any_absent = false;
  for (const auto& n : names_) {
    const AxisSpec* spec = nullptr;
    if (kind)
      for (const auto& a : kind->axes)
        if (a.name == n) spec = &a;
    const bool present = std::find(header.begin(), header.end(), n) != header.end();
    if (!present && spec && may_be_absent(*spec)) {
      index_.push_back(kAbsent);
      default_.push_back(spec->older_value.empty() ? spec->defaults[0] : spec->older_value);
      fallback_.push_back(spec->defaults[0]);
      any_absent = true;
      continue;
    }
    index_.push_back(require_column(header, n, origin));
    default_.emplace_back();
    fallback_.emplace_back();
  }
  if (any_absent) variant_ = require_column(header, "variant", origin);
  if (kind) {
    all_axes_ = names_.size() == 1 + kind->axes.size();
    for (size_t a = 0; all_axes_ && a < kind->axes.size(); ++a) all_axes_ = names_[1 + a] == kind->axes[a].name;
  }
}

std::string RowKeyer::plain_value(const std::vector<std::string>& row, size_t i) const {
  if (index_[i] != kAbsent) return row.at(index_[i]);
  const bool applies = !kind_->applies || kind_->applies(row.at(variant_), names_[i]);
  return applies ? default_[i] : std::string();
}

std::string RowKeyer::value(const std::vector<std::string>& row, size_t i) const {
  std::string v = plain_value(row, i);
  if (index_[i] != kAbsent || v.empty() || v == fallback_[i] || !all_axes_ || !kind_->validate) return v;
  // An older value the row's point refuses is not what the row measured: the axis's default is.
  Point p;
  for (size_t j = 1; j < names_.size(); ++j) p.axes.emplace_back(names_[j], j == i ? v : plain_value(row, j));
  return kind_->validate(p).empty() ? v : fallback_[i];
}

std::string key_axis_value(const std::string& axis, const std::string& value) {
  return axis == "state_dtype" && value.empty() ? std::string("fp32") : value;
}

std::string point_key(const std::string& experiment, const std::vector<std::string>& axis_values) {
  std::string out = experiment;
  for (const auto& v : axis_values) out += "\x1f" + canonical_axis_value(v);
  return out;
}

std::string RowKeyer::key(const std::vector<std::string>& row) const {
  std::vector<std::string> axes;
  for (size_t i = 1; i < index_.size(); ++i) axes.push_back(key_axis_value(names_[i], value(row, i)));
  return point_key(value(row, 0), axes);
}

std::string RowKeyer::label(const std::vector<std::string>& row) const {
  std::string out;
  for (size_t i = 1; i < index_.size(); ++i) {
    const std::string v = value(row, i);
    if (v.empty()) continue;
    out += (out.empty() ? "" : ",") + names_[i] + '=' + v;
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> RowKeyer::axes(const std::vector<std::string>& row) const {
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t i = 1; i < index_.size(); ++i) out.emplace_back(names_[i], value(row, i));
  return out;
}

std::string point_row_key(const std::string& experiment, const Point& point) {
  std::vector<std::string> axes;
  for (const auto& a : point.axes) axes.push_back(key_axis_value(a.first, a.second));
  return point_key(experiment, axes);
}

std::string kind_row_key(const ExperimentKind& kind, const std::vector<std::string>& row) {
  std::vector<std::string> axes;
  for (size_t i = 0; i < kind.axes.size(); ++i) axes.push_back(key_axis_value(kind.axes[i].name, row.at(1 + i)));
  return point_key(row.at(0), axes);
}

bool upgrade_older_header(const ExperimentKind& kind, CsvTable& table, const std::string& path) {
  const auto cols = csv_columns(kind);
  const auto in_header = [&](const std::string& c) {
    return std::find(table.header.begin(), table.header.end(), c) != table.header.end();
  };
  const auto result_added_later = [&](const std::string& c) {
    return std::find(kind.results_added_later.begin(), kind.results_added_later.end(), c) !=
           kind.results_added_later.end();
  };
  std::vector<std::string> axes, kept;  // the kind's axes; its columns less those the header lacks and may lack
  for (const AxisSpec& a : kind.axes) axes.push_back(a.name);
  for (const auto& c : cols) {
    const auto axis = std::find_if(kind.axes.begin(), kind.axes.end(), [&](const AxisSpec& a) { return a.name == c; });
    const bool may_lack = axis != kind.axes.end() ? may_be_absent(*axis) : result_added_later(c);
    if (!may_lack || in_header(c)) kept.push_back(c);
  }
  if (kept.size() == cols.size() || kept != table.header) return false;
  const RowKeyer keyer(table.header, axes, path, &kind);
  for (auto& row : table.rows) {
    std::vector<std::string> full{row[0]};
    for (auto& axis_value : keyer.axes(row)) full.push_back(std::move(axis_value.second));
    for (size_t c = 1 + axes.size(); c < cols.size(); ++c) {
      const auto at = std::find(table.header.begin(), table.header.end(), cols[c]);
      const size_t i = size_t(at - table.header.begin());
      full.push_back(at == table.header.end() || i >= row.size() ? std::string() : row[i]);
    }
    row = std::move(full);
  }
  table.header = cols;
  return true;
}

}  // namespace kvb
