// Writing an output file so that a failure never leaves a partial one behind.
#pragma once

#include <string>
#include <string_view>

namespace dlscale {

/// Writes `content` to `path` through a temporary file in the same folder and a rename, so that a
/// failure never leaves a partial file behind.
void write_file_atomically(const std::string& path, std::string_view content);

/// write_file_atomically in two steps, for outputs that go in place together or not at all: the
/// constructor makes every check and writes the content to a temporary file beside the target (or, for a
/// device or FIFO, keeps it to write directly); commit() renames it into place. Destroyed uncommitted, it
/// removes the temporary and the target stays as it was. Stage every file first, then commit them one
/// after another: any error of staging (a directory, a file the user may not write, a folder without
/// write permission, a full disk) comes before any target is touched, and what is left to commit, a rename
/// within one folder of a file just created there, fails only if the target was replaced meanwhile.
class StagedFile {
 public:
  StagedFile(const std::string& path, std::string_view content);
  StagedFile(const StagedFile&) = delete;
  StagedFile& operator=(const StagedFile&) = delete;
  ~StagedFile();
  void commit();

 private:
  std::string path_;       // as the user gave it (for messages)
  std::string target_;     // the file a link leads to, or path_
  std::string temporary_;  // empty: written directly at commit (a device or FIFO), or committed
  std::string direct_;     // the content for a device or FIFO
  bool direct_write_ = false;
};

}  // namespace dlscale
