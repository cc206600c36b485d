// Running a sweep (include/dlscale/sweep.hpp): each group's scenario, the GPU counts its cluster can
// hold, the collective models and layer times the groups share, and the parallel evaluation that fills
// the rows in spec order whatever the thread count.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>

#include "dlscale/error.hpp"
#include "dlscale/resources.hpp"
#include "dlscale/sweep.hpp"
#include "plan/sweep_layer_times.hpp"

namespace dlscale {
namespace {
using sweep_detail::GroupLayerTimes;
using sweep_detail::shared_layer_times;

/// The scenario of a group with its collective model taken from `models` (one per cluster × links,
/// built once: the NCCL model's channel search is the expensive part of preparing a Predictor).
Scenario make_group_scenario(const SweepSpec& spec, const SweepGroup& g,
                             const std::vector<std::shared_ptr<const CollectiveModel>>* models,
                             const std::vector<Network>* networks = nullptr, std::shared_ptr<const LayerTimes> modelled = nullptr,
                             std::shared_ptr<const LayerTimes> modelled_doubled_gpu = nullptr) {
  Scenario sc;
  const LinkOverrides& lo = spec.links[g.links];
  sc.cluster = spec.clusters[g.cluster];
  if (models) sc.collectives = (*models)[g.cluster * spec.links.size() + g.links];
  if (!lo.empty()) {
    const auto cached = sc.collectives;
    sc.collectives.reset();
    sc = with_links(sc, apply_overrides(spec.clusters[g.cluster], lo));
    if (cached) sc.collectives = cached;
  }
  // a layout's step reads the network's shapes and names (eq. P6, P9): the slimmed copies are data parallelism's
  sc.network = networks && !g.layout ? (*networks)[g.model] : spec.networks[g.model];
  sc.strategy = spec.strategies[g.framework];
  if (g.bucket) {
    sc.strategy.overlap = Overlap::bucketed;
    sc.strategy.bucket_size = *g.bucket;
    sc.strategy.first_bucket = min(sc.strategy.first_bucket, *g.bucket);
  }
  sc.batch_per_gpu = g.batch;
  sc.compute.precision = g.precision;
  sc.compute.fp8_scaling = g.fp8_scaling;
  sc.compute.fp8_all_gather = g.fp8_all_gather;  // eq. S12
  sc.compute.optimizer = default_optimizer(sc.network, sc.strategy);
  if (g.layout) sc.parallel = spec.layouts[*g.layout];  // batch_per_gpu is its micro-batch (expand)
  sc.modelled_layers = std::move(modelled);
  sc.modelled_layers_doubled_gpu = std::move(modelled_doubled_gpu);
  return sc;
}
}  // namespace

Scenario group_scenario(const SweepSpec& spec, const SweepGroup& g) { return make_group_scenario(spec, g, nullptr); }

namespace {
class ClosedForm final : public GroupEvaluator {
 public:
  void evaluate(Scenario sc, std::span<const int> gpus, std::span<Prediction> out) const override {
    const Predictor p(std::move(sc));
    for (std::size_t i = 0; i < gpus.size(); ++i) out[i] = p.predict(gpus[i]);
  }
  std::string name() const override { return "closed form (Predictor)"; }
};

/// Whether the cluster holds `gpus` in whole nodes (Predictor::place's rule), with the reason if not.
std::optional<std::string> unplaceable(const Cluster& c, int gpus) {
  if (gpus > c.max_gpus()) return fmt::format("cluster '{}' holds at most {} GPUs, not {}", c.name, c.max_gpus(), gpus);
  if (gpus > c.gpus_per_node && gpus % c.gpus_per_node != 0)
    return fmt::format("{} GPUs do not fill whole nodes of {} on cluster '{}'", gpus, c.gpus_per_node, c.name);
  return std::nullopt;
}
}  // namespace

const GroupEvaluator& closed_form_evaluator() {
  static const ClosedForm instance;
  return instance;
}

namespace {
/// A layout's row error: the layout's key and the message ("'tp': ..."), as the spec names the key.
std::string layout_error(const InputError& e) {
  std::string key = e.key();
  if (key.rfind("parallel.", 0) == 0) key.erase(0, 9);
  return key.empty() ? e.message() : fmt::format("'{}': {}", key, e.message());
}

/// The GPU counts each group's cluster can hold, and each group's first row: the output order is fixed
/// before any thread starts.
struct GroupRows {
  std::vector<std::vector<int>> counts;
  std::vector<std::size_t> first;  // groups + 1 entries; first.back() is the number of rows
};

/// The rows of each group; what is left out is counted (and a few examples kept) in `r`.
GroupRows place_groups(const SweepSpec& spec, SweepResult& r) {
  GroupRows out{std::vector<std::vector<int>>(spec.groups.size()), std::vector<std::size_t>(spec.groups.size() + 1, 0)};
  for (std::size_t i = 0; i < spec.groups.size(); ++i) {
    const auto& g = spec.groups[i];
    // A precision the group's GPU has no mode for (TF32 or bf16 before Ampere), or an fp8 recipe it cannot run (MX
    // block scaling before Blackwell, eq. K15c): `predict` refuses it, so a grid that crosses GPUs with precisions
    // leaves those configurations out and says so.
    const GpuSpec& gpu = spec.clusters[g.cluster].gpu;
    const bool mode = gpu.supports(g.precision);
    if (!mode || (g.precision == Precision::fp8 && !supports_fp8_scaling(gpu, g.fp8_scaling))) {
      r.unsupported += g.gpus.size();
      if (r.unsupported_examples.size() < 3)
        r.unsupported_examples.push_back(mode ? missing_fp8_scaling(gpu, g.fp8_scaling, spec.clusters[g.cluster].name)
                                              : gpu.missing_mode(g.precision, spec.clusters[g.cluster].name));
      out.first[i + 1] = out.first[i];
      continue;
    }
    for (int n : g.gpus) {
      if (auto why = unplaceable(spec.clusters[g.cluster], n)) {
        ++r.skipped;
        if (r.skipped_examples.size() < 3) r.skipped_examples.push_back(*why);
      } else {
        out.counts[i].push_back(n);
      }
    }
    out.first[i + 1] = out.first[i] + out.counts[i].size();
  }
  return out;
}

/// One collective model per (cluster, links), shared by the groups (models are immutable and safe to
/// call from several threads).
std::vector<std::shared_ptr<const CollectiveModel>> collective_models(const SweepSpec& spec,
                                                                      const std::vector<std::vector<int>>& counts) {
  std::vector<std::shared_ptr<const CollectiveModel>> models(spec.clusters.size() * spec.links.size());
  for (std::size_t i = 0; i < spec.groups.size(); ++i) {
    const auto& g = spec.groups[i];
    auto& m = models[g.cluster * spec.links.size() + g.links];
    if (!m && !counts[i].empty()) {
      SweepGroup probe = g;
      const Scenario sc = make_group_scenario(spec, probe, nullptr);
      m = sc.collectives ? sc.collectives : make_collective_model(sc.cluster);
    }
  }
  return models;
}

/// The networks as the Predictor needs them: without names and descriptions, so that copying one into
/// each group's Scenario allocates less. The closed form is handed every group's layer times
/// (shared_layer_times), so it reads no shape either: only parameters and kept bytes (gradients,
/// memory). Another evaluator (the simulator's, which may re-time layers for other GPUs) keeps them,
/// and so must a sweep that comes to checkpoint activations (the checkpointed memory reads the
/// segment inputs' output shapes); sweep groups do not set ComputeOptions::checkpointing.
/// A sharded step's one GPU (eq. K16) models its own layer times too, from the shapes, and its gather units and memory
/// find the transformer blocks by the layers' names (eq. S4b, M3): a sharded sweep keeps them.
std::vector<Network> slim_networks(const SweepSpec& spec, const SweepOptions& options) {
  const bool shapes = (options.evaluator != nullptr && options.evaluator != &closed_form_evaluator()) ||
      std::any_of(spec.strategies.begin(), spec.strategies.end(), [](const Strategy& st) { return st.sharding.sharded(); });
  std::vector<Network> slim = spec.networks;
  for (auto& net : slim) {
    net.description = {};
    for (auto& l : net.layers) {
      if (!shapes) l.name = {}, l.input_shape = {}, l.output_shape = {};
      for (auto& o : l.ops) {
        o.name = {};
        if (!shapes) o.input_shape = {}, o.output_shape = {};
      }
    }
  }
  return slim;
}

/// Workloads per model (time and cost to train).
std::vector<std::optional<TrainingWorkload>> model_workloads(const SweepSpec& spec) {
  std::vector<std::optional<TrainingWorkload>> workloads;
  for (const auto& net : spec.networks) workloads.push_back(make_workload(net, spec.dataset_samples, spec.dataset_epochs));
  return workloads;
}

/// The evaluation of the groups on a pool of threads: each takes the next group, evaluates it and
/// writes its rows in place; the first failure in spec order is the one rethrown.
class GroupPool {
 public:
  GroupPool(const SweepSpec& spec, const SweepOptions& options, const GroupEvaluator& ev, SweepResult& r)
      : spec_(spec), options_(options), ev_(ev), r_(r), rows_(place_groups(spec, r)) {
    r_.rows.resize(rows_.first.back());
    models_ = collective_models(spec, rows_.counts);
    slim_ = slim_networks(spec, options);
    layer_times_ = shared_layer_times(spec, rows_.counts);
    workloads_ = model_workloads(spec);
  }

  /// Runs the workers (the calling thread draws the progress, or works too) and rethrows a failure.
  void run() {
    unsigned n = options_.threads ? options_.threads : std::max(1u, std::thread::hardware_concurrency());
    n = static_cast<unsigned>(std::min<std::size_t>(n, std::max<std::size_t>(1, spec_.groups.size())));
    // With a progress callback the calling thread only draws; otherwise it works too.
    const unsigned spawned = options_.progress ? n : n - 1;
    std::vector<std::thread> pool;
    pool.reserve(spawned);
    for (unsigned k = 0; k < spawned; ++k) pool.emplace_back([this] { counted_worker(); });
    if (options_.progress) draw_progress(spawned);
    else worker();
    for (auto& t : pool) t.join();
    if (failure_) std::rethrow_exception(failure_);
  }

 private:
  void counted_worker() {
    worker();
    exited_.fetch_add(1);
  }
  void draw_progress(unsigned spawned) {
    const std::size_t total = rows_.first.back();
    while (exited_.load() < spawned) {
      options_.progress(done_.load(), total);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    options_.progress(done_.load(), total);
  }
  void worker() {
    std::vector<Prediction> preds;
    std::vector<std::string> errors;
    for (;;) {
      const std::size_t i = next_.fetch_add(1, std::memory_order_relaxed);
      if (i >= spec_.groups.size()) return;
      try {
        evaluate_group(i, preds, errors);
      } catch (...) {
        fail(i);
        return;
      }
    }
  }
  /// Group i's predictions, then its rows (with time and cost to train where a workload applies).
  void evaluate_group(std::size_t i, std::vector<Prediction>& preds, std::vector<std::string>& errors) {
    const auto& g = spec_.groups[i];
    const auto& counts = rows_.counts[i];
    preds.assign(counts.size(), Prediction{});
    errors.assign(counts.size(), std::string());
    if (!counts.empty()) {
      auto scenario = [&] {
        return make_group_scenario(spec_, g, &models_, &slim_, layer_times_.gpu[i], layer_times_.doubled_gpu[i]);
      };
      if (!g.layout) {
        ev_.evaluate(scenario(), counts, preds);
      } else {
        try {
          ev_.evaluate(scenario(), counts, preds);
        } catch (const InputError&) {
          // A layout invalid for some GPU count or for the model is that row's error, not the sweep's: each count
          // again on its own, to say which
          for (std::size_t k = 0; k < counts.size(); ++k) {
            try {
              ev_.evaluate(scenario(), std::span<const int>(counts).subspan(k, 1), std::span(preds).subspan(k, 1));
            } catch (const InputError& e) {
              errors[k] = layout_error(e);
              preds[k] = Prediction{};
              preds[k].gpus = counts[k];
              const int per_node = spec_.clusters[g.cluster].gpus_per_node;
              preds[k].nodes = counts[k] > per_node ? counts[k] / per_node : 1;  // whole nodes (place_groups)
            }
          }
        }
      }
    }
    const Cluster& cl = spec_.clusters[g.cluster];
    for (std::size_t k = 0; k < preds.size(); ++k) {
      SweepRow& row = r_.rows[rows_.first[i] + k];
      row.group = i;
      row.error = std::move(errors[k]);
      if (!row.error.empty()) {
        row.prediction = std::move(preds[k]);
        continue;
      }
      if (const auto& w = workloads_[g.model]) {
        const TrainingCost tc = time_to_train(preds[k], *w, cl);
        row.train_hours = in_seconds(tc.wall_time) / 3600.0;
        row.gpu_hours = tc.gpu_hours;
        row.cost = tc.cost;
      }
      row.prediction = std::move(preds[k]);
    }
    done_.fetch_add(counts.size(), std::memory_order_relaxed);
  }
  void fail(std::size_t i) {
    std::lock_guard lock(failure_mutex_);
    if (i < failed_group_) {  // whatever the thread count, the same error as with one thread
      failure_ = std::current_exception();
      failed_group_ = i;
    }
    next_.store(spec_.groups.size());
  }

  const SweepSpec& spec_;
  const SweepOptions& options_;
  const GroupEvaluator& ev_;
  SweepResult& r_;
  GroupRows rows_;
  std::vector<std::shared_ptr<const CollectiveModel>> models_;
  std::vector<Network> slim_;
  GroupLayerTimes layer_times_;
  std::vector<std::optional<TrainingWorkload>> workloads_;
  std::atomic<std::size_t> next_{0}, done_{0};
  std::atomic<unsigned> exited_{0};
  std::exception_ptr failure_;
  std::size_t failed_group_ = std::numeric_limits<std::size_t>::max();  // report the first in spec order
  std::mutex failure_mutex_;
};
}  // namespace

SweepResult run_sweep(const SweepSpec& spec, const SweepOptions& options) {
  const GroupEvaluator& ev = options.evaluator ? *options.evaluator : closed_form_evaluator();
  SweepResult r;
  r.evaluator = ev.name();
  GroupPool(spec, options, ev, r).run();
  return r;
}

}  // namespace dlscale
