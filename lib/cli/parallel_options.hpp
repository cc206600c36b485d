// --tp, --sp, --pp, --vp, --schedule, --cp, --micro-batches | --global-batch, --rank-order: a model-parallel
// layout (issue 37) on the commands that build a Scenario (predict, explain, simulate, report).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dlscale/predict.hpp"

namespace dlscale::cli {

struct ScenarioOptions;

/// Eq. P24's options, on the scenario commands and plan --parallel: --moe-expert-capacity-factor C,
/// --moe-pad-expert-input-to-capacity, --moe-expert-load-cv V (empty, false: the framework's).
struct MoeRoutingOptions {
  std::string capacity_factor, load_cv;
  bool pad = false;
  [[nodiscard]] bool any() const noexcept { return !capacity_factor.empty() || !load_cv.empty() || pad; }
};
void add_moe_routing_options(CLI::App& cmd, MoeRoutingOptions& o, const std::string& group);
/// The options over the layout's fields (numbers parsed; their ranges are validate's): UsageError naming the option
/// where a value is not a number.
void apply_moe_routing_options(const MoeRoutingOptions& o, ParallelLayout& l);

struct ParallelOptions {
  int tp = 0, pp = 0, vp = 0, cp = 0, ep = 0, micro_batches = 0;  // 0: not given
  std::int64_t global_batch = 0;                                  // 0: not given
  int sp = -1;                                                    // --sp 1, --no-sp 0, -1 not given
  int tp_async_backward = -1;                                     // --tp-async-backward 1, --no-tp-async-backward 0, -1 not given
  int tp_comm_overlap = -1;                                       // --tp-comm-overlap 1, --no-tp-comm-overlap 0, -1 not given
  int dp_comm_overlap = -1;                                       // --dp-comm-overlap 1, --no-dp-comm-overlap 0, -1 not given
  int pp_comm_overlap = -1;                                       // --pp-comm-overlap 1, --no-pp-comm-overlap 0, -1 not given
  bool account_embedding = false, account_loss = false;           // --account-for-{embedding,loss}-in-pipeline-split
  std::string recompute_method;                                   // --recompute-method (eq. P31); empty: the framework's
  int recompute_num_layers = -1;                                  // --recompute-num-layers (eq. P31); -1: not given
  int distribute_saved_activations = -1;                          // --[no-]distribute-saved-activations (eq. P35); -1: not given
  int first_stage_layers = 0, last_stage_layers = 0;              // --num-layers-in-{first,last}-pipeline-stage; 0: not given
  std::string schedule, rank_order;                               // empty: the framework's, else 1f1b and tp-cp-ep-dp-pp
  std::string cp_comm;                                            // --cp-comm (eq. P29); empty: the framework's, else p2p
  int hierarchical_cp = 0;                                        // --hierarchical-cp A (eq. P36); 0: not given
  std::string moe_imbalance;                                      // --moe-imbalance F (eq. P23); empty: the framework's
  MoeRoutingOptions moe;                                          // eq. P24's options
  [[nodiscard]] bool any() const noexcept {
    return tp > 0 || pp > 0 || vp > 0 || cp > 0 || ep > 0 || micro_batches > 0 || global_batch > 0 || sp >= 0 ||
        tp_comm_overlap >= 0 || tp_async_backward >= 0 || dp_comm_overlap >= 0 || pp_comm_overlap >= 0 || account_embedding ||
        account_loss || first_stage_layers != 0 || last_stage_layers != 0 || !schedule.empty() || !rank_order.empty() ||
        !cp_comm.empty() || !recompute_method.empty() || recompute_num_layers != -1 || distribute_saved_activations >= 0 ||
        hierarchical_cp != 0;
  }
};
void add_parallel_options(CLI::App& cmd, ParallelOptions& o);
/// --cp-comm NAME (eq. P29), on the scenario commands and plan --parallel.
void add_cp_comm_option(CLI::App& cmd, std::string& cp_comm, const std::string& group);
/// --cp-comm's value: p2p, all_gather (allgather) or a2a; UsageError naming the option otherwise.
CpComm cp_comm_option(const std::string& text);

/// The layout into `sc` (after its framework is read): the framework file's `parallel:` with the options over
/// it; --batch is the micro-batch (default 1). None given and no degrees in the file: sc stays data-parallel.
/// A malformed --schedule or --rank-order, both --micro-batches and --global-batch, or --moe-imbalance not a number
/// or without a layout: UsageError (below 1: validate's, key parallel.moe_imbalance).
void apply_parallel_options(const ParallelOptions& o, const ScenarioOptions& so, Scenario& sc);

/// The GPU counts a parallel scenario is predicted at without --gpus: the whole cluster.
std::vector<int> parallel_gpu_counts(const Scenario& sc);

/// The option that sets a "parallel.*" field ("parallel.tp" → "--tp"); empty for another field.
std::string_view parallel_option_for_field(std::string_view field) noexcept;

/// "tp 8 (sp) × pp 2 (1f1b) × cp 1, micro-batch 1 × 32, rank order tp-cp-dp-pp": the layout as the
/// outputs' headers say it ("cp 4 (a2a)": a cp_comm other than p2p beside cp > 1, eq. P29).
std::string layout_text(const ParallelLayout& l);

}  // namespace dlscale::cli

namespace dlscale::cli {

/// `plan --parallel`: the grid over model-parallel layouts (include/dlscale/parallel_plan.hpp).
struct ParallelPlanOptions {
  bool on = false;                                               // --parallel
  std::int64_t global_batch = 0;                                 // --global-batch; 0: 4 Mi tokens' worth
  std::string tp, pp, vp, cp, ep, micro_batch, recompute, zero;  // LISTs; empty: ParallelPlanSpace's
  std::string moe_imbalance;  // --moe-imbalance F for every layout with ep > 1 (eq. P23); empty: the framework's
  MoeRoutingOptions moe;      // eq. P24's for every layout
  std::string cp_comm;        // --cp-comm NAME for every layout with cp > 1 (eq. P29); empty: the framework's
  bool no_refine = false;     // --no-refine: the grid alone, without eq. P38's variants of the leaders
};
/// The help group of --parallel and the options of its grid (plan refuses them without --parallel).
inline constexpr const char* kParallelPlanGroup = "Model-parallel layouts (--parallel)";
void add_parallel_plan_options(CLI::App& cmd, ParallelPlanOptions& o);
/// --moe-imbalance's value: a finite number (its range is validate's); UsageError otherwise.
double moe_imbalance_option(const std::string& text);
/// Runs the parallel plan with plan's scenario options (`framework`: --frameworks, whose first is planned with;
/// megatron-core when empty) and prints the top `top` layouts, as JSON with `json`.
void run_parallel_plan(const ScenarioOptions& so, const ParallelPlanOptions& o, const std::string& framework, int top,
                       const std::string& output, bool json);

}  // namespace dlscale::cli
