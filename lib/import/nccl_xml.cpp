// Import of an NCCL topology dump (NCCL_TOPO_DUMP_FILE, or an NCCL_TOPO_FILE) into a cluster YAML (one
// node) with a `node:` section, and the small XML reader it needs.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
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
using topo_import::ImportedLink;
using topo_import::ImportedNode;
using topo_import::plain_name;
using topo_import::printable;

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
        if (pos_ >= s_.size() || (s_[pos_] != '"' && s_[pos_] != '\''))
          fail(fmt::format("attribute '{}' needs a quoted value", key));
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
    while (pos_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_' || s_[pos_] == '-' || s_[pos_] == ':' ||
            s_[pos_] == '.'))
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

/// The attribute `k` of an element ("" when it has none).
std::string attr(const XmlElement& e, const char* k) {
  auto it = e.attrs.find(k);
  return it == e.attrs.end() ? std::string() : it->second;
}

/// A GPU of the dump: its NVML index, bus id, the CPU it hangs under and its element.
struct DumpGpu {
  int dev;
  std::string busid, cpu;
  const XmlElement* el;
};

/// What the dump's <system> gives, read into an ImportedNode: the CPUs and the PCI tree under each, then
/// the GPUs numbered and their NVLinks.
struct NcclDump {
  explicit NcclDump(const std::string& dump_file) : file(dump_file) {}

  const std::string& file;
  ImportedNode node;
  std::vector<DumpGpu> gpus;
  std::map<std::string, std::string> bus_to_name;
  int defaulted = 0;                             // PCI elements without a usable link_speed/link_width
  int class_only_gpus = 0, class_only_nics = 0;  // <pci> of a GPU or NIC class without <gpu>/<nic> (NCCL_TOPO_FILE)

  // A <nic> straight under a <cpu> (virtual NICs, as in cloud VMs): NCCL joins it to the CPU with a
  // local link (LOC_BW, 5000 GB/s; ncclTopoAddCpu).
  void add_nets(const XmlElement& nic, const std::string& parent, const ImportedLink& how) {
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
  }

  /// A <gpu> under a <pci>: gpu<dev>, on the PCI link of its parent.
  void add_gpu(const XmlElement& gpu, const std::string& busid, const std::string& parent, const std::string& cpu,
               const ImportedLink& how) {
    const std::string dev = attr(gpu, "dev");
    if (dev.empty()) fail_at_element(file, gpu, "<gpu> without 'dev'");
    if (!whole_number(dev, 0, 4095)) fail_at_element(file, gpu, fmt::format("<gpu> 'dev' must be a whole number, not '{}'", dev));
    const std::string name = "gpu" + dev;
    node.sm = std::atoi(attr(gpu, "sm").c_str());
    gpus.push_back(DumpGpu{std::atoi(dev.c_str()), busid, cpu, &gpu});
    bus_to_name[busid] = name;
    node.links.push_back({name, parent, how.kind, 0, how.generation, how.lanes, {}});
  }

  /// One <pci> under `parent`: a GPU, a NIC, either by its PCI class alone, or a switch (walked into).
  void add_pci(const XmlElement& c, const std::string& parent, const std::string& cpu) {
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
    const ImportedLink how{"", "", "pcie", 0, gen, lanes, ""};
    if (gpu) {
      add_gpu(*gpu, busid, parent, cpu, how);
    } else if (nic) {
      add_nets(*nic, parent, how);
    } else if (c.children.empty() && cls.rfind("0x03", 0) == 0) {
      // an NCCL_TOPO_FILE written for a virtual machine (Azure's nd*-topo.xml) places the GPUs by PCI
      // class alone; NCCL adds their <gpu> (and NVLinks) at run time. Numbered in the file's order.
      const int dev = static_cast<int>(gpus.size());
      const std::string name = fmt::format("gpu{}", dev);
      gpus.push_back(DumpGpu{dev, busid, cpu, &c});
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

  void walk(const XmlElement& e, const std::string& parent, const std::string& cpu) {
    for (const auto& c : e.children) {
      if (c.tag == "nic" && e.tag == "cpu") {
        add_nets(c, parent, ImportedLink{"", "", "pcie", 0, 0, 0, "5000 GB/s"});
        continue;
      }
      if (c.tag == "pci") add_pci(c, parent, cpu);
    }
  }

  /// A <cpu>: its name (by NUMA id), architecture, vendor and model, then the PCI tree under it.
  void read_cpu(const XmlElement& c) {
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

  /// 'dev' is the GPU's NVML index, the same in every process of the node: a dump of a job that saw GPUs
  /// 4-7 (CUDA_VISIBLE_DEVICES) numbers them 4, 5, 6, 7. They become gpu0 … gpu<n-1> in that order.
  /// Returns each GPU's index by its bus id.
  std::map<std::string, int> number_gpus() {
    std::stable_sort(gpus.begin(), gpus.end(), [](const DumpGpu& a, const DumpGpu& b) { return a.dev < b.dev; });
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
      node.notes.push_back(
          fmt::format("GPUs dev {} (the NVML indices of the GPUs the job saw) are gpu0 … gpu{}", devs, gpus.size() - 1));
    }
    return gpu_of_bus;
  }

  /// The NVLinks: each pair is listed by both GPUs; the lower one's entry is kept. Links to NVSwitches are
  /// summed per GPU, links to the CPU (POWER9) kept, links of a GPU to itself left out (said in a note).
  void read_nvlinks(const std::map<std::string, int>& gpu_of_bus) {
    std::map<std::string, int> to_nvs;
    int self_links = 0, c2c_gpus = 0;
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      const DumpGpu& g = gpus[i];
      int links_of_gpu = 0;
      for (const auto& l : g.el->children) {
        c2c_gpus += l.tag == "c2c";
        if (l.tag != "nvlink") continue;
        const int count = std::atoi(attr(l, "count").c_str());
        if (count < 1) fail_at_element(file, l, "<nvlink> needs a 'count' of at least 1");
        const std::string tclass = attr(l, "tclass");
        const std::string self = fmt::format("gpu{}", i);
        const std::string target = lower_ascii(attr(l, "target"));  // NCCL prints bus ids in lower case; a hand edit may not
        if (target == g.busid && tclass != "0x068000") {            // a GPU's NVLink to itself carries nothing
          ++self_links;
          continue;
        }
        links_of_gpu += count;
        if (tclass == "0x068000") {
          if (node.nvswitches.empty()) node.nvswitches.push_back("nvs0");
          to_nvs[self] += count;
        } else if (tclass.rfind("0x03", 0) == 0) {  // a display controller: 3D (0x0302), VGA (0x0300), other (0x0380)
          auto it = gpu_of_bus.find(target);
          if (it == gpu_of_bus.end())
            fail_at_element(file, l, fmt::format("<nvlink> target '{}' is no GPU of the dump", attr(l, "target")));
          if (it->second > static_cast<int>(i))
            node.links.push_back({self, fmt::format("gpu{}", it->second), "nvlink", count, 0, 0, {}});
        } else {
          node.links.push_back({self, g.cpu, "nvlink", count, 0, 0, {}});  // NVLink to the CPU (POWER9)
        }
      }
      node.nvlinks_per_gpu = std::max(node.nvlinks_per_gpu, links_of_gpu);
    }
    if (c2c_gpus > 0)
      node.notes.push_back(
          fmt::format("{} GPU(s) with a <c2c> link to their Grace CPU: dlscale does not model C2C, the GPU "
                      "reaches its CPU and NICs over the PCI link of the dump",
                      c2c_gpus));
    if (self_links > 0)
      node.notes.push_back(
          fmt::format("{} <nvlink> element(s) whose target is their own GPU left out (they join no two devices)", self_links));
    for (const auto& [gpu, count] : to_nvs) node.links.push_back({gpu, "nvs0", "nvlink", count, 0, 0, {}});
  }
};

/// The dump's <system>; a graph dump or another file fails, saying which file to import instead.
const XmlElement& system_of(const XmlElement& doc, const std::string& file) {
  const XmlElement* system = nullptr;
  for (const auto& c : doc.children)
    if (c.tag == "system") system = &c;
  if (!system) {
    const bool graphs =
        std::any_of(doc.children.begin(), doc.children.end(), [](const XmlElement& e) { return e.tag == "graphs"; });
    fail_at(file, 1,
            graphs ? "<graphs> is NCCL's graph dump (NCCL_GRAPH_DUMP_FILE), not its topology: rerun with "
                     "NCCL_TOPO_DUMP_FILE=FILE set and import that file"
                   : "no <system> element: not an NCCL_TOPO_DUMP_FILE (rerun with NCCL_TOPO_DUMP_FILE=FILE set and "
                     "import that file)");
  }
  return *system;
}

}  // namespace

std::string import_nccl_xml(const std::string& text, const std::string& file, const TopologyImportOptions& opt,
                            std::vector<std::string>* warnings) {
  XmlReader reader(text, file);
  const XmlElement doc = reader.parse();
  const XmlElement& system = system_of(doc, file);
  NcclDump dump(file);
  ImportedNode& node = dump.node;
  node.source = file;
  node.what = "NCCL_TOPO_DUMP_FILE";
  node.cpu_known = true;
  for (const auto& c : system.children)
    if (c.tag == "cpu") dump.read_cpu(c);
  if (dump.gpus.empty())
    fail_at_element(file, system,
                    "no <gpu> in the dump (and no <pci> of a GPU class): rerun with NCCL_TOPO_DUMP_FILE=FILE "
                    "set and import that file whole");
  node.gpu_unnamed = dump.class_only_gpus == static_cast<int>(dump.gpus.size());
  if (dump.class_only_gpus + dump.class_only_nics > 0)
    node.notes.push_back(
        fmt::format("{} GPU(s) and {} NIC(s) are placed by their PCI class alone (an NCCL_TOPO_FILE: NCCL "
                    "adds their <gpu> and <nic> at run time): the file has no NVLink and no NIC speed, "
                    "so none is imported; --gpu ID and --fabric KIND:SPEED say them, a dump "
                    "(NCCL_TOPO_DUMP_FILE) has the NVLinks",
                    dump.class_only_gpus, dump.class_only_nics));
  const auto gpu_of_bus = dump.number_gpus();
  node.gpus = static_cast<int>(dump.gpus.size());
  if (dump.defaulted > 0)
    node.notes.push_back(
        fmt::format("{} PCI link(s) without a link_speed or link_width (a virtual machine?): taken as "
                    "NCCL does, Gen3 x16",
                    dump.defaulted));
  dump.read_nvlinks(gpu_of_bus);
  for (std::size_t a = 0; a < node.cpus.size(); ++a)
    for (std::size_t b = a + 1; b < node.cpus.size(); ++b)
      node.links.push_back({node.cpus[a].name, node.cpus[b].name, "", 0, 0, 0, {}});
  return topo_import::write_cluster_yaml(node, opt, warnings);
}

}  // namespace dlscale
