// plan over model-parallel layouts (issue 37's targets): Llama-3-70B on 64 H100s (8 DGX H100 nodes, NDR) under
// 1 s, Llama-3.1-405B on 1,024 H100s under 5 s; one prediction of a layout; the simulator's pipeline of a layout (eq.
// P32): 70B's TP 8 × PP 4 on 64 H100s and 405B's TP 8 × PP 8 × CP 2 × DP 8 on 1,024 (issue 37's layout) well under 1 s.
#include <benchmark/benchmark.h>

#include <cstdlib>

#include "dlscale/io.hpp"
#include "dlscale/parallel_plan.hpp"
#include "dlscale/predict.hpp"
#include "dlscale/sim/simulator.hpp"
#include "dlscale/zoo.hpp"

namespace {

dlscale::Scenario megatron_scenario(int nodes, const dlscale::DecoderShape& shape, const char* name) {
  using namespace dlscale;
  ::setenv("DLSCALE_DATA_DIR", DLSCALE_SOURCE_DIR, 0);
  Scenario sc;
  ClusterOverrides ov;
  ov.nodes = nodes;
  sc.cluster = load_cluster(resolve(DataKind::cluster, "dgx-h100-ndr", "--cluster"), ov);
  sc.network = build_decoder(shape, name);
  sc.strategy = load_strategy(resolve(DataKind::framework, "megatron-core", "--framework"));
  sc.compute.precision = Precision::bf16;
  sc.compute.optimizer = Optimizer::adamw;
  sc.batch_per_gpu = 1;
  return sc;
}

dlscale::Scenario llama3_70b() {
  return megatron_scenario(
      8, {.layers = 80, .hidden = 8192, .heads = 64, .kv_heads = 8, .ffn = 28672, .vocab = 128256, .seq = 8192}, "llama3-70b");
}

dlscale::Scenario llama31_405b() {
  return megatron_scenario(
      128, {.layers = 126, .hidden = 16384, .heads = 128, .kv_heads = 8, .ffn = 53248, .vocab = 128256, .seq = 8192},
      "llama3.1-405b");
}

void run_parallel_plan(benchmark::State& state, const dlscale::Scenario& sc, int gpus) {
  const dlscale::ParallelPlanSpace space;
  for (auto _ : state) {
    auto r = dlscale::plan_parallel(sc, gpus, space);
    state.counters["evaluated"] = r.evaluated;
    state.counters["fit"] = static_cast<double>(r.ranked.size());
    benchmark::DoNotOptimize(r);
  }
}

void BM_PlanParallel70b(benchmark::State& state) { run_parallel_plan(state, llama3_70b(), 64); }
BENCHMARK(BM_PlanParallel70b)->Unit(benchmark::kMillisecond);

void BM_PlanParallel405b(benchmark::State& state) { run_parallel_plan(state, llama31_405b(), 1024); }
BENCHMARK(BM_PlanParallel405b)->Unit(benchmark::kMillisecond);

void BM_PredictParallel70b(benchmark::State& state) {
  dlscale::Scenario sc = llama3_70b();
  dlscale::ParallelLayout l;
  l.tp = 8;
  l.sp = true;
  l.pp = 2;
  l.micro_batches = 32;
  sc.parallel = l;
  const dlscale::Predictor p(sc, dlscale::Predictor::TimesOnly{});
  for (auto _ : state) {
    auto r = p.predict(64);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_PredictParallel70b)->Unit(benchmark::kMicrosecond);

/// Ten simulated steps of a layout with the framework's jitter on (megatron-core's jitter_cv: every replica's pipeline
/// drawn), the Simulator prepared once.
void run_simulate_parallel(benchmark::State& state, dlscale::Scenario sc, const dlscale::ParallelLayout& l, int gpus) {
  sc.parallel = l;
  const dlscale::sim::Simulator sim(sc, dlscale::sim::SimOptions{});
  for (auto _ : state) {
    auto r = sim.run(gpus);
    state.counters["events"] = static_cast<double>(r.events);
    benchmark::DoNotOptimize(r);
  }
}

void BM_SimulateParallel70b(benchmark::State& state) {
  dlscale::ParallelLayout l;
  l.tp = 8;
  l.sp = true;
  l.pp = 4;
  l.micro_batches = 32;
  run_simulate_parallel(state, llama3_70b(), l, 64);
}
BENCHMARK(BM_SimulateParallel70b)->Unit(benchmark::kMillisecond);

void BM_SimulateParallel405b(benchmark::State& state) {
  dlscale::ParallelLayout l;
  l.tp = 8;
  l.sp = true;
  l.pp = 8;
  l.cp = 2;
  l.micro_batches = 64;
  run_simulate_parallel(state, llama31_405b(), l, 1024);
}
BENCHMARK(BM_SimulateParallel405b)->Unit(benchmark::kMillisecond);

}  // namespace
