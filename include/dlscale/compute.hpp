// Per-layer compute time: how long each learnable layer (with the parameter-free operators that follow
// it) takes forward, backward and to update on one GPU at a batch size. From specifications, every
// kernel is timed by the kernel model (include/dlscale/kernels.hpp); a measured profile replaces it.
// Model, parameters and their sources: docs/compute-model.md.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dlscale/gpu.hpp"
#include "dlscale/kernels.hpp"
#include "dlscale/network.hpp"
#include "dlscale/sharding.hpp"
#include "dlscale/units.hpp"

namespace dlscale {

struct Cluster;

/// Per-layer times, indexed like Network::layers (element 0 = layer 1, the input side).
struct LayerTimes {
  std::vector<Seconds> forward, backward, update;
  /// Per layer, the parts of `forward` that the recompute modes tell apart (eq. R1-R3; the kernel model fills
  /// them, measured or profiled times leave them empty): its GEMMs and its attention core.
  std::vector<Seconds> forward_gemm, forward_attention;
  /// Per layer, the part of `forward` that a recompute does not run again: FSDP2's copy-out of the gathered
  /// parameters (eq. S10; the backward's own gather brings its own copy-out).
  std::vector<Seconds> forward_copies;
  /// Per layer, the part of `forward` after the last tensor its backward keeps (eq. R1b; the kernel model fills it for
  /// an MLP whose operators are residual additions): the down projection's product, whose output only the addition
  /// reads, and the addition. PyTorch's non-reentrant checkpoint stops its recompute once every kept tensor of the block
  /// is rebuilt, so where a block ends with this layer its recompute does not run this part.
  std::vector<Seconds> forward_unsaved;
  /// Per layer, the part of `backward` that is the attention core's (the kernel model fills it): what a
  /// context-parallel rank runs c times over, one block of its ring at a time (eq. P6).
  std::vector<Seconds> backward_attention;
  /// Per layer, the part of `backward` that is the weight-gradient GEMM of its first linear map, the one that reads
  /// the layer's input (attention's q/k/v, an MLP's up and gate, a linear layer's own; the kernel model fills it):
  /// what Megatron's column-parallel backward runs beside its input gradient's collective (eq. P28).
  std::vector<Seconds> input_wgrad{};
  /// The kernels each phase issues over all layers, as the kernel model counts them (the host's issue floor, eq.
  /// K20, charges each its host cost); zero where the times are measured or profiled.
  double forward_kernels = 0.0, backward_kernels = 0.0, update_kernels = 0.0;
  /// Eq. K20: how much of each phase's total is the host's issue floor beyond the GPU's own work (floor − the
  /// GPU's time where the floor binds, else zero); part of forward, backward and update, not beside them.
  Seconds forward_floor{}, backward_floor{}, update_floor{};

  [[nodiscard]] Seconds total_forward() const noexcept;
  [[nodiscard]] Seconds total_backward() const noexcept;
  [[nodiscard]] Seconds total_update() const noexcept;
  /// Field for field (a sweep's shared times against a step's own, in the tests).
  bool operator==(const LayerTimes&) const = default;
};

/// The optimiser of the update step: its state per parameter and its memory traffic (docs/compute-model.md).
enum class Optimizer { sgd, momentum, adam, adamw, lamb };
std::string_view to_string(Optimizer o) noexcept;
/// "sgd", "momentum", "adam", "adamw" or "lamb"; std::invalid_argument otherwise.
Optimizer optimizer_from_string(std::string_view name);
inline constexpr std::string_view kOptimizerNames = "sgd, momentum, adam, adamw, lamb";
/// fp32 words of optimiser state per parameter: SGD 0, momentum 1, Adam/AdamW/LAMB 2.
int optimizer_state_words(Optimizer o) noexcept;
/// What a network is usually trained with: AdamW for token models (transformers), SGD with momentum for
/// image models.
Optimizer default_optimizer(const Network& net) noexcept;

/// How the optimiser's arithmetic is laid out in kernels (PyTorch's torch.optim names; docs/compute-model.md,
/// "Optimisers"): `fused`, one kernel that reads every operand once and writes each result once (fused=True,
/// apex's and DeepSpeed's FusedAdam); `foreach`, torch.optim's default on CUDA since 2.0, one multi-tensor pass
/// per arithmetic operation of the update (_multi_tensor_adamw: eight for AdamW); `for_loop`, the same
/// operations a kernel per tensor (foreach=False).
enum class OptimizerImpl { fused, foreach, for_loop };
std::string_view to_string(OptimizerImpl o) noexcept;
/// "fused", "foreach" or "for_loop"; std::invalid_argument otherwise.
OptimizerImpl optimizer_impl_from_string(std::string_view name);
inline constexpr std::string_view kOptimizerImplNames = "fused, foreach, for_loop";
/// The passes an unfused (foreach or for-loop) update makes over each tensor: SGD 1, momentum 3, Adam 7,
/// AdamW 8 (torch.optim's _multi_tensor_* and _single_tensor_* code), LAMB 8 (apex's unfused reference).
int optimizer_passes(Optimizer o) noexcept;

/// A framework's update as its own kernels run it (`update_kernels:` in a framework file; docs/reproduce.md,
/// "Shi & Chu's frameworks"): `traffic` bytes a parameter at the GPU's datasheet memory bandwidth, and
/// `per_tensor` for each parameter tensor (weight, bias, a normalisation's scale and shift), the kernels and host
/// work a framework spends on every tensor whatever its size. Both per framework, never per network.
struct UpdateKernelCost {
  double traffic = 0.0;                       // bytes a parameter at the datasheet bandwidth
  Seconds per_tensor{};                       // a parameter tensor
  Optimizer optimizer = Optimizer::momentum;  // the optimiser whose update this is: another one takes the generic model
};

/// How attention's scores are computed (docs/compute-model.md, eq. K9): `eager` materialises the
/// heads·S² scores and runs softmax, mask and dropout as separate memory-bound passes (PyTorch before
/// 2.0, most 2017-2022 code); `flash` is one fused kernel per pass (FlashAttention-2, PyTorch 2.x SDPA on
/// fp16/bf16 from Ampere on) that keeps the scores on chip and recomputes them in backward;
/// `memory_efficient` is the same fused structure at the precision's own rate (the kernel PyTorch's SDPA
/// runs where FlashAttention cannot: fp32, TF32, or before Ampere). `sdpa` is a request, not a kernel:
/// PyTorch 2.x `scaled_dot_product_attention`'s dispatch, flash where it runs, memory_efficient elsewhere.
enum class AttentionKernel { eager, flash, memory_efficient, sdpa };
std::string_view to_string(AttentionKernel a) noexcept;
/// "eager", "flash", "memory_efficient" or "sdpa"; std::invalid_argument otherwise.
AttentionKernel attention_kernel_from_string(std::string_view name);
/// Whether FlashAttention runs on this GPU in this precision (fp16 or bf16, SM 8.0 or newer).
bool flash_attention_supported(const GpuSpec& gpu, Precision p) noexcept;
/// Whether the kernel keeps the heads·S² probabilities on chip (flash, memory_efficient).
[[nodiscard]] constexpr bool fused_attention(AttentionKernel a) noexcept {
  return a == AttentionKernel::flash || a == AttentionKernel::memory_efficient;
}
/// The attention kernel a framework's `attention` choice gives on this GPU and precision: `flash` where
/// it runs and eager where not (a file that says flash names a FlashAttention stack); `sdpa` flash where
/// it runs and memory_efficient where not.
AttentionKernel effective_attention(AttentionKernel wanted, const GpuSpec& gpu, Precision p) noexcept;

/// How a step is computed: precision, optimiser, gradient accumulation, the framework's convolution
/// algorithms, and the kernel-model parameters (docs/compute-model.md).
/// Activation recomputation as training frameworks do it, per transformer block (docs/compute-model.md,
/// "Recompute", eq. R1-R3). `ComputeOptions::checkpointing` is the older ⌈√L⌉-segment scheme of Chen et al.
enum class Recompute {
  none,
  full,       // R1: each checkpointed block keeps its input and runs its whole forward again in backward
  selective,  // R2: the attention core only (Megatron-LM's selective recompute; Korthikanti et al. 2022)
  op,         // R3: per-op (torchtitan's SAC): matmul and attention outputs kept except every second matmul's
};
std::string_view to_string(Recompute r) noexcept;
/// "none", "full", "selective" or "op"; std::invalid_argument otherwise.
Recompute recompute_from_string(std::string_view name);
inline constexpr std::string_view kRecomputeNames = "none, full, selective, op";

/// How fp8 training scales the operands of its products (torchao's float8 recipes; docs/compute-model.md, eq. K15):
/// `tensorwise`, one scale per tensor, each operand cast to fp8 once and its fp8 copy transposed for the backward
/// (torchao's "tensorwise", Transformer Engine's delayed or current scaling); `rowwise`, one scale per row of each
/// operand along its product's reduction dimension (torchao's "rowwise": e4m3 everywhere), so the backward casts
/// the output gradient along both axes and the saved bf16 input and weight again along the other axis; `mxfp8`, MX
/// block scaling (Transformer Engine's MXFP8BlockScaling, torchao's mxfp8 recipes; eq. K15c): one power-of-two (E8M0)
/// scale per 32 consecutive elements along the reduction dimension, cast along both axes as row-wise scaling is, each
/// block's scale its own maximum (no amax over a tensor or a row), 1 B of scales per 32 elements. Blackwell only
/// (`supports_fp8_scaling`): the block-scaled products run on its tensor cores at the fp8 rate.
enum class Fp8Scaling { tensorwise, rowwise, mxfp8 };
std::string_view to_string(Fp8Scaling s) noexcept;
/// "tensorwise", "rowwise" or "mxfp8"; std::invalid_argument otherwise.
Fp8Scaling fp8_scaling_from_string(std::string_view name);
inline constexpr std::string_view kFp8ScalingNames = "tensorwise, rowwise, mxfp8";
/// The precision as the outputs name it (predict's and report's inputs, sweep rows, plan and explain headers):
/// `to_string(p)`, and "fp8-rowwise" or "fp8-mxfp8" for fp8 with row-wise or MX scaling (fp8 alone is tensor-wise,
/// the default), so that two runs that differ only in their scaling never print the same label.
std::string_view precision_label(Precision p, Fp8Scaling s) noexcept;
/// Whether the GPU runs the recipe's products: MX block scaling needs Blackwell's block-scaled tensor cores (the
/// catalogue's architecture "blackwell"; Hopper has no block-scaled MMA); tensor- and row-wise scaling run wherever
/// fp8 does (GpuSpec::supports).
[[nodiscard]] bool supports_fp8_scaling(const GpuSpec& gpu, Fp8Scaling s) noexcept;
/// Why `supports_fp8_scaling` refuses, as one sentence for the error or note that says so: "the H100 SXM5 80 GB of
/// cluster 'c' (hopper) has no mxfp8 scaling (it needs Blackwell's block-scaled tensor cores)"; an empty `cluster`
/// leaves the cluster out (`model show --gpu`).
[[nodiscard]] std::string missing_fp8_scaling(const GpuSpec& gpu, Fp8Scaling s, std::string_view cluster);

/// How a framework runs the memory-bound work around its convolutions and matrix products, and issues its
/// kernels (a framework file's `kernels:` block; docs/compute-model.md, eqs. K18-K20). The defaults are the
/// shipped fit's: every memory-bound pass at the fitted `memory_efficiency`, nothing fused, each kernel charged
/// the fitted `kernel_overhead` (which carries eager PyTorch's host cost).
struct KernelExecution {
  /// K18 (`memory_bound: streaming`): the step's memory traffic moves at KernelParams::copy_efficiency of the
  /// DRAM bandwidth, as a channels-last step's NHWC batch norms and vectorised element-wise kernels were
  /// measured to (tests/data/h100-pytorch/kernels.txt), not at the fitted blend.
  bool streaming = false;
  /// K21 (`memory_bound: by_class`): each memory-bound pass at its kernel class's measured rate
  /// (KernelParams::memory_classes): the element-wise chains of eager PyTorch's decoders split into the
  /// vectorized, strided, upcast, reduction and softmax kernels they run, FSDP2's chunk_cat at its own.
  bool by_class = false;
  /// K24 (`model_code: transformers-gpt2`): the blocks run as Hugging Face transformers' GPT-2 code (before SDPA) writes
  /// them in eager PyTorch: gelu_new's tanh formula an operator a kernel, the scores scaled, masked by torch.where and
  /// the additive padding mask, softmax and dropout each a pass, Conv1D's addmm copying its bias into the output, the
  /// embedding's and the residual branches' dropouts (docs/compute-model.md, K24).
  bool transformers_gpt2 = false;
  /// K20 (`model_code: transformers-bert`): the host's floor was measured on Hugging Face transformers' BERT code and
  /// binds on encoders only (networks whose attention has no causal mask); the framework's other networks keep the
  /// fitted per-kernel charge and no floor. The encoder's GPU kernels are the model's own (docs/compute-model.md, K20).
  bool transformers_bert = false;
  /// K19 (`fused: [bn_relu]`): a batch norm's kernels apply the ReLU after it (cuDNN's batch norm with its
  /// activation, XLA's fusions): the ReLU's passes are not run; its backward reads the output for the mask.
  bool bn_relu = false;
  /// K19 (`fused: [bn_add_relu]`): a batch norm's kernels add the residual and apply the ReLU after it
  /// (MXNet's BatchNormAddRelu, XLA): the addition's and the ReLU's passes are not run.
  bool bn_add_relu = false;
  /// K9 (`attention: cudnn`): the fused attention kernel is cuDNN's (Transformer Engine, SDPA's cudnn backend), at
  /// KernelParams::cudnn_forward_efficiency and _backward where the architecture has them, not FlashAttention-2's.
  bool cudnn_attention = false;
  /// K20 (`host_issue`): the host's cost of issuing one kernel. Set, each phase takes at least its kernels × host_issue
  /// and each kernel costs the GPU `launch_gap`, or the fitted kernel_overhead where no gap is given; zero, each
  /// kernel is charged kernel_overhead and there is no floor.
  Seconds host_issue{};
  std::optional<Seconds> launch_gap;
  /// K20 (`issued_per_kernel`): the kernels the network's code issues in its forward and backward per kernel the model
  /// counts there; the forward's and backward's floors are their kernels × this × host_issue, the update's (torch.optim's
  /// launches, counted as it makes them) its kernels × host_issue. 1: host_issue is per kernel the model counts.
  double issued_per_kernel = 1.0;
};

struct ComputeOptions {
  Precision precision = Precision::fp32;
  /// fp8's scaling recipe (eq. K15, K15c); read only when `precision` is fp8 (validate refuses the others otherwise).
  Fp8Scaling fp8_scaling = Fp8Scaling::tensorwise;
  /// Eq. S12 (torchao's enable_fsdp_float8_all_gather with precompute_float8_dynamic_scale_for_fsdp): a stage-3 step
  /// casts each fp8 linear map's weight shard to fp8 before its all-gather, which moves and holds those weights at 1 B
  /// an element; the forward casts no gathered weight, and one kernel a step reads the shards for their amax after the
  /// optimiser. Only with fp8 precision, tensor-wise scaling and a stage-3 strategy (validate refuses it otherwise).
  bool fp8_all_gather = false;
  Optimizer optimizer = Optimizer::momentum;
  /// The optimiser's kernels (OptimizerImpl); unset: the framework's (`optimizer_impl:`), else fused.
  std::optional<OptimizerImpl> optimizer_impl;
  /// The framework's own update kernels (Strategy::update_kernels); unset: the optimiser's traffic and kernels.
  std::optional<UpdateKernelCost> update_kernels;
  int accumulate = 1;          // forward/backward passes per gradient exchange and update (≥ 1)
  bool checkpointing = false;  // activation checkpointing: ⌈√L⌉ segments, forward recomputed in backward
                               // (include/dlscale/memory.hpp, checkpoint_segments)
  /// Full recompute stops at the block's last kept tensor (Strategy::checkpoint_early_stop, eq. R1b): the block's trailing
  /// product and residual addition (LayerTimes::forward_unsaved) are not run again.
  bool recompute_early_stop = false;
  /// Eq. M1a (Strategy::rmsnorm_composite): eager RMSNorm as composite operators saves its fp32 input and its
  /// normalized tensor, 4 B an element beyond the layer's count; false: a fused kernel's input and row statistics.
  bool rmsnorm_composite = false;
  Recompute recompute = Recompute::none;  // per transformer block (eq. R1-R3)
  double recompute_blocks = 1.0;          // full: the fraction of blocks checkpointed (fms-fsdp's selective_checkpointing)
  ConvAlgorithmPolicy conv_algorithms;    // which cuDNN algorithms the framework reaches
  AttentionKernel attention = AttentionKernel::eager;  // as it runs (effective_attention), not as asked
  bool fp32_gradients = false;  // mixed precision with fp32 parameters: fp32 gradients (Strategy::fp32_gradients)
  bool lrn = true;              // false: the framework has no LRN, a network's LRN operators are not run (Strategy::lrn)
  int pool_index_bytes = 8;     // max pooling's routing index per output (Strategy::pool_index_bytes, eq. K17); 0: cuDNN's
  /// Element-wise chains compiled into one kernel each (torch.compile, XLA; Strategy::compiled, eq. K14):
  /// RMSNorm, rotary embedding and the loss's fp32 upcast read and write their tensor once. False: eager
  /// PyTorch runs them as the composite operators the models are written in, a kernel per operator.
  bool compiled = false;
  /// Compiled, whether the loss is inside the compiled region (Strategy::compile_loss, eq. K14): true, its fp32
  /// log-softmax is fused and keeps only row statistics; false (torchtitan before 2025 compiled each block but
  /// left the loss eager), the loss runs and keeps what eager mixed precision keeps.
  bool compiled_loss = true;
  /// The step is a sharded (FSDP/ZeRO) one: its tensor-core work runs at KernelParams::sharded_tensor of the
  /// modelled rate (eq. K16; set by step_compute from the framework). The Predictor times one GPU, where no
  /// collective runs beside the kernels, without it.
  bool sharded = false;
  /// The framework's sharding (Strategy::sharding, whole; set by step_compute). The kernel model reads two things of it
  /// at stage 3. Eq. S10 (per_parameter_copies): FSDP2's per-parameter sharding copies each layer's gathered
  /// parameters out of the all-gather's buffer before its forward (and its backward when `reshard_after_forward`), and
  /// concatenates its gradients into the reduce-scatter's input (reduce_bytes_per_element an element) after its
  /// backward. Eq. S11: the framework's own operations per gather unit's all-gather (`gather_ops`) and reduce-scatter
  /// (`reduce_ops`), each at `unit_op_issue` (zero: execution.host_issue), counted in the host's issue floor (eq. K20)
  /// over the units gather_units gives (`wrap`, `unit_params`: eq. S4b or S4).
  Sharding sharding;
  /// How the framework runs its memory-bound kernels and issues its kernels (Strategy::execution, eqs. K18-K20).
  KernelExecution execution;
  /// Kernel-model parameters; null: the shipped topologies/compute-params.yaml.
  std::shared_ptr<const KernelParamSet> kernel_params;

  /// The kernel parameters of `gpu`'s architecture.
  [[nodiscard]] const KernelParams& kernel(const GpuSpec& gpu) const;
};

/// Eq. K14: the loss's fp32 log-softmax fused into one kernel (compiled with the step) or run eager.
[[nodiscard]] constexpr bool loss_fused(const ComputeOptions& o) noexcept { return o.compiled && o.compiled_loss; }

/// Bytes per element of activations: 4 in fp32/TF32, 2 in mixed (the gradients' are gpu.hpp's
/// gradient_bytes_per_element).
double activation_bytes_per_element(Precision p) noexcept;
/// The gradients a step of `opt` computes and exchanges: 2 B in mixed precision unless the parameters stay
/// fp32 (`fp32_gradients`), 4 B otherwise.
double gradient_bytes_per_element(const ComputeOptions& opt) noexcept;
/// Eq. K27a (docs/compute-model.md, "Optimisers"): bytes per element of the gradient the optimiser step reads. A sharded
/// step (`sharding`, stage ≥ 1): its shard as the reduce leaves it, gradient_shard_bytes_per_element (4 under
/// `reduce_dtype: fp32` or fp32 shards, eq. M5, in mixed precision); replicated: gradient_bytes_per_element(opt).
double optimizer_gradient_bytes_per_element(const ComputeOptions& opt) noexcept;
/// Eq. K27b: whether the step writes a half-precision working copy of the weights it updates (2 B an element): in mixed
/// precision, unless the parameters stay fp32 (`fp32_gradients`, plain autocast) or the shards are the fp32 parameters
/// (eq. M5, Sharding::held_in_fp32: FSDP casts each unit as it gathers it).
bool optimizer_writes_half_copy(const ComputeOptions& opt) noexcept;
/// Bytes one optimiser step moves per parameter, with g eq. K27a's gradient width and h eq. K27b's half copy (2 or 0).
/// Fused: read weight (4) and gradient (g), write weight (4) and h, read and write each state word; LAMB reads the
/// weight and the update again for its trust ratio. Foreach and for-loop: each pass reads its operands and writes its
/// result, + h (docs/compute-model.md, "Optimisers": AdamW 72 + 2·g + h B, against the fused 8 + g + h + 16).
double update_bytes_per_param(const ComputeOptions& opt) noexcept;

/// The forward and backward kernels of one layer and the operators that follow it, timed by the kernel
/// model (what `dlscale model show --kernels` prints). `first` = layer 1 (no input gradient).
struct KernelTiming {
  std::string name;  // "conv1 fwd", "conv1 dgrad (winograd)", "layer1.0.relu bwd", ...
  Seconds time{};
  Flops flops{};
  Bytes traffic{};
  bool backward = false;
};
std::vector<KernelTiming> layer_kernels(const Layer& layer, bool first, bool last, const GpuSpec& gpu, int batch,
                                        const ComputeOptions& opt);

/// Eq. S12: the elements of the weights fp8 training converts in `layer` (the in·out of each linear map of the blocks'
/// attention and MLPs that eq. K15 casts, a mixture's router included, its experts not; no bias, no norm): what an fp8
/// all-gather moves at 1 B an element. 0 for every other layer (embeddings, norms, the output projection).
double fp8_weight_elements(const Layer& layer) noexcept;

/// Every layer's forward, backward and update time from the kernel model (one micro-batch of `batch`).
LayerTimes estimate_layer_times(const Network& net, const GpuSpec& gpu, int batch, const ComputeOptions& opt);
/// What estimate_layer_times reads of `opt.sharding`, every other field at Sharding's default: options that differ only
/// in their sharding, and give the same here, give the same layer times (a sweep keys the layer times it shares on it).
/// In mixed precision, eq. K27a-b: a sharded step (stages 1 and 2 alike, as stage 1), whether its shards are fp32
/// (held_in_fp32, as `fp32_shards`) and, where they are not or eq. S10 copies, its reduce width (`reduce_fp32`).
/// Stage 3: eq. S10's copies (`per_parameter`, the backward's copy-out by `reshard_after_forward`) and eq. S11's
/// operations per gather unit (`gather_ops`, `reduce_ops`; where there are some, the units by `wrap` and `unit_params`,
/// the backward's gathers by `reshard_after_forward`, and their host cost `unit_op_issue` where the host's floor can
/// bind, host_issue > 0). The shard group, the units in flight and the CPU offload are not read.
[[nodiscard]] Sharding layer_times_sharding(const ComputeOptions& opt) noexcept;

/// Spread measured phase totals over the layers in proportion to modelled per-layer times, so that the
/// totals equal the measurement and the shape follows the model.
LayerTimes spread_phase_totals(const LayerTimes& modelled, Seconds forward, Seconds backward, Seconds update);

// ---- A sharded step's units as the kernel model sees them (eqs. S5-S7b, S12, M5c; shard_units.cpp) --------------------
// In the compute layer: they read the fp8 linear maps' weights (fp8_weight_elements) and time FSDP1's cast as a
// memory-bound kernel; the byte counts are the sharding layer's (shard_unit_bytes).

/// Eq. S12: of a gather unit's gathered parameters, the fp8 linear maps' weight elements (fp8_weight_elements over its
/// layers); none for a unit that gathers nothing (eq. S4b: the layers after the last block, whose parameters the root
/// holds). What an fp8 all-gather moves at 1 B, when one applies (fp8_all_gathers).
double unit_fp8_elements(const Network& net, const GatherUnit& u);
/// Eq. S12 applies: `--fp8-all-gather` with fp8 precision at stage 3 (Validate refuses it elsewhere).
bool fp8_all_gathers(const Sharding& s, const ComputeOptions& opt) noexcept;

/// Each unit's time on the reduce channel (its reduce-scatter, the replicas' all-reduce, the M5c cast, in that order,
/// eq. S7) and on the gather channel (its all-gather, eq. S5), from shard_unit_bytes with the collective model's
/// times() over the units in order (input side first). A unit of no parameters takes none (eq. S4b). `fp8_elements`:
/// unit_fp8_elements of each unit, counted where fp8_all_gathers(s, opt); empty: none.
void shard_unit_times(std::span<const double> params, std::span<const double> fp8_elements, const Sharding& s,
                      const ComputeOptions& opt, const Cluster& cluster, const ShardGroups& g, const CollectiveModel& coll,
                      std::span<Seconds> reduce, std::span<Seconds> gather);

}  // namespace dlscale
