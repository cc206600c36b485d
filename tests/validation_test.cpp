// The compute model against measurements it was not built from, and the fitter against data it must
// recover (docs/compute-model.md, "Accuracy"):
// - Shi & Chu (2018) Table V: single-GPU t_f + t_b on the P40, from specifications, per framework;
// - Lambda's published PyTorch throughputs (tests/data/lambda-pytorch): the shipped parameters' error, and
//   the leave-one-GPU-out and leave-one-network-out errors of refitting (printed; rerun with
//   build/bin/validation_test --gtest_filter='Lambda.*');
// - memory: what fits and what does not, as the issue's cases and the published batch choices say.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dlscale/calibration.hpp"
#include "dlscale/fit.hpp"
#include "dlscale/io.hpp"
#include "dlscale/kernels.hpp"
#include "dlscale/memory.hpp"
#include "dlscale/predict.hpp"
#include "support/p40.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define DLSCALE_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DLSCALE_UNDER_SANITIZER 1
#endif
#endif

namespace dlscale {
namespace {

Network zoo(const std::string& name) { return load_network(resolve(DataKind::network, name, "--model")); }

using test::p40_scenario;

// Table V of Shi & Chu (2018), t_f + t_b in seconds (shared/reference/shi-chu-2018-ssgd-performance-model.txt).
struct Cell {
  const char* model;
  int batch;
  const char* framework;
  double measured;
  double tolerance;  // 0.15 (a known miss would take a wider bound here, and docs/compute-model.md would say why)
};
// Each cell's forward and backward as the paper measured them (Table V's t_f and t_b), for the per-phase print.
struct Phases {
  double forward, backward;
};
constexpr Phases kTableVPhases[] = {
    {0.1718, 0.3560}, {0.1684, 0.2919}, {0.2147, 0.4086}, {0.1804, 0.3417}, {0.0920, 0.2073}, {0.0814, 0.1780},
    {0.0892, 0.1819}, {0.1192, 0.1856}, {0.0807, 0.1291}, {0.0724, 0.1482}, {0.0732, 0.1307}, {0.0767, 0.1355},
};
constexpr Cell kTableV[] = {
    {"alexnet", 1024, "caffe-mpi", 0.1718 + 0.3560, 0.15},  {"alexnet", 1024, "cntk", 0.1684 + 0.2919, 0.15},
    {"alexnet", 1024, "mxnet", 0.2147 + 0.4086, 0.15},      {"alexnet", 1024, "tensorflow", 0.1804 + 0.3417, 0.15},
    {"googlenet", 128, "caffe-mpi", 0.0920 + 0.2073, 0.15}, {"googlenet", 128, "cntk", 0.0814 + 0.1780, 0.15},
    {"googlenet", 128, "mxnet", 0.0892 + 0.1819, 0.15},     {"googlenet", 128, "tensorflow", 0.1192 + 0.1856, 0.15},
    {"resnet50", 32, "caffe-mpi", 0.0807 + 0.1291, 0.15},   {"resnet50", 32, "cntk", 0.0724 + 0.1482, 0.15},
    {"resnet50", 32, "mxnet", 0.0732 + 0.1307, 0.15},       {"resnet50", 32, "tensorflow", 0.0767 + 0.1355, 0.15},
};

TEST(TableV, ForwardPlusBackwardFromSpecifications) {
  int within15 = 0;
  double sum = 0;
  for (const auto& c : kTableV) {
    const Predictor p(p40_scenario(c.model, c.framework, c.batch));
    const auto b = p.predict(1).breakdown;
    const double err = in_seconds(b.forward + b.backward) / c.measured - 1.0;
    std::printf("Table V %-10s %-11s predicted %.4f s, measured %.4f s, error %+.1f%%\n", c.model, c.framework,
                in_seconds(b.forward + b.backward), c.measured, 100 * err);
    EXPECT_LE(std::abs(err), c.tolerance) << c.model << " " << c.framework;
    within15 += std::abs(err) <= 0.15;
    sum += std::abs(err);
  }
  std::printf("Table V: %d of 12 cells within 15%%, mean absolute error %.1f%%\n", within15, 100 * sum / 12);
  // Issue 34 asks the same of each phase: printed, not held (where it stands is in the last line).
  int phases_within15 = 0;
  double phase_sum = 0;
  for (std::size_t i = 0; i < std::size(kTableV); ++i) {
    const Cell& c = kTableV[i];
    ASSERT_NEAR(kTableVPhases[i].forward + kTableVPhases[i].backward, c.measured, 1e-12) << c.model << " " << c.framework;
    const auto b = Predictor(p40_scenario(c.model, c.framework, c.batch)).predict(1).breakdown;
    const double ef = in_seconds(b.forward) / kTableVPhases[i].forward - 1.0;
    const double eb = in_seconds(b.backward) / kTableVPhases[i].backward - 1.0;
    std::printf("Table V %-10s %-11s t_f %.4f s against %.4f (%+.1f%%), t_b %.4f s against %.4f (%+.1f%%)\n", c.model,
                c.framework, in_seconds(b.forward), kTableVPhases[i].forward, 100 * ef, in_seconds(b.backward),
                kTableVPhases[i].backward, 100 * eb);
    phases_within15 += (std::abs(ef) <= 0.15) + (std::abs(eb) <= 0.15);
    phase_sum += std::abs(ef) + std::abs(eb);
  }
  std::printf("Table V phases: %d of 24 within 15%%, mean absolute error %.1f%%\n", phases_within15, 100 * phase_sum / 24);
  EXPECT_EQ(within15, 12);  // issue 13's goal: every cell within 15 %
}

TEST(TableV, FrameworksDifferOnlyWhereTheirConvolutionAlgorithmsDo) {
  // AlexNet at batch 1024: CNTK autotunes with any workspace and takes FFT for the 5×5 convolution;
  // Caffe's 8 MiB limit leaves it out; MXNet's 1 GiB too (1.19 GB of transforms). ResNet-50 at batch 32
  // needs no FFT: CNTK and MXNet, both on cuDNN's pooling, are equal. (Caffe's own max pooling keeps an int32
  // mask where cuDNN's keeps nothing, eq. K17: the one other difference, checked after.)
  auto fb = [](const char* m, const char* f, int batch) {
    const auto b = Predictor(p40_scenario(m, f, batch)).predict(1).breakdown;
    return in_seconds(b.forward + b.backward);
  };
  EXPECT_LT(fb("alexnet", "cntk", 1024), fb("alexnet", "mxnet", 1024));
  // TensorFlow "prefers to use Winograd" (Section VI-A): no FFT, so its AlexNet is MXNet's too.
  EXPECT_DOUBLE_EQ(fb("alexnet", "mxnet", 1024), fb("alexnet", "tensorflow", 1024));
  // Caffe's AlexNet is MXNet's with the mask: Caffe's pooling as cuDNN's is MXNet's step
  Scenario caffe_cudnn_pool = p40_scenario("alexnet", "caffe-mpi", 1024);
  caffe_cudnn_pool.strategy.pool_index_bytes = 0;
  const auto cb = Predictor(caffe_cudnn_pool).predict(1).breakdown;
  EXPECT_DOUBLE_EQ(in_seconds(cb.forward + cb.backward), fb("alexnet", "mxnet", 1024));
  EXPECT_GT(fb("alexnet", "caffe-mpi", 1024), fb("alexnet", "mxnet", 1024));
  EXPECT_DOUBLE_EQ(fb("resnet50", "cntk", 32), fb("resnet50", "mxnet", 32));
  // CNTK has no LRN (`lrn: false`): its GoogLeNet runs without the two, the others' with them.
  for (const char* f : {"caffe-mpi", "cntk", "mxnet", "tensorflow"})
    EXPECT_EQ(load_strategy(resolve(DataKind::framework, f, "--framework")).lrn, std::string(f) != "cntk") << f;
  Scenario with_lrn = p40_scenario("googlenet", "cntk", 128);
  with_lrn.strategy.lrn = true;
  const auto b = Predictor(with_lrn).predict(1).breakdown;
  EXPECT_LT(fb("googlenet", "cntk", 128), in_seconds(b.forward + b.backward));
}

// A framework's jitter_cv (docs/input-formats.md, "Synchronization losses") is data: Table V gives each
// one-GPU t_iter as mean ± standard deviation over the second epoch's iterations (Section V). Per network,
// cv = sd / (t_f + t_b), the σ = cv · t_c of the closed form; the framework's value is the median of its three
// networks (one parameter per framework, never per network), and the file must say what this prints.
TEST(TableV, FrameworkJitterIsTheMedianOfItsNetworks) {
  for (const char* framework : {"caffe-mpi", "cntk", "mxnet", "tensorflow"}) {
    std::vector<double> cv;
    for (const char* model : {"alexnet", "googlenet", "resnet50"}) {
      const Profile p = load_profile(resolve(DataKind::profile, std::string("table5-") + model + "-" + framework, "--profile"));
      ASSERT_TRUE(p.measured.count(1) && p.measured.at(1).iteration_sd) << model << " " << framework;
      cv.push_back(*p.measured.at(1).iteration_sd / (p.single_gpu.forward + p.single_gpu.backward));
    }
    std::printf("jitter_cv %-11s AlexNet %.4f, GoogLeNet %.4f, ResNet-50 %.4f", framework, cv[0], cv[1], cv[2]);
    std::sort(cv.begin(), cv.end());
    const double shipped = load_strategy(resolve(DataKind::framework, framework, "--framework")).jitter_cv;
    std::printf(": median %.4f, shipped %.4f\n", cv[1], shipped);
    EXPECT_NEAR(shipped, cv[1], 0.0005) << framework;
    // Horovod + TensorFlow runs TensorFlow's own executor on every GPU: its spread is TensorFlow's.
    if (std::string(framework) == "tensorflow") {
      EXPECT_NEAR(load_strategy(resolve(DataKind::framework, "horovod-tensorflow", "--framework")).jitter_cv, cv[1], 0.0005);
    }
  }
}

// Table V's t_u and t_h2d, in the order of kTableV (seconds).
constexpr double kTableVUpdate[] = {0.0062, 0.0086, 0.0041, 0.0031, 0.0015, 0.0095,
                                    0.0095, 0.0005, 0.0033, 0.0073, 0.0164, 0.0015};
constexpr double kTableVCopy[] = {0.0526, 0.0528, 0.1109, 0.1140, 0.0021, 0.0033, 0.0143, 0.0161, 0.0009, 0.0016, 0.0039, 0.0045};

/// The least-squares (a, c) of y ≈ a·x1 + c·x2 in relative error: minimises Σ((a·x1 + c·x2)/y − 1)².
std::pair<double, double> relative_least_squares(const std::vector<std::array<double, 3>>& rows) {
  double s11 = 0, s12 = 0, s22 = 0, b1 = 0, b2 = 0;
  for (const auto& [x1, x2, y] : rows) {
    const double u = x1 / y, v = x2 / y;
    s11 += u * u, s12 += u * v, s22 += v * v, b1 += u, b2 += v;
  }
  const double det = s11 * s22 - s12 * s12;
  return {(b1 * s22 - b2 * s12) / det, (s11 * b2 - s12 * b1) / det};
}

/// The parameter tensors of a network, counted here: a convolution's or linear map's weight and a bias where it
/// has parameters beyond the weight, a batch norm's scale and shift.
double parameter_tensors(const Network& net) {
  double n = 0;
  for (const Layer& l : net.layers) {
    if (l.params <= 0) continue;
    const auto& in = l.input_shape;
    const auto& out = l.output_shape;
    double weight = 0;
    if (l.kind == LayerKind::conv) weight = static_cast<double>(in[0] / l.groups * l.kernel_h * l.kernel_w * out[0]);
    if (l.kind == LayerKind::linear) weight = static_cast<double>(in.back() * out.back());
    n += weight > 0 && static_cast<double>(l.params) <= weight ? 1.0 : 2.0;
  }
  return n;
}

// A framework's `update_kernels` is data (docs/reproduce.md, "Shi & Chu's frameworks"): t_u = P·traffic/B_mem +
// tensors·per_tensor, fitted to its three Table V rows (two numbers per framework, none per network); the file must
// say what this prints. Rerun: build/bin/validation_test --gtest_filter='TableV.FrameworkUpdateKernels*'.
TEST(TableV, FrameworkUpdateKernelsAreTheFitOfItsRows) {
  const char* frameworks[] = {"caffe-mpi", "cntk", "mxnet", "tensorflow"};
  const char* models[] = {"alexnet", "googlenet", "resnet50"};
  for (std::size_t f = 0; f < 4; ++f) {
    std::vector<std::array<double, 3>> rows;
    const Scenario sc = p40_scenario("alexnet", frameworks[f], 1024);
    const double bandwidth = in_bytes_per_second(sc.cluster.gpu.memory_bandwidth);
    for (std::size_t m = 0; m < 3; ++m) {
      const Network net = zoo(models[m]);
      rows.push_back({static_cast<double>(net.total_params()) / bandwidth, parameter_tensors(net), kTableVUpdate[4 * m + f]});
    }
    const auto [traffic, per_tensor] = relative_least_squares(rows);
    std::printf("update_kernels %-10s traffic %.2f B, per_tensor %.2f us\n", frameworks[f], traffic, 1e6 * per_tensor);
    ASSERT_TRUE(sc.strategy.update_kernels) << frameworks[f];
    EXPECT_NEAR(sc.strategy.update_kernels->traffic, traffic, 0.006) << frameworks[f];
    EXPECT_NEAR(in_seconds(sc.strategy.update_kernels->per_tensor), per_tensor, 0.006e-6) << frameworks[f];
    for (std::size_t m = 0; m < 3; ++m) {  // and the predictor charges it: one GPU's t_u is the formula's
      const int batch = m == 0 ? 1024 : m == 1 ? 128 : 32;
      const auto b = Predictor(p40_scenario(models[m], frameworks[f], batch)).predict(1).breakdown;
      const double formula =
          rows[m][0] * sc.strategy.update_kernels->traffic + rows[m][1] * in_seconds(sc.strategy.update_kernels->per_tensor);
      EXPECT_NEAR(in_seconds(b.update), formula, 1e-12) << models[m] << " " << frameworks[f];
    }
  }
}

// A pageable framework's `io: {copy: {rate, latency}}` is data: t_h2d = D/(rate·B_pageable) + latency with D its fp32
// batch, fitted to its three Table V rows; the file must say what this prints (MXNet and TensorFlow; the pinned
// frameworks copy at the node's rate). Rerun: build/bin/validation_test --gtest_filter='TableV.FrameworkCopy*'.
TEST(TableV, FrameworkCopyIsTheFitOfItsRows) {
  const char* models[] = {"alexnet", "googlenet", "resnet50"};
  const int batches[] = {1024, 128, 32};
  for (const auto& [framework, f] : {std::pair{"mxnet", 2}, std::pair{"tensorflow", 3}}) {
    std::vector<std::array<double, 3>> rows;
    for (std::size_t m = 0; m < 3; ++m) {
      const Scenario sc = p40_scenario(models[m], framework, batches[m]);
      const double d = in_bytes(sc.network.input_bytes_per_sample) * batches[m];
      rows.push_back({d / in_bytes_per_second(sc.cluster.h2d_pageable), 1.0, kTableVCopy[4 * m + static_cast<std::size_t>(f)]});
    }
    const auto [slowdown, latency] = relative_least_squares(rows);
    std::printf("io copy %-10s rate %.3f, latency %.2f ms\n", framework, 1.0 / slowdown, 1e3 * latency);
    const Strategy st = load_strategy(resolve(DataKind::framework, framework, "--framework"));
    EXPECT_NEAR(st.h2d_rate, 1.0 / slowdown, 0.0006) << framework;
    EXPECT_NEAR(in_seconds(st.h2d_latency), latency, 0.006e-3) << framework;
  }
}

// PyTorch's own iteration-time spread, from the H100's training steps (tests/data/h100-pytorch/torch.jsonl:
// bench/pytorch/train_steps.py's four timed windows of n steps per run, synthetic data). A window's mean of n
// independent steps varies n^-1/2 as much as one step, so each run's per-step cv is the windows' sample
// standard deviation over their mean times sqrt(n); the shipped `jitter_cv` of every PyTorch framework file
// is the median of the 34 runs (0.0055: 21 runs at 0.0003-0.0062, 13 with drifting windows at 0.019-0.42,
// which the median leaves out). Rerun: build/bin/validation_test --gtest_filter='PyTorchJitter*'.
TEST(PyTorchJitter, IsTheMedianOfTheH100Steps) {
  std::ifstream in(std::string(DLSCALE_TEST_DATA_DIR) + "/h100-pytorch/torch.jsonl");
  ASSERT_TRUE(in);
  std::vector<double> cv;
  for (std::string line; std::getline(in, line);) {
    const auto run = nlohmann::json::parse(line);
    if (!run.contains("windows_ms")) continue;  // the header line (versions)
    const auto w = run.at("windows_ms").get<std::vector<double>>();
    const double n = run.at("steps_per_window").get<double>();
    ASSERT_GE(w.size(), 2u);
    double mean = 0, ss = 0;
    for (double x : w) mean += x / static_cast<double>(w.size());
    for (double x : w) ss += (x - mean) * (x - mean);
    cv.push_back(std::sqrt(ss / static_cast<double>(w.size() - 1)) / mean * std::sqrt(n));
  }
  ASSERT_EQ(cv.size(), 34u);
  std::sort(cv.begin(), cv.end());
  const double median = (cv[16] + cv[17]) / 2;
  std::printf("PyTorch per-step cv over %zu H100 runs: min %.4f, median %.4f, max %.4f\n", cv.size(), cv.front(), median,
              cv.back());
  for (const char* framework :
       {"pytorch-ddp", "pytorch-dataparallel", "pytorch-dle", "fsdp", "fsdp-shard-grad-op", "fsdp-hybrid", "deepspeed-zero1",
        "deepspeed-zero2", "deepspeed-zero2-offload", "deepspeed-zero3", "deepspeed-zero3-offload"}) {
    EXPECT_NEAR(load_strategy(resolve(DataKind::framework, framework, "--framework")).jitter_cv, median, 0.00005) << framework;
  }
}

MeasurementOptions lambda_options() {
  MeasurementOptions o;
  o.model_names = {{"bert-base", "bert-squad"}, {"bert-large", "bert-large-squad"}};
  return o;
}

std::vector<ThroughputSample> lambda() {
  return read_throughput_csv(std::string(DLSCALE_TEST_DATA_DIR) + "/lambda-pytorch/training-throughput.csv", lambda_options());
}

TEST(Lambda, ShippedParametersPredictTheSingleGpuRows) {
  const auto samples = lambda();
  ASSERT_EQ(samples.size(), 36u);  // 6 GPUs × 3 networks × 2 precisions
  const auto params = shipped_kernel_params();
  double sum = 0, worst = 0;
  for (const auto& s : samples) {
    const double predicted = predicted_throughput(s, *params);
    const double e = std::abs(predicted / s.samples_per_s - 1.0);
    std::printf("Lambda %-16s %-10s %-4s batch %4d: measured %7.1f, predicted %7.1f samples/s (%+.1f %%)\n", s.gpu_id.c_str(),
                s.model_id.c_str(), std::string(to_string(s.precision)).c_str(), s.batch, s.samples_per_s, predicted,
                100 * (predicted / s.samples_per_s - 1.0));
    sum += e;
    worst = std::max(worst, e);
  }
  const double mape = 100 * sum / static_cast<double>(samples.size());
  std::printf("Lambda, shipped parameters: MAPE %.1f%%, worst %.1f%%\n", mape, 100 * worst);
  EXPECT_LE(mape, 8.0);
  EXPECT_LE(worst, 0.35);  // ResNet-50 AMP on the A100 and H100 (docs/compute-model.md, "Accuracy")
}

TEST(Lambda, LeaveOneOutErrors) {
#ifdef DLSCALE_UNDER_SANITIZER
  GTEST_SKIP() << "nine refits: seconds in Release, minutes under sanitizers (the ci preset runs it)";
#else
  const auto samples = lambda();
  const auto start = *shipped_kernel_params();
  // The shipped fit's options (topologies/compute-params.yaml): operand_feed held at its value.
  FitOptions o;
  o.operand_feed = false;
  const auto by_gpu = leave_one_out(samples, start, true, o);
  const auto by_net = leave_one_out(samples, start, false, o);
  for (const auto& r : by_gpu) std::printf("leave out GPU %-16s MAPE %5.1f%%\n", r.left_out.c_str(), r.mape);
  for (const auto& r : by_net) std::printf("leave out network %-12s MAPE %5.1f%%\n", r.left_out.c_str(), r.mape);
  const double gpu = leave_one_out_mape(by_gpu, samples), net = leave_one_out_mape(by_net, samples);
  std::printf("leave-one-GPU-out MAPE %.1f%% (goal 10%%), leave-one-network-out MAPE %.1f%% (goal 12%%)\n", gpu, net);
  // The issue's goals (docs/compute-model.md, "Accuracy").
  EXPECT_LE(net, 12.0);
  EXPECT_LE(gpu, 10.0);
#endif
}

TEST(Fit, RecoversParametersThatGeneratedTheData) {
  // Throughputs made by a known parameter set; the fit, started from the shipped one, must find it.
  const auto all = lambda();
  // fp32/TF32 rows of the first four GPUs and the fp16 rows of the first two: every kernel class in play
  std::vector<ThroughputSample> samples(all.begin(), all.begin() + 12);
  samples.insert(samples.end(), all.begin() + 18, all.begin() + 24);
  KernelParamSet truth = *shipped_kernel_params();
  truth.defaults.tensor_efficiency = 0.6;
  truth.defaults.vector_efficiency = 0.7;
  truth.defaults.memory_efficiency = 0.7;
  truth.defaults.kernel_overhead = microseconds(10);
  truth.defaults.operand_feed = 12.0;
  // a global set, as the fit makes one: the architectures' blocks (their FlashAttention rates, K9) take it too
  for (auto& a : truth.architectures) {
    a.tensor_efficiency = 0.6;
    a.vector_efficiency = 0.7;
    a.memory_efficiency = 0.7;
    a.kernel_overhead = microseconds(10);
    a.operand_feed = 12.0;
  }
  for (auto& s : samples) s.samples_per_s = predicted_throughput(s, truth);
  FitOptions o;
  o.conv_efficiency = false;
  const FitResult r = fit_kernel_params(samples, *shipped_kernel_params(), o);
  EXPECT_NEAR(r.params.defaults.tensor_efficiency, 0.6, 1e-3);
  EXPECT_NEAR(r.params.defaults.vector_efficiency, 0.7, 1e-3);
  EXPECT_NEAR(r.params.defaults.memory_efficiency, 0.7, 1e-3);
  EXPECT_NEAR(in_us(r.params.defaults.kernel_overhead), 10.0, 1e-2);
  EXPECT_NEAR(r.params.defaults.operand_feed, 12.0, 1e-2);
  EXPECT_LT(r.mape, 0.01);
}

// Lambda's 2-, 4- and 8-GPU rows (one server, PyTorch DDP) against its 1-GPU rows: the scaling ratio
// T_N / (N T_1), measured and predicted, each prediction at the row's own batch per GPU on the shipped
// server of that GPU (dgx1v, dgx-a100, dgx-h100; the 2-GPU workstations on rtx4090-pcie's PCIe graph) with
// the row's GPU. Printed; the model is optimistic here (issue 14): it hides the all-reduce behind backward,
// while the measured losses grow with the gradient bytes (BERT-large loses 15-30 % on two GPUs) as if the
// exchange were exposed at 4-10 GB/s. Rerun: build/bin/validation_test --gtest_filter='Lambda.Scaling*'.
/// A measured row as a PyTorch DDP scenario on `cluster` (a server of its GPU), the row's GPU, network,
/// batch, precision and optimiser.
Scenario measured_scenario(const ThroughputSample& s, const std::string& cluster) {
  Scenario sc;
  sc.cluster = load_cluster(resolve(DataKind::cluster, cluster, "--cluster"));
  sc.cluster.gpu = s.gpu;
  sc.network = *s.network;
  sc.strategy = load_strategy(resolve(DataKind::framework, "pytorch-ddp", "--framework"));
  sc.batch_per_gpu = s.batch;
  sc.compute.precision = s.precision;
  sc.compute.optimizer = s.optimizer;
  return sc;
}

TEST(Lambda, ScalingRatiosAgainstTheOneGpuRows) {
  MeasurementOptions one = lambda_options();
  const auto base = read_throughput_csv(std::string(DLSCALE_TEST_DATA_DIR) + "/lambda-pytorch/training-throughput.csv", one);
  auto server = [](const std::string& gpu) {
    return gpu.rfind("v100", 0) == 0 ? "dgx1v"
        : gpu.rfind("a100", 0) == 0  ? "dgx-a100"
        : gpu.rfind("h100", 0) == 0  ? "dgx-h100"
                                     : "rtx4090-pcie";
  };
  auto throughput = [&](const ThroughputSample& s, int gpus) {
    return Predictor(measured_scenario(s, server(s.gpu_id))).predict(gpus).throughput_samples_per_s;
  };
  double sum = 0, signed_sum = 0;
  int rows = 0;
  for (int n : {2, 4, 8}) {
    MeasurementOptions o = lambda_options();
    o.gpus = n;
    for (const auto& s : read_throughput_csv(std::string(DLSCALE_TEST_DATA_DIR) + "/lambda-pytorch/training-throughput.csv", o)) {
      const ThroughputSample* b1 = nullptr;
      for (const auto& b : base)
        if (b.gpu_id == s.gpu_id && b.model_id == s.model_id && b.precision == s.precision) b1 = &b;
      ASSERT_NE(b1, nullptr) << s.gpu_id << " " << s.model_id;
      const double measured = s.samples_per_s / (n * b1->samples_per_s);
      const double predicted = throughput(s, n) / (n * throughput(*b1, 1));
      if (s.batch == b1->batch) {
        EXPECT_LE(predicted, 1.0 + 1e-9) << s.gpu_id << " " << s.model_id << " " << n;  // never superlinear
      }
      const double e = predicted / measured - 1.0;
      // What the loss would be as an exchange that nothing hides: the time a GPU's iteration grew by (same batch
      // per GPU) against the gradient bytes the model exchanges (pytorch-ddp: fp32 gradients).
      std::string exposed;
      if (s.batch == b1->batch) {
        const double grown = s.batch * n / s.samples_per_s - b1->batch / b1->samples_per_s;
        const double gb = static_cast<double>(s.network->total_params()) * 4.0 / 1e9;
        if (grown > 0)
          exposed = fmt::format("; lost {:.1f} ms, {:.2f} GB of gradients at {:.1f} GB/s", 1e3 * grown, gb, gb / grown);
      }
      std::printf("Lambda scaling %-16s %-10s %-4s %d GPUs: measured %.3f, predicted %.3f (%+.1f %%)%s\n", s.gpu_id.c_str(),
                  s.model_id.c_str(), std::string(to_string(s.precision)).c_str(), n, measured, predicted, 100 * e,
                  exposed.c_str());
      sum += std::abs(e);
      signed_sum += e;
      ++rows;
    }
  }
  ASSERT_GT(rows, 40);
  std::printf("Lambda scaling ratios, %d rows: mean absolute error %.1f %%, mean signed %+.1f %%\n", rows, 100 * sum / rows,
              100 * signed_sum / rows);
  EXPECT_LE(sum / rows, 0.17);  // where it stands (15.0 %, +12.5 % signed); a mechanism that explains the losses lowers it
}

// Real training steps measured on an H200 (tests/data/h200-pytorch/README.md: PyTorch 2.11, cuDNN 9.19,
// synthetic data, bench/pytorch/train_steps.py), none of them used to set a parameter: the model's
// out-of-sample check on a GPU of its own kind. Rows in plain PyTorch's NCHW layout are predicted with
// memory_format nchw (eq. K10), the channels_last row with nhwc.
/// A file of measured single-GPU steps (tests/data/h*-pytorch/: `fp32` rows ran with TF32 off, `tf32` rows say so).
std::vector<ThroughputSample> measured_steps(const std::string& file) {
  MeasurementOptions strict;
  strict.fp32_means_tf32 = false;
  return read_throughput_csv(std::string(DLSCALE_TEST_DATA_DIR) + "/" + file, strict);
}
/// The model against measured steps: each row's predicted over measured throughput, and the mean absolute
/// errors over all rows and over those without convolutions (BERT, GEMM-only).
struct MeasuredErrors {
  std::vector<double> ratio;  // per row, predicted / measured samples/s
  double all = 0, gemm_only = 0;
  int rows = 0, gemm_rows = 0;
};
/// The predicted single-GPU step of a measured row, with the row's layout unless `layout` says otherwise.
/// With `execution`, its kernels run as that `kernels:` block says (eqs. K18-K20), else as pytorch-ddp's.
Seconds measured_step(const ThroughputSample& m, const std::string& cluster, std::optional<TensorLayout> layout = {},
                      const std::optional<KernelExecution>& execution = {}) {
  Scenario sc = measured_scenario(m, cluster);
  if (execution) sc.strategy.execution = *execution;
  sc.cluster.input = InputPipeline{};  // synthetic samples already on the GPU, as measured
  sc.cluster.input->data = DataSource::synthetic;
  sc.strategy.conv_algorithms.layout = layout.value_or(m.layout);
  sc.strategy.attention = m.attention;  // Hugging Face's sdpa: flash in half precision, memory-efficient otherwise
  return Predictor(std::move(sc)).predict(1).iteration_time;
}
MeasuredErrors compare_measured_steps(const std::vector<ThroughputSample>& samples, const std::string& cluster,
                                      const char* label) {
  MeasuredErrors r;
  for (const ThroughputSample& m : samples) {
    const double predicted = m.batch / in_seconds(measured_step(m, cluster));
    const double e = predicted / m.samples_per_s - 1.0;
    r.ratio.push_back(1.0 + e);
    std::printf("%s %-16s %-4s batch %4d %-4s %-5s measured %9.1f/s predicted %9.1f/s (%+.1f %%)\n", label, m.model_id.c_str(),
                std::string(to_string(m.precision)).c_str(), m.batch, std::string(to_string(m.layout)).c_str(),
                std::string(to_string(m.attention)).c_str(), m.samples_per_s, predicted, 100 * e);
    r.all += std::abs(e);
    ++r.rows;
    if (m.network->name.rfind("mlp", 0) == 0 || m.network->name.rfind("bert", 0) == 0) {
      r.gemm_only += std::abs(e);
      ++r.gemm_rows;
    }
  }
  std::printf("%s: %d rows, mean absolute error %.1f %%; the %d without convolutions (BERT, GEMM-only) %.1f %%\n", label, r.rows,
              100 * r.all / r.rows, r.gemm_rows, 100 * r.gemm_only / r.gemm_rows);
  return r;
}

TEST(H200Measured, PyTorchStepsBesideThePredictions) {
  const std::vector<ThroughputSample> samples = measured_steps("h200-pytorch/training-steps.csv");
  auto step = [&](const ThroughputSample& m, TensorLayout layout) { return measured_step(m, "dgx-h100", layout); };
  const MeasuredErrors e = compare_measured_steps(samples, "dgx-h100", "H200");
  ASSERT_EQ(e.rows, 26);
  EXPECT_LE(e.gemm_only / e.gemm_rows, 0.15);  // transformers and GEMMs on a GPU the parameters never saw
  EXPECT_LE(e.all / e.rows, 0.15);             // where it stands (10.7 %; 14.2 % before K6's fp32 convolutions on Hopper)

  // Eqs. K10 and K12 against the profiles (kernels.txt, "resnet50 fp16 b256 nchw" and "... nhwc"): in NCHW
  // cuDNN's nchwToNhwc and nhwcToNchw kernels took 8.566 + 4.423 = 12.989 ms of the step, and its
  // per-channel batch norm 14.537 ms forward and 25.846 backward, where NHWC's took 5.611 + 4.114 + 2.445 +
  // 1.567 = 13.737 ms: 39.635 ms more in NCHW. The model's NCHW step exceeds its NHWC step by its transposes
  // and its batch norm's difference (its NHWC batch norm streams at the fitted memory-bound efficiency, 0.53,
  // about 18 ms where the profile's took 13.7, so it says about 4 ms less).
  const auto r50 = std::find_if(samples.begin(), samples.end(), [](const ThroughputSample& m) {
    return m.model_id == "resnet50" && m.precision == Precision::fp16 && m.batch == 256 && m.layout == TensorLayout::nchw;
  });
  ASSERT_NE(r50, samples.end());
  const Seconds extra = step(*r50, TensorLayout::nchw) - step(*r50, TensorLayout::nhwc);
  std::printf("H200 ResNet-50 fp16 b256: NCHW over NHWC %.2f ms predicted, 39.64 ms profiled (transposes and batch norm)\n",
              1e3 * in_seconds(extra));
  EXPECT_NEAR(in_seconds(extra), 39.635e-3, 0.15 * 39.635e-3);
}

// The same steps on an H100 SXM (tests/data/h100-pytorch/README.md: same software, same script), plus the
// vision networks in channels_last and strict fp32, none of them used to set a parameter either.
TEST(H100Measured, PyTorchStepsBesideThePredictions) {
  const MeasuredErrors e = compare_measured_steps(measured_steps("h100-pytorch/training-steps.csv"), "dgx-h100", "H100");
  ASSERT_EQ(e.rows, 34);
  EXPECT_LE(e.gemm_only / e.gemm_rows, 0.15);
  EXPECT_LE(e.all / e.rows, 0.15);  // 13.3 % (15.3 % before K6's fp32 convolutions on Hopper)
}

// Eqs. K18-K20 on the channels_last image steps measured on the H100 and the H200 (plain eager PyTorch: the
// kernels models/frameworks/pytorch-dle.yaml describes, nothing fused), predicted as the shipped fit has them and as
// that file runs them: memory-bound kernels streaming at copy_efficiency (K18). No parameter was set from these
// rows: copy_efficiency is the H200's device copy. The last column adds the host's issue floor (K20) with eager
// PyTorch's measured issue cost, 16.4 us a kernel (small-batch-steps.csv: ResNet-50 fp16 channels_last at batch 1,
// 14.25 ms for kernels.txt's 870 kernels), each kernel then costing the GPU the 2.1 us gap between kernels of the
// H100's BERT-large profile (kernels.txt: a 95.07 ms step, 89.37 ms of kernels, 2,699 of them) instead of the
// fitted 22.5 us: far too fast, which is why no shipped file sets it.
TEST(TunedStacks, ChannelsLastStepsAsTheirKernelsRun) {
  const KernelExecution dle = load_strategy(resolve(DataKind::framework, "pytorch-dle", "--framework")).execution;
  ASSERT_TRUE(dle.streaming);
  KernelExecution floor = dle;
  floor.host_issue = microseconds(14.25e3 / 870);
  floor.launch_gap = microseconds((95.068 - 89.37) * 1e3 / 2699);
  const auto convolutional = [](const ThroughputSample& m) {
    return std::any_of(m.network->layers.begin(), m.network->layers.end(),
                       [](const Layer& l) { return l.kind == LayerKind::conv; });
  };
  double before = 0, after = 0, with_floor = 0, resnet_before = 0, resnet_after = 0;
  int rows = 0, resnet_rows = 0;
  for (const char* file : {"h100-pytorch/training-steps.csv", "h200-pytorch/training-steps.csv"}) {
    for (const ThroughputSample& m : measured_steps(file)) {
      if (m.layout != TensorLayout::nhwc || !convolutional(m)) continue;
      const auto error = [&](const KernelExecution& x) {
        return m.batch / in_seconds(measured_step(m, "dgx-h100", {}, x)) / m.samples_per_s - 1.0;
      };
      const double b = error({}), a = error(dle), f = error(floor);
      std::printf(
          "channels_last %-9s %-13s %-4s batch %4d: measured %8.1f/s, shipped %+6.1f %%, streaming (pytorch-dle) %+6.1f %%, "
          "with the issue floor %+6.1f %%\n",
          m.gpu_id.c_str(), m.model_id.c_str(), std::string(to_string(m.precision)).c_str(), m.batch, m.samples_per_s, 100 * b,
          100 * a, 100 * f);
      before += std::abs(b);
      after += std::abs(a);
      with_floor += std::abs(f);
      ++rows;
      if (m.model_id == "resnet50") {
        resnet_before += std::abs(b);
        resnet_after += std::abs(a);
        ++resnet_rows;
      }
    }
  }
  ASSERT_EQ(rows, 11);  // the H100's 10 channels_last image rows and the H200's ResNet-50
  std::printf(
      "channels_last image steps, %d rows: mean absolute error %.1f %% shipped, %.1f %% streaming (ResNet-50's %d: "
      "%.1f -> %.1f %%), %.1f %% with the issue floor\n",
      rows, 100 * before / rows, 100 * after / rows, resnet_rows, 100 * resnet_before / resnet_rows,
      100 * resnet_after / resnet_rows, 100 * with_floor / rows);
  EXPECT_LT(after, before);
  // Where it stands (7.9 %; 15.1 % before K22 timed AlexNet's first convolution and K23 the pools, 11.0 % before K12
  // counted cuDNN's batch norm as the one kernel each way it runs). ResNet-50's rows: 10.7 % before K23, 12.1 % with
  // it (its max pool costs the 2.97 ms it measured 2.70, streamed 0.78 ms), 8.2 % with the batch norm's kernels.
  EXPECT_LE(after / rows, 0.09);
  EXPECT_LE(resnet_after / resnet_rows, 0.09);       // 8.2 %, from 35.3 % as shipped
  EXPECT_GT(with_floor / rows, 1.5 * after / rows);  // the floor without a refit (19.1 %): why no shipped file sets it
}

// The H200 is the H100 SXM's chip with 1.43x its memory bandwidth (4.8 against 3.35 TB/s; same 132 SMs and
// boost clock): what one gains over the other says how much of a step waits on memory. Measured on both
// with the same software (tests/data/h1*0-pytorch/training-steps.csv), set against the model's ratio for
// the same rows. Batch norm on NCHW activations gains almost nothing on the H200 (eq. K12: cuDNN's
// per-channel kernels, and PyTorch's own in bf16, run at a rate per SM, not at memory speed): without K12
// the model gave ResNet-50 in NCHW fp16 and bf16 1.32x on the H200, where 1.13x and 1.09x were measured.
TEST(H100AndH200, WhatTheH200sBandwidthGains) {
  const std::vector<ThroughputSample> h100 = measured_steps("h100-pytorch/training-steps.csv");
  const std::vector<ThroughputSample> h200 = measured_steps("h200-pytorch/training-steps.csv");
  double sum = 0;
  int rows = 0;
  for (const ThroughputSample& b : h200) {
    const auto a = std::find_if(h100.begin(), h100.end(), [&](const ThroughputSample& m) {
      return m.model_id == b.model_id && m.precision == b.precision && m.batch == b.batch && m.layout == b.layout &&
          m.attention == b.attention;
    });
    if (a == h100.end()) continue;
    const double measured = b.samples_per_s / a->samples_per_s;
    const double predicted = in_seconds(measured_step(*a, "dgx-h100")) / in_seconds(measured_step(b, "dgx-h100"));
    const double e = predicted / measured - 1.0;
    std::printf("H200/H100 %-16s %-4s batch %4d %-4s %-5s measured %.3f predicted %.3f (%+.1f %%)\n", b.model_id.c_str(),
                std::string(to_string(b.precision)).c_str(), b.batch, std::string(to_string(b.layout)).c_str(),
                std::string(to_string(b.attention)).c_str(), measured, predicted, 100 * e);
    if (b.model_id == "resnet50" && b.layout == TensorLayout::nchw && is_mixed(b.precision)) {
      EXPECT_NEAR(predicted, measured, 0.06 * measured) << to_string(b.precision);  // K12
    }
    sum += std::abs(e);
    ++rows;
  }
  ASSERT_GE(rows, 20);
  std::printf("H200/H100 ratios, %d rows: mean absolute error %.1f %%\n", rows, 100 * sum / rows);
  EXPECT_LE(sum / rows, 0.06);
}

// The memory of those runs' BERT steps (peak_allocated_bytes, torch.cuda.max_memory_allocated) beside the
// model's per-GPU figure (its 1 GB reserve included) for the same step: PyTorch DDP's autocast, AdamW, the
// row's attention kernel. Half precision within 10 % either way; TF32 and fp32 within +20 % (the model
// still keeps about 0.1 GB a sequence more there, docs/compute-model.md, "Memory").
TEST(MeasuredMemory, BertStepsOnTheH100AndTheH200) {
  int rows = 0;
  for (const char* file : {"h100-pytorch/training-steps.csv", "h200-pytorch/training-steps.csv"}) {
    std::ifstream in(std::string(DLSCALE_TEST_DATA_DIR) + "/" + file);
    ASSERT_TRUE(in) << file;
    std::string line;
    std::getline(in, line);
    std::vector<std::string> header;
    for (std::stringstream h(line); std::getline(h, line, ',');) header.push_back(line);
    const auto col = [&](const char* name) {
      return static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
    };
    const std::size_t c_model = col("model"), c_alloc = col("peak_allocated_bytes");
    ASSERT_LT(c_alloc, header.size()) << file;
    const std::vector<ThroughputSample> samples = measured_steps(file);
    std::size_t i = 0;
    while (std::getline(in, line)) {
      std::vector<std::string> cells;
      for (std::stringstream c(line); std::getline(c, line, ',');) cells.push_back(line);
      ASSERT_LT(i, samples.size());
      const ThroughputSample& m = samples[i++];
      if (cells[c_model].rfind("bert", 0) != 0) continue;
      ASSERT_EQ(m.model_id, cells[c_model]) << file << " row " << i;
      Scenario sc = measured_scenario(m, "dgx-h100");
      sc.strategy.attention = m.attention;
      const double predicted = in_bytes(Predictor(std::move(sc)).predict(1).memory.per_gpu);
      const double measured = std::stod(cells[c_alloc]);
      const double e = predicted / measured - 1.0;
      std::printf("%s %-16s %-4s %-5s predicted %5.1f GB, allocated %5.1f GB (%+.1f %%)\n", file, m.model_id.c_str(),
                  std::string(to_string(m.precision)).c_str(), std::string(to_string(m.attention)).c_str(), predicted / 1e9,
                  measured / 1e9, 100 * e);
      if (is_mixed(m.precision)) {
        EXPECT_LE(std::abs(e), 0.10) << file << " " << m.model_id;
      } else {
        EXPECT_GE(e, -0.10) << file << " " << m.model_id;
        EXPECT_LE(e, 0.20) << file << " " << m.model_id;
      }
      ++rows;
    }
  }
  EXPECT_EQ(rows, 15);  // 8 on the H100, 7 on the H200
}

// Eq. K13 against the H100 profile of VGG-16 (kernels.txt, "vgg16 fp16 b128 nhwc"): PyTorch added its 13
// convolutions' biases in 13 broadcast additions of 5.112 ms and summed their gradients (and the 3 linear
// layers' tiny ones) in 16 reductions of 2.421 ms; the model's bias passes for the same step, at the fitted
// memory-bound efficiency and kernel overhead, within 20 % of the 7.533 ms.
TEST(H100Measured, ConvolutionBiasesBesideTheProfile) {
  const Network vgg = zoo("vgg16");
  ComputeOptions o;
  o.precision = Precision::fp16;
  const GpuSpec h100 = find_gpu("h100-sxm");
  Seconds bias{};
  int kernels = 0;
  for (std::size_t i = 0; i < vgg.layers.size(); ++i)
    for (const KernelTiming& k : layer_kernels(vgg.layers[i], i == 0, i + 1 == vgg.layers.size(), h100, 128, o))
      if (k.name.find(" bias ") != std::string::npos) {
        bias += k.time;
        ++kernels;
      }
  EXPECT_EQ(kernels, 26);  // a forward addition and a backward reduction for each of the 13 convolutions
  std::printf("H100 VGG-16 fp16 b128: convolution biases %.2f ms predicted, 7.53 ms profiled\n", 1e3 * in_seconds(bias));
  EXPECT_NEAR(in_seconds(bias), 7.533e-3, 0.2 * 7.533e-3);
}

// The same H100's batch-1 and batch-8 steps (tests/data/h100-pytorch/small-batch-steps.csv), where the host's
// kernel launches, not the GPU, set the pace: 14.2 ms for ResNet-50 at batch 1 and at batch 8 alike. PyTorch
// issued them at 16-22 us a kernel (14.25 ms / 870 kernels, 26.16 / 1,484, 4.85 / 300, kernels.txt's counts),
// and the fitted kernel_overhead (22 us) stands for that, charged to each kernel the model counts. Until the
// optimiser's implementation was modelled (torch.optim's foreach, which these runs used), the model also charged
// one optimiser launch per layer (161 in ResNet-50, 3.6 ms), where foreach makes a launch per pass over up to 48
// tensors (about 10 in ResNet-50): ResNet-50 and Inception-v3 at batch 1 came within 5 % then and come 12 and
// 16 % fast now, VGG-16 -13 % then and -17 % now (its foreach passes over 138 M parameters). Held within 20 %:
// what is missing is the host's issue as a floor of its own, max(GPU, host), with the kernels PyTorch really
// issues (issue 34), not a per-kernel charge added to the GPU's time. The image rows keep no floor (pytorch-ddp's,
// K20, binds on transformers' BERT only: these networks' code issues 1.55-2.08 kernels per model kernel, not BERT's
// 3.0), so they are as before. BERT's rows are printed, not held: pytorch-ddp's floor is the H200 machine's host
// (26.4 us an issued kernel), where this H100's host issued BERT-large's 2,699 kernels at batch 1 in 50.25 ms, 18.6 us
// a kernel: BERT-base -40.8 % and BERT-large -35.4 % (+53.2 and +50.2 % without the floor); the model has no key for
// the host CPU.
TEST(H100Measured, SmallBatchStepsBoundByTheHost) {
  const auto samples = measured_steps("h100-pytorch/small-batch-steps.csv");
  ASSERT_EQ(samples.size(), 7u);
  const MeasuredErrors e = compare_measured_steps(samples, "dgx-h100", "H100 small batch");
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const auto& m = samples[i];
    if (m.batch != 1 || (m.model_id != "resnet50" && m.model_id != "inception-v3" && m.model_id != "vgg16")) continue;
    EXPECT_NEAR(e.ratio[i], 1.0, 0.20) << m.model_id;
  }
}

// BERT-large SQuAD fine-tuning at 2, 4 and 8 sequences on an H200 (tests/data/h200-pytorch/small-batch-steps.csv,
// issue 34): 66.7, 72.1 and 72.1 ms a step, a floor the host's kernel issue sets. The model's GPU time is 31.4, 34.6
// and 41.7 ms (+112, +108, +73 % too fast before pytorch-ddp's floor); with eq. K20 as pytorch-ddp sets it (measured on
// these rows: 26.4 us an issued kernel, 3.0 issued per forward or backward kernel the model counts) the forward and
// backward are bound by the host, (345 + 493) x 3.0 x 26.4 us = 66.4 ms, the update by the GPU (AdamW's 145 launches
// take the host 3.8 ms, the GPU 8.0): 74.4 ms at each batch, -10.4, -3.1 and -3.0 % (the rows' spread, 66.7-72.1 ms, is
// this VM host's noise). Held within 12 %, and the step at least its forward and backward floor; and the data's own
// claim, the floor: batch 8 costs no more than 10 % over batch 2.
TEST(H200Measured, SmallBatchBertStepsBoundByTheHost) {
  const auto samples = measured_steps("h200-pytorch/small-batch-steps.csv");
  ASSERT_EQ(samples.size(), 3u);
  const MeasuredErrors e = compare_measured_steps(samples, "dgx-h100", "H200 small batch");
  for (std::size_t i = 0; i < samples.size(); ++i) EXPECT_NEAR(e.ratio[i], 1.0, 0.12) << samples[i].batch;
  const double floor_ms = 838 * 3.0 * 26.4e-3;  // forward and backward: the model's 838 kernels x 3.0 x 26.4 us
  for (const ThroughputSample& m : samples) EXPECT_GE(1e3 * in_seconds(measured_step(m, "dgx-h100")), floor_ms);
  EXPECT_LT(samples[2].batch / samples[2].samples_per_s, 1.10 * samples[0].batch / samples[0].samples_per_s);
}

// cuBLAS on the same H100 (tests/data/h100-pytorch/calibrate-gemm.yaml: dlscale-calibrate's sweep of square
// products, 1024 to 8192, fp32, TF32, fp16, bf16) beside the kernel model's plan of each with the shipped
// parameters. A back-to-back cuBLAS call pays none of the 22 us a kernel that the fitted overhead charges
// for the framework's issue (it overlaps the GPU's work there), so the plan's device time, max(compute,
// memory) of eq. K4, is what is compared. The products of 4096 and 8192 (0.17 to 21 ms) come within 5 %
// (held at 10 %; with the 22 us charged, bf16 4096 was -15 %); the 1024 ones take 8-58 us and are predicted
// 2x too fast without the charge (fp16: 605 against 272 TFLOP/s) and 3x too slow with it (84): a short
// kernel's own start-up and tail, between the two, is not modelled (printed, not held).
TEST(H100Measured, CublasGemmsBesideTheKernelModel) {
  const Calibration cal = load_calibration(std::filesystem::path(DLSCALE_TEST_DATA_DIR) / "h100-pytorch" / "calibrate-gemm.yaml");
  const GpuSpec gpu = find_gpu("h100-sxm");
  const KernelParams& kp = shipped_kernel_params()->for_architecture(gpu.architecture);
  ASSERT_EQ(cal.gemm.size(), 16u);
  for (const auto& g : cal.gemm) {
    const GemmPlan plan = plan_gemm(GemmShape{g.m, g.n, g.k}, gpu, precision_from_string(g.precision), kp);
    const double ratio = in_seconds(g.time) / in_seconds(max(plan.compute, plan.memory));  // predicted rate over measured
    std::printf("H100 cuBLAS %-4s %5lld^3: measured %6.1f TFLOP/s, model %6.1f (%+.1f %%)\n", g.precision.c_str(),
                static_cast<long long>(g.m), in_teraflops_per_second(g.rate), in_teraflops_per_second(g.rate) * ratio,
                100 * (ratio - 1));
    if (g.m >= 4096) {
      EXPECT_NEAR(ratio, 1.0, 0.10) << g.precision << " " << g.m;
    }
  }
}

// `calibrate fit --memory-format nchw`: rows without a memory_format take the option's layout, rows that
// name one keep it (the H100 file's channels_last rows stay nhwc; its BERT rows leave the cell empty).
TEST(Fit, RowsWithoutAMemoryFormatTakeTheOptionsLayout) {
  MeasurementOptions o;
  o.fp32_means_tf32 = false;
  o.layout = TensorLayout::nchw;
  int nchw = 0, nhwc = 0;
  for (const auto& s : read_throughput_csv(std::string(DLSCALE_TEST_DATA_DIR) + "/h100-pytorch/training-steps.csv", o))
    ++(s.layout == TensorLayout::nchw ? nchw : nhwc);
  EXPECT_EQ(nhwc, 10);  // the channels_last rows of the file
  EXPECT_EQ(nchw, 24);  // 13 written nchw, 11 without convolutions and an empty cell
  o.layout = TensorLayout::nhwc;
  nchw = 0;
  for (const auto& s : read_throughput_csv(std::string(DLSCALE_TEST_DATA_DIR) + "/h100-pytorch/training-steps.csv", o))
    nchw += s.layout == TensorLayout::nchw;
  EXPECT_EQ(nchw, 13);
}

// `calibrate fit --framework`: the rows' steps are the ones predict makes for that framework (step_compute),
// so a fit of Table V's runs sees CNTK's FFT and missing LRN and Caffe-MPI's 8 MiB workspace. Each row's
// predicted throughput is its batch over the predictor's forward + backward + update on the P40 for that
// framework; with no framework, GoogLeNet keeps its LRN and AlexNet takes FFT (the default policy).
TEST(Fit, AFrameworksRowsAreTimedAsPredictTimesItsStep) {
  const auto dir = std::filesystem::temp_directory_path() / "dlscale-fit-framework";
  std::filesystem::create_directories(dir);
  const auto csv = dir / "t5.csv";
  std::ofstream(csv) << "gpu,gpus,precision,model,batch_per_gpu,samples_per_s\n"
                        "p40-base-clock,1,fp32,googlenet,128,420\np40-base-clock,1,fp32,alexnet,1024,1700\n";
  auto step = [](const char* model, const char* framework, int batch) {
    const auto b = Predictor(p40_scenario(model, framework, batch)).predict(1).breakdown;
    return batch / in_seconds(b.forward + b.backward + b.update);
  };
  for (const char* framework : {"cntk", "caffe-mpi"}) {
    MeasurementOptions o;
    o.take_framework(load_strategy(resolve(DataKind::framework, framework, "--framework")));
    const auto rows = read_throughput_csv(csv, o);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_NEAR(predicted_throughput(rows[0], *shipped_kernel_params()), step("googlenet", framework, 128), 1e-6) << framework;
    EXPECT_NEAR(predicted_throughput(rows[1], *shipped_kernel_params()), step("alexnet", framework, 1024), 1e-6) << framework;
  }
  const auto plain = read_throughput_csv(csv, MeasurementOptions{});
  EXPECT_LT(predicted_throughput(plain[0], *shipped_kernel_params()), step("googlenet", "cntk", 128));      // its LRN
  EXPECT_GT(predicted_throughput(plain[1], *shipped_kernel_params()), step("alexnet", "caffe-mpi", 1024));  // FFT
  std::filesystem::remove_all(dir);
}

TEST(MemoryFit, TheCasesThatDecideWhetherAStepRuns) {
  ComputeOptions adam;
  adam.optimizer = Optimizer::adamw;
  // Llama-2-7B with DDP and AdamW on one 80 GB H100, even at batch 1 in bf16: 6.74 G parameters × (4 fp32 weight + 4
  // fp32 gradient (PyTorch's native AMP) + 8 Adam) B, and autocast's 2 B copy of every product's weight (eq. M4b: not
  // the embedding's 32,000 × 4,096 nor the 65 norms' 4,096) = 121 GB before any activation.
  adam.precision = Precision::bf16;
  adam.fp32_gradients = true;
  const auto llama = check_memory_fit(zoo("llama2-7b"), find_gpu("h100-sxm"), 1, adam);
  EXPECT_FALSE(llama.fits);
  EXPECT_NEAR(in_bytes(llama.need.weights + llama.need.gradients + llama.need.optimizer_state),
              6'738'415'616.0 * 18 - 2.0 * (32'000 * 4'096 + 65 * 4'096), 1e3);
  EXPECT_NEAR(in_bytes(llama.need.gradients), 6'738'415'616.0 * 4, 1e3);
  adam.fp32_gradients = false;  // half-precision gradients of a half working copy (apex O2, DeepSpeed): 2 B
  EXPECT_NEAR(in_bytes(check_memory_fit(zoo("llama2-7b"), find_gpu("h100-sxm"), 1, adam).need.gradients), 6'738'415'616.0 * 2,
              1e3);
  // BERT-base (sequence 128) at batch 32 in fp32 fits a 16 GB V100.
  adam.precision = Precision::fp32;
  EXPECT_TRUE(check_memory_fit(zoo("bert-base"), find_gpu("v100-sxm2-16gb"), 32, adam).fits);
  // BERT-large SQuAD (sequence 384) at batch 16 in fp32 does not (Lambda ran it at 8 on that GPU).
  EXPECT_FALSE(check_memory_fit(zoo("bert-large-squad"), find_gpu("v100-sxm2-16gb"), 16, adam).fits);
  EXPECT_TRUE(check_memory_fit(zoo("bert-large-squad"), find_gpu("v100-sxm2-16gb"), 8, adam).fits);
}

TEST(MemoryFit, EveryLambdaBatchFitsItsGpu) {
  // Each published single-GPU batch ran, so none may be flagged.
  for (const auto& s : lambda()) {
    ComputeOptions o;
    o.precision = s.precision;
    o.optimizer = s.optimizer;
    EXPECT_TRUE(check_memory_fit(*s.network, s.gpu, s.batch, o).fits) << s.gpu_id << " " << s.model_id << " batch " << s.batch;
  }
}

}  // namespace
}  // namespace dlscale
