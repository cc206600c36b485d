// A framework file's `parallel:` section: its layout defaults (Megatron-Core's rank order, sequence
// parallelism, the pipeline schedule) and, for a file that describes one run, its degrees and batches.
#include "loaders/parallel_entry.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>
#include <utility>

#include "dlscale/error.hpp"
#include "dlscale/parallel_layout.hpp"

namespace dlscale {
namespace {

/// A degree or batch: an integer ≥ 1 (and at most a million GPUs' worth).
int at_least_one(const yamlio::Node& n) {
  const int v = n.int_at_most(1'000'000);
  if (v < 1) n.fail(fmt::format("must be at least 1, got {}", v));
  return v;
}

/// A key whose text `parse` reads (a name, a rank order), refused at the key's line with the parser's message.
template <typename T, typename Parse>
void read_named(yamlio::MapReader& m, const char* key, T& target, Parse parse) {
  if (auto n = m.optional(key)) {
    try {
      target = parse(n->scalar());
    } catch (const InputError& e) {
      n->fail(e.message());
    }
  }
}

/// `plan_variants: {cp_comm: [p2p, all_gather, a2a], stage_blocks: true, distribute_saved_activations: true,
/// recompute_num_layers: true}`: what the framework runs beyond its layout, which plan's refinement may choose (eq. P38).
PlanVariants read_plan_variants(const yamlio::Node& node) {
  yamlio::MapReader m(node);
  PlanVariants v;
  if (auto n = m.optional("cp_comm"))
    for (const yamlio::Node& item : n->items()) {
      CpComm c{};
      try {
        c = cp_comm_from_string(item.scalar());
      } catch (const InputError& e) {
        item.fail(e.message());
      }
      if (std::find(v.cp_comm.begin(), v.cp_comm.end(), c) != v.cp_comm.end()) item.fail("named twice");
      v.cp_comm.push_back(c);
    }
  for (auto [key, target] : {std::pair{"stage_blocks", &v.stage_blocks},
                             {"distribute_saved_activations", &v.distribute_saved_activations},
                             {"recompute_num_layers", &v.recompute_num_layers}})
    if (auto n = m.optional(key)) *target = n->boolean();
  m.finish();
  return v;
}

}  // namespace

void read_parallel_entry(const yamlio::Node& node, Strategy& s, bool framework_file) {
  yamlio::MapReader m(node);
  // over what `s` already holds: nothing for a framework file, the framework's layout for a sweep's `layout` axis
  ParallelLayout l = s.parallel.value_or(ParallelLayout{});
  bool degrees = s.parallel_degrees;
  for (auto [key, target] : {std::pair{"tp", &l.tp},
                             {"pp", &l.pp},
                             {"vp", &l.vp},
                             {"cp", &l.cp},
                             {"ep", &l.ep},
                             {"micro_batch", &l.micro_batch},
                             {"micro_batches", &l.micro_batches}})
    if (auto n = m.optional(key)) {
      *target = at_least_one(*n);
      degrees = true;
    }
  if (m.has("micro_batches")) l.global_batch_target = 0;  // over a base's global batch, as --micro-batches is
  if (auto n = m.optional("global_batch")) {
    if (m.has("micro_batches")) n->fail("give micro_batches or global_batch, not both");
    l.global_batch_target = at_least_one(*n);
    degrees = true;
  }
  // eqs. P23-P24: the routing imbalance, Megatron-Core's capacity factor and padding, a per-expert load spread, checked
  // as the layout checks them, each refusal at its own key
  const std::optional<yamlio::Node> imbalance = m.optional("moe_imbalance"), capacity = m.optional("moe_expert_capacity_factor"),
                                    pad = m.optional("moe_pad_expert_input_to_capacity"),
                                    spread = m.optional("moe_expert_load_cv");
  if (imbalance) l.moe_imbalance = imbalance->number();
  if (capacity) l.moe_expert_capacity_factor = capacity->number();
  if (pad) l.moe_pad_expert_input_to_capacity = pad->boolean();
  if (spread) l.moe_expert_load_cv = spread->number();
  try {
    validate_moe_imbalance(l.moe_imbalance);
    validate_moe_routing(l);
  } catch (const InputError& e) {
    const std::optional<yamlio::Node>& at = e.key() == "moe_imbalance" ? imbalance
        : e.key() == "moe_expert_capacity_factor"                      ? capacity
        : e.key() == "moe_pad_expert_input_to_capacity"                ? pad
                                                                       : spread;
    if (!at) throw;  // a default the file did not set: every default passes, so not reached
    at->fail(e.message());
  }
  // eq. P25 (pp_comm_overlap), P26 (the embedding and the loss counted as layers of the split), P28 (tp_async_backward),
  // P35 (distribute_saved_activations: its need of full recompute and refusal of sp are the scenario's and validate's)
  for (auto [key, target] : {std::pair{"sp", &l.sp},
                             {"tp_comm_overlap", &l.tp_comm_overlap},
                             {"tp_async_backward", &l.tp_async_backward},
                             {"dp_comm_overlap", &l.dp_comm_overlap},
                             {"pp_reshard_after_forward", &l.pp_reshard_after_forward},
                             {"pp_comm_overlap", &l.pp_comm_overlap},
                             {"account_for_embedding_in_pipeline_split", &l.account_for_embedding_in_pipeline_split},
                             {"account_for_loss_in_pipeline_split", &l.account_for_loss_in_pipeline_split},
                             {"distribute_saved_activations", &l.distribute_saved_activations}})
    if (auto n = m.optional(key)) *target = n->boolean();
  // eq. P31's N, P26b's first and last stage's blocks, P36's all-to-all group (their fit is validate's)
  for (auto [key, target] : {std::pair{"recompute_num_layers", &l.recompute_num_layers},
                             {"num_layers_in_first_pipeline_stage", &l.num_layers_in_first_pipeline_stage},
                             {"num_layers_in_last_pipeline_stage", &l.num_layers_in_last_pipeline_stage},
                             {"hierarchical_cp", &l.hierarchical_cp}})
    if (auto n = m.optional(key)) *target = at_least_one(*n);
  read_named(m, "recompute_method", l.recompute_method, [](std::string_view t) { return recompute_method_from_string(t); });
  read_named(m, "schedule", l.schedule, [](std::string_view t) { return pipeline_schedule_from_string(t); });
  read_named(m, "cp_comm", l.cp_comm, [](std::string_view t) { return cp_comm_from_string(t); });  // eq. P29
  read_named(m, "rank_order", l.order, [](std::string_view t) { return parse_rank_order(t); });
  if (framework_file)
    if (auto n = m.optional("plan_variants")) s.plan_variants = read_plan_variants(*n);
  if (l.vp > 1 && l.schedule != PipelineSchedule::interleaved)
    node.fail(fmt::format("vp {} needs 'schedule: interleaved'", l.vp));
  m.finish();
  s.parallel = l;
  s.parallel_degrees = degrees;
}

}  // namespace dlscale
