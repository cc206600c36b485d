// dlscale plan --parallel: the grid over tensor, pipeline, context parallelism, micro-batch, recompute and
// optimiser sharding (include/dlscale/parallel_plan.hpp), with the options that narrow it.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/parallel_options.hpp"
#include "cli/scenario_options.hpp"
#include "dlscale/error.hpp"
#include "dlscale/io.hpp"
#include "dlscale/parallel.hpp"
#include "dlscale/parallel_plan.hpp"
#include "io/text.hpp"

namespace dlscale::cli {
namespace {

/// A LIST of whole numbers ≥ 1 (or ≥ 0 with `zero_ok`) into `target` when given.
void numbers(const std::string& text, const char* option, std::vector<int>& target, bool zero_ok = false) {
  if (text.empty()) return;
  std::vector<int> v;
  for (const auto& s : comma_items(text)) {
    std::size_t used = 0;
    int x = -1;
    try {
      x = std::stoi(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != s.size() || x < (zero_ok ? 0 : 1))
      throw UsageError(option, fmt::format("'{}' is not a whole number ≥ {}", s, zero_ok ? 0 : 1));
    v.push_back(x);
  }
  if (v.empty()) throw UsageError(option, "give at least one value");
  target = std::move(v);
}

/// The grid's lists (--tp, --pp, --vp, --cp, --ep, --micro-batch, --zero, --recompute), the global batch and --no-refine.
ParallelPlanSpace grid_space(const ParallelPlanOptions& o) {
  ParallelPlanSpace space;
  space.global_batch = o.global_batch;
  numbers(o.tp, "--tp", space.tp);
  numbers(o.pp, "--pp", space.pp);
  numbers(o.vp, "--vp", space.vp);
  numbers(o.cp, "--cp", space.cp);
  numbers(o.ep, "--ep", space.ep);
  numbers(o.micro_batch, "--micro-batch", space.micro_batch);
  if (o.no_refine) space.refine_leaders = space.refine_full_leaders = space.refine_near_misses = 0;
  numbers(o.zero, "--zero", space.sharding_stage, true);  // not given: eq. P45's default (plan_sharding_stages)
  for (int z : space.sharding_stage)
    if (z > 3) throw UsageError("--zero", fmt::format("stage {}: the stages are 0, 1, 2 and 3", z));
  if (!o.recompute.empty()) {
    space.recompute.clear();
    for (const auto& s : comma_items(o.recompute)) {
      if (s == "none") space.recompute.push_back(Recompute::none);
      else if (s == "selective") space.recompute.push_back(Recompute::selective);
      else if (s == "full") space.recompute.push_back(Recompute::full);
      else throw UsageError("--recompute", fmt::format("'{}' is not none, selective or full", s));
    }
    if (space.recompute.empty()) throw UsageError("--recompute", "give at least one value");
  }
  return space;
}

}  // namespace

void add_parallel_plan_options(CLI::App& cmd, ParallelPlanOptions& o) {
  const char* g = kParallelPlanGroup;
  cmd.add_flag("--parallel", o.on,
               "Search model-parallel layouts (tp x pp x vp x cp x micro-batch x recompute x optimiser sharding) for a "
               "decoder at one global batch, with the first of --frameworks (default megatron-core)")
      ->group(g);
  cmd.add_option("--global-batch", o.global_batch, "Samples per step over the job (default: 4 Mi tokens' worth)")
      ->type_name("G")
      ->group(g);
  struct ListOption {
    const char* name;
    std::string* values;  // comma-separated; run_parallel_plan parses them
    const char* what;
  };
  const ListOption lists[] = {
      {"--tp", &o.tp, "Tensor-parallel degrees to try (default 1,2,4,...,64)"},
      {"--pp", &o.pp, "Pipeline stages to try (default: those dividing the blocks up to 32)"},
      {"--vp", &o.vp, "Virtual stages to try (default 1,2,4,5; > 1 interleaved)"},
      {"--cp", &o.cp, "Context-parallel degrees to try (default 1,2,4,8)"},
      {"--ep", &o.ep, "Expert-parallel degrees to try, for a model with experts (default 1,2,4,...,64)"},
      {"--micro-batch", &o.micro_batch, "Micro-batch sizes to try (default 1,2,4)"},
      {"--recompute", &o.recompute, "Recompute modes to try: none, selective, full (default all three)"},
      {"--zero", &o.zero,
       "Optimiser sharding stages to try: 0 replicated, 1 distributed optimiser, 2 and gradients, 3 and parameters "
       "(FSDP) (default 0,1 and the framework's stage where it is 2 or 3)"},
  };
  for (const auto& l : lists) cmd.add_option(l.name, *l.values, l.what)->type_name("LIST")->group(g);
  cmd.add_option("--moe-imbalance", o.moe_imbalance,
                 "Routing imbalance of every layout with ep > 1: the busiest expert-parallel rank's tokens over the mean's, "
                 ">= 1 (eq. P23; default: the framework's, else 1.0)")
      ->type_name("F")
      ->group(g);
  add_moe_routing_options(cmd, o.moe, g);
  add_cp_comm_option(cmd, o.cp_comm, g);  // eq. P29: one exchange for every layout, not a dimension of the grid
  cmd.add_flag("--no-refine", o.no_refine,
               "The grid alone: no variants of the leading layouts (other CP exchanges, first/last stage blocks, "
               "partial full recompute, distributed checkpoints; eq. P38)")
      ->group(g);
}

void run_parallel_plan(const ScenarioOptions& so_in, const ParallelPlanOptions& o, const std::string& framework, int top,
                       const std::string& output, bool json) {
  ScenarioOptions so = so_in;
  if (!framework.empty() && comma_items(framework).empty()) throw UsageError("--frameworks", "give at least one framework");
  so.framework = framework.empty() ? "megatron-core" : comma_items(framework).front();
  so.memory_warning = false;
  so.batch = 1;
  so.batch_given = true;
  if (so.precision.empty()) {
    const Cluster c = load_cluster(resolve(DataKind::cluster, so.cluster, "--cluster"), cluster_overrides(so.scale));
    so.precision = c.gpu.supports(Precision::bf16) ? "bf16" : "fp16";
  }
  RunInfo info;
  Scenario sc = build_scenario(so, info);
  if (!o.moe_imbalance.empty()) {  // eq. P23: over the framework's
    const double f = moe_imbalance_option(o.moe_imbalance);
    try {
      validate_moe_imbalance(f);
    } catch (const InputError& e) {
      throw UsageError("--moe-imbalance", e.message());
    }
    ParallelLayout l = sc.strategy.parallel.value_or(ParallelLayout{});
    l.moe_imbalance = f;
    if (o.moe.load_cv.empty()) l.moe_expert_load_cv = 0.0;  // over the framework's spread
    sc.strategy.parallel = l;
  }
  if (o.moe.any()) {  // eq. P24: over the framework's
    ParallelLayout l = sc.strategy.parallel.value_or(ParallelLayout{});
    if (!o.moe.load_cv.empty() && o.moe_imbalance.empty()) l.moe_imbalance = 1.0;
    apply_moe_routing_options(o.moe, l);
    try {
      validate_moe_routing(l);
    } catch (const InputError& e) {
      const std::string_view option = parallel_option_for_field("parallel." + e.key());
      throw UsageError(std::string(option.empty() ? "--moe-expert-load-cv" : option), e.message());
    }
    sc.strategy.parallel = l;
  }
  if (!o.cp_comm.empty()) {  // eq. P29: over the framework's
    ParallelLayout l = sc.strategy.parallel.value_or(ParallelLayout{});
    l.cp_comm = cp_comm_option(o.cp_comm);
    sc.strategy.parallel = l;
  }
  const auto gpus = parse_gpu_list(so.gpus);
  if (gpus.size() != 1) throw UsageError("--gpus", "plan takes one GPU count");
  if (o.global_batch < 0) throw UsageError("--global-batch", fmt::format("must be at least 1, got {}", o.global_batch));
  if (top < 1) throw UsageError("--top", "show at least one configuration");
  ParallelPlanSpace space = grid_space(o);
  // eq. P44: what predict takes from --framework alone, where an option here changed the framework's group or offload
  if (!so.shard_group.empty() || so.offload_optimizer || so.no_offload_optimizer)
    space.predict_sharding = load_strategy(resolve(DataKind::framework, so.framework, "--frameworks")).sharding;
  ParallelPlanResult r;
  try {
    r = plan_parallel(sc, gpus.front(), space);
  } catch (const InputError& e) {
    if (e.key() == "network") throw UsageError("--model", e.message());
    throw;
  }
  emit(json ? format_parallel_plan_json(r, sc, gpus.front(), top) : format_parallel_plan(r, sc, gpus.front(), top), output);
  if (r.ranked.empty())
    throw Error(fmt::format("plan: none of the {} layouts fits the memory of {} GPUs", r.evaluated, gpus.front()));
}

}  // namespace dlscale::cli
