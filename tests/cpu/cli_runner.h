// Test support for the CLI tests: runs the built `kvb` binary and captures its exit code, stdout and stderr.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

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

/// Runs kvb with `args` (already shell-quoted where needed) from `cwd` (default the repository root); stdout and stderr
/// go through files in `dir`.
inline Result run_kvb(const TempDir& dir, const std::string& args, const std::string& cwd = KVB_SOURCE_DIR) {
  const std::string out = dir.file("stdout.txt"), err = dir.file("stderr.txt");
  const std::string cmd = "cd '" + cwd + "' && '" + KVB_BINARY_PATH + "' " + args + " >'" + out + "' 2>'" + err + "'";
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_text(out), read_text(err)};
}

/// A kvb process started in the background (run_in_background), its stdout and stderr going to files.
struct Background {
  pid_t pid = -1;
  std::string out, err;  ///< the files of its stdout and stderr
};

/// Starts kvb with `args` (one per element, no shell) in `cwd` (default the repository root) with `env` ("NAME=VALUE")
/// added to the environment; stdout and stderr go to files in `dir`.
inline Background run_in_background(const TempDir& dir, const std::vector<std::string>& args,
                                    const std::vector<std::string>& env = {},
                                    const std::string& cwd = KVB_SOURCE_DIR) {
  Background b{-1, dir.file("bg_stdout.txt"), dir.file("bg_stderr.txt")};
  std::vector<std::string> argv_s{KVB_BINARY_PATH};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  b.pid = ::fork();
  if (b.pid == 0) {
    if (::chdir(cwd.c_str()) != 0) ::_exit(120);
    const int out = ::open(b.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(b.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0 || err < 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0) ::_exit(121);
    for (const auto& e : env) ::putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(122);
  }
  return b;
}

/// True once `pid` has stopped itself (SIGSTOP at a KVB_TEST_STOP_AT point); false when it exited instead.
inline bool wait_stopped(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, WUNTRACED) != pid) return false;
  return WIFSTOPPED(status);
}

/// Sends `sig` to the stopped process `pid`, lets it continue, and returns its exit code (-1 when a signal killed it).
inline int signal_and_wait(pid_t pid, int sig) {
  ::kill(pid, sig);
  ::kill(pid, SIGCONT);
  int status = 0;
  while (::waitpid(pid, &status, 0) == pid && !WIFEXITED(status) && !WIFSIGNALED(status)) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// `path` in single quotes, for run_kvb arguments.
inline std::string shell_quote(const std::string& path) { return "'" + path + "'"; }

/// Number of '\n' in `s`.
inline size_t count_lines(const std::string& s) { return size_t(std::count(s.begin(), s.end(), '\n')); }

}  // namespace kvb::test
