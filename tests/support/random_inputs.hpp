// Test helper: seeded random inputs for the property tests of tests/robustness_test.cpp.
//
// The generator is std::mt19937_64 (its output is fixed by the standard), and every distribution is
// written here: std::uniform_*_distribution and friends are implementation-defined and give different
// values under libstdc++ and libc++, so a failure found on one would not reproduce on the other.
//
// Ranges are the extremes issue 9 names: messages 1 B … 1 TB, 1 … 100,000 GPUs, bandwidths 1 Mb/s …
// 10 TB/s, latencies 0 … 1 s, batch 1 … 65,536, layers with 0 parameters, networks of 1 … 1,000 layers,
// fp32 / tf32 / mixed fp16. Every value is valid in the sense of the loaders (lib/loaders/):
// bandwidths and FLOP rates > 0, sizes and times ≥ 0, at least one layer, a positive input size.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "dlscale/cluster.hpp"
#include "dlscale/network.hpp"
#include "dlscale/predict.hpp"
#include "dlscale/strategy.hpp"

namespace dlscale::test {

inline constexpr double kMinBandwidth = 1e6 / 8;  // 1 Mb/s in B/s
inline constexpr double kMaxBandwidth = 10e12;    // 10 TB/s
inline constexpr double kMaxMessage = 1e12;       // 1 TB
inline constexpr int kMaxGpus = 100'000;
inline constexpr int kMaxBatch = 65'536;
inline constexpr int kMaxLayers = 1'000;

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : g_(seed) {}

  std::uint64_t bits() { return g_(); }
  /// Uniform in [0, 1): the top 53 bits of one draw.
  double unit() { return static_cast<double>(g_() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * unit(); }
  /// Log-uniform in [lo, hi] (lo > 0): every decade equally likely.
  double log_uniform(double lo, double hi) { return std::exp(std::log(lo) + (std::log(hi) - std::log(lo)) * unit()); }
  /// Log-uniform, but the two ends themselves with probability `ends` each: extremes get hit.
  double extreme(double lo, double hi, double ends = 0.1) {
    const double u = unit();
    if (u < ends) return lo;
    if (u < 2 * ends) return hi;
    return log_uniform(lo, hi);
  }
  /// Integer in [lo, hi], uniform (modulo bias is immaterial at these ranges).
  std::int64_t integer(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(g_() % static_cast<std::uint64_t>(hi - lo + 1));
  }
  /// Integer in [lo, hi], log-uniform, with the ends hit with probability `ends` each.
  std::int64_t extreme_integer(std::int64_t lo, std::int64_t hi, double ends = 0.1) {
    const auto v = static_cast<std::int64_t>(std::llround(extreme(static_cast<double>(lo), static_cast<double>(hi), ends)));
    return v < lo ? lo : v > hi ? hi : v;
  }
  bool chance(double p) { return unit() < p; }
  template <class T>
  const T& pick(std::span<const T> items) {
    return items[static_cast<std::size_t>(g_() % items.size())];
  }
  template <class T, std::size_t N>
  const T& pick(const T (&items)[N]) {
    return items[static_cast<std::size_t>(g_() % N)];
  }

 private:
  std::mt19937_64 g_;
};

/// A bandwidth between 1 Mb/s and 10 TB/s.
inline BytesPerSecond random_bandwidth(Rng& r) { return bytes_per_second(r.extreme(kMinBandwidth, kMaxBandwidth)); }

/// A latency between 0 and 1 s: exactly 0 or exactly 1 s now and then, else log-uniform from 1 ns.
inline Seconds random_latency(Rng& r) {
  const double u = r.unit();
  if (u < 0.15) return Seconds{};
  if (u < 0.2) return seconds(1.0);
  return seconds(r.log_uniform(1e-9, 1.0));
}

inline GpuSpec random_gpu(Rng& r) {
  GpuSpec g;
  g.name = "random GPU";
  g.peak_fp32 = flops_per_second(r.extreme(1e9, 1e16));
  g.peak_fp16 = g.peak_fp32 * r.uniform(1.0, 16.0);
  g.peak_tf32 = r.chance(0.5) ? g.peak_fp32 * r.uniform(1.0, 8.0) : FlopsPerSecond{};
  g.memory_bandwidth = random_bandwidth(r);
  g.memory_size = bytes(r.extreme(1e9, 1e12));
  g.sm_version = 80;
  return g;
}

/// A simple-form cluster (no graph) with `nodes` × `gpus_per_node` GPUs and random links.
inline Cluster random_cluster(Rng& r, int nodes, int gpus_per_node) {
  Cluster c;
  c.name = "random";
  c.max_nodes = nodes;
  c.gpus_per_node = gpus_per_node;
  c.gpu = random_gpu(r);
  c.h2d_pinned = random_bandwidth(r);
  c.h2d_pageable = random_bandwidth(r);
  c.intra_node = LinkSpec{random_bandwidth(r), random_latency(r)};
  c.inter_node = LinkSpec{random_bandwidth(r), random_latency(r)};
  c.disk = random_bandwidth(r);
  c.page_cache = random_bandwidth(r);
  c.dataset_in_page_cache = r.chance(0.5);
  return c;
}

/// A cluster big enough for up to 100,000 GPUs now and then: 1–16 GPUs per node, 1 … 100,000/g nodes.
inline Cluster random_cluster(Rng& r) {
  static constexpr int kGpn[] = {1, 2, 3, 4, 8, 16};
  const int gpn = r.pick(kGpn);
  const int nodes = static_cast<int>(r.extreme_integer(1, kMaxGpus / gpn, 0.15));
  return random_cluster(r, nodes, gpn);
}

/// A layer; parameters are 0 with probability 0.2 (pooling-like layers; issue 9's "0 parameters").
inline Layer random_layer(Rng& r, int index, std::int64_t max_params) {
  static constexpr LayerKind kKinds[] = {LayerKind::conv,      LayerKind::linear,    LayerKind::batchnorm, LayerKind::layernorm,
                                         LayerKind::embedding, LayerKind::attention, LayerKind::other};
  Layer l;
  l.name = fmt::format("l{}", index);
  l.kind = r.pick(kKinds);
  l.params = r.chance(0.2) ? 0 : r.extreme_integer(1, max_params, 0.02);
  l.forward_flops_per_sample = r.chance(0.1) ? 0.0 : r.log_uniform(1.0, 1e12);
  l.macs_per_sample = l.forward_flops_per_sample / 2;
  l.activation_bytes_per_sample = r.chance(0.1) ? 0.0 : r.log_uniform(1.0, 1e9);
  return l;
}

/// 1 … `max_layers` layers (exactly 1 and exactly `max_layers` now and then); the total gradient is
/// kept under 1 TB in fp32 (2.5·10^11 parameters).
inline Network random_network(Rng& r, int max_layers = kMaxLayers) {
  Network n;
  n.name = "random";
  n.input_kind = r.chance(0.5) ? "image" : "tokens";
  n.input_shape = {3, 224, 224};
  n.input_bytes_per_sample = bytes(r.extreme(1.0, 1e8));
  const int L = static_cast<int>(r.extreme_integer(1, max_layers, 0.1));
  const auto max_params = static_cast<std::int64_t>(2.5e11 / L);
  for (int i = 0; i < L; ++i) n.layers.push_back(random_layer(r, i, std::max<std::int64_t>(1, max_params)));
  return n;
}

inline Strategy random_strategy(Rng& r) {
  static constexpr Aggregation kAgg[] = {Aggregation::allreduce, Aggregation::parameter_server, Aggregation::hybrid,
                                         Aggregation::broadcast_reduce};
  static constexpr Overlap kOverlap[] = {Overlap::none, Overlap::layerwise, Overlap::bucketed};
  static constexpr UpdatePlacement kUpdate[] = {UpdatePlacement::per_layer, UpdatePlacement::after_aggregation,
                                                UpdatePlacement::on_root};
  Strategy s;
  s.name = "random";
  s.io_prefetch = r.chance(0.5);
  s.pinned_memory = r.chance(0.5);
  s.aggregation = r.pick(kAgg);
  s.overlap = r.pick(kOverlap);
  s.update = r.pick(kUpdate);
  s.bucket_size = bytes(r.extreme(1.0, kMaxMessage));
  s.first_bucket = r.chance(0.1) ? Bytes{} : bytes(r.extreme(1.0, kMaxMessage));
  s.parameter_servers = static_cast<int>(r.integer(0, 8));
  s.compute_efficiency = r.chance(0.5) ? 1.0 : r.uniform(0.05, 2.0);
  return s;
}

/// fp32, TF32, bf16 or fp16; the shipped or random kernel-model parameters and optimiser.
inline ComputeOptions random_compute(Rng& r) {
  ComputeOptions o;
  const Precision all[] = {Precision::fp32, Precision::tf32, Precision::bf16, Precision::fp16};
  o.precision = all[r.integer(0, 3)];
  if (r.chance(0.5)) {
    auto set = std::make_shared<KernelParamSet>();
    set->defaults.tensor_efficiency = r.uniform(0.01, 1.0);
    set->defaults.vector_efficiency = r.uniform(0.01, 1.0);
    set->defaults.conv_efficiency = r.uniform(0.01, 1.0);
    set->defaults.memory_efficiency = r.uniform(0.01, 1.0);
    set->defaults.kernel_overhead = seconds(r.uniform(0.0, 50e-6));
    o.kernel_params = set;
    const Optimizer opts[] = {Optimizer::sgd, Optimizer::momentum, Optimizer::adam, Optimizer::adamw, Optimizer::lamb};
    o.optimizer = opts[r.integer(0, 4)];
    const OptimizerImpl impls[] = {OptimizerImpl::fused, OptimizerImpl::foreach, OptimizerImpl::for_loop};
    o.optimizer_impl = impls[r.integer(0, 2)];
  }
  return o;
}

inline Scenario random_scenario(Rng& r, int max_layers = kMaxLayers) {
  Scenario sc;
  sc.cluster = random_cluster(r);
  sc.network = random_network(r, max_layers);
  sc.strategy = random_strategy(r);
  sc.batch_per_gpu = static_cast<int>(r.extreme_integer(1, kMaxBatch, 0.1));
  sc.compute = random_compute(r);
  return sc;
}

/// GPU counts the cluster holds: 1, a part of one node, whole nodes (the largest now and then).
inline std::vector<int> random_gpu_counts(Rng& r, const Cluster& c, int how_many) {
  std::vector<int> out{1};
  for (int i = 1; i < how_many; ++i) {
    if (r.chance(0.25)) {
      out.push_back(static_cast<int>(r.integer(1, c.gpus_per_node)));
    } else {
      const auto nodes = static_cast<int>(r.extreme_integer(1, c.max_nodes, 0.2));
      out.push_back(nodes * c.gpus_per_node);
    }
  }
  return out;
}

}  // namespace dlscale::test
