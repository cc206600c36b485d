// Test helper: run the dlscale command and capture its exit status, stdout and stderr.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace dlscale::test {

struct RunResult {
  int status = -1;
  std::string out, err;
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// Runs `DLSCALE_CLI <args>` through the shell; args are passed verbatim.
inline RunResult run_cli(const std::string& args) {
  static int counter = 0;
  const auto dir = std::filesystem::temp_directory_path();
  const auto out = dir / ("dlscale-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter) + ".out");
  const auto err = dir / ("dlscale-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".err");
  const std::string cmd = std::string(DLSCALE_CLI) + " " + args + " >" + out.string() + " 2>" + err.string();
  const int rc = std::system(cmd.c_str());
  RunResult r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

/// Writes `text` to a fresh temporary file named `name` and returns its path.
inline std::filesystem::path temp_file(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / ("dlscale-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto p = dir / name;
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

}  // namespace dlscale::test
