// A framework file's `parallel:` section: its layout defaults (Megatron-Core's rank order, sequence
// parallelism, the pipeline schedule) and, for a file that describes one run, its degrees and batches.
#include "loaders/parallel_entry.hpp"

#include <fmt/format.h>

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

}  // namespace

void read_parallel_entry(const yamlio::Node& node, Strategy& s) {
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
  if (auto n = m.optional("sp")) l.sp = n->boolean();
  if (auto n = m.optional("tp_comm_overlap")) l.tp_comm_overlap = n->boolean();
  if (auto n = m.optional("tp_async_backward")) l.tp_async_backward = n->boolean();  // eq. P28
  if (auto n = m.optional("dp_comm_overlap")) l.dp_comm_overlap = n->boolean();
  if (auto n = m.optional("pp_reshard_after_forward")) l.pp_reshard_after_forward = n->boolean();
  if (auto n = m.optional("pp_comm_overlap")) l.pp_comm_overlap = n->boolean();  // eq. P25
  // eq. P26: the embedding and the loss counted as layers of the split (the blocks' divisibility is validate's)
  if (auto n = m.optional("account_for_embedding_in_pipeline_split")) l.account_for_embedding_in_pipeline_split = n->boolean();
  if (auto n = m.optional("account_for_loss_in_pipeline_split")) l.account_for_loss_in_pipeline_split = n->boolean();
  // eq. P31: Megatron-Core's partial full recompute (its bound by the blocks of a chunk is validate's)
  if (auto n = m.optional("recompute_num_layers")) l.recompute_num_layers = at_least_one(*n);
  // eq. P35 (its need of full recompute and refusal of sp are the scenario's and validate's)
  if (auto n = m.optional("distribute_saved_activations")) l.distribute_saved_activations = n->boolean();
  if (auto n = m.optional("recompute_method")) {
    try {
      l.recompute_method = recompute_method_from_string(n->scalar());
    } catch (const InputError& e) {
      n->fail(e.message());
    }
  }
  // eq. P26b: the first and the last stage's blocks (their fit to the model and the pipeline is validate's)
  if (auto n = m.optional("num_layers_in_first_pipeline_stage")) l.num_layers_in_first_pipeline_stage = at_least_one(*n);
  if (auto n = m.optional("num_layers_in_last_pipeline_stage")) l.num_layers_in_last_pipeline_stage = at_least_one(*n);
  if (auto n = m.optional("schedule")) {
    try {
      l.schedule = pipeline_schedule_from_string(n->scalar());
    } catch (const InputError& e) {
      n->fail(e.message());
    }
  }
  if (auto n = m.optional("cp_comm")) {  // eq. P29
    try {
      l.cp_comm = cp_comm_from_string(n->scalar());
    } catch (const InputError& e) {
      n->fail(e.message());
    }
  }
  if (auto n = m.optional("hierarchical_cp")) l.hierarchical_cp = at_least_one(*n);  // eq. P36 (its fit is validate's)
  if (auto n = m.optional("rank_order")) {
    try {
      l.order = parse_rank_order(n->scalar());
    } catch (const InputError& e) {
      n->fail(e.message());
    }
  }
  if (l.vp > 1 && l.schedule != PipelineSchedule::interleaved)
    node.fail(fmt::format("vp {} needs 'schedule: interleaved'", l.vp));
  m.finish();
  s.parallel = l;
  s.parallel_degrees = degrees;
}

}  // namespace dlscale
