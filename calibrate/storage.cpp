// Storage: sequential read bandwidth of a path (a file, or a folder where a temporary file is written),
// from the page cache (the file read once before timing) and with O_DIRECT (the device itself), as
// Shi & Chu measured B_cache and B_disk with dd.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include "common.hpp"
#include "dlscale/format.hpp"

namespace dlscale::calib {
namespace {

constexpr std::size_t kBlock = 8u << 20;
constexpr std::size_t kAlign = 4096;

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};

/// Reads the whole file sequentially; returns the bytes read.
std::size_t read_all(const std::string& path, bool direct, void* buf) {
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | (direct ? O_DIRECT : 0));
  if (f.fd < 0)
    throw DeviceError(fmt::format("{}: cannot open{}: {}", path, direct ? " with O_DIRECT" : "", std::strerror(errno)));
  std::size_t total = 0;
  for (;;) {
    const ssize_t n = ::read(f.fd, buf, kBlock);
    if (n < 0) throw DeviceError(fmt::format("{}: read failed{}: {}", path, direct ? " (O_DIRECT)" : "", std::strerror(errno)));
    if (n == 0) break;
    total += static_cast<std::size_t>(n);
  }
  return total;
}

}  // namespace

void measure_storage(Run& run) {
  namespace fs = std::filesystem;
  std::string file = run.opt.storage;
  bool temporary = false;
  void* raw = nullptr;
  if (posix_memalign(&raw, kAlign, kBlock) != 0) throw DeviceError("storage: cannot allocate an aligned buffer");
  std::unique_ptr<void, AlignedFree> buf(raw);
  std::memset(buf.get(), 0x5a, kBlock);
  if (fs::is_directory(file)) {
    const std::size_t size = run.opt.quick ? (256u << 20) : (std::size_t{2} << 30);
    file = (fs::path(file) / fmt::format("dlscale-calibrate-{}.bin", ::getpid())).string();
    temporary = true;
    Fd f;
    f.fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (f.fd < 0) throw DeviceError(fmt::format("{}: cannot create: {}", file, std::strerror(errno)));
    for (std::size_t done = 0; done < size; done += kBlock)
      if (::write(f.fd, buf.get(), kBlock) != static_cast<ssize_t>(kBlock))
        throw DeviceError(fmt::format("{}: write failed: {}", file, std::strerror(errno)));
    ::fsync(f.fd);
  }
  struct Cleanup {
    std::string path;
    bool on;
    ~Cleanup() {
      if (on) std::remove(path.c_str());
    }
  } cleanup{file, temporary};
  const double size = static_cast<double>(fs::file_size(file));
  StorageResult r;
  r.path = run.opt.storage;
  r.size = bytes(size);
  read_all(file, false, buf.get());  // into the page cache
  const Timed cached = measure_host(
      run, "storage/page_cache", size, [&] { read_all(file, false, buf.get()); }, 0);
  r.page_cache = bytes(size) / seconds(cached.stats.median);
  run.progress(fmt::format("storage {} page cache: {}", file, *r.page_cache));
  try {
    const Timed direct = measure_host(
        run, "storage/direct", size, [&] { read_all(file, true, buf.get()); }, 1);
    r.direct = bytes(size) / seconds(direct.stats.median);
    run.progress(fmt::format("storage {} O_DIRECT: {}", file, *r.direct));
  } catch (const DeviceError& e) {
    run.progress(fmt::format("storage: no O_DIRECT figure ({})", e.what()));
  }
  run.cal.storage = r;
}

}  // namespace dlscale::calib
