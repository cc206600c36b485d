// Internal: what both topology importers (nvidia_smi.cpp, nccl_xml.cpp) read a dump into, and the
// cluster YAML they both write from it (cluster_yaml.cpp).
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <utility>
#include <vector>

#include "dlscale/error.hpp"
#include "dlscale/topology.hpp"

namespace dlscale::topo_import {

struct ImportedLink {
  std::string a, b, kind;
  int count = 0, generation = 0, lanes = 0;
  std::string bandwidth;  // an explicit bandwidth ("5000 GB/s") instead of generation and lanes
};

struct ImportedCpu {
  std::string name, arch = "x86", vendor = "intel", model;
};

struct ImportedNode {
  std::string source, what;
  int gpus = 0;
  int sm = 0;
  std::vector<ImportedCpu> cpus;
  std::vector<std::string> switches, nvswitches;
  std::vector<std::pair<std::string, std::string>> nics;  // name, speed ("" when unknown)
  std::vector<ImportedLink> links;
  int nvlinks_per_gpu = 0;         // a GPU's NVLinks (to the switches, or summed over its peers)
  bool cpu_known = false;          // the dump says which CPU (NCCL's XML does, nvidia-smi does not)
  bool gpu_unnamed = false;        // no GPU in the file says what it is (an NCCL_TOPO_FILE's GPUs by PCI class alone)
  std::vector<std::string> notes;  // what was guessed or defaulted: warnings, and comments in the YAML
};

/// A name the cluster YAML can carry unquoted as a vertex: a letter or digit, then letters, digits, '_', '-', '.'.
inline bool plain_name(const std::string& d) {
  return !d.empty() && std::isalnum(static_cast<unsigned char>(d[0])) && std::all_of(d.begin(), d.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.';
  });
}

/// `s` with every byte outside printable ASCII written as \xNN, for error messages that stay one line.
inline std::string printable(const std::string& s) {
  std::string out;
  for (const char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    out += u >= 0x20 && u < 0x7f ? std::string(1, ch) : fmt::format("\\x{:02x}", u);
  }
  return out;
}

[[noreturn]] inline void fail_at(const std::string& file, int line, const std::string& msg, int column = 1) {
  throw InputError(SourceLocation{file, std::max(line, 1), std::max(column, 1)}, "", msg);
}

/// What both importers do last: the CPU (--cpu, or a stated guess), the GPU (--gpu, or from the SM and
/// NVLinks, stated), the links between CPU sockets, --nodes/--fabric; then the YAML.
std::string write_cluster_yaml(ImportedNode& n, const TopologyImportOptions& opt, std::vector<std::string>* warnings);

}  // namespace dlscale::topo_import
