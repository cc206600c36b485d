// The closed-form prediction: a Scenario (cluster, network, framework strategy, batch, optional
// measured profile) in, one Prediction per GPU count out. The simulator returns the same record.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dlscale/cluster.hpp"
#include "dlscale/collective.hpp"
#include "dlscale/compute.hpp"
#include "dlscale/network.hpp"
#include "dlscale/profile.hpp"
#include "dlscale/strategy.hpp"
#include "dlscale/units.hpp"

namespace dlscale {

struct Scenario {
  Cluster cluster;
  Network network;
  Strategy strategy;
  std::optional<Profile> profile;
  /// Measured per-layer times (a calibration): used as they are, before the profile's phase totals and
  /// the roofline. Must have one entry per layer of `network`.
  std::optional<LayerTimes> measured_layers;
  int batch_per_gpu = 32;
  ComputeOptions compute;  // precision and efficiency factors
  std::shared_ptr<const CollectiveModel> collectives;  // null: make_collective_model(cluster)
};

struct Breakdown {
  Seconds io{}, h2d{}, forward{}, backward{}, update{};
  Seconds comm{};          // total aggregation time, as if nothing overlapped it
  Seconds comm_exposed{};  // the part of it that lengthens the iteration
};

enum class Bottleneck { io, h2d, compute, communication, update };
std::string_view to_string(Bottleneck b) noexcept;

struct Prediction {
  int gpus = 1;
  int nodes = 1;
  int batch_per_gpu = 0;
  Seconds iteration_time{};
  double throughput_samples_per_s = 0.0;
  double speedup = 1.0;
  double efficiency = 1.0;
  int hiding_case = 0;      // 1 or 2 for layer-wise/bucketed overlap; 0 when nothing overlaps
  int boundary_layer = 0;   // C in Case 2
  Bottleneck bottleneck = Bottleneck::compute;
  std::string bottleneck_resource;  // e.g. "inter-node network (56 Gb/s)"
  Breakdown breakdown;
};

/// Prepares the per-layer times of a scenario once, then predicts any GPU count cheaply.
class Predictor {
 public:
  explicit Predictor(Scenario scenario);
  ~Predictor();
  Predictor(Predictor&&) noexcept;
  Predictor& operator=(Predictor&&) noexcept;

  /// Throws UsageError("--gpus", …) when the cluster cannot hold `gpus`.
  [[nodiscard]] Prediction predict(int gpus) const;
  [[nodiscard]] std::vector<Prediction> predict(std::span<const int> gpu_counts) const;
  [[nodiscard]] const Scenario& scenario() const noexcept;
  [[nodiscard]] const LayerTimes& layer_times() const noexcept;

  /// Where `gpus` GPUs sit: as few nodes as possible, the same count on each.
  [[nodiscard]] GpuPlacement place(int gpus) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dlscale
