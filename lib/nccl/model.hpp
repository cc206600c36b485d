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
  int algorithm = RING;  // TREE, RING, NVLS, NVLS_TREE, PAT, COLLNET_DIRECT or COLLNET_CHAIN
  int protocol = SIMPLE;
  int channels = 0;
  BytesPerSecond algbw_model{};  // NCCL's algorithm bandwidth for the pair (after the protocol's factor)
  Seconds latency{};
};

std::string_view algorithm_name(int a) noexcept;
std::string_view protocol_name(int p) noexcept;
/// NCCL_ALGO's and NCCL_PROTO's names, lower case (ring, tree, nvls, nvls_tree, collnet_direct,
/// collnet_chain, pat; ll, ll128, simple): the Algo / Proto index, or -1 for another name.
int algorithm_from_name(std::string_view name) noexcept;
int protocol_from_name(std::string_view name) noexcept;

/// NCCL_ALGO / NCCL_PROTO: the choice restricted to one algorithm and/or one protocol (-1: any).
struct Forced {
  int algorithm = -1;
  int protocol = -1;
};

/// The (algorithm, protocol) NCCL would pick for `op` of `size` bytes (nccl-tests size semantics) on
/// `where`, and its predicted time. GPUs 0..gpus_per_node-1 of each of `nodes` nodes take part. With
/// `forced`, only the pairs it allows compete; InputError (why_not's text) when NCCL can run none of them.
Choice choose(const Topology& topo, const Table& table, CollectiveOp op, Bytes size, const GpuPlacement& where,
              Forced forced = {});
/// Empty when NCCL can run some pair `forced` allows for `op` on `where`; else one sentence saying why not.
std::string why_not(const Topology& topo, const Table& table, CollectiveOp op, const GpuPlacement& where, Forced forced);

/// Host time to issue one collective from one thread on `gpus_per_thread` GPUs (nccl-tests -g): the
/// table's launch cost per GPU, once per GPU (each gets its own enqueue and kernel launch).
Seconds host_issue_time(const Table& t, int gpus_per_thread) noexcept;
/// The part of it that adds to the operation's time: the issue of all GPUs but the last, (k − 1)·t_launch
/// (nccl_tests_time below; a calibration curve measured that way takes it out again).
Seconds issue_before_last(const Table& t, int gpus_per_thread) noexcept;

/// The time of one operation as nccl-tests reports it (wall time of back-to-back iterations divided by
/// their number), with k = gpus_per_thread GPUs issued in turn by one thread (nccl-tests -g k):
///   t = (k − 1)·t_launch + max(t_launch, device),   device = choose(...).time (NCCL's model).
/// The issue of the first k − 1 GPUs adds to the operation and only the last one's overlaps the device
/// work: the two single-thread logs in tests/data/real-inputs (8 and 12 GPUs, 2019 and 2020) sit at
/// k·t_launch for their smallest sizes and about (k − 1)·t_launch above NCCL's time from 1 MiB to the
/// largest (docs/topology.md, "Against real nccl-tests logs"). With one GPU per thread (MPI, one process
/// per GPU, as training runs) it is max(t_launch, device) = device, since t_launch (4.8 µs) is below
/// every NCCL latency (≥ 6.6 µs).
Seconds nccl_tests_time(Seconds device, const Table& t, int gpus_per_thread) noexcept;

/// nccl-tests' bus-bandwidth factor (doc/PERFORMANCE.md): all-reduce 2(n−1)/n, all-gather and
/// reduce-scatter (n−1)/n, broadcast and reduce 1.
double busbw_factor(CollectiveOp op, int n) noexcept;

std::shared_ptr<const CollectiveModel> make_nccl_model(std::shared_ptr<const Topology> topo, std::string cluster_name);

}  // namespace dlscale::nccl
