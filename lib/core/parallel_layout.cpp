// The names of a model-parallel layout's schedules and rank orders (include/dlscale/parallel_layout.hpp).
#include "dlscale/parallel_layout.hpp"

#include <fmt/format.h>

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

}  // namespace dlscale
