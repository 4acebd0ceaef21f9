// Reading input files (input_file.h).
#include "harness/sweep/input_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include <fmt/format.h>

#include "harness/sweep/experiment_kind.h"

namespace kvb {

std::string read_input_file(const std::string& path, const std::string& flag, const std::string& expected) {
  namespace fs = std::filesystem;
  const std::string named = flag.empty() ? path : flag + " " + path;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (path.empty()) throw UsageError(fmt::format("{} '': empty path (allowed: {})", flag, expected));
  // A path the system cannot follow (a folder this user cannot search, a loop of links, a name too long) is said as
  // such: fs::status reports it as no file at all.
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory)
    throw UsageError(fmt::format("{}: cannot be reached: {} (allowed: {}, on a path this user can search)", named,
                                 ec.message(), expected));
  if (!fs::exists(st)) throw UsageError(fmt::format("{}: no such file (allowed: {})", named, expected));
  if (fs::is_directory(st)) throw UsageError(fmt::format("{}: is a directory (allowed: {})", named, expected));
  if (!fs::is_regular_file(st)) throw UsageError(fmt::format("{}: not a regular file (allowed: {})", named, expected));
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw UsageError(fmt::format("{}: cannot read the file: {} (allowed: {} that this user can read)", named,
                                 std::strerror(errno), expected));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw UsageError(fmt::format("{}: cannot read the file", named));
  return text.str();
}

}  // namespace kvb
