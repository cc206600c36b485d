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
#include <cmath>
#include <numeric>

#include "dlscale/equations.hpp"
#include "dlscale/error.hpp"
#include "dlscale/format.hpp"

namespace dlscale {

std::shared_ptr<const CollectiveModel> make_collective_model(const Cluster& cluster);

namespace {

/// A unit of aggregation: one layer (layer-wise), one bucket (bucketed) or one layer (no overlap).
/// Units are stored input side first, like layers.
struct Unit {
  Seconds backward{};   // backward time of the layers in the unit
  Seconds update{};     // update time of the layers in the unit
  Bytes gradient{};     // gradient bytes the unit aggregates
};

std::vector<Unit> make_units(const Network& net, const LayerTimes& t, const Strategy& s, double bytes_per_element) {
  const std::size_t L = net.layers.size();
  std::vector<Unit> units;
  if (s.overlap != Overlap::bucketed) {
    units.resize(L);
    for (std::size_t i = 0; i < L; ++i)
      units[i] = Unit{t.backward[i], t.update[i], Network::gradient_bytes(net.layers[i], bytes_per_element)};
    return units;
  }
  // PyTorch DDP's assignment: walk from the output side, add a gradient to the open bucket, close the
  // bucket once it holds at least its cap (the first bucket's cap is smaller).
  Unit open;
  bool any = false;
  Bytes cap = s.first_bucket;
  for (std::size_t k = L; k-- > 0;) {
    open.backward += t.backward[k];
    open.update += t.update[k];
    open.gradient += Network::gradient_bytes(net.layers[k], bytes_per_element);
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

std::string_view to_string(Bottleneck b) noexcept;

struct Predictor::Impl {
  Scenario sc;
  std::shared_ptr<const CollectiveModel> coll;
  LayerTimes layers;
  std::vector<Unit> units;
  Seconds f{}, b{}, u{}, u_first{};
  Seconds h2d{}, io_one{};
  Bytes input_per_gpu{};
  BytesPerSecond read_bw{};
  Bytes total_gradient{};
  Seconds iter_one{};

  [[nodiscard]] Prediction run(int gpus, const GpuPlacement& at) const;
};

Predictor::Predictor(Scenario scenario) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.sc = std::move(scenario);
  const Scenario& sc = m.sc;
  if (sc.batch_per_gpu < 1) throw UsageError("--batch", "the batch per GPU must be at least 1");
  m.coll = sc.collectives ? sc.collectives : make_collective_model(sc.cluster);

  LayerTimes modelled = estimate_layer_times(sc.network, sc.cluster.gpu, sc.batch_per_gpu, sc.compute);
  const double eff = sc.strategy.compute_efficiency;
  for (auto* v : {&modelled.forward, &modelled.backward, &modelled.update})
    for (auto& x : *v) x = x / eff;
  if (sc.profile) {
    const auto& p = sc.profile->single_gpu;
    m.layers = spread_phase_totals(modelled, p.forward, p.backward, p.update);
  } else {
    m.layers = std::move(modelled);
  }
  m.f = m.layers.total_forward();
  m.b = m.layers.total_backward();
  m.u = m.layers.total_update();
  m.u_first = m.layers.update.empty() ? Seconds{} : m.layers.update.front();

  const double grad_bytes = sc.compute.precision == Precision::fp16 ? 2.0 : 4.0;
  m.units = make_units(sc.network, m.layers, sc.strategy, grad_bytes);
  for (const auto& un : m.units) m.total_gradient += un.gradient;

  m.input_per_gpu = sc.network.input_bytes_per_sample * static_cast<double>(sc.batch_per_gpu);
  m.read_bw = sc.cluster.dataset_in_page_cache ? sc.cluster.page_cache : sc.cluster.disk;
  if (sc.profile) {
    m.h2d = sc.profile->single_gpu.h2d;
    m.io_one = sc.profile->single_gpu.io;
  } else {
    const BytesPerSecond h2d_bw = sc.strategy.pinned_memory ? sc.cluster.h2d_pinned : sc.cluster.h2d_pageable;
    m.h2d = m.input_per_gpu / h2d_bw;
    m.io_one = eq::io_time(m.input_per_gpu, 1, m.read_bw);
  }
  m.iter_one = m.run(1, GpuPlacement{1, 1, 1}).iteration_time;
}

Predictor::~Predictor() = default;
Predictor::Predictor(Predictor&&) noexcept = default;
Predictor& Predictor::operator=(Predictor&&) noexcept = default;

const Scenario& Predictor::scenario() const noexcept { return impl_->sc; }
const LayerTimes& Predictor::layer_times() const noexcept { return impl_->layers; }

GpuPlacement Predictor::place(int gpus) const {
  const Cluster& c = impl_->sc.cluster;
  if (gpus < 1) throw UsageError("--gpus", fmt::format("a GPU count must be at least 1, got {}", gpus));
  if (gpus > c.max_gpus())
    throw UsageError("--gpus", fmt::format("cluster '{}' holds at most {} GPUs ({} nodes × {}), asked for {}", c.name,
                                           c.max_gpus(), c.max_nodes, c.gpus_per_node, gpus));
  if (gpus <= c.gpus_per_node) return GpuPlacement{gpus, 1, gpus};
  if (gpus % c.gpus_per_node != 0)
    throw UsageError("--gpus", fmt::format("{} GPUs do not fill whole nodes of {} GPUs on cluster '{}'", gpus,
                                           c.gpus_per_node, c.name));
  return GpuPlacement{gpus, gpus / c.gpus_per_node, c.gpus_per_node};
}

Prediction Predictor::predict(int gpus) const { return impl_->run(gpus, place(gpus)); }

std::vector<Prediction> Predictor::predict(std::span<const int> gpu_counts) const {
  std::vector<Prediction> out;
  out.reserve(gpu_counts.size());
  for (int g : gpu_counts) out.push_back(predict(g));
  return out;
}

Prediction Predictor::Impl::run(int gpus, const GpuPlacement& at) const {
  const Strategy& st = sc.strategy;
  const Cluster& cl = sc.cluster;
  const MeasuredAt* meas = nullptr;
  if (sc.profile) {
    if (auto it = sc.profile->measured.find(gpus); it != sc.profile->measured.end()) meas = &it->second;
  }

  // ---- I/O and host-to-GPU copy at this scale --------------------------------------------------------
  // One reader per node feeds its n_g GPUs: t_io,n_g = n_g · t_io,1 (Section VI-B), or D·n_g/B.
  Seconds io = sc.profile ? io_one * static_cast<double>(at.gpus_per_node)
                          : eq::io_time(input_per_gpu, at.gpus_per_node, read_bw);
  if (meas && meas->io) io = *meas->io;
  Seconds h2d_n = h2d;
  if (meas && meas->h2d) h2d_n = *meas->h2d;

  // ---- communication per unit ------------------------------------------------------------------------
  thread_local std::vector<Seconds> back, comm;
  const std::size_t U = units.size();
  back.resize(U);
  comm.resize(U);
  const GpuPlacement intra{at.gpus_per_node, 1, at.gpus_per_node};
  const GpuPlacement across{at.nodes, at.nodes, 1};
  Seconds comm_total{};
  for (std::size_t i = 0; i < U; ++i) {
    back[i] = units[i].backward;
    Seconds c{};
    if (gpus > 1) {
      const Bytes s = units[i].gradient;
      switch (st.aggregation) {
        case Aggregation::allreduce: c = coll->time(CollectiveOp::allreduce, s, at); break;
        case Aggregation::parameter_server: c = coll->parameter_server(s, at, st.parameter_servers); break;
        case Aggregation::hybrid:
          c = coll->time(CollectiveOp::allreduce, s, intra);
          if (at.nodes > 1) c += coll->parameter_server(s, across, st.parameter_servers);
          break;
        case Aggregation::broadcast_reduce:
          c = coll->time(CollectiveOp::broadcast, s, at) + coll->time(CollectiveOp::reduce, s, at);
          break;
      }
    }
    comm[i] = c;
    comm_total += c;
  }
  bool comm_measured = false;
  if (meas && meas->comm && gpus > 1) {  // a measured total overrides; its split follows the model
    const Seconds target = *meas->comm;
    for (auto& c : comm) c = comm_total > Seconds{} ? c * (target / comm_total) : target / static_cast<double>(U);
    comm_total = target;
    comm_measured = true;
  }

  // ---- combine ---------------------------------------------------------------------------------------
  Prediction p;
  p.gpus = gpus;
  p.nodes = at.nodes;
  p.batch_per_gpu = sc.batch_per_gpu;
  Seconds gpu_side{};
  Seconds exposed{};
  Seconds update_exposed = u;
  const bool overlapped = st.overlap != Overlap::none && st.aggregation != Aggregation::broadcast_reduce;
  if (!overlapped) {
    gpu_side = eq::gpu_time(h2d_n, f, b, u) + comm_total;  // eq. 2/3 without t_io
    exposed = comm_total;
  } else {
    const Seconds done = eq::overlap_done_exact(back, comm);
    if (st.update == UpdatePlacement::per_layer) {
      update_exposed = units.front().update;
      gpu_side = eq::iteration_exact_per_layer_update(Seconds{}, h2d_n, f, back, comm, update_exposed);
    } else {
      gpu_side = eq::iteration_exact_update_after(Seconds{}, h2d_n, f, back, comm, u);
    }
    exposed = done - b;
    const auto h = eq::classify_hiding(back, comm);
    p.hiding_case = h.which;
    p.boundary_layer = h.boundary;
  }
  p.iteration_time = st.io_prefetch ? eq::iteration_io_hidden(gpu_side, Seconds{}, io) : io + gpu_side;

  p.breakdown = Breakdown{io, h2d_n, f, b, u, comm_total, exposed};
  p.throughput_samples_per_s = gpus * sc.batch_per_gpu / in_seconds(p.iteration_time);
  p.speedup = gpus == 1 ? 1.0 : eq::speedup(gpus, iter_one, p.iteration_time);
  p.efficiency = p.speedup / gpus;

  // ---- bottleneck: the phase that takes the largest share of the critical path -------------------------
  const bool measured_io = sc.profile.has_value();
  const std::string io_res =
      measured_io ? fmt::format("input pipeline (measured, {} reader per node for {} GPU{})", 1, at.gpus_per_node,
                                at.gpus_per_node > 1 ? "s" : "")
                  : fmt::format("input read from {} ({})", cl.dataset_in_page_cache ? "page cache" : "disk", read_bw);
  struct Part {
    Bottleneck what;
    Seconds time;
  };
  std::array<Part, 5> parts{Part{Bottleneck::io, st.io_prefetch ? Seconds{} : io}, Part{Bottleneck::h2d, h2d_n},
                            Part{Bottleneck::compute, f + b}, Part{Bottleneck::communication, exposed},
                            Part{Bottleneck::update, update_exposed}};
  Part worst = parts[0];
  for (const auto& pt : parts)
    if (pt.time > worst.time) worst = pt;
  if (st.io_prefetch && io > gpu_side) worst = Part{Bottleneck::io, io};
  p.bottleneck = worst.what;
  switch (worst.what) {
    case Bottleneck::io: p.bottleneck_resource = io_res; break;
    case Bottleneck::h2d:
      p.bottleneck_resource = fmt::format("host-to-GPU copies ({} memory, {})", st.pinned_memory ? "pinned" : "pageable",
                                          st.pinned_memory ? cl.h2d_pinned : cl.h2d_pageable);
      break;
    case Bottleneck::compute: p.bottleneck_resource = fmt::format("GPU compute ({})", cl.gpu.name); break;
    case Bottleneck::communication:
      p.bottleneck_resource =
          at.nodes > 1 ? fmt::format("inter-node network ({})", cl.inter_node.bandwidth)
                       : fmt::format("intra-node GPU links ({})", cl.intra_node.bandwidth);
      if (comm_measured) p.bottleneck_resource += " [measured]";
      break;
    case Bottleneck::update:
      p.bottleneck_resource = fmt::format("parameter update (GPU memory {})", cl.gpu.memory_bandwidth);
      break;
  }
  return p;
}

}  // namespace dlscale
