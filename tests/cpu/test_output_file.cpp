// The one writer and the output checks (harness/sweep/output_file.h): modes kept, folders made, and every output of a
// command checked before any work: an existing file only with --force (or to resume), never an input, names and paths
// within the file system's limits.
#include <gtest/gtest.h>
#include <limits.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "harness/sweep/experiment_kind.h"
#include "harness/sweep/output_file.h"
#include "test_sweep_support.h"

namespace kvb {
namespace {

using test::read_text;
using test::TempDir;
using test::write_text;

mode_t mode_of(const std::string& path) {
  struct stat st {};
  ::stat(path.c_str(), &st);
  return st.st_mode & 07777;
}

/// The message of the UsageError check_outputs throws ("" and a failure when it throws none).
std::string refusal(const std::vector<OutputFile>& outputs, const std::vector<InputFile>& inputs = {}) {
  try {
    check_outputs(outputs, inputs);
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted " << outputs.front().path;
  return "";
}

TEST(OutputFile, ReplacingKeepsTheModeAndANewFileFollowsTheUmask) {
  TempDir dir;
  const std::string kept = dir.file("kept.csv");
  write_text(kept, "old\n");
  ::chmod(kept.c_str(), 0600);
  write_file_atomic(kept, "new\n");
  EXPECT_EQ(read_text(kept), "new\n");
  EXPECT_EQ(mode_of(kept), 0600u);
  ::chmod(kept.c_str(), 0640);
  write_file_atomic(kept, "newer\n");
  EXPECT_EQ(mode_of(kept), 0640u);

  const mode_t mask = ::umask(027);
  write_file_atomic(dir.file("fresh/deep/new.csv"), "x\n");
  ::umask(mask);
  EXPECT_EQ(mode_of(dir.file("fresh/deep/new.csv")), 0640u);
}

TEST(OutputFile, AnExistingFileNeedsForceOrIsResumed) {
  TempDir dir;
  const std::string f = dir.file("r.csv");
  write_text(f, "x\n");
  const std::string m = refusal({{f, "--out", Existing::refuse}});
  EXPECT_EQ(m, "--out " + f + ": exists (pass --force to replace it, or name another file)");
  // A folder flag names a file the command writes in that folder: the other choice is another folder.
  EXPECT_EQ(refusal({{f, "--out-dir", Existing::refuse}}),
            "--out-dir " + f + ": exists (pass --force to replace it, or name another folder)");
  EXPECT_NO_THROW(check_outputs({{f, "--out", Existing::replace}}));
  EXPECT_NO_THROW(check_outputs({{f, "--out", Existing::resume}}));
  EXPECT_NO_THROW(check_outputs({{dir.file("absent.csv"), "--out", Existing::refuse}}));
  // Unreadable: cannot be resumed (root reads everything, so only checked where permissions hold).
  if (::geteuid() != 0) {
    ::chmod(f.c_str(), 0200);
    EXPECT_NE(refusal({{f, "--out", Existing::resume}}).find("not readable"), std::string::npos);
  }
}

TEST(OutputFile, AnOutputThatIsAnInputIsRefusedEvenWithForce) {
  TempDir dir;
  const std::string config = dir.file("capacity.toml");
  write_text(config, "[axes]\n");
  const std::string m = refusal({{config, "--out", Existing::replace}}, {{config, "--config"}});
  EXPECT_EQ(m, "--out " + config + ": is the input --config " + config +
                   " (allowed: an output that is not an input)");
  // The same file by another name.
  std::filesystem::create_directories(dir.file("sub"));
  EXPECT_NE(refusal({{dir.file("sub/../capacity.toml"), "OUT", Existing::replace}}, {{config, "IN"}})
                .find("is the input IN"),
            std::string::npos);
}

TEST(OutputFile, NamesAndPathsBeyondTheFileSystemsLimitsAreRefusedUpFront) {
  TempDir dir;
  const std::string long_name(300, 'n');
  EXPECT_NE(refusal({{dir.file(long_name + ".csv"), "--out"}}).find("per name"), std::string::npos);
  // A name that fits, but not with its temporary's suffix.
  const std::string tight(NAME_MAX - 4, 't');
  EXPECT_NE(refusal({{dir.file(tight), "--out"}}).find("so that its temporary"), std::string::npos);
  std::string deep = dir.path().string();
  while (deep.size() < PATH_MAX) deep += "/" + std::string(200, 'd');
  const std::string m = refusal({{deep + "/r.csv", "--out"}});
  EXPECT_NE(m.find("the path has"), std::string::npos) << m;
  EXPECT_LT(m.size(), 400u) << "the message names the flag and the limit, not the whole path";
}

TEST(OutputFile, FoldersAndEmptyPathsAreRefused) {
  TempDir dir;
  EXPECT_NE(refusal({{dir.path().string(), "--out"}}).find("is a directory"), std::string::npos);
  EXPECT_EQ(refusal({{"", "OUT"}}), "OUT '': allowed: a file path such as results/NAME.csv");
  // A path that names a folder, existing or not (kvb merge a/b/c/ left a/b/c behind and failed at its rename).
  for (const std::string& folder : {dir.file("a/b/c/"), dir.file("x.csv/."), dir.file("new/..")})
    EXPECT_EQ(refusal({{folder, "OUT"}}),
              "OUT " + folder + ": names a folder, not a file (allowed: a file path such as results/NAME.csv)");
  EXPECT_FALSE(std::filesystem::exists(dir.file("a")));
}

}  // namespace
}  // namespace kvb
