// The α-β collective model (issue 2's stand-in until the topology graph is given).
#include "dlscale/collective.hpp"

#include <fmt/format.h>

#include "dlscale/cluster.hpp"
#include "dlscale/format.hpp"

namespace dlscale {

void CollectiveModel::times(CollectiveOp op, std::span<const Bytes> sizes, const GpuPlacement& where,
                            std::span<Seconds> out) const {
  for (std::size_t i = 0; i < sizes.size(); ++i) out[i] = time(op, sizes[i], where);
}

Seconds CollectiveModel::parameter_server(Bytes size, const GpuPlacement& where, int servers) const {
  // Every GPU pushes its gradients, split evenly over k servers, and pulls the parameters back; each
  // server's link carries N·S/k bytes in each direction (incast). Expressed through a broadcast of the
  // server's share so that the link and latency come from the concrete model.
  if (where.gpus <= 1) return {};
  const int k = servers > 0 ? servers : where.nodes;
  const Bytes per_server_direction = size * (static_cast<double>(where.gpus) / k);
  GpuPlacement two = where;
  two.gpus = 2;
  // one point-to-point transfer of N·S/k bytes each way over the server's link
  return time(CollectiveOp::broadcast, per_server_direction, two) * 2.0;
}

namespace {

class AlphaBetaRing final : public CollectiveModel {
 public:
  explicit AlphaBetaRing(const Cluster& c) : intra_(c.intra_node), inter_(c.inter_node) {}

  /// t = steps·α + (wire bytes per rank)/β, i.e. t = fixed + size·per_byte.
  struct Line {
    Seconds fixed{};
    double per_byte_s = 0;  // seconds per byte of `size`
  };

  [[nodiscard]] Line line(CollectiveOp op, const GpuPlacement& where) const {
    const int n = where.gpus;
    if (n <= 1) return {};
    const bool multi = where.nodes > 1;
    // the slowest link the ring crosses: with one rank a node it crosses none inside a node
    const bool intra = where.gpus_per_node > 1 || !multi;
    const BytesPerSecond beta = !multi ? intra_.bandwidth : intra ? min(inter_.bandwidth, intra_.bandwidth) : inter_.bandwidth;
    const Seconds alpha = !multi ? intra_.latency : intra ? max(inter_.latency, intra_.latency) : inter_.latency;
    const double nm1 = n - 1;
    const double inv_beta = 1.0 / in_bytes_per_second(beta);
    switch (op) {
      case CollectiveOp::allreduce:  // reduce-scatter + all-gather: 2(n−1) steps of S/n
        return {alpha * (2 * nm1), (2 * nm1 / n) * inv_beta};
      case CollectiveOp::allgather:
      case CollectiveOp::reducescatter:  // n−1 steps of S/n (S = the whole array)
        return {alpha * nm1, (nm1 / n) * inv_beta};
      case CollectiveOp::broadcast:
      case CollectiveOp::reduce:  // pipelined chain: latency across n−1 hops, S once over the slowest link
        return {alpha * nm1, inv_beta};
    }
    return {};
  }

  Seconds time(CollectiveOp op, Bytes size, const GpuPlacement& where) const override {
    const Line l = line(op, where);
    return l.fixed + seconds(in_bytes(size) * l.per_byte_s);
  }

  void times(CollectiveOp op, std::span<const Bytes> sizes, const GpuPlacement& where, std::span<Seconds> out) const override {
    const Line l = line(op, where);
    for (std::size_t i = 0; i < sizes.size(); ++i) out[i] = l.fixed + seconds(in_bytes(sizes[i]) * l.per_byte_s);
  }

  std::string describe() const override {
    return fmt::format("alpha-beta ring over the slowest link (intra-node {} / {}, inter-node {} / {})", intra_.bandwidth,
                       intra_.latency, inter_.bandwidth, inter_.latency);
  }

 private:
  LinkSpec intra_, inter_;
};

}  // namespace

std::shared_ptr<const CollectiveModel> make_alpha_beta_model(const Cluster& cluster) {
  return std::make_shared<AlphaBetaRing>(cluster);
}

}  // namespace dlscale
