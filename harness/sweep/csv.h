// Result CSV: columns, RFC 4180 quoting, and reading a previous file back for resume. Files are written through
// output_file.h.
#pragma once

#include <string>
#include <vector>

#include "harness/sweep/experiment_kind.h"
#include "harness/sweep/output_file.h"

namespace kvb {

/// Metadata columns written after a kind's result columns, in this order.
inline const std::vector<std::string>& csv_metadata_columns() {
  static const std::vector<std::string> cols{"status", "gpu", "driver", "cuda", "git_sha", "timestamp"};
  return cols;
}

/// The header of a kind's CSV: "experiment", the kind's axes, its result_columns, then csv_metadata_columns().
std::vector<std::string> csv_columns(const ExperimentKind& kind);

/// One field, quoted when it holds a comma, a double quote, CR or LF (quotes doubled; RFC 4180).
std::string csv_quote(const std::string& field);

/// One record: quoted fields joined by commas, ending in "\n".
std::string csv_line(const std::vector<std::string>& fields);

/// A whole CSV text: header row then data rows.
struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  /// The line of the file each row starts on (1 is the header's), filled by parse_csv; empty for a table built in
  /// memory.
  std::vector<size_t> lines = {};

  /// The file line of row `r` for messages: lines[r], or r + 2 (the line it would have) for a table built in memory.
  size_t line(size_t r) const { return r < lines.size() ? lines[r] : r + 2; }
};

/// Parses RFC 4180 text (quoted fields may hold commas, quotes and newlines; CRLF line ends and a leading UTF-8
/// byte-order mark accepted; a carriage return outside quotes without a line feed after it refused). Every row must have as many fields as the header, and the text must end with a line
/// end (a last record without one was cut short). Throws UsageError "ORIGIN:LINE: malformed CSV: ..." on malformed
/// input.
CsvTable parse_csv(const std::string& text, const std::string& origin);

/// Serialises a table (header first).
std::string format_csv(const CsvTable& table);

/// Reads `path` when it exists (empty table otherwise), for resuming a sweep's --out. Throws UsageError naming the
/// file when it is not a regular file, cannot be read or is malformed.
CsvTable read_csv_file(const std::string& path);

/// The current time as ISO 8601 UTC ("2026-11-29T21:15:00Z"), for the timestamp column.
std::string utc_timestamp();

}  // namespace kvb
