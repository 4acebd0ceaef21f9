#include "harness/reports/anchors.h"

#include <cerrno>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "harness/sweep/csv.h"

namespace kvb {
namespace {

/// The integer of a point column (0 when empty); UsageError naming the file otherwise.
int point_int(const std::string& text, const std::string& column, const std::string& path) {
  if (text.empty()) return 0;
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (*end != '\0' || errno == ERANGE || v < 0 || v > 1'000'000)
    throw UsageError(fmt::format("{}: column '{}' value '{}' is not a whole number", path, column, text));
  return int(v);
}

}  // namespace

std::vector<AnchorValue> read_anchors(const std::string& path) {
  if (!std::filesystem::is_regular_file(path)) throw UsageError(fmt::format("{}: no anchors file there", path));
  const CsvTable t = read_csv_file(path);
  const auto col = [&](const std::string& name) {
    for (size_t i = 0; i < t.header.size(); ++i)
      if (t.header[i] == name) return i;
    throw UsageError(fmt::format("{}: no column '{}' (is it an anchors file?)", path, name));
  };
  const size_t anchor = col("anchor"), batch = col("batch"), drafts = col("draft_tokens"), ring = col("ring_length"),
               value = col("value"), unit = col("unit"), gpu = col("gpu"), source = col("source"), date = col("date");
  std::vector<AnchorValue> out;
  for (const auto& row : t.rows) {
    AnchorValue a;
    a.anchor = row[anchor];
    a.batch = point_int(row[batch], "batch", path);
    a.draft_tokens = point_int(row[drafts], "draft_tokens", path);
    a.ring_length = point_int(row[ring], "ring_length", path);
    char* end = nullptr;
    a.value = std::strtod(row[value].c_str(), &end);
    if (row[value].empty() || *end != '\0' || !(a.value > 0))
      throw UsageError(fmt::format("{}: column 'value' value '{}' of anchor {} is not a positive number", path,
                                   row[value], a.anchor));
    a.unit = row[unit];
    a.gpu = row[gpu];
    a.source = row[source];
    a.date = row[date];
    out.push_back(std::move(a));
  }
  return out;
}

std::string anchors_path() {
  const std::string here = "results/anchors.csv";
  if (std::filesystem::is_regular_file(here)) return here;
  const std::string built = KVB_SOURCE_ANCHORS_CSV;
  if (std::filesystem::is_regular_file(built)) return built;
  throw UsageError(fmt::format("anchors: neither {} (run kvb from the repository root) nor {} exists", here, built));
}

const std::vector<AnchorValue>& anchors() {
  static const std::vector<AnchorValue> all = read_anchors(anchors_path());
  return all;
}

std::map<int, double> anchor_by_batch(const std::string& anchor) {
  std::map<int, double> out;
  for (const AnchorValue& a : anchors())
    if (a.anchor == anchor && a.draft_tokens == 0 && a.ring_length == 0) out[a.batch] = a.value;
  return out;
}

std::map<int, std::map<int, double>> anchor_by_drafts(const std::string& anchor) {
  std::map<int, std::map<int, double>> out;
  for (const AnchorValue& a : anchors())
    if (a.anchor == anchor && a.ring_length == 0) out[a.draft_tokens][a.batch] = a.value;
  return out;
}

}  // namespace kvb
