// A network's layers (include/dlscale/network.hpp; the layer kinds' names are the table beside the type).
#include <stdexcept>
#include <string>

#include "dlscale/network.hpp"

namespace dlscale {

LayerKind layer_kind_from_string(std::string_view name) {
  if (const auto k = enum_from_string<LayerKind>(name)) return *k;
  throw std::invalid_argument("unknown layer kind '" + std::string(name) +
                              "' (expected conv, linear, batchnorm, layernorm, embedding, attention, other, or a "
                              "parameter-free relu, gelu, silu, tanh, dropout, maxpool, avgpool, add, concat, lrn, reshape)");
}

std::int64_t Network::total_params() const noexcept {
  std::int64_t n = 0;
  for (const auto& l : layers) n += l.params;
  return n;
}
double Network::total_forward_flops_per_sample() const noexcept {
  double f = 0;
  for (const auto& l : layers) f += l.forward_flops_per_sample;
  return f;
}

}  // namespace dlscale
