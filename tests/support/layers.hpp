// Test helper: the layer check of cmake/layers.txt. Reads the layers (bottom to top) and the allowed
// upward includes, scans every source and header under lib/, sim/ and include/ of a source tree, and
// returns one line per problem, each naming file:line:
//   lib/core/enums.cpp:9: layer 'core' includes "dlscale/predict.hpp" of layer 'predict', above it
//   lib/new/x.cpp: in no layer of cmake/layers.txt
//   cmake/layers.txt:70: allow lib/a.cpp dlscale/b.hpp: no such include any more (remove the entry)
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace dlscale::test {

struct Layer {
  std::string name;
  std::vector<std::string> paths;  // relative to the source tree: folders or files
};

struct AllowedInclude {
  std::string file;    // the including file, relative to the source tree
  std::string header;  // as the #include line spells it
  int line = 0;        // of the entry in the layers file
  bool used = false;
};

struct LayerMap {
  std::vector<Layer> layers;  // bottom to top
  std::vector<AllowedInclude> allowed;
  std::vector<std::string> problems;  // malformed lines
};

inline LayerMap read_layers(const std::filesystem::path& file, const std::string& display) {
  LayerMap m;
  std::ifstream in(file);
  if (!in) {
    m.problems.push_back(display + ": cannot open");
    return m;
  }
  std::string text;
  for (int n = 1; std::getline(in, text); ++n) {
    if (const auto hash = text.find('#'); hash != std::string::npos) text.erase(hash);
    std::istringstream words(text);
    std::string kind;
    if (!(words >> kind)) continue;
    if (kind == "layer") {
      Layer l;
      words >> l.name;
      for (std::string p; words >> p;) l.paths.push_back(p);
      if (l.name.empty() || l.paths.empty())
        m.problems.push_back(display + ":" + std::to_string(n) + ": a layer needs a name and paths");
      m.layers.push_back(std::move(l));
    } else if (kind == "allow") {
      AllowedInclude a;
      std::string why;
      words >> a.file >> a.header >> why;
      a.line = n;
      if (why.empty()) m.problems.push_back(display + ":" + std::to_string(n) + ": an allowed include needs FILE HEADER WHY");
      m.allowed.push_back(std::move(a));
    } else {
      m.problems.push_back(display + ":" + std::to_string(n) + ": unknown entry '" + kind + "'");
    }
  }
  return m;
}

/// The index of the layer `rel` (a path relative to the tree) belongs to: the longest path that contains it.
inline std::optional<std::size_t> layer_of(const LayerMap& m, const std::string& rel) {
  std::optional<std::size_t> best;
  std::size_t best_len = 0;
  for (std::size_t i = 0; i < m.layers.size(); ++i)
    for (const auto& p : m.layers[i].paths) {
      const bool inside = rel == p || (rel.size() > p.size() && rel.starts_with(p) && rel[p.size()] == '/');
      if (inside && p.size() >= best_len) {
        best = i;
        best_len = p.size();
      }
    }
  return best;
}

/// Every problem of the tree at `root` against the layers file `layers` (relative to `root`).
inline std::vector<std::string> check_layers(const std::filesystem::path& root, const std::string& layers) {
  namespace fs = std::filesystem;
  LayerMap m = read_layers(root / layers, layers);
  std::vector<std::string> out = m.problems;
  for (const auto& l : m.layers)
    for (const auto& p : l.paths)
      if (!fs::exists(root / p)) out.push_back(layers + ": layer '" + l.name + "': no such path " + p);
  // Where the build looks for a header: beside the file (quoted includes), then these, as the targets do.
  const std::vector<fs::path> include_dirs = {root / "include", root / "sim" / "include", root / "lib"};
  std::vector<std::string> files;
  for (const char* top : {"lib", "sim", "include"}) {
    if (!fs::is_directory(root / top)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root / top)) {
      const auto ext = e.path().extension().string();
      if (e.is_regular_file() && (ext == ".hpp" || ext == ".cpp" || ext == ".h" || ext == ".cu" || ext == ".cuh"))
        files.push_back(e.path().lexically_relative(root).generic_string());
    }
  }
  std::sort(files.begin(), files.end());
  static const std::regex include_line(R"(^\s*#\s*include\s*([<"])([^>"]+)[>"])");
  for (const auto& rel : files) {
    const auto own = layer_of(m, rel);
    if (!own) {
      out.push_back(rel + ": in no layer of " + layers);
      continue;
    }
    std::ifstream in(root / rel);
    std::string text;
    for (int n = 1; std::getline(in, text); ++n) {
      std::smatch match;
      if (!std::regex_search(text, match, include_line)) continue;
      const std::string header = match[2];
      std::vector<fs::path> candidates;
      if (match[1] == "\"") candidates.push_back((root / rel).parent_path() / header);
      for (const auto& d : include_dirs) candidates.push_back(d / header);
      std::optional<std::string> target;
      for (const auto& c : candidates)
        if (fs::is_regular_file(c)) {
          target = c.lexically_normal().lexically_relative(root).generic_string();
          break;
        }
      if (!target) continue;  // a system or third-party header
      const auto theirs = layer_of(m, *target);
      if (!theirs) {
        out.push_back(rel + ":" + std::to_string(n) + ": includes \"" + header + "\", which is in no layer of " + layers);
        continue;
      }
      if (*theirs <= *own) continue;
      auto allowed = std::find_if(m.allowed.begin(), m.allowed.end(),
                                  [&](const AllowedInclude& a) { return a.file == rel && a.header == header; });
      if (allowed != m.allowed.end()) {
        allowed->used = true;
        continue;
      }
      out.push_back(rel + ":" + std::to_string(n) + ": layer '" + m.layers[*own].name + "' includes \"" + header +
                    "\" of layer '" + m.layers[*theirs].name + "', above it");
    }
  }
  for (const auto& a : m.allowed)
    if (!a.used)
      out.push_back(layers + ":" + std::to_string(a.line) + ": allow " + a.file + " " + a.header +
                    ": no such upward include any more (remove the entry)");
  return out;
}

}  // namespace dlscale::test
