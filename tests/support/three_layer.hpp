// Test helper: the three-layer scenario worked by hand in predict_test.cpp and plan_test.cpp.
//   backward b = (0.3, 0.2, 0.1) s, forward 0.1 s each, update u = (0.01, 0.02, 0.03) s (measured_layers);
//   gradients: params (12.5 M, 62.5 M, 75 M) × 4 B = (0.05, 0.25, 0.30) GB;
//   input 1 MB per sample, batch 10 → D = 10 MB; host-to-GPU 1 GB/s → h2d = 0.01 s;
//   page cache 100 MB/s → t_io,1 = 0.1 s; 2 nodes × 4 GPUs; intra- and inter-node 1 GB/s, no latency.
// The strategy is layer-wise overlap with the update after aggregation; no collective model is set.
#pragma once

#include <utility>

#include "dlscale/predict.hpp"

namespace dlscale::test {

inline Scenario three_layer_scenario() {
  Scenario sc;
  sc.cluster.name = "hand";
  sc.cluster.max_nodes = 2;
  sc.cluster.gpus_per_node = 4;
  sc.cluster.gpu.name = "hand GPU";
  sc.cluster.gpu.peak_fp32 = teraflops_per_second(10);
  sc.cluster.gpu.memory_bandwidth = gigabytes_per_second(300);
  sc.cluster.h2d_pinned = sc.cluster.h2d_pageable = gigabytes_per_second(1);
  sc.cluster.intra_node = {gigabytes_per_second(1), Seconds{}};
  sc.cluster.inter_node = {gigabytes_per_second(1), Seconds{}};
  sc.cluster.page_cache = sc.cluster.disk = megabytes_per_second(100);
  sc.network.name = "three";
  sc.network.input_bytes_per_sample = megabytes(1);
  for (auto [name, params] : {std::pair{"l1", 12'500'000}, {"l2", 62'500'000}, {"l3", 75'000'000}}) {
    Layer l;
    l.name = name;
    l.kind = LayerKind::linear;
    l.params = params;
    l.forward_flops_per_sample = 1e6;
    sc.network.layers.push_back(l);
  }
  sc.measured_layers = LayerTimes{{seconds(0.1), seconds(0.1), seconds(0.1)},
                                  {seconds(0.3), seconds(0.2), seconds(0.1)},
                                  {seconds(0.01), seconds(0.02), seconds(0.03)},
                                  {},
                                  {},
                                  {},
                                  {}};
  sc.batch_per_gpu = 10;
  sc.strategy.name = "layerwise-after";
  sc.strategy.io_prefetch = true;
  sc.strategy.overlap = Overlap::layerwise;
  sc.strategy.update = UpdatePlacement::after_aggregation;
  return sc;
}

}  // namespace dlscale::test
