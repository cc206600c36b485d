// Transports between nodes (include/dlscale/transport.hpp, docs/input-formats.md "Transports").
#include "dlscale/transport.hpp"

#include <fmt/format.h>

#include <vector>

#include "dlscale/cluster.hpp"
#include "dlscale/format.hpp"

namespace dlscale {
namespace {

class TransportModel final : public CollectiveModel {
 public:
  TransportModel(std::shared_ptr<const CollectiveModel> base, Transport t, const Cluster& c)
      : base_(std::move(base)),
        t_(std::move(t)),
        net_(c.inter_node.bandwidth),
        copy_(c.h2d_pinned),
        latency_(c.inter_node.latency + t_.per_message),
        staged_(t_.staged || !c.gpudirect_rdma) {
    effective_ = net_ * t_.wire_efficiency;
    if (staged_) {
      const BytesPerSecond host = c.host_memory > BytesPerSecond{} ? c.host_memory : effective_ * 2.0;
      effective_ = eq::staged_bandwidth(effective_, c.h2d_pinned, host);
    }
    slowdown_ = effective_ > BytesPerSecond{} && net_ > BytesPerSecond{} ? net_ / effective_ : 1.0;
  }

  Seconds time(CollectiveOp op, Bytes size, const GpuPlacement& where) const override {
    // One tensor of the framework's sequence (the simulator asks tensor by tensor): its exchange; the copies the
    // pipeline leaves exposed belong to the sequence's ends, which only times() sees (eq. transport-3).
    if (rooted(op, where)) return eq::root_allreduce(size, where.nodes, effective_, latency_);
    const Seconds t = base_->time(op, size, where);
    return where.nodes > 1 ? t * slowdown_ : t;
  }

  void times(CollectiveOp op, std::span<const Bytes> sizes, const GpuPlacement& where, std::span<Seconds> out) const override {
    if (rooted(op, where)) {
      rooted_times(sizes, where, out);
      return;
    }
    base_->times(op, sizes, where, out);
    if (where.nodes > 1)
      for (auto& t : out) t = t * slowdown_;
  }

  Seconds parameter_server(Bytes size, const GpuPlacement& where, int servers) const override {
    if (where.nodes <= 1 || where.gpus <= 1) return base_->parameter_server(size, where, servers);
    if (t_.is_default()) return base_->parameter_server(size, where, servers) * slowdown_;  // NCCL-style, staged
    const int k = servers > 0 ? servers : where.nodes;
    return eq::rpc_parameter_server(size, where.gpus, k, effective_, t_.per_message);
  }

  std::string describe() const override {
    return fmt::format("{}; across nodes: {} transport at {} ({}{}{}{})", base_->describe(), t_.name, effective_,
                       staged_ ? "staged through host memory, " : "", fmt::format("{:g} of the link", t_.wire_efficiency),
                       t_.per_message > Seconds{} ? fmt::format(", {} per message", t_.per_message) : std::string(),
                       t_.root_allreduce ? ", all-reduce reduced at one root node" : "");
  }

 private:
  [[nodiscard]] bool rooted(CollectiveOp op, const GpuPlacement& where) const noexcept {
    return t_.root_allreduce && op == CollectiveOp::allreduce && where.nodes > 1;
  }
  /// Eq. transport-3 over the tensors in the order the framework hands them over: each one's root exchange,
  /// and the copies that the pipeline leaves out of the network's shadow (the first tensor's copy to the host,
  /// the last one's copy back), charged to those two.
  void rooted_times(std::span<const Bytes> sizes, const GpuPlacement& where, std::span<Seconds> out) const {
    std::size_t first = sizes.size(), last = sizes.size();
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      out[i] = sizes[i] > Bytes{} ? eq::root_allreduce(sizes[i], where.nodes, effective_, latency_) : Seconds{};
      if (sizes[i] > Bytes{}) {
        if (first == sizes.size()) first = i;
        last = i;
      }
    }
    if (first == sizes.size()) return;
    out[first] += eq::staging_exposed(sizes[first], Bytes{}, copy_);
    out[last] += eq::staging_exposed(Bytes{}, sizes[last], copy_);
  }

  std::shared_ptr<const CollectiveModel> base_;
  Transport t_;
  BytesPerSecond net_{}, effective_{}, copy_{};
  Seconds latency_{};
  bool staged_ = false;
  double slowdown_ = 1.0;
};

}  // namespace

std::shared_ptr<const CollectiveModel> with_transport(std::shared_ptr<const CollectiveModel> base, const Transport& t,
                                                      const Cluster& cluster) {
  if (t.is_default() && cluster.gpudirect_rdma) return base;
  return std::make_shared<TransportModel>(std::move(base), t, cluster);
}

}  // namespace dlscale
