// The training-iteration model on the engine: per GPU, read → H2D → forward per layer → backward per
// layer → aggregation per bucket (on one FIFO channel) → update → next iteration.
//
// Resources and what they serialise:
//   reader threads (per node)     read (+ decode) one batch at a time into a bounded per-GPU queue
//   copy engine (per GPU)         the host-to-GPU copy of a batch
//   compute stream (per GPU)      forward and backward per layer, the update after aggregation
//   aggregation channel (job)     collectives one at a time, in the order they become ready
//                                 (NCCL's single stream; the closed form's "one channel")
//   links (with contention)       flows of collectives, copies and reads, shared max-min fairly
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <numeric>

#include "model.hpp"

namespace dlscale::sim::detail {
namespace {

enum Kind : std::uint32_t {
  kDecodeDone = 1,  // a = reader slot (node*readers + r), b = GPU: the batch is read and decoded
  kH2dDone,         // a = GPU
  kFwdDone,         // a = GPU, b = layer
  kBwdDone,         // a = GPU, b = layer
  kUpdDone,         // a = GPU
  kCommDone,        // b = collective
  kCommLatency,     // b = collective
  kPsUpdate,        // b = collective
  kHvdTick,
  kGatherDone,      // a = iteration, b = use (sharded stage 3)
  kPostGatherDone,  // a = iteration (sharded stages 1-2)
  kCopyDone,        // offload: the last gradient-shard copy to the host has ended
  kHandoverDone,    // a = GPU: the prefetched batch is taken from the queue (eq. F2a), its copy starts
};

// flow tags: top byte says what the flow is
constexpr std::uint64_t kTagColl = 1ull << 56, kTagRead = 2ull << 56, kTagH2d = 3ull << 56;
constexpr std::uint64_t kTagMask = 0xFFull << 56;

inline Bytes bytes_from(double b) noexcept { return dlscale::bytes(b); }

struct Collective {
  int first = 0, last = 0, iter = 0;
  int unit = -1;  // the static plan's unit it aggregates (Setup::plan_time); -1: a fused buffer (Horovod)
  double bytes = 0.0, start = 0.0, jitter = 1.0;
  std::size_t phase = 0;
  int pending = 0;
  std::vector<Phase> phases;
};

struct Gpu {
  int iter = 0;
  int cls = 0;
  double speed = 1.0;
  bool waiting_batch = false;
  int queued = 0;    // batches in the host queue
  int pops = 0;      // batches taken
  int requests = 0;  // batches asked for
  double request_time = 0.0;
  double busy = 0.0, copy_busy = 0.0;
  double fwd_acc = 0.0, bwd_acc = 0.0, upd_acc = 0.0, h2d_start = 0.0;
  double task_start = 0.0;
  int factor_iter = -1;  // the iteration whose forward+backward factor `factor` is
  double factor = 1.0;
  // No random stream here: a std::mt19937_64 is 2.5 KB, which would put every GPU's hot fields on a page
  // of their own (Model::rngs_ holds the streams, only where they are drawn from).
};

struct Slice {
  std::uint32_t track, label;
  double t0, t1;
};

class Model final : public EventSink {
 public:
  explicit Model(const Setup& s) : s_(s), eng_(*this) {}

  Outcome run();
  void on_event(const Event& e) override;
  void on_flow_done(std::uint64_t tag) override;

 private:
  // on_event's handlers, one per event kind
  void decode_done(std::size_t slot, int g, double now);
  void h2d_done(int g, double now);
  void forward_done(int g, int layer, double now);
  void backward_done(int g, int layer, double now);
  void update_done(int g, double now);
  void ps_update(std::uint32_t id);
  // run's phases
  void prepare_gpus();
  void prepare_readers();
  void prepare_layers();
  void prepare_labels();
  void steady_state_means(Outcome& o) const;
  void utilisation(Outcome& o) const;
  // input pipeline
  void dispatch_readers(int node);
  void batch_ready(int g);
  void start_iteration(int g);
  void take_batch(int g);
  void start_copy(int g);
  // compute
  double compute_time(int g, double base);
  double pass_factor(int g);
  /// Strategy::iteration_overhead on more than one GPU (the closed form adds it to the GPU side; here it
  /// delays the iteration's last update, so it shows inside the update slice of the trace).
  [[nodiscard]] double overhead() const noexcept { return s_.gpus > 1 ? s_.overhead : 0.0; }
  void forward(int g, int layer);
  void backward(int g, int layer);
  void layer_ready_globally(int layer);
  void iteration_end(int g);
  // communication
  void collective_ready(int first, int last, double size, int unit = -1);
  void start_next_collective();
  void start_phase(std::uint32_t id);
  void collective_done(std::uint32_t id);
  void hvd_tick();
  void aggregation_finished();
  void start_update();
  // sharded data parallelism
  [[nodiscard]] std::size_t uses() const { return 2 * s_.plan.size(); }
  [[nodiscard]] bool gathered(int g, int use) const {
    return gather_done_[static_cast<std::size_t>(gpus_[static_cast<std::size_t>(g)].iter) * uses() +
                        static_cast<std::size_t>(use)] != 0;
  }
  void use_done(int iter, int use);
  void try_gather();
  void gather_done(int iter, int use);
  // trace
  void slice(std::uint32_t track, std::uint32_t label, double t0, double t1) {
    if (s_.trace && track != kNoTrack) slices_.push_back(Slice{track, label, t0, t1});
  }
  std::uint32_t label(std::string text) {
    labels_.push_back(std::move(text));
    return static_cast<std::uint32_t>(labels_.size() - 1);
  }
  std::uint32_t gpu_track(int g, int which) const {
    return s_.trace && g < s_.trace_max_gpus ? static_cast<std::uint32_t>(2 * g + which) : kNoTrack;
  }
  std::string trace_json() const;

  static constexpr std::uint32_t kNoTrack = 0xFFFFFFFFu;

  const Setup& s_;
  Engine eng_;
  std::vector<Gpu> gpus_;
  // readers
  std::vector<std::int64_t> next_seq_;
  std::vector<std::vector<int>> idle_readers_;  // per node: free reader slots
  std::vector<double> reader_busy_, reader_start_;
  std::vector<int> reader_gpu_;
  // per-layer bookkeeping
  std::vector<int> layer_count_;               // GPUs whose gradient of the layer is ready (this iteration)
  std::vector<int> layer_updated_;             // per_layer update: last iteration whose update of the layer ended
  std::vector<std::vector<int>> fwd_waiting_;  // GPUs waiting for a layer's update
  std::vector<int> unit_of_;                   // static plan: bucket of each layer
  int backward_done_ = 0;
  double backward_end_ = 0.0;
  // channel
  std::vector<Collective> colls_;
  std::vector<std::uint32_t> channel_queue_;
  std::size_t channel_head_ = 0;
  bool channel_busy_ = false;
  double channel_busy_time_ = 0.0;
  std::vector<int> hvd_ready_;
  // sharded: per (iteration, use) the GPUs that ended it and whether its gather has ended; the gather channel
  std::vector<int> use_count_, started_count_;
  std::vector<char> gather_done_;
  std::vector<std::vector<int>> gather_wait_;  // per use: GPUs waiting for its gather
  bool gather_busy_ = false;
  int gather_iter_ = 0, gather_next_ = 0;
  double gather_start_ = 0.0;
  int post_count_ = 0;
  double copy_end_ = 0.0;  // offload: when the copy engine is free (eq. S9a)
  bool tick_pending_ = false;
  Rng link_rng_;
  std::vector<Rng> rngs_;             // per GPU, where a GPU draws for itself (prepare_gpus); else empty
  std::vector<SlowestDraw> slowest_;  // per iteration, where the GPUs are alike (pass_factor)
  // iteration bookkeeping
  std::vector<double> iter_end_, agg_end_, bwd_end_, comm_sum_, fwd_max_, bwd_max_, upd_max_, h2d_max_, upd_exp_, wait_max_,
      origin_;
  int ended_ = 0;  // GPUs that ended the current iteration
  std::vector<Bucket> iter_buckets_;
  std::vector<Bucket> last_buckets_;
  // trace
  std::vector<Slice> slices_;
  std::vector<std::string> labels_;
  std::vector<std::uint32_t> fwd_label_, bwd_label_;
  std::uint32_t lbl_h2d_ = 0, lbl_update_ = 0, lbl_read_ = 0, lbl_decode_ = 0, lbl_wait_ = 0;
};

double Model::compute_time(int g, double base) {
  Gpu& gp = gpus_[static_cast<std::size_t>(g)];
  double t = base / gp.speed;
  if (s_.compute_jitter > 0.0) t *= rngs_[static_cast<std::size_t>(g)].jitter(s_.compute_jitter);
  return t;
}

// The synchronization-loss jitter of the closed form (Strategy::jitter_cv, docs/input-formats.md): a GPU's
// forward+backward of one iteration scaled by 1 + cv·z, z standard normal, drawn once per GPU and iteration
// (clamped at zero, which a cv below 0.2 reaches with probability under 1e-6). Where the GPUs are alike
// (one speed, one GPU model, no per-task --jitter) only the slowest's draw matters and it is drawn alone
// (random.hpp, draw_slowest): the other GPUs keep one time, so their events share the engine's FIFOs and
// the run stays linear in GPUs.
double Model::pass_factor(int g) {
  Gpu& gp = gpus_[static_cast<std::size_t>(g)];
  if (!(s_.iteration_cv > 0.0)) return 1.0;
  if (gp.factor_iter != gp.iter) {
    gp.factor_iter = gp.iter;
    double z = 0.0;
    if (const auto k = static_cast<std::size_t>(gp.iter); k < slowest_.size())  // alike GPUs (run())
      z = slowest_[k].gpu == g ? slowest_[k].z : slowest_[k].rest;
    else z = rngs_[static_cast<std::size_t>(g)].normal();
    gp.factor = std::max(0.0, 1.0 + s_.iteration_cv * z);
  }
  return gp.factor;
}

// ---- input pipeline ----------------------------------------------------------------------------------

void Model::dispatch_readers(int node) {
  auto& idle = idle_readers_[static_cast<std::size_t>(node)];
  auto& seq = next_seq_[static_cast<std::size_t>(node)];
  const std::int64_t total = static_cast<std::int64_t>(s_.gpn) * s_.iterations;
  while (!idle.empty() && seq < total) {
    const int local = static_cast<int>(seq % s_.gpn);
    const int k = static_cast<int>(seq / s_.gpn);
    const int g = node * s_.gpn + local;
    const Gpu& gp = gpus_[static_cast<std::size_t>(g)];
    const bool allowed = s_.prefetch ? k < gp.pops + s_.depth : k < gp.requests;
    if (!allowed) break;
    ++seq;
    const int slot = idle.back();
    idle.pop_back();
    reader_start_[static_cast<std::size_t>(slot)] = eng_.now();
    reader_gpu_[static_cast<std::size_t>(slot)] = g;
    if (s_.contention && s_.t_read > 0.0) {  // the read is a flow on the node's storage link
      eng_.start_flow(s_.input_bytes, {s_.storage_link[static_cast<std::size_t>(node)]}, 0.0,
                      kTagRead | static_cast<std::uint64_t>(slot));
    } else {  // read and decode back to back on the reader thread
      eng_.schedule(eng_.now() + s_.t_read + s_.decode, kDecodeDone, static_cast<std::uint32_t>(slot),
                    static_cast<std::uint64_t>(g));
    }
  }
}

void Model::batch_ready(int g) {
  Gpu& gp = gpus_[static_cast<std::size_t>(g)];
  ++gp.queued;
  if (gp.waiting_batch) take_batch(g);
}

void Model::start_iteration(int g) {
  Gpu& gp = gpus_[static_cast<std::size_t>(g)];
  ++gp.requests;
  gp.fwd_acc = gp.bwd_acc = gp.upd_acc = 0.0;
  gp.request_time = eng_.now();
  if (gp.queued > 0) {
    take_batch(g);
  } else {
    gp.waiting_batch = true;
    dispatch_readers(g / s_.gpn);
  }
}

void Model::take_batch(int g) {
  Gpu& gp = gpus_[static_cast<std::size_t>(g)];
  gp.waiting_batch = false;
  --gp.queued;
  ++gp.pops;
  const auto k = static_cast<std::size_t>(gp.iter);
  wait_max_[k] = std::max(wait_max_[k], eng_.now() - gp.request_time);
  if (eng_.now() > gp.request_time) slice(gpu_track(g, 1), lbl_wait_, gp.request_time, eng_.now());
  dispatch_readers(g / s_.gpn);
  // eq. F2a: the training thread's fixed hand-over of the batch, after the wait and before its copy (the readers
  // go on: the queue has a free slot from the pop); shown as part of the wait for input
  if (s_.handover > 0.0) {
    slice(gpu_track(g, 1), lbl_wait_, eng_.now(), eng_.now() + s_.handover);
    eng_.schedule(eng_.now() + s_.handover, kHandoverDone, static_cast<std::uint32_t>(g));
    return;
  }
  start_copy(g);
}

void Model::start_copy(int g) {
  Gpu& gp = gpus_[static_cast<std::size_t>(g)];
  gp.h2d_start = eng_.now();
  if (s_.contention && s_.h2d > 0.0) {
    eng_.start_flow(s_.input_bytes, {s_.pcie_link[static_cast<std::size_t>(g)]}, s_.input_bytes / s_.h2d,
                    kTagH2d | static_cast<std::uint64_t>(g));
  } else {
    eng_.schedule(eng_.now() + s_.h2d, kH2dDone, static_cast<std::uint32_t>(g));
  }
}

// ---- compute -------------------------------------------------------------------------------------------

void Model::forward(int g, int layer) {
  Gpu& gp = gpus_[static_cast<std::size_t>(g)];
  const auto li = static_cast<std::size_t>(layer);
  if (s_.update == UpdatePlacement::per_layer && gp.iter > 0 && layer_updated_[li] < gp.iter - 1) {
    fwd_waiting_[li].push_back(g);  // MXNet: the forward of a layer needs its updated parameters
    return;
  }
  if (s_.shard_stage >= 3) {  // a unit's forward needs its gathered parameters (eq. S6)
    const int unit = unit_of_[li];
    if (layer == s_.plan[static_cast<std::size_t>(unit)].first && !gathered(g, unit)) {
      gather_wait_[static_cast<std::size_t>(unit)].push_back(g);
      return;
    }
  }
  const double t = compute_time(g, s_.classes[static_cast<std::size_t>(gp.cls)].f[li]) * pass_factor(g);
  gp.task_start = eng_.now();
  gp.fwd_acc += t;
  eng_.schedule(eng_.now() + t, kFwdDone, static_cast<std::uint32_t>(g), static_cast<std::uint64_t>(layer));
}

void Model::backward(int g, int layer) {
  if (s_.shard_stage >= 3 && s_.gather_backward) {  // full shard: the unit's backward gathers again
    const int unit = unit_of_[static_cast<std::size_t>(layer)];
    const int use = static_cast<int>(uses()) - 1 - unit;
    if (layer == s_.plan[static_cast<std::size_t>(unit)].last && !gathered(g, use)) {
      gather_wait_[static_cast<std::size_t>(use)].push_back(g);
      return;
    }
  }
  Gpu& gp = gpus_[static_cast<std::size_t>(g)];
  const double t =
      compute_time(g, s_.classes[static_cast<std::size_t>(gp.cls)].b[static_cast<std::size_t>(layer)]) * pass_factor(g);
  gp.task_start = eng_.now();
  gp.bwd_acc += t;
  eng_.schedule(eng_.now() + t, kBwdDone, static_cast<std::uint32_t>(g), static_cast<std::uint64_t>(layer));
}

void Model::layer_ready_globally(int layer) {
  if (s_.horovod) {
    hvd_ready_.push_back(layer);
    if (!tick_pending_) {
      tick_pending_ = true;
      double t = std::ceil(eng_.now() / s_.cycle_time) * s_.cycle_time;
      if (t < eng_.now()) t = eng_.now();
      eng_.schedule(t, kHvdTick);
    }
    return;
  }
  const Bucket& u = s_.plan[static_cast<std::size_t>(unit_of_[static_cast<std::size_t>(layer)])];
  if (layer == u.first) collective_ready(u.first, u.last, in_bytes(u.bytes), unit_of_[static_cast<std::size_t>(layer)]);
}

void Model::hvd_tick() {
  // Horovod's background loop: every cycle, the tensors ready on every rank are fused in order into
  // buffers of at most the fusion threshold (a larger tensor goes alone) and all-reduced.
  tick_pending_ = false;
  Bucket open{};
  bool any = false;
  double fused = 0.0;
  for (int layer : hvd_ready_) {
    const double sz = s_.grad_bytes[static_cast<std::size_t>(layer)];
    if (any && fused + sz > s_.fusion_threshold) {
      collective_ready(open.first, open.last, fused);
      any = false;
    }
    if (!any) {
      open = Bucket{layer, layer, Bytes{}};
      fused = 0.0;
      any = true;
    }
    open.first = layer;
    fused += sz;
  }
  if (any) collective_ready(open.first, open.last, fused);
  hvd_ready_.clear();
}

void Model::iteration_end(int g) {
  Gpu& gp = gpus_[static_cast<std::size_t>(g)];
  const auto k = static_cast<std::size_t>(gp.iter);
  iter_end_[k] = std::max(iter_end_[k], eng_.now());
  fwd_max_[k] = std::max(fwd_max_[k], gp.fwd_acc);
  bwd_max_[k] = std::max(bwd_max_[k], gp.bwd_acc);
  if (s_.update != UpdatePlacement::per_layer) upd_max_[k] = std::max(upd_max_[k], gp.upd_acc);
  if (++ended_ == s_.gpus) {
    ended_ = 0;
    last_buckets_ = iter_buckets_;
    iter_buckets_.clear();
  }
  ++gp.iter;
  if (gp.iter < s_.iterations) start_iteration(g);
}

// ---- communication -------------------------------------------------------------------------------------

void Model::collective_ready(int first, int last, double size, int unit) {
  Collective c;
  c.first = first;
  c.last = last;
  c.unit = unit;
  c.bytes = size;
  c.iter = gpus_.front().iter;  // every GPU is in this iteration until its aggregation has ended
  c.jitter = s_.link_jitter > 0.0 ? link_rng_.jitter(s_.link_jitter) : 1.0;
  colls_.push_back(std::move(c));
  iter_buckets_.push_back(Bucket{first, last, bytes_from(size)});
  channel_queue_.push_back(static_cast<std::uint32_t>(colls_.size() - 1));
  if (!channel_busy_) start_next_collective();
}

void Model::start_next_collective() {
  if (channel_head_ >= channel_queue_.size()) return;
  const std::uint32_t id = channel_queue_[channel_head_++];
  Collective& c = colls_[id];
  channel_busy_ = true;
  c.start = eng_.now();
  if (s_.gpus <= 1) {
    eng_.schedule(eng_.now(), kCommDone, 0, id);
  } else if (!s_.contention) {
    const double alone =
        c.unit >= 0 && !s_.plan_time.empty() ? s_.plan_time[static_cast<std::size_t>(c.unit)] : s_.reference_time(c.bytes);
    const double t = alone * s_.comm_factor * c.jitter;
    eng_.schedule(eng_.now() + t, kCommDone, 0, id);
  } else {
    c.phases = s_.phases(c.bytes);
    c.phase = 0;
    if (c.phases.empty()) {
      eng_.schedule(eng_.now(), kCommDone, 0, id);
    } else {
      eng_.schedule(eng_.now() + c.phases[0].latency * s_.comm_factor * c.jitter, kCommLatency, 0, id);
    }
  }
}

void Model::start_phase(std::uint32_t id) {
  Collective& c = colls_[id];
  const Phase& ph = c.phases[c.phase];
  c.pending = static_cast<int>(ph.flows.size());
  if (c.pending == 0) {
    on_flow_done(kTagColl | id);  // nothing to move in this phase
    return;
  }
  const double slow = s_.comm_factor * c.jitter;
  for (const FlowSpec& f : ph.flows) eng_.start_flow(f.bytes, s_.paths[f.path], f.cap > 0.0 ? f.cap / slow : 0.0, kTagColl | id);
}

void Model::collective_done(std::uint32_t id) {
  Collective& c = colls_[id];
  const double now = eng_.now();
  channel_busy_ = false;
  channel_busy_time_ += now - c.start;
  comm_sum_[static_cast<std::size_t>(c.iter)] += now - c.start;
  if (s_.trace) {
    slice(static_cast<std::uint32_t>(2 * std::min(s_.gpus, s_.trace_max_gpus)),
          label(fmt::format("aggregate layers {}-{} ({:.2f} MiB)", c.first + 1, c.last + 1, c.bytes / 1048576.0)), c.start, now);
  }
  c.phases.clear();
  c.phases.shrink_to_fit();
  if (s_.offload_pcie > 0.0)  // eq. S9a: the unit's gradient shard to the host once its collective has ended
    copy_end_ = std::max(copy_end_, now) +
        (c.unit >= 0 && static_cast<std::size_t>(c.unit) < s_.offload_copy.size()
             ? s_.offload_copy[static_cast<std::size_t>(c.unit)]
             : 0.0);
  if (s_.update == UpdatePlacement::per_layer && s_.overlapped) {
    // the parameter server updates these layers as soon as their aggregation ends (eq. 6/7)
    double t = 0.0;
    const GpuClass& cl = s_.classes[static_cast<std::size_t>(gpus_.front().cls)];
    for (int i = c.first; i <= c.last; ++i) t += cl.u[static_cast<std::size_t>(i)];
    if (c.first == 0) t += overhead();  // the framework's fixed cost, before the last update of the iteration
    eng_.schedule(now + t, kPsUpdate, 0, id);
  }
  if (c.first == 0) aggregation_finished();
  start_next_collective();
}

void Model::aggregation_finished() {
  const double now = eng_.now();
  const int k = gpus_.front().iter;
  agg_end_[static_cast<std::size_t>(k)] = now;
  if (s_.offload_pcie > 0.0) {  // offload: the update waits for the last gradient-shard copy (eq. S9a)
    eng_.schedule(std::max(copy_end_, now), kCopyDone, 0);
    return;
  }
  start_update();
}

void Model::start_update() {
  const double now = eng_.now();
  if (s_.update == UpdatePlacement::per_layer && s_.overlapped) return;  // ends at the PS update of layer 1
  if (s_.update == UpdatePlacement::on_root) {
    Gpu& root = gpus_.front();
    const double t = compute_time(0, s_.classes[static_cast<std::size_t>(root.cls)].u_total) + overhead();
    root.upd_acc = t;
    root.task_start = now;
    eng_.schedule(now + t, kUpdDone, 0);
    return;
  }
  for (int g = 0; g < s_.gpus; ++g) {
    Gpu& gp = gpus_[static_cast<std::size_t>(g)];
    // offload (eq. S9b-c): the CPU step and the copy back instead of the GPU's update
    const double t = compute_time(g, s_.classes[static_cast<std::size_t>(gp.cls)].u_total) + overhead() + s_.offload_update;
    gp.upd_acc = t;
    gp.task_start = now;
    eng_.schedule(now + t, kUpdDone, static_cast<std::uint32_t>(g));
  }
}

// ---- sharded data parallelism (docs/model.md, S5-S8) -------------------------------------------------------

void Model::use_done(int iter, int use) {
  auto& c = use_count_[static_cast<std::size_t>(iter) * uses() + static_cast<std::size_t>(use)];
  if (++c == s_.gpus) try_gather();
}

void Model::try_gather() {
  // Eq. S5: gathers one at a time in use order; use k's gather waits until use k − in_flight has ended on
  // every GPU (its buffer is free), and the first ones until every GPU has its batch (the origin).
  if (gather_busy_ || gather_iter_ >= s_.iterations) return;
  const auto i = static_cast<std::size_t>(gather_iter_);
  if (started_count_[i] < s_.gpus) return;
  const int need = gather_next_ - std::max(s_.in_flight, 1);
  if (need >= 0 && use_count_[i * uses() + static_cast<std::size_t>(need)] < s_.gpus) return;
  const std::size_t U = s_.plan.size();
  const auto k = static_cast<std::size_t>(gather_next_);
  const std::size_t unit = k < U ? k : 2 * U - 1 - k;
  gather_busy_ = true;
  gather_start_ = eng_.now();
  const double t = k >= U && !s_.gather_time_backward.empty() ? s_.gather_time_backward[unit] : s_.gather_time[unit];
  eng_.schedule(eng_.now() + t, kGatherDone, static_cast<std::uint32_t>(gather_iter_), static_cast<std::uint64_t>(gather_next_));
}

void Model::gather_done(int iter, int use) {
  gather_busy_ = false;
  comm_sum_[static_cast<std::size_t>(iter)] += eng_.now() - gather_start_;
  gather_done_[static_cast<std::size_t>(iter) * uses() + static_cast<std::size_t>(use)] = 1;
  std::vector<int> waiting;
  waiting.swap(gather_wait_[static_cast<std::size_t>(use)]);
  const auto U = static_cast<int>(s_.plan.size());
  for (int g : waiting) {
    if (use < U) forward(g, s_.plan[static_cast<std::size_t>(use)].first);
    else backward(g, s_.plan[static_cast<std::size_t>(2 * U - 1 - use)].last);
  }
  const int per_iteration = s_.gather_backward ? 2 * U : U;
  if (++gather_next_ == per_iteration) {
    gather_next_ = 0;
    ++gather_iter_;
  }
  try_gather();
}

// ---- event dispatch ------------------------------------------------------------------------------------

void Model::on_event(const Event& e) {
  const double now = eng_.now();
  switch (e.kind) {
    case kDecodeDone:
      decode_done(static_cast<std::size_t>(e.a), static_cast<int>(e.b), now);
      break;
    case kH2dDone:
      h2d_done(static_cast<int>(e.a), now);
      break;
    case kHandoverDone:
      start_copy(static_cast<int>(e.a));
      break;
    case kFwdDone:
      forward_done(static_cast<int>(e.a), static_cast<int>(e.b), now);
      break;
    case kBwdDone:
      backward_done(static_cast<int>(e.a), static_cast<int>(e.b), now);
      break;
    case kUpdDone:
      update_done(static_cast<int>(e.a), now);
      break;
    case kCommDone:
      collective_done(static_cast<std::uint32_t>(e.b));
      break;
    case kCommLatency:
      start_phase(static_cast<std::uint32_t>(e.b));
      break;
    case kPsUpdate:
      ps_update(static_cast<std::uint32_t>(e.b));
      break;
    case kHvdTick:
      hvd_tick();
      break;
    case kGatherDone:
      gather_done(static_cast<int>(e.a), static_cast<int>(e.b));
      break;
    case kPostGatherDone:
      for (int g = 0; g < s_.gpus; ++g) iteration_end(g);
      break;
    case kCopyDone:
      start_update();
      break;
    default:
      break;
  }
}

/// A reader decoded GPU g's batch: the reader is free for the node's next.
void Model::decode_done(std::size_t slot, int g, double now) {
  reader_busy_[slot] += now - reader_start_[slot];
  slice(s_.trace ? static_cast<std::uint32_t>(2 * std::min(s_.gpus, s_.trace_max_gpus) + 1 + slot) : kNoTrack, lbl_read_,
        reader_start_[slot], now);
  const int node = g / s_.gpn;
  idle_readers_[static_cast<std::size_t>(node)].push_back(static_cast<int>(slot));
  batch_ready(g);
  dispatch_readers(node);
}

/// GPU g's batch is on the GPU: the iteration starts (its origin), and the forward with it.
void Model::h2d_done(int g, double now) {
  Gpu& gp = gpus_[static_cast<std::size_t>(g)];
  gp.copy_busy += now - gp.h2d_start;
  auto& h = h2d_max_[static_cast<std::size_t>(gp.iter)];
  h = std::max(h, now - gp.h2d_start);
  slice(gpu_track(g, 1), lbl_h2d_, gp.h2d_start, now);
  auto& o = origin_[static_cast<std::size_t>(gp.iter)];
  o = std::max(o, now);
  if (s_.shard_stage >= 3 && ++started_count_[static_cast<std::size_t>(gp.iter)] == s_.gpus) try_gather();
  forward(g, 0);
}

/// A layer's forward ended on GPU g: the next layer's, or the backward from the top.
void Model::forward_done(int g, int layer, double now) {
  Gpu& gp = gpus_[static_cast<std::size_t>(g)];
  gp.busy += now - gp.task_start;
  slice(gpu_track(g, 0), fwd_label_.empty() ? 0 : fwd_label_[static_cast<std::size_t>(layer)], gp.task_start, now);
  if (s_.shard_stage >= 3) {
    const int unit = unit_of_[static_cast<std::size_t>(layer)];
    if (layer == s_.plan[static_cast<std::size_t>(unit)].last) use_done(gp.iter, unit);
  }
  if (layer + 1 < s_.layers) forward(g, layer + 1);
  else backward(g, s_.layers - 1);
}

/// A layer's backward ended on GPU g: its gradient counts towards aggregation; the layer below next.
void Model::backward_done(int g, int layer, double now) {
  Gpu& gp = gpus_[static_cast<std::size_t>(g)];
  gp.busy += now - gp.task_start;
  slice(gpu_track(g, 0), bwd_label_.empty() ? 0 : bwd_label_[static_cast<std::size_t>(layer)], gp.task_start, now);
  if (s_.shard_stage >= 3) {
    const int unit = unit_of_[static_cast<std::size_t>(layer)];
    if (layer == s_.plan[static_cast<std::size_t>(unit)].first) use_done(gp.iter, static_cast<int>(uses()) - 1 - unit);
  }
  if (s_.overlapped) {
    auto& cnt = layer_count_[static_cast<std::size_t>(layer)];
    if (++cnt == s_.gpus) {
      cnt = 0;
      layer_ready_globally(layer);
    }
  }
  if (layer > 0) {
    backward(g, layer - 1);
  } else {
    auto& be = bwd_end_[static_cast<std::size_t>(gp.iter)];
    be = std::max(be, now);
    if (++backward_done_ == s_.gpus) {
      backward_done_ = 0;
      if (!s_.overlapped)  // sequential: every gradient is aggregated after the whole backward
        for (int i = s_.layers - 1; i >= 0; --i) layer_ready_globally(i);
    }
  }
}

/// GPU g's update ended: the iteration ends (on the root: every GPU's; ZeRO-1/2: after the all-gather).
void Model::update_done(int g, double now) {
  Gpu& gp = gpus_[static_cast<std::size_t>(g)];
  gp.busy += now - gp.task_start;
  slice(gpu_track(g, 0), lbl_update_, gp.task_start, now);
  if (s_.update == UpdatePlacement::on_root) {
    for (int i = 0; i < s_.gpus; ++i) iteration_end(i);
  } else if (s_.post_gather > 0.0) {  // ZeRO-1/2: the updated parameters are all-gathered (eq. S8)
    if (++post_count_ == s_.gpus) {
      post_count_ = 0;
      comm_sum_[static_cast<std::size_t>(gp.iter)] += s_.post_gather;
      eng_.schedule(now + s_.post_gather, kPostGatherDone, static_cast<std::uint32_t>(gp.iter));
    }
  } else {
    iteration_end(g);
  }
}

/// A parameter server updated the layers of collective `id`: their forwards may run.
void Model::ps_update(std::uint32_t id) {
  const Collective& c = colls_[id];
  double t = 0.0;
  const GpuClass& cl = s_.classes[static_cast<std::size_t>(gpus_.front().cls)];
  for (int i = c.first; i <= c.last; ++i) {
    t += cl.u[static_cast<std::size_t>(i)];
    layer_updated_[static_cast<std::size_t>(i)] = c.iter;
  }
  upd_max_[static_cast<std::size_t>(c.iter)] += t;
  if (c.first == 0) upd_exp_[static_cast<std::size_t>(c.iter)] = t;
  for (int i = c.first; i <= c.last; ++i) {
    auto& w = fwd_waiting_[static_cast<std::size_t>(i)];
    std::vector<int> waiting;
    waiting.swap(w);
    for (int g : waiting) forward(g, i);
  }
  if (c.first == 0)
    for (int g = 0; g < s_.gpus; ++g) iteration_end(g);
}

void Model::on_flow_done(std::uint64_t tag) {
  const std::uint64_t what = tag & kTagMask;
  const std::uint64_t val = tag & ~kTagMask;
  if (what == kTagRead) {
    const auto slot = static_cast<std::size_t>(val);
    eng_.schedule(eng_.now() + s_.decode, kDecodeDone, static_cast<std::uint32_t>(slot),
                  static_cast<std::uint64_t>(reader_gpu_[slot]));
  } else if (what == kTagH2d) {
    eng_.schedule(eng_.now(), kH2dDone, static_cast<std::uint32_t>(val));
  } else if (what == kTagColl) {
    const auto id = static_cast<std::uint32_t>(val);
    Collective& c = colls_[id];
    if (--c.pending > 0) return;
    if (++c.phase < c.phases.size()) {
      eng_.schedule(eng_.now() + c.phases[c.phase].latency * s_.comm_factor * c.jitter, kCommLatency, 0, id);
    } else {
      collective_done(id);
    }
  }
}

// ---- run -----------------------------------------------------------------------------------------------

Outcome Model::run() {
  const auto G = static_cast<std::size_t>(s_.gpus);
  prepare_gpus();
  for (const auto& l : s_.links) eng_.net().add_link(l.name, l.kind, l.capacity);
  eng_.net().record_rates(s_.trace);
  prepare_readers();
  prepare_layers();
  prepare_labels();
  eng_.reserve(G * 2 + 64);

  for (int n = 0; n < s_.nodes; ++n) dispatch_readers(n);
  for (int g = 0; g < s_.gpus; ++g) start_iteration(g);
  Outcome o;
  o.events = eng_.run();
  o.span = eng_.now();
  o.iteration_end = iter_end_;
  steady_state_means(o);
  o.last_buckets = last_buckets_;
  utilisation(o);
  if (s_.trace) o.trace_json = trace_json();
  return o;
}

/// The GPUs' classes, speeds and random streams, and where the GPUs are alike, the slowest of them per
/// iteration drawn once (pass_factor).
void Model::prepare_gpus() {
  const auto G = static_cast<std::size_t>(s_.gpus);
  const auto N = static_cast<std::size_t>(s_.iterations);
  gpus_.resize(G);
  for (std::size_t g = 0; g < G; ++g) {
    gpus_[g].cls = s_.gpu_class[g];
    gpus_[g].speed = s_.speed[g];
  }
  link_rng_ = Rng(splitmix64(s_.seed ^ 0x6C696E6Bull));
  bool alike = s_.compute_jitter == 0.0;
  for (std::size_t g = 1; g < G && alike; ++g) alike = s_.speed[g] == s_.speed[0] && s_.gpu_class[g] == s_.gpu_class[0];
  if (s_.iteration_cv > 0.0 && alike) {
    Rng slow(splitmix64(s_.seed ^ 0x736C6F77ull));
    slowest_.resize(N + 1);  // + 1: a GPU may ask for the iteration after the last
    for (auto& d : slowest_) d = draw_slowest(slow, s_.gpus);
  }
  // a GPU's own stream: for the per-task jitter, and for the per-iteration factor where the GPUs differ
  if (s_.compute_jitter > 0.0 || (s_.iteration_cv > 0.0 && !alike)) {
    rngs_.reserve(G);
    for (std::size_t g = 0; g < G; ++g) rngs_.emplace_back(splitmix64(s_.seed ^ splitmix64(g + 1)));
  }
}

/// The readers: per node its free reader slots, and each slot's busy time.
void Model::prepare_readers() {
  next_seq_.assign(static_cast<std::size_t>(s_.nodes), 0);
  idle_readers_.assign(static_cast<std::size_t>(s_.nodes), {});
  const auto R = static_cast<std::size_t>(s_.readers);
  reader_busy_.assign(static_cast<std::size_t>(s_.nodes) * R, 0.0);
  reader_start_.assign(reader_busy_.size(), 0.0);
  reader_gpu_.assign(reader_busy_.size(), 0);
  for (std::size_t n = 0; n < static_cast<std::size_t>(s_.nodes); ++n)
    for (std::size_t r = R; r-- > 0;) idle_readers_[n].push_back(static_cast<int>(n * R + r));
}

/// Per-layer and per-iteration bookkeeping, the static plan's bucket of each layer, and the sharded
/// step's gather state.
void Model::prepare_layers() {
  const auto L = static_cast<std::size_t>(s_.layers);
  const auto N = static_cast<std::size_t>(s_.iterations);
  layer_count_.assign(L, 0);
  layer_updated_.assign(L, -1);
  fwd_waiting_.assign(L, {});
  if (!s_.horovod) {
    unit_of_.assign(L, 0);
    for (std::size_t u = 0; u < s_.plan.size(); ++u)
      for (int i = s_.plan[u].first; i <= s_.plan[u].last; ++i) unit_of_[static_cast<std::size_t>(i)] = static_cast<int>(u);
  }
  for (auto* v : {&iter_end_, &agg_end_, &bwd_end_, &comm_sum_, &fwd_max_, &bwd_max_, &upd_max_, &h2d_max_, &upd_exp_, &wait_max_,
                  &origin_})
    v->assign(N, 0.0);
  if (s_.shard_stage >= 3) {
    use_count_.assign(N * uses(), 0);
    gather_done_.assign(N * uses(), 0);
    gather_wait_.assign(uses(), {});
    started_count_.assign(N, 0);
  }
  colls_.reserve(N * (s_.horovod ? L : s_.plan.size()) + 1);
}

/// The trace's labels (none without a trace).
void Model::prepare_labels() {
  const auto L = static_cast<std::size_t>(s_.layers);
  if (s_.trace) {
    fwd_label_.resize(L);
    bwd_label_.resize(L);
    for (std::size_t i = 0; i < L; ++i) {
      fwd_label_[i] = label("forward " + s_.layer_names[i]);
      bwd_label_[i] = label("backward " + s_.layer_names[i]);
    }
    lbl_h2d_ = label("host-to-GPU copy");
    lbl_update_ = label("update");
    lbl_read_ = label("read batch");
    lbl_wait_ = label("wait for input");
  } else {
    lbl_h2d_ = lbl_update_ = lbl_read_ = lbl_wait_ = 0;
  }
}

/// The steady-state means over the iterations after the warm-up.
void Model::steady_state_means(Outcome& o) const {
  const auto N = static_cast<std::size_t>(s_.iterations);
  const std::size_t from = std::min(static_cast<std::size_t>(std::max(s_.warmup, 0)), N - 1);
  double cnt = 0;
  for (std::size_t k = from; k < N; ++k) {
    cnt += 1;
    o.forward += fwd_max_[k];
    o.backward += bwd_max_[k];
    o.update += upd_max_[k];
    o.update_exposed += s_.update == UpdatePlacement::per_layer && s_.overlapped ? upd_exp_[k] : upd_max_[k];
    o.h2d += h2d_max_[k];
    o.comm += comm_sum_[k];
    // sharded: the iteration's span past its compute (eq. S5-S8), from the end of the host-to-GPU copy
    o.exposed += s_.shard_stage > 0 ? std::max(0.0, agg_end_[k] - origin_[k] - fwd_max_[k] - bwd_max_[k]) + s_.post_gather
                                    : std::max(0.0, agg_end_[k] - bwd_end_[k]);
    o.input_wait += wait_max_[k];
  }
  for (double* x : {&o.forward, &o.backward, &o.update, &o.update_exposed, &o.h2d, &o.comm, &o.exposed, &o.input_wait}) *x /= cnt;
}

/// The utilisation of the GPUs' streams, the readers, the aggregation channel and the links by kind.
void Model::utilisation(Outcome& o) const {
  const auto G = static_cast<std::size_t>(s_.gpus);
  const double span = o.span > 0 ? o.span : 1.0;
  auto add = [&](std::string name, std::string kind, const std::vector<double>& busy, const std::vector<std::string>* names) {
    if (busy.empty()) return;
    ResourceUse r;
    r.name = std::move(name);
    r.kind = std::move(kind);
    r.count = static_cast<int>(busy.size());
    std::size_t arg = 0;
    for (std::size_t i = 0; i < busy.size(); ++i) {
      r.busy_mean += busy[i] / span;
      if (busy[i] > busy[arg]) arg = i;
    }
    r.busy_mean /= static_cast<double>(busy.size());
    r.busy_max = busy[arg] / span;
    r.busiest = names ? (*names)[arg] : fmt::format("{} {}", r.name, arg);
    o.utilisation.push_back(std::move(r));
  };
  std::vector<double> busy(G), copy(G);
  for (std::size_t g = 0; g < G; ++g) {
    busy[g] = gpus_[g].busy;
    copy[g] = gpus_[g].copy_busy;
  }
  add("GPU compute stream", "compute", busy, nullptr);
  add("GPU copy engine (H2D)", "copy", copy, nullptr);
  add("reader thread", "reader", reader_busy_, nullptr);
  add("aggregation channel", "channel", std::vector<double>{channel_busy_time_}, nullptr);
  // links, grouped by kind
  const FlowNet& net = eng_.net();
  std::vector<std::string> kinds;
  for (std::size_t l = 0; l < net.link_count(); ++l)
    if (std::find(kinds.begin(), kinds.end(), net.link(static_cast<LinkId>(l)).kind) == kinds.end())
      kinds.push_back(net.link(static_cast<LinkId>(l)).kind);
  for (const auto& kind : kinds) {
    std::vector<double> b;
    std::vector<std::string> names;
    double carried = 0;
    for (std::size_t l = 0; l < net.link_count(); ++l) {
      const auto& st = net.link(static_cast<LinkId>(l));
      if (st.kind != kind) continue;
      b.push_back(st.busy);
      names.push_back(st.name);
      carried += st.bytes;
      if (st.busy / span > o.busiest_link_fraction) {
        o.busiest_link_fraction = st.busy / span;
        o.busiest_link = fmt::format("{} ({:.3g} GB/s)", st.name, st.capacity / 1e9);
      }
    }
    add("link " + kind, kind, b, &names);
    o.utilisation.back().bytes = bytes_from(carried);
  }
}

// ---- trace -----------------------------------------------------------------------------------------------

void json_escape(std::string& out, std::string_view s) {
  for (char ch : s) {
    switch (ch) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20) out += fmt::format("\\u{:04x}", static_cast<int>(ch));
        else out += ch;
    }
  }
}

std::string Model::trace_json() const {
  // Chrome trace-event format: "X" complete events (ts/dur in µs), "C" counters for link rates,
  // "M" metadata naming processes (pid: node, or the job) and threads (tid: a stream, reader or channel).
  std::string out;
  out.reserve(slices_.size() * 96 + 4096);
  out += "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"generator\":\"dlscale simulate\"},\"traceEvents\":[\n";
  bool first = true;
  auto sep = [&] {
    if (!first) out += ",\n";
    first = false;
  };
  const int traced = std::min(s_.gpus, s_.trace_max_gpus);
  const int job_pid = s_.nodes;  // the job-wide tracks
  auto meta = [&](const char* what, int pid, long tid, std::string_view name) {
    sep();
    out += fmt::format("{{\"ph\":\"M\",\"name\":\"{}\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":\"", what, pid, tid);
    json_escape(out, name);
    out += "\"}}";
  };
  for (int n = 0; n < s_.nodes; ++n) meta("process_name", n, 0, fmt::format("node {}", n));
  meta("process_name", job_pid, 0, "job: aggregation channel and links");
  auto track_of = [&](std::uint32_t track, int& pid, long& tid) {
    const auto t = static_cast<int>(track);
    if (t < 2 * traced) {
      pid = (t / 2) / s_.gpn;
      tid = t;
    } else if (t == 2 * traced) {
      pid = job_pid;
      tid = 0;
    } else {
      const int slot = t - 2 * traced - 1;
      pid = slot / s_.readers;
      tid = 100000 + slot;
    }
  };
  for (int g = 0; g < traced; ++g) {
    meta("thread_name", g / s_.gpn, 2 * g, fmt::format("GPU {} compute", g));
    meta("thread_name", g / s_.gpn, 2 * g + 1, fmt::format("GPU {} copy (H2D)", g));
  }
  meta("thread_name", job_pid, 0, "aggregation channel");
  for (int slot = 0; slot < s_.nodes * s_.readers; ++slot)
    meta("thread_name", slot / s_.readers, 100000 + slot, fmt::format("reader {}", slot % s_.readers));
  for (const Slice& sl : slices_) {
    int pid = 0;
    long tid = 0;
    track_of(sl.track, pid, tid);
    sep();
    out += "{\"ph\":\"X\",\"name\":\"";
    json_escape(out, labels_[sl.label]);
    out += fmt::format("\",\"pid\":{},\"tid\":{},\"ts\":{:.3f},\"dur\":{:.3f}}}", pid, tid, sl.t0 * 1e6, (sl.t1 - sl.t0) * 1e6);
  }
  const FlowNet& net = eng_.net();
  for (const auto& smp : net.rate_samples()) {
    sep();
    out += "{\"ph\":\"C\",\"name\":\"";
    json_escape(out, net.link(smp.link).name);
    out += fmt::format("\",\"pid\":{},\"tid\":0,\"ts\":{:.3f},\"args\":{{\"GB/s\":{:.6g}}}}}", job_pid, smp.time * 1e6,
                       smp.rate / 1e9);
  }
  out += "\n]}\n";
  return out;
}

}  // namespace

Outcome simulate(const Setup& s) {
  Model m(s);
  return m.run();
}

}  // namespace dlscale::sim::detail
