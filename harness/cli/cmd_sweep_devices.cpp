// `kvb sweep --devices`: one worker `kvb sweep` per GPU, each on its share of the points, merged into --out
// (sweep_setup.h). Workers write part files in OUT.parts/; rows an interrupted run left there are recovered first,
// so running the same command again resumes like a one-GPU sweep.
#include <algorithm>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/cli/sweep_setup.h"
#include "harness/measure/device_info.h"
#include "harness/sweep/csv.h"
#include "harness/sweep/interrupt.h"
#include "harness/sweep/merge.h"
#include "harness/sweep/sweep.h"
#include "harness/sweep/table_keys.h"
#include "harness/sweep/workers.h"

namespace kvb::cli {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> part_files(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".csv") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> worker_args(const SweepCommandOptions& o, int device, const Shard& shard,
                                     const std::string& part) {
  std::vector<std::string> a{current_executable(), "sweep", "--config", o.config};
  for (const auto& s : o.sets) a.insert(a.end(), {"--set", s});
  a.insert(a.end(), {"--l2", o.l2});
  if (o.no_cupti) a.push_back("--no-cupti");
  if (o.min_samples) a.insert(a.end(), {"--min-samples", std::to_string(*o.min_samples)});
  if (o.max_seconds) a.insert(a.end(), {"--max-seconds", fmt::format("{}", *o.max_seconds)});
  a.insert(a.end(), {"--device", std::to_string(device), "--shard", fmt::format("{}/{}", shard.index, shard.count),
                     "--out", part});
  return a;
}

}  // namespace

int run_sweep_on_devices(const SweepCommandOptions& options, const SweepSetup& setup) {
  const ExperimentKind& kind = *setup.kind;
  const std::vector<int> devices = parse_device_list(options.devices, cuda_device_count());
  // A result CSV holds one GPU's runs (harness/sweep/result_csv.h): the workers' GPUs must be of one model.
  const std::string model = query_device_info(devices[0]).name;
  for (const int d : devices)
    if (const std::string name = query_device_info(d).name; name != model)
      throw UsageError(fmt::format("--devices {}: GPU {} is a {} and GPU {} a {} (allowed: GPUs of one model; run a "
                                   "sweep per model)",
                                   options.devices, devices[0], model, d, name));
  const fs::path parts = setup.out + ".parts";
  check_worker_shards(setup.shard, devices.size(), options.devices);

  // 1. The existing output plus whatever an interrupted run left in the parts folder (ok rows win).
  KeyedRows merged(kind, setup.existing);
  const std::vector<fs::path> leftovers = part_files(parts);
  for (const auto& f : leftovers) {
    const CsvTable left = load_resume_table(kind, f.string(), "a part file of --devices,");
    require_resume_experiment(left, setup.config.name, f.string(), "a part file of --devices,");
    for (const auto& row : left.rows) merged.put(row, true);
  }
  if (!leftovers.empty()) {
    write_file_atomic(setup.out, format_csv(merged.table()));
    for (const auto& f : leftovers) fs::remove(f);
    fmt::print(stderr, "kvb sweep: recovered the rows of {} part files from {}\n", leftovers.size(), parts.string());
  }

  // 2. One worker per device on a round-robin share of the points; its part file starts with its points' rows.
  std::vector<WorkerSpec> workers;
  std::vector<std::string> part_paths;
  const int n = int(devices.size());
  for (int k = 0; k < n; ++k) {
    const Shard sub = sub_shard(setup.shard, k, n);
    const std::string part = (parts / ("shard" + sub.tag() + ".csv")).string();
    CsvTable seed{merged.table().header, {}};
    for (const auto& p : shard_points(setup.grid, sub))
      if (const auto* row = merged.find(point_row_key(setup.config.name, p))) seed.rows.push_back(*row);
    if (!seed.rows.empty()) write_file_atomic(part, format_csv(seed));
    workers.push_back(
        {worker_args(options, devices[size_t(k)], sub, part), fmt::format("[gpu {}] ", devices[size_t(k)])});
    part_paths.push_back(part);
  }
  fmt::print(stderr, "kvb sweep: {} points on {} GPUs ({}), one worker each -> {}\n", setup.points.size(), n,
             fmt::join(devices, ","), setup.out);
  const std::vector<int> codes = run_workers(workers, stderr);

  // 3. Merge the workers' rows into the output (new points in grid order), then remove the parts.
  std::map<std::string, std::vector<std::string>> done;
  for (const auto& part : part_paths) {
    CsvTable rows = load_resume_table(kind, part);
    for (auto& row : rows.rows) done[merged.key(row)] = std::move(row);
  }
  for (const auto& p : setup.points) {
    const auto it = done.find(point_row_key(setup.config.name, p));
    if (it != done.end()) merged.put(it->second, false);
  }
  write_file_atomic(setup.out, format_csv(merged.table()));
  for (const auto& part : part_paths) fs::remove(part);
  std::error_code ec;
  fs::remove(parts, ec);

  size_t ok = 0, failed = 0, missing = 0;
  for (const auto& p : setup.points) {
    const auto* row = merged.find(point_row_key(setup.config.name, p));
    if (!row)
      ++missing;
    else if (merged.ok(*row))
      ++ok;
    else
      ++failed;
  }
  int worst = 0;
  for (size_t k = 0; k < codes.size(); ++k) {
    if (codes[k] == 0) continue;
    worst = std::max(worst, codes[k]);
    fmt::print(stderr, "kvb sweep: worker on GPU {} exited with {}\n", devices[k], codes[k]);
  }
  fmt::print("kvb sweep: {} points on {} GPUs: {} ok, {} failed, {} not run; results in {}\n", setup.points.size(), n,
             ok, failed, missing, setup.out);
  if (interrupt_signal()) {
    fmt::print("kvb sweep: stopped by {} between points; {} holds every finished point; run the same command again "
               "to resume\n",
               signal_name(interrupt_signal()), setup.out);
    return interrupt_exit_code();
  }
  return (worst || failed || missing) ? 1 : 0;
}

}  // namespace kvb::cli
