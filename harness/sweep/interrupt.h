// SIGINT and SIGTERM in every kvb command: what a signal stops, which temporary files and child processes the
// handler takes care of, and the exit code left behind (128 + the signal: 130 for SIGINT, 143 for SIGTERM).
#pragma once

#include <sys/types.h>

#include <string>

namespace kvb {

/// How a command answers SIGINT and SIGTERM.
enum class InterruptMode {
  /// Stop at once: remove the registered temporary files, pass the signal to the registered child processes, wait
  /// (up to 5 s, then SIGKILL) for them to exit and exit with 128 + the signal (merge, capacity, compare,
  /// check-golden, info).
  immediate,
  /// Record the signal and let the command stop between steps (a sweep between points, reproduce between its steps):
  /// the step under way completes and its file is written whole. A second signal stops at once, as `immediate`.
  between_steps,
};

/// Installs the SIGINT and SIGTERM handlers for its lifetime; the destructor puts back the previous handlers and
/// forgets a recorded signal. One instance at a time (a second throws std::logic_error).
class InterruptHandlers {
 public:
  explicit InterruptHandlers(InterruptMode mode);
  ~InterruptHandlers();
  InterruptHandlers(const InterruptHandlers&) = delete;
  InterruptHandlers& operator=(const InterruptHandlers&) = delete;
};

/// The signal recorded since the handlers were installed (SIGINT or SIGTERM), 0 when none.
int interrupt_signal();

/// 128 + interrupt_signal(): 130 after SIGINT, 143 after SIGTERM; 0 when no signal was recorded.
int interrupt_exit_code();

/// "SIGINT", "SIGTERM", else "signal N".
std::string signal_name(int sig);

/// A temporary file that the handler removes when a signal stops the process before the file was renamed or removed.
/// Registers `path` on construction and unregisters it on destruction. Throws std::runtime_error when 16 are
/// registered at once or the path is longer than PATH_MAX - 1 bytes.
class RegisteredTemporary {
 public:
  explicit RegisteredTemporary(const std::string& path);
  ~RegisteredTemporary();
  RegisteredTemporary(const RegisteredTemporary&) = delete;
  RegisteredTemporary& operator=(const RegisteredTemporary&) = delete;

 private:
  int slot_ = -1;
};

/// A child process that the handler passes SIGINT or SIGTERM on to before the process stops at once. Registers `pid`
/// on construction and unregisters it on destruction. Throws std::runtime_error when 64 are registered at once.
class RegisteredChild {
 public:
  explicit RegisteredChild(pid_t pid);
  ~RegisteredChild();
  RegisteredChild(const RegisteredChild&) = delete;
  RegisteredChild& operator=(const RegisteredChild&) = delete;

 private:
  int slot_ = -1;
};

/// For the tests of interrupted runs: the first time the process gets here with the environment variable
/// KVB_TEST_STOP_AT equal to `where`, it stops itself (SIGSTOP), so that a test can send it a signal at a known point
/// and let it continue. Otherwise nothing happens. The points: "write" (write_file_atomic, half the content in the temporary file), "step"
/// (kvb reproduce, before each step after the first).
void test_stop_point(const char* where);

}  // namespace kvb
