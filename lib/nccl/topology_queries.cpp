// Topology's path and channel queries: NCCL's rules (src/graph/paths.cc, search.cc) on the node graph.
// They live with the NCCL model that computes them, above lib/topology, which holds only the graph.
#include <fmt/format.h>

#include <algorithm>

#include "dlscale/error.hpp"
#include "nccl/system.hpp"
#include "nccl/table.hpp"
#include "topology/graph.hpp"

namespace dlscale {

namespace {
const nccl::System& full_system(const Topology::Impl& impl, bool nets) {
  std::lock_guard lock(impl.mutex);
  auto& slot = impl.all_gpus[nets ? 1 : 0];
  if (!slot) {
    std::vector<int> all(static_cast<std::size_t>(impl.gpus_per_node));
    for (int i = 0; i < impl.gpus_per_node; ++i) all[static_cast<std::size_t>(i)] = i;
    slot = std::make_shared<const nccl::System>(nccl::build_system(impl, all, nets, nccl::default_table()));
  }
  return *slot;
}

GpuPath to_gpu_path(const nccl::SPath& p) {
  GpuPath out;
  out.type = static_cast<PathType>(p.type);
  out.bandwidth = gigabytes_per_second(p.bw);
  out.hops = p.count();
  return out;
}

void check_gpu(const Topology& t, int g, std::string_view what) {
  if (g < 0 || g >= t.max_gpus())
    throw InputError(fmt::format("{} {} is not a GPU of this cluster (0..{})", what, g, t.max_gpus() - 1));
}
}  // namespace

GpuPath Topology::nic_path(int local_gpu, int nic) const {
  if (impl_->nics.empty()) return {};
  const auto& s = full_system(*impl_, true);
  const auto& p = s.p(nccl::GPU, local_gpu, nccl::NET, nic);
  if (p.pxn) {  // the GPU's own path (as nvidia-smi shows it), not NCCL's relay through another GPU
    nccl::SPath direct;
    direct.type = p.direct_type;
    direct.bw = p.direct_bw;
    direct.links.resize(static_cast<std::size_t>(p.direct_hops));
    return to_gpu_path(direct);
  }
  return to_gpu_path(p);
}

Topology::NicRoute Topology::nic_route(int local_gpu, int nic) const {
  if (impl_->nics.empty()) return {};
  const auto& p = full_system(*impl_, true).p(nccl::GPU, local_gpu, nccl::NET, nic);
  return NicRoute{to_gpu_path(p), p.pxn};
}

GpuPath Topology::path(int a, int b) const {
  check_gpu(*this, a, "GPU");
  check_gpu(*this, b, "GPU");
  const int gpn = impl_->gpus_per_node;
  const int na = a / gpn, nb = b / gpn, la = a % gpn, lb = b % gpn;
  if (na == nb) {
    if (la == lb) return GpuPath{PathType::loc, gigabytes_per_second(nccl::default_table().loc_bw), 0, true, 0};
    const auto& s = full_system(*impl_, false);
    GpuPath out = to_gpu_path(s.p(nccl::GPU, la, nccl::GPU, lb));
    out.p2p = s.p2p[static_cast<std::size_t>(la)][static_cast<std::size_t>(lb)] != 0;
    const auto& g = impl_->graph;
    for (auto e : boost::make_iterator_range(boost::out_edges(impl_->gpus[static_cast<std::size_t>(la)], g)))
      if (boost::target(e, g) == impl_->gpus[static_cast<std::size_t>(lb)] && g[e].kind == LinkKind::nvlink)
        out.nvlinks += g[e].count;
    return out;
  }
  // Across nodes: each GPU reaches its best NIC, the NICs meet on the fabric.
  const auto& s = full_system(*impl_, true);
  auto best = [&](int lg) {
    nccl::SPath bestp;
    for (int n = 0; n < s.count(nccl::NET); ++n) {
      const auto& p = s.p(nccl::GPU, lg, nccl::NET, n);
      if (p.bw > bestp.bw || (p.bw == bestp.bw && p.type < bestp.type)) bestp = p;
    }
    return bestp;
  };
  const auto pa = best(la), pb = best(lb);
  GpuPath out;
  out.type = PathType::net;
  out.bandwidth = gigabytes_per_second(std::min(pa.bw, pb.bw));
  out.hops = pa.count() + pb.count() + 1;
  return out;
}

BytesPerSecond Topology::measured_p2p(int a, int b) const noexcept {
  for (const auto& o : impl_->p2p_overrides)
    if ((o.a == a && o.b == b) || (o.a == b && o.b == a)) return o.bandwidth;
  return {};
}

BytesPerSecond Topology::gpu_link_bandwidth(int local_gpu) const {
  // A GPU's own links need no paths: the full system when it is built anyway, else its links alone (a
  // one-node collective asks this of NVLS and nothing that needs the full system's paths).
  std::shared_ptr<const nccl::System> s;
  {
    std::lock_guard lock(impl_->mutex);
    s = impl_->all_gpus[0] ? impl_->all_gpus[0] : impl_->links_only;
    if (!s) {
      std::vector<int> all(static_cast<std::size_t>(impl_->gpus_per_node));
      for (int i = 0; i < impl_->gpus_per_node; ++i) all[static_cast<std::size_t>(i)] = i;
      s = impl_->links_only = std::make_shared<const nccl::System>(nccl::build_links(*impl_, all, false));
    }
  }
  return gigabytes_per_second(nccl::own_link_bw(*s, s->of_type[nccl::GPU][static_cast<std::size_t>(local_gpu)]));
}

ChannelSet Topology::channels(ChannelPattern pattern, std::span<const int> local_gpus, int nodes) const {
  std::vector<int> gpus(local_gpus.begin(), local_gpus.end());
  std::sort(gpus.begin(), gpus.end());
  gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
  if (gpus.empty()) throw InputError("a channel search needs at least one GPU");
  for (int g : gpus)
    if (g < 0 || g >= impl_->gpus_per_node)
      throw InputError(fmt::format("GPU {} is not a GPU of one node (0..{})", g, impl_->gpus_per_node - 1));
  const bool nets = nodes > 1;
  if (nets && impl_->nics.empty()) throw InputError("the cluster has no NIC to join nodes");
  const auto key = std::make_tuple(static_cast<int>(pattern), gpus, nets);
  {
    std::lock_guard lock(impl_->mutex);
    if (auto it = impl_->cache.find(key); it != impl_->cache.end()) return it->second;
  }
  const auto& table = nccl::default_table();
  // the system built for these GPUs, shared: a search books bandwidth on its own copy of the links
  auto built = [&] {
    std::shared_ptr<const nccl::System> kept;
    {
      std::lock_guard lock(impl_->mutex);
      if (auto it = impl_->trimmed.find({gpus, nets}); it != impl_->trimmed.end()) kept = it->second;
    }
    if (!kept) {
      kept = std::make_shared<const nccl::System>(nccl::build_system(*impl_, gpus, nets, table));
      std::lock_guard lock(impl_->mutex);
      impl_->trimmed.emplace(std::pair{gpus, nets}, kept);
    }
    return kept;
  };
  ChannelSet result;
  if (pattern == ChannelPattern::ring) {
    result = nccl::compute_channels(*built(), pattern, 1, table.max_channels, table);
  } else {
    // init.cc: the tree search must find as many channels as the ring search did.
    const ChannelSet ring = channels(ChannelPattern::ring, gpus, nodes);
    result = nccl::compute_channels(*built(), pattern, ring.channels, ring.channels, table);
  }
  std::lock_guard lock(impl_->mutex);
  impl_->cache.emplace(key, result);
  return result;
}

Seconds p2p_copy_time(const Topology& t, int a, int b, Bytes size) {
  const GpuPath p = t.path(a, b);
  if (p.type == PathType::loc) return {};
  const auto& table = nccl::default_table();
  const int gpn = t.gpus_per_node();
  BytesPerSecond bw = p.bandwidth;
  if (a / gpn == b / gpn) {
    const BytesPerSecond m = t.measured_p2p(a % gpn, b % gpn);
    if (m > BytesPerSecond{}) bw = m;
  }
  const int hw = p.type == PathType::net                     ? nccl::HW_NET
      : (p.type == PathType::nvl || p.type == PathType::nvb) ? nccl::HW_NVLINK
                                                             : nccl::HW_PCI;
  return microseconds(table.hw_latency_us[static_cast<std::size_t>(hw)][nccl::RING][nccl::SIMPLE]) + size / bw;
}

}  // namespace dlscale
