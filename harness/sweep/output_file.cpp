// The one place that writes files (output_file.h).
#include "harness/sweep/output_file.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "harness/sweep/experiment_kind.h"
#include "harness/sweep/interrupt.h"

namespace kvb {

namespace fs = std::filesystem;

namespace {

constexpr const char* kTemporarySuffix = ".tmp.XXXXXX";

/// Closes a file descriptor on every exit path.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  /// Closes now; false (errno set) when close failed.
  bool close() {
    const int fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0;
  }

 private:
  int fd_;
};

/// SIGINT and SIGTERM held back for its lifetime (a signal arriving meanwhile is handled when it ends).
class BlockedSignals {
 public:
  BlockedSignals() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    ::pthread_sigmask(SIG_BLOCK, &set, &previous_);
  }
  ~BlockedSignals() { ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  BlockedSignals(const BlockedSignals&) = delete;
  BlockedSignals& operator=(const BlockedSignals&) = delete;

 private:
  sigset_t previous_;
};

/// Removes the temporary file on every exit path unless it was renamed; registered for the signal handler.
class TemporaryFile {
 public:
  explicit TemporaryFile(std::string path) : path_(std::move(path)) {
    try {
      registered_.emplace(path_);
    } catch (...) {
      ::unlink(path_.c_str());
      throw;
    }
  }
  ~TemporaryFile() {
    if (!renamed_) ::unlink(path_.c_str());
  }
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;
  const std::string& path() const { return path_; }
  void renamed() { renamed_ = true; }

 private:
  std::string path_;
  std::optional<RegisteredTemporary> registered_;
  bool renamed_ = false;
};

mode_t new_file_mode() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= size_t(n);
  }
  return true;
}

[[noreturn]] void fail(const std::string& path, const std::string& what, int err) {
  throw std::runtime_error(fmt::format("{}: cannot {}: {}", path, what, std::strerror(err)));
}

/// The nearest folder of `p` that exists ("." for a relative path with none).
fs::path nearest_existing_folder(const fs::path& p) {
  std::error_code ec;
  fs::path dir = p.parent_path();
  if (dir.empty()) dir = ".";
  while (!fs::exists(dir, ec)) {
    if (!dir.has_parent_path() || dir.parent_path() == dir) return ".";
    dir = dir.parent_path();
  }
  return dir;
}

long limit(const fs::path& dir, int name, long fallback) {
  const long v = ::pathconf(dir.c_str(), name);
  return v > 0 ? v : fallback;
}

/// UsageError when a name in `path`, its temporary's name or the whole path exceeds the file system's limits.
void check_length(const OutputFile& o, const fs::path& dir) {
  const long name_max = limit(dir, _PC_NAME_MAX, NAME_MAX);
  const long path_max = limit(dir, _PC_PATH_MAX, PATH_MAX);
  const fs::path p(o.path);
  const size_t suffix = std::strlen(kTemporarySuffix);
  for (const fs::path& part : p) {
    if (long(part.native().size()) > name_max)
      throw UsageError(fmt::format("{} {}: the name '{:.40}...' has {} bytes (allowed: at most {} per name)", o.flag,
                                   o.path, part.native(), part.native().size(), name_max));
  }
  const size_t file_name = p.filename().native().size();
  if (long(file_name + suffix) > name_max)
    throw UsageError(fmt::format("{} {}: the file name has {} bytes (allowed: at most {}, so that its temporary "
                                 "NAME{} fits)",
                                 o.flag, o.path, file_name, name_max - long(suffix), kTemporarySuffix));
  std::error_code ec;
  const fs::path absolute = fs::absolute(p, ec);
  const size_t length = (ec ? p : absolute).native().size() + suffix;
  if (long(length) >= path_max)
    throw UsageError(fmt::format("{} {:.60}...: the path has {} bytes (allowed: fewer than {} with its temporary's "
                                 "suffix)",
                                 o.flag, o.path, length - suffix, path_max - long(suffix)));
}

void check_one(const OutputFile& o, const std::vector<InputFile>& inputs) {
  if (o.path.empty()) throw UsageError(o.flag + " '': allowed: a file path such as results/NAME.csv");
  const fs::path p(o.path);
  std::error_code ec;
  // A path ending in '/' (or '.', '..') names a folder, whether or not it exists: no file could be renamed to it.
  if (const std::string name = p.filename().string(); name.empty() || name == "." || name == "..")
    throw UsageError(fmt::format("{} {}: names a folder, not a file (allowed: a file path such as results/NAME.csv)",
                                 o.flag, o.path));
  if (fs::is_directory(p, ec))
    throw UsageError(fmt::format("{} {}: is a directory (allowed: a file path such as results/NAME.csv)", o.flag,
                                 o.path));
  const fs::path dir = nearest_existing_folder(p);
  check_length(o, fs::is_directory(dir, ec) ? dir : fs::path("."));
  if (!fs::is_directory(dir, ec))
    throw UsageError(fmt::format("{} {}: '{}' is not a directory", o.flag, o.path, dir.string()));
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw UsageError(fmt::format("{} {}: directory '{}' is not writable", o.flag, o.path, dir.string()));
  {  // access() answers for permissions only (root passes everywhere): create and remove a file there
    std::string probe = (dir / ".kvb-write-probe-XXXXXX").string();
    const int fd = ::mkstemp(probe.data());
    if (fd < 0)
      throw UsageError(fmt::format("{} {}: cannot create a file in '{}' ({})", o.flag, o.path, dir.string(),
                                   std::strerror(errno)));
    ::close(fd);
    ::unlink(probe.c_str());
  }
  const fs::file_status st = fs::symlink_status(p, ec);
  if (!fs::exists(st)) return;
  if (!fs::is_regular_file(st))
    throw UsageError(fmt::format("{} {}: exists and is not a regular file (a device, link or socket is never replaced)",
                                 o.flag, o.path));
  for (const InputFile& in : inputs) {
    std::error_code eq;
    if (!in.path.empty() && fs::equivalent(p, in.path, eq))
      throw UsageError(fmt::format("{} {}: is the input {} {} (allowed: an output that is not an input)", o.flag,
                                   o.path, in.flag, in.path));
  }
  switch (o.existing) {
    case Existing::refuse: {
      // A folder flag (--out-dir) names the folder the file is in, so the other choice is another folder.
      const bool folder_flag = o.flag.size() > 4 && o.flag.compare(o.flag.size() - 4, 4, "-dir") == 0;
      throw UsageError(fmt::format("{} {}: exists (pass --force to replace it, or name another {})", o.flag, o.path,
                                   folder_flag ? "folder" : "file"));
    }
    case Existing::resume:
      if (::access(p.c_str(), R_OK) != 0)
        throw UsageError(fmt::format("{} {}: the existing file is not readable (needed to resume)", o.flag, o.path));
      break;
    case Existing::replace:
      break;
  }
}

}  // namespace

void write_file_atomic(const std::string& path, const std::string& content) {
  const fs::path target(path);
  const fs::path parent = target.parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    fs::create_directories(parent, ec);
    if (ec) throw std::runtime_error(fmt::format("{}: cannot create folder '{}': {}", path, parent.string(),
                                                 ec.message()));
  }
  struct stat existing {};
  const mode_t mode = ::stat(path.c_str(), &existing) == 0 ? (existing.st_mode & 07777) : new_file_mode();

  // A temporary of this process's own, created exclusively beside PATH: two writers never share a temporary, and a
  // user's file named PATH.tmp is never touched.
  std::string name = path + kTemporarySuffix;
  std::optional<Fd> fd;
  std::optional<TemporaryFile> tmp;
  {
    const BlockedSignals blocked;  // no signal between creating the temporary and registering it
    fd.emplace(::mkstemp(name.data()));
    if (fd->get() < 0) fail(path, "create its temporary " + name, errno);
    tmp.emplace(name);
  }
  if (::fchmod(fd->get(), mode) != 0) fail(path, "set the mode of " + name, errno);
  const size_t half = content.size() / 2;
  if (!write_all(fd->get(), content.data(), half)) fail(path, "write " + name, errno);
  test_stop_point("write");
  if (!write_all(fd->get(), content.data() + half, content.size() - half)) fail(path, "write " + name, errno);
  if (::fsync(fd->get()) != 0) fail(path, "flush " + name + " to disk", errno);
  if (!fd->close()) fail(path, "close " + name, errno);
  if (::rename(name.c_str(), path.c_str()) != 0) fail(path, "rename " + name + " over it", errno);
  tmp->renamed();
  const Fd dir(::open(parent.empty() ? "." : parent.c_str(), O_RDONLY | O_DIRECTORY));
  if (dir.get() >= 0) ::fsync(dir.get());  // the rename itself on disk; a folder that cannot be synced is no error
}

void check_outputs(const std::vector<OutputFile>& outputs, const std::vector<InputFile>& inputs) {
  for (const OutputFile& o : outputs) check_one(o, inputs);
}

void check_output_writable(const std::string& path, const std::string& flag) {
  check_outputs({{path, flag, Existing::resume}});
}

}  // namespace kvb
