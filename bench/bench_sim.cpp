// Speed of the discrete-event simulator (issue 5): events per second and wall time of one ResNet-50
// iteration (PyTorch DDP buckets) on 8, 64 and 1,024 GPUs, without and with link contention.
// Targets: ≥ 5 M events/s; one 1,024-GPU iteration < 0.5 s.
// And the job `simulate` runs by default (10 iterations, 1 warm-up, the framework's jitter_cv) on 1,024 and
// 16,384 GPUs: issue 35 wants the 16,384-GPU command of bench/whole-process.sh within 1 s.
#include <benchmark/benchmark.h>

#include <filesystem>

#include "dlscale/io.hpp"
#include "dlscale/sim/simulator.hpp"

namespace {

using namespace dlscale;

Scenario resnet50_ddp() {
  Scenario sc;
  const std::filesystem::path root(DLSCALE_SOURCE_DIR);
  sc.network = load_network(root / "models/resnet50.yaml");
  sc.strategy = load_strategy(root / "models/frameworks/pytorch-ddp.yaml");
  // a hand-written cluster big enough for 16,384 GPUs: 2,048 nodes × 8 V100-class GPUs
  Cluster& c = sc.cluster;
  c.name = "bench-128x8";
  c.max_nodes = 2048;
  c.gpus_per_node = 8;
  c.gpu.name = "V100-like";
  c.gpu.peak_fp32 = teraflops_per_second(15.7);
  c.gpu.peak_fp16 = teraflops_per_second(125);
  c.gpu.memory_bandwidth = gigabytes_per_second(900);
  c.h2d_pinned = gigabytes_per_second(12);
  c.h2d_pageable = gigabytes_per_second(8);
  c.intra_node = LinkSpec{gigabytes_per_second(130), microseconds(3.4)};
  c.inter_node = LinkSpec{gigabits_per_second(100), microseconds(14)};
  c.disk = gigabytes_per_second(2);
  c.page_cache = gigabytes_per_second(10);
  sc.batch_per_gpu = 64;
  return sc;
}

void BM_SimulateResNet50Iteration(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  sim::SimOptions opt;
  opt.iterations = 1;
  opt.warmup = 0;
  opt.contention = state.range(1) != 0;
  const sim::Simulator simulator(resnet50_ddp(), opt);
  std::uint64_t events = 0;
  for (auto _ : state) {
    const auto r = simulator.run(gpus);
    events += r.events;
    benchmark::DoNotOptimize(r.prediction.iteration_time);
  }
  state.counters["events_per_iteration"] =
      benchmark::Counter(static_cast<double>(events) / static_cast<double>(state.iterations()));
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SimulateResNet50Iteration)
    ->ArgNames({"gpus", "contention"})
    ->Args({8, 0})
    ->Args({64, 0})
    ->Args({1024, 0})
    ->Args({8, 1})
    ->Args({64, 1})
    ->Args({1024, 1})
    ->Unit(benchmark::kMillisecond);

// The CLI's default job: 10 iterations with 1 warm-up, pytorch-ddp's jitter_cv (0.0055), no contention.
void BM_SimulateResNet50Job(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  const sim::Simulator simulator(resnet50_ddp(), sim::SimOptions{});
  std::uint64_t events = 0;
  for (auto _ : state) {
    const auto r = simulator.run(gpus);
    events += r.events;
    benchmark::DoNotOptimize(r.prediction.iteration_time);
  }
  state.counters["events_per_job"] = benchmark::Counter(static_cast<double>(events) / static_cast<double>(state.iterations()));
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SimulateResNet50Job)->ArgName("gpus")->Arg(1024)->Arg(16384)->Unit(benchmark::kMillisecond);

}  // namespace
