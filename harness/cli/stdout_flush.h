// Flushing standard output where a command wants its lines out before something else (an error line on stderr, a
// long step), keeping why a write failed: main reports a failed write once the command returns, when errno no longer
// says why and the stream's error flag alone does not.
#pragma once

namespace kvb::cli {

/// Flushes stdout; on the first failure, keeps its errno for stdout_flush_errno.
void flush_stdout();

/// The errno of flush_stdout's first failed flush, or 0 (none failed, or the failure set no errno).
int stdout_flush_errno();

}  // namespace kvb::cli
