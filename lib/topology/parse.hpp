// Internal: reading the `node:` and `fabric:` sections of a cluster file into a Topology.
#pragma once

#include <memory>
#include <optional>

#include "dlscale/cluster.hpp"
#include "dlscale/topology.hpp"
#include "io/yaml_reader.hpp"

namespace dlscale::topo {

/// `node` is the node template, `fabric` the network between nodes (required when max_nodes > 1).
/// `sm` is the GPU's compute capability (NVLink bandwidth depends on it, as in NCCL).
/// `fabric_override` (--fabric KIND:SPEED[:COUNT]) replaces the `fabric` section, gives every NIC its
/// speed, and keeps the first COUNT NICs of the node or adds NICs beside the GPUs up to COUNT.
std::shared_ptr<const Topology> read_topology(const yamlio::Node& node, const std::optional<yamlio::Node>& fabric,
                                              int gpus_per_node, int max_nodes, int sm,
                                              const FabricSpec* fabric_override = nullptr);

}  // namespace dlscale::topo
