// Capacity planning on top of the closed-form Predictor: time and cost to train, and `explain` — where
// each millisecond of an iteration goes, what bounds it, what doubling each resource buys, the bucket
// size that hides the most communication, and the smallest change that reaches a target efficiency.
// docs/planning.md describes the method; every number here comes out of Predictor::predict.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dlscale/predict.hpp"
#include "dlscale/resources.hpp"
#include "dlscale/units.hpp"

namespace dlscale {

// ---- time and cost to train -------------------------------------------------------------------------

/// How much data one training run reads: `samples_per_epoch` × `epochs`.
struct TrainingWorkload {
  std::int64_t samples_per_epoch = 0;
  double epochs = 0.0;
  std::string source;  // e.g. "ImageNet-1k (1,281,167 images) × 90 epochs (default for image models)"
};

/// ImageNet-1k's training set (ILSVRC-2012): 1,281,167 images.
inline constexpr std::int64_t kImageNet1kTrainImages = 1'281'167;
/// The 90-epoch ResNet schedule (He et al. 2016; Goyal et al. 2017).
inline constexpr double kImageNetEpochs = 90.0;

/// The default workload of a network: ImageNet-1k × 90 epochs for image models; none for token models
/// (a transformer's data set varies too much: give samples and epochs explicitly).
std::optional<TrainingWorkload> default_workload(const Network& net);

/// A workload from optional user values: samples (> 0) and epochs (> 0) override the defaults; for a
/// token model without --dataset-samples the result is empty. Throws InputError ("samples", "epochs") on values ≤ 0.
std::optional<TrainingWorkload> make_workload(const Network& net, std::optional<std::int64_t> samples,
                                              std::optional<double> epochs);

struct TrainingCost {
  double iterations = 0.0;     // epochs × ceil(samples / (GPUs × batch))
  Seconds wall_time{};         // iterations × t_iter
  double gpu_hours = 0.0;      // wall_time in hours × GPUs
  std::optional<double> cost;  // gpu_hours × price per GPU-hour, when the cluster gives a price
  std::string currency;        // the price's currency ("USD")
};

/// Time to train a workload at one prediction's iteration time, and its cost on the cluster.
///   iterations = epochs · ⌈samples / B⌉,  T = iterations · t_iter,
///   GPU-hours = T[h] · N_g,  cost = GPU-hours · price per GPU-hour,
/// with B the samples one iteration trains, throughput × t_iter: N_g · M · K with K accumulated passes, and a
/// model-parallel layout's global batch b · m · dp (not N_g · M, which counts every TP, PP and CP rank's batch).
TrainingCost time_to_train(const Prediction& p, const TrainingWorkload& w, const Cluster& cluster);

// ---- explain --------------------------------------------------------------------------------------

/// One segment of the iteration's critical path. The segments add up to the iteration time.
struct PathSegment {
  std::string name;  // "io (exposed)", "h2d", "forward", "backward", "communication (exposed)", "update"
  Seconds time{};
};

/// The critical path of a prediction: io not hidden by prefetching, h2d, forward, backward,
/// communication not hidden behind backward, the update on the path (all of it after aggregation;
/// `first_update`, the input-side layer's, with per-layer updates). A model-parallel prediction's path is eq. P13's
/// parts on its slowest stage: forward, backward, TP, CP and EP exposed, PP sends, bubble, DP exposed, the tied
/// embedding's all-reduce, update (the same ten at every GPU count, so that plots stack alike).
std::vector<PathSegment> critical_path(const Prediction& p, const Strategy& s, Seconds first_update);

// The resources `explain` doubles (Resource, kAllResources) are in bottleneck.hpp, with the bottleneck they define;
// the scenario with one of them doubled (with_doubled) and with changed links (with_links) in resources.hpp.

struct ResourceGain {
  Resource resource = Resource::gpu;
  std::string what;            // e.g. "inter-node network 56 Gb/s -> 112 Gb/s"
  Seconds baseline{};          // iteration time the gain is measured against
  Seconds doubled{};           // iteration time with the resource doubled
  double throughput_gain = 0;  // baseline / doubled − 1 (0.25 = 25 % more samples/s)
  bool rescaled = false;       // a graph or calibrated collective model rescaled (rescale_links)
};

struct BucketTry {
  Bytes size{};  // zero: layer-wise (one aggregation per layer, no merging)
  Seconds iteration{};
  Seconds exposed{};  // communication not hidden
};

struct BucketAdvice {
  bool applicable = false;  // false when the framework does not overlap aggregation with backward
  std::string note;
  BucketTry current;
  BucketTry best;
  std::vector<BucketTry> tried;  // layer-wise, then 1, 2, 4, … 512 MiB
};

/// Tries layer-wise aggregation and buckets of 1 MiB … 512 MiB (powers of two; the first bucket as the
/// strategy says, capped at the bucket size) and returns the fastest; ties go to the smaller bucket.
BucketAdvice best_buckets(const Scenario& sc, int gpus);

struct Change {
  std::string kind;         // "faster NIC", "bigger batch", "mixed precision", "bucket size"
  std::string description;  // e.g. "inter-node 56 Gb/s -> 100 Gb/s (next standard speed)"
  int steps = 1;            // how far from today (NIC speeds up the ladder, batch doublings)
  Prediction prediction;
  bool reaches = false;
};

struct TargetAdvice {
  double target = 0.0;
  bool already = false;            // the configuration already reaches it
  std::optional<Change> smallest;  // the change with the fewest steps that reaches it (ties: higher efficiency)
  std::vector<Change> tried;       // the best attempt of each kind
  std::string note;                // e.g. why a kind was not tried
};

/// The standard Ethernet/InfiniBand speeds the NIC search walks up (Gb/s per port).
inline constexpr double kStandardNicGbps[] = {1, 10, 25, 40, 50, 56, 100, 200, 400, 800, 1600};

/// Searches, with the predictor, the smallest change that makes `gpus` GPUs reach `target` efficiency:
/// the next standard NIC speeds (multi-node only), the batch ×2, ×4, ×8, ×16 (while it fits the GPU's
/// memory), mixed precision (from fp32), and the best bucket size. More nodes is not a fix: efficiency
/// only falls with scale.
TargetAdvice reach_efficiency(const Scenario& sc, int gpus, double target);

struct ExplainOptions {
  std::optional<double> target_efficiency;
  std::optional<TrainingWorkload> workload;
};

struct Explanation {
  Prediction prediction;
  std::vector<PathSegment> path;
  std::vector<ResourceGain> doubling;
  BucketAdvice buckets;
  std::optional<TargetAdvice> target;
  std::optional<TrainingWorkload> workload;
  std::optional<TrainingCost> cost;
  std::string collective_model;
};

Explanation explain(const Scenario& sc, int gpus, const ExplainOptions& options);

/// The text `dlscale explain` prints.
std::string format_explanation(const Explanation& e, const Scenario& sc);
/// The same as a JSON document (`explain --format json`; docs/planning.md, "JSON of plan and explain").
std::string format_explanation_json(const Explanation& e, const Scenario& sc);
/// Explain's "time to train" section for a prediction (time_to_train of the workload; without one, what to give).
std::string format_time_to_train(const Prediction& p, const std::optional<TrainingWorkload>& w, const Scenario& sc);

// ---- plan: which strategy, micro-batch, accumulation and shard group ---------------------------------

/// What `dlscale plan` searches (docs/planning.md, "Choosing a configuration"). Every combination of a
/// strategy, a shard group (for sharded strategies: the strategy's own, all GPUs, one node), a micro-batch,
/// an accumulation count and activation checkpointing is predicted; those whose memory does not fit are
/// dropped.
struct PlanSpace {
  std::vector<Strategy> strategies;
  std::vector<int> micro_batches{1, 2, 4, 8, 16, 32, 64};
  std::vector<int> accumulations{1, 2, 4, 8};
  std::vector<bool> checkpointing{false, true};  // activation checkpointing off/on (networks of ≥ 2 layers)
  std::optional<double> target_tokens;           // token models: tokens to train on (time to train)
};

struct PlanEntry {
  std::string framework;  // the strategy's name
  int shard_group = 1;    // GPUs per shard group (1: replicas)
  int micro_batch = 1;
  int accumulate = 1;
  bool checkpointing = false;
  Prediction prediction;
  std::optional<Seconds> time_to_train;  // target_tokens / tokens per second
};

/// Why a strategy is not the plan's choice: the sentence the table prints and the fields it is made of.
struct PlanLoss {
  enum class Reason { unplaceable, out_of_memory, tie, slower };
  std::string framework;
  std::string why;  // "out of memory: …" or "12 % slower at its best (…): exposed communication …"
  Reason reason = Reason::slower;
  std::optional<PlanEntry> best;    // tie, slower: the strategy's fastest configuration that fits
  double slower = 0.0;              // tie, slower: 1 − its best's samples/s / the choice's
  std::string worst_part;           // slower: the part of the iteration that costs it most more per sample
  Seconds worst_part_per_sample{};  // slower: that part's extra time per sample against the choice (≥ 0)
  Bytes least_memory{};             // out_of_memory: the least memory per GPU any of its configurations needs
};

struct PlanResult {
  std::vector<PlanEntry> ranked;  // every configuration that fits, fastest first (samples/s; ties: less memory)
  std::vector<PlanLoss> losses;   // one per strategy other than the winner's
  int evaluated = 0;
  int out_of_memory = 0;
};

/// Searches the space on `gpus` GPUs of the base scenario (its cluster, network, precision and optimiser).
PlanResult plan(const Scenario& base, int gpus, const PlanSpace& space);

/// The text `dlscale plan` prints: the top `top` configurations and why the other strategies lose.
std::string format_plan(const PlanResult& r, const Scenario& base, int gpus, int top);
/// The same as a JSON document (`plan --format json`; the schema in docs/planning.md, "JSON of plan and explain"):
/// the top `top` configurations, each with its prediction as predict's JSON writes it, and the losses' fields.
std::string format_plan_json(const PlanResult& r, const Scenario& base, int gpus, int top);

}  // namespace dlscale
