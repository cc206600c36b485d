// Sharded data parallelism: groups, gather units, traffic per step and the all-gather/reduce-scatter
// timeline (include/dlscale/sharding.hpp; docs/model.md, "Sharded data parallelism").
#include "dlscale/sharding.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "dlscale/cluster.hpp"
#include "dlscale/equations.hpp"
#include "dlscale/error.hpp"
#include "dlscale/network.hpp"
#include "dlscale/topology.hpp"

namespace dlscale {

double working_bytes_per_element(Precision p) noexcept { return is_mixed(p) ? 2.0 : 4.0; }
double reduce_bytes_per_element(const Sharding& s, Precision p) noexcept {
  return s.reduce_fp32 && is_mixed(p) ? 4.0 : gradient_bytes_per_element(p);  // reduce_dtype fp32
}

double gradient_shard_bytes_per_element(const Sharding& s, Precision p) noexcept {
  if (!s.sharded()) return gradient_bytes_per_element(p);
  return s.held_in_fp32() && is_mixed(p) ? 4.0 : reduce_bytes_per_element(s, p);  // eq. K27 (M5: fp32 shards)
}

Bytes offload_gradient_bytes(double params, const Sharding& s, Precision p, int shard) noexcept {
  // eq. S9a: the gradient shard as the reduce leaves it (eq. K27), not the working width
  return bytes(params * gradient_shard_bytes_per_element(s, p) / std::max(shard, 1));
}

Bytes offload_param_bytes(std::int64_t params, Precision p, int shard) noexcept {
  return bytes(static_cast<double>(params) * working_bytes_per_element(p) / std::max(shard, 1));  // eq. S9c
}

Seconds cpu_adam_time(std::int64_t params, int shard, int gpus_per_node, double params_per_s) noexcept {
  // eq. S9b: the node's CPU steps the shard of each of its GPUs (replicas of a shard each step their own)
  if (!(params_per_s > 0.0)) return Seconds{};
  return seconds(static_cast<double>(gpus_per_node) * static_cast<double>(params) / std::max(shard, 1) / params_per_s);
}

Bytes offload_host_bytes_per_node(std::int64_t params, const Sharding& s, Precision p, int optimizer_words, int shard,
                                  int gpus_per_node) noexcept {
  // eq. S9d: fp32 master + optimiser words + the gradient shard received (eq. K27's width), for each GPU of the node
  const double per_param = 4.0 + 4.0 * optimizer_words + gradient_shard_bytes_per_element(s, p);
  return bytes(static_cast<double>(gpus_per_node) * static_cast<double>(params) / std::max(shard, 1) * per_param);
}

ShardGroups shard_groups(const Sharding& s, const GpuPlacement& at) {
  ShardGroups g;
  const int G = at.gpus, gpn = at.gpus_per_node;
  int n = !s.sharded() ? 1 : s.group == Sharding::kGroupAll ? G : s.group == Sharding::kGroupNode ? gpn : s.group;
  if (G == 1) n = 1;
  if (n > G || G % n != 0)
    throw InputError(SourceLocation{}, "strategy.sharding.group",
                     fmt::format("the framework shards over groups of {} GPUs; {} GPUs do not divide into them", n, G));
  g.shard = n;
  g.replicas = G / n;
  if (n <= gpn) {
    if (gpn % n != 0)
      throw InputError(SourceLocation{}, "strategy.sharding.group",
                       fmt::format("a shard group of {} GPUs does not divide a node of {} GPUs", n, gpn));
    g.shard_at = GpuPlacement{n, 1, n};
    g.replica_at = GpuPlacement{g.replicas, at.nodes, g.replicas / at.nodes};
  } else {
    if (n % gpn != 0)
      throw InputError(SourceLocation{}, "strategy.sharding.group",
                       fmt::format("a shard group of {} GPUs is not a whole number of nodes of {} GPUs", n, gpn));
    g.shard_at = GpuPlacement{n, n / gpn, gpn};
    g.replica_at = GpuPlacement{g.replicas, g.replicas, 1};
  }
  return g;
}

double replica_nic_share(const ShardGroups& g, const Cluster& c) noexcept {
  if (g.replicas <= 1 || g.replica_at.nodes <= 1) return 1.0;
  int nics = 1;  // the simple form: one NIC per node (Cluster::inter_node)
  if (c.topology && c.topology->fabric().nics_per_node > 0) nics = c.topology->fabric().nics_per_node;
  const int ranks = std::max(1, g.replica_at.gpus_per_node);                // the replica group's ranks on a node
  return eq::nic_share(std::max(1, c.gpus_per_node / ranks), ranks, nics);  // eq. S7b (P11)
}

std::vector<GatherUnit> gather_units(const Network& net, std::int64_t unit_params) {
  std::vector<GatherUnit> units;
  GatherUnit open;
  bool any = false;
  for (std::size_t i = 0; i < net.layers.size(); ++i) {
    if (!any) open = GatherUnit{static_cast<int>(i), static_cast<int>(i), 0};
    open.last = static_cast<int>(i);
    open.params += net.layers[i].params;
    any = true;
    if (open.params >= unit_params) {
      units.push_back(open);
      any = false;
    }
  }
  if (any) units.push_back(open);
  return units;
}

std::vector<GatherUnit> gather_units(const Network& net, const Sharding& s) {
  if (s.wrap == Sharding::Wrap::size) return gather_units(net, s.unit_params);
  return gather_units(net, s, transformer_blocks(net));
}

std::vector<GatherUnit> gather_units(const Network& net, const Sharding& s, std::span<const int> block) {
  if (s.wrap == Sharding::Wrap::size) return gather_units(net, s.unit_params);
  const auto L = static_cast<int>(net.layers.size());
  int first_block = -1, last_block = -1;
  std::int64_t outside = 0;
  for (int i = 0; i < L; ++i) {
    if (block[static_cast<std::size_t>(i)] < 0) {
      outside += net.layers[static_cast<std::size_t>(i)].params;
      continue;
    }
    if (first_block < 0) first_block = i;
    last_block = i;
  }
  // no blocks, or parameters outside them but no layer before the first for the root to be computed with: eq. S4
  if (first_block < 0 || (first_block == 0 && outside > 0)) return gather_units(net, s.unit_params);
  std::vector<GatherUnit> units;
  if (first_block > 0) units.push_back(GatherUnit{0, first_block - 1, outside, true});  // eq. S4b: the root
  int open_block = -1;
  for (int i = first_block; i <= last_block; ++i) {
    const std::size_t k = static_cast<std::size_t>(i);
    if (block[k] >= 0 && block[k] != open_block) {
      units.push_back(GatherUnit{i, i, 0, false});
      open_block = block[k];
    }
    units.back().last = i;
    // a layer outside the blocks between two blocks is the root's: computed in the unit before it, gathered with the root
    if (block[k] >= 0) units.back().params += net.layers[k].params;
  }
  if (last_block + 1 < L) units.push_back(GatherUnit{last_block + 1, L - 1, 0, false});
  return units;
}

UnitOps unit_ops(std::span<const GatherUnit> units, const Sharding& s) noexcept {
  UnitOps o;
  if (s.stage < 3) return o;
  for (const GatherUnit& u : units) {
    if (u.params <= 0) continue;
    o.forward += s.gather_ops;
    o.backward += s.reduce_ops + (s.reshard_after_forward && !u.held ? s.gather_ops : 0.0);
  }
  return o;
}

Bytes gathered_param_bytes(double params, double fp8_elements, Precision p) noexcept {
  return bytes((params - fp8_elements) * working_bytes_per_element(p) + fp8_elements * 1.0);  // eq. S12
}

StepTraffic step_traffic(std::span<const GatherUnit> units, const Sharding& s, Precision p, const GpuPlacement& at,
                         double fp8_elements) {
  StepTraffic t;
  double P = 0.0, resharded = 0.0;  // every unit's parameters; those gathered again for the backward (eq. S4b)
  for (const GatherUnit& u : units) {
    P += static_cast<double>(u.params);
    if (!u.held) resharded += static_cast<double>(u.params);
  }
  const double w = working_bytes_per_element(p);
  const double g = reduce_bytes_per_element(s, p);
  const double G = at.gpus;
  if (!s.sharded()) {
    t.allreduce = bytes(P * g * 2.0 * (G - 1.0) / G);  // eq. S2a
    return t;
  }
  const ShardGroups sg = shard_groups(s, at);
  const double n = sg.shard, R = sg.replicas;
  const double part = (n - 1.0) / n;
  t.reducescatter = bytes(P * g * part);  // eq. S2b
  if (s.stage < 3) {
    t.allgather_update = bytes(P * w * part);
  } else {
    t.allgather_forward = gathered_param_bytes(P, fp8_elements, p) * part;  // eq. S2 with S12
    if (s.reshard_after_forward)                                            // a block wrap's root held (S4b)
      t.allgather_backward = gathered_param_bytes(resharded, fp8_elements, p) * part;
  }
  t.allreduce_replicas = bytes(P * g / n * 2.0 * (R - 1.0) / R);  // eq. S2c
  return t;
}

StepTraffic step_traffic(const Network& net, const Sharding& s, Precision p, const GpuPlacement& at, double fp8_elements) {
  if (s.stage < 3) return step_traffic(net.total_params(), s, p, at, fp8_elements);
  const std::vector<GatherUnit> units = gather_units(net, s);
  return step_traffic(units, s, p, at, fp8_elements);
}

StepTraffic step_traffic(std::int64_t params, const Sharding& s, Precision p, const GpuPlacement& at, double fp8_elements) {
  if (s.stage >= 3 && s.wrap == Sharding::Wrap::block)
    throw std::invalid_argument("step_traffic: a block wrap holds its root (eq. S4b); give the network's units");
  const GatherUnit all{0, 0, params, false};
  return step_traffic(std::span<const GatherUnit>(&all, 1), s, p, at, fp8_elements);
}

namespace {
/// Eq. M5's cast happens: FSDP1's flat fp32 shards in mixed precision over a shard group of two or more.
bool fsdp1_casts(const Sharding& s, Precision p, int shard) noexcept {
  return s.stage >= 3 && s.fp32_shards && !s.per_parameter && is_mixed(p) && shard >= 2;
}
}  // namespace

Bytes shard_cast_bytes(double unit_params, const Sharding& s, Precision p, int shard) noexcept {
  if (!fsdp1_casts(s, p, shard)) return Bytes{};
  const double elements = s.reduce_fp32 ? unit_params : unit_params / shard;
  return bytes(elements * (gradient_bytes_per_element(p) + 4.0));  // eq. M5c: read half, write fp32
}

Bytes shard_cast_transient_bytes(double unit_params, const Sharding& s, Precision p, int shard) noexcept {
  if (!fsdp1_casts(s, p, shard)) return Bytes{};
  // eq. M5b: the fp32 copy of the unit's gradient beside its half original, or the half shard beside its fp32 copy
  return bytes(s.reduce_fp32 ? unit_params * 4.0 : unit_params * gradient_bytes_per_element(p) / shard);
}

ShardUnitBytes shard_unit_bytes(double params, double fp8_elements, const Sharding& s, Precision p, int shard,
                                double nic_share) noexcept {
  ShardUnitBytes b;
  if (!(params > 0.0)) return b;                              // eq. S4b: a unit that gathers and reduces nothing of its own
  b.gather = gathered_param_bytes(params, fp8_elements, p);   // eq. S5 with S12
  b.reduce = bytes(params * reduce_bytes_per_element(s, p));  // eq. S7: reduce_dtype fp32 puts 4 B a gradient on the wire
  b.replica = b.reduce / static_cast<double>(std::max(shard, 1)) * nic_share;  // eq. S7b
  b.cast = shard_cast_bytes(params, s, p, shard);                              // eq. M5c
  return b;
}

ShardedTimeline sharded_timeline_exact(std::span<const Seconds> forward, std::span<const Seconds> backward,
                                       std::span<const Seconds> gather_forward, std::span<const Seconds> gather_backward,
                                       std::span<const Seconds> reduce, int in_flight, std::span<const Seconds> copy) {
  // Uses k = 0 … U−1 are the forward passes of units 0 … U−1, k = U … 2U−1 the backward passes of units
  // U−1 … 0. Eq. S5: gather(k) starts at max(end of gather(k−1), C(k − d)); eq. S6: C(k) = max(C(k−1),
  // end of gather(k)) + compute(k); C(j < 0) = 0, the origin after the host-to-GPU copy.
  const std::size_t U = forward.size();
  const int d = std::max(in_flight, 1);
  thread_local std::vector<Seconds> C;
  C.assign(2 * U, Seconds{});
  auto c_at = [&](std::ptrdiff_t j) { return j < 0 ? Seconds{} : C[static_cast<std::size_t>(j)]; };
  Seconds gather_end{};
  for (std::size_t k = 0; k < 2 * U; ++k) {
    const bool fwd = k < U;
    const std::size_t u = fwd ? k : 2 * U - 1 - k;
    const Seconds work = fwd ? forward[u] : backward[u];
    Seconds start = c_at(static_cast<std::ptrdiff_t>(k) - 1);
    const std::span<const Seconds> gathers = fwd ? gather_forward : gather_backward;
    if (!gathers.empty()) {
      const Seconds gs = max(gather_end, c_at(static_cast<std::ptrdiff_t>(k) - d));
      gather_end = gs + gathers[u];
      start = max(start, gather_end);
    }
    C[k] = start + work;
  }
  ShardedTimeline t;
  t.compute_end = U == 0 ? Seconds{} : C[2 * U - 1];
  // Eq. S7: the reduce-scatters in the order the backward passes end (unit U−1 first).
  if (!reduce.empty()) {
    // Eq. S9a (offload): each unit's gradient shard copied to the host once its reduce-scatter has ended.
    Seconds done{}, copied{};
    for (std::size_t u = U; u-- > 0;) {
      done = max(done, C[2 * U - 1 - u]) + reduce[u];
      if (!copy.empty()) copied = max(copied, done) + copy[u];
    }
    t.reduce_end = copy.empty() ? done : copied;
  }
  return t;
}

}  // namespace dlscale
