// Model parallelism: the layout and its checks, the per-block collectives, the pipeline's bubble and
// in-flight micro-batches, activation memory per layer, placement of the groups on the cluster and their
// times on the collective model (include/dlscale/parallel.hpp; docs/model.md, "Model parallelism", P1-P12).
#include "dlscale/parallel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <map>
#include <numbers>
#include <utility>
#include <vector>

#include "dlscale/cluster.hpp"
#include "dlscale/equations.hpp"
#include "dlscale/error.hpp"
#include "dlscale/network.hpp"
#include "parallel/parallel_blocks.hpp"

namespace dlscale {
namespace {

InputError field_error(std::string_view field, std::string message) {
  return InputError(SourceLocation{}, std::string(field), std::move(message));
}

/// Eq. P26: the layers besides the blocks that count as units of the pipeline split (the embedding, the loss).
int accounted_layers(const ParallelLayout& l) noexcept {
  return (l.account_for_embedding_in_pipeline_split ? 1 : 0) + (l.account_for_loss_in_pipeline_split ? 1 : 0);
}

/// Eq. P26b: whether the first or the last stage's block count is given explicitly.
bool explicit_stage_counts(const ParallelLayout& l) noexcept {
  return l.num_layers_in_first_pipeline_stage > 0 || l.num_layers_in_last_pipeline_stage > 0;
}

/// Eq. P26b: the blocks stage s of the p holds, the first's and the last's as given, the other stages an equal share
/// of the rest, L − n_first − n_last over the stages left (validate checks that it divides).
std::int64_t explicit_stage_blocks(const ParallelLayout& l, std::int64_t blocks, int s) noexcept {
  const int first = l.num_layers_in_first_pipeline_stage, last = l.num_layers_in_last_pipeline_stage;
  if (s == 0 && first > 0) return first;
  if (s == l.pp - 1 && last > 0) return last;
  const int middle = l.pp - (first > 0 ? 1 : 0) - (last > 0 ? 1 : 0);
  return middle > 0 ? (blocks - first - last) / middle : 0;
}

/// Eq. P6/P26: the model chunk (0 … p·v − 1) block b of `blocks` falls in: ⌊b·p·v/L⌋, or with the embedding or the
/// loss accounted ⌊(b + a_e)/u⌋, u = (L + a)/(p·v) units a chunk. Eq. P26b, with the first or the last stage's
/// blocks given: chunk j·p + s of stage s holds n_s/v blocks, the chunks in that order along the blocks.
int block_chunk(std::int64_t b, std::int64_t blocks, const ParallelLayout& l) noexcept {
  const std::int64_t chunks = std::max(1, l.pp * std::max(1, l.vp));
  if (explicit_stage_counts(l)) {
    const int v = std::max(1, l.vp);
    std::int64_t end = 0;
    for (int j = 0; j < v; ++j)
      for (int s = 0; s < l.pp; ++s) {
        end += explicit_stage_blocks(l, blocks, s) / v;
        if (b < end) return j * l.pp + s;
      }
    return static_cast<int>(chunks - 1);
  }
  const int accounted = accounted_layers(l), first = l.account_for_embedding_in_pipeline_split ? 1 : 0;
  if (accounted > 0) {
    const std::int64_t units = std::max<std::int64_t>(1, (blocks + accounted) / chunks);
    return static_cast<int>(std::min<std::int64_t>((b + first) / units, chunks - 1));
  }
  return static_cast<int>(b * chunks / std::max<std::int64_t>(blocks, 1));
}

/// The layers whose weights Megatron splits over the TP group (column/row-parallel linears, the
/// vocabulary-parallel embedding and output projection); norms stay whole on every TP rank.
bool tp_split(LayerKind k) noexcept { return k == LayerKind::attention || k == LayerKind::linear || k == LayerKind::embedding; }

/// Eq. P16: a MoE layer's router, D×E, dense (on every rank whole: replicated over the TP and EP groups).
std::int64_t router_params(const Layer& x) noexcept {
  return x.experts > 0 && !x.input_shape.empty() ? x.input_shape.back() * x.experts : 0;
}

/// Eq. P17: what one rank holds of the experts of layer x: E/ep of them, TP-split over t (expert tensor parallelism
/// at Megatron-Core's default, the layer's t). 0 for a dense layer.
std::int64_t rank_expert_part(const Layer& x, const ParallelLayout& l) noexcept {
  if (x.experts <= 0) return 0;
  const std::int64_t split = static_cast<std::int64_t>(l.tp) * l.ep;
  return (x.params - router_params(x) + split - 1) / split;
}

/// Eq. P5a: multi-head latent attention's down projections and their norms, D·r_q + r_q + D·(r_kv + d_rope) + r_kv,
/// which Megatron-Core keeps whole on every TP rank (its linear_q_down_proj and linear_kv_down_proj, recalled); 0
/// for any other layer.
std::int64_t mla_whole_params(const Layer& x) noexcept {
  if (!is_mla(x) || x.input_shape.empty()) return 0;
  const std::int64_t d = x.input_shape.back();
  return (x.q_lora > 0 ? d * x.q_lora + x.q_lora : 0) + d * (x.kv_lora + x.qk_rope) + x.kv_lora;
}

/// Eq. P5/P5a/P17: the parameters one rank holds of layer x: its 1/t of a TP-split layer (the experts' part also 1/ep,
/// the router whole; MLA's down projections whole), a norm whole.
std::int64_t rank_layer_params(const Layer& x, const ParallelLayout& l) noexcept {
  if (x.experts > 0) return router_params(x) + rank_expert_part(x, l);
  if (is_mla(x)) return mla_whole_params(x) + (x.params - mla_whole_params(x) + l.tp - 1) / l.tp;
  return tp_split(x.kind) ? (x.params + l.tp - 1) / l.tp : x.params;
}

/// The dimensions that vary inside a group of each kind.
std::vector<ParallelDim> varying(ParallelGroup g) {
  switch (g) {
    case ParallelGroup::tp:
      return {ParallelDim::tp};
    case ParallelGroup::cp:
      return {ParallelDim::cp};
    case ParallelGroup::pp:
      return {ParallelDim::pp};
    case ParallelGroup::dp:
      return {ParallelDim::dp};
    case ParallelGroup::dp_cp:
    case ParallelGroup::ep:  // carved from the dp·cp ranks (expert_group_key)
    case ParallelGroup::edp:
      return {ParallelDim::dp, ParallelDim::cp};
  }
  return {};
}

}  // namespace

/// Eq. P31: the most blocks one model chunk holds.
std::int64_t most_blocks_in_a_chunk(std::int64_t blocks, const ParallelLayout& l) {
  std::map<int, std::int64_t> per_chunk;
  for (std::int64_t b = 0; b < blocks; ++b) ++per_chunk[block_chunk(b, blocks, l)];
  std::int64_t most = 0;
  for (auto [chunk, n] : per_chunk) most = std::max(most, n);
  return most;
}

TransformerShape transformer_shape(const Network& net) { return transformer_shape(net, transformer_blocks(net)); }

TransformerShape transformer_shape(const Network& net, const std::vector<int>& blocks) {
  TransformerShape m;
  for (const Layer& l : net.layers) {
    if (l.kind == LayerKind::attention && m.heads == 0 && l.heads > 0 && l.input_shape.size() >= 2) {
      m.hidden = l.input_shape.back();
      m.seq = l.input_shape[l.input_shape.size() - 2];
      m.heads = l.heads;
      m.kv_heads = l.kv_heads > 0 ? l.kv_heads : l.heads;
      m.window = l.window;
      if (is_mla(l)) {  // multi-head latent attention's head dimensions (eq. P3)
        m.qk_head_dim = l.head_dim;
        m.v_head_dim = l.v_head_dim > 0 ? l.v_head_dim : l.head_dim;
      }
    }
    if (l.kind == LayerKind::linear && l.hidden > 0 && m.ffn == 0) m.ffn = l.hidden;
    if (l.experts > 0) {  // eq. P16
      m.experts = l.experts;
      m.top_k = l.top_k;
      ++m.moe_layers;
    }
  }
  if (!net.layers.empty() && net.layers.back().kind == LayerKind::linear && !net.layers.back().output_shape.empty())
    m.vocab = net.layers.back().output_shape.back();
  for (int b : blocks) m.layers = std::max<std::int64_t>(m.layers, b + 1);
  if (m.heads == 0) throw field_error("network", fmt::format("'{}' has no attention layer to split", net.name));
  if (m.layers == 0) throw field_error("network", fmt::format("'{}' has no transformer blocks to split", net.name));
  return m;
}

ParallelLayout with_global_batch(ParallelLayout l, int gpus) {
  if (l.global_batch_target <= 0) return l;
  const std::int64_t per_step = static_cast<std::int64_t>(l.micro_batch) * l.dp(gpus);
  if (per_step < 1 || l.global_batch_target % per_step != 0)
    throw field_error("global_batch",
                      fmt::format("a global batch of {} does not split into micro-batches of {} on {} "
                                  "data-parallel ranks ({} GPUs / tp·pp·cp {})",
                                  l.global_batch_target, l.micro_batch, l.dp(gpus), gpus, l.model_parallel()));
  l.micro_batches = static_cast<int>(l.global_batch_target / per_step);
  return l;
}

namespace {
/// Eq. P17's checks of the expert-parallel degree.
void validate_experts(const ParallelLayout& l, int dp, const TransformerShape& m) {
  if (l.ep < 1) throw field_error("ep", fmt::format("must be at least 1, got {}", l.ep));
  validate_moe_imbalance(l.moe_imbalance);
  validate_moe_routing(l);
  if (l.ep == 1) return;
  if (m.experts == 0) throw field_error("ep", fmt::format("ep {} needs a model with experts (a mixture of experts)", l.ep));
  if (m.experts % l.ep != 0) throw field_error("ep", fmt::format("ep {} does not divide the {} experts", l.ep, m.experts));
  // eq. P17: the EP groups are carved from the dp·cp ranks
  if ((dp * l.cp) % l.ep != 0)
    throw field_error("ep", fmt::format("ep {} does not divide dp {} × cp {} = {} ranks", l.ep, dp, l.cp, dp * l.cp));
  // Megatron-Core asserts "When using MoE and tensor parallelism, sequence parallelism must be used" (recalled from
  // megatron/training/arguments.py, not read here): without SP every TP rank would hold all b·s/c tokens and the
  // all-to-alls move t times what they do (eq. P18); torchtitan's TP plan always shards the norms (sp: true)
  if (l.tp > 1 && !l.sp)
    throw field_error("sp",
                      fmt::format("ep {} with tp {} needs sequence parallelism (sp), as Megatron-Core requires of a "
                                  "mixture of experts under tensor parallelism",
                                  l.ep, l.tp));
  if (const double limit = moe_imbalance_limit(l.ep, m); l.moe_imbalance > limit)
    throw field_error("moe_imbalance",
                      fmt::format("{} is more than {} expert-parallel ranks can reach: a token sends at most min(K {}, E/ep {}) "
                                  "of its copies to one rank, at most {:.4g} times the mean",
                                  l.moe_imbalance, l.ep, m.top_k, m.experts / l.ep, limit));
}
}  // namespace

namespace {
/// Eq. P24's integral, E[max] = ∫ x·n·φ(x)·Φ(x)^(n−1) dx, by Simpson's rule on [−12, 12] (the tails beyond are below
/// 1e−30): 4,801 evaluations of φ, Φ and a power.
double max_of_normals_integral(int n) noexcept {
  constexpr int kSteps = 4800;
  constexpr double kLo = -12.0, kHi = 12.0, kH = (kHi - kLo) / kSteps;
  const double inv_sqrt_2pi = 1.0 / std::sqrt(2.0 * std::numbers::pi);
  double sum = 0.0;
  for (int i = 0; i <= kSteps; ++i) {
    const double x = kLo + kH * i;
    const double pdf = inv_sqrt_2pi * std::exp(-0.5 * x * x), cdf = 0.5 * std::erfc(-x / std::numbers::sqrt2);
    const double w = i == 0 || i == kSteps ? 1.0 : (i % 2 == 1 ? 4.0 : 2.0);
    sum += w * x * n * pdf * std::pow(cdf, n - 1);
  }
  return sum * kH / 3.0;
}
}  // namespace

double expected_max_standard_normal(int n) noexcept {
  if (n <= 1) return 0.0;
  // Each n's integral once a thread: narrow_to_rank asks for it a layer at a time and plan --parallel for every
  // layout it checks (Mixtral's 32 GPUs: 70 s without this, where the plan takes 0.6 s at a given imbalance).
  thread_local std::vector<double> memo;
  const auto i = static_cast<std::size_t>(n);
  if (i >= memo.size()) memo.resize(i + 1, std::numeric_limits<double>::quiet_NaN());
  if (std::isnan(memo[i])) memo[i] = max_of_normals_integral(n);
  return memo[i];
}

double moe_imbalance_from_spread(int ep, std::int64_t experts, double cv) noexcept {
  if (ep <= 1 || experts <= 0) return 1.0;
  // eq. P24: a rank's E/e experts' loads summed: its excess over the mean is v·√(E/e)·(Z_j − Z̄) of the mean expert's,
  // the busiest's m_e of them, over the mean rank's E/e
  return 1.0 + cv * expected_max_standard_normal(ep) * std::sqrt(static_cast<double>(ep) / static_cast<double>(experts));
}

double moe_routing_imbalance(const ParallelLayout& l, std::int64_t experts, std::int64_t top_k) noexcept {
  if (l.ep <= 1) return 1.0;
  if (!(l.moe_expert_load_cv > 0.0)) return l.moe_imbalance;  // eq. P23
  const TransformerShape m{.experts = experts, .top_k = top_k};
  return std::min(moe_imbalance_from_spread(l.ep, experts, l.moe_expert_load_cv), moe_imbalance_limit(l.ep, m));  // eq. P24
}

double moe_rank_load(const ParallelLayout& l, std::int64_t experts, std::int64_t top_k) noexcept {
  const auto& c = l.moe_expert_capacity_factor;
  if (c && l.moe_pad_expert_input_to_capacity) return *c;     // eq. P24: every expert at C, padded
  const double f = moe_routing_imbalance(l, experts, top_k);  // eq. P23
  return c ? std::min(f, *c) : f;                             // eq. P24: dropped beyond C
}

double moe_imbalance_limit(int ep, const TransformerShape& m) noexcept {
  if (ep <= 1 || m.experts == 0 || m.top_k == 0) return 1.0;
  // eq. P23: e ranks, E/e experts each; a token's K copies go to K distinct experts, at most min(K, E/e) on one rank
  const std::int64_t most = std::min<std::int64_t>(m.top_k, m.experts / ep);
  return static_cast<double>(ep) * static_cast<double>(most) / static_cast<double>(m.top_k);
}

namespace {
/// Eq. P26b's checks, as Megatron-Core's TransformerConfig makes them (recalled, not read here): each count at least
/// 1, a pipeline of two stages or more, neither beside the accounts of eq. P26 (Megatron asserts that an uneven split
/// and the accounts are not combined), the rest dividing evenly over the other stages (all of it on the first and
/// last when there are no others), and with virtual stages every stage's blocks a multiple of vp.
void validate_explicit_stages(const ParallelLayout& l, std::int64_t blocks) {
  const int first = l.num_layers_in_first_pipeline_stage, last = l.num_layers_in_last_pipeline_stage;
  for (auto [field, v] : {std::pair{"num_layers_in_first_pipeline_stage", first}, {"num_layers_in_last_pipeline_stage", last}})
    if (v < 0) throw field_error(field, fmt::format("must be at least 1, got {}", v));
  if (!explicit_stage_counts(l)) return;
  const char* field = first > 0 ? "num_layers_in_first_pipeline_stage" : "num_layers_in_last_pipeline_stage";
  if (l.pp < 2) throw field_error(field, fmt::format("needs a pipeline of at least two stages, got pp {}", l.pp));
  if (l.account_for_embedding_in_pipeline_split || l.account_for_loss_in_pipeline_split)
    throw field_error(field,
                      "the first or last stage's blocks given explicitly cannot be combined with "
                      "account_for_embedding_in_pipeline_split or account_for_loss_in_pipeline_split");
  const int middle = l.pp - (first > 0 ? 1 : 0) - (last > 0 ? 1 : 0);
  const std::int64_t rest = blocks - first - last;
  const int v = l.schedule == PipelineSchedule::interleaved ? std::max(l.vp, 1) : 1;
  if (middle == 0 && rest != 0)
    throw field_error(field,
                      fmt::format("with pp {} the first and last stages hold every block: {} + {} is not the {} blocks", l.pp,
                                  first, last, blocks));
  if (middle > 0 && (rest < static_cast<std::int64_t>(middle) * v || rest % middle != 0))
    throw field_error(
        field,
        fmt::format("the {} blocks left of {} do not split evenly over the other {} stage{}{}", rest, blocks, middle,
                    middle > 1 ? "s" : "", v > 1 ? fmt::format(" with vp {} chunks each", v) : std::string()));
  for (auto [f, n] : {std::pair{"num_layers_in_first_pipeline_stage", static_cast<std::int64_t>(first)},
                      {"num_layers_in_last_pipeline_stage", static_cast<std::int64_t>(last)},
                      {field, middle > 0 ? rest / middle : 0}})
    if (n % v != 0) throw field_error(f, fmt::format("{} blocks on a stage do not split evenly over its vp {} chunks", n, v));
}
}  // namespace

namespace {
/// Eqs. P29 and P36: the CP exchange's fit to the heads, and a2a+p2p's inner size.
void validate_cp_comm(const ParallelLayout& l, const TransformerShape& m) {
  // eq. P36: Megatron-Core's hierarchical_context_parallel_sizes [a, cp/a] belong to a2a+p2p
  if (l.hierarchical_cp != 0 && l.cp_comm != CpComm::a2a_p2p)
    throw field_error("hierarchical_cp",
                      fmt::format("hierarchical_cp {} needs cp_comm a2a+p2p, not {}", l.hierarchical_cp, to_string(l.cp_comm)));
  if (l.cp > 1 && l.cp_comm == CpComm::a2a_p2p && (l.hierarchical_cp < 1 || l.cp % l.hierarchical_cp != 0))
    throw field_error(
        "hierarchical_cp",
        l.hierarchical_cp < 1
            ? fmt::format("cp_comm a2a+p2p needs hierarchical_cp, the all-to-all group's size (a divisor of cp {})", l.cp)
            : fmt::format("hierarchical_cp {} does not divide cp {}", l.hierarchical_cp, l.cp));
  // eq. P29: Ulysses gives each CP rank a/(t·c) of the heads and their key/value heads, whole (eq. P36: a/(t·a) over
  // the inner group)
  if (l.cp > 1 && (l.cp_comm == CpComm::a2a || l.cp_comm == CpComm::a2a_p2p)) {
    const std::int64_t heads = m.heads / l.tp, kv = std::max<std::int64_t>(1, m.kv_heads / l.tp);
    const int n = l.cp_comm == CpComm::a2a ? l.cp : l.hierarchical_cp;
    const char* what = l.cp_comm == CpComm::a2a ? "cp" : "hierarchical_cp";
    if (heads % n != 0 || kv % n != 0)
      throw field_error(
          l.cp_comm == CpComm::a2a ? "cp_comm" : "hierarchical_cp",
          fmt::format("cp_comm {} over {} {} needs the heads of a TP rank divisible by {}: {} attention and {} key/value "
                      "heads (heads {} and kv_heads {} over tp {})",
                      to_string(l.cp_comm), what, n, what, heads, kv, m.heads, m.kv_heads, l.tp));
  }
}
}  // namespace

void validate(const ParallelLayout& l, int gpus, const TransformerShape& m) {
  for (auto [field, v] : {std::pair{"tp", l.tp},
                          {"pp", l.pp},
                          {"vp", l.vp},
                          {"cp", l.cp},
                          {"micro_batch", l.micro_batch},
                          {"micro_batches", l.micro_batches}})
    if (v < 1) throw field_error(field, fmt::format("must be at least 1, got {}", v));
  if (gpus < 1 || gpus % l.model_parallel() != 0)
    throw field_error(
        "gpus", fmt::format("tp {} × pp {} × cp {} = {} does not divide {} GPUs", l.tp, l.pp, l.cp, l.model_parallel(), gpus));
  if (m.heads % l.tp != 0) throw field_error("tp", fmt::format("tp {} does not divide the {} attention heads", l.tp, m.heads));
  // eq. P3: more TP ranks than key/value heads replicate them (each rank one head, tp/kv ranks a copy)
  if (m.kv_heads % l.tp != 0 && l.tp % m.kv_heads != 0)
    throw field_error("tp", fmt::format("tp {} neither divides nor is a multiple of the {} key/value heads", l.tp, m.kv_heads));
  if (l.tp_comm_overlap && l.tp > 1 && !l.sp)
    throw field_error("tp_comm_overlap", "overlapping TP communication with the GEMMs needs sequence parallelism (sp)");
  if (l.pp > m.layers)
    throw field_error("pp", fmt::format("pp {} is more stages than the {} transformer blocks", l.pp, m.layers));
  if (l.vp > 1 && l.schedule != PipelineSchedule::interleaved)
    throw field_error("vp", fmt::format("vp {} needs the interleaved schedule, not {}", l.vp, to_string(l.schedule)));
  if (l.schedule == PipelineSchedule::interleaved && l.pp < 2)
    throw field_error("schedule", "the interleaved schedule needs at least two pipeline stages");
  // uneven chunks are allowed: layer_stages gives each ⌊L/(p·v)⌋ or ⌈L/(p·v)⌉ blocks, and the slowest stage sets the
  // pipeline's pace (eq. P7); with the embedding or the loss accounted as a layer (eq. P26) Megatron-Core asks the
  // units to divide evenly, and with the first or the last stage's blocks given (eq. P26b) the rest to divide evenly
  validate_explicit_stages(l, m.layers);
  if (const int a = accounted_layers(l); a > 0) {
    const std::int64_t chunks = static_cast<std::int64_t>(l.pp) * l.vp;
    if ((m.layers + a) % chunks != 0)
      throw field_error(l.account_for_embedding_in_pipeline_split ? "account_for_embedding_in_pipeline_split"
                                                                  : "account_for_loss_in_pipeline_split",
                        fmt::format("{} blocks and {} accounted layer{} do not split evenly over pp {} × vp {} = {} chunks",
                                    m.layers, a, a > 1 ? "s" : "", l.pp, l.vp, chunks));
  }
  if (m.layers < static_cast<std::int64_t>(l.pp) * l.vp)
    throw field_error(l.vp > 1 ? "vp" : "pp",
                      fmt::format("pp {} × vp {} is more model chunks than the {} transformer blocks", l.pp, l.vp, m.layers));
  // eq. P31: Megatron-Core's recompute_num_layers counts blocks of one model chunk
  if (l.recompute_num_layers < 1)
    throw field_error("recompute_num_layers", fmt::format("must be at least 1, got {}", l.recompute_num_layers));
  // every chunk holds a block (pp·vp at most the blocks), so N = 1, the default, needs no count: plan validates
  // thousands of layouts
  if (const std::int64_t most = l.recompute_num_layers > 1 ? most_blocks_in_a_chunk(m.layers, l) : 1;
      l.recompute_num_layers > most)
    throw field_error(
        "recompute_num_layers",
        fmt::format("{} is more blocks than a model chunk holds: {} blocks over pp {} × vp {} chunks, at most {} a chunk",
                    l.recompute_num_layers, m.layers, l.pp, l.vp, most));
  // eq. P35: Megatron-Core asserts distribute_saved_activations without sequence parallelism (recalled)
  if (l.distribute_saved_activations && l.sp)
    throw field_error("distribute_saved_activations",
                      "distribute_saved_activations splits the checkpoints over the TP group without sp; sp is on");
  // Megatron-LM's interleaved schedule: the micro-batches go round the stages in groups of p
  if (l.schedule == PipelineSchedule::interleaved && l.micro_batches % l.pp != 0)
    throw field_error(
        "micro_batches",
        fmt::format("the interleaved schedule needs micro-batches in groups of pp {}, got {}", l.pp, l.micro_batches));
  validate_cp_comm(l, m);  // eqs. P29, P36
  if (l.cp > 1 && m.seq % (2 * l.cp) != 0)
    throw field_error(
        "cp", fmt::format("cp {}: the sequence of {} tokens does not split into 2·cp = {} chunks", l.cp, m.seq, 2 * l.cp));
  // eq. P15a's ring steps are blocks of the causal mask; a sliding window (eq. K25) leaves some of them empty, which
  // the CP model does not know
  if (l.cp > 1 && m.window > 0 && m.window < m.seq)
    throw field_error(
        "cp", fmt::format("cp {}: context parallelism over a sliding window of {} tokens is not modelled", l.cp, m.window));
  validate_experts(l, gpus / l.model_parallel(), m);
}

// ---- communication -----------------------------------------------------------------------------------------

Bytes wire_bytes(const CollectiveCall& c, int n) noexcept {
  if (n <= 1) return Bytes{};
  const double part = static_cast<double>(n - 1) / n;
  double f = 1.0;
  switch (c.op) {
    case CollectiveOp::allreduce:
      f = 2.0 * part;
      break;
    case CollectiveOp::allgather:
    case CollectiveOp::reducescatter:
      f = part;
      break;
    case CollectiveOp::broadcast:
    case CollectiveOp::reduce:
      f = 1.0;
      break;
  }
  return c.size * (f * c.count);
}

Bytes tp_activation_bytes(const ParallelLayout& l, const TransformerShape& m, double e) noexcept {
  // eq. P1: b·(s/c)·h elements
  return bytes(static_cast<double>(l.micro_batch) * static_cast<double>(m.seq / l.cp) * static_cast<double>(m.hidden) * e);
}

std::vector<CollectiveCall> tp_block_collectives(const ParallelLayout& l, const TransformerShape& m, double e) {
  if (l.tp <= 1) return {};
  const Bytes S = tp_activation_bytes(l, m, e);
  using G = ParallelGroup;
  using Op = CollectiveOp;
  if (!l.sp)  // eq. P1: after the row-parallel attention output and MLP down projection; their conjugates backward
    return {{"TP all-reduce (forward)", G::tp, Op::allreduce, S, 2, false, false},
            {"TP all-reduce (backward)", G::tp, Op::allreduce, S, 2, true, false, true}};
  // eq. P2: g = all-gather before each column-parallel linear, ḡ = reduce-scatter after each row-parallel one;
  // backward swaps them (the reduce-scatters the column-parallel inputs' gradients, eq. P28; the all-gathers the
  // row-parallel outputs' gradients), and gathers each column-parallel input again for its weight gradient (overlapped)
  return {{"SP all-gather (forward)", G::tp, Op::allgather, S, 2, false, false},
          {"SP reduce-scatter (forward)", G::tp, Op::reducescatter, S, 2, false, false},
          {"SP reduce-scatter (backward)", G::tp, Op::reducescatter, S, 2, true, false, true},
          {"SP all-gather (backward)", G::tp, Op::allgather, S, 2, true, false},
          {"SP input re-gather (backward)", G::tp, Op::allgather, S, 2, true, true}};
}

std::vector<CollectiveCall> tp_recompute_collectives(const ParallelLayout& l, const TransformerShape& m, double e,
                                                     bool early_stop) {
  std::vector<CollectiveCall> calls;
  for (CollectiveCall c : tp_block_collectives(l, m, e)) {
    if (c.backward) continue;
    // eq. R1b: the early stop leaves out the down projection, so its row-parallel output's collective too
    if (early_stop && c.op == (l.sp ? CollectiveOp::reducescatter : CollectiveOp::allreduce)) --c.count;
    // eq. P30: the forward's, again in the block's backward
    if (const auto at = c.what.find("(forward)"); at != std::string::npos) c.what.replace(at, 9, "(recomputed forward)");
    c.backward = true;
    calls.push_back(std::move(c));
  }
  return calls;
}

std::vector<CollectiveCall> checkpoint_input_collectives(const ParallelLayout& l, const TransformerShape& m, double e) {
  if (l.tp <= 1 || !l.distribute_saved_activations) return {};
  // eq. P35: the checkpoint's input gathered whole again before the block runs its forward a second time
  return {{"checkpoint input all-gather (recompute)", ParallelGroup::tp, CollectiveOp::allgather, tp_activation_bytes(l, m, e), 1,
           true, false}};
}

std::vector<CollectiveCall> tp_edge_collectives(const ParallelLayout& l, const TransformerShape& m, double e, bool embedding,
                                                bool head) {
  std::vector<CollectiveCall> calls;
  if (l.tp <= 1) return calls;
  const Bytes S = tp_activation_bytes(l, m, e);
  using G = ParallelGroup;
  using Op = CollectiveOp;
  if (embedding) {  // eq. P27: the vocabulary-parallel lookups' partial sums
    if (l.sp) {
      calls.push_back({"embedding reduce-scatter (forward)", G::tp, Op::reducescatter, S, 1, false, false});
      calls.push_back({"embedding all-gather (backward)", G::tp, Op::allgather, S, 1, true, false});
    } else {
      calls.push_back({"embedding all-reduce (forward)", G::tp, Op::allreduce, S, 1, false, false});
    }
  }
  if (head) {  // eq. P27: the vocabulary-parallel cross entropy
    const Bytes tokens_fp32 = bytes(static_cast<double>(l.micro_batch) * static_cast<double>(m.seq / l.cp) * 4.0);
    calls.push_back({"cross-entropy all-reduces (forward)", G::tp, Op::allreduce, tokens_fp32, 3, false, false});
    // eq. P27b: the output layer, a column-parallel linear: its input's collectives as a block's q/k/v's (P1-P2)
    if (l.sp) {
      calls.push_back({"output layer all-gather (forward)", G::tp, Op::allgather, S, 1, false, false});
      calls.push_back({"output layer reduce-scatter (backward)", G::tp, Op::reducescatter, S, 1, true, false, true});
      calls.push_back({"output layer input re-gather (backward)", G::tp, Op::allgather, S, 1, true, true});
    } else {
      calls.push_back({"output layer all-reduce (backward)", G::tp, Op::allreduce, S, 1, true, false, true});
    }
  }
  return calls;
}

Bytes cp_kv_chunk_bytes(const ParallelLayout& l, const TransformerShape& m, double e) noexcept {
  // eq. P3: K and V of the rank's s/c tokens and its kv_heads/t heads (one, replicated, when t > kv_heads); with
  // multi-head latent attention K of d_qk and V of d_v a head
  const std::int64_t kv_local = std::max<std::int64_t>(1, m.kv_heads / l.tp);
  if (m.qk_head_dim > 0)
    return bytes(l.micro_batch * static_cast<double>(m.seq / l.cp) * static_cast<double>(kv_local) *
                 static_cast<double>(m.qk_head_dim + m.v_head_dim) * e);
  return bytes(2.0 * l.micro_batch * static_cast<double>(m.seq / l.cp) * static_cast<double>(kv_local) *
               static_cast<double>(m.head_dim()) * e);
}

int cp_ring_ranks(const ParallelLayout& l) noexcept {
  if (l.cp_comm == CpComm::a2a_p2p && l.hierarchical_cp > 1) return l.cp / l.hierarchical_cp;  // eq. P36
  return l.cp;
}

CpMergeTraffic cp_merge_traffic(const ParallelLayout& l, const TransformerShape& m, double e) noexcept {
  if (l.cp_comm == CpComm::a2a_p2p && l.hierarchical_cp > 1) {
    // eq. P36: after the inner all-to-alls a rank holds s/b tokens of a/(t·a) heads: P15c's ring of b ranks on them
    ParallelLayout ring = l;
    ring.cp = cp_ring_ranks(l);
    ring.cp_comm = CpComm::p2p;
    ring.hierarchical_cp = 0;
    TransformerShape inner = m;
    const std::int64_t a = l.hierarchical_cp;
    inner.heads = m.heads / a;
    inner.kv_heads = std::max<std::int64_t>(1, m.kv_heads / a);
    inner.hidden = m.hidden / a;  // d_h kept
    return cp_merge_traffic(ring, inner, e);
  }
  CpMergeTraffic r;
  const int c = l.cp;
  if (c <= 1) return r;
  // eq. P15c on the rank's T = b·s/c tokens: its output (and dQ) T·(a/t)·d_h elements, T·(a/t) log-sum-exp rows,
  // dK and dV 2·T·max(1, a_kv/t)·d_h elements
  const double tokens = static_cast<double>(l.micro_batch) * static_cast<double>(m.seq / c);
  const double heads = static_cast<double>(m.heads / l.tp), d = static_cast<double>(m.head_dim());
  double out = tokens * heads * d, rows = tokens * heads;
  double kv = 2.0 * tokens * static_cast<double>(std::max<std::int64_t>(1, m.kv_heads / l.tp)) * d;
  if (m.qk_head_dim > 0) {  // multi-head latent attention: the output of d_v a head, K of d_qk and V of d_v
    out = tokens * heads * static_cast<double>(m.v_head_dim);
    kv = tokens * static_cast<double>(std::max<std::int64_t>(1, m.kv_heads / l.tp)) *
        static_cast<double>(m.qk_head_dim + m.v_head_dim);
  }
  for (int rank = 0; rank < c; ++rank) {  // the slowest rank sets the ring's pace
    Bytes fwd = eq::ring_output_cast_bytes(out, e), bwd{};
    for (int step = 0; step < c; ++step) {
      const eq::RingBlock b = eq::ring_attention_block(rank, step, c);
      fwd += eq::ring_forward_merge_bytes(b.queries * out, b.queries * rows, e);
      bwd += eq::ring_backward_merge_bytes(b.queries * out + b.keys * kv, e);
    }
    r.forward = max(r.forward, fwd);
    r.backward = max(r.backward, bwd);
  }
  r.forward_kernels = 2 * c;   // c output corrections, c−1 log-sum-exp corrections, the cast
  r.backward_kernels = 2 * c;  // each step's dQ and dK/dV additions
  return r;
}

CpLocalTensors cp_local_tensors(const ParallelLayout& l, const TransformerShape& m, double e) noexcept {
  // eq. P29a: T = b·s/c tokens, a/t heads of Q and the output, max(1, a_kv/t) of K and V (eq. P3)
  const double tokens = static_cast<double>(l.micro_batch) * static_cast<double>(m.seq / std::max(l.cp, 1));
  const double heads = static_cast<double>(m.heads / std::max(l.tp, 1));
  const double kv = static_cast<double>(std::max<std::int64_t>(1, m.kv_heads / std::max(l.tp, 1)));
  const double d_qk = static_cast<double>(m.qk_head_dim > 0 ? m.qk_head_dim : m.head_dim());
  const double d_v = static_cast<double>(m.qk_head_dim > 0 ? m.v_head_dim : m.head_dim());
  return {bytes(tokens * heads * d_qk * e), bytes(tokens * kv * d_qk * e), bytes(tokens * kv * d_v * e),
          bytes(tokens * heads * d_v * e)};
}

CpTraffic cp_block_traffic(const ParallelLayout& l, const TransformerShape& m, double e) noexcept {
  const int c = l.cp;
  if (c <= 1) return {};
  if (l.cp_comm == CpComm::a2a) {  // eq. P29a: (c−1)/c of each local tensor leaves the rank, 4 forward, 4 backward
    const CpLocalTensors t = cp_local_tensors(l, m, e);
    const Bytes each = (t.q + t.k + t.v + t.o) * (static_cast<double>(c - 1) / c);
    return {each, each};
  }
  if (l.cp_comm == CpComm::a2a_p2p) {  // eq. P36: the all-to-alls over a, the ring over b = c/a
    const CpLocalTensors t = cp_local_tensors(l, m, e);
    const double a = std::max(l.hierarchical_cp, 1);
    const Bytes each = (t.q + t.k + t.v + t.o) * ((a - 1.0) / a);
    const Bytes kv = cp_kv_chunk_bytes(l, m, e) * static_cast<double>(cp_ring_ranks(l) - 1);
    return {each + kv, each + kv * 2.0};
  }
  // eq. P29a: p2p (P15b) and all_gather move the same K/V: (c−1)·C_KV forward, twice that backward
  const Bytes kv = cp_kv_chunk_bytes(l, m, e) * static_cast<double>(c - 1);
  return {kv, kv * 2.0};
}

Bytes cp_exchange_buffer_bytes(const ParallelLayout& l, const TransformerShape& m, double e) noexcept {
  const int c = l.cp;
  if (c <= 1) return Bytes{};
  switch (l.cp_comm) {
    case CpComm::p2p:
      return Bytes{};
    case CpComm::all_gather:  // eq. P29c: the other ranks' K/V and, backward, dK/dV of the whole sequence
      return cp_kv_chunk_bytes(l, m, e) * (2.0 * (c - 1));
    case CpComm::a2a: {  // eq. P29c: the all-to-alls' Q, K, V beside the rank's own
      const CpLocalTensors t = cp_local_tensors(l, m, e);
      return t.q + t.k + t.v;
    }
    case CpComm::a2a_p2p: {  // eq. P36: the inner all-to-alls' as a2a's (the ring's own blocks not charged)
      if (l.hierarchical_cp <= 1) return Bytes{};
      const CpLocalTensors t = cp_local_tensors(l, m, e);
      return t.q + t.k + t.v;
    }
  }
  return Bytes{};
}

Bytes moe_alltoall_bytes(const ParallelLayout& l, const TransformerShape& m, double e) noexcept {
  if (l.ep <= 1 || m.experts == 0) return Bytes{};
  // eq. P18: T = b·s/c tokens (over t with SP), K copies of h elements, (e−1)/e of them to other ranks
  const double tokens = static_cast<double>(l.micro_batch) * static_cast<double>(m.seq / l.cp) / (l.sp ? l.tp : 1);
  // eq. P23: the busiest rank receives f times the mean (dispatch) and sends it back (combine); the group waits for it
  return bytes(tokens * static_cast<double>(m.top_k) * static_cast<double>(m.hidden) * e * (l.ep - 1) / l.ep *
               moe_rank_load(l, m.experts, m.top_k));
}

Bytes pp_p2p_bytes(const ParallelLayout& l, const TransformerShape& m, double e) noexcept {
  return tp_activation_bytes(l, m, e) / static_cast<double>(l.sp ? l.tp : 1);  // eq. P4
}

std::vector<int> layer_stages(const Network& net, const ParallelLayout& l) { return layer_stages(transformer_blocks(net), l); }

std::vector<int> layer_stages(const std::vector<int>& block, const ParallelLayout& l) {
  int blocks = 0;
  for (int b : block) blocks = std::max(blocks, b + 1);
  // eq. P6/P26/P26b (block_chunk): a block on its chunk's stage; the layers before the first block on the first stage
  std::vector<int> stage(block.size(), 0);
  bool seen_block = false;
  for (std::size_t i = 0; i < block.size(); ++i) {
    if (block[i] >= 0) {
      seen_block = true;
      stage[i] = block_chunk(block[i], blocks, l) % std::max(1, l.pp);
    } else {
      stage[i] = seen_block ? l.pp - 1 : 0;
    }
  }
  return stage;
}

std::vector<BlockRecompute> full_recompute_blocks(const Network& net, const ParallelLayout& l, double fraction) {
  return full_recompute_blocks(transformer_blocks(net), l, fraction);
}

std::vector<BlockRecompute> full_recompute_blocks(const std::vector<int>& block, const ParallelLayout& l, double fraction) {
  int blocks = 0;
  for (int b : block) blocks = std::max(blocks, b + 1);
  std::vector<BlockRecompute> out(static_cast<std::size_t>(blocks));
  const int n = std::max(l.recompute_num_layers, 1);
  const bool uniform = l.recompute_method == RecomputeMethod::uniform;
  int chunk = -1, j = 0;  // j: the block's place in its chunk
  bool before = false;    // the block before it in the chunk runs again
  for (int b = 0; b < blocks; ++b) {
    const int k = block_chunk(b, blocks, l);
    j = k == chunk ? j + 1 : 0;
    if (j == 0) before = false;
    chunk = k;
    // eq. P31: uniform, every block, a checkpoint every N; block, the chunk's first N, a checkpoint each
    const bool again = (uniform || j < n) && block_checkpointed(b, fraction);
    out[static_cast<std::size_t>(b)] = {again, again && (!uniform || j % n == 0 || !before)};
    before = again;
  }
  return out;
}

std::int64_t rank_params(const Network& net, const ParallelLayout& l, int stage) {
  return rank_params(net, layer_stages(net, l), l, stage);
}

std::int64_t rank_params(const Network& net, const std::vector<int>& st, const ParallelLayout& l, int stage) {
  std::int64_t p = 0;
  for (std::size_t i = 0; i < net.layers.size(); ++i) {
    if (st[i] != stage) continue;
    p += rank_layer_params(net.layers[i], l);                              // eq. P5, P17
    if (i + 1 == net.layers.size()) p += tied_output_copy_params(net, l);  // eq. P34: the last stage's copy
  }
  return p;
}

std::int64_t rank_expert_params(const Network& net, const ParallelLayout& l, int stage) {
  return rank_expert_params(net, layer_stages(net, l), l, stage);
}

std::int64_t rank_expert_params(const Network& net, const std::vector<int>& st, const ParallelLayout& l, int stage) {
  std::int64_t p = 0;
  for (std::size_t i = 0; i < net.layers.size(); ++i)
    if (st[i] == stage) p += rank_expert_part(net.layers[i], l);
  return p;
}

StepTraffic dp_step_traffic(std::int64_t params, const Sharding& s, Precision p, int dp_cp, int shard) {
  if (shard <= 0 || shard >= dp_cp || !s.sharded())
    return step_traffic(params, s, p, GpuPlacement{dp_cp, 1, dp_cp});  // eq. P5 = eq. S2 on the dp·cp group
  // eq. P40: eq. S2 with a shard group of n of the dp·cp ranks and dp·cp/n replicas (S2c), as S1 forms them on
  // dp·cp/n "nodes" of n (only the counts matter to S2)
  Sharding h = s;
  h.group = shard;
  return step_traffic(params, h, p, GpuPlacement{dp_cp, dp_cp / shard, shard});
}

// ---- compute -----------------------------------------------------------------------------------------------

namespace {
std::int64_t over(std::int64_t n, std::int64_t t) { return (n + t - 1) / t; }

/// Eq. P6: a TP-split layer as one rank holds it.
void narrow_to_rank(Layer& x, const ParallelLayout& l) {
  if (!tp_split(x.kind)) return;
  const std::int64_t t = std::max(l.tp, 1);
  x.params = rank_layer_params(x, l);
  if (x.experts > 0) {
    x.local_experts = x.experts / std::max(l.ep, 1);       // eq. P17: E/ep experts, their hidden over t
    x.expert_load = moe_rank_load(l, x.experts, x.top_k);  // eqs. P23-P24: the busiest rank's copies
  }
  if (x.kind == LayerKind::attention && x.heads > 0 && x.input_shape.size() >= 2) {
    const std::int64_t kv = x.kv_heads > 0 ? x.kv_heads : x.heads;
    if (x.head_dim == 0) x.head_dim = static_cast<int>(x.input_shape.back() / x.heads);  // MLA's is its own
    x.heads = static_cast<int>(over(x.heads, t));
    x.kv_heads = static_cast<int>(std::max<std::int64_t>(1, kv / t));  // replicated when t > a_kv (eq. P3)
  } else if (x.kind == LayerKind::linear && x.hidden > 0) {
    x.hidden = over(x.hidden, t);  // column-parallel up (and gate): N/t; row-parallel down: K/t
  } else if (x.kind == LayerKind::linear && !x.output_shape.empty()) {
    x.output_shape.back() = over(x.output_shape.back(), t);  // the vocabulary-parallel output projection
  }
}

/// SP: a per-sample [sequence, width] shape on s/t tokens.
void shard_tokens(std::vector<std::int64_t>& shape, std::int64_t t) {
  if (shape.size() >= 2) shape[shape.size() - 2] = over(shape[shape.size() - 2], t);
}

/// A layer's operators on s/n tokens, and the layer's own shapes too where `whole` (CP: every layer; SP: the norms).
void shard_layer_tokens(Layer& x, std::int64_t n, bool whole) {
  if (whole) {
    shard_tokens(x.input_shape, n);
    shard_tokens(x.output_shape, n);
  }
  for (Operator& o : x.ops) {
    shard_tokens(o.input_shape, n);
    shard_tokens(o.output_shape, n);
  }
}
}  // namespace

Network tp_rank_network(const Network& net, const ParallelLayout& l) {
  Network r = net;
  const std::int64_t t = std::max(l.tp, 1), c = std::max(l.cp, 1);
  if (c > 1)  // eq. P6: a CP rank runs its s/c tokens through every layer (its attention core: shard_layer_times)
    for (Layer& x : r.layers) shard_layer_tokens(x, c, true);
  if (t == 1 && l.ep == 1 && !l.moe_expert_capacity_factor) return r;  // eq. P24: a capacity acts at ep 1 too
  for (Layer& x : r.layers) {
    narrow_to_rank(x, l);
    if (l.sp) shard_layer_tokens(x, t, x.kind == LayerKind::layernorm);
  }
  return r;
}

namespace {
/// Eq. P6 with CP: a rank timed at its s/c tokens has its attention core as one causal block of s/c; over the ring
/// it attends its 2 load-balanced chunks to all s keys, c times that work (½·s²/c against ½·(s/c)²), block by block:
/// its forward and backward cores c times over.
void cp_rank_core(LayerTimes& t, std::size_t i, double c) {
  if (i < t.forward_attention.size()) {
    t.forward[i] += t.forward_attention[i] * (c - 1.0);
    t.forward_attention[i] = t.forward_attention[i] * c;
  }
  if (i < t.backward_attention.size()) {
    t.backward[i] += t.backward_attention[i] * (c - 1.0);
    t.backward_attention[i] = t.backward_attention[i] * c;
  }
}
}  // namespace

LayerTimes shard_layer_times(const LayerTimes& times, const Network& net, const ParallelLayout& l, LayerTimesOf of) {
  LayerTimes t = times;
  const double tp = l.tp, cp = l.cp;
  for (std::size_t i = 0; i < net.layers.size() && i < t.forward.size(); ++i) {
    const LayerKind k = net.layers[i].kind;
    // eq. P6: a rank's own times (timed at its s/c tokens) are its own, but for the attention core below. From
    // the whole layers': the vocabulary-parallel embedding looks up every token on every TP rank (masked), so only
    // its tokens divide; the other split layers divide by t·c; norms by c, and by t under SP
    const double share = of == LayerTimesOf::tp_rank ? 1.0
        : k == LayerKind::embedding                  ? 1.0 / cp
        : tp_split(k)                                ? 1.0 / (tp * cp)
        : k == LayerKind::layernorm                  ? 1.0 / (cp * (l.sp ? tp : 1.0))
                                                     : 1.0 / cp;
    // eq. P23: a measured MoE layer has no split between its router and its experts: the busiest rank's whole layer
    // f times (an upper bound by the router's and the permutations' share); a rank's own times carry it in their shapes
    const double load = of == LayerTimesOf::whole_layers && net.layers[i].experts > 0
        ? moe_rank_load(l, net.layers[i].experts, net.layers[i].top_k)
        : 1.0;
    const double f = share * load;
    t.forward[i] = t.forward[i] * f;
    t.backward[i] = t.backward[i] * f;
    if (i < t.forward_gemm.size()) t.forward_gemm[i] = t.forward_gemm[i] * f;
    if (i < t.forward_attention.size()) t.forward_attention[i] = t.forward_attention[i] * f;
    if (i < t.forward_copies.size()) t.forward_copies[i] = t.forward_copies[i] * f;
    if (i < t.forward_unsaved.size()) t.forward_unsaved[i] = t.forward_unsaved[i] * f;
    if (i < t.backward_attention.size()) t.backward_attention[i] = t.backward_attention[i] * f;
    if (i < t.input_wgrad.size()) t.input_wgrad[i] = t.input_wgrad[i] * f;
    if (of == LayerTimesOf::tp_rank && cp > 1) cp_rank_core(t, i, cp);
    // each rank steps its 1/t (a TP rank's own update already is)
    if (i < t.update.size() && tp_split(k) && of == LayerTimesOf::whole_layers)  // the experts' 1/ep too (eq. P17)
      t.update[i] = t.update[i] / (tp * (net.layers[i].experts > 0 ? l.ep : 1));
  }
  return t;
}

// ---- pipeline ----------------------------------------------------------------------------------------------

namespace {
int chunks_per_stage(PipelineSchedule s, int v) noexcept { return s == PipelineSchedule::interleaved ? std::max(v, 1) : 1; }
}  // namespace

double bubble_fraction(PipelineSchedule s, int p, int m, int v) noexcept {
  if (m < 1) return 0.0;
  return static_cast<double>(p - 1) / (static_cast<double>(chunks_per_stage(s, v)) * m);  // eq. P7
}

Seconds pipeline_time(PipelineSchedule s, int p, int m, int v, Seconds per_microbatch) noexcept {
  return per_microbatch * (m + static_cast<double>(p - 1) / chunks_per_stage(s, v));  // eq. P7
}

double in_flight_microbatches(PipelineSchedule s, int p, int m, int v, int stage) noexcept {
  switch (s) {  // eq. P8
    case PipelineSchedule::gpipe:
      return m;
    case PipelineSchedule::one_f_one_b:
      return std::min(p - stage, m);
    case PipelineSchedule::interleaved: {
      const int vv = std::max(v, 1);
      const int warmup = 2 * (p - stage - 1) + (vv - 1) * p;  // Megatron's num_warmup_microbatches, in chunks
      return static_cast<double>(std::min(m * vv, warmup + 1)) / vv;
    }
  }
  return m;
}

// ---- activation memory -------------------------------------------------------------------------------------

namespace {
/// Eq. P9: the layers whose own kept tensors TP splits (attention: q, k, v, context, probabilities over the heads;
/// linear: the MLP's hidden activations, the output projection's logits over the vocabulary). Their inputs are
/// the norms' outputs, which the norms count.
bool tp_splits_kept(LayerKind k) noexcept { return k == LayerKind::attention || k == LayerKind::linear; }

/// Eq. P9 for full recompute: a block's input, its first layer's input at the activation width, per micro-batch.
double block_input_bytes(const Layer& first, const ParallelLayout& l, const ComputeOptions& opt) {
  double e = first.input_shape.empty() ? 0.0 : 1.0;
  for (auto d : first.input_shape) e *= static_cast<double>(d);
  // eq. P35: distribute_saved_activations splits the saved input over the TP group as SP's shards do
  const double sp = l.sp || l.distribute_saved_activations ? l.tp : 1.0;
  return e * activation_bytes_per_element(opt.precision) * l.micro_batch / (sp * l.cp);
}

bool drops_probabilities(const ComputeOptions& opt, ActivationRecompute r) noexcept {
  return fused_attention(opt.attention) || r == ActivationRecompute::selective;
}

/// What layers [from, to) of a stage keep: under full recompute the input of each block and, once, its largest
/// block's tensors (the one running again); otherwise every layer's (eq. P9).
struct StageActivations {
  Bytes per_microbatch{};  // × the in-flight micro-batches (eq. P8)
  Bytes once{};            // full recompute: one block rebuilt at a time
  /// The last stage's loss (eq. P45): what per_microbatch holds of one micro-batch's loss (the eager fp32 logits and
  /// log-softmax, or compiled the head's half logits), and what its backward holds at once, freed before any block of
  /// the micro-batch is recomputed. Zero on the other stages.
  Bytes loss_held{};
  Bytes loss_backward{};
  /// Eq. P10 with P45: the stage's peak, the in-flight micro-batches' kept tensors and the larger of the loss's backward
  /// (in place of what it held) and a block's recompute, as the data-parallel estimate takes them
  /// (activation_bytes_per_sample).
  [[nodiscard]] Bytes peak(double in_flight) const {
    return per_microbatch * in_flight + max(once, loss_backward) - loss_held;  // loss_held ≤ loss_backward
  }
};

StageActivations stage_activations(const Network& net, const std::vector<int>& block, const std::vector<int>& st,
                                   const TransformerShape& m, const ParallelLayout& l, int stage, const ComputeOptions& opt,
                                   ActivationRecompute r) {
  StageActivations a;
  const bool drop = drops_probabilities(opt, r);
  const std::vector<BlockRecompute> again =
      r == ActivationRecompute::full ? full_recompute_blocks(block, l, opt.recompute_blocks) : std::vector<BlockRecompute>{};
  Bytes this_checkpoint{};  // the blocks one checkpoint rebuilds (eq. P31: N of them under uniform)
  bool attention = false;
  for (std::size_t i = 0; i < net.layers.size(); ++i) {
    if (st[i] != stage) continue;
    attention = attention || net.layers[i].kind == LayerKind::attention;
    const Bytes kept = layer_activation_bytes(net.layers[i], l, opt, drop);
    const bool starts = block[i] >= 0 && (i == 0 || block[i - 1] != block[i]);
    if (r != ActivationRecompute::full || block[i] < 0 || !again[static_cast<std::size_t>(block[i])].again) {
      a.per_microbatch += kept;  // eq. P31: a block full recompute leaves alone keeps its activations
      continue;
    }
    if (starts && again[static_cast<std::size_t>(block[i])].keeps_input) {
      a.per_microbatch += bytes(block_input_bytes(net.layers[i], l, opt));
      this_checkpoint = Bytes{};
    }
    this_checkpoint += layer_activation_bytes(net.layers[i], l, opt, fused_attention(opt.attention));
    a.once = max(a.once, this_checkpoint);
  }
  // eq. P29c: one block's attention at a time holds the exchange's buffers (all_gather, a2a) beside what is kept
  if (attention) a.once += cp_exchange_buffer_bytes(l, m, activation_bytes_per_element(opt.precision));
  // the last stage's loss: eager mixed precision's fp32 logits and log-softmax (eq. K14, 8 B a logit), which the
  // vocabulary-parallel cross entropy holds over t
  if (!st.empty() && st.back() == stage) {
    const double over = l.micro_batch / (static_cast<double>(l.tp) * l.cp);  // a rank's logits: b, s/c, V/t
    const double loss = fp32_loss_bytes_per_sample(net, opt);
    a.per_microbatch += bytes(loss * over);
    // eq. M7 with M2: the eager loss's fp32 copy and log-softmax replace the half logits, which the output layer (a
    // language model's head: a last linear layer with no operators, a logit per token) counted as its kept output;
    // compiled (the fused loss keeps the half logits, nothing else) the head's count is what the loss keeps, once
    const bool lm_head = language_model_head(net) && block.back() < 0;  // eq. M2's head, outside every block
    const Bytes head_kept = lm_head ? min(layer_activation_bytes(net.layers.back(), l, opt, drop), a.per_microbatch) : Bytes{};
    if (loss > 0.0) a.per_microbatch -= head_kept;
    // eq. P45: the loss's backward peak, the data-parallel estimate's (12 B a logit eager, the half logits and their
    // gradient compiled; none in fp32) in place of what the loss held, over t and c as the logits are
    if (is_mixed(opt.precision)) {
      a.loss_held = loss > 0.0 ? bytes(loss * over) : head_kept;
      a.loss_backward = bytes(loss_backward_bytes_per_sample(net, opt) * over);
    }
  }
  return a;
}
}  // namespace

namespace {
/// Eq. P23: what the busiest expert-parallel rank keeps of a MoE layer (`kept`, fp32 figure a sample: eq. P16's
/// router probabilities, the K permuted copies' inputs (D), hidden activations (m·F, m = 3 gated, 2 not) and outputs
/// (D)) with the copies' part, rows·K·(m·F + 2D) elements of 4 B, f times: its experts run f times the mean's copies.
double busiest_rank_kept(const Layer& x, const ParallelLayout& l, double kept) {
  const double f = moe_rank_load(l, x.experts, x.top_k);
  if (x.experts <= 0 || f == 1.0 || x.input_shape.empty() || x.input_shape.back() <= 0) return kept;
  double elements = 1.0;
  for (const std::int64_t n : x.input_shape) elements *= static_cast<double>(n);
  const double d = static_cast<double>(x.input_shape.back()), matrices = x.gated ? 3.0 : 2.0;
  const double copies = elements / d * static_cast<double>(x.top_k) * (matrices * static_cast<double>(x.hidden) + 2.0 * d);
  return kept + (f - 1.0) * 4.0 * copies;
}

/// Eq. P9a: what multi-head latent attention keeps whole on every TP rank, its down projections' outputs and their
/// norms' (2·r_q + 2·r_kv + d_rope a token, fp32 figure), as the generator counts them (lib/zoo/arch.cpp, mla_kept).
double mla_whole_kept(const Layer& x) noexcept {
  if (!is_mla(x) || x.input_shape.empty()) return 0.0;
  double tokens = 1.0;
  for (const std::int64_t n : x.input_shape) tokens *= static_cast<double>(n);
  tokens /= static_cast<double>(x.input_shape.back());
  return 4.0 * tokens * static_cast<double>(2 * x.q_lora + 2 * x.kv_lora + x.qk_rope);
}
}  // namespace

Bytes layer_activation_bytes(const Layer& x, const ParallelLayout& l, const ComputeOptions& opt, bool drop_probabilities) {
  double own = busiest_rank_kept(x, l, x.activation_bytes_per_sample);  // fp32 figure, as the memory model counts it
  if (drop_probabilities) own -= flash_attention_saving_per_sample(x);
  double ops = 0.0;
  for (const auto& o : x.ops) ops += o.activation_bytes_per_sample;
  const double sp = l.sp ? l.tp : 1.0;
  const double split = tp_splits_kept(x.kind) ? l.tp : sp;
  const double width = activation_bytes_per_element(opt.precision) / 4.0;
  // eq. P9a: multi-head latent attention's latents whole
  const double whole = mla_whole_kept(x);
  // eq. M7 (docs/model.md, P43): what eager decoder code saves beyond the count, real bytes (eq. M1; under plain
  // autocast M4a; 0 compiled, which Megatron-Core's and NeMo's fused kernels are), split as the tensors they belong
  // to: M1a on a norm as the norm's own (over t with SP), M1b's fourth SwiGLU tensor and M1c's expanded K/V as the
  // MLP's and attention's (over t), M4a's norm term as the norm's and its half copies of a norm's output, the inputs
  // of column-parallel products, whole on every TP rank (over nothing); every one over c
  const double m1 = eager_decoder_saved_bytes_per_sample(x, opt), m4a = autocast_decoder_saved_bytes_per_sample(x, opt);
  const double eager = m1 / split + (x.kind == LayerKind::layernorm ? m4a / sp : m4a);
  return bytes((((own - whole) / split + whole + ops / sp) * width + eager) * l.micro_batch / l.cp);  // eq. P9, M7
}

Bytes block_activation_bytes(const Network& net, int b, const ParallelLayout& l, const ComputeOptions& opt,
                             ActivationRecompute r) {
  const std::vector<int> block = transformer_blocks(net);
  Bytes sum{};
  for (std::size_t i = 0; i < net.layers.size(); ++i) {
    if (block[i] != b) continue;
    if (r == ActivationRecompute::full) return bytes(block_input_bytes(net.layers[i], l, opt));
    sum += layer_activation_bytes(net.layers[i], l, opt, drops_probabilities(opt, r));
  }
  return sum;
}

MemoryEstimate rank_memory(const Network& net, const ParallelLayout& l, int stage, const ComputeOptions& opt,
                           const Sharding& sharding, int dp_cp, ActivationRecompute r, Bytes reserved) {
  const std::vector<int> block = transformer_blocks(net);
  return rank_memory(net, block, transformer_shape(net, block), layer_stages(block, l), l, stage, opt, sharding, dp_cp, r,
                     reserved);
}

namespace {
/// Eq. P10: the weights, gradients and optimiser state of a rank's dense layers (`rank`, over dp·cp) and of its experts
/// (`experts`, over dp·cp/ep, eq. P17), with the stage's activations.
MemoryEstimate rank_state_memory(const Network& rank, const Network& experts, const ParallelLayout& l, const ComputeOptions& opt,
                                 const Sharding& sharding, int dp_cp, Bytes reserved, Bytes per_sample) {
  MemoryEstimate m = estimate_training_memory(rank, l.micro_batch, opt, sharding, std::max(dp_cp, 1), reserved, per_sample);
  if (experts.layers.front().params == 0) return m;
  const MemoryEstimate e =
      estimate_training_memory(experts, l.micro_batch, opt, sharding, std::max(dp_cp / l.ep, 1), Bytes{}, Bytes{});
  m.weights += e.weights;
  m.gradients += e.gradients;
  m.optimizer_state += e.optimizer_state;
  m.allocator_slack += e.allocator_slack;
  m.gathered = max(m.gathered, e.gathered);  // stage 3: one unit gathered at a time
  return m;
}

/// Eq. P20: what a stage-3 (FSDP) rank holds over a step of m micro-batches: under a pipeline its stage's parameters
/// gathered whole (no reshard after a backward: from then to the next forward every block is held) and its gradients
/// whole between the micro-batches (no gradient sync before a chunk's last: eq. S3's accumulation); without one the
/// gradients whole under a flat FSDP's no_sync, sharded where FSDP2 reduce-scatters every micro-batch. Eq. P45: a
/// stage-2 rank's gradients the same (its step reduces them once, P5/P19, as the data-parallel path's S8 does).
struct ShardedState {
  ComputeOptions opt;
  Sharding sharding;
};
ShardedState sharded_state(const ComputeOptions& opt, const Sharding& sh, const ParallelLayout& l) {
  ShardedState s{opt, sh};
  if (l.pp > 1 || !sh.per_parameter) s.opt.accumulate = std::max(s.opt.accumulate, l.micro_batches);
  if (l.pp > 1) s.sharding.reshard_after_forward = false;
  return s;
}
}  // namespace

MemoryEstimate rank_memory(const Network& net, const std::vector<int>& block, const TransformerShape& shape,
                           const std::vector<int>& st, const ParallelLayout& l, int stage, const ComputeOptions& opt,
                           const Sharding& sharding, int dp_cp, ActivationRecompute r, Bytes reserved) {
  Network rank;
  rank.name = net.name;
  rank.input_kind = net.input_kind;
  rank.input_shape = net.input_shape;
  // the first stage reads the tokens (its s/c of them); later stages receive activations (eq. P4)
  rank.input_bytes_per_sample = stage == 0 ? net.input_bytes_per_sample / static_cast<double>(l.cp) : Bytes{};
  Network experts;  // eq. P17: the rank's experts, their state sharded over the dp·cp/ep ranks that hold the same
  experts.layers.emplace_back().kind = LayerKind::linear;
  for (std::size_t i = 0; i < net.layers.size(); ++i) {
    if (st[i] != stage) continue;
    Layer x = net.layers[i];
    const std::int64_t expert = rank_expert_part(x, l);
    x.params = rank_layer_params(x, l) - expert;                                  // eq. P5 (a MoE layer's router)
    if (i + 1 == net.layers.size()) x.params += tied_output_copy_params(net, l);  // eq. P34: the last stage's copy
    experts.layers.front().params += expert;
    x.ops.clear();
    rank.layers.push_back(std::move(x));
  }
  const double in_flight = in_flight_microbatches(l.schedule, l.pp, l.micro_batches, l.vp, stage);
  // eq. P10: in-flight micro-batches × what the stage keeps of one (eq. P9), per sample of the micro-batch
  const StageActivations a = stage_activations(net, block, st, shape, l, stage, opt, r);
  const Bytes per_sample = a.peak(in_flight) / static_cast<double>(l.micro_batch);
  if (sharding.stage < 2) return rank_state_memory(rank, experts, l, opt, sharding, dp_cp, reserved, per_sample);
  const ShardedState s = sharded_state(opt, sharding, l);  // eq. P20, P45
  return rank_state_memory(rank, experts, l, s.opt, s.sharding, dp_cp, reserved, per_sample);
}

// ---- placement ---------------------------------------------------------------------------------------------

namespace {
/// Eq. P17: the group of kind ep or edp that rank `r` (its coordinates `c` of degrees `deg`) belongs to. Its dp·cp
/// ranks are numbered j = the two coordinates in the rank order's order (cp then dp in Megatron's); j mod ep is its
/// place in its EP group, j / ep in its expert-data-parallel group: Megatron-Core's expert rank generator
/// (tp-ep-dp-pp, with the expert TP degree t) numbers the same ranks so.
int expert_group_key(const ParallelLayout& l, const std::array<int, 4>& c, const std::array<int, 4>& deg, ParallelGroup g) {
  int j = 0, stride = 1;
  for (ParallelDim d : l.order)
    if (d == ParallelDim::cp || d == ParallelDim::dp) {
      j += c[static_cast<std::size_t>(d)] * stride;
      stride *= deg[static_cast<std::size_t>(d)];
    }
  const int ep = std::max(l.ep, 1), outer = g == ParallelGroup::ep ? j / ep : j % ep;
  const auto tp = static_cast<std::size_t>(ParallelDim::tp), pp = static_cast<std::size_t>(ParallelDim::pp);
  return c[tp] + deg[tp] * (c[pp] + deg[pp] * outer);
}
}  // namespace

std::vector<std::vector<int>> group_members(const ParallelLayout& l, int gpus, ParallelGroup g) {
  std::array<int, 4> deg{};
  for (ParallelDim d : l.order) deg[static_cast<std::size_t>(d)] = std::max(1, l.degree(d, gpus));
  const bool expert = g == ParallelGroup::ep || g == ParallelGroup::edp;
  std::array<bool, 4> vary{};
  for (ParallelDim d : varying(g)) vary[static_cast<std::size_t>(d)] = true;
  std::map<int, std::vector<int>> by_key;  // the rank with the varying coordinates set to 0 names the group
  for (int r = 0; r < gpus; ++r) {
    int rest = r, stride = 1, key = 0;
    std::array<int, 4> coord{};
    for (ParallelDim d : l.order) {
      const auto i = static_cast<std::size_t>(d);
      coord[i] = rest % deg[i];
      rest /= deg[i];
      if (!vary[i]) key += coord[i] * stride;
      stride *= deg[i];
    }
    by_key[expert ? expert_group_key(l, coord, deg, g) : key].push_back(r);
  }
  std::vector<std::vector<int>> out;
  out.reserve(by_key.size());
  for (auto& [key, members] : by_key) out.push_back(std::move(members));
  return out;
}

RankCoordinates rank_coordinates(const ParallelLayout& l, int gpus, int rank) {
  std::array<int, 4> coord{};
  int rest = rank;
  for (ParallelDim d : l.order) {
    const auto i = static_cast<std::size_t>(d);
    const int deg = std::max(1, l.degree(d, gpus));
    coord[i] = rest % deg;
    rest /= deg;
  }
  using D = ParallelDim;
  auto at = [&coord](D d) { return coord[static_cast<std::size_t>(d)]; };
  return {at(D::tp), at(D::cp), at(D::dp), at(D::pp)};
}

namespace {
GroupPlacement place_members(ParallelGroup g, const std::vector<std::vector<int>>& members, const Cluster& c, int gpus, int gpn,
                             int nodes_total, int nics);

/// What eq. P11 places groups on: GPUs a node, nodes, and NICs a node (one in the simple form, Cluster::inter_node).
struct NodeShape {
  int gpn = 1, nodes_total = 1, nics = 1;
};
NodeShape node_shape(const Cluster& c, int gpus) {
  NodeShape n;
  n.gpn = std::max(1, c.gpus_per_node);
  n.nodes_total = (gpus + n.gpn - 1) / n.gpn;
  if (c.topology && c.topology->fabric().nics_per_node > 0) n.nics = c.topology->fabric().nics_per_node;
  return n;
}

/// Each group split in two ways by `a` (which divides its size): its runs of `a` consecutive ranks, and its ranks `a`
/// apart (P36's inner and outer CP groups; P40's shard and replica groups).
std::pair<std::vector<std::vector<int>>, std::vector<std::vector<int>>> runs_and_strides(
    const std::vector<std::vector<int>>& groups, std::size_t a) {
  std::vector<std::vector<int>> runs, strides;
  for (const auto& grp : groups) {
    for (std::size_t k = 0; k + a <= grp.size(); k += a)
      runs.emplace_back(grp.begin() + static_cast<std::ptrdiff_t>(k), grp.begin() + static_cast<std::ptrdiff_t>(k + a));
    for (std::size_t j = 0; j < a; ++j) {
      std::vector<int>& o = strides.emplace_back();
      for (std::size_t k = j; k < grp.size(); k += a) o.push_back(grp[k]);
    }
  }
  return {std::move(runs), std::move(strides)};
}
}  // namespace

LayoutPlacement place_layout(const ParallelLayout& l, const Cluster& c, int gpus) {
  const int gpn = std::max(1, c.gpus_per_node);
  if (gpus > c.max_gpus())
    throw field_error("gpus", fmt::format("cluster '{}' holds at most {} GPUs, asked for {}", c.name, c.max_gpus(), gpus));
  if (gpus > gpn && gpus % gpn != 0)
    throw field_error("gpus", fmt::format("{} GPUs do not fill whole nodes of {} GPUs", gpus, gpn));
  if (l.dp(gpus) < 1)
    throw field_error("gpus", fmt::format("tp {} × pp {} × cp {} does not divide {} GPUs", l.tp, l.pp, l.cp, gpus));
  const NodeShape shape = node_shape(c, gpus);
  const int nodes_total = shape.nodes_total, nics = shape.nics;
  LayoutPlacement out;
  using G = ParallelGroup;
  for (ParallelGroup g : {G::tp, G::cp, G::pp, G::dp, G::dp_cp, G::ep, G::edp}) {
    GroupPlacement& p = out.groups[static_cast<std::size_t>(g)];
    if (l.ep == 1 && (g == G::ep || g == G::edp)) {  // no expert parallelism: groups of one, and the dp·cp group
      if (g == G::edp) p = out[G::dp_cp];
      else p.groups = gpus, p.first = {0};
      p.group = g;
      continue;
    }
    p = place_members(g, group_members(l, gpus, g), c, gpus, gpn, nodes_total, nics);
  }
  if (l.cp > 1 && l.cp_comm == CpComm::a2a_p2p && l.hierarchical_cp > 0 && l.cp % l.hierarchical_cp == 0) {
    // eq. P36: Megatron-Core's hierarchical CP groups (recalled): runs of a consecutive ranks of each CP group, and
    // the ranks a apart
    const auto [inner, outer] = runs_and_strides(group_members(l, gpus, G::cp), static_cast<std::size_t>(l.hierarchical_cp));
    out.cp_inner = place_members(G::cp, inner, c, gpus, gpn, nodes_total, nics);
    out.cp_outer = place_members(G::cp, outer, c, gpus, gpn, nodes_total, nics);
  }
  return out;
}

namespace {
/// Eq. P11-P12: where groups of kind `g` (`members`, each a list of ranks) fall on the cluster's nodes.
GroupPlacement place_members(ParallelGroup g, const std::vector<std::vector<int>>& members, const Cluster& c, int gpus, int gpn,
                             int nodes_total, int nics) {
  GroupPlacement p;
  {
    p.group = g;
    p.groups = static_cast<int>(members.size());
    p.size = members.empty() ? 1 : static_cast<int>(members.front().size());
    p.first = members.empty() ? std::vector<int>{} : members.front();
    p.nodes = 1;
    p.per_node = 1;
    std::vector<int> crossing(static_cast<std::size_t>(nodes_total), 0);
    for (const auto& grp : members) {
      std::map<int, int> on;  // node → ranks of the group there
      for (int r : grp) ++on[r / gpn];
      int most = 0, least = gpus;
      for (auto [node, n] : on) {
        most = std::max(most, n);
        least = std::min(least, n);
      }
      p.nodes = std::max(p.nodes, static_cast<int>(on.size()));
      p.per_node = std::max(p.per_node, most);
      if (most != least) p.uniform = false;
      if (on.size() > 1)
        for (auto [node, n] : on) ++crossing[static_cast<std::size_t>(node)];
    }
    p.inside_node = p.nodes == 1;
    p.groups_per_node = crossing.empty() ? 0 : *std::max_element(crossing.begin(), crossing.end());
    // eq. P11: each crossing group drives min(its ranks on the node, NICs) of the node's NICs at once
    if (!p.inside_node) p.nic_share = eq::nic_share(p.groups_per_node, p.per_node, nics);
    p.at = GpuPlacement{p.nodes * p.per_node, p.nodes, p.per_node};
    if (p.size > 1) {
      if (!p.inside_node) {
        p.path = PathType::net;
      } else if (c.topology) {
        PathType worst = PathType::loc;
        for (std::size_t i = 0; i < p.first.size(); ++i) {
          const int a = p.first[i], b = p.first[(i + 1) % p.first.size()];
          const PathType t = c.topology->path(a, b).type;
          if (static_cast<int>(t) > static_cast<int>(worst)) worst = t;
        }
        p.path = worst;
      } else {
        p.path = PathType::dis;  // not known: the simple form describes no paths
      }
    }
  }
  return p;
}
}  // namespace

LayoutShards layout_shards(const ParallelLayout& l, const Sharding& s, const Cluster& c, int gpus, const LayoutPlacement& at) {
  const GroupPlacement& dpg = at[ParallelGroup::dp_cp];
  const int dp_cp = dpg.size;
  LayoutShards r{dp_cp, 1, dpg, GroupPlacement{}};
  r.replica_at.group = ParallelGroup::dp_cp;
  r.replica_at.groups = gpus;
  if (!s.sharded() || dp_cp <= 1 || s.group == Sharding::kGroupAll) return r;
  int n = s.group;
  if (s.group == Sharding::kGroupNode) {  // eq. P40: the dp·cp group's ranks on one node
    if (!dpg.uniform)
      throw field_error("gpus",
                        fmt::format("the framework shards inside a node, and the layout's {} data-parallel (dp·cp) "
                                    "ranks are not spread evenly over the nodes (eq. P40)",
                                    dp_cp));
    n = dpg.per_node;
  }
  if (n > dp_cp || dp_cp % n != 0)
    throw field_error("strategy.sharding.group",
                      fmt::format("the framework shards over groups of {} data-parallel ranks; the layout's {} "
                                  "(dp {} × cp {}) do not divide into them (eq. P40)",
                                  n, dp_cp, l.dp(gpus), l.cp));
  if (n == dp_cp) return r;
  if (l.ep > 1)
    throw field_error("ep",
                      fmt::format("hybrid sharding (shard groups of {} of the {} data-parallel ranks) beside expert "
                                  "parallelism is not modelled (eq. P40)",
                                  n, dp_cp));
  // eq. P40: each dp·cp group's ranks in rank order, n consecutive ones a shard group, every n-th a replica group
  const auto [gpn, nodes_total, nics] = node_shape(c, gpus);
  const auto [shards, replicas] = runs_and_strides(group_members(l, gpus, ParallelGroup::dp_cp), static_cast<std::size_t>(n));
  r.shard = n;
  r.replicas = dp_cp / n;
  r.shard_at = place_members(ParallelGroup::dp_cp, shards, c, gpus, gpn, nodes_total, nics);
  r.replica_at = place_members(ParallelGroup::dp_cp, replicas, c, gpus, gpn, nodes_total, nics);
  return r;
}

Seconds group_collective_time(const CollectiveModel& model, const CollectiveCall& call, const GroupPlacement& g) {
  if (g.size <= 1 || call.count <= 0) return Seconds{};
  const Bytes size = g.inside_node ? call.size : call.size * g.nic_share;  // eq. P12
  return model.time(call.op, size, g.at) * static_cast<double>(call.count);
}

namespace {
/// Eq. P12: a send of `size` from rank a to rank b of a group, every group of its kind sending at once.
Seconds pair_p2p_time(const Cluster& c, const GroupPlacement& g, int a, int b, Bytes size) {
  const int gpn = std::max(1, c.gpus_per_node);
  const bool across = a / gpn != b / gpn;
  const Bytes sent = across ? size * g.nic_share : size;  // eq. P12
  if (c.topology) {
    const Seconds t = p2p_copy_time(*c.topology, a, b, sent);
    const double scale = across ? c.topology_inter_scale : c.topology_intra_scale;  // a what-if's links (resources.hpp)
    if (scale == 1.0) return t;
    const Seconds latency = p2p_copy_time(*c.topology, a, b, Bytes{});
    return latency + (t - latency) / scale;
  }
  const LinkSpec& link = across ? c.inter_node : c.intra_node;
  if (!(in_bytes_per_second(link.bandwidth) > 0.0)) return link.latency;
  return link.latency + sent / link.bandwidth;
}
}  // namespace

Seconds pipeline_p2p_time(const Cluster& c, const GroupPlacement& pp, Bytes size) {
  if (pp.size <= 1 || pp.first.size() < 2) return Seconds{};
  return pair_p2p_time(c, pp, pp.first[0], pp.first[1], size);
}

Seconds alltoall_time(const Cluster& c, const GroupPlacement& ep, Bytes per_rank) {
  const auto n = static_cast<int>(ep.first.size());
  if (ep.size <= 1 || n < 2) return Seconds{};
  const int gpn = std::max(1, c.gpus_per_node);
  const Bytes part = per_rank / static_cast<double>(n - 1);  // eq. P18: an equal part to each peer
  Seconds slowest{};
  for (int a : ep.first) {
    int near = -1, far = -1, n_near = 0, n_far = 0;  // a peer on the node and one off it, and how many of each
    for (int b : ep.first) {
      if (b == a) continue;
      const bool across = a / gpn != b / gpn;
      (across ? far : near) = b;
      ++(across ? n_far : n_near);
    }
    // eq. P18: the parts to the node's peers leave over the GPU's NVLink, those to other nodes over its NIC (the
    // NIC share as eq. P11), at once; one link latency a peer beyond the first of each
    auto leg = [&](int peer, int peers) {
      if (peers == 0) return Seconds{};
      const Seconds one = pair_p2p_time(c, ep, a, peer, part * static_cast<double>(peers));
      return one + (pair_p2p_time(c, ep, a, peer, Bytes{}) * static_cast<double>(peers - 1));
    };
    slowest = max(slowest, max(leg(near, n_near), leg(far, n_far)));
  }
  return slowest;
}

CpCollectiveTimes cp_collective_times(const CollectiveModel& coll, const Cluster& c, const GroupPlacement& cp,
                                      const ParallelLayout& l, const TransformerShape& m, double e) {
  if (l.cp <= 1 || cp.size <= 1) return {};
  using G = ParallelGroup;
  switch (l.cp_comm) {
    case CpComm::p2p:
      return {};
    case CpComm::all_gather: {  // eq. P29b: the sequence's K/V gathered, c·C_KV, and backward its dK/dV reduce-scattered
      const Bytes whole = cp_kv_chunk_bytes(l, m, e) * static_cast<double>(l.cp);
      const Seconds gather =
          group_collective_time(coll, {"CP K/V all-gather", G::cp, CollectiveOp::allgather, whole, 1, false, false}, cp);
      const Seconds scatter =
          group_collective_time(coll, {"CP dK/dV reduce-scatter", G::cp, CollectiveOp::reducescatter, whole, 1, true, false}, cp);
      return {gather, gather + scatter};
    }
    case CpComm::a2a:
    case CpComm::a2a_p2p: {  // eq. P29b: each tensor's (n−1)/n to the other ranks, one all-to-all each, both ways; eq.
                             // P36: over the inner group of a (`cp` its placement), the ring's part is P15's
      const CpLocalTensors t = cp_local_tensors(l, m, e);
      const double n = l.cp_comm == CpComm::a2a ? l.cp : std::max(l.hierarchical_cp, 1);
      const double out = (n - 1.0) / n;
      Seconds sum{};
      for (Bytes x : {t.q, t.k, t.v, t.o}) sum += alltoall_time(c, cp, x * out);
      return {sum, sum};
    }
  }
  return {};
}

bool tied_output_embedding(const Network& net) noexcept {
  if (net.layers.empty()) return false;
  const Layer& out = net.layers.back();
  const bool embedding = std::any_of(net.layers.begin(), net.layers.end(),
                                     [](const Layer& x) { return x.kind == LayerKind::embedding && x.params > 0; });
  return embedding && out.kind == LayerKind::linear && out.params == 0 && out.macs_per_sample > 0.0;
}

std::int64_t tied_output_copy_params(const Network& net, const ParallelLayout& l) noexcept {
  if (l.pp <= 1 || !tied_output_embedding(net)) return 0;
  const Layer& out = net.layers.back();
  if (out.input_shape.empty() || out.output_shape.empty()) return 0;
  // eq. P34: the output layer's own copy of the word embedding, its vocabulary-parallel ⌈V/t⌉ rows of h
  const std::int64_t rows = (out.output_shape.back() + l.tp - 1) / std::max(l.tp, 1);
  return rows * out.input_shape.back();
}

Bytes tied_embedding_grad_bytes(const ParallelLayout& l, const TransformerShape& m, double grad_bytes) noexcept {
  if (l.pp <= 1) return Bytes{};
  // eq. P33: the vocabulary-parallel embedding's rows on a TP rank, (V/t)·h elements
  const std::int64_t rows = (m.vocab + l.tp - 1) / std::max(l.tp, 1);
  return bytes(static_cast<double>(rows) * static_cast<double>(m.hidden) * grad_bytes);
}

Seconds tied_embedding_allreduce_time(const Cluster& c, const GroupPlacement& pp, Bytes size) {
  if (pp.size <= 1 || pp.first.size() < 2 || !(size > Bytes{})) return Seconds{};
  // eq. P33: a ring all-reduce of two ranks, two steps of size/2 each way
  return pair_p2p_time(c, pp, pp.first.front(), pp.first.back(), size / 2.0) * 2.0;
}

Seconds cp_ring_step_time(const Cluster& c, const GroupPlacement& cp, Bytes size) {
  if (cp.size <= 1 || cp.first.size() < 2) return Seconds{};
  Seconds slowest{};  // eq. P15d: every rank sends to the next at once; the step ends with the slowest pair
  for (std::size_t i = 0; i < cp.first.size(); ++i)
    slowest = max(slowest, pair_p2p_time(c, cp, cp.first[i], cp.first[(i + 1) % cp.first.size()], size));
  return slowest;
}

}  // namespace dlscale
