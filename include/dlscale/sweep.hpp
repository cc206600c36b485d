// Sweeps: many configurations (clusters × models × frameworks × GPU counts × batch sizes × precisions
// × fp8 scalings × bucket sizes × link overrides × model-parallel layouts) evaluated in parallel, in a deterministic order,
// ranked and written as CSV or JSON lines. The spec format is in docs/planning.md; `dlscale sweep --spec FILE` is the front end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dlscale/cluster.hpp"
#include "dlscale/network.hpp"
#include "dlscale/plan.hpp"
#include "dlscale/predict.hpp"
#include "dlscale/strategy.hpp"

namespace dlscale {

/// Replacements for the simple-form links of a cluster (cluster.hpp). Unset members keep the file's.
struct LinkOverrides {
  std::string label = "-";             // e.g. "inter_node=200 Gb/s"; "-" for no override
  std::optional<LinkSpec> intra_node;  // bandwidth (and latency if given)
  std::optional<LinkSpec> inter_node;
  std::optional<BytesPerSecond> host_to_gpu;  // pinned and pageable alike
  std::optional<BytesPerSecond> storage;      // disk and page cache alike
  [[nodiscard]] bool empty() const noexcept { return !intra_node && !inter_node && !host_to_gpu && !storage; }
};

/// The cluster with the overrides applied (simple-form links only; a sweep rescales a topology
/// cluster's NCCL model with rescale_links, plan.hpp).
Cluster apply_overrides(const Cluster& c, const LinkOverrides& o);

/// One group of configurations that share a prepared Predictor: everything but the GPU count.
/// Members index the SweepSpec's tables.
struct SweepGroup {
  std::size_t cluster = 0, model = 0, framework = 0, links = 0;
  int batch = 32;
  Precision precision = Precision::fp32;
  Fp8Scaling fp8_scaling = Fp8Scaling::tensorwise;  // the `fp8_scaling` axis (eq. K15, K15c); tensorwise unless fp8
  /// The `fp8_all_gather` key (eq. S12): set on the groups whose step it applies to (fp8, tensor-wise, a stage-3
  /// framework, no layout).
  bool fp8_all_gather = false;
  std::optional<Bytes> bucket;  // nullopt: the framework's own buckets
  /// The `layout` axis (issue 37): an index into SweepSpec::layouts, the group's Scenario::parallel; `batch` is then
  /// its micro-batch. nullopt: data parallelism.
  std::optional<std::size_t> layout;
  std::vector<int> gpus;
};

struct SweepSpec {
  std::string file;
  std::vector<Cluster> clusters;
  std::vector<Network> networks;
  std::vector<Strategy> strategies;
  std::vector<LinkOverrides> links;
  /// The `layout` axis's layouts, each read over its group's framework's `parallel:` section (as predict's --tp, --pp,
  /// ... go over it), its micro-batch the `batch` axis's where given.
  std::vector<ParallelLayout> layouts;
  /// Whether some entry has a `layout` axis: the output then carries the layout columns (write_sweep). Without one
  /// it is what it was before the axis, byte for byte.
  bool layout_columns = false;
  std::vector<SweepGroup> groups;  // in spec order: the grid (axes in file order, GPU counts innermost), then the list
  std::optional<std::int64_t> dataset_samples;  // `dataset: {samples, epochs}`; defaults: default_workload
  std::optional<double> dataset_epochs;
  [[nodiscard]] std::size_t configurations() const noexcept;
};

/// Parses a sweep spec (docs/planning.md). Every error is an InputError naming file:line:col and the key;
/// names of clusters, models and frameworks resolve like the CLI options.
SweepSpec load_sweep_spec(const std::filesystem::path& file);
SweepSpec parse_sweep_spec(const std::string& yaml_text, const std::string& display_name);

/// Evaluates one group: fills out[i] for gpus[i]. The closed form is the default; the simulator's CLI
/// plugs in its own.
class GroupEvaluator {
 public:
  virtual ~GroupEvaluator() = default;
  /// `sc` is the group's own copy: move from it freely.
  virtual void evaluate(Scenario sc, std::span<const int> gpus, std::span<Prediction> out) const = 0;
  [[nodiscard]] virtual std::string name() const = 0;
};
/// One Predictor per group, Predictor::predict for every GPU count.
const GroupEvaluator& closed_form_evaluator();

struct SweepRow {
  std::size_t group = 0;
  Prediction prediction;
  double train_hours = 0.0;  // 0 when no workload applies (token model without dataset samples)
  double gpu_hours = 0.0;
  std::optional<double> cost;  // gpu_hours × price, when the cluster has a price
  /// Why a model-parallel row cannot run (its layout invalid for the GPU count or the model: tp·pp·cp not dividing
  /// the GPUs, tp not dividing the heads, ...): the InputError's field and message; `prediction` then holds only
  /// gpus and nodes. Empty for a row that ran.
  std::string error;
};

struct SweepResult {
  std::vector<SweepRow> rows;                 // in spec order, whatever the thread count
  std::size_t skipped = 0;                    // GPU counts a cluster cannot hold (left out)
  std::vector<std::string> skipped_examples;  // up to 3 reasons, for a note on stderr
  std::size_t unsupported = 0;  // configurations whose GPU has no such precision mode or fp8 scaling (MX before Blackwell;
                                // left out: `predict` refuses them)
  std::vector<std::string> unsupported_examples;  // up to 3 reasons, for a note on stderr
  std::string evaluator;
};

struct SweepOptions {
  unsigned threads = 0;                       // 0: std::thread::hardware_concurrency()
  const GroupEvaluator* evaluator = nullptr;  // null: closed_form_evaluator()
  /// Called from the calling thread about every 100 ms while workers run: (configurations done, total).
  std::function<void(std::size_t, std::size_t)> progress;
};

SweepResult run_sweep(const SweepSpec& spec, const SweepOptions& options = {});

/// Part `index` (1-based) of a sweep split `count` ways (`dlscale sweep --shard I/N`).
struct SweepShard {
  std::size_t index = 1, count = 1;
};
/// Parses "I/N" (1 ≤ I ≤ N); throws InputError("shard", …).
SweepShard sweep_shard_from_string(std::string_view s);

/// The configurations of part `shard` of `spec`: the spec's configurations (group × GPU count, in spec
/// order, counting those a cluster cannot hold) numbered 0..C-1, part I of N keeps numbers
/// [⌊(I−1)·C/N⌋, ⌊I·C/N⌋). Groups keep their order and lose the GPU counts outside the part (groups
/// left empty are dropped), so the rows of parts 1..N, in order, are the rows of the whole sweep.
/// Throws InputError("shard", …) when N exceeds C (a part would be empty).
SweepSpec shard_sweep_spec(const SweepSpec& spec, SweepShard shard);

/// `dlscale sweep merge`: the parts of a sharded sweep, in the order given, as one output equal byte for
/// byte to the unsharded sweep. CSV parts each start with the header, which is written once; JSON-lines
/// parts are concatenated. Every part must be of the format of the first, end with a newline, and (CSV)
/// start with the header; otherwise an InputError names the file, line and column.
std::string merge_sweep_parts(std::span<const std::filesystem::path> parts);

/// The Scenario of a group (for callers that evaluate groups themselves).
Scenario group_scenario(const SweepSpec& spec, const SweepGroup& g);

enum class SweepFormat { csv, jsonl };
SweepFormat sweep_format_from_string(std::string_view s);  // throws InputError("format", …)
/// throughput: samples/s; tokens: tokens/s (token models only: a sweep of language models of different sequence
/// lengths compares by it; rows without tokens are left out of the ranking); efficiency; cost.
enum class SweepRank { throughput, efficiency, cost, tokens };
SweepRank sweep_rank_from_string(std::string_view s);  // throws InputError("rank", …)

/// Whether a configuration can run: its memory fits the GPU (and, offloading, the host).
bool fits_in_memory(const Prediction& p) noexcept;
/// Whether a row ran (no error) and fits in memory.
bool fits_in_memory(const SweepRow& row) noexcept;

/// Row indices of the best `k` rows among those that ran and fit in memory (`fits_in_memory`): highest throughput
/// (samples/s), highest tokens/s (of the rows of token models), highest efficiency, or lowest cost (GPU-hours when some
/// cluster has no price). `note` says what was left out of the ranking and why. Ties keep spec order.
std::vector<std::size_t> top_rows(const SweepSpec& spec, const SweepResult& r, std::size_t k, SweepRank by,
                                  std::string* note = nullptr);

/// CSV (header + one line per row) or JSON lines (one object per row); `rows` selects and orders them
/// (empty: all rows in spec order). A JSON line is a flat record of its own, one configuration per line:
///   {"cluster", "model", "framework", "precision", "batch_per_gpu", "bucket", "links", then members of
///    report.hpp's Prediction record under the same names and units ("gpus", "nodes", "iteration_time_s",
///    "throughput_samples_per_s", "speedup", "efficiency", "hiding_case", "bottleneck", "bottleneck_resource",
///    "bottleneck_share", "bottleneck_gain"), its breakdown's "comm_s" and "comm_exposed_s", its memory's
///    per_gpu_bytes as "memory_per_gpu_bytes", "memory_fits" (fits_in_memory: GPU and host), "train_hours",
///    "gpu_hours", "cost", "currency" (null where they do not apply), "throughput_tokens_per_s" (the Prediction
///    record's), "tokens_per_s_per_gpu" (its share of one GPU) (both null for other than token models), "mfu" and
///    "hfu" (Prediction::mfu, hfu)}; CSV has these four as its last columns (before the layout's), empty where JSON has
///    null.
/// With a `layout` axis in the spec (SweepSpec::layout_columns), CSV and JSON lines alike append "tp", "pp", "vp",
/// "cp", "ep", "sp", "schedule", "micro_batches" (m for the row's GPU count), "global_batch" (b·m·dp samples) (empty,
/// null, for a data-parallel row), and "error" (SweepRow::error; empty, null, for a row that ran, whose other fields
/// are then empty, null).
void write_sweep(std::ostream& out, SweepFormat f, const SweepSpec& spec, const SweepResult& r,
                 std::span<const std::size_t> rows = {});

}  // namespace dlscale
