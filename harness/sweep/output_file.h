// The one place that writes the files kvb makes (sweep CSVs, merged CSVs, shard parts, the capacity table): whole
// files replaced atomically, and the checks, made before any work starts, that every output of a command can be
// written and may be written.
#pragma once

#include <string>
#include <vector>

namespace kvb {

/// Replaces `path` with `content` atomically. Missing parent folders are created. The content goes to a temporary
/// PATH.tmp.XXXXXX of this process's own in the same folder (registered with interrupt.h, so that SIGINT or SIGTERM
/// removes it), is flushed to disk (fsync), and the temporary is renamed over PATH (and the folder synced). An
/// existing PATH keeps its permission bits; a new file gets 0666 less the umask. On any failure the temporary is
/// removed, PATH is left as it was, and std::runtime_error naming PATH is thrown.
void write_file_atomic(const std::string& path, const std::string& content);

/// What a command may do to an output file that exists already.
enum class Existing {
  refuse,   ///< an existing file is an error naming --force (the command's --force was not given)
  replace,  ///< replace it (the command's --force was given)
  resume,   ///< read it and write it again (a sweep's own --out; it must be readable)
};

/// One output of a command: its path, the flag or argument that named it (for messages, e.g. "--out"), and what may
/// happen when it exists.
struct OutputFile {
  std::string path;
  std::string flag;
  Existing existing = Existing::refuse;
};

/// One input file of a command, which no output may be.
struct InputFile {
  std::string path;
  std::string flag;
};

/// Checks, creating nothing, that every output can be written and may be: a non-empty path; not a directory, link,
/// device or socket; each name in it, the temporary's name (NAME.tmp.XXXXXX) and the whole path within the file
/// system's limits (NAME_MAX, PATH_MAX); the nearest existing folder a writable directory (missing folders are made
/// when writing); not the same file as any of `inputs`; and an existing file only where `existing` allows it (resume:
/// it must be readable). Throws UsageError naming the flag, the path and what is allowed.
void check_outputs(const std::vector<OutputFile>& outputs, const std::vector<InputFile>& inputs = {});

/// check_outputs for one output that may exist (a file the command resumes or was told to replace).
void check_output_writable(const std::string& path, const std::string& flag = "--out");

}  // namespace kvb
