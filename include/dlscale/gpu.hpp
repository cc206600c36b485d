// A GPU's datasheet figures (what the compute model and the memory-fit check read) and the numeric
// precisions a training step can run in.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dlscale/detail/enum_names.hpp"
#include "dlscale/units.hpp"

namespace dlscale {

/// The precision of a training step's multiply-adds and activations (docs/compute-model.md, "Precisions"):
/// - fp32: IEEE single precision everywhere (vector units; no TF32).
/// - tf32: fp32 storage, convolutions and GEMMs on TF32 tensor cores (Ampere and newer; PyTorch's default
///   for cuDNN convolutions, and for matrix multiplies up to 1.11).
/// - bf16, fp16: automatic mixed precision: GEMMs and convolutions in half precision on tensor cores with
///   fp32 accumulation, half-precision activations, fp32 master weights and optimiser state.
/// fp8: bf16 mixed precision whose transformer-block linear layers multiply in fp8 with dynamic scaling
/// (Transformer Engine, torchao float8; docs/compute-model.md, eq. K15): everything else runs as bf16 does.
enum class Precision { fp32, tf32, bf16, fp16, fp8 };

template <>
struct EnumNames<Precision> {
  static constexpr std::array<EnumName<Precision>, 5> names{{
      {Precision::fp32, "fp32"},
      {Precision::tf32, "tf32"},
      {Precision::bf16, "bf16"},
      {Precision::fp16, "fp16"},
      {Precision::fp8, "fp8"},
  }};
  // As frameworks and published tables name them: PyTorch's and NVIDIA's "AMP" and "mixed precision" are
  // fp16 autocast with fp32 master weights, which is what fp16 means here.
  static constexpr std::array<EnumName<Precision>, 6> aliases{{
      {Precision::fp16, "amp"},
      {Precision::fp16, "mixed"},
      {Precision::fp16, "float16"},
      {Precision::fp16, "half"},
      {Precision::bf16, "bfloat16"},
      {Precision::fp32, "float32"},
  }};
};
/// "fp32", "tf32", "bf16" or "fp16"; std::invalid_argument otherwise (callers add the location).
Precision precision_from_string(std::string_view name);
inline constexpr std::string_view kPrecisionNames = "fp32, tf32, bf16, fp16, fp8";
/// Mixed precision (bf16 or fp16 AMP): half-precision activations and gradients, fp32 master weights.
[[nodiscard]] constexpr bool is_mixed(Precision p) noexcept {
  return p == Precision::bf16 || p == Precision::fp16 || p == Precision::fp8;
}
/// Bytes per element of the gradients that are exchanged: 4 in fp32/TF32, 2 in mixed.
[[nodiscard]] constexpr double gradient_bytes_per_element(Precision p) noexcept { return is_mixed(p) ? 2.0 : 4.0; }

struct GpuSpec {
  std::string name;            // e.g. "Tesla P40"
  std::string architecture;    // e.g. "pascal", "volta", "turing", "ampere", "ada", "hopper"
  int sm_version = 0;          // compute capability × 10, e.g. 61, 70, 80, 90
  int sm_count = 0;            // streaming multiprocessors (0: unknown; the kernel model then ignores waves)
  FlopsPerSecond peak_fp32{};  // vector fp32
  FlopsPerSecond peak_fp16{};  // dense fp16 multiply with fp32 accumulate, as AMP runs it (tensor cores
                               // where present; GeForce cards run it at half their fp16-accumulate rate)
  FlopsPerSecond peak_bf16{};  // dense bf16 with fp32 accumulate; zero where the GPU has no bf16 math
  FlopsPerSecond peak_tf32{};  // dense tf32 tensor; zero where it does not exist
  FlopsPerSecond peak_fp8{};   // dense fp8 tensor with fp32 accumulate; zero where it does not exist (before Hopper)
  BytesPerSecond memory_bandwidth{};
  Bytes memory_size{};
  Hertz base_clock{};
  Hertz boost_clock{};
  int nvlink_count = 0;  // NVLinks per GPU
  int nvlink_generation = 0;
  int pcie_generation = 0;
  int pcie_width = 16;
  std::string source;  // where the figures come from

  /// Whether fp16 multiply-adds run on tensor cores (Volta, sm_70, and newer; Pascal's fp16 is the vector unit's).
  [[nodiscard]] bool has_tensor_cores() const noexcept { return sm_version >= 70; }
  /// Whether the GPU can run a step in this precision (TF32 and bf16 need Ampere or newer; fp16 AMP runs
  /// everywhere, at the fp32 rate where the GPU has no fast fp16).
  [[nodiscard]] bool supports(Precision p) const noexcept {
    switch (p) {
      case Precision::tf32:
        return peak_tf32 > FlopsPerSecond{};
      case Precision::bf16:
        return peak_bf16 > FlopsPerSecond{};
      case Precision::fp8:
        return peak_fp8 > FlopsPerSecond{} && peak_bf16 > FlopsPerSecond{};
      default:
        return true;
    }
  }
  /// Why `supports` refuses a precision, as one sentence for the error or note that says so: "the Tesla P40
  /// of cluster 'c' has no tf32 mode (it needs TF32 tensor cores, Ampere or newer)" (lib/core/gpu.cpp);
  /// an empty `cluster` leaves the cluster out (`model show --gpu`).
  [[nodiscard]] std::string missing_mode(Precision p, std::string_view cluster) const;
  /// The dense peak MFU is reckoned against: the precision's, but bf16's for fp8 (whose attention and
  /// element-wise work stay bf16), as torchtitan and Transformer Engine report it.
  [[nodiscard]] FlopsPerSecond mfu_peak(Precision p) const noexcept { return peak(p == Precision::fp8 ? Precision::bf16 : p); }
  /// The dense peak of the precision's multiply-adds (fp32 where the GPU lacks the mode).
  [[nodiscard]] FlopsPerSecond peak(Precision p) const noexcept {
    FlopsPerSecond r{};
    switch (p) {
      case Precision::fp32:
        r = peak_fp32;
        break;
      case Precision::tf32:
        r = peak_tf32;
        break;
      case Precision::bf16:
        r = peak_bf16;
        break;
      case Precision::fp16:
        r = peak_fp16;
        break;
      case Precision::fp8:
        r = peak_fp8;
        break;
    }
    return r > FlopsPerSecond{} ? r : peak_fp32;
  }
  /// Whether the precision's GEMMs and convolutions run on tensor cores on this GPU.
  [[nodiscard]] bool on_tensor_cores(Precision p) const noexcept {
    return p != Precision::fp32 && has_tensor_cores() && supports(p);
  }
};

}  // namespace dlscale
