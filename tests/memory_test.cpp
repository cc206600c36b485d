// Memory fit of a training step: hand-computed totals and the reference papers' batch choices.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "dlscale/io.hpp"
#include "dlscale/memory.hpp"
#include "dlscale/predict.hpp"
#include "dlscale/zoo.hpp"
#include "support/run.hpp"
#include "support/three_layer.hpp"

namespace dlscale {
namespace {

Network toy() {
  Network n;
  n.name = "toy";
  n.input_bytes_per_sample = bytes(1e5);
  Layer a;
  a.name = "a";
  a.kind = LayerKind::linear;
  a.params = 600'000;
  a.activation_bytes_per_sample = 4e5;
  Layer b = a;
  b.name = "b";
  b.params = 400'000;
  b.activation_bytes_per_sample = 6e5;
  n.layers = {a, b};
  return n;  // 1e6 params, 1e6 activation bytes and 1e5 input bytes per sample
}

TEST(Memory, Fp32TrainingStepByHand) {
  const auto m = estimate_training_memory(toy(), 10, ComputeOptions{}, bytes(1e9));
  EXPECT_DOUBLE_EQ(in_bytes(m.weights), 4e6);  // 1e6 · 4 B
  EXPECT_DOUBLE_EQ(in_bytes(m.gradients), 4e6);
  EXPECT_DOUBLE_EQ(in_bytes(m.optimizer_state), 4e6);                 // one momentum word
  EXPECT_DOUBLE_EQ(in_bytes(m.activations), 1e7);                     // 1e6 · 10
  EXPECT_DOUBLE_EQ(in_bytes(m.input), 1e6);                           // 1e5 · 10
  EXPECT_DOUBLE_EQ(in_bytes(m.allocator_slack), 0.05 * (1e7 + 4e6));  // activations and gradients
  EXPECT_DOUBLE_EQ(in_bytes(m.total()), 1e9 + 1.2e7 + 1e7 + 1e6 + 0.05 * 1.4e7);
}

TEST(Memory, MixedPrecisionByHand) {
  ComputeOptions o;
  o.precision = Precision::fp16;
  o.optimizer = Optimizer::adam;  // two state words
  const auto m = estimate_training_memory(toy(), 10, o, bytes(0));
  EXPECT_DOUBLE_EQ(in_bytes(m.weights), 6e6);          // fp32 master 4 B + fp16 copy 2 B
  EXPECT_DOUBLE_EQ(in_bytes(m.gradients), 2e6);        // fp16
  EXPECT_DOUBLE_EQ(in_bytes(m.optimizer_state), 8e6);  // two fp32 words
  EXPECT_DOUBLE_EQ(in_bytes(m.activations), 5e6);      // halved
}

// One BERT attention layer as the zoo writes it: 128 tokens, width 768, 12 heads, dropout on the
// probabilities; 12·128² = 196,608 probabilities a sample.
Network one_attention_layer(bool probs_dropout) {
  Network n;
  n.name = "attn";
  Layer a;
  a.name = "attention";
  a.kind = LayerKind::attention;
  a.params = 4 * 768 * 768 + 4 * 768;
  a.heads = 12;
  a.input_shape = {128, 768};
  a.output_shape = {128, 768};
  a.probs_dropout = probs_dropout;
  // q, k, v, context at 4 B, and per probability 4 B (softmax), or 9 B (and dropout's output and mask)
  a.activation_bytes_per_sample = 4.0 * 128 * 768 * 4 + 196'608.0 * (probs_dropout ? 9 : 4);
  n.layers = {a};
  return n;
}

TEST(Memory, UnfusedAttentionKeepsItsProbabilitiesByHand) {
  const Network with = one_attention_layer(true), without = one_attention_layer(false);
  // A fused kernel keeps none of the probability tensors: the softmax output, and the dropout's output and mask.
  EXPECT_DOUBLE_EQ(flash_attention_saving_per_sample(with.layers[0]), 196'608.0 * 9);
  EXPECT_DOUBLE_EQ(flash_attention_saving_per_sample(without.layers[0]), 196'608.0 * 4);
  ComputeOptions autocast;
  autocast.precision = Precision::fp16;
  autocast.fp32_gradients = true;  // fp32 parameters: PyTorch's autocast
  // autocast runs softmax in fp32: 4 B a probability where the halved figure gives 2 B, 2 B more
  EXPECT_DOUBLE_EQ(autocast_softmax_bytes_per_sample(with, autocast), 196'608.0 * 2);
  const auto m = estimate_training_memory(with, 8, autocast, bytes(0));
  // and the eager loss at its backward over the last output: the log-softmax's fp32 output, its gradient and its
  // input's gradient, 12 B an element
  const double loss = 12.0 * 128 * 768;
  EXPECT_DOUBLE_EQ(in_bytes(m.activations), 8 * ((4.0 * 128 * 768 * 4 + 196'608.0 * 9) / 2 + 196'608.0 * 2 + loss));
  // Nothing more with a half working copy (apex O2, DeepSpeed), in fp32, or with a fused kernel.
  ComputeOptions o2 = autocast;
  o2.fp32_gradients = false;
  EXPECT_DOUBLE_EQ(autocast_softmax_bytes_per_sample(with, o2), 0.0);
  ComputeOptions fp32 = autocast;
  fp32.precision = Precision::fp32;
  EXPECT_DOUBLE_EQ(autocast_softmax_bytes_per_sample(with, fp32), 0.0);
  ComputeOptions flash = autocast;
  flash.attention = AttentionKernel::flash;
  EXPECT_DOUBLE_EQ(autocast_softmax_bytes_per_sample(with, flash), 0.0);
  EXPECT_DOUBLE_EQ(in_bytes(estimate_training_memory(with, 8, flash, bytes(0)).activations),
                   8 * ((4.0 * 128 * 768 * 4) / 2 + loss));
  // compiled, the fused loss keeps no fp32 copy: the half logits and their half gradient, 2 + 2 B an element
  ComputeOptions compiled = flash;
  compiled.compiled = true;
  EXPECT_DOUBLE_EQ(in_bytes(estimate_training_memory(with, 8, compiled, bytes(0)).activations),
                   8 * ((4.0 * 128 * 768 * 4) / 2 + 4.0 * 128 * 768));
  // compiled blocks with the loss left eager (compile_loss: false) hold the eager loss's 12 B a logit again
  ComputeOptions blocks_only = compiled;
  blocks_only.compiled_loss = false;
  EXPECT_FALSE(loss_fused(blocks_only));
  EXPECT_DOUBLE_EQ(in_bytes(estimate_training_memory(with, 8, blocks_only, bytes(0)).activations),
                   8 * ((4.0 * 128 * 768 * 4) / 2 + loss));
}

TEST(Memory, FitWarnsAboveTheLargestBatch) {
  GpuSpec g;
  g.name = "small";
  g.memory_size = bytes(1.1e9);
  // fixed 1e9 + 1.2e7 + slack 0.05 · 4e6 (gradients) = 1.0122e9; per sample 1e6 · 1.05 (activations and
  // their slack) + 1e5 = 1.15e6 → largest batch floor(8.78e7 / 1.15e6) = 76
  const auto ok = check_memory_fit(toy(), g, 76, ComputeOptions{}, bytes(1e9));
  EXPECT_TRUE(ok.fits);
  EXPECT_TRUE(ok.warning.empty());
  EXPECT_EQ(ok.largest_batch, 76);
  const auto over = check_memory_fit(toy(), g, 77, ComputeOptions{}, bytes(1e9));
  EXPECT_FALSE(over.fits);
  EXPECT_NE(over.warning.find("toy at batch 77"), std::string::npos) << over.warning;
  EXPECT_NE(over.warning.find("largest batch that fits is about 76"), std::string::npos) << over.warning;
  // 0.9 GB: less than the fixed 1.012 GB, so no batch fits
  g.memory_size = bytes(0.9e9);
  const auto none = check_memory_fit(toy(), g, 1, ComputeOptions{}, bytes(1e9));
  EXPECT_EQ(none.largest_batch, 0);
  EXPECT_NE(none.warning.find("not even batch 1 fits"), std::string::npos) << none.warning;
  // No memory size (an inline GPU that leaves `memory` out): nothing to check, not "0 B, nothing fits"
  g.memory_size = Bytes{};
  const auto unknown = check_memory_fit(toy(), g, 1000000, ComputeOptions{}, bytes(1e9));
  EXPECT_TRUE(unknown.fits);
  EXPECT_TRUE(unknown.warning.empty());
  EXPECT_EQ(unknown.available, Bytes{});
  EXPECT_EQ(unknown.largest_batch, 0);
}

Network zoo(const char* name) { return load_network(resolve(DataKind::network, name, "--model")); }

TEST(Memory, BatchesWeiEtAlRanFitTheirGpus) {
  // dgx2-ac922-p3-rtx-comparison.txt §IV: on 32 GB V100s, ResNet-101/152 at 128, BERT-SWAG at 64,
  // BERT-SQuAD at 32 ("the largest batch size that can fit"); on the 11 GB RTX 2080 Ti a quarter of that
  // (ResNet 64, SWAG 16, SQuAD 8). They ran, so the estimate must not warn about them.
  const GpuSpec v100 = find_gpu("v100-sxm3"), rtx = find_gpu("rtx2080ti");
  const ComputeOptions fp32;
  for (auto [name, big, small] :
       {std::tuple{"resnet101", 128, 64}, std::tuple{"bert-swag", 64, 16}, std::tuple{"bert-squad", 32, 8}}) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(check_memory_fit(zoo(name), v100, big, fp32).fits);
    EXPECT_TRUE(check_memory_fit(zoo(name), rtx, small, fp32).fits);
  }
  EXPECT_TRUE(check_memory_fit(zoo("resnet152"), v100, 128, fp32).fits);
  // Known disagreement (docs/compute-model.md): ResNet-152 at 64 on the RTX is estimated at 13.3 GB in
  // fp32 (11.6 GB of conv and BN outputs), above 11 GB; in mixed precision it fits. Either the run kept
  // fewer tensors than we count, or it was not fp32: the paper does not say.
  ComputeOptions mixed;
  mixed.precision = Precision::fp16;
  EXPECT_FALSE(check_memory_fit(zoo("resnet152"), rtx, 64, fp32).fits);
  EXPECT_TRUE(check_memory_fit(zoo("resnet152"), rtx, 64, mixed).fits);
}

TEST(Memory, TheV100BatchesDoNotFitTheRtx) {
  // The paper cut the RTX batches to a quarter because the V100 ones did not fit 11 GB: the estimate warns
  // for each V100 batch on the RTX.
  const GpuSpec rtx = find_gpu("rtx2080ti");
  EXPECT_FALSE(check_memory_fit(zoo("resnet101"), rtx, 128, ComputeOptions{}).fits);
  EXPECT_FALSE(check_memory_fit(zoo("resnet152"), rtx, 128, ComputeOptions{}).fits);
  EXPECT_FALSE(check_memory_fit(zoo("bert-squad"), rtx, 32, ComputeOptions{}).fits);
  EXPECT_FALSE(check_memory_fit(zoo("bert-swag"), rtx, 64, ComputeOptions{}).fits);
}

// ---- activation checkpointing (Chen et al. 2016; include/dlscale/memory.hpp) -----------------------------
Network chain(int layers) {
  Network n;
  n.name = "chain";
  n.input_bytes_per_sample = bytes(400);
  for (int i = 0; i < layers; ++i) {
    Layer l;
    l.name = "l" + std::to_string(i);
    l.kind = LayerKind::linear;
    l.params = 1000;
    l.forward_flops_per_sample = 2e6;
    l.activation_bytes_per_sample = 1000;  // what the layer keeps for backward
    l.output_shape = {100};                // its output: 100 fp32 values = 400 B
    n.layers.push_back(l);
  }
  return n;
}

TEST(Checkpointing, SqrtSegmentsKeepTheirInputsAndOneSegmentByHand) {
  // 4 layers: ⌈√4⌉ = 2 segments of 2 ({0, 1}, {2, 3}); kept = the second segment's input (400 B) + one
  // segment's tensors (2 × 1000) = 2400 B instead of 4000.
  EXPECT_EQ(checkpoint_segments(chain(4)), (std::vector<int>{0, 2}));
  EXPECT_DOUBLE_EQ(checkpointed_kept_bytes_per_sample(chain(4)), 2400.0);
  // 10 layers: ⌈√10⌉ = 4 segments of ⌈10/4⌉ = 3 ({0-2}, {3-5}, {6-8}, {9}); kept = 3 × 400 + 3 × 1000 = 4200.
  EXPECT_EQ(checkpoint_segments(chain(10)), (std::vector<int>{0, 3, 6, 9}));
  EXPECT_DOUBLE_EQ(checkpointed_kept_bytes_per_sample(chain(10)), 4200.0);
  // In the estimate: activations × batch, halved in mixed precision: 4200 × 8 / 2, and the eager loss at its
  // backward: the log-softmax's fp32 output, its gradient and its input's gradient over the last output (100
  // values, 3 × 4 B each).
  ComputeOptions o;
  o.precision = Precision::bf16;
  o.checkpointing = true;
  EXPECT_DOUBLE_EQ(in_bytes(estimate_training_memory(chain(10), 8, o, bytes(0)).activations), 4200.0 * 8 / 2 + 8 * 1200.0);
}

// A two-block decoder by hand: an embedding, blocks "blocks.0" and "blocks.1" of two layers each, a head whose
// output is `vocab` logits. Each block layer keeps 10,000 B (fp32 figure) and takes 100 fp32 values in (400 B).
Network two_blocks(int vocab) {
  Network n;
  n.name = "decoder";
  n.input_bytes_per_sample = bytes(0);
  auto layer = [](std::string name, double kept) {
    Layer l;
    l.name = std::move(name);
    l.kind = LayerKind::linear;
    l.params = 1000;
    l.activation_bytes_per_sample = kept;
    l.input_shape = {100};
    l.output_shape = {100};
    return l;
  };
  n.layers.push_back(layer("embedding", 0));
  for (const char* b : {"blocks.0.", "blocks.1."})
    for (const char* part : {"attention", "mlp"}) n.layers.push_back(layer(std::string(b) + part, 10'000));
  n.layers.push_back(layer("head", 400));
  n.layers.back().output_shape = {static_cast<std::int64_t>(vocab)};
  return n;
}

TEST(Memory, TheLossBackwardOrARecomputedBlockNotBoth) {
  ComputeOptions o;
  o.precision = Precision::bf16;
  // No recompute: everything kept (4 × 10,000 + 400 B, halved) and the eager loss at its backward, 3 × 4 B a logit.
  EXPECT_DOUBLE_EQ(in_bytes(activation_bytes_per_sample(two_blocks(1000), o)), 40'400.0 / 2 + 12.0 * 1000);
  // Compiled with its loss: the half logits kept and their half gradient, 2 + 2 B a logit.
  ComputeOptions compiled = o;
  compiled.compiled = true;
  EXPECT_DOUBLE_EQ(loss_backward_bytes_per_sample(two_blocks(1000), compiled), 4.0 * 1000);
  EXPECT_DOUBLE_EQ(loss_backward_bytes_per_sample(two_blocks(1000), ComputeOptions{}), 0.0);  // fp32: not counted
  // Full recompute (R1): each block keeps its input (400 B), the head its 400 B; one block's 20,000 B come back
  // during its recompute, after the loss's backward has freed its tensors: the larger of the two is held.
  o.recompute = Recompute::full;
  EXPECT_DOUBLE_EQ(recompute_kept_bytes_per_sample(two_blocks(1000), o, true), 2 * 400.0 + 400.0);
  EXPECT_DOUBLE_EQ(recomputed_block_bytes_per_sample(two_blocks(1000), o, true), 20'000.0);
  // 1,000 logits: the loss's 12,000 B beat the block's 10,000 (halved)
  EXPECT_DOUBLE_EQ(in_bytes(activation_bytes_per_sample(two_blocks(1000), o)), 1200.0 / 2 + 12'000.0);
  // 100 logits: the loss's 1,200 B fall below the block's 10,000
  EXPECT_DOUBLE_EQ(in_bytes(activation_bytes_per_sample(two_blocks(100), o)), 1200.0 / 2 + 10'000.0);
}

TEST(Memory, PerOpSacKeepsEverySecondProductAndTheAttentionOutput) {
  // A Llama-like block of 10 tokens, width 64, 4 heads of 16 (2 key/value heads: k and v 32 wide), SwiGLU of 128.
  Layer attn;
  attn.kind = LayerKind::attention;
  attn.input_shape = {10, 64};
  attn.heads = 4;
  attn.kv_heads = 2;
  Layer mlp;
  mlp.kind = LayerKind::linear;
  mlp.input_shape = {10, 64};
  mlp.hidden = 128;
  mlp.gated = true;
  int n = 0;
  // products 1-4: q (64, kept), k (32), v (32, kept), output (64); and the attention kernel's output (64), fp32 figure
  EXPECT_DOUBLE_EQ(op_sac_saved_bytes_per_sample(attn, n), 4.0 * 10 * (64 + 32 + 64));
  // products 5-7: gate (128, kept), up (128), down (64, kept)
  EXPECT_DOUBLE_EQ(op_sac_saved_bytes_per_sample(mlp, n), 4.0 * 10 * (128 + 64));
  EXPECT_EQ(n, 7);
  // two_blocks(): each block keeps its input (400 B) and its first layer's product (400 B), not its second's; the
  // head outside the blocks keeps its 400 B
  ComputeOptions o;
  o.recompute = Recompute::op;
  EXPECT_DOUBLE_EQ(recompute_kept_bytes_per_sample(two_blocks(100), o, true), 2 * (400.0 + 400.0) + 400.0);
}

// Eq. M1-M2 by hand on a one-block decoder of 10 tokens, width 64, 4 heads of 16 (2 key/value heads), SwiGLU of 128,
// 1,000 logits a token: what eager PyTorch's Llama code saves beyond the layers' own count, in bf16.
TEST(Memory, EagerDecoderCodeSavesItsUpcastsSiluAndRepeatedKeysByHand) {
  const Network net = build_decoder(
      DecoderShape{.layers = 1, .hidden = 64, .heads = 4, .kv_heads = 2, .ffn = 128, .vocab = 1000, .seq = 10}, "tiny");
  ComputeOptions o;
  o.precision = Precision::bf16;
  o.attention = AttentionKernel::flash;
  ComputeOptions composite = o;
  composite.rmsnorm_composite = true;
  ComputeOptions compiled = composite;
  compiled.compiled = true;
  int norms = 0;
  for (const Layer& l : net.layers) {
    if (l.kind == LayerKind::layernorm) {
      ++norms;  // M1a: the fp32 input (4 B where the addition's output counted 2) and the normalized tensor (2 B)
      EXPECT_DOUBLE_EQ(eager_decoder_saved_bytes_per_sample(l, composite), 10 * 64 * (2.0 + 2.0)) << l.name;
      EXPECT_DOUBLE_EQ(eager_decoder_saved_bytes_per_sample(l, o), 0.0) << l.name;  // a fused norm's count
    } else if (l.kind == LayerKind::linear && l.gated) {                            // M1b: silu's output, 128 a token at 2 B
      EXPECT_DOUBLE_EQ(eager_decoder_saved_bytes_per_sample(l, o), 10 * 128 * 2.0);
    } else if (l.kind == LayerKind::attention) {  // M1c: k and v repeated from 2 heads to 4, 2 × 2 × 16 more at 2 B
      EXPECT_DOUBLE_EQ(eager_decoder_saved_bytes_per_sample(l, o), 10 * 2 * 2 * 16 * 2.0);
    } else {
      EXPECT_DOUBLE_EQ(eager_decoder_saved_bytes_per_sample(l, composite), 0.0) << l.name;
    }
    EXPECT_DOUBLE_EQ(eager_decoder_saved_bytes_per_sample(l, compiled), 0.0) << l.name;  // compiled: none of it
  }
  EXPECT_EQ(norms, 3);  // two in the block and the final one
  // The step: the layers' count halved, less the probabilities flash keeps none of (4 heads × 10² at 4 B, halved),
  // plus M1, less the head's half logits (M2: 10 × 1,000 at 2 B), plus the eager loss's 12 B a logit.
  const double layers = net.total_kept_bytes_per_sample() / 2 - 4 * 100 * 4.0 / 2;
  const double m1 = 3 * 10 * 64 * 4.0 + 10 * 128 * 2.0 + 10 * 2 * 2 * 16 * 2.0;
  EXPECT_DOUBLE_EQ(in_bytes(activation_bytes_per_sample(net, composite)), layers + m1 - 10 * 1000 * 2.0 + 12.0 * 10 * 1000);
}

// Eq. M4 by hand on the tiny decoder above (one block, 10 tokens, D 64, 4 heads of 16 with 2 key/value heads, SwiGLU F
// 128, V 1,000, untied) under plain autocast: fp32 weights cast by bf16 autocast (`mixed_precision: {gradients: fp32}`),
// eager Llama code (composite RMSNorm), flash attention, AdamW.
TEST(Memory, PlainAutocastKeepsFp32NormsHalfCopiesPerProductAndTheWeightsCopiesByHand) {
  const DecoderShape shape{.layers = 1, .hidden = 64, .heads = 4, .kv_heads = 2, .ffn = 128, .vocab = 1000, .seq = 10};
  const Network net = build_decoder(shape, "tiny");
  ComputeOptions o;
  o.precision = Precision::bf16;
  o.attention = AttentionKernel::flash;
  o.optimizer = Optimizer::adamw;
  o.rmsnorm_composite = true;
  ComputeOptions autocast = o;
  autocast.fp32_gradients = true;
  ComputeOptions compiled = autocast;
  compiled.compiled = true;
  // M4a per layer: a norm's normalized tensor fp32 (10 × 64 × (4 − 2) B beyond M1a's half width); q, k and v each cast
  // the norm's output (10 × 64 at 2 B, two copies beyond the one counted); w1 and w3 (one beyond)
  for (const Layer& l : net.layers) {
    double want = 0.0;
    if (l.kind == LayerKind::layernorm) want = 10 * 64 * 2.0;
    if (l.kind == LayerKind::attention) want = 2 * 10 * 64 * 2.0;
    if (l.kind == LayerKind::linear && l.gated) want = 10 * 64 * 2.0;
    EXPECT_DOUBLE_EQ(autocast_decoder_saved_bytes_per_sample(l, autocast), want) << l.name;
    EXPECT_DOUBLE_EQ(autocast_decoder_saved_bytes_per_sample(l, o), 0.0) << l.name;         // a half working copy
    EXPECT_DOUBLE_EQ(autocast_decoder_saved_bytes_per_sample(l, compiled), 0.0) << l.name;  // compiled: not derived
  }
  // A sample at the loss's backward, bytes a token: the block's 34D + 8F: each norm its fp32 input (the embedding's
  // output, then the residual addition's) and its fp32 normalized tensor (2 × 8D), q, k, v their bf16 copies of its
  // output (6D), flash's q, k, v at the query's 4 heads and its output (8D), w1 and w3 their copies (4D), silu's input
  // and output, w3's output, w2's input (8F); the final norm's fp32 input (the block's output), normalized tensor and
  // the head's copy (4D + 4D + 2D); the eager loss's 12 B a logit (the head's half logits not kept, M2). Flash's
  // log-sum-exp is not counted (docs/compute-model.md, M1).
  const double per_token = (34 * 64 + 8 * 128) + (4 + 4 + 2) * 64 + 12 * 1000.0;
  EXPECT_DOUBLE_EQ(in_bytes(activation_bytes_per_sample(net, autocast)), 10 * per_token);
  // M4b: autocast's bf16 copies of the products' weights: q 64 × 64, k and v 64 × 32 each, o 64 × 64 (12,288), the MLP
  // 3 × 64 × 128 (24,576), the head 64 × 1,000 (64,000); not the embedding's 64,000 or the norms' 3 × 64
  const double products = 12'288 + 24'576 + 64'000.0, P = products + 64'000 + 3 * 64;
  EXPECT_DOUBLE_EQ(autocast_weight_copy_bytes(net, autocast), 2 * products);
  EXPECT_DOUBLE_EQ(autocast_weight_copy_bytes(net, o), 0.0);
  DecoderShape tied = shape;  // a tied head casts the embedding's weight for its product all the same
  tied.tied = true;
  EXPECT_DOUBLE_EQ(autocast_weight_copy_bytes(build_decoder(tied, "tied"), autocast), 2 * products);
  // The step at batch 8: fp32 weights and their copies, fp32 gradients, AdamW's two words; the gradients (M4c) come
  // after the activations (8 × 158,400 B > 4P), so the peak holds the weights, the state and the activations
  const MemoryEstimate m = estimate_training_memory(net, 8, autocast, bytes(0));
  EXPECT_DOUBLE_EQ(in_bytes(m.weights), 4 * P + 2 * products);
  EXPECT_DOUBLE_EQ(in_bytes(m.gradients), 4 * P);
  EXPECT_DOUBLE_EQ(in_bytes(m.optimizer_state), 8 * P);
  EXPECT_TRUE(m.gradients_after_activations);
  EXPECT_DOUBLE_EQ(in_bytes(m.allocated()), 12 * P + 2 * products + 8 * 10 * per_token + in_bytes(m.input));
  // a half working copy (apex O2, DeepSpeed) keeps 6 B a parameter and its gradients at the peak; accumulation keeps
  // the gradients across micro-batches
  const MemoryEstimate h = estimate_training_memory(net, 8, o, bytes(0));
  EXPECT_DOUBLE_EQ(in_bytes(h.weights), 6 * P);
  EXPECT_FALSE(h.gradients_after_activations);
  autocast.accumulate = 2;
  EXPECT_FALSE(estimate_training_memory(net, 8, autocast, bytes(0)).gradients_after_activations);
}

// Eq. M3 by hand: FSDP2 on 4 GPUs, the tiny decoder of the test above at batch 1. Its root unit (the embedding and the
// head, 64,000 parameters each, and the final norm's 64) reduce-scatters last: the weights and AdamW's state (fp32
// shards, 12 B a parameter / 4), the blocks' fp32 gradient shards (4 B / 4), and the root's bf16 parameters and
// gradients and fp32 reduce-scatter input, unsharded (2 + 2 + 4 B a parameter).
TEST(Memory, Fsdp2RootReduceScatterEndsTheBackward) {
  const Network net = build_decoder(
      DecoderShape{.layers = 1, .hidden = 64, .heads = 4, .kv_heads = 2, .ffn = 128, .vocab = 1000, .seq = 10}, "tiny");
  const Strategy fsdp2 = load_strategy(resolve(DataKind::framework, "torchtitan", "--framework"));
  ComputeOptions o;
  o.precision = Precision::bf16;
  o.optimizer = Optimizer::adamw;
  const double p = static_cast<double>(net.total_params()), root = 2 * 64'000.0 + 64;
  const MemoryEstimate m = estimate_training_memory(net, 1, o, fsdp2.sharding, 4, bytes(0));
  EXPECT_DOUBLE_EQ(in_bytes(m.backward_end), 12.0 * p / 4 + 4.0 * (p - root) / 4 + 8.0 * root);
  EXPECT_GE(in_bytes(m.allocated()), in_bytes(m.backward_end));
  // not without transformer blocks, nor under a flat FSDP (its gradients are not made in backward)
  const Strategy fsdp1 = load_strategy(resolve(DataKind::framework, "fsdp", "--framework"));
  EXPECT_DOUBLE_EQ(in_bytes(estimate_training_memory(net, 1, o, fsdp1.sharding, 4, bytes(0)).backward_end), 0.0);
}

TEST(Memory, Fsdp2KeepsNoHalfCopyAndItsGradientsComeAfterTheActivations) {
  // toy(): 1e6 parameters in two layers (one gather unit of 1e6 at unit_params 1e8), 1e6 B kept a sample, 1e5 B in.
  ComputeOptions o;
  o.precision = Precision::bf16;
  o.optimizer = Optimizer::adamw;
  Sharding fsdp2;
  fsdp2.stage = 3;
  fsdp2.reduce_fp32 = true;
  fsdp2.per_parameter = true;
  const double P = 1e6, n = 4, a = 1e6 / 2;  // halved; toy()'s last layer has no output shape: no logits
  const MemoryEstimate m = estimate_training_memory(toy(), 10, o, fsdp2, 4, bytes(1e9));
  EXPECT_DOUBLE_EQ(in_bytes(m.weights), P * 4 / n);           // the fp32 shards alone: no bf16 working shard
  EXPECT_DOUBLE_EQ(in_bytes(m.gradients), P * 4 / n);         // fp32 gradient shards
  EXPECT_DOUBLE_EQ(in_bytes(m.optimizer_state), P * 8 / n);   // AdamW's two words
  EXPECT_DOUBLE_EQ(in_bytes(m.gathered), P * 2 + P * 2 * 2);  // a unit's bf16 gradient, two units' bf16 parameters
  EXPECT_TRUE(m.gradients_after_activations);
  // the tensors at the peak: the activations and the input (5e6 + 1e6 B), not the 1e6 B of gradient shards
  EXPECT_DOUBLE_EQ(in_bytes(m.allocated()), P * 4 / n + P * 8 / n + 10 * a + 10 * 1e5 + 6 * P);
  // the allocator holds the gradient shards apart (FSDP2's reduce-scatter stream), the slack and the reserve beside
  const double slack = 0.05 * (10 * a + P * 4 / n + 6 * P);
  EXPECT_DOUBLE_EQ(in_bytes(m.allocator_slack), slack);
  EXPECT_DOUBLE_EQ(in_bytes(m.allocator_reserved()), in_bytes(m.allocated()) + P * 4 / n + slack);
  EXPECT_DOUBLE_EQ(in_bytes(m.total()), in_bytes(m.allocator_reserved()) + 1e9);
  // FSDP2 on one GPU still gathers into buffers of its own; flat shards (FSDP1, ZeRO) on one GPU do not
  EXPECT_DOUBLE_EQ(in_bytes(estimate_training_memory(toy(), 10, o, fsdp2, 1, bytes(0)).gathered), 6 * P);
  Sharding flat = fsdp2;
  flat.per_parameter = false;
  const MemoryEstimate f = estimate_training_memory(toy(), 10, o, flat, 4, bytes(0));
  EXPECT_DOUBLE_EQ(in_bytes(f.weights), P * 2 / n + P * 4 / n);  // a bf16 working shard beside the fp32 master
  EXPECT_FALSE(f.gradients_after_activations);
  EXPECT_DOUBLE_EQ(in_bytes(estimate_training_memory(toy(), 10, o, flat, 1, bytes(0)).gathered), 0.0);
  // accumulation keeps the gradients across micro-batches: they are there at the peak
  o.accumulate = 2;
  EXPECT_FALSE(estimate_training_memory(toy(), 10, o, fsdp2, 4, bytes(0)).gradients_after_activations);
}

// Eq. M5 by hand on toy() (1e6 parameters, one gather unit of 1e6 at unit_params 1e8, 1e6 B kept a sample, halved in
// bf16; 1e5 B of input), bf16, AdamW, 10 samples on a shard group of n = 4. FSDP1's flat parameter with fp32 shards
// (shard_dtype fp32, fsdp.yaml): the fp32 shard P·4/n = 1e6 B and no bf16 one (M5a), the bf16 reduced gradient shard
// cast back to fp32, P·4/n = 1e6 B (M5a), AdamW P·8/n = 2e6 B; gathered: two units in flight at 2 B (4e6), the unit's
// bf16 gradient (2e6) and, beside its fp32 cast, its bf16 reduced shard P·2/n = 5e5 (M5b): 6.5e6 B.
TEST(Memory, Fsdp1KeepsFp32ShardsAndCastsEachReducedGradientBackByHand) {
  ComputeOptions o;
  o.precision = Precision::bf16;
  o.optimizer = Optimizer::adamw;
  Sharding fsdp1;
  fsdp1.stage = 3;
  fsdp1.fp32_shards = true;
  const double P = 1e6, n = 4, a = 1e6 / 2;
  const MemoryEstimate m = estimate_training_memory(toy(), 10, o, fsdp1, 4, bytes(0));
  EXPECT_DOUBLE_EQ(in_bytes(m.weights), P * 4 / n);
  EXPECT_DOUBLE_EQ(in_bytes(m.gradients), P * 4 / n);
  EXPECT_DOUBLE_EQ(in_bytes(m.optimizer_state), P * 8 / n);
  EXPECT_DOUBLE_EQ(in_bytes(m.gathered), 2 * P * 2 + P * 2 + P * 2 / n);
  EXPECT_FALSE(m.gradients_after_activations);  // FSDP1: counted at the peak beside the activations, as before
  EXPECT_DOUBLE_EQ(in_bytes(m.allocated()), P * 4 / n + P * 8 / n + P * 4 / n + 10 * a + 10 * 1e5 + 6.5 * P);
  // ZeRO's half partitions (shard_dtype working): a bf16 working shard beside the fp32 master, bf16 gradient shards,
  // no cast: P·6/n + P·2/n + P·8/n and 6e6 gathered, 5e5 B less in all
  Sharding zero = fsdp1;
  zero.fp32_shards = false;
  const MemoryEstimate z = estimate_training_memory(toy(), 10, o, zero, 4, bytes(0));
  EXPECT_DOUBLE_EQ(in_bytes(z.weights) + in_bytes(z.gradients), P * 6 / n + P * 2 / n);
  EXPECT_DOUBLE_EQ(in_bytes(m.allocated()) - in_bytes(z.allocated()), P * 2 / n);
  // reduce_dtype fp32 (llm-foundry.yaml): the unit's gradient cast to fp32 before the reduce-scatter, P·4 = 4e6 beside
  // its bf16 original (M5b); the shards fp32 as reduced
  Sharding fp32_reduce = fsdp1;
  fp32_reduce.reduce_fp32 = true;
  const MemoryEstimate r = estimate_training_memory(toy(), 10, o, fp32_reduce, 4, bytes(0));
  EXPECT_DOUBLE_EQ(in_bytes(r.gradients), P * 4 / n);
  EXPECT_DOUBLE_EQ(in_bytes(r.gathered), 2 * P * 2 + P * 2 + P * 4);
  // one GPU casts nothing (no reduce-scatter); with accumulation (no_sync) the whole bf16 gradients, as before
  EXPECT_DOUBLE_EQ(in_bytes(estimate_training_memory(toy(), 10, o, fsdp1, 1, bytes(0)).gathered), 0.0);
  o.accumulate = 2;
  EXPECT_DOUBLE_EQ(in_bytes(estimate_training_memory(toy(), 10, o, fsdp1, 4, bytes(0)).gradients), P * 2);
}

TEST(Checkpointing, EverySegmentButTheLastRunsItsForwardAgain) {
  // The three-layer hand scenario (forward 0.1 s each, backward 0.3, 0.2, 0.1): ⌈√3⌉ = 2 segments of 2,
  // {l1, l2} and {l3}; l1 and l2 recompute their forward: backward + 0.2 s, and on one GPU (compute-bound,
  // reads hidden) the iteration too.
  Scenario sc = test::three_layer_scenario();
  const Prediction plain = Predictor(sc).predict(1);
  sc.compute.checkpointing = true;
  const Prediction ckpt = Predictor(sc).predict(1);
  EXPECT_NEAR(in_seconds(ckpt.breakdown.backward - plain.breakdown.backward), 0.2, 1e-12);
  EXPECT_NEAR(in_seconds(ckpt.iteration_time - plain.iteration_time), 0.2, 1e-12);
  EXPECT_DOUBLE_EQ(ckpt.mfu / plain.mfu, in_seconds(plain.iteration_time) / in_seconds(ckpt.iteration_time));
}

TEST(Checkpointing, ANetworkOfOneLayerHasNothingToCheckpoint) {
  const auto model =
      test::temp_file("one-layer.yaml",
                      "name: one\ndescription: one layer\ninput: {kind: image, shape: [3, 8, 8], bytes_per_sample: \"768 B\"}\n"
                      "layers:\n  - {name: fc, kind: linear, params: 10, forward_flops: 20, activation_bytes: \"40 B\"}\n");
  const auto r =
      test::run_cli("predict --cluster dgx1v --model " + model.string() + " --framework pytorch-ddp --gpus 1,8 --checkpointing");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(r.out.empty());
  EXPECT_EQ(r.err, "dlscale: '--checkpointing': model 'one' has 1 learnable layer: nothing to checkpoint\n");
}

}  // namespace
}  // namespace dlscale
