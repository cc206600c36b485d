// The vocabulary of a model-parallel layout (issue 37): how one training step is split over the GPUs (tensor,
// sequence, pipeline and context parallelism, data parallelism over the rest), the pipeline schedules and the
// rank order. Types and their names only, so that a framework file (strategy.hpp) can carry its defaults; the
// model of a layout is parallel.hpp's.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "dlscale/detail/enum_names.hpp"

namespace dlscale {

enum class PipelineSchedule { gpipe, one_f_one_b, interleaved };
template <>
struct EnumNames<PipelineSchedule> {
  static constexpr std::array<EnumName<PipelineSchedule>, 3> names{{
      {PipelineSchedule::gpipe, "gpipe"},
      {PipelineSchedule::one_f_one_b, "1f1b"},
      {PipelineSchedule::interleaved, "interleaved"},
  }};
  static constexpr std::array<EnumName<PipelineSchedule>, 2> aliases{{
      {PipelineSchedule::one_f_one_b, "one_f_one_b"},
      {PipelineSchedule::interleaved, "interleaved_1f1b"},
  }};
};
/// "gpipe", "1f1b" or "interleaved"; InputError(field, …) otherwise.
PipelineSchedule pipeline_schedule_from_string(std::string_view name, std::string_view field = "schedule");

/// How the CP ranks exchange the attention's inputs (eq. P29; Megatron-Core's `cp_comm_type`, its names): p2p the ring
/// of K/V blocks overlapped with the attention (P15), all_gather the whole sequence's K/V gathered before it, a2a
/// DeepSpeed-Ulysses' all-to-alls of Q, K, V and the output (the whole sequence for heads/cp of the heads), a2a+p2p
/// (eq. P36) Ulysses inside groups of ParallelLayout::hierarchical_cp ranks and the ring between the groups.
enum class CpComm { p2p, all_gather, a2a, a2a_p2p };
template <>
struct EnumNames<CpComm> {
  static constexpr std::array<EnumName<CpComm>, 4> names{{
      {CpComm::p2p, "p2p"},
      {CpComm::all_gather, "all_gather"},
      {CpComm::a2a, "a2a"},
      {CpComm::a2a_p2p, "a2a+p2p"},
  }};
  /// torchtitan's context_parallel_rotate_method spelling of the gather; its "alltoall" rotates the ring's K/V by
  /// all-to-all (p2p's pattern), not Ulysses', so it is no alias of a2a.
  static constexpr std::array<EnumName<CpComm>, 1> aliases{{
      {CpComm::all_gather, "allgather"},
  }};
};
/// "p2p", "all_gather" (or "allgather"), "a2a" or "a2a+p2p"; InputError(field, …) otherwise.
CpComm cp_comm_from_string(std::string_view name, std::string_view field = "cp_comm");

/// Megatron-Core's recompute_method under full recompute (eq. P31): `uniform` groups a model chunk's blocks
/// recompute_num_layers at a time and keeps each group's input alone, every block recomputed; `block` recomputes the
/// first recompute_num_layers blocks of each model chunk (each keeping its input) and the rest keep their activations.
enum class RecomputeMethod { uniform, block };
template <>
struct EnumNames<RecomputeMethod> {
  static constexpr std::array<EnumName<RecomputeMethod>, 2> names{{
      {RecomputeMethod::uniform, "uniform"},
      {RecomputeMethod::block, "block"},
  }};
  static constexpr std::array<EnumName<RecomputeMethod>, 0> aliases{};
};
/// "uniform" or "block"; InputError(field, …) otherwise.
RecomputeMethod recompute_method_from_string(std::string_view name, std::string_view field = "recompute_method");

/// The four dimensions a rank has a coordinate in. Expert parallelism (ep) takes no place of its own: its groups are
/// carved from the dp·cp ranks (eq. P17, group_members).
enum class ParallelDim { tp, cp, dp, pp };
template <>
struct EnumNames<ParallelDim> {
  static constexpr std::array<EnumName<ParallelDim>, 4> names{{
      {ParallelDim::tp, "tp"},
      {ParallelDim::cp, "cp"},
      {ParallelDim::dp, "dp"},
      {ParallelDim::pp, "pp"},
  }};
  static constexpr std::array<EnumName<ParallelDim>, 0> aliases{};
};
/// The order ranks are numbered in, fastest-varying dimension first.
using RankOrder = std::array<ParallelDim, 4>;
/// Megatron-Core's default, RankGenerator(order="tp-cp-ep-dp-pp"): consecutive ranks share everything but
/// their TP coordinate, so a TP group is consecutive GPUs of a node and the PP stages are farthest apart.
inline constexpr RankOrder kMegatronRankOrder{ParallelDim::tp, ParallelDim::cp, ParallelDim::dp, ParallelDim::pp};
/// "tp-cp-ep-dp-pp" (Megatron's spelling; `ep` is accepted and takes no place (eq. P17), '-' or ',' between names); each of
/// tp, cp, dp, pp exactly once. InputError(field, …) otherwise.
RankOrder parse_rank_order(std::string_view text, std::string_view field = "rank_order");
std::string to_string(const RankOrder& order);  // "tp-cp-dp-pp"

/// How one training step is split over the GPUs (issue 37). dp is what is left: gpus / (tp·pp·cp).
struct ParallelLayout {
  int tp = 1;       // tensor-parallel degree t (Megatron's column/row split of every block)
  bool sp = false;  // sequence parallelism: norms and dropout sharded over the TP group along the sequence
  /// TP communication overlapped with the GEMMs it feeds and drains (Transformer Engine's userbuffers,
  /// Megatron-Core/NeMo `tp_comm_overlap`; needs sp): eq. P14.
  bool tp_comm_overlap = false;
  /// Each column-parallel linear's backward launches its input gradient's collective (the all-reduce, or with sp the
  /// reduce-scatter) asynchronously and computes its weight gradient meanwhile (Megatron-LM's
  /// LinearWithGradAccumulationAndAsyncCommunication, CUDA_DEVICE_MAX_CONNECTIONS=1): eq. P28. Under tp_comm_overlap
  /// eq. P14 charges the blocks' collectives instead.
  bool tp_async_backward = false;
  /// The data-parallel gradient reduction overlapped with the last micro-batch's backward and the parameter
  /// all-gather with the first micro-batch's forward (Megatron-Core's overlap_grad_reduce and overlap_param_gather,
  /// NeMo's recipes): eq. P19.
  bool dp_comm_overlap = false;
  /// Stage-3 sharding under a pipeline (eq. P20): whether each micro-batch's forward reshards the parameters (then
  /// gathers run per micro-batch) or they stay gathered for the whole step (torchtitan's fully_shard with
  /// reshard_after_forward=False when PP is on). Ignored without PP (the sharding's reshard_after_forward rules).
  bool pp_reshard_after_forward = true;
  /// The pipeline's sends overlapped with the next chunk the rank computes (Megatron's overlap_p2p_comm): eq. P25.
  /// Acts with the interleaved schedule only (Megatron turns it off without virtual stages); ignored elsewhere.
  bool pp_comm_overlap = false;
  /// Megatron-Core's account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split (eq. P26): the
  /// embedding, resp. the output layer and loss, counted as one transformer layer when the blocks are split over the
  /// p·v chunks, so the first chunk holds one block fewer, resp. the last; the units must divide evenly.
  bool account_for_embedding_in_pipeline_split = false;
  bool account_for_loss_in_pipeline_split = false;
  /// Eq. P31, acting under full recompute only: Megatron-Core's recompute_method and recompute_num_layers N (NeMo's
  /// recipes' recompute_num_layers). The default, uniform with N = 1, checkpoints every block alone.
  RecomputeMethod recompute_method = RecomputeMethod::uniform;
  int recompute_num_layers = 1;
  /// Eq. P35, under full recompute with TP and without sp: Megatron-Core's distribute_saved_activations, each
  /// checkpoint's saved input split over the TP group (1/t of it on a rank) and all-gathered before its recompute.
  bool distribute_saved_activations = false;
  /// Megatron-Core's num_layers_in_first_pipeline_stage and num_layers_in_last_pipeline_stage (eq. P26b): the blocks
  /// of the first, resp. the last pipeline stage given explicitly, the rest split evenly over the other stages (which
  /// must divide them); with virtual stages each stage's blocks split evenly over its vp chunks. 0: not given.
  int num_layers_in_first_pipeline_stage = 0;
  int num_layers_in_last_pipeline_stage = 0;
  int pp = 1;  // pipeline stages p
  int vp = 1;  // virtual stages (model chunks) per pipeline rank v; > 1 only with `interleaved`
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  int cp = 1;  // context-parallel degree c (ring attention over c ranks, 2·c load-balanced chunks)
  /// How the CP ranks exchange K/V (eq. P29): the ring (p2p, P15), a gather of the whole sequence's K/V (all_gather)
  /// or Ulysses' all-to-alls (a2a; needs the heads and key/value heads of a TP rank divisible by cp).
  CpComm cp_comm = CpComm::p2p;
  /// Eq. P36, with cp_comm a2a+p2p: the inner (all-to-all) group's size a, Megatron-Core's
  /// hierarchical_context_parallel_sizes [a, cp/a]; a divides cp and a TP rank's heads and key/value heads. 0: not given.
  int hierarchical_cp = 0;
  /// Expert-parallel degree e (eq. P17): the MoE experts split over e ranks carved from the dp·cp ranks
  /// (Megatron-Core's expert_model_parallel_size); 1 for a dense model.
  int ep = 1;
  /// Routing imbalance f (eq. P23): the token copies the busiest expert-parallel rank receives over the mean rank's
  /// (≥ 1; 1.0 balanced routing). Its expert GEMMs and their element-wise kernels, its all-to-all bytes and its
  /// experts' kept activations are f times the balanced ones, and every rank waits for it. Acts only where ep > 1.
  double moe_imbalance = 1.0;
  /// Per-expert load spread v (eq. P24): the coefficient of variation of the token copies the E experts receive
  /// (their standard deviation over the mean, E−1 denominator). 0: not given, `moe_imbalance` stands. Given (> 0),
  /// the busiest rank's load follows ep: f(e) = 1 + v·m_e·√(e/E), m_e the expected maximum of e standard normals.
  double moe_expert_load_cv = 0.0;
  /// Megatron-Core's moe_expert_capacity_factor C (eq. P24): each expert takes at most C × the mean's copies of a
  /// rank's tokens and drops the rest, so the busiest rank runs at most C × the mean. Absent: dropless.
  std::optional<double> moe_expert_capacity_factor{};
  /// Megatron-Core's moe_pad_expert_input_to_capacity (eq. P24): every expert runs exactly C × the mean's copies,
  /// padded; needs the capacity factor.
  bool moe_pad_expert_input_to_capacity = false;
  int micro_batch = 1;    // samples per micro-batch b
  int micro_batches = 1;  // micro-batches per step and pipeline m (global batch = b·m·dp)
  /// Samples per step over the job when given instead of m (0: m given): m = global_batch_target / (b·dp),
  /// resolved for a GPU count by with_global_batch (parallel.hpp).
  std::int64_t global_batch_target = 0;
  RankOrder order = kMegatronRankOrder;

  [[nodiscard]] int model_parallel() const noexcept { return tp * pp * cp; }
  /// gpus / (tp·pp·cp); 0 when it does not divide (validate says so).
  [[nodiscard]] int dp(int gpus) const noexcept {
    const int mp = model_parallel();
    return mp > 0 && gpus % mp == 0 ? gpus / mp : 0;
  }
  [[nodiscard]] int degree(ParallelDim d, int gpus) const noexcept {
    switch (d) {
      case ParallelDim::tp:
        return tp;
      case ParallelDim::cp:
        return cp;
      case ParallelDim::pp:
        return pp;
      case ParallelDim::dp:
        return dp(gpus);
    }
    return 1;
  }
  /// Samples per optimiser step over the whole job: b·m·dp.
  [[nodiscard]] std::int64_t global_batch(int gpus) const noexcept {
    return static_cast<std::int64_t>(micro_batch) * micro_batches * dp(gpus);
  }
};

/// The routing fields checked on their own (the framework loader and the parallel layer call them; field names as
/// keys, lib/core/parallel_layout.cpp).
/// Eq. P23: a routing imbalance is a finite number of at least 1; InputError, key "moe_imbalance", otherwise.
void validate_moe_imbalance(double f);
/// Eq. P24: the routing settings of eq. P24 on their own: a capacity factor finite and above 0 (key
/// "moe_expert_capacity_factor"), padding only with one ("moe_pad_expert_input_to_capacity"), a per-expert load
/// spread finite and at least 0, not beside a moe_imbalance other than 1 ("moe_expert_load_cv").
void validate_moe_routing(const ParallelLayout& l);

}  // namespace dlscale
