// Test support for the CLI tests: runs the built `kvb` binary and captures its exit code, stdout and stderr.
#pragma once

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "test_sweep_support.h"

#ifndef KVB_BINARY_PATH
#error "KVB_BINARY_PATH (the built kvb executable) must be defined by tests/CMakeLists.txt"
#endif

namespace kvb::test {

/// What one kvb run left: exit code (-1 when it did not exit normally), stdout and stderr.
struct Result {
  int code = -1;
  std::string out, err;
};

/// Runs kvb with `args` (already shell-quoted where needed) from the repository root; stdout and stderr go through
/// files in `dir`.
inline Result run_kvb(const TempDir& dir, const std::string& args) {
  const std::string out = dir.file("stdout.txt"), err = dir.file("stderr.txt");
  const std::string cmd = std::string("cd '") + KVB_SOURCE_DIR + "' && '" + KVB_BINARY_PATH + "' " + args + " >'" +
                          out + "' 2>'" + err + "'";
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_text(out), read_text(err)};
}

/// `path` in single quotes, for run_kvb arguments.
inline std::string shell_quote(const std::string& path) { return "'" + path + "'"; }

/// Number of '\n' in `s`.
inline size_t count_lines(const std::string& s) { return size_t(std::count(s.begin(), s.end(), '\n')); }

}  // namespace kvb::test
