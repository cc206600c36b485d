// Internal: an input file's text, or one line saying why it cannot be read (no such file, a directory,
// no permission), for every parser that reads a file the user named.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
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

/// The whole of the file at `path` (a regular file, a FIFO or a device; not a directory), or an InputError
/// at `path` naming `key` with cannot_open's reason.
inline std::string read_input_file(const std::filesystem::path& path, std::string_view key = "") {
  std::error_code ec;
  std::ifstream in;
  if (!std::filesystem::is_directory(path, ec)) in.open(path, std::ios::binary);
  if (!in.is_open()) throw InputError(SourceLocation{path.string(), 0, 0}, std::string(key), cannot_open(path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace dlscale
