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
/// `job_gpus` (1 … gpus_per_node; 0: all): a job on the first job_gpus GPUs of each node (--gpus-per-node, e.g.
/// 64 of an NVL72 rack's 72): the graph keeps those GPUs and every vertex its links still reach from them; the
/// other GPUs, the hosts, switches and NICs only they reach, and their links are left out.
std::shared_ptr<const Topology> read_topology(const yamlio::Node& node, const std::optional<yamlio::Node>& fabric,
                                              int gpus_per_node, int max_nodes, int sm,
                                              const FabricSpec* fabric_override = nullptr, int job_gpus = 0);

}  // namespace dlscale::topo
