// NCCL's system and paths for a GPU set of one node (src/graph/topo.cc, paths.cc of NCCL 2.30.7).
#include <algorithm>
#include <map>

#include "nccl/system.hpp"

namespace dlscale::nccl {
namespace {

int add_node(System& s, SNode n) {
  s.nodes.push_back(std::move(n));
  const int id = static_cast<int>(s.nodes.size()) - 1;
  s.of_type[s.nodes.back().type].push_back(id);
  return id;
}

// ncclTopoConnectNodes: links of the same type between the same two nodes add up (NVLink bundles, and
// all of a GPU's NVSwitch links once the switches are merged into one NVS node).
void connect(System& s, int a, int b, int type, double bw) {
  for (int l : s.nodes[a].links) {
    if (s.links[l].to == b && s.links[l].type == type) {
      s.links[l].bw += bw;
      s.links[s.links[l].rev].bw += bw;
      return;
    }
  }
  const int ab = static_cast<int>(s.links.size());
  s.links.push_back(SLink{a, b, type, bw, ab + 1});
  s.links.push_back(SLink{b, a, type, bw, ab});
  s.nodes[a].links.push_back(ab);
  s.nodes[b].links.push_back(ab + 1);
}

// ncclTopoSetPaths: breadth-first from `base`; a node keeps the path with the fewest hops and, among
// those, the widest; a GPU may be crossed only as one NVLink hop (NVB).
void set_paths(System& s, int base, double loc_bw) {
  const int n = static_cast<int>(s.nodes.size());
  for (int v = 0; v < n; ++v) s.path[v][base] = SPath{};
  s.path[base][base] = SPath{{}, P_LOC, loc_bw};
  std::vector<int> list{base}, next;
  while (!list.empty()) {
    next.clear();
    for (int node : list) {
      // a reference, not a copy: only the paths of other nodes (rem != node: no link loops) change below
      const SPath& pn = s.path[node][base];
      for (int l : s.nodes[node].links) {
        const SLink& link = s.links[l];
        const int rem = link.to;
        SPath& pr = s.path[rem][base];
        const double bw = std::min(pn.bw, link.bw);
        if (node != base && s.nodes[node].type == GPU && (link.type != P_NVL || s.nodes[rem].type != GPU || pn.count() > 1))
          continue;
        if ((pr.bw == 0 || pr.count() > pn.count()) && pr.bw < bw) {
          pr.links.resize(pn.links.size() + 1);  // the link back to `node`, then node's path to `base`
          pr.links.front() = link.rev;
          std::copy(pn.links.begin(), pn.links.end(), pr.links.begin() + 1);
          pr.bw = bw;
          int type = link.type == P_NET ? P_LOC : link.type;
          if (s.nodes[node].type == PCI && s.nodes[rem].type == PCI) type = P_PXB;
          if (link.type == P_PIX && (s.nodes[node].type == CPU || s.nodes[rem].type == CPU)) type = P_PHB;
          if (s.nodes[node].type == GPU && pn.type == P_NVL && type == P_NVL && pr.count() > 1) type = P_NVB;
          pr.type = std::max(pn.type, type);
          if (std::find(next.begin(), next.end(), rem) == next.end()) next.push_back(rem);
        }
      }
    }
    list.swap(next);
  }
}

// ncclGetLocalCpu: the CPU the fewest hops away.
int local_cpu(const System& s, int node) {
  int best = -1, hops = 0;
  for (int c : s.of_type[CPU]) {
    const int h = s.path[node][c].count();
    if (s.path[node][c].type == P_DIS) continue;
    if (best < 0 || h < hops) best = c, hops = h;
  }
  return best;
}

// addInterStep: route src → dst through `via` (host memory of a CPU).
void add_inter_step(System& s, int via, int src, int dst) {
  const SPath& a = s.path[src][via];
  const SPath& b = s.path[via][dst];
  SPath p;
  p.links = a.links;
  p.links.insert(p.links.end(), b.links.begin(), b.links.end());
  p.type = std::max(a.type, b.type);
  p.bw = std::min(a.bw, b.bw);
  s.path[src][dst] = std::move(p);
}

}  // namespace

double own_link_bw(const System& s, int node) {
  double nvl = 0, pci = 0;
  for (int l : s.nodes[static_cast<std::size_t>(node)].links) {
    const SLink& k = s.links[static_cast<std::size_t>(l)];
    const SNode& to = s.nodes[static_cast<std::size_t>(k.to)];
    // NVLink-C2C to a Grace CPU is NCCL's LINK_C2C, not LINK_NVL: not part of the GPU's NVLink total.
    if (k.type == P_NVL && !(to.type == CPU && to.arch == topo::CpuArch::arm)) nvl += k.bw;
    if (k.type == P_PIX) pci = k.bw;
  }
  return std::max(nvl, pci);
}

namespace {
// The nodes of the other vertices: a node per CPU and PCIe switch, one NVS node for every NVSwitch, and
// a NIC with its NET where there are nets. `map` takes each vertex to its node; returns whether there is
// a CPU.
bool add_vertices(System& s, const Topology::Impl& topo, bool with_nets, std::vector<int>& map) {
  const auto& g = topo.graph;
  int nvs = -1;
  bool any_cpu = false;
  for (auto v : boost::make_iterator_range(boost::vertices(g))) {
    const auto& p = g[v];
    SNode n;
    switch (p.kind) {
      case VertexKind::cpu:
        n.type = CPU;
        n.arch = p.arch;
        n.vendor = p.vendor;
        map[v] = add_node(s, n);
        if (!any_cpu) s.intel = p.arch == topo::CpuArch::x86 && p.vendor == topo::CpuVendor::intel;
        any_cpu = true;
        break;
      case VertexKind::pcie_switch:
        n.type = PCI;
        map[v] = add_node(s, n);
        break;
      case VertexKind::nvswitch:  // NCCL merges every NVSwitch into one NVS node
        if (nvs < 0) {
          n.type = NVS;
          nvs = add_node(s, n);
        }
        map[v] = nvs;
        break;
      case VertexKind::nic:
        if (with_nets) {
          n.type = NIC;
          const int nic = add_node(s, n);
          map[v] = nic;
          SNode net;
          net.type = NET;
          net.gdr = p.gdr;
          double bw = p.nic_gbs;
          const auto& f = topo.fabric;
          if (f.single_flow > BytesPerSecond{}) bw = std::min(bw, in_gigabytes_per_second(f.single_flow) * f.flows);
          net.net_bw = bw;
          const int netid = add_node(s, net);
          connect(s, nic, netid, P_NET, bw);
        }
        break;
      default:
        break;
    }
  }
  return any_cpu;
}

// ncclTopoCheckP2p: P2P up to PXB behind Intel (and ARM) CPUs, up to SYS otherwise; GPUs that refuse
// PCIe P2P (NVML says so for GeForce boards) use it only over NVLink. Otherwise through host memory
// of the CPU local to the receiving GPU.
void check_p2p(System& s, const Topology::Impl& topo, bool any_cpu) {
  const bool pxb_only = any_cpu && (s.intel || s.nodes[s.of_type[CPU][0]].arch == topo::CpuArch::arm);
  const int p2p_level = pxb_only ? P_PXB : P_SYS;
  const std::size_t ng = s.of_type[GPU].size();
  s.p2p.assign(ng, std::vector<char>(ng, 1));
  for (std::size_t a = 0; a < ng; ++a) {
    for (std::size_t b = 0; b < ng; ++b) {
      const int pi = s.of_type[GPU][a], gi = s.of_type[GPU][b];
      if (gi == pi) continue;
      const SPath& path = s.path[pi][gi];
      bool p2p = path.type <= p2p_level;
      if (!topo.pcie_p2p && path.type > P_NVB) p2p = false;
      s.p2p[a][b] = p2p ? 1 : 0;
      if (!p2p) {
        const int cpu = local_cpu(s, gi);
        if (cpu >= 0) add_inter_step(s, cpu, pi, gi);
      }
    }
  }
}

/// A GPU's sends to a NET relayed through another GPU (PXN).
struct Relay {
  int gpu, net, relay;
};

// ncclTopoComputePaths, PXN (NCCL_PXN_DISABLE=0, the default): a GPU sends to a NIC through the NIC's
// local GPU when that GPU is at most PXB from the NIC and one NVLink hop from this one, and the detour
// is wider or avoids the CPU; only in the GPU → NIC direction (receives stay local). Decided on the
// paths before GPU Direct RDMA is checked, as NCCL does.
std::vector<Relay> pxn_relays(const System& s) {
  std::vector<Relay> pxn;
  for (int ni : s.of_type[NET]) {
    int local = -1;  // ncclTopoGetLocalGpu: the GPU of the best (lowest type, then widest) path to the NIC
    for (int gi : s.of_type[GPU]) {
      const SPath& p = s.path[gi][ni];
      if (p.type == P_DIS) continue;
      if (local < 0 || p.type < s.path[local][ni].type || (p.type == s.path[local][ni].type && p.bw > s.path[local][ni].bw))
        local = gi;
    }
    if (local < 0) continue;
    for (int gi : s.of_type[GPU]) {
      if (gi == local) continue;
      const SPath& own = s.path[gi][ni];
      if (s.path[local][ni].type <= P_PXB && s.path[gi][local].type <= P_NVL &&
          (s.path[local][ni].bw > own.bw || own.type > P_PXB))
        pxn.push_back(Relay{gi, ni, local});
    }
  }
  return pxn;
}

// ncclTopoCheckGdr: GPU Direct RDMA when the NIC supports it and the GPU is at most PXB away;
// otherwise NIC traffic goes through the CPU local to the GPU.
void check_gdr(System& s) {
  for (int ni : s.of_type[NET]) {
    for (int gi : s.of_type[GPU]) {
      const bool gdr = s.nodes[ni].gdr && s.path[gi][ni].type <= P_PXB && s.sm >= 60;
      if (!gdr) {
        const int cpu = local_cpu(s, gi);
        if (cpu >= 0) {
          add_inter_step(s, cpu, ni, gi);
          add_inter_step(s, cpu, gi, ni);
        }
      }
    }
  }
}

// The relayed paths (GPU Direct RDMA judged on the relay GPU's distance, as ncclTopoCheckGdr does for
// PXN). NCCL types them PATH_PXN, between PXB and PHB; this numbering has none, so they are typed PXB
// and flagged; the direct path is kept for what `topo show` prints.
void relay_paths(System& s, const std::vector<Relay>& pxn) {
  for (const auto& [gi, ni, relay] : pxn) {
    const SPath direct = s.path[gi][ni];
    add_inter_step(s, relay, gi, ni);
    SPath& p = s.path[gi][ni];
    p.type = P_PXB;
    p.pxn = true;
    p.direct_type = direct.type;
    p.direct_bw = direct.bw;
    p.direct_hops = direct.count();
  }
}

// ncclTopoSearchInit: maxBw = best path from a GPU to a GPU (or to a NIC when there are NICs);
// totalBw = a GPU's NVLinks together, or its PCIe link.
void search_bandwidths(System& s, const Table& t) {
  const bool inter = !s.of_type[NET].empty();
  if (!inter && s.of_type[GPU].size() == 1) {
    s.max_bw = s.total_bw = t.loc_bw;
  } else {
    for (int gi : s.of_type[GPU]) {
      for (int other : s.of_type[inter ? NET : GPU]) {
        const SPath& p = s.path[gi][other];
        if (p.count() == 0) continue;
        s.max_bw = std::max(s.max_bw, p.bw);
      }
      s.total_bw = std::max(s.total_bw, own_link_bw(s, gi));
    }
  }
}

// The nodes and links of build_system's system, without paths; `any_cpu`: whether there is a CPU.
System nodes_and_links(const Topology::Impl& topo, std::span<const int> local_gpus, bool with_nets, bool& any_cpu) {
  System s;
  s.of_type.assign(NTYPES, {});
  s.sm = topo.sm;
  const auto& g = topo.graph;
  std::vector<int> map(boost::num_vertices(g), -1);
  std::vector<int> gpus(local_gpus.begin(), local_gpus.end());
  std::sort(gpus.begin(), gpus.end());
  gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
  for (int lg : gpus) {
    SNode n;
    n.type = GPU;
    n.gpu = lg;
    n.sm = topo.sm;
    map[topo.gpus.at(static_cast<std::size_t>(lg))] = add_node(s, n);
  }
  any_cpu = add_vertices(s, topo, with_nets, map);
  for (auto e : boost::make_iterator_range(boost::edges(g))) {
    const int a = map[boost::source(e, g)], b = map[boost::target(e, g)];
    if (a < 0 || b < 0 || a == b) continue;
    const auto& ep = g[e];
    const int type = ep.kind == LinkKind::nvlink ? P_NVL : ep.kind == LinkKind::pcie ? P_PIX : P_SYS;
    connect(s, a, b, type, ep.gbs);
  }
  return s;
}

}  // namespace

System build_links(const Topology::Impl& topo, std::span<const int> local_gpus, bool with_nets) {
  bool any_cpu = false;
  return nodes_and_links(topo, local_gpus, with_nets, any_cpu);
}

System build_system(const Topology::Impl& topo, std::span<const int> local_gpus, bool with_nets, const Table& t) {
  bool any_cpu = false;
  System s = nodes_and_links(topo, local_gpus, with_nets, any_cpu);
  const int n = static_cast<int>(s.nodes.size());
  s.path.assign(static_cast<std::size_t>(n), std::vector<SPath>(static_cast<std::size_t>(n)));
  for (int base = 0; base < n; ++base) set_paths(s, base, t.loc_bw);
  check_p2p(s, topo, any_cpu);
  const std::vector<Relay> pxn = pxn_relays(s);
  check_gdr(s);
  relay_paths(s, pxn);
  search_bandwidths(s, t);
  return s;
}

}  // namespace dlscale::nccl
