// Time of one collective operation over a set of GPUs. The first implementation is an α-β ring over
// the slowest link the GPUs use; the topology component provides a NCCL-faithful one behind the same
// interface.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "dlscale/detail/enum_names.hpp"
#include "dlscale/units.hpp"

namespace dlscale {

struct Cluster;

/// Which GPUs take part: `gpus` in all on `nodes` nodes, `gpus_per_node` on each.
struct GpuPlacement {
  int gpus = 1;
  int nodes = 1;
  int gpus_per_node = 1;
};

enum class CollectiveOp { allreduce, allgather, reducescatter, broadcast, reduce };
template <>
struct EnumNames<CollectiveOp> {
  static constexpr std::array<EnumName<CollectiveOp>, 5> names{{
      {CollectiveOp::allreduce, "allreduce"},
      {CollectiveOp::allgather, "allgather"},
      {CollectiveOp::reducescatter, "reducescatter"},
      {CollectiveOp::broadcast, "broadcast"},
      {CollectiveOp::reduce, "reduce"},
  }};
  static constexpr std::array<EnumName<CollectiveOp>, 0> aliases{};
};

class CollectiveModel {
 public:
  virtual ~CollectiveModel() = default;
  /// `size` follows nccl-tests: the array each rank contributes for all-reduce, broadcast and reduce;
  /// the total (gathered) array for all-gather and reduce-scatter.
  [[nodiscard]] virtual Seconds time(CollectiveOp op, Bytes size, const GpuPlacement& where) const = 0;
  /// The same for many sizes at once (out[i] = time(op, sizes[i], where)); models override it when they
  /// can share work across sizes. The predictor calls this once per layer list.
  virtual void times(CollectiveOp op, std::span<const Bytes> sizes, const GpuPlacement& where, std::span<Seconds> out) const;
  /// Push `size` bytes of gradients from every GPU to `servers` parameter servers and pull the updated
  /// parameters back (servers ≤ 0: one per node). The default models incast on each server's link.
  [[nodiscard]] virtual Seconds parameter_server(Bytes size, const GpuPlacement& where, int servers) const;
  /// One line that says what the model is, for --explain-sources and reports.
  [[nodiscard]] virtual std::string describe() const = 0;
};

/// The α-β ring of issue 2: every collective on the slowest link (intra-node for one node, else the
/// inter-node network), t = steps·α + (bytes on the wire per rank)/β.
std::shared_ptr<const CollectiveModel> make_alpha_beta_model(const Cluster& cluster);

/// The best model the cluster description supports (the NCCL model when it has a topology graph).
std::shared_ptr<const CollectiveModel> make_collective_model(const Cluster& cluster);

}  // namespace dlscale
