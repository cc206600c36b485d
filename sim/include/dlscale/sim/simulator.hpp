// The discrete-event simulator of S-SGD training iterations (issue 5).
//
// It takes the same Scenario as the closed-form Predictor and returns the same Prediction record,
// plus what only a simulation knows: the distribution of iteration times, per-resource utilisation,
// the bucket plan that was used and, on request, a Chrome/Perfetto trace.
//
// With its extras off (one channel, no link contention, no jitter, no straggler, the strategy's own
// aggregation units) the simulated steady-state iteration equals the closed form's exact recurrence
// (eq. 4 + "How we read equations 5-7" in shared/docs/model.md). docs/simulator.md lists what each
// extra adds.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "dlscale/gpu.hpp"
#include "dlscale/predict.hpp"
#include "dlscale/sim/merge.hpp"
#include "dlscale/units.hpp"

namespace dlscale::sim {

enum class MergePolicy {
  strategy,  // what the framework strategy says: per layer, or DDP buckets when it is bucketed
  none,      // one bucket per layer
  ddp,       // PyTorch DDP buckets (first bucket, then bucket size)
  horovod,   // Horovod tensor fusion (fusion threshold, cycle time)
  mgwfbp,    // MG-WFBP's greedy merge with the α-β fit of the collective
  best       // every policy above and a sweep of DDP bucket sizes; the fastest is reported
};
std::string_view to_string(MergePolicy m) noexcept;
MergePolicy merge_policy_from_string(std::string_view s);  // throws InputError("merge", …)

enum class AllreduceAlgorithm {
  ring,         // the collective model's all-reduce; with contention: one ring flow per channel
  tree,         // pipelined binary tree across nodes, chain inside a node (NCCL's tree, algbw = busbw/2)
  hierarchical  // reduce-scatter in each node, all-reduce across nodes per local rank, all-gather
};
std::string_view to_string(AllreduceAlgorithm a) noexcept;
AllreduceAlgorithm allreduce_algorithm_from_string(std::string_view s);  // throws InputError("allreduce", …)

struct SimOptions {
  int iterations = 10;     // iterations simulated
  int warmup = 1;          // leading iterations left out of the statistics (prefetch pipeline fill)
  std::uint64_t seed = 1;  // seeds every random stream (std::mt19937_64 + our own distributions)

  // communication
  bool contention = false;  // false: each aggregation takes the collective model's time on one FIFO
                            // channel; true: aggregations become flows on links shared max-min fairly
  int channels = 1;         // rings (flows) per collective with contention
  AllreduceAlgorithm allreduce = AllreduceAlgorithm::ring;

  // gradient merging
  MergePolicy merge = MergePolicy::strategy;
  Bytes bucket_size{};                   // DDP: zero = the strategy's (or 25 MiB)
  Bytes first_bucket{};                  // DDP: zero = the strategy's (or 1 MiB)
  Bytes fusion_threshold{};              // Horovod: zero = the strategy's bucket size (or 64 MiB)
  Seconds cycle_time = milliseconds(5);  // Horovod: HOROVOD_CYCLE_TIME

  // input pipeline
  int readers_per_node = 1;      // reader threads per node (eq. 4: one)
  int prefetch_depth = 0;        // batches each GPU's queue holds when the strategy prefetches (0: the strategy's, 2 by default)
  Seconds decode_per_sample{};   // CPU decode time per sample on the reader thread (0: already decoded)
  int gpus_per_pcie_switch = 1;  // with contention: GPUs whose host-to-GPU copies share one PCIe uplink

  // variability
  double compute_jitter = 0.0;                    // σ of a log-normal factor (mean 1) on every compute task
  double link_jitter = 0.0;                       // σ of a log-normal factor (mean 1) on every aggregation
  std::vector<std::pair<int, double>> speed;      // GPU index → speed factor (0.5: a straggler at half speed)
  std::vector<std::pair<int, GpuSpec>> node_gpu;  // node index → a different GPU model (heterogeneous job)

  // trace
  bool trace = false;       // build SimResult::trace_json
  int trace_max_gpus = 64;  // GPUs whose streams are traced (links and the channel always are)
};

/// A model-parallel scenario (Scenario::parallel) runs as eq. P32's pipeline, one per data-parallel replica, each
/// pass as eq. P13 times it on its stage: the framework's jitter_cv draws a factor per GPU and iteration (1 + cv·z,
/// as for data parallelism) and compute_jitter one per pass (log-normal), the tp·cp ranks of a stage taking the
/// largest of theirs (they meet in every block's collectives); `speed` slows the passes of the stage and replica the
/// GPU is in (the slowest of its ranks); link_jitter scales the data-parallel collectives after the pipeline.
/// Contention, merge policies, another all-reduce, node_gpu, the input pipeline's options and the trace are
/// data-parallel only, and refused.
///
/// Checks the options' values that no type rules out (at least one iteration, channel, reader; jitters, sizes
/// and times finite and ≥ 0; speed factors > 0) and what the simulator does not model for `scenario`
/// (gradient accumulation; contention or another merge policy with a sharded strategy). Simulator calls it
/// after validate(scenario). Throws InputError whose key() is the field as SimOptions names it ("iterations",
/// "compute_jitter"), or the scenario's ("compute.accumulate").
void validate(const SimOptions& options, const Scenario& scenario);

struct ResourceUse {
  std::string name;        // e.g. "gpu compute", "nic-out node 0"
  std::string kind;        // compute, copy, reader, channel, or a link kind
  int count = 1;           // resources aggregated in this line
  double busy_mean = 0.0;  // busy fraction of the simulated span, mean over the resources
  double busy_max = 0.0;   // the busiest one
  std::string busiest;     // its name
  Bytes bytes{};           // bytes carried (links)
};

struct IterationStats {
  Seconds mean{}, p50{}, p99{}, min{}, max{};
  std::vector<Seconds> samples;  // every iteration after the warm-up, in order
};

struct PlanCandidate {
  std::string policy;  // e.g. "ddp 25 MiB"
  Seconds iteration{};
  std::size_t buckets = 0;
};

/// A model-parallel layout's pipeline as simulated (eq. P32), means over the iterations after the warm-up.
struct PipelineStats {
  int stages = 1, micro_batches = 1, chunks = 1, replicas = 1;
  Seconds closed_form{};           // the closed form's step (eq. P13): the reference
  Seconds pipeline{};              // the slowest replica's pipeline, first forward to last backward
  Seconds bubble{};                // pipeline − the busiest stage's own time (eq. P7's bubble where stages are alike)
  Seconds dp_comm{}, update{};     // eq. P37: the step past the pipeline, less the update and eq. P33's; the update
  std::vector<double> stage_busy;  // per stage, its busy share of the pipeline (mean over replicas and iterations)
};

struct SimResult {
  Prediction prediction;  // the record `predict` prints; iteration_time = mean steady-state iteration
  IterationStats iterations;
  std::string merge;                      // the policy used (for best: the winner)
  std::vector<Bucket> buckets;            // the plan used (Horovod: the fused buckets of the last iteration)
  std::vector<PlanCandidate> candidates;  // --merge best: every plan tried
  std::vector<ResourceUse> utilisation;
  std::uint64_t events = 0;
  double simulated_seconds = 0.0;
  std::string trace_json;                 // Chrome/Perfetto trace-event JSON when options.trace
  std::optional<PipelineStats> pipeline;  // Scenario::parallel only
};

class Simulator {
 public:
  /// validate(scenario), then validate(options, scenario): their InputError when a value is out of range.
  Simulator(Scenario scenario, SimOptions options);
  ~Simulator();
  Simulator(Simulator&&) noexcept;
  Simulator& operator=(Simulator&&) noexcept;

  /// Throws InputError as Predictor::place does for a GPU count the cluster cannot hold ("gpus"), and for an
  /// option the run cannot take at that count ("contention", "node_gpu").
  [[nodiscard]] SimResult run(int gpus) const;
  [[nodiscard]] std::vector<SimResult> run(std::span<const int> gpu_counts) const;
  [[nodiscard]] const Predictor& predictor() const noexcept;
  [[nodiscard]] const SimOptions& options() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dlscale::sim
