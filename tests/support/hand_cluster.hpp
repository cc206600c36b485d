// The hand-timed cluster of the model-parallel tests (parallel_test, moe_test): `nodes` nodes of 8 GPUs, 100 GB/s
// and 1 µs inside a node, 10 GB/s and 5 µs between nodes, one NIC a node (the alpha-beta model's figures).
#pragma once

#include "dlscale/cluster.hpp"

namespace dlscale::test {

inline Cluster hand_cluster(int nodes) {
  Cluster c;
  c.name = "hand";
  c.max_nodes = nodes;
  c.gpus_per_node = 8;
  c.intra_node = {gigabytes_per_second(100.0), microseconds(1.0)};
  c.inter_node = {gigabytes_per_second(10.0), microseconds(5.0)};
  return c;
}

}  // namespace dlscale::test
