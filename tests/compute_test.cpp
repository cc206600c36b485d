// The kernel model and per-layer compute time against hand-worked values (docs/compute-model.md, "A worked
// example"): a toy GPU with round numbers, each expected time written out from the equations K1–K8.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "dlscale/compute.hpp"
#include "dlscale/equations.hpp"
#include "dlscale/io.hpp"
#include "dlscale/kernels.hpp"
#include "dlscale/memory.hpp"
#include "dlscale/zoo.hpp"

namespace dlscale {
namespace {

// 10 SMs at 1953.125 MHz; 10 TFLOPS fp32, 80 TFLOPS fp16 and bf16 (tensor), 40 TFLOPS TF32; 500 GB/s;
// Ampere (sm_80). Per SM per clock: fp16 4,096 FLOP on 2-byte operands and TF32 2,048 on 4-byte ones, both
// 8,192 operand bytes (4x the reference 2,048 of eq. K3); fp32 512 FLOP × 4 B = 2,048 (1x).
GpuSpec toy_gpu() {
  GpuSpec g;
  g.name = "toy";
  g.architecture = "toy";
  g.sm_version = 80;
  g.sm_count = 10;
  g.peak_fp32 = teraflops_per_second(10);
  g.peak_fp16 = teraflops_per_second(80);
  g.peak_bf16 = teraflops_per_second(80);
  g.peak_tf32 = teraflops_per_second(40);
  g.memory_bandwidth = gigabytes_per_second(500);
  g.memory_size = bytes(16e9);
  g.boost_clock = megahertz(1953.125);
  return g;
}

KernelParams toy_params() {
  KernelParams p;
  p.tensor_efficiency = 0.5;
  p.vector_efficiency = 0.8;
  p.conv_efficiency = 0.75;
  p.memory_efficiency = 0.8;  // 400 GB/s attainable
  p.kernel_overhead = microseconds(5);
  p.winograd_gain = 2.25;
  p.fft_taps = 8;
  p.operand_feed = 8;  // c = 8 × 4 = 32 on the toy's tensor cores, 8 × 1 = 8 on its vector units
  return p;
}

ComputeOptions toy_options(Precision p) {
  ComputeOptions o;
  o.precision = p;
  auto set = std::make_shared<KernelParamSet>();
  set->defaults = toy_params();
  o.kernel_params = set;
  return o;
}

// Tile efficiencies (eq. K3): 1/(1 + c(1/Tm + 1/Tn)); on the toy's tensor cores c = 32 (256×128: 1/1.375,
// 128×128: 1/1.5, 64×64: 1/2), on its vector units c = 8 (128×128: 1/1.125).
constexpr double kTc128x128 = 1.0 / 1.5;
constexpr double kTc64x64 = 1.0 / 2.0;
constexpr double kVec128x128 = 1.0 / 1.125;

TEST(KernelModel, TilesAreTheDocumentedOnes) {
  const auto tc = gemm_tiles(true, 32.0);
  ASSERT_EQ(tc.size(), 6u);
  EXPECT_EQ(tc[0].m, 256);
  EXPECT_NEAR(tc[0].efficiency, 1.0 / 1.375, 1e-12);
  EXPECT_NEAR(tc[2].efficiency, kTc128x128, 1e-12);
  EXPECT_NEAR(tc[5].efficiency, kTc64x64, 1e-12);
  const auto v = gemm_tiles(false, 8.0);
  EXPECT_EQ(v[0].m, 128);
  EXPECT_NEAR(v[0].efficiency, kVec128x128, 1e-12);
  EXPECT_NEAR(v[1].efficiency, 1.0 / (1.0 + 8.0 * (1.0 / 128 + 1.0 / 64)), 1e-12);  // 128×64: 1/1.1875
}

// Eq. K3's feeding cost scales with the operand bytes a unit consumes per SM per clock (reference 2,048).
TEST(KernelModel, FeedingCostScalesWithMathPerSmPerClock) {
  const KernelParams kp = toy_params();
  EXPECT_NEAR(operand_feed_cost(toy_gpu(), Precision::fp16, kp), 32.0, 1e-9);  // 4,096 FLOP × 2 B / 2,048
  EXPECT_NEAR(operand_feed_cost(toy_gpu(), Precision::bf16, kp), 32.0, 1e-9);
  EXPECT_NEAR(operand_feed_cost(toy_gpu(), Precision::tf32, kp), 32.0, 1e-9);  // 2,048 FLOP × 4 B / 2,048
  EXPECT_NEAR(operand_feed_cost(toy_gpu(), Precision::fp32, kp), 8.0, 1e-9);   // 512 FLOP × 4 B / 2,048
  GpuSpec no_clock = toy_gpu();
  no_clock.boost_clock = Hertz{};
  EXPECT_DOUBLE_EQ(operand_feed_cost(no_clock, Precision::fp16, kp), 8.0);  // unknown clock: the reference
  // The reference is a V100's fp16 tensor math: 125 TFLOPS / (80 SMs × 1530 MHz) = 1,021 FLOP × 2 B.
  const GpuSpec v100 = find_gpu("v100-sxm2-16gb");
  EXPECT_NEAR(operand_feed_cost(v100, Precision::fp16, kp), 8.0 * 125e12 / (80 * 1530e6) * 2 / 2048, 1e-9);
  // An H100 SXM's: 989 TFLOPS / (132 × 1980 MHz) = 3,784 FLOP × 2 B: 3.7x the reference.
  const GpuSpec h100 = find_gpu("h100-sxm5-80gb");
  EXPECT_NEAR(operand_feed_cost(h100, Precision::bf16, kp), 8.0 * 989e12 / (132 * 1980e6) * 2 / 2048, 1e-9);
}

// The worked GEMM: 1024×1024×1024 in fp16. 256×128 tiles: 32 blocks, 4 waves of 2·256·128·1024 FLOP at
// 8 TFLOP/s per SM × 0.5 / 1.375 → 92.3 us; 128×128: 64 blocks, 7 waves at 0.5 / 1.5 → 88.1 us (the best);
// 64×64: 256 blocks, 26 waves at 0.5 / 2 → 109.1 us. Memory: 3 × 1024² × 2 B / 400 GB/s = 15.7 us (not the
// bound).
TEST(KernelModel, WorkedGemm) {
  const GemmPlan p = plan_gemm(GemmShape{1024, 1024, 1024}, toy_gpu(), Precision::fp16, toy_params());
  EXPECT_EQ(p.tile.m, 128);
  EXPECT_EQ(p.tile.n, 128);
  EXPECT_EQ(p.split_k, 1);
  EXPECT_EQ(p.tiles, 64);
  EXPECT_EQ(p.waves, 7);
  const double compute = 7 * (2.0 * 128 * 128 * 1024) / (8e12 * 0.5 * kTc128x128);
  EXPECT_NEAR(in_seconds(p.compute), compute, 1e-15);
  EXPECT_NEAR(in_seconds(p.memory), 3.0 * 1024 * 1024 * 2 / 400e9, 1e-15);
  EXPECT_NEAR(in_seconds(p.time), compute + 5e-6, 1e-15);
}

// TF32 allows the tensor cores, it does not demand them: on a board whose TF32 tensor rate is its fp32 rate
// (GeForce Ampere: 35.6 TFLOPS both on an RTX 3090) the fp32 kernel of the 1024³ GEMM is faster (per SM 1
// TFLOP/s at the vector efficiency 0.8 against the tensor efficiency 0.5, the same 4 B operands per FLOP, so
// the same c = 8 and tiles) and TF32 takes it; on the toy (TF32 at 4× fp32)
// the tensor-core plan stays (the worked example's 176.2 us + 5 us).
TEST(KernelModel, Tf32TakesTheFp32KernelWhereItIsFaster) {
  const GemmShape g{1024, 1024, 1024};
  GpuSpec geforce = toy_gpu();
  geforce.peak_tf32 = geforce.peak_fp32;
  // the worked example's fp32 plan (docs/compute-model.md): 128×64 tiles (c = 8: 1/1.1875), 13 waves at
  // 1 TFLOP/s per SM × 0.8, 323.8 us, plus 5 us
  const double fp32_by_hand = 13 * (2.0 * 128 * 64 * 1024) / (1e12 * 0.8 / 1.1875) + 5e-6;
  EXPECT_NEAR(in_seconds(plan_gemm(g, geforce, Precision::fp32, toy_params()).time), fp32_by_hand, 1e-12);
  EXPECT_NEAR(in_seconds(plan_gemm(g, geforce, Precision::tf32, toy_params()).time), fp32_by_hand, 1e-12);
  const GemmPlan toy = plan_gemm(g, toy_gpu(), Precision::tf32, toy_params());
  EXPECT_LT(toy.time, plan_gemm(g, toy_gpu(), Precision::fp32, toy_params()).time);
  EXPECT_NEAR(in_seconds(toy.time), 7 * (2.0 * 128 * 128 * 1024) / (4e12 * 0.5 * kTc128x128) + 5e-6, 1e-12);
}

// The worked convolution: a 1×1, 256 → 128 channels on 14×14 at batch 8, fp16 (an implicit GEMM:
// M = 8·14·14 = 1568, N = 128, K = 256). 64×64 tiles: ⌈1568/64⌉·⌈128/64⌉ = 25·2 = 50 blocks, 5 waves of
// 2·64·64·256 FLOP at 8e12 × 0.5 × 0.75 (conv) / 2 → 6.99 us, the fastest tile; memory
// (1568·256 + 256·128 + 1568·128) × 2 B / 400 GB/s = 3.17 us.
TEST(KernelModel, WorkedConvolution) {
  const ConvGeometry c{8, 256, 128, 14, 14, 14, 14, 1, 1, 1, 1, 1};
  const GemmShape g = conv_as_gemm(c, ConvPass::forward);
  EXPECT_EQ(g.m, 1568);
  EXPECT_EQ(g.n, 128);
  EXPECT_EQ(g.k, 256);
  const ConvPlan p = plan_conv(c, ConvPass::forward, toy_gpu(), Precision::fp16, toy_params(), ConvAlgorithmPolicy{});
  EXPECT_EQ(p.algorithm, ConvAlgorithm::implicit_gemm);  // tensor cores: no Winograd
  EXPECT_EQ(p.gemm.tile.m, 64);
  EXPECT_EQ(p.gemm.tile.n, 64);
  EXPECT_EQ(p.gemm.tiles, 50);
  EXPECT_EQ(p.gemm.waves, 5);
  const double compute = 5 * (2.0 * 64 * 64 * 256) / (8e12 * 0.5 * 0.75 * kTc64x64);
  EXPECT_NEAR(in_seconds(p.gemm.compute), compute, 1e-15);
  EXPECT_NEAR(in_seconds(p.gemm.memory), (1568.0 * 256 + 256.0 * 128 + 1568.0 * 128) * 2 / 400e9, 1e-15);
  EXPECT_NEAR(in_seconds(p.time), compute + 5e-6, 1e-15);
  // Backward: the data gradient is the transposed convolution (M = input pixels, N = 256, K = 128), the
  // weight gradient reduces over every output pixel (M = 128, N = 256, K = 1568).
  const GemmShape d = conv_as_gemm(c, ConvPass::data_gradient), w = conv_as_gemm(c, ConvPass::weight_gradient);
  EXPECT_EQ(d.m, 1568);
  EXPECT_EQ(d.n, 256);
  EXPECT_EQ(d.k, 128);
  EXPECT_EQ(w.m, 128);
  EXPECT_EQ(w.n, 256);
  EXPECT_EQ(w.k, 1568);
}

// Eq. K6 on the vector units: cuDNN's fp32 convolutions at `fp32_conv_efficiency` of the modelled rate, whatever
// algorithm they run. The worked convolution above in fp32 on the toy's fp32 units (1 TFLOP/s a SM × vector 0.8 ×
// conv 0.75; c = 8): 64×64 tiles (1/1.25), 50 blocks in 5 waves of 2·64·64·256 FLOP, 21.845 us; with a share of 0.5
// each wave takes twice as long, 43.69 us, on the same tiles. The fp16 pass (tensor cores) and a plain fp32 GEMM keep
// their times; the share is read for an architecture and written back.
TEST(KernelModel, Fp32ConvolutionsRunAtTheirMeasuredShareOfTheRate) {
  const ConvGeometry c{8, 256, 128, 14, 14, 14, 14, 1, 1, 1, 1, 1};
  KernelParams kp = toy_params();
  const double compute = 5 * (2.0 * 64 * 64 * 256) / (1e12 * 0.8 * 0.75 / 1.25);
  EXPECT_NEAR(compute, 21.845333e-6, 1e-12);
  const ConvPlan full = plan_conv(c, ConvPass::forward, toy_gpu(), Precision::fp32, kp, ConvAlgorithmPolicy{});
  EXPECT_NEAR(in_seconds(full.time), compute + 5e-6, 1e-15);
  const ConvPlan fp16 = plan_conv(c, ConvPass::forward, toy_gpu(), Precision::fp16, kp, ConvAlgorithmPolicy{});
  const GemmPlan gemm = plan_gemm(conv_as_gemm(c, ConvPass::forward), toy_gpu(), Precision::fp32, kp);
  kp.fp32_conv_efficiency = 0.5;
  const ConvPlan half = plan_conv(c, ConvPass::forward, toy_gpu(), Precision::fp32, kp, ConvAlgorithmPolicy{});
  EXPECT_EQ(half.gemm.tile.m, 64);
  EXPECT_EQ(half.gemm.tile.n, 64);
  EXPECT_EQ(half.gemm.waves, 5);
  EXPECT_NEAR(in_seconds(half.time), 2 * compute + 5e-6, 1e-15);
  EXPECT_EQ(plan_conv(c, ConvPass::forward, toy_gpu(), Precision::fp16, kp, ConvAlgorithmPolicy{}).time, fp16.time);
  EXPECT_EQ(plan_gemm(conv_as_gemm(c, ConvPass::forward), toy_gpu(), Precision::fp32, kp).time, gemm.time);
  const KernelParamSet set =
      parse_kernel_params("defaults: {memory_efficiency: 0.5}\narchitectures:\n  hopper: {fp32_conv_efficiency: 0.62}\n", "test");
  EXPECT_EQ(set.for_architecture("hopper").fp32_conv_efficiency, 0.62);
  EXPECT_EQ(set.for_architecture("ampere").fp32_conv_efficiency, 0.0);
  EXPECT_EQ(
      parse_kernel_params(kernel_params_to_yaml(set, "round trip"), "again").for_architecture("hopper").fp32_conv_efficiency,
      0.62);
}

// Eq. K10 on the worked convolution above (8 × 256 × 14 × 14 in, 8 × 128 × 14 × 14 out, fp16 on the toy's
// tensor cores), with NCHW activations: x = 401,408 and y = 200,704 elements. Forward copies x to NHWC and
// y back: 602,112 elements, each read and written (2 × 2 B), 2,408,448 B at 500 GB/s × copy efficiency 0.8
// = 400 GB/s: 6.02 us on top of the implicit GEMM. The data gradient copies dy in and dx back (the same
// 6.02 us), the weight gradient x again: 401,408 × 4 B / 400 GB/s = 4.01 us. In NHWC, and in fp32 on the
// vector units (cuDNN's CUDA-core kernels read NCHW), nothing is copied.
TEST(KernelModel, NchwActivationsCostTensorCoreConvolutionsTheirTransposes) {
  const ConvGeometry c{8, 256, 128, 14, 14, 14, 14, 1, 1, 1, 1, 1};
  EXPECT_EQ(layout_transpose_elements(c, ConvPass::forward, TensorLayout::nchw, true), 602'112.0);
  EXPECT_EQ(layout_transpose_elements(c, ConvPass::data_gradient, TensorLayout::nchw, true), 602'112.0);
  EXPECT_EQ(layout_transpose_elements(c, ConvPass::weight_gradient, TensorLayout::nchw, true), 401'408.0);
  EXPECT_EQ(layout_transpose_elements(c, ConvPass::forward, TensorLayout::nhwc, true), 0.0);
  EXPECT_EQ(layout_transpose_elements(c, ConvPass::forward, TensorLayout::nchw, false), 0.0);
  KernelParams kp = toy_params();
  kp.copy_efficiency = 0.8;
  ConvAlgorithmPolicy nchw, nhwc;
  nchw.layout = TensorLayout::nchw;
  nhwc.layout = TensorLayout::nhwc;
  const double expect[] = {2'408'448.0 / 400e9, 2'408'448.0 / 400e9, 401'408.0 * 4 / 400e9};
  int i = 0;
  for (ConvPass pass : {ConvPass::forward, ConvPass::data_gradient, ConvPass::weight_gradient}) {
    const ConvPlan a = plan_conv(c, pass, toy_gpu(), Precision::fp16, kp, nchw);
    const ConvPlan b = plan_conv(c, pass, toy_gpu(), Precision::fp16, kp, nhwc);
    EXPECT_NEAR(in_seconds(a.transposes), expect[i], 1e-15) << i;
    EXPECT_EQ(b.transposes, Seconds{}) << i;
    EXPECT_NEAR(in_seconds(a.time - b.time), expect[i], 1e-15) << i;
    const ConvPlan f = plan_conv(c, pass, toy_gpu(), Precision::fp32, kp, nchw);
    EXPECT_EQ(f.transposes, Seconds{}) << i;
    EXPECT_EQ(f.time, plan_conv(c, pass, toy_gpu(), Precision::fp32, kp, nhwc).time) << i;
    ++i;
  }
  EXPECT_EQ(tensor_layout_from_string("channels_last"), TensorLayout::nhwc);
  EXPECT_EQ(tensor_layout_from_string("NCHW"), TensorLayout::nchw);
  EXPECT_THROW(tensor_layout_from_string("nhw"), std::invalid_argument);
}

// Eq. K11 on an image's first convolution: 8 × 3 × 32 × 32 in, 64 filters of 3 × 3, stride 1, pad 1, fp16 on
// the toy's tensor cores. cuDNN pads the 3 channels to 8 (the fp16 alignment) for every filter tap, so the
// forward reduction is K = 8 · 9 = 72, not ⌈3 · 9⌉₈ = 32. M = 8 · 32 · 32 = 8,192, N = 64. Tiles (c = 32):
// 128×64 gives ⌈8192/128⌉ = 64 blocks, 7 waves of 2 · 128 · 64 · 72 = 1,179,648 FLOP at 8e12 × 0.5 × 0.75 /
// 1.75 = 1.714e12 FLOP/s: 4.817 us, the fastest (64×64: 13 waves, 5.112 us; 128×128: 7 waves, 8.258 us;
// 256×128: 4 waves, 8.651 us); K/2 = 36 < 64, no split. Memory (24,576 + 1,728 + 524,288) × 2 B / 400 GB/s =
// 2.75 us, not the bound. In NHWC the padded copy comes first: 8,192 pixels × (3 read + 8 written) × 2 B =
// 180,224 B at 500 GB/s × copy efficiency 0.8: 0.451 us. The weight gradient pads its input the same way
// (its N, 3 · 9 = 27, becomes 72) and copies again; the data gradient's N is the 3 channels, padded to 8 by
// K1 already, and copies nothing. In NCHW the K10 transpose writes the padded copy (no extra copy), and on the
// vector units (fp32) nothing is padded.
TEST(KernelModel, UnalignedInputChannelsArePaddedPerFilterTap) {
  const ConvGeometry c{8, 3, 64, 32, 32, 32, 32, 3, 3, 1, 1, 1};
  KernelParams kp = toy_params();
  kp.copy_efficiency = 0.8;
  ConvAlgorithmPolicy nhwc, nchw;
  nhwc.layout = TensorLayout::nhwc;
  nchw.layout = TensorLayout::nchw;
  EXPECT_EQ(tensor_core_channels(c, Precision::fp16, true), 8);
  EXPECT_EQ(tensor_core_channels(c, Precision::tf32, true), 4);
  EXPECT_EQ(tensor_core_channels(c, Precision::fp32, false), 3);
  const ConvPlan f = plan_conv(c, ConvPass::forward, toy_gpu(), Precision::fp16, kp, nhwc);
  EXPECT_EQ(f.gemm.k, 72);
  EXPECT_EQ(f.gemm.tile.m, 128);
  EXPECT_EQ(f.gemm.tile.n, 64);
  EXPECT_EQ(f.gemm.waves, 7);
  const double compute = 7 * (2.0 * 128 * 64 * 72) / (8e12 * 0.5 * 0.75 / 1.75);
  const double padding = 8192.0 * (3 + 8) * 2 / 400e9;
  EXPECT_NEAR(in_seconds(f.gemm.compute), compute, 1e-15);
  EXPECT_NEAR(in_seconds(f.padding), padding, 1e-15);
  EXPECT_NEAR(in_seconds(f.time), compute + 5e-6 + padding, 1e-15);
  const ConvPlan w = plan_conv(c, ConvPass::weight_gradient, toy_gpu(), Precision::fp16, kp, nhwc);
  EXPECT_EQ(w.gemm.n, 72);
  EXPECT_NEAR(in_seconds(w.padding), padding, 1e-15);
  const ConvPlan d = plan_conv(c, ConvPass::data_gradient, toy_gpu(), Precision::fp16, kp, nhwc);
  EXPECT_EQ(d.gemm.n, 8);
  EXPECT_EQ(d.padding, Seconds{});
  const ConvPlan n = plan_conv(c, ConvPass::forward, toy_gpu(), Precision::fp16, kp, nchw);
  EXPECT_EQ(n.gemm.k, 72);
  EXPECT_EQ(n.padding, Seconds{});
  const ConvPlan v = plan_conv(c, ConvPass::forward, toy_gpu(), Precision::fp32, kp, nhwc);
  EXPECT_EQ(v.gemm.k, 27);
  EXPECT_EQ(v.padding, Seconds{});
  // Aligned channels (the worked 256-channel convolution) are not padded.
  const ConvGeometry aligned{8, 256, 128, 14, 14, 14, 14, 1, 1, 1, 1, 1};
  EXPECT_EQ(channel_padding_elements(aligned, ConvPass::forward, Precision::fp16, TensorLayout::nhwc, true), 0.0);
}

// Eq. K22 on the toy GPU (10 SMs at 1.953125 GHz: 19.53125 G SM clocks a second): the 3-channel 3×3 convolution
// above (8 × 32 × 32 outputs of 64 channels: 524,288 output elements, 524,288 × 3 × 9 = 14,155,776 multiply-adds of
// the true channels), with small-channel rates of 100 multiply-adds and 0.5 clocks an output forward, 200 and 0.25
// for the weight gradient. Forward: (141,557.76 + 262,144) / 19.53125 G = 20.66953011 us, + 5 us, + K11's padding
// copy (8,192 pixels × (3 + 8) × 2 B at 400 GB/s = 0.45056 us); weight gradient (70,778.88 + 131,072) / 19.53125 G
// = 10.33476506 us + 5 + 0.45056 us. The data gradient, fp32 (vector units), aligned channels and fp16's ResNet
// stem (64 filters of 7×7 at stride 2, cuDNN's image_first_layer kernel) keep the implicit GEMM; bf16's stem does
// not. In TF32 the class is weighed against the fp32 kernels, and here they win (fp32 takes Winograd, K7).
TEST(KernelModel, SmallChannelConvolutionsRunAtTheirOwnRatePerSm) {
  const ConvGeometry c{8, 3, 64, 32, 32, 32, 32, 3, 3, 1, 1, 1};
  KernelParams kp = toy_params();
  kp.copy_efficiency = 0.8;
  const ConvAlgorithmPolicy nhwc;
  const ConvPlan before = plan_conv(c, ConvPass::forward, toy_gpu(), Precision::fp16, kp, nhwc);
  EXPECT_EQ(before.algorithm, ConvAlgorithm::implicit_gemm);  // no rate: as eq. K11 times it
  kp.small_channel_forward_rate = 100;
  kp.small_channel_forward_clocks = 0.5;
  kp.small_channel_wgrad_rate = 200;
  kp.small_channel_wgrad_clocks = 0.25;
  const ConvPlan f = plan_conv(c, ConvPass::forward, toy_gpu(), Precision::fp16, kp, nhwc);
  EXPECT_EQ(f.algorithm, ConvAlgorithm::small_channel);
  EXPECT_EQ(to_string(f.algorithm), "small_channel");
  EXPECT_NEAR(in_seconds(f.gemm.compute), 20.66953011e-6, 1e-14);
  EXPECT_NEAR(in_seconds(f.padding), 0.45056e-6, 1e-15);
  EXPECT_NEAR(in_seconds(f.time), 20.66953011e-6 + 5e-6 + 0.45056e-6, 1e-14);
  const ConvPlan w = plan_conv(c, ConvPass::weight_gradient, toy_gpu(), Precision::fp16, kp, nhwc);
  EXPECT_EQ(w.algorithm, ConvAlgorithm::small_channel);
  EXPECT_NEAR(in_seconds(w.time), 10.33476506e-6 + 5e-6 + 0.45056e-6, 1e-14);
  EXPECT_EQ(plan_conv(c, ConvPass::data_gradient, toy_gpu(), Precision::fp16, kp, nhwc).algorithm, ConvAlgorithm::implicit_gemm);
  EXPECT_NE(plan_conv(c, ConvPass::forward, toy_gpu(), Precision::fp32, kp, nhwc).algorithm, ConvAlgorithm::small_channel);
  const ConvGeometry aligned{8, 8, 64, 32, 32, 32, 32, 3, 3, 1, 1, 1};
  EXPECT_FALSE(small_channel_conv(aligned, ConvPass::forward, Precision::fp16, true));
  const ConvGeometry stem{8, 3, 64, 224, 224, 112, 112, 7, 7, 2, 2, 1};
  EXPECT_FALSE(small_channel_conv(stem, ConvPass::forward, Precision::fp16, true));
  EXPECT_TRUE(small_channel_conv(stem, ConvPass::forward, Precision::bf16, true));
  EXPECT_TRUE(small_channel_conv(stem, ConvPass::weight_gradient, Precision::tf32, true));
  const ConvPlan t = plan_conv(c, ConvPass::forward, toy_gpu(), Precision::tf32, kp, nhwc);
  EXPECT_NE(t.algorithm, ConvAlgorithm::small_channel);  // the fp32 kernels (here Winograd)
  EXPECT_LT(t.time, seconds(20.66953011e-6 + 5e-6));
  EXPECT_EQ(t.padding, Seconds{});
}

// A layer norm over 8 sequences of 128 tokens × 768 in fp16: E = 786,432 elements; forward reads and writes
// each (2E × 2 B / 400 GB/s = 7.86 us) plus one kernel; backward moves 4E in two kernels.
// A 3×3 convolution is an implicit GEMM: its m×k operand (9 taps per input element) is never stored, so
// its traffic is the three tensors: 32×64×56×56 input, 128×64×3×3 filters, 32×128×28×28 output (stride 2),
// in every pass (eq. K4).
TEST(KernelModel, ImplicitGemmMovesTheTensorsNotTheExpandedMatrix) {
  const ConvGeometry c{32, 64, 128, 56, 56, 28, 28, 3, 3, 2, 2, 1};
  const double tensors = 32.0 * 64 * 56 * 56 + 128.0 * 64 * 9 + 32.0 * 128 * 28 * 28;
  for (ConvPass pass : {ConvPass::forward, ConvPass::data_gradient, ConvPass::weight_gradient}) {
    const GemmShape g = conv_as_gemm(c, pass);
    EXPECT_DOUBLE_EQ(g.stored_elements, tensors);
    const GemmPlan p = plan_gemm(g, toy_gpu(), Precision::fp32, toy_params());
    // (split-K, which the weight gradient's long K may take, also writes and re-reads its fp32 partials)
    const double partials = p.split_k > 1 ? 2.0 * 128 * 576 * p.split_k * 4 : 0.0;
    EXPECT_NEAR(in_seconds(p.memory), (tensors * 4 + partials) / 400e9, 1e-15);
  }
  // The forward GEMM's own operands would be 9x the input: M·K = 32·28·28 × 576.
  EXPECT_GT(32.0 * 28 * 28 * 576, 2.0 * 32 * 64 * 56 * 56);
}

TEST(KernelModel, WorkedLayerNorm) {
  Layer ln;
  ln.name = "ln";
  ln.kind = LayerKind::layernorm;
  ln.params = 2 * 768;
  ln.input_shape = ln.output_shape = {128, 768};
  const double e = 8.0 * 128 * 768;
  const auto k = layer_kernels(ln, false, false, toy_gpu(), 8, toy_options(Precision::fp16));
  ASSERT_EQ(k.size(), 2u);
  EXPECT_NEAR(in_seconds(k[0].time), 2 * e * 2 / 400e9 + 5e-6, 1e-15);
  EXPECT_NEAR(in_seconds(k[1].time), 4 * e * 2 / 400e9 + 2 * 5e-6, 1e-15);
}

// Eq. K21 on the toy GPU (500 GB/s): Llama's eager RMSNorm in bf16 over 8 x 128 x 768 = 786,432 elements, its
// kernels by class at vectorized 0.9 (450 GB/s), strided and upcast 0.5 (250 GB/s) and reduction 0.4 (200 GB/s), 5 us a
// kernel. Forward, 7 kernels: the upcast (2 + 4), x·rsqrt (4 + 4) and ·weight (2 + 2) strided, 18 B an element,
// 14,155,776 B in 56.623104 us; pow (4 + 4) and the downcast (4 + 2) vectorized, 14 B, 11,010,048 B in 24.466773 us;
// the mean (4) a reduction, 3,145,728 B in 15.72864 us; + 35 us = 131.818517 us for 36 B an element (28,311,552 B).
// Backward, 9 kernels: strided 2·2 + 8 + 4 + (2 + 4) = 22 B, 17,301,504 B in 69.206016 us; vectorized 2 + 8 + 12 +
// (4 + 2) = 28 B, 22,020,096 B in 48.933547 us; reductions 2 + 4 = 6 B, 4,718,592 B in 23.59296 us; + 45 us =
// 186.732523 us for 56 B. Where the framework does not run by class: 36 and 56 B at 400 GB/s + 35 and 45 us.
TEST(KernelModel, EagerRmsNormByKernelClass) {
  Layer rms;
  rms.name = "norm";
  rms.kind = LayerKind::layernorm;
  rms.rms = true;
  rms.params = 768;
  rms.input_shape = rms.output_shape = {128, 768};
  ComputeOptions o = toy_options(Precision::bf16);
  auto set = std::make_shared<KernelParamSet>(*o.kernel_params);
  set->defaults.memory_classes = {
      .vectorized = 0.9, .strided = 0.5, .upcast = 0.5, .reduction = 0.4, .softmax = 0.6, .chunk_cat = 0.4};
  o.kernel_params = set;
  const double e = 786432.0;
  const auto fitted = layer_kernels(rms, false, false, toy_gpu(), 8, o);
  ASSERT_EQ(fitted.size(), 2u);
  EXPECT_NEAR(in_seconds(fitted[0].time), 36 * e / 400e9 + 35e-6, 1e-15);
  EXPECT_NEAR(in_seconds(fitted[1].time), 56 * e / 400e9 + 45e-6, 1e-15);
  o.execution.by_class = true;
  const auto k = layer_kernels(rms, false, false, toy_gpu(), 8, o);
  ASSERT_EQ(k.size(), 2u);
  EXPECT_DOUBLE_EQ(in_bytes(k[0].traffic), 28311552.0);
  EXPECT_DOUBLE_EQ(in_bytes(k[1].traffic), 56 * e);
  EXPECT_NEAR(in_seconds(k[0].time), 56.623104e-6 + 11010048 / 450e9 + 15.72864e-6 + 35e-6, 1e-15);
  EXPECT_NEAR(in_seconds(k[0].time), 131.818517e-6, 1e-12);
  EXPECT_NEAR(in_seconds(k[1].time), 69.206016e-6 + 22020096 / 450e9 + 23.59296e-6 + 45e-6, 1e-15);
  EXPECT_NEAR(in_seconds(k[1].time), 186.732523e-6, 1e-12);
  // the upcasts (2 + 4 B an element each way: x.float() forward, the downcast's gradient backward) are a class of their
  // own: at 0.25 (125 GB/s) each way takes 6·e/125e9 − 6·e/250e9 = 18.874368 us more
  set->defaults.memory_classes.upcast = 0.25;
  const auto slow = layer_kernels(rms, false, false, toy_gpu(), 8, o);
  EXPECT_NEAR(in_seconds(slow[0].time), 131.818517e-6 + 18.874368e-6, 1e-12);
  EXPECT_NEAR(in_seconds(slow[1].time), 186.732523e-6 + 18.874368e-6, 1e-12);
}

// Eq. K21's rates are one block of the parameter file, for every architecture, and are written back by the same.
TEST(KernelModel, MemoryClassRatesAreReadForEveryArchitecture) {
  const KernelParamSet set = parse_kernel_params(
      "defaults: {memory_efficiency: 0.5}\nmemory_classes: {vectorized: 0.86, softmax: 0.66}\narchitectures:\n  hopper: "
      "{sharded_tensor: 0.83}\n",
      "test");
  const KernelParams& h = set.for_architecture("hopper");
  EXPECT_EQ(h.memory_classes.vectorized, 0.86);
  EXPECT_EQ(memory_class_efficiency(h, MemoryClass::softmax), 0.66);
  EXPECT_EQ(memory_class_efficiency(h, MemoryClass::strided), 0.5);  // no rate: the memory-bound efficiency
  EXPECT_EQ(memory_class_efficiency(set.for_architecture("volta"), MemoryClass::vectorized), 0.86);
  const KernelParamSet again = parse_kernel_params(kernel_params_to_yaml(set, "round trip"), "again");
  EXPECT_EQ(again.defaults.memory_classes.vectorized, 0.86);
  EXPECT_EQ(again.defaults.memory_classes.strided, 0.0);
}

// Eq. K12 on the toy GPU (10 SMs at 1.953125 GHz: 19.53125 G SM-clocks a second), a batch norm over
// 8 x 64 x 56 x 56 = 1,605,632 elements, with per-channel NCHW kernels at 2 element passes per SM per clock
// (39.0625 G/s; 1 in bf16). Forward: 3 passes, 4,816,896 element passes; backward: 5, 8,028,160; two
// kernels each as the fitted set counts them (5 us of overhead apiece). In NHWC fp16 they stream: 9,633,792 B at
// 400 GB/s = 24.08448 us forward. In NCHW they walk: 4,816,896 / 39.0625 G = 123.3125376 us forward, 205.520896 us
// backward, in fp16 and in fp32 alike (fp32 would stream in 48.16896 us); bf16 at half the rate: 246.6250752 us
// forward, 411.041792 us backward. With the framework's kernels timed as they run (K18), in the kernels profiled:
// cuDNN's one each way, PyTorch's bf16 NCHW two forward and one backward.
TEST(KernelModel, NchwBatchNormRunsAtItsPerChannelKernelsRate) {
  Layer bn;
  bn.name = "bn";
  bn.kind = LayerKind::batchnorm;
  bn.params = 2 * 64;
  bn.input_shape = bn.output_shape = {64, 56, 56};
  auto options = [](Precision p, TensorLayout layout) {
    ComputeOptions o = toy_options(p);
    auto set = std::make_shared<KernelParamSet>();
    set->defaults = toy_params();
    set->defaults.nchw_norm_rate = 2.0;
    set->defaults.nchw_norm_rate_bf16 = 1.0;
    o.kernel_params = set;
    o.conv_algorithms.layout = layout;
    return o;
  };
  auto times = [&](Precision p, TensorLayout layout) {
    const auto k = layer_kernels(bn, false, false, toy_gpu(), 8, options(p, layout));
    EXPECT_EQ(k.size(), 2u);
    return k;
  };
  const auto nhwc = times(Precision::fp16, TensorLayout::nhwc);
  EXPECT_NEAR(in_seconds(nhwc[0].time), 24.08448e-6 + 10e-6, 1e-12);
  EXPECT_EQ(nhwc[0].name, "bn fwd");
  for (Precision p : {Precision::fp16, Precision::fp32}) {
    const auto nchw = times(p, TensorLayout::nchw);
    EXPECT_NEAR(in_seconds(nchw[0].time), 123.3125376e-6 + 10e-6, 1e-12) << to_string(p);
    EXPECT_NEAR(in_seconds(nchw[1].time), 205.520896e-6 + 10e-6, 1e-12) << to_string(p);
    EXPECT_EQ(nchw[0].name, "bn fwd (per-channel nchw)");
  }
  const auto bf16 = times(Precision::bf16, TensorLayout::nchw);
  EXPECT_NEAR(in_seconds(bf16[0].time), 246.6250752e-6 + 10e-6, 1e-12);
  EXPECT_NEAR(in_seconds(bf16[1].time), 411.041792e-6 + 10e-6, 1e-12);
  for (Precision p : {Precision::fp16, Precision::bf16}) {  // K18's execution: the profiled kernels
    ComputeOptions o = options(p, TensorLayout::nchw);
    o.execution.streaming = true;
    const auto k = layer_kernels(bn, false, false, toy_gpu(), 8, o);
    ASSERT_EQ(k.size(), 2u);
    const double walk = p == Precision::bf16 ? 2.0 : 1.0;
    EXPECT_NEAR(in_seconds(k[0].time), walk * 123.3125376e-6 + (p == Precision::bf16 ? 10e-6 : 5e-6), 1e-12);
    EXPECT_NEAR(in_seconds(k[1].time), walk * 205.520896e-6 + 5e-6, 1e-12);
  }
  // Where the memory is slower than the walk, the pass streams: the toy at 50 GB/s, fp32, 385.35168 us.
  GpuSpec slow = toy_gpu();
  slow.memory_bandwidth = gigabytes_per_second(50);
  const auto k = layer_kernels(bn, false, false, slow, 8, options(Precision::fp32, TensorLayout::nchw));
  EXPECT_NEAR(in_seconds(k[0].time), 3 * 1605632 * 4 / 40e9 + 10e-6, 1e-12);
  EXPECT_EQ(k[0].name, "bn fwd");
}

// A framework without local response normalization (`lrn: false`, CNTK) does not run a network's LRN: on
// the toy GPU an LRN over 8 × 64 × 56 × 56 = 1,605,632 fp32 elements costs 5 passes forward (32,112,640 B
// at 400 GB/s = 80.2816 us, two kernels: + 10 us) and 5 backward (+ 5 us); without it neither kernel runs,
// and the memory estimate keeps 8 × its 802,816 B of scale less.
/// A convolution layer named "conv" of `kernel` × `kernel` filters, without a bias.
Layer toy_conv(std::vector<std::int64_t> in, std::vector<std::int64_t> out, int kernel) {
  Layer conv;
  conv.name = "conv";
  conv.kind = LayerKind::conv;
  conv.params = in[0] * kernel * kernel * out[0];
  conv.input_shape = std::move(in);
  conv.output_shape = std::move(out);
  conv.kernel_h = conv.kernel_w = kernel;
  return conv;
}

TEST(KernelModel, AFrameworkWithoutLrnLeavesItOut) {
  Layer conv = toy_conv({3, 56, 56}, {64, 56, 56}, 1);
  conv.activation_bytes_per_sample = 64.0 * 56 * 56 * 4;
  Operator lrn;
  lrn.name = "lrn";
  lrn.kind = LayerKind::lrn;
  lrn.input_shape = lrn.output_shape = {64, 56, 56};
  lrn.activation_bytes_per_sample = 64.0 * 56 * 56 * 4;
  conv.ops.push_back(lrn);
  ComputeOptions with = toy_options(Precision::fp32), without = with;
  without.lrn = false;
  const auto a = layer_kernels(conv, true, false, toy_gpu(), 8, with);
  const auto b = layer_kernels(conv, true, false, toy_gpu(), 8, without);
  ASSERT_EQ(a.size(), b.size() + 2);
  EXPECT_EQ(a[a.size() - 2].name, "lrn fwd");
  EXPECT_NEAR(in_seconds(a[a.size() - 2].time), 5 * 1605632 * 4 / 400e9 + 10e-6, 1e-15);
  EXPECT_NEAR(in_seconds(a.back().time), 5 * 1605632 * 4 / 400e9 + 5e-6, 1e-15);
  for (const auto& k : b) EXPECT_EQ(k.name.find("lrn"), std::string::npos) << k.name;
  Network net;
  net.name = "one conv and its lrn";
  net.layers.push_back(conv);
  EXPECT_DOUBLE_EQ(in_bytes(estimate_training_memory(net, 8, with).activations) -
                       in_bytes(estimate_training_memory(net, 8, without).activations),
                   8 * 802816.0);
}

// Eq. K13 on the worked convolution's shape (8 × 256 × 14 × 14 in, 128 filters of 3 × 3, fp16 on the toy):
// with a bias (295,040 parameters, not 294,912) the framework adds it to the 8 × 128 × 14 × 14 = 200,704
// output elements in a pass of its own (read and write: 802,816 B at 400 GB/s = 2.00704 us, + 5 us) and
// sums the output gradient for its gradient (read: 1.00352 us, + 5 us); the three GEMMs are unchanged.
TEST(KernelModel, AConvolutionsBiasIsAPassOfItsOwn) {
  Layer conv = toy_conv({256, 14, 14}, {128, 14, 14}, 3);  // 294,912 parameters
  const auto plain = layer_kernels(conv, false, false, toy_gpu(), 8, toy_options(Precision::fp16));
  ASSERT_EQ(plain.size(), 3u);  // forward, data gradient, weight gradient
  conv.params += 128;
  const auto biased = layer_kernels(conv, false, false, toy_gpu(), 8, toy_options(Precision::fp16));
  ASSERT_EQ(biased.size(), 5u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(biased[i].time, plain[i].time) << biased[i].name;
  EXPECT_EQ(biased[3].name, "conv bias fwd");
  EXPECT_NEAR(in_seconds(biased[3].time), 802816 / 400e9 + 5e-6, 1e-15);
  EXPECT_FALSE(biased[3].backward);
  EXPECT_EQ(biased[4].name, "conv bias bwd");
  EXPECT_NEAR(in_seconds(biased[4].time), 401408 / 400e9 + 5e-6, 1e-15);
  EXPECT_TRUE(biased[4].backward);
}

// Eq. K9, FlashAttention on the toy GPU: one sequence of 1,024 tokens, width 256, 2 heads of 128, fp16.
// Forward: the products Q·Kᵀ (1024×1024×128, 2 heads) and P·V (1024×128×1024), as the GEMM model times
// their math (WorkedGemm checks that), plus 2·1024² exponentials at 16 per SM per clock: 10 SMs ×
// 1.953125 GHz × 16 = 312.5 G/s → 6.7109 us; its memory, (Q + K + V + O) = 4 × 1024 × 256 × 2 B + the
// log-sum-exp 2 × 1024 × 4 B = 2.105 MB at 400 GB/s = 5.26 us, is below the math; plus one 5 us overhead.
// Backward: two Q·Kᵀ-shaped and three P·V-shaped products and the exponentials again. Causal: half of
// the products and exponentials. Kept for backward: no 2 × 1024² probabilities (fp32 basis: 8,388,608 B).
/// The attention layer of the two fused-attention examples: one sequence of 1024 tokens, width 256, 2 heads;
/// its products Q·Kᵀ and P·V per head; its exponentials' time on the toy GPU.
Layer toy_attention() {
  Layer a;
  a.name = "attn";
  a.kind = LayerKind::attention;
  a.heads = 2;
  a.input_shape = a.output_shape = {1024, 256};
  return a;
}
const GemmShape kToyQk{1024, 1024, 128, 2}, kToyPv{1024, 128, 1024, 2};
const double kToyExp = 2.0 * 1024 * 1024 / (16 * 10 * 1953.125e6);

// Eq. K9 with cuDNN's fused attention (framework `kernels: {attention: cudnn}`): the same kernel structure, its products
// at the cuDNN shares of the GEMM rate where the architecture has them, at the flash shares where not. On the toy
// GPU with flash shares 0.5 / 0.4 and a cuDNN forward share 0.8 (no backward one): forward (t_qk + t_pv) / 0.8 +
// exponentials + 5 us, backward (2·t_qk + 3·t_pv) / 0.4 + exponentials + 5 us; flash's forward divides by 0.5.
TEST(KernelModel, CudnnAttentionTakesItsOwnSharesWhereTheArchitectureHasThem) {
  const Layer a = toy_attention();
  const double t_qk = in_seconds(plan_gemm(kToyQk, toy_gpu(), Precision::fp16, toy_params()).compute);
  const double t_pv = in_seconds(plan_gemm(kToyPv, toy_gpu(), Precision::fp16, toy_params()).compute);
  ComputeOptions o = toy_options(Precision::fp16);
  auto set = std::make_shared<KernelParamSet>();
  set->defaults = toy_params();
  set->defaults.flash_forward_efficiency = 0.5;
  set->defaults.flash_backward_efficiency = 0.4;
  set->defaults.cudnn_forward_efficiency = 0.8;
  o.kernel_params = set;
  o.attention = AttentionKernel::flash;
  auto times = [&](bool cudnn) {
    o.execution.cudnn_attention = cudnn;
    std::pair<double, double> fb{-1, -1};
    for (const auto& k : layer_kernels(a, false, false, toy_gpu(), 1, o)) {
      const std::string label = cudnn ? "cudnn" : "flash";  // the kernel named as the framework runs it
      if (k.name == "attn.attention fwd (" + label + ")") fb.first = in_seconds(k.time);
      if (k.name == "attn.attention bwd (" + label + ")") fb.second = in_seconds(k.time);
    }
    return fb;
  };
  const auto [flash_fwd, flash_bwd] = times(false);
  const auto [cudnn_fwd, cudnn_bwd] = times(true);
  EXPECT_NEAR(flash_fwd, (t_qk + t_pv) / 0.5 + kToyExp + 5e-6, 1e-12);
  EXPECT_NEAR(cudnn_fwd, (t_qk + t_pv) / 0.8 + kToyExp + 5e-6, 1e-12);
  EXPECT_NEAR(flash_bwd, (2 * t_qk + 3 * t_pv) / 0.4 + kToyExp + 5e-6, 1e-12);
  EXPECT_NEAR(cudnn_bwd, flash_bwd, 1e-15);  // no cuDNN backward share: the flash one
  // a step's layer times take it too: the forward shorter by (t_qk + t_pv)·(1/0.5 - 1/0.8)
  Network n;
  n.name = "attn";
  n.layers = {a};
  o.execution.cudnn_attention = false;
  const Seconds flash_step = estimate_layer_times(n, toy_gpu(), 1, o).forward[0];
  o.execution.cudnn_attention = true;
  const Seconds cudnn_step = estimate_layer_times(n, toy_gpu(), 1, o).forward[0];
  EXPECT_NEAR(in_seconds(flash_step - cudnn_step), (t_qk + t_pv) * (1 / 0.5 - 1 / 0.8), 1e-12);
}

// The shipped cuDNN shares (compute-params.yaml): Hopper's from our H200's step pair, 174.368 ms with SDPA's flash
// backend and 168.575 with its cudnn one over 4 blocks, so cuDNN took 1 - 5.793 / 4 / 3.8503 = 0.6239 of
// FlashAttention-2's 960.7 + 2,889.6 us a layer; of each 150.9 us does not scale and the products took 362.0 and
// 906.5 us at the flash shares: 362.0 / (0.6239·960.7 - 150.9) and 906.5 / (0.6239·2,889.6 - 150.9). Blackwell
// borrows them; Ampere has none (the flash shares).
TEST(Compute, CudnnAttentionSharesAreTheH200StepPairs) {
  const double r = 1.0 - (174.368 - 168.575) / 4.0 / 3.8503;
  EXPECT_NEAR(r, 0.6239, 1e-4);
  const auto p = shipped_kernel_params();
  const KernelParams& h = p->for_architecture("hopper");
  EXPECT_NEAR(h.cudnn_forward_efficiency, 362.0 / (r * 960.7 - 150.9), 0.001);
  EXPECT_NEAR(h.cudnn_backward_efficiency, 906.5 / (r * 2889.6 - 150.9), 0.001);
  EXPECT_EQ(p->for_architecture("blackwell").cudnn_forward_efficiency, h.cudnn_forward_efficiency);
  EXPECT_EQ(p->for_architecture("blackwell").cudnn_backward_efficiency, h.cudnn_backward_efficiency);
  EXPECT_EQ(p->for_architecture("ampere").cudnn_forward_efficiency, 0.0);
}

TEST(KernelModel, WorkedFlashAttention) {
  Layer a = toy_attention();
  const GemmShape &qk = kToyQk, &pv = kToyPv;
  const double t_qk = in_seconds(plan_gemm(qk, toy_gpu(), Precision::fp16, toy_params()).compute);
  const double t_pv = in_seconds(plan_gemm(pv, toy_gpu(), Precision::fp16, toy_params()).compute);
  const double t_exp = kToyExp;
  EXPECT_NEAR(t_exp, 6.7109e-6, 1e-9);
  ComputeOptions o = toy_options(Precision::fp16);
  o.attention = AttentionKernel::flash;
  for (bool causal : {false, true}) {
    a.causal = causal;
    const double f = causal ? 0.5 : 1.0;
    double fwd = -1, bwd = -1;
    bool eager_pass = false;
    for (const auto& k : layer_kernels(a, false, false, toy_gpu(), 1, o)) {
      if (k.name == "attn.attention fwd (flash)") fwd = in_seconds(k.time);
      if (k.name == "attn.attention bwd (flash)") bwd = in_seconds(k.time);
      if (k.name.find("softmax") != std::string::npos || k.name.find("scores") != std::string::npos) eager_pass = true;
    }
    EXPECT_FALSE(eager_pass);
    EXPECT_NEAR(fwd, f * (t_qk + t_pv + t_exp) + 5e-6, 1e-12) << causal;
    EXPECT_NEAR(bwd, f * (2 * t_qk + 3 * t_pv + t_exp) + 5e-6, 1e-12) << causal;
  }
  EXPECT_DOUBLE_EQ(flash_attention_saving_per_sample(a), 8388608.0);
  // Flash runs in fp16/bf16 from Ampere on; elsewhere the framework's choice falls back to eager.
  EXPECT_EQ(effective_attention(AttentionKernel::flash, toy_gpu(), Precision::fp32), AttentionKernel::eager);
  EXPECT_EQ(effective_attention(AttentionKernel::flash, toy_gpu(), Precision::bf16), AttentionKernel::flash);
  GpuSpec volta = toy_gpu();
  volta.sm_version = 70;
  EXPECT_EQ(effective_attention(AttentionKernel::flash, volta, Precision::fp16), AttentionKernel::eager);
}

/// The time of the kernel named `name` in `kernels`, in seconds; -1 where there is none.
double kernel_time(const std::vector<KernelTiming>& kernels, const std::string& name) {
  for (const auto& k : kernels)
    if (k.name == name) return in_seconds(k.time);
  return -1.0;
}

// GPT-2 small's MLP (768 -> 3,072 -> 768) on 128-token samples, with `params` (biases or none): the hand checks' layer.
Layer gpt2_small_mlp(std::int64_t params) {
  Layer mlp;
  mlp.name = "mlp";
  mlp.kind = LayerKind::linear;
  mlp.hidden = 3072;
  mlp.input_shape = mlp.output_shape = {128, 768};
  mlp.params = params;
  return mlp;
}

// Eq. K24 on the toy GPU (400 GB/s attainable, 5 us a kernel), fp16 (eb = 2): GPT-2 small's MLP, 768 -> 3,072 -> 768
// with biases, at batch 2 of 128 tokens: h = 256 x 3,072 = 786,432 activations, 256 x 768 = 196,608 outputs.
// gelu_new forward 18·eb = 36 B an activation, 28,311,552 B in 70.77888 us + 8 kernels (40 us) = 110.77888 us;
// backward 28·eb = 56 B, 44,040,192 B in 110.10048 us + 11 kernels = 165.10048 us (the fused GELU: 4 and 6 B, one
// kernel each). The up projection's addmm copies its bias into its 786,432 outputs and reads it back (4 B an output:
// 3,145,728 B, 7.86432 + 5 us) and its bias's gradient is a column sum (2 B: 3.93216 + 5 us); the down projection's
// the same over 196,608 outputs (6.96608 and 5.98304 us). The dropout on the output: 2·eb + 1 = 5 B each way,
// 983,040 B in 2.4576 + 5 us.
TEST(KernelModel, TransformersGpt2MlpRunsItsEagerOperators) {
  Layer mlp = gpt2_small_mlp(2 * 768 * 3072 + 3072 + 768);
  ComputeOptions o = toy_options(Precision::fp16);
  const auto native = layer_kernels(mlp, false, false, toy_gpu(), 2, o);
  EXPECT_NEAR(kernel_time(native, "mlp.gelu fwd"), 3145728 / 400e9 + 5e-6, 1e-15);
  EXPECT_NEAR(kernel_time(native, "mlp.gelu bwd"), 4718592 / 400e9 + 5e-6, 1e-15);
  EXPECT_EQ(kernel_time(native, "mlp.dropout fwd"), -1.0);
  o.execution.transformers_gpt2 = true;
  const auto hf = layer_kernels(mlp, false, false, toy_gpu(), 2, o);
  EXPECT_EQ(kernel_time(hf, "mlp.gelu fwd"), -1.0);
  EXPECT_NEAR(kernel_time(hf, "mlp.gelu_new fwd"), 110.77888e-6, 1e-12);
  EXPECT_NEAR(kernel_time(hf, "mlp.gelu_new bwd"), 165.10048e-6, 1e-12);
  EXPECT_NEAR(kernel_time(hf, "mlp.up bias copy fwd (addmm)"), 12.86432e-6, 1e-12);
  EXPECT_NEAR(kernel_time(hf, "mlp.up bias grad bwd"), 8.93216e-6, 1e-12);
  EXPECT_NEAR(kernel_time(hf, "mlp.down bias copy fwd (addmm)"), 6.96608e-6, 1e-12);
  EXPECT_NEAR(kernel_time(hf, "mlp.down bias grad bwd"), 5.98304e-6, 1e-12);
  EXPECT_NEAR(kernel_time(hf, "mlp.dropout fwd"), 7.4576e-6, 1e-12);
  EXPECT_NEAR(kernel_time(hf, "mlp.dropout bwd"), 7.4576e-6, 1e-12);
  // the GEMMs are the same kernels
  EXPECT_EQ(kernel_time(hf, "mlp.up fwd"), kernel_time(native, "mlp.up fwd"));
  EXPECT_EQ(kernel_time(hf, "mlp.down wgrad"), kernel_time(native, "mlp.down wgrad"));
  // without biases, no addmm copies
  mlp.params = 2 * 768 * 3072;
  EXPECT_EQ(kernel_time(layer_kernels(mlp, false, false, toy_gpu(), 2, o), "mlp.up bias copy fwd (addmm)"), -1.0);
}

/// Eager, with the toy's memory rates by class (eq. K21): vectorized 0.5 and strided 0.25 of the toy's bandwidth.
void by_class_toy_rates(ComputeOptions& o) {
  o.compiled = false;
  o.execution.by_class = true;
  auto set = std::make_shared<KernelParamSet>();
  set->defaults = toy_params();
  set->defaults.memory_classes.vectorized = 0.5;
  set->defaults.memory_classes.strided = 0.25;
  o.kernel_params = set;
}

// Eq. K15, row-wise fp8 scaling, by hand on the toy GPU (400 GB/s attainable, 5 us a kernel): an MLP 768 -> 3,072 ->
// 768 at batch 2 of 128 tokens, fp8 (eb = 2). The up projection's backward casts, beyond tensor-wise scaling's one cast
// of the output gradient: the output gradient again along the other axis (256 x 3,072 = 786,432), the weight re-cast
// from bf16 (768 x 3,072 = 2,359,296) and the saved input re-cast (256 x 768 = 196,608): 3,342,336 elements; the down
// projection's the same three (196,608 + 2,359,296 + 786,432). Eager, each through torchao's chain, 5·eb + 25 = 35 B
// an element in 6 kernels: 116,981,760 B in 292.4544 us + 18 kernels (90 us) = 382.4544 us. Compiled, one kernel a
// cast reading eb and writing 1 B: 10,027,008 B in 25.06752 us + 15 us, each writing the layout its product takes. By class (eq.
// K21; toy rates vectorized 0.5, strided 0.25, reductions at memory_efficiency 0.8 of 500 GB/s): 17 B vectorized, 2 reduced and
// 16 strided an element, 3,342,336 x (17 / 250 + 2 / 400 + 16 / 125) ns = 671.809536 us + 90 us.
TEST(KernelModel, RowWiseFp8RecastsWhatItsBackwardReads) {
  const Layer mlp = gpt2_small_mlp(2 * 768 * 3072);
  ComputeOptions o = toy_options(Precision::fp8);
  const auto tensorwise = layer_kernels(mlp, false, false, toy_gpu(), 2, o);
  EXPECT_EQ(kernel_time(tensorwise, "mlp.up fp8 row-wise re-casts bwd"), -1.0);
  o.fp8_scaling = Fp8Scaling::rowwise;
  const auto rowwise = layer_kernels(mlp, false, false, toy_gpu(), 2, o);
  for (const char* map : {"mlp.up", "mlp.down"}) {
    const std::string name = std::string(map) + " fp8 row-wise re-casts bwd";
    EXPECT_NEAR(kernel_time(rowwise, name), 382.4544e-6, 1e-12) << map;
    for (const auto& k : rowwise) {
      if (k.name == name) {
        EXPECT_DOUBLE_EQ(in_bytes(k.traffic), 116981760.0) << map;
      }
    }
  }
  // everything else is tensor-wise scaling's, kernel for kernel
  ASSERT_EQ(rowwise.size(), tensorwise.size() + 2);
  for (const auto& k : tensorwise) EXPECT_EQ(kernel_time(rowwise, k.name), in_seconds(k.time)) << k.name;
  o.compiled = true;
  const auto compiled = layer_kernels(mlp, false, false, toy_gpu(), 2, o);
  EXPECT_NEAR(kernel_time(compiled, "mlp.up fp8 row-wise re-casts bwd"), 40.06752e-6, 1e-12);
  // compiled, the output gradient's cast writes its transposed copy itself: 786,432 x 3 B, 5.89824 + 5 us, where the
  // tensor-wise cast's transposed copies of the input, the output gradient and the weight (3,342,336 x 2 B) follow it
  // in 3 kernels of their own: 9,043,968 B in 22.60992 us + 20 us
  EXPECT_NEAR(kernel_time(compiled, "mlp.up fp8 cast bwd"), 10.89824e-6, 1e-12);
  o.fp8_scaling = Fp8Scaling::tensorwise;
  EXPECT_NEAR(kernel_time(layer_kernels(mlp, false, false, toy_gpu(), 2, o), "mlp.up fp8 cast bwd"), 42.60992e-6, 1e-12);
  o.fp8_scaling = Fp8Scaling::rowwise;
  by_class_toy_rates(o);
  EXPECT_NEAR(kernel_time(layer_kernels(mlp, false, false, toy_gpu(), 2, o), "mlp.down fp8 row-wise re-casts bwd"), 761.809536e-6,
              1e-12);
  // a bf16 step has no fp8 casts whatever its scaling field says (validate refuses row-wise there)
  o.precision = Precision::bf16;
  EXPECT_EQ(kernel_time(layer_kernels(mlp, false, false, toy_gpu(), 2, o), "mlp.up fp8 row-wise re-casts bwd"), -1.0);
}

// Eq. K15c, MX block scaling, by hand on the toy GPU (400 GB/s attainable, 5 us a kernel), the MLP of the row-wise test
// (768 -> 3,072 -> 768, batch 2 of 128 tokens, eb = 2): it casts what row-wise scaling casts, and every cast also writes
// its blocks' E8M0 scales, 1 B per 32 elements. The up projection's casts along the other axis, 3,342,336 elements
// (the output gradient 786,432, the weight 2,359,296, the saved input 196,608): eager through torchao's chain,
// 5·eb + 25 + 1/32 = 35.03125 B an element, 117,086,208 B in 292.71552 us + 18 kernels (90 us) = 382.71552 us (row-wise:
// 116,981,760 B, 382.4544 us); compiled, eb + 1 + 1/32 = 3.03125 B, 10,131,456 B in 25.32864 us + 3 kernels = 40.32864
// us. The forward casts of the input and the weight, 196,608 + 2,359,296 = 2,555,904 elements: 89,536,512 B eager
// (row-wise's 89,456,640 and 2,555,904 / 32 = 79,872 B of scales; the down projection's 3,145,728 elements 110,198,784 B,
// row-wise's 110,100,480 and 98,304 of scales). Compiled, the output gradient's cast 786,432 x
// 3.03125 = 2,383,872 B, 5.95968 + 5 us. By class (toy rates vectorized 0.5 and strided 0.25 of 500 GB/s, reductions at
// memory_efficiency 0.8): the block maximum is no reduction pass, its eb read vectorized: 2·eb + 13 + eb + 1/32 =
// 19.03125 B vectorized and 16 strided an element, 3,342,336 x (19.03125 / 250 + 16 / 125) ns = 682.254336 us + 90 us.
// The products are the same fp8 kernels.
TEST(KernelModel, MxFp8CastsAsRowWiseWithItsBlockScales) {
  const Layer mlp = gpt2_small_mlp(2 * 768 * 3072);
  ComputeOptions o = toy_options(Precision::fp8);
  o.fp8_scaling = Fp8Scaling::rowwise;
  const auto rowwise = layer_kernels(mlp, false, false, toy_gpu(), 2, o);
  o.fp8_scaling = Fp8Scaling::mxfp8;
  const auto mx = layer_kernels(mlp, false, false, toy_gpu(), 2, o);
  ASSERT_EQ(mx.size(), rowwise.size());
  const auto traffic = [](const std::vector<KernelTiming>& ks, const std::string& name) {
    for (const auto& k : ks)
      if (k.name == name) return in_bytes(k.traffic);
    return -1.0;
  };
  EXPECT_EQ(kernel_time(mx, "mlp.up fp8 row-wise re-casts bwd"), -1.0);
  for (const char* map : {"mlp.up", "mlp.down"}) {
    const std::string m = map;
    EXPECT_NEAR(kernel_time(mx, m + " fp8 mx re-casts bwd"), 382.71552e-6, 1e-12) << map;
    EXPECT_DOUBLE_EQ(traffic(mx, m + " fp8 mx re-casts bwd"), 117086208.0) << map;
    const bool up = m == "mlp.up";  // the down projection casts 256 x 3,072 + 3,072 x 768 = 3,145,728 elements forward
    EXPECT_DOUBLE_EQ(traffic(mx, m + " fp8 cast fwd"), up ? 89536512.0 : 110198784.0) << map;
    EXPECT_DOUBLE_EQ(traffic(rowwise, m + " fp8 cast fwd"), up ? 89456640.0 : 110100480.0) << map;
    for (const char* product : {" fwd", " dgrad", " wgrad"})  // the same fp8 products
      EXPECT_EQ(kernel_time(mx, m + product), kernel_time(rowwise, m + product)) << map << product;
  }
  o.compiled = true;
  const auto compiled = layer_kernels(mlp, false, false, toy_gpu(), 2, o);
  EXPECT_NEAR(kernel_time(compiled, "mlp.up fp8 mx re-casts bwd"), 40.32864e-6, 1e-12);
  EXPECT_NEAR(kernel_time(compiled, "mlp.up fp8 cast bwd"), 10.95968e-6, 1e-12);  // no transposed copies, as row-wise
  by_class_toy_rates(o);
  EXPECT_NEAR(kernel_time(layer_kernels(mlp, false, false, toy_gpu(), 2, o), "mlp.down fp8 mx re-casts bwd"), 772.254336e-6,
              1e-12);
}

// Eq. K15c's worked example (docs/compute-model.md): Llama-3-8B's down projection, 14,336 -> 4,096 over 8,192 tokens,
// compiled, on the toy GPU (400 GB/s attainable, 5 us a kernel). Forward, the input (8,192 x 14,336 = 117,440,512) and
// the weight (14,336 x 4,096 = 58,720,256): 176,160,768 elements x 3.03125 B = 533,987,328 B in 2 kernels, 1,334.96832
// + 10 us; backward, the output gradient along its outputs (8,192 x 4,096 = 33,554,432): 101,711,872 B in 1 kernel,
// 254.27968 + 5 us; along the other axis the input, the output gradient and the weight again (209,715,200 elements):
// 635,699,200 B in 3 kernels, 1,589.248 + 15 us. In all 419,430,400 elements cast in 6 kernels, 1,271,398,400 B, of
// which 13,107,200 B are the scales.
TEST(KernelModel, MxFp8WorkedExampleLlama3DownProjection) {
  Layer mlp;
  mlp.name = "mlp";
  mlp.kind = LayerKind::linear;
  mlp.hidden = 14336;
  mlp.input_shape = mlp.output_shape = {8192, 4096};
  mlp.params = 2 * 4096 * 14336;
  ComputeOptions o = toy_options(Precision::fp8);
  o.fp8_scaling = Fp8Scaling::mxfp8;
  o.compiled = true;
  const auto k = layer_kernels(mlp, false, false, toy_gpu(), 1, o);
  double total = 0.0;
  for (const auto& [name, bytes, us] :
       {std::tuple{"mlp.down fp8 cast fwd", 533987328.0, 1344.96832}, std::tuple{"mlp.down fp8 cast bwd", 101711872.0, 259.27968},
        std::tuple{"mlp.down fp8 mx re-casts bwd", 635699200.0, 1604.248}}) {
    for (const auto& kt : k)
      if (kt.name == name) {
        EXPECT_DOUBLE_EQ(in_bytes(kt.traffic), bytes) << name;
        total += in_bytes(kt.traffic);
      }
    EXPECT_NEAR(kernel_time(k, name), us * 1e-6, 1e-12) << name;
  }
  EXPECT_DOUBLE_EQ(total, 419430400.0 * (3.0 + 1.0 / 32.0));
  EXPECT_DOUBLE_EQ(eq::mx_scale_bytes(419430400.0), 13107200.0);
}

// Eq. K15c's names and where it runs: "mxfp8", labelled "fp8-mxfp8" (unique beside "fp8" and "fp8-rowwise"), on the
// catalogue's Blackwell GPUs only; a bf16 step's label ignores the field.
TEST(KernelModel, MxFp8IsNamedAndRunsOnBlackwellOnly) {
  EXPECT_EQ(fp8_scaling_from_string("mxfp8"), Fp8Scaling::mxfp8);
  EXPECT_EQ(to_string(Fp8Scaling::mxfp8), "mxfp8");
  EXPECT_EQ(precision_label(Precision::fp8, Fp8Scaling::mxfp8), "fp8-mxfp8");
  EXPECT_EQ(precision_label(Precision::fp8, Fp8Scaling::rowwise), "fp8-rowwise");
  EXPECT_EQ(precision_label(Precision::fp8, Fp8Scaling::tensorwise), "fp8");
  EXPECT_EQ(precision_label(Precision::bf16, Fp8Scaling::mxfp8), "bf16");
  EXPECT_THROW(fp8_scaling_from_string("mx"), std::invalid_argument);
  for (const char* id : {"b200", "gb200", "b300", "gb300"})
    EXPECT_TRUE(supports_fp8_scaling(find_gpu(id), Fp8Scaling::mxfp8)) << id;
  for (const char* id : {"h100-sxm", "h200", "l40s"}) {
    EXPECT_FALSE(supports_fp8_scaling(find_gpu(id), Fp8Scaling::mxfp8)) << id;
    EXPECT_TRUE(supports_fp8_scaling(find_gpu(id), Fp8Scaling::rowwise)) << id;
  }
  EXPECT_EQ(missing_fp8_scaling(find_gpu("h100-sxm"), Fp8Scaling::mxfp8, "c"),
            "the H100 SXM5 80 GB of cluster 'c' (hopper) has no mxfp8 scaling (it needs Blackwell's block-scaled tensor cores)");
}

// Eq. K24, GPT-2 small's attention (12 heads, width 768, biases) at batch 2 of 128 tokens, fp16, eager: 2 x 12 x
// 128² = 393,216 scores. GPT2Attention._attn's chain forward, ÷ √d_h, torch.where, + the padding mask, softmax and
// dropout, 10·eb + 1 = 21 B a score: 8,257,536 B in 20.64384 us + 5 kernels = 45.64384 us; backward, dropout's masked
// scale, softmax's, zeros_like and where, the division's, 11·eb + 1 = 23 B: 9,043,968 B in 22.60992 + 25 us =
// 47.60992 us (the native chain: 3 passes of 2 elements and of 3, 12 and 18 B). The q/k/v addmm over 256 x 2,304 =
// 589,824 outputs: 2,359,296 B (5.89824 + 5 us) forward, 1,179,648 B (2.94912 + 5 us) backward; the output
// projection's 6.96608 and 5.98304 us and the residual dropout's 7.4576 us, as for the MLP.
TEST(KernelModel, TransformersGpt2AttentionMasksItsScoresInPasses) {
  Layer a;
  a.name = "attn";
  a.kind = LayerKind::attention;
  a.heads = 12;
  a.causal = true;
  a.input_shape = a.output_shape = {128, 768};
  a.params = 4 * 768 * 768 + 4 * 768;
  ComputeOptions o = toy_options(Precision::fp16);
  const auto native = layer_kernels(a, false, false, toy_gpu(), 2, o);
  EXPECT_NEAR(kernel_time(native, "attn.softmax fwd"), 393216 * 12 / 400e9 + 15e-6, 1e-15);
  o.execution.transformers_gpt2 = true;
  const auto hf = layer_kernels(a, false, false, toy_gpu(), 2, o);
  EXPECT_EQ(kernel_time(hf, "attn.softmax fwd"), -1.0);
  EXPECT_NEAR(kernel_time(hf, "attn.scores chain (transformers) fwd"), 45.64384e-6, 1e-12);
  EXPECT_NEAR(kernel_time(hf, "attn.scores chain (transformers) bwd"), 47.60992e-6, 1e-12);
  EXPECT_NEAR(kernel_time(hf, "attn.qkv bias copy fwd (addmm)"), 10.89824e-6, 1e-12);
  EXPECT_NEAR(kernel_time(hf, "attn.qkv bias grad bwd"), 7.94912e-6, 1e-12);
  EXPECT_NEAR(kernel_time(hf, "attn.out bias copy fwd (addmm)"), 6.96608e-6, 1e-12);
  EXPECT_NEAR(kernel_time(hf, "attn.out bias grad bwd"), 5.98304e-6, 1e-12);
  EXPECT_NEAR(kernel_time(hf, "attn.dropout fwd"), 7.4576e-6, 1e-12);
  EXPECT_NEAR(kernel_time(hf, "attn.dropout bwd"), 7.4576e-6, 1e-12);
  EXPECT_EQ(kernel_time(hf, "attn.scores fwd"), kernel_time(native, "attn.scores fwd"));  // the products unchanged
}

// PyTorch's SDPA where FlashAttention cannot run: the memory-efficient kernel, the same fused structure
// (eq. K9) with its products at the rate its data type gets: fp32 data on an Ampere-or-newer GPU as three
// TF32 products each (CUTLASS's fast fp32), whether or not TF32 is allowed; before Ampere on the fp32 units.
TEST(KernelModel, MemoryEfficientAttentionIsFusedAtItsDataTypesRate) {
  const Layer a = toy_attention();
  const GemmShape &qk = kToyQk, &pv = kToyPv;
  const double t_exp = kToyExp;
  auto fused = [&](const GpuSpec& gpu, Precision p) {
    ComputeOptions o = toy_options(p);
    o.attention = effective_attention(AttentionKernel::sdpa, gpu, p);
    EXPECT_EQ(o.attention, AttentionKernel::memory_efficient);
    double fwd = -1, bwd = -1;
    for (const auto& k : layer_kernels(a, false, false, gpu, 1, o)) {
      if (k.name == "attn.attention fwd (memory_efficient)") fwd = in_seconds(k.time);
      if (k.name == "attn.attention bwd (memory_efficient)") bwd = in_seconds(k.time);
    }
    return std::pair{fwd, bwd};
  };
  // fp32 and TF32 on the toy (SM 8.0, TF32 at 40 TFLOP/s): 3 × the TF32 products; memory (fp32: Q, K, V,
  // O = 4 × 262,144 elements × 4 B + the log-sum-exp, 10.5 us forward) is not the bound. The TF32 products
  // by hand: 4 TFLOP/s per SM × 0.5, 256×128 tiles at 1/1.375 (c = 32); Q·Kᵀ 4 × 8 × 2 = 64 blocks in 7
  // waves of 2·256·128·128 FLOP, P·V 4 × 1 × 2 = 8 blocks in 1 wave of 2·256·128·1024 FLOP.
  const double tile_rate = 4e12 * 0.5 / 1.375;
  const double qk32 = 7 * (2.0 * 256 * 128 * 128) / tile_rate;   // 40.37 us
  const double pv32 = 1 * (2.0 * 256 * 128 * 1024) / tile_rate;  // 46.14 us
  for (Precision p : {Precision::fp32, Precision::tf32}) {
    const auto [fwd, bwd] = fused(toy_gpu(), p);
    EXPECT_NEAR(fwd, 3 * (qk32 + pv32) + t_exp + 5e-6, 1e-12) << to_string(p);
    EXPECT_NEAR(bwd, 3 * (2 * qk32 + 3 * pv32) + t_exp + 5e-6, 1e-12) << to_string(p);
  }
  // A Volta (SM 7.0, no TF32): fp32 on the vector units once; fp16 on its tensor cores (flash needs Ampere).
  GpuSpec volta = toy_gpu();
  volta.sm_version = 70;
  volta.peak_tf32 = FlopsPerSecond{};
  const double qkv = in_seconds(plan_gemm(qk, volta, Precision::fp32, toy_params()).compute);
  const double pvv = in_seconds(plan_gemm(pv, volta, Precision::fp32, toy_params()).compute);
  EXPECT_NEAR(fused(volta, Precision::fp32).first, qkv + pvv + t_exp + 5e-6, 1e-12);
  const double qkh = in_seconds(plan_gemm(qk, volta, Precision::fp16, toy_params()).compute);
  const double pvh = in_seconds(plan_gemm(pv, volta, Precision::fp16, toy_params()).compute);
  EXPECT_NEAR(fused(volta, Precision::fp16).first, qkh + pvh + t_exp + 5e-6, 1e-12);
  // sdpa is flash where flash runs; flash alone keeps falling back to eager; the fused kernels keep no
  // heads·S² probabilities.
  EXPECT_EQ(effective_attention(AttentionKernel::sdpa, toy_gpu(), Precision::bf16), AttentionKernel::flash);
  EXPECT_EQ(effective_attention(AttentionKernel::flash, toy_gpu(), Precision::fp32), AttentionKernel::eager);
  EXPECT_TRUE(fused_attention(AttentionKernel::memory_efficient));
  EXPECT_FALSE(fused_attention(AttentionKernel::sdpa));  // a request: resolve it first
  EXPECT_EQ(attention_kernel_from_string("sdpa"), AttentionKernel::sdpa);
  EXPECT_EQ(to_string(AttentionKernel::memory_efficient), "memory_efficient");
}

TEST(KernelModel, WinogradForThreeByThreeStrideOneOnVectorUnits) {
  const ConvGeometry c{32, 64, 64, 56, 56, 56, 56, 3, 3, 1, 1, 1};
  const auto kp = toy_params();
  const ConvPlan w = plan_conv(c, ConvPass::forward, toy_gpu(), Precision::fp32, kp, ConvAlgorithmPolicy{});
  EXPECT_EQ(w.algorithm, ConvAlgorithm::winograd);
  // the same GEMM with 2.25× fewer multiplies
  const GemmPlan g = plan_gemm(conv_as_gemm(c, ConvPass::forward), toy_gpu(), Precision::fp32, kp, 0.75, 2.25);
  EXPECT_DOUBLE_EQ(in_seconds(w.time), in_seconds(g.time));
  ConvAlgorithmPolicy none;
  none.winograd = false;
  EXPECT_EQ(plan_conv(c, ConvPass::forward, toy_gpu(), Precision::fp32, kp, none).algorithm, ConvAlgorithm::implicit_gemm);
  // On tensor cores (fp16) cuDNN's convolutions are implicit GEMMs.
  EXPECT_EQ(plan_conv(c, ConvPass::forward, toy_gpu(), Precision::fp16, kp, {}).algorithm, ConvAlgorithm::implicit_gemm);
}

TEST(KernelModel, FftNeedsItsWorkspace) {
  // AlexNet's 5×5 convolution (64 → 192 on 27×27) at batch 1024: the transforms need (1024·64 + 64·192 +
  // 1024·192) planes × 32 × 17 complex fp32 = 1.194 GB of workspace.
  const ConvGeometry c{1024, 64, 192, 27, 27, 27, 27, 5, 5, 1, 1, 1};
  ConvAlgorithmPolicy small;
  small.workspace_limit = gibibytes(1);
  EXPECT_NE(plan_conv(c, ConvPass::forward, toy_gpu(), Precision::fp32, toy_params(), small).algorithm, ConvAlgorithm::fft);
  ConvAlgorithmPolicy big;
  big.workspace_limit = gibibytes(2);
  EXPECT_EQ(plan_conv(c, ConvPass::forward, toy_gpu(), Precision::fp32, toy_params(), big).algorithm, ConvAlgorithm::fft);
}

TEST(KernelModel, TensorCoreAlignmentPadsMisalignedDimensions) {
  // K = 147 (a 7×7 convolution of 3 channels) runs as 152 in fp16, 148 in TF32.
  const GemmShape g{4096, 64, 147};
  EXPECT_EQ(plan_gemm(g, toy_gpu(), Precision::fp16, toy_params()).k, 152);
  EXPECT_EQ(plan_gemm(g, toy_gpu(), Precision::tf32, toy_params()).k, 148);
  EXPECT_EQ(plan_gemm(g, toy_gpu(), Precision::fp32, toy_params()).k, 147);
}

// A network of one linear layer (1024 tokens × 1024 → 1024) at batch 1: forward is the worked GEMM, backward
// its weight gradient (layer 1 needs no input gradient), each precision with its own peak, tiles, element size.
Network one_gemm() {
  Layer l;
  l.name = "fc";
  l.kind = LayerKind::linear;
  l.params = 1024 * 1024;
  l.input_shape = {1024, 1024};
  l.output_shape = {1024, 1024};
  l.forward_flops_per_sample = 2.0 * 1024 * 1024 * 1024;
  Network n;
  n.name = "one-gemm";
  n.layers = {l};
  return n;
}

TEST(Compute, EveryPrecisionOnAHandComputedGemmOnlyNetwork) {
  const double loss_fwd_elems = 3.0 * 1024 * 1024, loss_bwd_elems = 3.0 * 1024 * 1024;  // the loss on the output
  struct Case {
    Precision p;
    double gemm;  // seconds, by hand
    double bytes_per_element;
  };
  const Case cases[] = {
      // fp16 and bf16: as WorkedGemm
      {Precision::fp16, 7 * (2.0 * 128 * 128 * 1024) / (8e12 * 0.5 * kTc128x128) + 5e-6, 2},
      {Precision::bf16, 7 * (2.0 * 128 * 128 * 1024) / (8e12 * 0.5 * kTc128x128) + 5e-6, 2},
      // TF32: 4 TFLOP/s per SM; 128×128 tiles, 7 waves (memory 3·1024²·4 B / 400 GB/s = 31.5 us)
      {Precision::tf32, 7 * (2.0 * 128 * 128 * 1024) / (4e12 * 0.5 * kTc128x128) + 5e-6, 4},
      // fp32 on the vector units: 1 TFLOP/s per SM × 0.8, c = 8. 128×128 (1/1.125): 64 blocks, 7 waves →
      // 330.3 us; 128×64 (1/1.1875): 128 blocks, 13 waves → 323.8 us, the best; 64×64 (1/1.25): 26 waves →
      // 340.8 us
      {Precision::fp32, 13 * (2.0 * 128 * 64 * 1024) / (1e12 * 0.8 / 1.1875) + 5e-6, 4},
  };
  for (const auto& c : cases) {
    const auto t = estimate_layer_times(one_gemm(), toy_gpu(), 1, toy_options(c.p));
    double loss_f = loss_fwd_elems * c.bytes_per_element / 400e9 + 2 * 5e-6;
    double loss_b = loss_bwd_elems * c.bytes_per_element / 400e9 + 5e-6;
    if (is_mixed(c.p)) {  // eq. K14: eager log-softmax in fp32: the upcast (2 + 4 B), 3 fp32 passes, the downcast (4 + 2 B)
      loss_f = 1024.0 * 1024 * (2 + 4 + 3 * 4) / 400e9 + 3 * 5e-6;
      loss_b = 1024.0 * 1024 * (3 * 4 + 4 + 2) / 400e9 + 2 * 5e-6;
    }
    EXPECT_NEAR(in_seconds(t.forward[0]), c.gemm + loss_f, 1e-12) << to_string(c.p);
    EXPECT_NEAR(in_seconds(t.backward[0]), c.gemm + loss_b, 1e-12) << to_string(c.p);
  }
}

TEST(Compute, UpdateIsAMemoryBoundPassOverParametersAndState) {
  auto o = toy_options(Precision::fp32);
  // fp32 SGD with momentum: read w, read g, write w (12 B) + read and write the momentum (8 B) = 20 B
  EXPECT_DOUBLE_EQ(update_bytes_per_param(o), 20.0);
  o.optimizer = Optimizer::adam;
  EXPECT_DOUBLE_EQ(update_bytes_per_param(o), 28.0);
  o.optimizer = Optimizer::sgd;
  EXPECT_DOUBLE_EQ(update_bytes_per_param(o), 12.0);
  o.optimizer = Optimizer::lamb;
  EXPECT_DOUBLE_EQ(update_bytes_per_param(o), 36.0);  // Adam's + the trust ratio's second read of w and the update
  o.optimizer = Optimizer::adamw;
  o.precision = Precision::bf16;  // fp32 master 4 + half gradient 2 + write master 4 + half copy 2 + 16
  EXPECT_DOUBLE_EQ(update_bytes_per_param(o), 28.0);
  // one_gemm's 1,048,576 parameters with momentum in fp32: 20 B each at 400 GB/s, one fused kernel
  const auto t = estimate_layer_times(one_gemm(), toy_gpu(), 1, toy_options(Precision::fp32));
  EXPECT_NEAR(in_seconds(t.update[0]), 1048576.0 * 20 / 400e9 + 5e-6, 1e-15);
  // torch.optim's for-loop momentum SGD (_single_tensor_sgd): buf ·= μ (read and write 4 + 4), buf += g (4 + 4 + 4),
  // w -= lr·buf (4 + 4 + 4): 32 B, three kernels per tensor; fc has no bias (its parameters are its 1024 x 1024
  // weight): one tensor, three kernels, each an operator dispatched
  auto unfused = toy_options(Precision::fp32);
  unfused.optimizer_impl = OptimizerImpl::for_loop;
  EXPECT_DOUBLE_EQ(update_bytes_per_param(unfused), 32.0);
  EXPECT_NEAR(in_seconds(estimate_layer_times(one_gemm(), toy_gpu(), 1, unfused).update[0]), 1048576.0 * 32 / 400e9 + 3 * 5e-6,
              1e-15);
  // its kernels are PyTorch's single-tensor element-wise ones: the vectorized class's rate (eq. K21), here 0.5 of 500 GB/s
  auto classed = std::make_shared<KernelParamSet>(*unfused.kernel_params);
  classed->defaults.memory_classes.vectorized = 0.5;
  classed->defaults.optimizer_pass_efficiency = 0.25;  // the multi-tensor passes' rate: not the for-loop's
  unfused.kernel_params = classed;
  EXPECT_NEAR(in_seconds(estimate_layer_times(one_gemm(), toy_gpu(), 1, unfused).update[0]), 1048576.0 * 32 / 250e9 + 3 * 5e-6,
              1e-15);
}

// torch.optim's default AdamW on CUDA (_multi_tensor_adamw, torch 2.x), pass by pass over fp32 weights, state and
// gradients: w ·= 1 − lr·λ (4 + 4), m.lerp_(g) (4 + 4 + 4), v ·= β2 (4 + 4), v.addcmul_(g, g) (4 + 4 + 4: one
// tensor given twice is read once, as the H100's profile of BERT-large moved it), d = sqrt(v) (4 + 4),
// d ÷= √(1 − β2^t) (4 + 4), d += ε (4 + 4), w.addcdiv_(m, d) (4 + 4 + 4 + 4): 80 B in eight multi-tensor kernels,
// where the fused kernel moves 28 (read w, g, m, v; write w, m, v).
TEST(Compute, ForeachAdamWMakesEightPassesOverTheTensors) {
  auto o = toy_options(Precision::fp32);
  o.optimizer = Optimizer::adamw;
  EXPECT_DOUBLE_EQ(update_bytes_per_param(o), 28.0);  // unset: fused
  o.optimizer_impl = OptimizerImpl::foreach;
  EXPECT_DOUBLE_EQ(update_bytes_per_param(o), 80.0);
  o.optimizer = Optimizer::adam;  // Adam's default has no weight decay: no first pass
  EXPECT_DOUBLE_EQ(update_bytes_per_param(o), 72.0);
  o.optimizer = Optimizer::adamw;
  o.precision = Precision::bf16;
  o.fp32_gradients = true;  // PyTorch's autocast and FSDP's fp32 shards: the optimiser sees fp32 gradients
  EXPECT_DOUBLE_EQ(update_bytes_per_param(o), 80.0);
  o.fp32_gradients = false;  // a half gradient read twice (2 B each) and the half working copy written
  EXPECT_DOUBLE_EQ(update_bytes_per_param(o), 72.0 + 2 * 2 + 2);
  // eight passes, each one _foreach_* operator dispatched over every parameter tensor (its launches, over up to 48
  // tensors or 320 chunks of 65,536 elements each, run back to back): the network's one layer takes all eight
  const auto t = estimate_layer_times(one_gemm(), toy_gpu(), 1, o);
  EXPECT_NEAR(in_seconds(t.update[0]), 1048576.0 * 78 / 400e9 + 8 * 5e-6, 1e-15);
  // two such layers share the eight dispatches: four each; fused, the one dispatch: half each
  Network two = one_gemm();
  two.layers.push_back(two.layers.front());
  two.layers.back().name = "fc2";
  const auto t2 = estimate_layer_times(two, toy_gpu(), 1, o);
  EXPECT_NEAR(in_seconds(t2.update[1]), 1048576.0 * 78 / 400e9 + 4 * 5e-6, 1e-15);
  // an architecture's measured rates of the optimiser's kernels replace the memory-bound efficiency for them
  // (a share of the toy's datasheet 500 GB/s)
  auto measured = std::make_shared<KernelParamSet>(*o.kernel_params);
  measured->defaults.optimizer_pass_efficiency = 0.5;
  measured->defaults.fused_optimizer_efficiency = 0.25;
  o.kernel_params = measured;
  EXPECT_NEAR(in_seconds(estimate_layer_times(one_gemm(), toy_gpu(), 1, o).update[0]), 1048576.0 * 78 / (500e9 * 0.5) + 8 * 5e-6,
              1e-15);
  o.optimizer_impl = OptimizerImpl::fused;  // mixed: 4 + 2 + 4 + 2 + 16 B in one kernel
  EXPECT_NEAR(in_seconds(estimate_layer_times(one_gemm(), toy_gpu(), 1, o).update[0]), 1048576.0 * 28 / (500e9 * 0.25) + 5e-6,
              1e-15);
  EXPECT_NEAR(in_seconds(estimate_layer_times(two, toy_gpu(), 1, o).update[1]), 1048576.0 * 28 / (500e9 * 0.25) + 0.5 * 5e-6,
              1e-15);
  EXPECT_EQ(optimizer_impl_from_string("foreach"), OptimizerImpl::foreach);
  EXPECT_THROW((void)optimizer_impl_from_string("multi_tensor"), std::invalid_argument);
}

// Eq. S10, FSDP2's copies: one_gemm's 1,048,576 parameters in bf16 with fp32 reduces; forward the copy-out of the
// gathered bf16 parameters (read 2 + write 2 B), backward the copy-out again (regathered) and chunk_cat (read 2,
// write 4 B) at the toy's 400 GB/s, no launch charged (a kernel per gather unit).
TEST(Compute, Fsdp2CopiesAroundEachLayersCollectives) {
  auto o = toy_options(Precision::bf16);
  const auto plain = estimate_layer_times(one_gemm(), toy_gpu(), 1, o);
  o.sharding.stage = 3;
  o.sharding.per_parameter = true;
  o.sharding.reduce_fp32 = true;  // reduce_dtype fp32: chunk_cat writes 4 B an element
  const auto copies = estimate_layer_times(one_gemm(), toy_gpu(), 1, o);
  EXPECT_NEAR(in_seconds(copies.forward[0] - plain.forward[0]), 1048576.0 * 4 / 400e9, 1e-15);
  EXPECT_NEAR(in_seconds(copies.backward[0] - plain.backward[0]), 1048576.0 * (4 + 6) / 400e9, 1e-15);
  // a full recompute runs the forward's kernels again, not the gather's copy-out (the backward's gather has its own)
  ComputeOptions full = o;
  full.recompute = Recompute::full;
  EXPECT_NEAR(in_seconds(recompute_time(copies, 0, 0, full)), in_seconds(plain.forward[0]), 1e-15);
  o.sharding.reshard_after_forward = false;  // SHARD_GRAD_OP: no gather before backward
  EXPECT_NEAR(in_seconds(estimate_layer_times(one_gemm(), toy_gpu(), 1, o).backward[0] - plain.backward[0]),
              1048576.0 * 6 / 400e9, 1e-15);
}

// What estimate_layer_times reads of a sharding is what layer_times_sharding keeps (a sweep keys the layer times it
// shares on it): over every stage, each of its flags, no, some and more of FSDP's operations per unit, both wraps, in
// fp32 and bf16, with and without the host's floor (eq. K20), and with the fields it never reads set, the times of a
// sharding are those of its view, field for field.
TEST(Compute, LayerTimesReadOfTheShardingWhatLayerTimesShardingKeeps) {
  const Network net =
      build_decoder(DecoderShape{.layers = 2, .hidden = 64, .heads = 4, .ffn = 128, .vocab = 100, .seq = 16}, "tiny");
  int cases = 0, viewed = 0;
  for (const Precision p : {Precision::fp32, Precision::bf16})
    for (const Seconds issue : {Seconds{}, microseconds(40)})
      for (const int stage : {0, 1, 2, 3})
        for (int flags = 0; flags < 16; ++flags)
          for (const auto& [gather, reduce] : {std::pair{0.0, 0.0}, std::pair{0.0, 3.0}, std::pair{11.0, 3.0}})
            for (const Sharding::Wrap wrap : {Sharding::Wrap::size, Sharding::Wrap::block}) {
              ComputeOptions o = toy_options(p);
              o.execution.host_issue = issue;
              Sharding& s = o.sharding;
              s.stage = stage;
              s.reshard_after_forward = (flags & 1) != 0;
              s.reduce_fp32 = (flags & 2) != 0;
              s.per_parameter = (flags & 4) != 0;
              s.fp32_shards = (flags & 8) != 0;
              s.gather_ops = gather;
              s.reduce_ops = reduce;
              s.unit_op_issue = microseconds(50);
              s.wrap = wrap;
              s.unit_params = 50'000;  // two units under wrap size
              s.group = Sharding::kGroupNode;
              s.in_flight = 1;
              s.offload_optimizer = true;
              s.cpu_adam_params_per_s = 1e9;
              ComputeOptions view = o;
              view.sharding = layer_times_sharding(o);
              SCOPED_TRACE(fmt::format("{} issue {} stage {} flags {} ops {}/{} wrap {}", to_string(p), in_seconds(issue), stage,
                                       flags, gather, reduce, static_cast<int>(wrap)));
              EXPECT_EQ(estimate_layer_times(net, toy_gpu(), 2, o), estimate_layer_times(net, toy_gpu(), 2, view));
              ++cases;
              viewed += view.sharding.stage != s.stage || view.sharding.unit_params != s.unit_params;
            }
  EXPECT_EQ(cases, 2 * 2 * 4 * 16 * 3 * 2);
  EXPECT_GT(viewed, 0);
}

// The view by hand: bf16 ZeRO-2 with fp32 shards reads that the step shards them in fp32, not the reduce's width the
// fp32 shards replace (eq. K27a); the same in fp32 reads nothing of the sharding (4 B gradients either way, no half copy);
// torchtitan's stage 3 reads the copies and FSDP's operations, not the group, the units in flight or the offload.
TEST(Compute, LayerTimesShardingKeepsWhatEachEquationReads) {
  ComputeOptions o = toy_options(Precision::bf16);
  o.sharding.stage = 2;
  o.sharding.fp32_shards = o.sharding.reduce_fp32 = true;
  o.sharding.group = 8;
  Sharding v = layer_times_sharding(o);
  EXPECT_EQ(v.stage, 1);
  EXPECT_TRUE(v.fp32_shards);
  EXPECT_FALSE(v.reduce_fp32);
  EXPECT_EQ(v.group, Sharding::kGroupAll);
  o.precision = Precision::fp32;
  v = layer_times_sharding(o);
  EXPECT_EQ(v.stage, 0);
  EXPECT_FALSE(v.fp32_shards);
  o.precision = Precision::bf16;
  o.execution.host_issue = microseconds(62.4);
  o.sharding = Sharding{.stage = 3,
                        .group = 4,
                        .in_flight = 1,
                        .unit_params = 7,
                        .wrap = Sharding::Wrap::block,
                        .gather_ops = 11,
                        .reduce_ops = 3,
                        .unit_op_issue = microseconds(51.8),
                        .offload_optimizer = true,
                        .reduce_fp32 = true,
                        .per_parameter = true};
  v = layer_times_sharding(o);
  EXPECT_EQ(v.stage, 3);
  EXPECT_TRUE(v.per_parameter && v.reduce_fp32 && v.reshard_after_forward && v.fp32_shards);
  EXPECT_EQ(v.wrap, Sharding::Wrap::block);
  EXPECT_EQ(v.unit_params, 7);
  EXPECT_EQ(v.gather_ops, 11.0);
  EXPECT_EQ(v.reduce_ops, 3.0);
  EXPECT_EQ(v.unit_op_issue, microseconds(51.8));
  EXPECT_EQ(v.group, Sharding::kGroupAll);
  EXPECT_EQ(v.in_flight, Sharding{}.in_flight);
  EXPECT_FALSE(v.offload_optimizer);
  o.execution.host_issue = Seconds{};  // no floor: the operations' host cost is not read
  EXPECT_EQ(layer_times_sharding(o).unit_op_issue, Seconds{});
}

// The library's shipped kernel parameters are built in (issue 36: it reads no data file on its own initiative):
// the text is topologies/compute-params.yaml as it stands, byte for byte, and parses to what the file does.
TEST(Compute, BuiltInKernelParametersAreTheShippedFile) {
  const auto file = std::filesystem::path(DLSCALE_SOURCE_DIR) / "topologies" / "compute-params.yaml";
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  ASSERT_GT(text.str().size(), 1000U);
  EXPECT_EQ(std::string(shipped_kernel_params_yaml()), text.str());
  const KernelParamSet loaded = load_kernel_params(file);
  for (const char* arch : {"volta", "ampere", "hopper"}) {
    const KernelParams& a = shipped_kernel_params()->for_architecture(arch);
    const KernelParams& b = loaded.for_architecture(arch);
    EXPECT_EQ(a.memory_efficiency, b.memory_efficiency) << arch;
    EXPECT_EQ(a.sharded_tensor, b.sharded_tensor) << arch;
    EXPECT_EQ(a.optimizer_pass_efficiency, b.optimizer_pass_efficiency) << arch;
  }
}

// Eq. K16 on Blackwell is borrowed, not fitted (compute-params.yaml): Hopper's value, the nearest fitted
// architecture's, never the unfactored 1 that would say a sharded B200 step keeps the whole modelled rate.
TEST(Compute, BlackwellsShardedRateIsHoppers) {
  const auto p = shipped_kernel_params();
  EXPECT_EQ(p->for_architecture("blackwell").sharded_tensor, p->for_architecture("hopper").sharded_tensor);
  EXPECT_LT(p->for_architecture("blackwell").sharded_tensor, 1.0);
}

TEST(Compute, ParameterFreeOperatorsAreMemoryBoundKernels) {
  Network n = one_gemm();
  Operator relu;
  relu.name = "relu";
  relu.kind = LayerKind::relu;
  relu.input_shape = relu.output_shape = {1024, 1024};
  n.layers[0].ops.push_back(relu);
  const auto with = estimate_layer_times(n, toy_gpu(), 1, toy_options(Precision::fp16));
  const auto without = estimate_layer_times(one_gemm(), toy_gpu(), 1, toy_options(Precision::fp16));
  // forward reads and writes 1024² half elements; backward reads two and writes one
  EXPECT_NEAR(in_seconds(with.forward[0] - without.forward[0]), 2.0 * 1048576 * 2 / 400e9 + 5e-6, 1e-15);
  EXPECT_NEAR(in_seconds(with.backward[0] - without.backward[0]), 3.0 * 1048576 * 2 / 400e9 + 5e-6, 1e-15);
}

/// The max pool of the pooling tests: 3×3, stride 2, 64×112×112 to 64×56×56.
Operator max_pool_3x3s2() {
  Operator pool;
  pool.name = "pool1";
  pool.kind = LayerKind::maxpool;
  pool.input_shape = {64, 112, 112};
  pool.output_shape = {64, 56, 56};
  pool.kernel_h = pool.kernel_w = 3;
  pool.stride_h = pool.stride_w = 2;
  return pool;
}

// Eq. K17, max pooling by what the framework keeps: a 3×3 stride-2 pool of 64×112×112 floats to 64×56×56 at batch
// 1 (ei = 802,816, eo = 200,704 elements, 4 B each). PyTorch: forward reads ei, writes eo and an int64 index per
// output; backward zero-fills and writes dx (2·ei), reads dy (eo) and the index. cuDNN (no index): forward ei + eo;
// backward reads x, y and dy and writes dx (2·ei + 2·eo).
TEST(Compute, MaxPoolingKeepsWhatItsFrameworkKeeps) {
  Network n = one_gemm();
  n.layers[0].ops.push_back(max_pool_3x3s2());
  const double ei = 64.0 * 112 * 112, eo = 64.0 * 56 * 56;
  const auto times = [&](int index_bytes) {
    ComputeOptions o = toy_options(Precision::fp32);
    o.pool_index_bytes = index_bytes;
    double fwd = -1, bwd = -1;
    for (const auto& t : layer_kernels(n.layers[0], false, false, toy_gpu(), 1, o)) {
      if (t.name == "pool1 fwd") fwd = in_seconds(t.time);
      if (t.name == "pool1 bwd") bwd = in_seconds(t.time);
    }
    return std::pair{fwd, bwd};
  };
  const auto [f8, b8] = times(8);
  EXPECT_NEAR(f8, ((ei + eo) * 4 + 8 * eo) / 400e9 + 5e-6, 1e-15);
  EXPECT_NEAR(b8, ((2 * ei + eo) * 4 + 8 * eo) / 400e9 + 5e-6, 1e-15);
  const auto [f4, b4] = times(4);  // Caffe's int32 mask
  EXPECT_NEAR(f4, ((ei + eo) * 4 + 4 * eo) / 400e9 + 5e-6, 1e-15);
  EXPECT_NEAR(b4, ((2 * ei + eo) * 4 + 4 * eo) / 400e9 + 5e-6, 1e-15);
  const auto [f0, b0] = times(0);  // cuDNN's
  EXPECT_NEAR(f0, (ei + eo) * 4 / 400e9 + 5e-6, 1e-15);
  EXPECT_NEAR(b0, (2 * ei + 2 * eo) * 4 / 400e9 + 5e-6, 1e-15);
}

// Eq. K23 on the toy GPU (19.53125 G SM clocks a second), the max pool above (3×3, stride 2, 200,704 outputs:
// 1,806,336 window elements) in fp32 with PyTorch's index, at 1 window element per SM per clock forward and 0.5
// backward: 92.4844032 us and 184.9688064 us, + 5 us each, above the bytes' 14.04928 and 22.07744 us. A 3×3 stride-1
// average pool over 64 × 56 × 56 (1,806,336 window elements too) takes the same; without the rates both stream.
TEST(Compute, PoolingWalksItsWindowsAtItsRatePerSm) {
  Network n = one_gemm();
  const Operator pool = max_pool_3x3s2();
  Operator avg = pool;
  avg.name = "pool2";
  avg.kind = LayerKind::avgpool;
  avg.input_shape = avg.output_shape = {64, 56, 56};
  avg.stride_h = avg.stride_w = 1;
  n.layers[0].ops = {pool, avg};
  ComputeOptions o = toy_options(Precision::fp32);
  o.pool_index_bytes = 8;
  const auto with_rates = [&](double forward, double backward) {
    auto set = std::make_shared<KernelParamSet>();
    set->defaults = toy_params();
    set->defaults.pool_forward_rate = forward;
    set->defaults.pool_backward_rate = backward;
    o.kernel_params = set;
    std::map<std::string, double> t;
    for (const auto& k : layer_kernels(n.layers[0], false, false, toy_gpu(), 1, o)) t[k.name] = in_seconds(k.time);
    return t;
  };
  const auto walk = with_rates(1.0, 0.5);
  EXPECT_NEAR(walk.at("pool1 fwd (window walk)"), 92.4844032e-6 + 5e-6, 1e-14);
  EXPECT_NEAR(walk.at("pool1 bwd (window walk)"), 184.9688064e-6 + 5e-6, 1e-14);
  EXPECT_NEAR(walk.at("pool2 fwd (window walk)"), 92.4844032e-6 + 5e-6, 1e-14);
  EXPECT_NEAR(walk.at("pool2 bwd (window walk)"), 184.9688064e-6 + 5e-6, 1e-14);
  const auto stream = with_rates(0.0, 0.0);
  EXPECT_NEAR(stream.at("pool1 fwd"), 14.04928e-6 + 5e-6, 1e-14);
  EXPECT_NEAR(stream.at("pool1 bwd"), 22.07744e-6 + 5e-6, 1e-14);
  EXPECT_NEAR(stream.at("pool2 fwd"), 2 * 200704.0 * 4 / 400e9 + 5e-6, 1e-14);
}

/// A batch norm "bn" over 64×56×56 with the operators `after` behind it (each of that shape).
Layer toy_batchnorm(std::initializer_list<LayerKind> after) {
  Layer bn;
  bn.name = "bn";
  bn.kind = LayerKind::batchnorm;
  bn.params = 2 * 64;
  bn.input_shape = bn.output_shape = {64, 56, 56};
  for (LayerKind kind : after) {
    Operator o;
    o.name = kind == LayerKind::add ? "add" : "relu";
    o.kind = kind;
    o.input_shape = o.output_shape = {64, 56, 56};
    bn.ops.push_back(o);
  }
  return bn;
}

// Eq. K19 on the toy GPU (400 GB/s attained, 5 us a kernel), fp16 at batch 8: E = 1,605,632 elements of 2 B, a
// pass over them 3,211,264 B, 8.02816 us. Unfused, six kernels: the batch norm 3E forward and 5E backward (two
// kernels each), the addition 3E and 3E, the ReLU 2E and 3E. bn_add_relu: the batch norm reads the residual too
// (4E forward) and backward reads the output for the ReLU's mask and writes the residual's gradient (7E), two
// kernels each way, nothing else. bn_relu: 3E and 6E, the ReLU not run; behind an addition it fuses nothing.
TEST(Compute, FusedBatchNormTakesInTheReluAndTheResidualAddition) {
  const double pass = 3211264.0 / 400e9;
  const auto kernels = [](const Layer& bn, bool bn_relu, bool bn_add_relu) {
    ComputeOptions o = toy_options(Precision::fp16);
    o.execution.bn_relu = bn_relu;
    o.execution.bn_add_relu = bn_add_relu;
    return layer_kernels(bn, false, false, toy_gpu(), 8, o);
  };
  const Layer add_relu = toy_batchnorm({LayerKind::add, LayerKind::relu});
  EXPECT_EQ(kernels(add_relu, false, false).size(), 6u);
  EXPECT_EQ(kernels(add_relu, true, false).size(), 6u);  // an addition comes first: bn_relu does not apply
  const auto fused = kernels(add_relu, true, true);
  ASSERT_EQ(fused.size(), 2u);
  EXPECT_EQ(fused[0].name, "bn fwd (+add+relu)");
  EXPECT_NEAR(in_seconds(fused[0].time), 4 * pass + 10e-6, 1e-12);
  EXPECT_NEAR(in_seconds(fused[1].time), 7 * pass + 10e-6, 1e-12);
  const auto relu = kernels(toy_batchnorm({LayerKind::relu}), true, false);
  ASSERT_EQ(relu.size(), 2u);
  EXPECT_EQ(relu[1].name, "bn bwd (+relu)");
  EXPECT_NEAR(in_seconds(relu[0].time), 3 * pass + 10e-6, 1e-12);
  EXPECT_NEAR(in_seconds(relu[1].time), 6 * pass + 10e-6, 1e-12);
}

// Eq. K18: a framework whose memory-bound kernels stream moves their bytes at copy_efficiency of the bandwidth
// (the toy's 500 GB/s × 0.87 = 435 GB/s) instead of memory_efficiency (400 GB/s): the batch norm above, 3E forward
// and 5E backward, in cuDNN's one kernel each way (K12: its NHWC semi-persistent kernels, 5 us) where the fitted
// blend counts two; in bf16 PyTorch's own channels-last kernels, two each way (10 us).
TEST(Compute, StreamingKernelsMoveTheirBytesAtTheCopyRate) {
  for (Precision p : {Precision::fp16, Precision::bf16}) {
    ComputeOptions o = toy_options(p);
    o.execution.streaming = true;
    const auto k = layer_kernels(toy_batchnorm({}), false, false, toy_gpu(), 8, o);
    ASSERT_EQ(k.size(), 2u);
    const double overhead = p == Precision::bf16 ? 10e-6 : 5e-6;
    EXPECT_NEAR(in_seconds(k[0].time), 3 * 3211264.0 / 435e9 + overhead, 1e-12) << to_string(p);
    EXPECT_NEAR(in_seconds(k[1].time), 5 * 3211264.0 / 435e9 + overhead, 1e-12) << to_string(p);
  }
  EXPECT_EQ(batch_norm_kernels(Precision::fp16, TensorLayout::nhwc, true), 1);
  EXPECT_EQ(batch_norm_kernels(Precision::tf32, TensorLayout::nchw, false), 1);
  EXPECT_EQ(batch_norm_kernels(Precision::bf16, TensorLayout::nchw, false), 2);
  EXPECT_EQ(batch_norm_kernels(Precision::bf16, TensorLayout::nchw, true), 1);
  EXPECT_EQ(batch_norm_kernels(Precision::bf16, TensorLayout::nhwc, true), 2);
}

/// The batch-norm network of the two K20 tests below, and fp16 options issuing at 20 us a kernel with 1 us gaps.
Network toy_batchnorm_network() {
  Network n;
  n.name = "bn";
  n.layers = {toy_batchnorm({})};
  return n;
}
ComputeOptions toy_issue_options() {
  ComputeOptions o = toy_options(Precision::fp16);
  o.execution.host_issue = microseconds(20);
  o.execution.launch_gap = microseconds(1);
  return o;
}

// Eq. K20: with the host's issue cost counted apart, each kernel costs the GPU the launch gap (here 1 us) and each
// phase takes at least its kernels × the issue cost (here 20 us). A network of the batch norm above, with the loss
// on its output (fp16 eager: fp32 log-softmax, 18 B an element, 3 kernels forward and 2 backward). At batch 1
// (E = 200,704) the forward's 5 kernels take 3·E·2 B and 18·E B at 400 GB/s + 5 gaps = 17.04 us, less than their
// floor, 100 us; backward 4 kernels, 80 us; the update (fused momentum SGD, one kernel) 20 us. At batch 64 the
// forward is above its floor: 3 passes of 25,690,112 B and 18 B × 12,845,056 at 400 GB/s + 5 gaps.
TEST(Compute, TheHostsIssueCostIsAFloorPerPhase) {
  const Network n = toy_batchnorm_network();
  const ComputeOptions o = toy_issue_options();
  const auto small = estimate_layer_times(n, toy_gpu(), 1, o);
  EXPECT_NEAR(in_seconds(small.forward[0]), 100e-6, 1e-12);
  EXPECT_NEAR(in_seconds(small.backward[0]), 80e-6, 1e-12);
  EXPECT_NEAR(in_seconds(small.update[0]), 20e-6, 1e-12);
  const auto large = estimate_layer_times(n, toy_gpu(), 64, o);
  const double e = 64.0 * 64 * 56 * 56;
  EXPECT_NEAR(in_seconds(large.forward[0]), (3 * e * 2 + 18 * e) / 400e9 + 5e-6, 1e-12);
  EXPECT_NEAR(in_seconds(large.backward[0]), (5 * e * 2 + 18 * e) / 400e9 + 4e-6, 1e-12);
}

// Eq. K20 with the code's kernels: issued_per_kernel scales the forward's and backward's floors (the kernels the
// network's code issues per kernel the model counts), not the update's (torch.optim's launches, counted as made):
// the toy above at batch 1 with 2 issued a kernel, 5 forward kernels x 2 x 20 us = 200 us, 4 backward 160 us, the
// update's one 20 us. Measured on transformers' BERT (model_code: transformers-bert), the floor binds on encoders
// only: the batch-norm network keeps its GPU time, 17.04 us forward (the test above) with the 1 us gaps.
TEST(Compute, TheIssueFloorCountsTheCodesKernelsAndBindsOnItsCode) {
  const Network n = toy_batchnorm_network();
  ComputeOptions o = toy_issue_options();
  o.execution.issued_per_kernel = 2.0;
  const auto t = estimate_layer_times(n, toy_gpu(), 1, o);
  EXPECT_NEAR(in_seconds(t.forward[0]), 200e-6, 1e-12);
  EXPECT_NEAR(in_seconds(t.backward[0]), 160e-6, 1e-12);
  EXPECT_NEAR(in_seconds(t.update[0]), 20e-6, 1e-12);
  o.execution.transformers_bert = true;
  const auto image = estimate_layer_times(n, toy_gpu(), 1, o);
  const double e = 64.0 * 56 * 56;
  EXPECT_NEAR(in_seconds(image.forward[0]), (3 * e * 2 + 18 * e) / 400e9 + 5e-6, 1e-12);
}

// Cross-channel LRN as Caffe's lrn_layer.cu runs it: forward fills the scale (read x, write scale) and writes
// y = x·scale^−β (read x and scale, write y): 5 passes in 2 kernels; backward reads x, y, scale and dy and
// writes dx: 5 passes in one. GoogLeNet's second LRN at batch 2: 192×56×56 floats per sample.
TEST(Compute, LocalResponseNormalizationIsFivePassesEachWay) {
  Network n = one_gemm();
  Operator lrn;
  lrn.name = "norm2";
  lrn.kind = LayerKind::lrn;
  lrn.input_shape = lrn.output_shape = {192, 56, 56};
  n.layers[0].ops.push_back(lrn);
  const auto k = layer_kernels(n.layers[0], false, false, toy_gpu(), 2, toy_options(Precision::fp32));
  const double e = 2.0 * 192 * 56 * 56;
  double fwd = -1, bwd = -1;
  for (const auto& t : k) {
    if (t.name == "norm2 fwd") fwd = in_seconds(t.time);
    if (t.name == "norm2 bwd") bwd = in_seconds(t.time);
  }
  EXPECT_NEAR(fwd, 5.0 * e * 4 / 400e9 + 2 * 5e-6, 1e-15);
  EXPECT_NEAR(bwd, 5.0 * e * 4 / 400e9 + 5e-6, 1e-15);
  EXPECT_EQ(layer_kind_from_string("lrn"), LayerKind::lrn);
  EXPECT_TRUE(is_parameter_free(LayerKind::lrn));
}

// An inception-style join: three branches read the same 64×28×28 input and are concatenated into
// 160×28×28. Forward copies the branches (2·Eout); backward takes views of the concatenated gradient, but
// the fork's input sums three gradients: 2 additions of 3·Ein, as 2 kernels.
TEST(Compute, ConcatCopiesForwardAndItsForkSumsTheBranchGradients) {
  Network n = one_gemm();
  Operator cat;
  cat.name = "cat";
  cat.kind = LayerKind::concat;
  cat.input_shape = {64, 28, 28};
  cat.output_shape = {160, 28, 28};
  cat.branches = 3;
  n.layers[0].ops.push_back(cat);
  const auto k = layer_kernels(n.layers[0], false, false, toy_gpu(), 2, toy_options(Precision::fp32));
  const double ein = 2.0 * 64 * 28 * 28, eout = 2.0 * 160 * 28 * 28;  // batch 2
  const auto find = [&](const std::string& name) {
    for (const auto& t : k)
      if (t.name == name) return in_seconds(t.time);
    ADD_FAILURE() << "no kernel " << name;
    return 0.0;
  };
  EXPECT_NEAR(find("cat fwd"), 2.0 * eout * 4 / 400e9 + 5e-6, 1e-15);
  EXPECT_NEAR(find("cat fork bwd"), 2 * 3.0 * ein * 4 / 400e9 + 2 * 5e-6, 1e-15);
}

TEST(Compute, SpreadKeepsMeasuredTotalsAndModelledShape) {
  Network n = one_gemm();
  n.layers.push_back(n.layers[0]);
  n.layers[1].name = "fc2";
  const auto t = estimate_layer_times(n, toy_gpu(), 1, toy_options(Precision::fp32));
  const auto s = spread_phase_totals(t, seconds(0.1), seconds(0.2), seconds(0.01));
  EXPECT_NEAR(in_seconds(s.total_forward()), 0.1, 1e-15);
  EXPECT_NEAR(in_seconds(s.total_backward()), 0.2, 1e-15);
  EXPECT_NEAR(in_seconds(s.total_update()), 0.01, 1e-15);
  EXPECT_NEAR(in_seconds(s.forward[0]), 0.1 * (t.forward[0] / t.total_forward()), 1e-15);
}

TEST(Compute, RejectsAnEmptyBatch) {
  EXPECT_THROW((void)estimate_layer_times(one_gemm(), toy_gpu(), 0, toy_options(Precision::fp32)), std::invalid_argument);
}

TEST(Compute, NoKernelRunsAboveItsPeakOnARealNetwork) {
  // ResNet-50 at batch 32 on a P40 at 1.3 GHz: every layer's forward takes at least its FLOPs at the fp32
  // peak divided by the best Winograd gain (4, F(4x4,3x3)).
  const Network n = load_network(resolve(DataKind::network, "resnet50", "--model"));
  const GpuSpec p40 = find_gpu("p40-base-clock");
  const auto t = estimate_layer_times(n, p40, 32, ComputeOptions{});
  for (std::size_t i = 0; i < n.layers.size(); ++i)
    EXPECT_GE(in_seconds(t.forward[i]) * 4 * (1 + 1e-12),
              n.layers[i].forward_flops_per_sample * 32 / (in_teraflops_per_second(p40.peak_fp32) * 1e12));
}

TEST(Precisions, NamesRoundTripAndUnknownIsRefused) {
  for (auto p : {Precision::fp32, Precision::tf32, Precision::bf16, Precision::fp16, Precision::fp8})
    EXPECT_EQ(precision_from_string(to_string(p)), p);
  EXPECT_THROW((void)precision_from_string("fp4"), std::invalid_argument);
  // as published tables and frameworks write them: AMP / mixed precision is fp16 autocast
  EXPECT_EQ(precision_from_string("AMP"), Precision::fp16);
  EXPECT_EQ(precision_from_string("mixed"), Precision::fp16);
  EXPECT_EQ(precision_from_string("FP32"), Precision::fp32);
  EXPECT_EQ(precision_from_string("bfloat16"), Precision::bf16);
  EXPECT_THROW((void)precision_from_string("int8"), std::invalid_argument);
  const GpuSpec v100 = find_gpu("v100-sxm2");
  EXPECT_FALSE(v100.supports(Precision::tf32));
  EXPECT_FALSE(v100.supports(Precision::bf16));
  EXPECT_TRUE(find_gpu("a100-sxm4-80gb").supports(Precision::bf16));
}

}  // namespace
}  // namespace dlscale
