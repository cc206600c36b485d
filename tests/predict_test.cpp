// The closed-form combiner on small scenarios whose answers are worked by hand, and on the paper's
// CNTK/AlexNet worked example.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "dlscale/equations.hpp"

#include "dlscale/error.hpp"
#include "dlscale/io.hpp"
#include "dlscale/predict.hpp"
#include "support/three_layer.hpp"

#include "support/one_gbps.hpp"
#include "support/p40.hpp"

namespace dlscale {
namespace {

using test::OneGBps;  // tests/support/one_gbps.hpp

// The three-layer scenario of tests/support/three_layer.hpp with the given strategy and the 1 GB/s
// collective model above: comm c = (0.05, 0.25, 0.30) s; t_io,4 = 4 × 0.1 = 0.4 s.
Scenario hand_scenario(Strategy strategy) {
  Scenario sc = test::three_layer_scenario();
  sc.strategy = std::move(strategy);
  sc.collectives = std::make_shared<OneGBps>();
  return sc;
}

Strategy layerwise_after() {
  Strategy s;
  s.name = "layerwise-after";
  s.io_prefetch = true;
  s.overlap = Overlap::layerwise;
  s.update = UpdatePlacement::after_aggregation;
  return s;
}

TEST(Predictor, LayerwiseOverlapWithUpdateAfterAggregation) {
  const Predictor p(hand_scenario(layerwise_after()));
  // t_iter(1) = max(0.01 + 0.3 + 0.6 + 0.06, 0.1) = 0.97 (eq. 4, no communication)
  const auto one = p.predict(1);
  EXPECT_NEAR(in_seconds(one.iteration_time), 0.97, 1e-12);
  EXPECT_DOUBLE_EQ(one.speedup, 1.0);
  // 4 GPUs: done(1): layer 3 ready 0.1 → 0.4; layer 2 ready 0.3 → 0.65; layer 1 ready 0.6 → 0.70.
  // t_iter = 0.01 + 0.3 + 0.70 + 0.06 = 1.07, t_io,4 = 0.4 hidden.
  const auto four = p.predict(4);
  EXPECT_NEAR(in_seconds(four.iteration_time), 1.07, 1e-12);
  EXPECT_NEAR(four.speedup, 4 * 0.97 / 1.07, 1e-12);
  EXPECT_NEAR(four.efficiency, 0.97 / 1.07, 1e-12);
  EXPECT_NEAR(four.throughput_samples_per_s, 40 / 1.07, 1e-9);
  EXPECT_EQ(four.hiding_case, 2);  // c3 = 0.3 > b2 = 0.2 → C = 3
  EXPECT_EQ(four.boundary_layer, 3);
  EXPECT_NEAR(in_seconds(four.breakdown.comm), 0.6, 1e-12);
  EXPECT_NEAR(in_seconds(four.breakdown.comm_exposed), 0.1, 1e-12);  // 0.70 − 0.6
  EXPECT_NEAR(in_seconds(four.breakdown.io), 0.4, 1e-12);
  EXPECT_NEAR(in_seconds(four.breakdown.h2d), 0.01, 1e-12);
  EXPECT_EQ(four.bottleneck, Bottleneck::compute);  // f + b = 0.9 is the largest part
}

TEST(Predictor, PerLayerUpdateExposesOnlyTheFirstLayersUpdate) {
  Strategy s = layerwise_after();
  s.update = UpdatePlacement::per_layer;
  const Predictor p(hand_scenario(s));
  // 0.01 + 0.3 + 0.70 + u1 = 0.01 → 1.02; one GPU: 0.01 + 0.3 + 0.6 + 0.01 = 0.92
  EXPECT_NEAR(in_seconds(p.predict(4).iteration_time), 1.02, 1e-12);
  EXPECT_NEAR(in_seconds(p.predict(1).iteration_time), 0.92, 1e-12);
}

TEST(Predictor, NoOverlapAndNoPrefetchAddsEverything) {
  Strategy s = layerwise_after();
  s.overlap = Overlap::none;
  s.io_prefetch = false;
  const Predictor p(hand_scenario(s));
  // eq. 2: 0.4 + 0.01 + 0.3 + 0.6 + 0.06 + 0.6 = 1.97; one GPU: 0.1 + 0.97 = 1.07
  const auto four = p.predict(4);
  EXPECT_NEAR(in_seconds(four.iteration_time), 1.97, 1e-12);
  EXPECT_NEAR(four.speedup, 4 * 1.07 / 1.97, 1e-12);
  EXPECT_EQ(four.hiding_case, 0);
  EXPECT_NEAR(in_seconds(four.breakdown.comm_exposed), 0.6, 1e-12);
  EXPECT_EQ(four.bottleneck, Bottleneck::compute);  // 0.9 > comm 0.6 > io 0.4
}

TEST(Predictor, PrefetchedIoBoundsTheIterationWhenReadersAreSlower) {
  Scenario sc = hand_scenario(layerwise_after());
  sc.cluster.page_cache = megabytes_per_second(10);  // t_io,4 = 4 × 10 MB / 10 MB/s = 4 s
  const Predictor p(std::move(sc));
  const auto four = p.predict(4);
  EXPECT_NEAR(in_seconds(four.iteration_time), 4.0, 1e-12);
  EXPECT_EQ(four.bottleneck, Bottleneck::io);
  // one GPU: max(0.97, 1.0) = 1.0 → speedup 4 × 1.0 / 4.0 = 1
  EXPECT_NEAR(four.speedup, 1.0, 1e-12);
}

// Synchronization losses: f + b = 0.9 s per GPU, cv 10 % → σ = 0.09 s; 4 GPUs wait E[max of 4] σ =
// 1.0294 × 0.09 = 0.092646 s (Harter's table) and pay the 5 ms overhead: 1.07 + 0.092646 + 0.005.
TEST(Predictor, JitterAndOverheadLengthenOnlyMultiGpuIterations) {
  Strategy s = layerwise_after();
  s.jitter_cv = 0.1;
  s.iteration_overhead = milliseconds(5);
  const Predictor p(hand_scenario(s));
  const auto one = p.predict(1);
  EXPECT_NEAR(in_seconds(one.iteration_time), 0.97, 1e-12);  // nobody to wait for, nothing to negotiate
  EXPECT_EQ(one.breakdown.sync_wait, Seconds{});
  EXPECT_EQ(one.breakdown.overhead, Seconds{});
  const auto four = p.predict(4);
  EXPECT_NEAR(in_seconds(four.breakdown.sync_wait), 0.092646, 5e-6);
  EXPECT_NEAR(in_seconds(four.breakdown.overhead), 0.005, 1e-12);
  EXPECT_NEAR(in_seconds(four.iteration_time), 1.07 + 0.092646 + 0.005, 5e-6);
  EXPECT_NEAR(four.speedup, 4 * 0.97 / in_seconds(four.iteration_time), 1e-12);
}

// The loss sits on the GPU side: readers slower than the GPUs still hide it (eq. 4).
TEST(Predictor, JitterHidesBehindSlowerPrefetchingReaders) {
  Strategy s = layerwise_after();
  s.jitter_cv = 0.1;
  Scenario sc = hand_scenario(s);
  sc.cluster.page_cache = megabytes_per_second(10);  // t_io,4 = 4 s > 1.16 s
  const auto four = Predictor(std::move(sc)).predict(4);
  EXPECT_NEAR(in_seconds(four.iteration_time), 4.0, 1e-12);
  EXPECT_GT(four.breakdown.sync_wait, Seconds{});
}

TEST(StrategyFile, ReadsJitterAndOverhead) {
  const Strategy s = parse_strategy(
      "name: x\nio: {prefetch: true, memory: pinned}\naggregation: allreduce\noverlap: layerwise\n"
      "update: after_aggregation\njitter_cv: 0.02\niteration_overhead: \"0.5 ms\"\n",
      "x.yaml");
  EXPECT_DOUBLE_EQ(s.jitter_cv, 0.02);
  EXPECT_NEAR(in_seconds(s.iteration_overhead), 0.0005, 1e-15);
}

TEST(StrategyFile, ReadsTheGradientPrecisionOfMixedPrecision) {
  const std::string head =
      "name: x\nio: {prefetch: true, memory: pinned}\naggregation: allreduce\noverlap: layerwise\n"
      "update: after_aggregation\n";
  EXPECT_FALSE(parse_strategy(head, "x.yaml").fp32_gradients);
  EXPECT_TRUE(parse_strategy(head + "mixed_precision: {gradients: fp32}\n", "x.yaml").fp32_gradients);
  EXPECT_FALSE(parse_strategy(head + "mixed_precision: {gradients: half}\n", "x.yaml").fp32_gradients);
}

// PyTorch's native AMP keeps fp32 parameters, so DDP all-reduces fp32 gradients: in fp16 the three layers'
// exchange at 1 GB/s is the fp32 one, 0.05 + 0.25 + 0.30 = 0.6 s, and half of it with half-precision gradients.
TEST(Predictor, NativeAmpExchangesFp32Gradients) {
  auto comm = [](Precision p, bool fp32_gradients) {
    Scenario sc = hand_scenario(layerwise_after());
    sc.strategy.fp32_gradients = fp32_gradients;
    sc.compute.precision = p;
    return in_seconds(Predictor(std::move(sc)).predict(4).breakdown.comm);
  };
  EXPECT_NEAR(comm(Precision::fp32, false), 0.6, 1e-12);
  EXPECT_NEAR(comm(Precision::fp16, true), 0.6, 1e-12);
  EXPECT_NEAR(comm(Precision::fp16, false), 0.3, 1e-12);
  EXPECT_NEAR(comm(Precision::fp32, true), 0.6, 1e-12);  // no effect in fp32
}

TEST(Predictor, BucketsFollowPyTorchsAssignmentFromTheOutputSide) {
  Strategy s = layerwise_after();
  s.overlap = Overlap::bucketed;
  s.first_bucket = gigabytes(0.5);
  s.bucket_size = gigabytes(1);
  const Predictor p(hand_scenario(s));
  // Output side first: layer 3 (0.30 GB) < 0.5 GB stays open; + layer 2 (0.55 GB) ≥ 0.5 → bucket {3,2}
  // with backward 0.1 + 0.2 = 0.3 s and comm 0.55 s; layer 1 alone: backward 0.3, comm 0.05.
  // done: bucket {3,2} ready 0.3 → 0.85; bucket {1} ready 0.6 → max(0.85, 0.6) + 0.05 = 0.90.
  // t_iter = 0.01 + 0.3 + 0.90 + 0.06 = 1.27
  EXPECT_NEAR(in_seconds(p.predict(4).iteration_time), 1.27, 1e-12);
}

TEST(Predictor, MeasuredCommunicationOverridesTheModelAndKeepsItsShape) {
  Scenario sc = hand_scenario(layerwise_after());
  Profile prof;
  prof.model = "three";
  prof.batch_per_gpu = 10;
  prof.single_gpu = PhaseTimes{seconds(0.1), seconds(0.01), seconds(0.3), seconds(0.6), seconds(0.06)};
  prof.measured[4].comm = seconds(1.2);  // twice the modelled 0.6 s → c = (0.1, 0.5, 0.6)
  sc.profile = prof;
  const Predictor p(std::move(sc));
  // done: layer 3 ready 0.1 → 0.7; layer 2 ready 0.3 → 1.2; layer 1 ready 0.6 → 1.3 → t = 0.01+0.3+1.3+0.06
  const auto four = p.predict(4);
  EXPECT_NEAR(in_seconds(four.iteration_time), 1.67, 1e-12);
  EXPECT_NEAR(in_seconds(four.breakdown.comm), 1.2, 1e-12);
  // The bottleneck (bottleneck.hpp): doubling the GPU halves the profile's phases, b = (0.15, 0.1, 0.05),
  // f = 0.15, u = 0.03, and keeps the measured c: done 0.05 + 0.6 = 0.65 → 1.15 → 1.25, t = 1.44 (+16.0 %).
  // Doubling the links drops the measured total (plan.hpp, with_links) for the model's c halved,
  // (0.025, 0.125, 0.15): done 0.1 + 0.15 = 0.25 → 0.425 → 0.625, t = 0.995 (+67.8 %). The links win; they
  // hold the exposed 1.3 − 0.6 = 0.7 s of the iteration (the larger phase, f + b = 0.9 s, gains less).
  EXPECT_EQ(four.bottleneck, Bottleneck::communication);
  EXPECT_NEAR(four.bottleneck_gain, 1.67 / 0.995 - 1.0, 1e-12);
  EXPECT_NEAR(four.bottleneck_share, 0.7 / 1.67, 1e-12);
  EXPECT_THAT(four.bottleneck_resource.str(), testing::HasSubstr("intra-node GPU links"));
  EXPECT_THAT(four.bottleneck_resource.str(), testing::HasSubstr("[measured]"));
}

TEST(Predictor, RejectsGpuCountsTheClusterCannotHold) {
  const Predictor p(hand_scenario(layerwise_after()));
  EXPECT_EQ(p.place(8).nodes, 2);
  EXPECT_EQ(p.place(3).nodes, 1);
  try {
    (void)p.predict(16);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "'gpus': cluster 'hand' holds at most 8 GPUs (2 nodes × 4), asked for 16");
  }
  try {
    (void)p.predict(6);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "'gpus': 6 GPUs do not fill whole nodes of 4 GPUs on cluster 'hand'");
  }
  try {
    (void)p.predict(0);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "'gpus': a GPU count must be at least 1, got 0");
  }
}

// The predictor folds the recurrence, the communication total and the hiding case into one pass;
// over random layer lists it must agree with the reference functions of equations.hpp.
TEST(Predictor, FusedPassAgreesWithTheReferenceEquations) {
  std::mt19937_64 rng(2018);
  std::uniform_int_distribution<int> layers(1, 80);
  std::uniform_real_distribution<double> t(1e-4, 2e-2), params(1e3, 2e7);
  for (int trial = 0; trial < 300; ++trial) {
    Scenario sc = hand_scenario(layerwise_after());
    const int L = layers(rng);
    sc.network.layers.resize(static_cast<std::size_t>(L), sc.network.layers.front());
    LayerTimes lt;
    std::vector<Seconds> c;
    for (int i = 0; i < L; ++i) {
      sc.network.layers[static_cast<std::size_t>(i)].params = static_cast<std::int64_t>(params(rng));
      lt.forward.push_back(seconds(t(rng)));
      lt.backward.push_back(seconds(t(rng)));
      lt.update.push_back(seconds(t(rng) / 10));
      c.push_back(Network::gradient_bytes(sc.network.layers[static_cast<std::size_t>(i)]) / gigabytes_per_second(1));
    }
    sc.measured_layers = lt;
    const Predictor p(std::move(sc));
    const auto four = p.predict(4);
    const Seconds expected =
        eq::iteration_exact_update_after(Seconds{}, seconds(0.01), lt.total_forward(), lt.backward, c, lt.total_update());
    EXPECT_NEAR(in_seconds(four.iteration_time), std::max(in_seconds(expected), 0.4), 1e-12);
    const auto h = eq::classify_hiding(lt.backward, c);
    EXPECT_EQ(four.hiding_case, h.which);
    EXPECT_EQ(four.boundary_layer, h.boundary);
  }
}

// Shi & Chu, Section VI-B, through the whole predictor with the shipped files.
TEST(Predictor, ReproducesTheCntkAlexNetWorkedExample) {
  Scenario sc = test::p40_scenario("alexnet", "cntk", 1024);
  sc.profile = load_profile(resolve(DataKind::profile, "worked-example-cntk-alexnet", "--profile"));
  sc.strategy.jitter_cv = 0.0;  // the paper's eq. 8 has no wait for the slowest GPU
  const Predictor p(std::move(sc));
  const int gpus[] = {1, 2, 4};
  const auto r = p.predict(gpus);
  EXPECT_DOUBLE_EQ(r[0].speedup, 1.0);
  EXPECT_NEAR(in_seconds(r[0].iteration_time), 0.7445, 1e-12);
  EXPECT_DOUBLE_EQ(std::round(r[1].speedup * 1000) / 1000, 1.478);
  EXPECT_DOUBLE_EQ(std::round(r[2].speedup * 100) / 100, 2.32);
  EXPECT_EQ(r[2].bottleneck, Bottleneck::io);  // t_io,4 = 0.72 s > t_f + t_b = 0.4602 s
}

}  // namespace
}  // namespace dlscale
