// Model parallelism of a transformer: tensor (Megatron's column/row split), sequence, pipeline (GPipe, 1F1B,
// interleaved 1F1B) and context parallelism (ring attention), with data parallelism over what is left. The
// layout and its checks, the bytes each split moves per block, the pipeline's bubble and in-flight
// micro-batches, activation memory per layer (the network's own, eq. P9), the ranks of each group on the
// cluster and the time of their collectives on the existing collective model. Derivations: docs/model.md,
// "Model parallelism" (eq. P1-P31); Scenario::parallel predicts through parallel_step (lib/predict/parallel_predict.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dlscale/collective.hpp"
#include "dlscale/compute.hpp"
#include "dlscale/memory.hpp"
#include "dlscale/parallel_layout.hpp"
#include "dlscale/sharding.hpp"
#include "dlscale/topology.hpp"
#include "dlscale/units.hpp"

namespace dlscale {

struct Cluster;
struct Network;
struct GroupPlacement;

/// A transformer's sizes as the parallel model needs them, read from a Network's layers.
struct TransformerShape {
  std::int64_t layers = 0;      // transformer blocks L
  std::int64_t hidden = 0;      // h
  std::int64_t heads = 0;       // a
  std::int64_t kv_heads = 0;    // key/value heads (GQA; = heads without it)
  std::int64_t ffn = 0;         // the MLP's hidden width (0: none found)
  std::int64_t vocab = 0;       // the output projection's width (0: none found)
  std::int64_t seq = 0;         // s, tokens per sample
  std::int64_t window = 0;      // the attention's sliding window (eq. K25; 0: none or ≥ s)
  std::int64_t experts = 0;     // E routed experts of each MoE block's MLP (0: dense; eq. P16)
  std::int64_t top_k = 0;       // K experts a token runs
  std::int64_t moe_layers = 0;  // blocks whose MLP is a mixture of experts
  [[nodiscard]] std::int64_t head_dim() const noexcept { return heads > 0 ? hidden / heads : 0; }
  std::int64_t qk_head_dim = 0;  // multi-head latent attention: the query/key head dimension (0: head_dim())
  std::int64_t v_head_dim = 0;   // multi-head latent attention: the value head dimension (0: head_dim())
};
/// From the first attention layer (width, heads, key/value heads, sequence), the first MLP (and the experts of the
/// MoE ones), the last linear
/// layer's output (vocabulary) and transformer_blocks (the block count). InputError("network", …) when the
/// network has no attention layer or no blocks.
TransformerShape transformer_shape(const Network& net);

/// Throws InputError whose key is the field ("tp", "pp", "vp", "cp", "micro_batch", "micro_batches",
/// "schedule", "gpus") when: a degree or batch is below 1; tp·pp·cp does not divide the GPUs; tp does not
/// divide the heads, or neither divides nor is a multiple of the key/value heads (tp > kv_heads replicates
/// them, eq. P3); pp·vp exceeds the blocks (uneven chunks are allowed: layer_stages); the sequence does
/// not split into 2·cp chunks; "cp_comm" when a2a and cp does not divide a TP rank's heads or key/value heads (eq.
/// P29); vp > 1 without the interleaved schedule; interleaved with m not a multiple of pp; "ep"
/// when ep > 1 on a dense model, ep not dividing dp·cp or the experts (eq. P17); "sp" when ep > 1 and tp > 1 without
/// sequence parallelism (Megatron-Core's rule for a mixture of experts under TP); "moe_imbalance" when below 1 or not
/// a finite number, or, at ep > 1, above what ep ranks can reach (moe_imbalance_limit, eq. P23);
/// "account_for_embedding_in_pipeline_split" (or "account_for_loss_in_pipeline_split" where only that one is on)
/// when the blocks and the accounted layers do not split evenly over the p·v chunks (eq. P26);
/// "num_layers_in_first_pipeline_stage" (or "num_layers_in_last_pipeline_stage" where only that one is given) when a
/// count is below 1, pp < 2, the accounts are on too, the rest does not split evenly over the other stages, or with
/// vp > 1 a stage's blocks are not a multiple of vp (eq. P26b).
void validate(const ParallelLayout& layout, int gpus, const TransformerShape& shape);

/// The layout for `gpus` GPUs with its micro-batches from global_batch_target (m = target / (b·dp)); as it is
/// when no target is given. InputError("global_batch") when b·dp does not divide the target.
ParallelLayout with_global_batch(ParallelLayout l, int gpus);

// ---- communication per block (eq. P1-P5) ---------------------------------------------------------------

/// Which group a collective runs in.
/// ep: the expert-parallel group, edp: the expert-data-parallel group (the dp·cp/ep ranks holding the same experts).
enum class ParallelGroup { tp, cp, pp, dp, dp_cp, ep, edp };

/// One kind of collective of one block and micro-batch on one GPU: `count` calls of `op` on `size` (as the
/// collective model takes it: per rank for all-reduce, the gathered total for all-gather/reduce-scatter).
struct CollectiveCall {
  std::string what;  // "TP all-reduce (forward)", ...
  ParallelGroup group = ParallelGroup::tp;
  CollectiveOp op = CollectiveOp::allreduce;
  Bytes size{};
  int count = 0;
  bool backward = false;
  bool overlapped = false;  // runs beside compute (CP's K/V ring, SP's backward re-gather): exposed only past it
  /// A column-parallel linear's input gradient (the backward all-reduce without SP, the reduce-scatter with it): each
  /// call runs beside that linear's weight-gradient GEMM under ParallelLayout::tp_async_backward (eq. P28).
  bool input_grad = false;
};
/// Bytes a GPU puts on the wire for `call` in a group of n (nccl-tests' bus bytes × count; eq. S2's factors).
Bytes wire_bytes(const CollectiveCall& call, int n) noexcept;

/// Eq. P1: the activation one TP collective carries, b·(s/c)·h elements of `element_bytes`.
Bytes tp_activation_bytes(const ParallelLayout& l, const TransformerShape& m, double element_bytes) noexcept;
/// Eq. P1/P2: the TP (or SP) collectives of one block and micro-batch: without SP two all-reduces forward and
/// two backward; with SP an all-gather and a reduce-scatter in place of each all-reduce, and in backward the
/// all-gather of each column-parallel linear's input again for its weight gradient (Megatron-LM), overlapped. The
/// backward collectives of the two column-parallel linears' input gradients (q/k/v and the MLP's up and gate, one call
/// each) are marked `input_grad` (eq. P28). Empty for tp = 1.
std::vector<CollectiveCall> tp_block_collectives(const ParallelLayout& l, const TransformerShape& m, double element_bytes);
/// Eq. P30: the collectives full recompute's second forward of a checkpointed block runs in that block's backward:
/// its forward's (P1-P2: two all-reduces of S, or with SP two all-gathers and two reduce-scatters) again, marked
/// backward, named "(recomputed forward)". `early_stop` (eq. R1b, PyTorch's non-reentrant checkpoint): the block's
/// last row-parallel output, the MLP's down projection, is not recomputed, nor its all-reduce (reduce-scatter with
/// SP): one call fewer. Empty for tp = 1.
std::vector<CollectiveCall> tp_recompute_collectives(const ParallelLayout& l, const TransformerShape& m, double element_bytes,
                                                     bool early_stop = false);
/// Eq. P35: under ParallelLayout::distribute_saved_activations, the all-gather over the TP group of a checkpoint's
/// saved input (b·(s/c)·h elements, S = tp_activation_bytes) before its recompute, one a checkpoint in the backward,
/// not overlapped. Empty for tp = 1 or with the field off.
std::vector<CollectiveCall> checkpoint_input_collectives(const ParallelLayout& l, const TransformerShape& m,
                                                         double element_bytes);
/// Eq. P27: the TP (or SP) collectives of the first and last stages beside their blocks', one micro-batch (empty for
/// tp = 1), S = tp_activation_bytes. `embedding` (stage 0 holds a vocabulary-parallel embedding): its partial lookups
/// summed, an all-reduce of S forward (a reduce-scatter with SP, and in backward its conjugate, an all-gather).
/// `head` (stage p−1 holds the output layer): the vocabulary-parallel cross entropy's three all-reduces of b·(s/c) fp32
/// numbers forward (the logits' maximum, the target's logit, the sum of the exponentials; Megatron-Core, recalled),
/// and the output layer's own as a column-parallel linear (eq. P27b): without SP its input gradient's all-reduce of S
/// backward; with SP the all-gather of S forward, the reduce-scatter of its input gradient backward, and the
/// all-gather of its input again for its weight gradient (overlapped). The input gradient's call is `input_grad`.
std::vector<CollectiveCall> tp_edge_collectives(const ParallelLayout& l, const TransformerShape& m, double element_bytes,
                                                bool embedding, bool head);
/// Eq. P3: the K and V one CP rank holds of one layer, 2·b·(s/c)·kv_local·d_head elements (kv_local =
/// kv_heads/t, at least 1: replicated when t > kv_heads): what each forward step of its ring sends (eq. P15b).
Bytes cp_kv_chunk_bytes(const ParallelLayout& l, const TransformerShape& m, double element_bytes) noexcept;
/// Eq. P15c: what the merges of one CP rank's ring cost in one block and micro-batch (the slowest rank's: the
/// ranks wait for each other every step), forward and backward: bytes moved and kernels.
struct CpMergeTraffic {
  Bytes forward{}, backward{};
  int forward_kernels = 0, backward_kernels = 0;
};
/// Eq. P15c on the rank's T = b·s/c tokens, a/t heads of d_h and max(1, a_kv/t) key/value heads: forward, each
/// step's output correction over the queries its block covers (eq. P15a) and the final cast of the fp32
/// output (c output and c−1 log-sum-exp corrections and the cast: 2c kernels); backward each step's dQ over its
/// queries and dK/dV over its keys added to the accumulators (2c kernels). Zero for c = 1.
CpMergeTraffic cp_merge_traffic(const ParallelLayout& l, const TransformerShape& m, double element_bytes) noexcept;
/// Eq. P29a: a CP rank's own attention inputs and output in one block and micro-batch, its T = b·s/c tokens: Q and the
/// output T·(a/t)·d_h elements (d_qk and d_v a head under multi-head latent attention), K and V T·max(1, a_kv/t)·d_h each.
struct CpLocalTensors {
  Bytes q{}, k{}, v{}, o{};
};
CpLocalTensors cp_local_tensors(const ParallelLayout& l, const TransformerShape& m, double element_bytes) noexcept;
/// Eq. P29a: what one CP rank receives from the others for one block's attention, per micro-batch, under the layout's
/// cp_comm: p2p the ring's (c−1)·C_KV forward and 2(c−1)·C_KV backward (K/V, then K/V and dK/dV; P15b); all_gather
/// the gather of the sequence's K/V, (c−1)·C_KV, and backward the gather again and the reduce-scatter of dK/dV,
/// 2(c−1)·C_KV; a2a four all-to-alls forward (Q, K, V, the output) and four backward (their gradients), each
/// (c−1)/c of the local tensor. Zero for c = 1.
struct CpTraffic {
  Bytes forward{}, backward{};
};
/// Eq. P36, a2a+p2p over cp = a·b: the all-to-alls of P29a over the inner a ranks, forward and backward each
/// (a−1)/a·(Q + K + V + O), and P15b's ring over the b groups, (b−1)·C_KV forward and 2·(b−1)·C_KV backward (C_KV as
/// p2p's: s/b tokens of a_kv/(t·a) heads are as many as s/c of a_kv/t).
CpTraffic cp_block_traffic(const ParallelLayout& l, const TransformerShape& m, double element_bytes) noexcept;
/// The ranks of the CP ring (eq. P15): cp, or under a2a+p2p the cp/a groups of the outer ring (eq. P36).
[[nodiscard]] int cp_ring_ranks(const ParallelLayout& l) noexcept;
/// Eq. P29c: what a rank holds beside its kept activations while one block's attention runs, beyond the ring's (whose
/// two K/V blocks in hand and in flight are not charged): all_gather the other ranks' K/V and, backward, their dK/dV
/// before the reduce-scatter, 2(c−1)·C_KV; a2a the all-to-alls' outputs beside their inputs, one more Q, K and V
/// (the whole sequence for a/(t·c) heads: as many elements as the rank's own); p2p and c = 1 nothing.
Bytes cp_exchange_buffer_bytes(const ParallelLayout& l, const TransformerShape& m, double element_bytes) noexcept;
/// Eq. P4: the activation a stage sends its neighbour per micro-batch (forward; the same gradient back):
/// b·(s/c)·h elements, divided by t with SP (Megatron-Core's p2p tensor shape).
Bytes pp_p2p_bytes(const ParallelLayout& l, const TransformerShape& m, double element_bytes) noexcept;
/// Eq. P5: the parameters one rank of pipeline stage `stage` holds: the stage's blocks' TP-split layers
/// (attention, MLP, embedding, output projection) over t, its norms whole.
std::int64_t rank_params(const Network& net, const ParallelLayout& l, int stage);
/// Eq. P17: the parameters of the MoE experts one rank of stage `stage` holds: E/ep experts, TP-split over t (the
/// routers not counted: they are dense, reduced over dp·cp). Part of rank_params; 0 for a dense model.
std::int64_t rank_expert_params(const Network& net, const ParallelLayout& l, int stage);
/// Eq. P5: the gradient traffic of one step on one GPU: the rank's parameters over the dp·cp group (Megatron
/// reduces over data and context ranks), as eq. S2 gives it for the strategy's sharding. Eq. P40: `shard` the ranks
/// of the dp·cp group the state is sharded over (layout_shards; 0: all of them), the rest replicas: the reduce-scatter
/// and all-gathers over the shard group and the shard's all-reduce over the dp·cp/shard replicas (eq. S2c).
StepTraffic dp_step_traffic(std::int64_t params, const Sharding& s, Precision p, int dp_cp, int shard = 0);

// ---- mixture of experts (eq. P16-P18) ---------------------------------------------------------------------

/// Eq. P18: what one rank sends in one all-to-all of one MoE block and micro-batch (dispatch or combine, forward or
/// backward): its T tokens' K copies of h elements, the (e−1)/e of them bound for other EP ranks (balanced routing),
/// times the busiest rank's load f (eq. P23: it receives f times the mean in the dispatch and sends it back in the
/// combine, and the collective ends with it). T = b·s/c, over t with SP (each TP rank routes its sequence shard).
/// Zero for ep = 1 or a dense model.
Bytes moe_alltoall_bytes(const ParallelLayout& l, const TransformerShape& m, double element_bytes) noexcept;
/// Eq. P24: E[max of n independent standard normals], m_n = ∫ x·n·φ(x)·Φ(x)^(n−1) dx (numerically; 0 for n ≤ 1).
double expected_max_standard_normal(int n) noexcept;
/// Eq. P24: the busiest of e ranks, each summing E/e experts' loads of per-expert spread v (normal loads conditioned
/// on their total): f(e) = 1 + v·m_e·√(e/E). 1 for e ≤ 1.
double moe_imbalance_from_spread(int ep, std::int64_t experts, double cv) noexcept;
/// Eq. P23: the routing imbalance f of the layout's busiest expert-parallel rank: moe_imbalance, or eq. P24's
/// f(e) from moe_expert_load_cv (at most moe_imbalance_limit), where ep > 1; 1 otherwise.
double moe_routing_imbalance(const ParallelLayout& l, std::int64_t experts, std::int64_t top_k) noexcept;
/// Eqs. P23-P24: the token copies the busiest expert-parallel rank's experts run over the balanced rows·K that a
/// layout charges: padded to capacity C, C (every expert, every rank, whatever ep); dropping at C, min(f, C) with f
/// as moe_routing_imbalance (1 at ep 1: one rank holds every expert and runs all rows·K copies); dropless, f.
double moe_rank_load(const ParallelLayout& l, std::int64_t experts, std::int64_t top_k) noexcept;
/// Eq. P23: the most imbalanced e ranks can be: a token sends at most min(K, E/e) of its K copies to one rank, so
/// the busiest rank receives at most e·T·min(K, E/e) copies of the e·T·K, over the mean T·K: e·min(K, E/e)/K.
/// 1 for e ≤ 1 or a dense model.
double moe_imbalance_limit(int ep, const TransformerShape& m) noexcept;
/// Eq. P18: one all-to-all of the EP groups, each rank sending `per_rank` in equal parts to its e−1 peers, every
/// group at once: the slowest rank of the first group, its parts to peers on its node over its NVLink (p2p_copy_time
/// on the topology, else the node's link) beside those to other nodes over its NIC (× the NIC share, eq. P11), the
/// longer of the two, plus one link latency a peer beyond the first. Zero for a group of one.
Seconds alltoall_time(const Cluster& cluster, const GroupPlacement& ep, Bytes per_rank);

// ---- compute (eq. P6) ------------------------------------------------------------------------------------

/// The pipeline stage each learnable layer runs on: blocks in p·v chunks of ⌊L/(p·v)⌋ or ⌈L/(p·v)⌉ (block b in chunk
/// ⌊b·p·v/L⌋; eq. P26 with the embedding or the loss accounted: u = (L + a)/(p·v) units a chunk, block b in chunk
/// ⌊(b + a_e)/u⌋), chunk k on stage k mod p; eq. P26b with the first or last stage's blocks given: each stage's blocks in v
/// equal chunks, chunk j of stage s the (j·p + s)-th in block order; the
/// layers before the first block (embeddings) on stage 0, those after the last (final norm, output
/// projection) on stage p−1.
std::vector<int> layer_stages(const Network& net, const ParallelLayout& l);
/// Eq. P6: the network one TP rank runs, for the kernel model to time at its narrower shapes: attention with a/t
/// heads of the model's head size and max(1, a_kv/t) key/value heads (replicated when t > a_kv, as Megatron does),
/// the MLP's hidden width over t (the column-parallel up and gate N/t, the row-parallel down K/t), the output
/// projection's vocabulary over t, the TP-split layers' parameters over t; with SP the norms and the operators
/// (residual sums, dropout) on s/t tokens; with CP every layer on the rank's s/c tokens (its attention core as one
/// causal block of s/c: shard_layer_times runs it c times). The network itself for t = c = 1.
Network tp_rank_network(const Network& net, const ParallelLayout& l);

/// What the layer times a step is split from are: the whole layers' (measured, or the kernel model's on the whole
/// network), or one TP rank's (the kernel model's on tp_rank_network).
enum class LayerTimesOf { whole_layers, tp_rank };
/// Eq. P6: one rank's per-layer times. From one rank's own (tp_rank_network at its s/c tokens): as they are, but
/// the attention core c times over (its two load-balanced chunks against all s keys, a block of the ring at a
/// time: ½·s²/c of work against the timed block's ½·(s/c)²). From the whole layers': attention, MLP and output projection over
/// t·c, the embedding over c (every TP rank looks up every token), norms over c (and t with SP), the update over t
/// for TP-split layers: exact in FLOPs and bytes, blind to the narrower GEMMs' efficiency.
LayerTimes shard_layer_times(const LayerTimes& times, const Network& net, const ParallelLayout& l,
                             LayerTimesOf of = LayerTimesOf::whole_layers);

// ---- pipeline (eq. P7-P8) ---------------------------------------------------------------------------------

/// Eq. P7: the bubble's share of the ideal time m·(t_f + t_b): (p−1)/m for GPipe and 1F1B, (p−1)/(v·m)
/// interleaved (Narayanan et al., SC'21, §2.2).
double bubble_fraction(PipelineSchedule s, int p, int m, int v) noexcept;
/// Eq. P7: the step of one pipeline, (m + (p−1)/v)·t_mb, t_mb a micro-batch's forward and backward on the
/// slowest stage (v = 1 but interleaved).
Seconds pipeline_time(PipelineSchedule s, int p, int m, int v, Seconds per_microbatch) noexcept;

/// Eq. P25: what a rank's pipeline sends leave exposed in one step when each is overlapped with the next chunk the
/// rank computes (ParallelLayout::pp_comm_overlap, the interleaved schedule): its m·v forward chunks of `forward_chunk`
/// and m·v backward chunks of `backward_chunk` each send `send` once; every chunk but the first forward follows one
/// other, so the sends hide behind m·v − 1 forward and m·v backward chunks, max(0, send − chunk) each left, and the
/// last backward's send has nothing after it: (m·v − 1)·max(0, t_s − t_f/v) + m·v·max(0, t_s − t_b/v) + t_s.
Seconds pp_overlap_exposed_sends(Seconds send, Seconds forward_chunk, Seconds backward_chunk, int m, int v) noexcept;
/// Eq. P25: the step of one interleaved pipeline whose sends are overlapped: (m + (p−1)/v)·compute + `exposed` (the
/// rank's, pp_overlap_exposed_sends) + the 2·(p−1) sends of the fill and the drain, whole (the receiver waits for
/// them with nothing to run). `compute` is a micro-batch's on the stage without its sends.
Seconds pipeline_time_overlapped(int p, int m, int v, Seconds compute, Seconds exposed, Seconds send) noexcept;

/// Eq. P14: what a block's TP collectives (`comm`) cost beside the GEMMs they feed or drain (`gemm`) when overlapped
/// (ParallelLayout::tp_comm_overlap): the part the GEMMs cannot cover, the one chunk of t the pipeline cannot hide,
/// and the GEMMs slowed while the collective's kernels hold kTpOverlapSms of the GPU's `sm_count` SMs (nothing
/// where the count is unknown).
Seconds tp_overlap_exposed(Seconds comm, Seconds gemm, int tp, int sm_count) noexcept;
/// The SMs a hidden TP collective takes from the GEMM beside it (eq. P14): Transformer Engine's userbuffers
/// reduce-scatter runs on 16 SMs in NeMo's H100 configurations (recalled, not read here; its ring all-gather moves
/// data with the copy engines, and is charged as the reduce-scatter).
inline constexpr double kTpOverlapSms = 16.0;
/// Eq. P19: what a data-parallel collective of `comm` costs when overlapped (ParallelLayout::dp_comm_overlap) with
/// `window` of compute (the gradient reduction with the last micro-batch's backward, the parameter all-gather with
/// the first one's forward): at least the `last_share` that cannot start before the window ends (the gradients of the
/// stage's first block, ready last; the parameters of its first block, needed first), else what the window cannot
/// cover: max(last_share·comm, comm − window).
Seconds dp_overlap_exposed(Seconds comm, Seconds window, double last_share) noexcept;
/// Eq. P21: the same over `chunks` interleaved chunks of `stages` pipeline stages: each chunk's comm/chunks beside its
/// own last pass (`chunk_window`, one chunk of a micro-batch), queued after the chunks that finished before it, chunk j
/// j·stages chunk passes before chunk 0: max(φ·c/v, c/v − τ) + (v − 1)·max(0, c/v − p·τ). One chunk is eq. P19.
Seconds dp_overlap_exposed(Seconds comm, Seconds chunk_window, double last_share, int chunks, int stages) noexcept;
/// Eq. P8: the activations stage i (0 first) holds at its peak, in micro-batches of its whole stage (layers/p):
/// GPipe m; 1F1B min(p−i, m); interleaved min(m·v, 2(p−i−1) + (v−1)·p + 1)/v (Megatron's warm-up + 1, in chunks).
double in_flight_microbatches(PipelineSchedule s, int p, int m, int v, int stage) noexcept;

// ---- activation memory (eq. P9) ----------------------------------------------------------------------------

/// Which recomputation the activation count assumes (Korthikanti et al.'s three cases).
enum class ActivationRecompute { none, selective, full };
/// Eq. P9: what one rank keeps of layer `x` for backward, per micro-batch (b samples, s/c tokens each): the
/// memory model's own figure (Layer::activation_bytes_per_sample and its operators', at the activation width),
/// less the attention probabilities with `drop_probabilities` (a fused kernel, selective recompute); what TP
/// splits (the interior of attention and linear layers: q, k, v, context, probabilities, the MLP's hidden
/// activations, the logits) over t, the rest (norms' outputs, residual sums, dropout masks: Megatron's SP region)
/// over t with SP only; all of it over c.
Bytes layer_activation_bytes(const Layer& x, const ParallelLayout& l, const ComputeOptions& opt, bool drop_probabilities);
/// Eq. P9: what one rank keeps of transformer block `block` (transformer_blocks' numbering) per micro-batch under
/// recompute `r`: none the sum of layer_activation_bytes, selective the same without the probabilities, full the
/// block's input (its first layer's input at the activation width, over c, over t with SP).
Bytes block_activation_bytes(const Network& net, int block, const ParallelLayout& l, const ComputeOptions& opt,
                             ActivationRecompute r);

/// Eq. P31: what full recompute does with one transformer block (Megatron-Core's recompute_method and
/// recompute_num_layers N, per model chunk: the blocks of one of the p·v chunks, layer_stages).
struct BlockRecompute {
  bool again = false;        // its forward runs again in backward (R1), with its collectives (eqs. P15, P18, P30)
  bool keeps_input = false;  // a checkpoint starts at it: it keeps its input; one not run again keeps its activations
};
/// Eq. P31: per block (transformer_blocks' numbering), under full recompute: `uniform` every block again, the first
/// of each N consecutive blocks of a chunk keeping its input; `block` the first N blocks of each chunk again, each
/// keeping its input, the rest not. `fraction` < 1 (ComputeOptions::recompute_blocks, eq. R1) checkpoints only the
/// blocks block_checkpointed picks of those.
std::vector<BlockRecompute> full_recompute_blocks(const Network& net, const ParallelLayout& l, double fraction = 1.0);

/// Eq. P10: one rank's memory on pipeline stage `stage`: weights, gradients and optimiser state of its
/// rank_params under the DP sharding over `dp_cp` GPUs (estimate_training_memory's eq. S3; a hybrid strategy's shard
/// group, LayoutShards::shard, eq. P40), and activations:
/// in_flight_microbatches × what the stage's layers keep of a micro-batch (eq. P9), plus under full recompute
/// the largest of its checkpoints' blocks as they run again (one checkpoint at a time; eq. P31: the blocks not
/// recomputed keep their activations, a checkpoint of N blocks keeps one input and rebuilds N blocks).
MemoryEstimate rank_memory(const Network& net, const ParallelLayout& l, int stage, const ComputeOptions& opt,
                           const Sharding& sharding, int dp_cp, ActivationRecompute r,
                           Bytes reserved = bytes(kDefaultReservedBytes));

// ---- placement (eq. P11-P12) ------------------------------------------------------------------------------

/// The ranks (= GPUs, node by node: GPU g on node g / gpus_per_node) of every group of one kind.
std::vector<std::vector<int>> group_members(const ParallelLayout& l, int gpus, ParallelGroup g);

/// Where the groups of one kind sit. A node of the cluster is its NVLink domain: a GB200 NVL72 file is one
/// node of 72 GPUs (topologies/gb200-nvl72.yaml), a DGX one of 8.
struct GroupPlacement {
  ParallelGroup group = ParallelGroup::tp;
  int size = 1;                   // ranks per group
  int groups = 1;                 // groups of this kind
  int nodes = 1;                  // the most nodes one group spans
  int per_node = 1;               // the most ranks of one group on one node
  bool uniform = true;            // every group has per_node ranks on each of its nodes
  bool inside_node = true;        // every group within one node (its NVLink domain where the node has one)
  PathType path = PathType::loc;  // the worst path between ring neighbours of the first group: NET across nodes,
                                  // DIS inside a node of a cluster without a topology (not known)
  int groups_per_node = 0;        // groups of this kind that leave a node, with ranks on one node (eq. P11)
  double nic_share = 1.0;         // eq. P11: how many times over those groups ask for the node's NICs (≥ 1)
  GpuPlacement at;                // what the collective model is asked about (nodes × per_node)
  std::vector<int> first;         // the ranks of the first group
};
struct LayoutPlacement {
  std::array<GroupPlacement, 7> groups;  // indexed by ParallelGroup
  /// Eq. P36, cp_comm a2a+p2p only (else groups of one): each CP group's consecutive runs of a ranks (the all-to-alls)
  /// and its ranks a apart (the ring between the runs), placed as the groups are.
  GroupPlacement cp_inner, cp_outer;
  [[nodiscard]] const GroupPlacement& operator[](ParallelGroup g) const noexcept { return groups[static_cast<std::size_t>(g)]; }
};
/// A rank's coordinate in each dimension, in the layout's rank order (group_members' numbering: the order's first
/// dimension varies fastest).
struct RankCoordinates {
  int tp = 0, cp = 0, dp = 0, pp = 0;
};
RankCoordinates rank_coordinates(const ParallelLayout& l, int gpus, int rank);
/// Places a layout's groups on `gpus` GPUs of the cluster (InputError("gpus") when it cannot hold them).
LayoutPlacement place_layout(const ParallelLayout& l, const Cluster& cluster, int gpus);

/// Eq. P40: a sharded strategy's shard and replica groups inside a layout's dp·cp group (HSDP under a layout; eq. S1
/// within each dp·cp group): the group's ranks in rank order, shard groups of n consecutive ones, and the j-th rank
/// of every shard group in the j-th replica group of R = dp·cp/n. n is the strategy's group: `all` every rank of the
/// dp·cp group, `node` its ranks on one node (Sharding::kGroupNode: the node's GPUs less the other dimensions' share
/// of them), a count that many ranks (torchtitan's dp_shard). Stage 0, or n = dp·cp: one shard group, the dp·cp
/// group's placement, R = 1.
struct LayoutShards {
  int shard = 1;                        // n
  int replicas = 1;                     // R
  GroupPlacement shard_at, replica_at;  // eq. P11 for every shard group, every replica group, at once
};
/// InputError("strategy.sharding.group") where n does not divide the dp·cp ranks or exceeds them, InputError("gpus")
/// where `node` finds the dp·cp group's ranks spread unevenly over nodes; InputError("ep") for n < dp·cp beside expert
/// parallelism (not modelled).
LayoutShards layout_shards(const ParallelLayout& l, const Sharding& s, const Cluster& cluster, int gpus,
                           const LayoutPlacement& at);

/// Eq. P12: one collective of `group`'s kind, every group of the kind at once, on the existing collective
/// model: its time for the group's placement with the bytes scaled by the NIC share when it leaves the node.
Seconds group_collective_time(const CollectiveModel& model, const CollectiveCall& call, const GroupPlacement& group);
/// Eq. P4/P12: one point-to-point send of `size` between neighbouring pipeline stages: p2p_copy_time on the
/// cluster's topology (between the first group's first two ranks), else one step on the node's or the
/// network's link (Cluster::intra_node / inter_node), the bytes scaled by the NIC share across nodes.
Seconds pipeline_p2p_time(const Cluster& cluster, const GroupPlacement& pp, Bytes size);
/// Eq. P33: whether the network's output layer shares the token embedding's weights (arch's `tied`: the last layer a
/// linear map of no parameters of its own, beside an embedding that has them; GPT-2/3's head).
[[nodiscard]] bool tied_output_embedding(const Network& net) noexcept;
/// Eq. P34: the parameters of the last pipeline stage's own copy of a tied word embedding on each of its TP ranks
/// (Megatron-Core's output layer weight when p > 1): ⌈V/t⌉·h, V the output layer's width and h its input's. Counted
/// in rank_params and rank_memory of the stage holding the output layer (its gradients and optimiser state sharded
/// over dp·cp like the stage's others) and so in its DP reduction. 0 untied or without a pipeline.
[[nodiscard]] std::int64_t tied_output_copy_params(const Network& net, const ParallelLayout& l) noexcept;
/// Eq. P33: what the first and the last pipeline stage all-reduce of a tied word embedding's gradient after the
/// backward, the vocabulary-parallel (V/t)·h elements of `grad_bytes` each; nothing without a pipeline.
[[nodiscard]] Bytes tied_embedding_grad_bytes(const ParallelLayout& l, const TransformerShape& m, double grad_bytes) noexcept;
/// Eq. P33: that all-reduce between the first group's first and last stage (Megatron's embedding group of two ranks),
/// every pipeline at once: a ring of two, a reduce-scatter step and an all-gather step of size/2 each way, each timed
/// as a pipeline send between the two GPUs (pipeline_p2p_time's link and NIC share). Zero without a pipeline.
Seconds tied_embedding_allreduce_time(const Cluster& cluster, const GroupPlacement& pp, Bytes size);
/// Eq. P15d: one step of CP's ring, every rank of every CP group sending `size` to the next and receiving from the
/// one before at once: the slowest neighbour pair of the first group (its last rank's send to its first
/// included), each as pipeline_p2p_time times a pair (p2p_copy_time on the topology, else α + size/β of the
/// node's or the network's link; × the NIC share across nodes). Zero for a group of one.
Seconds cp_ring_step_time(const Cluster& cluster, const GroupPlacement& cp, Bytes size);
/// Eq. P29b: one block's exchange where it is not the ring (cp_comm all_gather or a2a), forward and backward, on the
/// CP group's placement, every group at once, none of it overlapped with the attention (Megatron-Core's all_gather and
/// a2a run before and after the attention kernels): all_gather one all-gather of c·C_KV forward (group_collective_time
/// on the collective model), backward the all-gather again and a reduce-scatter of c·C_KV; a2a the all-to-alls of
/// Q, K, V and the output forward and of their gradients backward, each alltoall_time of (c−1)/c of the rank's tensor.
/// Zero for p2p (P15's ring) and c = 1.
struct CpCollectiveTimes {
  Seconds forward{}, backward{};
};
CpCollectiveTimes cp_collective_times(const CollectiveModel& model, const Cluster& cluster, const GroupPlacement& cp,
                                      const ParallelLayout& l, const TransformerShape& m, double element_bytes);

// ---- one step (eq. P13) -----------------------------------------------------------------------------------

/// Korthikanti's case for a compute option's recompute mode: none, full, selective (per-op counts as selective).
ActivationRecompute activation_recompute(Recompute r) noexcept;

/// One training step of a layout (eq. P13), what the Predictor reports for Scenario::parallel: per micro-batch on the
/// slowest pipeline stage, then the pipeline, the data-parallel reduction and the update.
struct ParallelStep {
  int slowest_stage = 0;
  Seconds forward{}, backward{};  // compute of one micro-batch on the slowest stage (recompute in backward, CP merges P15c)
  Seconds tp_exposed{};           // its blocks' TP/SP collectives (the overlapped re-gather only past half the backward)
  Seconds cp_exposed{};           // its blocks' ring sends past each step's attention (eq. P15b; again where recomputed),
                                  // or their all_gather/a2a collectives whole (eq. P29b)
  Seconds ep_comm{};              // its MoE blocks' all-to-alls (eq. P18; again where recomputed), not overlapped
  Seconds p2p{};                  // its sends to the neighbouring stages, 2·v a micro-batch (eq. P25: exposed, over m)
  Seconds per_microbatch{};       // t_mb = the sum of the above
  Seconds pipeline{};             // eq. P7: (m + (p−1)/v)·t_mb
  Seconds bubble{};               // pipeline − m·t_mb
  Seconds dp_comm{};              // the gradients over the dp·cp group (the experts' over dp·cp/ep), after the last backward
  Seconds embedding_grads{};      // eq. P33: a tied word embedding's gradient all-reduced between the first and last stage
  Seconds update{};               // the optimiser step of the rank's parameters (1/n of them when sharded)
  Seconds step{};                 // pipeline + dp_comm + embedding_grads + update
  std::int64_t global_batch = 0;  // samples
  double tokens_per_s = 0.0;
  std::vector<MemoryEstimate> memory;  // per stage (eq. P10)
  /// Eq. P32 (the simulator's pipeline): one micro-batch's forward and backward on each stage, its exposed TP, CP and
  /// EP communication with the pass that runs it (the forward's collectives, ring sends and all-to-alls in forward,
  /// the rest in backward), its sends aside; forward + backward is the stage's t_mb less its p2p.
  struct StagePasses {
    Seconds forward{}, backward{};
    /// Eq. P37: of forward and backward, the layers' compute (the windows P19 hides a DP collective behind); the
    /// stage's own DP collectives (P5 over its parameters: the reduction, and the parameters' all-gather when
    /// sharded), and its update.
    Seconds forward_compute{}, backward_compute{};
    Seconds dp_reduce{}, dp_gather{}, update{};
  };
  std::vector<StagePasses> stage_passes;  // per stage
  double dp_first_share = 1.0;            // eq. P19: φ, the share of a chunk's DP collective its first block's
  Seconds send{};                         // eq. P4: one send between neighbouring stages (0 without a pipeline)
  bool sends_overlapped = false;          // eq. P25: the interleaved schedule's sends overlapped with the next chunk
};
/// `times`: every layer of `net` at the layout's micro-batch on one GPU, whole (the kernel model's or a
/// measurement's) or one TP rank's (`of`, shard_layer_times); `collectives`: the cluster's collective model.
/// `reserved`: what each stage's memory keeps beside the step's tensors (MemoryEstimate::reserved). Validates the
/// layout (InputError naming the field).
ParallelStep parallel_step(const Network& net, const LayerTimes& times, const Cluster& cluster,
                           const CollectiveModel& collectives, const ParallelLayout& l, int gpus, const ComputeOptions& opt,
                           const Sharding& sharding, LayerTimesOf of = LayerTimesOf::whole_layers,
                           Bytes reserved = bytes(kDefaultReservedBytes));

}  // namespace dlscale
