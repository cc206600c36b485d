// plan over model-parallel layouts (issue 37): tensor × pipeline (× virtual stages) × context parallelism ×
// micro-batch × recompute × sharding of the optimiser state, for a decoder on a GPU count, at a fixed global
// batch; layouts that do not fit are pruned, the rest ranked by tokens/s (docs/planning.md, "Model-parallel
// layouts").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dlscale/parallel_layout.hpp"
#include "dlscale/plan.hpp"  // TrainingWorkload
#include "dlscale/predict.hpp"

namespace dlscale {

/// The memory plan --parallel keeps free on every GPU beside the step's own tensors (docs/model.md, P10): the
/// CUDA context and the libraries' workspaces, 1 GB (the memory model's kDefaultReservedBytes); NCCL's buffers,
/// 2 GB (NCCL_BUFFSIZE's 4 MiB a protocol, channel and peer, for the layout's TP, CP, PP, DP and DP×CP
/// communicators: some hundreds of MB each; recalled from NCCL's documentation, not measured here); and the
/// PyTorch caching allocator's fragmentation beyond the estimate's 5 % slack (kAllocatorSlack), 2 GB (large-model
/// runs report a few GB between the allocator's reserved and allocated peaks; recalled, not measured here).
inline constexpr double kPlanMemoryReserveBytes = 5e9;

struct ParallelPlanSpace {
  /// Candidate degrees (each filtered by what the model and the GPU count take: tp dividing the heads, pp the
  /// blocks, cp the sequence in 2·cp chunks, tp·pp·cp the GPUs).
  std::vector<int> tp{1, 2, 4, 8, 16, 32, 64};
  std::vector<int> pp{1, 2, 3, 4, 6, 8, 9, 12, 16, 18, 24, 32};
  std::vector<int> vp{1, 2, 4, 5};  // > 1: interleaved 1F1B (blocks per stage divisible by it)
  std::vector<int> cp{1, 2, 4, 8};
  /// Expert-parallel degrees, for a model with experts only (each dividing dp·cp and the experts; eq. P17).
  std::vector<int> ep{1, 2, 4, 8, 16, 32, 64};
  std::vector<int> micro_batch{1, 2, 4};
  std::vector<Recompute> recompute{Recompute::none, Recompute::selective, Recompute::full};
  /// Optimiser-sharding stages, each 0 to 3 (0: replicated optimiser state, 1: distributed optimiser (ZeRO-1), 2: and the
  /// gradients, 3: and the parameters (FSDP, eq. P20)); empty: 0, 1 and the framework's own stage where it is 2 or 3
  /// (eq. P45, plan_sharding_stages).
  std::vector<int> sharding_stage{};
  /// Samples per step over the job (every layout trains the same batch); 0: 4 Mi tokens' worth (4,194,304 / s).
  std::int64_t global_batch = 0;
  /// What a layout must leave free on each GPU: it fits when its worst stage's memory with this reserve in place of
  /// the estimate's 1 GB (MemoryEstimate::reserved) stays within the GPU's memory.
  Bytes memory_reserve = bytes(kPlanMemoryReserveBytes);
  /// The refinement after the grid (docs/model.md, P38): the `refine_leaders` fastest layouts and the
  /// `refine_full_leaders` fastest under full recompute, each tried with its variants (the other CP exchanges, eq.
  /// P29; one chunk's blocks fewer on the first and last stages, P26b; distributed checkpoints without SP, P35; full
  /// recompute of the first N blocks of each chunk, P31's method block) and the `refine_near_misses` layouts pruned by
  /// the least memory (at most 5 % over) with the P26b variants that may make them fit. 0, 0, 0: the grid alone.
  int refine_leaders = 16;
  int refine_full_leaders = 8;
  int refine_near_misses = 32;
  /// The sharding `dlscale predict` takes from the framework alone (its file's), against which each row's line names
  /// --zero, --shard-group and --offload-optimizer / --no-offload-optimizer (eq. P44); nullopt: the base scenario's
  /// (no option changed the framework's group or offload).
  std::optional<Sharding> predict_sharding;
};

struct ParallelPlanEntry {
  ParallelLayout layout;  // micro_batches resolved for the GPU count
  Recompute recompute = Recompute::none;
  int sharding_stage = 0;
  Prediction prediction;       // tokens/s, MFU, memory per GPU (the worst stage, with the reserve), Breakdown::parallel
  bool tp_inside_node = true;  // every TP group within one node (its NVLink domain)
  /// The refinement (eq. P38) changed the grid's layout (its cp_comm, recompute_method and recompute_num_layers,
  /// num_layers_in_first/last_pipeline_stage, or sp off with distribute_saved_activations), or made it fit.
  bool refined = false;
};

struct ParallelPlanResult {
  std::vector<ParallelPlanEntry> ranked;  // those that fit, fastest first (tokens/s; ties: less memory)
  std::int64_t global_batch = 0;
  Bytes memory_reserve{};        // the space's, as the layouts were checked with it
  double moe_imbalance = 1.0;    // the routing imbalance every layout with ep > 1 was charged (eq. P23), at most its limit
  int evaluated = 0;             // layouts checked (memory, then the step of those that fit)
  int invalid = 0;               // combinations the model or the GPU count does not take
  int out_of_memory = 0;         // checked, pruned by memory (less those the refinement made fit)
  CpComm cp_comm = CpComm::p2p;  // the framework's (or --cp-comm's) exchange, every layout of the grid's (eq. P29)
  int refine_leaders = 0, refine_full_leaders = 0, refine_near_misses = 0;  // the space's (eq. P38)
  int refine_timed = 0;                                                     // variants the refinement predicted
  int refine_improved = 0;                                                  // layouts it made faster, or made fit
  /// Eq. P44: combinations left out because the framework offloads its optimiser (S9) and predict cannot take them
  /// with it: tp, pp, cp or ep above 1 (eq. P13 refuses offload), or stage 0 (nothing sharded to offload).
  int offload_skipped = 0;
  /// Eq. P45: combinations left out because predict cannot run them at their sharding stage: a stage-3 layout with tp,
  /// pp, cp or ep above 1 under fp8 all-gather (eq. S12 is FSDP's on the data-parallel path; P20 does not model it).
  int stage_skipped = 0;
  Sharding predict_sharding;  // the space's, or the base's (eq. P44)
};

/// Eq. P45: the optimiser-sharding stages a plan of `space` tries under `framework`: the space's where it names any,
/// otherwise 0, 1 and the framework's own stage where it is 2 or 3. InputError("sharding_stage") for a stage outside 0-3.
std::vector<int> plan_sharding_stages(const ParallelPlanSpace& space, const Strategy& framework);

/// Searches `space` on `gpus` GPUs of `base` (its cluster, decoder network, framework, precision, optimiser).
/// InputError("network") for a network without transformer blocks, ("global_batch") for none ≥ 1.
ParallelPlanResult plan_parallel(const Scenario& base, int gpus, const ParallelPlanSpace& space);

/// The options `dlscale predict` takes for an entry's layout on `gpus` of `base` (eq. P38's round trip): the
/// degrees, --sp or --no-sp, the schedule, the CP exchange, the micro-batch and micro-batches, --checkpointing and
/// the refinement's keys (--recompute-method, --recompute-num-layers, --num-layers-in-first/last-pipeline-stage,
/// --distribute-saved-activations, --no-tp-comm-overlap where the framework's overlap needs the SP it turned off), and
/// the sharding where the row's differs from `predict_takes` (what predict takes from the framework alone; eq. P44):
/// --zero N, --shard-group N|node|all (a sharded row's group, eq. P40), --offload-optimizer or --no-offload-optimizer.
std::string predict_options(const ParallelPlanEntry& e, const Scenario& base, int gpus, const Sharding& predict_takes);
/// The same with the base's sharding as what predict takes.
std::string predict_options(const ParallelPlanEntry& e, const Scenario& base, int gpus);

/// The text `dlscale plan --parallel` prints: the top `top` layouts with tokens/s, MFU and memory, where
/// their groups sit, and why the next best loses to the best.
std::string format_parallel_plan(const ParallelPlanResult& r, const Scenario& base, int gpus, int top);
/// The same as a JSON document (`plan --parallel --format json`; docs/planning.md, "JSON of plan and explain").
std::string format_parallel_plan_json(const ParallelPlanResult& r, const Scenario& base, int gpus, int top);

}  // namespace dlscale

namespace dlscale {

/// The text `dlscale explain` prints for a scenario with `parallel` (issue 37): the step's parts (compute, TP
/// exposed, CP exposed, PP sends, bubble, DP exposed, update), each stage's memory and where each group sits.
std::string explain_parallel(const Scenario& sc, int gpus);
/// The same as a JSON document, with the time to train `workload` where one is given (`explain --format json`).
std::string explain_parallel_json(const Scenario& sc, int gpus, const std::optional<TrainingWorkload>& workload);

}  // namespace dlscale
