// Test helper: points DLSCALE_DATA_DIR at a folder for an object's lifetime (children of run_cli inherit
// it) and restores the previous value after. An empty folder leaves the variable as it is.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace dlscale::test {

class DataDir {
 public:
  explicit DataDir(const std::string& dir) {
    if (const char* old = std::getenv("DLSCALE_DATA_DIR")) old_ = old;
    if (!dir.empty()) ::setenv("DLSCALE_DATA_DIR", dir.c_str(), 1);
  }
  ~DataDir() {
    if (old_) ::setenv("DLSCALE_DATA_DIR", old_->c_str(), 1);
    else ::unsetenv("DLSCALE_DATA_DIR");
  }
  DataDir(const DataDir&) = delete;
  DataDir& operator=(const DataDir&) = delete;

 private:
  std::optional<std::string> old_;
};

}  // namespace dlscale::test
