// The `kvb` binary end to end: exit codes, one-line errors, no partial output (harness/cli).
#include <gtest/gtest.h>

#include <filesystem>

#include "cli_runner.h"
#include "harness/kinds/registry.h"
#include "harness/measure/device_info.h"
#include "harness/sweep/experiment_kind.h"
#include "test_sweep_support.h"

namespace kvb {
namespace {

using test::count_lines;
using test::Result;
using test::run_kvb;
using test::TempDir;
using test::write_text;

bool decode_kind_registered() {
  try {
    find_experiment_kind("decode");
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

TEST(Cli, NoSubcommandOrUnknownOptionExits2) {
  TempDir dir;
  EXPECT_EQ(run_kvb(dir, "").code, 2);
  EXPECT_EQ(run_kvb(dir, "frobnicate").code, 2);
  const Result r = run_kvb(dir, "sweep --config x.toml --bogus");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  EXPECT_EQ(run_kvb(dir, "sweep --config x.toml --l2 lukewarm").code, 2);
  EXPECT_EQ(run_kvb(dir, "sweep --config x.toml --min-samples 0").code, 2);
  EXPECT_EQ(run_kvb(dir, "--help").code, 0);
}

TEST(Cli, SweepMissingConfigExits2) {
  TempDir dir;
  Result r = run_kvb(dir, "sweep");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--config"), std::string::npos) << r.err;
  r = run_kvb(dir, "sweep --config '" + dir.file("absent.toml") + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("absent.toml"), std::string::npos) << r.err;
}

TEST(Cli, SweepMalformedConfigExits2WithoutCsv) {
  TempDir dir;
  write_text(dir.file("bad.toml"), "[experiment\nname = \"bad\"\n");
  const std::string csv = dir.file("results/bad.csv");
  const Result r = run_kvb(dir, "sweep --config '" + dir.file("bad.toml") + "' --out '" + csv + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("malformed TOML"), std::string::npos) << r.err;
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("results")));
}

TEST(Cli, SweepHotL2WithPdlPointsExits2WithoutCsv) {
  TempDir dir;
  const std::string csv = dir.file("results/sv.csv");
  const Result r = run_kvb(dir, "sweep --config '" + std::string(KVB_SOURCE_DIR) +
                                    "/experiments/spec_verify.toml' --l2 hot --out '" + csv + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--l2 hot"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("launch = pdl"), std::string::npos) << r.err;
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("results")));
  // Plain launches only: the check passes (the run then needs a GPU, or lists the points).
  EXPECT_EQ(run_kvb(dir, "sweep --config '" + std::string(KVB_SOURCE_DIR) +
                             "/experiments/spec_verify.toml' --l2 hot --set launch=plain --dry-run --out '" + csv + "'")
                .code,
            0);
}

// The tensor-core verify kernel's limits (head dims 128 x 128, tile auto) are refused before anything runs, as the
// raw form with a forced kernel is.
TEST(Cli, SweepTensorCoreVerifyOutsideItsShapesExits2WithoutCsv) {
  TempDir dir;
  const std::string csv = dir.file("results/sv.csv");
  const std::string sweep = "sweep --config '" + std::string(KVB_SOURCE_DIR) + "/experiments/spec_verify.toml' --out '" +
                            csv + "' --dry-run --set verify_kernel=tensor_cores ";
  for (const auto& [set, expected] : std::vector<std::pair<std::string, std::string>>{
           {"--set head_dim_k=64", "takes head_dim_k = head_dim_v = 128 (got 64 x 128"},
           {"--set head_dim_v=64", "(got 128 x 64"},
           {"--set buffer_form=raw", "needs buffer_form = delta"}}) {
    const Result r = run_kvb(dir, sweep + set);
    EXPECT_EQ(r.code, 2) << set;
    EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
    EXPECT_EQ(count_lines(r.err), 1u) << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir.file("results")));
  }
  EXPECT_EQ(run_kvb(dir, sweep).code, 0);  // the committed grid's shape: listed
}

// The decode kind's row order: a spread order needs the delta form, and a word outside its list is named with them.
TEST(Cli, SweepRowOrderOutsideItsFormsExits2WithoutCsv) {
  TempDir dir;
  const std::string csv = dir.file("results/dec.csv");
  const std::string sweep = "sweep --config '" + std::string(KVB_SOURCE_DIR) +
                            "/experiments/decode_state_dtype.toml' --out '" + csv + "' --dry-run --set variant=kvbuffer ";
  for (const auto& [set, expected] : std::vector<std::pair<std::string, std::string>>{
           {"--set row_order=spread --set buffer_form=raw --set state_dtype=fp32",
            "row_order = spread is not supported with buffer_form = raw (allowed with raw: automatic, batch)"},
           {"--set row_order=first", "--set row_order = 'first' is not known (allowed: automatic, batch, spread)"}}) {
    const Result r = run_kvb(dir, sweep + set);
    EXPECT_EQ(r.code, 2) << set;
    EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
    EXPECT_EQ(count_lines(r.err), 1u) << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir.file("results")));
  }
  const Result listed = run_kvb(dir, sweep + "--set row_order=batch,spread");
  EXPECT_EQ(listed.code, 0) << listed.err;
  EXPECT_NE(listed.out.find("row_order=spread"), std::string::npos) << listed.out;
}

/// The committed configs whose experiment name is that of a committed CSV they are compared with write elsewhere by
/// default: a sweep of the CI verify smoke without --out leaves results/spec_verify.csv alone.
TEST(Cli, TheVerifySmokeWritesItsOwnCsvByDefault) {
  TempDir dir;
  const std::string config = std::string(KVB_SOURCE_DIR) + "/experiments/ci_smoke_verify.toml";
  const test::Result r = test::run_kvb(dir, "sweep --config '" + config + "' --dry-run");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("already in results/ci_smoke_verify.csv"), std::string::npos) << r.out;
  const test::Result shard = test::run_kvb(dir, "sweep --config '" + config + "' --dry-run --shard 1/2");
  EXPECT_NE(shard.out.find("already in results/ci_smoke_verify.shard1-of-2.csv"), std::string::npos) << shard.out;
  // Errors about a path the config gave name the config's field, not --out.
  const std::string own = dir.file("own.toml");
  test::write_text(own, "[experiment]\nname = \"mine\"\nout = \"results/decode_latency.csv\"\n[axes]\nbatch = [1]\n");
  const test::Result other = test::run_kvb(dir, "sweep --config '" + own + "' --dry-run");
  EXPECT_EQ(other.code, 2);
  EXPECT_EQ(other.err, "kvb: " + own + ": experiment.out results/decode_latency.csv:2: experiment 'decode_latency' is "
                       "not this sweep's (allowed: a CSV of experiment 'mine' to resume, or a new --out)\n");
}

TEST(Cli, CheckGoldenMalformedFileExits2) {
  TempDir dir;
  write_text(dir.file("broken.gdn"), "# not a gdn-case\nN: two\ntensor q 4 1 1\n");
  Result r = run_kvb(dir, "check-golden '" + dir.file("broken.gdn") + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("broken.gdn"), std::string::npos) << r.err;
  r = run_kvb(dir, "check-golden '" + dir.file("absent.gdn") + "'");
  EXPECT_EQ(r.code, 2);
  // A missing file after a good one: the reason and the allowed files, before anything is checked.
  r = run_kvb(dir, "check-golden '" + std::string(KVB_TEST_DATA_DIR) + "/golden/draft4.gdn' '" + dir.file("absent.gdn") +
                       "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("absent.gdn: cannot read it: No such file or directory (allowed:"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("PASS"), std::string::npos) << r.out;
  EXPECT_EQ(run_kvb(dir, "check-golden").code, 2);  // FILE is required
}

TEST(Cli, CheckGoldenPassesOnTheGoldenCases) {
  TempDir dir;
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(std::string(KVB_TEST_DATA_DIR) + "/golden"))
    if (e.path().extension() == ".gdn") files.push_back(e.path().string());
  ASSERT_FALSE(files.empty());
  std::string args = "check-golden";
  for (const auto& f : files) args += " '" + f + "'";
  const Result r = run_kvb(dir, args);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  for (const auto& f : files) {
    EXPECT_NE(r.out.find(f), std::string::npos) << f;
  }
  EXPECT_EQ(r.out.find("FAIL"), std::string::npos) << r.out;
  if (!cuda_device_present()) {
    EXPECT_EQ(r.out.find("gpu"), std::string::npos) << r.out;
  }
}

TEST(Cli, InfoWorksWithOrWithoutGpu) {
  TempDir dir;
  const Result r = run_kvb(dir, "info");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("CUDA runtime"), std::string::npos) << r.out;
  if (!cuda_device_present()) {
    EXPECT_NE(r.out.find("CUDA devices: none"), std::string::npos) << r.out;
    EXPECT_EQ(run_kvb(dir, "info --gpu-present").code, 1);
  } else {
    EXPECT_NE(r.out.find("copy (bytes read + written)"), std::string::npos) << r.out;
    EXPECT_EQ(run_kvb(dir, "info --gpu-present").code, 0);
  }
}

class CliDecode : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!decode_kind_registered()) GTEST_SKIP() << "the decode experiment kind is not registered in this build";
  }
  TempDir dir;
  std::string config = std::string(KVB_SOURCE_DIR) + "/experiments/decode_latency.toml";
};

TEST_F(CliDecode, DryRunListsPointsWithoutGpu) {
  const std::string csv = dir.file("dry.csv");
  const Result r = run_kvb(dir, "sweep --config '" + config + "' --out '" + csv + "' --dry-run --set batch=1,2");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("variant=kvbuffer,batch=2,buffer_size=64"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("variant=recurrent,batch=1"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(csv));
}

TEST_F(CliDecode, BadValuesExit2NamingTheField) {
  const std::string csv = dir.file("bad.csv");
  const std::string base = "sweep --config '" + config + "' --out '" + csv + "' --dry-run ";
  struct Case {
    std::string set, needle;
  };
  for (const Case& c : {Case{"batch=0", "batch"}, Case{"batch=-1", "batch"}, Case{"buffer_size=0", "buffer_size"},
                        Case{"head_dim_k=48", "head_dim_k"}, Case{"heads_v=24", "heads_v"},
                        Case{"phase=sideways", "phase"}, Case{"flavour=1", "unknown axis 'flavour'"}}) {
    const Result r = run_kvb(dir, base + "--set " + c.set);
    EXPECT_EQ(r.code, 2) << c.set << ": " << r.err;
    EXPECT_NE(r.err.find(c.needle), std::string::npos) << c.set << ": " << r.err;
    EXPECT_EQ(count_lines(r.err), 1u) << c.set << ": " << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(csv));
}

TEST_F(CliDecode, UnwritableOutputExits2) {
  write_text(dir.file("plainfile"), "x");
  const Result r = run_kvb(dir, "sweep --config '" + config + "' --out '" + dir.file("plainfile/r.csv") + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--out"), std::string::npos) << r.err;
}

TEST_F(CliDecode, SweepWithoutGpuExits2AndWritesNothing) {
  if (cuda_device_present()) GTEST_SKIP() << "a CUDA device is present";
  const std::string csv = dir.file("results/none.csv");
  const Result r = run_kvb(dir, "sweep --config '" + config + "' --out '" + csv + "' --set batch=1");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no CUDA device found; the sweep needs a GPU"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("results")));
}

}  // namespace
}  // namespace kvb
