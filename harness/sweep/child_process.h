// One child process run to completion with its output captured: what `kvb sweep` starts to measure a peer point
// (the peer runner, peers/run_peer.py) and to ask which peers can run here.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace kvb {

/// How a child process ended.
struct ChildResult {
  int exit_code = -1;      ///< its exit status; 128 + signal number when a signal ended it
  bool timed_out = false;  ///< it ran past the time limit and was stopped
  std::string output;      ///< its stdout and stderr, joined in arrival order (the last 64 KiB)
};

/// Runs `argv` (argv[0] looked up on PATH as execvp does) in the current environment and working directory, with
/// stdout and stderr joined into one pipe read into ChildResult::output, and stdin from /dev/null. While it runs,
/// `poll()` (when given) is called every `poll_ms` milliseconds. After `timeout_s` seconds it is sent SIGTERM, and
/// SIGKILL 5 s later if it has not exited. Throws std::runtime_error naming argv[0] when it cannot be started.
ChildResult run_child(const std::vector<std::string>& argv, double timeout_s,
                      const std::function<void()>& poll = {}, int poll_ms = 20);

/// The last non-empty line of `text` ("" when there is none), for one-line failure reasons.
std::string last_line(const std::string& text);

}  // namespace kvb
