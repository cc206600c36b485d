// The model reads calibration: a CollectiveModel answering from measured curves, and measured per-layer
// times matched to a network's layers by name.
#include <fmt/format.h>

#include <set>

#include "dlscale/calibration.hpp"
#include "dlscale/format.hpp"
#include "dlscale/network.hpp"
#include "nccl/model.hpp"
#include "nccl/table.hpp"

namespace dlscale {

CalibratedCollectiveModel::CalibratedCollectiveModel(std::shared_ptr<const Calibration> cal,
                                                     std::shared_ptr<const CollectiveModel> fallback)
    : cal_(std::move(cal)), fallback_(std::move(fallback)) {}

const CollectiveCurve* CalibratedCollectiveModel::curve_for(CollectiveOp op, const GpuPlacement& where) const noexcept {
  return cal_->find_curve(op, where.gpus, where.nodes);
}

Seconds CalibratedCollectiveModel::time(CollectiveOp op, Bytes size, const GpuPlacement& where) const {
  if (where.gpus <= 1) return {};
  if (const CollectiveCurve* c = curve_for(op, where)) {
    const Seconds t = curve_time(*c, size);
    if (c->gpus_per_thread <= 1) return t;
    // Measured with one thread for k GPUs (nccl-tests -g k): the issue of the first k − 1 is not NCCL's
    // (nccl::nccl_tests_time); a time under it (the device under one launch) keeps a tenth of itself.
    const Seconds issue = nccl::issue_before_last(nccl::default_table(), c->gpus_per_thread);
    return max(t - issue, t * 0.1);
  }
  return fallback_->time(op, size, where);
}

std::string CalibratedCollectiveModel::describe() const {
  std::string curves;
  for (const auto& c : cal_->collectives)
    curves += fmt::format("{}{} on {} GPU{}{}", curves.empty() ? "" : ", ", to_string(c.op), c.gpus, c.gpus > 1 ? "s" : "",
                          c.nodes > 1 ? fmt::format(" / {} nodes", c.nodes) : "");
  return fmt::format("measured ({}: {}), else {}", cal_->source_file.empty() ? "calibration" : cal_->source_file,
                     curves.empty() ? "no curves" : curves, fallback_->describe());
}

std::optional<LayerTimes> measured_layer_times(const Calibration& cal, const Network& net, int batch, std::string_view precision,
                                               std::size_t* matched) {
  const LayerProfile* lp = cal.find_layers(net.name, batch, precision);
  if (matched) *matched = 0;
  if (!lp) return std::nullopt;
  LayerTimes t;
  const std::size_t L = net.layers.size();
  t.forward.assign(L, Seconds{});
  t.backward.assign(L, Seconds{});
  t.update.assign(L, Seconds{});
  std::size_t found = 0;
  for (std::size_t i = 0; i < L; ++i) {
    for (const auto& m : lp->layers) {
      if (m.name != net.layers[i].name) continue;
      if (m.forward) t.forward[i] = *m.forward;
      if (m.backward) t.backward[i] = *m.backward;
      if (m.forward || m.backward) ++found;
      break;
    }
  }
  if (matched) *matched = found;
  return t;
}

}  // namespace dlscale
