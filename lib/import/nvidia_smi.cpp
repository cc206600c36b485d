// Import of an `nvidia-smi topo -m` capture into a cluster YAML (one node) with a `node:` section.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <numeric>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "dlscale/error.hpp"
#include "dlscale/topology.hpp"
#include "import/imported_node.hpp"
#include "io/numbers.hpp"
#include "io/text.hpp"

namespace dlscale {
using topo_import::fail_at;
using topo_import::ImportedCpu;
using topo_import::ImportedNode;
using topo_import::plain_name;
using topo_import::printable;

namespace {

/// `line` with terminal escape sequences blanked: nvidia-smi underlines the header on a terminal
/// ("\x1b[4mGPU0\tGPU1 … GPU NUMA ID\x1b[0m"), and a copy from a web page may have lost the ESC and kept
/// "[4m". Spaces of the same width keep every column where it was for errors.
std::string without_terminal_codes(std::string line) {
  for (std::size_t i = 0; i < line.size(); ++i) {
    const bool esc = line[i] == '\x1b';
    if (!esc && line[i] != '[') continue;
    std::size_t j = i + (esc ? 1 : 0);
    if (j >= line.size() || line[j] != '[') continue;
    ++j;
    while (j < line.size() && (std::isdigit(static_cast<unsigned char>(line[j])) || line[j] == ';')) ++j;
    // ESC [ … any final letter; a bare "[4m" only as SGR (digits, then 'm')
    if (j >= line.size() || !(esc ? std::isalpha(static_cast<unsigned char>(line[j])) != 0 : line[j] == 'm' && j > i + 1))
      continue;
    std::fill(line.begin() + static_cast<std::ptrdiff_t>(i), line.begin() + static_cast<std::ptrdiff_t>(j) + 1, ' ');
    i = j;
  }
  return line;
}

/// What a launcher puts before each line of a capture run on another host: pdsh's "host: ", srun
/// --label's "3: ", a timestamp of kubectl logs --timestamps. Returns the prefix's length (0: none) and
/// the pdsh host. A legend line "  NIC0: mlx5_2" has no prefix.
std::pair<std::size_t, std::string> capture_prefix(const std::string& line) {
  static const std::regex prefix(
      R"(^(?:\d{4}-\d\d-\d\dT[0-9:.,]+(?:Z|[+-]\d\d:?\d\d)? |\s*\d{1,6}:[ \t]|([A-Za-z0-9][A-Za-z0-9._-]*):[ \t]))");
  std::smatch m;
  std::size_t length = 0;
  std::string host;
  for (int guard = 0; guard < 3; ++guard) {
    const std::string rest = line.substr(length);
    if (!std::regex_search(rest, m, prefix)) break;
    if (m[1].matched) {
      const std::string word = m[1].str();
      if (word.rfind("NIC", 0) == 0 || word == "Legend") break;  // "NIC0: mlx5_2", not a host
      if (host.empty()) host = word;
    }
    length += static_cast<std::size_t>(m.length(0));
  }
  return {length, host};
}

constexpr const char* kRerunSmi = "rerun nvidia-smi topo -m and keep its whole output";

// ---- nvidia-smi topo -m ------------------------------------------------------------------------------
// Cells are separated by any run of whitespace (tabs as nvidia-smi prints them, spaces as a terminal copy
// or a web page gives them). The header's multi-word columns ("CPU Affinity", "NUMA Affinity", "GPU NUMA
// ID") are joined again; NIC rows and the legends follow the matrix ("NIC0: mlx5_2" names NIC0).

struct SmiRow {
  std::string name;
  std::vector<std::string> cells;
  std::vector<int> at;  // 1-based column of each cell, for errors
  std::string affinity, numa;
  int line = 0;
  int end = 1;  // the column after the row's last character
};

/// A capture as read: the header's columns, the GPU rows, the NIC rows and the NIC legend.
struct SmiCapture {
  std::vector<std::string> columns;
  std::vector<int> header_at;
  int header_line = 0;
  int headless_row = 0;  // the first "GPU0 X …" row before any header (the header was cut off)
  std::vector<SmiRow> rows;
  std::map<std::string, std::vector<std::string>> nic_rows;  // NIC row → its cells under the device columns
  std::map<std::string, std::string> legend;                 // NIC0 → mlx5_2
  int later_capture = 0;                                     // the line of a second capture's header (only the first is read)
};

/// Whitespace-separated cells; `at` receives the 1-based column where each cell's text starts.
std::vector<std::string> split_cells(const std::string& s, std::vector<int>& at) {
  std::vector<std::string> out;
  at.clear();
  std::size_t i = 0;
  const auto space = [](char ch) { return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\v' || ch == '\f'; };
  while (i < s.size()) {
    while (i < s.size() && space(s[i])) ++i;
    if (i >= s.size()) break;
    const std::size_t b = i;
    while (i < s.size() && !space(s[i])) ++i;
    out.push_back(s.substr(b, i - b));
    at.push_back(static_cast<int>(b) + 1);
  }
  return out;
}

bool affinity_col(const std::string& c) { return c == "CPU Affinity"; }
bool numa_col(const std::string& c) { return c == "NUMA Affinity" || c == "GPU NUMA ID"; }
bool info_col(const std::string& c) { return affinity_col(c) || numa_col(c); }

/// The header: "GPU0 GPU1 …" after an empty corner cell (or "GPU0" first when a copy trimmed the line),
/// not the row "GPU0 X …". Returns whether the line was the header.
bool read_header(SmiCapture& cap, const std::vector<std::string>& cells, const std::vector<int>& at, int lineno) {
  const bool corner = at[0] > 1 && cells[0].rfind("GPU", 0) == 0;
  if (!corner && cells[0] != "GPU0") return false;
  if (cells.size() > 1 && cells[1] == "X") {
    if (!cap.headless_row) cap.headless_row = lineno;
    return false;
  }
  cap.header_line = lineno;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    std::string c = cells[i];
    int c_at = at[i];
    if (c == "CPU" && i + 1 < cells.size() && cells[i + 1] == "Affinity") c = "CPU Affinity", ++i;
    else if (c == "NUMA" && i + 1 < cells.size() && cells[i + 1] == "Affinity") c = "NUMA Affinity", ++i;
    else if (c == "GPU" && i + 2 < cells.size() && cells[i + 1] == "NUMA" && cells[i + 2] == "ID") c = "GPU NUMA ID", i += 2;
    cap.columns.push_back(c);
    cap.header_at.push_back(c_at);
  }
  return true;
}

/// A GPU row: GPU0, GPU1, ... in order, each with a cell under every column; the affinity and NUMA cells
/// set aside. `last` says the capture ends after it.
void read_gpu_row(SmiCapture& cap, const std::string& file, const std::string& line, const std::vector<std::string>& cells,
                  const std::vector<int>& at, int lineno, bool last) {
  // nvidia-smi prints GPU0, GPU1, ... in order, each once. A repeated or skipped row (found by
  // fuzz_nvidia_smi: a matrix pasted twice) would make GPUs no column describes.
  if (const auto k = whole_number(std::string_view(cells[0]).substr(3), 0, 1 << 20);
      !k || *k != static_cast<long long>(cap.rows.size()))
    fail_at(file, lineno,
            fmt::format("row '{}' where GPU{} belongs (the rows are GPU0, GPU1, ... in order, each once)", printable(cells[0]),
                        cap.rows.size()),
            at[0]);
  SmiRow r{cells[0], {}, {}, {}, {}, lineno, static_cast<int>(line.find_last_not_of(" \t\r")) + 2};
  // Every column of the header needs its cell: a row one cell short would shift the affinity into
  // the matrix and the matrix out of place.
  const auto& columns = cap.columns;
  if (cells.size() - 1 < columns.size())
    fail_at(file, lineno,
            fmt::format("row {} has {} cells, the header names {} columns{}", cells[0], cells.size() - 1, columns.size(),
                        last ? fmt::format(" (the capture ends here: {})", kRerunSmi) : ""),
            r.end);
  for (std::size_t i = 1; i < cells.size(); ++i) {
    if (i - 1 < columns.size() && affinity_col(columns[i - 1])) r.affinity = cells[i];
    else if (i - 1 < columns.size() && columns[i - 1] == "NUMA Affinity") r.numa = cells[i];
    else if (i - 1 < columns.size() && numa_col(columns[i - 1])) continue;
    else {
      r.cells.push_back(cells[i]);
      r.at.push_back(at[i]);
    }
  }
  cap.rows.push_back(std::move(r));
}

/// The capture's lines: terminal codes and launcher prefixes blanked, the header, the GPU rows, the NIC
/// rows and the legends. A capture without a header or without rows fails.
SmiCapture read_capture(const std::string& text, const std::string& file) {
  // a UTF-8 byte-order mark (an editor's save) is blanked like any other prefix
  std::istringstream in(text.rfind("\xEF\xBB\xBF", 0) == 0 ? "   " + text.substr(3) : text);
  SmiCapture cap;
  std::string line;
  int lineno = 0;
  std::string capture_host, pending_host;  // pdsh: the host whose capture is read, the host of this line
  bool after = false;                      // past the matrix (its legends)
  while (std::getline(in, line)) {
    ++lineno;
    line = without_terminal_codes(line);
    // launcher prefixes are blanked; with several pdsh hosts, the first whose header comes is read
    if (const auto [length, host] = capture_prefix(line); length > 0) {
      if (!host.empty() && !cap.columns.empty() && host != capture_host) continue;
      std::fill(line.begin(), line.begin() + static_cast<std::ptrdiff_t>(length), ' ');
      pending_host = host;
    } else {
      pending_host.clear();
    }
    std::vector<int> at;
    auto cells = split_cells(line, at);
    if (cells.empty()) continue;
    if (cap.columns.empty()) {
      if (read_header(cap, cells, at, lineno)) capture_host = pending_host;
      continue;
    }
    if (after || cells[0].rfind("Legend", 0) == 0 || cells[0].rfind("NIC Legend", 0) == 0) {
      after = true;
      if (cells.size() == 2 && cells[0].size() > 4 && cells[0].rfind("NIC", 0) == 0 && cells[0].back() == ':')
        cap.legend[cells[0].substr(0, cells[0].size() - 1)] = cells[1];
      continue;
    }
    if (cells[0].rfind("GPU", 0) != 0) {
      // a NIC's row (NIC0, or the device name old drivers print: mlx5_0, bnxt_re0, …)
      if (std::find(cap.columns.begin(), cap.columns.end(), cells[0]) != cap.columns.end()) {
        std::vector<std::string> v(cells.begin() + 1, cells.end());
        cap.nic_rows[cells[0]] = v;
      }
      continue;  // NIC rows, text around the matrix
    }
    // After the rows: another command's output ("GPU 0: NVIDIA …" of nvidia-smi -L) ends the matrix; so
    // does a second capture's header (two hosts' captures one after the other), said in a warning.
    if (!cap.rows.empty() && !whole_number(std::string_view(cells[0]).substr(3), 0, 1 << 20)) {
      after = true;
      continue;
    }
    if (!cap.rows.empty() && cells[0] == "GPU0" && cells.size() > 1 && cells[1] != "X") {
      cap.later_capture = lineno;
      after = true;
      continue;
    }
    read_gpu_row(cap, file, line, cells, at, lineno, in.peek() == EOF);
  }
  if (cap.columns.empty() && cap.headless_row)
    fail_at(file, cap.headless_row,
            fmt::format("a GPU0 row without the header line above it (a cut-off capture): {}", kRerunSmi));
  if (cap.columns.empty())
    fail_at(file, 1, fmt::format("no 'nvidia-smi topo -m' matrix found (a header row starting with GPU0): {}", kRerunSmi));
  if (cap.rows.empty())
    fail_at(file, cap.header_line, fmt::format("no GPU row follows the header (a cut-off capture): {}", kRerunSmi),
            cap.header_at.front());
  return cap;
}

/// The device columns (GPUs and NICs), checked: every row has a cell under each, a GPU column names one of
/// the rows, another column is a plain device name.
std::vector<std::string> device_columns(const SmiCapture& cap, const std::string& file) {
  const auto& columns = cap.columns;
  std::vector<std::string> devs;  // GPU and NIC columns
  for (const auto& c : columns)
    if (!info_col(c)) devs.push_back(c);
  const int ngpus = static_cast<int>(cap.rows.size());
  for (const auto& r : cap.rows)
    if (r.cells.size() < devs.size())
      fail_at(file, r.line, fmt::format("row {} has {} cells, the header names {}", r.name, r.cells.size(), devs.size()), r.end);
  // A GPU column "GPU<k>" must name one of the matrix's rows (0 ≤ k < rows).
  for (std::size_t c = 0; c < columns.size(); ++c) {
    const auto& d = columns[c];
    if (info_col(d)) continue;
    if (d.rfind("GPU", 0) == 0 && !whole_number(std::string_view(d).substr(3), 0, ngpus - 1)) {
      // GPU0 … GPU<rows-1> all there, and more: the rows stop short of the header (a cut-off capture)
      bool cut = whole_number(std::string_view(d).substr(3), ngpus, 1 << 20).has_value();
      for (int g = 0; g < ngpus && cut; ++g)
        cut = std::find(columns.begin(), columns.end(), fmt::format("GPU{}", g)) != columns.end();
      fail_at(file, cap.header_line,
              fmt::format("column '{}' names no GPU row (the matrix has GPU0 … GPU{}){}", d, ngpus - 1,
                          cut ? fmt::format(": the rows stop short of the header (a cut-off capture); {}", kRerunSmi) : ""),
              cap.header_at[c]);
    }
    // Another device column (NIC0, mlx5_0) becomes a vertex name in the YAML written below: it must be a
    // plain name, or the file would not parse (found by fuzz_nvidia_smi: a header cell of binary bytes).
    if (d.rfind("GPU", 0) != 0 && !plain_name(d))
      fail_at(file, cap.header_line,
              fmt::format("column '{}' is not a device name (a letter or digit, then letters, digits, '_', '-' or '.')",
                          printable(d)),
              cap.header_at[c]);
  }
  return devs;
}

/// The GPU a device column names (-1 for a NIC's); the columns are checked (device_columns).
int gpu_col(const std::string& d, int ngpus) {
  return d.rfind("GPU", 0) == 0 ? static_cast<int>(*whole_number(std::string_view(d).substr(3), 0, ngpus - 1)) : -1;
}

/// CPUs: one per NUMA node when the capture has a NUMA column with numbers (NCCL makes one CPU vertex per
/// NUMA node), else one per distinct CPU affinity, in order of appearance. Returns each GPU's CPU.
std::vector<int> add_cpus(const std::vector<SmiRow>& rows, ImportedNode& node) {
  const int ngpus = static_cast<int>(rows.size());
  std::vector<std::string> affinities;
  std::vector<int> cpu_of(static_cast<std::size_t>(ngpus), 0);
  const bool by_numa =
      std::all_of(rows.begin(), rows.end(), [](const SmiRow& r) { return whole_number(r.numa, 0, 4095).has_value(); });
  for (int g = 0; g < ngpus; ++g) {
    const auto& row = rows[static_cast<std::size_t>(g)];
    const auto& a = by_numa ? row.numa : row.affinity;
    auto it = std::find(affinities.begin(), affinities.end(), a);
    if (it == affinities.end()) {
      affinities.push_back(a);
      it = affinities.end() - 1;
    }
    cpu_of[static_cast<std::size_t>(g)] = static_cast<int>(it - affinities.begin());
  }
  for (std::size_t c = 0; c < affinities.size(); ++c)
    node.cpus.push_back(ImportedCpu{fmt::format("cpu{}", c), "x86", "intel", ""});
  return cpu_of;
}

/// The NVLinks between GPUs ("NV4"); as many to every peer as a GPU can have in all means NVSwitches.
/// Returns the NVLinks of one GPU.
int add_nvlinks(const std::vector<SmiRow>& rows, const std::vector<std::string>& devs, const std::string& file,
                ImportedNode& node) {
  const int ngpus = static_cast<int>(rows.size());
  std::vector<std::vector<int>> nv(static_cast<std::size_t>(ngpus), std::vector<int>(static_cast<std::size_t>(ngpus), 0));
  int max_links = 0;
  for (int g = 0; g < ngpus; ++g)
    for (std::size_t d = 0; d < devs.size(); ++d) {
      const int o = gpu_col(devs[d], ngpus);
      const auto& cell = rows[static_cast<std::size_t>(g)].cells[d];
      if (o >= 0 && o != g && cell.rfind("NV", 0) == 0) {
        const auto links = whole_number(std::string_view(cell).substr(2), 1, 64);
        if (!links)
          fail_at(file, rows[static_cast<std::size_t>(g)].line, fmt::format("'{}' is not an NVLink count like NV2", cell),
                  rows[static_cast<std::size_t>(g)].at[d]);
        nv[static_cast<std::size_t>(g)][static_cast<std::size_t>(o)] = static_cast<int>(*links);
        max_links = std::max(max_links, nv[static_cast<std::size_t>(g)][static_cast<std::size_t>(o)]);
      }
    }
  bool all_same = ngpus > 2;
  for (int a = 0; a < ngpus && all_same; ++a)
    for (int b = 0; b < ngpus; ++b)
      if (a != b && nv[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)] != max_links) all_same = false;
  const bool switched = all_same && max_links * (ngpus - 1) > 18;  // more links than a GPU has: NVSwitches
  int links_per_gpu = 0;  // what a GPU of this capture has: the bundle to the switches, or the sum to its peers
  if (switched) {
    links_per_gpu = max_links;
    node.nvswitches.push_back("nvs0");
    for (int g = 0; g < ngpus; ++g) node.links.push_back({fmt::format("gpu{}", g), "nvs0", "nvlink", max_links, 0, 0, {}});
  } else {
    for (int a = 0; a < ngpus; ++a) {
      links_per_gpu = std::max(
          links_per_gpu, std::accumulate(nv[static_cast<std::size_t>(a)].begin(), nv[static_cast<std::size_t>(a)].end(), 0));
      for (int b = a + 1; b < ngpus; ++b)
        if (int k = nv[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)]; k > 0)
          node.links.push_back({fmt::format("gpu{}", a), fmt::format("gpu{}", b), "nvlink", k, 0, 0, {}});
    }
  }
  return links_per_gpu;
}

/// The PCIe devices (GPUs, then NICs) grouped: devices joined by PIX share a switch (a union-find over
/// `parent`); pairs joined by PXB sit behind switches that share an upper one; a NIC's CPU is that of a
/// GPU near it.
struct PcieGroups {
  std::vector<std::string> names;
  std::vector<int> parent;
  std::vector<std::pair<int, int>> pxb;
  std::map<int, int> nic_cpu;

  int find(int x) {
    auto& p = parent[static_cast<std::size_t>(x)];
    return p == x ? x : p = find(p);
  }
};

PcieGroups group_pcie(const SmiCapture& cap, const std::vector<std::string>& devs, const std::vector<int>& cpu_of) {
  const int ngpus = static_cast<int>(cap.rows.size());
  PcieGroups pg;
  for (int g = 0; g < ngpus; ++g) pg.names.push_back(fmt::format("gpu{}", g));
  for (const auto& d : devs)
    if (gpu_col(d, ngpus) < 0) pg.names.push_back(d);
  auto index_of = [&](const std::string& d) {
    const int g = gpu_col(d, ngpus);
    return g >= 0 ? g : static_cast<int>(std::find(pg.names.begin(), pg.names.end(), d) - pg.names.begin());
  };
  pg.parent.resize(pg.names.size());
  std::iota(pg.parent.begin(), pg.parent.end(), 0);
  for (int g = 0; g < ngpus; ++g)
    for (std::size_t d = 0; d < devs.size(); ++d) {
      const int o = index_of(devs[d]);
      const auto& cell = cap.rows[static_cast<std::size_t>(g)].cells[d];
      if (o == g) continue;
      if (cell == "PIX") pg.parent[static_cast<std::size_t>(pg.find(o))] = pg.find(g);
      if (cell == "PXB") pg.pxb.emplace_back(g, o);
      if (o >= ngpus && (cell == "PHB" || cell == "NODE" || cell == "PIX" || cell == "PXB") && !pg.nic_cpu.count(o))
        pg.nic_cpu[o] = cpu_of[static_cast<std::size_t>(g)];
    }
  // NIC rows: two ports of one card (PIX between NICs) share its switch.
  for (const auto& [nic, cells] : cap.nic_rows) {
    if (std::find(devs.begin(), devs.end(), nic) == devs.end()) continue;
    const int a = index_of(nic);
    for (std::size_t d = 0; d < devs.size() && d < cells.size(); ++d) {
      const int o = index_of(devs[d]);
      if (o >= ngpus && o != a && cells[d] == "PIX") pg.parent[static_cast<std::size_t>(pg.find(o))] = pg.find(a);
    }
  }
  return pg;
}

/// The PCIe switches of the groups and their links: a device to its switch (or its CPU), a switch to its
/// upper switch (or its CPU), an upper switch to the CPU of one of its members; then the NICs.
void add_pcie(PcieGroups& pg, int ngpus, const std::vector<int>& cpu_of, ImportedNode& node) {
  const auto& names = pg.names;
  std::map<int, std::string> switch_of;  // root → switch name
  std::set<int> behind_bridges;          // devices with a PXB neighbour: behind a switch of their own
  for (auto [a, b] : pg.pxb) behind_bridges.insert(pg.find(a)), behind_bridges.insert(pg.find(b));
  for (std::size_t i = 0; i < names.size(); ++i) {
    const int r = pg.find(static_cast<int>(i));
    int members = 0;
    for (std::size_t j = 0; j < names.size(); ++j) members += pg.find(static_cast<int>(j)) == r;
    if ((members >= 2 || behind_bridges.count(r)) && !switch_of.count(r)) {
      switch_of[r] = fmt::format("plx{}", switch_of.size());
      node.switches.push_back(switch_of[r]);
    }
  }
  auto cpu_name_of = [&](int i) {
    if (i < ngpus) return fmt::format("cpu{}", cpu_of[static_cast<std::size_t>(i)]);
    auto it = pg.nic_cpu.find(i);
    return fmt::format("cpu{}", it == pg.nic_cpu.end() ? 0 : it->second);
  };
  std::map<std::string, std::string> upper;  // switch → upper switch
  for (auto [a, b] : pg.pxb) {
    const auto ra = pg.find(a), rb = pg.find(b);
    if (!switch_of.count(ra) || !switch_of.count(rb) || ra == rb) continue;
    const auto& sa = switch_of[ra];
    const auto& sb = switch_of[rb];
    std::string up = upper.count(sa) ? upper[sa] : upper.count(sb) ? upper[sb] : "";
    if (up.empty()) {
      up = fmt::format("plxu{}", node.switches.size());
      node.switches.push_back(up);
    }
    upper[sa] = upper[sb] = up;
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    const int r = pg.find(static_cast<int>(i));
    const std::string target = switch_of.count(r) ? switch_of[r] : cpu_name_of(static_cast<int>(i));
    node.links.push_back({names[i], target, "pcie", 0, 3, 16, {}});
  }
  for (const auto& [r, sw] : switch_of) {
    const std::string target = upper.count(sw) ? upper[sw] : cpu_name_of(r);
    node.links.push_back({sw, target, "pcie", 0, 3, 16, {}});
  }
  std::set<std::string> ups;
  for (const auto& [sw, up] : upper) {
    if (!ups.insert(up).second) continue;
    int member = 0;
    for (const auto& [r, s] : switch_of)
      if (s == sw) member = r;
    node.links.push_back({up, cpu_name_of(member), "pcie", 0, 3, 16, {}});
  }
  for (std::size_t i = static_cast<std::size_t>(ngpus); i < names.size(); ++i) node.nics.emplace_back(names[i], "");
}

/// NIC legend: "NIC0: mlx5_2" gives NIC0 its name (a plain one, not another device's).
void name_nics(const std::map<std::string, std::string>& legend, const std::vector<std::string>& names, ImportedNode& node) {
  for (auto& [nic, speed] : node.nics) {
    const auto it = legend.find(nic);
    if (it == legend.end() || !plain_name(it->second) || std::find(names.begin(), names.end(), it->second) != names.end())
      continue;
    for (auto& l : node.links) {
      if (l.a == nic) l.a = it->second;
      if (l.b == nic) l.b = it->second;
    }
    nic = it->second;
  }
}

}  // namespace

std::string import_nvidia_smi(const std::string& text, const std::string& file, const TopologyImportOptions& opt,
                              std::vector<std::string>* warnings) {
  const SmiCapture cap = read_capture(text, file);
  const std::vector<std::string> devs = device_columns(cap, file);
  const int ngpus = static_cast<int>(cap.rows.size());
  ImportedNode node;
  node.source = file;
  node.what = "nvidia-smi topo -m";
  node.gpus = ngpus;
  if (cap.later_capture)
    node.notes.push_back(
        fmt::format("a second capture begins at line {}: only the first (line {}) is read", cap.later_capture, cap.header_line));
  const std::vector<int> cpu_of = add_cpus(cap.rows, node);
  const int links_per_gpu = add_nvlinks(cap.rows, devs, file, node);
  PcieGroups pcie = group_pcie(cap, devs, cpu_of);
  add_pcie(pcie, ngpus, cpu_of, node);
  name_nics(cap.legend, pcie.names, node);
  for (std::size_t a = 0; a < node.cpus.size(); ++a)
    for (std::size_t b = a + 1; b < node.cpus.size(); ++b)
      node.links.push_back({node.cpus[a].name, node.cpus[b].name, "", 0, 0, 0, {}});  // kind once the CPU is known
  node.nvlinks_per_gpu = links_per_gpu;
  return topo_import::write_cluster_yaml(node, opt, warnings);
}

}  // namespace dlscale
