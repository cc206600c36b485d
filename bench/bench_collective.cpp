// The NCCL model's speed: one collective time once the graph and its channels exist (what the predictor
// pays per layer), and building the channels of a 1,024-GPU cluster from scratch (NCCL's search on a
// node — identical on all 128 — plus the 1,024-rank rings of every channel).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <numeric>

#include "dlscale/io.hpp"
#include "dlscale/topology.hpp"
#include "nccl/model.hpp"
#include "nccl/system.hpp"

namespace {

const dlscale::Cluster& cluster(const char* name) {
  using namespace dlscale;
  ::setenv("DLSCALE_DATA_DIR", DLSCALE_SOURCE_DIR, 0);
  static std::map<std::string, Cluster> cache;
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, load_cluster(resolve(DataKind::cluster, name, "--cluster"))).first;
  return it->second;
}

// busbw of a 1 GiB all-reduce on 8 GPUs of a DGX-1V, channels already searched (cached).
void BM_AllReduceTimeDgx1v(benchmark::State& state) {
  using namespace dlscale;
  const auto& t = *cluster("dgx1v").topology;
  const GpuPlacement where{8, 1, 8};
  auto ch = nccl::choose(t, nccl::default_table(), CollectiveOp::allreduce, gibibytes(1), where);  // warm the cache
  for (auto _ : state) {
    ch = nccl::choose(t, nccl::default_table(), CollectiveOp::allreduce, gibibytes(1), where);
    double us = in_us(ch.time);  // a double: DoNotOptimize on the Quantity itself lets GCC clobber it
    benchmark::DoNotOptimize(us);
  }
  ch = nccl::choose(t, nccl::default_table(), CollectiveOp::allreduce, gibibytes(1), where);
  state.counters["busbw_GBps"] = in_bytes(gibibytes(1)) / in_seconds(ch.time) * 14.0 / 8.0 / 1e9;
}
BENCHMARK(BM_AllReduceTimeDgx1v);

// The same on 1,024 GPUs (128 DGX-A100 nodes on HDR).
void BM_AllReduceTime1024(benchmark::State& state) {
  using namespace dlscale;
  const auto& t = *cluster("dgx-a100-hdr").topology;
  const GpuPlacement where{1024, 128, 8};
  auto ch = nccl::choose(t, nccl::default_table(), CollectiveOp::allreduce, gibibytes(1), where);
  for (auto _ : state) {
    ch = nccl::choose(t, nccl::default_table(), CollectiveOp::allreduce, gibibytes(1), where);
    double us = in_us(ch.time);
    benchmark::DoNotOptimize(us);
  }
  ch = nccl::choose(t, nccl::default_table(), CollectiveOp::allreduce, gibibytes(1), where);
  state.counters["busbw_GBps"] = in_bytes(gibibytes(1)) / in_seconds(ch.time) * 2.0 * 1023.0 / 1024.0 / 1e9;
}
BENCHMARK(BM_AllReduceTime1024);

// Channels for 1,024 GPUs from scratch: NCCL's system and paths for a node with its 8 NICs, the ring
// search, the tree search (as many channels as the ring), and every channel's 1,024-rank ring.
template <int Which>
void BM_BuildChannels1024(benchmark::State& state) {
  using namespace dlscale;
  const auto& t = *cluster(Which == 0 ? "dgx-a100-hdr" : "dgx-h100-ndr").topology;
  const auto& table = nccl::default_table();
  std::vector<int> local(8);
  std::iota(local.begin(), local.end(), 0);
  const int nodes = 128;
  for (auto _ : state) {
    auto sys = nccl::build_system(t.impl(), local, true, table);
    const auto ring = nccl::compute_channels(sys, ChannelPattern::ring, 1, table.max_channels, table);
    auto sys2 = nccl::build_system(t.impl(), local, true, table);
    const auto tree = nccl::compute_channels(sys2, ChannelPattern::tree, ring.channels, ring.channels, table);
    std::vector<std::vector<int>> rings;
    for (const auto& order : ring.orders) {
      std::vector<int> r;
      r.reserve(static_cast<std::size_t>(nodes) * order.size());
      for (int n = 0; n < nodes; ++n)
        for (int g : order) r.push_back(n * 8 + g);
      rings.push_back(std::move(r));
    }
    benchmark::DoNotOptimize(rings.data());
    benchmark::DoNotOptimize(tree.channels);
    state.counters["channels"] = ring.channels;
  }
}
BENCHMARK_TEMPLATE(BM_BuildChannels1024, 0)->Name("BM_BuildChannels1024/dgx-a100-hdr")->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_BuildChannels1024, 1)->Name("BM_BuildChannels1024/dgx-h100-ndr")->Unit(benchmark::kMillisecond);

// Channels of one DGX-1V (8 GPUs, no NICs): the search NCCL runs at init.
void BM_BuildChannelsDgx1v(benchmark::State& state) {
  using namespace dlscale;
  const auto& t = *cluster("dgx1v").topology;
  const auto& table = nccl::default_table();
  std::vector<int> local(8);
  std::iota(local.begin(), local.end(), 0);
  for (auto _ : state) {
    auto sys = nccl::build_system(t.impl(), local, false, table);
    const auto ring = nccl::compute_channels(sys, ChannelPattern::ring, 1, table.max_channels, table);
    benchmark::DoNotOptimize(ring.channels);
  }
}
BENCHMARK(BM_BuildChannelsDgx1v)->Unit(benchmark::kMillisecond);

// Building a cluster's topology graph from its YAML: parse the file, look up the GPU, build the
// Boost graph of one node and its fabric (what `--cluster dgx-h100-ndr` costs before any search).
void BM_LoadTopologyCluster(benchmark::State& state) {
  using namespace dlscale;
  ::setenv("DLSCALE_DATA_DIR", DLSCALE_SOURCE_DIR, 0);
  const auto file = resolve(DataKind::cluster, "dgx-h100-ndr", "--cluster");
  for (auto _ : state) {
    const Cluster c = load_cluster(file);
    benchmark::DoNotOptimize(c.topology.get());
  }
}
BENCHMARK(BM_LoadTopologyCluster)->Unit(benchmark::kMicrosecond);

}  // namespace
