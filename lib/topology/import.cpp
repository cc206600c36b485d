// Imports of topology dumps users already have: an `nvidia-smi topo -m` capture and an NCCL
// NCCL_TOPO_DUMP_FILE XML. Both produce a cluster YAML (one node) with a `node:` section.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include "io/numbers.hpp"
#include "dlscale/error.hpp"
#include "dlscale/topology.hpp"

namespace dlscale {
namespace {

struct ImportedLink {
  std::string a, b, kind;
  int count = 0, generation = 0, lanes = 0;
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
};

/// `s` with every byte outside printable ASCII written as \xNN, for error messages that stay one line.
std::string printable(const std::string& s) {
  std::string out;
  for (const char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    out += u >= 0x20 && u < 0x7f ? std::string(1, ch) : fmt::format("\\x{:02x}", u);
  }
  return out;
}

std::string guess_gpu(int sm, int max_nvlinks) {
  switch (sm) {
    case 60: return max_nvlinks > 0 ? "p100-sxm2" : "p100-pcie";
    case 61: return "p40";
    case 70: return max_nvlinks > 0 ? "v100-sxm2" : "v100-pcie";
    case 75: return "rtx2080ti";
    case 80: return "a100-sxm4-40gb";
    case 89: return "rtx4090";
    case 90: return max_nvlinks > 0 ? "h100-sxm" : "h100-pcie";
    default: return "v100-sxm2";
  }
}

std::string cpu_link_kind(const ImportedCpu& c) {
  if (c.arch == "power") return "xbus";
  if (c.vendor == "amd") return "infinity_fabric";
  if (c.model == "broadwell" || c.model.empty()) return "qpi";
  return "upi";
}

std::string to_yaml(const ImportedNode& n, const std::string& gpu_id) {
  std::ostringstream o;
  o << "# Imported by dlscale from " << n.source << " (" << n.what << ").\n"
    << "# Check 'gpu', 'nodes' and 'storage': the capture does not say.\n";
  std::string stem = n.source;
  if (auto s = stem.find_last_of('/'); s != std::string::npos) stem = stem.substr(s + 1);
  if (auto d = stem.find('.'); d != std::string::npos) stem = stem.substr(0, d);
  std::string name;
  for (char c : stem) name += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '-';
  o << "name: " << (name.empty() ? "imported" : name) << "\n"
    << "description: imported from " << n.what << "\n"
    << "nodes: 1\n"
    << "gpus_per_node: " << n.gpus << "\n"
    << "gpu: " << gpu_id << (n.sm ? fmt::format("   # from sm {}", n.sm) : std::string("   # guessed")) << "\n"
    << "storage:                # placeholders: not in the capture\n"
    << "  disk: \"1 GB/s\"\n"
    << "  page_cache: \"10 GB/s\"\n"
    << "node:\n";
  if (!n.cpus.empty()) {
    o << "  cpus:\n";
    for (const auto& c : n.cpus)
      o << fmt::format("    - {{name: {}, arch: {}, vendor: {}{}}}\n", c.name, c.arch, c.vendor,
                       c.model.empty() ? "" : ", model: " + c.model);
  }
  auto list = [&](const char* key, const std::vector<std::string>& v) {
    if (v.empty()) return;
    o << "  " << key << ": [";
    for (std::size_t i = 0; i < v.size(); ++i) o << (i ? ", " : "") << v[i];
    o << "]\n";
  };
  list("pcie_switches", n.switches);
  list("nvswitches", n.nvswitches);
  if (!n.nics.empty()) {
    o << "  nics:\n";
    for (const auto& [nic, speed] : n.nics)
      o << fmt::format("    - {{name: {}, speed: \"{}\"}}{}\n", nic, speed.empty() ? "100 Gb/s" : speed,
                       speed.empty() ? "   # speed not in the capture" : "");
  }
  o << "  links:\n";
  for (const auto& l : n.links) {
    o << fmt::format("    - {{a: {}, b: {}, kind: {}", l.a, l.b, l.kind);
    if (l.kind == "nvlink") o << fmt::format(", count: {}", l.count);
    if (l.kind == "pcie") o << fmt::format(", generation: {}, lanes: {}", l.generation, l.lanes);
    o << "}\n";
  }
  return o.str();
}

[[noreturn]] void fail_at(const std::string& file, int line, const std::string& msg, int column = 1) {
  throw InputError(SourceLocation{file, std::max(line, 1), std::max(column, 1)}, "", msg);
}

}  // namespace

// ---- nvidia-smi topo -m ------------------------------------------------------------------------------
std::string import_nvidia_smi(const std::string& text, const std::string& file) {
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> columns;
  struct Row {
    std::string name;
    std::vector<std::string> cells;
    std::vector<int> at;  // 1-based column of each cell, for errors
    std::string affinity;
    int line = 0;
    int end = 1;  // the column after the row's last character
  };
  std::vector<Row> rows;
  int lineno = 0;
  // Tab-separated cells, trimmed; `at` receives the 1-based column where each cell's text starts.
  auto split = [](const std::string& s, std::vector<int>& at) {
    std::vector<std::string> out;
    std::string cur;
    at.assign(1, 1);
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '\t') {
        out.push_back(cur);
        cur.clear();
        at.push_back(static_cast<int>(i) + 2);
      } else {
        cur += s[i];
      }
    }
    out.push_back(cur);
    for (std::size_t k = 0; k < out.size(); ++k) {
      auto& x = out[k];
      const auto a = x.find_first_not_of(" \r");
      const auto b = x.find_last_not_of(" \r");
      if (a != std::string::npos) at[k] += static_cast<int>(a);
      x = a == std::string::npos ? "" : x.substr(a, b - a + 1);
    }
    return out;
  };
  std::vector<int> header_at;
  int header_line = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::vector<int> at;
    auto cells = split(line, at);
    if (columns.empty()) {
      if (cells.size() < 2 || cells[1].rfind("GPU", 0) != 0) continue;  // preamble
      header_line = lineno;
      while (cells.size() > 2 && cells.back().empty()) cells.pop_back();  // a trailing tab names no column
      columns.assign(cells.begin() + 1, cells.end());
      header_at.assign(at.begin() + 1, at.begin() + static_cast<std::ptrdiff_t>(cells.size()));
      continue;
    }
    if (cells[0].rfind("GPU", 0) != 0) {
      if (cells[0].empty() || cells[0] == "Legend:" || cells[0].rfind("Legend", 0) == 0) break;
      continue;  // NIC rows and legend
    }
    // nvidia-smi prints GPU0, GPU1, ... in order, each once. A repeated or skipped row (found by
    // fuzz_nvidia_smi: a matrix pasted twice) would make GPUs no column describes.
    if (const auto k = whole_number(std::string_view(cells[0]).substr(3), 0, 1 << 20);
        !k || *k != static_cast<long long>(rows.size()))
      fail_at(file, lineno,
              fmt::format("row '{}' where GPU{} belongs (the rows are GPU0, GPU1, ... in order, each once)",
                          printable(cells[0]), rows.size()),
              at[0]);
    Row r{cells[0], {}, {}, {}, lineno, static_cast<int>(line.find_last_not_of(" \r")) + 2};
    // Every column of the header needs its cell: a row one cell short would shift the affinity into
    // the matrix and the matrix out of place.
    if (cells.size() - 1 < columns.size())
      fail_at(file, lineno, fmt::format("row {} has {} cells, the header names {} columns", cells[0], cells.size() - 1,
                                        columns.size()), r.end);
    for (std::size_t i = 1; i < cells.size(); ++i) {
      if (i - 1 < columns.size() && columns[i - 1].rfind("CPU Affinity", 0) == 0) r.affinity = cells[i];
      else if (i - 1 < columns.size() && (columns[i - 1].rfind("NUMA", 0) == 0 || columns[i - 1].rfind("GPU NUMA", 0) == 0)) continue;
      else {
        r.cells.push_back(cells[i]);
        r.at.push_back(at[i]);
      }
    }
    rows.push_back(std::move(r));
  }
  if (columns.empty() || rows.empty()) fail_at(file, lineno, "no 'nvidia-smi topo -m' matrix found (a header row starting with GPU0)");
  std::vector<std::string> devs;  // GPU and NIC columns
  for (const auto& c : columns)
    if (c.rfind("CPU Affinity", 0) != 0 && c.rfind("NUMA", 0) != 0 && c.rfind("GPU NUMA", 0) != 0) devs.push_back(c);
  const int ngpus = static_cast<int>(rows.size());
  ImportedNode node;
  node.source = file;
  node.what = "nvidia-smi topo -m";
  node.gpus = ngpus;
  for (const auto& r : rows)
    if (r.cells.size() < devs.size())
      fail_at(file, r.line, fmt::format("row {} has {} cells, the header names {}", r.name, r.cells.size(), devs.size()), r.end);
  // A GPU column "GPU<k>" must name one of the matrix's rows (0 ≤ k < rows).
  for (std::size_t c = 0; c < columns.size(); ++c) {
    const auto& d = columns[c];
    if (d.rfind("GPU", 0) == 0 && d.rfind("GPU NUMA", 0) != 0 && !whole_number(std::string_view(d).substr(3), 0, ngpus - 1))
      fail_at(file, header_line, fmt::format("column '{}' names no GPU row (the matrix has GPU0 … GPU{})", d, ngpus - 1),
              header_at[c]);
    // Another device column (NIC0, mlx5_0) becomes a vertex name in the YAML written below: it must be a
    // plain name, or the file would not parse (found by fuzz_nvidia_smi: a header cell of binary bytes).
    const bool plain = !d.empty() && std::isalnum(static_cast<unsigned char>(d[0])) &&
                       std::all_of(d.begin(), d.end(), [](char ch) {
                         return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.';
                       });
    if (d.rfind("GPU", 0) != 0 && d.rfind("CPU Affinity", 0) != 0 && d.rfind("NUMA", 0) != 0 && !plain)
      fail_at(file, header_line,
              fmt::format("column '{}' is not a device name (a letter or digit, then letters, digits, '_', '-' or '.')", printable(d)),
              header_at[c]);
  }
  auto gpu_col = [&](const std::string& d) {
    return d.rfind("GPU", 0) == 0 ? static_cast<int>(*whole_number(std::string_view(d).substr(3), 0, ngpus - 1)) : -1;
  };

  // CPUs from the affinity column, in order of appearance.
  std::vector<std::string> affinities;
  std::vector<int> cpu_of(static_cast<std::size_t>(ngpus), 0);
  for (int g = 0; g < ngpus; ++g) {
    const auto& a = rows[static_cast<std::size_t>(g)].affinity;
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
  if (switched) {
    node.nvswitches.push_back("nvs0");
    for (int g = 0; g < ngpus; ++g) node.links.push_back({fmt::format("gpu{}", g), "nvs0", "nvlink", max_links, 0, 0});
  } else {
    for (int a = 0; a < ngpus; ++a)
      for (int b = a + 1; b < ngpus; ++b)
        if (int k = nv[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)]; k > 0)
          node.links.push_back({fmt::format("gpu{}", a), fmt::format("gpu{}", b), "nvlink", k, 0, 0});
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
  std::map<int, std::string> switch_of;  // root → switch name
  for (std::size_t i = 0; i < names.size(); ++i) {
    const int r = find(static_cast<int>(i));
    int members = 0;
    for (std::size_t j = 0; j < names.size(); ++j) members += find(static_cast<int>(j)) == r;
    if (members >= 2 && !switch_of.count(r)) {
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
    node.links.push_back({names[i], target, "pcie", 0, 3, 16});
  }
  for (const auto& [r, sw] : switch_of) {
    const std::string target = upper.count(sw) ? upper[sw] : cpu_name_of(r);
    node.links.push_back({sw, target, "pcie", 0, 3, 16});
  }
  std::set<std::string> ups;
  for (const auto& [sw, up] : upper) {
    if (!ups.insert(up).second) continue;
    int member = 0;
    for (const auto& [r, s] : switch_of)
      if (s == sw) member = r;
    node.links.push_back({up, cpu_name_of(member), "pcie", 0, 3, 16});
  }
  for (std::size_t i = static_cast<std::size_t>(ngpus); i < names.size(); ++i) node.nics.emplace_back(names[i], "");
  for (std::size_t a = 0; a < node.cpus.size(); ++a)
    for (std::size_t b = a + 1; b < node.cpus.size(); ++b)
      node.links.push_back({node.cpus[a].name, node.cpus[b].name, cpu_link_kind(node.cpus[a]), 0, 0, 0});
  return to_yaml(node, guess_gpu(0, max_links) );
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
      fail_at(file_, stack.back()->line, fmt::format("malformed XML: <{}> is never closed", stack.back()->tag),
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

std::string import_nccl_xml(const std::string& text, const std::string& file) {
  XmlReader reader(text, file);
  const XmlElement doc = reader.parse();
  const XmlElement* system = nullptr;
  for (const auto& c : doc.children)
    if (c.tag == "system") system = &c;
  if (!system) fail_at(file, 1, "no <system> element: not an NCCL_TOPO_DUMP_FILE");
  ImportedNode node;
  node.source = file;
  node.what = "NCCL_TOPO_DUMP_FILE";
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
  std::function<void(const XmlElement&, const std::string&, const std::string&)> walk =
      [&](const XmlElement& e, const std::string& parent, const std::string& cpu) {
        for (const auto& c : e.children) {
          if (c.tag != "pci") continue;
          const std::string cls = attr(c, "class");
          const std::string busid = attr(c, "busid");
          const int gen = pcie_generation(attr(c, "link_speed"));
          const int lanes = attr(c, "link_width").empty() ? 16 : std::atoi(attr(c, "link_width").c_str());
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
            node.links.push_back({name, parent, "pcie", 0, gen, lanes});
          } else if (nic) {
            for (const auto& net : nic->children) {
              if (net.tag != "net") continue;
              const std::string name = attr(net, "name");
              if (name.empty()) fail_at_element(file, net, "<net> without 'name'");
              const std::string speed = attr(net, "speed");
              node.nics.emplace_back(name, speed.empty() ? "" : speed + " Mb/s");
              node.links.push_back({name, parent, "pcie", 0, gen, lanes});
            }
          } else if (cls == "0x060400" || !c.children.empty()) {
            const std::string name = fmt::format("plx{}", node.switches.size());
            node.switches.push_back(name);
            bus_to_name[busid] = name;
            node.links.push_back({name, parent, "pcie", 0, gen, lanes});
            walk(c, name, cpu);
          }
        }
      };
  for (const auto& c : system->children) {
    if (c.tag != "cpu") continue;
    ImportedCpu cpu;
    cpu.name = "cpu" + (attr(c, "numaid").empty() ? std::to_string(node.cpus.size()) : attr(c, "numaid"));
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
  if (gpus.empty()) fail_at_element(file, *system, "no <gpu> in the dump");
  std::sort(gpus.begin(), gpus.end(), [](const Gpu& a, const Gpu& b) { return a.dev < b.dev; });
  for (std::size_t i = 0; i < gpus.size(); ++i)
    if (gpus[i].dev != static_cast<int>(i)) fail_at_element(file, *gpus[i].el, "GPU 'dev' numbers must run 0, 1, 2, …");
  node.gpus = static_cast<int>(gpus.size());
  // NVLinks: each pair is listed by both GPUs; keep the lower one's entry.
  std::map<std::string, int> to_nvs;
  for (const auto& g : gpus) {
    for (const auto& l : g.el->children) {
      if (l.tag != "nvlink") continue;
      const int count = std::atoi(attr(l, "count").c_str());
      if (count < 1) fail_at_element(file, l, "<nvlink> needs a 'count' of at least 1");
      const std::string tclass = attr(l, "tclass");
      const std::string self = fmt::format("gpu{}", g.dev);
      if (tclass == "0x068000") {
        if (node.nvswitches.empty()) node.nvswitches.push_back("nvs0");
        to_nvs[self] += count;
      } else if (tclass == "0x030200" || tclass == "0x030000") {
        auto it = bus_to_name.find(attr(l, "target"));
        if (it == bus_to_name.end()) fail_at_element(file, l, fmt::format("<nvlink> target '{}' is no GPU of the dump", attr(l, "target")));
        if (*whole_number(std::string_view(it->second).substr(3), 0, 4095) > g.dev) node.links.push_back({self, it->second, "nvlink", count, 0, 0});
      } else {
        node.links.push_back({self, g.cpu, "nvlink", count, 0, 0});  // NVLink to the CPU (POWER9)
      }
      max_links = std::max(max_links, count);
    }
  }
  for (const auto& [gpu, count] : to_nvs) node.links.push_back({gpu, "nvs0", "nvlink", count, 0, 0});
  for (std::size_t a = 0; a < node.cpus.size(); ++a)
    for (std::size_t b = a + 1; b < node.cpus.size(); ++b)
      node.links.push_back({node.cpus[a].name, node.cpus[b].name, cpu_link_kind(node.cpus[a]), 0, 0, 0});
  return to_yaml(node, guess_gpu(node.sm, max_links));
}

}  // namespace dlscale
