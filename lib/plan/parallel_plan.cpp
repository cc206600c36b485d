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
#include "parallel/parallel_blocks.hpp"
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
  RankOrder order;
  bool tp_comm_overlap = false;    // the framework's (nemo.yaml): every layout with SP overlaps its TP collectives
  bool dp_comm_overlap = false;    // the framework's (nemo.yaml): every layout overlaps its DP collectives (eq. P19)
  bool pp_comm_overlap = false;    // the framework's: every interleaved layout overlaps its pipeline sends (eq. P25)
  bool tp_async_backward = false;  // the framework's (megatron-core.yaml, nemo.yaml): every layout, eq. P28
  CpComm cp_comm = CpComm::p2p;    // the framework's (or --cp-comm): every layout with cp > 1, eq. P29
  Bytes capacity;
  Bytes reserve;               // ParallelPlanSpace::memory_reserve, each stage's MemoryEstimate::reserved
  double moe_imbalance = 1.0;  // the framework's (or --moe-imbalance): every layout with ep > 1 (eq. P23)
  ParallelLayout routing;      // its eq. P24 fields: capacity factor, padding, per-expert load spread, every layout
};

/// The layout of one point of the grid, its micro-batches set by the global batch; nullopt where the model or
/// the GPU count does not take it.
std::optional<ParallelLayout> grid_layout(const PlanContext& c, int tp, int pp, int cp, int vp, int ep, int b,
                                          std::int64_t global) {
  if (tp < 1 || pp < 1 || cp < 1 || vp < 1 || c.gpus % (tp * pp * cp) != 0 || (vp > 1 && pp == 1)) return std::nullopt;
  ParallelLayout l;
  l.tp = tp;
  l.sp = tp > 1;  // Megatron's practice with TP: the same traffic, a t-th of the norms' activations
  l.tp_comm_overlap = c.tp_comm_overlap && l.sp;
  l.dp_comm_overlap = c.dp_comm_overlap;
  l.pp_comm_overlap = c.pp_comm_overlap;
  l.tp_async_backward = c.tp_async_backward;
  l.pp = pp;
  l.vp = vp;
  l.schedule = vp > 1 ? PipelineSchedule::interleaved : PipelineSchedule::one_f_one_b;
  l.cp = cp;
  l.cp_comm = c.cp_comm;  // eq. P29: a2a where cp does not divide the heads leaves the layout out (validate)
  // eq. P36: a2a+p2p's inner size from the framework, a layout whose cp it does not divide left out (validate)
  if (c.cp_comm == CpComm::a2a_p2p) l.hierarchical_cp = c.routing.hierarchical_cp;
  l.ep = ep;
  // eq. P23: the stated imbalance, at most what ep ranks can reach (the router's imbalance over fewer, larger ranks
  // cannot exceed it; the same factor at every ep > 1 is the plan's assumption)
  l.moe_imbalance = std::min(c.moe_imbalance, moe_imbalance_limit(ep, c.shape));
  // eq. P24: the given capacity factor (and padding) and per-expert spread, f following each ep from the spread
  l.moe_expert_capacity_factor = c.routing.moe_expert_capacity_factor;
  l.moe_pad_expert_input_to_capacity = c.routing.moe_pad_expert_input_to_capacity;
  l.moe_expert_load_cv = c.routing.moe_expert_load_cv;
  l.micro_batch = b;
  l.global_batch_target = global;
  l.order = c.order;
  try {
    l = with_global_batch(l, c.gpus);
    validate(l, c.gpus, c.shape);
  } catch (const InputError&) {
    return std::nullopt;
  }
  return l;
}

/// Pruned by memory (eq. P10) before it is timed: the first stage holds the most in flight, the last the output
/// projection; the stages between are checked by the prediction (its memory).
bool first_and_last_stage_fit(const PlanContext& c, const ParallelLayout& l, const ComputeOptions& opt, const Sharding& sh) {
  if (!(c.capacity > Bytes{})) return true;
  const int dp_cp = l.dp(c.gpus) * l.cp;
  const ActivationRecompute ar = activation_recompute(opt.recompute);
  const std::vector<int> stages = layer_stages(c.blocks, l);
  for (int s : {0, l.pp - 1})
    if (rank_memory(c.base.network, c.blocks, c.shape, stages, l, s, opt, sh, dp_cp, ar, c.reserve).total() > c.capacity)
      return false;
  return true;
}

/// The layer times of one micro-batch's layouts, one rank's for each t and c (eq. P6), each timed once: the kernel
/// model does not depend on the recompute mode or the sharding.
struct MicroBatchTimes {
  const Scenario& times_of;  // the base without measured layers
  LayerTimes whole;
  std::map<std::array<int, 3>, ParallelTimes> by_tp_cp;  // a rank's times depend on t (and SP, t > 1), c and ep
  const ParallelTimes& of(const ParallelLayout& l, const ComputeOptions& opt) {
    const std::array key{l.tp, l.cp, l.ep};
    auto it = by_tp_cp.find(key);
    if (it == by_tp_cp.end()) it = by_tp_cp.emplace(key, parallel_layer_times(times_of, l, opt, whole)).first;
    return it->second;
  }
};

/// Every layout of the grid at one micro-batch, recompute mode and sharding stage, into the result.
void plan_layouts(const PlanContext& c, const ParallelPlanSpace& space, MicroBatchTimes& times, const ComputeOptions& opt,
                  const Sharding& sh, int micro_batch, int stage, ParallelPlanResult& r) {
  // eq. P17: expert-parallel degrees for a model with experts only (validate keeps those dividing dp·cp and E)
  const std::vector<int> no_ep{1};
  const std::vector<int>& eps = c.shape.experts > 0 ? space.ep : no_ep;
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
            ++r.evaluated;
            if (!first_and_last_stage_fit(c, *l, opt, sh)) {
              ++r.out_of_memory;
              continue;
            }
            ParallelPlanEntry e;
            e.prediction =
                parallel_prediction(c.base, *l, opt, sh, times.of(*l, opt), *c.coll, c.gpus, c.at, OneGpuStep{}, c.reserve);
            if (!e.prediction.memory.fits) {
              ++r.out_of_memory;
              continue;
            }
            e.layout = *l;
            e.recompute = opt.recompute;
            e.sharding_stage = stage;
            r.ranked.push_back(std::move(e));
          }
}

}  // namespace

ParallelPlanResult plan_parallel(const Scenario& base, int gpus, const ParallelPlanSpace& space) {
  const Cluster& cl = base.cluster;
  PlanContext c{base,
                gpus,
                transformer_blocks(base.network),
                {},
                {},
                {},
                kMegatronRankOrder,
                false,
                false,
                false,
                false,
                CpComm::p2p,
                cl.gpu.memory_size,
                space.memory_reserve,
                1.0,
                ParallelLayout{}};
  if (space.memory_reserve < Bytes{})
    throw InputError(SourceLocation{}, "memory_reserve", "the memory kept free on a GPU cannot be negative");
  c.shape = transformer_shape(base.network, c.blocks);  // InputError("network") without blocks
  if (gpus < 1 || gpus > cl.max_gpus() || (gpus > cl.gpus_per_node && gpus % cl.gpus_per_node != 0))
    throw InputError(SourceLocation{}, "gpus",
                     fmt::format("cluster '{}' cannot hold {} GPUs in whole nodes of {}", cl.name, gpus, cl.gpus_per_node));
  ParallelPlanResult r;
  r.memory_reserve = space.memory_reserve;
  r.global_batch = space.global_batch > 0
      ? space.global_batch
      : std::max<std::int64_t>(1, std::llround(kDefaultTokensPerStep / static_cast<double>(c.shape.seq)));
  c.coll = with_transport(base.collectives ? base.collectives : make_collective_model(cl), base.strategy.transport, cl);
  c.at = GpuPlacement{gpus, gpus <= cl.gpus_per_node ? 1 : gpus / cl.gpus_per_node, std::min(gpus, cl.gpus_per_node)};
  if (base.strategy.parallel) {
    c.order = base.strategy.parallel->order;
    c.tp_comm_overlap = base.strategy.parallel->tp_comm_overlap;
    c.dp_comm_overlap = base.strategy.parallel->dp_comm_overlap;
    c.pp_comm_overlap = base.strategy.parallel->pp_comm_overlap;
    c.tp_async_backward = base.strategy.parallel->tp_async_backward;
    c.cp_comm = base.strategy.parallel->cp_comm;
    c.moe_imbalance = base.strategy.parallel->moe_imbalance;
    c.routing = *base.strategy.parallel;
  }
  validate_moe_imbalance(c.moe_imbalance);
  validate_moe_routing(c.routing);
  r.moe_imbalance = c.moe_imbalance;
  const ComputeOptions step_opt = step_compute(base);
  Scenario times_of = base;  // for parallel_whole_times: the framework's efficiency, no measured layers
  times_of.measured_layers.reset();

  for (int b : space.micro_batch) {
    if (b < 1 || r.global_batch % b != 0) continue;
    MicroBatchTimes times{times_of, parallel_whole_times(times_of, estimate_layer_times(base.network, cl.gpu, b, step_opt)), {}};
    for (Recompute rc : space.recompute) {
      ComputeOptions opt = step_opt;
      opt.recompute = rc;
      opt.checkpointing = false;
      for (int stage : space.sharding_stage) {
        Sharding sh = base.strategy.sharding;
        sh.stage = stage;
        sh.group = Sharding::kGroupAll;
        sh.offload_optimizer = false;
        plan_layouts(c, space, times, opt, sh, b, stage, r);
      }
    }
  }
  std::stable_sort(r.ranked.begin(), r.ranked.end(), [](const ParallelPlanEntry& a, const ParallelPlanEntry& b) {
    const double ra = rate(a.prediction), rb = rate(b.prediction);
    if (ra != rb) return ra > rb;
    return a.prediction.memory.per_gpu < b.prediction.memory.per_gpu;
  });
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
  const auto& par = *b.parallel;
  return {{"compute", b.forward + b.backward},
          {"TP exposed", par.tp_comm},
          {"CP exposed", par.cp_comm},
          {"EP all-to-all", par.ep_comm},
          {"PP sends", par.pp_p2p},
          {"bubble", par.bubble},
          {"DP exposed", par.dp_comm},
          {"tied embedding all-reduce", par.embedding_grads},
          {"update", b.update}};
}

/// A layout's columns; `moe`: with the expert-parallel degree after cp.
std::string layout_cells(const ParallelPlanEntry& e, int gpus, bool moe) {
  const ParallelLayout& l = e.layout;
  return fmt::format("{:>3} {:>3} {:>3} {:>3} {}{:>3} {:>4} {:>3} {:>4} {:>10} {:>4}", l.tp, l.pp, l.vp, l.cp,
                     moe ? fmt::format("{:>3} ", l.ep) : std::string(), l.dp(gpus), l.micro_batch, l.micro_batches,
                     l.sp ? "sp" : "-", to_string(e.recompute),
                     e.sharding_stage > 0 ? fmt::format("z{}", e.sharding_stage) : std::string("-"));
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
  if (r.ranked.empty()) {
    out += "# no layout fits\n";
    return out;
  }
  const bool moe = shape.experts > 0;
  out +=
      fmt::format("{:>4} {:>3} {:>3} {:>3} {:>3} {}{:>3} {:>4} {:>3} {:>4} {:>10} {:>4} {:>11} {:>9} {:>6} {:>8} {:>9} {:>7}\n",
                  "rank", "tp", "pp", "vp", "cp", moe ? " ep " : "", "dp", "mb", "m", "sp", "recompute", "zero", "tokens/s",
                  "tok/s/GPU", "MFU", "mem/GPU", "step (s)", "TP node");
  const std::size_t n = std::min<std::size_t>(r.ranked.size(), static_cast<std::size_t>(std::max(top, 1)));
  for (std::size_t i = 0; i < n; ++i) {
    const auto& e = r.ranked[i];
    const Prediction& p = e.prediction;
    out += fmt::format("{:>4} {} {:>11.4g} {:>9.1f} {:>5.1f}% {:>5.1f} GB {:>9.3f} {:>7}\n", i + 1, layout_cells(e, gpus, moe),
                       p.throughput_tokens_per_s, p.throughput_tokens_per_s / gpus, 100.0 * p.mfu,
                       in_bytes(p.memory.per_gpu) / 1e9, in_seconds(p.iteration_time), e.tp_inside_node ? "inside" : "across");
  }
  const auto& best = r.ranked.front();
  const LayoutPlacement at = place_layout(best.layout, cl, gpus);
  out += fmt::format("# the best, {}: TP {}, CP {}, PP {}, DP {}{}\n", fmt::format("#1"), where(at[ParallelGroup::tp]),
                     where(at[ParallelGroup::cp]), where(at[ParallelGroup::pp]), where(at[ParallelGroup::dp]),
                     moe ? fmt::format(", EP {}", where(at[ParallelGroup::ep])) : std::string());
  if (r.ranked.size() > 1) {
    const auto& next = r.ranked[1];
    const auto a = parts(best.prediction), b = parts(next.prediction);
    std::vector<std::pair<double, std::string>> worse;
    for (std::size_t k = 0; k < a.size(); ++k) {
      const double d = in_seconds(b[k].second - a[k].second);
      if (std::abs(d) > 1e-6) worse.emplace_back(d, fmt::format("{} {:+.3f} s", a[k].first, d));
    }
    std::sort(worse.begin(), worse.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
    std::string why;
    for (std::size_t k = 0; k < worse.size() && k < 3; ++k) why += (k ? ", " : "") + worse[k].second;
    const double slower = 1.0 - rate(next.prediction) / rate(best.prediction);
    out += fmt::format("# the next best, #2, is {:.1f} % slower: {}{}\n", 100.0 * slower, why.empty() ? "the same parts" : why,
                       fmt::format(" (memory {:.1f} GB against {:.1f} GB)", in_bytes(next.prediction.memory.per_gpu) / 1e9,
                                   in_bytes(best.prediction.memory.per_gpu) / 1e9));
  }
  out += fmt::format(
      "# tp, pp, vp, cp, {}dp: the degrees; mb: micro-batch; m: micro-batches a step; zero z1: distributed optimiser; "
      "TP node: every TP group inside one node (NVLink domain)\n",
      moe ? "ep (experts over ranks of dp·cp), " : "");
  return out;
}

}  // namespace dlscale
