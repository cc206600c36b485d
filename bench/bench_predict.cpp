// Closed-form prediction speed (target: under 1 µs for one ResNet-50 prediction at one GPU count).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <initializer_list>

#include "dlscale/io.hpp"
#include "dlscale/plan.hpp"
#include "dlscale/predict.hpp"
#include "dlscale/zoo.hpp"

namespace {

dlscale::Scenario resnet50_scenario() {
  using namespace dlscale;
  ::setenv("DLSCALE_DATA_DIR", DLSCALE_SOURCE_DIR, 0);
  Scenario sc;
  sc.cluster = load_cluster(resolve(DataKind::cluster, "shi-chu-p40", "--cluster"));
  sc.network = load_network(resolve(DataKind::network, "resnet50", "--model"));
  sc.strategy = load_strategy(resolve(DataKind::framework, "caffe-mpi", "--framework"));
  sc.batch_per_gpu = 32;
  return sc;
}

// One prediction at 16 GPUs (4 nodes) of a prepared scenario, NCCL's model on the P40 cluster's graph: per-layer communication
// for every learnable layer, the exact overlap recurrence, the hiding case and the bottleneck.
void BM_PredictResNet50(benchmark::State& state) {
  const dlscale::Predictor p(resnet50_scenario(), dlscale::Predictor::TimesOnly{});
  const int gpus = static_cast<int>(state.range(0));
  for (auto _ : state) {
    auto r = p.predict(gpus);
    benchmark::DoNotOptimize(r);
  }
  state.counters["layers"] = static_cast<double>(p.scenario().network.layers.size());
}
BENCHMARK(BM_PredictResNet50)->Arg(16)->Arg(4);

// The whole record: the bottleneck named by re-predicting with each of five resources doubled (issue 35).
void BM_PredictResNet50NamingTheBottleneck(benchmark::State& state) {
  const dlscale::Predictor p(resnet50_scenario());
  for (auto _ : state) {
    auto r = p.predict(16);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_PredictResNet50NamingTheBottleneck);

// The same with the α-β ring over the cluster's simple links instead of NCCL's model on its graph.
void BM_PredictResNet50AlphaBeta(benchmark::State& state) {
  auto sc = resnet50_scenario();
  sc.collectives = dlscale::make_alpha_beta_model(sc.cluster);
  const dlscale::Predictor p(std::move(sc), dlscale::Predictor::TimesOnly{});
  const int gpus = static_cast<int>(state.range(0));
  for (auto _ : state) {
    auto r = p.predict(gpus);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_PredictResNet50AlphaBeta)->Arg(16);

// Preparing a scenario (per-layer roofline times, aggregation units, the one-GPU baseline).
void BM_PrepareResNet50(benchmark::State& state) {
  const auto sc = resnet50_scenario();
  for (auto _ : state) {
    dlscale::Predictor p(sc);
    benchmark::DoNotOptimize(&p);
  }
}
BENCHMARK(BM_PrepareResNet50);

/// plan's search over the frameworks named, timed.
void run_plan(benchmark::State& state, const dlscale::Scenario& sc, int gpus, std::initializer_list<const char*> frameworks) {
  using namespace dlscale;
  PlanSpace space;
  for (const char* fw : frameworks) space.strategies.push_back(load_strategy(resolve(DataKind::framework, fw, "--frameworks")));
  for (auto _ : state) {
    auto r = plan(sc, gpus, space);
    benchmark::DoNotOptimize(r);
    state.counters["configurations"] = r.evaluated;
  }
}

// dlscale plan's search for Llama-2-7B on 2 × 8 H100 (issue 16's target: under a second): 7 frameworks ×
// shard groups × 7 micro-batches × 4 accumulations × checkpointing off/on = 728 predictions, NCCL's model on the graph.
void BM_PlanLlama7bTwoH100Nodes(benchmark::State& state) {
  using namespace dlscale;
  ::setenv("DLSCALE_DATA_DIR", DLSCALE_SOURCE_DIR, 0);
  Scenario sc;
  sc.cluster = load_cluster(resolve(DataKind::cluster, "dgx-h100-ndr", "--cluster"));
  sc.network = load_network(resolve(DataKind::network, "llama2-7b", "--model"));
  sc.compute.precision = Precision::bf16;
  sc.compute.optimizer = Optimizer::adamw;
  run_plan(state, sc, 16,
           {"pytorch-ddp", "deepspeed-zero1", "deepspeed-zero2", "deepspeed-zero3", "fsdp", "fsdp-shard-grad-op", "fsdp-hybrid"});
}
BENCHMARK(BM_PlanLlama7bTwoH100Nodes)->Unit(benchmark::kMillisecond);

// Issue 33's targets: one prediction of a Llama-2-70B step (80 blocks, torchtitan's FSDP2, full recompute) on 8
// DGX H100 nodes under 20 us, and plan's search over its grid under 100 ms.
dlscale::Scenario llama70b_scenario() {
  using namespace dlscale;
  ::setenv("DLSCALE_DATA_DIR", DLSCALE_SOURCE_DIR, 0);
  Scenario sc;
  ClusterOverrides ov;
  ov.nodes = 8;
  sc.cluster = load_cluster(resolve(DataKind::cluster, "dgx-h100-ndr", "--cluster"), ov);
  sc.network = build_decoder(
      DecoderShape{.layers = 80, .hidden = 8192, .heads = 64, .kv_heads = 8, .ffn = 28672, .vocab = 32000, .seq = 4096},
      "llama2-70b");
  sc.strategy = load_strategy(resolve(DataKind::framework, "torchtitan", "--framework"));
  sc.batch_per_gpu = 1;
  sc.compute.precision = Precision::bf16;
  sc.compute.optimizer = Optimizer::adamw;
  sc.compute.recompute = Recompute::full;
  return sc;
}

void BM_PredictLlama70b(benchmark::State& state) {
  const dlscale::Predictor p(llama70b_scenario(), dlscale::Predictor::TimesOnly{});
  for (auto _ : state) {
    auto r = p.predict(64);
    benchmark::DoNotOptimize(r);
  }
  state.counters["layers"] = static_cast<double>(p.scenario().network.layers.size());
}
BENCHMARK(BM_PredictLlama70b);

void BM_PlanLlama70b(benchmark::State& state) {
  run_plan(state, llama70b_scenario(), 64, {"torchtitan", "fsdp", "fsdp-hybrid", "deepspeed-zero3"});
}
BENCHMARK(BM_PlanLlama70b)->Unit(benchmark::kMillisecond);

}  // namespace
