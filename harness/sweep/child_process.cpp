// A child process with captured output, a time limit and a poll callback (child_process.h).
#include "harness/sweep/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

extern char** environ;

namespace kvb {
namespace {

constexpr size_t kKeptOutputBytes = 64 * 1024;
constexpr double kKillGraceSeconds = 5.0;
/// After the child exited, its pipe is read this long at most (a process it started may still hold the pipe).
constexpr double kDrainSeconds = 2.0;

/// Appends `n` bytes to `out`, keeping its last kKeptOutputBytes.
void keep_tail(std::string& out, const char* data, size_t n) {
  out.append(data, n);
  if (out.size() > kKeptOutputBytes) out.erase(0, out.size() - kKeptOutputBytes);
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

ChildResult run_child(const std::vector<std::string>& argv, double timeout_s, const std::function<void()>& poll,
                      int poll_ms) {
  if (argv.empty()) throw std::runtime_error("run_child: an empty argument vector");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error(fmt::format("cannot create a pipe for {}: {}", argv[0], std::strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    throw std::runtime_error(fmt::format("cannot start {}: {}", argv[0], std::strerror(rc)));
  }

  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  ChildResult result;
  int fd = fds[0];
  bool exited = false, term_sent = false;
  clock::time_point term_at, exit_at;
  int status = 0;
  char buf[4096];
  while (!exited || fd >= 0) {
    if (fd >= 0) {
      pollfd p{fd, POLLIN, 0};
      const int ready = ::poll(&p, 1, exited ? 100 : poll_ms);
      if (ready > 0) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n > 0) keep_tail(result.output, buf, size_t(n));
        else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
          ::close(fd);
          fd = -1;
        }
      }
    } else {
      ::usleep(useconds_t(poll_ms) * 1000);
    }
    if (!exited) {
      const pid_t w = ::waitpid(pid, &status, WNOHANG);
      if (w == pid) {
        exited = true;
        exit_at = clock::now();
        result.exit_code = exit_code_of(status);
      }
    }
    if (exited) {
      if (fd >= 0 && clock::now() - exit_at > std::chrono::duration<double>(kDrainSeconds)) {
        ::close(fd);  // a process the child started still holds the pipe: stop reading
        fd = -1;
      }
      continue;
    }
    if (poll) poll();
    const double elapsed = std::chrono::duration<double>(clock::now() - start).count();
    if (!term_sent && elapsed > timeout_s) {
      result.timed_out = true;
      ::kill(pid, SIGTERM);
      term_sent = true;
      term_at = clock::now();
    } else if (term_sent && clock::now() - term_at > std::chrono::duration<double>(kKillGraceSeconds)) {
      ::kill(pid, SIGKILL);
    }
  }
  return result;
}

std::string last_line(const std::string& text) {
  size_t end = text.size();
  while (end > 0) {
    while (end > 0 && (text[end - 1] == '\n' || text[end - 1] == '\r' || text[end - 1] == ' ')) --end;
    if (end == 0) break;
    const size_t begin = text.rfind('\n', end - 1);
    const size_t from = begin == std::string::npos ? 0 : begin + 1;
    if (end > from) return text.substr(from, end - from);
    end = from;
  }
  return "";
}

}  // namespace kvb
