// Worker processes of a multi-GPU sweep (kvb sweep --devices): start them all, relay their output with a prefix per
// line, and collect their exit codes.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace kvb {

/// One worker: its argument vector (argv[0] is the executable's path, or with search_path a name looked up on PATH)
/// and the prefix put in front of each line it prints (for example "[gpu 1] ").
struct WorkerSpec {
  std::vector<std::string> argv;
  std::string prefix;
  bool search_path = false;
};

/// Starts every worker at once (posix_spawn, same environment), each with stdout and stderr joined into one pipe,
/// copies their output to `out` (nullptr: nowhere) line by line with the worker's prefix until all have exited, and
/// returns their exit codes in order (128 + signal number for a worker killed by a signal). Each worker runs in a
/// process group of its own, so that a terminal's Ctrl-C reaches this process only; the workers are registered with
/// interrupt.h: a recorded SIGINT or SIGTERM is passed on to them once (each stops between its own steps), and a
/// process stopping at once passes its signal on too. Throws std::runtime_error naming the executable
/// when a worker cannot be started; workers already started are then stopped (SIGTERM) and waited for.
std::vector<int> run_workers(const std::vector<WorkerSpec>& workers, std::FILE* out);

/// Path of the running executable (/proc/self/exe). Throws std::runtime_error when it cannot be read.
std::string current_executable();

}  // namespace kvb
