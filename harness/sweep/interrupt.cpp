// SIGINT and SIGTERM handling (interrupt.h). The handler only uses async-signal-safe calls (unlink, kill, waitpid,
// nanosleep, write, _exit) on tables of fixed size that registration fills without allocating in the handler.
#include "harness/sweep/interrupt.h"

#include <limits.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace kvb {
namespace {

constexpr int kTemporaries = 16;
constexpr int kChildren = 64;
constexpr int kChildWaitMs = 5000;  ///< how long a stop waits for the children it signalled

// A temporary's slot: 0 free, 1 being filled, 2 registered (the handler reads only registered slots).
struct TemporarySlot {
  std::atomic<int> state{0};
  char path[PATH_MAX] = {};
};
TemporarySlot g_temporaries[kTemporaries];
std::atomic<pid_t> g_children[kChildren];  // 0: free

volatile std::sig_atomic_t g_signal = 0;
std::atomic<int> g_mode{int(InterruptMode::immediate)};
std::atomic<bool> g_installed{false};
struct sigaction g_previous_int, g_previous_term;

static_assert(std::atomic<int>::is_always_lock_free && std::atomic<pid_t>::is_always_lock_free,
              "the signal handler needs lock-free atomics");

void say(const char* text) {
  size_t n = 0;
  while (text[n]) ++n;
  while (n > 0) {
    const ssize_t w = ::write(STDERR_FILENO, text, n);
    if (w <= 0) return;
    text += w;
    n -= size_t(w);
  }
}

const char* name_of(int sig) { return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal"; }

/// Waits up to kChildWaitMs for the registered children, which got the signal, to exit (each removes its own
/// temporaries as it stops), then kills and reaps what is left, so that none outlives kvb mid-write.
void reap_children() {
  const timespec tick{0, 10 * 1000 * 1000};
  for (int waited = 0;; waited += 10) {
    bool left = false;
    for (auto& child : g_children)
      if (const pid_t pid = child.load(); pid > 0) {
        if (::waitpid(pid, nullptr, WNOHANG) == 0) left = true;
        else child.store(0);
      }
    if (!left) return;
    if (waited >= kChildWaitMs) break;
    ::nanosleep(&tick, nullptr);
  }
  for (auto& child : g_children)
    if (const pid_t pid = child.load(); pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
}

[[noreturn]] void stop_now(int sig) {
  for (TemporarySlot& t : g_temporaries)
    if (t.state.load() == 2) ::unlink(t.path);
  for (auto& child : g_children)
    if (const pid_t pid = child.load(); pid > 0) ::kill(pid, sig);
  reap_children();
  say("\nkvb: ");
  say(name_of(sig));
  say(": stopped; temporary files removed, every file kvb wrote before is complete\n");
  ::_exit(128 + sig);
}

void on_signal(int sig) {
  const int saved_errno = errno;
  if (g_mode.load() == int(InterruptMode::between_steps) && g_signal == 0) {
    g_signal = sig;
    say("\nkvb: ");
    say(name_of(sig));
    say(": stopping after the step under way (send it again to stop at once)\n");
    errno = saved_errno;
    return;
  }
  g_signal = sig;
  stop_now(sig);
}

}  // namespace

InterruptHandlers::InterruptHandlers(InterruptMode mode) {
  if (g_installed.exchange(true)) throw std::logic_error("InterruptHandlers: already installed");
  g_signal = 0;
  g_mode.store(int(mode));
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  sigaddset(&action.sa_mask, SIGINT);
  sigaddset(&action.sa_mask, SIGTERM);
  action.sa_flags = SA_RESTART;  // reads and writes under way go on; the loops look at interrupt_signal()
  ::sigaction(SIGINT, &action, &g_previous_int);
  ::sigaction(SIGTERM, &action, &g_previous_term);
}

InterruptHandlers::~InterruptHandlers() {
  ::sigaction(SIGINT, &g_previous_int, nullptr);
  ::sigaction(SIGTERM, &g_previous_term, nullptr);
  g_signal = 0;
  g_installed.store(false);
}

int interrupt_signal() { return int(g_signal); }

int interrupt_exit_code() { return g_signal ? 128 + int(g_signal) : 0; }

std::string signal_name(int sig) {
  if (sig == SIGINT || sig == SIGTERM) return name_of(sig);
  return "signal " + std::to_string(sig);
}

RegisteredTemporary::RegisteredTemporary(const std::string& path) {
  if (path.size() >= PATH_MAX) throw std::runtime_error(path + ": path longer than PATH_MAX");
  for (int i = 0; i < kTemporaries; ++i) {
    int expected = 0;
    if (!g_temporaries[i].state.compare_exchange_strong(expected, 1)) continue;
    std::memcpy(g_temporaries[i].path, path.c_str(), path.size() + 1);
    g_temporaries[i].state.store(2);
    slot_ = i;
    return;
  }
  throw std::runtime_error(path + ": more than 16 temporary files at once");
}

RegisteredTemporary::~RegisteredTemporary() {
  if (slot_ >= 0) g_temporaries[slot_].state.store(0);
}

RegisteredChild::RegisteredChild(pid_t pid) {
  for (int i = 0; i < kChildren; ++i) {
    pid_t expected = 0;
    if (g_children[i].compare_exchange_strong(expected, pid)) {
      slot_ = i;
      return;
    }
  }
  throw std::runtime_error("more than 64 child processes at once");
}

RegisteredChild::~RegisteredChild() {
  if (slot_ >= 0) g_children[slot_].store(0);
}

void test_stop_point(const char* where) {
  const char* at = std::getenv("KVB_TEST_STOP_AT");
  if (!at || std::strcmp(at, where) != 0) return;
  ::unsetenv("KVB_TEST_STOP_AT");  // once: a child process started later does not stop too
  ::raise(SIGSTOP);
}

}  // namespace kvb
