// The architecture generator: models/arch/NAME.yaml (a compact description) -> Network.
// Language and counting conventions: docs/models.md. Every error names file:line:col and the key.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "dlscale/equations.hpp"
#include "dlscale/error.hpp"
#include "dlscale/io.hpp"
#include "dlscale/zoo.hpp"
#include "io/files.hpp"
#include "io/yaml_reader.hpp"

namespace dlscale {
namespace fs = std::filesystem;
using yamlio::MapReader;
using yamlio::Node;

namespace {
using Shape = std::vector<std::int64_t>;

constexpr std::int64_t kBytesPerElement = 4;  // fp32 activations, int32 token ids

/// A tensor per sample as it flows through the description: its shape, and whether it still holds
/// token ids (before the first embedding).
struct Tensor {
  Shape shape;
  bool token_ids = false;
};

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

/// Multiplication that reports an overflow as an input error at `where` (sizes come from the user).
std::int64_t mul(const Node& where, std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r) || r > (std::int64_t{1} << 53))
    where.fail("the sizes here are too large to count exactly");
  return r;
}
std::int64_t mul(const Node& where, std::initializer_list<std::int64_t> xs) {
  std::int64_t r = 1;
  for (auto x : xs) r = mul(where, r, x);
  return r;
}
std::int64_t elements(const Node& where, const Shape& s) {
  std::int64_t r = 1;
  for (auto d : s) r = mul(where, r, d);
  return r;
}

std::int64_t positive(const Node& n) {
  const auto v = n.integer();
  if (v <= 0) n.fail(fmt::format("must be a positive whole number, got {}", v));
  if (v > (std::int64_t{1} << 31)) n.fail(fmt::format("{} is larger than any size this generator accepts (2^31)", v));
  return v;
}

/// A size given as one number or as [height, width].
std::array<std::int64_t, 2> pair(const Node& n, bool allow_zero) {
  auto one = [&](const Node& x) { return allow_zero ? x.non_negative_integer() : positive(x); };
  if (n.is_scalar()) {
    const auto v = one(n);
    return {v, v};
  }
  if (n.is_sequence()) {
    const auto items = n.items();
    if (items.size() == 2) return {one(items[0]), one(items[1])};
  }
  n.fail("expected a number or a list of two numbers [height, width]");
}

constexpr const char* kKnownKinds =
    "conv, linear, batchnorm, layernorm, rmsnorm, embedding, attention, mlp, maxpool, avgpool, adaptive_avgpool, "
    "global_avgpool, flatten, first_token, relu, gelu, silu, tanh, dropout, lrn, residual, concat, block, repeat, decoder";

class Generator {
 public:
  std::vector<Layer> layers;

  Tensor run_list(const Node& list, Tensor in, const std::string& prefix) {
    for (const auto& item : list.items()) in = run_item(item, std::move(in), prefix);
    return in;
  }

  bool token_model = false;  // the input is token ids: a transformer, whose residual additions write new tensors

 private:
  std::set<std::string> names_;
  std::map<std::string, int> op_names_;
  std::vector<Operator> pending_ops_;

  static std::string join(const std::string& prefix, const std::string& name) {
    return prefix.empty() ? name : prefix + "." + name;
  }

  Layer& add(const Node& name_node, const std::string& prefix, LayerKind kind, std::int64_t params, std::int64_t macs,
             std::int64_t activation_elements, Shape out, const Shape& in) {
    const std::string raw = name_node.scalar();
    if (raw.empty()) name_node.fail("a layer name must not be empty");
    const std::string name = join(prefix, raw);
    if (!names_.insert(name).second) name_node.fail(fmt::format("layer name '{}' is used twice", name));
    Layer l;
    l.name = name;
    l.kind = kind;
    l.params = params;
    l.macs_per_sample = static_cast<double>(macs);
    l.forward_flops_per_sample = 2.0 * static_cast<double>(macs);
    l.activation_bytes_per_sample = static_cast<double>(mul(name_node, activation_elements, kBytesPerElement));
    l.output_shape = std::move(out);
    l.input_shape = in;
    l.ops = std::move(pending_ops_);
    pending_ops_.clear();
    layers.push_back(std::move(l));
    return layers.back();
  }

  /// A parameter-free operator: attached to the learnable layer before it (or, before the first one, to
  /// the first). `kept_bytes`: what it keeps for backward that no layer counts (fp32 figure).
  void op(const std::string& prefix, LayerKind kind, const Shape& in, const Shape& out, std::int64_t kept_bytes,
          std::array<std::int64_t, 2> window = {1, 1}, std::array<std::int64_t, 2> stride = {1, 1}) {
    std::string base = join(prefix, std::string(to_string(kind)));
    const int n = op_names_[base]++;
    Operator o;
    o.name = n == 0 ? base : fmt::format("{}_{}", base, n);
    o.kind = kind;
    o.input_shape = in;
    o.output_shape = out;
    o.activation_bytes_per_sample = static_cast<double>(kept_bytes);
    o.kernel_h = static_cast<int>(window[0]);
    o.kernel_w = static_cast<int>(window[1]);
    o.stride_h = static_cast<int>(stride[0]);
    o.stride_w = static_cast<int>(stride[1]);
    if (layers.empty()) pending_ops_.push_back(std::move(o));
    else layers.back().ops.push_back(std::move(o));
  }

  static void need_activations(const Node& at, const Tensor& in, std::string_view what) {
    if (in.token_ids)
      at.fail(fmt::format("{} needs activations, but the input still holds token ids: add an embedding first", what));
  }
  static void need_image(const Node& at, const Tensor& in, std::string_view what) {
    need_activations(at, in, what);
    if (in.shape.size() != 3)
      at.fail(fmt::format("{} needs a [channels, height, width] input, got {}", what, shape_str(in.shape)));
  }

  Tensor run_item(const Node& item, Tensor in, const std::string& prefix) {
    std::string kind;
    std::optional<Node> args;
    if (item.is_scalar()) {
      kind = item.scalar();
    } else if (item.is_map() && item.size() == 1) {
      MapReader m(item);
      auto e = m.entries();
      kind = e.front().first;
      args = e.front().second;
    } else {
      item.fail("a layer is a kind (e.g. 'flatten') or a mapping of one kind to its settings (e.g. 'conv: {...}')");
    }
    const Node at = args ? *args : item;
    if (kind == "conv") return conv(req(args, item, kind), std::move(in), prefix);
    if (kind == "linear") return linear(req(args, item, kind), std::move(in), prefix);
    if (kind == "batchnorm") return batchnorm(req(args, item, kind), std::move(in), prefix);
    if (kind == "layernorm" || kind == "rmsnorm") return norm(req(args, item, kind), std::move(in), prefix, kind == "layernorm");
    if (kind == "embedding") return embedding(req(args, item, kind), std::move(in), prefix);
    if (kind == "attention") return attention(req(args, item, kind), std::move(in), prefix);
    if (kind == "mlp") return mlp(req(args, item, kind), std::move(in), prefix);
    if (kind == "maxpool" || kind == "avgpool") return pool(req(args, item, kind), std::move(in), kind, prefix);
    if (kind == "adaptive_avgpool") return adaptive_pool(req(args, item, kind), std::move(in), prefix);
    if (kind == "global_avgpool" || kind == "flatten" || kind == "first_token" || kind == "relu" || kind == "gelu" ||
        kind == "silu" || kind == "tanh" || kind == "dropout" || kind == "lrn") {
      if (args && !(kind == "dropout" && args->is_scalar())) at.fail(fmt::format("'{}' takes no settings", kind));
      if (args) {
        const double p = args->number();
        if (p < 0 || p >= 1) args->fail("a dropout probability lies in [0, 1)");
      }
      return shape_only(at, std::move(in), kind, prefix);
    }
    if (kind == "residual") return residual(req(args, item, kind), std::move(in), prefix);
    if (kind == "concat") return concat(req(args, item, kind), std::move(in), prefix);
    if (kind == "block") return block(req(args, item, kind), std::move(in), prefix);
    if (kind == "repeat") return repeat(req(args, item, kind), std::move(in), prefix);
    if (kind == "decoder") return decoder(req(args, item, kind), std::move(in), prefix);
    item.fail(fmt::format("unknown layer kind '{}' (known: {})", kind, kKnownKinds));
  }

  static Node req(const std::optional<Node>& args, const Node& item, const std::string& kind) {
    if (!args) item.fail(fmt::format("'{}' needs settings, e.g. '{}: {{...}}'", kind, kind));
    return *args;
  }

  // ---- learnable layers ---------------------------------------------------------------------------
  // conv: MACs = Ho·Wo·co·(ci/groups·kh·kw + 1 if bias) — Wei et al. (dgx2-ac922 paper) §III-B: each
  // output element costs a ci·k² dot product plus the bias term.
  Tensor conv(const Node& args, Tensor in, const std::string& prefix) {
    MapReader m(args);
    const Node name = m.required("name");
    const std::int64_t out = positive(m.required("out"));
    const Node kernel_node = m.required("kernel");
    const auto k = pair(kernel_node, false);
    std::array<std::int64_t, 2> stride{1, 1}, pad{0, 0};
    if (auto n = m.optional("stride")) stride = pair(*n, false);
    if (auto n = m.optional("pad")) pad = pair(*n, true);
    bool bias = true;
    if (auto n = m.optional("bias")) bias = n->boolean();
    std::int64_t groups = 1;
    std::optional<Node> groups_node = m.optional("groups");
    if (groups_node) groups = positive(*groups_node);
    m.finish();
    need_image(args, in, "conv");
    const std::int64_t c = in.shape[0], h = in.shape[1], w = in.shape[2];
    if (groups_node && (c % groups != 0 || out % groups != 0))
      groups_node->fail(fmt::format("{} groups must divide both the {} input and the {} output channels", groups, c, out));
    if (h + 2 * pad[0] < k[0] || w + 2 * pad[1] < k[1])
      kernel_node.fail(
          fmt::format("a {}x{} kernel does not fit the {}x{} input (padding {}x{})", k[0], k[1], h, w, pad[0], pad[1]));
    const std::int64_t ho = (h + 2 * pad[0] - k[0]) / stride[0] + 1, wo = (w + 2 * pad[1] - k[1]) / stride[1] + 1;
    const std::int64_t fan_in = mul(args, {c / groups, k[0], k[1]});
    const std::int64_t params = mul(args, out, fan_in) + (bias ? out : 0);
    const std::int64_t macs = mul(args, {out, ho, wo, fan_in + (bias ? 1 : 0)});
    Shape shape{out, ho, wo};
    Layer& l = add(name, prefix, LayerKind::conv, params, macs, elements(args, shape), shape, in.shape);
    l.kernel_h = static_cast<int>(k[0]);
    l.kernel_w = static_cast<int>(k[1]);
    l.stride_h = static_cast<int>(stride[0]);
    l.stride_w = static_cast<int>(stride[1]);
    l.groups = static_cast<int>(groups);
    return {shape, false};
  }

  // linear on the last dimension: MACs = rows·out·(in + 1 if bias), rows = elements / in (tokens).
  // `tied: NAME` shares the weight of an earlier layer (GPT-2's output projection and its token
  // embedding): no parameters of its own, its work still counted.
  Tensor linear(const Node& args, Tensor in, const std::string& prefix) {
    MapReader m(args);
    const Node name = m.required("name");
    const std::int64_t out = positive(m.required("out"));
    bool bias = true;
    if (auto n = m.optional("bias")) bias = n->boolean();
    std::optional<Node> tied = m.optional("tied");
    m.finish();
    need_activations(args, in, "linear");
    if (in.shape.empty()) args.fail("linear needs an input with at least one dimension");
    const std::int64_t fan_in = in.shape.back();
    const std::int64_t rows = elements(args, in.shape) / fan_in;
    std::int64_t params = mul(args, out, fan_in) + (bias ? out : 0);
    if (tied) {
      const std::string target = tied->scalar();
      const auto it = std::find_if(layers.begin(), layers.end(), [&](const Layer& l) { return l.name == target; });
      if (it == layers.end()) tied->fail(fmt::format("no layer named '{}' comes before this one", target));
      if (it->params != mul(args, out, fan_in))
        tied->fail(fmt::format("'{}' has {} parameters; a tied {}x{} weight needs {}", target, it->params, fan_in, out,
                               mul(args, out, fan_in)));
      if (bias) tied->fail("a tied linear layer has no bias of its own: add 'bias: false'");
      params = 0;
    }
    const std::int64_t macs = mul(args, {rows, out, fan_in + (bias ? 1 : 0)});
    Shape shape = in.shape;
    shape.back() = out;
    add(name, prefix, LayerKind::linear, params, macs, elements(args, shape), shape, in.shape);
    return {shape, false};
  }

  static Node name_of(const Node& args, std::optional<MapReader>& m) {
    if (args.is_scalar()) return args;
    m.emplace(args);
    return m->required("name");
  }

  // batchnorm over the channel dimension (the first): params 2C (gamma, beta); the scale-and-shift
  // counts as one multiply-add per element (the "+1" bias term of the paper's convention).
  Tensor batchnorm(const Node& args, Tensor in, const std::string& prefix) {
    std::optional<MapReader> m;
    const Node name = name_of(args, m);
    if (m) m->finish();
    need_activations(args, in, "batchnorm");
    if (in.shape.empty()) args.fail("batchnorm needs an input with a channel dimension");
    const std::int64_t n = elements(args, in.shape);
    add(name, prefix, LayerKind::batchnorm, 2 * in.shape[0], n, n, in.shape, in.shape);
    return in;
  }

  // layernorm (gamma, beta) or rmsnorm (gamma only) over the last dimension; kind layernorm for both.
  Tensor norm(const Node& args, Tensor in, const std::string& prefix, bool with_bias) {
    const bool rms = !with_bias;  // rmsnorm: scale only, and no mean subtracted
    std::optional<MapReader> m;
    const Node name = name_of(args, m);
    if (m) {
      if (with_bias) {
        if (auto b = m->optional("bias")) with_bias = b->boolean();
      }
      m->finish();
    }
    need_activations(args, in, with_bias ? "layernorm" : "rmsnorm");
    if (in.shape.empty()) args.fail("a norm needs an input with at least one dimension");
    const std::int64_t n = elements(args, in.shape);
    Layer& l = add(name, prefix, LayerKind::layernorm, (with_bias ? 2 : 1) * in.shape.back(), n, n, in.shape, in.shape);
    l.rms = rms;
    return in;
  }

  // embedding: a lookup (no MACs). On token ids it appends a dimension of `dim`; on activations whose
  // last dimension is `dim` it is added (position and token-type embeddings). `positions: true`
  // requires the sequence to fit the table.
  Tensor embedding(const Node& args, Tensor in, const std::string& prefix) {
    MapReader m(args);
    const Node name = m.required("name");
    const Node vocab_node = m.required("vocab");
    const std::int64_t vocab = positive(vocab_node);
    const std::int64_t dim = positive(m.required("dim"));
    bool positions = false;
    if (auto n = m.optional("positions")) positions = n->boolean();
    m.finish();
    Shape shape = in.shape;
    if (in.token_ids) {
      shape.push_back(dim);
    } else if (shape.empty() || shape.back() != dim) {
      args.fail(fmt::format("an embedding of dim {} cannot be added to a {} input (the last dimension must be {})", dim,
                            shape_str(in.shape), dim));
    }
    if (positions) {
      const std::int64_t seq =
          in.token_ids ? (in.shape.empty() ? 1 : in.shape.back()) : in.shape[in.shape.size() >= 2 ? in.shape.size() - 2 : 0];
      if (seq > vocab) vocab_node.fail(fmt::format("a sequence of {} positions does not fit a table of {}", seq, vocab));
    }
    add(name, prefix, LayerKind::embedding, mul(args, vocab, dim), 0, elements(args, shape), shape, in.shape);
    return {shape, false};
  }

  // attention: the q, k, v and output projections (4·D·D weights, 4·D biases) plus the parameter-free
  // score product Q·Kᵀ and the weighted sum A·V (S·S·D multiply-adds each per sequence), counted here
  // in full even for a causal mask. Kept for backward: q, k, v, context, output (5·S·D; a residual
  // branch ending here drops the output, drop_branch_output) and the attention probabilities (heads·S·S)
  // per sequence, with `dropout` on them the dropout's output and mask too. With kv_heads < heads
  // (grouped-query attention) k and v have width D_kv = D·kv_heads/heads: projections 2·D·D + 2·D·D_kv
  // weights (2·D + 2·D_kv biases), kept 3·S·D + 2·S·D_kv. `window: W` (causal only; Mistral's sliding window):
  // each query sees at most the W positions up to its own, and the two products count the band of eq. K25b,
  // s·(2W − 1) − W·(W − 1) pairs of D multiply-adds each in place of S·S (the same for W ≥ S); the probabilities
  // kept stay S·S (an unfused kernel computes the whole square and masks it).
  Tensor attention(const Node& args, Tensor in, const std::string& prefix) {
    MapReader m(args);
    const Node name = m.required("name");
    const Node heads_node = m.required("heads");
    const std::int64_t heads = positive(heads_node);
    bool bias = true;
    if (auto n = m.optional("bias")) bias = n->boolean();
    bool causal = false;  // the count is the same (the masked half is computed and discarded); a fused kernel skips it
    if (auto n = m.optional("causal")) causal = n->boolean();
    bool probs_dropout = false;  // dropout on the probabilities (Hugging Face's attention_probs_dropout_prob)
    if (auto n = m.optional("dropout")) {
      const double pd = n->number();
      if (!(pd >= 0 && pd < 1)) n->fail("a dropout probability lies in [0, 1)");
      probs_dropout = pd > 0;
    }
    std::int64_t kv_heads = heads;
    std::optional<Node> kv_node = m.optional("kv_heads");
    if (kv_node) kv_heads = positive(*kv_node);
    bool rotary = false;  // rotary position embedding of q and k (no parameters; Su et al. 2021)
    if (auto n = m.optional("rotary")) rotary = n->boolean();
    std::int64_t window = 0;
    const std::optional<Node> window_node = m.optional("window");
    if (window_node) window = positive(*window_node);
    const Mla mla = attention_mla(m, kv_node, bias);
    m.finish();
    if (window_node && !causal) window_node->fail("a sliding window needs a causal mask ('causal: true')");
    need_activations(args, in, "attention");
    if (in.shape.size() < 2) args.fail(fmt::format("attention needs a [sequence, width] input, got {}", shape_str(in.shape)));
    const std::int64_t d = in.shape.back(), s = in.shape[in.shape.size() - 2];
    const std::int64_t seqs = elements(args, in.shape) / mul(args, s, d);
    if (mla.kv_lora > 0 && window_node) window_node->fail("a sliding window over multi-head latent attention is not modelled");
    if (mla.kv_lora > 0) {
      Layer& l = add(name, prefix, LayerKind::attention, mla_params(args, mla, d, heads), mla_macs(args, mla, d, heads, seqs, s),
                     mla_kept(args, mla, d, heads, seqs, s), in.shape, in.shape);
      if (probs_dropout)
        l.activation_bytes_per_sample += static_cast<double>(mul(args, {seqs, heads, s, s})) * (kBytesPerElement + 1);
      l.probs_dropout = probs_dropout;
      l.heads = static_cast<int>(heads);
      l.head_dim = static_cast<int>(mla.qk_nope + mla.qk_rope);
      l.v_head_dim = static_cast<int>(mla.v_head);
      l.q_lora = static_cast<int>(mla.q_lora);
      l.kv_lora = static_cast<int>(mla.kv_lora);
      l.qk_rope = static_cast<int>(mla.qk_rope);
      l.causal = causal;
      l.rotary = rotary;
      return in;
    }
    if (d % heads != 0) heads_node.fail(fmt::format("{} heads do not divide the width {}", heads, d));
    if (heads % kv_heads != 0) kv_node->fail(fmt::format("{} key/value heads do not divide {} heads", kv_heads, heads));
    const std::int64_t dkv = d / heads * kv_heads;
    const std::int64_t proj = 2 * d + 2 * dkv;  // outputs of the q, k, v and output projections
    const std::int64_t params = mul(args, proj, d) + (bias ? proj : 0);
    if (window >= s) window = 0;  // a window as long as the sequence hides nothing (eq. K25b: the full square)
    const std::int64_t pairs = window > 0 ? eq::attention_band_pairs(s, window) : mul(args, s, s);
    const std::int64_t macs = mul(args, {seqs, s, proj, d + (bias ? 1 : 0)}) + mul(args, {2, seqs, pairs, d});
    const std::int64_t kept = mul(args, seqs, mul(args, {3, s, d}) + mul(args, {2, s, dkv}) + mul(args, {heads, s, s}));
    Layer& l = add(name, prefix, LayerKind::attention, params, macs, kept, in.shape, in.shape);
    // Unfused, a dropout on the probabilities keeps its output (the weighted sum's operand) beside the
    // softmax output and a one-byte mask: 2 x 4 + 1 B per probability instead of 4.
    if (probs_dropout)
      l.activation_bytes_per_sample += static_cast<double>(mul(args, {seqs, heads, s, s})) * (kBytesPerElement + 1);
    l.probs_dropout = probs_dropout;
    l.heads = static_cast<int>(heads);
    if (kv_heads != heads) l.kv_heads = static_cast<int>(kv_heads);
    l.causal = causal;
    l.window = window;
    l.rotary = rotary;
    return in;
  }

  // Multi-head latent attention (DeepSeek-V2, Liu et al. 2024; DeepSeek-V3's config.json, recalled): `q_lora` r_q (0: a
  // direct query projection), `kv_lora` r_kv, `qk_nope` and `qk_rope` (the query/key head dimension d_qk is their
  // sum), `v_head` d_v. Its layers: q_a_proj D→r_q, q_a_layernorm (RMSNorm r_q), q_b_proj r_q→a·d_qk (or q_proj
  // D→a·d_qk); kv_a_proj_with_mqa D→r_kv+d_rope, kv_a_layernorm (RMSNorm r_kv), kv_b_proj r_kv→a·(d_nope+d_v); the
  // attention over a heads of d_qk (scores) and d_v (values); o_proj a·d_v→D. No biases.
  struct Mla {
    std::int64_t q_lora = 0, kv_lora = 0, qk_nope = 0, qk_rope = 0, v_head = 0;
  };
  static Mla attention_mla(MapReader& m, const std::optional<Node>& kv_heads, bool bias) {
    Mla a;
    const std::optional<Node> q = m.optional("q_lora"), kv = m.optional("kv_lora"), nope = m.optional("qk_nope"),
                              rope = m.optional("qk_rope"), v = m.optional("v_head");
    if (!kv) {
      for (const auto* n : {&q, &nope, &rope, &v})
        if (*n) n->value().fail("a setting of multi-head latent attention needs 'kv_lora'");
      return a;
    }
    if (kv_heads) kv_heads->fail("multi-head latent attention has no key/value heads of its own: drop 'kv_heads'");
    if (bias) kv->fail("multi-head latent attention has no biases: add 'bias: false'");
    for (const auto* n : {&nope, &rope, &v})
      if (!*n) kv->fail("multi-head latent attention needs 'qk_nope', 'qk_rope' and 'v_head'");
    a.q_lora = q ? positive(*q) : 0;
    a.kv_lora = positive(*kv);
    a.qk_nope = positive(*nope);
    a.qk_rope = positive(*rope);
    a.v_head = positive(*v);
    return a;
  }
  /// MLA's weights per token: the q path (q_a, its norm, q_b; or q_proj), the kv path (kv_a, its norm, kv_b), o_proj.
  static std::int64_t mla_params(const Node& at, const Mla& a, std::int64_t d, std::int64_t heads) {
    const std::int64_t dqk = a.qk_nope + a.qk_rope;
    const std::int64_t q =
        a.q_lora > 0 ? mul(at, d, a.q_lora) + a.q_lora + mul(at, {a.q_lora, heads, dqk}) : mul(at, {d, heads, dqk});
    const std::int64_t kv = mul(at, d, a.kv_lora + a.qk_rope) + a.kv_lora + mul(at, {a.kv_lora, heads, a.qk_nope + a.v_head});
    return q + kv + mul(at, {heads, a.v_head, d});
  }
  /// Every weight once per token (a norm's scale as one multiply-add per element, as a norm layer counts it), and the
  /// score product Q·Kᵀ (S·S·a·d_qk) and the weighted sum A·V (S·S·a·d_v) per sequence, in full even when causal.
  static std::int64_t mla_macs(const Node& at, const Mla& a, std::int64_t d, std::int64_t heads, std::int64_t seqs,
                               std::int64_t s) {
    return mul(at, {seqs, s, mla_params(at, a, d, heads)}) + mul(at, {seqs, s, s, heads, a.qk_nope + a.qk_rope + a.v_head});
  }
  /// Kept for backward, as for the other attention: the latent tensors (c_q and its norm, 2·r_q; kv_a's output and
  /// the norm of its r_kv part, 2·r_kv + d_rope) and q, k (a·d_qk each), v and the context (a·d_v each), the output (D;
  /// a residual branch ending here drops it), per token; the probabilities (a·S·S) per sequence.
  static std::int64_t mla_kept(const Node& at, const Mla& a, std::int64_t d, std::int64_t heads, std::int64_t seqs,
                               std::int64_t s) {
    const std::int64_t latent = 2 * a.q_lora + 2 * a.kv_lora + a.qk_rope;
    const std::int64_t token = latent + mul(at, {2, heads, a.qk_nope + a.qk_rope}) + mul(at, {2, heads, a.v_head}) + d;
    return mul(at, seqs, mul(at, s, token) + mul(at, {heads, s, s}));
  }

  // mlp: two linear maps D→H→D (or the gated three, SwiGLU: gate and up D→H, down H→D) as one layer of
  // kind linear. Kept for backward: the hidden activations (2·H, or 3·H gated) and the output (D).
  // With `experts: E, top_k: K` a mixture of experts (docs/model.md, eq. P16): a router D×E and E such MLPs, each
  // token through K of them. Parameters: all E experts and the router; MACs: the K a token runs (its active
  // parameters) and the router; kept: the router's probabilities (E), the K permuted copies of the input (D), their
  // hidden activations and outputs, and the combined output (D; a residual branch's last drops it).
  Tensor mlp(const Node& args, Tensor in, const std::string& prefix) {
    MapReader m(args);
    const Node name = m.required("name");
    const std::int64_t hidden = positive(m.required("hidden"));
    bool gated = false, bias = true;
    if (auto n = m.optional("gated")) gated = n->boolean();
    if (auto n = m.optional("bias")) bias = n->boolean();
    std::int64_t experts = 0, top_k = 0;
    const std::optional<Node> experts_node = m.optional("experts"), top_k_node = m.optional("top_k");
    if (experts_node) experts = positive(*experts_node);
    if (top_k_node) top_k = positive(*top_k_node);
    m.finish();
    need_activations(args, in, "mlp");
    if (in.shape.empty()) args.fail("mlp needs an input with at least one dimension");
    if (experts_node.has_value() != top_k_node.has_value()) args.fail("a mixture of experts needs both 'experts' and 'top_k'");
    if (top_k > experts) top_k_node->fail(fmt::format("top_k {} is more than the {} experts", top_k, experts));
    const std::int64_t d = in.shape.back(), rows = elements(args, in.shape) / d;
    const std::int64_t matrices = gated ? 3 : 2;
    const std::int64_t biases = bias ? (gated ? 2 * hidden : hidden) + d : 0;
    const std::int64_t expert = mul(args, {matrices, d, hidden}) + biases;
    if (experts > 0) {  // eq. P16
      const std::int64_t router = mul(args, d, experts);
      const std::int64_t macs = mul(args, rows, mul(args, top_k, expert) + router);
      const std::int64_t kept = mul(args, rows, mul(args, top_k, matrices * hidden + 2 * d) + d + experts);
      Layer& l = add(name, prefix, LayerKind::linear, mul(args, experts, expert) + router, macs, kept, in.shape, in.shape);
      l.hidden = hidden;
      l.gated = gated;
      l.experts = static_cast<int>(experts);
      l.top_k = static_cast<int>(top_k);
      return in;
    }
    const std::int64_t macs = mul(args, rows, expert);  // every weight and bias once per row
    const std::int64_t kept = mul(args, rows, matrices * hidden + d);
    Layer& l = add(name, prefix, LayerKind::linear, expert, macs, kept, in.shape, in.shape);
    l.hidden = hidden;
    l.gated = gated;
    return in;
  }

  // ---- shape-only operations -----------------------------------------------------------------------
  // Pooling output size as PyTorch computes it (ceil mode drops a window that starts in the padding).
  static std::int64_t pooled(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t p, bool ceil_mode) {
    const std::int64_t span = in + 2 * p - k;
    std::int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    if (ceil_mode && (out - 1) * s >= in + p) --out;
    return out;
  }

  Tensor pool(const Node& args, Tensor in, const std::string& kind, const std::string& prefix) {
    MapReader m(args);
    const Node kernel_node = m.required("kernel");
    const auto k = pair(kernel_node, false);
    auto stride = k;
    std::array<std::int64_t, 2> pad{0, 0};
    if (auto n = m.optional("stride")) stride = pair(*n, false);
    if (auto n = m.optional("pad")) pad = pair(*n, true);
    bool ceil_mode = false;
    if (auto n = m.optional("ceil")) ceil_mode = n->boolean();
    m.finish();
    need_image(args, in, kind);
    const std::int64_t h = in.shape[1], w = in.shape[2];
    if (h + 2 * pad[0] < k[0] || w + 2 * pad[1] < k[1])
      kernel_node.fail(
          fmt::format("a {}x{} window does not fit the {}x{} input (padding {}x{})", k[0], k[1], h, w, pad[0], pad[1]));
    Shape out{in.shape[0], pooled(h, k[0], stride[0], pad[0], ceil_mode), pooled(w, k[1], stride[1], pad[1], ceil_mode)};
    const std::int64_t n = elements(args, out);
    // Max pooling keeps its output and the int64 argmax indices (4 + 8 B per output element); average
    // pooling only its output (the next layer's input, which no layer counts).
    const bool is_max = kind == "maxpool";
    op(prefix, is_max ? LayerKind::maxpool : LayerKind::avgpool, in.shape, out, mul(args, n, is_max ? 12 : kBytesPerElement), k,
       stride);
    return {out, false};
  }

  Tensor adaptive_pool(const Node& args, Tensor in, const std::string& prefix) {
    const auto size = pair(args, false);
    need_image(args, in, "adaptive_avgpool");
    if (size[0] > in.shape[1] || size[1] > in.shape[2])
      args.fail(fmt::format("cannot pool a {}x{} input up to {}x{}", in.shape[1], in.shape[2], size[0], size[1]));
    Shape out{in.shape[0], size[0], size[1]};
    op(prefix, LayerKind::avgpool, in.shape, out, mul(args, elements(args, out), kBytesPerElement),
       {in.shape[1] / size[0], in.shape[2] / size[1]}, {in.shape[1] / size[0], in.shape[2] / size[1]});
    return {out, false};
  }

  Tensor shape_only(const Node& at, Tensor in, const std::string& kind, const std::string& prefix) {
    if (kind == "global_avgpool") {
      need_image(at, in, kind);
      Shape out{in.shape[0], 1, 1};
      op(prefix, LayerKind::avgpool, in.shape, out, mul(at, in.shape[0], kBytesPerElement), {in.shape[1], in.shape[2]},
         {in.shape[1], in.shape[2]});
      return {out, false};
    }
    if (kind == "flatten") {
      need_activations(at, in, kind);
      Shape out{elements(at, in.shape)};
      op(prefix, LayerKind::reshape, in.shape, out, 0);
      return {out, false};
    }
    if (kind == "first_token") {
      need_activations(at, in, kind);
      if (in.shape.size() < 2) at.fail(fmt::format("first_token needs a [sequence, width] input, got {}", shape_str(in.shape)));
      Shape out = in.shape;
      out.erase(out.end() - 2);
      op(prefix, LayerKind::reshape, in.shape, out, 0);
      in.shape = out;
      return in;
    }
    need_activations(at, in, kind);  // element-wise: relu, gelu, silu, tanh, dropout, lrn
    const std::int64_t n = elements(at, in.shape);
    // What each keeps for backward that no layer counts: ReLU runs in place (torchvision's inplace=True,
    // its output is the tensor the previous layer already keeps); GELU, SiLU and tanh write a new tensor
    // (the next layer's input); dropout a new tensor and a one-byte mask per element.
    if (kind == "relu") op(prefix, LayerKind::relu, in.shape, in.shape, 0);
    else if (kind == "gelu") op(prefix, LayerKind::gelu, in.shape, in.shape, mul(at, n, kBytesPerElement));
    else if (kind == "silu") op(prefix, LayerKind::silu, in.shape, in.shape, mul(at, n, kBytesPerElement));
    else if (kind == "tanh") op(prefix, LayerKind::tanh, in.shape, in.shape, mul(at, n, kBytesPerElement));
    // LRN across channels keeps its scale (k + α/n·Σx² over the window) for backward (Caffe's lrn_layer)
    else if (kind == "lrn") op(prefix, LayerKind::lrn, in.shape, in.shape, mul(at, n, kBytesPerElement));
    else op(prefix, LayerKind::dropout, in.shape, in.shape, mul(at, n, kBytesPerElement + 1));
    return in;
  }

  // ---- structure -----------------------------------------------------------------------------------
  std::string scope(MapReader& m, const std::string& prefix) {
    if (auto n = m.optional("name")) {
      const std::string s = n->scalar();
      if (s.empty()) n->fail("a name must not be empty");
      return join(prefix, s);
    }
    return prefix;
  }

  Tensor residual(const Node& args, Tensor in, const std::string& prefix) {
    MapReader m(args);
    const std::string p = scope(m, prefix);
    const Node body = m.required("body");
    std::optional<Node> shortcut = m.optional("shortcut");
    m.finish();
    const std::size_t layers_before = layers.size();
    Tensor a = run_list(body, in, p);
    const std::size_t body_layers = layers.size() - layers_before;
    Tensor b = shortcut ? run_list(*shortcut, in, p) : in;
    if (a.shape != b.shape || a.token_ids != b.token_ids)
      args.fail(fmt::format("the body gives {} but the shortcut gives {}: they must match to be added", shape_str(a.shape),
                            shape_str(b.shape)));
    // torchvision adds the shortcut in place (out += identity): nothing new is kept; transformer blocks
    // (Hugging Face) write a new tensor, which the following norm keeps.
    const bool writes_new = token_model || a.shape.size() != 3;  // BERT-SWAG's [choices, tokens, width] too
    if (writes_new && body_layers > 0 && !shortcut) drop_branch_output(layers.back(), elements(args, a.shape));
    op(p, LayerKind::add, a.shape, a.shape, writes_new ? mul(args, elements(args, a.shape), kBytesPerElement) : 0);
    return a;
  }

  /// A transformer branch's last tensor only feeds the residual addition, whose backward needs neither of
  /// its inputs, so nothing keeps it: the branch's last layer (attention, MLP or linear: each counts its
  /// output as the next one's input) drops it, and a dropout that ends the branch keeps only its one-byte
  /// mask (PyTorch's native_dropout saves the mask, not its output). Hugging Face's BERT layer: the output
  /// projection's result and the dropout's result are neither of them saved for backward.
  static void drop_branch_output(Layer& last, std::int64_t elements_per_sample) {
    const bool outputs_kept = last.kind == LayerKind::attention || last.kind == LayerKind::linear;
    if (!outputs_kept) return;
    const double n = static_cast<double>(elements_per_sample);
    if (!last.ops.empty()) {  // only a dropout may stand between the layer and the addition
      if (last.ops.size() != 1 || last.ops.front().kind != LayerKind::dropout) return;
      last.ops.front().activation_bytes_per_sample = n;  // its mask
    }
    last.activation_bytes_per_sample -= n * kBytesPerElement;
  }

  Tensor concat(const Node& args, Tensor in, const std::string& prefix) {
    MapReader m(args);
    const std::string p = scope(m, prefix);
    const Node branches = m.required("branches");
    m.finish();
    const auto items = branches.items();
    if (items.empty()) branches.fail("concat needs at least one branch");
    std::optional<Tensor> out;
    for (const auto& br : items) {
      Tensor t = run_list(br, in, p);
      need_activations(br, t, "concat");
      if (!out) {
        out = t;
        continue;
      }
      const bool fits = t.shape.size() == out->shape.size() && !t.shape.empty() &&
          std::equal(t.shape.begin() + 1, t.shape.end(), out->shape.begin() + 1);
      if (!fits)
        br.fail(fmt::format("this branch gives {}, which cannot be joined along channels with {}", shape_str(t.shape),
                            shape_str(out->shape)));
      out->shape[0] += t.shape[0];
    }
    op(p, LayerKind::concat, in.shape, out->shape, mul(args, elements(args, out->shape), kBytesPerElement));
    (layers.empty() ? pending_ops_ : layers.back().ops).back().branches = static_cast<int>(items.size());
    return *out;
  }

  Tensor block(const Node& args, Tensor in, const std::string& prefix) {
    MapReader m(args);
    const std::string p = scope(m, prefix);
    const Node body = m.required("body");
    m.finish();
    return run_list(body, std::move(in), p);
  }

  // A decoder's mixture of experts (docs/model.md, eq. P16): `experts` routed experts of `expert_ffn` (the ffn when
  // not given), `top_k` per token, `shared_experts` always-on experts of the same width (one MLP of their summed
  // width), and the first `first_dense` blocks with the dense MLP (DeepSeek's first_k_dense_replace).
  struct DecoderMoe {
    std::int64_t experts = 0, top_k = 0, ffn = 0, shared = 0, first_dense = 0;
  };
  static DecoderMoe decoder_moe(MapReader& m, std::int64_t ffn, std::int64_t layers_n) {
    DecoderMoe e;
    const std::optional<Node> experts = m.optional("experts"), top_k = m.optional("top_k");
    const std::optional<Node> expert_ffn = m.optional("expert_ffn"), shared = m.optional("shared_experts");
    const std::optional<Node> first_dense = m.optional("first_dense");
    if (!experts) {
      for (const auto* n : {&top_k, &expert_ffn, &shared, &first_dense})
        if (*n) n->value().fail("a setting of a mixture of experts needs 'experts'");
      return e;
    }
    e.experts = positive(*experts);
    if (!top_k) experts->fail("a mixture of experts needs 'top_k', the experts each token runs");
    e.top_k = positive(*top_k);
    if (e.top_k > e.experts) top_k->fail(fmt::format("top_k {} is more than the {} experts", e.top_k, e.experts));
    e.ffn = expert_ffn ? positive(*expert_ffn) : ffn;
    if (shared) e.shared = shared->non_negative_integer();
    if (first_dense) e.first_dense = first_dense->non_negative_integer();
    if (e.first_dense >= layers_n)
      first_dense->fail(fmt::format("first_dense {} leaves none of the {} blocks a mixture of experts", e.first_dense, layers_n));
    return e;
  }

  // The MLP items of a decoder block: the dense MLP, or the shared experts' and the routed experts' (`moe`).
  static std::string decoder_mlp(const std::string& name, std::int64_t ffn, bool swiglu, const std::string& b,
                                 const DecoderMoe& moe, bool routed) {
    const char* gated = swiglu ? "true" : "false";
    if (!routed) return fmt::format("{{mlp: {{name: {}, hidden: {}, gated: {}, bias: {}}}}}", name, ffn, gated, b);
    std::string y;
    if (moe.shared > 0)
      y += fmt::format("{{mlp: {{name: shared_experts, hidden: {}, gated: {}, bias: {}}}}}, ", moe.shared * moe.ffn, gated, b);
    return y +
        fmt::format("{{mlp: {{name: block_sparse_moe, hidden: {}, gated: {}, bias: {}, experts: {}, top_k: {}}}}}", moe.ffn,
                    gated, b, moe.experts, moe.top_k);
  }

  // The decoder's blocks: one `repeat` of `attention` and the MLP residuals, or with experts one of the first_dense
  // dense blocks and one of the rest.
  static std::string decoder_blocks(const std::string& name, std::int64_t layers_n, const std::string& attention,
                                    const std::string& norm, const std::string& mlp_name, std::int64_t ffn, bool swiglu,
                                    const std::string& b, const DecoderMoe& moe) {
    auto blocks = [&](std::int64_t first, std::int64_t count, bool routed) {
      return fmt::format("- repeat: {{name: {}, first: {}, count: {}, body: [{}, {{residual: {{body: [{}, {}]}}}}]}}\n", name,
                         first, count, attention, norm, decoder_mlp(mlp_name, ffn, swiglu, b, moe, routed));
    };
    if (moe.experts == 0) return blocks(0, layers_n, false);
    return (moe.first_dense > 0 ? blocks(0, moe.first_dense, false) : "") +
        blocks(moe.first_dense, layers_n - moe.first_dense, true);
  }

  // A decoder's attention (`attention: gqa`, the default, or `mla`): multi-head latent attention's settings for the
  // attention operation (attention_mla), "" for grouped-query attention. Its keys need `attention: mla`, which has
  // no `kv_heads`.
  static std::string decoder_mla(MapReader& m, const std::optional<Node>& kv_heads) {
    const std::optional<Node> kind = m.optional("attention");
    const bool mla = kind && kind->choice({"gqa", "mla"}) == "mla";
    std::string y;
    for (const char* key : {"q_lora", "kv_lora", "qk_nope", "qk_rope", "v_head"}) {
      const std::optional<Node> n = m.optional(key);
      if (n && !mla) n->fail(fmt::format("'{}' is a setting of multi-head latent attention: add 'attention: mla'", key));
      if (n) y += fmt::format(", {}: {}", key, positive(*n));
    }
    if (!mla) return y;
    if (kv_heads) kv_heads->fail("multi-head latent attention has no key/value heads of its own: drop 'kv_heads'");
    for (const char* key : {"kv_lora", "qk_nope", "qk_rope", "v_head"})
      if (y.find(fmt::format(", {}:", key)) == std::string::npos)
        kind->fail(fmt::format("multi-head latent attention needs '{}'", key));
    return y;
  }

  // decoder: a decoder-only transformer from its sizes (docs/models.md, "Decoder-only transformers"):
  // token embedding (+ learned positions), `layers` pre-norm blocks — norm, causal attention (kv_heads),
  // add; norm, MLP (gelu: D→F→D with biases; swiglu: gate and up D→F, down F→D; or a mixture of experts of
  // them, decoder_moe), add — a final norm and the output projection (tied: the token embedding's weights).
  // Written as the equivalent list of operations and generated by them, with Llama's names (rotary positions)
  // or GPT-2's (learned).
  Tensor decoder(const Node& args, Tensor in, const std::string& prefix) {
    MapReader m(args);
    const std::int64_t layers_n = positive(m.required("layers"));
    const std::int64_t width = positive(m.required("width"));
    const Node heads_node = m.required("heads");
    const std::int64_t heads = positive(heads_node);
    std::int64_t kv_heads = heads;
    std::optional<Node> kv_node = m.optional("kv_heads");
    if (kv_node) kv_heads = positive(*kv_node);
    const std::int64_t ffn = positive(m.required("ffn"));
    const bool swiglu = m.required("ffn_kind").choice({"gelu", "swiglu"}) == "swiglu";
    const std::int64_t vocab = positive(m.required("vocab"));
    const std::string positions = m.required("positions").choice({"learned", "rotary", "alibi"});
    bool tied = false, bias = !swiglu;
    if (auto n = m.optional("tied")) tied = n->boolean();
    if (auto n = m.optional("bias")) bias = n->boolean();
    std::int64_t context = 0;
    std::optional<Node> ctx_node = m.optional("context");
    if (ctx_node) context = positive(*ctx_node);
    const DecoderMoe moe = decoder_moe(m, ffn, layers_n);
    std::int64_t window = 0;  // eq. K25: a sliding window over the causal mask (Mistral's sliding_window)
    if (auto n = m.optional("window")) window = positive(*n);
    std::optional<std::string> norm;  // the blocks' norm: rmsnorm (rotary, alibi) or layernorm (learned) by default
    if (auto n = m.optional("norm")) norm = n->choice({"rmsnorm", "layernorm"});
    const std::string mla = decoder_mla(m, kv_node);
    m.finish();
    if (!in.token_ids) args.fail("a decoder takes token ids: put it first, after the input");
    if (mla.empty() && width % heads != 0) heads_node.fail(fmt::format("{} heads do not divide the width {}", heads, width));
    if (heads % kv_heads != 0) kv_node->fail(fmt::format("{} key/value heads do not divide {} heads", kv_heads, heads));
    const bool gpt = positions == "learned";
    if (gpt && !ctx_node) args.fail("learned positions need 'context' (the size of the position table)");
    const std::int64_t seq = in.shape.empty() ? 1 : in.shape.back();
    if (gpt && seq > context) ctx_node->fail(fmt::format("a sequence of {} tokens does not fit a context of {}", seq, context));
    const std::string b = bias ? "true" : "false";
    const std::string win = window > 0 ? fmt::format(", window: {}", window) : "";
    // a norm by name: RMSNorm (scale only) or LayerNorm (its bias with the linear maps' `bias`)
    auto norm_item = [&](const char* name, bool layer_norm) {
      return layer_norm ? fmt::format("{{layernorm: {{name: {}, bias: {}}}}}", name, b) : fmt::format("{{rmsnorm: {}}}", name);
    };
    std::string y;
    if (gpt) {
      y += fmt::format("- embedding: {{name: wte, vocab: {}, dim: {}}}\n", vocab, width);
      y += fmt::format("- embedding: {{name: wpe, vocab: {}, dim: {}, positions: true}}\n", context, width);
      const std::string attention = fmt::format(
          "{{residual: {{body: [{}, {{attention: {{name: attn, heads: {}{}, bias: {}, causal: true{}}}}}]}}}}",
          norm_item("ln_1", norm != "rmsnorm"), heads, mla.empty() ? fmt::format(", kv_heads: {}", kv_heads) : mla, b, win);
      y += decoder_blocks("h", layers_n, attention, norm_item("ln_2", norm != "rmsnorm"), "mlp", ffn, swiglu, b, moe);
      y += "- " + norm_item("ln_f", norm != "rmsnorm").substr(1);
      y.back() = '\n';
      y += fmt::format("- linear: {{name: lm_head, out: {}, bias: false{}}}\n", vocab, tied ? ", tied: wte" : "");
    } else {
      y += fmt::format("- embedding: {{name: model.embed_tokens, vocab: {}, dim: {}}}\n", vocab, width);
      const std::string attention = fmt::format(
          "{{residual: {{body: [{}, {{attention: {{name: self_attn, heads: {}{}, bias: {}, "
          "causal: true, rotary: {}{}}}}}]}}}}",
          norm_item("input_layernorm", norm == "layernorm"), heads, mla.empty() ? fmt::format(", kv_heads: {}", kv_heads) : mla,
          b, positions == "rotary" ? "true" : "false", win);
      y += decoder_blocks("model.layers", layers_n, attention, norm_item("post_attention_layernorm", norm == "layernorm"), "mlp",
                          ffn, swiglu, b, moe);
      y += "- " + norm_item("model.norm", norm == "layernorm").substr(1);
      y.back() = '\n';
      y += fmt::format("- linear: {{name: lm_head, out: {}, bias: false{}}}\n", vocab, tied ? ", tied: model.embed_tokens" : "");
    }
    // The generated operations report errors at the decoder's own line.
    return run_list(yamlio::load_generated(y, args), std::move(in), prefix);
  }

  // repeat: `count` copies of `body`, named NAME.first … NAME.(first+count-1).
  Tensor repeat(const Node& args, Tensor in, const std::string& prefix) {
    MapReader m(args);
    const std::string name = m.required("name").scalar();
    const std::int64_t count = positive(m.required("count"));
    std::int64_t first = 0;
    if (auto n = m.optional("first")) first = n->non_negative_integer();
    const Node body = m.required("body");
    m.finish();
    for (std::int64_t i = first; i < first + count; ++i)
      in = run_list(body, std::move(in), join(prefix, fmt::format("{}.{}", name, i)));
    return in;
  }
};

Network build(const Node& root, const std::string& expected_name, const InputOverride& over = {}) {
  MapReader m(root);
  Network net;
  {
    const Node n = m.required("name");
    net.name = n.scalar();
    if (!expected_name.empty() && net.name != expected_name)
      n.fail(fmt::format("the name '{}' must match the file name '{}'", net.name, expected_name));
  }
  net.description = m.required("description").scalar();
  Tensor t;
  {
    MapReader in(m.required("input"));
    std::optional<Node> image = in.optional("image");
    std::optional<Node> tokens = in.optional("tokens");
    in.finish();
    if (image.has_value() == tokens.has_value())
      in.node().fail("give exactly one of 'image: [C, H, W]' or 'tokens: S' / 'tokens: [N, S]'");
    if (image) {
      for (const auto& d : image->items()) t.shape.push_back(positive(d));
      if (t.shape.size() != 3) image->fail("an image is [channels, height, width]");
      net.input_kind = "image";
    } else if (tokens->is_scalar()) {
      t.shape = {positive(*tokens)};
      t.token_ids = true;
      net.input_kind = "tokens";
    } else {
      for (const auto& d : tokens->items()) t.shape.push_back(positive(d));
      if (t.shape.empty() || t.shape.size() > 2) tokens->fail("token ids are 'S' or '[N, S]' (N sequences of S tokens)");
      t.token_ids = true;
      net.input_kind = "tokens";
    }
    if (over.image_size > 0) {
      if (!image)
        throw InputError(SourceLocation{}, "image_size",
                         fmt::format("'{}' takes token ids, not images: use --seq-len", net.name));
      t.shape[1] = t.shape[2] = over.image_size;
    }
    if (over.seq_len > 0) {
      if (!tokens)
        throw InputError(SourceLocation{}, "seq_len",
                         fmt::format("'{}' takes images, not token ids: use --image-size", net.name));
      t.shape.back() = over.seq_len;
    }
    net.input_shape = t.shape;
    net.input_bytes_per_sample = bytes(static_cast<double>(elements(in.node(), t.shape) * kBytesPerElement));
  }
  Generator g;
  g.token_model = net.input_kind == "tokens";
  const Node layers = m.required("layers");
  g.run_list(layers, std::move(t), "");
  m.finish();
  if (g.layers.empty()) layers.fail("a model needs at least one learnable layer");
  net.layers = std::move(g.layers);
  return net;
}
}  // namespace

fs::path architecture_dir() { return data_dir() / "models" / "arch"; }

std::vector<std::string> architecture_names() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(architecture_dir(), ec))
    if (e.is_regular_file() && e.path().extension() == ".yaml") out.push_back(e.path().stem().string());
  std::sort(out.begin(), out.end());
  return out;
}

fs::path resolve_architecture(std::string_view name_or_file, std::string_view option) {
  const fs::path as_path(name_or_file);
  std::error_code ec;
  if (name_or_file.find('/') != std::string_view::npos || as_path.extension() == ".yaml") {
    if (!fs::is_regular_file(as_path, ec))
      throw InputError(SourceLocation{std::string(name_or_file), 0, 0}, std::string(option), cannot_open(as_path));
    return as_path;
  }
  const fs::path candidate = architecture_dir() / (std::string(name_or_file) + ".yaml");
  if (fs::is_regular_file(candidate, ec)) return candidate;
  std::string known;
  for (const auto& n : architecture_names()) known += (known.empty() ? "" : ", ") + n;
  throw InputError(SourceLocation{}, std::string(option),
                   fmt::format("unknown model architecture '{}' (known: {})", name_or_file,
                               known.empty() ? "none in " + architecture_dir().string() : known));
}

Network build_network(const fs::path& arch_file) { return build(yamlio::load_file(arch_file), arch_file.stem().string()); }
Network build_network(const fs::path& arch_file, const InputOverride& input) {
  return build(yamlio::load_file(arch_file), arch_file.stem().string(), input);
}

Network build_network_from_string(const std::string& text, const std::string& display_name) {
  return build(yamlio::load_string(text, display_name), "");
}

}  // namespace dlscale
