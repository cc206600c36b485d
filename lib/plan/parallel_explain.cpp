// dlscale explain for a model-parallel scenario (include/dlscale/parallel_plan.hpp; issue 37): the step's
// parts by eq. P13, memory per stage (eq. P10) and the placement of each group (eq. P11).
#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dlscale/parallel.hpp"
#include "dlscale/parallel_plan.hpp"
#include "plan/doubling.hpp"
#include "plan/plan_json.hpp"
#include "plan/prediction_json.hpp"

namespace dlscale {
namespace {

/// One row of explain's groups, its label padded to `width` columns (the widest label printed, at least 6).
std::string group_row(std::string_view name, const GroupPlacement& g, std::size_t width) {
  if (g.size <= 1) return fmt::format("  {:<{}} 1 rank: no group\n", name, width);
  return fmt::format(
      "  {:<{}} {} ranks, {} groups: {}, path {}{}\n", name, width, g.size, g.groups,
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

/// What the table and the JSON of a layout's explain read: one prediction, its doubling and its placement.
struct LayoutExplanation {
  Prediction p;
  ParallelLayout l;
  TransformerShape shape;
  std::vector<ResourceGain> doubling;
  LayoutPlacement at;
};

LayoutExplanation explain_layout(const Scenario& sc, int gpus) {
  const Predictor predictor(sc);
  LayoutExplanation x;
  x.p = predictor.predict(gpus);
  x.l = with_global_batch(*sc.parallel, gpus);
  x.shape = transformer_shape(sc.network);
  // what doubling each resource buys: the same rows as data parallelism's (Predictor::doubled, bottleneck.hpp)
  x.doubling = resource_gains(sc, x.p, predictor.doubled(gpus));
  x.at = place_layout(x.l, sc.cluster, gpus);
  return x;
}

/// The parts of the step (eq. P13) as the table lists them: EP where the model has experts, the tied embedding's
/// all-reduce where there is one.
std::vector<std::pair<const char*, Seconds>> step_parts(const LayoutExplanation& x) {
  const auto& b = x.p.breakdown;
  const auto& par = *b.parallel;
  std::vector<std::pair<const char*, Seconds>> rows{
      {"compute (forward + backward)", b.forward + b.backward}, {"TP exposed", par.tp_comm}, {"CP exposed", par.cp_comm}};
  if (x.shape.experts > 0) rows.emplace_back("EP all-to-all", par.ep_comm);
  rows.emplace_back("PP sends", par.pp_p2p);
  rows.emplace_back("bubble", par.bubble);
  rows.emplace_back("DP exposed", par.dp_comm);
  if (par.embedding_grads > Seconds{}) rows.emplace_back("tied embedding all-reduce", par.embedding_grads);  // eq. P33
  rows.emplace_back("update", b.update);
  if (b.sync_wait > Seconds{}) rows.emplace_back("slowest-GPU wait", b.sync_wait);  // eq. P43
  if (b.overhead > Seconds{}) rows.emplace_back("iteration overhead", b.overhead);  // eq. P43
  return rows;
}

}  // namespace

std::string explain_parallel(const Scenario& sc, int gpus) {
  const LayoutExplanation x = explain_layout(sc, gpus);
  const Prediction& p = x.p;
  const ParallelLayout& l = x.l;
  const TransformerShape& shape = x.shape;
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
  for (const auto& [what, t] : step_parts(x)) row(what, t);
  out += fmt::format("# slowest stage: {} of {}; TP, CP and PP sends are per micro-batch × {}\n\n", par.slowest_stage, l.pp,
                     l.micro_batches);
  out += "memory per GPU by stage (weights, gradients, optimiser state, activations in flight):\n";
  for (std::size_t s = 0; s < par.stage_memory.size(); ++s)
    out += fmt::format("  stage {:<3} {:>7.1f} GB{}\n", s, in_bytes(par.stage_memory[s]) / 1e9,
                       p.memory.capacity > Bytes{} && par.stage_memory[s] > p.memory.capacity ? "  does not fit" : "");
  out += fmt::format("  (a GPU holds {:.1f} GB: {})\n\n", in_bytes(p.memory.capacity) / 1e9,
                     p.memory.fits ? "every stage fits" : "a stage does not fit");
  out += doubling_text(x.doubling) + "\n";
  const LayoutPlacement& at = x.at;
  out += "groups (where their ranks sit):\n";
  std::vector<std::pair<std::string_view, GroupPlacement>> groups{{"TP", at[ParallelGroup::tp]},
                                                                  {"CP", at[ParallelGroup::cp]},
                                                                  {"PP", at[ParallelGroup::pp]},
                                                                  {"DP", at[ParallelGroup::dp]},
                                                                  {"DP×CP", at[ParallelGroup::dp_cp]}};
  // eq. P40: a hybrid strategy's shard groups of the dp·cp ranks and the replica groups its shards are all-reduced over
  const LayoutShards sg = layout_shards(l, sc.strategy.sharding, sc.cluster, gpus, at);
  if (sg.replicas > 1) {
    groups.emplace_back("DP shard", sg.shard_at);
    groups.emplace_back("DP replicas", sg.replica_at);
  }
  if (shape.experts > 0) {  // eq. P17
    groups.emplace_back("EP", at[ParallelGroup::ep]);
    groups.emplace_back("EDP (experts' DP)", at[ParallelGroup::edp]);
  }
  // the labels in one column: as wide as the widest (its characters, "×" one), at least the 6 of TP's to DP×CP's rows
  std::size_t width = 6;
  for (const auto& [name, g] : groups)
    width = std::max<std::size_t>(
        width, static_cast<std::size_t>(std::count_if(name.begin(), name.end(), [](char c) { return (c & 0xC0) != 0x80; })));
  for (const auto& [name, g] : groups) out += group_row(name, g, width);
  return out;
}

std::string explain_parallel_json(const Scenario& sc, int gpus, const std::optional<TrainingWorkload>& workload) {
  using json = nlohmann::ordered_json;
  const LayoutExplanation x = explain_layout(sc, gpus);
  const Prediction& p = x.p;
  const ParallelLayout& l = x.l;
  json j = plan_document("explain");
  j["inputs"] = scenario_inputs_json(sc);
  j["inputs"]["gpus"] = gpus;
  j["layout"] = {{"tp", l.tp},
                 {"sp", l.sp},
                 {"pp", l.pp},
                 {"schedule", to_string(l.schedule)},
                 {"vp", l.vp},
                 {"cp", l.cp},
                 {"cp_comm", to_string(l.cp_comm)},
                 {"ep", l.ep},
                 {"dp", l.dp(gpus)},
                 {"micro_batch", l.micro_batch},
                 {"micro_batches", l.micro_batches},
                 {"global_batch", l.global_batch(gpus)},
                 {"tokens_per_step", l.global_batch(gpus) * x.shape.seq},
                 {"recompute", to_string(sc.compute.recompute)},
                 {"recompute_method", to_string(l.recompute_method)},
                 {"recompute_num_layers", l.recompute_num_layers},
                 {"rank_order", to_string(l.order)}};
  if (x.shape.experts > 0)  // eq. P23, P24
    j["layout"]["moe"] = {
        {"experts", x.shape.experts},
        {"top_k", x.shape.top_k},
        {"imbalance", l.moe_imbalance},
        {"expert_load_cv", l.moe_expert_load_cv},
        {"expert_capacity_factor", l.moe_expert_capacity_factor ? json(*l.moe_expert_capacity_factor) : json(nullptr)},
        {"pad_expert_input_to_capacity", l.moe_pad_expert_input_to_capacity},
        {"rank_load", moe_rank_load(l, x.shape.experts, x.shape.top_k)}};
  std::optional<TrainingCost> cost;
  if (workload) cost = time_to_train(p, *workload, sc.cluster);
  // the prediction: its bottleneck, memory (and each stage's, "parallel") and the step's parts
  j["prediction"] = prediction_json(p, cost ? &*cost : nullptr);
  j["tokens_per_s_per_gpu"] = p.throughput_tokens_per_s / gpus;
  auto parts = json::array();
  for (const auto& [what, t] : step_parts(x)) parts.push_back(part_json(what, t, p.iteration_time));
  j["step_parts"] = std::move(parts);
  auto stages = json::array();
  const auto& mem = p.breakdown.parallel->stage_memory;
  for (std::size_t s = 0; s < mem.size(); ++s)
    stages.push_back({{"stage", s},
                      {"memory_bytes", in_bytes(mem[s])},
                      {"fits", !(p.memory.capacity > Bytes{} && mem[s] > p.memory.capacity)}});
  j["stages"] = std::move(stages);
  auto gains = json::array();
  for (const auto& g : x.doubling) gains.push_back(resource_gain_json(g));
  j["doubling"] = std::move(gains);
  json groups{{"tp", group_json(x.at[ParallelGroup::tp])},
              {"cp", group_json(x.at[ParallelGroup::cp])},
              {"pp", group_json(x.at[ParallelGroup::pp])},
              {"dp", group_json(x.at[ParallelGroup::dp])},
              {"dp_cp", group_json(x.at[ParallelGroup::dp_cp])}};
  const LayoutShards sg = layout_shards(l, sc.strategy.sharding, sc.cluster, gpus, x.at);
  if (sg.replicas > 1) {  // eq. P40
    groups["dp_shard"] = group_json(sg.shard_at);
    groups["dp_replicas"] = group_json(sg.replica_at);
  }
  if (x.shape.experts > 0) {  // eq. P17
    groups["ep"] = group_json(x.at[ParallelGroup::ep]);
    groups["edp"] = group_json(x.at[ParallelGroup::edp]);
  }
  j["groups"] = std::move(groups);
  j["workload"] = workload ? json(workload->source) : json(nullptr);
  j["price_per_gpu_hour"] = sc.cluster.price_per_gpu_hour > 0.0 ? json(sc.cluster.price_per_gpu_hour) : json(nullptr);
  return dump_document(j);
}

}  // namespace dlscale
