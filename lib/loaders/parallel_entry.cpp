// A framework file's `parallel:` section: its layout defaults (Megatron-Core's rank order, sequence
// parallelism, the pipeline schedule) and, for a file that describes one run, its degrees and batches.
#include "loaders/parallel_entry.hpp"

#include <fmt/format.h>

#include <cmath>

#include "dlscale/error.hpp"

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
  ParallelLayout l;
  bool degrees = false;
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
  if (auto n = m.optional("global_batch")) {
    if (m.has("micro_batches")) n->fail("give micro_batches or global_batch, not both");
    l.global_batch_target = at_least_one(*n);
    degrees = true;
  }
  if (auto n = m.optional("moe_imbalance")) {  // eq. P23: the busiest EP rank's load over the mean's
    const double f = n->number();
    if (!(f >= 1.0)) n->fail(fmt::format("the busiest expert-parallel rank's load over the mean must be at least 1, got {}", f));
    l.moe_imbalance = f;
  }
  // eq. P24: Megatron-Core's capacity factor and padding, and a per-expert load spread
  if (auto n = m.optional("moe_expert_capacity_factor")) {
    const double c = n->number();
    if (!std::isfinite(c) || !(c > 0.0)) n->fail(fmt::format("must be a finite number above 0, got {}", c));
    l.moe_expert_capacity_factor = c;
  }
  if (auto n = m.optional("moe_pad_expert_input_to_capacity")) {
    l.moe_pad_expert_input_to_capacity = n->boolean();
    if (l.moe_pad_expert_input_to_capacity && !l.moe_expert_capacity_factor)
      n->fail("padding to capacity needs a capacity factor (moe_expert_capacity_factor)");
  }
  if (auto n = m.optional("moe_expert_load_cv")) {
    const double v = n->number();
    if (!std::isfinite(v) || !(v >= 0.0))
      n->fail(fmt::format("the per-expert load spread must be a finite number of at least 0, got {}", v));
    if (v > 0.0 && l.moe_imbalance != 1.0)
      n->fail(fmt::format("give the per-expert load spread ({}) or moe_imbalance ({}), not both", v, l.moe_imbalance));
    l.moe_expert_load_cv = v;
  }
  if (auto n = m.optional("sp")) l.sp = n->boolean();
  if (auto n = m.optional("tp_comm_overlap")) l.tp_comm_overlap = n->boolean();
  if (auto n = m.optional("dp_comm_overlap")) l.dp_comm_overlap = n->boolean();
  if (auto n = m.optional("pp_reshard_after_forward")) l.pp_reshard_after_forward = n->boolean();
  if (auto n = m.optional("schedule")) {
    try {
      l.schedule = pipeline_schedule_from_string(n->scalar());
    } catch (const InputError& e) {
      n->fail(e.message());
    }
  }
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
