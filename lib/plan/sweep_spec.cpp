// Sweep specs (include/dlscale/sweep.hpp): the YAML spec parsed and validated into tables and groups,
// and the link overrides a group applies to its cluster.
#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>

#include "dlscale/error.hpp"
#include "dlscale/io.hpp"
#include "dlscale/predict.hpp"
#include "dlscale/sweep.hpp"
#include "io/yaml_reader.hpp"
#include "loaders/gpu_entry.hpp"
#include "loaders/parallel_entry.hpp"

namespace dlscale {
namespace fs = std::filesystem;
using yamlio::MapReader;
using yamlio::Node;

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
      if (gpu && e.key() == "gpu") gpu->fail(e.message());                             // a GPU the file's graph cannot take
      // nodes without a fabric on a single-node file, said at the item
      n.fail(
          fmt::format("'{}' is one node with no network between nodes: give a 'fabric' (KIND:SPEED[:COUNT], e.g. "
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

Precision read_precision(const Node& n) { return precision_from_string(n.choice({"fp32", "tf32", "bf16", "fp16", "fp8"})); }

Fp8Scaling read_fp8_scaling(const Node& n) { return fp8_scaling_from_string(n.choice({"tensorwise", "rowwise", "mxfp8"})); }

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
  bool batch_given = false;  // the `batch` axis is then the layouts' micro-batch
  /// The `layout` axis: each a map of a framework file's `parallel:` keys, read over each framework's layout in
  /// expand; nullopt ('none') data parallelism. Without the axis one nullopt.
  std::vector<std::optional<Node>> layouts{std::nullopt};
  std::vector<Precision> precisions;
  std::vector<Fp8Scaling> fp8_scalings;
  bool fp8_all_gather = false;  // eq. S12, for the groups it applies to (expand)
  std::vector<std::optional<Bytes>> buckets;
};

/// The fp8 keys of a grid or list entry: `fp8_scaling` (eq. K15, K15c) and `fp8_all_gather` (eq. S12), read after the
/// precision axis they depend on.
void read_fp8_axes(MapReader& m, Axes& a) {
  // fp8's scaling recipe (eq. K15, K15c): an axis of the fp8 precision only, as `validate` refuses row-wise or MX
  // scaling without fp8
  if (auto n = m.optional("fp8_scaling")) {
    for (const auto& s : one_or_many(*n)) {
      a.fp8_scalings.push_back(read_fp8_scaling(s));
      if (a.fp8_scalings.back() != Fp8Scaling::tensorwise &&
          std::find(a.precisions.begin(), a.precisions.end(), Precision::fp8) == a.precisions.end())
        s.fail(fmt::format("{} scaling is a recipe of fp8 training; no precision here is fp8", s.scalar()));
    }
  } else {
    a.fp8_scalings = {Fp8Scaling::tensorwise};
  }
  // eq. S12: FSDP's fp8 all-gather, on the groups of tensor-wise fp8 and a stage-3 framework (expand)
  if (auto n = m.optional("fp8_all_gather")) {
    a.fp8_all_gather = n->boolean();
    if (a.fp8_all_gather &&
        (std::find(a.precisions.begin(), a.precisions.end(), Precision::fp8) == a.precisions.end() ||
         std::find(a.fp8_scalings.begin(), a.fp8_scalings.end(), Fp8Scaling::tensorwise) == a.fp8_scalings.end()))
      n->fail("fp8 all-gather gathers tensor-wise fp8 weights; no group here is fp8 with tensor-wise scaling");
  }
}

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
    a.batch_given = true;
  } else {
    a.batches = {32};
  }
  if (auto n = m.optional("precision")) {  // without the axis each framework's own (default_precision), else fp32
    for (const auto& p : one_or_many(*n)) a.precisions.push_back(read_precision(p));
  }
  read_fp8_axes(m, a);
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
  // The layout axis (issue 37): the maps are read per framework in expand (read_parallel_entry, over the
  // framework's `parallel:`); here their form and the one micro-batch.
  if (auto n = m.optional("layout")) {
    t.spec.layout_columns = true;
    a.layouts.clear();
    for (const auto& one : one_or_many(*n)) {
      if (one.is_scalar() && one.scalar() == "none") {
        a.layouts.emplace_back(std::nullopt);
        continue;
      }
      if (!one.is_map())
        one.fail("a layout is a map of a framework file's parallel: keys ({tp: 8, pp: 2, ...}), or 'none' for data parallelism");
      if (a.batch_given)
        for (const auto& [key, v] : MapReader(one).entries())
          if (key == "micro_batch") v.fail("the batch axis is the layouts' micro-batch: give it in one place");
      a.layouts.emplace_back(one);
    }
  }
  return a;
}

/// A layout of the axis read over framework `f`'s `parallel:` (as predict's options go over it), its micro-batch the
/// batch axis's where given (predict's --batch), else the map's or the framework's (1 by default).
ParallelLayout read_layout(const Node& n, const Strategy& framework, const Axes& a, int batch) {
  Strategy s = framework;
  read_parallel_entry(n, s);  // parallel_entry.cpp: the one reader of a layout's keys
  ParallelLayout l = *s.parallel;
  if (a.batch_given) l.micro_batch = batch;
  return l;
}

/// Every combination, axes in a fixed order (cluster, model, framework, batch, precision, fp8 scaling,
/// bucket, links, layout), GPU counts innermost. A layout's group takes its micro-batch as its batch: without a
/// batch axis the batch's default (32) is data parallelism's only. A bucket size only matters to frameworks that overlap
/// aggregation with backward: for the others the bucket axis collapses to "default". The fp8 scaling only matters to the fp8
/// precision: for the others it collapses to tensorwise (which no step reads).
void expand(const Axes& a, SweepSpec& spec) {
  for (auto c : a.clusters)
    for (auto m : a.models)
      for (auto f : a.frameworks)
        for (int b : a.batches) {
          // the layouts of this framework and batch, read once for the groups below
          std::vector<std::optional<std::size_t>> layouts;
          for (const auto& n : a.layouts) {
            if (!n) {
              layouts.emplace_back(std::nullopt);
              continue;
            }
            spec.layouts.push_back(read_layout(*n, spec.strategies[f], a, b));
            layouts.emplace_back(spec.layouts.size() - 1);
          }
          const std::vector<Precision> precisions = !a.precisions.empty()
              ? a.precisions
              : std::vector<Precision>{default_precision(spec.strategies[f], spec.clusters[c].gpu)};
          for (auto p : precisions)
            for (auto scaling : p == Precision::fp8 ? a.fp8_scalings : std::vector<Fp8Scaling>{Fp8Scaling::tensorwise}) {
              const bool overlaps =
                  spec.strategies[f].overlap != Overlap::none && spec.strategies[f].aggregation != Aggregation::broadcast_reduce;
              std::vector<std::optional<Bytes>> buckets = a.buckets;
              if (!overlaps) buckets = {std::nullopt};
              for (const auto& bucket : buckets)
                for (auto l : a.links)
                  for (const auto& layout : layouts) {
                    SweepGroup g;
                    g.cluster = c;
                    g.model = m;
                    g.framework = f;
                    g.links = l;
                    g.batch = layout ? spec.layouts[*layout].micro_batch : b;
                    g.precision = p;
                    g.fp8_scaling = scaling;
                    g.fp8_all_gather = a.fp8_all_gather && p == Precision::fp8 && scaling == Fp8Scaling::tensorwise &&
                        spec.strategies[f].sharding.stage >= 3 && !layout;
                    g.bucket = bucket;
                    g.layout = layout;
                    g.gpus = a.gpus;
                    spec.groups.push_back(std::move(g));
                  }
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

}  // namespace dlscale
