// Sharded data parallelism: ZeRO-1/2/3 (DeepSpeed) and FSDP (PyTorch), full or hybrid. What is sharded,
// over which GPUs, what each GPU sends per step and the closed-form timeline of per-unit all-gathers with
// prefetch. Derivations and the hand-worked example: docs/model.md, "Sharded data parallelism" (S1-S8).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "dlscale/collective.hpp"
#include "dlscale/gpu.hpp"
#include "dlscale/units.hpp"

namespace dlscale {

struct Network;

/// A strategy's sharding (models/frameworks/*.yaml, key `sharding`). Stage 0 = full replicas (DDP).
struct Sharding {
  static constexpr int kGroupAll = 0;    // shard over every GPU of the job
  static constexpr int kGroupNode = -1;  // shard over the GPUs of one node, replicate across nodes (hybrid)

  int stage = 0;                      // 1: optimiser state (+ fp32 master), 2: + gradients, 3: + parameters
  bool reshard_after_forward = true;  // stage 3: gather again for backward (FULL_SHARD); false: SHARD_GRAD_OP
  int group = kGroupAll;              // GPUs per shard group: kGroupAll, kGroupNode or a count
  int in_flight = 2;                  // stage 3: gathered units held at once (FSDP limit_all_gathers: 2; 1 = no prefetch)
  std::int64_t unit_params = 100'000'000;  // stage 3: consecutive layers gathered together up to this many parameters

  [[nodiscard]] bool sharded() const noexcept { return stage > 0; }
};

/// The shard group and the replica group of one GPU at a placement (eq. S1): the job's G GPUs form
/// G/n shard groups of n consecutive GPUs; GPU j of every shard group forms a replica group of R = G/n.
struct ShardGroups {
  int shard = 1;     // n
  int replicas = 1;  // R
  GpuPlacement shard_at;    // where one shard group sits
  GpuPlacement replica_at;  // where one replica group sits
};
/// Throws UsageError("--gpus", …) when the group does not divide the GPUs, or neither divides nor is a
/// multiple of the GPUs per node.
ShardGroups shard_groups(const Sharding& s, const GpuPlacement& at);

/// Consecutive learnable layers gathered as one unit (FSDP's size-based wrap, eq. S4): from the input
/// side, layers join the open unit until it holds at least `unit_params` parameters.
struct GatherUnit {
  int first = 0, last = 0;  // layer indices, inclusive, input side first
  std::int64_t params = 0;
};
std::vector<GatherUnit> gather_units(const Network& net, std::int64_t unit_params);

/// Bytes one GPU puts on the wire per optimiser step, by collective (nccl-tests' bus bytes: S·2(n−1)/n for
/// an all-reduce of S, S·(n−1)/n for an all-gather or reduce-scatter of a total S; eq. S2).
struct StepTraffic {
  Bytes allreduce{};          // stage 0: gradients over every GPU
  Bytes reducescatter{};      // stages 1-3: gradients inside the shard group
  Bytes allgather_forward{};  // stage 3: parameters before each unit's forward
  Bytes allgather_backward{}; // stage 3 full shard: again before each unit's backward
  Bytes allgather_update{};   // stages 1-2: the updated parameters after the step
  Bytes allreduce_replicas{}; // hybrid: the gradient shard across the replica group
  [[nodiscard]] Bytes total() const noexcept {
    return allreduce + reducescatter + allgather_forward + allgather_backward + allgather_update + allreduce_replicas;
  }
};
StepTraffic step_traffic(std::int64_t params, const Sharding& s, Precision p, const GpuPlacement& at);

/// Bytes per element of the parameters that are gathered (the working copy: 2 in mixed precision, else 4).
double working_bytes_per_element(Precision p) noexcept;

/// The closed form of one micro-batch of a stage-3 strategy (eq. S5-S7): forward and backward compute of
/// U units, each preceded by the all-gather of its parameters on one all-gather channel that holds at
/// most `in_flight` gathered units, and each unit's reduce-scatter on a second channel once its backward
/// has ended. Units input side first; `gather_backward` empty = no gathers for backward (SHARD_GRAD_OP).
struct ShardedTimeline {
  Seconds compute_end{};  // C: the end of the last backward compute
  Seconds reduce_end{};   // done(1): the end of the last reduce-scatter (zero when there are none)
  [[nodiscard]] Seconds end() const noexcept { return compute_end > reduce_end ? compute_end : reduce_end; }
};
ShardedTimeline sharded_timeline_exact(std::span<const Seconds> forward, std::span<const Seconds> backward,
                                       std::span<const Seconds> gather_forward, std::span<const Seconds> gather_backward,
                                       std::span<const Seconds> reduce, int in_flight);

}  // namespace dlscale
