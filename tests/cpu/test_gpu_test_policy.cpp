// The GPU tests' skip policy (tests/gpu/gpu_test_util.h): a GPU test that cannot run skips with its reason, but fails
// instead when KVB_REQUIRE_GPU_TESTS=1, which ci/gpu.sh sets on its GPU runner; every skip in tests/gpu goes through
// that policy. The skips and failures below are intercepted, so this test itself neither skips nor fails by them.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "harness/measure/device_info.h"
#include "tests/gpu/gpu_test_util.h"

namespace kvb {
namespace {

/// Sets (or, with nullopt, unsets) an environment variable for the life of the object, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) setenv(name, value->c_str(), 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

/// The results a GPU test's body reports (skips, failures), intercepted.
template <class Body>
std::vector<testing::TestPartResult> reported_by(Body body) {
  testing::TestPartResultArray results;
  {
    testing::ScopedFakeTestPartResultReporter reporter(
        testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    body();
  }
  std::vector<testing::TestPartResult> r;
  for (int i = 0; i < results.size(); ++i) r.push_back(results.GetTestPartResult(i));
  return r;
}

/// What a GPU test that cannot run reports.
std::vector<testing::TestPartResult> skip_reports() {
  return reported_by([] { KVB_SKIP_GPU_TEST("CUPTI refused, code " << 7); });
}

bool mentions(const testing::TestPartResult& r, const char* text) {
  return std::string(r.message()).find(text) != std::string::npos;
}

TEST(GpuTestPolicy, AGpuTestThatCannotRunSkipsWithItsReason) {
  for (const std::optional<std::string>& value : {std::optional<std::string>(), std::optional<std::string>("0")}) {
    ScopedEnv env(test::kRequireGpuTestsEnv, value);
    const auto r = skip_reports();
    ASSERT_EQ(r.size(), 1u) << "KVB_REQUIRE_GPU_TESTS=" << value.value_or("(unset)");
    EXPECT_TRUE(r[0].skipped());
    EXPECT_TRUE(mentions(r[0], "CUPTI refused, code 7")) << r[0].message();
  }
}

TEST(GpuTestPolicy, WithKvbRequireGpuTestsAGpuTestThatCannotRunFails) {
  ScopedEnv env(test::kRequireGpuTestsEnv, "1");
  const auto r = skip_reports();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(r[0].fatally_failed());
  EXPECT_TRUE(mentions(r[0], "KVB_REQUIRE_GPU_TESTS=1")) << r[0].message();
  EXPECT_TRUE(mentions(r[0], "CUPTI refused, code 7")) << r[0].message();
}

// KVB_REQUIRE_GPU, which every kernel test starts with: nothing on a machine with a device; without one, a skip, or
// with KVB_REQUIRE_GPU_TESTS=1 a failure.
TEST(GpuTestPolicy, RequireGpuFollowsThePolicyWithoutADevice) {
  for (const bool required : {false, true}) {
    ScopedEnv env(test::kRequireGpuTestsEnv, required ? std::optional<std::string>("1") : std::nullopt);
    const auto r = reported_by([] { KVB_REQUIRE_GPU(); });
    if (cuda_device_present()) {
      EXPECT_TRUE(r.empty()) << "a device is present";
      continue;
    }
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].fatally_failed(), required);
    EXPECT_EQ(r[0].skipped(), !required);
    EXPECT_TRUE(mentions(r[0], "no CUDA device present")) << r[0].message();
  }
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Occurrences of `word` in `text`.
int count(const std::string& text, const std::string& word) {
  int n = 0;
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + word.size())) ++n;
  return n;
}

// A GPU test that called GTEST_SKIP itself would pass CI unseen on a runner where it cannot run.
TEST(GpuTestPolicy, EverySkipOfAGpuTestGoesThroughThePolicy) {
  const std::filesystem::path dir = std::filesystem::path(KVB_SOURCE_DIR) / "tests/gpu";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string text = read_text(entry.path());
    ++files;
    const int allowed = entry.path().filename() == "gpu_test_util.h" ? 1 : 0;  // inside KVB_SKIP_GPU_TEST
    EXPECT_EQ(count(text, "GTEST_SKIP"), allowed)
        << entry.path() << ": skip a GPU test with KVB_SKIP_GPU_TEST (tests/gpu/gpu_test_util.h)";
  }
  EXPECT_GT(files, 5);
}

TEST(GpuTestPolicy, CiOnTheGpuRunnerRequiresEveryGpuTest) {
  const std::string script = read_text(std::filesystem::path(KVB_SOURCE_DIR) / "ci/gpu.sh");
  EXPECT_NE(script.find("export KVB_REQUIRE_GPU_TESTS=1"), std::string::npos);
}

}  // namespace
}  // namespace kvb
