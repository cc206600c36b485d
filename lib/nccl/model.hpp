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

/// Host time to issue one collective from one thread on `gpus_per_thread` GPUs (nccl-tests -g): the
/// table's launch cost per GPU, once per GPU (each gets its own enqueue and kernel launch).
Seconds host_issue_time(const Table& t, int gpus_per_thread) noexcept;

/// The time of one operation as nccl-tests reports it. nccl-tests issues its iterations back to back
/// without waiting and divides the wall time by their number, so the host's issue of the next call
/// overlaps the device's work on the previous one and the slower side sets the pace:
///   t = max(host_issue_time(gpus_per_thread), device),   device = choose(...).time (NCCL's model).
/// With one GPU per thread (MPI, one process per GPU, as training runs) the host side (5 µs) is below
/// every NCCL latency (≥ 6.6 µs), so it only shows when one thread drives several GPUs.
Seconds nccl_tests_time(Seconds device, const Table& t, int gpus_per_thread) noexcept;

/// nccl-tests' bus-bandwidth factor (doc/PERFORMANCE.md): all-reduce 2(n−1)/n, all-gather and
/// reduce-scatter (n−1)/n, broadcast and reduce 1.
double busbw_factor(CollectiveOp op, int n) noexcept;

std::shared_ptr<const CollectiveModel> make_nccl_model(std::shared_ptr<const Topology> topo, std::string cluster_name);

}  // namespace dlscale::nccl
