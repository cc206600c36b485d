// The compute model's layer times of a sweep's groups, shared between groups and between runs
// (sweep_layer_times.cpp). Internal to lib/plan.
#pragma once

#include <memory>
#include <vector>

#include "dlscale/sweep.hpp"

namespace dlscale::sweep_detail {

/// The compute model's layer times of each group, on its GPU and on its GPU doubled (the bottleneck's
/// doubled scenario, with_doubled: Resource::gpu), both from the networks with their shapes (the
/// Predictor is handed slimmed networks in run_sweep, which keep none unless a step models its own).
struct GroupLayerTimes {
  std::vector<std::shared_ptr<const LayerTimes>> gpu, doubled_gpu;
};

/// The compute model's layer times per group (groups with no GPU count in `counts` get none), shared
/// between groups with the same network, GPU, batch, precision, fp8 scaling, convolution algorithms and other
/// options of the step (step_compute's) (the kernel
/// model is the costly part of a new Predictor), and between runs in this process; the same for the GPU
/// doubled, except for sharded steps, whose one-GPU scenario (eq. K16) models its own times from the
/// doubled GPU.
GroupLayerTimes shared_layer_times(const SweepSpec& spec, const std::vector<std::vector<int>>& counts);

}  // namespace dlscale::sweep_detail
