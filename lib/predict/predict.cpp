// The closed-form combiner: per-layer times + a collective model + a framework strategy -> Prediction.
// Which equation applies (shared/docs/model.md):
//   overlap none                    eq. 2 (I/O not prefetched) or eq. 4 (prefetched)
//   layer-wise, update per layer    exact recurrence, t_f + done(1) + t_u^(1)   (eq. 6/7 in the paper)
//   layer-wise, update after        exact recurrence, t_f + done(1) + t_u       (eq. 10 in the paper)
//   bucketed                        the same recurrence over buckets instead of layers
// and the I/O of the iteration is added (eq. 2) or hidden by prefetching (eq. 4).
#include "dlscale/predict.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <mutex>
#include <numeric>
#include <tuple>
#include <unordered_map>

#include "dlscale/equations.hpp"
#include "dlscale/error.hpp"
#include "dlscale/format.hpp"
#include "dlscale/input_pipeline.hpp"
#include "dlscale/kernels.hpp"
#include "dlscale/memory.hpp"
#include "dlscale/resources.hpp"
#include "dlscale/sharding.hpp"
#include "predict/parallel_predict.hpp"

namespace dlscale {

std::shared_ptr<const CollectiveModel> make_collective_model(const Cluster& cluster);

namespace {

/// A unit of aggregation: one layer (layer-wise), one bucket (bucketed) or one layer (no overlap).
/// Units are stored input side first, like layers.
struct Unit {
  Seconds forward{};         // forward time of the layers in the unit (sharded stage 3: before it, its all-gather)
  Seconds backward{};        // backward time of the layers in the unit
  Seconds update{};          // update time of the layers in the unit
  Bytes gradient{};          // gradient bytes the unit aggregates
  double params = 0.0;       // the parameters whose gradients those are (sharded stage 3: those it gathers, eq. S4b)
  bool held = false;         // sharded stage 3, eq. S4b: the root, gathered once and held to the end of the backward
  double fp8_weights = 0.0;  // sharded stage 3, eq. S12: of its gathered parameters, the fp8 linear maps' weight elements
};

std::vector<Unit> make_units(const Network& net, const LayerTimes& t, const Strategy& s, double bytes_per_element) {
  const std::size_t L = net.layers.size();
  std::vector<Unit> units;
  if (s.sharding.stage >= 3) {  // FSDP/ZeRO-3: the gather units (eq. S4, S4b) are also the units of aggregation
    for (const GatherUnit& g : gather_units(net, s.sharding)) {
      Unit u;
      for (int i = g.first; i <= g.last; ++i) {
        const auto k = static_cast<std::size_t>(i);
        u.forward += t.forward[k];
        u.backward += t.backward[k];
        u.update += t.update[k];
      }
      u.fp8_weights = unit_fp8_elements(net, g);
      // the parameters gathered and reduce-scattered with the unit (a block wrap's root holds those of every layer
      // outside the blocks; the layers after the last block gather nothing)
      u.params = static_cast<double>(g.params);
      u.gradient = bytes(u.params * bytes_per_element);
      u.held = g.held;
      units.push_back(u);
    }
    return units;
  }
  if (s.overlap != Overlap::bucketed) {
    units.resize(L);
    for (std::size_t i = 0; i < L; ++i)
      units[i] = Unit{t.forward[i], t.backward[i], t.update[i], Network::gradient_bytes(net.layers[i], bytes_per_element),
                      static_cast<double>(net.layers[i].params)};
    return units;
  }
  // PyTorch DDP's assignment: walk from the output side, add a gradient to the open bucket, close the
  // bucket once it holds at least its cap (the first bucket's cap is smaller).
  Unit open;
  bool any = false;
  Bytes cap = s.first_bucket;
  for (std::size_t k = L; k-- > 0;) {
    open.forward += t.forward[k];
    open.backward += t.backward[k];
    open.update += t.update[k];
    open.gradient += Network::gradient_bytes(net.layers[k], bytes_per_element);
    open.params += static_cast<double>(net.layers[k].params);
    any = true;
    if (open.gradient >= cap) {
      units.push_back(open);
      open = Unit{};
      any = false;
      cap = s.bucket_size;
    }
  }
  if (any) units.push_back(open);
  std::reverse(units.begin(), units.end());  // input side first
  return units;
}

}  // namespace

/// What a Predictor's bottleneck resources are, kept as numbers and formatted only by str().
struct ResourceName::Table {
  bool measured_input = false;  // a profile's measured I/O
  bool page_cache = false;
  BytesPerSecond read_bw{};
  bool pinned = false;
  BytesPerSecond h2d_bw{};
  std::string gpu_name;
  BytesPerSecond intra{}, inter{}, memory{};
  std::string fixed;
  std::optional<InputPipeline> pipeline;  // the cluster's input pipeline, when it has one
  double cpu_adam = 0.0;                  // CPU offload of the optimiser (eq. S9): params/s per node; 0 = none
  std::string framework;                  // the framework whose host issues the kernels (eq. K20)
  Seconds host_issue{};                   // its host's cost of issuing a kernel
  double issued_per_kernel = 1.0;         // the kernels its code issues per kernel the model counts
};

ResourceName::ResourceName(std::string text) : which_(Which::fixed) {
  auto t = std::make_shared<Table>();
  t->fixed = std::move(text);
  table_ = std::move(t);
}

ResourceName::ResourceName(std::shared_ptr<const Table> table, Which which, bool measured) noexcept
    : table_(std::move(table)), which_(which), measured_(measured) {}

std::string ResourceName::str() const {
  if (empty()) return {};
  const Table& t = *table_;
  std::string s;
  switch (which_) {
    case Which::none:
      break;
    case Which::io:
      s = t.measured_input
          ? std::string("input pipeline (measured; one reader per node)")
          : fmt::format("input read from {} ({}, one reader per node)", t.page_cache ? "page cache" : "disk", t.read_bw);
      break;
    case Which::h2d:
      s = fmt::format("host-to-GPU copies ({} memory, {})", t.pinned ? "pinned" : "pageable", t.h2d_bw);
      break;
    case Which::compute:
      s = fmt::format("GPU compute ({})", t.gpu_name);
      break;
    case Which::comm_intra:
      s = fmt::format("intra-node GPU links ({})", t.intra);
      break;
    case Which::comm_inter:
      s = fmt::format("inter-node network ({})", t.inter);
      break;
    case Which::update:
      s = t.cpu_adam > 0.0 ? fmt::format("optimiser step offloaded to the CPU (CPU Adam {:.3g} params/s per node)", t.cpu_adam)
                           : fmt::format("parameter update (GPU memory {})", t.memory);
      break;
    case Which::host_issue:
      s = t.issued_per_kernel != 1.0
          ? fmt::format("host's kernel issue ({}: {:.3g} us a kernel, {:g} issued per kernel counted; eq. K20)", t.framework,
                        in_us(t.host_issue), t.issued_per_kernel)
          : fmt::format("host's kernel issue ({}: {:.3g} us a kernel; eq. K20)", t.framework, in_us(t.host_issue));
      break;
    case Which::fixed:
      s = t.fixed;
      break;
    case Which::io_storage:
      s = t.pipeline ? fmt::format("input read from {} ({} dataset)", to_string(t.pipeline->data), t.pipeline->dataset)
                     : std::string("input read");
      break;
    case Which::io_decode:
      s = t.pipeline ? fmt::format("input decode on the CPU ({} cores of {} per node)", t.pipeline->cores, t.pipeline->cpu)
                     : std::string("input decode");
      break;
  }
  if (measured_) s += " [measured]";
  return s;
}

struct Predictor::Impl {
  Scenario sc;
  /// The network with its layers: sc.network, or, for a doubled scenario (with_doubled changes no network),
  /// its base's, whose Impl owns this one; sc.network then holds only what the input needs (without_layers).
  const Network* net = &sc.network;
  /// A doubled scenario's predictor (Predictor::doubled): read for its iteration times only, so it names
  /// no resources, checks no memory and has no one-GPU baseline of its own.
  bool what_if = false;
  /// The compute model's layer times before the framework's efficiency (the caller's or estimate_layer_times'):
  /// what a doubled scenario that keeps the GPU starts from.
  std::shared_ptr<const LayerTimes> modelled_times;
  std::shared_ptr<const CollectiveModel> coll;
  LayerTimes layers;  // empty in a doubled scenario that keeps the GPU (its base's are the same)
  /// The units and their times and bytes, contiguous; shared with the doubled scenarios that keep the GPU.
  struct UnitWork {
    std::vector<Unit> units;
    std::vector<Seconds> backward, forward;
    std::vector<Bytes> bytes;
    std::vector<double> params, fp8_weights;  // units[i].params and .fp8_weights (shard_unit_times)
  };
  std::shared_ptr<const UnitWork> work;
  std::span<const Unit> units;  // work->units
  Seconds f{}, b{}, u{}, u_first{};
  /// Eq. K20: the parts of f, b and u that wait at the host's issue floor beyond the GPU's work (modelled times only).
  Seconds f_host{}, b_host{}, u_host{};
  /// Whether the floor binds in some phase: doubling the host's issue rate then changes the layer times.
  [[nodiscard]] bool host_floor_binds() const noexcept { return f_host + b_host + u_host > Seconds{}; }
  Seconds h2d{}, io_one{};
  bool reader_modelled = false;  // profile_reader_modelled(sc): the profile's h2d and phases, the model's reader
  Bytes input_per_gpu{};
  BytesPerSecond read_bw{};
  Bytes total_gradient{};
  std::span<const Seconds> unit_backward;  // units[i].backward, contiguous
  std::span<const Bytes> unit_bytes;       // units[i].gradient, contiguous
  std::span<const Seconds> unit_forward;   // units[i].forward, contiguous (sharded stage 3)
  Seconds iter_one{};
  Seconds update_one{};  // the optimiser step in iter_one (a layout's baseline, eq. P22)
  MemoryUse memory;
  double tokens_per_sample = 0.0;          // token inputs: tokens in one sample
  double train_flops_per_sample = 0.0;     // 3 × forward: forward, and backward's two products per weight
  double hardware_flops_per_sample = 0.0;  // and the recomputed forward (HFU)
  Bytes activations_per_sample{};          // activation_bytes_per_sample, once (a sharded step's memory per GPU count)
  double peak_flops = 0.0;                 // the GPU's dense peak for the precision (FLOP/s)
  std::shared_ptr<const ResourceName::Table> resources;  // named when a caller asks (ResourceName::str)
  const InputPipeline* pipeline = nullptr;               // input_pipeline(sc), into sc (Impl is never copied or moved)
  /// Eq. K16 holds only while collectives run beside the step's kernels: a sharded step on one GPU runs
  /// none, and is this scenario with the tensor work at the model's own rate (null where K16 is 1).
  std::unique_ptr<Predictor> alone;

  // The bottleneck (bottleneck.hpp): the scenario with each resource doubled, prepared on first use.
  bool names_bottleneck = false;
  mutable std::once_flag doubled_once;
  mutable std::array<std::unique_ptr<Predictor>, kResourceCount> doubled_predictors;
  /// Whether a doubled scenario's aggregation takes as long as this one's, unit by unit: the same
  /// collective model (pointer) over the same unit bytes, unsharded (the strategy is the same copy).
  mutable std::array<bool, kResourceCount> doubled_same_comm{};
  /// Whether a doubled scenario's units take as long as this one's in backward (the GPU stays).
  mutable std::array<bool, kResourceCount> doubled_same_units{};

  /// The exact recurrence's results (run's pass from the output side over the units).
  struct Recurrence {
    Seconds done{}, comm_total{};
    int boundary = 0;  // the lowest layer i ≥ 2 with c_i > b_{i−1}, seen from the top down
  };
  [[nodiscard]] Recurrence recur(std::span<const Seconds> comm) const;
  /// Whether run() may take a caller's Recurrence: an unsharded step with no profile (whose measured
  /// communication would rescale the units' times first).
  [[nodiscard]] bool takes_recurrence() const noexcept { return !sc.strategy.sharding.sharded() && !sc.profile; }

  // The constructor's phases, in its order.
  void share_layer_work(const Impl& same);
  void model_layer_times(bool one_gpu_alone);
  void model_units();
  void input_times();
  void one_gpu_baseline();
  void describe_resources();
  /// Each unit's aggregation time on `at` (more than one GPU, unsharded), as the model gives it (before a
  /// profile's measured total).
  void unit_comm(const GpuPlacement& at, std::span<Seconds> comm) const;
  /// With `doubled`, the bottleneck is named from it (bound_by); without, it is left unnamed. `comm`: unit_comm's
  /// times when a caller has them (empty: computed).
  /// `rec_given`: the recurrence over the same units and times (where takes_recurrence()).
  [[nodiscard]] Prediction run(int gpus, const GpuPlacement& at, const DoubledTimes* doubled = nullptr,
                               std::span<const Seconds> comm_given = {}, const Recurrence* rec_given = nullptr) const;
  /// Predictor::doubled, with this scenario's unit_comm and recurrence where a caller has them (empty, null: none).
  [[nodiscard]] DoubledTimes doubled_times(int gpus, const GpuPlacement& at, std::span<const Seconds> comm,
                                           const Recurrence* rec) const;
  /// A layout's step (eq. P13, parallel_predict.cpp), its bottleneck left unnamed.
  [[nodiscard]] Prediction layout_run(int gpus, const GpuPlacement& at) const;
  /// Predictor::doubled for a layout: each resource doubled, the layout's step again. `base`: this scenario's
  /// step time, the time of a resource a layout does not use (its input read and copies are not modelled).
  [[nodiscard]] DoubledTimes layout_doubled(int gpus, const GpuPlacement& at, Seconds base) const;

  /// A sharded strategy's step (docs/model.md, eq. S5-S8): what replaces the all-reduce recurrence.
  struct ShardedStep {
    Seconds gpu_side{};  // h2d + compute + exposed communication + the update of the shard
    Seconds comm{};      // every collective of the step, as if nothing overlapped it
    Seconds exposed{};
    Seconds update{};  // the optimiser step on 1/n of the parameters (offload: CPU step + copy back)
    MemoryUse memory;
    // offload (eq. S9)
    Seconds d2h{}, d2h_exposed{}, cpu{}, h2d_up{};
    Bytes pcie_bytes{};
  };
  /// Fills `comm` with each unit's reduce-scatter (+ the replicas' all-reduce) time for the hiding case.
  [[nodiscard]] ShardedStep sharded_step(const GpuPlacement& at, double K, Seconds h2d_n, std::span<Seconds> comm) const;
  // sharded_step's phases, in its order.
  /// Each unit's reduce-scatter (+ the replicas' all-reduce) into `comm` and all-gather into `gather`.
  void shard_collectives(const ShardGroups& g, std::span<Seconds> comm, std::span<Seconds> gather) const;
  /// CPU offload (eq. S9): each unit's copy to the host into `copies`, the CPU step and the copy back in `r`.
  void offload_step(const ShardGroups& g, const GpuPlacement& at, std::vector<Seconds>& copies, ShardedStep& r) const;
  /// From the end of the host-to-GPU copy to the start of the update (the last micro-batch), and the
  /// offload copies past the last reduce-scatter (eq. S9a); sets r.comm.
  struct ShardedSpan {
    Seconds span{}, copy_tail{};
  };
  [[nodiscard]] ShardedSpan sharded_span(double K, std::span<const Seconds> comm, std::span<const Seconds> gather,
                                         std::span<const Seconds> copies, ShardedStep& r) const;
  /// The memory per GPU of the sharded step, and the host's under offload (eq. S9d).
  [[nodiscard]] MemoryUse sharded_memory(const ShardGroups& g, const GpuPlacement& at) const;

  // run()'s phases, in its order.
  /// The profile's measurements at this GPU count, or null.
  [[nodiscard]] const MeasuredAt* measured_at(int gpus) const;
  /// The input at this scale: the reader (or the input pipeline's), its time and the host-to-GPU copy,
  /// each K times per iteration.
  struct InputAt {
    Seconds io{}, h2d{};
    ReaderTime reader;
  };
  [[nodiscard]] InputAt input_at(const GpuPlacement& at, const MeasuredAt* meas, double K) const;
  /// The communication: the recurrence over each unit's (or a sharded step), and whether a measured
  /// total rescaled it.
  struct CommAt {
    Recurrence rec;
    std::optional<ShardedStep> sharded;
    bool measured = false;
  };
  [[nodiscard]] CommAt comm_at(int gpus, const GpuPlacement& at, const MeasuredAt* meas, double K, Seconds h2d_n,
                               std::span<const Seconds> comm_given, const Recurrence* rec_given) const;
  /// The iteration from its parts (eq. 2-4, the exact recurrence or a sharded step), with its breakdown,
  /// throughput and scaling.
  [[nodiscard]] Prediction combine(int gpus, const GpuPlacement& at, const InputAt& in, const CommAt& c) const;
  /// The bottleneck: the resource whose doubling gains the most (bottleneck.hpp).
  void name_bottleneck(Prediction& p, const DoubledTimes& doubled, const ReaderTime& reader, bool comm_measured) const;
};

ComputeOptions step_compute(ComputeOptions c, const Strategy& framework, const GpuSpec& gpu) {
  c.conv_algorithms = framework.conv_algorithms;  // the framework's cuDNN algorithm search
  c.attention = effective_attention(framework.attention, gpu, c.precision);
  c.fp32_gradients = framework.fp32_gradients;
  c.lrn = framework.lrn;
  c.pool_index_bytes = framework.pool_index_bytes;
  c.compiled = c.compiled || framework.compiled;
  c.compiled_loss = framework.compile_loss;
  c.recompute_early_stop = framework.checkpoint_early_stop;
  c.rmsnorm_composite = framework.rmsnorm_composite;
  c.execution = framework.execution;                                          // eqs. K18-K20
  c.sharded = framework.sharded_rate.value_or(framework.sharding.sharded());  // eq. K16, the framework's (P42)
  if (!c.optimizer_impl) c.optimizer_impl = framework.optimizer_impl.value_or(OptimizerImpl::fused);
  // the framework's own update kernels where the run's optimiser is the one they describe
  if (!c.update_kernels && framework.update_kernels && framework.update_kernels->optimizer == c.optimizer)
    c.update_kernels = framework.update_kernels;
  c.sharding = framework.sharding;  // eqs. S10, S11
  return c;
}

Optimizer default_optimizer(const Network& net, const Strategy& framework) noexcept {
  return framework.optimizer ? *framework.optimizer : default_optimizer(net);
}

Precision default_precision(const Strategy& framework, const GpuSpec& gpu) noexcept {
  const Precision p = framework.precision.value_or(Precision::fp32);
  return p == Precision::bf16 && !gpu.supports(Precision::bf16) ? Precision::fp16 : p;
}

ComputeOptions step_compute(const Scenario& sc) { return step_compute(sc.compute, sc.strategy, sc.cluster.gpu); }

Predictor::Predictor(Scenario scenario) : Predictor(std::move(scenario), TimesOnly{}) { impl_->names_bottleneck = true; }

namespace {
Scenario validated(Scenario sc) {
  validate(sc);
  sc = data_parallel_form(std::move(sc));  // eq. P39: a layout that is data parallelism, on the data-parallel path
  if (sc.parallel) sc.batch_per_gpu = sc.parallel->micro_batch;  // the layer times at the micro-batch (eq. P6)
  return sc;
}
}  // namespace

Predictor::Predictor(Scenario scenario, TimesOnly) : Predictor(validated(std::move(scenario)), TimesOnly{}, false) {}

namespace {
/// The scenario with a network that has no layers (name, input kind, shape and bytes kept: what
/// input_per_gpu and input_pipeline read): a doubled scenario's copy, its layers read from its base's.
/// Nor does it keep the texts no prediction reads (descriptions, the cluster's file, its assumptions and
/// currency), so that copying it for each resource allocates less.
Scenario without_layers(const Scenario& sc) {
  Network net;
  net.name = sc.network.name;
  net.input_kind = sc.network.input_kind;
  net.input_shape = sc.network.input_shape;
  net.input_bytes_per_sample = sc.network.input_bytes_per_sample;
  Cluster cluster = sc.cluster;
  cluster.description = {};
  cluster.source_file = {};
  cluster.assumed = {};
  cluster.currency = {};
  Strategy strategy = sc.strategy;
  strategy.description = {};
  return Scenario{.cluster = std::move(cluster),
                  .network = std::move(net),
                  .strategy = std::move(strategy),
                  .profile = sc.profile,
                  .measured_layers = sc.measured_layers,
                  .batch_per_gpu = sc.batch_per_gpu,
                  .compute = sc.compute,
                  .modelled_layers = sc.modelled_layers,
                  .modelled_layers_doubled_gpu = sc.modelled_layers_doubled_gpu,
                  .collectives = sc.collectives};
}
}  // namespace

Predictor::Predictor(Scenario scenario, TimesOnly, bool alone, const Impl* doubled_from, bool same_layers)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.sc = std::move(scenario);
  if (doubled_from) {
    m.net = doubled_from->net;
    m.what_if = !alone || doubled_from->what_if;  // one GPU alone is read as its base is
  }
  // the layer work of a doubled scenario that keeps the GPU: its base's (no one-GPU scenario of its own)
  const Impl* same = same_layers && doubled_from && !doubled_from->alone ? doubled_from : nullptr;
  const Network& net = *m.net;
  m.sc.compute = step_compute(m.sc);
  // eq. K16 where collectives run beside the step: a second set of times for one GPU, which runs none
  if (!alone && m.sc.compute.sharded && m.sc.compute.kernel(m.sc.cluster.gpu).sharded_tensor != 1.0)
    m.alone.reset(new Predictor(without_layers(m.sc), TimesOnly{}, true, &m, false));  // the layers: m's
  if (alone) m.sc.compute.sharded = false;
  m.sc.strategy.io_prefetch = reader_prefetches(m.sc);
  const Scenario& sc = m.sc;
  m.coll = with_transport(sc.collectives ? sc.collectives : make_collective_model(sc.cluster), sc.strategy.transport,
                          sc.cluster);  // a framework's RPC transport, or staging without GPUDirect RDMA

  if (same) {
    m.share_layer_work(*same);
  } else {
    m.model_layer_times(alone);
    m.model_units();
  }
  m.units = m.work->units;
  m.unit_backward = m.work->backward;
  m.unit_bytes = m.work->bytes;
  m.unit_forward = m.work->forward;

  m.input_times();
  m.activations_per_sample = same ? same->activations_per_sample : activation_bytes_per_sample(net, sc.compute);
  if (!m.what_if) {
    const MemoryFit fit = check_memory_fit(net, sc.cluster.gpu, sc.batch_per_gpu, sc.compute, Sharding{}, 1,
                                           bytes(kDefaultReservedBytes), m.activations_per_sample);
    m.memory = MemoryUse{fit.need.total(), fit.available, fit.fits, fit.need.allocated(), fit.need.allocator_reserved()};
  }
  m.pipeline = input_pipeline(sc);
  if (m.what_if) return;  // times only: no names, no memory, MFU or one-GPU baseline (speedups are not read)
  m.one_gpu_baseline();
}

/// A doubled scenario that keeps the GPU: its base's layer work.
void Predictor::Impl::share_layer_work(const Impl& same) {
  std::tie(modelled_times, f, b, u, u_first, work, total_gradient) =
      std::tie(same.modelled_times, same.f, same.b, same.u, same.u_first, same.work, same.total_gradient);
  std::tie(f_host, b_host, u_host) = std::tie(same.f_host, same.b_host, same.u_host);
}

/// The layer times: measured, spread from a profile's totals, or the model's over the framework's
/// efficiency; then the recomputation of checkpointing (or eq. R1-R3), and the phase totals.
void Predictor::Impl::model_layer_times(bool one_gpu_alone) {
  // one GPU alone models its own times: the scenario's are those with the collectives beside (eq. K16)
  modelled_times = sc.modelled_layers && !one_gpu_alone
      ? sc.modelled_layers
      : std::make_shared<const LayerTimes>(estimate_layer_times(*net, sc.cluster.gpu, sc.batch_per_gpu, sc.compute));
  LayerTimes modelled = *modelled_times;
  const double eff = sc.strategy.compute_efficiency;
  for (auto* v : {&modelled.forward, &modelled.backward, &modelled.update})
    for (auto& x : *v) x = x / eff;
  if (sc.measured_layers) {
    layers = *sc.measured_layers;  // validate: one entry per layer
  } else if (sc.profile) {
    const auto& p = sc.profile->single_gpu;
    layers = spread_phase_totals(modelled, p.forward, p.backward, p.update);
  } else {
    layers = std::move(modelled);
  }
  const bool floored = !sc.measured_layers && !sc.profile;  // eq. K20: the model's times only
  const Seconds b_plain =
      floored && (sc.compute.checkpointing || sc.compute.recompute != Recompute::none) ? layers.total_backward() : Seconds{};
  if (sc.compute.checkpointing) {  // every segment but the last runs its forward again before its backward
    const std::vector<int> first = checkpoint_segments(*net);  // validate: at least two segments
    for (std::size_t i = 0; i < static_cast<std::size_t>(first.back()); ++i) layers.backward[i] += layers.forward[i];
  } else if (sc.compute.recompute != Recompute::none) {       // eq. R1-R3: per transformer block
    const std::vector<int> block = transformer_blocks(*net);  // validate: at least one block
    for (std::size_t i = 0; i < block.size(); ++i)
      layers.backward[i] += recompute_time(layers, i, block[i], sc.compute, block_ends(block, i));
  }
  f = layers.total_forward();
  b = layers.total_backward();
  u = layers.total_update();
  u_first = layers.update.empty() ? Seconds{} : layers.update.front();
  if (floored) {  // eq. K20's excess over the GPU's work, over the framework's efficiency as the layers are
    f_host = modelled_times->forward_floor / eff;
    b_host = modelled_times->backward_floor / eff;
    u_host = modelled_times->update_floor / eff;
    // a recomputed forward in backward: K20 scaled every layer of the forward by one factor, so its share of
    // the floor is the forward's
    if (b_plain > Seconds{} && f > Seconds{}) b_host += f_host * ((b - b_plain) / f);
  }
}

/// The units of aggregation (layers, or buckets) and their times and bytes, contiguous.
void Predictor::Impl::model_units() {
  const double grad_bytes = gradient_bytes_per_element(sc.compute);
  auto w = std::make_shared<Impl::UnitWork>();
  w->units = make_units(*net, layers, sc.strategy, grad_bytes);
  for (const auto& un : w->units) {
    total_gradient += un.gradient;
    w->backward.push_back(un.backward);
    w->bytes.push_back(un.gradient);
    w->forward.push_back(un.forward);
    w->params.push_back(un.params);
    w->fp8_weights.push_back(un.fp8_weights);
  }
  work = std::move(w);
}

/// The input per GPU, the reader's bandwidth, and the one-GPU copy and read (a profile's or the model's).
void Predictor::Impl::input_times() {
  input_per_gpu = dlscale::input_per_gpu(sc);
  read_bw = sc.cluster.dataset_in_page_cache ? sc.cluster.page_cache : sc.cluster.disk;
  reader_modelled = profile_reader_modelled(sc);
  if (sc.profile) {
    const PhaseTimes& p = sc.profile->single_gpu;
    h2d = p.h2d;
    io_one = p.io;
    // A measured exposed wait (io_measures: exposed) is the part of the reader's time that the GPU did not
    // hide: with prefetching the one-GPU reader took t_gpu + the wait, without it the wait is the reader.
    // A negligible wait says only that the reader kept up: its time is the model's (profile_reader_modelled).
    if (reader_modelled) io_one = eq::io_time(input_per_gpu, 1, read_bw);
    else if (sc.profile->io_is_exposed_wait && sc.strategy.io_prefetch && p.io > Seconds{})
      io_one = p.io + eq::gpu_time(p.h2d, p.forward, p.backward, p.update);
  } else {
    const BytesPerSecond h2d_bw = sc.strategy.pinned_memory ? sc.cluster.h2d_pinned : sc.cluster.h2d_pageable;
    // the framework's copy (Strategy::h2d_rate, h2d_latency): Shi & Chu's pageable copies ran below the node's rate
    h2d = input_per_gpu / (h2d_bw * sc.strategy.h2d_rate) + sc.strategy.h2d_latency;
    io_one = eq::io_time(input_per_gpu, 1, read_bw);
    // synthetic data is made on the GPU: nothing to copy
    if (sc.cluster.input && sc.cluster.input->data == DataSource::synthetic) h2d = Seconds{};
  }
}

/// What a full prediction reads beyond times: tokens, MFU and HFU figures, the resources' names, and
/// the one-GPU iteration that speedups divide.
void Predictor::Impl::one_gpu_baseline() {
  if (net->input_kind == "tokens") {
    tokens_per_sample = 1.0;
    for (auto d : net->input_shape) tokens_per_sample *= static_cast<double>(d);
  }
  // MFU (PaLM, Chowdhery et al. 2022, Appendix B): the model's FLOPs, 6·N per token for its weights plus
  // the attention products, i.e. 3 × the forward FLOPs the zoo counts, whatever is recomputed.
  train_flops_per_sample = 3.0 * net->total_forward_flops_per_sample();
  // HFU (Korthikanti et al. 2022): the FLOPs the hardware ran, the recomputed forward included.
  hardware_flops_per_sample = train_flops_per_sample + recompute_flops_per_sample(*net, sc.compute);
  peak_flops = in_teraflops_per_second(sc.cluster.gpu.mfu_peak(sc.compute.precision)) * 1e12;
  describe_resources();
  if (alone) {
    iter_one = alone->impl_->iter_one;
    update_one = alone->impl_->update_one;
  } else {
    const Prediction one = run(1, GpuPlacement{1, 1, 1});
    iter_one = one.iteration_time;
    update_one = one.breakdown.update;
  }
  // Throughput N·M/t and speedup (eq. 8) divide by iteration times: a scenario in which nothing takes
  // time (no input bytes, no work, a profile of zeros) has none to divide by.
  if (!(iter_one > Seconds{}))
    throw InputError(
        fmt::format("nothing in the scenario takes time on one GPU (model '{}': no input bytes, "
                    "no FLOPs, no parameters, or a profile of zero times): no throughput to predict",
                    net->name));
}

Bytes input_per_gpu(const Scenario& sc) noexcept {
  return sc.network.input_bytes_per_sample * static_cast<double>(sc.batch_per_gpu);
}

bool reader_prefetches(const Scenario& sc) noexcept {
  const Strategy& st = sc.strategy;
  if (!st.io_prefetch || !(st.prefetch_buffer > Bytes{})) return st.io_prefetch;
  return !(input_per_gpu(sc) > st.prefetch_buffer);
}

bool profile_reader_modelled(const Scenario& sc) noexcept {
  // A wait up to this share of the one-GPU iteration is noise, not a reader that fell behind (Table V's
  // prefetching frameworks wait 0.0001-0.001 s of 0.2-0.7 s iterations).
  constexpr double kKeptUp = 0.01;
  if (!sc.profile || !sc.profile->io_is_exposed_wait || !sc.strategy.io_prefetch) return false;
  const PhaseTimes& p = sc.profile->single_gpu;
  return p.io <= kKeptUp * eq::gpu_time(p.h2d, p.forward, p.backward, p.update);
}

const InputPipeline* input_pipeline(const Scenario& sc) noexcept {
  if ((sc.profile && !profile_reader_modelled(sc)) || !sc.cluster.input) return nullptr;
  if (sc.strategy.reads_bytes && sc.cluster.input->data != DataSource::synthetic) return nullptr;
  // The section's dataset is images to decode; a token network's samples are token ids read as they are
  // stored: Section IV-A's reader of its own input bytes (synthetic data still means no reader at all).
  if (sc.network.input_kind != "image" && sc.cluster.input->data != DataSource::synthetic) return nullptr;
  return &*sc.cluster.input;
}

void Predictor::Impl::describe_resources() {
  const Strategy& st = sc.strategy;
  const Cluster& cl = sc.cluster;
  auto t = std::make_shared<ResourceName::Table>();
  t->measured_input = sc.profile.has_value() && !reader_modelled;
  t->page_cache = cl.dataset_in_page_cache;
  t->read_bw = read_bw;
  t->pinned = st.pinned_memory;
  t->h2d_bw = (st.pinned_memory ? cl.h2d_pinned : cl.h2d_pageable) * st.h2d_rate;
  t->gpu_name = cl.gpu.name;
  t->intra = cl.intra_node.bandwidth;
  t->inter = cl.inter_node.bandwidth;
  t->memory = cl.gpu.memory_bandwidth;
  if (pipeline) t->pipeline = *pipeline;
  if (st.sharding.offload_optimizer) t->cpu_adam = st.sharding.cpu_adam_params_per_s;
  t->framework = st.name;
  t->host_issue = st.execution.host_issue;
  t->issued_per_kernel = st.execution.issued_per_kernel;
  resources = std::move(t);
}

Predictor::~Predictor() = default;
Predictor::Predictor(Predictor&&) noexcept = default;
Predictor& Predictor::operator=(Predictor&&) noexcept = default;

const Scenario& Predictor::scenario() const noexcept { return impl_->sc; }
const LayerTimes& Predictor::layer_times() const noexcept { return impl_->layers; }

GpuPlacement Predictor::place(int gpus) const {
  const Cluster& c = impl_->sc.cluster;
  if (gpus < 1) throw InputError(SourceLocation{}, "gpus", fmt::format("a GPU count must be at least 1, got {}", gpus));
  if (gpus > c.max_gpus())
    throw InputError(SourceLocation{}, "gpus",
                     fmt::format("cluster '{}' holds at most {} GPUs ({} node{} × {}), asked for {}", c.name, c.max_gpus(),
                                 c.max_nodes, c.max_nodes == 1 ? "" : "s", c.gpus_per_node, gpus));
  if (gpus <= c.gpus_per_node) return GpuPlacement{gpus, 1, gpus};
  if (gpus % c.gpus_per_node != 0)
    throw InputError(SourceLocation{}, "gpus",
                     fmt::format("{} GPUs do not fill whole nodes of {} GPUs on cluster '{}'", gpus, c.gpus_per_node, c.name));
  return GpuPlacement{gpus, gpus / c.gpus_per_node, c.gpus_per_node};
}

const Predictor::Impl& Predictor::impl_for(int gpus) const noexcept {
  return gpus == 1 && impl_->alone ? *impl_->alone->impl_ : *impl_;
}

namespace {
/// Whether run() aggregates through unit_comm: more than one GPU and an unsharded step.
bool aggregates(int gpus, const Strategy& st) noexcept { return gpus > 1 && !st.sharding.sharded(); }
}  // namespace

Prediction Predictor::predict(int gpus) const {
  const GpuPlacement at = place(gpus);
  if (impl_->sc.parallel) {  // model parallelism: eq. P13 (parallel_predict.cpp)
    Prediction p = impl_->layout_run(gpus, at);
    if (impl_->names_bottleneck)  // the same definition as below: the resource whose doubling gains the most
      impl_->name_bottleneck(p, impl_->layout_doubled(gpus, at, p.iteration_time), ReaderTime{}, false);
    return p;
  }
  if (!impl_->names_bottleneck) return impl_for(gpus).run(gpus, at);
  // The aggregation times, and the recurrence over them, once for this scenario and the doubled ones that
  // keep them (doubled_same_comm, doubled_same_units).
  const Impl& m = *impl_;
  thread_local std::vector<Seconds> comm;
  comm.assign(m.units.size(), Seconds{});  // no aggregation: none, as run() has it
  std::span<const Seconds> given;
  if (aggregates(gpus, m.sc.strategy)) {
    m.unit_comm(at, comm);
    given = comm;
  }
  std::optional<Impl::Recurrence> rec;
  if (m.takes_recurrence()) rec = m.recur(comm);
  const Impl::Recurrence* r = rec ? &*rec : nullptr;
  const DoubledTimes d = m.doubled_times(gpus, at, given, r);
  return impl_for(gpus).run(gpus, at, &d, given, r);
}

LayoutStep Predictor::layout_step(int gpus) const {
  const Scenario& sc = impl_->sc;
  if (!sc.parallel) throw InputError(SourceLocation{}, "parallel", "the scenario has no model-parallel layout");
  (void)place(gpus);  // the cluster holds the count, as predict checks
  return parallel_layout_step(
      sc, *sc.parallel, sc.compute, sc.strategy.sharding,
      parallel_layer_times(sc, *sc.parallel, sc.compute, parallel_whole_times(sc, *impl_->modelled_times)), *impl_->coll, gpus);
}

DoubledTimes Predictor::doubled(int gpus) const {
  const GpuPlacement at = place(gpus);
  if (impl_->sc.parallel) return impl_->layout_doubled(gpus, at, impl_->layout_run(gpus, at).iteration_time);
  DoubledTimes d = impl_->doubled_times(gpus, at, {}, nullptr);
  for (std::size_t i = 0; i < kResourceCount; ++i)  // a scenario left as it is (doubled_times): this one's time
    if (!impl_->doubled_predictors[i]) d[i] = impl_for(gpus).run(gpus, at).iteration_time;
  return d;
}

Predictor::Impl::Recurrence Predictor::Impl::recur(std::span<const Seconds> comm) const {
  // in locals: the compiler cannot tell the result from `comm`, and would store `done` every step
  Seconds ready{}, done{}, comm_total{};
  int boundary = 0;
  for (std::size_t k = units.size(); k-- > 0;) {
    ready += unit_backward[k];
    done = max(done, ready) + comm[k];
    comm_total += comm[k];
    if (k >= 1) {
      const bool exceeds = comm[k] > unit_backward[k - 1];
      if (exceeds) boundary = static_cast<int>(k) + 1;
    }
  }
  return Recurrence{done, comm_total, boundary};
}

DoubledTimes Predictor::Impl::doubled_times(int gpus, const GpuPlacement& at, std::span<const Seconds> comm,
                                            const Recurrence* rec) const {
  const Impl& m = *this;
  std::call_once(m.doubled_once, [&m] {
    // Each doubled scenario without the network's layers (with_doubled changes none; they are read from
    // this scenario's), and, where the GPU stays, with this scenario's modelled layer times: estimate_layer_times
    // would give the same. Not so a sharded step's one-GPU scenario (eq. K16), which models its own.
    Scenario base = without_layers(m.sc);
    if (!m.alone) base.modelled_layers = m.modelled_times;
    for (std::size_t i = 0; i < kResourceCount; ++i) {
      const Resource r = kAllResources[i];
      // the host's issue rate doubled changes the layer times only where its floor binds (eq. K20); elsewhere the
      // scenario is this one's, whose time run() has: no predictor (doubled_times leaves its slot zero, a gain of 0)
      if (r == Resource::host_issue && !m.host_floor_binds()) continue;
      m.doubled_predictors[i].reset(
          new Predictor(with_doubled(base, r), TimesOnly{}, false, &m, r != Resource::gpu && r != Resource::host_issue));
      const Impl& d = *m.doubled_predictors[i]->impl_;
      m.doubled_same_comm[i] =
          d.coll == m.coll && std::ranges::equal(d.unit_bytes, m.unit_bytes) && !m.sc.strategy.sharding.sharded();
      m.doubled_same_units[i] = std::ranges::equal(d.unit_backward, m.unit_backward);
    }
  });
  // Without aggregation every unit's communication is zero, whatever the links.
  const bool aggregating = aggregates(gpus, m.sc.strategy);
  DoubledTimes d{};
  for (std::size_t i = 0; i < kResourceCount; ++i) {
    if (!m.doubled_predictors[i]) continue;  // the host's issue where its floor does not bind: this scenario
    const Impl& di = m.doubled_predictors[i]->impl_for(gpus);
    const std::span<const Seconds> given = m.doubled_same_comm[i] ? comm : std::span<const Seconds>{};
    const bool same = rec && di.takes_recurrence() && m.doubled_same_units[i] && (m.doubled_same_comm[i] || !aggregating);
    d[i] = di.run(gpus, at, nullptr, given, same ? rec : nullptr).iteration_time;
  }
  return d;
}

Prediction Predictor::Impl::layout_run(int gpus, const GpuPlacement& at) const {
  return parallel_prediction(sc, parallel_whole_times(sc, *modelled_times), *coll, gpus, at, OneGpuStep{iter_one, update_one});
}

DoubledTimes Predictor::Impl::layout_doubled(int gpus, const GpuPlacement& at, Seconds base) const {
  const Impl& m = *this;
  std::call_once(m.doubled_once, [&m] {
    for (std::size_t i = 0; i < kResourceCount; ++i) {
      const Resource r = kAllResources[i];
      // a layout's step reads no input and copies none to the GPU (eq. P13): doubling either changes nothing
      if (r == Resource::storage || r == Resource::host_to_gpu) continue;
      if (r == Resource::host_issue && !m.host_floor_binds()) continue;  // as doubled_times: eq. K20's floor
      // the whole scenario (a layout's step reads its network's layers), with this one's layer work where the GPU
      // and the host stay: the links alone change
      const bool same_layers = r != Resource::gpu && r != Resource::host_issue;
      m.doubled_predictors[i].reset(new Predictor(with_doubled(m.sc, r), TimesOnly{}, false, &m, same_layers));
    }
  });
  DoubledTimes d{};
  for (std::size_t i = 0; i < kResourceCount; ++i)
    d[i] = m.doubled_predictors[i] ? m.doubled_predictors[i]->impl_->layout_run(gpus, at).iteration_time : base;
  return d;
}

void Predictor::Impl::unit_comm(const GpuPlacement& at, std::span<Seconds> comm) const {
  aggregation_times(sc.strategy, *coll, unit_bytes, at, comm);
}

void aggregation_times(const Strategy& st, const CollectiveModel& coll, std::span<const Bytes> unit_bytes, const GpuPlacement& at,
                       std::span<Seconds> comm) {
  const std::size_t U = unit_bytes.size();
  thread_local std::vector<Seconds> extra_buf;
  switch (st.aggregation) {
    case Aggregation::allreduce:
      coll.times(CollectiveOp::allreduce, unit_bytes, at, comm);
      break;
    case Aggregation::parameter_server:
      for (std::size_t i = 0; i < U; ++i) comm[i] = coll.parameter_server(unit_bytes[i], at, st.parameter_servers);
      break;
    case Aggregation::hybrid: {  // all-reduce inside the node, then a parameter server across nodes
      coll.times(CollectiveOp::allreduce, unit_bytes, GpuPlacement{at.gpus_per_node, 1, at.gpus_per_node}, comm);
      if (at.nodes > 1)
        for (std::size_t i = 0; i < U; ++i)
          comm[i] += coll.parameter_server(unit_bytes[i], GpuPlacement{at.nodes, at.nodes, 1}, st.parameter_servers);
      break;
    }
    case Aggregation::broadcast_reduce: {
      extra_buf.assign(U, Seconds{});
      coll.times(CollectiveOp::broadcast, unit_bytes, at, comm);
      coll.times(CollectiveOp::reduce, unit_bytes, at, extra_buf);
      for (std::size_t i = 0; i < U; ++i) comm[i] += extra_buf[i];
      break;
    }
  }
}

std::vector<Prediction> Predictor::predict(std::span<const int> gpu_counts) const {
  std::vector<Prediction> out;
  out.reserve(gpu_counts.size());
  for (int g : gpu_counts) out.push_back(predict(g));
  return out;
}

Prediction Predictor::Impl::run(int gpus, const GpuPlacement& at, const DoubledTimes* doubled,
                                std::span<const Seconds> comm_given, const Recurrence* rec_given) const {
  const MeasuredAt* meas = measured_at(gpus);
  // With gradient accumulation every phase but the exchange and the update runs K times per iteration.
  const double K = sc.compute.accumulate;
  const InputAt in = input_at(at, meas, K);
  const CommAt c = comm_at(gpus, at, meas, K, in.h2d, comm_given, rec_given);
  Prediction p = combine(gpus, at, in, c);
  if (doubled) name_bottleneck(p, *doubled, in.reader, c.measured);
  return p;
}

const MeasuredAt* Predictor::Impl::measured_at(int gpus) const {
  if (sc.profile) {
    if (auto it = sc.profile->measured.find(gpus); it != sc.profile->measured.end()) return &it->second;
  }
  return nullptr;
}

Predictor::Impl::InputAt Predictor::Impl::input_at(const GpuPlacement& at, const MeasuredAt* meas, double K) const {
  // One reader per node feeds its n_g GPUs: t_io,n_g = n_g · t_io,1 (Section VI-B), or D·n_g/B.
  InputAt in;
  in.io = sc.profile && !reader_modelled ? io_one * static_cast<double>(at.gpus_per_node)
                                         : eq::io_time(input_per_gpu, at.gpus_per_node, read_bw);
  // The input pipeline (Cluster::input) replaces the bytes-over-a-bandwidth reader: storage tier and CPU
  // decode stages, the slower of which sets the reader's time (eq. input-1); GPU decoding goes to the GPU side.
  if (pipeline) {
    in.reader = reader_time(*pipeline, sc.batch_per_gpu, at.gpus_per_node, at.nodes);
    in.io = in.reader.reader;
  }
  if (meas && meas->io) in.io = *meas->io;
  in.io = in.io * K;
  in.h2d = h2d;
  if (meas && meas->h2d) in.h2d = *meas->h2d;
  in.h2d = in.h2d * K;
  return in;
}

Predictor::Impl::CommAt Predictor::Impl::comm_at(int gpus, const GpuPlacement& at, const MeasuredAt* meas, double K,
                                                 Seconds h2d_n, std::span<const Seconds> comm_given,
                                                 const Recurrence* rec_given) const {
  CommAt c;
  if (rec_given && takes_recurrence()) {
    c.rec = *rec_given;  // the same units and times: the same pass
    return c;
  }
  const Strategy& st = sc.strategy;
  thread_local std::vector<Seconds> comm_buf;
  const std::size_t U = units.size();
  comm_buf.assign(U, Seconds{});
  std::span<Seconds> comm(comm_buf);
  if (st.sharding.sharded()) c.sharded = sharded_step(at, K, h2d_n, comm);
  if (aggregates(gpus, st)) {
    if (comm_given.size() == U) std::copy(comm_given.begin(), comm_given.end(), comm.begin());
    else unit_comm(at, comm);
  }
  if (meas && meas->comm && gpus > 1 && !c.sharded) {  // a measured total overrides; its split follows the model
    Seconds modelled{};
    for (auto x : comm) modelled += x;
    const Seconds target = *meas->comm;
    for (auto& x : comm) x = modelled > Seconds{} ? x * (target / modelled) : target / static_cast<double>(U);
    c.measured = true;
  }
  // one pass from the output side: the exact recurrence (equations.hpp, overlap_done_exact), the
  // communication total and the hiding case (classify_hiding) together
  c.rec = recur(comm);
  return c;
}

Prediction Predictor::Impl::combine(int gpus, const GpuPlacement& at, const InputAt& in, const CommAt& c) const {
  const Strategy& st = sc.strategy;
  const double K = sc.compute.accumulate;
  const Seconds io = in.io, h2d_n = in.h2d;
  const ReaderTime& reader = in.reader;
  const std::optional<ShardedStep>& sharded = c.sharded;
  const Seconds done = c.rec.done;
  Seconds comm_total = c.rec.comm_total;
  const int boundary = c.rec.boundary;
  Prediction p;
  p.gpus = gpus;
  p.nodes = at.nodes;
  p.batch_per_gpu = sc.batch_per_gpu;
  Seconds gpu_side{};
  Seconds exposed{};
  Seconds update_exposed = u;
  const bool overlapped = st.overlap != Overlap::none && st.aggregation != Aggregation::broadcast_reduce;
  if (!overlapped) {
    gpu_side = eq::gpu_time(h2d_n, f * K, b * K, u) + comm_total;  // eq. 2/3 without t_io
    exposed = comm_total;
  } else {
    if (st.update == UpdatePlacement::per_layer) update_exposed = units.front().update;
    // eq. exact, per-layer update or update after aggregation; only the last of K backward passes overlaps
    gpu_side = h2d_n + f * K + b * (K - 1.0) + done + update_exposed;
    // ≥ 0 and ≤ the communication in exact arithmetic; clamp the rounding of summing b in two orders
    exposed = min(max(done - b, Seconds{}), comm_total);
    p.hiding_case = boundary == 0 ? 1 : 2;
    p.boundary_layer = boundary;
  }
  if (sharded) {
    gpu_side = sharded->gpu_side;
    exposed = sharded->exposed;
    comm_total = sharded->comm;
    update_exposed = sharded->update;
  }
  // Synchronization losses: more than one GPU wait for the slowest (its forward+backward jittered) and
  // pay the framework's fixed cost per iteration; both sit on the GPU side, beside the prefetched I/O.
  Seconds sync{}, overhead{};
  if (gpus > 1) {
    if (st.jitter_cv > 0.0) sync = eq::sync_wait(max_normal(gpus), st.jitter_cv, (f + b) * K);
    overhead = st.iteration_overhead;
  }
  // eq. F2a: the training thread takes each prefetched batch from the readers' queue at a fixed cost, on the GPU
  // side of eq. 4 (F2b: t_iter = max(t_gpu + t_comm + h, t_io)); without prefetching it is inside t_io
  const Seconds handover = eq::input_handover(st.input_handover, st.io_prefetch) * K;
  gpu_side += sync + overhead + reader.gpu_decode * K + handover;
  p.iteration_time = st.io_prefetch ? eq::iteration_io_hidden(gpu_side, Seconds{}, io) : io + gpu_side;

  p.breakdown = Breakdown{io, h2d_n, f * K, b * K, sharded ? sharded->update : u, comm_total, exposed};
  p.breakdown.sync_wait = sync;
  p.breakdown.overhead = overhead;
  p.breakdown.io_storage = reader.storage * K;
  p.breakdown.io_decode = reader.decode * K;
  p.breakdown.gpu_decode = reader.gpu_decode * K;
  p.breakdown.reader_loss = st.io_prefetch ? max(io - gpu_side, Seconds{}) : io;
  p.breakdown.input_handover = handover;
  if (host_floor_binds()) {  // eq. K20: the part of each phase at the host's issue floor
    p.breakdown.forward_host = f_host * K;
    p.breakdown.backward_host = b_host * K;
    // a sharded step updates 1/n of the parameters on the GPU (offload: on the CPU, no floor)
    p.breakdown.update_host = !sharded                      ? u_host
        : st.sharding.offload_optimizer || !(u > Seconds{}) ? Seconds{}
                                                            : u_host * (sharded->update / u);
  }
  if (sharded && st.sharding.offload_optimizer) {
    p.breakdown.offload_d2h = sharded->d2h;
    p.breakdown.offload_d2h_exposed = sharded->d2h_exposed;
    p.breakdown.offload_cpu = sharded->cpu;
    p.breakdown.offload_h2d = sharded->h2d_up;
    p.breakdown.offload_bytes = sharded->pcie_bytes;
  }
  p.memory = sharded ? sharded->memory : memory;
  // In double: N·M·K passes 2^31 at 100,000 GPUs × 65,536 samples.
  p.throughput_samples_per_s = static_cast<double>(gpus) * sc.batch_per_gpu * K / in_seconds(p.iteration_time);
  p.throughput_tokens_per_s = p.throughput_samples_per_s * tokens_per_sample;
  p.mfu = flops_utilisation(p.throughput_samples_per_s, train_flops_per_sample, gpus, peak_flops);
  p.hfu = flops_utilisation(p.throughput_samples_per_s, hardware_flops_per_sample, gpus, peak_flops);
  p.speedup = gpus == 1 ? 1.0 : eq::speedup(gpus, iter_one, p.iteration_time);
  p.efficiency = p.speedup / gpus;
  return p;
}

void Predictor::Impl::name_bottleneck(Prediction& p, const DoubledTimes& doubled, const ReaderTime& reader,
                                      bool comm_measured) const {
  const Bound bound = bound_by(p, doubled);
  p.bottleneck = phase_of(bound.resource);
  p.bottleneck_gain = bound.gain;
  p.bottleneck_share = bound.share;
  using W = ResourceName::Which;
  W which = W::compute;
  switch (bound.resource) {
    case Resource::storage:
      which = !pipeline ? W::io : reader.decode > reader.storage ? W::io_decode : W::io_storage;
      break;
    case Resource::host_to_gpu:
      which = W::h2d;
      break;
    case Resource::gpu:
      which = W::compute;
      break;
    case Resource::host_issue:
      which = W::host_issue;
      break;
    case Resource::intra_node:
      which = W::comm_intra;
      break;
    case Resource::inter_node:
      which = W::comm_inter;
      break;
  }
  p.bottleneck_resource = ResourceName(resources, which, p.bottleneck == Bottleneck::communication && comm_measured);
}

Predictor::Impl::ShardedStep Predictor::Impl::sharded_step(const GpuPlacement& at, double K, Seconds h2d_n,
                                                           std::span<Seconds> comm) const {
  const Sharding& sh = sc.strategy.sharding;
  const ShardGroups g = shard_groups(sh, at);  // throws InputError("strategy.sharding.group") for a group that does not fit
  const double n = g.shard;
  const std::size_t U = units.size();
  thread_local std::vector<Seconds> gather_buf;
  gather_buf.assign(U, Seconds{});
  shard_collectives(g, comm, gather_buf);
  ShardedStep r;
  r.update = u / n;  // each GPU steps its 1/n of the parameters
  thread_local std::vector<Seconds> copy_buf;
  copy_buf.clear();
  if (sh.offload_optimizer) offload_step(g, at, copy_buf, r);
  const ShardedSpan s = sharded_span(K, comm, gather_buf, copy_buf, r);
  r.d2h_exposed = s.copy_tail;
  // the copy tail and the CPU step come before ZeRO-1/2's all-gather, which the span already holds: the
  // sum is the same in either order
  r.gpu_side = h2d_n + s.span + s.copy_tail + r.update;
  r.exposed = min(max(s.span - (f + b) * K, Seconds{}), r.comm);
  r.memory = sharded_memory(g, at);
  return r;
}

void Predictor::Impl::shard_collectives(const ShardGroups& g, std::span<Seconds> comm, std::span<Seconds> gather) const {
  // Per unit: the reduce-scatter of its gradients in the shard group, then (hybrid) the all-reduce of the shard across
  // the replicas and FSDP1's cast, on one channel (eq. S7, S7b, M5c); the all-gather of its working parameters (eq. S5,
  // S12). The simulator takes the same times from the same function (sim/src/simulator.cpp, setup_sharding).
  shard_unit_times(work->params, work->fp8_weights, sc.strategy.sharding, sc.compute, sc.cluster, g, *coll, comm, gather);
}

void Predictor::Impl::offload_step(const ShardGroups& g, const GpuPlacement& at, std::vector<Seconds>& copies,
                                   ShardedStep& r) const {
  // Each unit's gradient shard to the host over PCIe after its reduce-scatter (S9a), the node's CPU steps
  // its GPUs' shards (S9b), the updated shard comes back (S9c) before the all-gather.
  const Sharding& sh = sc.strategy.sharding;
  const std::size_t U = units.size();
  const std::int64_t P = net->total_params();
  const BytesPerSecond pcie = sc.cluster.h2d_pinned;
  const Precision p = sc.compute.precision;
  copies.resize(U);
  for (std::size_t i = 0; i < U; ++i) {  // at the width the reduce leaves (eq. K27), not the unit's working width
    copies[i] = offload_gradient_bytes(work->params[i], sh, p, g.shard) / pcie;
    r.d2h += copies[i];
  }
  r.cpu = cpu_adam_time(P, g.shard, at.gpus_per_node, sh.cpu_adam_params_per_s);
  r.h2d_up = offload_param_bytes(P, p, g.shard) / pcie;
  r.pcie_bytes = offload_gradient_bytes(static_cast<double>(P), sh, p, g.shard) + offload_param_bytes(P, p, g.shard);
  r.update = r.cpu + r.h2d_up;
}

Predictor::Impl::ShardedSpan Predictor::Impl::sharded_span(double K, std::span<const Seconds> comm,
                                                           std::span<const Seconds> gather, std::span<const Seconds> copies,
                                                           ShardedStep& r) const {
  const Sharding& sh = sc.strategy.sharding;
  const std::size_t U = units.size();
  Seconds gathers{}, reduces{};
  for (std::size_t i = 0; i < U; ++i) {
    gathers += gather[i];
    reduces += comm[i];
  }
  ShardedSpan s;
  if (sh.stage < 3) {
    // Eq. S8: ZeRO-1/2 — the all-reduce recurrence with reduce-scatters, then the updated parameters
    // all-gathered after the step (exposed).
    Seconds ready{}, done{}, copied{};
    for (std::size_t k = U; k-- > 0;) {
      ready += unit_backward[k];
      done = max(done, ready) + comm[k];
      if (!copies.empty()) copied = max(copied, done) + copies[k];
    }
    if (!copies.empty()) s.copy_tail = copied - max(done, b);
    s.span = f * K + b * (K - 1.0) + max(done, b) + gathers;
    r.comm = reduces + gathers;
  } else {
    // eq. S4b: a block wrap's root is not resharded after the forward, so the backward gathers it not again
    thread_local std::vector<Seconds> back_buf;
    back_buf.assign(gather.begin(), gather.end());
    Seconds back_gathers{};
    for (std::size_t i = 0; i < U; ++i) {
      if (units[i].held) back_buf[i] = Seconds{};
      back_gathers += back_buf[i];
    }
    const std::span<const Seconds> ag_back =
        sh.reshard_after_forward ? std::span<const Seconds>(back_buf) : std::span<const Seconds>{};
    const ShardedTimeline last = sharded_timeline_exact(unit_forward, unit_backward, gather, ag_back, comm, sh.in_flight);
    // Micro-batches before the last: gathers and compute. A flat FSDP under no_sync keeps whole gradients and
    // reduce-scatters once; FSDP2 (per-parameter shards) reduce-scatters every micro-batch, as eq. P20 charges it
    // under a layout (torchtitan's loop does not turn gradient sync off; recalled).
    const std::span<const Seconds> earlier_reduces = sh.per_parameter ? comm : std::span<const Seconds>{};
    Seconds earlier{};
    if (K > 1.0)
      earlier =
          sharded_timeline_exact(unit_forward, unit_backward, gather, ag_back, earlier_reduces, sh.in_flight).end() * (K - 1.0);
    s.span = earlier + last.end();
    if (!copies.empty())
      s.copy_tail =
          sharded_timeline_exact(unit_forward, unit_backward, gather, ag_back, comm, sh.in_flight, copies).end() - last.end();
    r.comm = (gathers + (sh.reshard_after_forward ? back_gathers : Seconds{})) * K + reduces * (sh.per_parameter ? K : 1.0);
  }
  return s;
}

MemoryUse Predictor::Impl::sharded_memory(const ShardGroups& g, const GpuPlacement& at) const {
  const Sharding& sh = sc.strategy.sharding;
  // FSDP2 accumulates into its gradient shards (it reduce-scatters every micro-batch, S5-S7): what it holds is a
  // single micro-batch's (the shards, kept over the next forward, are 1/n of the gradients: not counted apart). A
  // flat FSDP under no_sync keeps the gradients whole between micro-batches (eq. S3 with accumulation).
  ComputeOptions opt = sc.compute;
  if (sh.per_parameter) opt.accumulate = 1;
  const MemoryFit fit = check_memory_fit(*net, sc.cluster.gpu, sc.batch_per_gpu, opt, sh, g.shard, bytes(kDefaultReservedBytes),
                                         activations_per_sample);
  MemoryUse m{fit.need.total(), fit.available, fit.fits, fit.need.allocated(), fit.need.allocator_reserved()};
  if (sh.offload_optimizer) {  // eq. S9d
    m.host_per_node = offload_host_bytes_per_node(net->total_params(), sh, sc.compute.precision,
                                                  optimizer_state_words(sc.compute.optimizer), g.shard, at.gpus_per_node);
    m.host_capacity = sc.cluster.host_memory_size > Bytes{} ? sc.cluster.host_memory_size : bytes(kDefaultHostMemoryBytes);
    m.host_fits = m.host_per_node <= m.host_capacity;
  }
  return m;
}

}  // namespace dlscale
