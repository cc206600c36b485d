// apply_calibration: a calibration's measurements into a scenario (docs/calibration.md, "Using a
// calibration"), in the library so that every front end gets the same refusal of another GPU's file and the
// same replacements; the command line's --calibration and --explain-sources (lib/cli/calibrate.cpp) only
// load the file and say where each number came from.
#include <fmt/format.h>

#include <system_error>

#include "dlscale/calibration.hpp"
#include "dlscale/error.hpp"
#include "dlscale/predict.hpp"
#include "io/yaml_reader.hpp"

namespace dlscale {
namespace {

/// Where the calibration file names its GPU (`gpu`, or `layers[i].gpu` for layer >= 0), for an error that
/// points at the line; the file was read once already, so this only looks the key up again. A calibration
/// parsed from text (no file to read again) is named as a whole.
std::pair<SourceLocation, std::string> gpu_key(const std::string& file, int layer) {
  using yamlio::MapReader;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) return {SourceLocation{file, 0, 0}, ""};
  MapReader top(yamlio::load_file(file));
  if (layer < 0) {
    if (auto n = top.optional("gpu")) return {n->where(), n->path()};
  } else if (auto layers = top.optional("layers")) {
    const auto items = layers->items();
    if (static_cast<std::size_t>(layer) < items.size()) {
      MapReader l(items[static_cast<std::size_t>(layer)]);
      if (auto n = l.optional("gpu")) return {n->where(), n->path()};
    }
  }
  return {SourceLocation{file, 0, 0}, ""};
}

/// Never a silent mix of two machines: a calibration (or a layer profile) of another GPU family than the
/// cluster's is an error, at the line that names the GPU.
void check_gpu(const Calibration& cal, const Scenario& sc) {
  const std::string want = gpu_family(sc.cluster.gpu.name);
  auto check = [&](const std::string& measured, const std::string& what, int layer) {
    if (measured.empty()) return;
    const std::string got = gpu_family(measured);
    if (!want.empty() && !got.empty() && got != want) {
      auto [where, key] = gpu_key(cal.source_file, layer);
      throw InputError(where, key,
                       fmt::format("{} measured on '{}', but cluster '{}' has '{}'; use a cluster of that GPU "
                                   "(dlscale-calibrate writes one) or leave out --calibration",
                                   what, measured, sc.cluster.name, sc.cluster.gpu.name));
    }
  };
  check(cal.gpu, "the calibration was", -1);
  for (std::size_t i = 0; i < cal.layers.size(); ++i)
    check(cal.layers[i].gpu, fmt::format("the {} layer times were", cal.layers[i].model), static_cast<int>(i));
}

/// The calibration's per-layer times where it measured the layer, the compute model's (scaled by the
/// framework's compute efficiency, as Predictor scales modelled times) where it did not.
void apply_layer_times(const Calibration& cal, Scenario& sc, CalibrationUse& use) {
  const std::string precision(to_string(sc.compute.precision));
  std::size_t matched = 0;
  const std::optional<LayerTimes> measured = measured_layer_times(cal, sc.network, sc.batch_per_gpu, precision, &matched);
  if (measured && matched > 0) {
    LayerTimes full = estimate_layer_times(sc.network, sc.cluster.gpu, sc.batch_per_gpu, sc.compute);
    const double eff = sc.strategy.compute_efficiency;
    for (std::size_t i = 0; i < full.forward.size(); ++i) {
      full.update[i] = full.update[i] / eff;
      const bool f = measured->forward[i] > Seconds{}, b = measured->backward[i] > Seconds{};
      full.forward[i] = f ? measured->forward[i] : full.forward[i] / eff;
      full.backward[i] = b ? measured->backward[i] : full.backward[i] / eff;
      if (!f || !b) use.roofline_layers.push_back(sc.network.layers[i].name);
    }
    sc.measured_layers = std::move(full);
    use.layer_times = true;
  } else if (!cal.layers.empty()) {
    std::string have;
    for (const auto& lp : cal.layers)
      have += fmt::format("{}{} batch {} {}", have.empty() ? "" : ", ", lp.model, lp.batch, lp.precision);
    use.warnings.push_back(fmt::format("{}: no layer times for {} at batch {} ({}) (it has: {}); using {}", cal.source_file,
                                       sc.network.name, sc.batch_per_gpu, precision, have,
                                       sc.profile ? "the profile" : "the roofline"));
  }
}

}  // namespace

CalibrationUse apply_calibration(Scenario& sc, std::shared_ptr<const Calibration> cal) {
  CalibrationUse use;
  if (cal) {
    check_gpu(*cal, sc);
    if (cal->gpu.empty())
      use.warnings.push_back(fmt::format("{}: the calibration does not name its GPU; assuming it is the cluster's ({})",
                                         cal->source_file, sc.cluster.gpu.name));
    apply_layer_times(*cal, sc, use);
    // host-to-GPU copies: the curve of the memory the framework copies from, at one GPU's batch
    const TransferKind h2d_kind = sc.strategy.pinned_memory ? TransferKind::h2d_pinned : TransferKind::h2d_pageable;
    if (const TransferCurve* h2d = cal->find_transfer(h2d_kind)) {
      (sc.strategy.pinned_memory ? sc.cluster.h2d_pinned : sc.cluster.h2d_pageable) = transfer_bandwidth(*h2d, input_per_gpu(sc));
      use.h2d = h2d_kind;
    }
    if (cal->storage) {
      if (cal->storage->page_cache) sc.cluster.page_cache = *cal->storage->page_cache;
      if (cal->storage->direct) sc.cluster.disk = *cal->storage->direct;
      use.storage = true;
    }
  }
  use.fallback = sc.collectives ? sc.collectives : make_collective_model(sc.cluster);
  if (cal && !cal->collectives.empty()) {
    use.collectives = std::make_shared<const CalibratedCollectiveModel>(cal, use.fallback);
    sc.collectives = use.collectives;
  }
  return use;
}

}  // namespace dlscale
