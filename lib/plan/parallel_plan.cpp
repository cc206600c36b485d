// plan over model-parallel layouts (include/dlscale/parallel_plan.hpp; issue 37): every combination of the
// space predicted by eq. P13 at one global batch, pruned by memory, ranked by tokens/s.
#include "dlscale/parallel_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "dlscale/error.hpp"
#include "dlscale/parallel.hpp"
#include "dlscale/predict.hpp"
#include "parallel/parallel_blocks.hpp"
#include "plan/plan_json.hpp"
#include "plan/prediction_json.hpp"
#include "predict/parallel_predict.hpp"

namespace dlscale {
namespace {

/// Tokens per step of the default global batch: 4 Mi (Llama 3's pre-training batch at its start).
constexpr double kDefaultTokensPerStep = 4'194'304.0;

double rate(const Prediction& p) {
  return p.throughput_tokens_per_s > 0.0 ? p.throughput_tokens_per_s : p.throughput_samples_per_s;
}

/// What every layout of one plan shares: the model's blocks and shape, the GPUs, the collectives.
struct PlanContext {
  const Scenario& base;
  int gpus;
  std::vector<int> blocks;  // parsed once for every layout's memory
  TransformerShape shape;
  std::shared_ptr<const CollectiveModel> coll;
  GpuPlacement at;
  Bytes capacity;
  Bytes reserve;  // ParallelPlanSpace::memory_reserve, each stage's MemoryEstimate::reserved
  /// The framework's layout (Strategy::parallel; none: the defaults), what every layout of the grid takes from it: the
  /// rank order, the overlaps of its TP (with SP; nemo.yaml), DP (eq. P19) and pipeline (interleaved; eq. P25)
  /// collectives, the asynchronous TP backward (eq. P28), the CP exchange (or --cp-comm; eq. P29, P36), the routing
  /// imbalance (or --moe-imbalance; eq. P23) and eq. P24's capacity factor, padding and per-expert load spread.
  ParallelLayout framework;
};

/// The layout of one point of the grid, its micro-batches set by the global batch; nullopt where the model or
/// the GPU count does not take it.
std::optional<ParallelLayout> grid_layout(const PlanContext& c, int tp, int pp, int cp, int vp, int ep, int b,
                                          std::int64_t global) {
  if (tp < 1 || pp < 1 || cp < 1 || vp < 1 || c.gpus % (tp * pp * cp) != 0 || (vp > 1 && pp == 1)) return std::nullopt;
  ParallelLayout l;
  l.tp = tp;
  l.sp = tp > 1;  // Megatron's practice with TP: the same traffic, a t-th of the norms' activations
  l.tp_comm_overlap = c.framework.tp_comm_overlap && l.sp;
  l.dp_comm_overlap = c.framework.dp_comm_overlap;
  l.pp_comm_overlap = c.framework.pp_comm_overlap;
  // eq. P20 (P45): a stage-3 row under a pipeline keeps or reshards the parameters as the framework's file says
  // (torchtitan keeps them), as predict takes it from --framework
  l.pp_reshard_after_forward = c.framework.pp_reshard_after_forward;
  l.tp_async_backward = c.framework.tp_async_backward;
  l.pp = pp;
  l.vp = vp;
  l.schedule = vp > 1 ? PipelineSchedule::interleaved : PipelineSchedule::one_f_one_b;
  l.cp = cp;
  l.cp_comm = c.framework.cp_comm;  // eq. P29: a2a where cp does not divide the heads leaves the layout out (validate)
  // eq. P36: a2a+p2p's inner size from the framework, a layout whose cp it does not divide left out (validate)
  if (l.cp_comm == CpComm::a2a_p2p) l.hierarchical_cp = c.framework.hierarchical_cp;
  l.ep = ep;
  // eq. P23: the stated imbalance, at most what ep ranks can reach (the router's imbalance over fewer, larger ranks
  // cannot exceed it; the same factor at every ep > 1 is the plan's assumption)
  l.moe_imbalance = std::min(c.framework.moe_imbalance, moe_imbalance_limit(ep, c.shape));
  // eq. P24: the given capacity factor (and padding) and per-expert spread, f following each ep from the spread
  l.moe_expert_capacity_factor = c.framework.moe_expert_capacity_factor;
  l.moe_pad_expert_input_to_capacity = c.framework.moe_pad_expert_input_to_capacity;
  l.moe_expert_load_cv = c.framework.moe_expert_load_cv;
  l.micro_batch = b;
  l.global_batch_target = global;
  l.order = c.framework.order;
  try {
    l = with_global_batch(l, c.gpus);
    validate(l, c.gpus, c.shape);
  } catch (const InputError&) {
    return std::nullopt;
  }
  return l;
}

/// Eq. P44 (P40): the dp·cp ranks a layout's state is sharded over under the framework's shard group, as the step
/// shards it (layout_shards: all of them but for a hybrid group); nullopt where the group does not divide them (or
/// `node` finds them spread unevenly), a layout predict refuses.
std::optional<int> shard_ranks(const PlanContext& c, const ParallelLayout& l, const Sharding& sh) {
  if (!sh.sharded() || sh.group == Sharding::kGroupAll) return l.dp(c.gpus) * l.cp;
  try {
    return layout_shards(l, sh, c.base.cluster, c.gpus, place_layout(l, c.base.cluster, c.gpus)).shard;
  } catch (const InputError&) {
    return std::nullopt;
  }
}

/// Pruned by memory (eq. P10) before it is timed: the first stage holds the most in flight, the last the output
/// projection; the stages between are checked by the prediction (its memory). The larger of the two stages' totals,
/// the state sharded over `shard` ranks (shard_ranks).
Bytes first_and_last_stage_memory(const PlanContext& c, const ParallelLayout& l, const ComputeOptions& opt, const Sharding& sh,
                                  int shard) {
  const ActivationRecompute ar = activation_recompute(opt.recompute);
  const std::vector<int> stages = layer_stages(c.blocks, l);
  Bytes worst{};
  for (int s : {0, l.pp - 1})
    worst = std::max(worst, rank_memory(c.base.network, c.blocks, c.shape, stages, l, s, opt, sh, shard, ar, c.reserve).total());
  return worst;
}

/// Whether the first and last stages fit; false where the shard group does not divide the layout's ranks.
bool first_and_last_stage_fit(const PlanContext& c, const ParallelLayout& l, const ComputeOptions& opt, const Sharding& sh) {
  const auto shard = shard_ranks(c, l, sh);
  if (!shard) return false;
  return !(c.capacity > Bytes{}) || !(first_and_last_stage_memory(c, l, opt, sh, *shard) > c.capacity);
}

/// The layer times of one micro-batch's layouts at one sharding stage, one rank's for each t and c (eq. P6), each timed
/// once: the kernel model does not depend on the recompute mode, but it does on the sharding (eq. K16's sharded
/// tensor rate where the stage shards, eqs. S10 and S11 at stage 3), as predict's step options take it from the
/// stage.
struct MicroBatchTimes {
  const Scenario& times_of;  // the base without measured layers
  LayerTimes whole;
  std::map<std::array<int, 4>, ParallelTimes> by_tp_cp;  // a rank's times depend on t, SP (t > 1), c and ep
  const ParallelTimes& of(const ParallelLayout& l, const ComputeOptions& opt) {
    const std::array key{l.tp, l.cp, l.ep, l.sp ? 1 : 0};
    auto it = by_tp_cp.find(key);
    if (it == by_tp_cp.end()) it = by_tp_cp.emplace(key, parallel_layer_times(times_of, l, opt, whole)).first;
    return it->second;
  }
};

/// Eq. P39: a grid layout of t = p = c = e = 1, which predict (with the plan's predict_options: m as a number) takes as
/// data parallelism with m micro-batches accumulated.
bool data_parallel_point(const ParallelLayout& l) noexcept { return l.tp == 1 && l.pp == 1 && l.cp == 1 && l.ep == 1; }

/// Eq. P45: fp8 all-gather (eq. S12) as a row at sharding `sh` runs it, asked for and acting on stage 3's gathers alone.
bool row_fp8_all_gather(bool asked, const Sharding& sh) noexcept { return asked && sh.stage >= 3; }

/// Eq. P39 for the plan (P41): such a layout predicted as predict predicts it, by the data-parallel path (the Predictor
/// on the base scenario with the layout's micro-batch, m, recompute mode and sharding stage), its memory with the plan's
/// reserve in place of predict's 1 GB (eq. P10's convention for the other rows); nullopt where the scenario is refused.
std::optional<Prediction> data_parallel_prediction(const PlanContext& c, const ParallelLayout& l, Recompute rc,
                                                   const Sharding& sh) {
  Scenario sc = c.base;
  ParallelLayout given = l;
  given.global_batch_target = 0;  // m as predict_options gives it: a number (data_parallel_layout)
  sc.parallel = given;
  sc.compute.recompute = rc;
  sc.compute.checkpointing = false;
  // eq. P42: the row's stage, the framework's K16 rate (as `--zero` keeps it)
  if (!sc.strategy.sharded_rate) sc.strategy.sharded_rate = sc.strategy.sharding.sharded();
  sc.strategy.sharding = sh;
  sc.compute.fp8_all_gather = row_fp8_all_gather(sc.compute.fp8_all_gather, sh);
  Prediction p;
  try {
    p = Predictor(std::move(sc), Predictor::TimesOnly{}).predict(c.gpus);
  } catch (const InputError&) {
    return std::nullopt;
  }
  p.memory.per_gpu += c.reserve - bytes(kDefaultReservedBytes);
  p.memory.fits = !(p.memory.capacity > Bytes{}) || p.memory.per_gpu <= p.memory.capacity;
  return p;
}

/// A layout the grid pruned by memory by a little (eq. P38): one that moving blocks off its first or last stage
/// (P26b) may make fit.
struct NearMiss {
  ParallelLayout layout;
  Recompute recompute = Recompute::none;
  int stage = 0;
  double over = 0.0;  // its worst stage's memory over the GPU's
};

/// Eq. P38: how far over the GPU's memory a pruned layout may be and still be refined: one block of a stage's
/// share of ~20 moved to the others frees ~5 % of its activations (and its weights' share).
constexpr double kNearMissOver = 1.05;

/// Every layout of the grid at one micro-batch, recompute mode and sharding stage, into the result; those pruned by
/// memory by a little with more than one stage into `near`.
void plan_layouts(const PlanContext& c, const ParallelPlanSpace& space, MicroBatchTimes& times, const ComputeOptions& opt,
                  const Sharding& sh, int micro_batch, int stage, ParallelPlanResult& r, std::vector<NearMiss>& near) {
  // eq. P17: expert-parallel degrees for a model with experts only (validate keeps those dividing dp·cp and E)
  const std::vector<int> no_ep{1};
  const std::vector<int>& eps = c.shape.experts > 0 ? space.ep : no_ep;
  const bool limited = c.capacity > Bytes{};
  const auto missed = [&](const ParallelLayout& l, Bytes worst) {
    ++r.out_of_memory;
    const double over = in_bytes(worst) / in_bytes(c.capacity);
    if (space.refine_near_misses > 0 && c.base.strategy.plan_variants.stage_blocks && l.pp > 1 && over <= kNearMissOver)
      near.push_back({l, opt.recompute, stage, over});
  };
  for (int tp : space.tp)
    for (int pp : space.pp)
      for (int cp : space.cp)
        for (int vp : space.vp)
          for (int ep : eps) {
            const auto l = grid_layout(c, tp, pp, cp, vp, ep, micro_batch, r.global_batch);
            if (!l) {
              ++r.invalid;
              continue;
            }
            // eq. P44: offload (S9) only where predict takes it, a data-parallel row of a sharded stage (P39); a
            // layout that P13 refuses it for, or a stage with nothing sharded to offload, is left out and counted
            if (sh.offload_optimizer && (!data_parallel_point(*l) || !sh.sharded())) {
              ++r.offload_skipped;
              continue;
            }
            // eq. P45: fp8 all-gather (S12) only where predict takes it, a stage-3 data-parallel row (P39); a stage-3
            // layout's step (P20) gathers at the working width and predict refuses it there: left out and counted
            if (stage >= 3 && c.base.compute.fp8_all_gather && !data_parallel_point(*l)) {
              ++r.stage_skipped;
              continue;
            }
            // eq. P44 (P40): the framework's shard group over the layout's dp·cp ranks, as predict shards them
            const auto shard = data_parallel_point(*l) ? std::optional<int>(l->dp(c.gpus)) : shard_ranks(c, *l, sh);
            if (!shard) {
              ++r.invalid;
              continue;
            }
            ++r.evaluated;
            if (data_parallel_point(*l)) {  // eq. P39 (P41): predict's data-parallel path, its memory the pruning's
              auto p = data_parallel_prediction(c, *l, opt.recompute, sh);
              if (!p) {
                --r.evaluated;
                ++r.invalid;
                continue;
              }
              if (!p->memory.fits) {
                ++r.out_of_memory;
                continue;
              }
              ParallelPlanEntry e;
              e.prediction = std::move(*p);
              e.layout = *l;
              e.recompute = opt.recompute;
              e.sharding_stage = stage;
              r.ranked.push_back(std::move(e));
              continue;
            }
            if (limited) {
              const Bytes worst = first_and_last_stage_memory(c, *l, opt, sh, *shard);
              if (worst > c.capacity) {
                missed(*l, worst);
                continue;
              }
            }
            ParallelPlanEntry e;
            e.prediction =
                parallel_prediction(c.base, *l, opt, sh, times.of(*l, opt), *c.coll, c.gpus, c.at, OneGpuStep{}, c.reserve);
            if (!e.prediction.memory.fits) {
              missed(*l, e.prediction.memory.per_gpu);
              continue;
            }
            e.layout = *l;
            e.recompute = opt.recompute;
            e.sharding_stage = stage;
            r.ranked.push_back(std::move(e));
          }
}

/// The framework's sharding at optimiser-sharding stage `stage`: its shard group (eq. P44 with P40 and S1) and its
/// offload (P44: the rows that cannot keep it are left out, plan_layouts), as predict takes them with `--zero stage`.
Sharding grid_sharding(const Scenario& base, int stage) {
  Sharding sh = base.strategy.sharding;
  sh.stage = stage;
  return sh;
}

/// The compute options of the grid's layouts at sharding `sh` under recompute mode `rc` (per block: no segment
/// checkpointing): the step's, with the sharding predict's step options take at that stage (step_compute:
/// `sharding`, eqs. S10 and S11), so that a row planned at another stage than the framework's is the step predict
/// gives with `--zero`; `sharded` (eq. K16) stays the framework's (eq. P42).
ComputeOptions grid_options(const ComputeOptions& step_opt, const Sharding& sh, Recompute rc) {
  ComputeOptions opt = step_opt;
  opt.sharding = sh;
  opt.recompute = rc;
  opt.checkpointing = false;
  opt.fp8_all_gather = row_fp8_all_gather(opt.fp8_all_gather, sh);
  return opt;
}

/// The plan's layer times by micro-batch and sharding stage.
using PlanTimes = std::map<std::pair<int, int>, MicroBatchTimes>;

/// Every micro-batch × recompute × sharding stage of the space into the result (plan_layouts), each micro-batch's
/// layer times kept in `times`, the near-misses in `near`.
void plan_grid(const PlanContext& c, const ParallelPlanSpace& space, const Scenario& times_of, const ComputeOptions& step_opt,
               PlanTimes& times, std::vector<NearMiss>& near, ParallelPlanResult& r) {
  const std::vector<int> stages = plan_sharding_stages(space, c.base.strategy);  // eq. P45
  for (int b : space.micro_batch)
    for (int stage : stages) {
      if (b < 1 || r.global_batch % b != 0 || times.contains({b, stage})) continue;
      const Sharding sh = grid_sharding(c.base, stage);
      ComputeOptions stage_opt = step_opt;  // the step's options at the stage's sharding (grid_options)
      stage_opt.sharding = sh;
      stage_opt.fp8_all_gather = row_fp8_all_gather(stage_opt.fp8_all_gather, sh);
      const LayerTimes whole =
          parallel_whole_times(times_of, estimate_layer_times(c.base.network, c.base.cluster.gpu, b, stage_opt));
      MicroBatchTimes& t = times.try_emplace({b, stage}, MicroBatchTimes{times_of, whole, {}}).first->second;
      for (Recompute rc : space.recompute) plan_layouts(c, space, t, grid_options(step_opt, sh, rc), sh, b, stage, r, near);
    }
}

/// The ranking: tokens/s, ties to the less memory.
bool faster_first(const ParallelPlanEntry& a, const ParallelPlanEntry& b) {
  const double ra = rate(a.prediction), rb = rate(b.prediction);
  if (ra != rb) return ra > rb;
  return a.prediction.memory.per_gpu < b.prediction.memory.per_gpu;
}

/// Eq. P38: the refinement of the grid's leaders, variant by variant (greedy: each kept only when the layout is then
/// faster and fits, the next tried on what was kept).
class Refiner {
 public:
  Refiner(const PlanContext& c, PlanTimes& times, const ComputeOptions& step_opt, ParallelPlanResult& r)
      : c_(c), times_(times), step_opt_(step_opt), r_(r) {}

  /// The options and sharding the grid predicted a layout with (plan_grid).
  [[nodiscard]] ComputeOptions options(Recompute rc, int stage) const { return grid_options(step_opt_, sharding(stage), rc); }
  [[nodiscard]] Sharding sharding(int stage) const { return grid_sharding(c_.base, stage); }

  /// A leader (it fits): its variants, the best kept in place. Whether one was kept.
  bool refine(ParallelPlanEntry& e) {
    const bool before = e.refined;
    cp_exchange(e);
    stage_blocks(e);
    distributed_checkpoints(e);
    recompute_num_layers(e);
    return e.refined != before;
  }

  /// A near-miss: the P26b variants that make it fit (the fastest of them), then the other variants on it.
  std::optional<ParallelPlanEntry> rescue(const NearMiss& m) {
    ParallelPlanEntry e;
    e.layout = m.layout;
    e.recompute = m.recompute;
    e.sharding_stage = m.stage;
    e.refined = true;
    bool fits = false;
    for (const ParallelLayout& l : stage_block_variants(m.layout)) {
      auto p = time(l, e.recompute, e.sharding_stage);
      if (p && (!fits || rate(*p) > rate(e.prediction))) {
        e.layout = l;
        e.prediction = std::move(*p);
        fits = true;
      }
    }
    if (!fits) return std::nullopt;
    cp_exchange(e);
    distributed_checkpoints(e);
    recompute_num_layers(e);
    return e;
  }

 private:
  /// What the framework runs beyond its layout (its file's `plan_variants`): only those are tried.
  [[nodiscard]] const PlanVariants& variants() const noexcept { return c_.base.strategy.plan_variants; }

  /// The layout predicted as the grid predicts it; nullopt where validate refuses it or it does not fit.
  std::optional<Prediction> time(const ParallelLayout& l, Recompute rc, int stage) {
    const ComputeOptions opt = options(rc, stage);
    const Sharding sh = sharding(stage);
    try {
      validate(l, c_.gpus, c_.shape);
    } catch (const InputError&) {
      return std::nullopt;
    }
    if (!first_and_last_stage_fit(c_, l, opt, sh)) return std::nullopt;
    auto it = times_.find({l.micro_batch, stage});
    if (it == times_.end()) return std::nullopt;
    ++r_.refine_timed;
    Prediction p =
        parallel_prediction(c_.base, l, opt, sh, it->second.of(l, opt), *c_.coll, c_.gpus, c_.at, OneGpuStep{}, c_.reserve);
    if (!p.memory.fits) return std::nullopt;
    return p;
  }

  /// `l` in place of e's layout where it fits and is faster.
  bool keep_if_faster(ParallelPlanEntry& e, const ParallelLayout& l) {
    auto p = time(l, e.recompute, e.sharding_stage);
    if (!p || !(rate(*p) > rate(e.prediction))) return false;
    e.layout = l;
    e.prediction = std::move(*p);
    e.refined = true;
    return true;
  }

  /// Eq. P29: the other exchanges where cp > 1 (a2a where cp divides a TP rank's heads: validate).
  void cp_exchange(ParallelPlanEntry& e) {
    if (e.layout.cp <= 1) return;
    for (CpComm x : variants().cp_comm) {
      if (x == e.layout.cp_comm) continue;
      ParallelLayout l = e.layout;
      l.cp_comm = x;
      l.hierarchical_cp = 0;
      keep_if_faster(e, l);
    }
  }

  /// Eq. P26b: k·v blocks (k a chunk) fewer on the first stage, the last, or both, the rest spread over the stages
  /// between, at the least k ≤ 3 that validate takes (the rest dividing evenly over them, a stage's blocks a multiple
  /// of v): the shift that keeps the stages most even.
  [[nodiscard]] std::vector<ParallelLayout> stage_block_variants(const ParallelLayout& base) const {
    std::vector<ParallelLayout> out;
    if (base.pp < 2 || base.account_for_embedding_in_pipeline_split || base.account_for_loss_in_pipeline_split ||
        base.num_layers_in_first_pipeline_stage > 0 || base.num_layers_in_last_pipeline_stage > 0)
      return out;
    const std::vector<int> stages = layer_stages(c_.blocks, base);
    std::vector<int> stage_of(static_cast<std::size_t>(c_.shape.layers), -1);  // a block's stage (its layers share it)
    for (std::size_t i = 0; i < stages.size(); ++i)
      if (c_.blocks[i] >= 0) stage_of[static_cast<std::size_t>(c_.blocks[i])] = stages[i];
    const auto first = static_cast<int>(std::count(stage_of.begin(), stage_of.end(), 0));
    const auto last = static_cast<int>(std::count(stage_of.begin(), stage_of.end(), base.pp - 1));
    for (int k = 1; k <= 3; ++k) {
      const int n0 = first - k * base.vp, n1 = last - k * base.vp;
      if (n0 < 1 || n1 < 1) break;
      for (auto [a, b] : {std::pair{n0, n1}, std::pair{n0, 0}, std::pair{0, n1}}) {
        ParallelLayout l = base;
        l.num_layers_in_first_pipeline_stage = a;
        l.num_layers_in_last_pipeline_stage = b;
        try {
          validate(l, c_.gpus, c_.shape);
        } catch (const InputError&) {
          continue;
        }
        out.push_back(l);
      }
      if (!out.empty()) break;  // the least shift the stages take: the most even of them
    }
    return out;
  }
  void stage_blocks(ParallelPlanEntry& e) {
    if (!variants().stage_blocks) return;
    for (const ParallelLayout& l : stage_block_variants(e.layout)) keep_if_faster(e, l);
  }

  /// Eq. P35: under full recompute with TP, SP off and each checkpoint's input split over the TP group (Megatron
  /// refuses it beside SP; a model with experts keeps SP under TP).
  void distributed_checkpoints(ParallelPlanEntry& e) {
    const ParallelLayout& b = e.layout;
    if (!variants().distribute_saved_activations || e.recompute != Recompute::full || b.tp <= 1 || !b.sp || b.ep > 1 ||
        b.distribute_saved_activations)
      return;
    ParallelLayout l = b;
    l.sp = false;
    l.tp_comm_overlap = false;  // needs SP (eq. P14)
    l.distribute_saved_activations = true;
    keep_if_faster(e, l);
  }

  /// Eq. P31: full recompute of the first N blocks of each chunk only (method block), the others keeping their
  /// activations. A stage's memory falls as N grows (each block more rerun keeps an input instead of its
  /// activations) and the step's time rises (one more block's forward again), so the best N is the least whose
  /// first and last stages fit: found by bisection on [1, n_c − 1] (N = n_c, the largest chunk's blocks, is full
  /// recompute), then timed; where a stage between does not fit, the next N up (at most two more).
  void recompute_num_layers(ParallelPlanEntry& e) {
    // eq. P39: recompute_method acts on nothing where the layout is data parallelism (predict says so)
    if (!variants().recompute_num_layers || e.recompute != Recompute::full || data_parallel_point(e.layout) ||
        e.layout.recompute_method != RecomputeMethod::uniform || e.layout.recompute_num_layers != 1)
      return;
    const int most = static_cast<int>(most_blocks_in_a_chunk(c_.shape.layers, e.layout));
    if (most < 2) return;
    const ComputeOptions opt = options(e.recompute, e.sharding_stage);
    const Sharding sh = sharding(e.sharding_stage);
    const auto block_n = [&](int n) {
      ParallelLayout l = e.layout;
      l.recompute_method = RecomputeMethod::block;
      l.recompute_num_layers = n;
      return l;
    };
    const auto fits = [&](int n) { return first_and_last_stage_fit(c_, block_n(n), opt, sh); };
    int lo = 1, hi = most - 1;  // the least N that fits lies in [lo, hi], or none does
    if (!fits(hi)) return;
    while (lo < hi) {
      const int mid = lo + (hi - lo) / 2;
      if (fits(mid)) hi = mid;
      else lo = mid + 1;
    }
    for (int n = lo; n < most && n <= lo + 2; ++n)
      if (auto p = time(block_n(n), e.recompute, e.sharding_stage)) {
        if (rate(*p) > rate(e.prediction)) {
          e.layout = block_n(n);
          e.prediction = std::move(*p);
          e.refined = true;
        }
        return;
      }
  }

  const PlanContext& c_;
  PlanTimes& times_;
  const ComputeOptions& step_opt_;
  ParallelPlanResult& r_;
};

/// Eq. P38 over a ranked result: the space's leaders (the fastest, and the fastest under full recompute) refined in
/// place, the near-misses that a variant makes fit added.
void refine(const PlanContext& c, const ParallelPlanSpace& space, PlanTimes& times, const ComputeOptions& step_opt,
            std::vector<NearMiss>& near, ParallelPlanResult& r) {
  Refiner refiner(c, times, step_opt, r);
  const std::size_t leaders = static_cast<std::size_t>(std::max(space.refine_leaders, 0));
  int full = 0;
  for (std::size_t i = 0; i < r.ranked.size(); ++i) {
    const bool leader = i < leaders;
    const bool full_leader = r.ranked[i].recompute == Recompute::full && full < space.refine_full_leaders;
    if (r.ranked[i].recompute == Recompute::full) ++full;
    if (!leader && !full_leader) {
      if (i >= leaders && full >= space.refine_full_leaders) break;
      continue;
    }
    if (refiner.refine(r.ranked[i])) ++r.refine_improved;
  }
  std::stable_sort(near.begin(), near.end(), [](const NearMiss& a, const NearMiss& b) { return a.over < b.over; });
  const std::size_t n = std::min(near.size(), static_cast<std::size_t>(std::max(space.refine_near_misses, 0)));
  for (std::size_t i = 0; i < n; ++i)
    if (auto e = refiner.rescue(near[i])) {
      r.ranked.push_back(std::move(*e));
      ++r.refine_improved;
      --r.out_of_memory;
    }
}

}  // namespace

std::vector<int> plan_sharding_stages(const ParallelPlanSpace& space, const Strategy& framework) {
  for (int z : space.sharding_stage)
    if (z < 0 || z > 3)
      throw InputError(SourceLocation{}, "sharding_stage",
                       fmt::format("stage {}: an optimiser-sharding stage is 0, 1, 2 or 3", z));
  if (!space.sharding_stage.empty()) return space.sharding_stage;
  // eq. P45: a framework that shards its gradients or parameters (ZeRO-2, ZeRO-3, FSDP) is planned at its own stage
  // too; the others' default grid is the replicated and the distributed optimiser, as before
  std::vector<int> stages{0, 1};
  if (framework.sharding.stage >= 2) stages.push_back(framework.sharding.stage);
  return stages;
}

ParallelPlanResult plan_parallel(const Scenario& base, int gpus, const ParallelPlanSpace& space) {
  const Cluster& cl = base.cluster;
  PlanContext c{base,
                gpus,
                transformer_blocks(base.network),
                {},
                {},
                {},
                cl.gpu.memory_size,
                space.memory_reserve,
                base.strategy.parallel.value_or(ParallelLayout{})};
  if (space.memory_reserve < Bytes{})
    throw InputError(SourceLocation{}, "memory_reserve", "the memory kept free on a GPU cannot be negative");
  if (base.strategy.aggregation != Aggregation::allreduce)  // as predict refuses it (validate_parallel, eq. P5)
    throw InputError(SourceLocation{}, "strategies",
                     fmt::format("'{}' aggregates by {}; a model-parallel layout's gradients are all-reduced over its "
                                 "data-parallel group (eq. P5), which this framework does not do",
                                 base.strategy.name, to_string(base.strategy.aggregation)));
  c.shape = transformer_shape(base.network, c.blocks);  // InputError("network") without blocks
  if (gpus < 1 || gpus > cl.max_gpus() || (gpus > cl.gpus_per_node && gpus % cl.gpus_per_node != 0))
    throw InputError(SourceLocation{}, "gpus",
                     fmt::format("cluster '{}' cannot hold {} GPUs in whole nodes of {}", cl.name, gpus, cl.gpus_per_node));
  ParallelPlanResult r;
  r.memory_reserve = space.memory_reserve;
  r.predict_sharding = space.predict_sharding.value_or(base.strategy.sharding);
  // eq. P38 tries only what the framework runs (its file's plan_variants): none named, the grid alone
  const bool variants = base.strategy.plan_variants.any();
  r.refine_leaders = variants ? std::max(space.refine_leaders, 0) : 0;
  r.refine_full_leaders = variants ? std::max(space.refine_full_leaders, 0) : 0;
  r.refine_near_misses = variants ? std::max(space.refine_near_misses, 0) : 0;
  r.global_batch = space.global_batch > 0
      ? space.global_batch
      : std::max<std::int64_t>(1, std::llround(kDefaultTokensPerStep / static_cast<double>(c.shape.seq)));
  c.coll = with_transport(base.collectives ? base.collectives : make_collective_model(cl), base.strategy.transport, cl);
  c.at = GpuPlacement{gpus, gpus <= cl.gpus_per_node ? 1 : gpus / cl.gpus_per_node, std::min(gpus, cl.gpus_per_node)};
  validate_moe_imbalance(c.framework.moe_imbalance);
  validate_moe_routing(c.framework);
  r.moe_imbalance = c.framework.moe_imbalance;
  r.cp_comm = c.framework.cp_comm;
  const ComputeOptions step_opt = step_compute(base);
  Scenario times_of = base;  // for parallel_whole_times: the framework's efficiency, no measured layers
  times_of.measured_layers.reset();

  PlanTimes times;  // by micro-batch and sharding stage, for the refinement too
  std::vector<NearMiss> near;
  plan_grid(c, space, times_of, step_opt, times, near, r);
  std::stable_sort(r.ranked.begin(), r.ranked.end(), faster_first);
  if (variants) refine(c, space, times, step_opt, near, r);  // eq. P38
  std::stable_sort(r.ranked.begin(), r.ranked.end(), faster_first);
  // where the TP groups of the leaders sit (the rest are not printed)
  for (std::size_t i = 0; i < r.ranked.size() && i < 32; ++i)
    r.ranked[i].tp_inside_node = place_layout(r.ranked[i].layout, cl, gpus)[ParallelGroup::tp].inside_node;
  return r;
}

namespace {

std::string where(const GroupPlacement& g) {
  if (g.size <= 1) return "none";
  if (g.inside_node) return fmt::format("{} inside a node", g.size);
  return fmt::format("{} across {} nodes ({} a node)", g.size, g.nodes, g.per_node);
}

/// The parts of a step that a layout trades against each other, in the order explain lists them.
std::vector<std::pair<const char*, Seconds>> parts(const Prediction& p) {
  const auto& b = p.breakdown;
  // eq. P39: a data-parallel row's step is the data-parallel path's; its communication exposed is its DP part
  Breakdown::Parallel par;
  if (b.parallel) par = *b.parallel;
  else par.dp_comm = b.comm_exposed;
  return {{"compute", b.forward + b.backward},
          {"TP exposed", par.tp_comm},
          {"CP exposed", par.cp_comm},
          {"EP all-to-all", par.ep_comm},
          {"PP sends", par.pp_p2p},
          {"bubble", par.bubble},
          {"DP exposed", par.dp_comm},
          {"tied embedding all-reduce", par.embedding_grads},
          {"update", b.update},
          {"slowest-GPU wait", b.sync_wait},  // eq. P43 (P39's rows: the data-parallel path's, eq. 2/3)
          {"iteration overhead", b.overhead}};
}

/// A layout's columns; `moe`: with the expert-parallel degree after cp.
std::string layout_cells(const ParallelPlanEntry& e, int gpus, bool moe) {
  const ParallelLayout& l = e.layout;
  return fmt::format("{:>3} {:>3} {:>3} {:>3} {}{:>3} {:>4} {:>3} {:>4} {:>10} {:>4}", l.tp, l.pp, l.vp, l.cp,
                     moe ? fmt::format("{:>3} ", l.ep) : std::string(), l.dp(gpus), l.micro_batch, l.micro_batches,
                     l.sp ? "sp" : "-", to_string(e.recompute),
                     e.sharding_stage > 0 ? fmt::format("z{}", e.sharding_stage) : std::string("-"));
}

/// Why the next best loses to the best: how much slower, and the parts of the step that differ by more than 1 us,
/// the most it loses first (the table names the first three).
struct NextLoss {
  double slower = 0.0;                                // 1 − its tokens/s / the best's
  std::vector<std::pair<const char*, double>> parts;  // (part, its seconds − the best's), largest first
};

NextLoss next_loss(const ParallelPlanEntry& best, const ParallelPlanEntry& next) {
  const auto a = parts(best.prediction), b = parts(next.prediction);
  NextLoss n;
  for (std::size_t k = 0; k < a.size(); ++k) {
    const double d = in_seconds(b[k].second - a[k].second);
    if (std::abs(d) > 1e-6) n.parts.emplace_back(a[k].first, d);
  }
  std::stable_sort(n.parts.begin(), n.parts.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
  n.slower = 1.0 - rate(next.prediction) / rate(best.prediction);
  return n;
}

/// "# the next best, #2, is X % slower: ..." by the parts of the step it loses most on, with both memories.
std::string why_the_next_loses(const ParallelPlanEntry& best, const ParallelPlanEntry& next) {
  const NextLoss n = next_loss(best, next);
  std::string why;
  int named = 0;
  for (const auto& [part, d] : n.parts) {
    if (named == 3) break;
    if (std::abs(d) < 0.0005) continue;  // what would print as ±0.000 s
    why += fmt::format("{}{} {:+.3f} s", named++ ? ", " : "", part, d);
  }
  const double slower = n.slower;
  return fmt::format("# the next best, #2, is {:.1f} % slower: {}{}\n", 100.0 * slower, why.empty() ? "the same parts" : why,
                     fmt::format(" (memory {:.1f} GB against {:.1f} GB)", in_bytes(next.prediction.memory.per_gpu) / 1e9,
                                 in_bytes(best.prediction.memory.per_gpu) / 1e9));
}

/// Eq. P38: the keys the refinement set, short ("a2a", "block:3", "first:19", "last:19", "dsa").
std::vector<std::string> variant_keys(const ParallelPlanEntry& e, CpComm grid_cp_comm) {
  const ParallelLayout& l = e.layout;
  std::vector<std::string> keys;
  if (l.cp > 1 && l.cp_comm != grid_cp_comm) keys.emplace_back(to_string(l.cp_comm));
  if (l.num_layers_in_first_pipeline_stage > 0) keys.push_back(fmt::format("first:{}", l.num_layers_in_first_pipeline_stage));
  if (l.num_layers_in_last_pipeline_stage > 0) keys.push_back(fmt::format("last:{}", l.num_layers_in_last_pipeline_stage));
  if (l.distribute_saved_activations) keys.emplace_back("dsa");
  if (l.recompute_method == RecomputeMethod::block) keys.push_back(fmt::format("block:{}", l.recompute_num_layers));
  return keys;
}

/// The variant column: the keys comma-separated, "-" for none.
std::string variant_cells(const ParallelPlanEntry& e, CpComm grid_cp_comm) {
  std::string out;
  for (const auto& k : variant_keys(e, grid_cp_comm)) out += (out.empty() ? "" : ",") + k;
  return out.empty() ? "-" : out;
}

}  // namespace

namespace {
/// A shard group as --shard-group takes it.
std::string shard_group_text(int group) {
  if (group == Sharding::kGroupNode) return "node";
  if (group == Sharding::kGroupAll) return "all";
  return std::to_string(group);
}
}  // namespace

std::string predict_options(const ParallelPlanEntry& e, const Scenario& base, int gpus) {
  return predict_options(e, base, gpus, base.strategy.sharding);
}

std::string predict_options(const ParallelPlanEntry& e, const Scenario& base, int gpus, const Sharding& predict_takes) {
  const ParallelLayout& l = e.layout;
  // the framework first: predict without it takes the cluster file's (pytorch-ddp on the shipped DGX nodes)
  std::string out = fmt::format("--framework {} --gpus {} --tp {}", base.strategy.name, gpus, l.tp);
  if (l.tp > 1) out += l.sp ? " --sp" : " --no-sp";
  const bool framework_overlap = base.strategy.parallel && base.strategy.parallel->tp_comm_overlap;
  if (l.tp > 1 && framework_overlap && !l.tp_comm_overlap) out += " --no-tp-comm-overlap";
  out += fmt::format(" --pp {}", l.pp);
  if (l.vp > 1) out += fmt::format(" --vp {} --schedule interleaved", l.vp);
  if (l.num_layers_in_first_pipeline_stage > 0)
    out += fmt::format(" --num-layers-in-first-pipeline-stage {}", l.num_layers_in_first_pipeline_stage);
  if (l.num_layers_in_last_pipeline_stage > 0)
    out += fmt::format(" --num-layers-in-last-pipeline-stage {}", l.num_layers_in_last_pipeline_stage);
  out += fmt::format(" --cp {}", l.cp);
  if (l.cp > 1) out += fmt::format(" --cp-comm {}", to_string(l.cp_comm));
  if (l.cp > 1 && l.cp_comm == CpComm::a2a_p2p) out += fmt::format(" --hierarchical-cp {}", l.hierarchical_cp);
  if (l.ep > 1) out += fmt::format(" --ep {}", l.ep);
  out += fmt::format(" --batch {} --micro-batches {}", l.micro_batch, l.micro_batches);
  if (e.recompute != Recompute::none) out += fmt::format(" --checkpointing {}", to_string(e.recompute));
  if (l.recompute_method == RecomputeMethod::block)
    out += fmt::format(" --recompute-method block --recompute-num-layers {}", l.recompute_num_layers);
  if (l.distribute_saved_activations) out += " --distribute-saved-activations";
  // the sharding stage where the plan's row differs from the framework's (the grid's 0 under megatron-core's
  // distributed optimiser, stage 1, or 0-2 under torchtitan's FSDP2, stage 3; eq. P45): predict takes the framework's
  // otherwise
  if (e.sharding_stage != predict_takes.stage) out += fmt::format(" --zero {}", e.sharding_stage);
  // eq. P44: the row's shard group (the base's: the framework's or --shard-group's) where predict would take another
  const Sharding& row = base.strategy.sharding;
  if (e.sharding_stage > 0 && row.group != predict_takes.group)
    out += fmt::format(" --shard-group {}", shard_group_text(row.group));
  // eq. P44: a row keeps the base's offload (rows that cannot are left out), which predict may not take by itself
  if (e.sharding_stage > 0 && row.offload_optimizer != predict_takes.offload_optimizer)
    out += row.offload_optimizer ? " --offload-optimizer" : " --no-offload-optimizer";
  // the precision where predict would take another (the framework's, default_precision)
  if (base.compute.precision != default_precision(base.strategy, base.cluster.gpu))
    out += fmt::format(" --precision {}", to_string(base.compute.precision));
  if (base.compute.precision == Precision::fp8 && base.compute.fp8_scaling != Fp8Scaling::tensorwise)
    out += fmt::format(" --fp8-scaling {}", to_string(base.compute.fp8_scaling));
  // eq. P45: the fp8 all-gather a stage-3 row runs (the plan's other stages run without it)
  if (base.compute.fp8_all_gather && e.sharding_stage >= 3) out += " --fp8-all-gather";
  return out;
}

namespace {
/// The combinations the plan left out because predict cannot run them so (eq. P44's offload, P45's fp8 all-gather), a
/// line each where there are any.
std::string left_out_notes(const ParallelPlanResult& r, const Scenario& base) {
  std::string out;
  if (r.offload_skipped > 0)  // eq. P44
    out += fmt::format(
        "# {} combinations left out: '{}' offloads its optimiser to the CPU (eq. S9), which only a sharded stage's "
        "data-parallel layout (tp, pp, cp and ep 1) takes; --no-offload-optimizer plans every layout without it\n",
        r.offload_skipped, base.strategy.name);
  if (r.stage_skipped > 0)  // eq. P45
    out += fmt::format(
        "# {} combinations left out: fp8 all-gather (eq. S12) is FSDP's on a data-parallel layout (tp, pp, cp and ep 1); "
        "a stage-3 layout's gathers (eq. P20) do not model it; stages 0-2 are planned without it\n",
        r.stage_skipped);
  return out;
}
}  // namespace

std::string format_parallel_plan(const ParallelPlanResult& r, const Scenario& base, int gpus, int top) {
  std::string out;
  const Cluster& cl = base.cluster;
  const TransformerShape shape = transformer_shape(base.network);
  out += fmt::format("# dlscale plan --parallel: {} on {} × {} ({}), {}, {}, global batch {} ({:.4g} M tokens a step)\n",
                     base.network.name, gpus, cl.gpu.name, cl.name, base.strategy.name,
                     precision_label(base.compute.precision, base.compute.fp8_scaling), r.global_batch,
                     static_cast<double>(r.global_batch * shape.seq) / 1e6);
  out += fmt::format(
      "# {} layouts checked, {} do not fit the {:.3g} GB of a GPU, {} combinations the model or the GPU "
      "count does not take\n",
      r.evaluated, r.out_of_memory, in_bytes(cl.gpu.memory_size) / 1e9, r.invalid);
  if (r.refine_leaders + r.refine_full_leaders + r.refine_near_misses > 0)
    out += fmt::format(
        "# refined (eq. P38): the {} fastest, the {} fastest under full recompute and up to {} layouts at most 5 % over "
        "the memory, with their variants: {} timed, {} made faster or made to fit\n",
        r.refine_leaders, r.refine_full_leaders, r.refine_near_misses, r.refine_timed, r.refine_improved);
  else if (!base.strategy.plan_variants.any())
    out += fmt::format("# not refined (eq. P38): framework '{}' names no plan_variants it runs\n", base.strategy.name);
  out += fmt::format(
      "# memory reserve {:.3g} GB a GPU (CUDA context and workspaces, NCCL buffers, allocator fragmentation): a layout "
      "fits when its worst stage's tensors stay within {:.3g} GB; mem/GPU includes the reserve\n",
      in_bytes(r.memory_reserve) / 1e9, in_bytes(cl.gpu.memory_size - r.memory_reserve) / 1e9);
  if (shape.experts > 0 && r.moe_imbalance != 1.0)
    out += fmt::format(
        "# routing imbalance {:g}: at every ep > 1 the busiest expert-parallel rank runs {:g} × the mean's token copies "
        "(its expert GEMMs, all-to-alls and activations; at most what ep ranks can reach; eq. P23)\n",
        r.moe_imbalance, r.moe_imbalance);
  if (shape.experts > 0 && base.strategy.parallel) {  // eq. P24
    const ParallelLayout& p = *base.strategy.parallel;
    if (p.moe_expert_load_cv > 0.0)
      out += fmt::format(
          "# per-expert load spread {:g}: the busiest expert-parallel rank runs 1 + {:g}·m_ep·√(ep/{}) × the mean's "
          "copies (eq. P24)\n",
          p.moe_expert_load_cv, p.moe_expert_load_cv, shape.experts);
    if (p.moe_expert_capacity_factor)
      out += fmt::format("# expert capacity factor {:g}, {} (eq. P24)\n", *p.moe_expert_capacity_factor,
                         p.moe_pad_expert_input_to_capacity ? "every expert padded to it"
                                                            : "copies beyond it dropped: the busiest rank at most that");
  }
  out += left_out_notes(r, base);
  if (r.ranked.empty()) {
    out += "# no layout fits\n";
    return out;
  }
  const bool moe = shape.experts > 0;
  out += fmt::format(
      "{:>4} {:>3} {:>3} {:>3} {:>3} {}{:>3} {:>4} {:>3} {:>4} {:>10} {:>4} {:>11} {:>9} {:>6} {:>8} {:>9} {:>7} {}\n", "rank",
      "tp", "pp", "vp", "cp", moe ? " ep " : "", "dp", "mb", "m", "sp", "recompute", "zero", "tokens/s", "tok/s/GPU", "MFU",
      "mem/GPU", "step (s)", "TP node", "variant");
  const std::size_t n = std::min<std::size_t>(r.ranked.size(), static_cast<std::size_t>(std::max(top, 1)));
  for (std::size_t i = 0; i < n; ++i) {
    const auto& e = r.ranked[i];
    const Prediction& p = e.prediction;
    out +=
        fmt::format("{:>4} {} {:>11.4g} {:>9.1f} {:>5.1f}% {:>5.1f} GB {:>9.3f} {:>7} {}\n", i + 1, layout_cells(e, gpus, moe),
                    p.throughput_tokens_per_s, p.throughput_tokens_per_s / gpus, 100.0 * p.mfu, in_bytes(p.memory.per_gpu) / 1e9,
                    in_seconds(p.iteration_time), e.tp_inside_node ? "inside" : "across", variant_cells(e, r.cp_comm));
  }
  const auto& best = r.ranked.front();
  const LayoutPlacement at = place_layout(best.layout, cl, gpus);
  out += fmt::format("# the best, {}: TP {}, CP {}, PP {}, DP {}{}\n", fmt::format("#1"), where(at[ParallelGroup::tp]),
                     where(at[ParallelGroup::cp]), where(at[ParallelGroup::pp]), where(at[ParallelGroup::dp]),
                     moe ? fmt::format(", EP {}", where(at[ParallelGroup::ep])) : std::string());
  if (r.ranked.size() > 1) out += why_the_next_loses(r.ranked[0], r.ranked[1]);
  out += fmt::format("# #1 as predict takes it: {}\n", predict_options(best, base, gpus, r.predict_sharding));
  // eq. P45: the stages above 1 named where a printed row runs one (the other plans' legend as it was)
  const bool above_one = std::any_of(r.ranked.begin(), r.ranked.begin() + static_cast<std::ptrdiff_t>(n),
                                     [](const ParallelPlanEntry& e) { return e.sharding_stage > 1; });
  out += fmt::format(
      "# tp, pp, vp, cp, {}dp: the degrees; mb: micro-batch; m: micro-batches a step; zero z1: distributed optimiser{}; "
      "TP node: every TP group inside one node (NVLink domain); variant (eq. P38): the CP exchange (--cp-comm), "
      "first:N and last:N the first and last stages' blocks (--num-layers-in-first/last-pipeline-stage), dsa "
      "distributed checkpoints without SP (--distribute-saved-activations), block:N full recompute of each chunk's "
      "first N blocks (--recompute-method block --recompute-num-layers N)\n",
      moe ? "ep (experts over ranks of dp·cp), " : "", above_one ? ", z2 and the gradients, z3 and the parameters (FSDP)" : "");
  return out;
}

namespace {

/// One row of plan --parallel's JSON: the layout's keys, its placement and variant, and its prediction (predict's).
nlohmann::ordered_json layout_json(const ParallelPlanEntry& e, std::size_t rank, CpComm grid_cp_comm, const Scenario& base,
                                   int gpus, const Sharding& predict_takes) {
  const ParallelLayout& l = e.layout;
  const Prediction& p = e.prediction;
  return {{"rank", rank},
          {"tp", l.tp},
          {"pp", l.pp},
          {"vp", l.vp},
          {"cp", l.cp},
          {"ep", l.ep},
          {"dp", l.dp(gpus)},
          {"micro_batch", l.micro_batch},
          {"micro_batches", l.micro_batches},
          {"sp", l.sp},
          {"recompute", to_string(e.recompute)},
          {"zero", e.sharding_stage},
          {"tokens_per_s_per_gpu", p.throughput_tokens_per_s / gpus},
          {"tp_inside_node", e.tp_inside_node},
          {"refined", e.refined},
          {"variant", variant_keys(e, grid_cp_comm)},
          {"predict_options", predict_options(e, base, gpus, predict_takes)},
          {"prediction", prediction_json(p)}};
}

}  // namespace

std::string format_parallel_plan_json(const ParallelPlanResult& r, const Scenario& base, int gpus, int top) {
  using json = nlohmann::ordered_json;
  const Cluster& cl = base.cluster;
  const TransformerShape shape = transformer_shape(base.network);
  json j = plan_document("plan --parallel");
  j["inputs"] = scenario_inputs_json(base);
  j["inputs"].update(json{{"gpus", gpus}, {"global_batch", r.global_batch}, {"tokens_per_step", r.global_batch * shape.seq}});
  j["evaluated"] = r.evaluated;
  j["out_of_memory"] = r.out_of_memory;
  j["invalid"] = r.invalid;
  j["offload_skipped"] = r.offload_skipped;  // eq. P44
  j["stage_skipped"] = r.stage_skipped;      // eq. P45
  j["fit"] = r.ranked.size();
  j["gpu_memory_bytes"] = in_bytes(cl.gpu.memory_size);
  j["memory_reserve_bytes"] = in_bytes(r.memory_reserve);
  j["memory_limit_bytes"] = in_bytes(cl.gpu.memory_size - r.memory_reserve);  // the worst stage's tensors within it
  j["cp_comm"] = to_string(r.cp_comm);
  j["refinement"] = r.refine_leaders + r.refine_full_leaders + r.refine_near_misses > 0
      ? json{{"leaders", r.refine_leaders},
             {"full_recompute_leaders", r.refine_full_leaders},
             {"near_misses", r.refine_near_misses},
             {"timed", r.refine_timed},
             {"improved", r.refine_improved}}
      : json(nullptr);
  if (shape.experts > 0) {  // eq. P23, P24
    const ParallelLayout p = base.strategy.parallel.value_or(ParallelLayout{});
    j["moe"] = {{"experts", shape.experts},
                {"imbalance", r.moe_imbalance},
                {"expert_load_cv", p.moe_expert_load_cv},
                {"expert_capacity_factor", p.moe_expert_capacity_factor ? json(*p.moe_expert_capacity_factor) : json(nullptr)},
                {"pad_expert_input_to_capacity", p.moe_pad_expert_input_to_capacity}};
  }
  auto rows = json::array();
  const std::size_t n = std::min<std::size_t>(r.ranked.size(), static_cast<std::size_t>(std::max(top, 1)));
  for (std::size_t i = 0; i < n; ++i) rows.push_back(layout_json(r.ranked[i], i + 1, r.cp_comm, base, gpus, r.predict_sharding));
  j["layouts"] = std::move(rows);  // the first is the best
  if (r.ranked.empty()) {
    j["best_placement"] = nullptr;
    j["next_best"] = nullptr;
    return dump_document(j);
  }
  const LayoutPlacement at = place_layout(r.ranked.front().layout, cl, gpus);
  j["best_placement"] = {{"tp", group_json(at[ParallelGroup::tp])},
                         {"cp", group_json(at[ParallelGroup::cp])},
                         {"pp", group_json(at[ParallelGroup::pp])},
                         {"dp", group_json(at[ParallelGroup::dp])}};
  if (shape.experts > 0) j["best_placement"]["ep"] = group_json(at[ParallelGroup::ep]);
  if (r.ranked.size() > 1) {
    const NextLoss nl = next_loss(r.ranked[0], r.ranked[1]);
    auto diffs = json::array();
    for (const auto& [part, d] : nl.parts) diffs.push_back({{"part", part}, {"delta_s", d}});
    j["next_best"] = {{"rank", 2},
                      {"slower", nl.slower},
                      {"parts", std::move(diffs)},
                      {"memory_per_gpu_bytes", in_bytes(r.ranked[1].prediction.memory.per_gpu)},
                      {"best_memory_per_gpu_bytes", in_bytes(r.ranked[0].prediction.memory.per_gpu)}};
  } else {
    j["next_best"] = nullptr;
  }
  return dump_document(j);
}

}  // namespace dlscale
