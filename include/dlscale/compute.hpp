// Per-layer compute time: how long each learnable layer takes forward, backward and to update on one
// GPU at a batch size. The specification-based model is a roofline (FLOPs and bytes against the GPU's
// peaks, with per-kind efficiency factors); a measured profile replaces it. Model and sources of the
// factors: docs/compute-model.md.
#pragma once

#include <vector>

#include "dlscale/gpu.hpp"
#include "dlscale/network.hpp"
#include "dlscale/units.hpp"

namespace dlscale {

/// Per-layer times, indexed like Network::layers (element 0 = layer 1, the input side).
struct LayerTimes {
  std::vector<Seconds> forward, backward, update;

  [[nodiscard]] Seconds total_forward() const noexcept;
  [[nodiscard]] Seconds total_backward() const noexcept;
  [[nodiscard]] Seconds total_update() const noexcept;
};

/// Efficiency factors: the fraction of the GPU's peak that each kind of work reaches. Defaults and
/// their sources are documented in docs/compute-model.md; a calibration profile replaces them.
struct ComputeOptions {
  Precision precision = Precision::fp32;
  double conv_efficiency = 0.55;    // cuDNN convolutions vs peak FLOP/s
  double gemm_efficiency = 0.70;    // cuBLAS GEMMs (linear, attention projections) vs peak FLOP/s
  double memory_efficiency = 0.75;  // element-wise / normalisation / update vs peak memory bandwidth
  /// On tensor cores (fp16 on sm_70 and newer, TF32 where the GPU has it) the same kernels reach a smaller
  /// fraction of a peak that is 8-16x higher: data layout, tile quantisation and the memory system keep
  /// them from it. These replace conv_efficiency / gemm_efficiency there.
  double tensor_conv_efficiency = 0.30;
  double tensor_gemm_efficiency = 0.55;
  /// Backward of a layer that computes both the weight gradient and the input gradient, relative to its
  /// forward time (each gradient costs about one forward). A layer that needs no input gradient (layer 1,
  /// whose input is the data, and embeddings, whose input is token ids) takes half of it.
  double backward_to_forward = 2.0;
  int optimizer_state_words = 1;    // fp32 words of optimiser state per parameter (SGD momentum: 1, Adam: 2)
  bool tf32 = false;                // fp32 convolutions and GEMMs on TF32 tensor cores where the GPU has them
};

/// Bytes per element of activations and of the gradients that are exchanged: 4 in fp32, 2 in mixed fp16.
double activation_bytes_per_element(Precision p) noexcept;
double gradient_bytes_per_element(Precision p) noexcept;
/// Bytes one optimiser step moves per parameter (read weight and gradient, write weight, read and write
/// each state word; mixed precision also writes the fp16 working copy and reads an fp16 gradient).
double update_bytes_per_param(const ComputeOptions& opt) noexcept;

/// The roofline estimate of every layer's forward, backward and update time.
LayerTimes estimate_layer_times(const Network& net, const GpuSpec& gpu, int batch, const ComputeOptions& opt);

/// Spread measured phase totals over the layers in proportion to modelled per-layer times, so that the
/// totals equal the measurement and the shape follows the model.
LayerTimes spread_phase_totals(const LayerTimes& modelled, Seconds forward, Seconds backward, Seconds update);

}  // namespace dlscale
