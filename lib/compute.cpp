// Roofline estimate of per-layer compute time (see include/dlscale/compute.hpp, docs/compute-model.md).
#include "dlscale/compute.hpp"

#include <numeric>
#include <stdexcept>

namespace dlscale {
namespace {
Seconds sum(const std::vector<Seconds>& v) { return std::accumulate(v.begin(), v.end(), Seconds{}); }

bool is_matmul(LayerKind k) {
  return k == LayerKind::conv || k == LayerKind::linear || k == LayerKind::attention;
}

/// Whether fp16 multiply-adds run on tensor cores: Volta (sm_70) and newer have them; Pascal's fp16 is
/// the vector unit's (P100: 2x fp32, P40: 1x).
bool has_tensor_cores(const GpuSpec& gpu) { return gpu.sm_version >= 70; }

/// The FLOP/s a layer's multiply-adds run at: the precision's peak (tensor cores for fp16, TF32 when
/// enabled) times the kind's efficiency, the tensor-core one where the work runs on tensor cores.
/// Memory-bound kinds have no FLOP term (zero).
FlopsPerSecond attainable_flops(LayerKind k, const GpuSpec& gpu, const ComputeOptions& o) {
  if (!is_matmul(k)) return FlopsPerSecond{};
  FlopsPerSecond peak = gpu.peak(o.precision);
  bool tensor = o.precision == Precision::fp16 && has_tensor_cores(gpu);
  if (o.precision == Precision::fp32 && o.tf32 && gpu.peak_tf32 > FlopsPerSecond{}) {
    peak = gpu.peak_tf32;
    tensor = true;  // TF32 exists only on tensor cores
  }
  const double e = k == LayerKind::conv ? (tensor ? o.tensor_conv_efficiency : o.conv_efficiency)
                                        : (tensor ? o.tensor_gemm_efficiency : o.gemm_efficiency);
  return peak * e;
}

/// Roofline: the larger of the compute time and the memory time (Williams, Waterman & Patterson 2009).
Seconds roofline(Flops work, FlopsPerSecond rate, Bytes traffic, BytesPerSecond bandwidth) {
  const Seconds compute = rate > FlopsPerSecond{} ? work / rate : Seconds{};
  return max(compute, traffic / bandwidth);
}
}  // namespace

Seconds LayerTimes::total_forward() const noexcept { return sum(forward); }
Seconds LayerTimes::total_backward() const noexcept { return sum(backward); }
Seconds LayerTimes::total_update() const noexcept { return sum(update); }

double activation_bytes_per_element(Precision p) noexcept { return p == Precision::fp16 ? 2.0 : 4.0; }
double gradient_bytes_per_element(Precision p) noexcept { return p == Precision::fp16 ? 2.0 : 4.0; }

double update_bytes_per_param(const ComputeOptions& opt) noexcept {
  const double state = 8.0 * opt.optimizer_state_words;  // read + write each fp32 state word
  if (opt.precision == Precision::fp16)
    return 4.0 /*read fp32 master*/ + 2.0 /*read fp16 gradient*/ + 4.0 /*write master*/ + 2.0 /*write fp16 copy*/ + state;
  return 4.0 /*read weight*/ + 4.0 /*read gradient*/ + 4.0 /*write weight*/ + state;
}

LayerTimes estimate_layer_times(const Network& net, const GpuSpec& gpu, int batch, const ComputeOptions& opt) {
  if (batch < 1) throw std::invalid_argument("estimate_layer_times: the batch must be at least 1");
  LayerTimes t;
  const std::size_t L = net.layers.size();
  t.forward.resize(L);
  t.backward.resize(L);
  t.update.resize(L);
  const BytesPerSecond mem = gpu.memory_bandwidth * opt.memory_efficiency;
  // The stored activations are fp32 figures; mixed precision keeps them in fp16.
  const double act_scale = activation_bytes_per_element(opt.precision) / 4.0;
  const double weight_bytes = activation_bytes_per_element(opt.precision);
  const double update_bytes = update_bytes_per_param(opt);
  for (std::size_t i = 0; i < L; ++i) {
    const Layer& l = net.layers[i];
    const Flops work = flops(l.forward_flops_per_sample * batch);
    // Memory traffic of the forward pass: read the input and write the output (≈ 2 × the output's
    // bytes) for every sample, and read the weights once.
    const Bytes traffic = bytes(2.0 * l.activation_bytes_per_sample * act_scale * batch +
                                static_cast<double>(l.params) * weight_bytes);
    t.forward[i] = roofline(work, attainable_flops(l.kind, gpu, opt), traffic, mem);
    // Backward: weight gradient + input gradient, each about one forward; layer 1 (its input is the
    // data) and embeddings (their input is token ids) need no input gradient.
    const bool needs_input_gradient = i > 0 && l.kind != LayerKind::embedding;
    t.backward[i] = t.forward[i] * (needs_input_gradient ? opt.backward_to_forward : opt.backward_to_forward / 2.0);
    // Update: one memory-bound pass over the parameters and the optimiser state.
    t.update[i] = bytes(static_cast<double>(l.params) * update_bytes) / mem;
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
