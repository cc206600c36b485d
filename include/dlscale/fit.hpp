// Setting the kernel model's parameters from measured single-GPU training throughputs: a least-squares
// fit of the architecture-level parameters (include/dlscale/kernels.hpp) to the log of predicted over
// measured throughput, and its leave-one-out errors. `dlscale calibrate fit` (docs/compute-model.md,
// "Fitting the parameters").
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dlscale/compute.hpp"
#include "dlscale/gpu.hpp"
#include "dlscale/kernels.hpp"
#include "dlscale/network.hpp"

namespace dlscale {

struct Strategy;

/// One measured single-GPU throughput, resolved: the GPU, the network, how it ran.
struct ThroughputSample {
  std::string gpu_id;    // as written in the file
  std::string model_id;  // as written in the file
  GpuSpec gpu;
  std::shared_ptr<const Network> network;
  Precision precision = Precision::fp32;
  Optimizer optimizer = Optimizer::momentum;
  int batch = 1;
  TensorLayout layout = TensorLayout::nhwc;            // optional column memory_format (eq. K10)
  AttentionKernel attention = AttentionKernel::eager;  // optional column attention (K9; sdpa as PyTorch dispatches it)
  ConvAlgorithmPolicy conv_algorithms;                 // the framework's cuDNN algorithm search (its layout is `layout`)
  bool lrn = true;                                     // the framework runs LRN (Strategy::lrn)
  int pool_index_bytes = 8;                            // its max pooling's index per output (Strategy::pool_index_bytes)
  std::optional<OptimizerImpl> optimizer_impl;         // its optimiser's kernels (Strategy::optimizer_impl; unset: fused)
  KernelExecution execution;                           // its memory-bound kernels and kernel issue (Strategy::execution)
  std::optional<UpdateKernelCost> update_kernels;      // its own update kernels (Strategy::update_kernels)
  std::string framework;  // the framework the row was predicted as (its cell, its file's, or the fit's; empty: none named)
  std::string source;     // the measurement file, as given (leave-one-source-out)
  double samples_per_s = 0.0;
  int line = 0;  // in the measurement file
};

struct MeasurementOptions {
  /// File model names → zoo names (Lambda's "bert-base" is SQuAD at 384: our bert-squad).
  std::map<std::string, std::string> model_names;
  /// A row whose precision is "fp32" ran in TF32 where the GPU has it: PyTorch's default for cuDNN
  /// convolutions, and for matrix multiplies in the releases of those benchmarks.
  bool fp32_means_tf32 = true;
  /// Only rows with this many GPUs are used (the compute model is a single-GPU model).
  int gpus = 1;
  /// The layout of image activations in rows without a memory_format column or with it empty:
  /// PyTorch's own default is NCHW (channels_last must be asked for).
  TensorLayout layout = TensorLayout::nhwc;
  /// How the framework of the runs makes its step (`calibrate fit --framework`; predict's step_compute):
  /// its cuDNN algorithm search, the attention kernel of rows without an attention column, whether it has LRN,
  /// the optimiser its runs take (unset: the network's default).
  ConvAlgorithmPolicy conv_algorithms;
  AttentionKernel attention = AttentionKernel::eager;
  bool lrn = true;
  int pool_index_bytes = 8;
  std::optional<Optimizer> optimizer;
  std::optional<OptimizerImpl> optimizer_impl;
  KernelExecution execution;
  std::optional<UpdateKernelCost> update_kernels;
  /// The name of the framework taken (take_framework), written into each row it predicts.
  std::string framework;
  /// Frameworks (models/frameworks/NAME.yaml or a file) for rows without a `framework` cell whose memory_format
  /// cell names this layout, ahead of the one taken (`calibrate fit --framework-in CSV:nhwc=NAME`): plain
  /// PyTorch's NCHW rows and its channels_last ones in one file run different kernels (eq. K18).
  std::map<TensorLayout, std::shared_ptr<const Strategy>> framework_by_layout;

  /// Rows run with the framework `strategy`: its cuDNN algorithm search and layout, attention kernel, LRN, max pooling's
  /// index, and optimiser and its kernels (its own update kernels where its file gives them).
  void take_framework(const Strategy& strategy);
};

/// Reads a CSV of measured throughputs: a header naming at least gpu, gpus, precision, model,
/// samples_per_s, and either global_batch or batch_per_gpu (an empty batch is taken from the row of the
/// same model and precision with the largest memory GPU: the published configuration of the H100 rows
/// "follows" another); optional memory_format, attention and framework columns say how each row ran (an
/// empty cell: the options'). Errors name file:line:col and the column.
std::vector<ThroughputSample> read_throughput_csv(const std::filesystem::path& file, const MeasurementOptions& opt);

/// The single-GPU throughput the kernel model predicts for a sample under `params`.
double predicted_throughput(const ThroughputSample& s, const KernelParamSet& params);

/// Which parameters a fit moves: the defaults (every architecture), and per architecture those whose
/// architecture has measurements of at least `min_gpus_per_architecture` GPU models.
/// winograd_gain is not fitted by default: it is F(2×2,3×3)'s 2.25, cuDNN's fused Winograd kernel, and
/// throughput data cannot separate it from the class efficiencies (a free fit runs to its bound, 4).
struct FitOptions {
  bool tensor_efficiency = true, vector_efficiency = true, conv_efficiency = true, memory_efficiency = true,
       kernel_overhead = true, winograd_gain = false, operand_feed = true;
  int iterations = 60;
  /// Whether any parameter is free (none: the fit only evaluates its start).
  [[nodiscard]] bool fits_anything() const noexcept {
    return tensor_efficiency || vector_efficiency || conv_efficiency || memory_efficiency || kernel_overhead || winograd_gain ||
        operand_feed;
  }
};

struct FitResult {
  KernelParamSet params;
  std::vector<double> predicted;  // per sample, samples/s
  double mape = 0.0;              // mean absolute percentage error, %
  double rms_log = 0.0;           // root mean square of ln(predicted/measured)
};

/// Levenberg–Marquardt on ln(predicted/measured) over the defaults' parameters, starting from `start`.
FitResult fit_kernel_params(const std::vector<ThroughputSample>& samples, const KernelParamSet& start,
                            const FitOptions& opt = {});

/// What a leave-one-out run holds back: the rows of one GPU (as the catalogue names it, so that two files'
/// spellings of one GPU are one), one network (as the zoo names it), or one measurement file.
enum class LeaveOut { gpu, network, source };

struct LeaveOneOut {
  std::string left_out;           // a GPU, a network or a file
  std::vector<std::size_t> rows;  // indices into the samples
  std::vector<double> predicted;  // samples/s, from a fit without them
  double mape = 0.0;
};
/// Refits without each GPU, network or source in turn and predicts what was left out.
std::vector<LeaveOneOut> leave_one_out(const std::vector<ThroughputSample>& samples, const KernelParamSet& start, LeaveOut by,
                                       const FitOptions& opt = {});
/// The same by GPU (by_gpu) or by network.
inline std::vector<LeaveOneOut> leave_one_out(const std::vector<ThroughputSample>& samples, const KernelParamSet& start,
                                              bool by_gpu, const FitOptions& opt = {}) {
  return leave_one_out(samples, start, by_gpu ? LeaveOut::gpu : LeaveOut::network, opt);
}
/// The mean absolute percentage error over every left-out prediction.
double leave_one_out_mape(const std::vector<LeaveOneOut>& runs, const std::vector<ThroughputSample>& samples);

}  // namespace dlscale
