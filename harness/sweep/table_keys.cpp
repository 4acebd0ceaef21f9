// Axis columns of a result CSV and row keys (table_keys.h).
#include "harness/sweep/table_keys.h"

#include <fmt/format.h>

namespace kvb {

size_t require_column(const std::vector<std::string>& header, const std::string& name, const std::string& origin) {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return i;
  throw UsageError(fmt::format("{}: no column '{}' in the header (is it a kvb sweep CSV?)", origin, name));
}

std::vector<std::string> csv_axis_columns(const std::vector<std::string>& header,
                                          const std::vector<ExperimentKind>& kinds, const std::string& origin) {
  if (header.empty() || header[0] != "experiment")
    throw UsageError(fmt::format("{}: the header must start with 'experiment' (is it a kvb sweep CSV?)", origin));
  for (const auto& kind : kinds) {
    if (header.size() < 1 + kind.axes.size()) continue;
    bool match = true;
    for (size_t a = 0; a < kind.axes.size() && match; ++a) match = header[1 + a] == kind.axes[a].name;
    if (!match) continue;
    std::vector<std::string> axes;
    for (const auto& spec : kind.axes) axes.push_back(spec.name);
    return axes;
  }
  for (size_t i = 1; i < header.size(); ++i)
    if (header[i] == "latency_us_median") return {header.begin() + 1, header.begin() + long(i)};
  throw UsageError(fmt::format(
      "{}: cannot tell the axis columns: the header matches no known experiment kind and has no latency_us_median",
      origin));
}

RowKeyer::RowKeyer(const std::vector<std::string>& header, const std::vector<std::string>& axis_columns,
                   const std::string& origin) {
  names_.push_back("experiment");
  for (const auto& a : axis_columns) names_.push_back(a);
  for (const auto& n : names_) index_.push_back(require_column(header, n, origin));
}

std::string RowKeyer::key(const std::vector<std::string>& row) const {
  std::string out;
  for (size_t i = 0; i < index_.size(); ++i) out += (i ? "\x1f" : "") + row.at(index_[i]);
  return out;
}

std::string RowKeyer::label(const std::vector<std::string>& row) const {
  std::string out;
  for (size_t i = 1; i < index_.size(); ++i) {
    const std::string& v = row.at(index_[i]);
    if (v.empty()) continue;
    out += (out.empty() ? "" : ",") + names_[i] + '=' + v;
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> RowKeyer::axes(const std::vector<std::string>& row) const {
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t i = 1; i < index_.size(); ++i) out.emplace_back(names_[i], row.at(index_[i]));
  return out;
}

std::string point_row_key(const std::string& experiment, const Point& point) {
  std::string out = experiment;
  for (const auto& a : point.axes) out += "\x1f" + a.second;
  return out;
}

}  // namespace kvb
