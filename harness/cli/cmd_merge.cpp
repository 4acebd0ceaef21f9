// `kvb merge OUT IN...`: join shard CSVs into one (commands.h, harness/sweep/merge.h).
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/cli/commands.h"
#include "harness/kinds/registry.h"
#include "harness/sweep/config.h"
#include "harness/sweep/csv.h"
#include "harness/sweep/grid.h"
#include "harness/sweep/merge.h"
#include "harness/sweep/table_keys.h"

namespace kvb::cli {

CsvInput read_input_csv(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw UsageError(fmt::format("{}: no such file (give result CSVs of kvb sweep)", path));
  if (!std::filesystem::is_regular_file(path, ec))
    throw UsageError(fmt::format("{}: not a regular file (give result CSVs of kvb sweep)", path));
  return {path, read_csv_file(path)};
}

int run_merge_command(const MergeCommandOptions& options) {
  if (!options.force && std::filesystem::exists(options.out))
    throw UsageError(fmt::format("OUT {} exists (kvb merge OUT IN...: pass --force to replace it)", options.out));
  check_output_writable(options.out, "OUT");
  MergeSpec spec;
  if (!options.config.empty()) {
    const SweepConfig config = load_sweep_config(options.config);
    const ExperimentKind* kind = nullptr;
    try {
      kind = &find_experiment_kind(config.kind);
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("{}: experiment.kind: {}", options.config, e.what()));
    }
    std::vector<AxisValues> overrides;
    for (const auto& s : options.sets) overrides.push_back(parse_axis_override(s));
    spec.header = csv_columns(*kind);
    spec.experiment = config.name;
    for (const auto& p : make_grid(*kind, resolve_axes(*kind, config, overrides)))
      spec.grid_keys.push_back(point_row_key(config.name, p));
  } else if (!options.sets.empty()) {
    throw UsageError("--set: needs --config (it changes the grid that orders the rows)");
  }
  std::vector<CsvInput> inputs;
  for (const auto& path : options.inputs) inputs.push_back(read_input_csv(path));
  const MergeResult merged = merge_csv_tables(inputs, experiment_kinds(), spec);

  const std::filesystem::path parent = std::filesystem::path(options.out).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  write_file_atomic(options.out, format_csv(merged.table));
  if (merged.gpus.size() > 1)
    fmt::print(stderr, "kvb merge: note: the rows come from different GPUs ({})\n", fmt::join(merged.gpus, ", "));
  fmt::print("kvb merge: {} rows from {} files -> {}\n", merged.table.rows.size(), inputs.size(), options.out);
  return 0;
}

}  // namespace kvb::cli
