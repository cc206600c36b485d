// One training step of a model-parallel layout (eq. P13; docs/model.md, "Model parallelism"): the slowest
// stage's micro-batch with its exposed TP, CP (eq. P15: the ring step by step, its merges) and pipeline
// communication, the pipeline, the data-parallel reduction and the update.
#include <algorithm>
#include <array>
#include <vector>

#include "compute/executed_params.hpp"
#include "dlscale/cluster.hpp"
#include "dlscale/equations.hpp"
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

Seconds dp_overlap_exposed(Seconds comm, Seconds window, double last_share) noexcept {
  if (!(comm > Seconds{})) return Seconds{};
  return max(comm * std::clamp(last_share, 0.0, 1.0), comm - window);
}

Seconds dp_overlap_exposed(Seconds comm, Seconds chunk_window, double last_share, int chunks, int stages) noexcept {
  const double v = static_cast<double>(std::max(chunks, 1));
  const Seconds per_chunk = comm / v;
  // eq. P21: the chunks' collectives queue on one stream, chunk j's window ending j·p chunk passes before chunk 0's
  const Seconds behind = max(Seconds{}, per_chunk - chunk_window * static_cast<double>(std::max(stages, 1)));
  return dp_overlap_exposed(per_chunk, chunk_window, last_share) + behind * (v - 1.0);
}

Seconds pp_overlap_exposed_sends(Seconds send, Seconds forward_chunk, Seconds backward_chunk, int m, int v) noexcept {
  if (!(send > Seconds{})) return Seconds{};
  // eq. P25: N = m·v chunks each way; the sends hide behind N − 1 forward and N backward chunks, the last one behind none
  const double n = static_cast<double>(std::max(m, 1)) * static_cast<double>(std::max(v, 1));
  return max(Seconds{}, send - forward_chunk) * (n - 1.0) + max(Seconds{}, send - backward_chunk) * n + send;
}

Seconds pipeline_time_overlapped(int p, int m, int v, Seconds compute, Seconds exposed, Seconds send) noexcept {
  // eq. P25: the bubble's (p−1)/v of the compute and the fill's and the drain's p−1 sends each, whole
  const double fill = static_cast<double>(std::max(p, 1) - 1);
  return compute * (static_cast<double>(std::max(m, 1)) + fill / static_cast<double>(std::max(v, 1))) + exposed +
      send * (2.0 * fill);
}

namespace {
Seconds sum_calls(const CollectiveModel& coll, const std::vector<CollectiveCall>& calls, const GroupPlacement& g, bool backward,
                  bool overlapped) {
  Seconds t{};
  for (const auto& c : calls)
    if (c.backward == backward && c.overlapped == overlapped) t += group_collective_time(coll, c, g);
  return t;
}

/// Eq. P28: one call of the column-parallel input gradients' collective among `calls` (all of one size), and how many.
struct InputGrads {
  Seconds one{};
  int count = 0;
};
InputGrads input_grads(const CollectiveModel& coll, const std::vector<CollectiveCall>& calls, const GroupPlacement& g) {
  InputGrads r;
  for (CollectiveCall c : calls)
    if (c.input_grad) {
      r.count += c.count;
      c.count = 1;
      r.one = group_collective_time(coll, c, g);
    }
  return r;
}

/// A memory-bound pass of `traffic` in `kernels` (at least one) kernels on the GPU, as the kernel model times one
/// (eq. K5 with the framework's K18-K20 parameters).
Seconds memory_passes(Bytes traffic, int kernels, const GpuSpec& gpu, const ComputeOptions& opt) {
  const KernelParams kp = executed_params(opt.kernel(gpu), opt.execution);
  return memory_kernel_time(traffic, gpu, kp) + kp.kernel_overhead * static_cast<double>(kernels - 1);
}

/// One block's TP/SP (P1-P2) collectives on their group (P12), its CP ring's sends and merges (P15), and a
/// micro-batch's pipeline sends on each stage (P4).
struct BlockComm {
  Seconds tp_fwd{}, tp_bwd{}, tp_regather{}, p2p{};
  Seconds tp_recompute{};                  // eq. P30: the forward's again, where full recompute reruns the block
  Seconds checkpoint_gather{};             // eq. P35: a checkpoint's distributed input gathered before its recompute
  InputGrads tp_input_grad;                // eq. P28: the column-parallel inputs' gradients, part of tp_bwd
  Seconds send{};                          // eq. P4: one of the pipeline's sends (p2p is 2·v of them)
  Seconds first_stage{}, last_stage{};     // eq. P27: the embedding's and the cross entropy's TP collectives
  Seconds first_stage_fwd{};               // of first_stage, the forward's (eq. P32 splits the passes)
  Seconds head_bwd{}, head_regather{};     // eq. P27b: the output layer's backward collectives (in neither above)
  InputGrads head_input_grad;              // eq. P28: its input gradient's, part of head_bwd
  Seconds cp_kv{}, cp_kv_dkv{};            // eq. P15d: a ring step sending the K/V block, and the K/V with a dK/dV
  Seconds cp_merge_fwd{}, cp_merge_bwd{};  // eq. P15c: the slowest rank's merges
  CpCollectiveTimes cp_exchange{};         // eq. P29b: all_gather's or a2a's collectives, not overlapped
  Seconds ep_alltoall{};                   // eq. P18: one all-to-all of a MoE block (dispatch or combine)
};

Seconds sum_all(const CollectiveModel& coll, const std::vector<CollectiveCall>& calls, const GroupPlacement& g) {
  Seconds t{};
  for (const auto& c : calls) t += group_collective_time(coll, c, g);
  return t;
}

BlockComm block_comm(const CollectiveModel& coll, const Cluster& cluster, const LayoutPlacement& at, const ParallelLayout& l,
                     const TransformerShape& m, const ComputeOptions& opt, bool embedding) {
  const double e = activation_bytes_per_element(opt.precision);
  const auto tp_calls = tp_block_collectives(l, m, e);
  const GroupPlacement& tpg = at[ParallelGroup::tp];
  BlockComm c;
  // eq. P27: exposed whole, forward and backward, on the stage that holds the layer; the output layer's backward as a
  // block's column-parallel linear's (P27b)
  const auto first = tp_edge_collectives(l, m, e, embedding, false);
  c.first_stage = sum_all(coll, first, tpg);
  c.first_stage_fwd = sum_calls(coll, first, tpg, false, false) + sum_calls(coll, first, tpg, false, true);
  const auto head = tp_edge_collectives(l, m, e, false, m.vocab > 0);
  c.last_stage = sum_calls(coll, head, tpg, false, false);
  c.head_bwd = sum_calls(coll, head, tpg, true, false);
  c.head_regather = sum_calls(coll, head, tpg, true, true);
  c.head_input_grad = input_grads(coll, head, tpg);
  c.tp_fwd = sum_calls(coll, tp_calls, tpg, false, false);
  c.tp_bwd = sum_calls(coll, tp_calls, tpg, true, false);
  c.tp_regather = sum_calls(coll, tp_calls, tpg, true, true);
  c.tp_input_grad = input_grads(coll, tp_calls, tpg);
  c.tp_recompute = sum_all(coll, tp_recompute_collectives(l, m, e, opt.recompute_early_stop), tpg);
  c.checkpoint_gather = sum_all(coll, checkpoint_input_collectives(l, m, e), tpg);
  // eq. P36: a2a+p2p's all-to-alls on the inner groups' placement, its ring on the outer groups'
  const bool hierarchical = l.cp_comm == CpComm::a2a_p2p;
  if (l.cp > 1 && l.cp_comm != CpComm::p2p)
    c.cp_exchange = cp_collective_times(coll, cluster, hierarchical ? at.cp_inner : at[ParallelGroup::cp], l, m, e);
  if (l.cp > 1 && (l.cp_comm == CpComm::p2p || hierarchical)) {
    const GroupPlacement& ring = hierarchical ? at.cp_outer : at[ParallelGroup::cp];
    const Bytes kv = cp_kv_chunk_bytes(l, m, e);
    c.cp_kv = cp_ring_step_time(cluster, ring, kv);
    c.cp_kv_dkv = cp_ring_step_time(cluster, ring, kv * 2.0);
    const CpMergeTraffic merge = cp_merge_traffic(l, m, e);
    c.cp_merge_fwd = memory_passes(merge.forward, merge.forward_kernels, cluster.gpu, opt);
    c.cp_merge_bwd = memory_passes(merge.backward, merge.backward_kernels, cluster.gpu, opt);
  }
  if (l.ep > 1) c.ep_alltoall = alltoall_time(cluster, at[ParallelGroup::ep], moe_alltoall_bytes(l, m, e));
  // P4: 2·v sends a micro-batch on each stage (forward activation, backward gradient, per chunk)
  const int v = l.schedule == PipelineSchedule::interleaved ? std::max(l.vp, 1) : 1;
  if (l.pp > 1) {
    c.send = pipeline_p2p_time(cluster, at[ParallelGroup::pp], pp_p2p_bytes(l, m, e));
    c.p2p = c.send * (2.0 * v);
  }
  return c;
}

/// One stage's micro-batch on a rank: its layers' forward, backward (with recompute, eq. R1-R3) and update,
/// and the TP and CP communication its blocks do not hide.
struct StageTimes {
  Seconds forward{}, backward{}, update{}, tp{}, cp{}, ep{};
  Seconds comm_fwd{};  // of tp + cp + ep, what the forward pass runs (eq. P32)
};

/// What one block of a stage runs, for the communication beside it: its attention core forward and backward, its
/// forward GEMMs, its backward, and whether the recompute runs its core again (R1 on a checkpointed block, R2).
struct BlockParts {
  Seconds core{}, core_bwd{}, gemm{}, bwd{};
  /// Eq. P28: its first two linear layers' input weight gradients, in order (q/k/v, then up and gate), `linears` of them.
  std::array<Seconds, 2> wgrads{};
  int linears = 0;
  bool core_again = false;
  bool moe = false;           // its MLP is a mixture of experts (eq. P16)
  bool checkpointed = false;  // full recompute runs the whole block again
  bool keeps_input = false;   // full recompute: the block starts a checkpoint (eq. P31), whose input it keeps
};

/// Eq. P15: a block's CP ring on one rank: the sends past each step's attention forward and backward (again in
/// backward where the recompute runs the core again) into `st.cp`, the merges into its forward and backward. Eq. P29b:
/// all_gather's and a2a's collectives whole, the forward's again where the core runs again, no merges (each rank's
/// attention is whole: its queries against the gathered keys, or the whole sequence for its heads).
void cp_block(StageTimes& st, const BlockParts& b, const BlockComm& comm, const ParallelLayout& l) {
  if (l.cp <= 1) return;
  if (l.cp_comm != CpComm::p2p) {
    st.cp += comm.cp_exchange.forward * (b.core_again ? 2.0 : 1.0) + comm.cp_exchange.backward;
    st.comm_fwd += comm.cp_exchange.forward;  // eq. P32: the forward pass runs the forward's exchange
    if (l.cp_comm != CpComm::a2a_p2p) return;
  }
  const int c = cp_ring_ranks(l);  // eq. P36: a2a+p2p's ring runs over the cp/a groups
  if (c <= 1) return;
  // the rank's core is its c steps' (eq. P6), equal work each (eq. P15a); measured layers without a split core:
  // its backward twice its forward (FlashAttention-2's backward: 2.5 GEMM passes to 1)
  const Seconds step = b.core / static_cast<double>(c);
  const Seconds step_bwd = b.core_bwd > Seconds{} ? b.core_bwd / static_cast<double>(c) : step * 2.0;
  const Seconds fwd = eq::ring_forward_exposed(comm.cp_kv, step, c);
  const double again = b.core_again ? 1.0 : 0.0;
  st.cp += fwd * (1.0 + again) + eq::ring_backward_exposed(comm.cp_kv, comm.cp_kv_dkv, step_bwd, c);
  st.comm_fwd += fwd;
  st.forward += comm.cp_merge_fwd;
  st.backward += comm.cp_merge_bwd + comm.cp_merge_fwd * again;
}

/// Eq. P28: backward collectives `bwd` of which `grads` are column-parallel input gradients; under the asynchronous
/// backward the j-th of them runs beside the j-th linear's weight gradient of `b` (none there: exposed whole), the rest
/// whole.
Seconds backward_exposed(Seconds bwd, const InputGrads& grads, const BlockParts& b, bool async) {
  if (!async || grads.count <= 0) return bwd;
  Seconds t = bwd - grads.one * static_cast<double>(grads.count);
  for (int j = 0; j < grads.count; ++j)
    t += eq::async_input_grad_exposed(grads.one, j < b.linears ? b.wgrads[static_cast<std::size_t>(j)] : Seconds{});
  return t;
}

/// Whether full recompute runs block `block` again (eq. P31's choice; false under another mode).
bool rerun(const ComputeOptions& opt, const std::vector<BlockRecompute>& full, int block) noexcept {
  return opt.recompute == Recompute::full && block >= 0 && static_cast<std::size_t>(block) < full.size() &&
      full[static_cast<std::size_t>(block)].again;
}

/// Eq. P18: a MoE block's all-to-alls, dispatch and combine forward and both again backward (and the forward's
/// again where full recompute reruns the block), not overlapped with compute.
Seconds ep_block(const BlockParts& b, const BlockComm& comm) {
  if (!b.moe) return Seconds{};
  return comm.ep_alltoall * (b.checkpointed ? 6.0 : 4.0);
}

StageTimes stage_times(const Network& net, const LayerTimes& t, const std::vector<int>& block, const std::vector<int>& stage,
                       int s, const ComputeOptions& opt, const BlockComm& comm, const ParallelLayout& l, int sm_count,
                       const std::vector<BlockRecompute>& full) {
  StageTimes st;
  ComputeOptions every = opt;  // eq. R1 on a block eq. P31 reruns
  every.recompute_blocks = 1.0;
  std::vector<BlockParts> parts;  // per block of the stage
  BlockParts head;                // eq. P27b: the output layer (a linear map outside the blocks)
  int last = -1;
  for (std::size_t i = 0; i < t.forward.size(); ++i) {
    if (stage[i] != s) continue;
    st.forward += t.forward[i];
    const bool again = rerun(opt, full, block[i]), end = block_ends(block, i);
    st.backward += t.backward[i] +
        (opt.recompute != Recompute::full ? recompute_time(t, i, block[i], opt, end)
             : again                      ? recompute_time(t, i, block[i], every, end)
                                          : Seconds{});
    st.update += t.update[i];
    const Seconds wgrad = i < t.input_wgrad.size() ? t.input_wgrad[i] : Seconds{};
    if (block[i] < 0) {
      if (i < net.layers.size() && net.layers[i].kind == LayerKind::linear)
        head = {.bwd = t.backward[i], .wgrads = {wgrad}, .linears = 1};
      continue;
    }
    if (block[i] != last) {
      parts.push_back({.core_again = opt.recompute == Recompute::selective || again,
                       .checkpointed = again,
                       .keeps_input = again && full[static_cast<std::size_t>(block[i])].keeps_input});
      last = block[i];
    }
    BlockParts& b = parts.back();
    if (i < net.layers.size() && net.layers[i].experts > 0) b.moe = true;
    b.bwd += t.backward[i];
    if (i < t.forward_attention.size()) b.core += t.forward_attention[i];
    if (i < t.backward_attention.size()) b.core_bwd += t.backward_attention[i];
    if (i < t.forward_gemm.size()) b.gemm += t.forward_gemm[i];
    if (wgrad > Seconds{} && b.linears < 2 && i < net.layers.size() &&
        (net.layers[i].kind == LayerKind::attention || net.layers[i].kind == LayerKind::linear))
      b.wgrads[static_cast<std::size_t>(b.linears++)] = wgrad;
  }
  if (s == 0) {
    st.tp += comm.first_stage;
    st.comm_fwd += comm.first_stage_fwd;
  }
  if (s == l.pp - 1) st.comm_fwd += comm.last_stage;
  if (s == l.pp - 1)  // eq. P27b: the output layer's re-gather beside its data gradient, about half its backward
    st.tp += comm.last_stage + max(Seconds{}, comm.head_regather - head.bwd * 0.5) +
        backward_exposed(comm.head_bwd, comm.head_input_grad, head, l.tp_async_backward);
  for (const BlockParts& b : parts) {
    // the re-gather overlaps the data-gradient GEMMs, about half the block's backward
    st.tp += max(Seconds{}, comm.tp_regather - b.bwd * 0.5);
    const Seconds tp_fwd = l.tp_comm_overlap ? tp_overlap_exposed(comm.tp_fwd, b.gemm, l.tp, sm_count) : comm.tp_fwd;
    // eq. P30: a block that full recompute reruns runs its forward's collectives again, exposed as the forward's are
    const Seconds tp_again = !b.checkpointed ? Seconds{}
        : l.tp_comm_overlap                  ? tp_overlap_exposed(comm.tp_recompute, b.gemm, l.tp, sm_count)
                                             : comm.tp_recompute;
    if (l.tp_comm_overlap)  // eq. P14: forward beside the block's GEMMs, backward beside their two gradients
      st.tp += tp_fwd + tp_overlap_exposed(comm.tp_bwd, b.gemm * 2.0, l.tp, sm_count) + tp_again;
    else  // eq. P28: the column-parallel inputs' gradients beside their weight gradients, asynchronously
      st.tp += tp_fwd + backward_exposed(comm.tp_bwd, comm.tp_input_grad, b, l.tp_async_backward) + tp_again;
    st.comm_fwd += tp_fwd;                               // eq. P32: the forward pass runs the forward's collectives
    if (b.keeps_input) st.tp += comm.checkpoint_gather;  // eq. P35: before the checkpoint's recompute, exposed
    cp_block(st, b, comm, l);
    st.ep += ep_block(b, comm);
    if (b.moe) st.comm_fwd += comm.ep_alltoall * 2.0;  // dispatch and combine
  }
  return st;
}

/// P5's two parts: the gradients' reduction (an all-reduce, or the reduce-scatter when sharded) and the parameters'
/// all-gather (sharded only; at stage 3 one gather of the rank's parameters, eq. P20 counts how many a step runs).
struct DpComm {
  Seconds reduce, gather;
};

/// The shard groups of a group that is sharded whole (P17's expert-data-parallel group): one, R = 1.
LayoutShards whole_group(const GroupPlacement& g) { return {g.size, 1, g, GroupPlacement{}}; }

/// P5: the gradients of the largest stage (`params` a rank) over the dp·cp group (`dpg`), after the pipeline's last
/// backward; P17: the experts' over their expert-data-parallel group in the same way. Sharded, eq. P40: over the
/// shard groups (`sg`; the whole group but for a hybrid strategy) and the shard all-reduced across the replicas.
DpComm dp_reduction(const CollectiveModel& coll, const GroupPlacement& dpg, const LayoutShards& sg, double params,
                    const Sharding& sh, const ComputeOptions& opt) {
  if (!(params > 0.0)) return {};
  const double g = reduce_bytes_per_element(sh, opt.precision), w = working_bytes_per_element(opt.precision);
  using G = ParallelGroup;
  if (!sh.sharded())
    return {
        group_collective_time(coll, {"DP all-reduce", G::dp_cp, CollectiveOp::allreduce, bytes(params * g), 1, true, false}, dpg),
        Seconds{}};
  // sharded over the shard group: reduce-scatter of the gradients, all-gather of the parameters (after the update at
  // stages 1-2; at stage 3 before the passes that need them, eq. P20); hybrid (eq. P40, S7): each rank's reduced shard
  // all-reduced across its replica group on the same stream, right after the reduce-scatter, every replica group at
  // once on the links its ranks sit on (P11-P12: the replica groups of a node share its NICs, as S7b)
  DpComm d{
      group_collective_time(coll, {"DP reduce-scatter", G::dp_cp, CollectiveOp::reducescatter, bytes(params * g), 1, true, false},
                            sg.shard_at),
      group_collective_time(coll, {"DP all-gather", G::dp_cp, CollectiveOp::allgather, bytes(params * w), 1, false, false},
                            sg.shard_at)};
  if (sg.replicas > 1)
    d.reduce += group_collective_time(
        coll, {"DP replica all-reduce", G::dp_cp, CollectiveOp::allreduce, bytes(params * g / sg.shard), 1, true, false},
        sg.replica_at);
  return d;
}

/// Eq. P37: a stage's own DP collectives (P5 over its parameters, P17's experts' beside them), stages of one size
/// timed once (the last size's kept).
class StageDp {
 public:
  DpComm operator()(const CollectiveModel& coll, const LayoutPlacement& at, const LayoutShards& sg, std::int64_t params,
                    std::int64_t experts, const Sharding& sh, const ComputeOptions& opt) {
    if (params == params_ && experts == experts_) return comm_;
    params_ = params;
    experts_ = experts;
    const GroupPlacement& edp = at[ParallelGroup::edp];
    const DpComm d = dp_reduction(coll, at[ParallelGroup::dp_cp], sg, static_cast<double>(params - experts), sh, opt),
                 e = dp_reduction(coll, edp, whole_group(edp), static_cast<double>(experts), sh, opt);
    comm_ = {d.reduce + e.reduce, d.gather + e.gather};
    return comm_;
  }

 private:
  std::int64_t params_ = -1, experts_ = -1;
  DpComm comm_{};
};

/// The chunks a rank runs (v interleaved, else 1) and the share of one chunk's collective that is its first block's
/// (1/blocks of the chunk): what eq. P19-P21 leave after the window.
struct Chunks {
  int v = 1;
  double first_block = 1.0;
};
Chunks rank_chunks(const ParallelLayout& l, std::int64_t blocks) {
  const int v = l.schedule == PipelineSchedule::interleaved ? std::max(l.vp, 1) : 1;
  const double per_chunk = static_cast<double>(blocks) / static_cast<double>(std::max(l.pp, 1) * v);
  return {v, 1.0 / std::max(1.0, per_chunk)};
}

/// Eq. P20: the all-gathers a stage-3 (FSDP) rank runs a step, forward and backward passes of one chunk each. Without
/// a pipeline every micro-batch gathers before its forward and, resharded after it, again before its backward. Under
/// a pipeline (torch.distributed.pipelining) the parameters are not resharded after a backward: resharded after each
/// forward, a forward gathers unless a backward came just before it, a backward unless a backward did (1F1B on stage
/// i: the min(m, p − i) forwards up to the first backward, then the m + 1 − that backwards that follow a forward;
/// GPipe: m forwards, one backward); kept (torchtitan under PP) the first forward only.
struct GatherEvents {
  double forward = 0.0, backward = 0.0;
};
GatherEvents stage3_gathers(const ParallelLayout& l, const Sharding& sh, int stage) {
  const double m = static_cast<double>(std::max(l.micro_batches, 1));
  if (l.pp <= 1) return {m, sh.reshard_after_forward ? m : 0.0};
  if (!(sh.reshard_after_forward && l.pp_reshard_after_forward)) return {1.0, 0.0};
  const double f = l.schedule == PipelineSchedule::gpipe ? m : std::min(m, static_cast<double>(l.pp - stage));
  return {f, m + 1.0 - f};
}

/// Eq. P20: a stage-3 rank's DP collectives. Every gather is prefetched a block ahead in its pass (the chunk's first
/// block's share left, eq. P19's form, each chunk on its own: a chunk's first gather waits for its pass). The
/// reduce-scatter: without a pipeline during each micro-batch's backward (FSDP2, per-parameter shards) or the last
/// one's only (a flat FSDP under no_sync, as eq. S5-S7); under a pipeline after each chunk's last backward, whole (the
/// stage runs the post-backward by hand), the chunks' queued as eq. P21 spreads them.
Seconds stage3_exposed(const DpComm& dp, const ParallelLayout& l, const Sharding& sh, const ParallelStep& r, const Chunks& k) {
  const double v = static_cast<double>(k.v);
  const Seconds tf = r.forward / v, tb = r.backward / v;
  const GatherEvents n = stage3_gathers(l, sh, r.slowest_stage);
  const Seconds chunk_gather = dp.gather / v;
  const Seconds gathers = (dp_overlap_exposed(chunk_gather, tf, k.first_block) * n.forward +
                           dp_overlap_exposed(chunk_gather, tb, k.first_block) * n.backward) *
      v;
  if (l.pp > 1) return gathers + dp_overlap_exposed(dp.reduce, tb, 1.0, k.v, l.pp);
  // no pipeline: FSDP2 syncs the gradients every micro-batch (its default; torchtitan's loop turns nothing off), a
  // flat FSDP under no_sync the last one only (eq. S5-S7)
  const double reduces = sh.per_parameter ? static_cast<double>(std::max(l.micro_batches, 1)) : 1.0;
  return gathers + dp_overlap_exposed(dp.reduce, r.backward, k.first_block) * reduces;
}

/// Eq. P19 over P5's parts (P21 with interleaved chunks): exposed as they are, or overlapped with the slowest stage's
/// last backward and first forward of a micro-batch, the chunk's first block left after the window; stage 3 as eq.
/// P20 runs it.
Seconds dp_exposed(const DpComm& dp, const ParallelLayout& l, const Sharding& sh, const ParallelStep& r, std::int64_t blocks) {
  const Chunks k = rank_chunks(l, blocks);
  if (sh.stage >= 3) return stage3_exposed(dp, l, sh, r, k);
  if (!l.dp_comm_overlap) return dp.reduce + dp.gather;
  const double v = static_cast<double>(k.v);
  return dp_overlap_exposed(dp.reduce, r.backward / v, k.first_block, k.v, l.pp) +
      dp_overlap_exposed(dp.gather, r.forward / v, k.first_block, k.v, l.pp);
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
  const bool embedding =
      std::any_of(net.layers.begin(), net.layers.end(), [](const Layer& x) { return x.kind == LayerKind::embedding; });
  const BlockComm comm = block_comm(coll, cluster, at, l, m, opt, embedding);
  const std::vector<BlockRecompute> full = opt.recompute == Recompute::full
      ? full_recompute_blocks(block, l, opt.recompute_blocks)
      : std::vector<BlockRecompute>{};  // eq. P31

  ParallelStep r;
  r.memory.reserve(static_cast<std::size_t>(l.pp));
  // eq. P40: the state sharded over the strategy's shard groups of the dp·cp ranks (all of them but for HSDP)
  const LayoutShards sg = layout_shards(l, sh, cluster, gpus, at);
  const int shard = sg.shard;
  const ActivationRecompute ar = activation_recompute(opt.recompute);
  std::int64_t most_params = 0, most_experts = 0;
  StageDp own_dp;
  Seconds most_update{};
  // eq. P25: the sends overlapped with the next chunk, under the interleaved schedule only (as Megatron's)
  const bool overlap_sends = l.pp_comm_overlap && l.pp > 1 && l.schedule == PipelineSchedule::interleaved;
  const double v = static_cast<double>(std::max(l.vp, 1)), mbs = static_cast<double>(std::max(l.micro_batches, 1));
  for (int s = 0; s < l.pp; ++s) {
    const StageTimes st = stage_times(net, t, block, stage, s, opt, comm, l, cluster.gpu.sm_count, full);
    const Seconds compute = st.forward + st.backward + st.tp + st.cp + st.ep;
    Seconds p2p = comm.p2p, pipe{};
    if (overlap_sends) {
      const Seconds exposed = pp_overlap_exposed_sends(comm.send, st.forward / v, st.backward / v, l.micro_batches, l.vp);
      p2p = exposed / mbs;
      pipe = pipeline_time_overlapped(l.pp, l.micro_batches, l.vp, compute, exposed, comm.send);
    }
    const Seconds mb = compute + p2p;
    if (s == 0 || (overlap_sends ? pipe > r.pipeline : mb > r.per_microbatch)) {
      r.slowest_stage = s;
      r.per_microbatch = mb;
      r.pipeline = pipe;
      r.forward = st.forward;
      r.backward = st.backward;
      r.tp_exposed = st.tp;
      r.cp_exposed = st.cp;
      r.ep_comm = st.ep;
      r.p2p = p2p;
    }
    const std::int64_t params = rank_params(net, stage, l, s), expert_params = rank_expert_params(net, stage, l, s);
    const DpComm own = own_dp(coll, at, sg, params, expert_params, sh, opt);  // eq. P37, for the simulator's events
    r.stage_passes.push_back({.forward = st.forward + st.comm_fwd,
                              .backward = st.backward + (st.tp + st.cp + st.ep - st.comm_fwd),
                              .forward_compute = st.forward,
                              .backward_compute = st.backward,
                              .dp_reduce = own.reduce,
                              .dp_gather = own.gather,
                              .update = sh.sharded() ? st.update / static_cast<double>(std::max(shard, 1)) : st.update});
    most_update = max(most_update, st.update);
    most_params = std::max(most_params, params);
    most_experts = std::max(most_experts, expert_params);
    r.memory.push_back(rank_memory(net, block, m, stage, l, s, opt, sh, shard, ar, reserved));  // eq. P10 with P40
  }
  r.send = comm.send;
  r.sends_overlapped = overlap_sends;
  if (!overlap_sends) r.pipeline = pipeline_time(l.schedule, l.pp, l.micro_batches, l.vp, r.per_microbatch);
  r.bubble = r.pipeline - r.per_microbatch * static_cast<double>(l.micro_batches);
  const DpComm dense = dp_reduction(coll, at[ParallelGroup::dp_cp], sg, static_cast<double>(most_params - most_experts), sh, opt),
               experts = dp_reduction(coll, at[ParallelGroup::edp], whole_group(at[ParallelGroup::edp]),
                                      static_cast<double>(most_experts), sh, opt);
  r.dp_first_share = rank_chunks(l, m.layers).first_block;
  r.dp_comm = dp_exposed({dense.reduce + experts.reduce, dense.gather + experts.gather}, l, sh, r, m.layers);
  r.update = sh.sharded() ? most_update / static_cast<double>(std::max(shard, 1)) : most_update;
  // eq. P33: Megatron's embedding group all-reduces a tied word embedding's gradient between the first and the last stage
  // after the DP reduction, before the update, not overlapped
  if (l.pp > 1 && tied_output_embedding(net))
    r.embedding_grads = tied_embedding_allreduce_time(
        cluster, at[ParallelGroup::pp], tied_embedding_grad_bytes(l, m, reduce_bytes_per_element(sh, opt.precision)));
  r.step = r.pipeline + r.dp_comm + r.embedding_grads + r.update;
  r.global_batch = l.global_batch(gpus);
  r.tokens_per_s = static_cast<double>(r.global_batch) * static_cast<double>(m.seq) / in_seconds(r.step);
  return r;
}

}  // namespace dlscale
