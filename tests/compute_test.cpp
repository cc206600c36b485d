// Per-layer compute time: the roofline against hand-computed expectations (docs/compute-model.md).
#include <gtest/gtest.h>

#include "dlscale/compute.hpp"
#include "dlscale/io.hpp"

namespace dlscale {
namespace {

// A toy GPU with round numbers: 10 TFLOPS fp32, 40 TFLOPS fp16 tensor, 20 TFLOPS tf32, 500 GB/s.
GpuSpec toy_gpu() {
  GpuSpec g;
  g.name = "toy";
  g.peak_fp32 = teraflops_per_second(10);
  g.peak_fp16 = teraflops_per_second(40);
  g.peak_tf32 = teraflops_per_second(20);
  g.memory_bandwidth = gigabytes_per_second(500);
  g.memory_size = bytes(16e9);
  return g;
}

Layer make(std::string name, LayerKind kind, std::int64_t params, double flops, double act) {
  Layer l;
  l.name = std::move(name);
  l.kind = kind;
  l.params = params;
  l.forward_flops_per_sample = flops;
  l.macs_per_sample = flops / 2;
  l.activation_bytes_per_sample = act;
  return l;
}

// conv (layer 1), batchnorm, linear, embedding (not first)
Network toy_net() {
  Network n;
  n.name = "toy";
  n.layers = {make("a", LayerKind::conv, 1000, 2e9, 1e6), make("b", LayerKind::batchnorm, 200, 2e6, 1e6),
              make("c", LayerKind::linear, 1'000'000, 2e8, 4000), make("d", LayerKind::embedding, 10'000, 0, 8000)};
  return n;
}

ComputeOptions toy_options() {
  ComputeOptions o;
  o.conv_efficiency = 0.5;
  o.gemm_efficiency = 0.8;
  o.tensor_conv_efficiency = 0.4;
  o.tensor_gemm_efficiency = 0.6;
  o.memory_efficiency = 0.8;  // 400 GB/s attainable
  o.backward_to_forward = 2.0;
  o.optimizer_state_words = 1;
  return o;
}

TEST(Compute, RooflineForwardByHand) {
  const auto t = estimate_layer_times(toy_net(), toy_gpu(), 10, toy_options());
  // a: 2e9 · 10 FLOP / (10e12 · 0.5) = 4 ms; memory (2 · 1e6 · 10 + 1000 · 4) B / 400e9 = 50.01 us → 4 ms
  EXPECT_NEAR(in_seconds(t.forward[0]), 4e-3, 1e-12);
  // b (memory-bound kind): (2 · 1e6 · 10 + 200 · 4) / 400e9 = 50.002 us
  EXPECT_NEAR(in_seconds(t.forward[1]), 20'000'800.0 / 400e9, 1e-15);
  // c: 2e8 · 10 / (10e12 · 0.8) = 0.25 ms; memory (80,000 + 4e6) / 400e9 = 10.2 us → 0.25 ms
  EXPECT_NEAR(in_seconds(t.forward[2]), 0.25e-3, 1e-12);
  // d: (2 · 8000 · 10 + 10,000 · 4) / 400e9 = 0.5 us
  EXPECT_NEAR(in_seconds(t.forward[3]), 200'000.0 / 400e9, 1e-15);
}

TEST(Compute, BackwardIsWeightPlusInputGradientExceptLayerOneAndEmbeddings) {
  const auto t = estimate_layer_times(toy_net(), toy_gpu(), 10, toy_options());
  EXPECT_NEAR(in_seconds(t.backward[0]), 4e-3, 1e-12);                           // layer 1: weight gradient only
  EXPECT_NEAR(in_seconds(t.backward[1]), 2 * 20'000'800.0 / 400e9, 1e-15);       // both gradients
  EXPECT_NEAR(in_seconds(t.backward[2]), 0.5e-3, 1e-12);                         // both gradients
  EXPECT_NEAR(in_seconds(t.backward[3]), 200'000.0 / 400e9, 1e-15);              // embedding: no input gradient
  EXPECT_NEAR(in_seconds(t.total_backward()), 4e-3 + 2 * 20'000'800.0 / 400e9 + 0.5e-3 + 0.5e-6, 1e-12);
}

TEST(Compute, UpdateIsAMemoryBoundPassOverParametersAndState) {
  // fp32 SGD with momentum: read w, read g, write w (12 B) + read and write the momentum (8 B) = 20 B
  EXPECT_DOUBLE_EQ(update_bytes_per_param(toy_options()), 20.0);
  auto adam = toy_options();
  adam.optimizer_state_words = 2;
  EXPECT_DOUBLE_EQ(update_bytes_per_param(adam), 28.0);
  const auto t = estimate_layer_times(toy_net(), toy_gpu(), 10, toy_options());
  // c: 1e6 params · 20 B / 400e9 B/s = 50 us, independent of the batch
  EXPECT_NEAR(in_seconds(t.update[2]), 50e-6, 1e-15);
  const auto t2 = estimate_layer_times(toy_net(), toy_gpu(), 1000, toy_options());
  EXPECT_DOUBLE_EQ(in_seconds(t2.update[2]), in_seconds(t.update[2]));
}

TEST(Compute, MixedPrecisionUsesTensorPeakAndHalvesActivationBytes) {
  auto o = toy_options();
  o.precision = Precision::fp16;
  const auto t = estimate_layer_times(toy_net(), toy_gpu(), 10, o);
  // a: 2e10 / (40e12 · 0.5) = 1 ms
  EXPECT_NEAR(in_seconds(t.forward[0]), 1e-3, 1e-12);
  // b: (2 · 0.5e6 · 10 + 200 · 2) / 400e9
  EXPECT_NEAR(in_seconds(t.forward[1]), 10'000'400.0 / 400e9, 1e-15);
  EXPECT_DOUBLE_EQ(gradient_bytes_per_element(Precision::fp16), 2.0);
  EXPECT_DOUBLE_EQ(gradient_bytes_per_element(Precision::fp32), 4.0);
  // update, mixed: read fp32 master 4 + read fp16 gradient 2 + write master 4 + write fp16 copy 2 + state 8
  EXPECT_DOUBLE_EQ(update_bytes_per_param(o), 20.0);
}

TEST(Compute, Tf32OnlyWhenAskedAndWhenTheGpuHasIt) {
  auto o = toy_options();
  o.tf32 = true;
  const auto t = estimate_layer_times(toy_net(), toy_gpu(), 10, o);
  // TF32 runs on tensor cores: 2e10 FLOP / (20e12 · 0.4) = 2.5 ms
  EXPECT_NEAR(in_seconds(t.forward[0]), 2.5e-3, 1e-12);
  GpuSpec old = toy_gpu();
  old.peak_tf32 = FlopsPerSecond{};
  EXPECT_NEAR(in_seconds(estimate_layer_times(toy_net(), old, 10, o).forward[0]), 4e-3, 1e-12);
}

TEST(Compute, Fp16OnVoltaAndNewerUsesTheTensorCoreEfficiencies) {
  auto o = toy_options();
  o.precision = Precision::fp16;
  GpuSpec volta = toy_gpu();
  volta.sm_version = 70;
  const auto t = estimate_layer_times(toy_net(), volta, 10, o);
  // a (conv): 2e10 / (40e12 · 0.4) = 1.25 ms, instead of 1 ms with the vector-unit factor 0.5 (sm < 70)
  EXPECT_NEAR(in_seconds(t.forward[0]), 1.25e-3, 1e-12);
  // c (linear): 2e9 FLOP, compute-bound in both (fp32 0.25 ms vs 10.2 us of memory; fp16 83.3 us vs 5.1 us),
  // at 40e12 · 0.6 instead of 10e12 · 0.8
  const auto t32 = estimate_layer_times(toy_net(), volta, 10, toy_options());
  EXPECT_NEAR(t.forward[2] / t32.forward[2], (10e12 * 0.8) / (40e12 * 0.6), 1e-12);
  GpuSpec pascal = volta;
  pascal.sm_version = 60;
  EXPECT_NEAR(in_seconds(estimate_layer_times(toy_net(), pascal, 10, o).forward[0]), 1e-3, 1e-12);
}

TEST(Compute, ForwardGrowsLinearlyWithTheBatchWhenComputeBound) {
  const auto t1 = estimate_layer_times(toy_net(), toy_gpu(), 10, toy_options());
  const auto t2 = estimate_layer_times(toy_net(), toy_gpu(), 20, toy_options());
  EXPECT_NEAR(t2.forward[0] / t1.forward[0], 2.0, 1e-12);
}

TEST(Compute, SpreadKeepsMeasuredTotalsAndModelledShape) {
  const auto t = estimate_layer_times(toy_net(), toy_gpu(), 10, toy_options());
  const auto s = spread_phase_totals(t, seconds(0.1), seconds(0.2), seconds(0.01));
  EXPECT_NEAR(in_seconds(s.total_forward()), 0.1, 1e-15);
  EXPECT_NEAR(in_seconds(s.total_backward()), 0.2, 1e-15);
  EXPECT_NEAR(in_seconds(s.total_update()), 0.01, 1e-15);
  // layer a holds 4 / (4 + 0.050002 + 0.25 + 0.0005) ms of the forward model
  const double share = 4e-3 / in_seconds(t.total_forward());
  EXPECT_NEAR(in_seconds(s.forward[0]), 0.1 * share, 1e-15);
}

TEST(Compute, RejectsAnEmptyBatch) {
  EXPECT_THROW((void)estimate_layer_times(toy_net(), toy_gpu(), 0, toy_options()), std::invalid_argument);
}

TEST(Compute, ResNet50OnP40IsComputeBoundInItsConvolutions) {
  // Shape check on a real network: ResNet-50's forward at batch 32 on a P40 at 1.3 GHz is at least its
  // conv FLOPs at the conv efficiency, and no layer is faster than its FLOPs at peak.
  const Network n = load_network(resolve(DataKind::network, "resnet50", "--model"));
  const GpuSpec p40 = find_gpu("p40-base-clock");
  const ComputeOptions o;
  const auto t = estimate_layer_times(n, p40, 32, o);
  double conv_flops = 0;
  for (const auto& l : n.layers)
    if (l.kind == LayerKind::conv) conv_flops += l.forward_flops_per_sample * 32;
  EXPECT_GE(in_seconds(t.total_forward()), conv_flops / (in_teraflops_per_second(p40.peak_fp32) * 1e12 * o.conv_efficiency) * (1 - 1e-12));
  for (std::size_t i = 0; i < n.layers.size(); ++i)
    EXPECT_GE(in_seconds(t.forward[i]) * (1 + 1e-12), n.layers[i].forward_flops_per_sample * 32 / (in_teraflops_per_second(p40.peak_fp32) * 1e12));
}

}  // namespace
}  // namespace dlscale
