// Internal: NCCL's tuning model (src/graph/tuning.cc ncclTopoTuneModel + ncclTopoGetAlgoTime) on the
// channels of a Topology, and the CollectiveModel built on it.
#pragma once

#include <memory>
#include <string>

#include "dlscale/collective.hpp"
#include "dlscale/topology.hpp"
#include "nccl/table.hpp"

namespace dlscale::nccl {

struct Choice {
  Seconds time{};
  int algorithm = RING;  // TREE or RING
  int protocol = SIMPLE;
  int channels = 0;
  BytesPerSecond algbw_model{};  // NCCL's algorithm bandwidth for the pair (after the protocol's factor)
  Seconds latency{};
};

std::string_view algorithm_name(int a) noexcept;
std::string_view protocol_name(int p) noexcept;

/// The (algorithm, protocol) NCCL would pick for `op` of `size` bytes (nccl-tests size semantics) on
/// `where`, and its predicted time. GPUs 0..gpus_per_node-1 of each of `nodes` nodes take part.
Choice choose(const Topology& topo, const Table& table, CollectiveOp op, Bytes size, const GpuPlacement& where);

/// nccl-tests' bus-bandwidth factor (doc/PERFORMANCE.md): all-reduce 2(n−1)/n, all-gather and
/// reduce-scatter (n−1)/n, broadcast and reduce 1.
double busbw_factor(CollectiveOp op, int n) noexcept;

std::shared_ptr<const CollectiveModel> make_nccl_model(std::shared_ptr<const Topology> topo, std::string cluster_name);

}  // namespace dlscale::nccl
