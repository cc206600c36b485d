// Memory fit: the per-GPU memory of one training step (weights, gradients, optimiser state, activations
// kept for backward × batch, the input batch, and a fixed reserve for the CUDA context and workspaces),
// and whether it fits the GPU. A batch that does not fit is a warning, never a failure: frameworks
// recompute, offload or fragment memory in ways this estimate does not see. docs/compute-model.md.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dlscale/compute.hpp"
#include "dlscale/gpu.hpp"
#include "dlscale/network.hpp"
#include "dlscale/sharding.hpp"
#include "dlscale/units.hpp"

namespace dlscale {

struct MemoryEstimate {
  Bytes weights{};          // fp32 weights (mixed precision: fp32 master + fp16 working copy; plain autocast, eq. M4b:
                            // fp32 weights + the products' half copies)
  Bytes gradients{};        // one gradient per parameter (fp32, or fp16 in mixed precision)
  Bytes optimizer_state{};  // optimizer_state_words fp32 words per parameter
  Bytes activations{};      // every learnable layer's kept tensors × batch (fp16 in mixed precision)
  Bytes input{};            // the input batch on the GPU
  Bytes reserved{};         // CUDA context, cuDNN/cuBLAS handles and workspaces
  Bytes allocator_slack{};  // the caching allocator's fragmentation
  Bytes gathered{};         // sharded stage 3: gathered units' parameters and one unit's full gradient
  // FSDP2, one micro-batch (gradients_after_activations): the gradient shards come into being during backward,
  // as the activations are freed, so the step's tensors at their peak are the larger of the two, not both
  // (allocated); the allocator still holds both (allocator_reserved). Also a plain module under autocast (eq. M4c).
  bool gradients_after_activations = false;
  // Eq. M3, FSDP2 at stage 3 (one micro-batch): the end of the backward, when the root unit (the layers outside every
  // transformer block: embedding, final norm, head), never resharded after its forward, reduce-scatters last: the
  // weights and state, the blocks' gradient shards, and the root's gathered parameters, unsharded gradients and the
  // reduce-scatter input they are copied into. Zero elsewhere.
  Bytes backward_end{};
  /// The gradients and activations live at the step's peak (with the input batch).
  [[nodiscard]] Bytes live_gradients_and_activations() const noexcept {
    return gradients_after_activations ? max(gradients, activations + input) : gradients + activations + input;
  }
  /// What the step's tensors hold at its peak: what PyTorch's torch.cuda.max_memory_allocated counts (neither the
  /// reserve nor the allocator's slack).
  [[nodiscard]] Bytes allocated() const noexcept {
    return max(weights + optimizer_state + live_gradients_and_activations() + gathered, backward_end);
  }
  /// What the caching allocator holds (torch.cuda.max_memory_reserved): every tensor at once, the gradients too,
  /// since FSDP2 makes its gradient shards on its reduce-scatter stream, whose pool does not take the blocks the
  /// activations free on the compute stream; and the slack.
  [[nodiscard]] Bytes allocator_reserved() const noexcept {
    return max(weights + gradients + optimizer_state + activations + input + gathered + allocator_slack, backward_end);
  }
  [[nodiscard]] Bytes total() const noexcept { return allocator_reserved() + reserved; }
};

/// The reserve for CUDA context and library workspaces (default 1 GB; see docs/compute-model.md).
inline constexpr double kDefaultReservedBytes = 1e9;
/// Fragmentation of PyTorch's caching allocator as a fraction of the activations and gradients allocated
/// and freed each step (docs/compute-model.md, "Memory"). Bounded by published batches that ran: Lambda's
/// ResNet-50 at 496 in fp32 on 48 GB boards leaves room for at most about 10 %.
inline constexpr double kAllocatorSlack = 0.05;

MemoryEstimate estimate_training_memory(const Network& net, int batch, const ComputeOptions& opt,
                                        Bytes reserved = bytes(kDefaultReservedBytes));
/// The same under a sharded strategy whose shard group holds `shard` GPUs (docs/model.md, eq. S3).
MemoryEstimate estimate_training_memory(const Network& net, int batch, const ComputeOptions& opt, const Sharding& sharding,
                                        int shard, Bytes reserved = bytes(kDefaultReservedBytes));
/// The same with activation_bytes_per_sample(net, opt) already known.
MemoryEstimate estimate_training_memory(const Network& net, int batch, const ComputeOptions& opt, const Sharding& sharding,
                                        int shard, Bytes reserved, Bytes activations_per_sample);

/// Whether the gradients come into being only as the activations are freed (MemoryEstimate::
/// gradients_after_activations): FSDP2 (per-parameter shards, stage 2-3) at one micro-batch, whose gradient shards
/// zero_grad(set_to_none) drops and each unit's reduce-scatter makes again in backward. Not DDP (its buckets
/// persist), nor accumulation (the gradients outlive the micro-batches), nor flat shards (FSDP1 and ZeRO: the
/// framework files do not say which keeps persistent gradient buffers).
bool fsdp2_gradients_after_activations(const Sharding& sharding, const ComputeOptions& opt) noexcept;

/// Eq. R1 with a fraction f of the blocks checkpointed (fms-fsdp's selective_checkpointing): block b of B is one
/// of them when ⌊(b+1)·f⌋ > ⌊b·f⌋, every (1/f)-th block.
bool block_checkpointed(int block, double fraction) noexcept;
/// Eq. R1-R3: the forward time layer i runs again in backward under the options' recompute mode (zero outside a
/// checkpointed block): R1 all of its forward; R2 its attention core; R3 all but its GEMMs and attention core,
/// plus every second GEMM (half its GEMM time). `block_end`: layer i is its block's last; under a non-reentrant
/// checkpoint's early stop (ComputeOptions::recompute_early_stop, eq. R1b) R1 leaves out its forward_unsaved.
Seconds recompute_time(const LayerTimes& t, std::size_t i, int block, const ComputeOptions& opt, bool block_end = false) noexcept;
/// Whether layer i is the last of its transformer block (`block` as transformer_blocks gives it).
[[nodiscard]] inline bool block_ends(const std::vector<int>& block, std::size_t i) noexcept {
  return i < block.size() && block[i] >= 0 && (i + 1 == block.size() || block[i + 1] != block[i]);
}
/// The FLOPs per sample that the options recompute (what HFU counts beyond MFU): ⌈√L⌉ checkpointing every
/// segment's forward but the last's; R1 the checkpointed blocks' forward FLOPs, R2 the attention cores' score
/// products (4·S²·D a sequence), R3 half the blocks' GEMM FLOPs.
double recompute_flops_per_sample(const Network& net, const ComputeOptions& opt);
/// What one sample keeps for backward under a recompute mode (fp32 figure): R1 a checkpointed block's input (the
/// block rebuilt during its recompute is recomputed_block_bytes_per_sample); R2 as without recompute less the
/// attention probabilities; R3 the block's input and what op_sac_saved_bytes_per_sample keeps of each layer.
double recompute_kept_bytes_per_sample(const Network& net, const ComputeOptions& opt, bool flash_attention);

/// Eq. R3, torchtitan's per-op SAC: what a block's layer keeps (fp32 figure, per sample): the outputs of the
/// block's odd-numbered matrix products (torchtitan's policy recomputes every second mm; `matmuls` counts the
/// block's products so far: q, k, v, the output projection, then gate, up, down) and the attention kernel's
/// output; the element-wise work in between (norms, rotary, SiLU) is recomputed. Zero for a layer without shapes.
double op_sac_saved_bytes_per_sample(const Layer& layer, int& matmuls) noexcept;

/// Eager mixed precision's loss (eq. K14): the logits' fp32 copy and the log-softmax's fp32 output, kept for
/// backward, 8 B per element of the last layer's output; zero in fp32 or with the loss compiled (loss_fused).
/// (What a pipeline's last stage keeps, lib/parallel; a whole step's peak counts loss_backward_bytes_per_sample.)
double fp32_loss_bytes_per_sample(const Network& net, const ComputeOptions& opt) noexcept;
/// What the loss holds at its backward, per sample, in mixed precision: eager, 12 B a logit, the log-softmax's
/// fp32 output (the one tensor it keeps), the fp32 gradient nll_loss hands it and the fp32 gradient of its input,
/// live together while every activation is still kept (neither the half logits nor their fp32 copy outlive the
/// loss's forward); compiled with the step (loss_fused), the half logits the fused loss keeps and their half
/// gradient, 2 + 2 B. Zero in fp32 (not counted there: its logits are a small share of an fp32 network's).
double loss_backward_bytes_per_sample(const Network& net, const ComputeOptions& opt) noexcept;
/// Eq. M2: whether `net`'s last layer is a language model's head, a linear layer with no operators and a logit per
/// token (an output of two or more dimensions), whose output the loss's term holds in mixed precision.
bool language_model_head(const Network& net) noexcept;
/// Eq. M1: what eager PyTorch's decoder code (torchtitan's and Hugging Face's Llama as written; not compiled) makes
/// autograd save beyond the layer's own count, per sample, in bytes: an RMSNorm (`_norm(x.float()).type_as(x) *
/// weight`) its fp32 input and its normalized tensor, 4 B an element in every precision (M1a); a SwiGLU MLP silu's
/// output, the fourth tensor of F (M1b); grouped-query attention through repeat_kv its key and value at the query's
/// width (M1c). Zero compiled, and for every other layer.
double eager_decoder_saved_bytes_per_sample(const Layer& layer, const ComputeOptions& opt) noexcept;
/// Plain autocast: mixed precision whose parameters stay fp32 and are cast at each use (torch.autocast without a
/// sharded MixedPrecision policy; the framework's `mixed_precision: {gradients: fp32}`, ComputeOptions::fp32_gradients).
bool plain_autocast(const ComputeOptions& opt) noexcept;
/// Eq. M4a: what eager Llama code (`rmsnorm_composite`, not compiled) saves under plain autocast beyond the layer's count
/// and M1, per sample, in bytes. The embedding's fp32 output makes the residual stream and the norms fp32: a composite
/// RMSNorm's normalized tensor is 4 B (M1 counted it at half width), and each product casts the norm's output to half
/// for itself and saves its copy where the count holds one: attention two more (q, k, v; multi-head latent attention
/// one more), a dense SwiGLU MLP one more (w1, w3). Zero for every other layer, elsewhere, and compiled.
double autocast_decoder_saved_bytes_per_sample(const Layer& layer, const ComputeOptions& opt) noexcept;
/// Eq. M4b: autocast's half copies of the products' weights (linear, attention, convolution layers; a tied head the
/// embedding's weight again), held from their forward to their backward: 2 B a weight under plain autocast, zero
/// otherwise. Not the embeddings', the norms' or batch norm's, which autocast does not cast.
double autocast_weight_copy_bytes(const Network& net, const ComputeOptions& opt) noexcept;
/// Eq. M4c: a plain module's gradients under plain autocast in eager decoder code (one replica, one micro-batch: not
/// sharded, `rmsnorm_composite`), set to None by zero_grad, come into being in backward as the activations are freed
/// (MemoryEstimate::gradients_after_activations). Not with accumulation, not sharded, nor for other networks, whose
/// peaks were not checked against a run without DDP's buckets.
bool autocast_gradients_after_activations(const Sharding& sharding, const ComputeOptions& opt) noexcept;
/// Eq. R1's peak during a recompute: the largest checkpointed block's own tensors, rebuilt while the checkpoints
/// are kept (fp32 figure); zero under the other modes. The loss's backward comes before any recompute, so a step
/// holds the larger of the two beside what it keeps (activation_bytes_per_sample), not both.
double recomputed_block_bytes_per_sample(const Network& net, const ComputeOptions& opt, bool flash_attention);

/// Activation checkpointing (Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost"): the L
/// learnable layers in ⌈√L⌉ consecutive segments of ⌈L / ⌈√L⌉⌉ layers (the last may be shorter); returns
/// each segment's first layer. Every segment but the last is recomputed in backward (its forward again).
std::vector<int> checkpoint_segments(const Network& net);
/// What one sample keeps for backward under checkpointing (fp32 figure): the input of every segment but
/// the first (the input batch, counted apart), plus the largest segment's own tensors (one segment is
/// rebuilt at a time; the last is never dropped).
double checkpointed_kept_bytes_per_sample(const Network& net, bool flash_attention = false, bool lrn = true);
/// What a fused (FlashAttention) kernel does not keep of an attention layer, per sample (fp32 basis as
/// Layer::activation_bytes_per_sample): the heads·S² probabilities of each sequence (the softmax output,
/// and with dropout on them its output and mask). It keeps a per-row log-sum-exp instead (heads·S), which
/// is left in the count. Zero for other layers.
double flash_attention_saving_per_sample(const Layer& l) noexcept;
/// What unfused attention under autocast (mixed precision with fp32 parameters) keeps beyond the half-width
/// figure, per sample: the softmax output stays fp32 (autocast's fp32 op list), 4 B a probability instead of
/// 2. Zero in fp32, in a half working copy's mixed precision (apex O2, DeepSpeed) and with a fused kernel.
/// estimate_training_memory adds it without checkpointing only: a checkpointed step's probabilities stay at
/// the halved figure (an approximation, left as it is).
double autocast_softmax_bytes_per_sample(const Network& net, const ComputeOptions& opt) noexcept;

struct MemoryFit {
  MemoryEstimate need;
  Bytes available{};
  bool fits = true;
  int largest_batch = 0;  // the largest batch whose estimate fits (0 if not even batch 1 fits)
  std::string warning;    // empty when it fits; one line otherwise
};

/// Whether a batch fits the GPU's memory, with a one-line warning when it does not. A GPU without a memory
/// size (an inline GPU that leaves `memory` out) has nothing to check against: it fits, with available and
/// largest_batch 0 (unknown).
MemoryFit check_memory_fit(const Network& net, const GpuSpec& gpu, int batch, const ComputeOptions& opt,
                           Bytes reserved = bytes(kDefaultReservedBytes));
/// The same under a sharded strategy whose shard group holds `shard` GPUs.
MemoryFit check_memory_fit(const Network& net, const GpuSpec& gpu, int batch, const ComputeOptions& opt, const Sharding& sharding,
                           int shard, Bytes reserved = bytes(kDefaultReservedBytes));
/// The same with the activations one sample keeps already known (activation_bytes_per_sample): what a
/// Predictor does, which asks once per GPU count.
MemoryFit check_memory_fit(const Network& net, const GpuSpec& gpu, int batch, const ComputeOptions& opt, const Sharding& sharding,
                           int shard, Bytes reserved, Bytes activations_per_sample);

/// What one sample holds at the step's peak in this step's precision: every layer's and operator's tensors as the
/// options keep them (checkpointing or recompute, fused attention, the autocast softmax), plus the larger of the
/// loss's backward (loss_backward_bytes_per_sample) and a recomputed block (recomputed_block_bytes_per_sample).
Bytes activation_bytes_per_sample(const Network& net, const ComputeOptions& opt);

}  // namespace dlscale
