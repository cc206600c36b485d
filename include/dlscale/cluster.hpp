// A GPU cluster in the simple form: nodes of identical GPUs, and the bandwidths that the S-SGD model
// needs. The topology issue adds a graph (`topology`) that refines the GPU-to-GPU links; the simple
// bandwidths stay as the fallback and as what a hand-written cluster file gives.
#pragma once

#include <memory>
#include <string>

#include "dlscale/gpu.hpp"
#include "dlscale/units.hpp"

namespace dlscale {

class Topology;  // defined by the topology component; opaque here

struct LinkSpec {
  BytesPerSecond bandwidth{};  // per direction
  Seconds latency{};
};

struct Cluster {
  std::string name;
  std::string description;
  std::string source_file;
  int max_nodes = 1;
  int gpus_per_node = 1;
  GpuSpec gpu;
  BytesPerSecond h2d_pinned{};    // host -> GPU copy from pinned memory
  BytesPerSecond h2d_pageable{};  // host -> GPU copy from pageable memory
  LinkSpec intra_node;            // GPU <-> GPU inside a node (the slowest pair a ring uses)
  LinkSpec inter_node;            // node <-> node (one NIC per node unless the topology says more)
  BytesPerSecond disk{};          // B_disk
  BytesPerSecond page_cache{};    // B_cache
  bool dataset_in_page_cache = true;
  std::shared_ptr<const Topology> topology;  // null for the simple form
  double price_per_gpu_hour = 0.0;           // optional `price_per_gpu_hour: "2.5 USD"`; 0 = not given
  std::string currency;                       // e.g. "USD"; empty when no price is given

  [[nodiscard]] int max_gpus() const noexcept { return max_nodes * gpus_per_node; }
};

}  // namespace dlscale
