// The simulator's pipeline (eq. P32; issue 37): the schedules as events against a brute-force reference written
// here, a straggler against its hand-derived step, and the Simulator on layouts against the closed form (its
// reference) where the stages are alike, within the bounds docs/model.md derives where they are not.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <tuple>
#include <vector>

#include "dlscale/error.hpp"
#include "dlscale/io.hpp"
#include "dlscale/parallel.hpp"
#include "dlscale/predict.hpp"
#include "dlscale/sim/pipeline.hpp"
#include "dlscale/sim/simulator.hpp"
#include "dlscale/zoo.hpp"
#include "support/run.hpp"

namespace dlscale::sim {
namespace {

// ---- a brute-force reference: Megatron's loops written out, start times relaxed to their fixed point ----------

struct RefOp {
  char kind;  // 'F' or 'B'
  int chunk, mb;
};

/// Megatron-LM's schedules (schedules.py) as lists per stage: the virtual micro-batch id k of the interleaved loop
/// maps to chunk (k mod p·v) / p (reversed for backward) and micro-batch (k / (p·v))·p + k mod p.
std::vector<std::vector<RefOp>> reference_lists(PipelineSchedule sched, int p, int m, int v) {
  std::vector<std::vector<RefOp>> out(static_cast<std::size_t>(p));
  for (int s = 0; s < p; ++s) {
    auto& ops = out[static_cast<std::size_t>(s)];
    if (sched == PipelineSchedule::gpipe) {
      for (int j = 0; j < m; ++j) ops.push_back({'F', 0, j});
      for (int j = 0; j < m; ++j) ops.push_back({'B', 0, j});
      continue;
    }
    const int total = m * v;
    int warm = 0;
    if (sched == PipelineSchedule::one_f_one_b) warm = std::min(p - s - 1, m);
    else warm = m == p ? total : std::min((p - s - 1) * 2 + (v - 1) * p, total);
    auto f = [&](int k) { return RefOp{'F', (k % (p * v)) / p, k / (p * v) * p + k % p}; };
    auto b = [&](int k) { return RefOp{'B', v - 1 - (k % (p * v)) / p, k / (p * v) * p + k % p}; };
    for (int k = 0; k < warm; ++k) ops.push_back(f(k));
    for (int k = 0; k < total - warm; ++k) {
      ops.push_back(f(warm + k));
      ops.push_back(b(k));
    }
    for (int k = total - warm; k < total; ++k) ops.push_back(b(k));
  }
  return out;
}

/// Every op's end by relaxation: every op starts when its stage's previous op has ended and its input has arrived, the
/// sweep repeated until nothing moves (the longest path of the dependency graph). `dur(stage, op)`: the op's time on
/// its stage; a blocking send is in it, an overlapped one (`wire`) on the way and after the stage's last op.
template <class Dur>
std::map<std::tuple<int, char, int, int>, double> reference_ends(PipelineSchedule sched, int p, int m, int v, Dur dur,
                                                                 double wire = 0.0) {
  const auto lists = reference_lists(sched, p, m, v);
  std::map<std::tuple<int, char, int, int>, double> end;
  for (int s = 0; s < p; ++s)
    for (const RefOp& o : lists[static_cast<std::size_t>(s)]) end[{s, o.kind, o.chunk, o.mb}] = 0.0;
  for (bool moved = true; moved;) {
    moved = false;
    for (int s = 0; s < p; ++s) {
      double prev = -1.0;
      for (const RefOp& o : lists[static_cast<std::size_t>(s)]) {
        double start = std::max(prev, 0.0), input = 0.0;
        if (o.kind == 'F' && s > 0) input = end[{s - 1, 'F', o.chunk, o.mb}] + wire;
        if (o.kind == 'F' && s == 0 && o.chunk > 0) input = end[{p - 1, 'F', o.chunk - 1, o.mb}] + wire;
        if (o.kind == 'B' && s < p - 1) input = end[{s + 1, 'B', o.chunk, o.mb}] + wire;
        if (o.kind == 'B' && s == p - 1 && o.chunk < v - 1) input = end[{0, 'B', o.chunk + 1, o.mb}] + wire;
        if (o.kind == 'B' && s == p - 1 && o.chunk == v - 1) input = end[{s, 'F', o.chunk, o.mb}];
        start = std::max(start, input);
        double e = start + dur(s, o.kind);
        if (prev >= 0.0) e = std::max(e, prev + wire);  // the previous op's send hides behind this one
        double& slot = end[{s, o.kind, o.chunk, o.mb}];
        if (e > slot + 1e-15) {
          slot = e;
          moved = true;
        }
        prev = slot;
      }
    }
  }
  return end;
}

/// The step by relaxation (reference_ends): the last op's end and its overlapped send.
template <class Dur>
double reference_step(PipelineSchedule sched, int p, int m, int v, Dur dur, double wire = 0.0) {
  double last = 0.0;
  for (const auto& [k, e] : reference_ends(sched, p, m, v, dur, wire)) last = std::max(last, e);
  return last + wire;
}

PipelineTimes times_of(const std::vector<double>& f, const std::vector<double>& b, double send, bool overlapped) {
  PipelineTimes t;
  t.forward = f;
  t.backward = b;
  t.send = send;
  t.sends_overlapped = overlapped;
  return t;
}

// ---- the schedules against the reference ----------------------------------------------------------------------

struct Case {
  PipelineSchedule sched;
  int p, m, v;
};

TEST(SimPipeline, SchedulesMatchTheBruteForceReferenceOnUnevenStages) {
  const std::vector<Case> cases = {{PipelineSchedule::gpipe, 4, 6, 1},       {PipelineSchedule::one_f_one_b, 4, 8, 1},
                                   {PipelineSchedule::one_f_one_b, 8, 3, 1}, {PipelineSchedule::one_f_one_b, 3, 7, 1},
                                   {PipelineSchedule::interleaved, 4, 8, 2}, {PipelineSchedule::interleaved, 4, 4, 3},
                                   {PipelineSchedule::interleaved, 2, 6, 4}};
  for (const Case& c : cases) {
    for (bool overlapped : {false, true}) {
      // stages unlike each other: the first lighter, the last heavier, the backward not twice the forward
      std::vector<double> f, b;
      for (int s = 0; s < c.p; ++s) {
        f.push_back(1.0 + 0.37 * s + (s == c.p - 1 ? 0.8 : 0.0));
        b.push_back(2.1 + 0.11 * ((s * 7) % 5) + (s == c.p - 1 ? 1.3 : 0.0));
      }
      const double send = 0.23;
      const PipelineOrder order = pipeline_order(c.sched, c.p, c.m, c.v);
      const PipelineRun run = run_pipeline(order, times_of(f, b, send, overlapped));
      const double v = c.v;
      const double ref = reference_step(
          c.sched, c.p, c.m, c.v,
          [&](int s, char k) { return (k == 'F' ? f : b)[static_cast<std::size_t>(s)] / v + (overlapped ? 0.0 : send); },
          overlapped ? send : 0.0);
      EXPECT_NEAR(run.makespan, ref, 1e-9 * ref)
          << to_string(c.sched) << " p " << c.p << " m " << c.m << " v " << c.v << (overlapped ? " overlapped" : " blocking");
      EXPECT_EQ(order.ops.size(), static_cast<std::size_t>(2 * c.p * c.m * c.v));
    }
  }
}

// Eq. P7 exactly where the stages are alike: (m + (p−1)/v)·t_mb, t_mb = f + b + 2·v·send (eq. P13's blocking sends).
TEST(SimPipeline, AlikeStagesGiveTheClosedFormsPipeline) {
  for (const Case& c : {Case{PipelineSchedule::gpipe, 4, 8, 1}, Case{PipelineSchedule::one_f_one_b, 4, 8, 1},
                        Case{PipelineSchedule::one_f_one_b, 8, 3, 1}, Case{PipelineSchedule::interleaved, 4, 8, 2},
                        Case{PipelineSchedule::interleaved, 8, 16, 4}, Case{PipelineSchedule::interleaved, 4, 4, 2}}) {
    const double f = 1.3, b = 2.9, send = 0.1;
    const std::vector<double> fs(static_cast<std::size_t>(c.p), f), bs(static_cast<std::size_t>(c.p), b);
    const PipelineRun run = run_pipeline(pipeline_order(c.sched, c.p, c.m, c.v), times_of(fs, bs, send, false));
    const double t_mb = f + b + 2.0 * c.v * send;
    const double closed = in_seconds(pipeline_time(c.sched, c.p, c.m, c.v, seconds(t_mb)));
    EXPECT_NEAR(run.makespan, closed, 1e-12 * closed) << to_string(c.sched) << " p " << c.p << " m " << c.m;
    for (double busy : run.busy) EXPECT_NEAR(busy, c.m * t_mb, 1e-12 * closed);
  }
}

// A straggler by hand. 1F1B, m ≥ p, stages of passes F and B but stage k of F' ≥ F and B' ≥ B. Stage k never waits in
// the steady state (its w = p−1−k warm-up forwards take w·F' ≥ the w·(F+B) round trip of a micro-batch through the
// stages after it, and each later pair F'+B' ≥ F+B), except: its first backward waits for micro-batch 0's round trip,
// w·(F+B), of which its warm-up covered w·F'; its last waits for micro-batch m−1's, of which its w cool-down backwards
// cover w·B'. Before it the fill to stage k (k·F), after it the drain from it (k·B):
//   T = k·(F+B) + m·(F'+B') + w·(max(0, F+B−F') + max(0, F+B−B')).
// κ = 1 gives (m+p−1)·(F+B); the last stage slowed, (p−1)·(F+B) + m·(F'+B').
double straggler_by_hand(int p, int m, int k, double F, double B, double F2, double B2) {
  const double w = p - 1 - k;
  return k * (F + B) + m * (F2 + B2) + w * (std::max(0.0, F + B - F2) + std::max(0.0, F + B - B2));
}

TEST(SimPipeline, OneSlowStageOf1F1BAsDerivedByHand) {
  const int p = 4, m = 8;
  const double f = 1.0, b = 2.0;
  for (int k = 0; k < p; ++k)
    for (double kappa : {1.0, 1.25, 2.0, 4.0}) {
      const std::vector<double> fs(p, f), bs(p, b);
      const PipelineOrder order = pipeline_order(PipelineSchedule::one_f_one_b, p, m, 1);
      const PipelineRun run = run_pipeline(order, times_of(fs, bs, 0.0, false), [&](int s) { return s == k ? kappa : 1.0; });
      const double hand = straggler_by_hand(p, m, k, f, b, kappa * f, kappa * b);
      EXPECT_NEAR(run.makespan, hand, 1e-12 * hand) << "stage " << k << " κ " << kappa;
      const double ref = reference_step(PipelineSchedule::one_f_one_b, p, m, 1,
                                        [&](int s, char x) { return (x == 'F' ? f : b) * (s == k ? kappa : 1.0); });
      EXPECT_NEAR(run.makespan, ref, 1e-12 * ref);
    }
  // e.g. stage 1 at half speed: 1·3 + 8·6 + 2·(max(0, 3−2) + max(0, 3−4)) = 53, where the closed form's slowest stage
  // gives (8 + 3)·6 = 66: the stages after the slow one keep pace with it and do not add its pass to their fill
  const PipelineRun half =
      run_pipeline(pipeline_order(PipelineSchedule::one_f_one_b, p, m, 1), times_of({1, 1, 1, 1}, {2, 2, 2, 2}, 0.0, false),
                   [](int s) { return s == 1 ? 2.0 : 1.0; });
  EXPECT_NEAR(half.makespan, 53.0, 1e-12);
}

// ---- eq. P37: the DP collectives beside the pipeline ------------------------------------------------------------

/// A stage's DP stream stepped through time (dt): chunk j's collective (c each) may run from its last backward's
/// start (end E_j less its pass τ_j) once the chunk before it in backward order is done, one unit of work a unit of
/// time, but its last φ·c only once E_j has passed (its first block's gradients). The time its last chunk is done.
double stepped_reduction(std::vector<std::pair<double, double>> chunk_windows /* (E_j, τ_j), in backward order */, double c,
                         double phi, double dt) {
  double t = 0.0;
  for (const auto& [e, tau] : chunk_windows) {
    t = std::max(t, e - tau);
    for (double done = 0.0; done < c - 1e-12;) {
      if (done < (1.0 - phi) * c - 1e-12 || t >= e - 1e-12) done += dt;
      t += dt;
    }
  }
  return t;
}

// By hand (tiny numbers): 1F1B, p 2, m 2, every pass F 1, B 2; each stage's reduction c (stage 0: 1, stage 1: 6)
// overlapped with its last backward (φ ½): done = max(E − τ + c, E + φ·c). Alike, stage 0 runs F0 [0,1] F1 [1,2]
// B0 [4,6] B1 [7,9], stage 1 F0 [1,2] B0 [2,4] F1 [4,5] B1 [5,7]: stage 1 max(5 + 6, 7 + 3) = 11, stage 0 max(7 + 1,
// 9 + ½) = 9.5; the step 11. Stage 1 at half speed (F' 2, B' 4): stage 0 F0 [0,1] F1 [1,2] B0 [7,9] B1 [13,15], stage
// 1 F0 [1,3] B0 [3,7] F1 [7,9] B1 [9,13]: stage 1 starts its reduction at 9 and is done at max(9 + 6, 13 + 3) = 16,
// stage 0 at max(13 + 1, 15 + ½) = 15.5; the step 16. The straggler moved only its own stage's reduction by its own
// window; the closed form with the slow stage as every stage's and the largest c: (m + p − 1)·(F' + B') + max(φ·c,
// c − B') = 18 + 3 = 21.
TEST(SimPipeline, DpReductionBesideTheLastBackwardByHand) {
  PipelineTimes t = times_of({1, 1}, {2, 2}, 0.0, false);
  t.reduce = {1, 6};
  t.gather = {0, 0};
  t.first_share = 0.5;
  t.dp_overlap = true;
  const PipelineOrder order = pipeline_order(PipelineSchedule::one_f_one_b, 2, 2, 1);
  const PipelineRun alike = run_pipeline(order, t);
  EXPECT_NEAR(alike.makespan, 9.0, 1e-12);
  EXPECT_NEAR(alike.reduced[0], 9.5, 1e-12);
  EXPECT_NEAR(alike.reduced[1], 11.0, 1e-12);
  const PipelineRun slow = run_pipeline(order, t, [](int s) { return s == 1 ? 2.0 : 1.0; });
  EXPECT_NEAR(slow.makespan, 15.0, 1e-12);
  EXPECT_NEAR(slow.reduced[0], 15.5, 1e-12);
  EXPECT_NEAR(slow.reduced[1], 16.0, 1e-12);
  // not overlapped: after the stage's whole backward
  t.dp_overlap = false;
  const PipelineRun after = run_pipeline(order, t, [](int s) { return s == 1 ? 2.0 : 1.0; });
  EXPECT_NEAR(after.reduced[0], 16.0, 1e-12);
  EXPECT_NEAR(after.reduced[1], 19.0, 1e-12);
}

// Against the brute force on uneven stages with a straggler: the relaxed pipeline's ends, then each stage's DP stream
// stepped through time (dt 1e-4), 1F1B and interleaved (the chunks' collectives queued, chunk v−1 first).
TEST(SimPipeline, DpReductionMatchesTheSteppedStreamOnUnevenStages) {
  const double dt = 1e-4;
  for (const Case& c : {Case{PipelineSchedule::one_f_one_b, 3, 4, 1}, Case{PipelineSchedule::interleaved, 2, 4, 2},
                        Case{PipelineSchedule::gpipe, 3, 3, 1}}) {
    const std::vector<double> fs = {0.7, 1.1, 0.9}, bs = {1.5, 2.3, 1.8}, red = {2.5, 0.8, 4.1};
    const int p = c.p;
    PipelineTimes t = times_of({fs.begin(), fs.begin() + p}, {bs.begin(), bs.begin() + p}, 0.0, false);
    t.reduce = {red.begin(), red.begin() + p};
    t.first_share = 0.25;
    t.dp_overlap = true;
    const auto kappa = [](int s) { return s == 1 ? 1.6 : 1.0; };
    const PipelineRun run = run_pipeline(pipeline_order(c.sched, p, c.m, c.v), t, kappa);
    const auto ends =
        reference_ends(c.sched, p, c.m, c.v, [&](int s, char x) { return (x == 'F' ? fs[s] : bs[s]) / c.v * kappa(s); });
    for (int s = 0; s < p; ++s) {
      std::vector<std::pair<double, double>> w;
      for (int j = c.v - 1; j >= 0; --j) w.emplace_back(ends.at({s, 'B', j, c.m - 1}), bs[s] / c.v * kappa(s));
      const double ref = stepped_reduction(w, red[s] / c.v, 0.25, dt);
      EXPECT_NEAR(run.reduced[s], ref, 3.0 * c.v * dt) << to_string(c.sched) << " stage " << s;
    }
  }
}

// Eq. P37b, where P21 is not exact: interleaved p 2, m 4, v 2, alike stages of F 1 and B 2 of compute a micro-batch
// (chunk windows ½ and 1) and a blocking send of ¼ after every chunk pass, a reduction of 6 and a gather of 6 (3 a
// chunk, more than p chunk windows), φ ¼. The closed form (P7's pipeline, P21's reduction and gather, eq. P21's
// library function) against the events: at most it, at least it less P37b's (v − 1)·(max(0, 3 − 2·1) + max(0, 3 −
// 2·½)) = 3. P21 spaces the chunks' last backwards p windows apart; the events p passes, sends in them: wider.
TEST(SimPipeline, InterleavedDpCollectivesWithinP21sBound) {
  const int p = 2, m = 4, v = 2;
  const double send = 0.25;
  PipelineTimes t = times_of({1, 1}, {2, 2}, send, false);
  t.forward_window = {1, 1};
  t.backward_window = {2, 2};
  t.first_share = 0.25;
  t.dp_overlap = true;
  const PipelineOrder order = pipeline_order(PipelineSchedule::interleaved, p, m, v);
  for (const auto& [reduce, gather] : {std::pair{6.0, 0.0}, std::pair{0.0, 6.0}, std::pair{6.0, 6.0}}) {
    t.reduce = {reduce, reduce};
    t.gather = {gather, gather};
    const PipelineRun run = run_pipeline(order, t);
    const double sim = *std::max_element(run.reduced.begin(), run.reduced.end());
    const double closed = in_seconds(pipeline_time(PipelineSchedule::interleaved, p, m, v, seconds(3.0 + 2 * v * send)) +
                                     dp_overlap_exposed(seconds(reduce), seconds(1.0), 0.25, v, p) +
                                     dp_overlap_exposed(seconds(gather), seconds(0.5), 0.25, v, p));
    const double bound = (v - 1) *
        ((reduce > 0 ? std::max(0.0, reduce / v - p * 1.0) : 0.0) + (gather > 0 ? std::max(0.0, gather / v - p * 0.5) : 0.0));
    EXPECT_LE(sim, closed + 1e-12) << reduce << " " << gather;
    EXPECT_GE(sim, closed - bound - 1e-12) << reduce << " " << gather;
    std::printf("interleaved p 2 m 4 v 2, reduce %g, gather %g: closed %.4f, simulated %.4f, bound %.4f\n", reduce, gather,
                closed, sim, bound);
  }
}

// ---- the Simulator on layouts ------------------------------------------------------------------------------------

// Llama-3-70B's blocks (Meta's config.json: width 8192, 64 heads, 8 key/value heads, SwiGLU 28672, sequence 8192),
// `layers` of them; `whole` keeps the embedding, final norm and output layer, which make the first and last stages
// unlike the others (eq. P26-P27).
Network llama_blocks(int layers, bool whole) {
  Network net = build_decoder(
      DecoderShape{.layers = layers, .hidden = 8192, .heads = 64, .kv_heads = 8, .ffn = 28672, .vocab = 128256, .seq = 8192},
      "llama3-70b");
  if (whole) return net;
  const std::vector<int> block = transformer_blocks(net);
  Network only = net;
  only.layers.clear();
  for (std::size_t i = 0; i < net.layers.size(); ++i)
    if (block[i] >= 0) only.layers.push_back(net.layers[i]);
  // a last layer of no work: the closed form reads a network ending in a linear layer as ending in the output
  // projection (eq. P27, its vocabulary-parallel cross entropy), which would make the last stage unlike the others
  Layer tail;
  tail.name = "tail";
  only.layers.push_back(tail);
  return only;
}

Scenario layout_scenario(const ParallelLayout& l, bool whole, int nodes = 8) {
  Scenario sc;
  ClusterOverrides ov;
  ov.nodes = nodes;
  sc.cluster = load_cluster(resolve(DataKind::cluster, "dgx-h100-ndr", "--cluster"), ov);
  sc.network = llama_blocks(16, whole);
  sc.strategy = load_strategy(resolve(DataKind::framework, "megatron-core", "--framework"));
  sc.strategy.jitter_cv = 0.0;  // jitter off: the closed form's step
  sc.compute.precision = Precision::bf16;
  sc.compute.optimizer = Optimizer::adamw;
  sc.parallel = l;
  return sc;
}

ParallelLayout layout(int tp, int pp, int m, PipelineSchedule sched = PipelineSchedule::one_f_one_b, int vp = 1, int cp = 1) {
  ParallelLayout l;
  l.tp = tp;
  l.sp = tp > 1;
  l.pp = pp;
  l.vp = vp;
  l.schedule = sched;
  l.cp = cp;
  l.micro_batch = 1;
  l.micro_batches = m;
  l.pp_comm_overlap = false;  // eq. P25's own case below
  return l;
}

SimOptions quiet() {
  SimOptions o;
  o.iterations = 3;
  o.warmup = 1;
  return o;
}

struct Named {
  const char* name;
  ParallelLayout l;
  bool fsdp = false;
};

std::vector<Named> layouts() {
  std::vector<Named> v = {{"tp8 pp1", layout(8, 1, 4)},
                          {"tp8 pp4 1f1b", layout(8, 4, 8)},
                          {"tp4 pp4 vp2 interleaved", layout(4, 4, 8, PipelineSchedule::interleaved, 2)},
                          {"tp4 cp2 pp4 1f1b", layout(4, 4, 8, PipelineSchedule::one_f_one_b, 1, 2)},
                          {"tp8 pp4 gpipe", layout(8, 4, 6, PipelineSchedule::gpipe)},
                          {"tp8 pp2 fsdp over dp", layout(8, 2, 4), true}};
  return v;
}

// Jitter off, no straggler, stages alike (the blocks alone, 16 over p·v chunks): the simulated step is the closed
// form's, every layout.
TEST(SimPipeline, SimulatedStepEqualsTheClosedFormWhereStagesAreAlike) {
  for (const Named& n : layouts()) {
    Scenario sc = layout_scenario(n.l, false);
    if (n.fsdp) sc.strategy.sharding.stage = 3;
    sc.strategy.iteration_overhead = seconds(0.0025);  // eq. P43: both add the framework's cost per iteration
    const Simulator sim(sc, quiet());
    const Prediction closed = sim.predictor().predict(64);
    const SimResult r = sim.run(64);
    ASSERT_TRUE(r.pipeline.has_value()) << n.name;
    EXPECT_NEAR(in_seconds(r.prediction.iteration_time), in_seconds(closed.iteration_time),
                1e-9 * in_seconds(closed.iteration_time))
        << n.name;
    EXPECT_NEAR(r.prediction.throughput_tokens_per_s, closed.throughput_tokens_per_s, 1e-9 * closed.throughput_tokens_per_s)
        << n.name;
    EXPECT_NEAR(r.prediction.mfu, closed.mfu, 1e-9 * closed.mfu) << n.name;
    EXPECT_NEAR(in_seconds(r.pipeline->bubble), in_seconds(closed.breakdown.parallel->bubble),
                1e-9 * in_seconds(closed.iteration_time))
        << n.name;
    EXPECT_EQ(r.iterations.samples.size(), 2u);
  }
}

// Eq. P40 in the simulator: hybrid sharding (shard groups of a node's DP ranks, replicas across nodes) under a layout,
// stages alike, jitter off: each stage's DP collectives (P37's events: the shard group's reduce-scatter and the
// replicas' all-reduce, the all-gather) and update come from the same P40 as the closed form's, so the simulated step
// equals predict's, with the DP overlap off and on, at ZeRO-1 and at stage 3 (P20 after the pipeline). TP 4 × PP 4 on
// 64 GPUs (8 nodes of 8: 2 DP ranks a node of the DP 4, so shard groups of 2 and 2 replicas); TP 4 × PP 2 (DP 8:
// shard groups of 2, 4 replicas). The replicas' all-reduce makes the DP part differ from sharding over all.
TEST(SimPipeline, HybridShardingEqualsTheClosedForm) {
  for (const Named& n : {Named{"tp4 pp4 1f1b hsdp", layout(4, 4, 8)}, Named{"tp4 pp2 1f1b hsdp", layout(4, 2, 8)}})
    for (int stage : {1, 3})
      for (bool overlap : {false, true}) {
        ParallelLayout l = n.l;
        l.dp_comm_overlap = overlap;
        Scenario sc = layout_scenario(l, false);
        sc.strategy.sharding.stage = stage;
        sc.strategy.sharding.group = Sharding::kGroupNode;
        const Simulator sim(sc, quiet());
        const LayoutStep ls = sim.predictor().layout_step(64);
        const Prediction closed = sim.predictor().predict(64);
        const SimResult r = sim.run(64);
        const double want = in_seconds(closed.iteration_time);
        EXPECT_NEAR(in_seconds(r.prediction.iteration_time), want, 1e-9 * want) << n.name << " stage " << stage << overlap;
        Scenario whole = sc;
        whole.strategy.sharding.group = Sharding::kGroupAll;
        const LayoutStep all = Predictor(whole).layout_step(64);
        // the reduction: the shard group's reduce-scatter and the replicas' all-reduce, not the whole group's
        EXPECT_NE(in_seconds(ls.step.stage_passes[0].dp_reduce), in_seconds(all.step.stage_passes[0].dp_reduce)) << n.name;
        // the update over the shard group of 2, not the DP group
        EXPECT_NEAR(in_seconds(ls.step.update) * 2, in_seconds(all.step.update) * l.dp(64), 1e-12) << n.name;
      }
}

// Eq. P37 with the DP collectives overlapped (dp_comm_overlap: P19's reduce-scatter beside each stage's last backward,
// the distributed optimiser's all-gather beside its first forward), stages alike, jitter off. Without chunks P19 is the
// events' schedule: equal to 1e-9. Interleaved, P21 places chunk j's last backward (first forward) j·p chunk passes
// before (after) chunk 0's, the closest the schedule can put them (stage 0's last p·v backwards run back to back, its
// warm-up forwards too): the events' gaps are at least that, so the simulated step is at most the closed form's, and
// at least the pipeline with chunk 0's collectives alone: 0 ≤ closed − simulated ≤ (v − 1)·(max(0, c/v − p·τ_b) +
// max(0, a/v − p·τ_f)), τ a chunk's compute of one micro-batch.
TEST(SimPipeline, OverlappedDpCollectivesEqualTheClosedFormWhereItIsExact) {
  for (Named n : layouts()) {
    n.l.dp_comm_overlap = true;
    Scenario sc = layout_scenario(n.l, false);
    if (n.fsdp) sc.strategy.sharding.stage = 3;
    const Simulator sim(sc, quiet());
    const Prediction closed = sim.predictor().predict(64);
    const LayoutStep ls = sim.predictor().layout_step(64);
    const SimResult r = sim.run(64);
    const double want = in_seconds(closed.iteration_time), got = in_seconds(r.prediction.iteration_time);
    if (n.l.schedule != PipelineSchedule::interleaved) {
      EXPECT_NEAR(got, want, 1e-9 * want) << n.name;
      continue;
    }
    const auto& x = ls.step.stage_passes[0];
    const double v = n.l.vp, p = n.l.pp, c = in_seconds(x.dp_reduce) / v, a = in_seconds(x.dp_gather) / v;
    const double tb = in_seconds(x.backward_compute) / v, tf = in_seconds(x.forward_compute) / v;
    const double bound = (v - 1) * (std::max(0.0, c - p * tb) + std::max(0.0, a - p * tf));
    EXPECT_LE(got, want * (1 + 1e-12)) << n.name;
    EXPECT_GE(got, want - bound - 1e-9 * want) << n.name;
    std::printf("%s, dp_comm_overlap: closed %.6f s, simulated %.6f s, P37b's bound %.6f s\n", n.name, want, got, bound);
    // the exposed DP the closed form charges is P19's (P21's) part past the pipeline; the events' is no more
    EXPECT_GT(in_seconds(ls.step.dp_comm), 0.0) << n.name;
  }
}

// Stages unlike (the embedding on the first, the output layer on the last): the closed form runs every stage at the
// slowest one's t_mb (eq. P7), an approximation. What bounds the simulated pipeline (docs/model.md, eq. P32): the
// busiest stage runs its m·t_mb without a break at best; at worst every stage is as slow as the slowest forward and
// the slowest backward, (m + (p−1)/v)·(F_max + B_max + 2·v·send) (the longest path grows with every op's time, and
// alike stages give eq. P7 exactly).
TEST(SimPipeline, UnlikeStagesWithinTheirBounds) {
  for (const Named& n : layouts()) {
    const Scenario sc = layout_scenario(n.l, true);
    const Simulator sim(sc, quiet());
    const LayoutStep ls = sim.predictor().layout_step(64);
    const SimResult r = sim.run(64);
    const auto& st = ls.step;
    const double v = n.l.schedule == PipelineSchedule::interleaved ? n.l.vp : 1;
    double fmax = 0, bmax = 0, busiest = 0;
    for (const auto& x : st.stage_passes) {
      fmax = std::max(fmax, in_seconds(x.forward));
      bmax = std::max(bmax, in_seconds(x.backward));
      busiest = std::max(busiest, in_seconds(x.forward + x.backward) + 2 * v * in_seconds(st.send));
    }
    const double m = n.l.micro_batches, p = n.l.pp, pipe = in_seconds(r.pipeline->pipeline);
    EXPECT_GE(pipe, m * busiest * (1 - 1e-12)) << n.name;
    EXPECT_LE(pipe, (m + (p - 1) / v) * (fmax + bmax + 2 * v * in_seconds(st.send)) * (1 + 1e-12)) << n.name;
    // the closed form's pipeline is the slowest stage's (m + (p−1)/v)·t_mb: between the same bounds
    EXPECT_LE(pipe, in_seconds(st.pipeline) * (1 + 1e-12)) << n.name << ": 1F1B-like schedules never exceed eq. P7 here";
  }
}

// Eq. P25, the interleaved schedule's sends overlapped: the closed form leaves 2·(p−1) sends whole in the fill and
// drain; the events cross a link at each of the p·v − 1 chunk boundaries of the first forward and the last backward.
// With every pass at least a send (s ≤ f/v, b/v), overlapping only helps: the step lies between the pipeline without
// sends and the blocking sends' eq. P7.
TEST(SimPipeline, OverlappedSendsBetweenNoSendsAndBlockingSends) {
  const int p = 4, m = 8, v = 2;
  const std::vector<double> f(p, 1.0), b(p, 2.0);
  const PipelineOrder order = pipeline_order(PipelineSchedule::interleaved, p, m, v);
  for (double send : {0.0, 0.1, 0.5}) {
    const double with = run_pipeline(order, times_of(f, b, send, true)).makespan;
    const double none = in_seconds(pipeline_time(PipelineSchedule::interleaved, p, m, v, seconds(3.0)));
    const double blocking = in_seconds(pipeline_time(PipelineSchedule::interleaved, p, m, v, seconds(3.0 + 2 * v * send)));
    EXPECT_GE(with, none * (1 - 1e-12));
    EXPECT_LE(with, blocking * (1 + 1e-12));
    if (send == 0.0) {
      EXPECT_NEAR(with, none, 1e-12);
    }
  }
}

// A straggler through the Simulator: GPU 16 is stage 1 of replica 0 (tp 8, dp 2, pp 4: ranks tp fastest, then dp,
// then pp: 16 = 0 + 8·(0 + 2·1)); at half speed its stage's passes take twice as long (the sends stay). Alike stages,
// so the hand formula holds with F = f + s, B = b + s and F' = 2f + s, B' = 2b + s.
TEST(SimPipeline, AStragglerGpuSlowsItsStageAsDerived) {
  const ParallelLayout l = layout(8, 4, 8);
  SimOptions o = quiet();
  o.speed = {{16, 0.5}};
  const Simulator sim(layout_scenario(l, false), o);
  const LayoutStep ls = sim.predictor().layout_step(64);
  const RankCoordinates c = rank_coordinates(ls.layout, 64, 16);
  EXPECT_EQ(c.pp, 1);
  EXPECT_EQ(c.dp, 0);
  const double f = in_seconds(ls.step.stage_passes[1].forward), b = in_seconds(ls.step.stage_passes[1].backward),
               s = in_seconds(ls.step.send);
  const double hand = straggler_by_hand(4, 8, 1, f + s, b + s, 2 * f + s, 2 * b + s);
  const SimResult r = sim.run(64);
  EXPECT_NEAR(in_seconds(r.pipeline->pipeline), hand, 1e-9 * hand);
  EXPECT_NEAR(in_seconds(r.iterations.mean), hand + in_seconds(ls.step.dp_comm + ls.step.update), 1e-9 * hand);
  EXPECT_EQ(r.pipeline->replicas, 2);
}

// The framework's jitter: a factor 1 + cv·z per GPU and iteration, the pass of a stage waiting for the largest of its
// tp·cp ranks' (E[max of 8 standard normals] = 1.4236, by quadrature of n·x·φ(x)·Φ(x)^(n−1)). One node (dp 1), one
// stage: the step is m·t_mb·(1 + cv·z_max) + dp + update, so the pipeline's mean over many iterations sits
// cv·1.4236·m·t_mb above the closed form's. 20 000 draws: the mean of z_max within ±0.02 (5 σ, σ(z_max) ≈ 0.59).
TEST(SimPipeline, FrameworkJitterTakesTheSlowestTensorParallelRank) {
  Scenario sc = layout_scenario(layout(8, 1, 4), false);
  sc.strategy.jitter_cv = 0.02;
  SimOptions o;
  o.iterations = 20001;
  o.warmup = 1;
  const Simulator sim(sc, o);
  const LayoutStep ls = sim.predictor().layout_step(8);
  const SimResult r = sim.run(8);
  const double pipe = in_seconds(ls.step.pipeline);
  EXPECT_NEAR(in_seconds(r.pipeline->pipeline), pipe * (1 + 0.02 * 1.4236), 0.02 * 0.02 * pipe);
  EXPECT_GT(r.iterations.max, r.iterations.min);
  EXPECT_EQ(r.pipeline->replicas, 1);
}

// Eq. P43 against the simulator: megatron-core's jitter raised to cv 0.02 on 64 GPUs, Llama-3-70B's blocks (stages
// alike). Each iteration the simulator draws, per replica and stage, 1 + cv·z with z the largest of the stage's t·c
// ranks' normals, scales the stage's passes by it (not its sends), runs every replica's pipeline and waits for the
// slowest. The closed form charges cv·E[max of N]·(m + (p−1)/v)·(t_mb − sends), N = 64 (docs/model.md, P43).
// - TP 8 × PP 1 × DP 8, m 4: one stage, so a replica's pipeline is its factor times the closed form's and the step
//   waits for the largest of the 8 replicas' (each the largest of 8): the largest of 64. Exact: the simulated mean is
//   the closed form's step but for the draws.
// - TP 4 × PP 4 (1F1B) × DP 4, m 32: P43 is an upper bound (every pass at the slowest GPU's factor gives P7's pipeline
//   scaled, and the pipeline only grows with a pass), and the path through the slowest stage k* of replica r* (fill
//   to k*, (m − (p−1−k*)) micro-batches on it, two round trips through the stages after it, the drain: P32b's path)
//   bounds it below: (m − (p−1)/2)·E[max of 64] + 3(p−1)/2·(16·E[max of 4] − E[max of 64])/15 micro-batches of
//   jitter a step (k* uniform over the stages; the other 15 stage draws average what the largest leaves),
//   (30.5 × 2.3437 + 4.5 × (16 × 1.0294 − 2.3437)/15)/(35 × 2.3437) = 0.923 of P43's.
// Each against the mean of n simulated steps, within 5 standard errors (the steps' own spread over √n).
TEST(SimPipeline, FrameworkJitterOverTheLayoutAsP43Charges) {
  struct Case {
    const char* name;
    ParallelLayout l;
    double lower;  // the simulated wait's lower bound as a share of P43's, derived above
  };
  for (const Case& c : {Case{"tp8 pp1 dp8", layout(8, 1, 4), 1.0}, Case{"tp4 pp4 dp4 1f1b", layout(4, 4, 32), 0.923}}) {
    Scenario sc = layout_scenario(c.l, false);
    sc.strategy.jitter_cv = 0.02;
    SimOptions o;
    o.iterations = 1001;
    o.warmup = 1;
    const Simulator sim(sc, o);
    const Prediction closed = sim.predictor().predict(64);
    const SimResult r = sim.run(64);
    const double wait = in_seconds(closed.breakdown.sync_wait);
    const LayoutStep ls = sim.predictor().layout_step(64);
    const double mb = c.l.micro_batches + c.l.pp - 1.0;
    EXPECT_NEAR(wait, 0.02 * 2.3437 * mb * in_seconds(ls.step.per_microbatch - ls.step.p2p), 1e-4 * wait) << c.name;
    const std::vector<Seconds>& x = r.iterations.samples;
    ASSERT_EQ(x.size(), 1000u) << c.name;
    double mean = 0.0, var = 0.0;
    for (Seconds t : x) mean += in_seconds(t);
    mean /= static_cast<double>(x.size());
    for (Seconds t : x) var += (in_seconds(t) - mean) * (in_seconds(t) - mean);
    const double se = std::sqrt(var / static_cast<double>(x.size() - 1) / static_cast<double>(x.size()));
    const double without = in_seconds(closed.iteration_time) - wait;  // the step with no jitter (P13)
    EXPECT_LE(mean - without, wait + 5.0 * se) << c.name;
    EXPECT_GE(mean - without, c.lower * wait - 5.0 * se) << c.name;
    std::printf("%s: P43 %.6f s, simulated %.6f s (± %.6f), lower bound %.6f s\n", c.name, wait, mean - without, se,
                c.lower * wait);
  }
}

// Eq. P37's trace (`simulate --trace` with a layout): the last iteration's slowest replica, a track of passes and one of
// DP collectives per stage. Parsed back: one slice per op (2·m·v a stage), names saying pass, micro-batch and chunk;
// a stage's passes one after another; each pass after the one it takes its input from (the schedule's edges, docs/
// model.md P32); each chunk's reduction from within its last backward (overlapped) or after the stage's last pass, and
// done no sooner than that backward; the step from the first slice's start to the last one's end.
TEST(SimPipeline, TraceHasEveryPassInOrderAndTheDpCollectives) {
  for (bool overlap : {false, true}) {
    ParallelLayout l = layout(4, 4, 8, PipelineSchedule::interleaved, 2);
    l.dp_comm_overlap = overlap;
    SimOptions o = quiet();
    o.trace = true;
    o.speed = {{40, 0.8}};  // a straggler: the traced replica is the slowest
    const Simulator sim(layout_scenario(l, false), o);
    const SimResult r = sim.run(64);
    ASSERT_FALSE(r.trace_json.empty());
    const auto j = nlohmann::json::parse(r.trace_json);
    const int p = 4, m = 8, v = 2;
    const double eps = 2.5e-9;  // the trace's times: µs to three decimals, start and duration each rounded
    std::map<std::tuple<int, char, int, int>, std::pair<double, double>> pass;  // (stage, F/B, chunk, mb) → [t0, t1]
    std::map<int, std::vector<std::pair<double, double>>> track;
    std::map<std::pair<int, int>, std::pair<double, double>> reduction;  // (stage, chunk) → [t0, t1]
    double last = 0.0, first = 1e300;
    for (const auto& e : j["traceEvents"]) {
      if (e["ph"] != "X") continue;
      const double t0 = e["ts"].get<double>() * 1e-6, t1 = t0 + e["dur"].get<double>() * 1e-6;
      const int tid = e["tid"].get<int>();
      const std::string name = e["name"].get<std::string>();
      last = std::max(last, t1);
      first = std::min(first, t0);
      int mb = 0, chunk = 0;
      if (std::sscanf(name.c_str(), "forward mb %d chunk %d", &mb, &chunk) == 2 ||
          std::sscanf(name.c_str(), "backward mb %d chunk %d", &mb, &chunk) == 2) {
        ASSERT_EQ(tid % 2, 0) << name;
        pass[{tid / 2, name[0] == 'f' ? 'F' : 'B', chunk, mb}] = {t0, t1};
        track[tid / 2].emplace_back(t0, t1);
      } else if (std::sscanf(name.c_str(), "DP reduction chunk %d", &chunk) == 1) {
        reduction[{tid / 2, chunk}] = {t0, t1};
      } else if (name == "DP reduction") {
        reduction[{tid / 2, -1}] = {t0, t1};
      }
    }
    EXPECT_EQ(pass.size(), static_cast<std::size_t>(2 * p * m * v));
    for (auto& [s, spans] : track) {
      EXPECT_EQ(spans.size(), static_cast<std::size_t>(2 * m * v));
      std::sort(spans.begin(), spans.end());
      for (std::size_t i = 1; i < spans.size(); ++i) EXPECT_GE(spans[i].first, spans[i - 1].second - eps) << "stage " << s;
    }
    for (const auto& [k, span] : pass) {
      const auto [s, x, c, mb] = k;
      std::tuple<int, char, int, int> input{-1, 'F', 0, 0};
      if (x == 'F' && s > 0) input = {s - 1, 'F', c, mb};
      if (x == 'F' && s == 0 && c > 0) input = {p - 1, 'F', c - 1, mb};
      if (x == 'B' && s < p - 1) input = {s + 1, 'B', c, mb};
      if (x == 'B' && s == p - 1 && c < v - 1) input = {0, 'B', c + 1, mb};
      if (x == 'B' && s == p - 1 && c == v - 1) input = {s, 'F', c, mb};
      if (std::get<0>(input) >= 0) {
        EXPECT_GE(span.first, pass.at(input).second - eps) << s << x << c << mb;
      }
    }
    for (int s = 0; s < p; ++s) {
      if (!overlap) {
        ASSERT_TRUE(reduction.count({s, -1})) << s;
        EXPECT_GE(reduction.at({s, -1}).first, pass.at({s, 'B', 0, m - 1}).second - eps);
        continue;
      }
      for (int c = 0; c < v; ++c) {
        ASSERT_TRUE(reduction.count({s, c})) << s << " " << c;
        const auto& b = pass.at({s, 'B', c, m - 1});
        EXPECT_GE(reduction.at({s, c}).first, b.first - eps);
        EXPECT_GE(reduction.at({s, c}).second, b.second - eps);
      }
    }
    const double step = in_seconds(r.iterations.samples.back());
    EXPECT_NEAR(last - first, step, 1e-6 * step) << overlap;
  }
}

// Eq. P37 through the Simulator: GPU 16 at half speed (stage 1 of replica 0, as AStragglerGpuSlowsItsStageAsDerived),
// the DP reduction overlapped. In the trace every stage's reduction starts its own last backward's compute before
// that backward ends: the straggler's twice its stage's window, the others' their own, whatever the pipeline did.
TEST(SimPipeline, AStragglerMovesOnlyItsOwnStagesReductionWindow) {
  ParallelLayout l = layout(8, 4, 8);
  l.dp_comm_overlap = true;
  SimOptions o = quiet();
  o.speed = {{16, 0.5}};
  o.trace = true;
  const Simulator sim(layout_scenario(l, false), o);
  const LayoutStep ls = sim.predictor().layout_step(64);
  const SimResult r = sim.run(64);
  const auto j = nlohmann::json::parse(r.trace_json);
  std::map<int, double> last_backward_end, reduction_start;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const std::string name = e["name"].get<std::string>();
    const int tid = e["tid"].get<int>();
    const double t0 = e["ts"].get<double>() * 1e-6, t1 = t0 + e["dur"].get<double>() * 1e-6;
    if (name == "backward mb 7 chunk 0") last_backward_end[tid / 2] = t1;
    if (name == "DP reduction chunk 0") reduction_start[tid / 2] = t0;
  }
  ASSERT_EQ(last_backward_end.size(), 4u);
  ASSERT_EQ(reduction_start.size(), 4u);
  for (int s = 0; s < 4; ++s) {
    const double window = in_seconds(ls.step.stage_passes[static_cast<std::size_t>(s)].backward_compute) * (s == 1 ? 2 : 1);
    EXPECT_NEAR(last_backward_end[s] - reduction_start[s], window, 3e-9) << "stage " << s;
  }
}

TEST(SimPipeline, OptionsOfDataParallelismAloneAreRefused) {
  SimOptions o = quiet();
  o.contention = true;
  try {
    const Simulator sim(layout_scenario(layout(8, 4, 8), false), o);
    FAIL() << "accepted --contention with a layout";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "contention");
  }
}

// The command: the record's step is the simulated one, the closed form beside it predict's own; the whole model's
// stages differ, and with the jitter off (--jitter-cv 0) the step is below predict's (P32's bounds). Bad input: one
// line, exit 2, nothing on stdout.
TEST(SimPipeline, CommandPrintsTheSimulatedStepAndBubble) {
  const std::string args =
      "--cluster dgx-h100-ndr --nodes 8 --model llama3-70b --framework megatron-core --precision bf16 --gpus 64 --tp 8 "
      "--pp 4 --micro-batches 8 --format json";
  const auto r = test::run_cli("simulate " + args + " --iterations 3 --jitter-cv 0");
  const auto closed = test::run_cli("predict " + args + " --jitter-cv 0");
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(closed.status, 0) << closed.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto c = nlohmann::json::parse(closed.out);
  const auto& s = j["simulation"][0];
  const auto& pipe = s["pipeline"];
  const double predicted = c["predictions"][0]["iteration_time_s"].get<double>();
  EXPECT_NEAR(pipe["closed_form_s"].get<double>(), predicted, 1e-12 * predicted);
  EXPECT_NEAR(s["mean_s"].get<double>(), j["predictions"][0]["iteration_time_s"].get<double>(), 1e-12 * predicted);
  EXPECT_NEAR(s["mean_s"].get<double>(),
              pipe["pipeline_s"].get<double>() + pipe["dp_comm_s"].get<double>() + pipe["update_s"].get<double>(),
              1e-9 * predicted);
  EXPECT_LE(s["mean_s"].get<double>(), predicted * (1 + 1e-12));
  EXPECT_GT(pipe["bubble_s"].get<double>(), 0.0);
  EXPECT_EQ(pipe["stage_busy"].size(), 4u);
  // tokens/s scale with 1/step: the simulated record's against predict's
  const double tokens = c["predictions"][0]["throughput_tokens_per_s"].get<double>() * predicted;  // a step's: b·m·dp·s
  EXPECT_NEAR(tokens, 1.0 * 8 * 2 * 8192, 1e-6);
  EXPECT_NEAR(j["predictions"][0]["throughput_tokens_per_s"].get<double>() * s["mean_s"].get<double>(), tokens, 1e-6);
  const auto bad = test::run_cli("simulate " + args + " --contention");
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
  EXPECT_NE(bad.err.find("--contention"), std::string::npos) << bad.err;
  EXPECT_TRUE(bad.out.empty());
}

}  // namespace
}  // namespace dlscale::sim
