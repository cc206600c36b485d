// The scenario with one resource doubled or its links changed (include/dlscale/resources.hpp).
#include <fmt/format.h>

#include <array>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "dlscale/format.hpp"
#include "dlscale/resources.hpp"

namespace dlscale {

// ---- resources --------------------------------------------------------------------------------------
bool uses_simple_links(const Scenario& sc) noexcept { return !sc.cluster.topology && !sc.collectives; }

namespace {
/// The graph/calibrated model scaled by the α-β ratio new/old, size by size (plan.hpp, rescale_links).
class RescaledLinks final : public CollectiveModel {
 public:
  RescaledLinks(std::shared_ptr<const CollectiveModel> base, const Cluster& before, const Cluster& after)
      : base_(std::move(base)),
        old_(make_alpha_beta_model(before)),
        new_(make_alpha_beta_model(after)),
        links_{before.intra_node.bandwidth, after.intra_node.bandwidth, before.inter_node.bandwidth, after.inter_node.bandwidth} {
  }

  static double ratio(Seconds now, Seconds then) { return then > Seconds{} ? now / then : 1.0; }

  Seconds time(CollectiveOp op, Bytes size, const GpuPlacement& at) const override {
    return base_->time(op, size, at) * ratio(new_->time(op, size, at), old_->time(op, size, at));
  }
  void times(CollectiveOp op, std::span<const Bytes> sizes, const GpuPlacement& at, std::span<Seconds> out) const override {
    thread_local std::vector<Seconds> a, b;
    a.resize(sizes.size());
    b.resize(sizes.size());
    base_->times(op, sizes, at, out);
    old_->times(op, sizes, at, a);
    new_->times(op, sizes, at, b);
    for (std::size_t i = 0; i < sizes.size(); ++i) out[i] = out[i] * ratio(b[i], a[i]);
  }
  Seconds parameter_server(Bytes size, const GpuPlacement& at, int servers) const override {
    return base_->parameter_server(size, at, servers) *
        ratio(new_->parameter_server(size, at, servers), old_->parameter_server(size, at, servers));
  }
  std::string describe() const override {
    return fmt::format("{}, rescaled by the alpha-beta ratio of new to old links (intra-node {} -> {}, inter-node {} -> {})",
                       base_->describe(), links_[0], links_[1], links_[2], links_[3]);
  }

 private:
  std::shared_ptr<const CollectiveModel> base_, old_, new_;
  std::array<BytesPerSecond, 4> links_;  // intra-node before, after; inter-node before, after (formatted when described)
};

bool same_links(const Cluster& a, const Cluster& b) {
  return a.intra_node.bandwidth == b.intra_node.bandwidth && a.intra_node.latency == b.intra_node.latency &&
      a.inter_node.bandwidth == b.inter_node.bandwidth && a.inter_node.latency == b.inter_node.latency;
}
}  // namespace

std::shared_ptr<const CollectiveModel> rescale_links(std::shared_ptr<const CollectiveModel> base, const Cluster& before,
                                                     const Cluster& after) {
  if (same_links(before, after)) return base;
  return std::make_shared<RescaledLinks>(std::move(base), before, after);
}

Scenario with_links(const Scenario& sc, const Cluster& changed) {
  Scenario out = sc;
  out.cluster = changed;
  if (!same_links(sc.cluster, changed)) {
    if (!uses_simple_links(sc)) {
      auto base = sc.collectives ? sc.collectives : make_collective_model(sc.cluster);
      out.collectives = rescale_links(std::move(base), sc.cluster, changed);
    }
    if (out.profile)
      for (auto& [n, m] : out.profile->measured) m.comm.reset();  // a measured total no longer applies
  }
  return out;
}

Scenario with_doubled(const Scenario& sc, Resource r) {
  // the links: with_links's copy (no copy before it)
  if (r == Resource::intra_node || r == Resource::inter_node) {
    Cluster c = sc.cluster;
    auto& link = r == Resource::intra_node ? c.intra_node : c.inter_node;
    link.bandwidth = link.bandwidth * 2.0;
    (r == Resource::intra_node ? c.topology_intra_scale : c.topology_inter_scale) *= 2.0;  // the graph's point-to-point paths
    return with_links(sc, c);
  }
  Scenario out = sc;
  switch (r) {
    case Resource::gpu: {
      // A GPU twice as fast in every way: every precision's peak (bf16 too: it was left out, so a bf16
      // run gained only from memory bandwidth) and the clocks with them, so that the math per SM per clock
      // that feeds the kernel model's tiles (eq. K3) stays the same, as does every per-clock rate.
      GpuSpec& g = out.cluster.gpu;
      // a caller's layer times are the GPU's before doubling; its times for the doubled GPU, if any, replace them
      out.modelled_layers = std::move(out.modelled_layers_doubled_gpu);
      g.peak_fp32 = g.peak_fp32 * 2.0;
      g.peak_fp16 = g.peak_fp16 * 2.0;
      g.peak_tf32 = g.peak_tf32 * 2.0;
      g.peak_bf16 = g.peak_bf16 * 2.0;
      g.base_clock = g.base_clock * 2.0;
      g.boost_clock = g.boost_clock * 2.0;
      g.memory_bandwidth = g.memory_bandwidth * 2.0;
      if (out.measured_layers)
        for (auto* v : {&out.measured_layers->forward, &out.measured_layers->backward, &out.measured_layers->update})
          for (auto& x : *v) x = x * 0.5;
      if (out.profile) {
        auto& p = out.profile->single_gpu;
        p.forward = p.forward * 0.5;
        p.backward = p.backward * 0.5;
        p.update = p.update * 0.5;
      }
      break;
    }
    case Resource::host_to_gpu:
      out.cluster.h2d_pinned = out.cluster.h2d_pinned * 2.0;
      out.cluster.h2d_pageable = out.cluster.h2d_pageable * 2.0;
      if (out.profile) {
        out.profile->single_gpu.h2d = out.profile->single_gpu.h2d * 0.5;
        for (auto& [n, m] : out.profile->measured)
          if (m.h2d) m.h2d = *m.h2d * 0.5;
      }
      break;
    case Resource::intra_node:
    case Resource::inter_node:
      break;  // above
    case Resource::host_issue:
      // eq. K20: the host issues twice as fast; the layer times are the model's again (a caller's were at the old rate)
      if (out.strategy.execution.host_issue > Seconds{}) {
        out.strategy.execution.host_issue = out.strategy.execution.host_issue * 0.5;
        out.modelled_layers.reset();
        out.modelled_layers_doubled_gpu.reset();
      }
      break;
    case Resource::storage:
      out.cluster.disk = out.cluster.disk * 2.0;
      out.cluster.page_cache = out.cluster.page_cache * 2.0;
      if (out.cluster.input) {  // the input pipeline: every tier and decoder twice as fast
        InputPipeline& ip = *out.cluster.input;
        ip.page_cache = ip.page_cache * 2.0;
        ip.nvme = ip.nvme * 2.0;
        ip.nfs_aggregate = ip.nfs_aggregate * 2.0;
        ip.nfs_per_node = ip.nfs_per_node * 2.0;
        ip.decode_mpix_per_core *= 2.0;
        ip.gpu_decode_mpix *= 2.0;
      }
      if (out.profile) {
        out.profile->single_gpu.io = out.profile->single_gpu.io * 0.5;
        for (auto& [n, m] : out.profile->measured)
          if (m.io) m.io = *m.io * 0.5;
      }
      break;
  }
  return out;
}

}  // namespace dlscale
