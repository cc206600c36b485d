// How a framework implements S-SGD (shared/docs/model.md, "Framework strategies"): a few named
// parameters, read from models/frameworks/*.yaml so that a user can add one.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dlscale/compute.hpp"
#include "dlscale/detail/enum_names.hpp"
#include "dlscale/kernels.hpp"
#include "dlscale/parallel_layout.hpp"
#include "dlscale/sharding.hpp"
#include "dlscale/transport.hpp"
#include "dlscale/units.hpp"

namespace dlscale {

enum class Aggregation {
  allreduce,         // NCCL/Gloo all-reduce, intra- and inter-node (Caffe-MPI, CNTK, Horovod, DDP)
  parameter_server,  // push gradients to a PS, pull parameters back (MXNet KVStore)
  hybrid,            // all-reduce inside a node, parameter server across nodes (TensorFlow 2017)
  broadcast_reduce   // broadcast parameters, reduce gradients to GPU 0 (PyTorch DataParallel)
};

enum class Overlap {
  none,       // backward, then aggregation, sequentially (CNTK, DataParallel)
  layerwise,  // each layer's gradient aggregated as soon as it is ready (WFBP)
  bucketed    // gradients merged into buckets (PyTorch DDP, Horovod tensor fusion)
};

enum class UpdatePlacement {
  per_layer,          // each layer updated as soon as its aggregation ends (MXNet PS), eq. 6/7
  after_aggregation,  // all layers updated once every aggregation has ended, eq. 10
  on_root             // updated on GPU 0, parameters broadcast next iteration (DataParallel)
};

template <>
struct EnumNames<Aggregation> {
  static constexpr std::array<EnumName<Aggregation>, 4> names{{
      {Aggregation::allreduce, "allreduce"},
      {Aggregation::parameter_server, "parameter_server"},
      {Aggregation::hybrid, "hybrid"},
      {Aggregation::broadcast_reduce, "broadcast_reduce"},
  }};
  static constexpr std::array<EnumName<Aggregation>, 0> aliases{};
};
template <>
struct EnumNames<Overlap> {
  static constexpr std::array<EnumName<Overlap>, 3> names{{
      {Overlap::none, "none"},
      {Overlap::layerwise, "layerwise"},
      {Overlap::bucketed, "bucketed"},
  }};
  static constexpr std::array<EnumName<Overlap>, 0> aliases{};
};
template <>
struct EnumNames<UpdatePlacement> {
  static constexpr std::array<EnumName<UpdatePlacement>, 3> names{{
      {UpdatePlacement::per_layer, "per_layer"},
      {UpdatePlacement::after_aggregation, "after_aggregation"},
      {UpdatePlacement::on_root, "on_root"},
  }};
  static constexpr std::array<EnumName<UpdatePlacement>, 0> aliases{};
};

/// The settings beyond the grid that a framework runs and `plan --parallel`'s refinement may choose (eq. P38).
struct PlanVariants {
  std::vector<CpComm> cp_comm;                // the CP exchanges it offers (eq. P29); empty: each layout's own only
  bool stage_blocks = false;                  // explicit first and last stage blocks (eq. P26b)
  bool distribute_saved_activations = false;  // checkpoint inputs split over TP, SP off (eq. P35)
  bool recompute_num_layers = false;          // full recompute of the first N blocks of each chunk (eq. P31, block)
  [[nodiscard]] bool any() const noexcept {
    return !cp_comm.empty() || stage_blocks || distribute_saved_activations || recompute_num_layers;
  }
};

struct Strategy {
  std::string name;
  std::string description;
  bool io_prefetch = true;    // reader threads prefetch the next batch: eq. 4 instead of eq. 3
  bool pinned_memory = true;  // host->GPU copies from pinned (true) or pageable (false) memory
  int prefetch_depth = 2;     // batches each GPU's prefetch queue holds (`io: {depth: N}`; the simulator's)
  /// `io: {buffer: "256 MiB"}`: the most decoded input a GPU's prefetch buffer holds; a batch larger than it is
  /// read in the iteration (eq. 3) as if nothing prefetched (CNTK, Shi & Chu 2018 Section VI-A). Zero: no limit.
  Bytes prefetch_buffer{};
  /// `io: {reader: bytes}`: the framework's reader is Section IV-A's, the input bytes over the page cache
  /// or disk (t_io = D·n_g/B), whatever input pipeline the cluster describes (synthetic data aside).
  bool reads_bytes = false;
  /// `io: {copy: {rate: 0.64, latency: "1.5 ms"}}`: the host-to-GPU copy of each batch runs at `rate` of the
  /// node's copy bandwidth for its memory (pinned or pageable) and adds `latency` a copy (docs/reproduce.md,
  /// "Shi & Chu's frameworks"). Default: the node's bandwidth, no latency.
  double h2d_rate = 1.0;
  Seconds h2d_latency{};
  Aggregation aggregation = Aggregation::allreduce;
  Overlap overlap = Overlap::layerwise;
  UpdatePlacement update = UpdatePlacement::after_aggregation;
  Bytes bucket_size = mebibytes(25);    // bucketed: size of every bucket but the first
  Bytes first_bucket = mebibytes(1);    // bucketed: the first (output-side) bucket
  int parameter_servers = 0;            // parameter_server/hybrid: 0 = one per node
  double compute_efficiency = 1.0;      // scales the compute model's layer times (1 = as modelled)
  ConvAlgorithmPolicy conv_algorithms;  // the cuDNN convolution algorithms its algorithm search reaches
  /// The attention kernel its stack runs where it can (`attention: flash|eager`; docs/compute-model.md, K9):
  /// flash falls back to eager where FlashAttention does not run (fp32/TF32, before Ampere).
  AttentionKernel attention = AttentionKernel::eager;
  /// `mixed_precision: {gradients: fp32}`: under fp16/bf16 the parameters stay fp32 and each use is cast
  /// (PyTorch's native AMP), so gradients and their exchange are fp32; default (`half`): the gradients of a
  /// half-precision working copy (apex O2, MXNet float16 models, DeepSpeed).
  bool fp32_gradients = false;
  /// `lrn: false`: the framework has no local response normalization, so a network's LRN operators are left
  /// out of its step (time and memory): CNTK 2.x, which is why Shi & Chu ran AlexNet without them (Table IV).
  bool lrn = true;
  /// `pool_indices: int64 | int32 | none`: what the framework's max pooling keeps to route its gradient (eq. K17):
  /// PyTorch an int64 argmax per output (the default), Caffe's own pooling layer an int32 mask, cuDNN's pooling
  /// (CNTK, MXNet, TensorFlow) nothing, its backward reading the input and output again instead. Bytes per output.
  int pool_index_bytes = 8;
  /// `compile: true`: the framework compiles the step (torch.compile, XLA), fusing element-wise chains into
  /// one kernel each (ComputeOptions::compiled, eq. K14); false: eager, an operator a kernel.
  bool compiled = false;
  /// `compile_loss: false`: compiling leaves the loss eager (the model's blocks compiled, the cross-entropy on
  /// fp32 logits outside; ComputeOptions::compiled_loss). Default true: the loss is compiled with the step.
  bool compile_loss = true;
  /// `checkpoint_early_stop: true`: the framework's full recompute is PyTorch's non-reentrant checkpoint, which stops
  /// recomputing a block once every tensor its backward keeps is rebuilt (torch.utils.checkpoint's early stop, on by
  /// default), so the block's trailing product and residual addition are not run again (eq. R1b). False: the whole
  /// forward of each checkpointed block runs again (a reentrant checkpoint, Megatron-LM's CheckpointFunction).
  bool checkpoint_early_stop = false;
  /// `rmsnorm: composite`: the model's RMSNorm runs as the composite operators Llama's code writes
  /// (`_norm(x.float()).type_as(x) * weight`), which save its fp32 input and its normalized tensor (eq. M1a,
  /// ComputeOptions::rmsnorm_composite). `fused` (the default): a fused kernel that saves its input and the row
  /// statistics, as the layer's own count has it.
  bool rmsnorm_composite = false;
  /// `optimizer: sgd`: the optimiser the framework's benchmark runs take when a run names none (TensorFlow 1.x's
  /// tf_cnn_benchmarks: plain SGD); unset: the network's default (momentum for images, AdamW for tokens).
  std::optional<Optimizer> optimizer;
  /// `precision: bf16`: the precision the framework's runs take when a run names none (torchtitan's default
  /// MixedPrecisionPolicy, the recipes' bf16 of llm-foundry, Megatron-Core and NeMo); unset: fp32, PyTorch's and
  /// DeepSpeed's own default. default_precision (predict.hpp) resolves it on a GPU.
  std::optional<Precision> precision;
  /// `optimizer_impl: foreach`: the optimiser's kernels as the framework's runs make them (fused, foreach or
  /// for_loop; ComputeOptions::optimizer_impl); unset: fused.
  std::optional<OptimizerImpl> optimizer_impl;
  /// `kernels: {memory_bound, fused, host_issue, launch_gap}`: how its memory-bound kernels run and its kernels are
  /// issued (ComputeOptions::execution, docs/compute-model.md, eqs. K18-K20); default: as the shipped fit.
  KernelExecution execution;
  /// `update_kernels: {traffic: 34.6, per_tensor: "6.9 us"}`: the framework's update as its own kernels run it
  /// (ComputeOptions::update_kernels); unset: the optimiser's traffic and kernels (optimizer_impl).
  std::optional<UpdateKernelCost> update_kernels;
  // Synchronization losses (docs/model.md, "Synchronization losses"); both off by default.
  double jitter_cv = 0.0;        // coefficient of variation of a GPU's per-iteration compute time
  Seconds iteration_overhead{};  // fixed cost per iteration of more than one GPU (negotiation, launches)
  /// `input_handover: "0.2 ms"`: the training thread's fixed cost of taking a prefetched batch from the readers'
  /// queue, every iteration and on any number of GPUs (docs/model.md, eq. F2; eq::input_handover). Charged only
  /// where the batch is prefetched; zero (the default) for frameworks no measurement gives it for.
  Seconds input_handover{};
  // Sharded data parallelism (ZeRO, FSDP; docs/model.md, "Sharded data parallelism"); stage 0: replicas.
  Sharding sharding;
  /// Eq. K16 (docs/compute-model.md) is the framework's: its step's GEMMs run at the sharded tensor rate where its own
  /// file shards. Absent, `sharding.sharded()`; set to the file's when a run puts another stage in place of the file's
  /// (`--zero`, the plan's rows: eq. P42), since the optimiser's sharding does not change the GEMMs it runs beside.
  std::optional<bool> sharded_rate;
  Transport transport;  // how bytes cross nodes (`transport: NAME`); default: NCCL as modelled
  /// Model parallelism (`parallel:`; docs/input-formats.md, "Framework strategy"): the layout a run with this
  /// framework starts from (rank order, sequence parallelism, schedule; degrees and batches where the file
  /// gives them). Absent: the defaults of ParallelLayout.
  std::optional<ParallelLayout> parallel;
  /// Whether `parallel:` gave a degree (tp, pp or cp) or batch: a run of this framework is then model-parallel
  /// without options. Defaults alone (rank_order, sp, schedule) leave it data-parallel until a run names degrees.
  bool parallel_degrees = false;
  /// `parallel: {plan_variants: ...}`: what `plan --parallel`'s refinement (docs/model.md, eq. P38) may change on this
  /// framework's layouts, the options the framework itself runs. Empty (the default): the grid's layouts alone.
  PlanVariants plan_variants;
};

}  // namespace dlscale
