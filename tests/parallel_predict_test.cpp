// The Predictor on a model-parallel scenario (issue 37, round 2): Scenario::parallel predicted by eq. P13,
// its checks with fields "parallel.*", and what stays as before without it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <tuple>

#include "dlscale/error.hpp"
#include "dlscale/io.hpp"
#include "dlscale/parallel.hpp"
#include "dlscale/predict.hpp"
#include "dlscale/resources.hpp"
#include "dlscale/zoo.hpp"

namespace dlscale {
namespace {

// Llama-3-70B (Meta's config.json): 80 layers, width 8192, 64 heads with 8 key/value heads, SwiGLU 28672,
// vocabulary 128256, sequence 8192.
Network llama3_70b() {
  return build_decoder(
      DecoderShape{.layers = 80, .hidden = 8192, .heads = 64, .kv_heads = 8, .ffn = 28672, .vocab = 128256, .seq = 8192},
      "llama3-70b");
}

// 64 H100s: 8 DGX H100 nodes on 8 × 400 Gb/s NDR; Megatron-Core's distributed optimiser, bf16, AdamW.
Scenario llama70b_on_64(int tp, int pp, int m) {
  Scenario sc;
  ClusterOverrides ov;
  ov.nodes = 8;
  sc.cluster = load_cluster(resolve(DataKind::cluster, "dgx-h100-ndr", "--cluster"), ov);
  sc.network = llama3_70b();
  sc.strategy = load_strategy(resolve(DataKind::framework, "megatron-core", "--framework"));
  sc.compute.precision = Precision::bf16;
  sc.compute.optimizer = Optimizer::adamw;
  ParallelLayout l;
  l.tp = tp;
  l.sp = true;
  l.pp = pp;
  l.micro_batch = 1;
  l.micro_batches = m;
  sc.parallel = l;
  return sc;
}

TEST(ParallelPredict, Llama3_70bOn64H100sTp8Pp2) {
  const Predictor p(llama70b_on_64(8, 2, 32));
  const Prediction r = p.predict(64);
  // global batch b·m·dp = 1·32·4 = 128 sequences of 8192 tokens
  EXPECT_EQ(r.gpus, 64);
  EXPECT_EQ(r.nodes, 8);
  EXPECT_NEAR(r.throughput_samples_per_s * in_seconds(r.iteration_time), 128.0, 1e-9);
  EXPECT_NEAR(r.throughput_tokens_per_s, r.throughput_samples_per_s * 8192.0, 1e-6);
  const double per_gpu = r.throughput_tokens_per_s / 64.0;
  // Published Megatron runs of 70B on H100 reach MFU about 0.40-0.50 (about 800-1000 tokens/s per GPU)
  EXPECT_GT(r.mfu, 0.35) << per_gpu;
  EXPECT_LT(r.mfu, 0.60) << per_gpu;
  ASSERT_TRUE(r.breakdown.parallel.has_value());
  const auto& par = *r.breakdown.parallel;
  ASSERT_EQ(par.stage_memory.size(), 2u);
  EXPECT_DOUBLE_EQ(in_bytes(r.memory.per_gpu), std::max(in_bytes(par.stage_memory[0]), in_bytes(par.stage_memory[1])));
  EXPECT_TRUE(r.memory.fits) << in_bytes(r.memory.per_gpu) / 1e9;
  EXPECT_GT(par.tp_comm, Seconds{});
  EXPECT_GT(par.pp_p2p, Seconds{});
  EXPECT_GT(par.dp_comm, Seconds{});
  EXPECT_EQ(par.cp_comm, Seconds{});
  // the step is its parts: compute, exposed communication, bubble and update (eq. P13), and the wait for the slowest
  // GPU (eq. P43; megatron-core has no per-iteration overhead)
  const auto& b = r.breakdown;
  EXPECT_GT(b.sync_wait, Seconds{});
  EXPECT_EQ(b.overhead, Seconds{});
  EXPECT_NEAR(in_seconds(r.iteration_time),
              in_seconds(b.forward + b.backward + par.tp_comm + par.cp_comm + par.pp_p2p + par.bubble + par.dp_comm + b.update +
                         b.sync_wait),
              1e-9);
}

// Eq. P7 by hand: the bubble is (p−1)/m of the ideal pipeline; doubling m halves its share.
TEST(ParallelPredict, DoublingMicroBatchesHalvesTheBubbleShare) {
  const Prediction a = Predictor(llama70b_on_64(8, 2, 16)).predict(64);
  const Prediction b = Predictor(llama70b_on_64(8, 2, 32)).predict(64);
  const auto share = [](const Prediction& p) {
    const auto& par = *p.breakdown.parallel;
    return par.bubble / (p.breakdown.forward + p.breakdown.backward + par.tp_comm + par.cp_comm + par.pp_p2p);
  };
  EXPECT_NEAR(share(a), 1.0 / 16.0, 1e-12);
  EXPECT_NEAR(share(b), 1.0 / 32.0, 1e-12);
  // the bubble itself is the same time (one micro-batch's worth, p−1 = 1); the step is longer, the rate higher
  EXPECT_NEAR(in_seconds(a.breakdown.parallel->bubble), in_seconds(b.breakdown.parallel->bubble), 1e-12);
  EXPECT_GT(b.throughput_tokens_per_s, a.throughput_tokens_per_s);
}

// Eq. P22: a layout's speedup is one GPU training the same global batch (B/b micro-batches of its step less the
// update, then one update) over the layout's step, so no layout passes its GPU count: here 128 micro-batches of 1.
TEST(ParallelPredict, SpeedupAgainstOneGpuOnTheSameGlobalBatch) {
  const Scenario sc = llama70b_on_64(8, 2, 32);
  const Prediction r = Predictor(sc).predict(64);
  Scenario one = sc;
  one.parallel.reset();
  one.batch_per_gpu = 1;
  const Prediction p1 = Predictor(one).predict(1);
  const double u1 = in_seconds(p1.breakdown.update), t1 = 128.0 * (in_seconds(p1.iteration_time) - u1) + u1;
  EXPECT_NEAR(r.speedup, t1 / in_seconds(r.iteration_time), 1e-9 * r.speedup);
  EXPECT_NEAR(r.efficiency, r.speedup / 64.0, 1e-12);
  EXPECT_LE(r.efficiency, 1.0);
}

// Eq. P22 on the README's mixture of experts (Mixtral-8x7B, TP 2 × PP 4 × EP 4 on 32 H100s, 256 sequences): its
// one-GPU baseline once stepped all 46.7 B parameters' optimiser for every sample (efficiency 143 %); on the same
// global batch it steps them once.
TEST(ParallelPredict, MixtureOfExpertsSpeedupWithinItsGpus) {
  Scenario sc;
  ClusterOverrides ov;
  ov.nodes = 4;
  sc.cluster = load_cluster(resolve(DataKind::cluster, "dgx-h100-ndr", "--cluster"), ov);
  sc.network = build_network(resolve_architecture("mixtral-8x7b", "NAME"));
  sc.strategy = load_strategy(resolve(DataKind::framework, "megatron-core", "--framework"));
  sc.compute.precision = Precision::bf16;
  sc.compute.optimizer = Optimizer::adamw;
  ParallelLayout l;
  l.tp = 2;
  l.sp = true;
  l.pp = 4;
  l.ep = 4;
  l.micro_batches = 64;  // 256 sequences over dp 4
  sc.parallel = l;
  const Prediction r = Predictor(sc).predict(32);
  EXPECT_GT(r.speedup, 1.0);
  EXPECT_LE(r.speedup, 32.0);
}

// Issue 35, item 1, for a layout: the bottleneck is the resource whose doubling gains the most, each doubling the
// layout's step again (Predictor::doubled, as explain lists it); a layout reads no input and copies none, so
// doubling storage or the host-to-GPU copies gains nothing. Its share is the time the resource holds on the step.
TEST(ParallelPredict, TheBottleneckIsTheResourceWhoseDoublingGainsTheMost) {
  for (const auto& [tp, pp, m] : {std::array{8, 2, 32}, std::array{2, 8, 16}}) {
    const Scenario sc = llama70b_on_64(tp, pp, m);
    const Predictor p(sc);
    const Prediction r = p.predict(64);
    const DoubledTimes d = p.doubled(64);
    std::size_t best = 0;
    for (std::size_t i = 0; i < kResourceCount; ++i) {
      // each slot is the scenario with that resource doubled, predicted on its own
      const Seconds alone = Predictor(with_doubled(sc, kAllResources[i]), Predictor::TimesOnly{}).predict(64).iteration_time;
      EXPECT_NEAR(in_seconds(d[i]), in_seconds(alone), 1e-12 * in_seconds(alone)) << to_string(kAllResources[i]);
      if (d[i] < d[best]) best = i;
    }
    EXPECT_EQ(d[1], r.iteration_time);  // host_to_gpu
    EXPECT_EQ(d[4], r.iteration_time);  // storage
    EXPECT_LT(d[0], r.iteration_time);  // a faster GPU shortens every stage
    EXPECT_LT(d[2], r.iteration_time);  // TP's collectives run on the NVLink inside a node
    EXPECT_LT(d[3], r.iteration_time);  // the pipeline's sends and the DP reduction cross nodes
    EXPECT_EQ(r.bottleneck, phase_of(kAllResources[best]));
    EXPECT_NEAR(r.bottleneck_gain, r.iteration_time / d[best] - 1.0, 1e-12);
    EXPECT_NEAR(r.bottleneck_share, time_on_path(kAllResources[best], r) / r.iteration_time, 1e-12);
  }
}

// With resources doubled on the topology graph, a point-to-point send (eq. P12) moves its bytes twice as fast and
// keeps its latency: a send of S with the network doubled takes what a send of S/2 took, across nodes; inside a
// node the same with the NVLink doubled; neither changes the other's sends.
TEST(ParallelPredict, DoubledLinksSpeedThePipelinesSendsOnTheGraph) {
  const Scenario sc = llama70b_on_64(8, 2, 32);
  ASSERT_TRUE(sc.cluster.topology);
  ParallelLayout inside = *sc.parallel;  // TP 4 × PP 2 on one node's 8 GPUs: the stages' pairs inside it
  inside.tp = 4;
  const Bytes s = megabytes(64);
  // TP 8 × PP 2 on 64 GPUs: the two stages on two nodes
  for (const auto& [l, gpus, r] :
       {std::tuple{*sc.parallel, 64, Resource::inter_node}, std::tuple{inside, 8, Resource::intra_node}}) {
    const LayoutPlacement at = place_layout(l, sc.cluster, gpus);
    const GroupPlacement& pp = at[ParallelGroup::pp];
    ASSERT_EQ(pp.nodes > 1, r == Resource::inter_node);
    const Cluster doubled = with_doubled(sc, r).cluster;
    const Resource other = r == Resource::inter_node ? Resource::intra_node : Resource::inter_node;
    EXPECT_NEAR(in_seconds(pipeline_p2p_time(doubled, pp, s)), in_seconds(pipeline_p2p_time(sc.cluster, pp, s * 0.5)), 1e-15);
    EXPECT_LT(pipeline_p2p_time(doubled, pp, s), pipeline_p2p_time(sc.cluster, pp, s));
    EXPECT_EQ(pipeline_p2p_time(with_doubled(sc, other).cluster, pp, s), pipeline_p2p_time(sc.cluster, pp, s));
  }
}

// GB200 NVL72 racks hold 72 GPUs; jobs take 64 of each (--gpus-per-node): 128 GPUs are two racks of 64, which a
// whole-rack placement cannot give (128 is not a multiple of 72). TP 8 × PP 2 × DP 8 then keeps each TP group in a
// rack, and its step is predicted; on the whole racks the same count is refused.
TEST(ParallelPredict, AJobOnSixtyFourGpusOfEachNvl72Rack) {
  Scenario sc = llama70b_on_64(8, 2, 32);
  ClusterOverrides ov;
  ov.nodes = 2;
  ov.fabric = FabricSpec{"infiniband", gigabytes_per_second(50), 0};
  ov.gpus_per_node = 64;
  sc.cluster = load_cluster(resolve(DataKind::cluster, "gb200-nvl72", "--cluster"), ov);
  const Prediction r = Predictor(sc).predict(128);
  EXPECT_EQ(r.nodes, 2);
  EXPECT_TRUE(place_layout(*sc.parallel, sc.cluster, 128)[ParallelGroup::tp].inside_node);
  EXPECT_GT(r.throughput_tokens_per_s, 0.0);
  ov.gpus_per_node = 0;
  sc.cluster = load_cluster(resolve(DataKind::cluster, "gb200-nvl72", "--cluster"), ov);
  EXPECT_THROW((void)Predictor(sc).predict(128), InputError);
}

TEST(ParallelPredict, FieldsNamedParallel) {
  const auto key_of = [](Scenario sc, int gpus) {
    try {
      (void)Predictor(std::move(sc)).predict(gpus);
    } catch (const InputError& e) {
      return e.key();
    }
    return std::string("none");
  };
  Scenario sc = llama70b_on_64(8, 2, 32);
  sc.parallel->tp = 3;  // does not divide 64 heads
  EXPECT_EQ(key_of(sc, 48), "parallel.tp");
  sc = llama70b_on_64(8, 2, 32);
  sc.parallel->pp = 160;  // more stages than blocks
  EXPECT_EQ(key_of(sc, 64), "parallel.pp");
  sc = llama70b_on_64(8, 2, 32);
  sc.parallel->cp = 3;  // 8192 tokens do not split into 6 chunks
  EXPECT_EQ(key_of(sc, 48), "parallel.cp");
  sc = llama70b_on_64(8, 4, 32);
  EXPECT_EQ(key_of(sc, 48), "gpus");  // tp·pp = 32 does not divide 48
}

/// Every number two predictions print, the same to 1e-9 relative (the time's parts, memory, speedup, bottleneck).
void expect_same_prediction(const Prediction& a, const Prediction& b, const std::string& what) {
  const auto near = [&what](double x, double y, const char* name) {
    EXPECT_NEAR(x, y, 1e-9 * std::max(1.0, std::abs(x))) << what << ": " << name;
  };
  near(in_seconds(a.iteration_time), in_seconds(b.iteration_time), "iteration");
  const Breakdown &p = a.breakdown, &q = b.breakdown;
  for (auto [x, y, name] : {std::tuple{p.io, q.io, "io"},
                            {p.h2d, q.h2d, "h2d"},
                            {p.forward, q.forward, "forward"},
                            {p.backward, q.backward, "backward"},
                            {p.update, q.update, "update"},
                            {p.comm, q.comm, "comm"},
                            {p.comm_exposed, q.comm_exposed, "exposed"},
                            {p.sync_wait, q.sync_wait, "sync wait"},
                            {p.overhead, q.overhead, "overhead"}})
    near(in_seconds(x), in_seconds(y), name);
  near(in_bytes(a.memory.per_gpu), in_bytes(b.memory.per_gpu), "memory");
  EXPECT_EQ(a.memory.fits, b.memory.fits) << what;
  near(a.speedup, b.speedup, "speedup");
  near(a.efficiency, b.efficiency, "efficiency");
  near(a.throughput_samples_per_s, b.throughput_samples_per_s, "samples/s");
  near(a.mfu, b.mfu, "MFU");
  EXPECT_EQ(a.bottleneck, b.bottleneck) << what;
  near(a.bottleneck_gain, b.bottleneck_gain, "bottleneck gain");
}

// Eq. P39: a layout of TP 1 × PP 1 × CP 1 × EP 1 is data parallelism, its m micro-batches gradient accumulation. For
// every shipped framework that takes a layout (the others refuse it, key "framework"), Llama-3-8B and Mixtral-8x7B
// (EP 1), micro-batch 1 and 2, without and with per-block recompute, on 8 and 16 H100s: the layout's prediction is
// the one without it at --accumulate m (the reference: the data-parallel path, eqs. 2-8, S5-S8, M1-M5). Before P39
// torchtitan's llama3-8b on 8 GPUs read 1.2927 s and 69.9 GB with --tp 1 against 1.3132 s and 83.4 GB without.
TEST(ParallelPredict, DataParallelLayoutIsThePlainPrediction) {
  ClusterOverrides two;
  two.nodes = 2;
  const Cluster cluster = load_cluster(resolve(DataKind::cluster, "dgx-h100-ndr", "--cluster"), two);
  std::vector<Network> nets;
  for (const char* name : {"llama3-8b", "mixtral-8x7b"})
    nets.push_back(load_network(resolve(DataKind::network, name, "--model")));
  int compared = 0, frameworks = 0;
  for (const std::string& fw : list_names(DataKind::framework)) {
    const Strategy st = load_strategy(resolve(DataKind::framework, fw, "--framework"));
    bool takes = false;
    for (const Network& net : nets)
      for (const int b : {1, 2})
        for (const Recompute r : {Recompute::none, Recompute::full, Recompute::selective})
          for (const int m : {1, 3}) {
            Scenario plain;
            plain.cluster = cluster;
            plain.network = net;
            plain.strategy = st;
            plain.batch_per_gpu = b;
            plain.compute.precision = Precision::bf16;
            plain.compute.optimizer = default_optimizer(net, st);
            plain.compute.recompute = r;
            plain.compute.accumulate = m;
            Scenario layout = plain;
            layout.compute.accumulate = 1;
            ParallelLayout l = st.parallel.value_or(ParallelLayout{});  // the framework's sp, order, overlaps
            l.tp = l.pp = l.cp = l.ep = l.vp = 1;
            l.micro_batch = b;
            l.micro_batches = m;
            l.global_batch_target = 0;
            layout.parallel = l;
            std::optional<Predictor> p, q;
            try {
              p.emplace(plain);
            } catch (const InputError&) {
              continue;  // a mode the framework does not run: nothing to compare
            }
            try {
              q.emplace(layout);
            } catch (const InputError& e) {
              EXPECT_EQ(e.key(), "framework") << fw << ": " << e.what();  // no all-reduce, no layout (eq. P5)
              continue;
            }
            takes = true;
            for (const int g : {8, 16}) {
              const std::string what =
                  fmt::format("{} {} b {} m {} recompute {} on {} GPUs", fw, net.name, b, m, to_string(r), g);
              expect_same_prediction(q->predict(g), p->predict(g), what);
              ++compared;
            }
          }
    frameworks += takes ? 1 : 0;
  }
  EXPECT_GE(frameworks, 20);  // of the 28 shipped, all but those that do not all-reduce
  EXPECT_GT(compared, 500);
}

// Eq. P43 by hand: Llama-3-8B on one DGX H100 (8 GPUs) under megatron-core (jitter_cv 0.0055; the test gives it an
// iteration_overhead of 2.5 ms, which its file does not have), TP 2 (SP) × PP 2 (1F1B) × DP 2, m 8. Every GPU's
// passes draw 1 + cv·z an iteration; a stage's passes wait for the slower of its 2 TP ranks, each stage for the
// other through the sends, each replica for the other at the DP reduction: the step runs at the pace of the slowest
// of all 8, E[max of 8 standard normals] = 1.4236 (Harter 1961's table). The jittered work is P7's pipeline of the
// slowest stage's passes, (m + p − 1) = 9 micro-batches of t_mb less its 2 sends:
//   sync = 0.0055 × 1.4236 × 9 × (t_mb − sends) = 0.0704682 × (t_mb − sends),   overhead = 0.0025 s,
//   step = P13's step + sync + overhead.
// The same model as data parallelism (TP 1 × PP 1, m 8: eq. P39) waits for the slowest of the 8 on its K·m = 8
// forward and backward passes, 0.0055 × 1.4236 × (f + b)·8, and pays the same 2.5 ms: both paths carry both terms.
TEST(ParallelPredict, SlowestGpuWaitAndOverheadOnALayoutByHand) {
  Scenario sc;
  sc.cluster = load_cluster(resolve(DataKind::cluster, "dgx-h100", "--cluster"));
  sc.network = load_network(resolve(DataKind::network, "llama3-8b", "--model"));
  sc.strategy = load_strategy(resolve(DataKind::framework, "megatron-core", "--framework"));
  ASSERT_DOUBLE_EQ(sc.strategy.jitter_cv, 0.0055);
  sc.strategy.iteration_overhead = seconds(0.0025);
  sc.compute.precision = Precision::bf16;
  sc.compute.optimizer = Optimizer::adamw;
  ParallelLayout l = sc.strategy.parallel.value_or(ParallelLayout{});
  l.tp = 2;
  l.sp = true;
  l.pp = 2;
  l.micro_batch = 1;
  l.micro_batches = 8;
  sc.parallel = l;
  const Predictor tp2(sc);
  const Prediction r = tp2.predict(8);
  const LayoutStep ls = tp2.layout_step(8);
  const double passes = in_seconds(ls.step.per_microbatch - ls.step.p2p);
  const double sync = 0.0055 * 1.4236 * 9.0 * passes;
  EXPECT_NEAR(in_seconds(r.breakdown.sync_wait), sync, 1e-4 * sync);
  EXPECT_DOUBLE_EQ(in_seconds(r.breakdown.overhead), 0.0025);
  EXPECT_NEAR(in_seconds(r.iteration_time), in_seconds(ls.step.step) + sync + 0.0025, 1e-4 * sync);
  EXPECT_NEAR(r.throughput_tokens_per_s, 8.0 * 2.0 * 8192.0 / in_seconds(r.iteration_time), 1e-9 * r.throughput_tokens_per_s);
  // one GPU waits for nobody and pays no synchronisation cost
  ParallelLayout one = l;
  one.tp = one.pp = 1;
  Scenario single = sc;
  single.parallel = one;
  single.parallel->sp = false;
  const Prediction r1 = Predictor(single).predict(1);
  EXPECT_EQ(r1.breakdown.sync_wait, Seconds{});
  EXPECT_EQ(r1.breakdown.overhead, Seconds{});
  // TP 1 × PP 1 on the 8 GPUs: the data-parallel path (P39), with the same two terms
  const Prediction dp = Predictor(single).predict(8);
  EXPECT_FALSE(dp.breakdown.parallel.has_value());
  const double dp_sync = 0.0055 * 1.4236 * in_seconds(dp.breakdown.forward + dp.breakdown.backward);
  EXPECT_NEAR(in_seconds(dp.breakdown.sync_wait), dp_sync, 1e-4 * dp_sync);
  EXPECT_DOUBLE_EQ(in_seconds(dp.breakdown.overhead), 0.0025);
  std::printf("TP 2 x PP 2: t_mb less sends %.6f s, sync %.6f s, step %.6f s (P13 %.6f s); TP 1: f+b %.6f s, sync %.6f s\n",
              passes, in_seconds(r.breakdown.sync_wait), in_seconds(r.iteration_time), in_seconds(ls.step.step),
              in_seconds(dp.breakdown.forward + dp.breakdown.backward), in_seconds(dp.breakdown.sync_wait));
}

}  // namespace
}  // namespace dlscale
