// Internal: a framework file's `parallel:` section (docs/input-formats.md, "Framework strategy"): the
// model-parallel layout a run with the framework starts from.
#pragma once

#include "dlscale/strategy.hpp"
#include "io/yaml_reader.hpp"

namespace dlscale {

/// Reads `parallel: {tp, sp, pp, vp, schedule, cp, micro_batch, micro_batches | global_batch, rank_order}` into
/// s.parallel (and s.parallel_degrees when a degree or batch is given); a bad value fails at its node.
void read_parallel_entry(const yamlio::Node& node, Strategy& s);

}  // namespace dlscale
