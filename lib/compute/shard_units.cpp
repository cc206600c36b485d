// A sharded step's units as the kernel model sees them: their fp8 weights (eq. S12) and their collectives' and
// FSDP1's cast's times (eqs. S5-S7b, M5c), the one place predict and the simulator take them from
// (include/dlscale/compute.hpp).
#include <algorithm>
#include <span>
#include <vector>

#include "dlscale/cluster.hpp"
#include "dlscale/collective.hpp"
#include "dlscale/compute.hpp"
#include "dlscale/sharding.hpp"

namespace dlscale {

double unit_fp8_elements(const Network& net, const GatherUnit& u) {
  double e = 0.0;
  for (int i = u.first; u.params > 0 && i <= u.last; ++i) e += fp8_weight_elements(net.layers[static_cast<std::size_t>(i)]);
  return e;
}

bool fp8_all_gathers(const Sharding& s, const ComputeOptions& opt) noexcept {
  return s.stage >= 3 && opt.fp8_all_gather && opt.precision == Precision::fp8;
}

void shard_unit_times(std::span<const double> params, std::span<const double> fp8_elements, const Sharding& s,
                      const ComputeOptions& opt, const Cluster& cluster, const ShardGroups& g, const CollectiveModel& coll,
                      std::span<Seconds> reduce, std::span<Seconds> gather) {
  const std::size_t U = params.size();
  const bool fp8 = fp8_all_gathers(s, opt) && fp8_elements.size() == U;
  const double share = g.replicas > 1 ? replica_nic_share(g, cluster) : 1.0;
  thread_local std::vector<Bytes> gathered, reduced, replica;
  thread_local std::vector<Seconds> extra;
  gathered.resize(U);
  reduced.resize(U);
  replica.resize(U);
  Bytes cast_any{};
  thread_local std::vector<Bytes> cast;
  cast.resize(U);
  for (std::size_t i = 0; i < U; ++i) {
    const ShardUnitBytes b = shard_unit_bytes(params[i], fp8 ? fp8_elements[i] : 0.0, s, opt.precision, g.shard, share);
    gathered[i] = b.gather;
    reduced[i] = b.reduce;
    replica[i] = b.replica;
    cast[i] = b.cast;
    cast_any += b.cast;
  }
  std::fill(reduce.begin(), reduce.end(), Seconds{});
  std::fill(gather.begin(), gather.end(), Seconds{});
  if (g.shard > 1) {
    coll.times(CollectiveOp::reducescatter, reduced, g.shard_at, reduce);
    coll.times(CollectiveOp::allgather, gathered, g.shard_at, gather);
  }
  if (g.replicas > 1) {  // eq. S7b: every shard position's replica group at once, each timed alone with its share
    extra.assign(U, Seconds{});
    coll.times(CollectiveOp::allreduce, replica, g.replica_at, extra);
    for (std::size_t i = 0; i < U; ++i) reduce[i] += extra[i];
  }
  if (cast_any > Bytes{}) {  // eq. M5c: a memory-bound kernel on the reduce-scatter's stream
    const KernelParams& kp = opt.kernel(cluster.gpu);
    for (std::size_t i = 0; i < U; ++i)
      if (cast[i] > Bytes{}) reduce[i] += memory_kernel_time(cast[i], cluster.gpu, kp);
  }
  for (std::size_t i = 0; i < U; ++i)  // eq. S4b: the layers after the last block gather and reduce nothing of their own
    if (!(params[i] > 0.0)) reduce[i] = gather[i] = Seconds{};
}

}  // namespace dlscale
