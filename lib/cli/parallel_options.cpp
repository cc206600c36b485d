// The model-parallel options (lib/cli/parallel_options.hpp): a layout from the command line over the
// framework file's `parallel:` section.
#include "cli/parallel_options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <string>
#include <utility>

#include "cli/commands.hpp"
#include "cli/scenario_options.hpp"
#include "dlscale/error.hpp"
#include "io/numbers.hpp"

namespace dlscale::cli {

namespace {
/// A setting a framework file may also give: `--NAME` sets it (1), `--no-NAME` clears it (0); neither leaves the -1
/// that keeps the file's.
void add_switch(CLI::App& cmd, const std::string& name, int& target, const std::string& on, const std::string& off,
                const std::string& group) {
  cmd.add_flag_callback(
         "--" + name, [&target] { target = 1; }, on)
      ->group(group);
  cmd.add_flag_callback(
         "--no-" + name, [&target] { target = 0; }, off)
      ->group(group);
}

/// The pipeline's options: stages, virtual stages, schedule, the split of the blocks and the sends' overlap.
void add_pipeline_options(CLI::App& cmd, ParallelOptions& o, const char* g) {
  cmd.add_option("--pp", o.pp, "Pipeline stages")->type_name("N")->group(g);
  cmd.add_option("--vp", o.vp, "Virtual stages per pipeline rank (interleaved 1F1B)")->type_name("N")->group(g);
  cmd.add_option("--schedule", o.schedule,
                 "Pipeline schedule: gpipe, 1f1b or interleaved (default: the framework's, else "
                 "1f1b; interleaved with --vp > 1)")
      ->type_name("NAME")
      ->group(g);
  add_switch(cmd, "pp-comm-overlap", o.pp_comm_overlap,
             "Pipeline sends overlapped with the next chunk's compute (Megatron's overlap_p2p_comm; interleaved only; eq. P25)",
             "No pipeline send overlap (over a framework file's)", g);
  cmd.add_flag("--account-for-embedding-in-pipeline-split", o.account_embedding,
               "Count the embedding as a layer when splitting the blocks over the chunks: the first holds one fewer (eq. P26)")
      ->group(g);
  cmd.add_flag("--account-for-loss-in-pipeline-split", o.account_loss,
               "Count the output layer and loss as a layer when splitting the blocks: the last chunk holds one fewer (eq. P26)")
      ->group(g);
  cmd.add_option("--num-layers-in-first-pipeline-stage", o.first_stage_layers,
                 "Blocks on the first pipeline stage, the rest split evenly over the stages after it (Megatron-Core; eq. P26b)")
      ->type_name("N")
      ->group(g);
  cmd.add_option("--num-layers-in-last-pipeline-stage", o.last_stage_layers,
                 "Blocks on the last pipeline stage, the rest split evenly over the stages before it (Megatron-Core; eq. P26b)")
      ->type_name("N")
      ->group(g);
}

/// Megatron-Core's partial full recompute and its distributed checkpoint inputs.
void add_recompute_options(CLI::App& cmd, ParallelOptions& o, const char* g) {
  cmd.add_option("--recompute-method", o.recompute_method,
                 "Under --checkpointing full: uniform (blocks checkpointed N at a time, every block recomputed) or block "
                 "(the first N blocks of each model chunk recomputed, the rest kept; Megatron-Core's; eq. P31)")
      ->type_name("NAME")
      ->group(g);
  cmd.add_option("--recompute-num-layers", o.recompute_num_layers,
                 "Under --checkpointing full: N of --recompute-method, blocks of one model chunk (default 1; eq. P31)")
      ->type_name("N")
      ->group(g);
  add_switch(cmd, "distribute-saved-activations", o.distribute_saved_activations,
             "Under --checkpointing full with TP and without --sp: each checkpoint's input split over the TP group, "
             "all-gathered before its recompute (Megatron-Core's; eq. P35)",
             "Checkpoint inputs whole on every TP rank (over a framework file's distribute_saved_activations)", g);
}
}  // namespace

void add_parallel_options(CLI::App& cmd, ParallelOptions& o) {
  const char* g = "Model parallelism";
  cmd.add_option("--tp", o.tp, "Tensor-parallel degree (Megatron's column/row split of each block)")->type_name("N")->group(g);
  add_switch(cmd, "sp", o.sp, "Sequence parallelism over the TP group (norms and dropout sharded)",
             "No sequence parallelism (over a framework file's sp: true)", g);
  add_switch(cmd, "tp-comm-overlap", o.tp_comm_overlap,
             "TP communication overlapped with the GEMMs (Transformer Engine's userbuffers; needs --sp; eq. P14)",
             "No TP communication overlap (over a framework file's)", g);
  add_switch(cmd, "tp-async-backward", o.tp_async_backward,
             "Each column-parallel linear's input-gradient collective beside its weight-gradient GEMM (Megatron-LM; eq. P28)",
             "Input-gradient collectives exposed whole (over a framework file's tp_async_backward)", g);
  add_switch(cmd, "dp-comm-overlap", o.dp_comm_overlap,
             "DP gradient reduction and parameter gather overlapped with the last backward and first forward (eq. P19)",
             "No DP communication overlap (over a framework file's)", g);
  add_recompute_options(cmd, o, g);
  add_pipeline_options(cmd, o, g);
  cmd.add_option("--cp", o.cp, "Context-parallel degree (ring attention over the sequence)")->type_name("N")->group(g);
  add_cp_comm_option(cmd, o.cp_comm, g);
  cmd.add_option("--hierarchical-cp", o.hierarchical_cp,
                 "With --cp-comm a2a+p2p: the all-to-all group's size A, a divisor of --cp (Megatron-Core's "
                 "hierarchical_context_parallel_sizes [A, cp/A]; eq. P36)")
      ->type_name("A")
      ->group(g);
  cmd.add_option("--ep", o.ep, "Expert-parallel degree (a mixture of experts' experts over ranks of dp·cp)")
      ->type_name("N")
      ->group(g);
  cmd.add_option("--moe-imbalance", o.moe_imbalance,
                 "Routing imbalance: the busiest expert-parallel rank's tokens over the mean's, >= 1 (eq. P23; default: "
                 "the framework's, else 1.0, balanced)")
      ->type_name("F")
      ->group(g);
  add_moe_routing_options(cmd, o.moe, g);
  cmd.add_option("--micro-batches", o.micro_batches, "Micro-batches per step and pipeline (--batch is the micro-batch)")
      ->type_name("M")
      ->group(g);
  cmd.add_option("--global-batch", o.global_batch, "Samples per step over the job, instead of --micro-batches")
      ->type_name("G")
      ->group(g);
  cmd.add_option("--rank-order", o.rank_order, "Rank order, fastest first (default: the framework's, else tp-cp-ep-dp-pp)")
      ->type_name("ORDER")
      ->group(g);
}

void add_cp_comm_option(CLI::App& cmd, std::string& cp_comm, const std::string& group) {
  cmd.add_option("--cp-comm", cp_comm,
                 "How the CP ranks exchange K/V: p2p (the ring, overlapped), all_gather (the sequence's K/V gathered "
                 "first), a2a (Ulysses' all-to-alls of Q, K, V and the output) or a2a+p2p (a2a inside groups of "
                 "--hierarchical-cp, the ring between them); eqs. P29, P36 (default: the framework's, else p2p)")
      ->type_name("NAME")
      ->group(group);
}

CpComm cp_comm_option(const std::string& text) {
  try {
    return cp_comm_from_string(text);
  } catch (const InputError& e) {
    throw UsageError("--cp-comm", e.message());
  }
}

void add_moe_routing_options(CLI::App& cmd, MoeRoutingOptions& o, const std::string& group) {
  cmd.add_option("--moe-expert-capacity-factor", o.capacity_factor,
                 "Megatron-Core's expert capacity factor: each expert takes at most C x the mean's token copies, the "
                 "rest dropped (eq. P24; default: the framework's, else dropless)")
      ->type_name("C")
      ->group(group);
  cmd.add_flag("--moe-pad-expert-input-to-capacity", o.pad,
               "Every expert runs exactly C x the mean's copies, padded (eq. P24; needs --moe-expert-capacity-factor)")
      ->group(group);
  cmd.add_option("--moe-expert-load-cv", o.load_cv,
                 "Per-expert load spread (coefficient of variation): the busiest EP rank's imbalance follows ep, "
                 "instead of --moe-imbalance (eq. P24)")
      ->type_name("V")
      ->group(group);
}

void apply_moe_routing_options(const MoeRoutingOptions& o, ParallelLayout& l) {
  if (!o.capacity_factor.empty()) {
    const auto v = finite_number(o.capacity_factor);
    if (!v) throw UsageError("--moe-expert-capacity-factor", fmt::format("'{}' is not a number", o.capacity_factor));
    l.moe_expert_capacity_factor = *v;
  }
  if (o.pad) l.moe_pad_expert_input_to_capacity = true;
  if (!o.load_cv.empty()) {
    const auto v = finite_number(o.load_cv);
    if (!v) throw UsageError("--moe-expert-load-cv", fmt::format("'{}' is not a number", o.load_cv));
    l.moe_expert_load_cv = *v;
  }
}

double moe_imbalance_option(const std::string& text) {
  const auto v = finite_number(text);
  if (!v) throw UsageError("--moe-imbalance", fmt::format("'{}' is not a number", text));
  return *v;
}

namespace {
/// Eq. P39: the options given on the line that act on nothing once the layout is data parallelism (its groups of one
/// rank; the data-parallel path's overlap and recompute are the framework's and --checkpointing's), said in one note.
void note_idle_layout_options(const ParallelOptions& o, const ParallelLayout& l) {
  // sequence parallelism shards over the TP group; with none (tp 1) it acts on nothing, so it is ignored with a note
  // rather than refused: a framework file's sp: true stays valid for the layouts without TP
  if (o.sp == 1 && l.tp == 1)
    defer_note("note: --sp shards norms and dropout over the TP group; with tp 1 there is none, so it changes nothing");
  if (!data_parallel_layout(l)) return;
  std::string idle;
  const auto add = [&idle](bool given, const char* option) {
    if (given) idle += (idle.empty() ? "" : ", ") + std::string(option);
  };
  add(o.tp_comm_overlap >= 0, "--[no-]tp-comm-overlap");
  add(o.tp_async_backward >= 0, "--[no-]tp-async-backward");
  add(o.dp_comm_overlap >= 0, "--[no-]dp-comm-overlap");
  add(o.pp_comm_overlap >= 0, "--[no-]pp-comm-overlap");
  add(!o.schedule.empty(), "--schedule");
  add(!o.recompute_method.empty(), "--recompute-method");
  add(o.recompute_num_layers != -1, "--recompute-num-layers");
  add(o.distribute_saved_activations >= 0, "--[no-]distribute-saved-activations");
  add(o.account_embedding || o.account_loss, "--account-for-*-in-pipeline-split");
  add(!o.cp_comm.empty() || o.hierarchical_cp != 0, "--cp-comm, --hierarchical-cp");
  if (!idle.empty())
    defer_note(
        fmt::format("note: tp, pp, cp and ep 1 is data parallelism, predicted as --accumulate {} (eq. P39): {} "
                    "act on nothing there",
                    l.micro_batches, idle));
}
}  // namespace

void apply_parallel_options(const ParallelOptions& o, const ScenarioOptions& so, Scenario& sc) {
  if (!o.any() && !sc.strategy.parallel_degrees) {
    if (!o.moe_imbalance.empty())
      throw UsageError("--moe-imbalance", "routing imbalance needs a model-parallel layout with experts over ranks (--ep)");
    if (o.moe.any())
      throw UsageError(!o.moe.capacity_factor.empty() ? "--moe-expert-capacity-factor"
                           : o.moe.pad                ? "--moe-pad-expert-input-to-capacity"
                                                      : "--moe-expert-load-cv",
                       "needs a model-parallel layout (--ep, --tp, ...)");
    return;
  }
  ParallelLayout l = sc.strategy.parallel.value_or(ParallelLayout{});
  if (o.micro_batches > 0 && o.global_batch > 0)
    throw UsageError("--global-batch", "give --micro-batches or --global-batch, not both");
  for (auto [v, option] : {std::pair{o.tp, "--tp"},
                           {o.pp, "--pp"},
                           {o.vp, "--vp"},
                           {o.cp, "--cp"},
                           {o.ep, "--ep"},
                           {o.micro_batches, "--micro-batches"},
                           {o.first_stage_layers, "--num-layers-in-first-pipeline-stage"},
                           {o.last_stage_layers, "--num-layers-in-last-pipeline-stage"}})
    if (v < 0) throw UsageError(option, fmt::format("must be at least 1, got {}", v));
  if (o.global_batch < 0) throw UsageError("--global-batch", fmt::format("must be at least 1, got {}", o.global_batch));
  if (o.tp > 0) l.tp = o.tp;
  if (o.pp > 0) l.pp = o.pp;
  if (o.cp > 0) l.cp = o.cp;
  if (!o.cp_comm.empty()) l.cp_comm = cp_comm_option(o.cp_comm);
  if (o.hierarchical_cp != 0) l.hierarchical_cp = o.hierarchical_cp;  // below 1, or not dividing cp: validate's
  if (o.ep > 0) l.ep = o.ep;
  // eqs. P23-P24: either option over the framework's other (both on the line: validate's error)
  if (!o.moe.load_cv.empty()) l.moe_imbalance = 1.0;
  if (!o.moe_imbalance.empty()) l.moe_expert_load_cv = 0.0;
  if (!o.moe_imbalance.empty()) l.moe_imbalance = moe_imbalance_option(o.moe_imbalance);
  apply_moe_routing_options(o.moe, l);
  if (o.sp >= 0) l.sp = o.sp == 1;
  if (o.tp_comm_overlap >= 0) l.tp_comm_overlap = o.tp_comm_overlap == 1;
  if (o.tp_async_backward >= 0) l.tp_async_backward = o.tp_async_backward == 1;
  if (o.dp_comm_overlap >= 0) l.dp_comm_overlap = o.dp_comm_overlap == 1;
  if (o.pp_comm_overlap >= 0) l.pp_comm_overlap = o.pp_comm_overlap == 1;
  if (o.account_embedding) l.account_for_embedding_in_pipeline_split = true;
  if (o.recompute_num_layers != -1) l.recompute_num_layers = o.recompute_num_layers;  // below 1: validate's
  if (o.distribute_saved_activations >= 0) l.distribute_saved_activations = o.distribute_saved_activations == 1;
  try {
    if (!o.recompute_method.empty()) l.recompute_method = recompute_method_from_string(o.recompute_method);
  } catch (const InputError& e) {
    throw UsageError("--recompute-method", e.message());
  }
  if (o.account_loss) l.account_for_loss_in_pipeline_split = true;
  if (o.first_stage_layers > 0) l.num_layers_in_first_pipeline_stage = o.first_stage_layers;
  if (o.last_stage_layers > 0) l.num_layers_in_last_pipeline_stage = o.last_stage_layers;
  if (o.vp > 0) {
    l.vp = o.vp;
    if (o.vp > 1 && o.schedule.empty()) l.schedule = PipelineSchedule::interleaved;
  }
  if (o.micro_batches > 0) {
    l.micro_batches = o.micro_batches;
    l.global_batch_target = 0;
  }
  if (o.global_batch > 0) l.global_batch_target = o.global_batch;
  try {
    if (!o.schedule.empty()) l.schedule = pipeline_schedule_from_string(o.schedule);
  } catch (const InputError& e) {
    throw UsageError("--schedule", e.message());
  }
  try {
    if (!o.rank_order.empty()) l.order = parse_rank_order(o.rank_order);
  } catch (const InputError& e) {
    throw UsageError("--rank-order", e.message());
  }
  if (o.vp > 1 && l.pp < 2)
    throw UsageError("--vp",
                     fmt::format("{} virtual stages need a pipeline of at least two stages (--pp), got pp {}", o.vp, l.pp));
  l.micro_batch = so.batch_given ? so.batch : (sc.strategy.parallel_degrees ? l.micro_batch : 1);
  sc.batch_per_gpu = l.micro_batch;
  sc.parallel = l;
  note_idle_layout_options(o, l);
}

std::vector<int> parallel_gpu_counts(const Scenario& sc) { return {sc.cluster.max_gpus()}; }

std::string_view parallel_option_for_field(std::string_view field) noexcept {
  static constexpr std::pair<std::string_view, std::string_view> kOptions[] = {
      {"parallel.account_for_embedding_in_pipeline_split", "--account-for-embedding-in-pipeline-split"},
      {"parallel.account_for_loss_in_pipeline_split", "--account-for-loss-in-pipeline-split"},
      {"parallel.cp", "--cp"},
      {"parallel.cp_comm", "--cp-comm"},
      {"parallel.distribute_saved_activations", "--distribute-saved-activations"},
      {"parallel.dp_comm_overlap", "--dp-comm-overlap"},
      {"parallel.ep", "--ep"},
      {"parallel.global_batch", "--global-batch"},
      {"parallel.hierarchical_cp", "--hierarchical-cp"},
      {"parallel.micro_batch", "--batch"},
      {"parallel.micro_batches", "--micro-batches"},
      {"parallel.moe_expert_capacity_factor", "--moe-expert-capacity-factor"},
      {"parallel.moe_expert_load_cv", "--moe-expert-load-cv"},
      {"parallel.moe_imbalance", "--moe-imbalance"},
      {"parallel.moe_pad_expert_input_to_capacity", "--moe-pad-expert-input-to-capacity"},
      {"parallel.num_layers_in_first_pipeline_stage", "--num-layers-in-first-pipeline-stage"},
      {"parallel.num_layers_in_last_pipeline_stage", "--num-layers-in-last-pipeline-stage"},
      {"parallel.pp", "--pp"},
      {"parallel.pp_comm_overlap", "--pp-comm-overlap"},
      {"parallel.rank_order", "--rank-order"},
      {"parallel.recompute_method", "--recompute-method"},
      {"parallel.recompute_num_layers", "--recompute-num-layers"},
      {"parallel.schedule", "--schedule"},
      {"parallel.sp", "--sp"},
      {"parallel.tp", "--tp"},
      {"parallel.tp_async_backward", "--tp-async-backward"},
      {"parallel.tp_comm_overlap", "--tp-comm-overlap"},
      {"parallel.vp", "--vp"},
  };
  const auto* it = std::find_if(std::begin(kOptions), std::end(kOptions), [&](const auto& p) { return p.first == field; });
  return it != std::end(kOptions) ? it->second : std::string_view{};
}

namespace {
/// Eq. P24's settings as the headers say them; empty where none is given.
std::string moe_routing_text(const ParallelLayout& l) {
  std::string out;
  if (l.moe_expert_load_cv > 0.0) out += fmt::format(", expert load spread {:g}", l.moe_expert_load_cv);
  if (l.moe_expert_capacity_factor)
    out += fmt::format(", capacity factor {:g} ({})", *l.moe_expert_capacity_factor,
                       l.moe_pad_expert_input_to_capacity ? "padded" : "dropping");
  return out;
}

/// The TP group's settings as the headers say them: " (sp, overlapped)" (eq. P14), " (sp, async backward)" (eq. P28).
std::string tp_text(const ParallelLayout& l) {
  std::string out = l.sp && l.tp > 1 ? "sp" : "";  // eq. P39: over no TP group it acts on nothing
  const char* how = l.tp_comm_overlap ? "overlapped" : l.tp > 1 && l.tp_async_backward ? "async backward" : "";
  if (*how != '\0') out += (out.empty() ? "" : ", ") + std::string(how);
  return out.empty() ? out : " (" + out + ")";
}

/// Eq. P29's exchange as the headers say it; eq. P36's with its groups, "a2a+p2p 2×2".
std::string cp_comm_text(const ParallelLayout& l) {
  if (l.cp_comm != CpComm::a2a_p2p || l.hierarchical_cp < 1) return std::string(to_string(l.cp_comm));
  return fmt::format("a2a+p2p {}×{}", l.hierarchical_cp, l.cp / l.hierarchical_cp);
}

/// Eq. P31's partial full recompute as the headers say it; empty at the default (every block checkpointed alone).
/// Eq. P35's distributed checkpoints after it.
std::string recompute_text(const ParallelLayout& l) {
  const std::string distributed = l.distribute_saved_activations ? ", saved activations distributed" : "";
  if (l.recompute_method == RecomputeMethod::uniform && l.recompute_num_layers == 1) return distributed;
  return fmt::format(", full recompute {} {}", to_string(l.recompute_method), l.recompute_num_layers) + distributed;
}

/// Eq. P26's accounts (P26b's explicit counts) as the headers say them; empty where none is on.
std::string pipeline_split_text(const ParallelLayout& l) {
  const int first = l.num_layers_in_first_pipeline_stage, last = l.num_layers_in_last_pipeline_stage;
  if (first > 0 && last > 0) return fmt::format(", {} blocks on the first stage and {} on the last", first, last);
  if (first > 0) return fmt::format(", {} blocks on the first stage", first);
  if (last > 0) return fmt::format(", {} blocks on the last stage", last);
  if (l.account_for_embedding_in_pipeline_split && l.account_for_loss_in_pipeline_split)
    return ", embedding and loss counted as layers";
  if (l.account_for_embedding_in_pipeline_split) return ", embedding counted as a layer";
  return l.account_for_loss_in_pipeline_split ? ", loss counted as a layer" : "";
}
}  // namespace

std::string layout_text(const ParallelLayout& l) {
  std::string pp = fmt::format("pp {}", l.pp);
  if (l.pp > 1)
    pp += l.schedule == PipelineSchedule::interleaved ? fmt::format(" (interleaved, vp {})", l.vp)
                                                      : fmt::format(" ({})", to_string(l.schedule));
  const std::string batches = l.global_batch_target > 0 ? fmt::format("global batch {}", l.global_batch_target)
                                                        : fmt::format("{} micro-batches", l.micro_batches);
  return fmt::format(
      "tp {}{} × {} × cp {}{}{}{}, micro-batch {}, {}, rank order {}{}{}{}{}", l.tp, tp_text(l), pp, l.cp,
      l.cp > 1 && l.cp_comm != CpComm::p2p ? fmt::format(" ({})", cp_comm_text(l)) : std::string(),
      l.ep > 1 ? fmt::format(" × ep {}{}", l.ep, l.moe_imbalance != 1.0 ? fmt::format(" (imbalance {:g})", l.moe_imbalance) : "")
               : std::string(),
      moe_routing_text(l), l.micro_batch, batches, to_string(l.order), l.dp_comm_overlap ? ", DP communication overlapped" : "",
      l.pp_comm_overlap && l.pp > 1 && l.schedule == PipelineSchedule::interleaved ? ", pipeline sends overlapped" : "",
      pipeline_split_text(l), recompute_text(l));
}

}  // namespace dlscale::cli
