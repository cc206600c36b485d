// The names of a model-parallel layout's schedules and rank orders (include/dlscale/parallel_layout.hpp).
#include "dlscale/parallel_layout.hpp"

#include <fmt/format.h>

#include <cmath>

#include "dlscale/error.hpp"

namespace dlscale {
namespace {

InputError field_error(std::string_view field, std::string message) {
  return InputError(SourceLocation{}, std::string(field), std::move(message));
}

}  // namespace

PipelineSchedule pipeline_schedule_from_string(std::string_view name, std::string_view field) {
  if (auto s = enum_from_string<PipelineSchedule>(name)) return *s;
  throw field_error(field, fmt::format("unknown pipeline schedule '{}' (gpipe, 1f1b, interleaved)", name));
}

CpComm cp_comm_from_string(std::string_view name, std::string_view field) {
  if (auto c = enum_from_string<CpComm>(name)) return *c;
  throw field_error(field, fmt::format("unknown context-parallel exchange '{}' (p2p, all_gather, a2a)", name));
}

RecomputeMethod recompute_method_from_string(std::string_view name, std::string_view field) {
  if (auto m = enum_from_string<RecomputeMethod>(name)) return *m;
  throw field_error(field, fmt::format("unknown recompute method '{}' (uniform, block)", name));
}

RankOrder parse_rank_order(std::string_view text, std::string_view field) {
  RankOrder order{};
  std::size_t n = 0;
  std::array<bool, 4> seen{};
  std::string_view rest = text;
  while (!rest.empty()) {
    const std::size_t sep = rest.find_first_of("-,");
    const std::string_view name = rest.substr(0, sep);
    rest = sep == std::string_view::npos ? std::string_view{} : rest.substr(sep + 1);
    if (name == "ep") continue;  // expert parallelism: carved from the dp·cp ranks (eq. P17), no place of its own
    const auto d = enum_from_string<ParallelDim>(name);
    if (!d) throw field_error(field, fmt::format("rank order '{}': unknown dimension '{}' (tp, cp, ep, dp, pp)", text, name));
    const auto i = static_cast<std::size_t>(*d);
    if (seen[i]) throw field_error(field, fmt::format("rank order '{}' names '{}' twice", text, name));
    seen[i] = true;
    order[n++] = *d;
  }
  if (n != 4) throw field_error(field, fmt::format("rank order '{}' must name each of tp, cp, dp and pp once", text));
  return order;
}

std::string to_string(const RankOrder& order) {
  return fmt::format("{}-{}-{}-{}", to_string(order[0]), to_string(order[1]), to_string(order[2]), to_string(order[3]));
}

void validate_moe_imbalance(double f) {
  // eq. P23: the busiest rank's load over the mean's, at least the mean's
  if (!std::isfinite(f) || f < 1.0)
    throw field_error("moe_imbalance",
                      fmt::format("the busiest expert-parallel rank's load over the mean must be at least 1, got {}", f));
}

void validate_moe_routing(const ParallelLayout& l) {
  // eq. P24: a capacity factor scales the mean expert's copies; padding pads to it
  if (const auto& c = l.moe_expert_capacity_factor; c && (!std::isfinite(*c) || !(*c > 0.0)))
    throw field_error("moe_expert_capacity_factor", fmt::format("must be a finite number above 0, got {}", *c));
  if (l.moe_pad_expert_input_to_capacity && !l.moe_expert_capacity_factor)
    throw field_error("moe_pad_expert_input_to_capacity",
                      "padding to capacity needs a capacity factor (moe_expert_capacity_factor)");
  if (!std::isfinite(l.moe_expert_load_cv) || l.moe_expert_load_cv < 0.0)
    throw field_error(
        "moe_expert_load_cv",
        fmt::format("the per-expert load spread must be a finite number of at least 0, got {}", l.moe_expert_load_cv));
  if (l.moe_expert_load_cv > 0.0 && l.moe_imbalance != 1.0)
    throw field_error("moe_expert_load_cv",
                      fmt::format("give the per-expert load spread ({}) or the routing imbalance ({}), not both",
                                  l.moe_expert_load_cv, l.moe_imbalance));
}

}  // namespace dlscale
