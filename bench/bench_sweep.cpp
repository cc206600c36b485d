// Sweep throughput: closed-form configurations per second through run_sweep (spec already parsed),
// on all cores and on one, and the CSV printer. Target (issue 8): ≥ 10^6 configurations/s on 2 cores.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <tuple>

#include "dlscale/sweep.hpp"

namespace {

/// A realistic grid: 3 clusters × 4 CNNs × 5 frameworks × 3 batches × 2 precisions × 2 inter-node
/// speeds over GPU counts 1 … 32 (counts a cluster cannot hold are left out).
std::string grid_spec(const std::string& gpus) {
  return "grid:\n"
         "  cluster: [shi-chu-p40, dgx1v, dell-c4140-pcie]\n"
         "  model: [resnet50, alexnet, vgg16, googlenet]\n"
         "  framework: [caffe-mpi, pytorch-ddp, horovod, mxnet, cntk]\n"
         "  gpus: " +
      gpus +
      "\n"
      "  batch: [32, 64, 128]\n"
      "  precision: [fp32, fp16]\n"
      "  links: [{}, {inter_node: \"200 Gb/s\"}]\n";
}

/// Three simple-form clusters (no topology graph: the α-β ring), written once to a temporary folder.
std::string simple_clusters() {
  const auto dir = std::filesystem::temp_directory_path() / "dlscale-bench-sweep";
  std::filesystem::create_directories(dir);
  std::string list;
  for (const auto& [name, gpu, per_node, inter] :
       {std::tuple{"p40x4", "p40-base-clock", 4, "56 Gb/s"}, std::tuple{"v100x8", "v100-sxm2", 8, "100 Gb/s"},
        std::tuple{"a100x8", "a100-sxm4-80gb", 8, "200 Gb/s"}}) {
    const auto file = dir / (std::string(name) + ".yaml");
    std::ofstream(file) << "name: " << name << "\nnodes: 8\ngpus_per_node: " << per_node << "\ngpu: " << gpu
                        << "\nhost_to_gpu: {pinned: \"12 GB/s\"}\nintra_node: {bandwidth: \"20 GB/s\", latency: \"5 us\"}"
                        << "\ninter_node: {bandwidth: \"" << inter << "\", latency: \"14 us\"}"
                        << "\nstorage: {disk: \"2 GB/s\", page_cache: \"10 GB/s\"}\n";
    list += (list.empty() ? "" : ", ") + file.string();
  }
  return "[" + list + "]";
}

std::string simple_spec(const std::string& gpus) {
  std::string s = grid_spec(gpus);
  s.replace(s.find("[shi-chu-p40, dgx1v, dell-c4140-pcie]"), std::string("[shi-chu-p40, dgx1v, dell-c4140-pcie]").size(),
            simple_clusters());
  return s;
}

/// Warm: the spec is parsed once, so from the second run on the clusters' topology objects hold their
/// NCCL channel searches (Topology::channels caches them) and a run is evaluation only. Cold: every run
/// parses the spec afresh (not timed), so the timed run includes the channel searches.
void run(benchmark::State& state, const std::string& gpus, unsigned threads, bool graph = true, bool cold = false) {
  const std::string text = graph ? grid_spec(gpus) : simple_spec(gpus);
  dlscale::SweepSpec spec = dlscale::parse_sweep_spec(text, "bench.yaml");
  std::size_t rows = 0;
  if (!cold) (void)dlscale::run_sweep(spec, dlscale::SweepOptions{threads, nullptr, {}});  // warm the searches
  for (auto _ : state) {
    if (cold) {
      state.PauseTiming();
      spec = dlscale::parse_sweep_spec(text, "bench.yaml");
      state.ResumeTiming();
    }
    const auto r = dlscale::run_sweep(spec, dlscale::SweepOptions{threads, nullptr, {}});
    rows = r.rows.size();
    benchmark::DoNotOptimize(r.rows.data());
  }
  state.counters["configs"] = static_cast<double>(rows);
  state.counters["groups"] = static_cast<double>(spec.groups.size());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * rows));
}

std::string every_count() {
  std::string list = "[1, 2, 3";
  for (int g = 4; g <= 64; g += 4) list += ", " + std::to_string(g);
  return list + "]";
}

// Simple-form clusters (α-β ring): the Predictor alone, no NCCL channel search. Powers of two: 7 counts
// per group (a Predictor prepared for every 7 predictions); every count: up to 18.
void BM_SweepSimplePow2AllCores(benchmark::State& s) { run(s, "[1, 2, 4, 8, 16, 32, 64]", 0, false); }
void BM_SweepSimplePow2OneThread(benchmark::State& s) { run(s, "[1, 2, 4, 8, 16, 32, 64]", 1, false); }
void BM_SweepSimpleEveryCountAllCores(benchmark::State& s) { run(s, every_count(), 0, false); }
// Topology clusters (NCCL's cost model on the graph), warm and cold.
void BM_SweepPow2AllCores(benchmark::State& s) { run(s, "[1, 2, 4, 8, 16, 32]", 0); }
void BM_SweepPow2OneThread(benchmark::State& s) { run(s, "[1, 2, 4, 8, 16, 32]", 1); }
void BM_SweepEveryCountAllCores(benchmark::State& s) { run(s, every_count(), 0); }
void BM_SweepPow2AllCoresCold(benchmark::State& s) { run(s, "[1, 2, 4, 8, 16, 32]", 0, true, true); }
BENCHMARK(BM_SweepSimplePow2AllCores)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SweepSimplePow2OneThread)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SweepSimpleEveryCountAllCores)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SweepPow2AllCores)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SweepPow2OneThread)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SweepEveryCountAllCores)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SweepPow2AllCoresCold)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

void BM_SweepCsv(benchmark::State& state) {
  const dlscale::SweepSpec spec = dlscale::parse_sweep_spec(grid_spec("[1, 2, 4, 8, 16, 32]"), "bench.yaml");
  const auto r = dlscale::run_sweep(spec);
  for (auto _ : state) {
    std::ostringstream out;
    dlscale::write_sweep(out, dlscale::SweepFormat::csv, spec, r);
    benchmark::DoNotOptimize(out.str().size());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * r.rows.size()));
}
BENCHMARK(BM_SweepCsv)->Unit(benchmark::kMillisecond);

}  // namespace
