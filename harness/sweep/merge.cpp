// Shard CSV merge (merge.h).
#include "harness/sweep/merge.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/sweep/result_csv.h"
#include "harness/sweep/table_keys.h"

namespace kvb {

MergeResult merge_csv_tables(std::vector<CsvInput> inputs, const std::vector<ExperimentKind>& kinds,
                             const MergeSpec& spec) {
  if (inputs.empty()) throw UsageError("kvb merge: give at least one input CSV");
  const std::vector<CsvSchema> schemas = csv_schemas(kinds);
  std::vector<const ExperimentKind*> input_kinds;
  for (const CsvInput& in : inputs) input_kinds.push_back(validate_result_input(in.table, schemas, kinds, in.path));
  // An input written before its kind gained an axis is read with that column put back, as resuming reads it.
  for (size_t i = 0; i < inputs.size(); ++i)
    if (input_kinds[i]) upgrade_older_header(*input_kinds[i], inputs[i].table, inputs[i].path);
  MergeResult result;
  const std::vector<std::string>& header = spec.header.empty() ? inputs[0].table.header : spec.header;
  for (const auto& in : inputs) {
    if (in.table.header != header)
      throw UsageError(fmt::format("{}: header differs from {} (expected: {})", in.path,
                                   spec.header.empty() ? inputs[0].path : "the config's experiment kind",
                                   fmt::join(header, ",")));
  }
  const RowKeyer keyer(header, csv_axis_columns(header, kinds, inputs[0].path), inputs[0].path,
                       csv_kind(header, kinds));
  const size_t experiment_col = require_column(header, "experiment", inputs[0].path);
  size_t gpu_col = header.size();
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == "gpu") gpu_col = i;

  std::string experiment = spec.experiment;
  std::string experiment_from = "the config";
  std::string gpu_from;
  std::map<std::string, std::string> file_of;                                 // point key -> input path
  std::vector<std::pair<std::string, const std::vector<std::string>*>> rows;  // (key, row) in input order
  for (const auto& in : inputs) {
    for (const auto& row : in.table.rows) {
      if (experiment.empty()) {
        experiment = row[experiment_col];
        experiment_from = in.path;
      }
      if (row[experiment_col] != experiment)
        throw UsageError(fmt::format("{}: experiment '{}' differs from '{}' in {} (merge shards of one experiment)",
                                     in.path, row[experiment_col], experiment, experiment_from));
      const std::string key = keyer.key(row);
      const auto [it, fresh] = file_of.emplace(key, in.path);
      if (!fresh)
        throw UsageError(fmt::format("{}: point {} is also in {} (each point must come from one shard)", in.path,
                                     keyer.label(row), it->second));
      rows.emplace_back(key, &row);
      if (gpu_col < header.size() && !row[gpu_col].empty()) {
        if (result.gpu.empty()) {
          result.gpu = row[gpu_col];
          gpu_from = in.path;
        } else if (row[gpu_col] != result.gpu) {
          throw UsageError(fmt::format("{}: gpu '{}' differs from '{}' in {} (allowed: shards measured on one GPU "
                                       "model; a result CSV holds one GPU's runs)",
                                       in.path, row[gpu_col], result.gpu, gpu_from));
        }
      }
    }
  }

  if (!spec.grid_keys.empty()) {
    std::map<std::string, size_t> position;
    for (size_t i = 0; i < spec.grid_keys.size(); ++i) position.emplace(spec.grid_keys[i], i);
    auto rank = [&](const std::string& key) {
      const auto it = position.find(key);
      return it == position.end() ? spec.grid_keys.size() : it->second;
    };
    std::stable_sort(rows.begin(), rows.end(),
                     [&](const auto& a, const auto& b) { return rank(a.first) < rank(b.first); });
  }
  result.table.header = header;
  for (const auto& [key, row] : rows) result.table.rows.push_back(*row);
  return result;
}

KeyedRows::KeyedRows(const ExperimentKind& kind, CsvTable table)
    : kind_(kind),
      status_col_(1 + kind.axes.size() + kind.result_columns.size()),
      table_(std::move(table)) {
  if (table_.header.empty()) table_.header = csv_columns(kind);
  for (size_t r = 0; r < table_.rows.size(); ++r) row_of_[key(table_.rows[r])] = r;
}

std::string KeyedRows::key(const std::vector<std::string>& row) const {
  return kind_row_key(kind_, row);
}

void KeyedRows::put(const std::vector<std::string>& row, bool keep_ok) {
  const std::string k = key(row);
  const auto it = row_of_.find(k);
  if (it == row_of_.end()) {
    row_of_[k] = table_.rows.size();
    table_.rows.push_back(row);
  } else if (!keep_ok || ok(row) || !ok(table_.rows[it->second])) {
    table_.rows[it->second] = row;
  }
}

const std::vector<std::string>* KeyedRows::find(const std::string& key) const {
  const auto it = row_of_.find(key);
  return it == row_of_.end() ? nullptr : &table_.rows[it->second];
}

}  // namespace kvb
