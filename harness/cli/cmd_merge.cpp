// `kvb merge OUT IN...`: join shard CSVs into one (commands.h, harness/sweep/merge.h).
#include <fmt/format.h>

#include <filesystem>
#include <system_error>

#include "harness/cli/commands.h"
#include "harness/cli/sweep_setup.h"
#include "harness/kinds/registry.h"
#include "harness/sweep/config.h"
#include "harness/sweep/csv.h"
#include "harness/sweep/input_file.h"
#include "harness/sweep/merge.h"
#include "harness/sweep/table_keys.h"

namespace kvb::cli {

CsvInput read_input_csv(const std::string& path, const std::string& argument) {
  return {path, parse_csv(read_input_file(path, argument, "a result CSV of kvb sweep"), path)};
}

int run_merge_command(const MergeCommandOptions& options) {
  std::vector<InputFile> named_inputs{{options.config, "--config"}};
  for (const auto& path : options.inputs) named_inputs.push_back({path, "IN"});
  check_outputs({{options.out, "OUT", options.force ? Existing::replace : Existing::refuse}}, named_inputs);
  // One file named twice would only meet itself as a shard holding the same points.
  for (size_t i = 0; i < options.inputs.size(); ++i)
    for (size_t j = 0; j < i; ++j) {
      std::error_code ec;
      if (std::filesystem::equivalent(options.inputs[i], options.inputs[j], ec) && !ec)
        throw UsageError(fmt::format("IN {}: given twice (as '{}' too; allowed: each shard once)", options.inputs[i],
                                     options.inputs[j]));
    }
  MergeSpec spec;
  if (!options.config.empty()) {
    const ConfigGrid g = load_config_grid(options.config, options.sets);  // the points checked as kvb sweep does
    spec.header = csv_columns(*g.kind);
    spec.experiment = g.config.name;
    for (const auto& p : g.grid) spec.grid_keys.push_back(point_row_key(g.config.name, p));
  } else if (!options.sets.empty()) {
    throw UsageError("--set: needs --config (it changes the grid that orders the rows)");
  }
  std::vector<CsvInput> inputs;
  for (const auto& path : options.inputs) inputs.push_back(read_input_csv(path, "IN"));
  const MergeResult merged = merge_csv_tables(inputs, experiment_kinds(), spec);

  write_file_atomic(options.out, format_csv(merged.table));
  fmt::print("kvb merge: {} rows from {} files -> {}\n", merged.table.rows.size(), inputs.size(), options.out);
  return 0;
}

}  // namespace kvb::cli
