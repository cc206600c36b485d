// A neural network as the performance model sees it: its learnable layers, in order from the
// input side (layer 1) to the output side (layer L), with their sizes and work per sample.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dlscale/units.hpp"

namespace dlscale {

enum class LayerKind {
  conv,
  linear,
  batchnorm,
  layernorm,
  embedding,
  attention,  // fused attention projections (q, k, v, output) of a transformer block
  other
};

std::string_view to_string(LayerKind k) noexcept;
/// Throws UnitError-free std::invalid_argument on an unknown name; the YAML layer adds the location.
LayerKind layer_kind_from_string(std::string_view name);

struct Layer {
  std::string name;
  LayerKind kind = LayerKind::other;
  std::int64_t params = 0;                  // learnable parameters (weights + biases)
  double macs_per_sample = 0.0;             // multiply-accumulates of the forward pass (docs/models.md)
  double forward_flops_per_sample = 0.0;    // FLOPs, a multiply-add counted as 2 FLOPs (= 2 × MACs)
  double activation_bytes_per_sample = 0.0; // bytes of the layer's output kept for backward (fp32)
  std::vector<std::int64_t> output_shape;   // per sample, e.g. {64, 112, 112}
};

struct Network {
  std::string name;
  std::string description;
  std::string input_kind = "image";         // "image" (decoded fp32) or "tokens" (int32 token ids)
  std::vector<std::int64_t> input_shape;    // per sample, e.g. {3, 224, 224}, or {384} tokens
  Bytes input_bytes_per_sample{};           // bytes fed to the GPU per sample (decoded fp32 image, 4 B per token id)
  std::vector<Layer> layers;                // learnable layers, input side first

  [[nodiscard]] std::int64_t total_params() const noexcept;
  [[nodiscard]] double total_forward_flops_per_sample() const noexcept;
  [[nodiscard]] double total_macs_per_sample() const noexcept;
  [[nodiscard]] double total_activation_bytes_per_sample() const noexcept;
  /// Bytes of one gradient of layer i at the given bytes per element.
  [[nodiscard]] static Bytes gradient_bytes(const Layer& l, double bytes_per_element = 4.0) noexcept {
    return bytes(static_cast<double>(l.params) * bytes_per_element);
  }
};

}  // namespace dlscale
