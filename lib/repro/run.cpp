// Runs the experiments of a scenario file: expands each grid, prepares one Predictor per distinct
// (system variant, model, framework, batch, precision, profile), predicts every GPU count, and attaches
// the measured values the paper shows.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <tuple>

#include "dlscale/collective.hpp"
#include "dlscale/equations.hpp"
#include "dlscale/error.hpp"
#include "dlscale/format.hpp"
#include "dlscale/input_pipeline.hpp"
#include "dlscale/io.hpp"
#include "dlscale/predict.hpp"
#include "dlscale/reproduce.hpp"
#include "io/files.hpp"
#include "loaders/input_entry.hpp"
#include "repro/spec.hpp"

namespace dlscale::repro {
namespace fs = std::filesystem;

double Row::predicted(std::string_view key) const {
  if (key == "iteration_time_s") return iteration_time_s;
  if (key == "throughput_samples_per_s") return throughput_samples_per_s;
  if (key == "speedup") return speedup;
  if (key == "comm_s") return comm_s;
  if (key == "comm_exposed_s") return comm_exposed_s;
  if (key == "io_s") return io_s;
  if (key == "h2d_s") return h2d_s;
  if (key == "forward_s") return forward_s;
  if (key == "backward_s") return backward_s;
  if (key == "update_s") return update_s;
  if (auto it = derived.find(std::string(key)); it != derived.end()) return it->second;
  return std::numeric_limits<double>::quiet_NaN();
}

namespace {

/// Collectives with the network between nodes replaced (a variant such as 10 GbE instead of
/// InfiniBand): operations inside one node keep the system's own model; anything that crosses nodes
/// (including parameter-server traffic) uses the α-β ring over the replacement link.
class InterNodeOverride final : public CollectiveModel {
 public:
  InterNodeOverride(std::shared_ptr<const CollectiveModel> base, std::shared_ptr<const CollectiveModel> inter, LinkSpec link)
      : base_(std::move(base)), inter_(std::move(inter)), link_(link) {}
  Seconds time(CollectiveOp op, Bytes size, const GpuPlacement& where) const override {
    return pick(where).time(op, size, where);
  }
  void times(CollectiveOp op, std::span<const Bytes> sizes, const GpuPlacement& where, std::span<Seconds> out) const override {
    pick(where).times(op, sizes, where, out);
  }
  /// Across nodes: the incast formula of the NCCL model (lib/nccl/model.cpp) on the replacement link,
  /// so that the variants differ only in the link: every GPU off a server's node pushes S/k to it and
  /// pulls S/k back through the server node's one NIC; push and pull do not overlap.
  Seconds parameter_server(Bytes size, const GpuPlacement& where, int servers) const override {
    if (where.nodes <= 1) return base_->parameter_server(size, where, servers);
    const int k = servers > 0 ? servers : where.nodes;
    const double senders = where.gpus - where.gpus_per_node;
    const double servers_per_node = (k + where.nodes - 1) / where.nodes;
    return 2.0 * (link_.latency + size / static_cast<double>(k) * (senders * servers_per_node) / link_.bandwidth);
  }
  std::string describe() const override {
    return fmt::format("{} inside a node; across nodes {}", base_->describe(), inter_->describe());
  }

 private:
  const CollectiveModel& pick(const GpuPlacement& where) const { return where.nodes > 1 ? *inter_ : *base_; }
  std::shared_ptr<const CollectiveModel> base_, inter_;
  LinkSpec link_;
};

std::string substitute(std::string pattern, const std::string& model, const std::string& framework) {
  for (auto [key, val] : {std::pair<std::string, std::string>{"{model}", model}, {"{framework}", framework}})
    for (auto pos = pattern.find(key); pos != std::string::npos; pos = pattern.find(key)) pattern.replace(pos, key.size(), val);
  return pattern;
}

template <class Rule>
const Rule* last_match(const std::vector<Rule>& rules, const RunKey& k) {
  const Rule* found = nullptr;
  for (const auto& r : rules)
    if (r.when.matches(k, false)) found = &r;
  return found;
}

/// Caches of everything a run loads or prepares, shared by all experiments of a file.
class Runner {
 public:
  explicit Runner(const PaperSpec& paper) : paper_(paper) {}

  ExperimentResult run(const ExperimentSpec& x) {
    ExperimentResult r;
    r.paper = paper_.paper;
    // the experiment as its scenario file describes it
    std::tie(r.id, r.title, r.source, r.kind, r.tables, r.notes, r.ratio_dimension, r.ratio_of, r.ratio_to) =
        std::tie(x.id, x.title, x.source, x.kind, x.tables, x.notes, x.ratio_dimension, x.ratio_of, x.ratio_to);
    if (x.kind == "busbw") {
      run_busbw(x, r);
    } else {
      run_training(x, r);
    }
    return r;
  }

 private:
  [[noreturn]] void fail(const ExperimentSpec& x, const std::string& message) const {
    throw InputError(x.where, x.path, fmt::format("experiment '{}': {}", x.id, message));
  }
  /// A GPU count the system cannot hold: the error points at the experiment's 'gpus'.
  [[noreturn]] void fail_gpus(const ExperimentSpec& x, const std::string& message) const {
    throw InputError(x.gpus_where, x.gpus_path, fmt::format("experiment '{}': {}", x.id, message));
  }

  const Cluster& cluster(const std::string& name) {
    auto it = clusters_.find(name);
    if (it == clusters_.end()) it = clusters_.emplace(name, load_cluster(resolve(DataKind::cluster, name, "systems"))).first;
    return it->second;
  }
  std::shared_ptr<const CollectiveModel> collectives(const std::string& system, const SystemChange* variant) {
    const std::string key = system + "|" + (variant && variant->inter_node ? variant->name : std::string());
    auto it = collectives_.find(key);
    if (it != collectives_.end()) return it->second;
    const Cluster& c = cluster(system);
    std::shared_ptr<const CollectiveModel> model = make_collective_model(c);
    if (variant && variant->inter_node) {
      Cluster simple = c;
      simple.topology = nullptr;
      simple.inter_node = *variant->inter_node;
      model = std::make_shared<InterNodeOverride>(model, make_alpha_beta_model(simple), *variant->inter_node);
    }
    return collectives_[key] = model;
  }
  const Network& network(const std::string& name) {
    auto it = networks_.find(name);
    if (it == networks_.end()) it = networks_.emplace(name, load_network(resolve(DataKind::network, name, "models"))).first;
    return it->second;
  }
  const Strategy& strategy(const std::string& name) {
    auto it = strategies_.find(name);
    if (it == strategies_.end())
      it = strategies_.emplace(name, load_strategy(resolve(DataKind::framework, name, "frameworks"))).first;
    return it->second;
  }
  const Profile& profile(const std::string& name) {
    auto it = profiles_.find(name);
    if (it == profiles_.end()) it = profiles_.emplace(name, load_profile(resolve(DataKind::profile, name, "profile"))).first;
    return it->second;
  }

  /// The system as a run sees it: the variant's and the matching overrides' changes applied. Shared
  /// storage makes the read bandwidth depend on the node count (one server feeds every node).
  struct Prepared {
    const Predictor* predictor;
    GpuPlacement where;
  };
  Prepared prepare(const ExperimentSpec& x, const RunKey& k, const SystemChange* variant, int batch_per_gpu, int gpus) {
    const Cluster& base = cluster(k.system);
    if (gpus > base.max_gpus())
      fail_gpus(x, fmt::format("{} GPUs asked for on '{}', which holds {}", gpus, k.system, base.max_gpus()));
    if (gpus > base.gpus_per_node && gpus % base.gpus_per_node != 0)
      fail_gpus(x, fmt::format("{} GPUs do not fill whole nodes of {} on '{}'", gpus, base.gpus_per_node, k.system));
    const GpuPlacement where = gpus <= base.gpus_per_node ? GpuPlacement{gpus, 1, gpus}
                                                          : GpuPlacement{gpus, gpus / base.gpus_per_node, base.gpus_per_node};
    std::optional<BytesPerSecond> shared;
    std::optional<Bytes> stored;
    std::optional<double> jitter;
    const SystemChange* input = nullptr;
    auto apply = [&](const SystemChange& c) {
      if (c.input) input = &c;
      if (c.shared_storage) shared = c.shared_storage;
      if (c.stored_bytes_per_sample) stored = c.stored_bytes_per_sample;
      if (c.jitter_cv) jitter = c.jitter_cv;
    };
    if (variant) apply(*variant);
    for (const auto& o : x.overrides)
      if (o.when.matches(k, false)) apply(o);

    std::string key =
        fmt::format("{}|{}|{}|{}|{}|{}|{}", k.system, variant ? variant->name : "", k.model, k.framework, batch_per_gpu,
                    k.precision, k.inputs == "profile" ? substitute(x.profile_pattern, k.model, k.framework) : "");
    if (shared)
      key += fmt::format("|shared{}x{}/{}", in_bytes_per_second(*shared), where.nodes, stored ? in_bytes(*stored) : 0.0);
    if (jitter) key += fmt::format("|jitter{}", *jitter);
    if (input) key += "|input@" + input->input_at;
    auto it = predictors_.find(key);
    if (it == predictors_.end()) {
      Scenario sc;
      sc.cluster = base;
      if (variant && variant->inter_node) sc.cluster.inter_node = *variant->inter_node;
      sc.network = network(k.model);
      sc.strategy = strategy(k.framework);
      if (jitter) sc.strategy.jitter_cv = *jitter;
      if (input) {  // the paper's loader; the storage tiers it leaves out are the system's
        sc.cluster.input = *input->input;
        default_storage(*sc.cluster.input, sc.cluster);
      }
      sc.batch_per_gpu = batch_per_gpu;
      sc.compute.precision = precision_from_string(k.precision);
      sc.compute.optimizer = default_optimizer(sc.network, sc.strategy);
      sc.collectives = collectives(k.system, variant);
      if (shared) {
        // One server feeds all N nodes: each node reads at shared/N. The predictor reads decoded input
        // bytes (D = M · bytes_per_sample), so the bandwidth is scaled by decoded/stored bytes: reading
        // the stored records takes stored/shared·N seconds per sample, as it should.
        const double expand = stored ? sc.network.input_bytes_per_sample / *stored : 1.0;
        sc.cluster.dataset_in_page_cache = false;
        sc.cluster.disk = *shared * (expand / static_cast<double>(where.nodes));
      }
      if (k.inputs == "profile") {
        const std::string name = substitute(x.profile_pattern, k.model, k.framework);
        const Profile& p = profile(name);
        if (p.batch_per_gpu != batch_per_gpu)
          fail(x,
               fmt::format("profile '{}' was measured at batch {} per GPU, the experiment asks for {}", name, p.batch_per_gpu,
                           batch_per_gpu));
        if (p.model != k.model || p.framework != k.framework)
          fail(x,
               fmt::format("profile '{}' is for {} with {}, not {} with {}", name, p.model, p.framework, k.model, k.framework));
        sc.profile = p;
      }
      it = predictors_.emplace(key, std::make_unique<Predictor>(std::move(sc))).first;
    }
    return Prepared{it->second.get(), where};
  }

  void run_training(const ExperimentSpec& x, ExperimentResult& r) {
    std::vector<const SystemChange*> variants;
    if (x.variants.empty()) variants.push_back(nullptr);
    for (const auto& v : x.variants) variants.push_back(&v);
    for (const auto& system : x.systems)
      for (const SystemChange* variant : variants)
        for (const auto& model : x.models)
          for (const auto& framework : x.frameworks)
            for (const auto& precision : x.precisions)
              for (const auto& inputs : x.inputs) {
                RunKey k{system, model, framework, precision, inputs, variant ? variant->name : "", 1, 0};
                if (variant && !variant->when.matches(k, false)) continue;
                const GpusRule* g = last_match(x.gpus, k);
                const BatchRule* b = last_match(x.batch, k);
                if (g == nullptr) fail(x, fmt::format("no 'gpus' rule matches {} / {} / {}", system, model, framework));
                if (b == nullptr) fail(x, fmt::format("no 'batch' rule matches {} / {} / {}", system, model, framework));
                for (int batch : b->values) {
                  k.batch = batch;
                  run_series(x, k, variant, g->values, r);
                }
              }
  }

  void run_series(const ExperimentSpec& x, const RunKey& key, const SystemChange* variant, const std::vector<int>& gpus,
                  ExperimentResult& r) {
    auto per_gpu = [&](int n) {
      if (!x.strong_scaling) return key.batch;
      if (key.batch % n != 0)
        fail(x, fmt::format("strong scaling: the global batch {} does not divide over {} GPUs", key.batch, n));
      return key.batch / n;
    };
    auto predict = [&](int n) {
      const Prepared p = prepare(x, key, variant, per_gpu(n), n);
      return p.predictor->predict(n);
    };
    // Speedup against one GPU of the same series: the throughput ratio, which is eq. 8 under weak
    // scaling (N_g·t_iter(1)/t_iter(N_g)) and the time ratio under strong scaling.
    const Prediction one = predict(1);
    for (int n : gpus) {
      const Prediction p = n == 1 ? one : predict(n);
      Row row;
      row.paper = r.paper;
      row.experiment = x.id;
      // the run's coordinates, which the row shares with its key
      std::tie(row.system, row.model, row.framework, row.precision, row.inputs, row.variant) =
          std::tie(key.system, key.model, key.framework, key.precision, key.inputs, key.variant);
      row.batch_per_gpu = per_gpu(n);
      row.gpus = n;
      row.nodes = p.nodes;
      row.iteration_time_s = in_seconds(p.iteration_time);
      row.throughput_samples_per_s = p.throughput_samples_per_s;
      row.speedup = p.throughput_samples_per_s / one.throughput_samples_per_s;
      const auto& bd = p.breakdown;
      row.comm_s = in_seconds(bd.comm);
      row.comm_exposed_s = in_seconds(bd.comm_exposed);
      row.io_s = in_seconds(bd.io);
      row.h2d_s = in_seconds(bd.h2d);
      row.forward_s = in_seconds(bd.forward);
      row.backward_s = in_seconds(bd.backward);
      row.update_s = in_seconds(bd.update);
      row.sync_wait_s = in_seconds(bd.sync_wait);
      row.bottleneck = bottleneck_text(p);
      row.memory_per_gpu_bytes = in_bytes(p.memory.per_gpu);
      row.memory_fits = p.memory.fits;
      row.derived["r_u2g"] = eq::update_to_gpu_ratio(bd.update, bd.h2d, bd.forward, bd.backward);
      {
        // The I/O time the iteration waits for, as Table V measures t_io: all of it without prefetching
        // (eq. 2); with prefetching (eq. 4) the batch's fixed hand-over, or what exceeds the GPU side if more,
        // h2d + f + b + exposed communication + exposed update (the first layer's update with per-layer
        // updates, eq. 6/7): eq. F2b.
        const Predictor& pr = *prepare(x, key, variant, per_gpu(n), n).predictor;
        const Strategy& st = pr.scenario().strategy;
        const Seconds u_exposed =
            st.update == UpdatePlacement::per_layer && st.overlap != Overlap::none && !pr.layer_times().update.empty()
            ? pr.layer_times().update.front()
            : bd.update;
        const Seconds gpu_side = bd.h2d + bd.forward + bd.backward + bd.comm_exposed + u_exposed;
        row.derived["io_exposed_s"] = in_seconds(eq::exposed_input_wait(bd.io, gpu_side, bd.input_handover, st.io_prefetch));
      }
      if (x.efficiency_mb_per_gpu && n > 1 && bd.comm > Seconds{})
        row.derived["allreduce_efficiency"] =
            eq::allreduce_efficiency(mebibytes(*x.efficiency_mb_per_gpu * n), bd.comm, *x.efficiency_bandwidth);
      RunKey at = key;
      at.gpus = n;
      at.batch = key.batch;
      for (const auto& m : x.measured) {
        if (!m.when.matches(at)) continue;
        for (const auto& [k, v] : m.values) {
          row.measured[k] = v;
          row.measured_source[k] = m.source;
        }
      }
      r.rows.push_back(std::move(row));
    }
  }

  void run_busbw(const ExperimentSpec& x, ExperimentResult& r) {
    for (const auto& system : x.systems) {
      const Cluster& c = cluster(system);
      const auto model = collectives(system, nullptr);
      RunKey k{system, "", "", "", "", "", 1, 0};
      const GpusRule* g = last_match(x.gpus, k);
      if (g == nullptr) fail(x, fmt::format("no 'gpus' rule matches {}", system));
      for (const auto& op_name : x.operations) {
        const CollectiveOp op = op_name == "allreduce" ? CollectiveOp::allreduce : CollectiveOp::broadcast;
        for (int n : g->values) {
          if (n < 2) fail_gpus(x, "a collective needs at least 2 GPUs");
          if (n > c.max_gpus()) fail_gpus(x, fmt::format("{} GPUs asked for on '{}', which holds {}", n, system, c.max_gpus()));
          if (n > c.gpus_per_node && n % c.gpus_per_node != 0)
            fail_gpus(x, fmt::format("{} GPUs do not fill whole nodes of {} on '{}'", n, c.gpus_per_node, system));
          const GpuPlacement where =
              n <= c.gpus_per_node ? GpuPlacement{n, 1, n} : GpuPlacement{n, n / c.gpus_per_node, c.gpus_per_node};
          for (double s = in_bytes(x.min_size); s <= in_bytes(x.max_size) * (1 + 1e-9); s *= x.size_factor) {
            const Seconds t = model->time(op, bytes(s), where);
            BusBandwidthRow b;
            b.paper = r.paper;
            b.experiment = x.id;
            b.system = system;
            b.operation = op_name;
            b.gpus = n;
            b.nodes = where.nodes;
            b.size_bytes = s;
            b.time_s = in_seconds(t);
            b.algbw_gb_per_s = s / b.time_s / 1e9;
            // nccl-tests doc/PERFORMANCE.md: all-reduce busbw = algbw · 2(n−1)/n; broadcast busbw = algbw
            b.busbw_gb_per_s = op == CollectiveOp::allreduce ? b.algbw_gb_per_s * 2.0 * (n - 1) / n : b.algbw_gb_per_s;
            r.busbw.push_back(b);
          }
        }
      }
    }
  }

  const PaperSpec& paper_;
  std::map<std::string, Cluster> clusters_;
  std::map<std::string, std::shared_ptr<const CollectiveModel>> collectives_;
  std::map<std::string, Network> networks_;
  std::map<std::string, Strategy> strategies_;
  std::map<std::string, Profile> profiles_;
  std::map<std::string, std::unique_ptr<Predictor>> predictors_;
};

}  // namespace

std::vector<fs::path> scenario_files() {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(data_dir() / "examples" / "papers", ec))
    if (e.is_regular_file() && e.path().extension() == ".yaml") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<fs::path> select_scenarios(std::string_view paper_or_file) {
  const fs::path as_path(paper_or_file);
  std::error_code ec;
  if (paper_or_file.find('/') != std::string_view::npos || as_path.extension() == ".yaml") {
    if (!fs::is_regular_file(as_path, ec))
      throw InputError(SourceLocation{std::string(paper_or_file), 0, 0}, "PAPER", cannot_open(as_path));
    return {as_path};
  }
  const auto all = scenario_files();
  if (paper_or_file == "all") {
    if (all.empty())
      throw InputError(SourceLocation{}, "paper",
                       fmt::format("no scenario files in {}", (data_dir() / "examples" / "papers").string()));
    return all;
  }
  std::vector<fs::path> out;
  std::string known;
  for (const auto& f : all) {
    const std::string name = paper_name(f);
    known += (known.empty() ? "" : ", ") + name;
    if (name == paper_or_file) out.push_back(f);
  }
  if (out.empty())
    throw InputError(SourceLocation{}, "paper", fmt::format("unknown paper '{}' (known: all, {})", paper_or_file, known));
  return out;
}

PaperResult reproduce_file(const fs::path& file) {
  const PaperSpec spec = load_paper(file);
  PaperResult out;
  out.paper = spec.paper;
  out.title = spec.title;
  // the file as the user would find it: relative to the data folder when it lies inside
  std::error_code ec;
  const auto rel = fs::relative(file, data_dir(), ec);
  out.file = !ec && !rel.empty() && rel.native().rfind("..", 0) != 0 ? rel.string() : spec.file;
  Runner runner(spec);
  for (const auto& x : spec.experiments) out.experiments.push_back(runner.run(x));
  return out;
}

}  // namespace dlscale::repro
