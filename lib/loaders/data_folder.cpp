// The data folder and the names in it: NAME or path → path (include/dlscale/io.hpp).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "dlscale/error.hpp"
#include "dlscale/io.hpp"
#include "io/files.hpp"
#include "io/text.hpp"

#ifndef DLSCALE_SOURCE_DATA_DIR
#define DLSCALE_SOURCE_DATA_DIR ""
#endif
#ifndef DLSCALE_INSTALL_DATA_DIR
#define DLSCALE_INSTALL_DATA_DIR ""
#endif

namespace dlscale {
namespace fs = std::filesystem;

// ---- data folders ---------------------------------------------------------------------------------
fs::path data_dir() {
  if (const char* env = std::getenv("DLSCALE_DATA_DIR"); env != nullptr && *env != '\0') return env;
  const fs::path installed = DLSCALE_INSTALL_DATA_DIR;
  std::error_code ec;
  if (!installed.empty() && fs::exists(installed / "models", ec)) return installed;
  return DLSCALE_SOURCE_DATA_DIR;
}

fs::path data_folder_of(const fs::path& file) {
  // the nearest enclosing folder that holds the GPU catalogue and models/ (a data folder's two marks)
  std::error_code ec;
  for (fs::path dir = file.parent_path(); !dir.empty(); dir = dir.parent_path()) {
    if (fs::is_regular_file(dir / "topologies" / "gpus.yaml", ec) && fs::is_directory(dir / "models", ec)) return dir;
    if (dir == dir.root_path()) break;
  }
  return data_dir();
}

namespace {
fs::path folder(DataKind kind, const fs::path& data) {
  switch (kind) {
    case DataKind::cluster:
      return data / "topologies";
    case DataKind::network:
      return data / "models";
    case DataKind::framework:
      return data / "models" / "frameworks";
    case DataKind::profile:
      return data / "models" / "profiles";
  }
  return {};
}
std::string_view noun(DataKind kind) {
  switch (kind) {
    case DataKind::cluster:
      return "cluster";
    case DataKind::network:
      return "model";
    case DataKind::framework:
      return "framework";
    case DataKind::profile:
      return "profile";
  }
  return "";
}
}  // namespace

std::vector<std::string> list_names(DataKind kind) { return list_names(kind, data_dir()); }

std::vector<std::string> list_names(DataKind kind, const fs::path& data) {
  std::vector<std::string> out;
  std::error_code ec;
  auto visit = [&](const fs::directory_entry& e) {
    if (!e.is_regular_file() || e.path().extension() != ".yaml") return;
    const auto stem = e.path().stem().string();
    if (kind == DataKind::cluster && (stem == "gpus" || stem == "compute-params")) return;  // catalogue, kernel parameters
    out.push_back(stem);
  };
  if (kind == DataKind::profile) {
    for (const auto& e : fs::recursive_directory_iterator(folder(kind, data), ec)) visit(e);
  } else {
    for (const auto& e : fs::directory_iterator(folder(kind, data), ec)) visit(e);
  }
  std::sort(out.begin(), out.end());
  return out;
}

fs::path resolve(DataKind kind, std::string_view name_or_file, std::string_view field) {
  return resolve(kind, name_or_file, field, data_dir());
}

fs::path resolve(DataKind kind, std::string_view name_or_file, std::string_view field, const fs::path& data) {
  const fs::path as_path(name_or_file);
  std::error_code ec;
  const bool looks_like_path =
      name_or_file.find('/') != std::string_view::npos || as_path.extension() == ".yaml" || as_path.extension() == ".yml";
  if (looks_like_path || fs::is_regular_file(as_path, ec)) {
    if (!fs::is_regular_file(as_path, ec))
      throw InputError(SourceLocation{std::string(name_or_file), 0, 0}, std::string(field), cannot_open(as_path));
    return as_path;
  }
  const fs::path candidate = folder(kind, data) / (std::string(name_or_file) + ".yaml");
  if (fs::is_regular_file(candidate, ec)) return candidate;
  if (kind == DataKind::profile) {
    for (const auto& e : fs::recursive_directory_iterator(folder(kind, data), ec))
      if (e.is_regular_file() && e.path().filename() == candidate.filename()) return e.path();
  } else {
    // Then as people write names ("ResNet-50", "DGX A100", "PyTorch-DDP"): letters and digits compared, when
    // exactly one file answers.
    const std::string key = name_key(name_or_file);
    std::vector<std::string> hits;
    for (const auto& n : list_names(kind, data))
      if (name_key(n) == key) hits.push_back(n);
    if (hits.size() == 1) return folder(kind, data) / (hits.front() + ".yaml");
  }
  const std::string known = fmt::format("{}", fmt::join(list_names(kind, data), ", "));
  throw InputError(SourceLocation{}, std::string(field),
                   fmt::format("unknown {} '{}' (known: {})", noun(kind), name_or_file,
                               known.empty() ? "none found in " + folder(kind, data).string() : known));
}

}  // namespace dlscale
