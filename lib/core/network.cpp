// A network's layers (include/dlscale/network.hpp; the layer kinds' names are the table beside the type).
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

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

std::vector<int> transformer_blocks(const Network& net) {
  // A layer of block N is named "PREFIX.N.REST" (the `repeat` operation's naming): the first dot-separated
  // field that is a whole number and is followed by another field gives N; blocks are renumbered in order.
  // One pass over each name's characters: a predictor asks for this several times per network, and
  // find / find_first_not_of's library calls per field were a tenth of plan's time (BM_PlanLlama70b).
  std::vector<int> out(net.layers.size(), -1);
  std::string_view last_key;  // a view into the previous block's layer name (the network outlives the loop)
  int next = -1;
  for (std::size_t i = 0; i < net.layers.size(); ++i) {
    const std::string_view name = net.layers[i].name;
    // A layer of the block before it ("PREFIX.N." again): its first whole-number field is that block's, since the
    // fields before it in the key hold none (the parse below stopped at the first). Most layers end here.
    if (!last_key.empty() && name.size() > last_key.size() && name[last_key.size()] == '.' && name.starts_with(last_key)) {
      out[i] = next;
      continue;
    }
    std::size_t start = 0;  // the current field's first character
    bool digits = true;     // the current field so far is digits only
    for (std::size_t p = 0; p < name.size(); ++p) {
      const char c = name[p];
      if (c != '.') {
        digits = digits && c >= '0' && c <= '9';
        continue;
      }
      if (digits && p > start) {
        const std::string_view key = name.substr(0, p);
        if (key != last_key) {
          last_key = key;
          ++next;
        }
        out[i] = next;
        break;
      }
      start = p + 1;
      digits = true;
    }
  }
  return out;
}

}  // namespace dlscale
