// Worker processes with prefixed output (workers.h).
#include "harness/sweep/workers.h"

#include "harness/sweep/interrupt.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

extern char** environ;

namespace kvb {
namespace {

/// A started worker: its pid (registered for the signal handler), the read end of its output pipe (-1 once at EOF),
/// and its unfinished output line.
struct Running {
  pid_t pid = -1;
  int fd = -1;
  std::string pending;
  std::unique_ptr<RegisteredChild> registered;
};

pid_t spawn_one(const WorkerSpec& w, int* read_fd) {
  if (w.argv.empty()) throw std::runtime_error("worker with an empty argument vector");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error(fmt::format("cannot create a pipe for {}: {}", w.argv[0], std::strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  // A process group of its own: a Ctrl-C at the terminal reaches the parent only, which passes it on once (a second
  // SIGINT would make the worker stop at once instead of between its steps).
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<char*> argv;
  for (const auto& a : w.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = w.search_path ? ::posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), environ)
                               : ::posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    throw std::runtime_error(fmt::format("cannot start {}: {}", w.argv[0], std::strerror(rc)));
  }
  *read_fd = fds[0];
  return pid;
}

int wait_exit_code(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return 1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

void emit_lines(Running& r, const std::string& prefix, std::FILE* out, bool at_eof) {
  size_t start = 0, nl;
  while ((nl = r.pending.find('\n', start)) != std::string::npos) {
    if (out) fmt::print(out, "{}{}\n", prefix, r.pending.substr(start, nl - start));
    start = nl + 1;
  }
  r.pending.erase(0, start);
  if (at_eof && !r.pending.empty()) {
    if (out) fmt::print(out, "{}{}\n", prefix, r.pending);
    r.pending.clear();
  }
  if (out) std::fflush(out);
}

}  // namespace

std::vector<int> run_workers(const std::vector<WorkerSpec>& workers, std::FILE* out) {
  std::vector<Running> running;
  for (const auto& w : workers) {
    Running r;
    try {
      r.pid = spawn_one(w, &r.fd);
      r.registered = std::make_unique<RegisteredChild>(r.pid);
    } catch (...) {
      if (r.pid > 0) {
        ::kill(r.pid, SIGTERM);
        ::close(r.fd);
        wait_exit_code(r.pid);
      }
      for (auto& s : running) {
        ::kill(s.pid, SIGTERM);
        ::close(s.fd);
        wait_exit_code(s.pid);
      }
      throw;
    }
    running.push_back(std::move(r));
  }

  size_t open = running.size();
  char buf[4096];
  int forwarded = 0;  // the signal passed on to the workers (each stops between its own steps)
  while (open > 0) {
    if (const int sig = interrupt_signal(); sig && !forwarded) {
      for (const auto& r : running) ::kill(r.pid, sig);
      forwarded = sig;
    }
    std::vector<pollfd> fds;
    std::vector<size_t> which;
    for (size_t i = 0; i < running.size(); ++i)
      if (running[i].fd >= 0) {
        fds.push_back({running[i].fd, POLLIN, 0});
        which.push_back(i);
      }
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(fmt::format("poll on the workers' output failed: {}", std::strerror(errno)));
    }
    for (size_t k = 0; k < fds.size(); ++k) {
      if (!fds[k].revents) continue;
      Running& r = running[which[k]];
      const ssize_t n = ::read(r.fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n > 0) {
        r.pending.append(buf, size_t(n));
        emit_lines(r, workers[which[k]].prefix, out, false);
        continue;
      }
      emit_lines(r, workers[which[k]].prefix, out, true);
      ::close(r.fd);
      r.fd = -1;
      --open;
    }
  }
  std::vector<int> codes;
  for (const auto& r : running) codes.push_back(wait_exit_code(r.pid));
  return codes;
}

std::string current_executable() {
  std::vector<char> buf(4096);
  const ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) throw std::runtime_error(fmt::format("cannot read /proc/self/exe: {}", std::strerror(errno)));
  return std::string(buf.data(), size_t(n));
}

}  // namespace kvb
