// Internal: values read from a file, reused while the file's modification time and size are unchanged
// (the GPU catalogue and its entries read alone).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

namespace dlscale {

// A file's modification time and size: what is read from it is reused while both are unchanged.
struct FileStamp {
  std::filesystem::file_time_type mtime;
  std::uintmax_t size = 0;
  bool operator==(const FileStamp&) const = default;
};

inline std::optional<FileStamp> stamp_of(const std::filesystem::path& file) {
  std::error_code ec_time, ec_size;
  const auto mtime = std::filesystem::last_write_time(file, ec_time);
  const auto size = std::filesystem::file_size(file, ec_size);
  if (ec_time || ec_size) return std::nullopt;
  return FileStamp{mtime, size};
}

/// Values read from a file, kept per key while the file's stamp is unchanged. `make` runs outside the lock
/// (two threads may both read a changed file; both results are equal); an empty result is not kept, so a
/// file that fails to parse gives its error every time.
template <class T>
class StampedCache {
 public:
  template <class Make>
  std::optional<T> get(const std::string& key, const std::filesystem::path& file, Make make) {
    const auto stamp = stamp_of(file);
    if (stamp) {
      const std::lock_guard lock(mutex_);
      if (const auto it = kept_.find(key); it != kept_.end() && it->second.first == *stamp) return it->second.second;
    }
    std::optional<T> value = make();
    if (stamp && value) {
      const std::lock_guard lock(mutex_);
      kept_.insert_or_assign(key, std::pair{*stamp, *value});
    }
    return value;
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::pair<FileStamp, T>> kept_;
};

}  // namespace dlscale
