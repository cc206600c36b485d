// Internal: a framework file's `parallel:` section (docs/input-formats.md, "Framework strategy"): the
// model-parallel layout a run with the framework starts from.
#pragma once

#include "dlscale/strategy.hpp"
#include "io/yaml_reader.hpp"

namespace dlscale {

/// Reads `parallel: {tp, sp, pp, vp, schedule, cp, micro_batch, micro_batches | global_batch, rank_order}` into
/// s.parallel (and s.parallel_degrees when a degree or batch is given); a bad value fails at its node. The keys given
/// go over s.parallel as it is (unset for a framework file; a sweep's `layout` axis reads its maps over the framework's
/// layout, as the CLI's options go over it), micro_batches over a global_batch there. `framework_file`: the section of
/// a framework file, which may also name the plan's variants (`plan_variants`, eq. P38); a sweep's layout may not.
void read_parallel_entry(const yamlio::Node& node, Strategy& s, bool framework_file = false);

}  // namespace dlscale
