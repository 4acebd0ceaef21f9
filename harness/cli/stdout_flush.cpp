// Flushing standard output with the reason of its first failure kept (stdout_flush.h).
#include "harness/cli/stdout_flush.h"

#include <cerrno>
#include <cstdio>

namespace kvb::cli {
namespace {
int first_errno = 0;  // kvb writes stdout from its main thread only
}  // namespace

void flush_stdout() {
  errno = 0;
  if ((std::fflush(stdout) != 0 || std::ferror(stdout)) && first_errno == 0) first_errno = errno;
}

int stdout_flush_errno() { return first_errno; }

}  // namespace kvb::cli
