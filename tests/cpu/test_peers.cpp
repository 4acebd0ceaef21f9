// The peers without a GPU: the check case kvb writes for the peer runner, the sampling rule its request carries, the
// runner run end to end on stand-in peers (tests/peers/standin_peer.py: the gated delta rule in numpy, right, with a
// wrong state layout, with wrong slots, unavailable), the rows kvb makes of its answers, the probe's skip lines, the
// decode kind's peer variants, and `kvb sweep` refusing what a peer cannot take.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "core/tolerances.h"
#include "harness/kinds/peer_point.h"
#include "harness/kinds/peer_variants.h"
#include "harness/kinds/registry.h"
#include "harness/measure/sampling.h"
#include "harness/sweep/csv.h"
#include "harness/sweep/child_process.h"
#include "harness/sweep/grid.h"
#include "harness/sweep/table_keys.h"
#include "harness/workloads/peer_case.h"
#include "test_sweep_support.h"

namespace kvb {
namespace {

using test::TempDir;

const std::string kStandIn = std::string(KVB_SOURCE_DIR) + "/tests/peers/standin_peer.py";

/// The runner of the source tree with the stand-in peers; a short time budget.
PeerRunner standin_runner() {
  PeerRunner r;
  r.script = std::string(KVB_SOURCE_DIR) + "/peers/run_peer.py";
  r.peer_modules = {kStandIn};
  r.timeout_s = 120;
  return r;
}

/// True when python3 imports numpy (the runner reads its case with it).
bool python_with_numpy() {
  static const bool ok = run_child({"python3", "-c", "import numpy"}, 60).exit_code == 0;
  return ok;
}

#define KVB_NEED_NUMPY() \
  if (!python_with_numpy()) GTEST_SKIP() << "python3 with numpy is needed to run the peer runner"

/// A small point: H = 2, HV = 4, K = 32, V = 16, batch 5, two layers, a quick sampling rule.
PeerDecodeRequest small_request(const std::string& variant) {
  PeerDecodeRequest r;
  r.variant = variant;
  r.shape = GdnShape{2, 4, 32, 16};
  r.batch = 5;
  r.layers = 2;
  r.groups = 1;
  r.seed = 7;
  r.l2_bytes = 1 << 20;
  r.sampling.min_samples = 3;
  r.sampling.max_seconds = 0.2;
  return r;
}

SweepContext context() {
  SweepContext ctx;
  ctx.copy_gbps = 1000;
  ctx.read_gbps = 1200;
  return ctx;
}

std::map<std::string, std::string> as_map(const Row& r) {
  std::map<std::string, std::string> m;
  for (const auto& [k, v] : r) m[k] = v;
  return m;
}

std::vector<double> read_floats(const std::string& path, size_t n) {
  std::vector<float> x(n);
  std::ifstream f(path, std::ios::binary);
  f.read(reinterpret_cast<char*>(x.data()), std::streamsize(n * sizeof(float)));
  EXPECT_TRUE(f.good()) << path;
  return {x.begin(), x.end()};
}

TEST(PeerProtocol, SamplerStatisticsMatchTheSharedCases) {
  // The peer runner's copy of the rule (peers/protocol.py) is checked against the same file.
  const CsvTable cases = read_csv_file(std::string(KVB_TEST_DATA_DIR) + "/peers/sampling_cases.csv");
  ASSERT_FALSE(cases.rows.empty());
  for (const auto& row : cases.rows) {
    std::vector<double> values;
    std::istringstream in(row[0]);
    for (double x; in >> x;) values.push_back(x);
    const SampleStats s = summarize(values);
    EXPECT_NEAR(s.median, std::stod(row[1]), 1e-12) << row[0];
    EXPECT_NEAR(s.p10, std::stod(row[2]), 1e-12) << row[0];
    EXPECT_NEAR(s.p90, std::stod(row[3]), 1e-12) << row[0];
    EXPECT_NEAR(s.noise_pct, std::stod(row[4]), 1e-9) << row[0];
    EXPECT_EQ(s.samples, int(values.size()));
  }
}

TEST(PeerCase, WritesEveryArrayWithTheRowsItChecks) {
  TempDir dir;
  const GdnShape s{2, 4, 32, 16};
  const PeerDecodeCase c = write_peer_decode_case(s, 7, 3, dir.path().string());
  EXPECT_EQ(c.check_rows, (std::vector<int>{0, 3, 6}));
  std::map<std::string, PeerTensor> t;
  for (const auto& x : c.tensors) t[x.name] = x;
  for (const char* name : {"q", "k", "v", "a", "b", "A_log", "dt_bias", "scale", "slots", "check_states", "ref_o",
                           "ref_states"}) {
    ASSERT_TRUE(t.count(name)) << name;
    int64_t n = 1;
    for (int64_t d : t[name].shape) n *= d;
    const int64_t bytes = t[name].dtype == "float64" ? 8 : 4;
    EXPECT_EQ(int64_t(std::filesystem::file_size(dir.file(t[name].file))), n * bytes) << name;
  }
  EXPECT_EQ(t["q"].shape, (std::vector<int64_t>{7, 2, 32}));
  EXPECT_EQ(t["ref_states"].shape, (std::vector<int64_t>{3, 4, 32, 16}));
  EXPECT_EQ(t["ref_states"].dtype, "float64");
  // Inputs are drawn, never zeros; the reference moved every checked state.
  const std::vector<double> q = read_floats(dir.file("q.bin"), 7 * 2 * 32);
  size_t zeros = 0;
  for (double x : q) zeros += x == 0.0;
  EXPECT_LT(zeros, q.size() / 10);
  std::vector<double> before = read_floats(dir.file("check_states.bin"), 3 * 4 * 32 * 16);
  std::vector<double> after(before.size());
  std::ifstream f(dir.file("ref_states.bin"), std::ios::binary);
  f.read(reinterpret_cast<char*>(after.data()), std::streamsize(after.size() * sizeof(double)));
  EXPECT_NE(before, after);
}

TEST(PeerCase, SlotsArePermutationsThatMoveEveryCheckedRow) {
  for (int batch : {2, 3, 5, 64}) {
    for (uint64_t seed = 0; seed < 20; ++seed) {
      std::mt19937_64 rng(seed);
      const std::vector<int> rows = peer_check_rows(batch);
      const std::vector<int32_t> slots = peer_slots(batch, rows, rng);
      std::vector<int32_t> sorted = slots;
      std::sort(sorted.begin(), sorted.end());
      for (int i = 0; i < batch; ++i) ASSERT_EQ(sorted[size_t(i)], i);
      for (int r : rows) EXPECT_NE(slots[size_t(r)], r) << "batch " << batch << " seed " << seed;
    }
  }
  std::mt19937_64 rng(1);
  EXPECT_EQ(peer_slots(1, peer_check_rows(1), rng), (std::vector<int32_t>{0}));
}

TEST(PeerPoint, StandInMatchingTheReferenceIsTimedIntoADecodeRow) {
  KVB_NEED_NUMPY();
  const auto r = as_map(run_peer_decode(small_request("standin_recurrent"), standin_runner(), context()));
  ASSERT_EQ(r.count("status"), 0u) << r.at("status");  // ok: the engine writes "ok"
  EXPECT_LE(std::stod(r.at("max_rel_err")), tol::kStateFp32);
  EXPECT_LE(std::stod(r.at("max_rel_err_o")), tol::output(OutputDtype::bf16));
  EXPECT_GE(std::stoi(r.at("samples")), 3);
  const double median = std::stod(r.at("latency_us_median"));
  EXPECT_GT(median, 0.0);
  EXPECT_LE(std::stod(r.at("latency_us_p10")), median);
  EXPECT_GE(std::stod(r.at("latency_us_p90")), median);
  EXPECT_TRUE(r.at("sample_stop") == "noise" || r.at("sample_stop") == "time");
  // Empty where the runner cannot read the SM clock (no pynvml, no NVML), else the samples it discarded.
  const std::string discarded = r.at("discarded_samples");
  EXPECT_EQ(discarded.find_first_not_of("0123456789"), std::string::npos) << discarded;
  // The floor is kvb's: recurrent decode's bytes at this run's bandwidths.
  EXPECT_GT(std::stod(r.at("floor_us")), 0.0);
  EXPECT_NEAR(std::stod(r.at("latency_over_floor")), median / std::stod(r.at("floor_us")), 1e-3 * median);
  EXPECT_EQ(r.at("copy_gbps"), "1000");
  EXPECT_EQ(r.at("l2_rotation"), "1");
  EXPECT_EQ(r.count("dram_read_bytes"), 0u);
  EXPECT_EQ(r.at("cupti_status"), "skipped (peer kernels run in the runner's process)");
  EXPECT_EQ(r.at("package"), "numpy");
  EXPECT_FALSE(r.at("package_version").empty());
  EXPECT_EQ(r.at("peer_conventions"), "state [slots, HV, V, K] fp32 in place, pool slot = slots[row]");
  EXPECT_EQ(r.at("output_dtype"), "bf16");
  EXPECT_EQ(r.at("entry_dtypes"), "");  // a peer buffers nothing
  // Every column is one the decode kind declares.
  const ExperimentKind& decode = find_experiment_kind("decode");
  for (const auto& [name, value] : r)
    EXPECT_NE(std::find(decode.result_columns.begin(), decode.result_columns.end(), name),
              decode.result_columns.end())
        << name;
}

TEST(PeerRequest, CarriesTheSamplersClockFloorToTheRunner) {
  KVB_NEED_NUMPY();
  TempDir dir;
  PeerDecodeRequest req = small_request("standin_recurrent");
  req.sampling.min_clock_fraction = 0.8;
  req.sampling.max_throttled_seconds = 12.5;
  const std::string path = write_peer_request(req, dir.path().string());
  const ChildResult c = run_child(
      {"python3", "-c",
       "import sys; sys.path.insert(0, sys.argv[1]); from peers.request import load_request; "
       "r = load_request(sys.argv[2]).sampling; print(r.min_clock_fraction, r.max_throttled_seconds, r.min_samples)",
       KVB_SOURCE_DIR, path},
      60);
  ASSERT_EQ(c.exit_code, 0) << c.output;
  EXPECT_EQ(c.output, "0.8 12.5 3\n");
}

TEST(PeerPoint, StandInsCalledWithTheWrongLayoutOrSlotsFailTheCheckUntimed) {
  KVB_NEED_NUMPY();
  for (const char* variant : {"standin_wrong_layout", "standin_wrong_slot"}) {
    const auto r = as_map(run_peer_decode(small_request(variant), standin_runner(), context()));
    ASSERT_TRUE(r.count("status")) << variant;
    EXPECT_EQ(r.at("status").rfind("failed: check failed: state error", 0), 0u) << variant << ": " << r.at("status");
    EXPECT_GT(std::stod(r.at("max_rel_err")), 1e-2) << variant;
    EXPECT_EQ(r.count("latency_us_median"), 0u) << variant;
  }
}

TEST(PeerPoint, AnUnavailablePeerIsSkippedWithItsReason) {
  KVB_NEED_NUMPY();
  const auto r = as_map(run_peer_decode(small_request("standin_unavailable"), standin_runner(), context()));
  EXPECT_EQ(r.at("status"), "skipped: the stand-in's package is not installed (a test)");
}

TEST(PeerPoint, ARequestTheRunnerRefusesFailsWithItsOneLineReason) {
  KVB_NEED_NUMPY();
  const auto r = as_map(run_peer_decode(small_request("no_such_peer"), standin_runner(), context()));
  EXPECT_EQ(r.at("status").rfind("failed: peer runner refused the request: run_peer.py: variant = 'no_such_peer' is "
                                 "not a peer (allowed: fla_recurrent",
                                 0),
            0u)
      << r.at("status");
}

TEST(PeerProbe, SaysWhichPeersRunAndWhyTheOthersDoNot) {
  KVB_NEED_NUMPY();
  const auto p = probe_peers(standin_runner(), {"standin_recurrent", "standin_unavailable", "fla_recurrent"}, 0);
  EXPECT_TRUE(p.at("standin_recurrent").ok);
  EXPECT_EQ(p.at("standin_recurrent").text.rfind("numpy ", 0), 0u) << p.at("standin_recurrent").text;
  EXPECT_FALSE(p.at("standin_unavailable").ok);
  EXPECT_EQ(p.at("standin_unavailable").text, "the stand-in's package is not installed (a test)");
  // fla needs torch, triton, a GPU and the package: its versions when all are here, else the one that is missing.
  EXPECT_FALSE(p.at("fla_recurrent").text.empty());
}

TEST(PeerProbe, ARunnerThatCannotStartSkipsEveryPeerWithTheReason) {
  PeerRunner r = standin_runner();
  r.python = "/nonexistent/python3";
  const auto p = probe_peers(r, {"fla_recurrent", "flashinfer_recurrent"}, 0);
  for (const char* v : {"fla_recurrent", "flashinfer_recurrent"}) {
    EXPECT_FALSE(p.at(v).ok);
    EXPECT_NE(p.at(v).text.find("cannot be started (/nonexistent/python3)"), std::string::npos) << p.at(v).text;
  }
}

TEST(PeerVariants, TheRunnerKnowsTheDecodeKindsPeers) {
  KVB_NEED_NUMPY();
  const ChildResult c = run_child({"python3", std::string(KVB_SOURCE_DIR) + "/peers/run_peer.py", "list"}, 120);
  ASSERT_EQ(c.exit_code, 0) << c.output;
  std::vector<std::string> listed;
  std::istringstream lines(c.output);
  for (std::string line; std::getline(lines, line);) listed.push_back(line.substr(0, line.find('\t')));
  EXPECT_EQ(listed, decode_peer_variants());
}

TEST(PeerVariants, PeerPointsHaveNoBufferLaunchOrTileAxis) {
  const ExperimentKind& decode = find_experiment_kind("decode");
  std::vector<AxisValues> axes;
  for (const AxisSpec& a : decode.axes) axes.push_back({a.name, a.defaults});
  axes[0].second = {"recurrent", "fla_recurrent"};
  for (auto& a : axes)
    if (a.first == "launch") a.second = {"plain", "pdl"};
  const std::vector<Point> grid = make_grid(decode, axes);
  size_t peers = 0;
  for (const Point& p : grid) {
    if (p.get("variant") != "fla_recurrent") continue;
    ++peers;
    for (const char* axis : {"buffer_size", "buffer_form", "phase", "launch", "tile"}) EXPECT_EQ(p.get(axis), "");
    EXPECT_EQ(decode.validate(p), "");
  }
  EXPECT_EQ(peers, 1u);
  EXPECT_EQ(grid.size(), 3u);  // recurrent plain and pdl, one fla point
}

TEST(PeerVariants, ADecodeCsvWithoutThePeerColumnsStillResumes) {
  const ExperimentKind& decode = find_experiment_kind("decode");
  CsvTable t;
  for (const auto& c : csv_columns(decode))
    if (std::find(peer_result_columns().begin(), peer_result_columns().end(), c) == peer_result_columns().end())
      t.header.push_back(c);
  t.rows.push_back(std::vector<std::string>(t.header.size(), ""));
  t.rows[0][0] = "decode_latency";
  EXPECT_TRUE(upgrade_older_header(decode, t, "old.csv"));
  EXPECT_EQ(t.header, csv_columns(decode));
  EXPECT_EQ(t.rows[0].size(), t.header.size());
}

TEST(PeerCli, DryRunListsThePeerPointsAndRefusesWhatAPeerCannotTake) {
  TempDir dir;
  const std::string config = std::string(KVB_SOURCE_DIR) + "/experiments/decode_latency.toml";
  const std::string base = "sweep --config '" + config + "' --out '" + dir.file("peers.csv") + "' --dry-run ";
  test::Result r = test::run_kvb(dir, base + "--set variant=fla_recurrent,recurrent --set batch=1,512");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("variant=fla_recurrent,batch=512,layers=36"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("variant=recurrent,batch=512,launch=pdl"), std::string::npos) << r.out;
  r = test::run_kvb(dir, base + "--set variant=fla_triton");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("variant = 'fla_triton' is not known (allowed: recurrent, kvbuffer, fla_recurrent, "
                       "flashinfer_recurrent, replayssm_decode)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(test::count_lines(r.err), 1u) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("peers.csv")));
}

}  // namespace
}  // namespace kvb
