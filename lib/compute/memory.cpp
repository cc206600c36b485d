// Per-GPU memory of a training step (include/dlscale/memory.hpp).
#include "dlscale/memory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "dlscale/equations.hpp"
#include "dlscale/format.hpp"

namespace dlscale {

std::vector<int> checkpoint_segments(const Network& net) {
  const auto L = static_cast<int>(net.layers.size());
  std::vector<int> first;
  if (L == 0) return first;
  const int k = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(L))));
  const int per = (L + k - 1) / k;
  for (int i = 0; i < L; i += per) first.push_back(i);
  return first;
}

bool block_checkpointed(int block, double fraction) noexcept {
  if (block < 0) return false;
  if (fraction >= 1.0) return true;
  return std::floor((block + 1) * fraction) > std::floor(block * fraction);
}

Seconds recompute_time(const LayerTimes& t, std::size_t i, int block, const ComputeOptions& opt, bool block_end) noexcept {
  if (block < 0 || i >= t.forward.size()) return Seconds{};
  const Seconds gemm = i < t.forward_gemm.size() ? t.forward_gemm[i] : Seconds{};
  const Seconds core = i < t.forward_attention.size() ? t.forward_attention[i] : Seconds{};
  // FSDP2's copy-out (eq. S10) belongs to the gather, not to the forward that a recompute runs again
  const Seconds forward = t.forward[i] - (i < t.forward_copies.size() ? t.forward_copies[i] : Seconds{});
  // eq. R1b: a non-reentrant checkpoint stops at the block's last kept tensor; what follows it is not run again
  const Seconds unsaved =
      opt.recompute_early_stop && block_end && i < t.forward_unsaved.size() ? t.forward_unsaved[i] : Seconds{};
  switch (opt.recompute) {
    case Recompute::none:
      return Seconds{};
    case Recompute::full:
      return block_checkpointed(block, opt.recompute_blocks) ? forward - unsaved : Seconds{};  // R1, R1b
    case Recompute::selective:
      return core;  // R2
    case Recompute::op:
      return forward - core - gemm * 0.5;  // R3
  }
  return Seconds{};
}

namespace {
/// The attention core's FLOPs of one sample: Q·Kᵀ and P·V, 2·S²·D multiply-adds a sequence, counted in full (with a
/// sliding window, the band of eq. K25b in place of S², as the zoo counts the layer); multi-head latent attention's
/// S²·a·(d_qk + d_v).
double attention_core_flops_per_sample(const Layer& l) noexcept {
  if (l.kind != LayerKind::attention || l.input_shape.size() < 2) return 0.0;
  const std::int64_t seq = l.input_shape[l.input_shape.size() - 2];
  const double s = static_cast<double>(seq);
  const double d = static_cast<double>(l.input_shape.back());
  double elements = 1.0;
  for (auto v : l.input_shape) elements *= static_cast<double>(v);
  const bool band = l.causal && l.window > 0 && l.window < seq;
  if (is_mla(l)) {
    const double heads_dims = static_cast<double>(l.heads) * static_cast<double>(l.head_dim + l.v_head_dim);
    if (band) return 2.0 * (elements / (s * d)) * static_cast<double>(eq::attention_band_pairs(seq, l.window)) * heads_dims;
    return 2.0 * (elements / (s * d)) * s * s * static_cast<double>(l.heads) * static_cast<double>(l.head_dim + l.v_head_dim);
  }
  if (band) return 4.0 * (elements / (s * d)) * static_cast<double>(eq::attention_band_pairs(seq, l.window)) * d;
  return 4.0 * (elements / (s * d)) * s * s * d;
}
}  // namespace

double recompute_flops_per_sample(const Network& net, const ComputeOptions& opt) {
  double f = 0.0;
  if (opt.checkpointing) {  // ⌈√L⌉ segments: every segment's forward but the last's runs again
    const std::vector<int> first = checkpoint_segments(net);
    for (std::size_t i = 0; first.size() >= 2 && i < static_cast<std::size_t>(first.back()); ++i)
      f += net.layers[i].forward_flops_per_sample;
    return f;
  }
  const std::vector<int> block = transformer_blocks(net);
  for (std::size_t i = 0; i < net.layers.size(); ++i) {
    if (block[i] < 0) continue;
    const Layer& l = net.layers[i];
    const double core = attention_core_flops_per_sample(l);
    switch (opt.recompute) {
      case Recompute::none:
        break;
      case Recompute::full:
        f += block_checkpointed(block[i], opt.recompute_blocks) ? l.forward_flops_per_sample : 0.0;
        break;
      case Recompute::selective:
        f += core;
        break;
      case Recompute::op:
        f += 0.5 * (l.forward_flops_per_sample - core);
        break;
    }
  }
  return f;
}

namespace {
/// The attention probabilities of one sample (heads·S·S per sequence); 0 for any other layer.
double probabilities_per_sample(const Layer& l) noexcept {
  if (l.kind != LayerKind::attention || l.heads <= 0 || l.input_shape.size() < 2) return 0.0;
  const double s = static_cast<double>(l.input_shape[l.input_shape.size() - 2]);
  const double d = static_cast<double>(l.input_shape.back());
  double elements = 1.0;
  for (auto v : l.input_shape) elements *= static_cast<double>(v);
  return elements / (s * d) * static_cast<double>(l.heads) * s * s;
}
}  // namespace

double flash_attention_saving_per_sample(const Layer& l) noexcept {
  // The softmax output (4 B, fp32 figure) and, with dropout on the probabilities, its output and mask (4 + 1 B).
  return probabilities_per_sample(l) * (l.probs_dropout ? 9.0 : 4.0);
}

namespace {
/// The elements of the last layer's output (of its last operator), per sample: the logits.
double logits_per_sample(const Network& net) noexcept {
  if (net.layers.empty()) return 0.0;
  const Layer& last = net.layers.back();
  const auto& shape = last.ops.empty() ? last.output_shape : last.ops.back().output_shape;
  double e = shape.empty() ? 0.0 : 1.0;
  for (auto d : shape) e *= static_cast<double>(d);
  return e;
}
}  // namespace

double fp32_loss_bytes_per_sample(const Network& net, const ComputeOptions& opt) noexcept {
  // Eq. K14's eager loss: the logits' fp32 copy and the log-softmax's fp32 output, both kept for backward
  // (8 B per logit); compiled with the step, the fused loss keeps only its row statistics.
  if (!is_mixed(opt.precision) || loss_fused(opt)) return 0.0;
  return 8.0 * logits_per_sample(net);
}

bool language_model_head(const Network& net) noexcept {
  if (net.layers.empty()) return false;
  const Layer& head = net.layers.back();
  return head.kind == LayerKind::linear && head.ops.empty() && head.output_shape.size() >= 2;
}

double loss_backward_bytes_per_sample(const Network& net, const ComputeOptions& opt) noexcept {
  if (!is_mixed(opt.precision)) return 0.0;
  // eager: log_softmax keeps its fp32 output; at its backward the fp32 gradient nll_loss hands it and the fp32
  // gradient of its input are live beside it (torch.nn.functional.cross_entropy of logits.float())
  if (!loss_fused(opt)) return 3.0 * 4.0 * logits_per_sample(net);
  // compiled: the fused kernel keeps the half logits and writes their half gradient
  return 2.0 * activation_bytes_per_element(opt.precision) * logits_per_sample(net);
}

double autocast_softmax_bytes_per_sample(const Network& net, const ComputeOptions& opt) noexcept {
  // Autocast runs softmax in fp32 (its fp32 op list), so unfused attention keeps the softmax
  // output at 4 B where the other kept tensors go to 2 B.
  if (!is_mixed(opt.precision) || !opt.fp32_gradients || fused_attention(opt.attention)) return 0.0;
  double probs = 0.0;
  for (const auto& l : net.layers) probs += probabilities_per_sample(l);
  return probs * (4.0 - activation_bytes_per_element(opt.precision));
}

double eager_decoder_saved_bytes_per_sample(const Layer& l, const ComputeOptions& opt) noexcept {
  if (opt.compiled || l.input_shape.empty()) return 0.0;
  const double width = static_cast<double>(l.input_shape.back());
  double tokens = 1.0;
  for (auto d : l.input_shape) tokens *= static_cast<double>(d);
  tokens /= width;
  const double act = activation_bytes_per_element(opt.precision);
  // M1a: `_norm(x.float()).type_as(x) * weight`: pow and mul save the fp32 x (in mixed precision a copy; the
  // residual addition that made x saves nothing, so its output, counted as the norm's input, is that copy at 4 B);
  // the weight's mul saves the normalized tensor (act B) beside the output the next product saves
  if (opt.rmsnorm_composite && l.kind == LayerKind::layernorm && l.rms) return tokens * width * ((4.0 - act) + act);
  // M1b: SwiGLU `w2(silu(w1 x) * w3 x)`: silu saves w1's output, the product silu's output and w3's, w2 the
  // product: four tensors of F where the layer counts three
  if (l.kind == LayerKind::linear && l.gated && l.hidden > 0 && l.experts == 0)
    return tokens * static_cast<double>(l.hidden) * act;
  // M1c: grouped-query attention through repeat_kv: SDPA saves the key and value it is given, expanded to the
  // query's heads (expand + reshape copies them), where the layer counts them at kv_heads
  if (l.kind == LayerKind::attention && !is_mla(l) && l.kv_heads > 0 && l.kv_heads < l.heads) {
    const double hd = l.head_dim > 0 ? l.head_dim : width / std::max(l.heads, 1);
    return tokens * 2.0 * static_cast<double>(l.heads - l.kv_heads) * hd * act;
  }
  return 0.0;
}

bool plain_autocast(const ComputeOptions& opt) noexcept { return is_mixed(opt.precision) && opt.fp32_gradients; }

double autocast_decoder_saved_bytes_per_sample(const Layer& l, const ComputeOptions& opt) noexcept {
  if (!plain_autocast(opt) || !opt.rmsnorm_composite || opt.compiled || l.input_shape.empty()) return 0.0;
  const double width = static_cast<double>(l.input_shape.back());
  double tokens = 1.0;
  for (auto d : l.input_shape) tokens *= static_cast<double>(d);
  tokens /= width;
  const double act = activation_bytes_per_element(opt.precision);
  // M4a: fp32 weights make `_norm(x.float()).type_as(x) * weight` fp32 throughout: the normalized tensor the weight's
  // mul saves is 4 B where M1a counted it at act (the fp32 input, the residual stream, is M1a's already)
  if (l.kind == LayerKind::layernorm && l.rms) return tokens * width * (4.0 - act);
  // M4a: each product casts the norm's fp32 output to half for itself and saves its copy; the norm's count holds one:
  // q, k and v two more (multi-head latent attention's q_a or q and kv_a one more); a dense SwiGLU's w1 and w3 one more
  if (l.kind == LayerKind::attention) return tokens * width * act * (is_mla(l) ? 1.0 : 2.0);
  if (l.kind == LayerKind::linear && l.gated && l.hidden > 0 && l.experts == 0) return tokens * width * act;
  return 0.0;
}

double autocast_weight_copy_bytes(const Network& net, const ComputeOptions& opt) noexcept {
  if (!plain_autocast(opt)) return 0.0;
  double weights = 0.0;
  for (const Layer& l : net.layers) {
    if (l.kind != LayerKind::linear && l.kind != LayerKind::attention && l.kind != LayerKind::conv) continue;
    auto w = static_cast<double>(l.params);
    // a tied head (no parameters of its own) casts the embedding's weight for its product all the same
    if (w == 0.0 && l.kind == LayerKind::linear && !l.input_shape.empty() && !l.output_shape.empty())
      w = static_cast<double>(l.input_shape.back()) * static_cast<double>(l.output_shape.back());
    weights += w;
  }
  return weights * activation_bytes_per_element(opt.precision);
}

namespace {
/// What eager decoder code saves beyond the layers' count, real bytes: eq. M1, and under plain autocast eq. M4a.
double decoder_code_saved_bytes(const Layer& l, const ComputeOptions& opt) noexcept {
  return eager_decoder_saved_bytes_per_sample(l, opt) + autocast_decoder_saved_bytes_per_sample(l, opt);
}

/// What layer i keeps for backward under the options' recompute mode, with its operators (fp32 figure; eq. M1's
/// and M4a's eager saves, real bytes, are brought to that figure).
double layer_kept_bytes(const Layer& l, const ComputeOptions& opt, bool flash_attention) noexcept {
  double s = l.activation_bytes_per_sample + decoder_code_saved_bytes(l, opt) * 4.0 / activation_bytes_per_element(opt.precision);
  if (flash_attention || opt.recompute == Recompute::selective) s -= flash_attention_saving_per_sample(l);
  for (const auto& o : l.ops)
    if (opt.lrn || o.kind != LayerKind::lrn) s += o.activation_bytes_per_sample;
  return s;
}
}  // namespace

double op_sac_saved_bytes_per_sample(const Layer& l, int& matmuls) noexcept {
  if (l.input_shape.empty()) return 0.0;
  const double width = static_cast<double>(l.input_shape.back());
  double tokens = 1.0;
  for (auto d : l.input_shape) tokens *= static_cast<double>(d);
  tokens /= width;
  double saved = 0.0;
  auto product = [&](double out_width) {  // the block's n-th product: its output kept when n is odd
    if (++matmuls % 2 == 1) saved += 4.0 * tokens * out_width;
  };
  if (l.kind == LayerKind::attention && is_mla(l)) {  // q_a, q_b (or q_proj), kv_a, kv_b; the kernel's output; o_proj
    const double a = l.heads, dqk = l.head_dim, dv = l.v_head_dim > 0 ? l.v_head_dim : dqk;
    if (l.q_lora > 0) product(l.q_lora);
    product(a * dqk);
    product(l.kv_lora + l.qk_rope);
    product(a * (dqk - l.qk_rope + dv));
    saved += 4.0 * tokens * a * dv;
    product(width);
  } else if (l.kind == LayerKind::attention) {
    const double hd = l.head_dim > 0 ? l.head_dim : width / std::max(l.heads, 1);
    const double kv = (l.kv_heads > 0 ? l.kv_heads : l.heads) * hd;
    for (double w : {l.heads * hd, kv, kv}) product(w);  // q, k, v
    saved += 4.0 * tokens * l.heads * hd;                // the attention kernel's output, always kept
    product(width);                                      // the output projection
  } else if (l.kind == LayerKind::linear && l.hidden > 0) {
    const auto f = static_cast<double>(l.hidden);
    if (l.gated) product(f);  // gate
    product(f);               // up
    product(width);           // down
  } else if (l.kind == LayerKind::linear) {
    double out = 1.0;
    for (auto d : l.output_shape) out *= static_cast<double>(d);
    product(out / tokens);
  }
  return saved;
}

double recomputed_block_bytes_per_sample(const Network& net, const ComputeOptions& opt, bool flash_attention) {
  if (opt.recompute != Recompute::full) return 0.0;
  const std::vector<int> block = transformer_blocks(net);
  double largest = 0.0, this_block = 0.0;
  for (std::size_t i = 0; i < net.layers.size(); ++i) {
    if (block[i] < 0 || !block_checkpointed(block[i], opt.recompute_blocks)) continue;
    if (i == 0 || block[i - 1] != block[i]) this_block = 0.0;
    this_block += layer_kept_bytes(net.layers[i], opt, flash_attention);
    largest = std::max(largest, this_block);
  }
  return largest;
}

double recompute_kept_bytes_per_sample(const Network& net, const ComputeOptions& opt, bool flash_attention) {
  const std::vector<int> block = transformer_blocks(net);
  auto kept = [&](std::size_t i) { return layer_kept_bytes(net.layers[i], opt, flash_attention); };
  auto input_bytes = [&](std::size_t i) {  // a block's input: its first layer's input, fp32 figure
    double e = net.layers[i].input_shape.empty() ? 0.0 : 4.0;
    for (auto d : net.layers[i].input_shape) e *= static_cast<double>(d);
    return e;
  };
  double total = 0.0;
  int matmuls = 0;  // R3: the block's matrix products so far
  for (std::size_t i = 0; i < net.layers.size(); ++i) {
    const bool starts = block[i] >= 0 && (i == 0 || block[i - 1] != block[i]);
    const double k = kept(i);
    switch (opt.recompute) {
      case Recompute::full:
        if (!block_checkpointed(block[i], opt.recompute_blocks)) total += k;
        else if (starts) total += input_bytes(i);
        break;
      case Recompute::op:
        if (block[i] < 0) total += k;
        else {
          if (starts) matmuls = 0;
          total += (starts ? input_bytes(i) : 0.0) + op_sac_saved_bytes_per_sample(net.layers[i], matmuls);
        }
        break;
      default:
        total += k;
        break;
    }
  }
  return total;
}

double checkpointed_kept_bytes_per_sample(const Network& net, bool flash_attention, bool lrn) {
  const std::vector<int> first = checkpoint_segments(net);
  auto kept = [&](std::size_t i) {
    double s = net.layers[i].activation_bytes_per_sample;
    if (flash_attention) s -= flash_attention_saving_per_sample(net.layers[i]);
    for (const auto& o : net.layers[i].ops)
      if (lrn || o.kind != LayerKind::lrn) s += o.activation_bytes_per_sample;
    return s;
  };
  double inputs = 0.0, largest = 0.0;
  for (std::size_t s = 0; s < first.size(); ++s) {
    const auto a = static_cast<std::size_t>(first[s]);
    const std::size_t b = s + 1 < first.size() ? static_cast<std::size_t>(first[s + 1]) : net.layers.size();
    double seg = 0.0;
    for (std::size_t i = a; i < b; ++i) seg += kept(i);
    largest = std::max(largest, seg);
    if (s == 0) continue;
    // the segment's input: the output of the previous layer (or of the operator that follows it), fp32
    const Layer& prev = net.layers[a - 1];
    const auto& shape = prev.ops.empty() ? prev.output_shape : prev.ops.back().output_shape;
    double elements = shape.empty() ? 0.0 : 1.0;
    for (auto d : shape) elements *= static_cast<double>(d);
    inputs += shape.empty() ? prev.activation_bytes_per_sample : 4.0 * elements;
  }
  return inputs + largest;
}

Bytes activation_bytes_per_sample(const Network& net, const ComputeOptions& opt) {
  // Every tensor a layer or a parameter-free operator keeps for backward (one micro-batch).
  const bool flash = fused_attention(opt.attention);
  const bool per_block = opt.recompute != Recompute::none && !opt.checkpointing;
  double kept = opt.checkpointing ? checkpointed_kept_bytes_per_sample(net, flash, opt.lrn)
      : per_block                 ? recompute_kept_bytes_per_sample(net, opt, flash)
                                  : net.total_kept_bytes_per_sample();
  if (flash && !opt.checkpointing && !per_block)
    for (const auto& l : net.layers) kept -= flash_attention_saving_per_sample(l);
  double eager = 0.0;  // eq. M1 and M4a, real bytes
  if (!opt.checkpointing && !per_block)
    for (const auto& l : net.layers) eager += decoder_code_saved_bytes(l, opt);
  if (!opt.lrn && !opt.checkpointing && !per_block)  // a framework without LRN does not run the network's
    for (const auto& l : net.layers)
      for (const auto& o : l.ops)
        if (o.kind == LayerKind::lrn) kept -= o.activation_bytes_per_sample;
  const double half = activation_bytes_per_element(opt.precision) / 4.0;
  double a = kept * half + eager;
  if (!opt.checkpointing) a += autocast_softmax_bytes_per_sample(net, opt);
  // eq. M2: in mixed precision the loss's term holds its logits (compiled: the half logits the fused loss keeps;
  // eager: the fp32 copy and log-softmax that replace them), so a language model's head (a last linear layer with
  // a logit per token, which counts its output as kept) does not count them again. An image classifier's thousand
  // logits a sample are left as they were counted (a few kB; reproduce's figures stay).
  if (is_mixed(opt.precision) && language_model_head(net))
    a -= std::min(net.layers.back().activation_bytes_per_sample, 4.0 * logits_per_sample(net)) * half;
  // the peak: the loss's backward, with everything kept, or later a block's recompute (eq. R1), not both
  const double rebuilt = per_block ? recomputed_block_bytes_per_sample(net, opt, flash) * half : 0.0;
  return bytes(a + std::max(loss_backward_bytes_per_sample(net, opt), rebuilt));
}

MemoryEstimate estimate_training_memory(const Network& net, int batch, const ComputeOptions& opt, const Sharding& sh, int shard,
                                        Bytes reserved) {
  return estimate_training_memory(net, batch, opt, sh, shard, reserved, activation_bytes_per_sample(net, opt));
}

namespace {
/// Eq. S3's gathered buffers of stage 3: the gathered units held at once (FULL_SHARD; SHARD_GRAD_OP holds the
/// whole working copy in the weights) and one unit's full gradient before its reduce-scatter; under a block wrap
/// (eq. S4b) also the root's parameters, gathered for the whole step, beside the blocks in flight. One GPU gathers
/// nothing, except under FSDP2, whose unsharded parameters are buffers of their own at any world size. FSDP1 adds its
/// cast of the unit's gradient (eq. M5b).
Bytes gathered_bytes(const Network& net, std::span<const int> block, const ComputeOptions& opt, const Sharding& sh, int shard) {
  if (sh.stage < 3 || (shard < 2 && !sh.per_parameter)) return Bytes{};
  // eq. S12: under fp8 all-gather a unit's fp8 linear maps' weights are gathered, and held, at 1 B an element
  const bool fp8 = fp8_all_gathers(sh, opt);
  std::int64_t largest = 0;
  Bytes unit{}, held{};
  for (const GatherUnit& u : gather_units(net, sh, block)) {
    const double e = fp8 ? unit_fp8_elements(net, u) : 0.0;
    const Bytes gathered = gathered_param_bytes(static_cast<double>(u.params), e, opt.precision);
    (u.held ? held : unit) = max(u.held ? held : unit, gathered);
    if (!u.held) largest = std::max(largest, u.params);
  }
  const double L = static_cast<double>(largest);
  const bool params_sharded = sh.reshard_after_forward;
  // eq. M5b: FSDP1's cast of that unit's gradient around its reduce-scatter, beside it
  return bytes(L * gradient_bytes_per_element(opt.precision)) + shard_cast_transient_bytes(L, sh, opt.precision, shard) +
      (params_sharded ? unit * static_cast<double>(std::max(sh.in_flight - (held > Bytes{} ? 1 : 0), 1)) + held : Bytes{});
}
}  // namespace

namespace {
/// Eq. M3: FSDP2's root unit reduce-scatters at the end of the backward (MemoryEstimate::backward_end): the weights
/// and state, the blocks' gradient shards, and the root's gathered parameters (working width), its unsharded gradients
/// (working width) and the reduce-scatter input they are copied into (the reduce width, fp32 under reduce_fp32), all
/// unsharded. Zero for a network without transformer blocks (no root apart from them).
Bytes root_reduce_peak(const Network& net, std::span<const int> block, const ComputeOptions& opt, const Sharding& sh,
                       const MemoryEstimate& m) {
  double root = 0.0, all = 0.0;
  bool blocks = false;
  for (std::size_t i = 0; i < net.layers.size(); ++i) {
    all += static_cast<double>(net.layers[i].params);
    if (block[i] < 0) root += static_cast<double>(net.layers[i].params);
    else blocks = true;
  }
  if (!blocks || all <= 0.0) return Bytes{};
  const double w = working_bytes_per_element(opt.precision);
  return m.weights + m.optimizer_state + m.gradients * ((all - root) / all) +
      bytes(root * (2.0 * w + reduce_bytes_per_element(sh, opt.precision)));
}
}  // namespace

bool fsdp2_gradients_after_activations(const Sharding& sh, const ComputeOptions& opt) noexcept {
  return sh.per_parameter && sh.stage >= 2 && opt.accumulate == 1;
}

bool autocast_gradients_after_activations(const Sharding& sh, const ComputeOptions& opt) noexcept {
  return !sh.sharded() && opt.accumulate == 1 && plain_autocast(opt) && opt.rmsnorm_composite;
}

MemoryEstimate estimate_training_memory(const Network& net, int batch, const ComputeOptions& opt, const Sharding& sh, int shard,
                                        Bytes reserved, Bytes activations_per_sample) {
  if (shard < 1) throw std::invalid_argument("estimate_training_memory: a shard group holds at least one GPU");
  if (batch < 1) throw std::invalid_argument("estimate_training_memory: the batch must be at least 1");
  const double p = static_cast<double>(net.total_params());
  const bool mixed = is_mixed(opt.precision);
  MemoryEstimate m;
  m.weights = bytes(p * (mixed ? 4.0 + 2.0 : 4.0));
  // eq. M4b: under plain autocast the parameters stay fp32 and no half working copy is kept; each product's weight is
  // cast for its use and the copy is held to its backward (autocast's cache within the region, autograd's saves after)
  if (plain_autocast(opt) && !sh.sharded()) m.weights = bytes(p * 4.0 + autocast_weight_copy_bytes(net, opt));
  m.gradients = bytes(p * gradient_bytes_per_element(opt));
  m.optimizer_state = bytes(p * 4.0 * optimizer_state_words(opt.optimizer));
  m.activations = activations_per_sample * static_cast<double>(batch);
  m.input = net.input_bytes_per_sample * static_cast<double>(batch);
  m.reserved = reserved;
  if (sh.sharded()) {
    // Eq. S3 (docs/model.md): the stage's state divided by the shard group n. Mixed precision: the fp32
    // master copy belongs to the optimiser state (ZeRO's K = 12 for Adam); the half working copy is
    // sharded only at stage 3. Gradient accumulation keeps full gradients between micro-batches
    // (FSDP's no_sync), so stage 2-3 gradients are sharded only without it.
    const double n = static_cast<double>(shard);
    const Bytes working = bytes(p * working_bytes_per_element(opt.precision));
    const Bytes master = m.weights - working;  // 4 B in mixed precision, none in fp32
    m.optimizer_state = m.optimizer_state / n;
    const bool params_sharded = sh.stage >= 3 && sh.reshard_after_forward;
    // eq. M5a: FSDP (fp32 shards: FSDP2, and FSDP1's flat parameter, which frees its half shard, _mp_shard, once the
    // all-gather has read it; recalled) keeps no half working copy beside the fp32 shards: its mixed precision casts
    // each unit's parameters as it gathers them (the gathered buffers below)
    const Bytes working_kept = sh.held_in_fp32() && is_mixed(opt.precision) ? Bytes{} : working;
    m.weights = (params_sharded ? working_kept / n : working) + master / n;
    if (sh.offload_optimizer) {  // eq. S9: the fp32 master and the optimiser state live in host memory
      m.weights = params_sharded ? working / n : working;
      m.optimizer_state = Bytes{};
    }
    const bool gradients_sharded = sh.stage >= 2 && opt.accumulate == 1;
    // The gradient shards at the width the reduce leaves them, the one the optimiser reads (eq. K27): fp32 when reduced
    // in fp32, or (eq. M5a) FSDP's shards cast back to the fp32 parameters' dtype after a half reduce-scatter (FSDP1's
    // _cast_grad_to_param_dtype; a parameter's .grad has its dtype). Unsharded (stage 1, or FSDP1's no_sync under
    // accumulation): the half gradients, or fp32 under an fp32 reduce, as before.
    if (gradients_sharded) m.gradients = bytes(p * gradient_shard_bytes_per_element(sh, opt.precision)) / n;
    else if (is_mixed(opt.precision) && sh.reduce_fp32) m.gradients = bytes(p * 4.0);
    m.gradients_after_activations = fsdp2_gradients_after_activations(sh, opt);
    // the blocks once for both (a Predictor asks for this estimate at every GPU count)
    const bool blocks_read = sh.stage >= 3 && (sh.wrap == Sharding::Wrap::block || m.gradients_after_activations);
    const std::vector<int> block = blocks_read ? transformer_blocks(net) : std::vector<int>{};
    m.gathered = gathered_bytes(net, block, opt, sh, shard);
    if (m.gradients_after_activations && sh.stage >= 3) m.backward_end = root_reduce_peak(net, block, opt, sh, m);
  }
  // eq. M4c: a plain module's fp32 gradients, set to None by zero_grad, come into being in backward as it frees the
  // activations: the loss's backward holds none of them
  if (autocast_gradients_after_activations(sh, opt)) m.gradients_after_activations = true;
  // The caching allocator rounds blocks up and cannot reuse freed blocks of other sizes: slack grows with
  // what is allocated and freed every step (activations and gradients). docs/compute-model.md.
  m.allocator_slack = (m.activations + m.gradients + m.gathered) * kAllocatorSlack;
  return m;
}

MemoryEstimate estimate_training_memory(const Network& net, int batch, const ComputeOptions& opt, Bytes reserved) {
  return estimate_training_memory(net, batch, opt, Sharding{}, 1, reserved);
}

MemoryFit check_memory_fit(const Network& net, const GpuSpec& gpu, int batch, const ComputeOptions& opt, const Sharding& sh,
                           int shard, Bytes reserved) {
  return check_memory_fit(net, gpu, batch, opt, sh, shard, reserved, activation_bytes_per_sample(net, opt));
}

MemoryFit check_memory_fit(const Network& net, const GpuSpec& gpu, int batch, const ComputeOptions& opt, const Sharding& sh,
                           int shard, Bytes reserved, Bytes activations_per_sample) {
  MemoryFit f;
  f.need = estimate_training_memory(net, batch, opt, sh, shard, reserved, activations_per_sample);
  f.available = gpu.memory_size;
  // A GPU whose memory is not given (an inline GPU may leave `memory` out): nothing to check against.
  if (!(f.available > Bytes{})) return f;
  f.fits = f.need.total() <= f.available;
  // Memory grows linearly with the batch: fixed + batch × per-sample. Batch 1's estimate differs from the batch's only in
  // the activations, the input and the slack on them (estimate_training_memory): derived, not estimated again.
  MemoryEstimate one = f.need;
  one.activations = activations_per_sample;
  one.input = net.input_bytes_per_sample;
  one.allocator_slack = (one.activations + one.gradients + one.gathered) * kAllocatorSlack;
  const Bytes per_sample = one.activations * (1.0 + kAllocatorSlack) + one.input;
  const Bytes fixed = one.total() - per_sample;
  // The quotient can pass what an int holds (80 GB at 1 B per sample: 8·10^10); converting such a double
  // is undefined behaviour, so it is clamped first.
  f.largest_batch = f.available >= fixed && per_sample > Bytes{}
      ? static_cast<int>(
            std::min(std::floor((f.available - fixed) / per_sample), static_cast<double>(std::numeric_limits<int>::max())))
      : 0;
  if (!f.fits)
    f.warning = fmt::format(
        "warning: {} at batch {} needs about {} per GPU ({} activations, {} weights, gradients and optimiser state), "
        "more than the {} of a {}; {}",
        net.name, batch, f.need.total(), f.need.activations,
        f.need.weights + f.need.gradients + f.need.optimizer_state + f.need.gathered, f.available, gpu.name,
        f.largest_batch > 0 ? fmt::format("the largest batch that fits is about {}", f.largest_batch)
                            : std::string("not even batch 1 fits without sharding or offloading the model"));
  return f;
}

MemoryFit check_memory_fit(const Network& net, const GpuSpec& gpu, int batch, const ComputeOptions& opt, Bytes reserved) {
  return check_memory_fit(net, gpu, batch, opt, Sharding{}, 1, reserved);
}

}  // namespace dlscale
