// Imports of topology dumps users already have: an `nvidia-smi topo -m` capture and an NCCL
// NCCL_TOPO_DUMP_FILE XML. Both produce a cluster YAML (one node) with a `node:` section.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <functional>
#include <map>
#include <numeric>
#include <regex>
#include <set>
#include <sstream>

#include "dlscale/error.hpp"
#include "dlscale/io.hpp"
#include "dlscale/topology.hpp"
#include "io/numbers.hpp"
#include "io/text.hpp"
#include "io/yaml_writer.hpp"

namespace dlscale {
namespace {

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
  int nvlinks_per_gpu = 0;  // a GPU's NVLinks (to the switches, or summed over its peers)
  bool cpu_known = false;   // the dump says which CPU (NCCL's XML does, nvidia-smi does not)
  bool gpu_unnamed = false;  // no GPU in the file says what it is (an NCCL_TOPO_FILE's GPUs by PCI class alone)
  std::vector<std::string> notes;  // what was guessed or defaulted: warnings, and comments in the YAML
};

/// A name the cluster YAML can carry unquoted as a vertex: a letter or digit, then letters, digits, '_', '-', '.'.
bool plain_name(const std::string& d) {
  return !d.empty() && std::isalnum(static_cast<unsigned char>(d[0])) &&
         std::all_of(d.begin(), d.end(), [](char ch) {
           return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.';
         });
}

/// `s` with every byte outside printable ASCII written as \xNN, for error messages that stay one line.
std::string printable(const std::string& s) {
  std::string out;
  for (const char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    out += u >= 0x20 && u < 0x7f ? std::string(1, ch) : fmt::format("\\x{:02x}", u);
  }
  return out;
}

/// The GPU catalogue's best match for what a dump says: its SM version (0: unknown, as in nvidia-smi)
/// and the NVLinks of one GPU. Among the entries of that SM (all, when unknown), the first whose NVLink
/// count equals `nvlinks`, else the first with the fewest NVLinks at least `nvlinks`, else the first.
/// Returns the id and the other ids that matched as well.
std::pair<std::string, std::vector<std::string>> guess_gpu(int sm, int nvlinks) {
  struct Entry {
    std::string id;
    int sm, nvlinks;
  };
  std::vector<Entry> all;  // ids and specs come in the file's order, from one parse of the whole catalogue
  const auto ids = list_gpu_ids();
  const auto specs = load_gpu_catalogue();
  for (std::size_t i = 0; i < ids.size() && i < specs.size(); ++i)
    all.push_back(Entry{ids[i], specs[i].sm_version, specs[i].nvlink_count});
  std::vector<Entry> same_sm;
  for (const auto& e : all)
    if (sm == 0 || e.sm == sm) same_sm.push_back(e);
  if (same_sm.empty()) same_sm = all;
  if (same_sm.empty()) throw InputError("the GPU catalogue is empty");
  std::vector<std::string> exact;
  for (const auto& e : same_sm)
    if (e.nvlinks == nvlinks) exact.push_back(e.id);
  if (!exact.empty()) return {exact.front(), exact};
  const Entry* best = nullptr;
  for (const auto& e : same_sm)
    if (e.nvlinks >= nvlinks && (!best || e.nvlinks < best->nvlinks)) best = &e;
  return {best ? best->id : same_sm.front().id, {}};
}

std::string cpu_link_kind(const ImportedCpu& c) {
  if (c.arch == "power") return "xbus";
  if (c.vendor == "amd") return "infinity_fabric";
  if (c.model == "broadwell" || c.model.empty()) return "qpi";
  return "upi";
}

std::string to_yaml(const ImportedNode& n, const std::string& gpu_id, int nodes, const std::optional<FabricSpec>& fabric,
                    const std::vector<std::pair<std::string, std::string>>& assumed) {
  yamlio::Emitter o;
  o.comment("Imported by dlscale from " + n.source + " (" + n.what + ").");
  o.comment("Check 'gpu', 'nodes' and 'storage': the capture does not say.");
  for (const auto& note : n.notes) o.comment(note);
  std::string stem = n.source;
  if (auto s = stem.find_last_of('/'); s != std::string::npos) stem = stem.substr(s + 1);
  if (auto d = stem.find('.'); d != std::string::npos) stem = stem.substr(0, d);
  std::string name;
  for (char c : stem) name += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '-';
  o.pair(0, "name", name.empty() ? "imported" : name)
      .pair(0, "description", "imported from " + n.what)
      .pair(0, "nodes", std::to_string(nodes))
      .pair(0, "gpus_per_node", std::to_string(n.gpus))
      .pair(0, "gpu", gpu_id)
      .pair(0, "framework", "pytorch-ddp", "assumed: the capture does not say")
      .key(0, "storage", "placeholders: not in the capture", 16)
      .pair(2, "disk", yamlio::quoted("1 GB/s"))
      .pair(2, "page_cache", yamlio::quoted("10 GB/s"))
      .pair(0, "input", yamlio::FlowMap().add("data", "synthetic").str(),
            "so that the placeholders do not bind: give an input section (or --data) for real I/O")
      .key(0, "assumed", "said by every prediction on this cluster", 16);
  for (const auto& [key, what] : assumed) o.pair(2, key, yamlio::quoted(what));
  if (fabric)
    o.key(0, "fabric")
        .pair(2, "kind", fabric->kind)
        .pair(2, "speed", yamlio::quoted(fmt::format("{:.12g} GB/s", in_gigabytes_per_second(fabric->speed))));
  o.key(0, "node");
  if (!n.cpus.empty()) {
    o.key(2, "cpus");
    for (const auto& c : n.cpus) {
      yamlio::FlowMap m;
      m.add("name", c.name).add("arch", c.arch).add("vendor", c.vendor);
      if (!c.model.empty()) m.add("model", c.model);
      o.item(4, m.str());
    }
  }
  if (!n.switches.empty()) o.pair(2, "pcie_switches", yamlio::flow_sequence(n.switches));
  if (!n.nvswitches.empty()) o.pair(2, "nvswitches", yamlio::flow_sequence(n.nvswitches));
  if (!n.nics.empty()) {
    o.key(2, "nics");
    for (const auto& [nic, speed] : n.nics)
      o.item(4, yamlio::FlowMap().add("name", nic).add("speed", yamlio::quoted(speed.empty() ? "100 Gb/s" : speed)).str(),
             speed.empty() ? "speed not in the capture" : "", 3);
  }
  o.key(2, "links");
  for (const auto& l : n.links) {
    yamlio::FlowMap m;
    m.add("a", l.a).add("b", l.b).add("kind", l.kind);
    if (l.kind == "nvlink") m.add("count", std::to_string(l.count));
    if (l.kind == "pcie" && !l.bandwidth.empty()) m.add("bandwidth", yamlio::quoted(l.bandwidth));
    else if (l.kind == "pcie") m.add("generation", std::to_string(l.generation)).add("lanes", std::to_string(l.lanes));
    o.item(4, m.str());
  }
  return std::move(o).str();
}

[[noreturn]] void fail_at(const std::string& file, int line, const std::string& msg, int column = 1) {
  throw InputError(SourceLocation{file, std::max(line, 1), std::max(column, 1)}, "", msg);
}

/// --cpu VENDOR[:MODEL] (intel, intel:skylake, amd, power, arm) onto every CPU of the node.
void apply_cpu_option(ImportedNode& n, const std::string& spec) {
  const auto colon = spec.find(':');
  const std::string vendor = spec.substr(0, colon), model = colon == std::string::npos ? "" : spec.substr(colon + 1);
  const bool model_ok = std::all_of(model.begin(), model.end(), [](char ch) {
    return std::islower(static_cast<unsigned char>(ch)) || std::isdigit(static_cast<unsigned char>(ch)) || ch == '_';
  });
  if (!(vendor == "intel" || vendor == "amd" || vendor == "power" || vendor == "ibm" || vendor == "arm") || !model_ok)
    throw InputError(SourceLocation{}, "cpu", fmt::format("'{}' is not VENDOR[:MODEL] (intel, amd, power or arm; e.g. intel:skylake, "
                                          "intel:sapphire_rapids, amd)", spec));
  for (auto& c : n.cpus) {
    c.arch = vendor == "power" || vendor == "ibm" ? "power" : vendor == "arm" ? "arm" : "x86";
    c.vendor = vendor == "power" || vendor == "ibm" ? "ibm" : vendor == "arm" ? "other" : vendor;
    c.model = vendor == "power" || vendor == "ibm" ? (model.empty() ? "power9" : model) : model;
  }
}

/// The NICs --fabric KIND:SPEED[:COUNT] asks for: the first COUNT of the dump's, or more beside the GPUs
/// (NIC k on the PCIe parent of GPU k·gpus/added), all at the fabric's speed.
void apply_fabric(ImportedNode& n, const FabricSpec& f) {
  const std::size_t have = n.nics.size();
  const std::size_t want = f.nics > 0 ? static_cast<std::size_t>(f.nics) : std::max<std::size_t>(1, have);
  if (want < have) {
    std::set<std::string> gone;
    for (std::size_t i = want; i < have; ++i) gone.insert(n.nics[i].first);
    n.nics.resize(want);
    std::erase_if(n.links, [&](const ImportedLink& l) { return gone.count(l.a) || gone.count(l.b); });
  }
  for (std::size_t k = have; k < want; ++k) {
    const std::string gpu = fmt::format("gpu{}", (k - have) * static_cast<std::size_t>(n.gpus) / (want - have));
    ImportedLink l{fmt::format("nic{}", k), "", "pcie", 0, 3, 16, ""};
    for (const auto& g : n.links)
      if (g.kind == "pcie" && (g.a == gpu || g.b == gpu)) {
        l.b = g.a == gpu ? g.b : g.a;
        l.generation = g.generation;
        l.lanes = g.lanes;
        l.bandwidth = g.bandwidth;
        break;
      }
    if (l.b.empty()) l.b = n.cpus.empty() ? gpu : n.cpus.front().name;
    n.nics.emplace_back(l.a, "");
    n.links.push_back(l);
  }
  for (auto& [name, speed] : n.nics) speed = fmt::format("{:.12g} GB/s", in_gigabytes_per_second(f.speed));
}

/// What both importers do last: the CPU (--cpu, or a stated guess), the GPU (--gpu, or from the SM and
/// NVLinks, stated), the links between CPU sockets, --nodes/--fabric; then the YAML.
std::string finish(ImportedNode& n, const TopologyImportOptions& opt, std::vector<std::string>* warnings) {
  std::vector<std::string> said = std::move(n.notes);  // for stderr; the same lines go into the YAML as comments
  n.notes.clear();
  // for the YAML's `assumed:`, which every prediction on the cluster says
  std::vector<std::pair<std::string, std::string>> assumed{
      {"framework", "pytorch-ddp"}, {"input", "synthetic data (the capture names no storage)"}};
  if (!opt.cpu.empty()) {
    apply_cpu_option(n, opt.cpu);
  } else if (!n.cpu_known) {
    assumed.emplace_back("cpu", "Intel (not in the capture)");
    said.push_back(fmt::format("the CPU is not in the capture: assuming Intel {}(--cpu amd, --cpu intel:skylake … says which)",
                               n.cpus.size() > 1 ? "sockets joined by QPI " : ""));
  }
  for (auto& l : n.links)
    if (l.kind.empty()) {  // a link between two CPU sockets, of the kind their vendor and model give
      const auto it = std::find_if(n.cpus.begin(), n.cpus.end(), [&](const ImportedCpu& c) { return c.name == l.a; });
      l.kind = cpu_link_kind(it == n.cpus.end() ? ImportedCpu{} : *it);
    }
  std::string gpu_id;
  if (opt.gpu.empty() && n.gpu_unnamed)
    throw InputError(SourceLocation{}, "gpu", fmt::format("{} places its GPUs by PCI class alone (no <gpu> element says which model): "
                                          "--gpu ID says which (an id of topologies/gpus.yaml)", n.source));
  if (!opt.gpu.empty()) {
    try {
      gpu_id = opt.gpu;
      (void)find_gpu(opt.gpu);
    } catch (const InputError& e) {
      throw InputError(SourceLocation{}, "gpu", e.message());
    }
  } else {
    const auto [id, also] = guess_gpu(n.sm, n.nvlinks_per_gpu);
    gpu_id = id;
    const std::string from = n.sm ? fmt::format("SM {} and {} NVLinks per GPU", n.sm, n.nvlinks_per_gpu)
                                  : n.nvlinks_per_gpu ? fmt::format("{} NVLinks per GPU", n.nvlinks_per_gpu)
                                                      : std::string("no NVLink (a PCIe GPU; the capture says no more)");
    std::string others;
    for (const auto& a : also)
      if (a != id) others += (others.empty() ? "" : ", ") + a;
    said.push_back(fmt::format("gpu '{}' guessed from {}{}: --gpu ID says which", id, from,
                               others.empty() ? "" : " (also: " + others + ")"));
    assumed.emplace_back("gpu", fmt::format("{} (guessed from {})", id, from));
  }
  if (opt.nodes < 0) throw InputError(SourceLocation{}, "nodes", "a cluster needs at least one node");
  if (opt.nodes > 1 && !opt.fabric)
    throw InputError(SourceLocation{}, "nodes", "a cluster of more than one node needs --fabric KIND:SPEED[:COUNT] (e.g. infiniband:200Gb/s)");
  if (opt.fabric) apply_fabric(n, *opt.fabric);
  if (std::any_of(n.nics.begin(), n.nics.end(), [](const auto& nic) { return nic.second.empty(); }))
    assumed.emplace_back("nics", "100 Gb/s each (not in the capture)");
  for (const auto& s : said) {
    n.notes.push_back(s);
    if (warnings) warnings->push_back(fmt::format("{}: {}", n.source, s));
  }
  return to_yaml(n, gpu_id, std::max(1, opt.nodes), opt.fabric, assumed);
}

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
    if (j >= line.size() || !(esc ? std::isalpha(static_cast<unsigned char>(line[j])) != 0 : line[j] == 'm' && j > i + 1)) continue;
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

}  // namespace

// ---- nvidia-smi topo -m ------------------------------------------------------------------------------
// Cells are separated by any run of whitespace (tabs as nvidia-smi prints them, spaces as a terminal copy
// or a web page gives them). The header's multi-word columns ("CPU Affinity", "NUMA Affinity", "GPU NUMA
// ID") are joined again; NIC rows and the legends follow the matrix ("NIC0: mlx5_2" names NIC0).
std::string import_nvidia_smi(const std::string& text, const std::string& file, const TopologyImportOptions& opt,
                              std::vector<std::string>* warnings) {
  // a UTF-8 byte-order mark (an editor's save) is blanked like any other prefix
  std::istringstream in(text.rfind("\xEF\xBB\xBF", 0) == 0 ? "   " + text.substr(3) : text);
  std::string line;
  std::vector<std::string> columns;
  struct Row {
    std::string name;
    std::vector<std::string> cells;
    std::vector<int> at;  // 1-based column of each cell, for errors
    std::string affinity, numa;
    int line = 0;
    int end = 1;  // the column after the row's last character
  };
  std::vector<Row> rows;
  std::map<std::string, std::vector<std::string>> nic_rows;  // NIC row → its cells under the device columns
  std::map<std::string, std::string> legend;                 // NIC0 → mlx5_2
  int lineno = 0;
  // Whitespace-separated cells; `at` receives the 1-based column where each cell's text starts.
  auto split = [](const std::string& s, std::vector<int>& at) {
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
  };
  auto affinity_col = [](const std::string& c) { return c == "CPU Affinity"; };
  auto numa_col = [](const std::string& c) { return c == "NUMA Affinity" || c == "GPU NUMA ID"; };
  auto info_col = [&](const std::string& c) { return affinity_col(c) || numa_col(c); };
  std::vector<int> header_at;
  int header_line = 0;
  int headless_row = 0;  // the first "GPU0 X …" row before any header (the header was cut off)
  std::string capture_host, pending_host;  // pdsh: the host whose capture is read, the host of this line
  int later_capture = 0;                   // the line of a second capture's header (only the first is read)
  bool after = false;  // past the matrix (its legends)
  while (std::getline(in, line)) {
    ++lineno;
    line = without_terminal_codes(line);
    // launcher prefixes are blanked; with several pdsh hosts, the first whose header comes is read
    if (const auto [length, host] = capture_prefix(line); length > 0) {
      if (!host.empty() && !columns.empty() && host != capture_host) continue;
      std::fill(line.begin(), line.begin() + static_cast<std::ptrdiff_t>(length), ' ');
      pending_host = host;
    } else {
      pending_host.clear();
    }
    std::vector<int> at;
    auto cells = split(line, at);
    if (cells.empty()) continue;
    if (columns.empty()) {
      // The header: "GPU0 GPU1 …" after an empty corner cell (or "GPU0" first when a copy trimmed the
      // line), not the row "GPU0 X …".
      const bool corner = at[0] > 1 && cells[0].rfind("GPU", 0) == 0;
      if (!corner && cells[0] != "GPU0") continue;
      if (cells.size() > 1 && cells[1] == "X") {
        if (!headless_row) headless_row = lineno;
        continue;
      }
      header_line = lineno;
      capture_host = pending_host;
      for (std::size_t i = 0; i < cells.size(); ++i) {
        std::string c = cells[i];
        int c_at = at[i];
        if (c == "CPU" && i + 1 < cells.size() && cells[i + 1] == "Affinity") c = "CPU Affinity", ++i;
        else if (c == "NUMA" && i + 1 < cells.size() && cells[i + 1] == "Affinity") c = "NUMA Affinity", ++i;
        else if (c == "GPU" && i + 2 < cells.size() && cells[i + 1] == "NUMA" && cells[i + 2] == "ID") c = "GPU NUMA ID", i += 2;
        columns.push_back(c);
        header_at.push_back(c_at);
      }
      continue;
    }
    if (after || cells[0].rfind("Legend", 0) == 0 || cells[0].rfind("NIC Legend", 0) == 0) {
      after = true;
      if (cells.size() == 2 && cells[0].size() > 4 && cells[0].rfind("NIC", 0) == 0 && cells[0].back() == ':')
        legend[cells[0].substr(0, cells[0].size() - 1)] = cells[1];
      continue;
    }
    if (cells[0].rfind("GPU", 0) != 0) {
      // a NIC's row (NIC0, or the device name old drivers print: mlx5_0, bnxt_re0, …)
      if (std::find(columns.begin(), columns.end(), cells[0]) != columns.end()) {
        std::vector<std::string> v(cells.begin() + 1, cells.end());
        nic_rows[cells[0]] = v;
      }
      continue;  // NIC rows, text around the matrix
    }
    // After the rows: another command's output ("GPU 0: NVIDIA …" of nvidia-smi -L) ends the matrix; so
    // does a second capture's header (two hosts' captures one after the other), said in a warning.
    if (!rows.empty() && !whole_number(std::string_view(cells[0]).substr(3), 0, 1 << 20)) {
      after = true;
      continue;
    }
    if (!rows.empty() && cells[0] == "GPU0" && cells.size() > 1 && cells[1] != "X") {
      later_capture = lineno;
      after = true;
      continue;
    }
    // nvidia-smi prints GPU0, GPU1, ... in order, each once. A repeated or skipped row (found by
    // fuzz_nvidia_smi: a matrix pasted twice) would make GPUs no column describes.
    if (const auto k = whole_number(std::string_view(cells[0]).substr(3), 0, 1 << 20);
        !k || *k != static_cast<long long>(rows.size()))
      fail_at(file, lineno,
              fmt::format("row '{}' where GPU{} belongs (the rows are GPU0, GPU1, ... in order, each once)",
                          printable(cells[0]), rows.size()),
              at[0]);
    Row r{cells[0], {}, {}, {}, {}, lineno, static_cast<int>(line.find_last_not_of(" \t\r")) + 2};
    // Every column of the header needs its cell: a row one cell short would shift the affinity into
    // the matrix and the matrix out of place.
    if (cells.size() - 1 < columns.size())
      fail_at(file, lineno, fmt::format("row {} has {} cells, the header names {} columns{}", cells[0], cells.size() - 1,
                                        columns.size(), in.peek() == EOF ? fmt::format(" (the capture ends here: {})", kRerunSmi) : ""),
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
    rows.push_back(std::move(r));
  }
  if (columns.empty() && headless_row)
    fail_at(file, headless_row, fmt::format("a GPU0 row without the header line above it (a cut-off capture): {}", kRerunSmi));
  if (columns.empty())
    fail_at(file, 1, fmt::format("no 'nvidia-smi topo -m' matrix found (a header row starting with GPU0): {}", kRerunSmi));
  if (rows.empty())
    fail_at(file, header_line, fmt::format("no GPU row follows the header (a cut-off capture): {}", kRerunSmi), header_at.front());
  std::vector<std::string> devs;  // GPU and NIC columns
  for (const auto& c : columns)
    if (!info_col(c)) devs.push_back(c);
  const int ngpus = static_cast<int>(rows.size());
  ImportedNode node;
  node.source = file;
  node.what = "nvidia-smi topo -m";
  node.gpus = ngpus;
  if (later_capture)
    node.notes.push_back(fmt::format("a second capture begins at line {}: only the first (line {}) is read", later_capture,
                                     header_line));
  for (const auto& r : rows)
    if (r.cells.size() < devs.size())
      fail_at(file, r.line, fmt::format("row {} has {} cells, the header names {}", r.name, r.cells.size(), devs.size()), r.end);
  // A GPU column "GPU<k>" must name one of the matrix's rows (0 ≤ k < rows).
  for (std::size_t c = 0; c < columns.size(); ++c) {
    const auto& d = columns[c];
    if (info_col(d)) continue;
    if (d.rfind("GPU", 0) == 0 && !whole_number(std::string_view(d).substr(3), 0, ngpus - 1)) {
      // GPU0 … GPU<rows-1> all there, and more: the rows stop short of the header (a cut-off capture)
      bool cut = whole_number(std::string_view(d).substr(3), ngpus, 1 << 20).has_value();
      for (int g = 0; g < ngpus && cut; ++g) cut = std::find(columns.begin(), columns.end(), fmt::format("GPU{}", g)) != columns.end();
      fail_at(file, header_line,
              fmt::format("column '{}' names no GPU row (the matrix has GPU0 … GPU{}){}", d, ngpus - 1,
                          cut ? fmt::format(": the rows stop short of the header (a cut-off capture); {}", kRerunSmi) : ""),
              header_at[c]);
    }
    // Another device column (NIC0, mlx5_0) becomes a vertex name in the YAML written below: it must be a
    // plain name, or the file would not parse (found by fuzz_nvidia_smi: a header cell of binary bytes).
    if (d.rfind("GPU", 0) != 0 && !plain_name(d))
      fail_at(file, header_line,
              fmt::format("column '{}' is not a device name (a letter or digit, then letters, digits, '_', '-' or '.')", printable(d)),
              header_at[c]);
  }
  auto gpu_col = [&](const std::string& d) {
    return d.rfind("GPU", 0) == 0 ? static_cast<int>(*whole_number(std::string_view(d).substr(3), 0, ngpus - 1)) : -1;
  };

  // CPUs: one per NUMA node when the capture has a NUMA column with numbers (NCCL makes one CPU vertex
  // per NUMA node), else one per distinct CPU affinity, in order of appearance.
  std::vector<std::string> affinities;
  std::vector<int> cpu_of(static_cast<std::size_t>(ngpus), 0);
  const bool by_numa = std::all_of(rows.begin(), rows.end(), [](const Row& r) { return whole_number(r.numa, 0, 4095).has_value(); });
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
  for (std::size_t c = 0; c < affinities.size(); ++c) node.cpus.push_back(ImportedCpu{fmt::format("cpu{}", c), "x86", "intel", ""});

  // NVLinks
  std::vector<std::vector<int>> nv(static_cast<std::size_t>(ngpus), std::vector<int>(static_cast<std::size_t>(ngpus), 0));
  int max_links = 0;
  for (int g = 0; g < ngpus; ++g)
    for (std::size_t d = 0; d < devs.size(); ++d) {
      const int o = gpu_col(devs[d]);
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
      links_per_gpu = std::max(links_per_gpu, std::accumulate(nv[static_cast<std::size_t>(a)].begin(), nv[static_cast<std::size_t>(a)].end(), 0));
      for (int b = a + 1; b < ngpus; ++b)
        if (int k = nv[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)]; k > 0)
          node.links.push_back({fmt::format("gpu{}", a), fmt::format("gpu{}", b), "nvlink", k, 0, 0, {}});
    }
  }

  // PCIe: devices joined by PIX share a switch; switches joined by PXB share an upper switch.
  std::vector<std::string> names;
  for (int g = 0; g < ngpus; ++g) names.push_back(fmt::format("gpu{}", g));
  for (const auto& d : devs)
    if (gpu_col(d) < 0) names.push_back(d);
  auto index_of = [&](const std::string& d) {
    const int g = gpu_col(d);
    return g >= 0 ? g : static_cast<int>(std::find(names.begin(), names.end(), d) - names.begin());
  };
  std::vector<int> parent(names.size());
  std::iota(parent.begin(), parent.end(), 0);
  std::function<int(int)> find = [&](int x) { return parent[static_cast<std::size_t>(x)] == x ? x : parent[static_cast<std::size_t>(x)] = find(parent[static_cast<std::size_t>(x)]); };
  std::vector<std::pair<int, int>> pxb;
  std::map<int, int> nic_cpu;
  for (int g = 0; g < ngpus; ++g)
    for (std::size_t d = 0; d < devs.size(); ++d) {
      const int o = index_of(devs[d]);
      const auto& cell = rows[static_cast<std::size_t>(g)].cells[d];
      if (o == g) continue;
      if (cell == "PIX") parent[static_cast<std::size_t>(find(o))] = find(g);
      if (cell == "PXB") pxb.emplace_back(g, o);
      if (o >= ngpus && (cell == "PHB" || cell == "NODE" || cell == "PIX" || cell == "PXB") && !nic_cpu.count(o))
        nic_cpu[o] = cpu_of[static_cast<std::size_t>(g)];
    }
  // NIC rows: two ports of one card (PIX between NICs) share its switch.
  for (const auto& [nic, cells] : nic_rows) {
    if (std::find(devs.begin(), devs.end(), nic) == devs.end()) continue;
    const int a = index_of(nic);
    for (std::size_t d = 0; d < devs.size() && d < cells.size(); ++d) {
      const int o = index_of(devs[d]);
      if (o >= ngpus && o != a && cells[d] == "PIX") parent[static_cast<std::size_t>(find(o))] = find(a);
    }
  }
  std::map<int, std::string> switch_of;  // root → switch name
  std::set<int> behind_bridges;           // devices with a PXB neighbour: behind a switch of their own
  for (auto [a, b] : pxb) behind_bridges.insert(find(a)), behind_bridges.insert(find(b));
  for (std::size_t i = 0; i < names.size(); ++i) {
    const int r = find(static_cast<int>(i));
    int members = 0;
    for (std::size_t j = 0; j < names.size(); ++j) members += find(static_cast<int>(j)) == r;
    if ((members >= 2 || behind_bridges.count(r)) && !switch_of.count(r)) {
      switch_of[r] = fmt::format("plx{}", switch_of.size());
      node.switches.push_back(switch_of[r]);
    }
  }
  auto cpu_name_of = [&](int i) {
    if (i < ngpus) return fmt::format("cpu{}", cpu_of[static_cast<std::size_t>(i)]);
    auto it = nic_cpu.find(i);
    return fmt::format("cpu{}", it == nic_cpu.end() ? 0 : it->second);
  };
  std::map<std::string, std::string> upper;  // switch → upper switch
  for (auto [a, b] : pxb) {
    const auto ra = find(a), rb = find(b);
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
    const int r = find(static_cast<int>(i));
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
  // NIC legend: "NIC0: mlx5_2" gives NIC0 its name
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
  for (std::size_t a = 0; a < node.cpus.size(); ++a)
    for (std::size_t b = a + 1; b < node.cpus.size(); ++b)
      node.links.push_back({node.cpus[a].name, node.cpus[b].name, "", 0, 0, 0, {}});  // kind once the CPU is known
  node.nvlinks_per_gpu = links_per_gpu;
  return finish(node, opt, warnings);
}

// ---- NCCL_TOPO_DUMP_FILE XML ----------------------------------------------------------------------------
namespace {

struct XmlElement {
  std::string tag;
  std::map<std::string, std::string> attrs;
  std::vector<XmlElement> children;
  int line = 0;
  int column = 0;  // of its '<'
};

[[noreturn]] void fail_at_element(const std::string& file, const XmlElement& e, const std::string& msg) {
  fail_at(file, e.line, msg, e.column);
}

// A small tolerant XML reader: elements, attributes in single or double quotes, self-closing tags;
// skips the prolog, comments and text.
class XmlReader {
 public:
  XmlReader(const std::string& text, std::string file) : s_(text), file_(std::move(file)) {}

  XmlElement parse() {
    XmlElement root;
    root.tag = "#document";
    std::vector<XmlElement*> stack{&root};
    while (pos_ < s_.size()) {
      const auto lt = s_.find('<', pos_);
      if (lt == std::string::npos) break;
      advance_to(lt);
      if (s_.compare(pos_, 4, "<!--") == 0) {
        const auto end = s_.find("-->", pos_);
        if (end == std::string::npos) fail("unterminated comment");
        advance_to(end + 3);
        continue;
      }
      if (s_.compare(pos_, 2, "<?") == 0 || s_.compare(pos_, 2, "<!") == 0) {
        const auto end = s_.find('>', pos_);
        if (end == std::string::npos) fail("unterminated declaration");
        advance_to(end + 1);
        continue;
      }
      if (s_.compare(pos_, 2, "</") == 0) {
        const auto end = s_.find('>', pos_);
        if (end == std::string::npos) fail("unterminated closing tag");
        std::string tag = trim(s_.substr(pos_ + 2, end - pos_ - 2));
        if (stack.size() < 2 || stack.back()->tag != tag)
          fail(fmt::format("closing tag </{}> does not match <{}>", tag, stack.back()->tag));
        stack.pop_back();
        advance_to(end + 1);
        continue;
      }
      XmlElement e;
      e.line = line_;
      e.column = column();
      ++pos_;
      e.tag = name();
      if (e.tag.empty()) fail("an element without a name");
      bool self_closing = false;
      for (;;) {
        skip_space();
        if (pos_ >= s_.size()) fail(fmt::format("unterminated <{}>", e.tag));
        if (s_[pos_] == '/') {
          if (pos_ + 1 >= s_.size() || s_[pos_ + 1] != '>') fail("expected '/>'");
          self_closing = true;
          pos_ += 2;
          break;
        }
        if (s_[pos_] == '>') {
          ++pos_;
          break;
        }
        const std::string key = name();
        if (key.empty()) fail(fmt::format("unexpected character '{}' in <{}>", s_[pos_], e.tag));
        skip_space();
        if (pos_ >= s_.size() || s_[pos_] != '=') fail(fmt::format("attribute '{}' of <{}> has no value", key, e.tag));
        ++pos_;
        skip_space();
        if (pos_ >= s_.size() || (s_[pos_] != '"' && s_[pos_] != '\'')) fail(fmt::format("attribute '{}' needs a quoted value", key));
        const char q = s_[pos_++];
        const auto end = s_.find(q, pos_);
        if (end == std::string::npos) fail(fmt::format("unterminated value of '{}'", key));
        e.attrs[key] = s_.substr(pos_, end - pos_);
        advance_to(end + 1);
      }
      stack.back()->children.push_back(std::move(e));
      if (!self_closing) stack.push_back(&stack.back()->children.back());
    }
    if (stack.size() > 1)  // at the element's own '<', not at the end of the text
      fail_at(file_, stack.back()->line,
              fmt::format("malformed XML: <{}> is never closed (a cut-off file?): rerun with NCCL_TOPO_DUMP_FILE=FILE set and "
                          "import that file whole",
                          stack.back()->tag),
              stack.back()->column);
    return root;
  }

  [[noreturn]] void fail(const std::string& msg) const { fail_at(file_, line_, "malformed XML: " + msg, column()); }

 private:
  void advance_to(std::size_t p) {
    for (; pos_ < p && pos_ < s_.size(); ++pos_)
      if (s_[pos_] == '\n') {
        ++line_;
        line_start_ = pos_ + 1;
      }
  }
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) advance_to(pos_ + 1);
  }
  std::string name() {
    const auto start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_' || s_[pos_] == '-' ||
                                s_[pos_] == ':' || s_[pos_] == '.'))
      ++pos_;
    return s_.substr(start, pos_ - start);
  }
  static std::string trim(const std::string& x) {
    const auto a = x.find_first_not_of(" \t\r\n");
    const auto b = x.find_last_not_of(" \t\r\n");
    return a == std::string::npos ? "" : x.substr(a, b - a + 1);
  }
  const std::string& s_;
  std::string file_;
  std::size_t pos_ = 0;
  int line_ = 1;
  std::size_t line_start_ = 0;
  [[nodiscard]] int column() const { return static_cast<int>(std::min(pos_, s_.size()) - line_start_) + 1; }
};

int pcie_generation(const std::string& speed) {
  const double gt = std::atof(speed.c_str());
  if (gt >= 60) return 6;
  if (gt >= 30) return 5;
  if (gt >= 15) return 4;
  if (gt >= 7) return 3;
  if (gt >= 4) return 2;
  return gt > 0 ? 1 : 3;
}

}  // namespace

std::string import_nccl_xml(const std::string& text, const std::string& file, const TopologyImportOptions& opt,
                            std::vector<std::string>* warnings) {
  XmlReader reader(text, file);
  const XmlElement doc = reader.parse();
  const XmlElement* system = nullptr;
  for (const auto& c : doc.children)
    if (c.tag == "system") system = &c;
  if (!system) {
    const bool graphs = std::any_of(doc.children.begin(), doc.children.end(), [](const XmlElement& e) { return e.tag == "graphs"; });
    fail_at(file, 1, graphs ? "<graphs> is NCCL's graph dump (NCCL_GRAPH_DUMP_FILE), not its topology: rerun with "
                              "NCCL_TOPO_DUMP_FILE=FILE set and import that file"
                            : "no <system> element: not an NCCL_TOPO_DUMP_FILE (rerun with NCCL_TOPO_DUMP_FILE=FILE set and "
                              "import that file)");
  }
  ImportedNode node;
  node.source = file;
  node.what = "NCCL_TOPO_DUMP_FILE";
  node.cpu_known = true;
  int defaulted = 0;  // PCI elements without a usable link_speed/link_width
  int class_only_gpus = 0, class_only_nics = 0;  // <pci> of a GPU or NIC class without <gpu>/<nic> (NCCL_TOPO_FILE)
  struct Gpu {
    int dev;
    std::string busid, cpu;
    const XmlElement* el;
  };
  std::vector<Gpu> gpus;
  std::map<std::string, std::string> bus_to_name;
  int max_links = 0;
  auto attr = [](const XmlElement& e, const char* k) {
    auto it = e.attrs.find(k);
    return it == e.attrs.end() ? std::string() : it->second;
  };
  // A <nic> straight under a <cpu> (virtual NICs, as in cloud VMs): NCCL joins it to the CPU with a
  // local link (LOC_BW, 5000 GB/s; ncclTopoAddCpu).
  auto add_nets = [&](const XmlElement& nic, const std::string& parent, const ImportedLink& how) {
    for (const auto& net : nic.children) {
      if (net.tag != "net") continue;
      const std::string name = attr(net, "name");
      if (name.empty()) fail_at_element(file, net, "<net> without 'name'");
      if (!plain_name(name)) fail_at_element(file, net, fmt::format("<net> name '{}' is not a device name", printable(name)));
      const std::string speed = attr(net, "speed");
      if (!speed.empty() && !whole_number(speed, 0, 100'000'000))
        fail_at_element(file, net, fmt::format("<net> 'speed' must be a whole number of Mb/s, not '{}'", printable(speed)));
      node.nics.emplace_back(name, speed.empty() || speed == "0" ? "" : speed + " Mb/s");  // 0: the device did not say
      ImportedLink l = how;
      l.a = name;
      l.b = parent;
      node.links.push_back(l);
    }
  };
  std::function<void(const XmlElement&, const std::string&, const std::string&)> walk =
      [&](const XmlElement& e, const std::string& parent, const std::string& cpu) {
        for (const auto& c : e.children) {
          if (c.tag == "nic" && e.tag == "cpu") {
            add_nets(c, parent, ImportedLink{"", "", "pcie", 0, 0, 0, "5000 GB/s"});
            continue;
          }
          if (c.tag != "pci") continue;
          const std::string cls = attr(c, "class");
          const std::string busid = lower_ascii(attr(c, "busid"));
          // NCCL's defaults (src/graph/topo.cc): a missing or unknown link_speed is Gen3, a missing or
          // zero link_width x16, as virtual machines dump them (link_speed="" link_width="0").
          const int gen = pcie_generation(attr(c, "link_speed"));
          int lanes = std::atoi(attr(c, "link_width").c_str());
          if (lanes <= 0 || std::atof(attr(c, "link_speed").c_str()) <= 0) ++defaulted;
          if (lanes <= 0) lanes = 16;
          const XmlElement* gpu = nullptr;
          const XmlElement* nic = nullptr;
          for (const auto& cc : c.children) {
            if (cc.tag == "gpu") gpu = &cc;
            if (cc.tag == "nic") nic = &cc;
          }
          if (gpu) {
            const std::string dev = attr(*gpu, "dev");
            if (dev.empty()) fail_at_element(file, *gpu, "<gpu> without 'dev'");
            if (!whole_number(dev, 0, 4095)) fail_at_element(file, *gpu, fmt::format("<gpu> 'dev' must be a whole number, not '{}'", dev));
            const std::string name = "gpu" + dev;
            node.sm = std::atoi(attr(*gpu, "sm").c_str());
            gpus.push_back(Gpu{std::atoi(dev.c_str()), busid, cpu, gpu});
            bus_to_name[busid] = name;
            node.links.push_back({name, parent, "pcie", 0, gen, lanes, {}});
          } else if (nic) {
            add_nets(*nic, parent, ImportedLink{"", "", "pcie", 0, gen, lanes, ""});
          } else if (c.children.empty() && cls.rfind("0x03", 0) == 0) {
            // an NCCL_TOPO_FILE written for a virtual machine (Azure's nd*-topo.xml) places the GPUs by PCI
            // class alone; NCCL adds their <gpu> (and NVLinks) at run time. Numbered in the file's order.
            const int dev = static_cast<int>(gpus.size());
            const std::string name = fmt::format("gpu{}", dev);
            gpus.push_back(Gpu{dev, busid, cpu, &c});
            bus_to_name[busid] = name;
            node.links.push_back({name, parent, "pcie", 0, gen, lanes, {}});
            ++class_only_gpus;
          } else if (c.children.empty() && cls.rfind("0x02", 0) == 0) {
            const std::string name = fmt::format("nic{}", node.nics.size());  // a NIC by its PCI class alone, as above
            node.nics.emplace_back(name, "");
            node.links.push_back({name, parent, "pcie", 0, gen, lanes, {}});
            ++class_only_nics;
          } else if (cls == "0x060400" || !c.children.empty()) {
            const std::string name = fmt::format("plx{}", node.switches.size());
            node.switches.push_back(name);
            bus_to_name[busid] = name;
            node.links.push_back({name, parent, "pcie", 0, gen, lanes, {}});
            walk(c, name, cpu);
          }
        }
      };
  for (const auto& c : system->children) {
    if (c.tag != "cpu") continue;
    ImportedCpu cpu;
    const std::string numaid = attr(c, "numaid");  // -1 where the kernel does not say
    if (!numaid.empty() && !whole_number(numaid, -1, 1 << 20))
      fail_at_element(file, c, fmt::format("<cpu> 'numaid' must be a whole number, not '{}'", printable(numaid)));
    cpu.name = "cpu" + (numaid.empty() ? std::to_string(node.cpus.size()) : numaid);
    if (std::any_of(node.cpus.begin(), node.cpus.end(), [&](const ImportedCpu& k) { return k.name == cpu.name; }))
      cpu.name += fmt::format("-{}", node.cpus.size());  // the same NUMA id twice (the CPUs of several hosts)
    const std::string arch = attr(c, "arch"), vendor = attr(c, "vendor");
    cpu.arch = arch == "ppc64" ? "power" : (arch == "arm64" || arch == "aarch64") ? "arm" : "x86";
    cpu.vendor = cpu.arch == "power" ? "ibm" : vendor == "AuthenticAMD" ? "amd" : vendor == "GenuineIntel" ? "intel" : "other";
    if (cpu.vendor == "intel") {
      // ncclTopoGetCpuType: family 6, model ≥ 0x55 Skylake; 0x8F Sapphire Rapids; 0xCF Emerald Rapids
      const int model = std::atoi(attr(c, "modelid").c_str());
      cpu.model = model == 0x8F ? "sapphire_rapids" : model == 0xCF ? "emerald_rapids" : model >= 0x55 ? "skylake" : "broadwell";
    } else if (cpu.arch == "power") {
      cpu.model = "power9";
    }
    node.cpus.push_back(cpu);
    walk(c, cpu.name, cpu.name);
  }
  if (gpus.empty())
    fail_at_element(file, *system, "no <gpu> in the dump (and no <pci> of a GPU class): rerun with NCCL_TOPO_DUMP_FILE=FILE "
                                   "set and import that file whole");
  node.gpu_unnamed = class_only_gpus == static_cast<int>(gpus.size());
  if (class_only_gpus + class_only_nics > 0)
    node.notes.push_back(fmt::format("{} GPU(s) and {} NIC(s) are placed by their PCI class alone (an NCCL_TOPO_FILE: NCCL "
                                     "adds their <gpu> and <nic> at run time): the file has no NVLink and no NIC speed, "
                                     "so none is imported; --gpu ID and --fabric KIND:SPEED say them, a dump "
                                     "(NCCL_TOPO_DUMP_FILE) has the NVLinks",
                                     class_only_gpus, class_only_nics));
  // 'dev' is the GPU's NVML index, the same in every process of the node: a dump of a job that saw GPUs
  // 4-7 (CUDA_VISIBLE_DEVICES) numbers them 4, 5, 6, 7. They become gpu0 … gpu<n-1> in that order.
  std::stable_sort(gpus.begin(), gpus.end(), [](const Gpu& a, const Gpu& b) { return a.dev < b.dev; });
  std::map<std::string, std::string> renamed;  // gpu<dev> → gpu<index>
  std::map<std::string, int> gpu_of_bus;       // a GPU's busid → its index
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    if (i > 0 && gpus[i].dev == gpus[i - 1].dev)
      fail_at_element(file, *gpus[i].el, fmt::format("a second <gpu> with dev {} (two dumps in one file?)", gpus[i].dev));
    if (gpus[i].dev != static_cast<int>(i)) renamed[fmt::format("gpu{}", gpus[i].dev)] = fmt::format("gpu{}", i);
    gpu_of_bus[gpus[i].busid] = static_cast<int>(i);
  }
  if (!renamed.empty()) {
    for (auto& l : node.links)
      for (std::string* end : {&l.a, &l.b})
        if (const auto it = renamed.find(*end); it != renamed.end()) *end = it->second;
    std::string devs;
    for (const auto& g : gpus) devs += (devs.empty() ? "" : ", ") + std::to_string(g.dev);
    node.notes.push_back(fmt::format("GPUs dev {} (the NVML indices of the GPUs the job saw) are gpu0 … gpu{}", devs,
                                     gpus.size() - 1));
  }
  node.gpus = static_cast<int>(gpus.size());
  if (defaulted > 0)
    node.notes.push_back(fmt::format("{} PCI link(s) without a link_speed or link_width (a virtual machine?): taken as "
                                     "NCCL does, Gen3 x16",
                                     defaulted));
  // NVLinks: each pair is listed by both GPUs; keep the lower one's entry.
  std::map<std::string, int> to_nvs;
  int self_links = 0, c2c_gpus = 0;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const Gpu& g = gpus[i];
    int links_of_gpu = 0;
    for (const auto& l : g.el->children) {
      c2c_gpus += l.tag == "c2c";
      if (l.tag != "nvlink") continue;
      const int count = std::atoi(attr(l, "count").c_str());
      if (count < 1) fail_at_element(file, l, "<nvlink> needs a 'count' of at least 1");
      const std::string tclass = attr(l, "tclass");
      const std::string self = fmt::format("gpu{}", i);
      const std::string target = lower_ascii(attr(l, "target"));  // NCCL prints bus ids in lower case; a hand edit may not
      if (target == g.busid && tclass != "0x068000") {  // a GPU's NVLink to itself carries nothing
        ++self_links;
        continue;
      }
      links_of_gpu += count;
      if (tclass == "0x068000") {
        if (node.nvswitches.empty()) node.nvswitches.push_back("nvs0");
        to_nvs[self] += count;
      } else if (tclass.rfind("0x03", 0) == 0) {  // a display controller: 3D (0x0302), VGA (0x0300), other (0x0380)
        auto it = gpu_of_bus.find(target);
        if (it == gpu_of_bus.end()) fail_at_element(file, l, fmt::format("<nvlink> target '{}' is no GPU of the dump", attr(l, "target")));
        if (it->second > static_cast<int>(i)) node.links.push_back({self, fmt::format("gpu{}", it->second), "nvlink", count, 0, 0, {}});
      } else {
        node.links.push_back({self, g.cpu, "nvlink", count, 0, 0, {}});  // NVLink to the CPU (POWER9)
      }
      max_links = std::max(max_links, count);
    }
    node.nvlinks_per_gpu = std::max(node.nvlinks_per_gpu, links_of_gpu);
  }
  if (c2c_gpus > 0)
    node.notes.push_back(fmt::format("{} GPU(s) with a <c2c> link to their Grace CPU: dlscale does not model C2C, the GPU "
                                     "reaches its CPU and NICs over the PCI link of the dump",
                                     c2c_gpus));
  if (self_links > 0)
    node.notes.push_back(fmt::format("{} <nvlink> element(s) whose target is their own GPU left out (they join no two devices)",
                                     self_links));
  for (const auto& [gpu, count] : to_nvs) node.links.push_back({gpu, "nvs0", "nvlink", count, 0, 0, {}});
  for (std::size_t a = 0; a < node.cpus.size(); ++a)
    for (std::size_t b = a + 1; b < node.cpus.size(); ++b)
      node.links.push_back({node.cpus[a].name, node.cpus[b].name, "", 0, 0, 0, {}});
  (void)max_links;
  return finish(node, opt, warnings);
}

}  // namespace dlscale
