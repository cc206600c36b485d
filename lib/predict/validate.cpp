// validate(const Scenario&): the checks every front end used to repeat (the command line's
// build_scenario, the Predictor, the simulator), once, in the library. An error is an InputError whose
// key() is the field as the struct names it ("batch_per_gpu", "compute.accumulate"); a front end that
// reads its values from somewhere else (lib/cli: command-line options) says where (cli::option_for_field).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "dlscale/compute.hpp"
#include "dlscale/error.hpp"
#include "dlscale/format.hpp"
#include "dlscale/memory.hpp"
#include "dlscale/predict.hpp"
#include "predict/parallel_predict.hpp"

namespace dlscale {
namespace {

[[noreturn]] void fail(const char* field, std::string message) { throw InputError(SourceLocation{}, field, std::move(message)); }

/// A bandwidth is a finite number ≥ 0 (0: not given, where the model allows it); a NaN fails too.
void check_rate(const char* field, BytesPerSecond b) {
  const double v = in_bytes_per_second(b);
  if (!(v >= 0.0 && std::isfinite(v))) fail(field, fmt::format("a bandwidth is a finite number ≥ 0 B/s, got {} B/s", v));
}

void check_latency(const char* field, Seconds t) {
  const double v = in_seconds(t);
  if (!(v >= 0.0 && std::isfinite(v))) fail(field, fmt::format("a latency is a finite number ≥ 0 s, got {} s", v));
}

void validate_cluster(const Cluster& c) {
  if (c.max_nodes < 1) fail("cluster.max_nodes", fmt::format("a cluster needs at least one node, got {}", c.max_nodes));
  if (c.gpus_per_node < 1) fail("cluster.gpus_per_node", fmt::format("a node needs at least one GPU, got {}", c.gpus_per_node));
  check_rate("cluster.h2d_pinned", c.h2d_pinned);
  check_rate("cluster.h2d_pageable", c.h2d_pageable);
  check_rate("cluster.intra_node.bandwidth", c.intra_node.bandwidth);
  check_latency("cluster.intra_node.latency", c.intra_node.latency);
  check_rate("cluster.inter_node.bandwidth", c.inter_node.bandwidth);
  check_latency("cluster.inter_node.latency", c.inter_node.latency);
  check_rate("cluster.disk", c.disk);
  check_rate("cluster.page_cache", c.page_cache);
  check_rate("cluster.host_memory", c.host_memory);
  if (c.input) {
    // 0 cores or workers has a meaning (not given, every core); a negative count has none.
    if (c.input->cores < 0) fail("cluster.input.cores", fmt::format("a core count cannot be negative, got {}", c.input->cores));
    if (c.input->workers_per_gpu < 0)
      fail("cluster.input.workers_per_gpu", fmt::format("a worker count cannot be negative, got {}", c.input->workers_per_gpu));
  }
}

void validate_compute(const Scenario& sc) {
  const ComputeOptions& c = sc.compute;
  if (c.accumulate < 1)
    fail("compute.accumulate", fmt::format("the number of passes per update must be at least 1, got {}", c.accumulate));
  // A precision the GPU lacks is not refused: the kernel model runs it at the fp32 rate (GpuSpec::peak), as
  // the robustness tests rely on; refusing it is the command line's choice (build_scenario).
  if (!(c.recompute_blocks > 0.0 && c.recompute_blocks <= 1.0))
    fail("compute.recompute_blocks",
         fmt::format("the fraction of recomputed blocks must lie in (0, 1], got {}", c.recompute_blocks));
  if (c.fp8_scaling != Fp8Scaling::tensorwise && c.precision != Precision::fp8)
    fail("compute.fp8_scaling",
         fmt::format("{} scaling is a recipe of fp8 training; the precision is {}", to_string(c.fp8_scaling),
                     to_string(c.precision)));
  // eq. K15c: MX block scaling runs on Blackwell's block-scaled tensor cores alone; unlike a precision the GPU lacks (run
  // at the fp32 rate above), no rate of the GPU stands for it
  if (c.precision == Precision::fp8 && !supports_fp8_scaling(sc.cluster.gpu, c.fp8_scaling))
    fail("compute.fp8_scaling", missing_fp8_scaling(sc.cluster.gpu, c.fp8_scaling, sc.cluster.name));
  if (c.fp8_all_gather) {  // eq. S12: torchao casts tensor-wise Float8Linear weights on the shard, under FSDP (stage 3)
    if (c.precision != Precision::fp8)
      fail("compute.fp8_all_gather",
           fmt::format("fp8 all-gather gathers the fp8 linear maps' weights; the precision is {}", to_string(c.precision)));
    if (c.fp8_scaling != Fp8Scaling::tensorwise)
      fail("compute.fp8_all_gather",
           fmt::format("fp8 all-gather needs tensor-wise scaling (row-wise and MX weights are gathered in bf16); the "
                       "scaling is {}",
                       to_string(c.fp8_scaling)));
    // eq. P39: a layout that is data parallelism is predicted as that (data_parallel_form), FSDP's gathers and all
    const bool layout = sc.parallel && !data_parallel_layout(*sc.parallel);
    if (sc.strategy.sharding.stage < 3 || layout)
      fail("compute.fp8_all_gather",
           layout ? std::string("fp8 all-gather is modelled for FSDP alone, not under a parallel layout")
                  : fmt::format("fp8 all-gather is FSDP's: framework '{}' does not shard the parameters (stage {})",
                                sc.strategy.name, sc.strategy.sharding.stage));
  }
  const Network& net = sc.network;
  if (c.checkpointing) {  // every segment but the last runs its forward again before its backward
    if (checkpoint_segments(net).size() < 2)
      fail("compute.checkpointing",
           fmt::format("model '{}' has {} learnable layer{}: nothing to checkpoint", net.name, net.layers.size(),
                       net.layers.size() == 1 ? "" : "s"));
  } else if (c.recompute != Recompute::none) {  // eq. R1-R3: per transformer block
    const std::vector<int> block = transformer_blocks(net);
    if (std::none_of(block.begin(), block.end(), [](int b) { return b >= 0; }))
      fail("compute.recompute", fmt::format("model '{}' has no repeated blocks to recompute", net.name));
  }
}

void validate_strategy(const Strategy& s) {
  if (!(s.jitter_cv >= 0.0 && s.jitter_cv < 1.0))
    fail("strategy.jitter_cv",
         fmt::format("a coefficient of variation is a number ≥ 0 and < 1 (0.02 for 2 %), got {}", s.jitter_cv));
  if (!(s.compute_efficiency > 0.0 && std::isfinite(s.compute_efficiency)))
    fail("strategy.compute_efficiency",
         fmt::format("a compute efficiency is a finite number > 0 (1: as modelled), got {}", s.compute_efficiency));
  if (s.sharding.group < Sharding::kGroupNode)  // eq. S1: all (0), node (-1) or a count of GPUs (data-parallel ranks)
    fail("strategy.sharding.group",
         fmt::format("a shard group is all, node or a count of at least 1 GPU, got {}", s.sharding.group));
  if (s.sharding.offload_optimizer && !s.sharding.sharded())
    fail("strategy.sharding.offload_optimizer",
         fmt::format("framework '{}' does not shard its optimiser state; offload needs sharding stage 1, 2 or 3", s.name));
}

}  // namespace

void validate(const Scenario& sc) {
  validate_cluster(sc.cluster);
  if (sc.batch_per_gpu < 1) fail("batch_per_gpu", fmt::format("the batch per GPU must be at least 1, got {}", sc.batch_per_gpu));
  validate_compute(sc);
  validate_strategy(sc.strategy);
  validate_parallel(sc);  // model parallelism (parallel_predict.cpp)
  if (sc.measured_layers) {
    const std::size_t L = sc.network.layers.size();
    const LayerTimes& ml = *sc.measured_layers;
    if (ml.forward.size() != L || ml.backward.size() != L || ml.update.size() != L)
      fail("measured_layers",
           fmt::format("measured layer times have {} entries, the model '{}' has {} layers", ml.forward.size(), sc.network.name,
                       L));
  }
}

}  // namespace dlscale
