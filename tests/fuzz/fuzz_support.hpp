// Shared by the libFuzzer targets. A target feeds its input to one parser; dlscale::Error (a clean,
// one-line rejection) is the expected outcome for bad input. Anything else — another exception, a crash,
// a sanitizer report, a hang — is a finding and becomes a regression test.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "dlscale/error.hpp"

namespace dlscale::fuzz {

/// A file this process owns, rewritten for every input (for parsers that read a path).
inline const std::filesystem::path& scratch_file(const char* suffix) {
  static const std::filesystem::path path = [&] {
    std::string templ = (std::filesystem::temp_directory_path() / "dlscale-fuzz-XXXXXX").string() + suffix;
    const int fd = ::mkstemps(templ.data(), static_cast<int>(std::char_traits<char>::length(suffix)));
    if (fd < 0) std::abort();
    ::close(fd);
    return std::filesystem::path(templ);
  }();
  return path;
}

inline const std::filesystem::path& write_scratch(const uint8_t* data, size_t size, const char* suffix) {
  const auto& p = scratch_file(suffix);
  std::FILE* f = std::fopen(p.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return p;
}

inline std::string as_text(const uint8_t* data, size_t size) { return std::string(reinterpret_cast<const char*>(data), size); }

/// Runs `parse`; a dlscale::Error is a clean rejection, anything else propagates to libFuzzer.
template <class F>
void expect_clean(F&& parse) {
  try {
    parse();
  } catch (const dlscale::Error&) {
  }
}

/// What an importer wrote is a cluster file: loading it may reject what the capture does not say (a
/// graph without a GPU↔CPU link, say) but must never find malformed YAML, which would mean a name from the
/// capture went into the file unquoted.
template <class Load>
void expect_loadable(const std::string& yaml, Load&& load) {
  try {
    load(yaml);
  } catch (const dlscale::Error& e) {
    if (std::string_view(e.what()).find("malformed YAML") != std::string_view::npos) {
      std::fprintf(stderr, "importer wrote malformed YAML: %s\n---\n%s---\n", e.what(), yaml.c_str());
      std::abort();
    }
  }
}

}  // namespace dlscale::fuzz
