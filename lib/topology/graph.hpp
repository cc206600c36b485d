// Internal: the node graph on Boost.Graph and what Topology::Impl holds. Only lib/topology and lib/nccl
// see this header (public headers never include Boost).
#pragma once

#include <boost/graph/adjacency_list.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "dlscale/topology.hpp"

namespace dlscale::nccl {
struct System;
}

namespace dlscale::topo {

enum class CpuArch { x86, power, arm };
enum class CpuVendor { intel, amd, ibm, other };

struct VertexProps {
  std::string name;
  VertexKind kind = VertexKind::gpu;
  int gpu = -1;                 // local GPU index
  CpuArch arch = CpuArch::x86;  // CPUs
  CpuVendor vendor = CpuVendor::intel;
  std::string model;   // CPUs: broadwell, skylake, sapphire_rapids, emerald_rapids, power9, zen…
  double nic_gbs = 0;  // NICs: speed in GB/s per direction
  bool gdr = true;     // NICs: GPU Direct RDMA capable
};

struct EdgeProps {
  LinkKind kind = LinkKind::pcie;
  int count = 1;
  int lanes = 0;
  int generation = 0;
  double gbs = 0;  // per direction, GB/s, as NCCL rates it (or the file's override)
  Seconds latency{};
  int line = 0;  // where the file declared it
};

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, VertexProps, EdgeProps>;
using Vertex = boost::graph_traits<Graph>::vertex_descriptor;

struct P2pOverride {
  int a = 0, b = 0;
  BytesPerSecond bandwidth{};
};

}  // namespace dlscale::topo

namespace dlscale {

struct Topology::Impl {
  topo::Graph graph;
  std::vector<topo::Vertex> gpus;  // by local index
  std::vector<topo::Vertex> nics;
  int sm = 0;
  int nodes = 1;
  int gpus_per_node = 1;
  bool pcie_p2p = true;  // false: the GPUs refuse PCIe peer-to-peer (GeForce), traffic goes through the host
  FabricInfo fabric;
  std::vector<topo::P2pOverride> p2p_overrides;

  mutable std::mutex mutex;
  mutable std::shared_ptr<const nccl::System> all_gpus[2];  // every GPU of the node, without/with NICs
  mutable std::shared_ptr<const nccl::System> links_only;   // every GPU, links without paths (gpu_link_bandwidth)
  mutable std::map<std::tuple<int, std::vector<int>, bool>, ChannelSet> cache;
  /// NCCL's system trimmed to some GPUs (with/without NICs) as built, before a search: the ring's and the
  /// tree's searches over the same GPUs start from the same one (building it is most of a search's cost).
  mutable std::map<std::pair<std::vector<int>, bool>, std::shared_ptr<const nccl::System>> trimmed;
};

namespace topo {
/// NCCL's bandwidth of an NVLink (GB/s per link per direction) for a GPU generation (topo.h).
double nvlink_gbs(int sm);
/// NCCL's bandwidth of a PCIe link: width × per-lane rate / 80 (topo.cc).
double pcie_gbs(int generation, int lanes);
/// NCCL's bandwidth between two CPU sockets of an architecture/model (topo.h).
double cpu_link_gbs(CpuArch arch, CpuVendor vendor, const std::string& model);
}  // namespace topo

}  // namespace dlscale
