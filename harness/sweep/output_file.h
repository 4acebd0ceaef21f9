// The one place that writes result files (sweep CSVs, merged CSVs, shard parts, the capacity table): whole files,
// replaced atomically, and the check that an output path can be written before any work starts.
#pragma once

#include <string>

namespace kvb {

/// Replaces `path` with `content` atomically: writes and fsyncs "PATH.tmp", then renames it over PATH. On any failure
/// the temporary file is removed, PATH is left as it was, and std::runtime_error naming the file is thrown.
void write_file_atomic(const std::string& path, const std::string& content);

/// Checks, without creating anything, that the output file `path` can be written: it is not a directory, and its
/// nearest existing ancestor folder is a writable directory (missing folders are created later). Throws UsageError
/// naming `flag` (for example "--out") and the path.
void check_output_writable(const std::string& path, const std::string& flag = "--out");

}  // namespace kvb
