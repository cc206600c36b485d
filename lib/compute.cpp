// Roofline estimate of per-layer compute time (see include/dlscale/compute.hpp).
#include "dlscale/compute.hpp"

#include <numeric>

namespace dlscale {
namespace {
Seconds sum(const std::vector<Seconds>& v) { return std::accumulate(v.begin(), v.end(), Seconds{}); }

double flop_efficiency(LayerKind k, const ComputeOptions& o) {
  switch (k) {
    case LayerKind::conv: return o.conv_efficiency;
    case LayerKind::linear:
    case LayerKind::attention:
    case LayerKind::embedding: return o.gemm_efficiency;
    default: return o.memory_efficiency;
  }
}
}  // namespace

Seconds LayerTimes::total_forward() const noexcept { return sum(forward); }
Seconds LayerTimes::total_backward() const noexcept { return sum(backward); }
Seconds LayerTimes::total_update() const noexcept { return sum(update); }

LayerTimes estimate_layer_times(const Network& net, const GpuSpec& gpu, int batch, const ComputeOptions& opt) {
  LayerTimes t;
  const std::size_t L = net.layers.size();
  t.forward.resize(L);
  t.backward.resize(L);
  t.update.resize(L);
  const FlopsPerSecond peak = gpu.peak(opt.precision);
  const BytesPerSecond mem = gpu.memory_bandwidth * opt.memory_efficiency;
  const double act_scale = opt.precision == Precision::fp16 ? 0.5 : 1.0;
  // SGD update traffic per parameter, fp32: read weight + gradient, write weight, read+write each
  // optimiser-state word.
  const double update_bytes_per_param = 4.0 * (3.0 + 2.0 * opt.optimizer_state_words);
  for (std::size_t i = 0; i < L; ++i) {
    const Layer& l = net.layers[i];
    const Flops work = flops(l.forward_flops_per_sample * batch);
    const Seconds compute = work / (peak * flop_efficiency(l.kind, opt));
    // read input + write output activations: ~2 × the output's bytes
    const Seconds memory = bytes(2.0 * l.activation_bytes_per_sample * act_scale * batch) / mem;
    t.forward[i] = max(compute, memory);
    t.backward[i] = t.forward[i] * opt.backward_to_forward;
    t.update[i] = bytes(static_cast<double>(l.params) * update_bytes_per_param) / mem;
  }
  return t;
}

LayerTimes spread_phase_totals(const LayerTimes& modelled, Seconds forward, Seconds backward, Seconds update) {
  auto spread = [](const std::vector<Seconds>& shape, Seconds total) {
    std::vector<Seconds> out(shape.size());
    const Seconds s = sum(shape);
    for (std::size_t i = 0; i < shape.size(); ++i)
      out[i] = s > Seconds{} ? total * (shape[i] / s) : total / static_cast<double>(shape.size());
    return out;
  };
  return LayerTimes{spread(modelled.forward, forward), spread(modelled.backward, backward),
                    spread(modelled.update, update)};
}

}  // namespace dlscale
