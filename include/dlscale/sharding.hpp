// Sharded data parallelism: ZeRO-1/2/3 (DeepSpeed) and FSDP (PyTorch), full or hybrid. What is sharded,
// over which GPUs, what each GPU sends per step and the closed-form timeline of per-unit all-gathers with
// prefetch. Derivations and the hand-worked example: docs/model.md, "Sharded data parallelism" (S1-S9, S11).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "dlscale/collective.hpp"
#include "dlscale/gpu.hpp"
#include "dlscale/units.hpp"

namespace dlscale {

struct Cluster;
struct Network;

/// A strategy's sharding (models/frameworks/*.yaml, key `sharding`). Stage 0 = full replicas (DDP).
struct Sharding {
  static constexpr int kGroupAll = 0;    // shard over every GPU of the job
  static constexpr int kGroupNode = -1;  // shard over the GPUs of one node, replicate across nodes (hybrid)

  int stage = 0;                           // 1: optimiser state (+ fp32 master), 2: + gradients, 3: + parameters
  bool reshard_after_forward = true;       // stage 3: gather again for backward (FULL_SHARD); false: SHARD_GRAD_OP
  int group = kGroupAll;                   // GPUs per shard group: kGroupAll, kGroupNode or a count
  int in_flight = 2;                       // stage 3: gathered units held at once (FSDP limit_all_gathers: 2; 1 = no prefetch)
  std::int64_t unit_params = 100'000'000;  // stage 3, wrap size: consecutive layers gathered together up to this many parameters
  /// Stage 3: how the model is wrapped into gather units (eq. S4, `wrap`). `size`: consecutive layers up to unit_params
  /// (FSDP1's size_based_auto_wrap_policy); `block`: each transformer block its own unit, however small, and the
  /// layers outside the blocks (embedding, final norm, head) one root unit (FSDP2's fully_shard per block then the
  /// root; FSDP1's transformer_auto_wrap_policy, whose outermost FSDP module holds what no block holds), gathered
  /// before the first forward and held to the end of the backward (eq. S4b).
  enum class Wrap { size, block };
  Wrap wrap = Wrap::size;
  /// Eq. S11 (`unit_ops: {gather, reduce}`): the operations the framework's own code issues per gather unit for each
  /// all-gather (copy-in, the collective, copy-out, …) and each reduce-scatter (chunk_cat, the collective, the
  /// gradient's copy, …), as its host issues kernels (eq. K20); zero: none counted.
  double gather_ops = 0.0, reduce_ops = 0.0;
  /// Eq. S11 (`unit_ops: {issue}`): the host's cost of one of those operations, hooks included; zero: the framework's
  /// host_issue (eq. K20).
  Seconds unit_op_issue{};
  // CPU offload of the optimiser state (DeepSpeed `offload_optimizer: {device: cpu}`, ZeRO-Offload; eq. S9):
  // the fp32 master weights and the optimiser state of each GPU's shard live in host memory, the GPU's
  // gradient shard goes to the host, the CPU runs the optimiser step, the updated shard comes back.
  bool offload_optimizer = false;
  // FSDP's MixedPrecision(reduce_dtype=float32) (torchtitan's default; `reduce_dtype: fp32`): the gradients
  // are cast to fp32 before their reduce-scatter, which then moves 4 B a parameter, and the shards are fp32.
  bool reduce_fp32 = false;
  // `params: per_parameter` (PyTorch's FSDP2, fully_shard): each parameter is its own sharded tensor, so every
  // all-gather's output is copied out into the parameters and every unit's gradients are concatenated into the
  // reduce-scatter's input (chunk_cat), on the compute stream (eq. S10; docs/compute-model.md, "FSDP2's copies").
  // `flat` (FSDP1's FlatParameter, ZeRO's partitions; the default): the gathered buffer is the parameters.
  bool per_parameter = false;
  /// `shard_dtype: fp32` (PyTorch FSDP's MixedPrecision, FSDP1 and FSDP2; eq. M5): the shards are the model's fp32
  /// parameters (param_dtype casts each unit as it is gathered; no half copy is kept) and each gradient shard is cast
  /// back to the parameter's dtype (fp32) after its reduce-scatter. `working` (the default; DeepSpeed ZeRO's
  /// partitions): the half working copy is sharded beside the fp32 master and the gradient shards keep the reduce
  /// width. FSDP2 (per_parameter) has no other form: held_in_fp32() says it for both.
  bool fp32_shards = false;
  double cpu_adam_params_per_s = kDefaultCpuAdamParamsPerSecond;  // per node, all its cores (`cpu_adam`)

  /// CPU-Adam throughput of one node when the framework file gives none: DeepSpeed's CPU-Adam updates
  /// 10^10 parameters in 2.57 s on a DGX-2 host (2 × 24-core Xeon Platinum 8168), ZeRO-Offload (Ren et
  /// al., USENIX ATC 2021), Table 3: 3.9·10^9 parameters/s (recalled; see
  /// models/frameworks/deepspeed-zero2-offload.yaml).
  static constexpr double kDefaultCpuAdamParamsPerSecond = 3.9e9;

  [[nodiscard]] bool sharded() const noexcept { return stage > 0; }
  /// Eq. M5: the shards are the fp32 parameters and gradients (`shard_dtype: fp32`, or FSDP2's per-parameter shards).
  [[nodiscard]] bool held_in_fp32() const noexcept { return fp32_shards || per_parameter; }
};

/// The shard group and the replica group of one GPU at a placement (eq. S1): the job's G GPUs form
/// G/n shard groups of n consecutive GPUs; GPU j of every shard group forms a replica group of R = G/n.
struct ShardGroups {
  int shard = 1;            // n
  int replicas = 1;         // R
  GpuPlacement shard_at;    // where one shard group sits
  GpuPlacement replica_at;  // where one replica group sits
};
/// Throws InputError("strategy.sharding.group", …) when the group exceeds the GPUs or does not divide them, or neither
/// divides nor is a multiple of the GPUs per node.
ShardGroups shard_groups(const Sharding& s, const GpuPlacement& at);

/// Eq. S7b: how many times over the replicas' all-reduces of a hybrid (HSDP) step ask for a node's NICs. Every
/// position of the shard group has its replica group, and all of them all-reduce at once (each unit's shard right
/// after its reduce-scatter): a node holds gpus_per_node / (the replica group's ranks on it) of them, which share
/// its NICs as eq. P11 shares them (the topology's NICs per node; the simple form's one link). 1 when the replica
/// groups stay inside a node.
double replica_nic_share(const ShardGroups& g, const Cluster& c) noexcept;

/// Consecutive layers computed as one unit of a stage-3 step, and the parameters gathered and reduce-scattered
/// with it (eq. S4).
struct GatherUnit {
  int first = 0, last = 0;  // layer indices, inclusive, input side first
  std::int64_t params = 0;  // gathered before its forward, reduce-scattered after its backward
  /// Eq. S4b, the root of a block wrap: gathered once before the first forward and held (not resharded) to the end of
  /// the backward; its `params` are every layer outside the blocks. The layers after the last block (final norm,
  /// head) are a unit of their own that gathers nothing (params 0), their parameters the root's.
  bool held = false;
};
/// Eq. S4, the size-based wrap: from the input side, layers join the open unit until it holds at least
/// `unit_params` parameters.
std::vector<GatherUnit> gather_units(const Network& net, std::int64_t unit_params);
/// The strategy's units: eq. S4 (wrap size), or eq. S4b (wrap block: each transformer block, as transformer_blocks
/// finds them, its own unit; the layers before the first block the held root, carrying every parameter outside the
/// blocks; the layers after the last block a unit of no parameters; a network without blocks, or whose first layer is
/// a block's while some layer outside the blocks holds parameters, falls back to S4).
std::vector<GatherUnit> gather_units(const Network& net, const Sharding& s);
/// The same with the network's transformer_blocks already known (`block`, one entry a layer).
std::vector<GatherUnit> gather_units(const Network& net, const Sharding& s, std::span<const int> block);
/// Eq. S11: FSDP's own operations a step issues, counted per pass (forward: each unit's all-gather; backward: the
/// all-gathers of the units resharded after the forward, and each unit's reduce-scatter). Units with no parameters
/// issue none.
struct UnitOps {
  double forward = 0.0, backward = 0.0;
};
UnitOps unit_ops(std::span<const GatherUnit> units, const Sharding& s) noexcept;

/// Bytes one GPU puts on the wire per optimiser step, by collective (nccl-tests' bus bytes: S·2(n−1)/n for
/// an all-reduce of S, S·(n−1)/n for an all-gather or reduce-scatter of a total S; eq. S2).
struct StepTraffic {
  Bytes allreduce{};           // stage 0: gradients over every GPU
  Bytes reducescatter{};       // stages 1-3: gradients inside the shard group
  Bytes allgather_forward{};   // stage 3: parameters before each unit's forward
  Bytes allgather_backward{};  // stage 3 full shard: again before each unit's backward
  Bytes allgather_update{};    // stages 1-2: the updated parameters after the step
  Bytes allreduce_replicas{};  // hybrid: the gradient shard across the replica group
  [[nodiscard]] Bytes total() const noexcept {
    return allreduce + reducescatter + allgather_forward + allgather_backward + allgather_update + allreduce_replicas;
  }
};
/// Eq. S2 over the gather units a step runs (eq. S4, S4b), the units the step's timing gathers and reduce-scatters
/// (gather_units): every unit's parameters gathered before its forward and reduce-scattered after its backward, and
/// gathered again before its backward when resharded after the forward, except a block wrap's held root (eq. S4b).
/// `fp8_elements` (eq. S12, fp8 all-gather): of the parameters, the fp8 linear maps' weight elements the stage-3
/// all-gathers move at 1 B (gathered_param_bytes), all of them in resharded units (the blocks'); 0 without it.
StepTraffic step_traffic(std::span<const GatherUnit> units, const Sharding& s, Precision p, const GpuPlacement& at,
                         double fp8_elements = 0.0);
/// The same over the network's units under the strategy (stage 3), or its parameters (stages 0-2).
StepTraffic step_traffic(const Network& net, const Sharding& s, Precision p, const GpuPlacement& at, double fp8_elements = 0.0);
/// The same for `params` parameters in units none of which is held: stages 0-2, and stage 3 under a size wrap (eq. S4).
/// Throws std::invalid_argument for a block wrap at stage 3, whose held root only the network's units know.
StepTraffic step_traffic(std::int64_t params, const Sharding& s, Precision p, const GpuPlacement& at, double fp8_elements = 0.0);

/// Eq. S12, fp8 all-gather (torchao's enable_fsdp_float8_all_gather, tensor-wise scaling): the bytes of P working
/// parameters as a stage-3 all-gather moves them and its gathered buffer holds them, E of them (the weights fp8
/// training converts, fp8_weight_elements) cast to fp8 on the shard before the gather: (P − E)·w + E·1 B, w the
/// working width. E = 0 (bf16 all-gather, or no fp8 linear map in them): P·w.
Bytes gathered_param_bytes(double params, double fp8_elements, Precision p) noexcept;

/// Eq. M5, FSDP1's dtype casts around a unit's reduce-scatter (flat parameters with `shard_dtype: fp32`, mixed
/// precision, a shard group of n ≥ 2; torch.distributed.fsdp's _post_backward_hook, recalled): under a half
/// reduce_dtype the reduce-scatter's half output, P_u/n elements, is cast to fp32 into the flat parameter's gradient
/// shard (_cast_grad_to_param_dtype); under reduce_dtype fp32 the unit's unsharded half gradient, P_u elements, is cast
/// to fp32 before the reduce-scatter. Both run on the reduce-scatter's stream (FSDP1's post-backward stream), after or
/// before the collective.
///   M5c  bytes the cast moves, a memory-bound pass reading 2 B and writing 4 B an element: P_u/n · 6 (half reduce),
///        P_u · 6 (fp32 reduce)
///   M5b  what it holds beside what eq. S3 counts (the unit's half gradient, its kept fp32 shard): the half reduced
///        shard P_u·2/n (half reduce) or the fp32 copy of the unsharded gradient P_u·4 (fp32 reduce)
/// Zero for anything else: FSDP2 casts inside eq. S10's chunk_cat, ZeRO keeps half shards, one GPU reduces nothing.
Bytes shard_cast_bytes(double unit_params, const Sharding& s, Precision p, int shard) noexcept;            // M5c
Bytes shard_cast_transient_bytes(double unit_params, const Sharding& s, Precision p, int shard) noexcept;  // M5b

/// One unit's collectives in a sharded step, per GPU (docs/model.md, S5, S7, S7b, S12, M5c): the one place the closed
/// form (predict) and the simulator take them from.
struct ShardUnitBytes {
  Bytes gather{};   // S5 with S12: its working parameters all-gathered in the shard group (gathered_param_bytes)
  Bytes reduce{};   // S7: its gradients reduce-scattered in the shard group, reduce_bytes_per_element an element
  Bytes replica{};  // S7b: its reduced shard all-reduced across the replicas, times their NIC share (replica_nic_share)
  Bytes cast{};     // M5c: FSDP1's cast of its gradient on the reduce channel (shard_cast_bytes)
};
/// `params` parameters, `fp8_elements` of them gathered at 1 B (0 without eq. S12), `nic_share` eq. S7b's.
ShardUnitBytes shard_unit_bytes(double params, double fp8_elements, const Sharding& s, Precision p, int shard,
                                double nic_share) noexcept;

/// CPU offload of the optimiser state (docs/model.md, eq. S9), per GPU and step, with P parameters, a shard
/// group of n, g and w bytes per gradient and working element:
///   S9a  gradient shard to the host   P·g/n bytes over PCIe (GPU → host), copied unit by unit as each
///        unit's reduce-scatter ends: cdone(U+1) = 0, cdone(u) = max(cdone(u+1), done(u)) + d_u
///   S9b  CPU Adam on the node          t_cpu = n_g · (P/n) / R   (the node's n_g GPUs' shards, R params/s)
///   S9c  updated shard to the GPU      P·w/n bytes over PCIe (host → GPU), t_up = P·w/n / B_pcie
///   S9d  host memory per node          n_g · (P/n) · (4 + 4·k + g)   (fp32 master, k optimiser words,
///        the received gradient shard)
/// g is the gradient shard's width as the reduce leaves it (eq. K27, gradient_shard_bytes_per_element): 4 B under
/// `reduce_dtype: fp32` (or fp32 shards) in mixed precision, else the precision's gradient width. `params` of S9a may be
/// one unit's (P_u: its copy d_u) or the model's.
Bytes offload_gradient_bytes(double params, const Sharding& s, Precision p, int shard) noexcept;         // S9a
Bytes offload_param_bytes(std::int64_t params, Precision p, int shard) noexcept;                         // S9c
Seconds cpu_adam_time(std::int64_t params, int shard, int gpus_per_node, double params_per_s) noexcept;  // S9b
Bytes offload_host_bytes_per_node(std::int64_t params, const Sharding& s, Precision p, int optimizer_words, int shard,
                                  int gpus_per_node) noexcept;  // S9d

/// Host memory of a node when the cluster file gives none (`host_memory_size`): assumed 1 TB (DGX A100:
/// 1 TB, DGX H100: 2 TB; smaller servers have less).
inline constexpr double kDefaultHostMemoryBytes = 1e12;

/// Bytes per element of the parameters that are gathered (the working copy: 2 in mixed precision, else 4).
double working_bytes_per_element(Precision p) noexcept;
/// Bytes per element of the gradients a step reduces: 4 under `reduce_dtype: fp32` in mixed precision, else the
/// precision's gradient width.
double reduce_bytes_per_element(const Sharding& s, Precision p) noexcept;
/// Eq. K27 (docs/compute-model.md, "Optimisers"): bytes per element of a GPU's gradient shard after its reduce, the
/// gradient the optimiser step reads (and eq. S9a copies to the host): the width the reduce leaves
/// (reduce_bytes_per_element: 4 under `reduce_dtype: fp32` in mixed precision), and 4 where the shards are the fp32
/// parameters (eq. M5, held_in_fp32: FSDP1 casts each reduced shard to its flat parameter's fp32, FSDP2's sharded
/// parameter is fp32 and its gradient takes its dtype; recalled). DeepSpeed ZeRO's half partitions keep the reduce
/// width. A step that does not shard (stage 0) has no shard: the precision's gradient width.
double gradient_shard_bytes_per_element(const Sharding& s, Precision p) noexcept;
/// Eq. S10: whether the step copies each layer's gathered parameters out of the all-gather's buffer and concatenates its
/// gradients into the reduce-scatter's input on the compute stream: FSDP2's per-parameter sharding, at stage 3.
[[nodiscard]] constexpr bool per_parameter_copies(const Sharding& s) noexcept { return s.stage >= 3 && s.per_parameter; }

/// The closed form of one micro-batch of a stage-3 strategy (eq. S5-S7): forward and backward compute of
/// U units, each preceded by the all-gather of its parameters on one all-gather channel that holds at
/// most `in_flight` gathered units, and each unit's reduce-scatter on a second channel once its backward
/// has ended. Units input side first; `gather_backward` empty = no gathers for backward (SHARD_GRAD_OP).
struct ShardedTimeline {
  Seconds compute_end{};  // C: the end of the last backward compute
  Seconds reduce_end{};   // done(1): the end of the last reduce-scatter (zero when there are none)
  [[nodiscard]] Seconds end() const noexcept { return compute_end > reduce_end ? compute_end : reduce_end; }
};
/// `copy` (offload, eq. S9a): each unit's gradient-shard copy to the host after its reduce-scatter, one
/// copy at a time; empty = no offload. reduce_end is then the end of the last copy.
ShardedTimeline sharded_timeline_exact(std::span<const Seconds> forward, std::span<const Seconds> backward,
                                       std::span<const Seconds> gather_forward, std::span<const Seconds> gather_backward,
                                       std::span<const Seconds> reduce, int in_flight, std::span<const Seconds> copy = {});

}  // namespace dlscale
