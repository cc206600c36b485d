// Per-GPU memory of a training step (include/dlscale/memory.hpp).
#include "dlscale/memory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "dlscale/format.hpp"

namespace dlscale {

MemoryEstimate estimate_training_memory(const Network& net, int batch, const ComputeOptions& opt, Bytes reserved) {
  if (batch < 1) throw std::invalid_argument("estimate_training_memory: the batch must be at least 1");
  const double p = static_cast<double>(net.total_params());
  const bool mixed = is_mixed(opt.precision);
  MemoryEstimate m;
  m.weights = bytes(p * (mixed ? 4.0 + 2.0 : 4.0));
  m.gradients = bytes(p * gradient_bytes_per_element(opt.precision));
  m.optimizer_state = bytes(p * 4.0 * optimizer_state_words(opt.optimizer));
  // Every tensor a layer or a parameter-free operator keeps for backward (one micro-batch).
  m.activations = bytes(net.total_kept_bytes_per_sample() * (activation_bytes_per_element(opt.precision) / 4.0) * batch);
  m.input = net.input_bytes_per_sample * static_cast<double>(batch);
  m.reserved = reserved;
  // The caching allocator rounds blocks up and cannot reuse freed blocks of other sizes: slack grows with
  // what is allocated and freed every step (activations and gradients). docs/compute-model.md.
  m.allocator_slack = (m.activations + m.gradients) * kAllocatorSlack;
  return m;
}

MemoryFit check_memory_fit(const Network& net, const GpuSpec& gpu, int batch, const ComputeOptions& opt, Bytes reserved) {
  MemoryFit f;
  f.need = estimate_training_memory(net, batch, opt, reserved);
  f.available = gpu.memory_size;
  f.fits = f.need.total() <= f.available;
  // Memory grows linearly with the batch: fixed + batch × per-sample.
  const MemoryEstimate one = estimate_training_memory(net, 1, opt, reserved);
  const Bytes per_sample = one.activations * (1.0 + kAllocatorSlack) + one.input;
  const Bytes fixed = one.total() - per_sample;
  // The quotient can pass what an int holds (80 GB at 1 B per sample: 8·10^10); converting such a double
  // is undefined behaviour, so it is clamped first.
  f.largest_batch = f.available >= fixed && per_sample > Bytes{}
                        ? static_cast<int>(std::min(std::floor((f.available - fixed) / per_sample),
                                                    static_cast<double>(std::numeric_limits<int>::max())))
                        : 0;
  if (!f.fits)
    f.warning = fmt::format(
        "warning: {} at batch {} needs about {} per GPU ({} activations, {} weights, gradients and optimiser state), "
        "more than the {} of a {}; {}",
        net.name, batch, f.need.total(), f.need.activations, f.need.weights + f.need.gradients + f.need.optimizer_state,
        f.available, gpu.name,
        f.largest_batch > 0 ? fmt::format("the largest batch that fits is about {}", f.largest_batch)
                            : std::string("not even batch 1 fits without sharding or offloading the model"));
  return f;
}

}  // namespace dlscale
