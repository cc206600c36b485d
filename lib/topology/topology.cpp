// Topology: the node graph and its names; the path and channel queries, which follow NCCL's rules, are
// in lib/nccl/topology_queries.cpp.
#include <fmt/format.h>

#include <algorithm>

#include "topology/graph.hpp"

namespace dlscale {

BytesPerSecond FabricInfo::effective_nic_bandwidth() const noexcept {
  if (single_flow > BytesPerSecond{}) return min(nic_bandwidth, single_flow * static_cast<double>(flows));
  return nic_bandwidth;
}

namespace topo {

// src/graph/topo.h: SM60_NVLINK_BW 18, SM70 20, SM80 20, SM86 12, SM90 20.6, SM100 40.1 (GB/s per link).
double nvlink_gbs(int sm) {
  if (sm >= 100) return 40.1;
  if (sm == 86) return 12.0;
  if (sm >= 90) return 20.6;
  if (sm >= 80) return 20.0;
  if (sm >= 70) return 20.0;
  if (sm >= 60) return 18.0;
  return 20.0;
}

// src/graph/topo.cc: width × per-lane rate (in 100 Mb/s: 2.5 GT/s → 15, 5 → 30, 8 → 60, 16 → 120,
// 32 → 240, 64 → 480) / 80. Gen3 x16 = 12 GB/s, Gen4 x16 = 24, Gen5 x16 = 48.
double pcie_gbs(int generation, int lanes) {
  static const double rate[] = {0, 15, 30, 60, 120, 240, 480};
  const int g = std::clamp(generation, 1, 6);
  return lanes * rate[g] / 80.0;
}

// src/graph/topo.h: P9_BW 32, ARM_BW 6, AMD_BW 16, BDW_QPI_BW 6, SKL_QPI_BW 10, SRP_QPI_BW 22, ERP_QPI_BW 40.
double cpu_link_gbs(CpuArch arch, CpuVendor vendor, const std::string& model) {
  if (arch == CpuArch::power) return 32.0;
  if (arch == CpuArch::arm) return 6.0;
  if (vendor == CpuVendor::amd) return 16.0;
  if (model == "skylake" || model == "cascade_lake" || model == "ice_lake") return 10.0;
  if (model == "sapphire_rapids") return 22.0;
  if (model == "emerald_rapids") return 40.0;
  return 6.0;  // Broadwell / Haswell QPI and anything older
}

}  // namespace topo

Topology::Topology(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Topology::~Topology() = default;
Topology::Topology(Topology&&) noexcept = default;
Topology& Topology::operator=(Topology&&) noexcept = default;

int Topology::max_nodes() const noexcept { return impl_->nodes; }
int Topology::gpus_per_node() const noexcept { return impl_->gpus_per_node; }
int Topology::sm_version() const noexcept { return impl_->sm; }
const FabricInfo& Topology::fabric() const noexcept { return impl_->fabric; }

std::vector<TopologyVertex> Topology::vertices() const {
  std::vector<TopologyVertex> out;
  const auto& g = impl_->graph;
  for (auto v : boost::make_iterator_range(boost::vertices(g))) {
    const auto& p = g[v];
    TopologyVertex tv{p.name, p.kind, p.gpu, {}};
    if (p.kind == VertexKind::cpu) {
      const char* arch = p.arch == topo::CpuArch::power ? "power" : p.arch == topo::CpuArch::arm ? "arm" : "x86";
      const char* vendor = p.vendor == topo::CpuVendor::intel ? "intel"
          : p.vendor == topo::CpuVendor::amd                  ? "amd"
          : p.vendor == topo::CpuVendor::ibm                  ? "ibm"
                                                              : "other";
      tv.detail = fmt::format("{} {}{}{}", arch, vendor, p.model.empty() ? "" : " ", p.model);
    } else if (p.kind == VertexKind::nic) {
      tv.detail = fmt::format("{:g} GB/s{}", p.nic_gbs, p.gdr ? ", GPU Direct RDMA" : "");
    }
    out.push_back(std::move(tv));
  }
  return out;
}

std::vector<TopologyLink> Topology::links() const {
  std::vector<TopologyLink> out;
  const auto& g = impl_->graph;
  out.reserve(boost::num_edges(g));
  for (auto e : boost::make_iterator_range(boost::edges(g))) {
    const auto& p = g[e];
    out.push_back(TopologyLink{g[boost::source(e, g)].name, g[boost::target(e, g)].name, p.kind, p.count, p.lanes, p.generation,
                               gigabytes_per_second(p.gbs), p.latency});
  }
  return out;
}

std::vector<std::string> Topology::nic_names() const {
  std::vector<std::string> out;
  for (auto v : impl_->nics) out.push_back(impl_->graph[v].name);
  return out;
}

}  // namespace dlscale
