// The one place that writes result files (output_file.h).
#include "harness/sweep/output_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

#include "harness/sweep/experiment_kind.h"

namespace kvb {

namespace fs = std::filesystem;

void write_file_atomic(const std::string& path, const std::string& content) {
  // A temporary of this process's own (PATH.tmp.XXXXXX, created exclusively) beside PATH, renamed over it: two
  // writers never share a temporary, and a user's file named PATH.tmp is never touched.
  std::string tmpl = path + ".tmp.XXXXXX";
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) throw std::runtime_error(fmt::format("{}: cannot create {}: {}", path, tmpl, std::strerror(errno)));
  const std::string tmp = tmpl;
  ::fchmod(fd, 0644);
  std::FILE* f = ::fdopen(fd, "wb");
  if (!f) {
    const int err = errno;
    ::close(fd);
    std::remove(tmp.c_str());
    throw std::runtime_error(fmt::format("{}: cannot open {}: {}", path, tmp, std::strerror(err)));
  }
  bool ok = std::fwrite(content.data(), 1, content.size(), f) == content.size();
  ok = std::fflush(f) == 0 && ok;
  ok = ::fsync(fileno(f)) == 0 && ok;
  const int saved = errno;
  ok = std::fclose(f) == 0 && ok;
  if (!ok) {
    std::remove(tmp.c_str());
    throw std::runtime_error(fmt::format("{}: cannot write {}: {}", path, tmp, std::strerror(saved)));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    throw std::runtime_error(fmt::format("{}: cannot rename {} over it: {}", path, tmp, std::strerror(err)));
  }
}

void check_output_writable(const std::string& path, const std::string& flag) {
  if (path.empty()) throw UsageError(flag + ": empty path (give a file path such as results/NAME.csv)");
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec))
    throw UsageError(fmt::format("{} {}: is a directory (give a file path such as results/NAME.csv)", flag, path));
  fs::path dir = p.parent_path();
  if (dir.empty()) dir = ".";
  while (!fs::exists(dir, ec)) {
    if (!dir.has_parent_path() || dir.parent_path() == dir) {
      dir = ".";
      break;
    }
    dir = dir.parent_path();
  }
  if (!fs::is_directory(dir, ec))
    throw UsageError(fmt::format("{} {}: '{}' is not a directory", flag, path, dir.string()));
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw UsageError(fmt::format("{} {}: directory '{}' is not writable", flag, path, dir.string()));
  {  // access() answers for permissions only (root passes everywhere): create and remove a file there
    std::string probe = (dir / ".kvb-write-probe-XXXXXX").string();
    const int fd = ::mkstemp(probe.data());
    if (fd < 0)
      throw UsageError(fmt::format("{} {}: cannot create a file in '{}' ({})", flag, path, dir.string(),
                                   std::strerror(errno)));
    ::close(fd);
    ::unlink(probe.c_str());
  }
  const fs::file_status st = fs::symlink_status(p, ec);
  if (fs::exists(st) && !fs::is_regular_file(st))
    throw UsageError(fmt::format("{} {}: exists and is not a regular file (a device, link or socket is never replaced)",
                                 flag, path));
  if (fs::exists(p, ec) && ::access(p.c_str(), R_OK) != 0)
    throw UsageError(fmt::format("{} {}: the existing file is not readable (needed to resume)", flag, path));
}

}  // namespace kvb
