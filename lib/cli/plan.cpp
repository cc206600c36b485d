// dlscale plan: search framework strategy × shard group × micro-batch × accumulation for the fastest
// configuration that fits the GPU's memory; print the top few and why the other strategies lose.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/parallel_options.hpp"
#include "cli/scenario_options.hpp"
#include "dlscale/error.hpp"
#include "dlscale/io.hpp"
#include "dlscale/plan.hpp"
#include "io/text.hpp"

namespace dlscale::cli {
namespace {

struct PlanCliOptions {
  ScenarioOptions scenario;
  std::string frameworks = "pytorch-ddp,deepspeed-zero1,deepspeed-zero2,deepspeed-zero3,fsdp,fsdp-shard-grad-op,fsdp-hybrid";
  std::string micro_batches = "1,2,4,8,16,32,64";
  std::string accumulations = "1,2,4,8";
  double target_tokens = 0.0;
  bool target_given = false;
  int top = 5;
  std::string format = "table";
  std::string output;
  ParallelPlanOptions parallel;  // --parallel and its grid (lib/cli/parallel_plan.cpp)
};

std::vector<int> counts(const std::string& text, const char* option) {
  std::vector<int> v;
  for (const auto& s : comma_items(text)) {
    std::size_t used = 0;
    int x = 0;
    try {
      x = std::stoi(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != s.size() || x < 1) throw UsageError(option, fmt::format("'{}' is not a whole number ≥ 1", s));
    v.push_back(x);
  }
  if (v.empty()) throw UsageError(option, "give at least one value");
  return v;
}

/// The two searches take different options: the data-parallel search's lists (--micro-batches, --accumulations,
/// --target-tokens) mean nothing to --parallel's grid, and --parallel's (--tp, --pp, ..., --global-batch) nothing to
/// the data-parallel search. An option of the other search is an error, not silently dropped.
void refuse_other_search_options(const CLI::App& cmd, bool parallel) {
  if (parallel) {
    for (const char* name : {"--micro-batches", "--accumulations", "--target-tokens"})
      if (cmd.count(name) > 0)
        throw UsageError(name,
                         "belongs to the data-parallel search, not to --parallel's layouts (--micro-batch and "
                         "--global-batch size a layout's step)");
    return;
  }
  for (const CLI::Option* op : cmd.get_options())
    if (op->get_group() == kParallelPlanGroup && op->get_name() != "--parallel" && op->count() > 0)
      throw UsageError(op->get_name(), "is an option of the model-parallel search: give it with --parallel");
}

void run_plan(const PlanCliOptions& o) {
  const bool json = json_format(o.format);
  if (o.parallel.on)  // model-parallel layouts (lib/cli/parallel_plan.cpp)
    return run_parallel_plan(o.scenario, o.parallel, o.frameworks == PlanCliOptions{}.frameworks ? "" : o.frameworks, o.top,
                             o.output, json);
  RunInfo info;
  info.command_line = command_line();
  const auto names = comma_items(o.frameworks);
  if (names.empty()) throw UsageError("--frameworks", "give at least one framework");
  ScenarioOptions so = o.scenario;
  so.framework = names.front();
  so.memory_warning = false;   // memory is what the search checks, configuration by configuration
  if (so.precision.empty()) {  // the default: bf16 where the GPU has it, else fp16 (Volta, Turing: AMP in fp16)
    const Cluster c = load_cluster(resolve(DataKind::cluster, so.cluster, "--cluster"), cluster_overrides(so.scale));
    so.precision = c.gpu.supports(Precision::bf16) ? "bf16" : "fp16";
  }
  // eq. S12: fp8 all-gather is FSDP's, so it applies to the stage-3 frameworks tried (search.cpp), not to the first alone
  so.fp8_all_gather = false;
  Scenario sc = build_scenario(so, info);
  if (o.scenario.fp8_all_gather) {
    sc.compute.fp8_all_gather = true;
    if (sc.compute.precision != Precision::fp8 || sc.compute.fp8_scaling != Fp8Scaling::tensorwise)
      throw UsageError("--fp8-all-gather",
                       fmt::format("fp8 all-gather needs --precision fp8 with tensor-wise scaling; the precision is {}",
                                   precision_label(sc.compute.precision, sc.compute.fp8_scaling)));
  }
  const auto gpus = parse_gpu_list(o.scenario.gpus);
  if (gpus.size() != 1) throw UsageError("--gpus", "plan takes one GPU count");
  PlanSpace space;
  for (const auto& n : names) {
    space.strategies.push_back(load_strategy(resolve(DataKind::framework, n, "--frameworks")));
    if (o.scenario.jitter_cv >= 0.0) space.strategies.back().jitter_cv = o.scenario.jitter_cv;
  }
  space.micro_batches = counts(o.micro_batches, "--micro-batches");
  space.accumulations = counts(o.accumulations, "--accumulations");
  if (o.target_given) {
    if (!(o.target_tokens > 0.0 && std::isfinite(o.target_tokens)))
      throw UsageError("--target-tokens",
                       fmt::format("the tokens to train on must be a positive number, got {}", o.target_tokens));
    if (sc.network.input_kind != "tokens")
      throw UsageError("--target-tokens", fmt::format("'{}' takes images, not tokens", sc.network.name));
    space.target_tokens = o.target_tokens;
  }
  if (o.top < 1) throw UsageError("--top", "show at least one configuration");
  const PlanResult r = plan(sc, gpus.front(), space);
  emit(json ? format_plan_json(r, sc, gpus.front(), o.top) : format_plan(r, sc, gpus.front(), o.top), o.output);
  // The plan says why each framework loses; a search that found nothing to run still fails (exit 1).
  if (r.ranked.empty())
    throw Error(fmt::format("plan: none of the {} configurations fits the memory of {} GPUs", r.evaluated, gpus.front()));
}

}  // namespace

void setup_plan(CLI::App& app) {
  auto opt = std::make_shared<PlanCliOptions>();
  opt->scenario.gpus = "";
  opt->scenario.precision = "";  // run_plan: bf16, or fp16 on a GPU without bf16
  auto* cmd = app.add_subcommand("plan",
                                 "Search framework x shard group x micro-batch x accumulation for the fastest "
                                 "configuration that fits in memory, and say why the others lose");
  add_scale_options(*cmd, opt->scenario.scale, true, true);
  add_gpu_option(*cmd, opt->scenario.scale);
  cmd->add_option("--cluster", opt->scenario.cluster, "Cluster: a name in topologies/ or a YAML file")
      ->type_name("NAME|FILE")
      ->required();
  cmd->add_option("--model", opt->scenario.model, "Network: a name in models/ or a YAML file")
      ->type_name("NAME|FILE")
      ->required();
  cmd->add_option("--gpus", opt->scenario.gpus, "One GPU count")->type_name("N")->required();
  cmd->add_option("--precision", opt->scenario.precision,
                  "fp32, tf32, bf16, fp16 or fp8 (Hopper and newer) (default: bf16, or fp16 on a GPU without bf16 such as "
                  "the V100)");
  cmd->add_option("--fp8-scaling", opt->scenario.fp8_scaling,
                  "With --precision fp8: tensorwise (one scale a tensor, the default), rowwise (torchao's rowwise recipe) "
                  "or mxfp8 (MX block scaling, Blackwell only), for every configuration tried")
      ->type_name("SCALING");
  cmd->add_flag("--fp8-all-gather", opt->scenario.fp8_all_gather,
                "With --precision fp8 (tensor-wise): the FSDP (stage-3) frameworks tried gather the fp8 linear maps' "
                "weights in fp8 (eq. S12)");
  cmd->add_flag("--compile", opt->scenario.compiled,
                "Every framework tried compiles the step (torch.compile): element-wise chains fused (eq. K14)");
  cmd->add_option("--optimizer", opt->scenario.optimizer, "sgd, momentum, adam, adamw or lamb (default: adamw for token models)");
  cmd->add_option("--optimizer-impl", opt->scenario.optimizer_impl,
                  "fused, foreach or for_loop: the optimiser's kernels for every framework tried (default: each framework's)")
      ->type_name("NAME");
  add_size_option(*cmd, "--seq-len", opt->scenario.seq_len, kSeqLenHelp, "S");
  cmd->add_option("--frameworks", opt->frameworks, "Framework strategies to try, comma-separated")
      ->type_name("LIST")
      ->capture_default_str();
  cmd->add_option("--micro-batches", opt->micro_batches, "Micro-batches per GPU to try")
      ->type_name("LIST")
      ->capture_default_str();
  cmd->add_option("--accumulations", opt->accumulations, "Gradient accumulation counts to try")
      ->type_name("LIST")
      ->capture_default_str();
  cmd->add_option_function<double>(
         "--target-tokens",
         [opt](const double& v) {
           opt->target_tokens = v;
           opt->target_given = true;
         },
         "Tokens to train on (token models): time to train for each configuration")
      ->type_name("T");
  add_jitter_option(*cmd, opt->scenario.jitter_cv);
  cmd->add_option("--top", opt->top, "Configurations to show")->capture_default_str();
  cmd->add_option("--format", opt->format, "table or json")->capture_default_str();
  cmd->add_option("-o,--output", opt->output, "Write to FILE (atomically) instead of standard output")->type_name("FILE");
  add_parallel_plan_options(*cmd, opt->parallel);
  // eq. P44: the framework's shard group and offload, or these in their place, for every layout
  cmd->add_option("--shard-group", opt->scenario.shard_group,
                  "GPUs a sharded row shards over, the rest replicas (HSDP; eq. P40): N data-parallel ranks (a layout "
                  "whose dp x cp it does not divide is left out), node or all (default: the framework's)")
      ->type_name("N|node|all")
      ->group(kParallelPlanGroup);
  cmd->add_flag("--offload-optimizer", opt->scenario.offload_optimizer,
                "Offload the optimiser state to the CPU (eq. S9): only data-parallel layouts of a sharded stage take it")
      ->group(kParallelPlanGroup);
  cmd->add_flag("--no-offload-optimizer", opt->scenario.no_offload_optimizer,
                "Plan every layout with the optimiser state on the GPU where the framework offloads it")
      ->group(kParallelPlanGroup);
  cmd->callback([opt, cmd] {
    refuse_other_search_options(*cmd, opt->parallel.on);
    run_plan(*opt);
  });
}

}  // namespace dlscale::cli
