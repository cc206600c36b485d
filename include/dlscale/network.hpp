// A neural network as the performance model sees it: its learnable layers, in order from the
// input side (layer 1) to the output side (layer L), with their sizes and work per sample.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dlscale/detail/enum_names.hpp"
#include "dlscale/units.hpp"

namespace dlscale {

enum class LayerKind {
  conv,
  linear,
  batchnorm,
  layernorm,
  embedding,
  attention,  // fused attention projections (q, k, v, output) of a transformer block
  other,
  // Parameter-free operators (no gradient to exchange). A model file lists them between the learnable
  // layers; the loader attaches each to the learnable layer before it (Layer::ops), whose gradient is
  // ready only after their backward too.
  relu,
  gelu,
  silu,
  tanh,
  dropout,
  maxpool,
  avgpool,  // average pooling, adaptive and global too
  add,      // a residual addition
  concat,
  lrn,      // local response normalization across channels (AlexNet, GoogLeNet)
  reshape,  // flatten, first-token selection: views, no kernel
};

/// Whether a kind is a parameter-free operator (relu … reshape) rather than a layer that may learn.
[[nodiscard]] constexpr bool is_parameter_free(LayerKind k) noexcept { return k >= LayerKind::relu; }

template <>
struct EnumNames<LayerKind> {
  static constexpr std::array<EnumName<LayerKind>, 18> names{{
      {LayerKind::conv, "conv"},
      {LayerKind::linear, "linear"},
      {LayerKind::batchnorm, "batchnorm"},
      {LayerKind::layernorm, "layernorm"},
      {LayerKind::embedding, "embedding"},
      {LayerKind::attention, "attention"},
      {LayerKind::other, "other"},
      {LayerKind::relu, "relu"},
      {LayerKind::gelu, "gelu"},
      {LayerKind::silu, "silu"},
      {LayerKind::tanh, "tanh"},
      {LayerKind::dropout, "dropout"},
      {LayerKind::maxpool, "maxpool"},
      {LayerKind::avgpool, "avgpool"},
      {LayerKind::add, "add"},
      {LayerKind::concat, "concat"},
      {LayerKind::lrn, "lrn"},
      {LayerKind::reshape, "reshape"},
  }};
  static constexpr std::array<EnumName<LayerKind>, 0> aliases{};
};
/// Throws UnitError-free std::invalid_argument on an unknown name; the YAML layer adds the location.
LayerKind layer_kind_from_string(std::string_view name);

/// A parameter-free operator that follows a learnable layer: what the compute model needs to time it as
/// a memory-bound kernel (docs/compute-model.md) and the memory model to count what it keeps.
struct Operator {
  std::string name;
  LayerKind kind = LayerKind::relu;
  std::vector<std::int64_t> input_shape;                       // per sample (add: the first input's; concat: the fork's, which
                                                               // every branch reads)
  std::vector<std::int64_t> output_shape;                      // per sample
  double activation_bytes_per_sample = 0.0;                    // bytes it keeps for backward beyond its input (fp32 figure)
  int kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1;  // pooling windows
  int branches = 0;                                            // concat: the branches joined (0: unknown); each read the fork's
                                                               // input, so backward sums that many gradients there
};

struct Layer {
  std::string name;
  LayerKind kind = LayerKind::other;
  std::int64_t params = 0;                   // learnable parameters (weights + biases)
  double macs_per_sample = 0.0;              // multiply-accumulates of the forward pass (docs/models.md)
  double forward_flops_per_sample = 0.0;     // FLOPs, a multiply-add counted as 2 FLOPs (= 2 × MACs)
  double activation_bytes_per_sample = 0.0;  // bytes of the layer's output kept for backward (fp32)
  std::vector<std::int64_t> output_shape;    // per sample, e.g. {64, 112, 112}
  // The shape of the work, for the kernel model (docs/compute-model.md); empty/zero when a model file
  // does not give it, and the layer is then timed from its FLOPs and bytes alone.
  std::vector<std::int64_t> input_shape;  // per sample
  int kernel_h = 1, kernel_w = 1;         // conv, pooling
  int stride_h = 1, stride_w = 1;
  int groups = 1;           // conv
  int heads = 0;            // attention
  int kv_heads = 0;         // attention: key/value heads (grouped-query attention); 0 = heads
  int head_dim = 0;         // attention: features per head; 0 = width/heads (a TP rank's heads/t keep the model's)
  std::int64_t hidden = 0;  // mlp (a linear layer of two or three matrices)
  /// attention, causal: a sliding window, each query sees at most the `window` positions up to its own (Mistral's
  /// sliding_window; eq. K25); 0: none, and a window as long as the sequence is stored as none
  std::int64_t window = 0;
  bool gated = false;          // mlp: SwiGLU (gate, up, down)
  bool causal = false;         // attention: a causal mask (decoders); fused kernels skip its masked half
  bool probs_dropout = false;  // attention: dropout on the probabilities (unfused attention keeps its output and mask)
  bool rotary = false;         // attention: rotary position embedding applied to q and k (Llama)
  bool rms = false;            // layernorm: RMSNorm (scale only, no mean; Llama), not LayerNorm
  /// mlp of a mixture-of-experts block (docs/model.md, eq. P16): its routed experts E, each an MLP of `hidden`, and
  /// the router D×E before them (in `params`); 0: a dense MLP.
  int experts = 0;
  int top_k = 0;          // mlp with experts: the experts each token runs, K
  int local_experts = 0;  // mlp with experts: the experts one rank holds and runs (E/ep, eq. P17); 0: all E
  /// mlp with experts: the token copies the rank's experts run over the balanced rows·K (eq. P23): the busiest
  /// expert-parallel rank's load under routing imbalance, or a capacity factor's (eq. P24; below 1 where tokens are
  /// dropped at a capacity factor below 1); 1: balanced.
  double expert_load = 1.0;
  /// The parameter-free operators that follow this layer up to the next learnable one.
  std::vector<Operator> ops;
  /// attention: multi-head latent attention (DeepSeek-V2/V3; docs/models.md, "Decoder-only transformers") when
  /// kv_lora > 0: the query's low-rank down projection D→q_lora (0: a direct query projection), the keys' and values'
  /// D→kv_lora (+ qk_rope), each with its RMSNorm, whole on every TP rank; head_dim is then the query/key head
  /// dimension (qk_nope + qk_rope) and v_head_dim the value head dimension.
  int q_lora = 0, kv_lora = 0, qk_rope = 0;
  int v_head_dim = 0;  // attention: the values' features per head; 0 = head_dim
};

/// Whether an attention layer is multi-head latent attention (Layer::kv_lora).
[[nodiscard]] inline bool is_mla(const Layer& l) noexcept { return l.kv_lora > 0; }

struct Network {
  std::string name;
  std::string description;
  std::string input_kind = "image";       // "image" (decoded fp32) or "tokens" (int32 token ids)
  std::vector<std::int64_t> input_shape;  // per sample, e.g. {3, 224, 224}, or {384} tokens
  Bytes input_bytes_per_sample{};         // bytes fed to the GPU per sample (decoded fp32 image, 4 B per token id)
  std::vector<Layer> layers;              // learnable layers, input side first

  [[nodiscard]] std::int64_t total_params() const noexcept;
  [[nodiscard]] double total_forward_flops_per_sample() const noexcept;
  [[nodiscard]] double total_macs_per_sample() const noexcept;
  [[nodiscard]] double total_activation_bytes_per_sample() const noexcept;
  /// The same plus what the parameter-free operators keep (the memory model's figure).
  [[nodiscard]] double total_kept_bytes_per_sample() const noexcept;
  /// Bytes of one gradient of layer i at the given bytes per element.
  [[nodiscard]] static Bytes gradient_bytes(const Layer& l, double bytes_per_element = 4.0) noexcept {
    return bytes(static_cast<double>(l.params) * bytes_per_element);
  }
};

/// The transformer block each learnable layer belongs to, numbered from 0 input side first: the copies of the
/// architecture's `repeat` (names "PREFIX.N.…"); -1 for a layer outside every block (embeddings, the final norm,
/// the output projection), which no recompute mode checkpoints.
std::vector<int> transformer_blocks(const Network& net);

}  // namespace dlscale
