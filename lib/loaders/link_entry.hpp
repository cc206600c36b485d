// Internal: a link `{bandwidth, latency}` as a YAML file gives it (a cluster's intra_node and inter_node, or
// a reproduce experiment's inter_node override: docs/input-formats.md, "Cluster"; docs/reproduce.md).
#pragma once

#include "dlscale/cluster.hpp"
#include "io/yaml_reader.hpp"

namespace dlscale {

/// `bandwidth` (required) and `latency`; unknown keys are errors naming the node's file:line:col.
LinkSpec read_link(const yamlio::Node& n);

}  // namespace dlscale
