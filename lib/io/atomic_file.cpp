// Writing an output file atomically, under a shell redirection's rules (include/dlscale/atomic_file.hpp).
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>
#include <utility>

#include "dlscale/atomic_file.hpp"
#include "dlscale/error.hpp"

namespace dlscale {

namespace {
[[noreturn]] void cannot_write(const std::string& path, std::string_view why) {
  throw InputError(SourceLocation{path, 0, 0}, "", fmt::format("cannot write output file: {}", why));
}

void write_directly(const std::string& path, std::string_view content) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) cannot_write(path, std::strerror(errno));
  const bool ok = std::fwrite(content.data(), 1, content.size(), f) == content.size();
  const int err = errno;
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed) cannot_write(path, std::strerror(ok ? errno : err));
}

/// All of `content` to `fd`; errno is set when it returns false.
bool write_all(int fd, std::string_view content) {
  while (!content.empty()) {
    const ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    content.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

/// A fresh file beside `target` that nothing else has opened (O_EXCL), with `mode` less the umask.
std::pair<int, std::filesystem::path> create_temporary(const std::string& path, const std::filesystem::path& target,
                                                       mode_t mode) {
  for (int i = 0;; ++i) {
    std::filesystem::path tmp = target.parent_path() /
        fmt::format("{}.tmp-dlscale-{}{}", target.filename().string(), ::getpid(), i ? fmt::format("-{}", i) : std::string());
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd >= 0) return {fd, std::move(tmp)};
    if (errno != EEXIST || i == 100) cannot_write(path, std::strerror(errno));
  }
}
}  // namespace

// The rules of a shell redirection (`>`), kept while the file is replaced by a rename: a directory is an
// error, a file the user may not write stays as it is (the rename needs only the folder's permission, so
// it would otherwise bypass the file's), and a replaced file keeps its mode and, where the process may
// set them, its owner and group.
StagedFile::StagedFile(const std::string& path, std::string_view content) : path_(path) {
  namespace fs = std::filesystem;
  fs::path target(path);
  std::error_code ec;
  // A device, FIFO, socket or pipe (/dev/null, a named pipe, /dev/stdout on a pipe) is written directly: a
  // rename would replace it. Asked of the path itself, so that the kernel follows every link, /proc's
  // "pipe:[N]" links included, which no path built by reading the links would reach.
  if (const auto st = fs::status(target, ec); !ec && fs::exists(st) && !fs::is_regular_file(st) && !fs::is_directory(st)) {
    direct_write_ = true;
    direct_ = std::string(content);
    return;
  }
  // A symbolic link is written through: its target gets the content (atomically, in the target's own
  // directory) and the link stays a link. A dangling link creates its target.
  for (int hops = 0; fs::is_symlink(fs::symlink_status(target, ec)); ++hops) {
    if (hops > 40) cannot_write(path, "too many levels of symbolic links");
    const fs::path to = fs::read_symlink(target, ec);
    if (ec) cannot_write(path, ec.message());
    target = to.is_absolute() ? to : target.parent_path() / to;
  }
  struct stat old {};
  const bool exists = ::stat(target.c_str(), &old) == 0;
  if ((exists && S_ISDIR(old.st_mode)) || !target.has_filename()) cannot_write(path, "is a directory");
  if (exists && ::faccessat(AT_FDCWD, target.c_str(), W_OK, AT_EACCESS) != 0) cannot_write(path, std::strerror(errno));

  const auto [fd, tmp] = create_temporary(path, target, exists ? (old.st_mode & 0777) : 0666);
  int err = write_all(fd, content) ? 0 : errno;
  if (err == 0 && exists) {
    // Owner first: a change of owner clears the set-user-ID and set-group-ID bits that fchmod then restores.
    if (::fchown(fd, old.st_uid, old.st_gid) != 0 && ::fchown(fd, static_cast<uid_t>(-1), old.st_gid) != 0) {
      // a user who may set neither owner nor group gets the file as their own, as `cp` over it leaves it
    }
    if (::fchmod(fd, old.st_mode & 07777) != 0) err = errno;
  }
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    fs::remove(tmp, ec);
    cannot_write(path, std::strerror(err));
  }
  target_ = target.string();
  temporary_ = tmp.string();
}

StagedFile::~StagedFile() {
  if (temporary_.empty()) return;
  std::error_code ec;
  std::filesystem::remove(temporary_, ec);
}

void StagedFile::commit() {
  if (direct_write_) {
    direct_write_ = false;
    write_directly(path_, direct_);
    return;
  }
  if (temporary_.empty()) return;                                                                     // committed already
  if (::rename(temporary_.c_str(), target_.c_str()) != 0) cannot_write(path_, std::strerror(errno));  // ~ removes it
  temporary_.clear();
}

void write_file_atomically(const std::string& path, std::string_view content) { StagedFile(path, content).commit(); }

}  // namespace dlscale
