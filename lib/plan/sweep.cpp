// Sweeps (include/dlscale/sweep.hpp): spec parsing, parallel evaluation in a deterministic order,
// ranking and the CSV / JSON-lines printers.
#include "dlscale/sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <ostream>
#include <thread>
#include <tuple>

#include "dlscale/error.hpp"
#include "dlscale/format.hpp"
#include "dlscale/io.hpp"
#include "io/files.hpp"
#include "io/yaml_reader.hpp"
#include "loaders/gpu_entry.hpp"

namespace dlscale {
namespace fs = std::filesystem;
using yamlio::MapReader;
using yamlio::Node;

namespace {
/// The first line of a CSV sweep (and of each CSV part of a sharded one).
constexpr std::string_view kCsvHeader =
    "cluster,model,framework,precision,batch_per_gpu,bucket,links,gpus,nodes,iteration_time_s,"
    "throughput_samples_per_s,speedup,efficiency,hiding_case,bottleneck,bottleneck_share,comm_s,comm_exposed_s,"
    "memory_per_gpu_bytes,memory_fits,train_hours,gpu_hours,cost,currency\n";

}  // namespace

Cluster apply_overrides(const Cluster& c, const LinkOverrides& o) {
  Cluster out = c;
  if (o.intra_node) {
    out.intra_node.bandwidth = o.intra_node->bandwidth;
    if (o.intra_node->latency > Seconds{}) out.intra_node.latency = o.intra_node->latency;
  }
  if (o.inter_node) {
    out.inter_node.bandwidth = o.inter_node->bandwidth;
    if (o.inter_node->latency > Seconds{}) out.inter_node.latency = o.inter_node->latency;
  }
  if (o.host_to_gpu) out.h2d_pinned = out.h2d_pageable = *o.host_to_gpu;
  if (o.storage) out.disk = out.page_cache = *o.storage;
  return out;
}

std::size_t SweepSpec::configurations() const noexcept {
  std::size_t n = 0;
  for (const auto& g : groups) n += g.gpus.size();
  return n;
}

// ---- spec parsing -----------------------------------------------------------------------------------
namespace {

/// A key whose value is a scalar or a sequence of scalars.
std::vector<Node> one_or_many(const Node& n) {
  if (n.is_sequence()) {
    auto items = n.items();
    if (items.empty()) n.fail("needs at least one value");
    return items;
  }
  return {n};
}

struct Tables {
  SweepSpec& spec;
  std::map<std::string, std::size_t> clusters, networks, strategies;

  template <class T, class Load>
  std::size_t intern(std::map<std::string, std::size_t>& seen, std::vector<T>& table, const Node& n, DataKind kind,
                     const char* option, Load load) {
    const std::string name = n.scalar();
    if (auto it = seen.find(name); it != seen.end()) return it->second;
    fs::path file;
    try {
      file = resolve(kind, name, option);
    } catch (const InputError& e) {
      n.fail(e.message());
    }
    table.push_back(load(file));
    seen.emplace(name, table.size() - 1);
    return table.size() - 1;
  }
  /// A cluster item, with the `gpu` axis's GPU when the spec has one (`axis_gpu`).
  std::size_t cluster(const Node& n, const std::optional<Node>& axis_gpu = std::nullopt) {
    if (!n.is_map() && !axis_gpu)
      return intern(clusters, spec.clusters, n, DataKind::cluster, "cluster", [](const fs::path& f) { return load_cluster(f); });
    // {name: dgx2, nodes: 4, fabric: "infiniband:100Gb/s:8", gpu: v100-sxm3}: the file composed as --nodes,
    // --fabric and --gpu do; named "dgx2*4@infiniband:100Gb/s:8+v100-sxm3" in the output (an inline GPU by
    // its name). A plain name with a GPU of the `gpu` axis is composed the same way.
    std::optional<MapReader> item;
    if (n.is_map()) item.emplace(n);
    const Node name = item ? item->required("name") : n;
    ClusterOverrides ov;
    std::string key = name.scalar();
    if (!item) return composed(n, name, key, ov, axis_gpu);
    MapReader& m = *item;
    if (auto k = m.optional("nodes")) {
      ov.nodes = k->int_at_most(1'000'000);
      if (ov.nodes < 1) k->fail("a cluster needs at least one node");
      key += fmt::format("*{}", ov.nodes);
    }
    if (auto f = m.optional("fabric")) {
      try {
        ov.fabric = parse_fabric_spec(f->scalar(), "fabric");
      } catch (const InputError& e) {
        f->fail(e.message());
      }
      key += "@" + f->scalar();
    }
    auto gpu = m.optional("gpu");
    if (gpu && axis_gpu) axis_gpu->fail("this cluster item names its own gpu: give the GPU in one place");
    if (!gpu) gpu = axis_gpu;
    m.finish();
    return composed(n, name, key, ov, gpu);
  }
  /// The cluster file `name` with `ov` and `gpu` applied, kept under `key` (+ the GPU).
  std::size_t composed(const Node& n, const Node& name, std::string key, ClusterOverrides ov, const std::optional<Node>& gpu) {
    if (gpu) {
      ov.gpu = read_gpu_node(*gpu);
      key += "+" + (gpu->is_map() ? ov.gpu->name : gpu->scalar());
    }
    if (auto it = clusters.find(key); it != clusters.end()) return it->second;
    fs::path file;
    try {
      file = resolve(DataKind::cluster, name.scalar(), "cluster");
    } catch (const InputError& e) {
      name.fail(e.message());
    }
    try {
      spec.clusters.push_back(load_cluster(file, ov));
    } catch (const InputError& e) {
      if (!e.where().file.empty() || (e.key() != "gpu" && e.key() != "nodes")) throw;  // not about the overrides
      if (gpu && e.key() == "gpu") gpu->fail(e.message());  // a GPU the file's graph cannot take
      // nodes without a fabric on a single-node file, said at the item
      n.fail(fmt::format("'{}' is one node with no network between nodes: give a 'fabric' (KIND:SPEED[:COUNT], e.g. "
                         "infiniband:100Gb/s:8)",
                         name.scalar()));
    }
    spec.clusters.back().name = key;
    clusters.emplace(key, spec.clusters.size() - 1);
    return spec.clusters.size() - 1;
  }
  std::size_t network(const Node& n) {
    return intern(networks, spec.networks, n, DataKind::network, "model", [](const fs::path& f) { return load_network(f); });
  }
  std::size_t strategy(const Node& n) {
    return intern(strategies, spec.strategies, n, DataKind::framework, "framework",
                  [](const fs::path& f) { return load_strategy(f); });
  }
};

Precision read_precision(const Node& n) { return precision_from_string(n.choice({"fp32", "tf32", "bf16", "fp16"})); }

int read_batch(const Node& n) {
  const auto b = n.integer();
  if (b < 1 || b > 1'000'000) n.fail("a batch per GPU is a whole number from 1 to 1000000");
  return static_cast<int>(b);
}

std::optional<Bytes> read_bucket(const Node& n) {
  if (n.is_scalar() && n.scalar() == "default") return std::nullopt;
  const Bytes b = n.bytes();
  if (!(b > Bytes{})) n.fail("a bucket must hold more than zero bytes (or say 'default')");
  return b;
}

std::vector<int> read_gpus(const Node& n) {
  std::vector<int> out;
  for (const auto& item : one_or_many(n)) {
    const auto g = item.integer();
    if (g < 1 || g > 10'000'000) item.fail("a GPU count is a whole number from 1 to 10000000");
    out.push_back(static_cast<int>(g));
  }
  return out;
}

LinkSpec read_link_override(const Node& n) {
  LinkSpec l;
  if (n.is_map()) {
    MapReader m(n);
    l.bandwidth = m.required("bandwidth").bandwidth();
    if (auto lat = m.optional("latency")) l.latency = lat->latency();
    m.finish();
  } else {
    l.bandwidth = n.bandwidth();
  }
  if (!(l.bandwidth > BytesPerSecond{})) n.fail("a bandwidth must be positive");
  return l;
}

/// The bandwidth as the spec writes it ("200 Gb/s"), for the row label.
std::string bandwidth_text(const Node& n) {
  if (n.is_map()) {
    for (const auto& [k, v] : MapReader(n).entries())
      if (k == "bandwidth") return v.scalar();
  }
  return n.scalar();
}

LinkOverrides read_links(const Node& n) {
  LinkOverrides o;
  MapReader m(n);
  std::string label;
  auto add = [&](std::string_view key, const Node& v) {
    if (!label.empty()) label += ' ';
    fmt::format_to(std::back_inserter(label), "{}={}", key, bandwidth_text(v));
  };
  if (auto v = m.optional("intra_node")) {
    o.intra_node = read_link_override(*v);
    add("intra_node", *v);
  }
  if (auto v = m.optional("inter_node")) {
    o.inter_node = read_link_override(*v);
    add("inter_node", *v);
  }
  if (auto v = m.optional("host_to_gpu")) {
    o.host_to_gpu = v->bandwidth();
    if (!(*o.host_to_gpu > BytesPerSecond{})) v->fail("a bandwidth must be positive");
    add("host_to_gpu", *v);
  }
  if (auto v = m.optional("storage")) {
    o.storage = v->bandwidth();
    if (!(*o.storage > BytesPerSecond{})) v->fail("a bandwidth must be positive");
    add("storage", *v);
  }
  if (auto v = m.optional("name")) label = v->scalar();
  m.finish();
  o.label = label.empty() ? "-" : label;
  return o;
}

/// The axes of one grid or one list entry, read into tables.
struct Axes {
  std::vector<std::size_t> clusters, models, frameworks, links;
  std::vector<int> gpus, batches;
  std::vector<Precision> precisions;
  std::vector<std::optional<Bytes>> buckets;
};

Axes read_axes(MapReader& m, Tables& t) {
  Axes a;
  // The gpu axis (catalogue ids or inline GPUs) puts each GPU in each cluster, cluster by cluster.
  std::vector<std::optional<Node>> gpus{std::nullopt};
  if (auto g = m.optional("gpu")) {
    gpus.clear();
    for (const auto& one : one_or_many(*g)) gpus.emplace_back(one);
  }
  for (const auto& n : one_or_many(m.required("cluster")))
    for (const auto& g : gpus) a.clusters.push_back(t.cluster(n, g));
  for (const auto& n : one_or_many(m.required("model"))) a.models.push_back(t.network(n));
  for (const auto& n : one_or_many(m.required("framework"))) a.frameworks.push_back(t.strategy(n));
  a.gpus = read_gpus(m.required("gpus"));
  if (auto n = m.optional("batch")) {
    for (const auto& b : one_or_many(*n)) a.batches.push_back(read_batch(b));
  } else {
    a.batches = {32};
  }
  if (auto n = m.optional("precision")) {
    for (const auto& p : one_or_many(*n)) a.precisions.push_back(read_precision(p));
  } else {
    a.precisions = {Precision::fp32};
  }
  if (auto n = m.optional("bucket_size")) {
    for (const auto& b : one_or_many(*n)) a.buckets.push_back(read_bucket(b));
  } else {
    a.buckets = {std::nullopt};
  }
  if (auto n = m.optional("links")) {
    if (n->is_map()) {
      t.spec.links.push_back(read_links(*n));
      a.links.push_back(t.spec.links.size() - 1);
    } else {
      for (const auto& l : one_or_many(*n)) {
        t.spec.links.push_back(read_links(l));
        a.links.push_back(t.spec.links.size() - 1);
      }
    }
  } else {
    a.links = {0};  // the spec's "no override" entry
  }
  return a;
}

/// Every combination, axes in a fixed order (cluster, model, framework, batch, precision, bucket,
/// links), GPU counts innermost. A bucket size only matters to frameworks that overlap aggregation with
/// backward: for the others the bucket axis collapses to "default".
void expand(const Axes& a, SweepSpec& spec) {
  for (auto c : a.clusters)
    for (auto m : a.models)
      for (auto f : a.frameworks)
        for (int b : a.batches)
          for (auto p : a.precisions) {
            const bool overlaps = spec.strategies[f].overlap != Overlap::none &&
                                  spec.strategies[f].aggregation != Aggregation::broadcast_reduce;
            std::vector<std::optional<Bytes>> buckets = a.buckets;
            if (!overlaps) buckets = {std::nullopt};
            for (const auto& bucket : buckets)
              for (auto l : a.links) {
                SweepGroup g;
                g.cluster = c;
                g.model = m;
                g.framework = f;
                g.links = l;
                g.batch = b;
                g.precision = p;
                g.bucket = bucket;
                g.gpus = a.gpus;
                spec.groups.push_back(std::move(g));
              }
          }
}

SweepSpec parse(const Node& root, const std::string& file) {
  SweepSpec spec;
  spec.file = file;
  spec.links.push_back(LinkOverrides{});  // index 0: no override
  Tables t{spec, {}, {}, {}};
  MapReader top(root);
  (void)top.optional("name");
  (void)top.optional("description");
  if (auto d = top.optional("dataset")) {
    MapReader dm(*d);
    if (auto s = dm.optional("samples")) {
      const auto v = s->integer();
      if (v < 1) s->fail("the number of samples per epoch must be at least 1");
      spec.dataset_samples = v;
    }
    if (auto e = dm.optional("epochs")) spec.dataset_epochs = e->positive_number();
    dm.finish();
  }
  const auto grid = top.optional("grid");
  const auto list = top.optional("list");
  if (!grid && !list) {
    top.finish();  // a misspelt 'grid:' is reported as the unknown key it is, at its line
    top.node().fail("a sweep spec needs 'grid' or 'list' (or both)");
  }
  if (grid) {
    MapReader g(*grid);
    expand(read_axes(g, t), spec);
    g.finish();
  }
  if (list) {
    if (!list->is_sequence()) list->fail("'list' is a sequence of configurations");
    for (const auto& item : list->items()) {
      MapReader e(item);
      expand(read_axes(e, t), spec);
      e.finish();
    }
  }
  top.finish();
  if (spec.groups.empty()) top.node().fail("the spec describes no configuration");
  return spec;
}

}  // namespace

SweepSpec load_sweep_spec(const fs::path& file) { return parse(yamlio::load_file(file), file.string()); }
SweepSpec parse_sweep_spec(const std::string& text, const std::string& name) {
  return parse(yamlio::load_string(text, name), name);
}

// ---- evaluation -------------------------------------------------------------------------------------
namespace {
/// The scenario of a group with its collective model taken from `models` (one per cluster × links,
/// built once: the NCCL model's channel search is the expensive part of preparing a Predictor).
Scenario make_group_scenario(const SweepSpec& spec, const SweepGroup& g,
                             const std::vector<std::shared_ptr<const CollectiveModel>>* models,
                             const std::vector<Network>* networks = nullptr,
                             std::shared_ptr<const LayerTimes> modelled = nullptr,
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
  sc.network = networks ? (*networks)[g.model] : spec.networks[g.model];
  sc.strategy = spec.strategies[g.framework];
  if (g.bucket) {
    sc.strategy.overlap = Overlap::bucketed;
    sc.strategy.bucket_size = *g.bucket;
    sc.strategy.first_bucket = min(sc.strategy.first_bucket, *g.bucket);
  }
  sc.batch_per_gpu = g.batch;
  sc.compute.precision = g.precision;
  sc.compute.optimizer = default_optimizer(sc.network, sc.strategy);
  sc.modelled_layers = std::move(modelled);
  sc.modelled_layers_doubled_gpu = std::move(modelled_doubled_gpu);
  return sc;
}

/// Every field of a network, byte for byte (names included): two networks with the same fingerprint
/// are the same input to the kernel model. The static_asserts stop a build whose structs gained a
/// field this does not write.
void put(std::string& out, const void* p, std::size_t n) { out.append(static_cast<const char*>(p), n); }
template <class T>
void put(std::string& out, const T& v) { put(out, &v, sizeof v); }
void put(std::string& out, const std::string& v) {
  put(out, v.size());
  out += v;
}
void put(std::string& out, const std::vector<std::int64_t>& v) {
  put(out, v.size());
  put(out, v.data(), v.size() * sizeof(std::int64_t));
}
std::string network_fingerprint(const Network& net) {
  // The sizes of the structs as this fingerprint knows them (libstdc++ on 64-bit targets; elsewhere the
  // check is skipped): a new field changes them and stops the build here.
  constexpr bool known_abi = sizeof(std::string) == 32 && sizeof(void*) == 8;
  static_assert(!known_abi || sizeof(Operator) == 120, "Operator changed: update network_fingerprint");
  static_assert(!known_abi || sizeof(Layer) == 192, "Layer changed: update network_fingerprint");
  static_assert(!known_abi || sizeof(Network) == 152, "Network changed: update network_fingerprint");
  std::string out;
  put(out, net.name);
  put(out, net.description);
  put(out, net.input_kind);
  put(out, net.input_shape);
  put(out, in_bytes(net.input_bytes_per_sample));
  put(out, net.layers.size());
  for (const auto& l : net.layers) {
    put(out, l.name);
    put(out, static_cast<int>(l.kind));
    put(out, l.params);
    put(out, l.macs_per_sample);
    put(out, l.forward_flops_per_sample);
    put(out, l.activation_bytes_per_sample);
    put(out, l.output_shape);
    put(out, l.input_shape);
    for (int v : {l.kernel_h, l.kernel_w, l.stride_h, l.stride_w, l.groups, l.heads, l.kv_heads}) put(out, v);
    put(out, l.hidden);
    put(out, l.gated);
    put(out, l.causal);
    put(out, l.ops.size());
    for (const auto& o : l.ops) {
      put(out, o.name);
      put(out, static_cast<int>(o.kind));
      put(out, o.input_shape);
      put(out, o.output_shape);
      put(out, o.activation_bytes_per_sample);
      for (int v : {o.kernel_h, o.kernel_w, o.stride_h, o.stride_w, o.branches}) put(out, v);
    }
  }
  return out;
}

/// Layer times already computed in this process, by network (its fingerprint, kept whole so that two
/// different networks never share a key) and the rest of shared_layer_times's key. The kernel model is a
/// pure function of these (its parameters are the shipped file's, loaded once per process), so a sweep
/// run again (a second run of a spec, a sweep over variants of one) reuses them. Bounded: cleared
/// past 4,096 entries.
struct LayerTimesMemo {
  std::mutex mutex;
  std::map<std::string, int> networks;  // fingerprint → id
  std::map<std::string, std::shared_ptr<const LayerTimes>> times;
};
LayerTimesMemo& layer_times_memo() {
  static LayerTimesMemo memo;
  return memo;
}

/// The compute model's layer times of each group, on its GPU and on its GPU doubled (the bottleneck's
/// doubled scenario, with_doubled: Resource::gpu), both from the networks with their shapes (the
/// Predictor is handed `slim` in run_sweep, which keeps none unless a step models its own).
struct GroupLayerTimes {
  std::vector<std::shared_ptr<const LayerTimes>> gpu, doubled_gpu;
};

/// The compute model's layer times per group, shared between groups with the same network, GPU, batch,
/// precision and convolution algorithms (the kernel model is the costly part of a new Predictor), and
/// between runs (layer_times_memo); the same for the GPU doubled, except for sharded steps, whose one-GPU
/// scenario (eq. K16) models its own times from the doubled GPU.
GroupLayerTimes shared_layer_times(const SweepSpec& spec, const std::vector<std::vector<int>>& counts) {
  GroupLayerTimes out{std::vector<std::shared_ptr<const LayerTimes>>(spec.groups.size()),
                      std::vector<std::shared_ptr<const LayerTimes>>(spec.groups.size())};
  std::map<std::string, std::shared_ptr<const LayerTimes>> seen;
  auto& memo = layer_times_memo();
  std::vector<int> net_id(spec.networks.size(), -1);
  auto id_of = [&](const std::vector<Network>& nets, std::vector<int>& ids, std::size_t model) {
    if (ids[model] < 0) {
      std::string fp = network_fingerprint(nets[model]);
      const std::lock_guard lock(memo.mutex);
      auto [it, fresh] = memo.networks.try_emplace(std::move(fp), static_cast<int>(memo.networks.size()));
      ids[model] = it->second;
    }
    return ids[model];
  };
  // Each cluster's GPU doubled, as the bottleneck's doubled scenario has it.
  std::vector<std::optional<GpuSpec>> doubled(spec.clusters.size());
  auto doubled_gpu = [&](std::size_t cluster) -> const GpuSpec& {
    if (!doubled[cluster]) {
      Scenario sc;
      sc.cluster = spec.clusters[cluster];
      doubled[cluster] = with_doubled(sc, Resource::gpu).cluster.gpu;
    }
    return *doubled[cluster];
  };
  // The key's parts that stay the same from group to group, formatted once: every figure of the GPU and
  // of the framework's convolution algorithms that the kernel model reads.
  std::vector<std::array<std::string, 2>> gpu_keys(spec.clusters.size());
  auto gpu_key = [&](std::size_t cluster, const GpuSpec& gpu, bool twice) -> const std::string& {
    std::string& k = gpu_keys[cluster][twice ? 1 : 0];
    if (k.empty())
      k = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", gpu.name, gpu.architecture, gpu.sm_version, gpu.sm_count,
                      gpu.peak_fp32.base(), gpu.peak_fp16.base(), gpu.peak_bf16.base(), gpu.peak_tf32.base(),
                      gpu.memory_bandwidth.base(), gpu.boost_clock.base(), gpu.base_clock.base());
    return k;
  };
  std::vector<std::string> policy_keys(spec.strategies.size());
  auto policy_key = [&](std::size_t framework) -> const std::string& {
    std::string& k = policy_keys[framework];
    if (k.empty()) {
      const ConvAlgorithmPolicy& pol = spec.strategies[framework].conv_algorithms;
      k = fmt::format("{}|{}|{}|{}", pol.winograd, pol.fft, pol.workspace_limit.base(), to_string(pol.layout));
    }
    return k;
  };
  auto times = [&](const SweepGroup& g, const GpuSpec& gpu, bool twice, const std::vector<Network>& nets,
                   std::vector<int>& ids) {
    const Strategy& st = spec.strategies[g.framework];
    ComputeOptions base;
    base.precision = g.precision;
    base.optimizer = default_optimizer(spec.networks[g.model], st);
    const ComputeOptions c = step_compute(base, st, gpu);
    const std::string key = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}", id_of(nets, ids, g.model), gpu_key(g.cluster, gpu, twice),
                                        g.batch, to_string(g.precision), policy_key(g.framework), to_string(c.attention),
                                        c.fp32_gradients, c.lrn, to_string(c.optimizer));
    auto& slot = seen[key];
    if (!slot) {
      {
        const std::lock_guard lock(memo.mutex);
        if (auto it = memo.times.find(key); it != memo.times.end()) slot = it->second;
      }
      if (!slot) {
        slot = std::make_shared<const LayerTimes>(estimate_layer_times(nets[g.model], gpu, g.batch, c));
        const std::lock_guard lock(memo.mutex);
        if (memo.times.size() >= 4096) memo.times.clear();
        memo.times.emplace(key, slot);
      }
    }
    return slot;
  };
  // Groups that differ only in links or buckets have the same times: their key is not formatted again.
  std::map<std::tuple<std::size_t, std::size_t, std::size_t, int, Precision>, std::size_t> same;
  for (std::size_t i = 0; i < spec.groups.size(); ++i) {
    if (counts[i].empty()) continue;
    const auto& g = spec.groups[i];
    if (auto [it, fresh] = same.try_emplace({g.cluster, g.model, g.framework, g.batch, g.precision}, i); !fresh) {
      out.gpu[i] = out.gpu[it->second];
      out.doubled_gpu[i] = out.doubled_gpu[it->second];
      continue;
    }
    out.gpu[i] = times(g, spec.clusters[g.cluster].gpu, false, spec.networks, net_id);
    if (!spec.strategies[g.framework].sharding.sharded())
      out.doubled_gpu[i] = times(g, doubled_gpu(g.cluster), true, spec.networks, net_id);
  }
  return out;
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
  if (gpus > c.max_gpus())
    return fmt::format("cluster '{}' holds at most {} GPUs, not {}", c.name, c.max_gpus(), gpus);
  if (gpus > c.gpus_per_node && gpus % c.gpus_per_node != 0)
    return fmt::format("{} GPUs do not fill whole nodes of {} on cluster '{}'", gpus, c.gpus_per_node, c.name);
  return std::nullopt;
}
}  // namespace

const GroupEvaluator& closed_form_evaluator() {
  static const ClosedForm instance;
  return instance;
}

SweepResult run_sweep(const SweepSpec& spec, const SweepOptions& options) {
  const GroupEvaluator& ev = options.evaluator ? *options.evaluator : closed_form_evaluator();
  SweepResult r;
  r.evaluator = ev.name();

  // The GPU counts each group's cluster can hold, and each group's first row: the output order is
  // fixed before any thread starts.
  std::vector<std::vector<int>> counts(spec.groups.size());
  std::vector<std::size_t> first(spec.groups.size() + 1, 0);
  for (std::size_t i = 0; i < spec.groups.size(); ++i) {
    const auto& g = spec.groups[i];
    // A precision the group's GPU has no mode for (TF32 or bf16 before Ampere): `predict` refuses it, so a
    // grid that crosses GPUs with precisions leaves those configurations out and says so.
    if (const GpuSpec& gpu = spec.clusters[g.cluster].gpu; !gpu.supports(g.precision)) {
      r.unsupported += g.gpus.size();
      if (r.unsupported_examples.size() < 3)
        r.unsupported_examples.push_back(gpu.missing_mode(g.precision, spec.clusters[g.cluster].name));
      first[i + 1] = first[i];
      continue;
    }
    for (int n : g.gpus) {
      if (auto why = unplaceable(spec.clusters[g.cluster], n)) {
        ++r.skipped;
        if (r.skipped_examples.size() < 3) r.skipped_examples.push_back(*why);
      } else {
        counts[i].push_back(n);
      }
    }
    first[i + 1] = first[i] + counts[i].size();
  }
  const std::size_t total = first.back();
  r.rows.resize(total);

  // One collective model per (cluster, links), shared by the groups (models are immutable and safe to
  // call from several threads).
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

  // The networks as the Predictor needs them: without names and descriptions, so that copying one into
  // each group's Scenario allocates less. The closed form is handed every group's layer times
  // (layer_times below), so it reads no shape either: only parameters and kept bytes (gradients,
  // memory). Another evaluator (the simulator's, which may re-time layers for other GPUs) keeps them,
  // and so must a sweep that comes to checkpoint activations (the checkpointed memory reads the
  // segment inputs' output shapes); sweep groups do not set ComputeOptions::checkpointing.
  // A sharded step's one GPU (eq. K16) models its own layer times too, from the shapes.
  const bool shapes = (options.evaluator != nullptr && options.evaluator != &closed_form_evaluator()) ||
                      std::any_of(spec.strategies.begin(), spec.strategies.end(),
                                  [](const Strategy& st) { return st.sharding.sharded(); });
  std::vector<Network> slim = spec.networks;
  for (auto& net : slim) {
    net.description = {};
    for (auto& l : net.layers) {
      l.name = {};
      if (!shapes) l.input_shape = {}, l.output_shape = {};
      for (auto& o : l.ops) {
        o.name = {};
        if (!shapes) o.input_shape = {}, o.output_shape = {};
      }
    }
  }

  const auto layer_times = shared_layer_times(spec, counts);

  // Workloads per model (time and cost to train).
  std::vector<std::optional<TrainingWorkload>> workloads;
  for (const auto& net : spec.networks) workloads.push_back(make_workload(net, spec.dataset_samples, spec.dataset_epochs));

  std::atomic<std::size_t> next{0}, done{0};
  std::exception_ptr failure;
  std::size_t failed_group = std::numeric_limits<std::size_t>::max();  // report the first in spec order
  std::mutex failure_mutex;
  auto worker = [&] {
    std::vector<Prediction> preds;
    for (;;) {
      const std::size_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= spec.groups.size()) return;
      try {
        const auto& g = spec.groups[i];
        preds.assign(counts[i].size(), Prediction{});
        if (!counts[i].empty()) ev.evaluate(make_group_scenario(spec, g, &models, &slim, layer_times.gpu[i], layer_times.doubled_gpu[i]),
                                              counts[i], preds);
        const Cluster& cl = spec.clusters[g.cluster];
        for (std::size_t k = 0; k < preds.size(); ++k) {
          SweepRow& row = r.rows[first[i] + k];
          row.group = i;
          if (const auto& w = workloads[g.model]) {
            const TrainingCost tc = time_to_train(preds[k], *w, cl);
            row.train_hours = in_seconds(tc.wall_time) / 3600.0;
            row.gpu_hours = tc.gpu_hours;
            row.cost = tc.cost;
          }
          row.prediction = std::move(preds[k]);
        }
        done.fetch_add(counts[i].size(), std::memory_order_relaxed);
      } catch (...) {
        std::lock_guard lock(failure_mutex);
        if (i < failed_group) {  // whatever the thread count, the same error as with one thread
          failure = std::current_exception();
          failed_group = i;
        }
        next.store(spec.groups.size());
        return;
      }
    }
  };
  unsigned n = options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  n = static_cast<unsigned>(std::min<std::size_t>(n, std::max<std::size_t>(1, spec.groups.size())));
  std::atomic<unsigned> exited{0};
  auto counted_worker = [&] {
    worker();
    exited.fetch_add(1);
  };
  // With a progress callback the calling thread only draws; otherwise it works too.
  const unsigned spawned = options.progress ? n : n - 1;
  std::vector<std::thread> pool;
  pool.reserve(spawned);
  for (unsigned k = 0; k < spawned; ++k) pool.emplace_back(counted_worker);
  if (options.progress) {
    while (exited.load() < spawned) {
      options.progress(done.load(), total);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    options.progress(done.load(), total);
  } else {
    worker();
  }
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
  return r;
}

// ---- shards -----------------------------------------------------------------------------------------
SweepShard sweep_shard_from_string(std::string_view s) {
  auto number = [&](std::string_view part, std::size_t& out) {
    if (part.empty() || part.size() > 9) return false;
    out = 0;
    for (char c : part) {
      if (c < '0' || c > '9') return false;
      out = out * 10 + static_cast<std::size_t>(c - '0');
    }
    return true;
  };
  const auto slash = s.find('/');
  SweepShard sh;
  if (slash == std::string_view::npos || !number(s.substr(0, slash), sh.index) ||
      !number(s.substr(slash + 1), sh.count))
    throw InputError(SourceLocation{}, "shard", fmt::format("'{}' is not I/N (part I of N, e.g. 3/8)", s));
  if (sh.count < 1 || sh.index < 1 || sh.index > sh.count)
    throw InputError(SourceLocation{}, "shard", fmt::format("'{}': the part I of I/N runs from 1 to N, and N is at least 1", s));
  return sh;
}

SweepSpec shard_sweep_spec(const SweepSpec& spec, SweepShard shard) {
  const std::size_t total = spec.configurations();
  if (shard.count < 1 || shard.index < 1 || shard.index > shard.count)
    throw InputError(SourceLocation{}, "shard", fmt::format("part {} of {} does not exist", shard.index, shard.count));
  if (shard.count > total)
    throw InputError(SourceLocation{}, "shard", fmt::format("{} parts of a sweep of {} configuration{} would leave some empty (N is at "
                                            "most the number of configurations)",
                                            shard.count, total, total == 1 ? "" : "s"));
  // [begin, end) of the configuration numbers; products stay far below 2^64 (C ≤ groups × 10^7 counts).
  const std::size_t begin = (shard.index - 1) * total / shard.count;
  const std::size_t end = shard.index * total / shard.count;
  SweepSpec out = spec;
  out.groups.clear();
  std::size_t k = 0;
  for (const auto& g : spec.groups) {
    const std::size_t n = g.gpus.size();
    const std::size_t lo = std::max(begin, k), hi = std::min(end, k + n);
    if (lo < hi) {
      SweepGroup part = g;
      part.gpus.assign(g.gpus.begin() + static_cast<std::ptrdiff_t>(lo - k), g.gpus.begin() + static_cast<std::ptrdiff_t>(hi - k));
      out.groups.push_back(std::move(part));
    }
    k += n;
  }
  return out;
}

std::string merge_sweep_parts(std::span<const fs::path> parts) {
  if (parts.empty()) throw InputError(SourceLocation{}, "parts", "give the parts of a sharded sweep, in order");
  std::string out;
  bool csv = false;
  std::vector<std::string> texts;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string name = parts[i].string();
    const std::string text = read_input_file(parts[i]);
    auto fail = [&](int line, int col, const std::string& what) {
      throw InputError(SourceLocation{name, line, col}, "", what);
    };
    // A part given twice (the same file, or a copy with the same rows) would repeat its rows; two parts
    // without rows are the same harmlessly.
    for (std::size_t j = 0; j < i; ++j) {
      std::error_code ec;
      if (fs::equivalent(parts[i], parts[j], ec) || (text == texts[j] && !text.empty() && text != kCsvHeader))
        fail(0, 0, fmt::format("the same part as {} (part {} of the list, given again as part {}): each part once",
                               parts[j].string(), j + 1, i + 1));
    }
    texts.push_back(text);
    if (i == 0) csv = text.starts_with(kCsvHeader.substr(0, kCsvHeader.find(',') + 1));
    if (!text.empty() && text.back() != '\n') {
      const int line = static_cast<int>(std::count(text.begin(), text.end(), '\n')) + 1;
      const auto col = text.size() - (text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1) + 1;
      fail(line, static_cast<int>(col), "the last line has no end (a part cut short?)");
    }
    std::size_t body = 0;
    if (csv) {
      if (!text.starts_with(kCsvHeader))
        fail(1, 1, fmt::format("not a CSV part of a dlscale sweep (the first line is not the header of {})",
                               parts[0].string()));
      body = kCsvHeader.size();
      if (i == 0) out.append(kCsvHeader);
    }
    // Every row: CSV rows begin with a cluster name, JSON lines are objects; a header in the middle or
    // a part of the other format is refused.
    int line = csv ? 2 : 1;
    for (std::size_t pos = body; pos < text.size(); ++line) {
      const std::size_t eol = text.find('\n', pos);
      const std::string_view row(text.data() + pos, eol - pos);
      const bool object = row.starts_with('{') && row.ends_with('}');
      if (csv ? (object || row.empty() || row == kCsvHeader.substr(0, kCsvHeader.size() - 1)) : !object)
        fail(line, 1, csv ? fmt::format("not a CSV row of a dlscale sweep (the parts are CSV, as {} is)", parts[0].string())
                          : fmt::format("not a JSON object (the parts are JSON lines, as {} is)", parts[0].string()));
      pos = eol + 1;
    }
    out.append(text, body, std::string::npos);
  }
  return out;
}

// ---- ranking and printing ---------------------------------------------------------------------------
SweepFormat sweep_format_from_string(std::string_view s) {
  if (s == "csv") return SweepFormat::csv;
  if (s == "jsonl") return SweepFormat::jsonl;
  throw InputError(SourceLocation{}, "format", fmt::format("unknown format '{}' (expected csv or jsonl)", s));
}

SweepRank sweep_rank_from_string(std::string_view s) {
  if (s == "throughput") return SweepRank::throughput;
  if (s == "efficiency") return SweepRank::efficiency;
  if (s == "cost") return SweepRank::cost;
  throw InputError(SourceLocation{}, "rank", fmt::format("unknown ranking '{}' (expected throughput, efficiency or cost)", s));
}

bool fits_in_memory(const Prediction& p) noexcept { return p.memory.fits && p.memory.host_fits; }

std::vector<std::size_t> top_rows(const SweepSpec& spec, const SweepResult& r, std::size_t k, SweepRank by,
                                  std::string* note) {
  // Only configurations that fit in memory are ranked: one that cannot run is no candidate.
  std::vector<std::size_t> idx;
  idx.reserve(r.rows.size());
  for (std::size_t i = 0; i < r.rows.size(); ++i)
    if (fits_in_memory(r.rows[i].prediction)) idx.push_back(i);
  const std::size_t left_out = r.rows.size() - idx.size();
  bool all_priced = true;
  for (const auto& row : r.rows) all_priced = all_priced && row.cost.has_value();
  if (by == SweepRank::cost && !all_priced && note) {
    std::string missing;
    for (const auto& c : spec.clusters)
      if (c.price_per_gpu_hour <= 0.0) missing += (missing.empty() ? "" : ", ") + c.name;
    *note = missing.empty()
                ? "some models have no training workload (give dataset: {samples: N}); ranked by GPU-hours, unknown last"
                : fmt::format("no price_per_gpu_hour for cluster {}: ranked by GPU-hours (cost at equal price)", missing);
  }
  auto key = [&](const SweepRow& row) -> double {
    switch (by) {
      case SweepRank::throughput: return -row.prediction.throughput_samples_per_s;
      case SweepRank::efficiency: return -row.prediction.efficiency;
      case SweepRank::cost: {
        const double v = all_priced ? row.cost.value_or(0.0) : row.gpu_hours;
        return v > 0.0 ? v : std::numeric_limits<double>::infinity();
      }
    }
    return 0.0;
  };
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return key(r.rows[a]) < key(r.rows[b]); });
  if (idx.size() > k) idx.resize(k);
  if (left_out > 0 && note) {
    const std::string oom = fmt::format("{} of {} configurations do not fit in GPU (or host) memory and are not ranked",
                                        left_out, r.rows.size());
    *note = note->empty() ? oom : *note + "; " + oom;
  }
  return idx;
}

namespace {
std::string bucket_label(const SweepSpec& spec, const SweepGroup& g) {
  if (g.bucket) return fmt::format("{:g} MiB", in_mebibytes(*g.bucket));
  const Strategy& s = spec.strategies[g.framework];
  if (s.overlap == Overlap::bucketed) return fmt::format("{:g} MiB", in_mebibytes(s.bucket_size));
  return s.overlap == Overlap::layerwise ? "layerwise" : "-";
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}
}  // namespace

void write_sweep(std::ostream& out, SweepFormat f, const SweepSpec& spec, const SweepResult& r,
                 std::span<const std::size_t> rows) {
  std::vector<std::size_t> all;
  if (rows.empty()) {
    all.resize(r.rows.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
    rows = all;
  }
  // Labels per group, formatted once.
  std::vector<std::string> prefix(spec.groups.size());
  fmt::memory_buffer buf;
  if (f == SweepFormat::csv) buf.append(kCsvHeader.data(), kCsvHeader.data() + kCsvHeader.size());
  for (std::size_t ri : rows) {
    const SweepRow& row = r.rows[ri];
    const SweepGroup& g = spec.groups[row.group];
    const Prediction& p = row.prediction;
    const Cluster& cl = spec.clusters[g.cluster];
    const std::string_view prec = to_string(g.precision);
    if (f == SweepFormat::csv) {
      std::string& pre = prefix[row.group];
      if (pre.empty())
        pre = fmt::format("{},{},{},{},{},{},{}", csv_field(cl.name), csv_field(spec.networks[g.model].name),
                          csv_field(spec.strategies[g.framework].name), prec, g.batch,
                          csv_field(bucket_label(spec, g)), csv_field(spec.links[g.links].label));
      fmt::format_to(std::back_inserter(buf), "{},{},{},{:.6g},{:.6g},{:.6g},{:.6g},{},{},{:.4g},{:.6g},{:.6g},{:.6g},{},",
                     pre, p.gpus, p.nodes, in_seconds(p.iteration_time), p.throughput_samples_per_s, p.speedup,
                     p.efficiency, p.hiding_case, to_string(p.bottleneck), p.bottleneck_share,
                     in_seconds(p.breakdown.comm), in_seconds(p.breakdown.comm_exposed), in_bytes(p.memory.per_gpu),
                     fits_in_memory(p) ? "true" : "false");
      if (row.gpu_hours > 0.0)
        fmt::format_to(std::back_inserter(buf), "{:.6g},{:.6g},", row.train_hours, row.gpu_hours);
      else
        fmt::format_to(std::back_inserter(buf), ",,");
      if (row.cost)
        fmt::format_to(std::back_inserter(buf), "{:.2f},{}\n", *row.cost, cl.currency);
      else
        fmt::format_to(std::back_inserter(buf), ",\n");
    } else {
      nlohmann::ordered_json j;
      j["cluster"] = cl.name;
      j["model"] = spec.networks[g.model].name;
      j["framework"] = spec.strategies[g.framework].name;
      j["precision"] = prec;
      j["batch_per_gpu"] = g.batch;
      j["bucket"] = bucket_label(spec, g);
      j["links"] = spec.links[g.links].label;
      j["gpus"] = p.gpus;
      j["nodes"] = p.nodes;
      j["iteration_time_s"] = in_seconds(p.iteration_time);
      j["throughput_samples_per_s"] = p.throughput_samples_per_s;
      j["speedup"] = p.speedup;
      j["efficiency"] = p.efficiency;
      j["hiding_case"] = p.hiding_case;
      j["bottleneck"] = std::string(to_string(p.bottleneck));
      j["bottleneck_resource"] = p.bottleneck_resource.str();
      j["bottleneck_share"] = p.bottleneck_share;
      j["bottleneck_gain"] = p.bottleneck_gain;
      j["comm_s"] = in_seconds(p.breakdown.comm);
      j["comm_exposed_s"] = in_seconds(p.breakdown.comm_exposed);
      j["memory_per_gpu_bytes"] = in_bytes(p.memory.per_gpu);
      j["memory_fits"] = fits_in_memory(p);
      j["train_hours"] = row.gpu_hours > 0.0 ? nlohmann::ordered_json(row.train_hours) : nlohmann::ordered_json(nullptr);
      j["gpu_hours"] = row.gpu_hours > 0.0 ? nlohmann::ordered_json(row.gpu_hours) : nlohmann::ordered_json(nullptr);
      j["cost"] = row.cost ? nlohmann::ordered_json(*row.cost) : nlohmann::ordered_json(nullptr);
      j["currency"] = row.cost ? nlohmann::ordered_json(cl.currency) : nlohmann::ordered_json(nullptr);
      const std::string line = j.dump();
      buf.append(line.data(), line.data() + line.size());
      buf.push_back('\n');
    }
    if (buf.size() > (1u << 20)) {
      out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
      buf.clear();
    }
  }
  out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
}

}  // namespace dlscale
