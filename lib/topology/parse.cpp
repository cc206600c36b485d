// Reads a node template and a fabric into the Boost graph, validating as it goes: unknown keys,
// links to vertices that do not exist, links a node cannot have, and the same link declared twice.
#include "topology/parse.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "topology/graph.hpp"

namespace dlscale::topo {
using yamlio::MapReader;
using yamlio::Node;

namespace {

struct Builder {
  Graph g;
  std::map<std::string, Vertex> by_name;
  std::map<std::string, int> declared_line;

  Vertex add(const Node& where, VertexProps p) {
    if (by_name.count(p.name)) where.fail(fmt::format("vertex '{}' is declared twice", p.name));
    const auto v = boost::add_vertex(p, g);
    by_name[p.name] = v;
    return v;
  }
};

CpuArch read_arch(const Node& n) {
  const auto s = n.choice({"x86", "x86_64", "power", "ppc64", "arm", "aarch64"});
  if (s == "power" || s == "ppc64") return CpuArch::power;
  if (s == "arm" || s == "aarch64") return CpuArch::arm;
  return CpuArch::x86;
}

CpuVendor read_vendor(const Node& n) {
  const auto s = n.choice({"intel", "amd", "ibm", "other"});
  if (s == "intel") return CpuVendor::intel;
  if (s == "amd") return CpuVendor::amd;
  if (s == "ibm") return CpuVendor::ibm;
  return CpuVendor::other;
}

LinkKind read_link_kind(const Node& n) { return n.choice<LinkKind>(); }

/// `fabric:` (and --fabric over it): the network between nodes. Returns the NICs' default speed in GB/s
/// (0 when nothing gives one). NICs take the fabric's speed unless they give their own.
double read_fabric(const Node& node, const std::optional<Node>& fabric, int max_nodes, const FabricSpec* over,
                   Topology::Impl& impl) {
  double fabric_gbs = 0;
  if (fabric) {
    MapReader f(*fabric);
    impl.fabric.kind = f.required("kind").choice({"infiniband", "ethernet"});
    const auto speed = f.required("speed").bandwidth();
    fabric_gbs = in_gigabytes_per_second(speed);
    impl.fabric.nic_bandwidth = speed;
    if (auto n = f.optional("single_flow")) impl.fabric.single_flow = n->bandwidth();
    if (auto n = f.optional("flows")) {
      impl.fabric.flows = n->int_at_most(1024);
      if (impl.fabric.flows < 1) n->fail("a connection uses at least one flow");
    }
    if (auto n = f.optional("latency")) impl.fabric.latency = n->latency();
    if (auto n = f.optional("sharp")) {
      impl.fabric.sharp = n->boolean();
      if (impl.fabric.sharp && impl.fabric.kind != "infiniband")
        n->fail("SHARP (in-network reduction) is a feature of InfiniBand switches; this fabric is " + impl.fabric.kind);
    }
    f.finish();
  }
  if (over) {  // --fabric: another network than the file's, at its speed, without the file's single-flow cap
    impl.fabric = FabricInfo{};
    impl.fabric.kind = over->kind;
    impl.fabric.nic_bandwidth = over->speed;
    fabric_gbs = in_gigabytes_per_second(over->speed);
  } else if (!fabric && max_nodes > 1) {
    node.fail("a cluster of more than one node needs a 'fabric' section next to 'node'");
  }
  return fabric_gbs;
}

/// `cpus:` the sockets, with their architecture, vendor and model.
void read_cpus(const Node& list, Builder& b, const std::set<std::string>& off) {
  for (const auto& item : list.items()) {
    MapReader c(item);
    VertexProps p;
    p.kind = VertexKind::cpu;
    p.name = c.required("name").scalar();
    if (off.count(p.name)) continue;  // beyond the job's GPUs (off_job)
    p.arch = read_arch(c.required("arch"));
    p.vendor = p.arch == CpuArch::power ? CpuVendor::ibm : CpuVendor::intel;
    if (auto v = c.optional("vendor")) p.vendor = read_vendor(*v);
    if (auto v = c.optional("model")) p.model = v->scalar();
    c.finish();
    b.add(item, p);
  }
}

/// Vertices that are only a name: `pcie_switches`, `nvswitches`, `drives`.
void read_named(MapReader& m, std::string_view key, VertexKind kind, Builder& b, const std::set<std::string>& off) {
  if (auto list = m.optional(key)) {
    for (const auto& item : list->items()) {
      VertexProps p;
      p.kind = kind;
      p.name = item.scalar();
      if (off.count(p.name)) continue;  // beyond the job's GPUs (off_job)
      b.add(item, p);
    }
  }
}

/// `nics:` with their speeds (the fabric's by default; --fabric's always). Returns the NICs beyond
/// --fabric's COUNT, left out with their links. NICs in `off` (beyond the job's GPUs) are left out first.
std::set<std::string> read_nics(const Node& list, Builder& b, Topology::Impl& impl, double fabric_gbs, const FabricSpec* over,
                                const std::set<std::string>& off) {
  std::set<std::string> dropped_nics;  // beyond --fabric's COUNT
  for (const auto& item : list.items()) {
    MapReader c(item);
    VertexProps p;
    p.kind = VertexKind::nic;
    p.name = c.required("name").scalar();
    if (off.count(p.name)) continue;
    if (over && over->nics > 0 && static_cast<int>(impl.nics.size()) >= over->nics) {
      dropped_nics.insert(p.name);
      continue;
    }
    if (auto s = c.optional("speed")) {
      p.nic_gbs = in_gigabytes_per_second(s->bandwidth());
    } else if (fabric_gbs > 0) {
      p.nic_gbs = fabric_gbs;
    } else {
      item.fail("a NIC needs a 'speed' (or a 'fabric' section that gives one)");
    }
    if (over) p.nic_gbs = fabric_gbs;
    p.gdr = impl.fabric.kind != "ethernet";
    if (auto s = c.optional("gdr")) p.gdr = s->boolean();
    c.finish();
    impl.nics.push_back(b.add(item, p));
  }
  return dropped_nics;
}

/// The vertex a link end names; an unknown name fails there, listing the known ones.
Vertex vertex_named(const Builder& b, const Node& n, const std::string& name) {
  auto it = b.by_name.find(name);
  if (it == b.by_name.end()) {
    std::string known;
    for (const auto& [k, v] : b.by_name) known += (known.empty() ? "" : ", ") + k;
    n.fail(fmt::format("no vertex named '{}' (known: {})", name, known));
  }
  return it->second;
}

/// A link's `count`, `lanes`, `generation`, `latency`; returns its explicit `bandwidth`, if any.
std::optional<BytesPerSecond> read_link_figures(MapReader& l, EdgeProps& e) {
  if (auto n = l.optional("count")) {
    e.count = n->int_at_most(1024);
    if (e.count < 1) n->fail("a link bundle has at least one link");
  }
  if (auto n = l.optional("lanes")) {
    e.lanes = n->int_at_most(64);
    if (e.lanes < 0) n->fail(fmt::format("must not be negative, got {}", e.lanes));
  }
  if (auto n = l.optional("generation")) {
    e.generation = n->int_at_most(64);
    if (e.generation < 0) n->fail(fmt::format("must not be negative, got {}", e.generation));
  }
  if (auto n = l.optional("latency")) e.latency = n->latency();
  std::optional<BytesPerSecond> bw;
  if (auto n = l.optional("bandwidth")) bw = n->bandwidth();
  return bw;
}

/// Whether a link of its kind can join the two vertices, and its bandwidth by kind (GB/s) unless the
/// file gives one.
void check_link_kind(const Node& item, const Node& kind_node, const VertexProps& pa, const VertexProps& pb,
                     bool explicit_bandwidth, int sm, EdgeProps& e) {
  const std::string& a = pa.name;
  const std::string& bname = pb.name;
  auto both_in = [&](std::initializer_list<VertexKind> ok) {
    auto in = [&](VertexKind k) { return std::find(ok.begin(), ok.end(), k) != ok.end(); };
    return in(pa.kind) && in(pb.kind);
  };
  switch (e.kind) {
    case LinkKind::nvlink:
      if (!both_in({VertexKind::gpu, VertexKind::nvswitch, VertexKind::cpu}) ||
          (pa.kind != VertexKind::gpu && pb.kind != VertexKind::gpu))
        kind_node.fail(fmt::format("an NVLink joins a GPU to a GPU, an NVSwitch or a CPU, not '{}' to '{}'", a, bname));
      e.gbs = e.count * nvlink_gbs(sm);
      break;
    case LinkKind::pcie:
      if (pa.kind == VertexKind::nvswitch || pb.kind == VertexKind::nvswitch || both_in({VertexKind::cpu}))
        kind_node.fail(fmt::format("a PCIe link cannot join '{}' to '{}'", a, bname));
      if (!explicit_bandwidth && (e.generation < 1 || e.lanes < 1))
        item.fail("a PCIe link needs 'generation' and 'lanes' (or an explicit 'bandwidth')");
      if (!explicit_bandwidth) e.gbs = pcie_gbs(e.generation, e.lanes);
      break;
    case LinkKind::infiniband:
    case LinkKind::ethernet:
      kind_node.fail("network links belong in the 'fabric' section, not inside a node");
    default:  // CPU-to-CPU
      if (!both_in({VertexKind::cpu}))
        kind_node.fail(fmt::format("a '{}' link joins two CPU sockets, not '{}' to '{}'", to_string(e.kind), a, bname));
      e.gbs = cpu_link_gbs(pa.arch, pa.vendor, pa.model);
      break;
  }
}

/// A job on the first `job` of the node's `gpus` GPUs: the names its graph leaves out. The other GPUs (gpuJ,
/// J ≥ job), and every vertex the links reach only through them: what a search from the job's GPUs over the links,
/// not passing the other GPUs, does not find (an NVL72 rack's Graces and NICs beside its unused GPUs; a DGX's
/// second socket stays, reached over the CPUs' link).
std::set<std::string> off_job(const Node& links, int gpus, int job) {
  std::set<std::string> off;
  for (int j = job; j < gpus; ++j) off.insert(fmt::format("gpu{}", j));
  std::map<std::string, std::vector<std::string>> next;
  for (const auto& item : links.items()) {
    MapReader l(item);
    const std::string a = l.required("a").scalar(), bname = l.required("b").scalar();
    next[a].push_back(bname);
    next[bname].push_back(a);
  }
  std::set<std::string> reached;
  std::vector<std::string> todo;
  for (int j = 0; j < job; ++j) todo.push_back(fmt::format("gpu{}", j));
  while (!todo.empty()) {
    const std::string v = std::move(todo.back());
    todo.pop_back();
    if (off.count(v) || !reached.insert(v).second) continue;
    for (const auto& w : next[v]) todo.push_back(w);
  }
  for (const auto& [v, ends] : next)
    if (!reached.count(v)) off.insert(v);
  return off;
}

/// `links:` between the vertices; a link declared twice fails at the second, naming the first's line.
void read_links(const Node& links, Builder& b, int sm, const std::set<std::string>& dropped_nics) {
  struct Seen {
    EdgeProps e;
    int line;
  };
  std::map<std::tuple<Vertex, Vertex, LinkKind>, Seen> seen;  // by the two ends (a name is one vertex)
  for (const auto& item : links.items()) {
    MapReader l(item);
    const Node na = l.required("a");
    const Node nb = l.required("b");
    const std::string a = na.scalar(), bname = nb.scalar();
    if (dropped_nics.count(a) || dropped_nics.count(bname)) continue;  // a NIC --fabric's COUNT leaves out, or off_job
    const Vertex va = vertex_named(b, na, a), vb = vertex_named(b, nb, bname);
    if (va == vb) item.fail(fmt::format("a link joins '{}' to itself", a));
    EdgeProps e;
    const Node kind_node = l.required("kind");
    e.kind = read_link_kind(kind_node);
    e.line = item.where().line;
    const std::optional<BytesPerSecond> bw = read_link_figures(l, e);
    l.finish();
    check_link_kind(item, kind_node, b.g[va], b.g[vb], bw.has_value(), sm, e);
    if (bw) e.gbs = in_gigabytes_per_second(*bw);

    const auto key = std::make_tuple(std::min(va, vb), std::max(va, vb), e.kind);
    if (auto it = seen.find(key); it != seen.end()) {
      const auto& o = it->second.e;
      const bool same = o.count == e.count && o.lanes == e.lanes && o.generation == e.generation && o.gbs == e.gbs;
      item.fail(
          same ? fmt::format("link {}–{} ({}) is declared twice (first at line {})", a, bname, to_string(e.kind), it->second.line)
               : fmt::format("asymmetric duplicate: link {}–{} ({}) differs from its declaration at line {}", a, bname,
                             to_string(e.kind), it->second.line));
    }
    seen[key] = Seen{e, e.line};
    boost::add_edge(va, vb, e, b.g);
  }
}

/// `p2p_bandwidth:` measured GPU-to-GPU bandwidths that replace the path's.
void read_p2p_overrides(const Node& list, int gpus_per_node, int job_gpus, Topology::Impl& impl) {
  for (const auto& item : list.items()) {
    MapReader p(item);
    const Node gn = p.required("gpus");
    const auto gs = gn.integer_list();
    if (gs.size() != 2 || gs[0] == gs[1] || gs[0] < 0 || gs[1] < 0 || gs[0] >= gpus_per_node || gs[1] >= gpus_per_node)
      gn.fail(fmt::format("expected two different local GPU indices below {}", gpus_per_node));
    if (gs[0] >= job_gpus || gs[1] >= job_gpus) continue;  // a pair beyond the job's GPUs
    impl.p2p_overrides.push_back(
        P2pOverride{static_cast<int>(gs[0]), static_cast<int>(gs[1]), p.required("bandwidth").bandwidth()});
    p.finish();
  }
}

/// --fabric's NICs up to COUNT (one when neither says): NIC k beside GPU k·gpus/COUNT, on the same PCIe
/// parent (switch or CPU) and link as that GPU, so that each GPU's traffic leaves by a NIC near it.
void add_fabric_nics(const Node& node, const FabricSpec& over, int gpus_per_node, double fabric_gbs, Builder& b,
                     Topology::Impl& impl) {
  const int want = over.nics > 0 ? over.nics : std::max<int>(1, static_cast<int>(impl.nics.size()));
  const int have = static_cast<int>(impl.nics.size());
  for (int k = have; k < want; ++k) {
    const auto gv = impl.gpus[static_cast<std::size_t>((k - have) * gpus_per_node / std::max(1, want - have))];
    VertexProps p;
    p.kind = VertexKind::nic;
    p.name = fmt::format("nic{}", k);
    for (int suffix = 0; b.by_name.count(p.name); ++suffix) p.name = fmt::format("nic{}_{}", k, suffix);
    p.nic_gbs = fabric_gbs;
    p.gdr = impl.fabric.kind != "ethernet";
    const auto nv = b.add(node, p);
    impl.nics.push_back(nv);
    EdgeProps e;
    e.kind = LinkKind::pcie;
    e.generation = 3;
    e.lanes = 16;
    e.gbs = pcie_gbs(3, 16);
    Vertex parent = gv;
    for (auto [it, end] = boost::out_edges(gv, b.g); it != end; ++it)
      if (b.g[*it].kind == LinkKind::pcie) {
        parent = boost::target(*it, b.g);
        e = b.g[*it];
        break;
      }
    boost::add_edge(nv, parent, e, b.g);
  }
}

}  // namespace

std::shared_ptr<const Topology> read_topology(const Node& node, const std::optional<Node>& fabric, int gpus_per_node,
                                              int max_nodes, int sm, const FabricSpec* over, int job_gpus) {
  const int file_gpus = gpus_per_node;  // the node's GPUs as the file gives them; the graph holds the job's
  if (job_gpus > 0 && job_gpus < file_gpus) gpus_per_node = job_gpus;
  auto impl = std::make_unique<Topology::Impl>();
  impl->sm = sm;
  impl->nodes = max_nodes;
  impl->gpus_per_node = gpus_per_node;
  Builder b;
  MapReader m(node);
  // a job on part of each node: the vertices its GPUs do not reach (off_job), left out with their links
  const std::set<std::string> off =
      gpus_per_node < file_gpus ? off_job(m.required("links"), file_gpus, gpus_per_node) : std::set<std::string>{};
  if (sm <= 0) node.fail("the GPU needs an 'sm' (compute capability) for the topology model: NVLink bandwidth depends on it");
  // the fabric first: NICs take its speed by default
  const double fabric_gbs = read_fabric(node, fabric, max_nodes, over, *impl);

  // ---- vertices ----------------------------------------------------------------------------------
  for (int i = 0; i < gpus_per_node; ++i) {
    VertexProps p;
    p.name = fmt::format("gpu{}", i);
    p.kind = VertexKind::gpu;
    p.gpu = i;
    impl->gpus.push_back(b.add(node, p));
  }
  if (auto n = m.optional("pcie_p2p")) impl->pcie_p2p = n->boolean();
  if (auto list = m.optional("cpus")) read_cpus(*list, b, off);
  read_named(m, "pcie_switches", VertexKind::pcie_switch, b, off);
  read_named(m, "nvswitches", VertexKind::nvswitch, b, off);
  std::set<std::string> dropped = off;  // beyond the job's GPUs, and the NICs beyond --fabric's COUNT
  if (auto list = m.optional("nics")) dropped.merge(read_nics(*list, b, *impl, fabric_gbs, over, off));
  read_named(m, "drives", VertexKind::storage, b, off);

  // ---- links -------------------------------------------------------------------------------------
  read_links(m.required("links"), b, sm, dropped);
  if (auto list = m.optional("p2p_bandwidth")) read_p2p_overrides(*list, file_gpus, gpus_per_node, *impl);
  m.finish();

  // Every GPU must hang somewhere, and a multi-node cluster needs NICs.
  for (auto v : impl->gpus)
    if (boost::out_degree(v, b.g) == 0) node.fail(fmt::format("'{}' has no link", b.g[v].name));
  if (over) add_fabric_nics(node, *over, gpus_per_node, fabric_gbs, b, *impl);
  if (max_nodes > 1 && impl->nics.empty()) node.fail("a cluster of more than one node needs at least one NIC in 'nics'");
  for (auto v : impl->nics)
    if (boost::out_degree(v, b.g) == 0) node.fail(fmt::format("NIC '{}' has no link", b.g[v].name));
  impl->fabric.nics_per_node = static_cast<int>(impl->nics.size());
  impl->graph = std::move(b.g);
  return std::make_shared<const Topology>(std::move(impl));
}

}  // namespace dlscale::topo
