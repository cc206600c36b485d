// Reads a node template and a fabric into the Boost graph, validating as it goes: unknown keys,
// links to vertices that do not exist, links a node cannot have, and the same link declared twice.
#include "topology/parse.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

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

}  // namespace

std::shared_ptr<const Topology> read_topology(const Node& node, const std::optional<Node>& fabric, int gpus_per_node,
                                              int max_nodes, int sm, const FabricSpec* over) {
  auto impl = std::make_unique<Topology::Impl>();
  impl->sm = sm;
  impl->nodes = max_nodes;
  impl->gpus_per_node = gpus_per_node;
  Builder b;
  MapReader m(node);
  if (sm <= 0) node.fail("the GPU needs an 'sm' (compute capability) for the topology model: NVLink bandwidth depends on it");

  // ---- fabric first: NICs take its speed by default ----------------------------------------------
  double fabric_gbs = 0;
  if (fabric) {
    MapReader f(*fabric);
    impl->fabric.kind = f.required("kind").choice({"infiniband", "ethernet"});
    const auto speed = f.required("speed").bandwidth();
    fabric_gbs = in_gigabytes_per_second(speed);
    impl->fabric.nic_bandwidth = speed;
    if (auto n = f.optional("single_flow")) impl->fabric.single_flow = n->bandwidth();
    if (auto n = f.optional("flows")) {
      impl->fabric.flows = n->int_at_most(1024);
      if (impl->fabric.flows < 1) n->fail("a connection uses at least one flow");
    }
    if (auto n = f.optional("latency")) impl->fabric.latency = n->latency();
    if (auto n = f.optional("sharp")) {
      impl->fabric.sharp = n->boolean();
      if (impl->fabric.sharp && impl->fabric.kind != "infiniband")
        n->fail("SHARP (in-network reduction) is a feature of InfiniBand switches; this fabric is " + impl->fabric.kind);
    }
    f.finish();
  }
  if (over) {  // --fabric: another network than the file's, at its speed, without the file's single-flow cap
    impl->fabric = FabricInfo{};
    impl->fabric.kind = over->kind;
    impl->fabric.nic_bandwidth = over->speed;
    fabric_gbs = in_gigabytes_per_second(over->speed);
  } else if (!fabric && max_nodes > 1) {
    node.fail("a cluster of more than one node needs a 'fabric' section next to 'node'");
  }

  // ---- vertices ----------------------------------------------------------------------------------
  for (int i = 0; i < gpus_per_node; ++i) {
    VertexProps p;
    p.name = fmt::format("gpu{}", i);
    p.kind = VertexKind::gpu;
    p.gpu = i;
    impl->gpus.push_back(b.add(node, p));
  }
  if (auto n = m.optional("pcie_p2p")) impl->pcie_p2p = n->boolean();
  if (auto list = m.optional("cpus")) {
    for (const auto& item : list->items()) {
      MapReader c(item);
      VertexProps p;
      p.kind = VertexKind::cpu;
      p.name = c.required("name").scalar();
      p.arch = read_arch(c.required("arch"));
      p.vendor = p.arch == CpuArch::power ? CpuVendor::ibm : CpuVendor::intel;
      if (auto v = c.optional("vendor")) p.vendor = read_vendor(*v);
      if (auto v = c.optional("model")) p.model = v->scalar();
      c.finish();
      b.add(item, p);
    }
  }
  auto simple_list = [&](std::string_view key, VertexKind kind) {
    if (auto list = m.optional(key)) {
      for (const auto& item : list->items()) {
        VertexProps p;
        p.kind = kind;
        p.name = item.scalar();
        b.add(item, p);
      }
    }
  };
  simple_list("pcie_switches", VertexKind::pcie_switch);
  simple_list("nvswitches", VertexKind::nvswitch);
  std::set<std::string> dropped_nics;  // beyond --fabric's COUNT
  if (auto list = m.optional("nics")) {
    for (const auto& item : list->items()) {
      MapReader c(item);
      VertexProps p;
      p.kind = VertexKind::nic;
      p.name = c.required("name").scalar();
      if (over && over->nics > 0 && static_cast<int>(impl->nics.size()) >= over->nics) {
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
      p.gdr = impl->fabric.kind != "ethernet";
      if (auto s = c.optional("gdr")) p.gdr = s->boolean();
      c.finish();
      impl->nics.push_back(b.add(item, p));
    }
  }
  if (auto list = m.optional("drives")) {
    for (const auto& item : list->items()) {
      VertexProps p;
      p.kind = VertexKind::storage;
      p.name = item.scalar();
      b.add(item, p);
    }
  }

  // ---- links -------------------------------------------------------------------------------------
  struct Seen {
    EdgeProps e;
    int line;
  };
  std::map<std::tuple<std::string, std::string, LinkKind>, Seen> seen;
  for (const auto& item : m.required("links").items()) {
    MapReader l(item);
    const Node na = l.required("a");
    const Node nb = l.required("b");
    const std::string a = na.scalar(), bname = nb.scalar();
    if (dropped_nics.count(a) || dropped_nics.count(bname)) continue;  // a NIC --fabric's COUNT leaves out
    auto find = [&](const Node& n, const std::string& name) {
      auto it = b.by_name.find(name);
      if (it == b.by_name.end()) {
        std::string known;
        for (const auto& [k, v] : b.by_name) known += (known.empty() ? "" : ", ") + k;
        n.fail(fmt::format("no vertex named '{}' (known: {})", name, known));
      }
      return it->second;
    };
    const Vertex va = find(na, a), vb = find(nb, bname);
    if (va == vb) item.fail(fmt::format("a link joins '{}' to itself", a));
    EdgeProps e;
    const Node kind_node = l.required("kind");
    e.kind = read_link_kind(kind_node);
    e.line = item.where().line;
    const auto& pa = b.g[va];
    const auto& pb = b.g[vb];
    auto both_in = [&](std::initializer_list<VertexKind> ok) {
      auto in = [&](VertexKind k) { return std::find(ok.begin(), ok.end(), k) != ok.end(); };
      return in(pa.kind) && in(pb.kind);
    };
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
    l.finish();

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
        if (!bw && (e.generation < 1 || e.lanes < 1))
          item.fail("a PCIe link needs 'generation' and 'lanes' (or an explicit 'bandwidth')");
        if (!bw) e.gbs = pcie_gbs(e.generation, e.lanes);
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
    if (bw) e.gbs = in_gigabytes_per_second(*bw);

    const auto key = std::make_tuple(std::min(a, bname), std::max(a, bname), e.kind);
    if (auto it = seen.find(key); it != seen.end()) {
      const auto& o = it->second.e;
      const bool same = o.count == e.count && o.lanes == e.lanes && o.generation == e.generation && o.gbs == e.gbs;
      item.fail(same ? fmt::format("link {}–{} ({}) is declared twice (first at line {})", a, bname, to_string(e.kind),
                                   it->second.line)
                     : fmt::format("asymmetric duplicate: link {}–{} ({}) differs from its declaration at line {}", a,
                                   bname, to_string(e.kind), it->second.line));
    }
    seen[key] = Seen{e, e.line};
    boost::add_edge(va, vb, e, b.g);
  }

  if (auto list = m.optional("p2p_bandwidth")) {
    for (const auto& item : list->items()) {
      MapReader p(item);
      const Node gn = p.required("gpus");
      const auto gs = gn.integer_list();
      if (gs.size() != 2 || gs[0] == gs[1] || gs[0] < 0 || gs[1] < 0 || gs[0] >= gpus_per_node || gs[1] >= gpus_per_node)
        gn.fail(fmt::format("expected two different local GPU indices below {}", gpus_per_node));
      impl->p2p_overrides.push_back(
          P2pOverride{static_cast<int>(gs[0]), static_cast<int>(gs[1]), p.required("bandwidth").bandwidth()});
      p.finish();
    }
  }
  m.finish();

  // Every GPU must hang somewhere, and a multi-node cluster needs NICs.
  for (auto v : impl->gpus)
    if (boost::out_degree(v, b.g) == 0) node.fail(fmt::format("'{}' has no link", b.g[v].name));
  if (over) {
    // NICs up to COUNT (one when neither says): NIC k beside GPU k·gpus/COUNT, on the same PCIe parent
    // (switch or CPU) and link as that GPU, so that each GPU's traffic leaves by a NIC near it.
    const int want = over->nics > 0 ? over->nics : std::max<int>(1, static_cast<int>(impl->nics.size()));
    const int have = static_cast<int>(impl->nics.size());
    for (int k = have; k < want; ++k) {
      const auto gv = impl->gpus[static_cast<std::size_t>((k - have) * gpus_per_node / std::max(1, want - have))];
      VertexProps p;
      p.kind = VertexKind::nic;
      p.name = fmt::format("nic{}", k);
      for (int suffix = 0; b.by_name.count(p.name); ++suffix) p.name = fmt::format("nic{}_{}", k, suffix);
      p.nic_gbs = fabric_gbs;
      p.gdr = impl->fabric.kind != "ethernet";
      const auto nv = b.add(node, p);
      impl->nics.push_back(nv);
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
  if (max_nodes > 1 && impl->nics.empty()) node.fail("a cluster of more than one node needs at least one NIC in 'nics'");
  for (auto v : impl->nics)
    if (boost::out_degree(v, b.g) == 0) node.fail(fmt::format("NIC '{}' has no link", b.g[v].name));
  impl->fabric.nics_per_node = static_cast<int>(impl->nics.size());
  impl->graph = std::move(b.g);
  return std::make_shared<const Topology>(std::move(impl));
}

}  // namespace dlscale::topo
