// The closed-form prediction: a Scenario (cluster, network, framework strategy, batch, optional
// measured profile) in, one Prediction per GPU count out. The simulator returns the same record.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dlscale/bottleneck.hpp"
#include "dlscale/cluster.hpp"
#include "dlscale/collective.hpp"
#include "dlscale/compute.hpp"
#include "dlscale/network.hpp"
#include "dlscale/parallel.hpp"
#include "dlscale/profile.hpp"
#include "dlscale/strategy.hpp"
#include "dlscale/units.hpp"

namespace dlscale {

struct Scenario {
  Cluster cluster;
  Network network;
  Strategy strategy;
  std::optional<Profile> profile;
  /// Measured per-layer times (a calibration): used as they are, before the profile's phase totals and
  /// the roofline. Must have one entry per layer of `network`.
  std::optional<LayerTimes> measured_layers;
  int batch_per_gpu = 32;
  ComputeOptions compute;  // precision, optimiser, accumulation, kernel-model parameters
  /// The compute model's layer times for this (network, GPU, batch, compute), when a caller already has
  /// them (a sweep shares them between groups that differ only in links, buckets or framework overlap);
  /// null: estimate_layer_times computes them.
  std::shared_ptr<const LayerTimes> modelled_layers;
  /// The same on the GPU doubled (with_doubled, Resource::gpu), when a caller already has them: the doubled
  /// scenario's `modelled_layers` (a sweep shares them as it shares those); null: computed.
  std::shared_ptr<const LayerTimes> modelled_layers_doubled_gpu;
  std::shared_ptr<const CollectiveModel> collectives;  // null: make_collective_model(cluster)
  /// Model parallelism (issue 37; docs/model.md, "Model parallelism"): each data-parallel replica a grid of
  /// tp·pp·cp GPUs, the step eq. P13's. Absent: data parallelism alone, as before. With it batch_per_gpu is
  /// the layout's micro-batch (the Predictor sets it) and the prediction's batch is the global b·m·dp.
  std::optional<ParallelLayout> parallel{};
};

/// Checks the values of a scenario that no type rules out: at least one node, GPU per node and sample per GPU,
/// bandwidths and latencies finite and ≥ 0, at least one pass per update, a recompute fraction in (0, 1], a
/// checkpointing mode the network can take, a jitter CV in [0, 1), offload only with a sharded optimiser
/// state, measured layer times of the network's length, an fp8 scaling the GPU runs (MX block scaling on Blackwell
/// only, key "compute.fp8_scaling"; eq. K15c). A precision the GPU lacks is not an error here (it runs at the fp32
/// rate, GpuSpec::peak). Predictor and the simulator call it; a front end may call it first.
/// Throws InputError whose key() is the field as Scenario names it ("batch_per_gpu", "compute.accumulate",
/// "cluster.inter_node.bandwidth", ...), with no file: a front end that read the value from somewhere says
/// where (the command line maps fields to its options).
void validate(const Scenario& sc);

/// Eq. P39: whether a layout is data parallelism: TP 1 × PP 1 × CP 1 × EP 1 with its micro-batches a number (not
/// resolved from a global batch per GPU count). Its sequence parallelism, rank order, schedule and overlaps then act
/// on nothing.
bool data_parallel_layout(const ParallelLayout& l) noexcept;

/// Eq. P39: a scenario whose layout is data parallelism (data_parallel_layout) as the data-parallel path takes it:
/// no layout, the micro-batch as batch_per_gpu and its m micro-batches accumulated (compute.accumulate × m), so that
/// predict, explain, simulate and the memory estimate read one model (eqs. 2-8, S5-S8, M1-M5) whether the layout was
/// written or not. Any other scenario is returned as it is. The Predictor and the Simulator call it; a front end calls
/// it after validate (the layout's refusals, e.g. a parameter server, stand).
Scenario data_parallel_form(Scenario sc);

/// The optimiser a run of `net` with `framework` takes when it names none: the framework's (`optimizer:`), else
/// the network's default (default_optimizer(net)).
Optimizer default_optimizer(const Network& net, const Strategy& framework) noexcept;
/// The precision a run with `framework` on `gpu` takes when it names none: the framework's (`precision:`), else
/// fp32; a framework's bf16 on a GPU without it (Volta, Turing) is automatic mixed precision in fp16, as its
/// runs there take it.
Precision default_precision(const Strategy& framework, const GpuSpec& gpu) noexcept;

/// The compute options a step runs with: `base` (precision, optimiser, ...) with the framework's cuDNN
/// algorithm search, the attention kernel it gets on this GPU and precision, and the precision of its gradients.
ComputeOptions step_compute(ComputeOptions base, const Strategy& framework, const GpuSpec& gpu);
/// The same for a scenario: its `compute` with its framework on its cluster's GPU.
ComputeOptions step_compute(const Scenario& sc);

/// The input one GPU's batch feeds it: the network's bytes_per_sample (decoded) times the batch per GPU.
Bytes input_per_gpu(const Scenario& sc) noexcept;

/// Whether the framework's readers prefetch this scenario's batches (eq. 4) or it waits for each (eq. 2/3):
/// `io: {prefetch: true}` and the batch's decoded input within the prefetch buffer (`io: {buffer}`), if any.
/// Predictor and Simulator take their scenario's `strategy.io_prefetch` from it.
bool reader_prefetches(const Scenario& sc) noexcept;

/// Whether a profile leaves the reader's time to the model: its `io` is the wait a prefetching framework's
/// GPU saw (io_measures: exposed) and that wait is within 1 % of the one-GPU iteration, so the reader kept up
/// and how long it took is not measured (docs/input-formats.md, "Profile"). False without a profile.
bool profile_reader_modelled(const Scenario& sc) noexcept;

/// The input pipeline a prediction of `sc` runs (docs/input-formats.md, "Input pipeline"): the cluster's
/// `input:` section, unless a profile measured the I/O (profile_reader_modelled aside), the framework reads
/// bytes (`io: {reader: bytes}`) or the network's input is tokens (the section's dataset is images to
/// decode), from real data; null means Section IV-A's reader.
const InputPipeline* input_pipeline(const Scenario& sc) noexcept;

struct Breakdown {
  Seconds io{}, h2d{}, forward{}, backward{}, update{};
  Seconds comm{};          // total aggregation time, as if nothing overlapped it
  Seconds comm_exposed{};  // the part of it that lengthens the iteration
  Seconds sync_wait{};     // waiting for the slowest of N jittered workers (E[max of N] · σ)
  Seconds overhead{};      // the framework's fixed per-iteration cost (Strategy::iteration_overhead)
  // The input pipeline (Cluster::input; zero without one): io = max(io_storage, io_decode) per node.
  Seconds io_storage{};      // reading a node's samples from its storage tier
  Seconds io_decode{};       // decoding them on the node's CPU loader workers
  Seconds gpu_decode{};      // GPU time decoding one GPU's batch (DALI), on the GPU side
  Seconds reader_loss{};     // how much longer the iteration is than its GPU side: the reader-bound loss
  Seconds input_handover{};  // eq. F2a: the prefetched batch's fixed hand-over, on the GPU side (0 unprefetched)
  // Eq. K20, the host's issue floor: the part of forward, backward and update that the phase waits for the host
  // to issue its kernels beyond the GPU's own work in it (zero where the floor does not bind, and for measured
  // or profiled times). Part of forward, backward and update, not beside them.
  Seconds forward_host{}, backward_host{}, update_host{};
  // CPU offload of the optimiser state (docs/model.md, eq. S9; zero without it). `update` is then
  // offload_cpu + offload_h2d, the step on the critical path.
  Seconds offload_d2h{};          // the gradient shard to the host, as if nothing overlapped it (S9a)
  Seconds offload_d2h_exposed{};  // the part of it after the last reduce-scatter has ended
  Seconds offload_cpu{};          // CPU Adam on the node's shards (S9b)
  Seconds offload_h2d{};          // the updated shard back to the GPU (S9c)
  Bytes offload_bytes{};          // bytes over PCIe per GPU and step, both ways (S9a + S9c)
  /// A model-parallel step's parts (eq. P13; absent without Scenario::parallel): per step, on the slowest stage.
  struct Parallel {
    Seconds tp_comm{};          // TP/SP collectives exposed, all micro-batches
    Seconds cp_comm{};          // CP's K/V ring past the attention cores
    Seconds ep_comm{};          // the MoE blocks' expert-parallel all-to-alls (eq. P18)
    Seconds pp_p2p{};           // the sends between stages
    Seconds bubble{};           // the pipeline's fill and drain
    Seconds dp_comm{};          // the gradients over the dp·cp group
    Seconds embedding_grads{};  // eq. P33: a tied word embedding's gradient between the first and last stage
    int slowest_stage = 0;
    std::vector<Bytes> stage_memory;  // per pipeline stage, one rank's (eq. P10)
  };
  std::optional<Parallel> parallel{};
};

/// Names the resource that bounds an iteration, for people: "inter-node network (56 Gb/s)". The text is
/// made when asked for, so that a Prediction stays cheap to make and to copy (a sweep makes millions):
/// it holds a shared description of the scenario's resources and which one it is.
class ResourceName {
 public:
  struct Table;  // a Predictor's resources (predict.cpp)
  enum class Which : std::uint8_t {
    none,
    io,
    h2d,
    compute,
    comm_intra,
    comm_inter,
    update,
    fixed,
    io_storage,
    io_decode,
    host_issue
  };

  ResourceName() = default;
  /// A fixed text (the simulator names the busiest link it saw).
  explicit ResourceName(std::string text);
  ResourceName(std::shared_ptr<const Table> table, Which which, bool measured) noexcept;

  [[nodiscard]] std::string str() const;  // "" when there is none
  [[nodiscard]] bool empty() const noexcept { return which_ == Which::none || !table_; }

 private:
  std::shared_ptr<const Table> table_;
  Which which_ = Which::none;
  bool measured_ = false;  // " [measured]": a measured communication total set the time
};

/// One GPU's memory for a training step (include/dlscale/memory.hpp) and whether the GPU holds it.
struct MemoryUse {
  Bytes per_gpu{};
  Bytes capacity{};
  bool fits = true;
  // Of per_gpu, what the step's tensors hold at its peak (torch.cuda.max_memory_allocated's measure) and that
  // with the caching allocator's slack (max_memory_reserved's); per_gpu adds the CUDA context and workspaces.
  Bytes allocated{};
  Bytes allocator_reserved{};
  // CPU offload (eq. S9d): what one node's host memory holds, its size, and whether it holds it; zero
  // without offload.
  Bytes host_per_node{};
  Bytes host_capacity{};
  bool host_fits = true;
};

struct Prediction {
  int gpus = 1;
  int nodes = 1;
  int batch_per_gpu = 0;
  Seconds iteration_time{};
  double throughput_samples_per_s = 0.0;
  double throughput_tokens_per_s = 0.0;  // token inputs: samples/s × tokens per sample; 0 for images
  double mfu = 0.0;  // model FLOPs utilisation: 3 × forward FLOPs per sample × samples/s / (GPUs × dense peak)
  double hfu = 0.0;  // hardware FLOPs utilisation: as MFU with the recomputed forward FLOPs counted
  double speedup = 1.0;
  double efficiency = 1.0;
  int hiding_case = 0;     // 1 or 2 for layer-wise/bucketed overlap; 0 when nothing overlaps
  int boundary_layer = 0;  // C in Case 2
  // The bottleneck (bottleneck.hpp): the resource whose doubling gains the most samples/s.
  Bottleneck bottleneck = Bottleneck::compute;
  ResourceName bottleneck_resource;  // .str(): e.g. "inter-node network (56 Gb/s)"
  double bottleneck_gain = 0.0;      // doubling it: t_iter / t_iter(doubled) − 1
  double bottleneck_share = 0.0;     // its time on the critical path / t_iter
  Breakdown breakdown;
  MemoryUse memory;
};

/// A model-parallel scenario's layout as run on a GPU count (m resolved from a global batch) and its step (eq. P13).
struct LayoutStep {
  ParallelLayout layout;
  ParallelStep step;
};

/// Each unit's aggregation time in an unsharded step (docs/model.md, eq. 2-10's t_c of every layer or bucket) under the
/// strategy's aggregation: ring all-reduce, parameter server, hybrid (all-reduce in the node, a parameter server
/// across nodes) or broadcast + reduce, with the collective model's times() over the units in order, input side first
/// (a transport's sequence costs, eq. transport-3, charged to its first and last units). The closed form (predict) and
/// the simulator (a static bucket plan) both take their times from here.
void aggregation_times(const Strategy& strategy, const CollectiveModel& coll, std::span<const Bytes> unit_bytes,
                       const GpuPlacement& at, std::span<Seconds> out);

/// Prepares the per-layer times of a scenario once, then predicts any GPU count cheaply.
class Predictor {
 public:
  /// Calls validate(scenario) first: its InputError when a value is out of range.
  explicit Predictor(Scenario scenario);
  /// For what-if searches that read only times (explain's bucket and target searches, plan, the doubled
  /// scenarios themselves): its predictions leave the bottleneck unnamed and nothing is doubled.
  struct TimesOnly {};
  Predictor(Scenario scenario, TimesOnly);
  ~Predictor();
  Predictor(Predictor&&) noexcept;
  Predictor& operator=(Predictor&&) noexcept;

  /// Throws InputError (key "gpus") when the cluster cannot hold `gpus`.
  [[nodiscard]] Prediction predict(int gpus) const;
  /// The iteration time of `gpus` GPUs with each resource doubled (with_doubled in resources.hpp; the doubled
  /// scenarios are prepared on the first call): what `explain` prints and the bottleneck is chosen by.
  [[nodiscard]] DoubledTimes doubled(int gpus) const;
  [[nodiscard]] std::vector<Prediction> predict(std::span<const int> gpu_counts) const;
  /// A model-parallel scenario's step on `gpus` stage by stage, what predict(gpus) reports of it (the simulator's
  /// pipeline, eq. P32, reads it). InputError("parallel") without Scenario::parallel; predict's errors otherwise.
  [[nodiscard]] LayoutStep layout_step(int gpus) const;
  /// The scenario as predicted: its compute options are step_compute's and its `strategy.io_prefetch` is
  /// reader_prefetches' (false for a batch larger than the framework's prefetch buffer).
  [[nodiscard]] const Scenario& scenario() const noexcept;
  [[nodiscard]] const LayerTimes& layer_times() const noexcept;

  /// Where `gpus` GPUs sit: as few nodes as possible, the same count on each.
  [[nodiscard]] GpuPlacement place(int gpus) const;

 private:
  struct Impl;
  /// `alone`: the scenario on one GPU, no collective beside its kernels (eq. K16 off): what a sharded step's
  /// single-GPU prediction and its speedup's baseline come from. `doubled_from`: the predictor of the scenario
  /// this one doubles a resource of, or is the one GPU alone of (its network has no layers, predict.cpp's
  /// without_layers, and they are read from `doubled_from`; a doubled one reads times only);
  /// `same_layers`: the GPU stays, and so does the work per layer.
  Predictor(Scenario scenario, TimesOnly, bool alone, const Impl* doubled_from = nullptr, bool same_layers = false);
  [[nodiscard]] const Impl& impl_for(int gpus) const noexcept;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dlscale
