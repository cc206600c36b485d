// The cluster YAML both topology importers write: the CPU and GPU (given or guessed, and said so), the
// fabric's NICs, then the file (docs/topology.md, "Importing").
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dlscale/error.hpp"
#include "dlscale/io.hpp"
#include "dlscale/topology.hpp"
#include "import/imported_node.hpp"
#include "io/yaml_writer.hpp"

namespace dlscale::topo_import {
namespace {

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

/// --cpu VENDOR[:MODEL] (intel, intel:skylake, amd, power, arm) onto every CPU of the node.
void apply_cpu_option(ImportedNode& n, const std::string& spec) {
  const auto colon = spec.find(':');
  const std::string vendor = spec.substr(0, colon), model = colon == std::string::npos ? "" : spec.substr(colon + 1);
  const bool model_ok = std::all_of(model.begin(), model.end(), [](char ch) {
    return std::islower(static_cast<unsigned char>(ch)) || std::isdigit(static_cast<unsigned char>(ch)) || ch == '_';
  });
  if (!(vendor == "intel" || vendor == "amd" || vendor == "power" || vendor == "ibm" || vendor == "arm") || !model_ok)
    throw InputError(SourceLocation{}, "cpu",
                     fmt::format("'{}' is not VENDOR[:MODEL] (intel, amd, power or arm; e.g. intel:skylake, "
                                 "intel:sapphire_rapids, amd)",
                                 spec));
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

}  // namespace

/// What both importers do last: the CPU (--cpu, or a stated guess), the GPU (--gpu, or from the SM and
/// NVLinks, stated), the links between CPU sockets, --nodes/--fabric; then the YAML.
std::string write_cluster_yaml(ImportedNode& n, const TopologyImportOptions& opt, std::vector<std::string>* warnings) {
  std::vector<std::string> said = std::move(n.notes);  // for stderr; the same lines go into the YAML as comments
  n.notes.clear();
  // for the YAML's `assumed:`, which every prediction on the cluster says
  std::vector<std::pair<std::string, std::string>> assumed{{"framework", "pytorch-ddp"},
                                                           {"input", "synthetic data (the capture names no storage)"}};
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
    throw InputError(SourceLocation{}, "gpu",
                     fmt::format("{} places its GPUs by PCI class alone (no <gpu> element says which model): "
                                 "--gpu ID says which (an id of topologies/gpus.yaml)",
                                 n.source));
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
        : n.nvlinks_per_gpu       ? fmt::format("{} NVLinks per GPU", n.nvlinks_per_gpu)
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
    throw InputError(SourceLocation{}, "nodes",
                     "a cluster of more than one node needs --fabric KIND:SPEED[:COUNT] (e.g. infiniband:200Gb/s)");
  if (opt.fabric) apply_fabric(n, *opt.fabric);
  if (std::any_of(n.nics.begin(), n.nics.end(), [](const auto& nic) { return nic.second.empty(); }))
    assumed.emplace_back("nics", "100 Gb/s each (not in the capture)");
  for (const auto& s : said) {
    n.notes.push_back(s);
    if (warnings) warnings->push_back(fmt::format("{}: {}", n.source, s));
  }
  return to_yaml(n, gpu_id, std::max(1, opt.nodes), opt.fabric, assumed);
}

}  // namespace dlscale::topo_import
