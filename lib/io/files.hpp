// Internal: an input file's text, or one line saying why it cannot be read (no such file, a directory,
// no permission), for every parser that reads a file the user named.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

#include "dlscale/error.hpp"

namespace dlscale {

/// "cannot open file (REASON)" for a path that cannot be read as an input file.
inline std::string cannot_open(const std::filesystem::path& path) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(st)) return "cannot open file (it is a directory)";
  if (!std::filesystem::exists(st)) return "cannot open file (no such file)";
  if (::access(path.c_str(), R_OK) != 0 && errno == EACCES) return "cannot open file (permission denied)";
  return "cannot open file (not readable)";
}

/// Reads the whole of the file at `path` into `out` in large blocks (no stream buffers copied into one
/// another: every data file a command reads comes this way); false when it cannot be opened.
inline bool read_whole_file(const std::filesystem::path& path, std::string& out) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  std::size_t used = 0;
  struct stat st {};
  // the file's size and one byte more (which finds it at its end), else a block: no pages touched in vain
  const bool sized = ::fstat(::fileno(f), &st) == 0 && S_ISREG(st.st_mode);
  out.resize(sized ? static_cast<std::size_t>(st.st_size) + 1 : std::size_t{1} << 16);
  for (;;) {
    used += std::fread(out.data() + used, 1, out.size() - used, f);
    if (used < out.size()) break;  // the end of the file (or an error, as a stream would stop there too)
    out.resize(2 * out.size());
  }
  out.resize(used);
  std::fclose(f);
  return true;
}

/// The whole of the file at `path` (a regular file, a FIFO or a device; not a directory), or an InputError
/// at `path` naming `key` with cannot_open's reason.
inline std::string read_input_file(const std::filesystem::path& path, std::string_view key = "") {
  std::error_code ec;
  std::string text;
  if (std::filesystem::is_directory(path, ec) || !read_whole_file(path, text))
    throw InputError(SourceLocation{path.string(), 0, 0}, std::string(key), cannot_open(path));
  return text;
}

}  // namespace dlscale
