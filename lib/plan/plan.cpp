// Time and cost to train, and the critical path `explain` prints (include/dlscale/plan.hpp); the resource
// manipulations `explain` uses are in lib/predict/resources.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "dlscale/error.hpp"
#include "dlscale/format.hpp"
#include "dlscale/plan.hpp"

namespace dlscale {

// ---- workloads --------------------------------------------------------------------------------------
std::optional<TrainingWorkload> default_workload(const Network& net) {
  if (net.input_kind != "image") return std::nullopt;
  return TrainingWorkload{kImageNet1kTrainImages, kImageNetEpochs,
                          "ImageNet-1k (1,281,167 images) x 90 epochs (default for image models)"};
}

std::optional<TrainingWorkload> make_workload(const Network& net, std::optional<std::int64_t> samples,
                                              std::optional<double> epochs) {
  if (samples && *samples < 1)
    throw InputError(SourceLocation{}, "samples", "the number of samples per epoch must be at least 1");
  if (epochs && !(*epochs > 0.0 && std::isfinite(*epochs)))
    throw InputError(SourceLocation{}, "epochs", fmt::format("the number of epochs must be a positive number, got {}", *epochs));
  auto w = default_workload(net);
  if (!w && !samples) return std::nullopt;  // token models: no default data set
  if (!w) w = TrainingWorkload{*samples, 1.0, ""};
  if (samples) w->samples_per_epoch = *samples;
  if (epochs) w->epochs = *epochs;
  if (samples || epochs) w->source = fmt::format("{} samples x {:g} epochs (given)", w->samples_per_epoch, w->epochs);
  return w;
}

/// Iterations of a run: epochs · ⌈samples / (N_g · M)⌉ (the last, partial batch of an epoch is run).
TrainingCost time_to_train(const Prediction& p, const TrainingWorkload& w, const Cluster& cluster) {
  TrainingCost c;
  // the samples a step trains: N_g·M·K for data parallelism, b·m·dp for a layout (throughput's own definition)
  const double global_batch = std::max(std::round(p.throughput_samples_per_s * in_seconds(p.iteration_time)), 1.0);
  c.iterations = w.epochs * std::ceil(static_cast<double>(w.samples_per_epoch) / global_batch);
  c.wall_time = p.iteration_time * c.iterations;
  c.gpu_hours = in_seconds(c.wall_time) / 3600.0 * p.gpus;
  if (cluster.price_per_gpu_hour > 0.0) {
    c.cost = c.gpu_hours * cluster.price_per_gpu_hour;
    c.currency = cluster.currency;
  }
  return c;
}

// ---- the critical path ------------------------------------------------------------------------------
std::vector<PathSegment> critical_path(const Prediction& p, const Strategy& s, Seconds first_update) {
  const Breakdown& b = p.breakdown;
  if (const auto& par = b.parallel) {  // eq. P13's parts on the slowest stage, as explain's layout page lists them
    return {{"forward", b.forward},       {"backward", b.backward},          {"TP exposed", par->tp_comm},
            {"CP exposed", par->cp_comm}, {"EP all-to-all", par->ep_comm},   {"PP sends", par->pp_p2p},
            {"bubble", par->bubble},      {"DP exposed", par->dp_comm},      {"tied embedding all-reduce", par->embedding_grads},
            {"update", b.update},         {"slowest-GPU wait", b.sync_wait}, {"iteration overhead", b.overhead}};  // eq. P43
  }
  // The update on the path: all of t_u after aggregation (eq. 10), the first layer's (or unit's) with
  // per-layer updates overlapped with aggregation (eq. 6/7).
  const bool overlapped = s.overlap != Overlap::none && s.aggregation != Aggregation::broadcast_reduce;
  const Seconds update = overlapped && s.update == UpdatePlacement::per_layer ? first_update : b.update;
  const Seconds gpu_side = b.h2d + b.forward + b.backward + b.comm_exposed + update + b.sync_wait + b.overhead + b.gpu_decode +
      b.offload_d2h_exposed + b.input_handover;
  // With prefetching (eq. 4) t_iter = max(t_gpu + t_comm, t_io): only the part of t_io beyond the GPU
  // side is on the path. Without it (eq. 2) all of t_io is.
  const Seconds io_exposed = s.io_prefetch ? max(p.iteration_time - gpu_side, Seconds{}) : b.io;
  std::vector<PathSegment> path{{"io (exposed)", io_exposed},
                                {"h2d", b.h2d},
                                {"forward", b.forward},
                                {"backward", b.backward},
                                {"communication (exposed)", b.comm_exposed},
                                {"update", update}};
  if (s.sharding.offload_optimizer) {  // docs/model.md, eq. S9: the update is the CPU step and the copy back
    path.pop_back();
    path.push_back({"offload d2h (exposed)", b.offload_d2h_exposed});
    path.push_back({"offload CPU Adam", b.offload_cpu});
    path.push_back({"offload h2d parameters", b.offload_h2d});
  }
  // Synchronization losses: segments when the strategy has them (the same segments at every GPU count,
  // so that plots stack alike; zero on one GPU).
  if (s.jitter_cv > 0.0) path.push_back({"wait for slowest GPU", b.sync_wait});
  if (s.iteration_overhead > Seconds{}) path.push_back({"framework overhead", b.overhead});
  if (b.gpu_decode > Seconds{}) path.push_back({"input decode on the GPU", b.gpu_decode});
  if (b.input_handover > Seconds{}) path.push_back({"input hand-over", b.input_handover});  // eq. F2a
  return path;
}

}  // namespace dlscale
