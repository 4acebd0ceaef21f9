// SIGINT and SIGTERM (harness/sweep/interrupt.h): a kvb process signalled while it writes a file (KVB_TEST_STOP_AT)
// leaves the old file and no temporary and exits 130 / 143; reproduce stops between its steps, says what it finished
// and resumes; worker processes get the signal passed on.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "harness/kinds/registry.h"
#include "harness/measure/device_info.h"
#include "harness/sweep/interrupt.h"
#include "harness/sweep/workers.h"
#include "test_regression_support.h"
#include "test_sweep_support.h"

namespace kvb {
namespace {

namespace fs = std::filesystem;
using test::Background;
using test::read_text;
using test::run_in_background;
using test::signal_and_wait;
using test::TempDir;
using test::wait_stopped;
using test::write_text;

/// Files in `dir` whose name holds ".tmp." (a temporary of the writer).
std::vector<std::string> temporaries(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().find(".tmp.") != std::string::npos) out.push_back(e.path().string());
  return out;
}

mode_t mode_of(const std::string& path) {
  struct stat st {};
  ::stat(path.c_str(), &st);
  return st.st_mode & 0777;
}

struct Signal {
  int number, code;
};
const Signal kSignals[] = {{SIGINT, 130}, {SIGTERM, 143}};

/// A merge of a large enough input over an existing OUT of mode 0600 (replaced with --force).
struct MergeInterrupted : ::testing::TestWithParam<Signal> {
  TempDir dir;
  std::string in = dir.file("in.csv"), out = dir.file("out.csv");
  void SetUp() override {
    const ExperimentKind& kind = find_experiment_kind("decode");
    const auto grid = test::decode_grid(kind, "1, 2, 4, 8, 16, 32, 64, 128, 256, 512", "1, 2, 4, 8, 16, 32, 64");
    write_text(in, format_csv(test::synthetic_table(kind, "big", grid, test::scaled(1.0, 0.01))));
    write_text(out, "old content\n");
    ::chmod(out.c_str(), 0600);
  }
};

TEST_P(MergeInterrupted, LeavesTheOldFileAndNoTemporary) {
  const Background bg =
      run_in_background(dir, {"merge", out, in, "--force"}, {"KVB_TEST_STOP_AT=write"});
  ASSERT_TRUE(wait_stopped(bg.pid)) << read_text(bg.err);
  ASSERT_EQ(temporaries(dir.path()).size(), 1u) << "the temporary exists while the file is written";
  EXPECT_EQ(signal_and_wait(bg.pid, GetParam().number), GetParam().code) << read_text(bg.err);
  EXPECT_EQ(read_text(out), "old content\n");
  EXPECT_EQ(mode_of(out), 0600u);
  EXPECT_TRUE(temporaries(dir.path()).empty());
  EXPECT_NE(read_text(bg.err).find("temporary files removed"), std::string::npos) << read_text(bg.err);

  // Run again: the file is replaced whole, its mode kept.
  const test::Result r = test::run_kvb(dir, "merge '" + out + "' '" + in + "' --force");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_text(out), read_text(in));
  EXPECT_EQ(mode_of(out), 0600u);
}

TEST_P(MergeInterrupted, CapacityLeavesTheOldFileAndNoTemporaryToo) {
  const std::string cap = dir.file("cap.csv");
  write_text(cap, "old capacity\n");
  const Background bg = run_in_background(dir, {"capacity", "--budget-gib", "80", "--no-probe", "--out", cap, "--force"},
                                          {"KVB_TEST_STOP_AT=write"});
  ASSERT_TRUE(wait_stopped(bg.pid)) << read_text(bg.err);
  EXPECT_EQ(signal_and_wait(bg.pid, GetParam().number), GetParam().code) << read_text(bg.err);
  EXPECT_EQ(read_text(cap), "old capacity\n");
  EXPECT_TRUE(temporaries(dir.path()).empty());
}

INSTANTIATE_TEST_SUITE_P(Signals, MergeInterrupted, ::testing::ValuesIn(kSignals),
                         [](const auto& info) { return info.param.number == SIGINT ? "SIGINT" : "SIGTERM"; });

struct ReproduceInterrupted : ::testing::TestWithParam<Signal> {
  void SetUp() override {
    if (cuda_device_present()) GTEST_SKIP() << "a CUDA device is present: kvb reproduce would run the GPU sweeps";
  }
  TempDir dir;
  std::string out_dir = dir.file("repro");

  /// Runs `kvb reproduce --no-plots` into out_dir until it stops itself at KVB_TEST_STOP_AT=`where`, signals it with
  /// the test's signal and expects the signal's exit status; `bg` is the run (its output files).
  void stop_and_signal(const char* where, Background& bg) {
    bg = run_in_background(dir, {"reproduce", "--no-plots", "--out-dir", out_dir},
                           {std::string("KVB_TEST_STOP_AT=") + where});
    ASSERT_TRUE(wait_stopped(bg.pid)) << read_text(bg.err);
    EXPECT_EQ(signal_and_wait(bg.pid, GetParam().number), GetParam().code) << read_text(bg.out) << read_text(bg.err);
  }
};

TEST_P(ReproduceInterrupted, StopsBetweenStepsSaysWhatItFinishedAndResumes) {
  // Stopped before its second step (the capacity model), then signalled.
  Background bg;
  ASSERT_NO_FATAL_FAILURE(stop_and_signal("step", bg));
  const std::string out = read_text(bg.out);
  EXPECT_NE(out.find("stopped by " + signal_name(GetParam().number) + " between steps"), std::string::npos) << out;
  EXPECT_NE(out.find("finished: kvb check-golden"), std::string::npos) << out;
  EXPECT_NE(out.find("not run:  kvb capacity"), std::string::npos) << out;
  EXPECT_NE(out.find("not run:  claims"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(out_dir + "/capacity_model.csv"));

  // The same command again runs to its end.
  const test::Result r = test::run_kvb(dir, "reproduce --no-plots --out-dir '" + out_dir + "'");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(fs::is_regular_file(out_dir + "/capacity_model.csv"));
}

TEST_P(ReproduceInterrupted, AGoldenCheckStoppedBetweenFilesIsNotFinished) {
  // Signalled after the first golden case: the check stops there, and the run says it stopped it.
  Background bg;
  ASSERT_NO_FATAL_FAILURE(stop_and_signal("golden_file", bg));
  const std::string out = read_text(bg.out);
  EXPECT_NE(out.find("stopped:  kvb check-golden"), std::string::npos) << out;
  EXPECT_EQ(out.find("finished: kvb check-golden"), std::string::npos) << out;
  EXPECT_NE(out.find("not run:  kvb capacity"), std::string::npos) << out;
  EXPECT_NE(read_text(bg.err).find("1 of "), std::string::npos) << read_text(bg.err);
}

TEST_P(ReproduceInterrupted, AStepUnderWayFinishesItsFileWhole) {
  // Signalled inside the capacity model's write: the write completes, the claims do not run.
  Background bg;
  ASSERT_NO_FATAL_FAILURE(stop_and_signal("write", bg));
  const std::string out = read_text(bg.out);
  EXPECT_NE(out.find("finished: kvb capacity"), std::string::npos) << out;
  EXPECT_NE(out.find("not run:  claims"), std::string::npos) << out;
  const std::string whole = dir.file("whole.csv");
  ASSERT_EQ(test::run_kvb(dir, "capacity --config experiments/capacity.toml --budget-gib 135 --no-probe --out '" +
                                   whole + "'")
                .code,
            0);
  EXPECT_EQ(read_result_csv(out_dir + "/capacity_model.csv", result_schemas()).rows.size(),
            read_result_csv(whole, result_schemas()).rows.size());
  EXPECT_TRUE(temporaries(out_dir).empty());
}

/// The child processes of `pid` (/proc/PID/task/PID/children).
std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> out;
  std::istringstream in(read_text("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children"));
  for (pid_t c; in >> c;) out.push_back(c);
  return out;
}

/// True when process `pid` is stopped (state T in /proc/PID/stat).
bool stopped(pid_t pid) {
  const std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'T';
}

TEST_P(ReproduceInterrupted, ASignalDuringTheFiguresLeavesEveryFigureWhole) {
  if (std::system("python3 -c 'import matplotlib' >/dev/null 2>&1") != 0) GTEST_SKIP() << "no matplotlib";
  // make_all stops itself inside its first figure's temporary file; kvb reproduce is signalled then, and passes the
  // signal on: the figure under way is finished, no other is begun, the run says so and exits 130 / 143.
  const Background bg = run_in_background(dir, {"reproduce", "--out-dir", out_dir}, {"KVB_TEST_STOP_AT=savefig"});
  const fs::path figures = fs::path(out_dir) / "figures";
  std::vector<pid_t> python;
  for (int i = 0; i < 1200 && (python.size() != 1 || !stopped(python[0])); ++i) {
    ::usleep(100000);
    python = children_of(bg.pid);
  }
  ASSERT_EQ(python.size(), 1u) << read_text(bg.out) << read_text(bg.err);
  ASSERT_TRUE(stopped(python[0])) << read_text(bg.out);
  ASSERT_FALSE(temporaries(figures).empty()) << read_text(bg.out);
  ::kill(bg.pid, GetParam().number);
  ::usleep(200000);  // kvb passes the signal on to make_all, still stopped
  ::kill(python[0], SIGCONT);
  int status = 0;
  ASSERT_EQ(::waitpid(bg.pid, &status, 0), bg.pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), GetParam().code) << read_text(bg.out) << read_text(bg.err);
  const std::string out = read_text(bg.out);
  EXPECT_NE(out.find("stopped:  python3 plots/make_all.py"), std::string::npos) << out;
  EXPECT_NE(out.find("not run:  claims"), std::string::npos) << out;
  EXPECT_NE(out.find("made 1 figure(s): decode_latency"), std::string::npos) << out;
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(figures)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"decode_latency.pdf", "decode_latency.png"}));
  EXPECT_EQ(read_text((figures / "decode_latency.pdf").string()).rfind("%PDF", 0), 0u);
  EXPECT_NE(read_text((figures / "decode_latency.pdf").string()).find("%%EOF"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Signals, ReproduceInterrupted, ::testing::ValuesIn(kSignals),
                         [](const auto& info) { return info.param.number == SIGINT ? "SIGINT" : "SIGTERM"; });

TEST(Interrupt, BetweenStepsModeRecordsTheSignalAndGivesItsExitCode) {
  {
    const InterruptHandlers handlers(InterruptMode::between_steps);
    EXPECT_EQ(interrupt_signal(), 0);
    ::raise(SIGTERM);
    EXPECT_EQ(interrupt_signal(), SIGTERM);
    EXPECT_EQ(interrupt_exit_code(), 143);
    EXPECT_THROW(InterruptHandlers{InterruptMode::immediate}, std::logic_error);
  }
  EXPECT_EQ(interrupt_signal(), 0);  // forgotten with the handlers
  EXPECT_EQ(signal_name(SIGINT), "SIGINT");
}

TEST(Interrupt, WorkersGetTheSignalPassedOn) {
  // The worker signals its parent (this process), whose handler records it; run_workers passes it on, and the
  // worker's trap exits 7.
  const InterruptHandlers handlers(InterruptMode::between_steps);
  const std::vector<int> codes = run_workers(
      {{{"/bin/sh", "-c",
         "trap 'echo got TERM; exit 7' TERM; kill -TERM $PPID; i=0; while [ $i -lt 300 ]; do sleep 0.1; "
         "i=$((i+1)); done; exit 0"},
        "[w] "}},
      nullptr);
  EXPECT_EQ(codes, std::vector<int>{7});
  EXPECT_EQ(interrupt_signal(), SIGTERM);
}

TEST(Interrupt, AStopAtOnceWaitsForItsChildrenToTidyUp) {
  // A process stopped at once (immediate mode, or a second signal) passes the signal to its registered child and
  // exits only after the child has finished its own clean-up (here: half a second, then removing its file).
  TempDir dir;
  const std::string file = dir.file("child_temporary");
  const pid_t stopped = ::fork();
  ASSERT_GE(stopped, 0);
  if (stopped == 0) {
    const InterruptHandlers handlers(InterruptMode::immediate);
    const pid_t child = ::fork();
    if (child == 0) {
      const std::string script = "trap 'sleep 0.5; rm -f " + file + "; exit 3' INT; touch " + file +
                                 "; while :; do sleep 0.05; done";
      ::execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    const RegisteredChild registered(child);
    for (int i = 0; i < 500 && !fs::exists(file); ++i) ::usleep(10000);
    ::raise(SIGINT);
    ::_exit(1);  // not reached: the handler exits 130
  }
  int status = 0;
  ASSERT_EQ(::waitpid(stopped, &status, 0), stopped);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  EXPECT_FALSE(fs::exists(file)) << "kvb exited before its child had removed its temporary";
}

}  // namespace
}  // namespace kvb
