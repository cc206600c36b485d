// The kernel model: how long one GPU kernel takes, from its shape and the GPU's datasheet figures.
// GEMMs and convolutions (as implicit GEMMs) are cut into output tiles that run in waves over the GPU's
// SMs; memory-bound kernels move their bytes at an attainable fraction of DRAM bandwidth; every kernel
// pays a launch-and-dispatch overhead. The parameters belong to a GPU architecture and a kernel class and
// live in topologies/compute-params.yaml with their sources. Derivations and a worked example:
// docs/compute-model.md ("The kernel model").
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dlscale/gpu.hpp"
#include "dlscale/units.hpp"

namespace dlscale {

/// Kernel-model parameters of one GPU architecture. Each is a property of a kernel class on that
/// architecture, never of a network (docs/compute-model.md, "Parameters").
struct KernelParams {
  std::string architecture;                            // "pascal", "volta", …; "default" for the fallback set
  double tensor_efficiency = 0.70;                     // a large-tile GEMM's FLOP/s ÷ the tensor-core peak of its precision
  double vector_efficiency = 0.80;                     // a large-tile fp32 GEMM's FLOP/s ÷ the vector fp32 peak
  double conv_efficiency = 0.85;                       // an implicit-GEMM convolution's FLOP/s ÷ a GEMM's of the same shape
  double memory_efficiency = 0.80;                     // memory-bound kernels: attained ÷ datasheet DRAM bandwidth
  Seconds kernel_overhead = Seconds::from_base(4e-6);  // per kernel: launch gap and framework dispatch
  double winograd_gain = 2.25;                         // multiplies saved by Winograd F(2x2,3x3) (36 → 16 per output tile)
  double fft_taps = 8.0;                               // an FFT convolution's multiplies per output and input channel
  double operand_feed = 16.0;                          // tile feeding cost c (eq. K3) at 2,048 operand bytes per SM per clock
  double copy_efficiency = 0.87;  // a layout transpose (a copy): attained ÷ datasheet DRAM bandwidth (eq. K10)
  double nchw_norm_rate =
      2.16;  // batch norm on NCHW activations, cuDNN's per-channel kernels: element passes per SM per clock (eq. K12)
  double nchw_norm_rate_bf16 = 1.43;  // the same in bf16, which those kernels do not take (PyTorch runs its own) (eq. K12)
  // FlashAttention-2's tile loops (PyTorch's SDPA flash kernel) reach this share of the GEMM model's math rate,
  // forward and backward (eq. K9): per architecture, from its published benchmarks (Ampere) or our own
  // measurement (Hopper; compute-params.yaml says which).
  double flash_forward_efficiency = 1.0;
  double flash_backward_efficiency = 1.0;
  // The same shares for cuDNN's fused attention (Transformer Engine's, PyTorch SDPA's cudnn backend), where a
  // framework runs it (`kernels: {attention: cudnn}`, KernelExecution::cudnn_attention): per architecture, from our
  // H200's steps (Hopper; compute-params.yaml gives the arithmetic). 0: the flash shares (cuDNN on Ampere issues the
  // same warp-level mma.sync as FlashAttention-2).
  double cudnn_forward_efficiency = 0.0;
  double cudnn_backward_efficiency = 0.0;
  // Eq. K16: the share of the modelled tensor-core rate that GEMMs and attention keep in a sharded (FSDP, ZeRO)
  // training step on more than one GPU, fitted per architecture on the llm-sharded rows
  // (tests/llm_sharded_test.cpp); 1 where no such run was measured. What it holds is not yet separated: NCCL's
  // all-gather and reduce-scatter kernels running beside the GEMMs on the same SMs and memory through most of
  // the step, and the power limit of hours of dense math. A step with no collective beside it runs without it:
  // single-GPU steps, GEMM benchmarks, and FSDP2 on one GPU (measured on an H200 within a few per cent of the
  // unfactored model; tests/data/h200-pytorch/decoder-steps.csv).
  double sharded_tensor = 1.0;
  // The optimiser's kernels (PyTorch's multi_tensor_apply): attained ÷ datasheet DRAM bandwidth of the fused
  // update kernel (fused AdamW reads the weight, gradient and moments and writes three of them in one pass) and
  // of the foreach/for-loop passes (one arithmetic operation each). Measured per architecture
  // (compute-params.yaml says where); 0: the memory-bound efficiency.
  double fused_optimizer_efficiency = 0.0;
  double optimizer_pass_efficiency = 0.0;
  // Convolution and pooling kernel classes that do not run as a tiled implicit GEMM or stream (eqs. K22, K23),
  // at rates per SM per clock read off one architecture's profiles (compute-params.yaml says which); 0 where no
  // profile measured them: the class is then timed as before (implicit GEMM, K5 streaming).
  double small_channel_forward_rate = 0.0;    // K22: multiply-adds of the true input channels per SM per clock
  double small_channel_forward_clocks = 0.0;  // K22: SM clocks per output element written, beside them
  double small_channel_wgrad_rate = 0.0;      // K22, the weight gradient: multiply-adds per SM per clock
  double small_channel_wgrad_clocks = 0.0;    // K22: SM clocks per output-gradient element read, beside them
  double pool_forward_rate = 0.0;             // K23: a pooling forward's window elements (outputs × kh·kw) per SM per clock
  double pool_backward_rate = 0.0;            // K23: the same of its backward
  // Eq. K6 on the vector units: the share of the modelled rate (K3 with conv_efficiency, Winograd and FFT alike) that
  // cuDNN's fp32 convolution kernels reach, per architecture; 0 where no profile measured them (as 1).
  double fp32_conv_efficiency = 0.0;
  /// Eq. K21: each class of memory-bound kernel's attained ÷ datasheet DRAM bandwidth, where a framework runs its
  /// kernels by class (`kernels: {memory_bound: by_class}`); compute-params.yaml's `memory_classes:` block, read
  /// off an H200's profiles. 0: memory_efficiency.
  struct MemoryClassRates {
    double vectorized = 0.0, strided = 0.0, upcast = 0.0, reduction = 0.0, softmax = 0.0, chunk_cat = 0.0;
  } memory_classes;
  std::string source;  // where the numbers came from (a fit's command, a paper)
};

/// Every architecture's parameters, with a fallback for an architecture the file does not name.
struct KernelParamSet {
  KernelParams defaults;
  std::vector<KernelParams> architectures;  // each already merged over the defaults
  std::string source;                       // the file (for messages)

  /// The parameters of `architecture`, or the defaults.
  [[nodiscard]] const KernelParams& for_architecture(std::string_view architecture) const noexcept;
};

/// Reads a parameter file (topologies/compute-params.yaml's schema); errors name file:line:col and the key.
KernelParamSet load_kernel_params(const std::filesystem::path& file);
KernelParamSet parse_kernel_params(const std::string& yaml_text, const std::string& display_name);
/// The shipped topologies/compute-params.yaml, parsed once per process.
/// The shipped parameters (topologies/compute-params.yaml as it was when the library was built: the library
/// reads no data file for them); what a ComputeOptions without kernel_params uses.
std::shared_ptr<const KernelParamSet> shipped_kernel_params();
/// The text those parameters were parsed from.
std::string_view shipped_kernel_params_yaml() noexcept;
/// The YAML text of a parameter set (what `dlscale calibrate fit` writes).
std::string kernel_params_to_yaml(const KernelParamSet& set, std::string_view header_comment);

/// A (batched) matrix product C[m×n] = A[m×k]·B[k×n], `count` independent ones.
struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t count = 1;
  /// Elements the operands and the result occupy in memory, over all `count` products; 0: the GEMM's own
  /// (m·k + k·n + m·n)·count. An implicit-GEMM convolution sets it: its m×k operand is a view of the
  /// input tensor, built tile by tile on chip, whose elements are read once, not once per filter tap (eq. K4).
  double stored_elements = 0.0;
  [[nodiscard]] double flops() const noexcept {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * static_cast<double>(count);
  }
};

/// An output tile a GEMM kernel computes per thread block, and the share of its math not lost to feeding
/// it operands, 1/(1 + c(1/Tm + 1/Tn)) (eq. K3).
struct Tile {
  int m = 0, n = 0;
  double efficiency = 1.0;
};
/// The tiles cuBLAS/CUTLASS choose among (tensor cores: 256×128 … 64×64; vector fp32: 128×128 … 32×32),
/// with feeding cost `c` (operand_feed_cost).
std::vector<Tile> gemm_tiles(bool tensor_cores, double c);

/// The reference operand demand of eq. K3: a Volta/Turing SM's fp16 tensor math, 1,024 FLOP per clock on
/// 2-byte operands.
inline constexpr double kFeedReferenceBytesPerClock = 2048.0;
/// Eq. K3's feeding cost c on this GPU in this precision: operand_feed × (the unit's peak per SM per
/// clock × element bytes) ÷ 2,048 B. The operands reach the math through shared memory at about the same
/// bytes per clock on every architecture since Volta, so the faster the math per SM, the more of its time
/// a tile spends waiting for operands. Without an SM count or boost clock: operand_feed itself.
double operand_feed_cost(const GpuSpec& gpu, Precision p, const KernelParams& kp) noexcept;

/// How a GEMM runs: the tile, the split of K, the waves over the SMs, and the time of each part.
struct GemmPlan {
  Tile tile;
  int split_k = 1;
  std::int64_t tiles = 0;               // thread blocks: ⌈m/tile.m⌉·⌈n/tile.n⌉·count·split_k
  std::int64_t waves = 0;               // ⌈tiles / SMs⌉
  std::int64_t m = 0, n = 0, k = 0;     // after padding for tensor-core alignment
  Seconds compute{}, memory{}, time{};  // time = max(compute, memory) + overhead
};

/// Tensor-core alignment: the element count a dimension is padded to (8 for fp16/bf16, 4 for TF32, 1 on
/// vector units): cuDNN and cuBLAS pad a misaligned dimension (or fall back to slower kernels).
int tensor_core_alignment(Precision p, bool tensor_cores) noexcept;
/// Bytes of one operand element in this precision (4 in fp32 and TF32, 2 in bf16/fp16).
double element_bytes(Precision p) noexcept;

/// The fastest tile and split-K for a GEMM, with its time (docs/compute-model.md, eq. K1–K4).
/// `class_efficiency` scales the tile's efficiency (1 for a GEMM, conv_efficiency for an implicit-GEMM
/// convolution); `multiply_gain` divides the multiplies (Winograd, FFT).
GemmPlan plan_gemm(const GemmShape& g, const GpuSpec& gpu, Precision p, const KernelParams& kp, double class_efficiency = 1.0,
                   double multiply_gain = 1.0);

/// A memory-bound kernel that moves `traffic` bytes (eq. K5).
Seconds memory_kernel_time(Bytes traffic, const GpuSpec& gpu, const KernelParams& kp) noexcept;

/// Eq. K21: the kernels PyTorch runs memory-bound work with, by how they move memory (docs/compute-model.md, K21).
enum class MemoryClass {
  fitted,      // at the fitted memory_efficiency (what every pass is where the framework does not run by class)
  vectorized,  // contiguous element-wise kernels on one layout (vectorized_elementwise_kernel; a compiled chain)
  strided,     // broadcasting or strided element-wise kernels (elementwise_kernel<128, …>: broadcast products,
               // transposed copies)
  upcast,      // a widening cast, bf16/fp16 to fp32 (unrolled_elementwise_kernel<direct_copy_kernel_cuda>: PyTorch
               // does not vectorise a copy whose input and output element sizes differ; the downcast to bf16 has a
               // vectorised kernel of its own)
  reduction,   // reduce_kernel: a row's or a column's sum, mean or max
  softmax,     // cunn_SoftMaxForward/Backward: the loss's fp32 log-softmax over the vocabulary
  chunk_cat,   // FSDP2's concatenation of the gradients into the reduce-scatter's input (eq. S10)
};
/// Eq. K21: the class's attained share of the DRAM bandwidth (KernelParams::memory_classes; memory_efficiency
/// where the class has none).
double memory_class_efficiency(const KernelParams& kp, MemoryClass c) noexcept;

/// A convolution's geometry per sample.
struct ConvGeometry {
  std::int64_t batch = 1;
  std::int64_t in_channels = 0, out_channels = 0;
  std::int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, groups = 1;
};

/// cuDNN's algorithms as the kernel model knows them.
enum class ConvAlgorithm { implicit_gemm, winograd, fft, small_channel };
std::string_view to_string(ConvAlgorithm a) noexcept;

/// How a framework lays out image activations: channels first (NCHW, PyTorch's and TensorFlow 1.x's GPU
/// default) or channels last (NHWC: `channels_last` in PyTorch, NGC's mixed-precision recipes). cuDNN's
/// tensor-core convolutions work in NHWC: on NCHW tensors they transpose around each call (eq. K10).
enum class TensorLayout { nchw, nhwc };
std::string_view to_string(TensorLayout l) noexcept;
TensorLayout tensor_layout_from_string(std::string_view s);  // "nchw" | "nhwc" (any case); std::invalid_argument

/// Which algorithms a framework's cuDNN calls reach (its algorithm search and workspace limit), and the
/// layout its activations are in.
struct ConvAlgorithmPolicy {
  bool winograd = true;
  bool fft = true;
  Bytes workspace_limit = Bytes::from_base(1e12);  // an algorithm needing more workspace is not chosen
  // NHWC (no transposes): the shipped parameters were fitted without them (docs/compute-model.md, K10);
  // a plain eager PyTorch run is NCHW (`memory_format: nchw`, `--memory-format nchw`).
  TensorLayout layout = TensorLayout::nhwc;
};

/// The three GEMMs of a convolution's training step: forward, data gradient, weight gradient (eq. K6).
enum class ConvPass { forward, data_gradient, weight_gradient };
GemmShape conv_as_gemm(const ConvGeometry& c, ConvPass pass) noexcept;

/// Eq. K10: the layout transposes of one convolution pass on tensor cores with NCHW activations, as
/// elements copied (each copy reads and writes them once): forward the input to NHWC and the output back;
/// data gradient the output gradient in and the input gradient back; weight gradient the input again.
/// Zero in NHWC, and off tensor cores (cuDNN's fp32 CUDA-core kernels read NCHW directly).
double layout_transpose_elements(const ConvGeometry& c, ConvPass pass, TensorLayout layout, bool tensor_cores) noexcept;

/// Eq. K11: the input channels per group a tensor-core convolution works on: cuDNN's NHWC kernels load each
/// filter tap's channels as aligned vectors, so channels that are not a multiple of the tensor-core alignment
/// (an image's 3 colour channels) are padded with zeros up to it (3 → 8 in fp16/bf16, 3 → 4 in TF32). The
/// GEMM's reduction is then padded_channels·kh·kw, not ⌈channels·kh·kw⌉ (K1). Off tensor cores: the channels.
std::int64_t tensor_core_channels(const ConvGeometry& c, Precision p, bool tensor_cores) noexcept;
/// Eq. K11: elements the padding copy moves for one pass in NHWC (the input read, its padded copy written):
/// the forward and weight-gradient passes read the input, so each pads it; none when the channels are
/// aligned, off tensor cores, for the data gradient, and in NCHW (the K10 transpose writes the padded copy).
double channel_padding_elements(const ConvGeometry& c, ConvPass pass, Precision p, TensorLayout layout,
                                bool tensor_cores) noexcept;

/// Eq. K12: the least time a batch norm's pass over `element_passes` elements (each element read or written
/// once counts one) takes on NCHW activations: element_passes ÷ (rate × SMs × boost clock). cuDNN's
/// per-channel NCHW kernels (fp32, TF32 and fp16: `nchw_norm_rate`) and PyTorch's own (bf16:
/// `nchw_norm_rate_bf16`) walk each channel's N·H·W elements in short strided runs, and run at a rate per SM
/// that the element width does not change: in fp16 they take as long as in fp32. Zero in NHWC (cuDNN's NHWC
/// kernels stream at memory speed, eq. K5) and without an SM count or boost clock.
Seconds nchw_norm_time(double element_passes, const GpuSpec& gpu, Precision p, TensorLayout layout,
                       const KernelParams& kp) noexcept;

/// Eq. K12: the kernels a batch norm's forward or backward issues, as profiled on Hopper (PyTorch 2.11, cuDNN 9.19;
/// tests/data/h100-pytorch/kernels.txt, tests/data/h200-pytorch/kernels.txt, 53 calls of each for ResNet-50's 53 batch
/// norms). cuDNN's batch norm takes the statistics and the normalisation in one kernel, forward and backward alike,
/// in NCHW (`bn_fw_tr_1C11_*`, `bn_bw_1C11_*`) and NHWC (`batchnorm_fwtr/bwtr_nhwc_semiPersist`): 1. In bf16 PyTorch
/// runs its own: on NCHW activations statistics and transform forward (2), one kernel backward (1); channels-last
/// two each way (2; recalled, no such profile here).
int batch_norm_kernels(Precision p, TensorLayout layout, bool backward) noexcept;

/// Eq. K22: whether a pass runs cuDNN's kernels for unaligned input channels (an image's 3 colour channels on the
/// tensor cores): the forward's "indexed, without shared memory" implicit GEMM (one stage, sm80) and the weight
/// gradient's multistage CUTLASS convolution, which cuDNN 9 picks for them on Hopper instead of its sm90 kernels.
/// Not for the data gradient (the first layer has none), aligned channels, the vector units, nor the shape cuDNN
/// has a first-layer kernel of its own for (fp16, 64 filters of 7×7 at stride 2 over up to 4 channels:
/// `image_first_layer_f16f16_..._k64c4r7s7_stride2x2`, which runs at about the implicit GEMM's modelled rate; bf16
/// and TF32 run the small-channel kernels).
bool small_channel_conv(const ConvGeometry& c, ConvPass pass, Precision p, bool tensor_cores) noexcept;
/// Eq. K22: such a pass's time on the SMs, (multiply-adds ÷ rate + output elements × clocks) ÷ (SMs × boost
/// clock), the multiply-adds those of the true channels (B·Ho·Wo·Co·Ci·kh·kw) and the output elements B·Ho·Wo·Co
/// (written forward, read as the gradient backward); zero without its rate or the GPU's SM count and clock.
Seconds small_channel_conv_time(const ConvGeometry& c, ConvPass pass, const GpuSpec& gpu, const KernelParams& kp) noexcept;

/// Eq. K23: the least time a pooling pass takes when its kernels walk windows rather than stream (PyTorch's max and
/// average pooling, forward and backward): its window elements (outputs × kh·kw) ÷ (the pass's rate × SMs × boost
/// clock). Zero without the rate or the GPU's SM count and clock.
Seconds pool_walk_time(double window_elements, bool backward, const GpuSpec& gpu, const KernelParams& kp) noexcept;

struct ConvPlan {
  ConvAlgorithm algorithm = ConvAlgorithm::implicit_gemm;
  GemmPlan gemm;
  Seconds transposes{};  // eq. K10, included in time
  Seconds padding{};     // eq. K11, included in time
  Seconds time{};
};
/// The fastest algorithm the policy allows for one pass: implicit GEMM always; Winograd for 3×3 stride-1
/// on vector units; FFT for kernels of 5×5 and larger at stride 1 when its workspace fits (eq. K7–K8);
/// a tensor-core plan on NCHW activations pays its layout transposes (K10), and one on unaligned input
/// channels its padded reduction and padding copy (K11), in the comparison.
ConvPlan plan_conv(const ConvGeometry& c, ConvPass pass, const GpuSpec& gpu, Precision p, const KernelParams& kp,
                   const ConvAlgorithmPolicy& policy);

}  // namespace dlscale
