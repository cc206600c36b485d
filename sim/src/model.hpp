// The training-iteration model that drives the engine (internal to libdlscale_sim).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dlscale/sim/engine.hpp"
#include "dlscale/sim/merge.hpp"
#include "dlscale/sim/simulator.hpp"
#include "dlscale/strategy.hpp"
#include "random.hpp"

namespace dlscale::sim::detail {

/// Per-layer times of one kind of GPU, in seconds (element 0 = layer 1).
struct GpuClass {
  std::vector<double> f, b, u;
  double u_total = 0.0;
};

/// One flow of a communication phase.
struct FlowSpec {
  double bytes = 0.0;
  std::uint32_t path = 0;  // index into Setup::paths
  double cap = 0.0;        // bytes/s, ≤ 0: uncapped
};
struct Phase {
  double latency = 0.0;
  std::vector<FlowSpec> flows;
};

/// Everything one simulation needs, in plain numbers.
struct Setup {
  int gpus = 1, nodes = 1, gpn = 1, layers = 0, iterations = 10, warmup = 1;
  std::vector<GpuClass> classes;
  std::vector<int> gpu_class;
  std::vector<double> speed;  // per GPU
  std::vector<double> grad_bytes;
  std::vector<std::string> layer_names;

  bool overlapped = true;
  UpdatePlacement update = UpdatePlacement::after_aggregation;
  bool horovod = false;
  double fusion_threshold = 0.0, cycle_time = 0.0;
  std::vector<Bucket> plan;  // static plan (empty for Horovod)

  bool prefetch = true;
  int depth = 2, readers = 1;
  double t_read = 0.0, decode = 0.0, h2d = 0.0, input_bytes = 0.0;
  double handover = 0.0;  // eq. F2a: seconds the GPU's thread takes to take a prefetched batch (0 unprefetched)

  bool contention = false;
  double comm_factor = 1.0;                      // measured-total scaling of the collective model's times
  std::function<double(double)> reference_time;  // seconds for an aggregation of `bytes` (no contention)
  /// Per static plan unit, its aggregation's seconds without contention, as the closed form times that unit
  /// (aggregation_times, shard_unit_times: the same function); empty: reference_time of its bytes.
  std::vector<double> plan_time;
  std::function<std::vector<Phase>(double)> phases;  // with contention
  std::vector<std::vector<LinkId>> paths;            // flow paths (contention)
  struct LinkDef {
    std::string name, kind;
    double capacity;
  };
  std::vector<LinkDef> links;
  std::vector<LinkId> pcie_link;     // per GPU (contention)
  std::vector<LinkId> storage_link;  // per node (contention)

  // Sharded data parallelism (docs/model.md, S5-S8); shard_stage 0: none of this. Stage 3: the plan's
  // units are the gather units; each unit's forward (and, with gather_backward, backward) waits for the
  // all-gather of its parameters, run one at a time on a second channel that holds at most in_flight
  // gathered units. Stages 1-2: the updated parameters are all-gathered after the update (post_gather).
  int shard_stage = 0;
  bool gather_backward = false;
  int in_flight = 2;
  std::vector<double> gather_time;  // per plan unit, seconds
  /// Per plan unit, the backward's gather where it differs from the forward's (eq. S4b: zero for a block wrap's held
  /// root); empty: the forward's.
  std::vector<double> gather_time_backward;
  double post_gather = 0.0;  // seconds
  // CPU offload of the optimiser (eq. S9; offload_pcie 0: none): each aggregated unit's gradient shard copied to
  // the host at offload_pcie B/s (offload_copy: seconds per plan unit, eq. S9a at eq. K27's width), one copy at a
  // time, after its collective; the update (offload_update s: the CPU step and the copy back) waits for the last copy.
  double offload_pcie = 0.0;
  std::vector<double> offload_copy;
  double offload_update = 0.0;

  double compute_jitter = 0.0, link_jitter = 0.0;
  double iteration_cv = 0.0;
  double overhead = 0.0;  // Strategy::iteration_overhead, s, before the update of an iteration of > 1 GPU  //
                          // Strategy::jitter_cv: one normal factor 1 + cv·z per GPU and iteration on forward+backward
  std::uint64_t seed = 1;
  bool trace = false;
  int trace_max_gpus = 64;
};

struct Outcome {
  std::vector<double> iteration_end;  // job-level end of each iteration
  // steady-state means (over iterations ≥ warmup)
  double forward = 0, backward = 0, update = 0, update_exposed = 0, h2d = 0, comm = 0, exposed = 0;
  double input_wait = 0;             // mean time the slowest GPU waited for its batch
  std::vector<Bucket> last_buckets;  // collectives of the last iteration
  std::vector<ResourceUse> utilisation;
  std::string busiest_link;
  double busiest_link_fraction = 0.0;
  std::uint64_t events = 0;
  double span = 0.0;
  std::string trace_json;
};

Outcome simulate(const Setup& s);

}  // namespace dlscale::sim::detail
