// One training step of a model-parallel layout (eq. P13; docs/model.md, "Model parallelism"): the slowest
// stage's micro-batch with its exposed TP, CP and pipeline communication, the pipeline, the data-parallel
// reduction and the update.
#include <algorithm>

#include "dlscale/cluster.hpp"
#include "dlscale/network.hpp"
#include "dlscale/parallel.hpp"
#include "parallel/parallel_blocks.hpp"

namespace dlscale {

ActivationRecompute activation_recompute(Recompute r) noexcept {
  switch (r) {
    case Recompute::none:
      return ActivationRecompute::none;
    case Recompute::full:
      return ActivationRecompute::full;
    case Recompute::selective:
    case Recompute::op:
      return ActivationRecompute::selective;
  }
  return ActivationRecompute::none;
}

Seconds tp_overlap_exposed(Seconds comm, Seconds gemm, int tp, int sm_count) noexcept {
  if (!(comm > Seconds{})) return Seconds{};
  const double sms = static_cast<double>(sm_count);
  const double slowed = sms > 2.0 * kTpOverlapSms ? kTpOverlapSms / (sms - kTpOverlapSms) : 0.0;
  const Seconds hidden = min(comm, gemm);
  return (comm - hidden) + comm / static_cast<double>(std::max(tp, 1)) + hidden * slowed;
}

namespace {
Seconds sum_calls(const CollectiveModel& coll, const std::vector<CollectiveCall>& calls, const GroupPlacement& g, bool backward,
                  bool overlapped) {
  Seconds t{};
  for (const auto& c : calls)
    if (c.backward == backward && c.overlapped == overlapped) t += group_collective_time(coll, c, g);
  return t;
}

/// One block's TP/SP (P1-P2) and CP (P3) collectives on their groups (P12), and a micro-batch's pipeline
/// sends on each stage (P4).
struct BlockComm {
  Seconds tp_fwd{}, tp_bwd{}, tp_regather{}, cp_fwd{}, cp_bwd{}, p2p{};
};

BlockComm block_comm(const CollectiveModel& coll, const Cluster& cluster, const LayoutPlacement& at, const ParallelLayout& l,
                     const TransformerShape& m, double e) {
  const auto tp_calls = tp_block_collectives(l, m, e);
  const auto cp_calls = cp_block_collectives(l, m, e);
  const GroupPlacement& tpg = at[ParallelGroup::tp];
  const GroupPlacement& cpg = at[ParallelGroup::cp];
  BlockComm c;
  c.tp_fwd = sum_calls(coll, tp_calls, tpg, false, false);
  c.tp_bwd = sum_calls(coll, tp_calls, tpg, true, false);
  c.tp_regather = sum_calls(coll, tp_calls, tpg, true, true);
  c.cp_fwd = sum_calls(coll, cp_calls, cpg, false, true);
  c.cp_bwd = sum_calls(coll, cp_calls, cpg, true, true);
  // P4: 2·v sends a micro-batch on each stage (forward activation, backward gradient, per chunk)
  const int v = l.schedule == PipelineSchedule::interleaved ? std::max(l.vp, 1) : 1;
  if (l.pp > 1) c.p2p = pipeline_p2p_time(cluster, at[ParallelGroup::pp], pp_p2p_bytes(l, m, e)) * (2.0 * v);
  return c;
}

/// One stage's micro-batch on a rank: its layers' forward, backward (with recompute, eq. R1-R3) and update,
/// and the TP and CP communication its blocks do not hide.
struct StageTimes {
  Seconds forward{}, backward{}, update{}, tp{}, cp{};
};

StageTimes stage_times(const LayerTimes& t, const std::vector<int>& block, const std::vector<int>& stage, int s,
                       const ComputeOptions& opt, const BlockComm& comm, const ParallelLayout& l, int sm_count) {
  StageTimes st;
  // per block of the stage: its attention core, its forward GEMMs and its backward
  std::vector<Seconds> block_core, block_gemm, block_bwd;
  int last = -1;
  for (std::size_t i = 0; i < t.forward.size(); ++i) {
    if (stage[i] != s) continue;
    st.forward += t.forward[i];
    st.backward += t.backward[i] + recompute_time(t, i, block[i], opt);
    st.update += t.update[i];
    if (block[i] < 0) continue;
    if (block[i] != last) {
      block_core.emplace_back();
      block_gemm.emplace_back();
      block_bwd.emplace_back();
      last = block[i];
    }
    block_bwd.back() += t.backward[i];
    if (i < t.forward_attention.size()) block_core.back() += t.forward_attention[i];
    if (i < t.forward_gemm.size()) block_gemm.back() += t.forward_gemm[i];
  }
  for (std::size_t k = 0; k < block_core.size(); ++k) {
    // the re-gather overlaps the data-gradient GEMMs, about half the block's backward; the ring the core,
    // whose backward is taken as twice its forward (FlashAttention-2's backward: 2.5 GEMM passes to 1)
    st.tp += max(Seconds{}, comm.tp_regather - block_bwd[k] * 0.5);
    if (l.tp_comm_overlap)  // eq. P14: forward beside the block's GEMMs, backward beside their two gradients
      st.tp += tp_overlap_exposed(comm.tp_fwd, block_gemm[k], l.tp, sm_count) +
          tp_overlap_exposed(comm.tp_bwd, block_gemm[k] * 2.0, l.tp, sm_count);
    else st.tp += comm.tp_fwd + comm.tp_bwd;
    st.cp += max(Seconds{}, comm.cp_fwd - block_core[k]) + max(Seconds{}, comm.cp_bwd - block_core[k] * 2.0);
  }
  return st;
}

/// P5: the gradients of the largest stage (`params` a rank) over the dp·cp group, after the pipeline's last
/// backward.
Seconds dp_reduction(const CollectiveModel& coll, const GroupPlacement& dpg, double params, const Sharding& sh,
                     const ComputeOptions& opt) {
  const double g = reduce_bytes_per_element(sh, opt.precision), w = working_bytes_per_element(opt.precision);
  using G = ParallelGroup;
  if (!sh.sharded())
    return group_collective_time(coll, {"DP all-reduce", G::dp_cp, CollectiveOp::allreduce, bytes(params * g), 1, true, false},
                                 dpg);
  // sharded over the whole dp·cp group: reduce-scatter of the gradients, all-gather of the parameters (after the
  // update at stages 1-2; before forward and backward at stage 3, taken once a step here: round 2 refines it)
  const int gathers = sh.stage >= 3 && sh.reshard_after_forward ? 2 : 1;
  return group_collective_time(
             coll, {"DP reduce-scatter", G::dp_cp, CollectiveOp::reducescatter, bytes(params * g), 1, true, false}, dpg) +
      group_collective_time(coll, {"DP all-gather", G::dp_cp, CollectiveOp::allgather, bytes(params * w), gathers, false, false},
                            dpg);
}
}  // namespace

ParallelStep parallel_step(const Network& net, const LayerTimes& times, const Cluster& cluster, const CollectiveModel& coll,
                           const ParallelLayout& l, int gpus, const ComputeOptions& opt, const Sharding& sh, LayerTimesOf of,
                           Bytes reserved) {
  const std::vector<int> block = transformer_blocks(net);  // once: every query below reads it
  const TransformerShape m = transformer_shape(net, block);
  validate(l, gpus, m);
  const LayoutPlacement at = place_layout(l, cluster, gpus);
  const LayerTimes t = shard_layer_times(times, net, l, of);
  const std::vector<int> stage = layer_stages(block, l);
  const BlockComm comm = block_comm(coll, cluster, at, l, m, activation_bytes_per_element(opt.precision));

  ParallelStep r;
  r.memory.reserve(static_cast<std::size_t>(l.pp));
  const int dp_cp = l.dp(gpus) * l.cp;
  const ActivationRecompute ar = activation_recompute(opt.recompute);
  std::int64_t most_params = 0;
  Seconds most_update{};
  for (int s = 0; s < l.pp; ++s) {
    const StageTimes st = stage_times(t, block, stage, s, opt, comm, l, cluster.gpu.sm_count);
    const Seconds mb = st.forward + st.backward + st.tp + st.cp + comm.p2p;
    if (s == 0 || mb > r.per_microbatch) {
      r.slowest_stage = s;
      r.per_microbatch = mb;
      r.forward = st.forward;
      r.backward = st.backward;
      r.tp_exposed = st.tp;
      r.cp_exposed = st.cp;
      r.p2p = comm.p2p;
    }
    most_update = max(most_update, st.update);
    most_params = std::max(most_params, rank_params(net, stage, l, s));
    r.memory.push_back(rank_memory(net, block, m, stage, l, s, opt, sh, dp_cp, ar, reserved));
  }
  r.pipeline = pipeline_time(l.schedule, l.pp, l.micro_batches, l.vp, r.per_microbatch);
  r.bubble = r.pipeline - r.per_microbatch * static_cast<double>(l.micro_batches);
  r.dp_comm = dp_reduction(coll, at[ParallelGroup::dp_cp], static_cast<double>(most_params), sh, opt);
  r.update = sh.sharded() ? most_update / static_cast<double>(std::max(dp_cp, 1)) : most_update;
  r.step = r.pipeline + r.dp_comm + r.update;
  r.global_batch = l.global_batch(gpus);
  r.tokens_per_s = static_cast<double>(r.global_batch) * static_cast<double>(m.seq) / in_seconds(r.step);
  return r;
}

}  // namespace dlscale
