// Internal: an `input:` section as a YAML file gives it (a cluster's, or a reproduce experiment's override
// of one: docs/input-formats.md, "Input pipeline"; docs/reproduce.md).
#pragma once

#include "dlscale/cluster.hpp"
#include "dlscale/input_pipeline.hpp"
#include "io/yaml_reader.hpp"

namespace dlscale {

/// The section's storage tiers default to the cluster's (`storage.page_cache`, `storage.disk`); read with a
/// default Cluster they stay zero unless the section gives them. Errors name the node's file:line:col.
InputPipeline read_input(const yamlio::Node& n, const Cluster& c);

}  // namespace dlscale
