// A peer decode point through the peer runner (peer_point.h).
#include "harness/kinds/peer_point.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "byte_model/byte_model.h"
#include "harness/kinds/entry_dtypes.h"
#include "harness/kinds/runner_support.h"
#include "core/tolerances.h"
#include "harness/measure/gpu_clock.h"
#include "harness/sweep/child_process.h"
#include "harness/sweep/csv.h"
#include "harness/workloads/check_support.h"

namespace kvb {
namespace {

namespace fs = std::filesystem;

/// Seconds a probe of every peer may take (it imports torch and each package once).
constexpr double kProbeTimeoutSeconds = 300;

/// A new empty folder under the system's temporary folder, removed with the object.
class TempFolder {
 public:
  TempFolder() {
    std::string pattern = (fs::temp_directory_path() / "kvb-peer-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("cannot create a temporary folder for a peer point");
    path_ = pattern;
  }
  ~TempFolder() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::vector<std::string> runner_args(const PeerRunner& r) {
  std::vector<std::string> a{r.python, r.script};
  for (const auto& m : r.peer_modules) a.insert(a.end(), {"--peer-module", m});
  return a;
}

/// The phase the runner last wrote ("" before it wrote one).
std::string read_phase(const std::string& path) {
  std::ifstream f(path);
  std::string phase;
  std::getline(f, phase);
  return phase;
}

/// The one line a failed runner left, prefixed.
std::string runner_failure(const ChildResult& c, const PeerRunner& r) {
  if (c.timed_out) return fmt::format("failed: peer runner stopped after {:g} s", r.timeout_s);
  const std::string line = last_line(c.output);
  if (c.exit_code == 2) return "failed: peer runner refused the request: " + line;
  return fmt::format("failed: peer runner exited with {}{}{}", c.exit_code, line.empty() ? "" : ": ", line);
}

}  // namespace

PeerRunner default_peer_runner() {
  PeerRunner r;
  if (const char* py = std::getenv("KVB_PYTHON"); py && *py) r.python = py;
  const std::string here = "peers/run_peer.py";
  if (fs::is_regular_file(here)) r.script = here;
  else if (fs::is_regular_file(KVB_SOURCE_PEER_RUNNER)) r.script = KVB_SOURCE_PEER_RUNNER;
  else
    throw UsageError(fmt::format("peer runner: neither {} (run kvb from the repository root) nor {} exists", here,
                                 KVB_SOURCE_PEER_RUNNER));
  return r;
}

const std::vector<std::string>& peer_result_columns() {
  static const std::vector<std::string> cols{"package", "package_version", "torch_version", "triton_version",
                                             "peer_conventions"};
  return cols;
}

std::map<std::string, PeerProbe> probe_peers(const PeerRunner& runner, const std::vector<std::string>& variants,
                                             int device) {
  std::map<std::string, PeerProbe> out;
  if (variants.empty()) return out;
  std::vector<std::string> args = runner_args(runner);
  args.insert(args.end(), {"probe", "--device", std::to_string(device)});
  args.insert(args.end(), variants.begin(), variants.end());
  ChildResult c;
  std::string failure;
  try {
    c = run_child(args, kProbeTimeoutSeconds);
    if (c.timed_out) failure = fmt::format("the peer runner's probe took more than {:g} s", kProbeTimeoutSeconds);
    else if (c.exit_code != 0)
      failure = fmt::format("the peer runner's probe exited with {}: {}", c.exit_code, last_line(c.output));
  } catch (const std::runtime_error& e) {
    failure = fmt::format("the peer runner cannot be started ({}): {}", runner.python, e.what());
  }
  std::istringstream lines(c.output);
  for (std::string line; std::getline(lines, line);) {
    const size_t t1 = line.find('\t'), t2 = t1 == std::string::npos ? t1 : line.find('\t', t1 + 1);
    if (t2 == std::string::npos) continue;
    out[line.substr(0, t1)] = {line.substr(t1 + 1, t2 - t1 - 1) == "ok", line.substr(t2 + 1)};
  }
  for (const auto& v : variants)
    if (!out.count(v))
      out[v] = {false, failure.empty() ? "the peer runner's probe said nothing about it" : failure};
  return out;
}

Row run_peer_decode(const PeerDecodeRequest& req, const PeerRunner& runner, const SweepContext& ctx) {
  TempFolder folder;
  const std::string request = write_peer_request(req, folder.path());
  const std::string phase_file = (fs::path(folder.path()) / "phase").string();
  const std::string result_file = (fs::path(folder.path()) / "result.csv").string();

  std::vector<std::string> args = runner_args(runner);
  args.insert(args.end(), {"run", request, "--out", result_file});
  ClockSample before, after;
  std::string seen;
  const ChildResult child = run_child(args, runner.timeout_s, [&] {
    const std::string phase = read_phase(phase_file);
    if (phase == seen) return;
    if (phase == "timing") before = sample_sm_clock(req.device);
    if (phase == "done") after = sample_sm_clock(req.device);
    seen = phase;
  });
  if (seen != "done") after = sample_sm_clock(req.device);

  Row r;
  if (child.exit_code != 0 || !fs::is_regular_file(result_file)) {
    r.emplace_back("status",
                   child.exit_code == 0 ? "failed: peer runner wrote no result" : runner_failure(child, runner));
    return r;
  }
  const CsvTable result = read_csv_file(result_file);
  if (result.rows.size() != 1) {
    r.emplace_back("status", "failed: peer runner's result.csv does not hold one row");
    return r;
  }
  std::map<std::string, std::string> v;
  for (size_t i = 0; i < result.header.size(); ++i) v[result.header[i]] = result.rows[0][i];
  const std::string status = v["status"].empty() ? "failed: peer runner gave no status" : v["status"];

  r.emplace_back("output_dtype", to_string(OutputDtype::bf16));
  r.emplace_back("entry_dtypes", entry_dtypes(req.variant, BufferForm::delta));  // empty: a peer buffers nothing
  for (const char* col : {"max_rel_err", "max_rel_err_o"}) r.emplace_back(col, v[col]);
  for (const auto& col : peer_result_columns()) r.emplace_back(col, v[col]);
  if (status != "ok") {
    r.emplace_back("status", status);
    return r;
  }
  // The runner judged its check with the tolerances it was given; the same verdict again on the errors it reports.
  const double state_err = std::strtod(v["max_rel_err"].c_str(), nullptr);
  const double o_err = std::strtod(v["max_rel_err_o"].c_str(), nullptr);
  const std::string verdict = v["max_rel_err"].empty() || v["max_rel_err_o"].empty()
                                  ? "the runner reported no errors"
                                  : check_verdict(true, state_err, o_err, tol::output(OutputDtype::bf16));
  if (!verdict.empty()) {
    r.emplace_back("status", "failed: check failed: " + verdict);
    return r;
  }
  // discarded_samples: empty when the runner could not read the SM clock (no pynvml), as in kvb's rows without NVML.
  for (const char* col : {"latency_us_median", "latency_us_p10", "latency_us_p90", "samples", "noise_pct",
                          "sample_stop", "steps_per_sample", "discarded_samples"})
    r.emplace_back(col, v[col]);
  char* end = nullptr;
  const double median = std::strtod(v["latency_us_median"].c_str(), &end);
  if (v["latency_us_median"].empty() || *end != '\0' || !(median > 0)) {
    r.emplace_back("status", "failed: peer runner gave no latency");
    return r;
  }
  const ByteCount model = recurrent_decode_bytes(req.shape, req.batch, OutputDtype::bf16);
  add_model_columns(r, "", "latency_over_floor", model, median, ctx);
  RangeMeasurement dram;
  dram.status.code = ProfilerStatus::Code::error;
  dram.status.reason = "skipped (peer kernels run in the runner's process)";
  add_run_columns(r, ctx, req.groups, std::strtod(v["device_bytes"].c_str(), nullptr), dram, 1.0, model, before,
                  after);
  return r;
}

}  // namespace kvb
