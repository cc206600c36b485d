// Internal: NCCL's view of one node (struct ncclTopoSystem) for a set of GPUs, built from the node graph,
// with NCCL's paths (src/graph/paths.cc) and channel search (src/graph/search.cc).
#pragma once

#include <boost/container/small_vector.hpp>
#include <cstdint>
#include <span>
#include <vector>

#include "dlscale/topology.hpp"
#include "nccl/table.hpp"
#include "topology/graph.hpp"

namespace dlscale::nccl {

enum NodeType { GPU = 0, PCI = 1, NVS = 2, CPU = 3, NIC = 4, NET = 5, NTYPES = 6 };
// Path and link types share NCCL's numbering.
enum PathT { P_LOC = 0, P_NVL = 1, P_NVB = 2, P_PIX = 3, P_PXB = 4, P_PHB = 5, P_SYS = 6, P_NET = 7, P_DIS = 8 };

struct SNode {
  NodeType type = GPU;
  int gpu = -1;  // local GPU index (the "rank" within the node)
  int sm = 0;
  topo::CpuArch arch = topo::CpuArch::x86;
  topo::CpuVendor vendor = topo::CpuVendor::intel;
  double net_bw = 0;  // NET: remaining budget during the search
  bool gdr = true;
  std::uint64_t used = 0;
  std::vector<int> links;  // outgoing link ids
};

struct SLink {
  int from = 0, to = 0;
  int type = P_PIX;  // P_NVL, P_PIX (PCI), P_SYS, P_NET
  double bw = 0;     // remaining during the search
  int rev = -1;
};

struct SPath {
  // from source to destination; a node's paths are a few hops, kept inline (build_system sets a path per pair
  // of nodes: an allocation each was a third of its instructions and 1,100 of a one-node question's 4,200)
  boost::container::small_vector<int, 8> links;
  int type = P_DIS;
  double bw = 0;
  bool pxn = false;         // a GPU → NIC path through the NIC's local GPU (NCCL's PATH_PXN, typed P_PXB here)
  int direct_type = P_DIS;  // for a PXN path: the path without the relay (type, bandwidth, hops)
  double direct_bw = 0;
  int direct_hops = 0;
  [[nodiscard]] int count() const { return static_cast<int>(links.size()); }
  /// NCCL's order of path types, with PXN between PXB and PHB.
  [[nodiscard]] int rank() const { return 2 * type + (pxn ? 1 : 0); }
};

struct System {
  std::vector<SNode> nodes;
  std::vector<SLink> links;
  std::vector<std::vector<int>> of_type;  // node ids per NodeType
  std::vector<std::vector<SPath>> path;   // path[src][dst]
  double max_bw = 0, total_bw = 0;
  int sm = 0;
  bool intel = false;  // NCCL's ncclTopoCpuType: the CPU of the system

  [[nodiscard]] int count(NodeType t) const { return static_cast<int>(of_type[t].size()); }
  std::vector<std::vector<char>> p2p;  // p2p[a][b] for GPU indices: NCCL's ncclTopoCheckP2p verdict
  [[nodiscard]] SNode& typed(NodeType t, int i) { return nodes[of_type[t][i]]; }
  [[nodiscard]] const SNode& typed_const(NodeType t, int i) const { return nodes[of_type[t][i]]; }
  [[nodiscard]] const SPath& p(NodeType t1, int i1, NodeType t2, int i2) const { return path[of_type[t1][i1]][of_type[t2][i2]]; }
};

/// Builds NCCL's system for GPUs `local_gpus` of a node (the others removed, as ncclTopoTrimSystem does),
/// with NICs when `with_nets`, and computes all paths with NCCL's P2P and GPU Direct rules.
System build_system(const Topology::Impl& topo, std::span<const int> local_gpus, bool with_nets, const Table& t);
/// build_system's nodes and links without its paths (what a node's own links answer: own_link_bw).
System build_links(const Topology::Impl& topo, std::span<const int> local_gpus, bool with_nets);
/// A node's own link bandwidth, NCCL's totalBw for a GPU: its NVLinks together (NVLink-C2C to a Grace CPU
/// excluded: NCCL types it LINK_C2C), or its PCIe link, whichever is larger (GB/s).
double own_link_bw(const System& s, int node);

/// ncclTopoCompute for a ring or tree pattern. `min_channels`/`max_channels` as init.cc sets them.
/// With `skip_doomed`, a first-pass search that a bandwidth bound proves cannot reach min_channels is
/// not run (NCCL runs it, spends its budget and finds nothing); the result is the same, which
/// tests/nccl_test.cpp checks against `skip_doomed = false` on every shipped node.
ChannelSet compute_channels(const System& sys, ChannelPattern pattern, int min_channels, int max_channels, const Table& t,
                            bool skip_doomed = true);

}  // namespace dlscale::nccl
