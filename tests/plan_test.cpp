// Capacity planning: time and cost to train, explain's critical path and resource doubling on a
// hand-built scenario (answers worked by hand in the comments), bucket advice, the target search, and
// sweeps (spec parsing, errors with file:line:col, determinism across thread counts, agreement with a
// plain loop over Predictor, ranking, golden CSV and explain text).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "dlscale/compute.hpp"
#include "dlscale/error.hpp"
#include "dlscale/format.hpp"
#include "dlscale/io.hpp"
#include "dlscale/plan.hpp"
#include "dlscale/predict.hpp"
#include "dlscale/sweep.hpp"
#include "dlscale/topology.hpp"
#include "plan/sweep_layer_times.hpp"
#include "support/run.hpp"
#include "support/table_json.hpp"
#include "support/three_layer.hpp"

namespace dlscale {
namespace {

using ::testing::HasSubstr;

// The three-layer scenario of predict_test.cpp, but on the α-β ring of the simple links (no custom
// collective model), so that doubling a link is visible:
//   backward b = (0.3, 0.2, 0.1) s, forward 0.1 s each, update u = (0.01, 0.02, 0.03) s;
//   gradients (12.5 M, 62.5 M, 75 M) × 4 B = (0.05, 0.25, 0.30) GB;
//   4 GPUs in one node, intra-node 1 GB/s, no latency: all-reduce = 2(n−1)/n · S/β = 1.5 · S / 1 GB/s
//   → c = (0.075, 0.375, 0.45) s; h2d = 10 MB / 1 GB/s = 0.01 s; t_io,4 = 4 · 10 MB / 100 MB/s = 0.4 s.
Scenario hand_scenario() { return test::three_layer_scenario(); }

// A shipped cluster, zoo network and framework file, as the command line names them.
Scenario shipped(const std::string& cluster, const std::string& model, const std::string& fw, int batch) {
  Scenario sc;
  sc.cluster = load_cluster(resolve(DataKind::cluster, cluster, "--cluster"));
  sc.network = load_network(resolve(DataKind::network, model, "--model"));
  sc.strategy = load_strategy(resolve(DataKind::framework, fw, "--framework"));
  sc.batch_per_gpu = batch;
  return sc;
}

// ---- time and cost ------------------------------------------------------------------------------------
TEST(TimeToTrain, ImageNetOnEightGpusByHand) {
  Prediction p;
  p.gpus = 8;
  p.batch_per_gpu = 32;
  p.iteration_time = seconds(0.5);
  p.throughput_samples_per_s = 8 * 32 / 0.5;  // 256 samples an iteration
  Cluster c;
  c.price_per_gpu_hour = 2.5;
  c.currency = "USD";
  const auto w = make_workload(
      [] {
        Network n;
        n.input_kind = "image";
        return n;
      }(),
      std::nullopt, std::nullopt);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->samples_per_epoch, 1'281'167);
  EXPECT_EQ(w->epochs, 90.0);
  const TrainingCost t = time_to_train(p, *w, c);
  // ⌈1,281,167 / 256⌉ = ⌈5004.56⌉ = 5005 iterations per epoch; × 90 = 450,450 iterations;
  // × 0.5 s = 225,225 s = 62.5625 h; × 8 GPUs = 500.5 GPU-hours; × 2.5 USD = 1251.25 USD.
  EXPECT_DOUBLE_EQ(t.iterations, 450'450.0);
  EXPECT_NEAR(in_seconds(t.wall_time), 225'225.0, 1e-6);
  EXPECT_NEAR(t.gpu_hours, 500.5, 1e-9);
  ASSERT_TRUE(t.cost.has_value());
  EXPECT_NEAR(*t.cost, 1251.25, 1e-9);
  EXPECT_EQ(t.currency, "USD");
  c.price_per_gpu_hour = 0;
  EXPECT_FALSE(time_to_train(p, *w, c).cost.has_value());
}

// An iteration trains what its throughput says, N_g·M·K with K accumulated passes: 8 GPUs × 32 × 4 = 1,024
// samples a step (issue 35: N_g·M alone counted 4 times the iterations).
TEST(TimeToTrain, AccumulatedPassesTrainMoreSamplesAnIteration) {
  Prediction p;
  p.gpus = 8;
  p.batch_per_gpu = 32;
  p.iteration_time = seconds(2.0);
  p.throughput_samples_per_s = 8 * 32 * 4 / 2.0;
  TrainingWorkload w;
  w.samples_per_epoch = 1'281'167;
  w.epochs = 90;
  const TrainingCost t = time_to_train(p, w, Cluster{});
  // ⌈1,281,167 / 1,024⌉ = ⌈1251.14⌉ = 1252 iterations an epoch; × 90 = 112,680; × 2 s = 225,360 s
  EXPECT_DOUBLE_EQ(t.iterations, 112'680.0);
  EXPECT_NEAR(in_seconds(t.wall_time), 225'360.0, 1e-6);
}

// A layout's step trains its global batch b·m·dp (the sweep's own column), not one sample per GPU: Llama-3-8B in
// TP 8 × DP 2 with 4 micro-batches of 1 on 16 GPUs trains 1 × 4 × 2 = 8 samples a step, so 1,000 samples take
// ⌈1000 / 8⌉ = 125 steps (issue 35: the 16 GPUs' "batch 1" made it ⌈1000 / 16⌉ = 63).
TEST(TimeToTrain, LayoutRowTrainsItsGlobalBatchAStep) {
  const auto dir = std::filesystem::temp_directory_path() / ("dlscale-ttt-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto spec = dir / "spec.yaml";
  std::ofstream(spec) << "dataset: {samples: 1000, epochs: 1}\n"
                         "grid:\n"
                         "  cluster: {name: dgx-h100-ndr, nodes: 2}\n"
                         "  model: llama3-8b\n"
                         "  framework: megatron-core\n"
                         "  gpus: [16]\n"
                         "  precision: bf16\n"
                         "  layout: [{tp: 8, sp: true, micro_batches: 4}]\n";
  const auto r = test::run_cli("sweep --spec " + spec.string() + " --format jsonl");
  std::filesystem::remove_all(dir);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto row = nlohmann::json::parse(r.out.substr(0, r.out.find('\n')));
  ASSERT_EQ(row["global_batch"].get<double>(), 8.0);
  const double steps = std::ceil(1000.0 / 8.0);
  EXPECT_NEAR(row["train_hours"].get<double>(), steps * row["iteration_time_s"].get<double>() / 3600.0, 1e-9);
  EXPECT_NEAR(row["gpu_hours"].get<double>(), 16 * steps * row["iteration_time_s"].get<double>() / 3600.0, 1e-9);
}

TEST(TimeToTrain, TokenModelsNeedDatasetSamples) {
  Network bert;
  bert.input_kind = "tokens";
  EXPECT_FALSE(make_workload(bert, std::nullopt, std::nullopt).has_value());
  const auto w = make_workload(bert, 1000, std::nullopt);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->samples_per_epoch, 1000);
  EXPECT_EQ(w->epochs, 1.0);
  // the library names its parameters; the command line's --dataset-samples/--epochs are lib/cli's
  const auto key_of = [](auto f) {
    try {
      f();
    } catch (const InputError& e) {
      return e.key();
    }
    return std::string("(nothing thrown)");
  };
  EXPECT_EQ(key_of([&] { (void)make_workload(bert, 0, std::nullopt); }), "samples");
  EXPECT_EQ(key_of([&] { (void)make_workload(bert, 10, -1.0); }), "epochs");
}

std::string cluster_yaml(const std::string& price) {
  return "name: priced\nnodes: 2\ngpus_per_node: 4\ngpu: p40-base-clock\n"
         "host_to_gpu: {pinned: \"11.4 GB/s\"}\nintra_node: {bandwidth: \"6 GB/s\"}\n"
         "inter_node: {bandwidth: \"56 Gb/s\"}\nstorage: {disk: \"750 MiB/s\", page_cache: \"3.5 GiB/s\"}\n"
         "price_per_gpu_hour: " +
      price + "\n";
}

TEST(ClusterPrice, ParsesAmountAndCurrency) {
  const Cluster c = load_cluster(test::temp_file("priced.yaml", cluster_yaml("\"2.5 USD\"")));
  EXPECT_DOUBLE_EQ(c.price_per_gpu_hour, 2.5);
  EXPECT_EQ(c.currency, "USD");
}

TEST(ClusterPrice, BadPriceNamesFileLineAndKey) {
  const auto file = test::temp_file("badprice.yaml", cluster_yaml("\"2.5 dollars\""));
  try {
    (void)load_cluster(file);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("badprice.yaml:9:21"));
    EXPECT_THAT(std::string(e.what()), HasSubstr("price_per_gpu_hour"));
  }
}

// ---- explain ----------------------------------------------------------------------------------------
TEST(Explain, CriticalPathOfTheHandScenario) {
  const Scenario sc = hand_scenario();
  const Explanation e = explain(sc, 4, {});
  // done(1): layer 3 ready 0.1 → 0.1 + 0.45 = 0.55; layer 2 ready 0.3 → 0.55 + 0.375 = 0.925;
  // layer 1 ready 0.6 → 0.925 + 0.075 = 1.0. t_iter = 0.01 + 0.3 + 1.0 + 0.06 = 1.37 s.
  EXPECT_NEAR(in_seconds(e.prediction.iteration_time), 1.37, 1e-12);
  ASSERT_EQ(e.path.size(), 6u);
  const double want[] = {0.0 /*io hidden: 0.4 < 1.37*/, 0.01, 0.3, 0.6, 1.0 - 0.6 /*exposed*/, 0.06};
  double sum = 0;
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_NEAR(in_seconds(e.path[i].time), want[i], 1e-12) << e.path[i].name;
    sum += in_seconds(e.path[i].time);
  }
  EXPECT_NEAR(sum, 1.37, 1e-12);
}

TEST(Explain, DoublingEachResourceByHand) {
  const Explanation e = explain(hand_scenario(), 4, {});
  auto gain = [&](Resource r) {
    for (const auto& g : e.doubling)
      if (g.resource == r) return g.throughput_gain;
    ADD_FAILURE() << "no gain for " << to_string(r);
    return 0.0;
  };
  // GPU ×2: every layer time halves: b = (0.15, 0.1, 0.05), f = 0.15, u = 0.03; c unchanged.
  //   done: 0.05 + 0.45 = 0.5; max(0.5, 0.15) + 0.375 = 0.875; max(0.875, 0.3) + 0.075 = 0.95.
  //   t = 0.01 + 0.15 + 0.95 + 0.03 = 1.14 → gain 1.37 / 1.14 − 1.
  EXPECT_NEAR(gain(Resource::gpu), 1.37 / 1.14 - 1, 1e-12);
  // host-to-GPU ×2: h2d 0.005 → t = 1.365.
  EXPECT_NEAR(gain(Resource::host_to_gpu), 1.37 / 1.365 - 1, 1e-12);
  // intra-node ×2: c = (0.0375, 0.1875, 0.225): 0.1 + 0.225 = 0.325; max(0.325, 0.3) + 0.1875 = 0.5125;
  //   max(0.5125, 0.6) + 0.0375 = 0.6375 → t = 0.01 + 0.3 + 0.6375 + 0.06 = 1.0075.
  EXPECT_NEAR(gain(Resource::intra_node), 1.37 / 1.0075 - 1, 1e-12);
  // one node: the network is not on the path; storage: t_io = 0.4 s is hidden already.
  EXPECT_NEAR(gain(Resource::inter_node), 0.0, 1e-12);
  EXPECT_NEAR(gain(Resource::storage), 0.0, 1e-12);
}

// ---- the bottleneck: the resource whose doubling gains the most (bottleneck.hpp) ----------------------
// The hand scenario's gains (above): GPU 1.37/1.14 − 1 = 20.2 %, intra-node 1.37/1.0075 − 1 = 36.0 %, the
// rest less: communication over the intra-node links, whose exposed 0.4 s is 0.4/1.37 of the iteration.
TEST(Bottleneck, HandScenarioIsBoundByTheIntraNodeLinks) {
  const Prediction p = Predictor(hand_scenario()).predict(4);
  EXPECT_EQ(p.bottleneck, Bottleneck::communication);
  EXPECT_THAT(p.bottleneck_resource.str(), HasSubstr("intra-node GPU links"));
  EXPECT_NEAR(p.bottleneck_gain, 1.37 / 1.0075 - 1, 1e-12);
  EXPECT_NEAR(p.bottleneck_share, 0.4 / 1.37, 1e-12);
}

// The two cases of issue 35, where the largest phase named the wrong resource. Each doubling is predicted
// here again, apart from the Predictor's own (explain's path before issue 35: a new Predictor per doubled
// scenario); the bottleneck must be the largest of those gains, and its share the exposed communication.
struct IssueCase {
  const char* cluster;
  int nodes;
  const char* fabric;
  const char* model;
  Precision precision;
  Resource expected;
};
class BottleneckCase : public ::testing::TestWithParam<IssueCase> {};

TEST_P(BottleneckCase, IsTheResourceWhoseDoublingExplainSaysGainsMost) {
  const IssueCase& c = GetParam();
  ClusterOverrides o;
  o.nodes = c.nodes;
  o.fabric = parse_fabric_spec(c.fabric);
  Scenario sc = shipped(c.cluster, c.model, "pytorch-ddp", 32);
  sc.cluster = load_cluster(resolve(DataKind::cluster, c.cluster, "--cluster"), o);
  sc.compute.precision = c.precision;
  const int gpus = c.nodes * sc.cluster.gpus_per_node;
  const Prediction p = Predictor(sc).predict(gpus);
  Resource best = Resource::gpu;
  double best_gain = -1.0;
  for (Resource r : kAllResources) {
    const Seconds doubled = Predictor(with_doubled(sc, r)).predict(gpus).iteration_time;
    const double gain = in_seconds(p.iteration_time) / in_seconds(doubled) - 1.0;
    if (gain > best_gain) {
      best_gain = gain;
      best = r;
    }
  }
  EXPECT_EQ(best, c.expected);
  EXPECT_EQ(p.bottleneck, Bottleneck::communication);
  EXPECT_THAT(p.bottleneck_resource.str(), HasSubstr(std::string(to_string(c.expected))));
  EXPECT_NEAR(p.bottleneck_gain, best_gain, 1e-12);
  EXPECT_NEAR(p.bottleneck_share, p.breakdown.comm_exposed / p.iteration_time, 1e-12);
  // explain prints the same gains and names the same bottleneck.
  const Explanation e = explain(sc, gpus, {});
  for (const auto& g : e.doubling)
    if (g.resource == c.expected) {
      EXPECT_NEAR(g.throughput_gain, best_gain, 1e-12);
    }
  EXPECT_THAT(format_explanation(e, sc), HasSubstr(fmt::format("bound by: communication ({})", p.bottleneck_resource.str())));
}

// VGG-16 in fp16 on two PCIe RTX 4090 nodes over 8 × 400 Gb/s: the all-reduce crosses PCIe inside each node,
// not the network (once named "inter-node network"). BERT-large in TF32 on two DGX A100 over one 100 Gb/s
// NIC: 43 % of the iteration is exposed communication over the NIC (once named "compute").
INSTANTIATE_TEST_SUITE_P(
    Issue35, BottleneckCase,
    ::testing::Values(IssueCase{"rtx4090-pcie", 2, "infiniband:400Gb/s:8", "vgg16", Precision::fp16, Resource::intra_node},
                      IssueCase{"dgx-a100", 2, "infiniband:100Gb/s:1", "bert-large", Precision::tf32, Resource::inter_node}));

// The host's kernel issue (eq. K20) as a resource. BERT-large in fp16 with pytorch-ddp (transformers' BERT code: its
// floor binds on encoders) on one H100, so that the iteration is h2d + forward + backward + update. The reference:
// each phase's GPU time G and kernel count n from the kernel model with a host too fast to bind (1 ps a kernel, the
// launch gap kept), and K20 by hand: a phase takes max(G, n × issue) over the framework's efficiency, n × issued per
// kernel for forward and backward. Doubling the host halves issue; the rest of the iteration is unchanged, so
// t2 = t1 − Σ [max(G, F) − max(G, F/2)] / eff; the share is the floor's excess, Σ [max(G, F) − G] / eff, over t1.
struct HostFloorByHand {
  Seconds phase[3], gpu[3], halved[3];
};
HostFloorByHand host_floor_by_hand(const Scenario& sc) {
  ComputeOptions o = step_compute(sc);
  const Seconds issue = o.execution.host_issue;
  const double ipk = o.execution.issued_per_kernel, eff = sc.strategy.compute_efficiency;
  o.execution.host_issue = seconds(1e-12);
  const LayerTimes t = estimate_layer_times(sc.network, sc.cluster.gpu, sc.batch_per_gpu, o);
  const Seconds g[3] = {t.total_forward(), t.total_backward(), t.total_update()};
  const double n[3] = {t.forward_kernels * ipk, t.backward_kernels * ipk, t.update_kernels};
  HostFloorByHand h;
  for (int i = 0; i < 3; ++i) {
    h.gpu[i] = g[i] / eff;
    h.phase[i] = max(g[i], issue * n[i]) / eff;
    h.halved[i] = max(g[i], issue * 0.5 * n[i]) / eff;
  }
  return h;
}

TEST(Bottleneck, TheHostsIssueWhereItsFloorBindsByHand) {
  Scenario sc = shipped("dgx-h100", "bert-large", "pytorch-ddp", 2);
  sc.compute.precision = Precision::fp16;
  const HostFloorByHand h = host_floor_by_hand(sc);
  ASSERT_GT(h.phase[0], h.gpu[0] * 2.0);  // the floor binds: it more than halves (else doubling would gain less)
  ASSERT_GT(h.phase[1], h.gpu[1] * 2.0);
  const Predictor pred(sc);
  const Prediction p = pred.predict(1);
  const Breakdown& b = p.breakdown;
  EXPECT_NEAR(in_ms(b.forward), in_ms(h.phase[0]), 1e-9);
  EXPECT_NEAR(in_ms(b.backward), in_ms(h.phase[1]), 1e-9);
  EXPECT_NEAR(in_ms(b.update), in_ms(h.phase[2]), 1e-9);
  EXPECT_NEAR(in_ms(b.forward_host), in_ms(h.phase[0] - h.gpu[0]), 1e-9);
  EXPECT_NEAR(in_ms(b.backward_host), in_ms(h.phase[1] - h.gpu[1]), 1e-9);
  EXPECT_NEAR(in_ms(b.update_host), in_ms(h.phase[2] - h.gpu[2]), 1e-9);
  Seconds saved{}, excess{};
  for (int i = 0; i < 3; ++i) {
    saved += h.phase[i] - h.halved[i];
    excess += h.phase[i] - h.gpu[i];
  }
  const double gain = p.iteration_time / (p.iteration_time - saved) - 1.0;
  EXPECT_NEAR(pred.doubled(1)[kResourceCount - 1] / (p.iteration_time - saved), 1.0, 1e-9);
  EXPECT_EQ(p.bottleneck, Bottleneck::compute);
  EXPECT_THAT(p.bottleneck_resource.str(), HasSubstr("host's kernel issue (pytorch-ddp"));
  EXPECT_NEAR(p.bottleneck_gain, gain, 1e-9);
  EXPECT_NEAR(p.bottleneck_share, excess / p.iteration_time, 1e-9);
  // explain lists it with the same gain, and its issue cost before and after
  const Explanation e = explain(sc, 1, {});
  ASSERT_EQ(e.doubling.back().resource, Resource::host_issue);
  EXPECT_NEAR(e.doubling.back().throughput_gain, gain, 1e-9);
  const double us = in_us(sc.strategy.execution.host_issue);
  EXPECT_THAT(e.doubling.back().what, HasSubstr(fmt::format("{:.3g} us -> {:.3g} us a kernel", us, us / 2)));
  EXPECT_THAT(format_explanation(e, sc), HasSubstr("host's kernel issue (eq. K20): forward"));
}

// Where the floor does not bind (BERT-large at 256 sequences a GPU: every phase's GPU time is above its floor), the
// host holds no time, doubling it changes nothing, explain does not list it, and the bottleneck is the GPU's.
TEST(Bottleneck, TheHostsIssueWhereItsFloorDoesNotBindIsNotTheBottleneck) {
  Scenario sc = shipped("dgx-h100", "bert-large", "pytorch-ddp", 256);
  sc.compute.precision = Precision::fp16;
  const HostFloorByHand h = host_floor_by_hand(sc);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(h.phase[i], h.gpu[i]) << i;
  const Predictor pred(sc);
  const Prediction p = pred.predict(8);
  EXPECT_EQ(host_floor(p.breakdown), Seconds{});
  EXPECT_EQ(pred.doubled(8)[kResourceCount - 1], p.iteration_time);
  EXPECT_EQ(p.bottleneck, Bottleneck::compute);
  EXPECT_THAT(p.bottleneck_resource.str(), HasSubstr("GPU compute"));
  const Explanation e = explain(sc, 8, {});
  for (const auto& g : e.doubling) EXPECT_NE(g.resource, Resource::host_issue);
  EXPECT_THAT(format_explanation(e, sc), ::testing::Not(HasSubstr("host's kernel issue")));
}

// A doubled GPU is twice as fast at every precision: on H100, whose bf16 and fp16 peaks are equal, a bf16
// run gains exactly what the fp16 run gains (bf16's peak was once left undoubled: +9 % against +64 %), and a
// network of large GEMMs alone comes close to twice the speed (launch overheads do not halve).
TEST(Explain, DoubledGpuIsTwiceAsFastAtEveryPrecision) {
  Scenario sc = shipped("dgx-h100", "llama3-8b", "fsdp", 2);
  auto compute_time = [](const Scenario& s) {
    const auto p = Predictor(s).predict(1);
    return in_seconds(p.breakdown.forward + p.breakdown.backward);
  };
  double ratio[2] = {0, 0};
  int i = 0;
  for (Precision prec : {Precision::fp16, Precision::bf16}) {
    sc.compute.precision = prec;
    ratio[i++] = compute_time(sc) / compute_time(with_doubled(sc, Resource::gpu));
  }
  EXPECT_NEAR(ratio[1], ratio[0], 1e-9);
  EXPECT_GT(ratio[1], 1.9);
  EXPECT_LE(ratio[1], 2.0 + 1e-9);
}

TEST(Explain, RescaledLinksFollowTheAlphaBetaRatio) {
  Cluster before;
  before.intra_node = {gigabytes_per_second(1), Seconds{}};
  Cluster after = before;
  after.intra_node.bandwidth = gigabytes_per_second(2);
  // An α-β base rescaled by α-β(new)/α-β(old) is the α-β ring on the new links:
  // all-reduce of 1 GB on 4 GPUs = 2(n−1)/n · S/β = 1.5 · 1 GB / 2 GB/s = 0.75 s.
  const auto m = rescale_links(make_alpha_beta_model(before), before, after);
  EXPECT_NEAR(in_seconds(m->time(CollectiveOp::allreduce, gigabytes(1), GpuPlacement{4, 1, 4})), 0.75, 1e-12);
  // A model 3× slower than the α-β ring stays 3× slower than the ring on the new links.
  class Slow final : public CollectiveModel {
   public:
    explicit Slow(const Cluster& c) : ab_(make_alpha_beta_model(c)) {}
    Seconds time(CollectiveOp op, Bytes s, const GpuPlacement& at) const override { return ab_->time(op, s, at) * 3.0; }
    std::string describe() const override { return "slow"; }
    std::shared_ptr<const CollectiveModel> ab_;
  };
  const auto slow = rescale_links(std::make_shared<Slow>(before), before, after);
  EXPECT_NEAR(in_seconds(slow->time(CollectiveOp::allreduce, gigabytes(1), GpuPlacement{4, 1, 4})), 2.25, 1e-12);
  // unchanged links: the base model itself
  const auto base = make_alpha_beta_model(before);
  EXPECT_EQ(rescale_links(base, before, before), base);
}

TEST(Explain, BucketsCannotBeatLayerwiseWithoutLatency) {
  // With zero latency, merging layers only delays the start of their aggregation: layer-wise is best,
  // and a 1 MiB bucket (every layer exceeds it, so one layer per bucket) ties with it.
  const BucketAdvice b = best_buckets(hand_scenario(), 4);
  ASSERT_TRUE(b.applicable);
  EXPECT_EQ(b.best.size, Bytes{});
  EXPECT_NEAR(in_seconds(b.best.iteration), 1.37, 1e-12);
  ASSERT_GE(b.tried.size(), 2u);
  EXPECT_NEAR(in_seconds(b.tried[1].iteration), 1.37, 1e-12);
  // 512 MiB: the first bucket (cap 1 MiB) closes on layer 3 alone; layers 2 + 1 (0.30 GB < 536.9 MB)
  // share the second. Bucket (3): ready 0.1, c = 0.45 → 0.55; bucket (2,1): ready 0.6, c = 1.5 · 0.3 = 0.45
  //   → max(0.55, 0.6) + 0.45 = 1.05 → t = 0.01 + 0.3 + 1.05 + 0.06 = 1.42.
  EXPECT_EQ(b.tried.back().size, mebibytes(512));
  EXPECT_NEAR(in_seconds(b.tried.back().iteration), 1.42, 1e-12);
}

TEST(Explain, LatencyMakesBucketsWorthIt) {
  Scenario sc = hand_scenario();
  sc.cluster.intra_node.latency = milliseconds(50);  // 2(n−1) = 6 steps: 0.3 s per all-reduce
  const BucketAdvice b = best_buckets(sc, 4);
  // Layer-wise: c = (0.375, 0.675, 0.75): 0.1 + 0.75 = 0.85; 0.85 + 0.675 = 1.525; 1.525 + 0.375 = 1.9
  //   → t = 0.01 + 0.3 + 1.9 + 0.06 = 2.27.
  EXPECT_NEAR(in_seconds(b.tried.front().iteration), 2.27, 1e-12);
  // 256 MiB (268.4 MB) and 512 MiB give the same buckets, (3) and (2,1): c = 0.3 + 0.45 = 0.75 each;
  //   bucket (3): 0.1 + 0.75 = 0.85; bucket (2,1): max(0.85, 0.6) + 0.75 = 1.6 → t = 1.97. 128 MiB splits
  //   layers 2 and 1 again (layer-wise). Ties go to the smaller bucket: 256 MiB.
  EXPECT_EQ(b.best.size, mebibytes(256));
  EXPECT_NEAR(in_seconds(b.best.iteration), 1.97, 1e-12);
}

TEST(Explain, TargetSearchOnThePaperCluster) {
  Scenario sc = shipped("shi-chu-p40", "resnet50", "caffe-mpi", 32);
  const TargetAdvice t = reach_efficiency(sc, 16, 0.99);
  // The NIC ladder starts at the next standard speed above 56 Gb/s: 100 Gb/s.
  bool saw_nic = false;
  for (const auto& c : t.tried) {
    // every figure re-predicted independently must be the one reported
    if (c.kind == "faster NIC") {
      saw_nic = true;
      EXPECT_THAT(c.description, HasSubstr("56 Gb/s -> "));
    }
    EXPECT_EQ(c.reaches, c.prediction.efficiency >= 0.99);
  }
  EXPECT_TRUE(saw_nic);
  if (t.smallest) {
    EXPECT_TRUE(t.smallest->reaches);
  }
  try {
    (void)reach_efficiency(sc, 16, 1.5);
    FAIL() << "a target above 1 was taken";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "'target': the target efficiency is a fraction in (0, 1], e.g. 0.8");
  }
}

// ---- sweeps -----------------------------------------------------------------------------------------
const char* kSpec = R"(name: small
grid:
  cluster: shi-chu-p40
  model: [resnet50, alexnet]
  framework: [caffe-mpi, cntk]
  gpus: [1, 2, 4, 8, 16]
  batch: [32, 64]
  precision: [fp32, fp16]
  bucket_size: [default, "4 MiB"]
  links:
    - {}
    - {inter_node: "200 Gb/s"}
)";

TEST(Sweep, GridExpandsEveryCombination) {
  const SweepSpec spec = parse_sweep_spec(kSpec, "spec.yaml");
  // 2 models × (caffe-mpi: 2 buckets, cntk: no overlap → 1) × 2 batches × 2 precisions × 2 links
  //   = 2 × 3 × 2 × 2 × 2 = 48 groups of 5 GPU counts = 240 configurations.
  EXPECT_EQ(spec.groups.size(), 48u);
  EXPECT_EQ(spec.configurations(), 240u);
  EXPECT_EQ(spec.links.size(), 3u);  // "no override" + the two entries
  EXPECT_EQ(spec.links[2].label, "inter_node=200 Gb/s");
}

// Without a precision axis each framework runs in its own (default_precision): torchtitan's file says bf16, which is
// fp16 on the V100 (no bf16 there); pytorch-ddp names none, so fp32. A precision axis overrides every framework.
TEST(Sweep, WithoutAPrecisionEachFrameworkRunsItsOwn) {
  const SweepSpec spec = parse_sweep_spec(R"(name: own
grid:
  cluster: [dgx-h100, dgx1v]
  model: llama3-8b
  framework: [torchtitan, pytorch-ddp]
  gpus: [8]
  batch: 1
)",
                                          "own.yaml");
  ASSERT_EQ(spec.groups.size(), 4u);
  std::map<std::pair<std::string, std::string>, Precision> got;
  for (const auto& g : spec.groups) got[{spec.clusters[g.cluster].gpu.name, spec.strategies[g.framework].name}] = g.precision;
  const std::string h100 = spec.clusters[spec.groups[0].cluster].gpu.name;
  const std::string v100 = spec.clusters[spec.groups[2].cluster].gpu.name;
  EXPECT_EQ((got[{h100, "torchtitan"}]), Precision::bf16);
  EXPECT_EQ((got[{h100, "pytorch-ddp"}]), Precision::fp32);
  EXPECT_EQ((got[{v100, "torchtitan"}]), Precision::fp16);
  EXPECT_EQ((got[{v100, "pytorch-ddp"}]), Precision::fp32);
  const SweepSpec given = parse_sweep_spec(R"(name: given
grid:
  cluster: dgx-h100
  model: llama3-8b
  framework: [torchtitan, pytorch-ddp]
  gpus: [8]
  batch: 1
  precision: fp16
)",
                                           "given.yaml");
  for (const auto& g : given.groups) EXPECT_EQ(g.precision, Precision::fp16);
}

/// Each row of a sweep is what a Predictor of its group says at its GPU count: time, speedup and the
/// bottleneck named by doubling, with its share.
void expect_rows_are_predicts(const SweepSpec& spec, const SweepResult& r) {
  std::size_t k = 0;
  for (const auto& g : spec.groups) {
    const Predictor p(group_scenario(spec, g));
    for (int n : g.gpus) {
      ASSERT_LT(k, r.rows.size());
      const Prediction want = p.predict(n);
      const Prediction& got = r.rows[k++].prediction;
      ASSERT_EQ(got.gpus, n);
      EXPECT_EQ(got.iteration_time, want.iteration_time) << n;
      EXPECT_EQ(got.speedup, want.speedup) << n;
      EXPECT_EQ(got.bottleneck, want.bottleneck) << n;
      EXPECT_EQ(got.bottleneck_share, want.bottleneck_share) << n;
    }
  }
  EXPECT_EQ(k, r.rows.size());
}

TEST(Sweep, MatchesAPlainLoopOverPredictor) {
  const SweepSpec spec = parse_sweep_spec(kSpec, "spec.yaml");
  const SweepResult r = run_sweep(spec, SweepOptions{2, nullptr, {}});
  ASSERT_EQ(r.rows.size(), 240u);
  expect_rows_are_predicts(spec, r);
}

// The whole row, the bottleneck named by doubling included, is predict's: also where the sweep shares the
// doubled GPU's layer times between groups (AlexNet's bottleneck once came out 'compute' from layer times
// timed on a network stripped of its shapes, where predict says the intra-node links), and for a sharded
// step on one GPU, which runs without eq. K16 (the sweep once gave it the eight-GPU step's tensor rate).
TEST(Sweep, WholeRowsArePredictsForShardedAndSharedLayerTimes) {
  const SweepSpec spec = parse_sweep_spec(R"(name: rows
grid:
  cluster: dgx-h100
  model: llama2-7b
  framework: fsdp
  gpus: [1, 8]
  batch: 4
  precision: bf16
list:
  - {cluster: shi-chu-p40, model: alexnet, framework: caffe-mpi, gpus: [2], batch: 32, precision: fp32}
)",
                                          "spec.yaml");
  const SweepResult r = run_sweep(spec, SweepOptions{1, nullptr, {}});
  ASSERT_EQ(r.rows.size(), 3u);
  expect_rows_are_predicts(spec, r);
  EXPECT_EQ(r.rows[2].prediction.bottleneck, Bottleneck::communication);
}

TEST(Sweep, ReusedLayerTimesFollowTheNetworkNotItsName) {
  // Layer times are kept between runs, by network content. Run a spec, then a copy whose ResNet-50 has
  // one convolution twice as wide (same name, same layer count): the second run must match a Predictor
  // that models the changed network from scratch (the reference loop), not the first run.
  const SweepSpec spec = parse_sweep_spec(kSpec, "spec.yaml");
  const SweepResult first = run_sweep(spec, SweepOptions{1, nullptr, {}});
  SweepSpec wider = spec;
  Network& net = wider.networks[spec.groups.front().model];
  Layer* conv = nullptr;
  for (auto& l : net.layers)
    if (l.kind == LayerKind::conv && !l.output_shape.empty()) conv = &l;
  ASSERT_NE(conv, nullptr);
  conv->output_shape[0] *= 2;
  conv->macs_per_sample *= 2;
  conv->forward_flops_per_sample *= 2;
  const SweepResult second = run_sweep(wider, SweepOptions{1, nullptr, {}});
  ASSERT_EQ(second.rows.size(), first.rows.size());
  const SweepGroup& g = wider.groups.front();
  const Predictor p(group_scenario(wider, g));
  const Prediction want = p.predict(g.gpus.front());
  EXPECT_EQ(second.rows.front().prediction.iteration_time, want.iteration_time);
  EXPECT_NE(second.rows.front().prediction.iteration_time, first.rows.front().prediction.iteration_time);
}

TEST(Sweep, LinkOverrideRaisesInterNodeBandwidth) {
  const SweepSpec spec = parse_sweep_spec(kSpec, "spec.yaml");
  const Cluster c = apply_overrides(spec.clusters[0], spec.links[2]);
  EXPECT_DOUBLE_EQ(in_gigabytes_per_second(c.inter_node.bandwidth), 25.0);  // 200 Gb/s = 25 GB/s
  EXPECT_EQ(c.intra_node.bandwidth, spec.clusters[0].intra_node.bandwidth);
}

TEST(Sweep, OutputIsTheSameForAnyThreadCount) {
  const SweepSpec spec = parse_sweep_spec(kSpec, "spec.yaml");
  std::string first;
  for (unsigned threads : {1u, 2u, 3u, 7u}) {
    std::ostringstream out;
    write_sweep(out, SweepFormat::csv, spec, run_sweep(spec, SweepOptions{threads, nullptr, {}}));
    if (first.empty()) first = out.str();
    EXPECT_EQ(out.str(), first) << threads << " threads";
  }
  EXPECT_EQ(std::count(first.begin(), first.end(), '\n'), 241);
}

TEST(Sweep, SkipsGpuCountsTheClusterCannotHold) {
  const SweepSpec spec =
      parse_sweep_spec("grid: {cluster: shi-chu-p40, model: resnet50, framework: caffe-mpi, gpus: [3, 6, 16, 32]}\n", "s.yaml");
  const SweepResult r = run_sweep(spec);
  // 3 fits one node; 6 does not fill whole 4-GPU nodes; 32 exceeds 16.
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].prediction.gpus, 3);
  EXPECT_EQ(r.rows[1].prediction.gpus, 16);
  EXPECT_EQ(r.skipped, 2u);
}

TEST(Sweep, LeavesOutPrecisionsTheGpuLacks) {
  // TF32 and bf16 need Ampere or newer (`predict` refuses them elsewhere): crossed with a P40 and an A100 in
  // one grid, the P40's tf32 and bf16 configurations (2 precisions x 2 GPU counts) are left out and said;
  // every other one is predicted, in spec order.
  const SweepSpec spec = parse_sweep_spec(
      "grid: {cluster: dgx-a100, gpu: [p40, a100-sxm4-40gb], model: resnet50, framework: pytorch-ddp,\n"
      "       precision: [fp32, tf32, bf16], gpus: [1, 8]}\n",
      "s.yaml");
  const SweepResult r = run_sweep(spec);
  EXPECT_EQ(r.unsupported, 4u);
  EXPECT_EQ(r.skipped, 0u);
  ASSERT_EQ(r.rows.size(), 8u);  // P40 fp32; A100 fp32, tf32, bf16; each at 1 and 8 GPUs
  const std::vector<std::pair<const char*, Precision>> expect = {{"Tesla P40", Precision::fp32},
                                                                 {"A100 SXM4 40 GB", Precision::fp32},
                                                                 {"A100 SXM4 40 GB", Precision::tf32},
                                                                 {"A100 SXM4 40 GB", Precision::bf16}};
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    const SweepGroup& g = spec.groups[r.rows[i].group];
    EXPECT_EQ(spec.clusters[g.cluster].gpu.name, expect[i / 2].first) << i;
    EXPECT_EQ(g.precision, expect[i / 2].second) << i;
    EXPECT_EQ(r.rows[i].prediction.gpus, i % 2 ? 8 : 1) << i;
  }
  ASSERT_EQ(r.unsupported_examples.size(), 2u);
  EXPECT_THAT(r.unsupported_examples[0], HasSubstr("has no tf32 mode (it needs TF32 tensor cores, Ampere or newer)"));
  EXPECT_THAT(r.unsupported_examples[1], HasSubstr("has no bf16 mode (it needs bf16 math, Ampere or newer)"));
}

// Frameworks that differ only in what step_key holds (the optimiser's kernels, FSDP2's per-parameter copies, the
// sharded rate of eq. K16, ...) time a network differently: a sweep that crosses them must not hand one the other's
// layer times. The key once dropped step_key (an argument past its format string's last placeholder), so after
// fsdp, deepspeed-zero2's rows took fsdp's times: 0.0721861 s at 8 GPUs where predict says 0.0718504.
TEST(Sweep, FrameworksThatDifferOnlyInTheirStepKeepTheirOwnLayerTimes) {
  const SweepSpec spec = parse_sweep_spec(
      "grid: {cluster: dgx-h100, model: gpt3-125m, framework: [fsdp, deepspeed-zero2], batch: 8, gpus: [1, 8], "
      "precision: bf16}\n",
      "s.yaml");
  const SweepResult r = run_sweep(spec, SweepOptions{1, nullptr, {}});
  ASSERT_EQ(r.rows.size(), 4u);
  expect_rows_are_predicts(spec, r);
}

/// Two groups of gpt3-125m in bf16 on 8 H100s, for the sharding's keys below: torchtitan's and fsdp's frameworks, which
/// pair_frameworks sets.
SweepSpec framework_pair() {
  return parse_sweep_spec(
      "grid: {cluster: dgx-h100, model: gpt3-125m, framework: [torchtitan, fsdp], batch: 1, gpus: [8], precision: bf16}\n",
      "s.yaml");
}
/// Both groups' frameworks `base`, the second's named "changed" and changed by `change`; the shared layer times of both.
std::vector<std::shared_ptr<const LayerTimes>> pair_frameworks(SweepSpec& spec, const Strategy& base,
                                                               const std::function<void(Strategy&)>& change) {
  spec.strategies[spec.groups[0].framework] = spec.strategies[spec.groups[1].framework] = base;
  Strategy& changed = spec.strategies[spec.groups[1].framework];
  changed.name = "changed";
  change(changed);
  return sweep_detail::shared_layer_times(spec, {{8}, {8}}).gpu;
}

// Each field of the sharding that the kernel model reads (layer_times_sharding: eq. K27's stage, eq. S10's copies, eq.
// S11's operations per gather unit) keys the layer times a sweep shares: two torchtitan frameworks that differ in that
// field alone each get their own, and the two differ. The row the second would get with the first's times
// (modelled_layers, as the sweep hands them) is not its prediction, so a key without the field fails the rows' check.
TEST(Sweep, FrameworksThatDifferOnlyInOneShardingFieldKeepTheirOwnLayerTimes) {
  SweepSpec spec = framework_pair();
  ASSERT_EQ(spec.groups.size(), 2u);
  Strategy block = spec.strategies[spec.groups[0].framework];
  ASSERT_EQ(block.sharding.stage, 3);
  ASSERT_TRUE(block.sharding.per_parameter && block.sharding.reduce_fp32 && block.sharding.reshard_after_forward);
  ASSERT_EQ(block.sharding.wrap, Sharding::Wrap::block);
  Strategy size = block;
  size.sharding.wrap = Sharding::Wrap::size;
  size.sharding.unit_params = 20'000'000;
  const std::vector<std::tuple<std::string, const Strategy*, std::function<void(Sharding&)>>> changes{
      {"stage", &block, [](Sharding& s) { s.stage = 2; }},
      {"reshard_after_forward", &block, [](Sharding& s) { s.reshard_after_forward = false; }},
      {"params", &block, [](Sharding& s) { s.per_parameter = false; }},
      {"reduce_dtype", &block, [](Sharding& s) { s.reduce_fp32 = false; }},
      {"wrap", &block, [](Sharding& s) { s.wrap = Sharding::Wrap::size; }},
      {"unit_params", &size, [](Sharding& s) { s.unit_params = 50'000'000; }},
      {"unit_ops gather", &block, [](Sharding& s) { s.gather_ops *= 4.0; }},
      {"unit_ops reduce", &block, [](Sharding& s) { s.reduce_ops *= 4.0; }},
      {"unit_ops issue", &block, [](Sharding& s) { s.unit_op_issue = s.unit_op_issue * 4.0; }},
  };
  for (const auto& [field, base, change] : changes) {
    SCOPED_TRACE(field);
    const std::function<void(Sharding&)>& edit = change;  // clang 14 captures no structured binding
    const auto times = pair_frameworks(spec, *base, [&edit](Strategy& s) { edit(s.sharding); });
    EXPECT_NE(times[0], times[1]);
    EXPECT_NE(*times[0], *times[1]);
    expect_rows_are_predicts(spec, run_sweep(spec, SweepOptions{1, nullptr, {}}));
    Scenario borrowed = group_scenario(spec, spec.groups[1]);
    const Scenario lender = group_scenario(spec, spec.groups[0]);
    borrowed.modelled_layers = std::make_shared<const LayerTimes>(
        estimate_layer_times(lender.network, lender.cluster.gpu, lender.batch_per_gpu, step_compute(lender)));
    EXPECT_NE(Predictor(borrowed).predict(8).iteration_time,
              Predictor(group_scenario(spec, spec.groups[1])).predict(8).iteration_time);
  }
}

// What the kernel model does not read (layer_times_sharding, step_key) does not key the layer times a sweep shares:
// two torchtitan frameworks that differ only in the shard group, the units in flight, the offload, the fp32 shards
// (per-parameter shards are fp32 either way), the recompute's early stop or RMSNorm's saved tensors share one entry,
// and it is the changed framework's own times.
TEST(Sweep, FrameworksThatDifferOnlyInWhatTheKernelModelDoesNotReadShareTheirLayerTimes) {
  SweepSpec spec = framework_pair();
  ASSERT_EQ(spec.groups.size(), 2u);
  const Strategy titan = spec.strategies[spec.groups[0].framework];
  ASSERT_TRUE(titan.sharding.stage == 3 && titan.sharding.per_parameter && titan.sharding.gather_ops > 0.0);
  const std::vector<std::pair<std::string, std::function<void(Strategy&)>>> unread{
      {"group", [](Strategy& s) { s.sharding.group = Sharding::kGroupNode; }},
      {"in_flight", [](Strategy& s) { s.sharding.in_flight = 1; }},
      {"offload_optimizer", [](Strategy& s) { s.sharding.offload_optimizer = true; }},
      {"cpu_adam", [](Strategy& s) { s.sharding.cpu_adam_params_per_s *= 2.0; }},
      {"shard_dtype", [](Strategy& s) { s.sharding.fp32_shards = !s.sharding.fp32_shards; }},
      {"checkpoint_early_stop", [](Strategy& s) { s.checkpoint_early_stop = !s.checkpoint_early_stop; }},
      {"rmsnorm_composite", [](Strategy& s) { s.rmsnorm_composite = !s.rmsnorm_composite; }},
  };
  for (const auto& [field, change] : unread) {
    SCOPED_TRACE(field);
    const auto times = pair_frameworks(spec, titan, change);
    EXPECT_EQ(times[0], times[1]);
    const Scenario changed = group_scenario(spec, spec.groups[1]);
    EXPECT_EQ(*times[1],
              estimate_layer_times(changed.network, changed.cluster.gpu, changed.batch_per_gpu, step_compute(changed)));
  }
}

// The GPU's fp8 peak keys the layer times a sweep keeps between runs (the key once had every peak but fp8's): a second
// run on a GPU whose fp8 peak alone is halved must match predict, not the first run's times.
TEST(Sweep, AGpuThatDiffersOnlyInItsFp8PeakKeepsItsOwnLayerTimes) {
  SweepSpec spec = parse_sweep_spec(
      "grid: {cluster: dgx-h100, model: gpt3-125m, framework: pytorch-ddp, batch: 8, gpus: [1], precision: fp8}\n", "s.yaml");
  const SweepResult first = run_sweep(spec, SweepOptions{1, nullptr, {}});
  expect_rows_are_predicts(spec, first);
  spec.clusters[spec.groups[0].cluster].gpu.peak_fp8 = spec.clusters[spec.groups[0].cluster].gpu.peak_fp8 * 0.5;
  const SweepResult second = run_sweep(spec, SweepOptions{1, nullptr, {}});
  expect_rows_are_predicts(spec, second);
  ASSERT_EQ(first.rows.size(), 1u);
  ASSERT_EQ(second.rows.size(), 1u);
  EXPECT_GT(second.rows[0].prediction.iteration_time, first.rows[0].prediction.iteration_time);
}

// fp8's scaling recipe (eq. K15) is an axis of the fp8 precision, and it keys the layer times that a sweep shares
// between its groups and keeps between runs: a row-wise group must not take a tensor-wise group's times (the key
// once had no scaling). Each row is predict's for a scenario written here by hand, not by group_scenario.
TEST(Sweep, Fp8ScalingIsAnAxisOfFp8AndKeysTheSharedLayerTimes) {
  const auto hand = [](Precision p, Fp8Scaling s) {
    Scenario sc;
    sc.cluster = load_cluster(resolve(DataKind::cluster, "dgx-h100", "cluster"));
    sc.network = load_network(resolve(DataKind::network, "gpt3-125m", "model"));
    sc.strategy = load_strategy(resolve(DataKind::framework, "pytorch-ddp", "framework"));
    sc.batch_per_gpu = 8;
    sc.compute.precision = p;
    sc.compute.fp8_scaling = s;
    sc.compute.optimizer = default_optimizer(sc.network, sc.strategy);
    return Predictor(sc);
  };
  const auto expect_rows = [&](const SweepSpec& spec, const SweepResult& r,
                               const std::vector<std::pair<Precision, Fp8Scaling>>& groups) {
    ASSERT_EQ(spec.groups.size(), groups.size());
    ASSERT_EQ(r.rows.size(), 2 * groups.size());
    for (std::size_t i = 0; i < r.rows.size(); ++i) {
      const auto [p, s] = groups[i / 2];
      const SweepGroup& g = spec.groups[r.rows[i].group];
      EXPECT_EQ(g.precision, p) << i;
      EXPECT_EQ(g.fp8_scaling, s) << i;
      EXPECT_EQ(r.rows[i].prediction.iteration_time, hand(p, s).predict(r.rows[i].prediction.gpus).iteration_time) << i;
    }
  };
  const SweepSpec both = parse_sweep_spec(
      "grid: {cluster: dgx-h100, model: gpt3-125m, framework: pytorch-ddp, batch: 8, gpus: [1, 8],\n"
      "       precision: [bf16, fp8], fp8_scaling: [tensorwise, rowwise]}\n",
      "s.yaml");
  // bf16 takes no scaling (the axis collapses to tensorwise there); fp8 takes each
  const SweepResult r = run_sweep(both, SweepOptions{1, nullptr, {}});
  expect_rows(both, r,
              {{Precision::bf16, Fp8Scaling::tensorwise},
               {Precision::fp8, Fp8Scaling::tensorwise},
               {Precision::fp8, Fp8Scaling::rowwise}});
  // row-wise casts again in the backward (fp8_recast_elements): slower than tensor-wise
  EXPECT_GT(r.rows[4].prediction.iteration_time, r.rows[2].prediction.iteration_time);
  std::ostringstream csv;
  write_sweep(csv, SweepFormat::csv, both, r);
  EXPECT_THAT(csv.str(), HasSubstr(",gpt3-125m,pytorch-ddp,fp8,8,"));
  EXPECT_THAT(csv.str(), HasSubstr(",gpt3-125m,pytorch-ddp,fp8-rowwise,8,"));
  // a second run with row-wise alone, after the first kept its tensor-wise times in the process's memo
  const SweepSpec rowwise = parse_sweep_spec(
      "grid: {cluster: dgx-h100, model: gpt3-125m, framework: pytorch-ddp, batch: 8, gpus: [1, 8], precision: fp8,\n"
      "       fp8_scaling: rowwise}\n",
      "s.yaml");
  expect_rows(rowwise, run_sweep(rowwise, SweepOptions{1, nullptr, {}}), {{Precision::fp8, Fp8Scaling::rowwise}});
}

// Eq. S12: a sweep's `fp8_all_gather` applies to the tensor-wise fp8 groups of a stage-3 framework (torchtitan), not to
// DDP's; each row is predict's for the scenario written by hand, and the shared layer times tell it from the plain fp8.
TEST(Sweep, Fp8AllGatherAppliesToTheStageThreeGroups) {
  const auto hand = [](const char* framework, bool all_gather) {
    Scenario sc;
    sc.cluster = load_cluster(resolve(DataKind::cluster, "dgx-h100", "cluster"));
    sc.network = load_network(resolve(DataKind::network, "gpt3-125m", "model"));
    sc.strategy = load_strategy(resolve(DataKind::framework, framework, "framework"));
    sc.batch_per_gpu = 8;
    sc.compute.precision = Precision::fp8;
    sc.compute.fp8_all_gather = all_gather;
    sc.compute.optimizer = default_optimizer(sc.network, sc.strategy);
    return Predictor(sc).predict(8).iteration_time;
  };
  const SweepSpec spec = parse_sweep_spec(
      "grid: {cluster: dgx-h100, model: gpt3-125m, framework: [torchtitan, pytorch-ddp], batch: 8, gpus: [8],\n"
      "       precision: [bf16, fp8], fp8_all_gather: true}\n",
      "s.yaml");
  const SweepResult r = run_sweep(spec, SweepOptions{1, nullptr, {}});
  ASSERT_EQ(r.rows.size(), 4U);
  for (const auto& row : r.rows) {
    const SweepGroup& g = spec.groups[row.group];
    const std::string& fw = spec.strategies[g.framework].name;
    EXPECT_EQ(g.fp8_all_gather, fw == "torchtitan" && g.precision == Precision::fp8) << fw;
    if (g.precision == Precision::fp8) EXPECT_EQ(row.prediction.iteration_time, hand(fw.c_str(), g.fp8_all_gather)) << fw;
  }
  EXPECT_NE(hand("torchtitan", true), hand("torchtitan", false));
}

// MX block scaling (eq. K15c) on the same axis: a GPU other than Blackwell has none, so a grid that crosses an H100 and
// a B200 cluster leaves the H100's mxfp8 configurations out (counted, with the reason) and keeps the B200's, each row
// predict's for a scenario written by hand; the shared layer times tell mxfp8 from row-wise (run after it, in one process).
TEST(Sweep, MxFp8RunsOnBlackwellOnlyAndKeysTheSharedLayerTimes) {
  const auto hand = [](Fp8Scaling s) {
    Scenario sc;
    sc.cluster = load_cluster(resolve(DataKind::cluster, "dgx-b200", "cluster"));
    sc.network = load_network(resolve(DataKind::network, "gpt3-125m", "model"));
    sc.strategy = load_strategy(resolve(DataKind::framework, "pytorch-ddp", "framework"));
    sc.batch_per_gpu = 8;
    sc.compute.precision = Precision::fp8;
    sc.compute.fp8_scaling = s;
    sc.compute.optimizer = default_optimizer(sc.network, sc.strategy);
    return Predictor(sc);
  };
  const SweepSpec rowwise = parse_sweep_spec(
      "grid: {cluster: dgx-b200, model: gpt3-125m, framework: pytorch-ddp, batch: 8, gpus: [8], precision: fp8,\n"
      "       fp8_scaling: rowwise}\n",
      "s.yaml");
  const SweepResult rw = run_sweep(rowwise, SweepOptions{1, nullptr, {}});
  ASSERT_EQ(rw.rows.size(), 1U);
  const SweepSpec spec = parse_sweep_spec(
      "grid: {cluster: [dgx-h100, dgx-b200], model: gpt3-125m, framework: pytorch-ddp, batch: 8, gpus: [1, 8],\n"
      "       precision: fp8, fp8_scaling: mxfp8}\n",
      "s.yaml");
  const SweepResult r = run_sweep(spec, SweepOptions{1, nullptr, {}});
  EXPECT_EQ(r.unsupported, 2U);
  ASSERT_FALSE(r.unsupported_examples.empty());
  EXPECT_EQ(r.unsupported_examples.front(),
            "the H100 SXM5 80 GB of cluster 'dgx-h100' (hopper) has no mxfp8 scaling (it needs Blackwell's block-scaled tensor "
            "cores)");
  ASSERT_EQ(r.rows.size(), 2U);
  const Predictor mx = hand(Fp8Scaling::mxfp8);
  for (const auto& row : r.rows) {
    EXPECT_EQ(spec.clusters[spec.groups[row.group].cluster].name, "dgx-b200");
    EXPECT_EQ(row.prediction.iteration_time, mx.predict(row.prediction.gpus).iteration_time) << row.prediction.gpus;
  }
  EXPECT_EQ(rw.rows[0].prediction.iteration_time, hand(Fp8Scaling::rowwise).predict(8).iteration_time);
  EXPECT_NE(r.rows[1].prediction.iteration_time, rw.rows[0].prediction.iteration_time);
  std::ostringstream csv;
  write_sweep(csv, SweepFormat::csv, spec, r);
  EXPECT_THAT(csv.str(), HasSubstr(",gpt3-125m,pytorch-ddp,fp8-mxfp8,8,"));
}

TEST(Sweep, TopRowsRankByThroughputAndEfficiency) {
  const SweepSpec spec = parse_sweep_spec(kSpec, "spec.yaml");
  const SweepResult r = run_sweep(spec);
  const auto top = top_rows(spec, r, 3, SweepRank::throughput);
  ASSERT_EQ(top.size(), 3u);
  double best = 0;
  for (const auto& row : r.rows) best = std::max(best, row.prediction.throughput_samples_per_s);
  EXPECT_EQ(r.rows[top[0]].prediction.throughput_samples_per_s, best);
  EXPECT_GE(r.rows[top[1]].prediction.throughput_samples_per_s, r.rows[top[2]].prediction.throughput_samples_per_s);
  const auto eff = top_rows(spec, r, 1, SweepRank::efficiency);
  for (const auto& row : r.rows) EXPECT_LE(row.prediction.efficiency, r.rows[eff[0]].prediction.efficiency);
  std::string note;
  (void)top_rows(spec, r, 1, SweepRank::cost, &note);
  EXPECT_THAT(note, HasSubstr("no price_per_gpu_hour for cluster shi-chu-p40"));
}

// Llama-2-7B with DDP keeps every weight, gradient and Adam state on each GPU: at least 16 B a parameter
// (bf16 weights and gradients, fp32 master, m and v) × 6.74 G = 108 GB, over an H100's 80 GB. FSDP on 8
// GPUs shards them. --top ranks only what fits, and says what it left out.
TEST(Sweep, TopRanksOnlyConfigurationsThatFitInMemory) {
  const SweepSpec spec = parse_sweep_spec(
      "grid:\n  cluster: dgx-h100\n  model: llama2-7b\n  framework: [pytorch-ddp, fsdp]\n  gpus: [8]\n  batch: 1\n"
      "  precision: bf16\n",
      "llama.yaml");
  const SweepResult r = run_sweep(spec);
  ASSERT_EQ(r.rows.size(), 2u);
  const double params = static_cast<double>(spec.networks.front().total_params());
  EXPECT_GT(params, 6.7e9);
  for (const auto& row : r.rows) {
    const std::string& fw = spec.strategies[spec.groups[row.group].framework].name;
    if (fw == "pytorch-ddp") {
      EXPECT_GT(in_bytes(row.prediction.memory.per_gpu), 16.0 * params);
      EXPECT_FALSE(fits_in_memory(row.prediction));
    }
  }
  std::string note;
  const auto top = top_rows(spec, r, 10, SweepRank::throughput, &note);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(spec.strategies[spec.groups[r.rows[top[0]].group].framework].name, "fsdp");
  EXPECT_TRUE(fits_in_memory(r.rows[top[0]].prediction));
  EXPECT_THAT(note, HasSubstr("1 of 2 configurations do not fit in GPU (or host) memory and are not ranked"));
  // The CSV and JSON lines carry memory per GPU and whether it fits.
  std::ostringstream csv, jsonl;
  write_sweep(csv, SweepFormat::csv, spec, r);
  write_sweep(jsonl, SweepFormat::jsonl, spec, r);
  EXPECT_THAT(csv.str(), HasSubstr("memory_per_gpu_bytes,memory_fits"));
  EXPECT_THAT(csv.str(), HasSubstr(",false,"));
  EXPECT_THAT(jsonl.str(), HasSubstr("\"memory_fits\":false"));
  EXPECT_THAT(jsonl.str(), HasSubstr("\"memory_fits\":true"));
}

// ---- the layout axis (issue 37) ----------------------------------------------------------------------------
// Llama-3-8B on two DGX H100 nodes under Megatron-Core: two layouts × 8 and 16 GPUs, and fsdp's data parallelism in a
// list entry. TP 4 × PP 4 = 16 does not divide 8 GPUs: that row says so and the others run.
/// tests/data/plan/sweep-layouts.yaml (the spec docs/planning.md shows).
SweepSpec layout_spec() {
  return load_sweep_spec(std::filesystem::path(DLSCALE_SOURCE_DIR) / "tests" / "data" / "plan" / "sweep-layouts.yaml");
}

/// The CSV's lines split at commas (no field here is quoted), header first.
std::vector<std::vector<std::string>> csv_cells(const std::string& text) {
  std::vector<std::vector<std::string>> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells(1);
    for (char c : line) {
      if (c == ',') cells.emplace_back();
      else cells.back() += c;
    }
    out.push_back(std::move(cells));
  }
  return out;
}

TEST(Sweep, LayoutRowsArePredictOfTheSameScenario) {
  const SweepSpec spec = layout_spec();
  ASSERT_EQ(spec.groups.size(), 3u);  // two layouts, then fsdp's data parallelism
  const SweepResult r = run_sweep(spec, SweepOptions{2, nullptr, {}});
  ASSERT_EQ(r.rows.size(), 6u);
  // Each layout's scenario as predict builds it for `--framework megatron-core --tp ... --batch 1`, by hand: the
  // framework file's layout with the degrees over it, micro-batch 1.
  const Network net = load_network(resolve(DataKind::network, "llama3-8b", "model"));
  const Strategy mcore = load_strategy(resolve(DataKind::framework, "megatron-core", "framework"));
  ParallelLayout tp8 = mcore.parallel.value_or(ParallelLayout{});
  tp8.tp = 8;
  tp8.sp = true;
  tp8.micro_batches = 4;
  ParallelLayout tp4pp4 = mcore.parallel.value_or(ParallelLayout{});
  tp4pp4.tp = 4;
  tp4pp4.pp = 4;
  tp4pp4.vp = 2;
  tp4pp4.schedule = PipelineSchedule::interleaved;
  tp4pp4.micro_batches = 8;
  auto scenario = [&](const ParallelLayout& l) {
    Scenario sc;
    sc.cluster = spec.clusters.front();
    sc.network = net;
    sc.strategy = mcore;
    sc.batch_per_gpu = 1;
    sc.compute.precision = Precision::bf16;
    sc.compute.optimizer = default_optimizer(net, mcore);
    sc.parallel = l;
    return sc;
  };
  const ParallelLayout* layouts[] = {&tp8, &tp8, &tp4pp4, &tp4pp4};
  for (std::size_t i = 0; i < 4; ++i) {
    const SweepRow& row = r.rows[i];
    const int gpus = i % 2 == 0 ? 8 : 16;
    ASSERT_EQ(row.prediction.gpus, gpus) << i;
    const Predictor predictor(scenario(*layouts[i]));
    if (i == 2) {  // 16 GPUs of model parallelism on 8: predict refuses it, the row says why
      EXPECT_THAT(row.error, HasSubstr("'gpus': tp 4 × pp 4 × cp 1 = 16 does not divide 8 GPUs"));
      try {
        (void)predictor.predict(gpus);
        ADD_FAILURE() << "predict took a layout that does not divide the GPUs";
      } catch (const InputError& e) {
        EXPECT_EQ(row.error, fmt::format("'{}': {}", e.key(), e.message()));
      }
      continue;
    }
    EXPECT_EQ(row.error, "") << i;
    const Prediction want = predictor.predict(gpus);
    const Prediction& got = row.prediction;
    EXPECT_EQ(got.iteration_time, want.iteration_time) << i;
    EXPECT_EQ(got.throughput_tokens_per_s, want.throughput_tokens_per_s) << i;
    EXPECT_EQ(got.mfu, want.mfu) << i;
    EXPECT_EQ(got.memory.per_gpu, want.memory.per_gpu) << i;  // the worst stage's
    EXPECT_EQ(got.memory.fits, want.memory.fits) << i;
    EXPECT_EQ(got.bottleneck, want.bottleneck) << i;
    EXPECT_EQ(got.bottleneck_share, want.bottleneck_share) << i;
    ASSERT_TRUE(want.breakdown.parallel.has_value());
    Bytes worst{};
    for (Bytes b : want.breakdown.parallel->stage_memory) worst = max(worst, b);
    EXPECT_EQ(got.memory.per_gpu, worst) << i;
  }
}

// A layout the model cannot take (tp 3 does not divide Llama-3-8B's 32 heads) is each of its rows' error, with
// predict's own message; the layout beside it runs.
TEST(Sweep, LayoutTheModelCannotTakeIsItsRowsError) {
  const SweepSpec spec = parse_sweep_spec(
      "grid:\n  cluster: dgx-h100\n  model: llama3-8b\n  framework: megatron-core\n  gpus: [3, 6]\n  precision: bf16\n"
      "  layout: [{tp: 3}, {tp: 1}]\n",
      "heads.yaml");
  const SweepResult r = run_sweep(spec, SweepOptions{1, nullptr, {}});
  ASSERT_EQ(r.rows.size(), 4u);
  Scenario sc = group_scenario(spec, spec.groups[0]);
  std::string want;
  try {
    (void)Predictor(std::move(sc)).predict(3);
    ADD_FAILURE() << "predict took tp 3 on 32 heads";
  } catch (const InputError& e) {
    want = fmt::format("'{}': {}", e.key().substr(e.key().rfind('.') + 1), e.message());
  }
  EXPECT_THAT(want, HasSubstr("32 attention heads"));
  EXPECT_EQ(r.rows[0].error, want);
  EXPECT_EQ(r.rows[1].error, want);
  EXPECT_EQ(r.rows[2].error, "");
  EXPECT_EQ(r.rows[3].error, "");
  EXPECT_GT(r.rows[3].prediction.throughput_tokens_per_s, 0.0);
}

// The layout columns: the degrees, m and b·m·dp for the row's GPU count, tokens/s per GPU and MFU; the error row's
// numbers empty; the data-parallel rows what a spec without the axis writes, with the columns after.
TEST(Sweep, LayoutColumnsAndUnchangedDataParallelRows) {
  const SweepSpec spec = layout_spec();
  const SweepResult r = run_sweep(spec, SweepOptions{1, nullptr, {}});
  std::ostringstream csv;
  write_sweep(csv, SweepFormat::csv, spec, r);
  const auto cells = csv_cells(csv.str());
  ASSERT_EQ(cells.size(), 7u);
  const std::vector<std::string> added{"tp", "pp", "vp", "cp", "ep", "sp", "schedule", "micro_batches", "global_batch", "error"};
  // the spec without the axis: fsdp's list entry alone
  const SweepSpec dp = parse_sweep_spec(
      "list:\n  - {cluster: {name: dgx-h100, nodes: 2, fabric: \"infiniband:400Gb/s:8\"}, model: llama3-8b, framework: fsdp,\n"
      "     gpus: [8, 16], batch: 1, precision: bf16}\n",
      "dp.yaml");
  EXPECT_FALSE(dp.layout_columns);
  std::ostringstream dp_csv;
  write_sweep(dp_csv, SweepFormat::csv, dp, run_sweep(dp, SweepOptions{1, nullptr, {}}));
  const auto dp_cells = csv_cells(dp_csv.str());
  ASSERT_EQ(dp_cells.size(), 3u);
  const std::size_t base = dp_cells[0].size();
  ASSERT_EQ(cells[0].size(), base + added.size());
  for (std::size_t c = 0; c < base; ++c) EXPECT_EQ(cells[0][c], dp_cells[0][c]);
  for (std::size_t c = 0; c < added.size(); ++c) EXPECT_EQ(cells[0][base + c], added[c]);
  auto at = [&](std::size_t line, const std::string& column) {
    const auto it = std::find(cells[0].begin(), cells[0].end(), column);
    return cells[line][static_cast<std::size_t>(it - cells[0].begin())];
  };
  for (std::size_t line = 1; line < cells.size(); ++line) ASSERT_EQ(cells[line].size(), cells[0].size()) << line;
  for (std::size_t k = 1; k <= 2; ++k) {  // fsdp on 8 and 16 GPUs: lines 5 and 6
    const auto& row = cells[4 + k];
    for (std::size_t c = 0; c < base; ++c) EXPECT_EQ(row[c], dp_cells[k][c]) << c;
    for (const char* column : {"tp", "pp", "vp", "cp", "ep", "sp", "schedule", "micro_batches", "global_batch", "error"})
      EXPECT_EQ(at(4 + k, column), "") << column;
    const Prediction& p = r.rows[3 + k].prediction;
    EXPECT_EQ(at(4 + k, "tokens_per_s_per_gpu"), fmt::format("{:.6g}", p.throughput_tokens_per_s / p.gpus));
    EXPECT_EQ(at(4 + k, "mfu"), fmt::format("{:.4g}", p.mfu));
  }
  // tp 8 (sp) with 4 micro-batches of 1: dp 1 on 8 GPUs, 2 on 16, so b·m·dp = 4 and 8
  for (const auto& [line, gpus, global] : {std::tuple{std::size_t{1}, "8", "4"}, {std::size_t{2}, "16", "8"}}) {
    EXPECT_EQ(at(line, "gpus"), gpus);
    EXPECT_EQ(at(line, "tp"), "8");
    EXPECT_EQ(at(line, "pp"), "1");
    EXPECT_EQ(at(line, "sp"), "true");
    EXPECT_EQ(at(line, "schedule"), "1f1b");
    EXPECT_EQ(at(line, "micro_batches"), "4");
    EXPECT_EQ(at(line, "global_batch"), global);
    EXPECT_EQ(at(line, "batch_per_gpu"), "1");  // the micro-batch
    EXPECT_EQ(at(line, "error"), "");
  }
  // tp 4 × pp 4 (interleaved, vp 2) on 16 GPUs: dp 1, b·m·dp = 8; on 8 GPUs the error, the numbers empty
  EXPECT_EQ(at(4, "vp"), "2");
  EXPECT_EQ(at(4, "schedule"), "interleaved");
  EXPECT_EQ(at(4, "global_batch"), "8");
  EXPECT_EQ(at(3, "gpus"), "8");
  EXPECT_EQ(at(3, "nodes"), "1");
  EXPECT_EQ(at(3, "iteration_time_s"), "");
  EXPECT_EQ(at(3, "micro_batches"), "");
  EXPECT_EQ(at(3, "memory_fits"), "false");
  EXPECT_EQ(at(3, "error"), r.rows[2].error);
  EXPECT_THAT(at(3, "error"), HasSubstr("does not divide 8 GPUs"));
  // --top ranks what runs and fits, and says what it left out
  std::string note;
  const auto top = top_rows(spec, r, 10, SweepRank::throughput, &note);
  for (std::size_t i : top) EXPECT_TRUE(r.rows[i].error.empty() && fits_in_memory(r.rows[i].prediction));
  EXPECT_EQ(std::count(top.begin(), top.end(), 2u), 0);
  EXPECT_THAT(note, HasSubstr("1 of 6 configurations have a layout that cannot run"));
  // JSON lines carry the same members
  std::ostringstream jsonl;
  write_sweep(jsonl, SweepFormat::jsonl, spec, r);
  std::istringstream lines(jsonl.str());
  std::vector<nlohmann::json> js;
  for (std::string line; std::getline(lines, line);) js.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(js.size(), 6u);
  EXPECT_EQ(js[0]["tp"], 8);
  EXPECT_EQ(js[0]["global_batch"], 4);
  EXPECT_EQ(js[2]["error"], r.rows[2].error);
  EXPECT_TRUE(js[2]["iteration_time_s"].is_null());
  EXPECT_TRUE(js[4]["tp"].is_null());
  EXPECT_TRUE(js[4]["error"].is_null());
  EXPECT_DOUBLE_EQ(js[4]["tokens_per_s_per_gpu"].get<double>(),
                   r.rows[4].prediction.throughput_tokens_per_s / r.rows[4].prediction.gpus);
  // the shards of a layout sweep merge back to the whole (the header with the layout columns, once)
  const auto dir = std::filesystem::path(::testing::TempDir()) / "dlscale-sweep-layout";
  std::filesystem::create_directories(dir);
  std::vector<std::filesystem::path> parts;
  for (std::size_t i = 1; i <= 3; ++i) {
    const SweepSpec part = shard_sweep_spec(spec, SweepShard{i, 3});
    std::ostringstream out;
    write_sweep(out, SweepFormat::csv, part, run_sweep(part, SweepOptions{1, nullptr, {}}));
    parts.push_back(dir / fmt::format("p{}.csv", i));
    std::ofstream(parts.back()) << out.str();
  }
  EXPECT_EQ(merge_sweep_parts(parts), csv.str());
  // a part of a sweep without the axis among them: another header, refused
  std::ofstream(parts[1]) << dp_csv.str();
  try {
    (void)merge_sweep_parts(parts);
    ADD_FAILURE() << "parts with different headers were merged";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("the first line is not the header of"));
  }
  std::filesystem::remove_all(dir);
}

// --shard I/N: the parts' rows, in order, are the whole sweep's, for every N from 1 to the number of
// configurations (20 here: 2 frameworks × 2 links × 5 GPU counts, of which 6 and 32 do not fit the
// 4-node × 4-GPU cluster, so some parts hold only configurations that are left out).
TEST(Sweep, ShardsConcatenateToTheWholeSweepForEveryN) {
  const SweepSpec spec = parse_sweep_spec(
      "grid:\n  cluster: shi-chu-p40\n  model: resnet50\n  framework: [caffe-mpi, cntk]\n  gpus: [1, 3, 6, 16, 32]\n"
      "  links: [{}, {inter_node: \"100 Gb/s\"}]\n",
      "s.yaml");
  ASSERT_EQ(spec.configurations(), 20u);
  for (SweepFormat f : {SweepFormat::csv, SweepFormat::jsonl}) {
    std::ostringstream whole;
    const SweepResult all = run_sweep(spec, SweepOptions{1, nullptr, {}});
    write_sweep(whole, f, spec, all);
    ASSERT_EQ(all.rows.size(), 12u);
    for (std::size_t n = 1; n <= 20; ++n) {
      std::string joined;
      std::size_t configurations = 0, skipped = 0;
      for (std::size_t i = 1; i <= n; ++i) {
        const SweepSpec part = shard_sweep_spec(spec, SweepShard{i, n});
        configurations += part.configurations();
        // ⌊i·20/n⌋ − ⌊(i−1)·20/n⌋ configurations in part i, at least one since n ≤ 20
        EXPECT_EQ(part.configurations(), i * 20 / n - (i - 1) * 20 / n);
        std::ostringstream out;
        const SweepResult r = run_sweep(part, SweepOptions{1, nullptr, {}});
        skipped += r.skipped;
        write_sweep(out, f, part, r);
        std::string text = out.str();
        if (f == SweepFormat::csv && i > 1) text.erase(0, text.find('\n') + 1);  // the header once
        joined += text;
      }
      EXPECT_EQ(configurations, 20u);
      EXPECT_EQ(skipped, all.skipped);
      EXPECT_EQ(joined, whole.str()) << n << " parts";
    }
  }
  for (const auto& f : std::vector<std::function<void()>>{[&] {
                                                            (void)shard_sweep_spec(spec, SweepShard{1, 21});
                                                          },
                                                          [] { (void)sweep_shard_from_string("3/2"); }}) {
    try {
      f();
      ADD_FAILURE() << "a shard that does not exist was taken";
    } catch (const InputError& e) {
      EXPECT_EQ(e.key(), "shard");
      EXPECT_TRUE(e.where().file.empty());
    }
  }
  const SweepShard sh = sweep_shard_from_string("3/8");
  EXPECT_EQ(sh.index, 3u);
  EXPECT_EQ(sh.count, 8u);
}

TEST(Sweep, SpecErrorsNameFileLineColumnAndKey) {
  auto message = [](const std::string& text) {
    try {
      (void)parse_sweep_spec(text, "bad.yaml");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(message("grid: {cluster: shi-chu-p40, model: resnet50, framework: cntk, gpus: [1], modle: x}\n"),
              HasSubstr("bad.yaml:1:75: 'grid.modle': unknown key"));
  EXPECT_THAT(message("grid:\n  cluster: nowhere\n  model: resnet50\n  framework: cntk\n  gpus: [1]\n"),
              HasSubstr("bad.yaml:2:12: 'grid.cluster': unknown cluster 'nowhere'"));
  EXPECT_THAT(message("grid:\n  cluster: shi-chu-p40\n  model: resnet50\n  framework: cntk\n  gpus: [1]\n"
                      "  links: [{inter_node: \"200 Gbs\"}]\n"),
              HasSubstr("bad.yaml:6:24"));
  EXPECT_THAT(message("grid:\n  cluster: shi-chu-p40\n  model: resnet50\n  framework: cntk\n  gpus: [0]\n"),
              HasSubstr("bad.yaml:5:10"));
  EXPECT_THAT(message("name: x\n"), HasSubstr("needs 'grid' or 'list'"));
}

// ---- the command line and golden outputs ----------------------------------------------------------------
std::string golden(const std::string& name) {
  return test::slurp(std::filesystem::path(DLSCALE_SOURCE_DIR) / "tests" / "golden" / name);
}

TEST(SweepCli, MatchesGoldenCsv) {
  const auto r = test::run_cli(std::string("sweep --spec ") + DLSCALE_SOURCE_DIR + "/tests/data/plan/sweep-small.yaml");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, golden("sweep-small.csv"));
  EXPECT_EQ(r.err, "");  // no progress bar when stderr is not a terminal
}

TEST(SweepCli, MatchesGoldenJsonLines) {
  const auto r =
      test::run_cli(std::string("sweep --spec ") + DLSCALE_SOURCE_DIR + "/tests/data/plan/sweep-small.yaml --format jsonl");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, golden("sweep-small.jsonl"));
}

// A sweep's JSON line is its own flat record (sweep.hpp), but the members it takes from the prediction keep
// the name and the value of predict's JSON record (report.hpp): one schema for the same numbers.
TEST(SweepCli, JsonLinesShareThePredictionRecordsMembers) {
  std::vector<nlohmann::ordered_json> lines;
  std::istringstream in(golden("sweep-small.jsonl"));
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::ordered_json::parse(line);
    if (j["framework"] == "caffe-mpi" && j["precision"] == "fp32" && j["bucket"] == "layerwise" && j["links"] == "-")
      lines.push_back(j);
  }
  ASSERT_EQ(lines.size(), 4u);  // resnet50 on 1, 4, 8 and 16 GPUs
  const auto r = test::run_cli(
      "predict --cluster shi-chu-p40 --model resnet50 --framework caffe-mpi --precision fp32 "
      "--batch 32 --gpus 1,4,8,16 --format json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto preds = nlohmann::ordered_json::parse(r.out)["predictions"];
  ASSERT_EQ(preds.size(), lines.size());
  for (std::size_t i = 0; i < lines.size(); ++i) {
    auto record = preds[i];
    record["comm_s"] = record["breakdown"]["comm_s"];
    record["comm_exposed_s"] = record["breakdown"]["comm_exposed_s"];
    record["memory_per_gpu_bytes"] = record["memory"]["per_gpu_bytes"];
    int shared = 0;
    for (const auto& [key, value] : lines[i].items()) {
      if (!record.contains(key)) continue;
      ++shared;
      EXPECT_EQ(value, record[key]) << key << " on " << lines[i]["gpus"] << " GPUs";
    }
    // 15, and since issue 35 throughput_tokens_per_s (null: ResNet-50 has no tokens) and mfu
    EXPECT_EQ(shared, 17) << "members the sweep line shares with the prediction record";
  }
}

TEST(SweepCli, TopKAsJsonLinesToAFile) {
  const auto out = test::temp_file("top.jsonl", "");
  const auto r = test::run_cli(std::string("sweep --spec ") + DLSCALE_SOURCE_DIR +
                               "/tests/data/plan/sweep-small.yaml --format jsonl --top 2 --by efficiency -o " + out.string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "");
  const std::string text = test::slurp(out);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2);
  EXPECT_THAT(text, HasSubstr("\"efficiency\":1.0"));  // one-GPU rows have efficiency 1 by definition
}

// Issue 35: every row carries tokens/s (over the job and per GPU), MFU and HFU, as predict prints them; `--by tokens`
// ranks the rows of token models by tokens/s. Llama-2-7B and Llama-3-8B under FSDP and torchtitan on one DGX H100 (8
// GPUs, one sequence a GPU, bf16), ResNet-50 beside them (tests/data/plan/sweep-llm.yaml): each row's
// throughput_tokens_per_s and mfu equal `predict --format json` of the same options; tokens_per_s_per_gpu is that over
// 8; hfu equals mfu where nothing is recomputed (none of these frameworks checkpoints by default); ResNet-50's tokens
// are null and its MFU predict's.
TEST(SweepCli, TokenColumnsArePredictsAndRankByTokens) {
  const std::string spec = std::string(DLSCALE_SOURCE_DIR) + "/tests/data/plan/sweep-llm.yaml";
  const auto r = test::run_cli("sweep --spec " + spec + " --format jsonl");
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<nlohmann::json> rows;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) rows.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(rows.size(), 5u);
  for (const auto& row : rows) {
    const std::string model = row["model"], framework = row["framework"];
    const auto p = test::run_cli("predict --cluster dgx-h100-ndr --nodes 1 --model " + model + " --framework " + framework +
                                 " --gpus 8 --batch " + std::to_string(row["batch_per_gpu"].get<int>()) +
                                 " --precision bf16 --format json --no-train");
    ASSERT_EQ(p.status, 0) << p.err;
    const auto pred = nlohmann::json::parse(p.out)["predictions"][0];
    EXPECT_DOUBLE_EQ(row["iteration_time_s"].get<double>(), pred["iteration_time_s"].get<double>()) << model << framework;
    EXPECT_DOUBLE_EQ(row["mfu"].get<double>(), pred["mfu"].get<double>()) << model << " " << framework;
    EXPECT_GT(row["mfu"].get<double>(), 0.0);
    if (model == "resnet50") {
      EXPECT_TRUE(row["throughput_tokens_per_s"].is_null());
      EXPECT_TRUE(pred["throughput_tokens_per_s"].is_null());
      EXPECT_TRUE(row["tokens_per_s_per_gpu"].is_null());
      continue;
    }
    const double tokens = row["throughput_tokens_per_s"].get<double>();
    EXPECT_DOUBLE_EQ(tokens, pred["throughput_tokens_per_s"].get<double>()) << model << " " << framework;
    EXPECT_DOUBLE_EQ(row["tokens_per_s_per_gpu"].get<double>(), tokens / 8.0);
    EXPECT_DOUBLE_EQ(row["hfu"].get<double>(), row["mfu"].get<double>()) << model << " " << framework;
  }
  // By hand, Llama-2-7B under FSDP (the first row): tokens/s = samples/s × 4096 tokens a sequence; MFU = 3 × forward
  // FLOPs a sample × samples/s / (GPUs × peak) = 3 × 62,923,451,924,480 (models/llama2-7b.yaml's total) × samples/s /
  // (8 × 989e12, the H100 SXM's dense bf16 peak, topologies/gpus.yaml).
  ASSERT_EQ(rows[0]["model"], "llama2-7b");
  ASSERT_EQ(rows[0]["framework"], "fsdp");
  const double samples = rows[0]["throughput_samples_per_s"].get<double>();
  EXPECT_NEAR(samples, 8.0 / rows[0]["iteration_time_s"].get<double>(), 1e-12 * samples);  // 8 GPUs × 1 sequence a step
  EXPECT_NEAR(rows[0]["throughput_tokens_per_s"].get<double>(), samples * 4096.0, 1e-9 * samples * 4096.0);
  const double mfu = 3.0 * 62'923'451'924'480.0 * samples / (8.0 * 989e12);
  EXPECT_NEAR(rows[0]["mfu"].get<double>(), mfu, 1e-12 * mfu);
  // the CSV: the same four columns after currency, ResNet-50's tokens empty
  const auto csv = test::run_cli("sweep --spec " + spec);
  ASSERT_EQ(csv.status, 0) << csv.err;
  std::istringstream lines(csv.out);
  std::string header, first, line, last;
  std::getline(lines, header);
  std::getline(lines, first);
  while (std::getline(lines, line)) last = line;
  EXPECT_THAT(header, ::testing::EndsWith(",cost,currency,throughput_tokens_per_s,tokens_per_s_per_gpu,mfu,hfu"));
  EXPECT_THAT(first,
              ::testing::EndsWith(fmt::format(",,,{:.6g},{:.6g},{:.4g},{:.4g}", rows[0]["throughput_tokens_per_s"].get<double>(),
                                              rows[0]["tokens_per_s_per_gpu"].get<double>(), rows[0]["mfu"].get<double>(),
                                              rows[0]["hfu"].get<double>())));
  EXPECT_THAT(last,
              ::testing::EndsWith(fmt::format(",,,{:.4g},{:.4g}", rows[4]["mfu"].get<double>(), rows[4]["hfu"].get<double>())));
  // --by tokens: the four language-model rows by tokens/s, highest first; ResNet-50 left out and said so
  const auto top = test::run_cli("sweep --spec " + spec + " --format jsonl --top 10 --by tokens");
  ASSERT_EQ(top.status, 0) << top.err;
  EXPECT_THAT(top.err, HasSubstr("1 of 5 configurations are of models without tokens (no tokens/s) and are not ranked"));
  std::vector<double> want;
  for (const auto& row : rows)
    if (!row["throughput_tokens_per_s"].is_null() && row["memory_fits"].get<bool>())
      want.push_back(row["throughput_tokens_per_s"].get<double>());
  std::sort(want.rbegin(), want.rend());
  std::vector<double> got;
  std::istringstream ranked(top.out);
  for (std::string l; std::getline(ranked, l);) got.push_back(nlohmann::json::parse(l)["throughput_tokens_per_s"].get<double>());
  EXPECT_EQ(got, want);
  EXPECT_GE(got.size(), 2u);
}

TEST(SweepCli, BadSpecExitsTwoWithNothingOnStdout) {
  const auto spec = test::temp_file("bad-spec.yaml", "grid: {cluster: shi-chu-p40, model: resnet50, gpus: [1]}\n");
  const auto out = test::temp_file("never.csv", "old");
  std::filesystem::remove(out);
  const auto r = test::run_cli("sweep --spec " + spec.string() + " -o " + out.string());
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("bad-spec.yaml:1:7: 'grid.framework': missing required key"));
  EXPECT_FALSE(std::filesystem::exists(out));
}

// The docs/planning.md recipe: parts run as separate processes at the same time (as a Slurm job array or
// GNU parallel would run them), then `sweep merge`; the result is the whole sweep byte for byte (the
// golden CSV), and so for JSON lines.
TEST(SweepCli, ShardsRunAsSeparateProcessesMergeToTheWholeSweep) {
  const std::string spec = std::string(DLSCALE_SOURCE_DIR) + "/tests/data/plan/sweep-small.yaml";
  const auto dir = test::temp_file("shards.keep", "").parent_path() / "shards";
  std::filesystem::create_directories(dir);
  for (const auto& [format, parts] : {std::pair<std::string, int>{"csv", 3}, {"jsonl", 4}}) {
    std::string script, waits = "true", names;
    for (int i = 1; i <= parts; ++i) {
      const std::string part = (dir / fmt::format("part-{}-of-{}.{}", i, parts, format)).string();
      std::filesystem::remove(part);
      script += fmt::format("{} sweep --spec {} --format {} --shard {}/{} --threads 1 -o {} & p{}=$!; ", DLSCALE_CLI, spec,
                            format, i, parts, part, i);
      waits += fmt::format(" && wait $p{}", i);  // every part must succeed
      names += " " + part;
    }
    script += waits;
    ASSERT_EQ(std::system(script.c_str()), 0) << script;
    const auto merged = test::run_cli("sweep merge" + names);
    ASSERT_EQ(merged.status, 0) << merged.err;
    const auto whole = test::run_cli("sweep --spec " + spec + " --format " + format);
    ASSERT_EQ(whole.status, 0) << whole.err;
    EXPECT_EQ(merged.out, whole.out) << format;
    if (format == "csv") {
      EXPECT_EQ(merged.out, golden("sweep-small.csv"));
    }
    EXPECT_EQ(std::count(merged.out.begin(), merged.out.end(), '\n'), format == "csv" ? 70 : 69);  // 69 configurations
  }
}

TEST(ExplainCli, MatchesGoldenText) {
  // a bucketed framework where a change reaches the target, and a sequential one where none does
  auto r = test::run_cli(
      "explain --cluster dgx1v --model resnet50 --framework pytorch-ddp --precision fp16 --batch 64 "
      "--gpus 32 --target 0.99");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, golden("explain-resnet50-dgx1v.txt"));
  r = test::run_cli("explain --cluster shi-chu-p40 --model alexnet --framework cntk --batch 1024 --gpus 16 --target 80%");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, golden("explain-alexnet-cntk.txt"));
}

TEST(ExplainCli, DoublingTheInputDoublesItsDecodersWhenTheyBind) {
  // AlexNet in fp16 on a DGX-2's 16 V100s is bound by the 48 cores that decode ImageNet (53.3 MP/s each in
  // models/input/cpus.yaml): doubling the input doubles the decode rate, and the throughput with it.
  const auto r = test::run_cli("explain --cluster dgx2 --model alexnet --precision fp16 --batch 256 --gpus 16");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("bound by: io (input decode on the CPU (48 cores of xeon-platinum-8168 per node))"));
  EXPECT_THAT(r.out,
              HasSubstr("input (storage and decoding)              +100.0% samples/s   page cache 20 GB/s -> 40 GB/s, "
                        "CPU decode 53.3 -> 106.6 MP/s a core"));
}

TEST(ExplainCli, OneGpuCountOnly) {
  const auto r = test::run_cli("explain --gpus 4,8");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("explain takes one GPU count"));
}

// The one-line error a sweep spec gets, or "accepted" when it parses.
std::string sweep_error(const std::string& yaml, const std::string& name) {
  try {
    (void)parse_sweep_spec(yaml, name);
  } catch (const InputError& e) {
    return e.what();
  }
  return "accepted";
}

// A cluster item may compose a single-node file as --nodes/--fabric do: dgx2 (16 GPUs, one node) as 4
// nodes holds 64 GPUs, with the 8 NICs of its file at 100 Gb/s = 12.5 GB/s each.
TEST(SweepSpec, ComposesAClusterFromNodesAndFabric) {
  const SweepSpec spec = parse_sweep_spec(
      "grid:\n  cluster: [{name: dgx2, nodes: 4, fabric: \"infiniband:100Gb/s\"}]\n  model: resnet50\n"
      "  framework: pytorch-ddp\n  gpus: [16, 64]\n",
      "compose.yaml");
  ASSERT_EQ(spec.clusters.size(), 1U);
  EXPECT_EQ(spec.clusters[0].name, "dgx2*4@infiniband:100Gb/s");
  EXPECT_EQ(spec.clusters[0].max_gpus(), 64);
  ASSERT_TRUE(spec.clusters[0].topology);
  EXPECT_EQ(spec.clusters[0].topology->fabric().nics_per_node, 8);
  EXPECT_DOUBLE_EQ(in_gigabytes_per_second(spec.clusters[0].topology->fabric().nic_bandwidth), 12.5);
  EXPECT_EQ(sweep_error("grid:\n  cluster: [{name: dgx2, nodes: 4}]\n  model: resnet50\n  framework: pytorch-ddp\n  gpus: [16]\n",
                        "c.yaml"),
            "c.yaml:2:13: 'grid.cluster[0]': 'dgx2' is one node with no network between nodes: give a 'fabric' "
            "(KIND:SPEED[:COUNT], e.g. infiniband:100Gb/s:8)");
}

// A composed item may also put another GPU in the file's slots, as --gpu does: by catalogue name, or inline
// with the catalogue's keys (the GPU is then named by its `name`). An unknown GPU fails at the key.
TEST(SweepSpec, ComposesAClusterWithAnotherGpu) {
  const SweepSpec spec = parse_sweep_spec(
      "grid:\n  cluster: [{name: dgx-a100, gpu: h100-sxm},\n"
      "            {name: dgx-a100, gpu: {name: Half A100, sm: 80, peak_fp32: \"9.75 TFLOPS\", memory_bandwidth: \"1 TB/s\"}}]\n"
      "  model: resnet50\n  framework: pytorch-ddp\n  gpus: [8]\n",
      "gpu.yaml");
  ASSERT_EQ(spec.clusters.size(), 2U);
  EXPECT_EQ(spec.clusters[0].name, "dgx-a100+h100-sxm");
  EXPECT_EQ(spec.clusters[0].gpu.name, find_gpu("h100-sxm").name);
  EXPECT_EQ(spec.clusters[1].name, "dgx-a100+Half A100");
  EXPECT_DOUBLE_EQ(in_teraflops_per_second(spec.clusters[1].gpu.peak_fp32), 9.75);
  EXPECT_THAT(
      sweep_error("grid:\n  cluster: [{name: dgx-a100, gpu: a200}]\n  model: resnet50\n  framework: pytorch-ddp\n  gpus: [8]\n",
                  "g.yaml"),
      HasSubstr("g.yaml:2:35: 'grid.cluster[0].gpu': unknown GPU 'a200'"));
  // no compute capability for dgx-a100's NVLink graph: said at the key
  EXPECT_EQ(
      sweep_error("grid:\n  cluster: [{name: dgx-a100, gpu: {name: X, peak_fp32: \"1 TFLOPS\", memory_bandwidth: \"1 TB/s\"}}]\n"
                  "  model: resnet50\n  framework: pytorch-ddp\n  gpus: [8]\n",
                  "s.yaml"),
      "s.yaml:2:35: 'grid.cluster[0].gpu': 'X' gives no 'sm' (compute capability): 'dgx-a100' has a topology graph, "
      "whose NVLink bandwidths depend on it");
}

// The gpu axis: every GPU in every cluster, cluster by cluster, named as the composed items are; each the
// same cluster as the composed item {name, gpu}. A cluster item that names its own GPU and an axis: refused.
TEST(SweepSpec, GpuAxisPutsEachGpuInEachCluster) {
  const SweepSpec spec = parse_sweep_spec(
      "grid:\n  cluster: [dgx-a100, rtx4090-pcie]\n  gpu: [a100-sxm4-80gb, h100-sxm]\n  model: resnet50\n"
      "  framework: pytorch-ddp\n  gpus: [1, 4]\n",
      "axis.yaml");
  ASSERT_EQ(spec.clusters.size(), 4U);
  EXPECT_EQ(spec.clusters[0].name, "dgx-a100+a100-sxm4-80gb");
  EXPECT_EQ(spec.clusters[1].name, "dgx-a100+h100-sxm");
  EXPECT_EQ(spec.clusters[2].name, "rtx4090-pcie+a100-sxm4-80gb");
  EXPECT_EQ(spec.clusters[3].name, "rtx4090-pcie+h100-sxm");
  EXPECT_EQ(spec.clusters[3].gpu.name, find_gpu("h100-sxm").name);
  const SweepSpec item = parse_sweep_spec(
      "grid:\n  cluster: [{name: rtx4090-pcie, gpu: h100-sxm}]\n  model: resnet50\n  framework: pytorch-ddp\n  gpus: [4]\n",
      "item.yaml");
  auto throughput = [](const SweepSpec& s, std::size_t c) {
    Scenario sc;
    sc.cluster = s.clusters[c];
    sc.network = s.networks[0];
    sc.strategy = s.strategies[0];
    sc.compute.optimizer = default_optimizer(sc.network);
    return Predictor(std::move(sc)).predict(4).throughput_samples_per_s;
  };
  EXPECT_DOUBLE_EQ(throughput(spec, 3), throughput(item, 0));
  EXPECT_EQ(sweep_error("grid:\n  cluster: [{name: dgx-a100, gpu: h200}]\n  gpu: h100-sxm\n  model: resnet50\n"
                        "  framework: pytorch-ddp\n  gpus: [8]\n",
                        "both.yaml"),
            "both.yaml:3:8: 'grid.gpu': this cluster item names its own gpu: give the GPU in one place");
}

// ---- plan: strategy × shard group × micro-batch × accumulation (docs/planning.md) ---------------------------
Strategy shipped_framework(const std::string& name) { return load_strategy(resolve(DataKind::framework, name, "--frameworks")); }

PlanSpace llama_space() {
  PlanSpace space;
  for (const char* fw :
       {"pytorch-ddp", "deepspeed-zero1", "deepspeed-zero2", "deepspeed-zero3", "fsdp", "fsdp-shard-grad-op", "fsdp-hybrid"})
    space.strategies.push_back(shipped_framework(fw));
  space.target_tokens = 2e12;
  return space;
}

Scenario llama_on_two_h100_nodes() {
  Scenario sc;
  sc.cluster = load_cluster(resolve(DataKind::cluster, "dgx-h100-ndr", "--cluster"));
  sc.network = load_network(resolve(DataKind::network, "llama2-7b", "--model"));
  sc.compute.precision = Precision::bf16;
  sc.compute.optimizer = Optimizer::adamw;
  return sc;
}

TEST(Plan, Llama7bOnTwoH100NodesSearchesEveryConfigurationAndKeepsWhatFits) {
  const Scenario sc = llama_on_two_h100_nodes();
  const PlanSpace space = llama_space();
  const PlanResult r = plan(sc, 16, space);
  // Configurations by hand: 7 micro-batches × 4 accumulations × checkpointing off/on = 56 per shard group;
  // DDP has one group (replicas); every sharded strategy two distinct groups on 2 × 8 GPUs (16 and 8):
  // 56 + 6 × 112 = 728.
  EXPECT_EQ(r.evaluated, 728);
  ASSERT_FALSE(r.ranked.empty());
  for (std::size_t i = 0; i < r.ranked.size(); ++i) {
    EXPECT_TRUE(r.ranked[i].prediction.memory.fits);
    if (i > 0) {
      EXPECT_GE(r.ranked[i - 1].prediction.throughput_samples_per_s, r.ranked[i].prediction.throughput_samples_per_s);
    }
  }
  EXPECT_EQ(r.evaluated - r.out_of_memory, static_cast<int>(r.ranked.size()));
  // DDP's weights, gradients and AdamW state alone are 16 × 6.74e9 B = 107.8 GB > 85.9 GB: never fits.
  ASSERT_FALSE(r.losses.empty());
  const auto ddp = std::find_if(r.losses.begin(), r.losses.end(), [](const PlanLoss& l) { return l.framework == "pytorch-ddp"; });
  ASSERT_NE(ddp, r.losses.end());
  EXPECT_THAT(ddp->why, testing::StartsWith("out of memory"));
  // The winner is what the Predictor says of that configuration, and its time to train is 2e12 tokens at
  // its tokens/s.
  const PlanEntry& w = r.ranked.front();
  Scenario again = sc;
  for (const Strategy& st : space.strategies)
    if (st.name == w.framework) again.strategy = st;
  if (again.strategy.sharding.sharded())
    again.strategy.sharding.group = w.shard_group == 16 ? Sharding::kGroupAll : Sharding::kGroupNode;
  again.batch_per_gpu = w.micro_batch;
  again.compute.accumulate = w.accumulate;
  again.compute.checkpointing = w.checkpointing;
  const Prediction direct = Predictor(again).predict(16);
  EXPECT_NEAR(in_seconds(direct.iteration_time), in_seconds(w.prediction.iteration_time), 1e-12);
  ASSERT_TRUE(w.time_to_train.has_value());
  EXPECT_NEAR(in_seconds(*w.time_to_train), 2e12 / w.prediction.throughput_tokens_per_s, 1e-6);
  EXPECT_TRUE(again.strategy.sharding.sharded());
}

TEST(Explain, ShardedStrategiesHaveNoBucketsToTune) {
  Scenario sc = llama_on_two_h100_nodes();
  sc.strategy = shipped_framework("fsdp");
  sc.batch_per_gpu = 1;
  const BucketAdvice b = best_buckets(sc, 16);
  EXPECT_FALSE(b.applicable);
  EXPECT_THAT(b.note, testing::HasSubstr("per transformer block"));  // fsdp.yaml's wrap: block (eq. S4b)
  sc.strategy.sharding.wrap = Sharding::Wrap::size;
  EXPECT_THAT(best_buckets(sc, 16).note, testing::HasSubstr("per unit of 100000000 parameters"));
}

TEST(PlanCli, AnswersTheLlamaQuestionAndExplainsTheLosers) {
  const auto r = test::run_cli("plan --cluster dgx-h100-ndr --model llama2-7b --gpus 16 --target-tokens 2e12");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;  // no memory warning: the search checks memory itself
  EXPECT_THAT(r.out, testing::HasSubstr("728 configurations"));
  EXPECT_THAT(r.out, testing::HasSubstr("choice: "));
  EXPECT_THAT(r.out, testing::HasSubstr("pytorch-ddp: out of memory"));
  EXPECT_THAT(r.out, testing::HasSubstr("time to train"));
}

TEST(PlanCli, DefaultsToBf16AndToFp16WhereTheGpuHasNoBf16) {
  // No --precision: bf16 on an H100; a V100 has no bf16 mode, so mixed precision there is fp16 (it used to
  // stop with "'--precision': ... has no bf16 mode" though no --precision was given). Asked for, bf16 on the
  // V100 is refused as predict refuses it.
  const auto h100 = test::run_cli("plan --cluster dgx-h100 --model bert-large --gpus 8 --top 1");
  ASSERT_EQ(h100.status, 0) << h100.err;
  EXPECT_THAT(h100.out, testing::HasSubstr("bert-large on 8 GPUs of dgx-h100 (bf16, adamw)"));
  const auto v100 = test::run_cli("plan --cluster dgx1v --model bert-large --gpus 8 --top 1");
  ASSERT_EQ(v100.status, 0) << v100.err;
  EXPECT_THAT(v100.out, testing::HasSubstr("bert-large on 8 GPUs of dgx1v (fp16, adamw)"));
  const auto asked = test::run_cli("plan --cluster dgx1v --model bert-large --gpus 8 --precision bf16");
  EXPECT_EQ(asked.status, 2);
  EXPECT_THAT(asked.err, testing::HasSubstr("has no bf16 mode"));
}

TEST(PlanCli, AStrategyThatTiesTheChoiceIsSaidToTie) {
  // Llama-2-13B on 4 DGX H100s: ZeRO-3 and FSDP's full shard with the same optimiser kernels (DeepSpeed's fused
  // Adam; FSDP's file says torch.optim's foreach, so the run asks for fused) and the same gather units (fsdp.yaml with
  // the size-based wrap, eq. S4, as ZeRO-3's: a 13B block and the embedding each exceed both files' unit sizes; and ZeRO's
  // half shards, shard_dtype working, where FSDP's fp32 ones add eq. M5's cast, 0.1 ms and 0.1 GB here) give the same
  // step in this model (their top rows print the same iteration time and memory), so FSDP's line says so instead of
  // "0.0 % slower ... costs 0 s".
  const auto dir = std::filesystem::temp_directory_path() / "dlscale-plan-tie";
  std::filesystem::create_directories(dir);
  {
    std::ifstream in(std::filesystem::path(DLSCALE_SOURCE_DIR) / "models" / "frameworks" / "fsdp.yaml");
    std::ofstream out(dir / "fsdp.yaml");
    for (std::string line; std::getline(in, line);)
      out << (line == "  wrap: block"             ? std::string("  wrap: size")
                  : line == "  shard_dtype: fp32" ? std::string("  shard_dtype: working")
                                                  : line)
          << '\n';
  }
  const auto r = test::run_cli(
      "plan --cluster dgx-h100 --nodes 4 --fabric infiniband:400Gb/s:8 --model llama2-13b "
      "--gpus 32 --frameworks deepspeed-zero3," +
      (dir / "fsdp.yaml").string() + " --optimizer-impl fused --top 2");
  std::filesystem::remove_all(dir);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto row = [&](const std::string& rank) {  // iteration time and memory columns of a ranked row
    const auto at = r.out.find("\n   " + rank + "  ");
    EXPECT_NE(at, std::string::npos) << r.out;
    std::istringstream in(r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1));
    std::string rank_, name, group, micro, accum, ckpt, iter, sps, tps, mfu, mem;
    in >> rank_ >> name >> group >> micro >> accum >> ckpt >> iter >> sps >> tps >> mfu >> mem;
    return std::make_pair(iter, mem);
  };
  EXPECT_EQ(row("1"), row("2"));
  EXPECT_THAT(r.out,
              testing::HasSubstr("fsdp: at its best (fsdp (shard group 32), micro-batch 2, accumulate 1) within "
                                 "0.05 % of the choice's samples/s and 0.5 % of its memory: the same step"));
  EXPECT_THAT(r.out, testing::Not(testing::HasSubstr("0.0 % slower")));
}

// Llama-2-70B with DDP keeps ≥ 16 B for each of its 69 G parameters on every GPU, 1.1 TB against 80 GB: no
// configuration runs. The plan still says why, and the command fails (exit 1) with one line on stderr.
TEST(PlanCli, NothingFitsExitsNonZero) {
  const auto r = test::run_cli(
      "plan --cluster dgx-h100 --model llama2-70b --gpus 8 --frameworks pytorch-ddp "
      "--micro-batches 1,2 --accumulations 1");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.out, HasSubstr("no configuration fits the GPU's memory"));
  EXPECT_THAT(r.err, HasSubstr("none of the"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// plan and plan --parallel take --fp8-scaling (eq. K15) for every configuration they try; they had no such option.
// The reference is predict's step for the plan's one configuration (one framework, micro-batch, accumulation).
TEST(PlanCli, Fp8ScalingReachesEveryConfiguration) {
  const std::string args =
      "--cluster dgx-h100 --model gpt3-125m --gpus 8 --precision fp8 --frameworks pytorch-ddp --micro-batches 8 "
      "--accumulations 1 --top 1";
  const auto iteration = [](const std::string& out) {  // the top row's iteration time, as plan prints it
    const auto at = out.find("\n   1  ");
    EXPECT_NE(at, std::string::npos) << out;
    std::istringstream in(out.substr(at + 1));
    std::string rank, name, micro, accum, ckpt, iter;
    in >> rank >> name >> micro >> accum >> ckpt >> iter;
    return iter;
  };
  const auto predicted = [](const std::string& scaling) {  // predict's iteration time, at plan's four decimals
    const auto r = test::run_cli(
        "predict --cluster dgx-h100 --model gpt3-125m --framework pytorch-ddp --batch 8 --gpus 8 --precision fp8 "
        "--fp8-scaling " +
        scaling + " --format json");
    EXPECT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["inputs"]["precision"], scaling == "rowwise" ? "fp8-rowwise" : "fp8");
    return fmt::format("{:.4f}", j["predictions"][0]["iteration_time_s"].get<double>());
  };
  const auto tensorwise = test::run_cli("plan " + args);
  const auto rowwise = test::run_cli("plan " + args + " --fp8-scaling rowwise");
  ASSERT_EQ(tensorwise.status, 0) << tensorwise.err;
  ASSERT_EQ(rowwise.status, 0) << rowwise.err;
  EXPECT_THAT(tensorwise.out, HasSubstr("gpt3-125m on 8 GPUs of dgx-h100 (fp8, adamw)"));
  EXPECT_THAT(rowwise.out, HasSubstr("gpt3-125m on 8 GPUs of dgx-h100 (fp8-rowwise, adamw)"));
  EXPECT_EQ(iteration(tensorwise.out), predicted("tensorwise"));
  EXPECT_EQ(iteration(rowwise.out), predicted("rowwise"));
  EXPECT_NE(iteration(rowwise.out), iteration(tensorwise.out));

  const std::string parallel =
      "plan --parallel --cluster dgx-h100 --model gpt3-125m --gpus 8 --precision fp8 --tp 1 --pp 1 "
      "--cp 1 --micro-batch 8 --recompute none --zero 0 --top 1";  // at micro-batch 1 the host's issue bounds both (K20)
  const auto tokens = [](const std::string& out) {                 // the one layout's tokens/s
    const auto at = out.find("\n   1 ");
    EXPECT_NE(at, std::string::npos) << out;
    std::istringstream in(out.substr(at + 1));
    std::string cell;
    for (int i = 0; i < 11; ++i) in >> cell;  // rank tp pp vp cp dp mb m sp recompute zero
    double t = 0.0;
    in >> t;
    return t;
  };
  const auto p_tensor = test::run_cli(parallel);
  const auto p_row = test::run_cli(parallel + " --fp8-scaling rowwise");
  ASSERT_EQ(p_tensor.status, 0) << p_tensor.err;
  ASSERT_EQ(p_row.status, 0) << p_row.err;
  EXPECT_THAT(p_tensor.out, HasSubstr(", fp8, global batch"));
  EXPECT_THAT(p_row.out, HasSubstr(", fp8-rowwise, global batch"));
  EXPECT_LT(tokens(p_row.out), tokens(p_tensor.out));  // the backward's re-casts (fp8_recast_elements)
  // MX block scaling (eq. K15c) on Blackwell, named in both headers
  const auto mx = test::run_cli(
      "plan --cluster dgx-b200 --model gpt3-125m --gpus 8 --precision fp8 --frameworks pytorch-ddp --micro-batches 8 "
      "--accumulations 1 --top 1 --fp8-scaling mxfp8");
  ASSERT_EQ(mx.status, 0) << mx.err;
  EXPECT_THAT(mx.out, HasSubstr("gpt3-125m on 8 GPUs of dgx-b200 (fp8-mxfp8, adamw)"));
  const auto p_mx = test::run_cli(
      "plan --parallel --cluster dgx-b200 --model gpt3-125m --gpus 8 --precision fp8 --tp 1 --pp 1 --cp 1 --micro-batch 8 "
      "--recompute none --zero 0 --top 1 --fp8-scaling mxfp8");
  ASSERT_EQ(p_mx.status, 0) << p_mx.err;
  EXPECT_THAT(p_mx.out, HasSubstr(", fp8-mxfp8, global batch"));
}

// plan takes --compile as predict does (every framework tried compiles the step; eq. K14): it had no such option.
TEST(PlanCli, CompileReachesEveryConfiguration) {
  const std::string args =
      "plan --cluster dgx-h100 --model llama2-7b --gpus 8 --frameworks fsdp --micro-batches 2 --accumulations 1 --top 1";
  const auto iteration = [](const std::string& out) {  // the top row's iteration time, as plan prints it
    const auto at = out.find("\n   1  ");
    EXPECT_NE(at, std::string::npos) << out;
    std::istringstream in(out.substr(at + 1));
    std::string rank, name, group, micro, accum, ckpt, iter;
    in >> rank >> name >> group >> micro >> accum >> ckpt >> iter;
    if (group.front() != '(') iter = ckpt, ckpt = accum;  // no shard group printed
    return iter;
  };
  const auto eager = test::run_cli(args);
  const auto compiled = test::run_cli(args + " --compile");
  ASSERT_EQ(eager.status, 0) << eager.err;
  ASSERT_EQ(compiled.status, 0) << compiled.err;
  EXPECT_NE(iteration(compiled.out), iteration(eager.out));
  // the reference: predict's step for the choice (its row says which checkpointing it took)
  const bool ckpt = compiled.out.find("micro-batch 2, accumulate 1, checkpointing —") != std::string::npos;
  const auto r = test::run_cli(std::string("predict --cluster dgx-h100 --model llama2-7b --framework fsdp --batch 2 --gpus 8 "
                                           "--precision bf16 --compile --format json") +
                               (ckpt ? " --checkpointing" : ""));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(iteration(compiled.out),
            fmt::format("{:.4f}", nlohmann::json::parse(r.out)["predictions"][0]["iteration_time_s"].get<double>()));
}

TEST(PlanCli, BadInputIsOneLineExitTwo) {
  for (const char* args : {"plan --cluster dgx-h100-ndr --model llama2-7b --gpus 12",
                           "plan --cluster dgx-h100-ndr --model resnet50 --gpus 8 --target-tokens 1e9",
                           "plan --cluster dgx-h100-ndr --model llama2-7b --gpus 8 --frameworks fsdp,zero4",
                           "plan --cluster dgx-h100-ndr --model llama2-7b --gpus 8 --micro-batches 0"}) {
    SCOPED_TRACE(args);
    const auto r = test::run_cli(args);
    EXPECT_EQ(r.status, 2);
    EXPECT_TRUE(r.out.empty());
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

// ---- plan and explain as JSON (issue 35): every number the table shows is a field of the JSON ---------------------
using test::find_line;
using test::groups;
using test::shown;

/// `explain --format json`'s document beside the table of the same command: each number the table prints equals its
/// JSON field formatted as the table formats it.
void expect_explain_table_is_its_json(const std::string& table, const nlohmann::json& j) {
  const auto& p = j.at("prediction");
  auto g = find_line(table, R"(iteration (\S+) ms, (\S+) samples/s, speedup (\S+), efficiency (\S+)%)");
  ASSERT_EQ(g.size(), 5U) << table;
  EXPECT_EQ(g[1], shown("{:.3f}", 1e3 * p.at("iteration_time_s").get<double>()));
  EXPECT_EQ(g[2], shown("{:.1f}", p.at("throughput_samples_per_s").get<double>()));
  EXPECT_EQ(g[3], shown("{:.3f}", p.at("speedup").get<double>()));
  EXPECT_EQ(g[4], shown("{:.1f}", 100.0 * p.at("efficiency").get<double>()));
  g = find_line(table, R"(bound by: (\S+) \((.+)\): (\S+)% of the iteration, doubling it gains (\S+)% samples/s)");
  ASSERT_EQ(g.size(), 5U) << table;
  EXPECT_EQ(g[1], p.at("bottleneck").get<std::string>());
  EXPECT_EQ(g[2], p.at("bottleneck_resource").get<std::string>());
  EXPECT_EQ(g[3], shown("{:.1f}", 100.0 * p.at("bottleneck_share").get<double>()));
  EXPECT_EQ(g[4], shown("{:+.1f}", 100.0 * p.at("bottleneck_gain").get<double>()));
  // the critical path, segment by segment, then its total
  const auto lines = test::lines_of(table);
  auto at = std::find(lines.begin(), lines.end(), "where the iteration goes (critical path):");
  ASSERT_NE(at, lines.end());
  for (const auto& seg : j.at("critical_path")) {
    g = groups(*++at, R"(  (.+?) +(\S+) ms +(\S+)%)");
    ASSERT_EQ(g.size(), 4U) << *at;
    EXPECT_EQ(test::trimmed(g[1]), seg.at("part").get<std::string>());
    EXPECT_EQ(g[2], shown("{:.3f}", 1e3 * seg.at("time_s").get<double>()));
    EXPECT_EQ(g[3], shown("{:.1f}", 100.0 * seg.at("share").get<double>()));
  }
  g = groups(*++at, R"(  total +(\S+) ms   \(communication in all (\S+) ms, (\S+) ms hidden behind backward\))");
  ASSERT_EQ(g.size(), 4U) << *at;
  EXPECT_EQ(g[2], shown("{:.3f}", 1e3 * p.at("breakdown").at("comm_s").get<double>()));
  EXPECT_EQ(g[3], shown("{:.3f}", 1e3 * j.at("comm_hidden_s").get<double>()));
  g = find_line(table, R"(  input read (\S+) ms per iteration, (prefetched|not prefetched).*)");
  ASSERT_EQ(g.size(), 3U) << table;
  EXPECT_EQ(g[1], shown("{:.3f}", 1e3 * j.at("input_read").at("io_s").get<double>()));
  EXPECT_EQ(g[2] == "prefetched", j.at("input_read").at("prefetched").get<bool>());
  if (const auto& ip = j.at("input_pipeline"); !ip.is_null() && ip.at("data") != "synthetic") {
    g = find_line(table,
                  R"(  input pipeline: .*: reader (\S+) ms per iteration per node = max\(storage (\S+) ms, .* (\S+) ms\).*)");
    ASSERT_EQ(g.size(), 4U) << table;
    EXPECT_EQ(g[1], shown("{:.3f}", 1e3 * ip.at("reader_s").get<double>()));
    EXPECT_EQ(g[2], shown("{:.3f}", 1e3 * ip.at("storage_s").get<double>()));
    EXPECT_EQ(g[3], shown("{:.3f}", 1e3 * ip.at("cpu_decode_s").get<double>()));
    g = find_line(table, R"(  reader-bound loss (\S+) ms per iteration \((\S+)% of it\))");
    ASSERT_EQ(g.size(), 3U) << table;
    EXPECT_EQ(g[1], shown("{:.3f}", 1e3 * ip.at("reader_loss_s").get<double>()));
    EXPECT_EQ(g[2], shown("{:.1f}", 100.0 * ip.at("reader_loss_share").get<double>()));
  }
  if (const auto jitter = j.at("inputs").at("jitter_cv").get<double>(); jitter > 0.0) {
    g = find_line(table, R"(  synchronization loss (\S+) ms: (\d+) GPUs wait for the slowest, compute jitter cv (\S+))");
    ASSERT_EQ(g.size(), 4U) << table;
    EXPECT_EQ(g[1], shown("{:.3f}", 1e3 * p.at("breakdown").at("sync_wait_s").get<double>()));
    EXPECT_EQ(g[2], std::to_string(p.at("gpus").get<int>()));
    EXPECT_EQ(g[3], shown("{:g}", jitter));
  }
  // doubling each resource, row by row
  at = std::find(lines.begin(), lines.end(), "gain from doubling one resource:");
  ASSERT_NE(at, lines.end());
  for (const auto& d : j.at("doubling")) {
    g = groups(*++at, R"(  (.+?) +(\S+)% samples/s   (.*?)( \[graph model rescaled by the alpha-beta ratio\])?)");
    ASSERT_EQ(g.size(), 5U) << *at;
    EXPECT_EQ(test::trimmed(g[1]), d.at("resource").get<std::string>());
    EXPECT_EQ(g[2], shown("{:+.1f}", 100.0 * d.at("throughput_gain").get<double>()));
    EXPECT_EQ(g[3], d.at("what").get<std::string>());
    EXPECT_EQ(!g[4].empty(), d.at("rescaled").get<bool>());
  }
  // the buckets tried, the current and the best
  const auto& b = j.at("buckets");
  at = std::find(lines.begin(), lines.end(), "bucket plan:");
  ASSERT_NE(at, lines.end());
  if (b.at("applicable").get<bool>()) {
    for (const auto& t : b.at("tried")) {
      g = groups(*++at, R"(  (.+?) +iteration +(\S+) ms, exposed communication +(\S+) ms)");
      ASSERT_EQ(g.size(), 4U) << *at;
      EXPECT_EQ(test::trimmed(g[1]),
                t.at("layer_wise").get<bool>() ? std::string("layer-wise (no merging)")
                                               : fmt::format("{:g} MiB", t.at("size_bytes").get<double>() / 1048576.0));
      EXPECT_EQ(g[2], shown("{:.3f}", 1e3 * t.at("iteration_time_s").get<double>()));
      EXPECT_EQ(g[3], shown("{:.3f}", 1e3 * t.at("comm_exposed_s").get<double>()));
    }
    g = groups(*++at, R"(  now: .* \((\S+) ms\); best: .* \((\S+) ms, (\S+)% samples/s\))");
    ASSERT_EQ(g.size(), 4U) << *at;
    EXPECT_EQ(g[1], shown("{:.3f}", 1e3 * b.at("current").at("iteration_time_s").get<double>()));
    EXPECT_EQ(g[2], shown("{:.3f}", 1e3 * b.at("best").at("iteration_time_s").get<double>()));
    EXPECT_EQ(g[3], shown("{:+.1f}", 100.0 * b.at("best_gain").get<double>()));
  } else {
    EXPECT_EQ(*++at, "  " + b.at("note").get<std::string>());
  }
  // the changes tried towards the target
  if (const auto& t = j.at("target"); !t.is_null()) {
    g = find_line(table, R"(target efficiency (\S+)%:)");
    ASSERT_EQ(g.size(), 2U) << table;
    EXPECT_EQ(g[1], shown("{:.1f}", 100.0 * t.at("efficiency").get<double>()));
    for (const auto& c : t.at("changes")) {
      g = find_line(table,
                    "  " + c.at("kind").get<std::string>() + R"( +(.+?) +efficiency +(\S+)%, (\S+) samples/s(  reaches)?)");
      ASSERT_EQ(g.size(), 4U + 1U) << c.at("kind");
      EXPECT_EQ(test::trimmed(g[1]), c.at("description").get<std::string>());
      EXPECT_EQ(g[2], shown("{:.1f}", 100.0 * c.at("efficiency").get<double>()));
      EXPECT_EQ(g[3], shown("{:.1f}", c.at("throughput_samples_per_s").get<double>()));
      EXPECT_EQ(!g[4].empty(), c.at("reaches").get<bool>());
    }
    if (!t.at("note").get<std::string>().empty()) {
      EXPECT_THAT(table, HasSubstr("  note: " + t.at("note").get<std::string>() + "\n"));
    }
  }
  // the time to train
  if (!j.at("workload").is_null()) {
    const auto& c = p.at("time_to_train");
    EXPECT_THAT(table, HasSubstr("  workload: " + j.at("workload").get<std::string>() + "\n"));
    g = find_line(table, R"(  (\S+) iterations, (.+) on (\d+) GPUs, (\S+) GPU-hours.*)");
    ASSERT_EQ(g.size(), 5U) << table;
    EXPECT_EQ(g[1], shown("{:.0f}", c.at("iterations").get<double>()));
    EXPECT_THAT(g[2], testing::StartsWith(shown("{:.2f} h", c.at("hours").get<double>())));
    EXPECT_EQ(g[4], shown("{:.1f}", c.at("gpu_hours").get<double>()));
  }
}

TEST(ExplainCli, EveryNumberOfTheTableIsAFieldOfTheJson) {
  // the two golden explanations: a bucketed framework with a target one change nearly reaches, a sequential one
  for (const auto& [args, table] :
       {std::pair<std::string, std::string>{"explain --cluster dgx1v --model resnet50 --framework pytorch-ddp --precision fp16 "
                                            "--batch 64 --gpus 32 --target 0.99",
                                            golden("explain-resnet50-dgx1v.txt")},
        {"explain --cluster shi-chu-p40 --model alexnet --framework cntk --batch 1024 --gpus 16 --target 80%",
         golden("explain-alexnet-cntk.txt")}}) {
    const auto r = test::run_cli(args + " --format json");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j.at("schema"), 1);
    EXPECT_EQ(j.at("command"), "explain");
    SCOPED_TRACE(args);
    expect_explain_table_is_its_json(table, j);
  }
}

TEST(ExplainCli, JsonMatchesGolden) {
  const auto r = test::run_cli(
      "explain --cluster dgx1v --model resnet50 --framework pytorch-ddp --precision fp16 --batch 64 --gpus 32 --target 0.99 "
      "--format json");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, golden("explain-resnet50-dgx1v.json")) << "refresh on purpose with tests/golden/refresh.sh";
}

TEST(ExplainCli, JsonToAFileIsWrittenAtomicallyAndNothingOnStdout) {
  const auto out = test::temp_file("explain.json", "old");
  const auto r = test::run_cli("explain --cluster dgx1v --model resnet50 --batch 64 --gpus 8 --format json -o " + out.string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "");
  const auto j = nlohmann::json::parse(test::slurp(out));
  EXPECT_EQ(j.at("prediction").at("gpus"), 8);
}

/// plan's table beside its JSON: each configuration's cells, the choice line and each loss.
TEST(PlanCli, EveryNumberOfTheTableIsAFieldOfTheJson) {
  const std::string args = "plan --cluster dgx-h100-ndr --model llama2-7b --gpus 16 --top 4 --target-tokens 2e12";
  const auto table = test::run_cli(args), json = test::run_cli(args + " --format json");
  ASSERT_EQ(table.status, 0) << table.err;
  ASSERT_EQ(json.status, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j.at("command"), "plan");
  auto g = find_line(table.out, R"(# dlscale plan: .*: (\d+) configurations, (\d+) out of memory)");
  ASSERT_EQ(g.size(), 3U) << table.out;
  EXPECT_EQ(g[1], std::to_string(j.at("evaluated").get<int>()));
  EXPECT_EQ(g[2], std::to_string(j.at("out_of_memory").get<int>()));
  const auto& rows = j.at("configurations");
  ASSERT_EQ(rows.size(), 4U);
  for (const auto& row : rows) {
    const auto& p = row.at("prediction");
    g = find_line(table.out,
                  fmt::format(R"( +{}  (.+?) +(\d+) +(\d+) +(yes|no) +(\S+) +(\S+) +(\S+) +(\S+)% +(\S+) GB  (\S+) h)",
                              row.at("rank").get<int>()));
    ASSERT_EQ(g.size(), 11U) << row.at("rank");
    const int group = row.at("shard_group").get<int>();
    EXPECT_EQ(test::trimmed(g[1]), row.at("framework").get<std::string>() + (group > 1 ? fmt::format(" ({})", group) : ""));
    EXPECT_EQ(g[2], std::to_string(row.at("micro_batch").get<int>()));
    EXPECT_EQ(g[3], std::to_string(row.at("accumulate").get<int>()));
    EXPECT_EQ(g[4] == "yes", row.at("checkpointing").get<bool>());
    EXPECT_EQ(g[5], shown("{:.4f}", p.at("iteration_time_s").get<double>()));
    EXPECT_EQ(g[6], shown("{:.1f}", p.at("throughput_samples_per_s").get<double>()));
    EXPECT_EQ(g[7], shown("{:.4g}", p.at("throughput_tokens_per_s").get<double>()));
    EXPECT_EQ(g[8], shown("{:.1f}", 100.0 * p.at("mfu").get<double>()));
    EXPECT_EQ(g[9], shown("{:.3g}", p.at("memory").at("per_gpu_bytes").get<double>() / 1e9));
    EXPECT_EQ(g[10], shown("{:.4g}", row.at("time_to_train_s").get<double>() / 3600.0));
    EXPECT_TRUE(p.at("memory").at("fits").get<bool>());
    EXPECT_TRUE(p.at("bottleneck").is_null());  // the search's predictions name none (Predictor::TimesOnly)
  }
  const auto& w = rows.front().at("prediction");
  g = find_line(table.out,
                R"(choice: .* — (\S+) samples/s, (\S+) GB of the .*'s (.+) per GPU, communication (.+) exposed of (.+))");
  ASSERT_EQ(g.size(), 6U) << table.out;
  EXPECT_EQ(g[1], shown("{:.1f}", w.at("throughput_samples_per_s").get<double>()));
  EXPECT_EQ(g[2], shown("{:.3g}", w.at("memory").at("per_gpu_bytes").get<double>() / 1e9));
  EXPECT_EQ(g[3], fmt::format("{}", bytes(j.at("gpu_memory_bytes").get<double>())));
  EXPECT_EQ(g[4], fmt::format("{}", seconds(w.at("breakdown").at("comm_exposed_s").get<double>())));
  EXPECT_EQ(g[5], fmt::format("{}", seconds(w.at("breakdown").at("comm_s").get<double>())));
  // each loss: its sentence, and the fields the sentence is made of
  int slower = 0, out_of_memory = 0;
  for (const auto& l : j.at("losses")) {
    const std::string why = l.at("why").get<std::string>();
    EXPECT_THAT(table.out, HasSubstr("  " + l.at("framework").get<std::string>() + ": " + why + "\n"));
    if (l.at("reason") == "slower") {
      ++slower;
      EXPECT_THAT(why, testing::StartsWith(shown("{:.1f} % slower", 100.0 * l.at("slower").get<double>())));
      EXPECT_THAT(why,
                  testing::EndsWith(fmt::format(": {} costs {} more per sample", l.at("worst_part").get<std::string>(),
                                                seconds(l.at("worst_part_s_per_sample").get<double>()))));
      const auto& best = l.at("best");
      EXPECT_EQ(best.at("framework"), l.at("framework"));
      const double ratio =
          best.at("prediction").at("throughput_samples_per_s").get<double>() / w.at("throughput_samples_per_s").get<double>();
      EXPECT_NEAR(l.at("slower").get<double>(), 1.0 - ratio, 1e-12);
    } else if (l.at("reason") == "out_of_memory") {
      ++out_of_memory;
      EXPECT_THAT(why,
                  HasSubstr(fmt::format("needs at least {} per GPU", bytes(l.at("least_memory_per_gpu_bytes").get<double>()))));
      EXPECT_TRUE(l.at("best").is_null());
    }
  }
  EXPECT_GE(slower, 1);
  EXPECT_GE(out_of_memory, 1);  // pytorch-ddp: 16 B × 6.74e9 parameters of weights, gradients and AdamW > 80 GB
}

TEST(PlanCli, NothingFitsIsStillJsonAndExitsOne) {
  const auto r = test::run_cli("plan --cluster dgx-h100 --model llama2-70b --gpus 1 --frameworks pytorch-ddp --format json");
  EXPECT_EQ(r.status, 1) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("fit"), 0);
  EXPECT_TRUE(j.at("configurations").empty());
  ASSERT_EQ(j.at("losses").size(), 1U);  // nothing chosen: the one framework loses to the memory
  EXPECT_EQ(j.at("losses")[0].at("reason"), "out_of_memory");
  EXPECT_THAT(r.err, HasSubstr("none of the"));
}

}  // namespace
}  // namespace dlscale
