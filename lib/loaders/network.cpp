// Network files: the input and the layers (docs/input-formats.md, "Network").
#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "dlscale/io.hpp"
#include "io/yaml_reader.hpp"

namespace dlscale {
using yamlio::MapReader;
using yamlio::Node;

// ---- networks ---------------------------------------------------------------------------------------
namespace {
/// `input: {kind, shape, bytes_per_sample}`: what one sample is.
void read_network_input(const Node& node, Network& net) {
  MapReader in(node);
  if (auto n = in.optional("kind")) net.input_kind = n->choice({"image", "tokens"});
  {
    const Node shape = in.required("shape");
    net.input_shape = shape.integer_list();
    for (auto d : net.input_shape)
      if (d <= 0) shape.fail("every dimension of a shape must be positive");
  }
  net.input_bytes_per_sample = in.required("bytes_per_sample").bytes();
  in.finish();
}

/// A shape: every dimension positive.
std::vector<std::int64_t> positive_shape(const Node& n) {
  auto v = n.integer_list();
  for (auto d : v)
    if (d <= 0) n.fail("every dimension of a shape must be positive");
  return v;
}

/// `[height, width]`, each from 1 to 2^20.
void read_pair(const Node& n, int& a, int& b) {
  const auto v = n.integer_list();
  if (v.size() != 2 || v[0] < 1 || v[1] < 1 || v[0] > 1 << 20 || v[1] > 1 << 20)
    n.fail("expected two positive whole numbers [height, width]");
  a = static_cast<int>(v[0]);
  b = static_cast<int>(v[1]);
}

/// A layer's `kind` and what one sample costs it: params, forward_flops, macs, activation_bytes.
void read_layer_costs(MapReader& l, Layer& layer) {
  const Node kind_node = l.required("kind");
  try {
    layer.kind = layer_kind_from_string(kind_node.scalar());
  } catch (const std::invalid_argument& e) {
    kind_node.fail(e.what());
  }
  {
    const Node p = l.required("params");
    layer.params = p.non_negative_integer();
    if (is_parameter_free(layer.kind) && layer.params != 0)
      p.fail(fmt::format("a {} has no parameters (params: 0)", to_string(layer.kind)));
  }
  {
    const Node f = l.required("forward_flops");
    layer.forward_flops_per_sample = f.number();
    if (layer.forward_flops_per_sample < 0) f.fail("must not be negative");
  }
  if (auto n = l.optional("macs")) {
    layer.macs_per_sample = n->number();
    if (layer.macs_per_sample < 0) n->fail("must not be negative");
  } else {
    layer.macs_per_sample = layer.forward_flops_per_sample / 2.0;  // a multiply-add = 2 FLOPs
  }
  if (auto n = l.optional("activation_bytes")) {
    layer.activation_bytes_per_sample = in_bytes(n->bytes());
    if (layer.activation_bytes_per_sample < 0) n->fail("must not be negative");
  }
}

/// Multi-head latent attention's sizes (Layer::kv_lora): head_dim, v_head_dim, q_lora, kv_lora, qk_rope, all on an
/// attention layer, kv_lora with the others but q_lora (0: a direct query projection).
void read_mla(MapReader& l, Layer& layer) {
  auto size = [&](const char* key, int& to) {
    auto n = l.optional(key);
    if (!n) return std::optional<Node>{};
    if (layer.kind != LayerKind::attention) n->fail(fmt::format("only an attention layer has '{}'", key));
    to = n->int_at_most(1 << 20);
    if (to < 1) n->fail("must be a positive whole number");
    return n;
  };
  size("head_dim", layer.head_dim);
  size("v_head_dim", layer.v_head_dim);
  const auto q = size("q_lora", layer.q_lora), rope = size("qk_rope", layer.qk_rope);
  const auto kv = size("kv_lora", layer.kv_lora);
  if ((q || rope) && !kv) (q ? *q : *rope).fail("multi-head latent attention needs 'kv_lora'");
  if (kv && (!rope || layer.head_dim <= layer.qk_rope))
    kv->fail("multi-head latent attention needs 'qk_rope' and a 'head_dim' larger than it");
}

/// A layer's geometry: its shapes, kernel, stride, groups, heads, kv_heads, hidden.
void read_layer_geometry(MapReader& l, Layer& layer) {
  if (auto n = l.optional("output_shape")) layer.output_shape = positive_shape(*n);
  if (auto n = l.optional("input_shape")) layer.input_shape = positive_shape(*n);
  if (auto n = l.optional("kernel")) read_pair(*n, layer.kernel_h, layer.kernel_w);
  if (auto n = l.optional("stride")) read_pair(*n, layer.stride_h, layer.stride_w);
  if (auto n = l.optional("groups")) {
    layer.groups = n->int_at_most(1 << 20);
    if (layer.groups < 1) n->fail("must be a positive whole number");
  }
  if (auto n = l.optional("heads")) {
    layer.heads = n->int_at_most(1 << 20);
    if (layer.heads < 1) n->fail("must be a positive whole number");
  }
  if (auto n = l.optional("kv_heads")) {
    layer.kv_heads = n->int_at_most(1 << 20);
    if (layer.kv_heads < 1) n->fail("must be a positive whole number");
    if (layer.heads > 0 && layer.heads % layer.kv_heads != 0)
      n->fail(fmt::format("{} key/value heads do not divide {} heads", layer.kv_heads, layer.heads));
  }
  if (auto n = l.optional("hidden")) {
    layer.hidden = n->non_negative_integer();
    if (layer.hidden < 1) n->fail("must be a positive whole number");
  }
  read_mla(l, layer);
  const auto experts = l.optional("experts"), top_k = l.optional("top_k");  // a mixture of experts (docs/model.md, P16)
  if (top_k && !experts) top_k->fail("top_k needs 'experts' (a mixture of experts)");
  if (experts) {
    layer.experts = experts->int_at_most(1 << 20);
    if (layer.experts < 1 || layer.hidden < 1) experts->fail("experts: a positive whole number, on an MLP (with 'hidden')");
    if (!top_k) experts->fail("a mixture of experts needs 'top_k'");
    layer.top_k = top_k->int_at_most(layer.experts);
    if (layer.top_k < 1) top_k->fail(fmt::format("top_k must lie in [1, {}]", layer.experts));
  }
}

/// The switches of some kinds only (gated, causal, rotary, rms, probs_dropout); returns a concat's `branches`
/// (0 when not given).
int read_layer_flags(MapReader& l, Layer& layer) {
  if (auto n = l.optional("gated")) layer.gated = n->boolean();
  if (auto n = l.optional("causal")) {
    if (layer.kind != LayerKind::attention) n->fail("only an attention layer has a causal mask");
    layer.causal = n->boolean();
  }
  if (auto n = l.optional("window")) {  // eq. K25: a sliding window over a causal mask
    if (layer.kind != LayerKind::attention || !layer.causal) n->fail("only a causal attention layer has a sliding window");
    layer.window = n->non_negative_integer();
    if (layer.window < 1) n->fail("must be a positive whole number");
  }
  if (auto n = l.optional("rotary")) {
    if (layer.kind != LayerKind::attention) n->fail("only an attention layer rotates its queries and keys");
    layer.rotary = n->boolean();
  }
  if (auto n = l.optional("rms")) {
    if (layer.kind != LayerKind::layernorm) n->fail("only a layernorm layer can be an RMSNorm");
    layer.rms = n->boolean();
  }
  if (auto n = l.optional("probs_dropout")) {
    if (layer.kind != LayerKind::attention) n->fail("only an attention layer has probabilities to drop");
    layer.probs_dropout = n->boolean();
  }
  int branches = 0;
  if (auto n = l.optional("branches")) {
    if (layer.kind != LayerKind::concat) n->fail("only a concat joins branches");
    branches = n->int_at_most(1 << 20);
    if (branches < 1) n->fail("must be a positive whole number");
  }
  return branches;
}

/// A parameter-free entry, as the operator folded into the learnable layer before it.
Operator as_operator(Layer&& layer, int branches) {
  Operator o;
  o.name = std::move(layer.name);
  o.kind = layer.kind;
  o.input_shape = std::move(layer.input_shape);
  o.output_shape = std::move(layer.output_shape);
  o.activation_bytes_per_sample = layer.activation_bytes_per_sample;
  o.kernel_h = layer.kernel_h;
  o.kernel_w = layer.kernel_w;
  o.stride_h = layer.stride_h;
  o.stride_w = layer.stride_w;
  o.branches = branches;
  return o;
}

Network read_network(const Node& root) {
  MapReader m(root);
  Network net;
  net.name = m.required("name").scalar();
  if (auto n = m.optional("description")) net.description = n->scalar();
  read_network_input(m.required("input"), net);
  std::vector<Operator> leading_ops;  // parameter-free entries before the first learnable layer
  for (const auto& item : m.required("layers").items()) {
    MapReader l(item);
    Layer layer;
    layer.name = l.required("name").scalar();
    read_layer_costs(l, layer);
    read_layer_geometry(l, layer);
    const int branches = read_layer_flags(l, layer);
    l.finish();
    if (is_parameter_free(layer.kind)) {
      // Folded into the learnable layer before it: its backward runs before that layer's, so that layer's
      // gradient is ready only after both (docs/compute-model.md).
      (net.layers.empty() ? leading_ops : net.layers.back().ops).push_back(as_operator(std::move(layer), branches));
      continue;
    }
    if (net.layers.empty()) layer.ops = std::move(leading_ops);
    net.layers.push_back(std::move(layer));
  }
  if (net.layers.empty()) m.node().fail("a model needs at least one learnable layer");
  m.finish();
  return net;
}
}  // namespace

Network load_network(const std::filesystem::path& file) { return read_network(yamlio::load_file(file)); }
Network parse_network(const std::string& yaml_text, const std::string& display_name) {
  return read_network(yamlio::load_string(yaml_text, display_name));
}

}  // namespace dlscale
