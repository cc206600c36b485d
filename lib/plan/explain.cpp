// `explain`: the critical path, resource doubling, the best bucket size and the smallest change that
// reaches a target efficiency — every figure a Predictor run (include/dlscale/plan.hpp).
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "dlscale/error.hpp"
#include "dlscale/format.hpp"
#include "dlscale/memory.hpp"
#include "dlscale/plan.hpp"
#include "plan/doubling.hpp"
#include "plan/plan_json.hpp"
#include "plan/prediction_json.hpp"

namespace dlscale {
namespace {

bool overlaps(const Strategy& s) { return s.overlap != Overlap::none && s.aggregation != Aggregation::broadcast_reduce; }

/// A what-if's prediction: its times only (the bottleneck of each is not asked for).
Prediction predict_one(const Scenario& sc, int gpus) { return Predictor(sc, Predictor::TimesOnly{}).predict(gpus); }

Scenario with_buckets(const Scenario& sc, Bytes size) {
  Scenario out = sc;
  if (size > Bytes{}) {
    out.strategy.overlap = Overlap::bucketed;
    out.strategy.bucket_size = size;
    out.strategy.first_bucket = min(sc.strategy.first_bucket, size);
  } else {
    out.strategy.overlap = Overlap::layerwise;
  }
  return out;
}

/// The update on the critical path with per-layer updates (eq. 6/7): the input-side aggregation unit's —
/// layer 1's, or with buckets the whole first bucket's. The buckets are predict.cpp's (PyTorch DDP's walk
/// from the output side: a bucket closes once it holds its cap, the first cap being the first bucket's),
/// summed in the same order so that the critical path adds up to the iteration time exactly.
Seconds first_unit_update(const Scenario& sc, const LayerTimes& t) {
  if (t.update.empty()) return {};
  if (sc.strategy.overlap != Overlap::bucketed || t.update.size() != sc.network.layers.size()) return t.update.front();
  const double per_element = gradient_bytes_per_element(step_compute(sc));
  Bytes open{};
  Seconds update{};
  Bytes cap = sc.strategy.first_bucket;
  for (std::size_t k = t.update.size(); k-- > 0;) {
    open += Network::gradient_bytes(sc.network.layers[k], per_element);
    update += t.update[k];
    if (open >= cap) {
      if (k == 0) break;
      open = Bytes{};
      update = Seconds{};
      cap = sc.strategy.bucket_size;
    }
  }
  return update;
}

std::string bucket_name(Bytes b) {
  return b > Bytes{} ? fmt::format("{:g} MiB", in_mebibytes(b)) : std::string("layer-wise (no merging)");
}

}  // namespace

BucketAdvice best_buckets(const Scenario& sc, int gpus) {
  BucketAdvice a;
  const Prediction now = predict_one(sc, gpus);
  a.current = BucketTry{sc.strategy.overlap == Overlap::bucketed ? sc.strategy.bucket_size : Bytes{}, now.iteration_time,
                        now.breakdown.comm_exposed};
  if (!overlaps(sc.strategy)) {
    a.note =
        fmt::format("framework '{}' does not overlap aggregation with backward: bucket sizes change nothing", sc.strategy.name);
    a.best = a.current;
    return a;
  }
  if (sc.strategy.sharding.stage >= 3) {  // its units of aggregation are the gather units (docs/model.md, S4)
    a.note = sc.strategy.sharding.wrap == Sharding::Wrap::block
        ? fmt::format("framework '{}' gathers and reduce-scatters per transformer block: bucket sizes change nothing",
                      sc.strategy.name)
        : fmt::format("framework '{}' gathers and reduce-scatters per unit of {} parameters: bucket sizes change nothing",
                      sc.strategy.name, sc.strategy.sharding.unit_params);
    a.best = a.current;
    return a;
  }
  a.applicable = true;
  std::vector<Bytes> sizes{Bytes{}};
  for (double mib = 1; mib <= 512; mib *= 2) sizes.push_back(mebibytes(mib));
  for (Bytes s : sizes) {
    const Prediction p = predict_one(with_buckets(sc, s), gpus);
    a.tried.push_back(BucketTry{s, p.iteration_time, p.breakdown.comm_exposed});
  }
  a.best = a.tried.front();
  for (const auto& t : a.tried)
    if (t.iteration < a.best.iteration * (1.0 - 1e-12)) a.best = t;
  if (gpus == 1) a.note = "one GPU aggregates nothing: every bucket size gives the same time";
  return a;
}

namespace {
// Faster NIC: walk up the standard speeds, stop at the first that reaches the target.
std::optional<Change> faster_nic(const Scenario& sc, int gpus, double target) {
  const double now_gbps = in_gigabits_per_second(sc.cluster.inter_node.bandwidth);
  std::optional<Change> last;
  int step = 0;
  for (double speed : kStandardNicGbps) {
    if (speed <= now_gbps * 1.0001) continue;
    ++step;
    Cluster faster = sc.cluster;
    faster.inter_node.bandwidth = gigabits_per_second(speed);
    const Scenario s = with_links(sc, faster);
    Change c{
        "faster NIC",
        fmt::format("inter-node {:g} Gb/s -> {:g} Gb/s ({} standard speed{} up)", now_gbps, speed, step, step > 1 ? "s" : ""),
        step, predict_one(s, gpus), false};
    last = c;
    if (c.prediction.efficiency >= target) break;
  }
  return last;
}

// Bigger batch: ×2, ×4, ×8, ×16 while the estimate fits the GPU's memory.
std::optional<Change> bigger_batch(const Scenario& sc, int gpus, double target, std::vector<std::string>& notes) {
  std::optional<Change> last;
  for (int k = 1; k <= 4; ++k) {
    Scenario s = sc;
    s.batch_per_gpu = sc.batch_per_gpu << k;
    // The prediction's memory: a sharded strategy's depends on the GPU count (docs/model.md, eq. S3).
    Prediction bigger = predict_one(s, gpus);
    if (sc.cluster.gpu.memory_size > Bytes{} && !bigger.memory.fits) {
      notes.push_back(
          fmt::format("batch {} does not fit the {} of a {}", s.batch_per_gpu, sc.cluster.gpu.memory_size, sc.cluster.gpu.name));
      break;
    }
    Change c{"bigger batch", fmt::format("batch {} -> {} per GPU (x{})", sc.batch_per_gpu, s.batch_per_gpu, 1 << k), k,
             std::move(bigger), false};
    last = c;
    if (c.prediction.efficiency >= target) break;
  }
  return last;
}
}  // namespace

TargetAdvice reach_efficiency(const Scenario& sc, int gpus, double target) {
  if (!(target > 0.0 && target <= 1.0))
    throw InputError(SourceLocation{}, "target", "the target efficiency is a fraction in (0, 1], e.g. 0.8");
  TargetAdvice t;
  t.target = target;
  const Predictor base(sc, Predictor::TimesOnly{});
  const Prediction now = base.predict(gpus);
  t.already = now.efficiency >= target;
  const GpuPlacement at = base.place(gpus);
  std::vector<std::string> notes;

  auto consider = [&](Change c) {
    c.reaches = c.prediction.efficiency >= target;
    t.tried.push_back(c);
  };
  if (at.nodes > 1) {
    if (auto c = faster_nic(sc, gpus, target)) consider(*c);
  } else {
    notes.push_back("one node: no NIC on the path");
  }
  if (!sc.profile && !sc.measured_layers) {
    if (auto c = bigger_batch(sc, gpus, target, notes)) consider(*c);
  } else {
    notes.push_back("measured layer times are for one batch size: bigger batches not tried");
  }
  // Mixed precision: halves the gradient bytes and runs the matrix work on tensor cores.
  if (!is_mixed(sc.compute.precision) && !sc.profile && !sc.measured_layers) {
    Scenario s = sc;
    s.compute.precision = sc.cluster.gpu.supports(Precision::bf16) ? Precision::bf16 : Precision::fp16;
    consider(Change{"mixed precision",
                    fmt::format("{} -> mixed {}", to_string(sc.compute.precision), to_string(s.compute.precision)), 1,
                    predict_one(s, gpus), false});
  }
  // Better bucket size.
  if (overlaps(sc.strategy)) {
    const BucketAdvice b = best_buckets(sc, gpus);
    if (b.best.size != b.current.size || b.best.iteration < b.current.iteration)
      consider(Change{"bucket size", fmt::format("{} -> {}", bucket_name(b.current.size), bucket_name(b.best.size)), 1,
                      predict_one(with_buckets(sc, b.best.size), gpus), false});
  }
  for (const auto& c : t.tried) {
    if (!c.reaches) continue;
    if (!t.smallest || c.steps < t.smallest->steps ||
        (c.steps == t.smallest->steps && c.prediction.efficiency > t.smallest->prediction.efficiency))
      t.smallest = c;
  }
  for (const auto& n : notes) t.note += (t.note.empty() ? "" : "; ") + n;
  return t;
}

std::vector<ResourceGain> resource_gains(const Scenario& sc, const Prediction& p, const DoubledTimes& doubled) {
  std::vector<ResourceGain> out;
  for (std::size_t i = 0; i < kResourceCount; ++i) {
    const Resource r = kAllResources[i];
    // the host's issue (eq. K20) is listed where the step waits at its floor
    if (r == Resource::host_issue && !(host_floor(p.breakdown) > Seconds{})) continue;
    // a layout's step (eq. P13) reads no input and copies none: nothing to double there
    if (p.breakdown.parallel && (r == Resource::storage || r == Resource::host_to_gpu)) continue;
    ResourceGain g;
    g.resource = r;
    const bool links = r == Resource::intra_node || r == Resource::inter_node;
    g.rescaled = links && !uses_simple_links(sc);
    g.baseline = p.iteration_time;
    g.doubled = doubled[i];
    g.throughput_gain = doubling_gain(g.baseline, g.doubled);
    const Cluster& c = sc.cluster;
    switch (r) {
      case Resource::gpu:
        g.what = fmt::format("{}: {} -> {}, memory {} -> {}", c.gpu.name, c.gpu.peak(sc.compute.precision),
                             c.gpu.peak(sc.compute.precision) * 2.0, c.gpu.memory_bandwidth, c.gpu.memory_bandwidth * 2.0);
        break;
      case Resource::host_to_gpu:
        g.what = fmt::format("{} -> {}", c.h2d_pinned, c.h2d_pinned * 2.0);
        break;
      case Resource::intra_node:
        g.what = fmt::format("{} -> {}", c.intra_node.bandwidth, c.intra_node.bandwidth * 2.0);
        break;
      case Resource::inter_node:
        g.what = p.nodes > 1 ? fmt::format("{} -> {}", c.inter_node.bandwidth, c.inter_node.bandwidth * 2.0)
                             : std::string("not used on one node");
        break;
      case Resource::host_issue:
        g.what = fmt::format("{}: {:.3g} us -> {:.3g} us a kernel (eq. K20)", sc.strategy.name,
                             in_us(sc.strategy.execution.host_issue), in_us(sc.strategy.execution.host_issue) * 0.5);
        break;
      case Resource::storage:
        g.what =
            fmt::format("{} {} -> {}", c.dataset_in_page_cache ? "page cache" : "disk",
                        c.dataset_in_page_cache ? c.page_cache : c.disk, (c.dataset_in_page_cache ? c.page_cache : c.disk) * 2.0);
        if (const InputPipeline* ip = input_pipeline(sc)) {  // plan.cpp doubles its decoders too
          if (ip->gpu_decode_mpix > 0.0)
            g.what += fmt::format(", GPU decode {:.4g} -> {:.4g} MP/s", ip->gpu_decode_mpix, 2.0 * ip->gpu_decode_mpix);
          else if (ip->decode_mpix_per_core > 0.0)
            g.what += fmt::format(", CPU decode {:.4g} -> {:.4g} MP/s a core", ip->decode_mpix_per_core,
                                  2.0 * ip->decode_mpix_per_core);
        }
        break;
    }
    out.push_back(g);
  }
  return out;
}

std::string doubling_text(const std::vector<ResourceGain>& gains) {
  std::string out = "gain from doubling one resource:\n";
  for (const auto& g : gains)
    out += fmt::format("  {:<40} {:>+7.1f}% samples/s   {}{}\n", to_string(g.resource), 100.0 * g.throughput_gain, g.what,
                       g.rescaled ? " [graph model rescaled by the alpha-beta ratio]" : "");
  return out;
}

Explanation explain(const Scenario& sc, int gpus, const ExplainOptions& o) {
  Explanation e;
  const Predictor p(sc);
  e.prediction = p.predict(gpus);
  e.collective_model =
      with_transport(sc.collectives ? sc.collectives : make_collective_model(sc.cluster), sc.strategy.transport, sc.cluster)
          ->describe();
  const Seconds first_update = first_unit_update(sc, p.layer_times());
  e.path = critical_path(e.prediction, p.scenario().strategy, first_update);  // prefetching resolved for the batch

  // Doubling each resource, re-predicted (Predictor::doubled, which also names the bottleneck). Links: the
  // simple form doubled, a graph or calibrated model rescaled (rescale_links).
  e.doubling = resource_gains(sc, e.prediction, p.doubled(gpus));
  e.buckets = best_buckets(sc, gpus);
  if (o.target_efficiency) e.target = reach_efficiency(sc, gpus, *o.target_efficiency);
  e.workload = o.workload;
  if (o.workload) e.cost = time_to_train(e.prediction, *o.workload, sc.cluster);
  return e;
}

namespace {
std::string hours_text(Seconds t) {
  const double h = in_seconds(t) / 3600.0;
  if (h >= 48) return fmt::format("{:.1f} h ({:.1f} days)", h, h / 24.0);
  return fmt::format("{:.2f} h", h);
}
}  // namespace

namespace {
/// The title and the headline figures: iteration, throughput, scaling, the bound.
void print_headline(std::ostream& out, const Explanation& e, const Scenario& sc) {
  const Prediction& p = e.prediction;
  const double t_ms = in_ms(p.iteration_time);
  fmt::print(out, "# dlscale explain: {} on {} ({}), {} ({}), batch {} per GPU, {} GPUs on {} node{}\n", sc.network.name,
             sc.cluster.name, sc.cluster.gpu.name, sc.strategy.name,
             is_mixed(sc.compute.precision)
                 ? fmt::format("mixed {}", precision_label(sc.compute.precision, sc.compute.fp8_scaling))
                 : std::string(to_string(sc.compute.precision)),
             p.batch_per_gpu, p.gpus, p.nodes, p.nodes > 1 ? "s" : "");
  fmt::print(out, "# communication: {}\n\n", e.collective_model);
  fmt::print(out, "iteration {:.3f} ms, {:.1f} samples/s, speedup {:.3f}, efficiency {:.1f}%\n", t_ms, p.throughput_samples_per_s,
             p.speedup, 100.0 * p.efficiency);
  fmt::print(out, "bound by: {} ({}): {:.1f}% of the iteration, doubling it gains {:+.1f}% samples/s\n\n",
             to_string(p.bottleneck), p.bottleneck_resource.str(), 100.0 * p.bottleneck_share, 100.0 * p.bottleneck_gain);
}

/// Where the iteration goes: the critical path, the input read.
void print_critical_path(std::ostream& out, const Explanation& e, const Scenario& sc) {
  const Prediction& p = e.prediction;
  const double t_ms = in_ms(p.iteration_time);
  fmt::print(out, "where the iteration goes (critical path):\n");
  for (const auto& s : e.path)
    fmt::print(out, "  {:<26} {:>10.3f} ms {:>6.1f}%\n", s.name, in_ms(s.time), t_ms > 0 ? 100.0 * in_ms(s.time) / t_ms : 0.0);
  fmt::print(out, "  {:<26} {:>10.3f} ms   (communication in all {:.3f} ms, {:.3f} ms hidden behind backward)\n", "total", t_ms,
             in_ms(p.breakdown.comm), in_ms(p.breakdown.comm - p.breakdown.comm_exposed));
  if (const Breakdown& b = p.breakdown; host_floor(b) > Seconds{})  // eq. K20
    fmt::print(out,
               "  host's kernel issue (eq. K20): forward {:.3f} of its {:.3f} ms, backward {:.3f} of {:.3f} ms, update "
               "{:.3f} of {:.3f} ms wait for the host beyond the GPU's own work\n",
               in_ms(b.forward_host), in_ms(b.forward), in_ms(b.backward_host), in_ms(b.backward), in_ms(b.update_host),
               in_ms(b.update));
  if (reader_prefetches(sc))
    fmt::print(out, "  input read {:.3f} ms per iteration, prefetched in parallel (eq. 4)\n", in_ms(p.breakdown.io));
  else if (sc.strategy.io_prefetch)  // the framework prefetches, but not a batch this large
    fmt::print(out,
               "  input read {:.3f} ms per iteration, not prefetched: the batch's {:.1f} MiB of input exceed the "
               "framework's {:.1f} MiB prefetch buffer (eq. 3)\n",
               in_ms(p.breakdown.io), in_mebibytes(input_per_gpu(sc)), in_mebibytes(sc.strategy.prefetch_buffer));
}

/// The input pipeline (Cluster::input): storage and decode stages, the reader-bound loss.
void print_input_pipeline(std::ostream& out, const Explanation& e, const Scenario& sc) {
  const Prediction& p = e.prediction;
  const double t_ms = in_ms(p.iteration_time);
  if (const InputPipeline* pipeline = input_pipeline(sc)) {
    const InputPipeline& ip = *pipeline;
    const Breakdown& b = p.breakdown;
    if (ip.data == DataSource::synthetic) {
      fmt::print(out, "  input pipeline: synthetic data, no reader\n");
    } else {
      fmt::print(
          out,
          "  input pipeline: {} ({}, {} epoch): reader {:.3f} ms per iteration per node = max(storage {:.3f} ms, "
          "{} {:.3f} ms){}\n",
          to_string(ip.data), ip.dataset, ip.first_epoch ? "first" : "later", in_ms(b.io), in_ms(b.io_storage),
          ip.gpu_decode_mpix > 0.0 ? std::string("CPU decode") : fmt::format("CPU decode on {} cores of {}", ip.cores, ip.cpu),
          in_ms(b.io_decode),
          b.gpu_decode > Seconds{} ? fmt::format("; GPU decode {:.3f} ms", in_ms(b.gpu_decode)) : std::string());
      fmt::print(out, "  reader-bound loss {:.3f} ms per iteration ({:.1f}% of it)\n", in_ms(b.reader_loss),
                 t_ms > 0 ? 100.0 * in_ms(b.reader_loss) / t_ms : 0.0);
    }
  }
}

/// Synchronization loss and the CPU offload of the optimiser (eq. S9).
void print_losses(std::ostream& out, const Explanation& e, const Scenario& sc) {
  const Prediction& p = e.prediction;
  if (sc.strategy.jitter_cv > 0.0)
    fmt::print(out, "  synchronization loss {:.3f} ms: {} GPUs wait for the slowest, compute jitter cv {:g}\n",
               in_ms(p.breakdown.sync_wait), p.gpus, sc.strategy.jitter_cv);
  if (sc.strategy.sharding.offload_optimizer) {  // docs/model.md, eq. S9
    const Breakdown& b = p.breakdown;
    fmt::print(out,
               "  CPU offload of the optimiser (eq. S9): {} per GPU over PCIe per step; gradient shard to the host "
               "{:.3f} ms ({:.3f} ms after the last reduce-scatter), CPU Adam {:.3f} ms ({:.3g} params/s per node), "
               "updated shard back {:.3f} ms\n",
               b.offload_bytes, in_ms(b.offload_d2h), in_ms(b.offload_d2h_exposed), in_ms(b.offload_cpu),
               sc.strategy.sharding.cpu_adam_params_per_s, in_ms(b.offload_h2d));
    fmt::print(out, "  host memory per node: {} of {}{} for the fp32 master, optimiser state and gradient shards{}\n",
               p.memory.host_per_node, p.memory.host_capacity,
               sc.cluster.host_memory_size > Bytes{} ? "" : " (assumed: the cluster file gives no host_memory_size)",
               p.memory.host_fits ? "" : " -- DOES NOT FIT");
  }
}

/// The gain from doubling each resource.
void print_doubling(std::ostream& out, const Explanation& e) { fmt::print(out, "\n{}", doubling_text(e.doubling)); }

/// The bucket sizes tried, the current and the best.
void print_buckets(std::ostream& out, const Explanation& e) {
  fmt::print(out, "\nbucket plan:\n");
  if (!e.buckets.applicable) {
    fmt::print(out, "  {}\n", e.buckets.note);
  } else {
    for (const auto& t : e.buckets.tried)
      fmt::print(out, "  {:<24} iteration {:>10.3f} ms, exposed communication {:>9.3f} ms\n", bucket_name(t.size),
                 in_ms(t.iteration), in_ms(t.exposed));
    fmt::print(out, "  now: {} ({:.3f} ms); best: {} ({:.3f} ms, {:+.1f}% samples/s)\n", bucket_name(e.buckets.current.size),
               in_ms(e.buckets.current.iteration), bucket_name(e.buckets.best.size), in_ms(e.buckets.best.iteration),
               100.0 * (e.buckets.current.iteration / e.buckets.best.iteration - 1.0));
    if (!e.buckets.note.empty()) fmt::print(out, "  {}\n", e.buckets.note);
  }
}

/// The changes tried to reach the target efficiency.
void print_target(std::ostream& out, const Explanation& e) {
  const Prediction& p = e.prediction;
  if (e.target) {
    const TargetAdvice& t = *e.target;
    fmt::print(out, "\ntarget efficiency {:.1f}%:\n", 100.0 * t.target);
    if (t.already) fmt::print(out, "  already reached ({:.1f}%)\n", 100.0 * p.efficiency);
    for (const auto& c : t.tried)
      fmt::print(out, "  {:<16} {:<52} efficiency {:>5.1f}%, {:.1f} samples/s{}\n", c.kind, c.description,
                 100.0 * c.prediction.efficiency, c.prediction.throughput_samples_per_s, c.reaches ? "  reaches" : "");
    if (!t.already) {
      if (t.smallest) fmt::print(out, "  smallest change: {} ({})\n", t.smallest->kind, t.smallest->description);
      else fmt::print(out, "  no single change reaches it\n");
    }
    if (!t.note.empty()) fmt::print(out, "  note: {}\n", t.note);
    fmt::print(out, "  (more nodes is not a fix: efficiency only falls as GPUs are added)\n");
  }
}

/// Time and cost to train the workload.
void print_time_to_train(std::ostream& out, const Explanation& e, const Scenario& sc) {
  out << format_time_to_train(e.prediction, e.workload, sc);
}
}  // namespace

std::string format_time_to_train(const Prediction& p, const std::optional<TrainingWorkload>& w, const Scenario& sc) {
  std::ostringstream out;
  fmt::print(out, "\ntime to train:\n");
  if (w) {
    const TrainingCost c = time_to_train(p, *w, sc.cluster);
    fmt::print(out, "  workload: {}\n", w->source);
    fmt::print(out, "  {:.0f} iterations, {} on {} GPUs, {:.1f} GPU-hours", c.iterations, hours_text(c.wall_time), p.gpus,
               c.gpu_hours);
    if (c.cost)
      fmt::print(out, ", {:.2f} {} at {:g} {} per GPU-hour\n", *c.cost, c.currency, sc.cluster.price_per_gpu_hour,
                 sc.cluster.currency);
    else fmt::print(out, " (no price_per_gpu_hour in the cluster file)\n");
  } else {
    fmt::print(out, "  no default data set for a '{}' model: give --dataset-samples (and --epochs)\n", sc.network.input_kind);
  }
  return out.str();
}

std::string format_explanation(const Explanation& e, const Scenario& sc) {
  std::ostringstream out;
  print_headline(out, e, sc);
  print_critical_path(out, e, sc);
  print_input_pipeline(out, e, sc);
  print_losses(out, e, sc);
  print_doubling(out, e);
  print_buckets(out, e);
  print_target(out, e);
  print_time_to_train(out, e, sc);
  return out.str();
}

namespace {

nlohmann::ordered_json bucket_json(const BucketTry& t) {
  return {{"size_bytes", in_bytes(t.size)},  // 0: layer-wise, no merging
          {"layer_wise", !(t.size > Bytes{})},
          {"iteration_time_s", in_seconds(t.iteration)},
          {"comm_exposed_s", in_seconds(t.exposed)}};
}

}  // namespace

std::string format_explanation_json(const Explanation& e, const Scenario& sc) {
  using json = nlohmann::ordered_json;
  const Prediction& p = e.prediction;
  json j = plan_document("explain");
  j["inputs"] = scenario_inputs_json(sc);
  j["inputs"].update(json{{"batch_per_gpu", p.batch_per_gpu},
                          {"gpus", p.gpus},
                          {"jitter_cv", sc.strategy.jitter_cv},
                          {"collective_model", e.collective_model}});
  // the prediction (its bottleneck, memory and breakdown), with the time to train where a workload applies
  j["prediction"] = prediction_json(p, e.cost ? &*e.cost : nullptr);
  auto path = json::array();
  for (const auto& seg : e.path) path.push_back(part_json(seg.name, seg.time, p.iteration_time));
  j["critical_path"] = std::move(path);
  j["comm_hidden_s"] = in_seconds(p.breakdown.comm - p.breakdown.comm_exposed);
  j["input_read"] = {{"io_s", in_seconds(p.breakdown.io)},
                     {"prefetched", reader_prefetches(sc)},
                     {"framework_prefetches", sc.strategy.io_prefetch},
                     {"input_per_gpu_bytes", in_bytes(input_per_gpu(sc))},
                     {"prefetch_buffer_bytes", in_bytes(sc.strategy.prefetch_buffer)}};
  if (const InputPipeline* ip = input_pipeline(sc)) {
    const Breakdown& b = p.breakdown;
    j["input_pipeline"] = {{"data", to_string(ip->data)},
                           {"dataset", ip->dataset},
                           {"first_epoch", ip->first_epoch},
                           {"cpu", ip->cpu},
                           {"cores", ip->cores},
                           {"gpu_decode", ip->gpu_decode_mpix > 0.0},
                           {"reader_s", in_seconds(b.io)},
                           {"storage_s", in_seconds(b.io_storage)},
                           {"cpu_decode_s", in_seconds(b.io_decode)},
                           {"gpu_decode_s", in_seconds(b.gpu_decode)},
                           {"reader_loss_s", in_seconds(b.reader_loss)},
                           {"reader_loss_share", p.iteration_time > Seconds{} ? b.reader_loss / p.iteration_time : 0.0}};
  } else {
    j["input_pipeline"] = nullptr;
  }
  if (sc.strategy.sharding.offload_optimizer)  // eq. S9: the rest is the prediction's "offload" and "memory"
    j["offload"] = {{"cpu_adam_params_per_s", sc.strategy.sharding.cpu_adam_params_per_s},
                    {"host_memory_assumed", !(sc.cluster.host_memory_size > Bytes{})}};
  auto gains = json::array();
  for (const auto& g : e.doubling) gains.push_back(resource_gain_json(g));
  j["doubling"] = std::move(gains);
  json buckets{
      {"applicable", e.buckets.applicable},
      {"note", e.buckets.note},
      {"current", bucket_json(e.buckets.current)},
      {"best", bucket_json(e.buckets.best)},
      {"best_gain", e.buckets.best.iteration > Seconds{} ? e.buckets.current.iteration / e.buckets.best.iteration - 1.0 : 0.0}};
  auto tried = json::array();
  for (const auto& t : e.buckets.tried) tried.push_back(bucket_json(t));
  buckets["tried"] = std::move(tried);
  j["buckets"] = std::move(buckets);
  if (e.target) {
    const TargetAdvice& t = *e.target;
    auto changes = json::array();
    for (const auto& c : t.tried)
      changes.push_back({{"kind", c.kind},
                         {"description", c.description},
                         {"steps", c.steps},
                         {"efficiency", c.prediction.efficiency},
                         {"throughput_samples_per_s", c.prediction.throughput_samples_per_s},
                         {"reaches", c.reaches}});
    j["target"] = {
        {"efficiency", t.target},
        {"already", t.already},
        {"changes", std::move(changes)},
        {"smallest", t.smallest ? json{{"kind", t.smallest->kind}, {"description", t.smallest->description}} : json(nullptr)},
        {"note", t.note}};
  } else {
    j["target"] = nullptr;
  }
  j["workload"] = e.workload ? json(e.workload->source) : json(nullptr);
  j["price_per_gpu_hour"] = sc.cluster.price_per_gpu_hour > 0.0 ? json(sc.cluster.price_per_gpu_hour) : json(nullptr);
  return dump_document(j);
}

}  // namespace dlscale
