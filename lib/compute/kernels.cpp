// The kernel model (include/dlscale/kernels.hpp; equations K1–K13, K22 and K23 in docs/compute-model.md).
#include "dlscale/kernels.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "io/text.hpp"

namespace dlscale {
namespace {
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
std::int64_t round_up(std::int64_t a, std::int64_t b) { return ceil_div(a, b) * b; }

/// Operand reuse of an output tile: a Tm×Tn tile loads Tm + Tn operand elements per Tm·Tn multiply-adds
/// of each k step, so the share of time lost to feeding it grows as 1/Tm + 1/Tn (eq. K3).
double tile_reuse(int tm, int tn, double c) { return 1.0 / (1.0 + c * (1.0 / tm + 1.0 / tn)); }

FlopsPerSecond unit_peak(const GpuSpec& gpu, Precision p, bool tensor) noexcept {
  return tensor ? gpu.peak(p) : (p == Precision::fp16 ? gpu.peak(Precision::fp16) : gpu.peak_fp32);
}
}  // namespace

std::vector<Tile> gemm_tiles(bool tensor_cores, double c) {
  const std::vector<std::array<int, 2>> sizes = tensor_cores
      ? std::vector<std::array<int, 2>>{{256, 128}, {128, 256}, {128, 128}, {128, 64}, {64, 128}, {64, 64}}
      : std::vector<std::array<int, 2>>{{128, 128}, {128, 64}, {64, 128}, {64, 64}, {64, 32}, {32, 32}};
  std::vector<Tile> out;
  for (const auto& s : sizes) out.push_back(Tile{s[0], s[1], tile_reuse(s[0], s[1], c)});
  return out;
}

double operand_feed_cost(const GpuSpec& gpu, Precision p, const KernelParams& kp) noexcept {
  const bool tensor = gpu.on_tensor_cores(p);
  const double clock = gpu.boost_clock.base();
  if (gpu.sm_count <= 0 || !(clock > 0.0)) return kp.operand_feed;  // the reference rate
  const double demand = unit_peak(gpu, p, tensor).base() / (gpu.sm_count * clock) * element_bytes(p);
  return kp.operand_feed * demand / kFeedReferenceBytesPerClock;
}

int tensor_core_alignment(Precision p, bool tensor_cores) noexcept {
  if (!tensor_cores) return 1;
  return p == Precision::tf32 ? 4 : p == Precision::fp8 ? 16 : 8;  // 16 bytes of any: one tensor-core fragment row
}

double element_bytes(Precision p) noexcept { return p == Precision::fp8 ? 1.0 : is_mixed(p) ? 2.0 : 4.0; }

namespace {
GemmPlan plan_gemm_in(const GemmShape& g, const GpuSpec& gpu, Precision p, const KernelParams& kp, double class_efficiency,
                      double multiply_gain) {
  GemmPlan best;
  best.time = seconds(std::numeric_limits<double>::infinity());
  if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.count <= 0) {
    best.time = Seconds{};
    return best;
  }
  const bool tensor = gpu.on_tensor_cores(p);
  // K1: pad the reduction and output-column dimensions to the tensor-core alignment.
  const int a = tensor_core_alignment(p, tensor);
  const std::int64_t m = g.m, n = round_up(g.n, a), k = round_up(g.k, a);
  const FlopsPerSecond peak = unit_peak(gpu, p, tensor);
  const double base = (tensor ? kp.tensor_efficiency : kp.vector_efficiency) * class_efficiency;
  const double bpe = element_bytes(p);
  const BytesPerSecond bw = gpu.memory_bandwidth * kp.memory_efficiency;
  const double sms = gpu.sm_count > 0 ? static_cast<double>(gpu.sm_count) : 0.0;
  const double per_sm = sms > 0 ? peak.base() / sms : 0.0;
  for (const Tile& t : gemm_tiles(tensor, operand_feed_cost(gpu, p, kp))) {
    const std::int64_t output_tiles = ceil_div(m, t.m) * ceil_div(n, t.n) * g.count;
    for (int split : {1, 2, 4, 8, 16, 32}) {
      if (split > 1 && (k / split < 64 || (sms > 0 && output_tiles * split > 4 * static_cast<std::int64_t>(sms)))) break;
      const std::int64_t tiles = output_tiles * split;
      const double k_part = static_cast<double>(ceil_div(k, split));
      // K2–K3: waves of thread blocks over the SMs, each block a Tm×Tn×(K/split) product at the tile's rate.
      const double tile_flops = 2.0 * t.m * t.n * k_part / multiply_gain;
      Seconds compute{};
      std::int64_t waves = 0;
      if (sms > 0) {
        waves = ceil_div(tiles, static_cast<std::int64_t>(sms));
        compute = seconds(static_cast<double>(waves) * tile_flops / (per_sm * base * t.efficiency));
      } else {  // SM count unknown: a continuous machine
        compute = seconds(static_cast<double>(tiles) * tile_flops / (peak.base() * base * t.efficiency));
      }
      // K4: operands read once and the result written once; split-K writes and re-reads fp32 partials.
      const double dm = static_cast<double>(m), dn = static_cast<double>(n), dk = static_cast<double>(k),
                   count = static_cast<double>(g.count);
      // An implicit GEMM's stored elements are those of its tensors (unpadded), not of the expanded matrix.
      double traffic = (g.stored_elements > 0.0 ? g.stored_elements : (dm * dk + dk * dn + dm * dn) * count) * bpe;
      if (split > 1) traffic += 2.0 * dm * dn * count * split * 4.0;
      const Seconds memory = bytes(traffic) / bw;
      const Seconds time = max(compute, memory) + kp.kernel_overhead * (split > 1 ? 2.0 : 1.0);
      if (time < best.time) best = GemmPlan{t, split, tiles, waves, m, n, k, compute, memory, time};
    }
  }
  return best;
}

/// The plan in precision `p`, and whether it runs on the tensor cores. TF32 allows the tensor cores, it does
/// not demand them: cuBLAS and cuDNN still weigh their fp32 kernels and take the faster (on a GeForce Ampere
/// board TF32 tensor math runs at the fp32 units' rate, and its larger tiles lose on small shapes).
/// `tensor_extra` is what the tensor-core plan costs beyond its GEMM (a convolution's layout transposes, K10).
struct PlanChoice {
  GemmPlan plan;
  bool tensor = false;
};
/// `g` is the product as the precision's kernels see it (a convolution's padded channels, K11), `vector` as the
/// fp32 kernels do.
/// `vector_efficiency` is the class efficiency of the vector-unit kernels (a convolution's fp32 kernels, K6).
PlanChoice plan_tensor_or_fp32(const GemmShape& g, const GemmShape& vector, const GpuSpec& gpu, Precision p,
                               const KernelParams& kp, double class_efficiency, double vector_efficiency, double multiply_gain,
                               Seconds tensor_extra) {
  const bool tensor = gpu.on_tensor_cores(p);
  const PlanChoice best{plan_gemm_in(g, gpu, p, kp, tensor ? class_efficiency : vector_efficiency, multiply_gain), tensor};
  if (p == Precision::tf32 && best.tensor) {
    GemmPlan fp32 = plan_gemm_in(vector, gpu, Precision::fp32, kp, vector_efficiency, multiply_gain);
    if (fp32.time < best.plan.time + tensor_extra) return {fp32, false};
  }
  return best;
}
}  // namespace

GemmPlan plan_gemm(const GemmShape& g, const GpuSpec& gpu, Precision p, const KernelParams& kp, double class_efficiency,
                   double multiply_gain) {
  return plan_tensor_or_fp32(g, g, gpu, p, kp, class_efficiency, class_efficiency, multiply_gain, Seconds{}).plan;
}

Seconds memory_kernel_time(Bytes traffic, const GpuSpec& gpu, const KernelParams& kp) noexcept {
  return traffic / (gpu.memory_bandwidth * kp.memory_efficiency) + kp.kernel_overhead;  // K5
}

Seconds nchw_norm_time(double element_passes, const GpuSpec& gpu, Precision p, TensorLayout layout,
                       const KernelParams& kp) noexcept {
  const double rate = (p == Precision::bf16 ? kp.nchw_norm_rate_bf16 : kp.nchw_norm_rate) * gpu.sm_count *
      gpu.boost_clock.base();  // K12: element passes per second
  if (layout != TensorLayout::nchw || !(rate > 0.0)) return Seconds{};
  return seconds(element_passes / rate);
}

int batch_norm_kernels(Precision p, TensorLayout layout, bool backward) noexcept {
  if (p != Precision::bf16) return 1;                       // cuDNN: statistics and normalisation in one kernel
  return backward && layout == TensorLayout::nchw ? 1 : 2;  // PyTorch's own kernels
}

std::string_view to_string(ConvAlgorithm a) noexcept {
  switch (a) {
    case ConvAlgorithm::implicit_gemm:
      return "implicit_gemm";
    case ConvAlgorithm::winograd:
      return "winograd";
    case ConvAlgorithm::fft:
      return "fft";
    case ConvAlgorithm::small_channel:
      return "small_channel";
  }
  return "";
}

std::string_view to_string(TensorLayout l) noexcept { return l == TensorLayout::nhwc ? "nhwc" : "nchw"; }

TensorLayout tensor_layout_from_string(std::string_view s) {
  const std::string v = lower_ascii(s);
  if (v == "nchw" || v == "channels_first") return TensorLayout::nchw;
  if (v == "nhwc" || v == "channels_last") return TensorLayout::nhwc;
  throw std::invalid_argument(fmt::format("unknown memory format '{}' (nchw or nhwc)", s));
}

double layout_transpose_elements(const ConvGeometry& c, ConvPass pass, TensorLayout layout, bool tensor_cores) noexcept {
  if (layout == TensorLayout::nhwc || !tensor_cores) return 0.0;
  const double b = static_cast<double>(c.batch);
  const double in = b * static_cast<double>(c.in_channels * c.in_h * c.in_w);
  const double out = b * static_cast<double>(c.out_channels * c.out_h * c.out_w);
  switch (pass) {
    case ConvPass::forward:
      return in + out;  // x to NHWC, y back to NCHW
    case ConvPass::data_gradient:
      return out + in;  // dy to NHWC, dx back
    case ConvPass::weight_gradient:
      return in;  // x to NHWC again (dy's copy is the data gradient's)
  }
  return 0.0;
}

GemmShape conv_as_gemm(const ConvGeometry& c, ConvPass pass) noexcept {
  const std::int64_t g = std::max(c.groups, 1);
  const std::int64_t taps = static_cast<std::int64_t>(c.kernel_h) * c.kernel_w;
  // K4 for an implicit GEMM: every pass reads two of the three tensors (input or its gradient, filters,
  // output or its gradient) and writes the third, once each.
  const double tensors = static_cast<double>(c.batch) * static_cast<double>(c.in_channels * c.in_h * c.in_w) +
      static_cast<double>(c.out_channels) * static_cast<double>(c.in_channels / g * taps) +
      static_cast<double>(c.batch) * static_cast<double>(c.out_channels * c.out_h * c.out_w);
  switch (pass) {
    case ConvPass::forward:  // K6: rows = output pixels, columns = output channels, reduction = ci·kh·kw
      return GemmShape{c.batch * c.out_h * c.out_w, c.out_channels / g, c.in_channels / g * taps, g, tensors};
    case ConvPass::data_gradient: {  // the transposed convolution: rows = input pixels
      const std::int64_t k =
          std::max<std::int64_t>(1, c.out_channels / g * taps / (static_cast<std::int64_t>(c.stride_h) * c.stride_w));
      return GemmShape{c.batch * c.in_h * c.in_w, c.in_channels / g, k, g, tensors};
    }
    case ConvPass::weight_gradient:  // reduction over every output pixel of the batch
      return GemmShape{c.out_channels / g, c.in_channels / g * taps, c.batch * c.out_h * c.out_w, g, tensors};
  }
  return {};
}

std::int64_t tensor_core_channels(const ConvGeometry& c, Precision p, bool tensor_cores) noexcept {
  const std::int64_t per_group = c.in_channels / std::max(c.groups, 1);
  return round_up(per_group, tensor_core_alignment(p, tensor_cores));
}

double channel_padding_elements(const ConvGeometry& c, ConvPass pass, Precision p, TensorLayout layout,
                                bool tensor_cores) noexcept {
  const std::int64_t g = std::max(c.groups, 1);
  const std::int64_t padded = tensor_core_channels(c, p, tensor_cores) * g;
  if (!tensor_cores || layout != TensorLayout::nhwc || pass == ConvPass::data_gradient || padded == c.in_channels) return 0.0;
  const double pixels = static_cast<double>(c.batch) * static_cast<double>(c.in_h) * static_cast<double>(c.in_w);
  return pixels * (static_cast<double>(c.in_channels) + static_cast<double>(padded));  // read the input, write the padded copy
}

bool small_channel_conv(const ConvGeometry& c, ConvPass pass, Precision p, bool tensor_cores) noexcept {
  const std::int64_t per_group = c.in_channels / std::max(c.groups, 1);
  if (!tensor_cores || pass == ConvPass::data_gradient || per_group >= tensor_core_alignment(p, tensor_cores)) return false;
  const bool image_first_layer = p == Precision::fp16 && c.out_channels == 64 && c.kernel_h == 7 && c.kernel_w == 7 &&
      c.stride_h == 2 && c.stride_w == 2 && per_group <= 4;
  return !image_first_layer;
}

Seconds small_channel_conv_time(const ConvGeometry& c, ConvPass pass, const GpuSpec& gpu, const KernelParams& kp) noexcept {
  const bool forward = pass == ConvPass::forward;
  const double rate = forward ? kp.small_channel_forward_rate : kp.small_channel_wgrad_rate;
  const double per_output = forward ? kp.small_channel_forward_clocks : kp.small_channel_wgrad_clocks;
  const double clocks_per_second = gpu.sm_count * gpu.boost_clock.base();
  if (!(rate > 0.0) || !(clocks_per_second > 0.0) || pass == ConvPass::data_gradient) return Seconds{};
  const double outputs =
      static_cast<double>(c.batch) * static_cast<double>(c.out_h * c.out_w) * static_cast<double>(c.out_channels);
  const double macs =
      outputs * static_cast<double>(c.in_channels / std::max(c.groups, 1)) * static_cast<double>(c.kernel_h * c.kernel_w);
  return seconds((macs / rate + outputs * per_output) / clocks_per_second);
}

Seconds pool_walk_time(double window_elements, bool backward, const GpuSpec& gpu, const KernelParams& kp) noexcept {
  const double rate = (backward ? kp.pool_backward_rate : kp.pool_forward_rate) * gpu.sm_count * gpu.boost_clock.base();
  return rate > 0.0 ? seconds(window_elements / rate) : Seconds{};
}

ConvPlan plan_conv(const ConvGeometry& c, ConvPass pass, const GpuSpec& gpu, Precision p, const KernelParams& kp,
                   const ConvAlgorithmPolicy& policy) {
  const GemmShape g = conv_as_gemm(c, pass);
  const double cls = kp.conv_efficiency;
  // K6 on the vector units: cuDNN's fp32 convolution kernels at their measured share of the modelled rate, whichever
  // algorithm (implicit GEMM, Winograd, FFT) they run.
  const double vector_cls = cls * (kp.fp32_conv_efficiency > 0.0 ? kp.fp32_conv_efficiency : 1.0);
  const bool on_tensor = gpu.on_tensor_cores(p);
  ConvPlan best;
  // K10: on NCHW activations a tensor-core kernel is bracketed by layout transposes, copies at the copy
  // rate of DRAM; cuDNN's search times the whole call, so they count when it weighs the fp32 kernels.
  const BytesPerSecond copy_rate = gpu.memory_bandwidth * kp.copy_efficiency;
  const double moved = layout_transpose_elements(c, pass, policy.layout, on_tensor);
  const Seconds transposes = moved > 0.0 ? bytes(2.0 * moved * element_bytes(p)) / copy_rate : Seconds{};
  // K11: unaligned input channels are padded per filter tap (the reduction of the forward and weight-gradient
  // GEMMs grows), and in NHWC a copy of the input with the zero channels added precedes those passes.
  GemmShape padded = g;
  const std::int64_t window = static_cast<std::int64_t>(c.kernel_h) * c.kernel_w;
  const std::int64_t channels = tensor_core_channels(c, p, on_tensor);
  if (pass == ConvPass::forward) padded.k = std::max(padded.k, channels * window);
  if (pass == ConvPass::weight_gradient) padded.n = std::max(padded.n, channels * window);
  const double pad_moved = channel_padding_elements(c, pass, p, policy.layout, on_tensor);
  const Seconds padding = pad_moved > 0.0 ? bytes(pad_moved * element_bytes(p)) / copy_rate : Seconds{};
  const PlanChoice implicit = plan_tensor_or_fp32(padded, g, gpu, p, kp, cls, vector_cls, 1.0, transposes + padding);
  best.gemm = implicit.plan;
  best.transposes = implicit.tensor ? transposes : Seconds{};
  best.padding = implicit.tensor ? padding : Seconds{};
  best.time = best.gemm.time + best.transposes + best.padding;
  // K22: unaligned input channels on the tensor cores run cuDNN's small-channel kernels at their own rate per SM (with
  // K11's padding copy and K10's transposes as before), where the architecture's profiles measured it; in TF32 they
  // are weighed against the fp32 kernels as the implicit GEMM is.
  const Seconds small = small_channel_conv(c, pass, p, on_tensor) ? small_channel_conv_time(c, pass, gpu, kp) : Seconds{};
  if (small > Seconds{}) {
    GemmPlan gemm;
    gemm.compute = small;
    gemm.time = small + kp.kernel_overhead;
    best = ConvPlan{.algorithm = ConvAlgorithm::small_channel,
                    .gemm = gemm,
                    .transposes = transposes,
                    .padding = padding,
                    .time = gemm.time + transposes + padding};
    if (p == Precision::tf32) {
      const GemmPlan fp32 = plan_gemm(g, gpu, Precision::fp32, kp, vector_cls);
      if (fp32.time < best.time) best = ConvPlan{.gemm = fp32, .time = fp32.time};
    }
  }
  // TF32 allows the tensor cores without demanding them: cuDNN still weighs its fp32 vector-unit algorithms (Winograd, FFT)
  // against them and takes the fastest, so those are tried in fp32 too.
  const Precision vector_p = p == Precision::tf32 ? Precision::fp32 : p;
  const bool tensor = gpu.on_tensor_cores(vector_p);
  const bool unit_stride = c.stride_h == 1 && c.stride_w == 1;
  // K7: Winograd F(2x2,3x3) on the vector units (cuDNN's tensor-core convolutions are implicit GEMMs).
  if (policy.winograd && !tensor && unit_stride && c.kernel_h == 3 && c.kernel_w == 3 && c.groups == 1) {
    GemmPlan w = plan_gemm(g, gpu, vector_p, kp, vector_cls, kp.winograd_gain);
    if (w.time < best.time) best = ConvPlan{.algorithm = ConvAlgorithm::winograd, .gemm = w, .time = w.time};
  }
  // K8: FFT for 5×5 and larger at stride 1: kh·kw multiplies per output and input channel become about
  // fft_taps, if the transformed batch, filters and outputs (complex fp32) fit the framework's workspace.
  const int taps = c.kernel_h * c.kernel_w;
  if (policy.fft && !tensor && unit_stride && taps >= 25 && c.groups == 1 && taps > kp.fft_taps) {
    const auto pow2 = [](std::int64_t v) { return static_cast<std::int64_t>(std::bit_ceil(static_cast<std::uint64_t>(v))); };
    const std::int64_t hf = pow2(c.in_h + c.kernel_h - 1), wf = pow2(c.in_w + c.kernel_w - 1);
    const double planes =
        static_cast<double>(c.batch * c.in_channels + c.in_channels * c.out_channels + c.batch * c.out_channels);
    const Bytes workspace = bytes(planes * static_cast<double>(hf) * static_cast<double>(wf / 2 + 1) * 8.0);
    if (workspace <= policy.workspace_limit) {
      GemmPlan f = plan_gemm(g, gpu, vector_p, kp, vector_cls, taps / kp.fft_taps);
      f.memory += workspace * 2.0 / (gpu.memory_bandwidth * kp.memory_efficiency);  // write and read the transforms
      f.time = max(f.compute, f.memory) + kp.kernel_overhead * 3.0;                 // forward FFTs, product, inverse
      if (f.time < best.time) best = ConvPlan{.algorithm = ConvAlgorithm::fft, .gemm = f, .time = f.time};
    }
  }
  return best;
}

}  // namespace dlscale
