// dlscale explain for a model-parallel scenario (include/dlscale/parallel_plan.hpp; issue 37): the step's
// parts by eq. P13, memory per stage (eq. P10) and the placement of each group (eq. P11).
#include <fmt/format.h>

#include <string>

#include "dlscale/parallel.hpp"
#include "dlscale/parallel_plan.hpp"
#include "plan/doubling.hpp"

namespace dlscale {
namespace {

std::string group_row(const char* name, const GroupPlacement& g) {
  if (g.size <= 1) return fmt::format("  {:<6} 1 rank: no group\n", name);
  return fmt::format(
      "  {:<6} {} ranks, {} groups: {}, path {}{}\n", name, g.size, g.groups,
      g.inside_node ? std::string("inside a node") : fmt::format("across {} nodes, {} a node", g.nodes, g.per_node),
      to_string(g.path), g.nic_share > 1.0 ? fmt::format(", NICs shared {:.3g}×", g.nic_share) : std::string());
}

/// Eq. P23: ", routing imbalance 1.5" (its busiest rank charged where ep > 1), or that one rank of all the experts
/// runs every copy whatever the router's spread.
std::string moe_imbalance_text(const ParallelLayout& l) {
  return l.ep > 1 ? fmt::format(", routing imbalance {:g}: the busiest EP rank's load", l.moe_imbalance)
                  : fmt::format(", routing imbalance {:g} not charged: one EP rank runs every copy", l.moe_imbalance);
}

/// Eq. P24: the per-expert spread, the capacity factor and the load they charge the busiest EP rank; empty without.
std::string moe_routing_text(const ParallelLayout& l, const TransformerShape& m) {
  if (!(l.moe_expert_load_cv > 0.0) && !l.moe_expert_capacity_factor) return {};
  std::string out;
  if (l.moe_expert_load_cv > 0.0)
    out += fmt::format(", expert load spread {:g}: imbalance {:.4g} at ep {}", l.moe_expert_load_cv,
                       moe_routing_imbalance(l, m.experts, m.top_k), l.ep);
  if (l.moe_expert_capacity_factor)
    out += fmt::format(", capacity factor {:g} {}", *l.moe_expert_capacity_factor,
                       l.moe_pad_expert_input_to_capacity ? "padded" : "dropping");
  return out + fmt::format(": the busiest EP rank runs {:.4g} × the mean's copies", moe_rank_load(l, m.experts, m.top_k));
}

}  // namespace

std::string explain_parallel(const Scenario& sc, int gpus) {
  const Predictor predictor(sc);
  const Prediction p = predictor.predict(gpus);
  const ParallelLayout l = with_global_batch(*sc.parallel, gpus);
  const TransformerShape shape = transformer_shape(sc.network);
  const auto& b = p.breakdown;
  const auto& par = *b.parallel;
  std::string out;
  out += fmt::format("# dlscale explain: {} on {} × {} ({}), {}, {}\n", sc.network.name, gpus, sc.cluster.gpu.name,
                     sc.cluster.name, sc.strategy.name, precision_label(sc.compute.precision, sc.compute.fp8_scaling));
  out += fmt::format(
      "# layout: tp {}{} × pp {}{} × cp {}{}{} × dp {}; micro-batch {}, {} micro-batches, global batch {} "
      "({:.4g} M tokens); recompute {}; rank order {}\n",
      l.tp, l.sp ? " (sp)" : "", l.pp,
      l.pp > 1 ? (l.schedule == PipelineSchedule::interleaved ? fmt::format(" (interleaved, vp {})", l.vp)
                                                              : fmt::format(" ({})", to_string(l.schedule)))
               : std::string(),
      l.cp, l.cp > 1 && l.cp_comm != CpComm::p2p ? fmt::format(" ({})", to_string(l.cp_comm)) : std::string(),  // eq. P29
      shape.experts > 0 ? fmt::format(" (ep {} of {} experts, top-{}{}{})", l.ep, shape.experts, shape.top_k,
                                      l.moe_imbalance != 1.0 ? moe_imbalance_text(l) : std::string(), moe_routing_text(l, shape))
                        : std::string(),
      l.dp(gpus), l.micro_batch, l.micro_batches, l.global_batch(gpus),
      static_cast<double>(l.global_batch(gpus) * shape.seq) / 1e6,
      // eq. P31: Megatron-Core's method and count where they are not every block alone
      sc.compute.recompute == Recompute::full && (l.recompute_method != RecomputeMethod::uniform || l.recompute_num_layers != 1)
          ? fmt::format("full ({} {})", to_string(l.recompute_method), l.recompute_num_layers)
          : std::string(to_string(sc.compute.recompute)),
      to_string(l.order));
  out += fmt::format("step {:.4f} s: {:.4g} tokens/s ({:.1f} per GPU), MFU {:.1f} %\n", in_seconds(p.iteration_time),
                     p.throughput_tokens_per_s, p.throughput_tokens_per_s / gpus, 100.0 * p.mfu);
  out += fmt::format("bound by: {} ({}): {:.1f}% of the step, doubling it gains {:+.1f}% tokens/s\n\n", to_string(p.bottleneck),
                     p.bottleneck_resource.str(), 100.0 * p.bottleneck_share, 100.0 * p.bottleneck_gain);
  out += fmt::format("{:<34} {:>10} {:>7}\n", "part of the step (slowest stage)", "time (s)", "share");
  const auto row = [&](const char* what, Seconds t) {
    out += fmt::format("{:<34} {:>10.4f} {:>6.1f}%\n", what, in_seconds(t), 100.0 * (t / p.iteration_time));
  };
  row("compute (forward + backward)", b.forward + b.backward);
  row("TP exposed", par.tp_comm);
  row("CP exposed", par.cp_comm);
  if (shape.experts > 0) row("EP all-to-all", par.ep_comm);
  row("PP sends", par.pp_p2p);
  row("bubble", par.bubble);
  row("DP exposed", par.dp_comm);
  if (par.embedding_grads > Seconds{}) row("tied embedding all-reduce", par.embedding_grads);  // eq. P33
  row("update", b.update);
  out += fmt::format("# slowest stage: {} of {}; TP, CP and PP sends are per micro-batch × {}\n\n", par.slowest_stage, l.pp,
                     l.micro_batches);
  out += "memory per GPU by stage (weights, gradients, optimiser state, activations in flight):\n";
  for (std::size_t s = 0; s < par.stage_memory.size(); ++s)
    out += fmt::format("  stage {:<3} {:>7.1f} GB{}\n", s, in_bytes(par.stage_memory[s]) / 1e9,
                       p.memory.capacity > Bytes{} && par.stage_memory[s] > p.memory.capacity ? "  does not fit" : "");
  out += fmt::format("  (a GPU holds {:.1f} GB: {})\n\n", in_bytes(p.memory.capacity) / 1e9,
                     p.memory.fits ? "every stage fits" : "a stage does not fit");
  // what doubling each resource buys: the same rows as data parallelism's (Predictor::doubled, bottleneck.hpp)
  out += doubling_text(resource_gains(sc, p, predictor.doubled(gpus))) + "\n";
  const LayoutPlacement at = place_layout(l, sc.cluster, gpus);
  out += "groups (where their ranks sit):\n";
  out += group_row("TP", at[ParallelGroup::tp]);
  out += group_row("CP", at[ParallelGroup::cp]);
  out += group_row("PP", at[ParallelGroup::pp]);
  out += group_row("DP", at[ParallelGroup::dp]);
  out += group_row("DP×CP", at[ParallelGroup::dp_cp]);
  if (shape.experts > 0) {  // eq. P17
    out += group_row("EP", at[ParallelGroup::ep]);
    out += group_row("EDP (experts' DP)", at[ParallelGroup::edp]);
  }
  return out;
}

}  // namespace dlscale
