// dlscale explain: where each millisecond of one configuration's iteration goes, what bounds it, what
// doubling each resource buys, the best bucket size, and the smallest change reaching --target.
#include <fmt/format.h>

#include <optional>

#include "cli/commands.hpp"
#include "cli/scenario_options.hpp"
#include "cli/workload_options.hpp"
#include "dlscale/error.hpp"
#include "dlscale/parallel_plan.hpp"
#include "dlscale/plan.hpp"
#include "report/prediction_json.hpp"  // sources_json

namespace dlscale::cli {
namespace {

struct ExplainCliOptions {
  ScenarioOptions scenario;
  std::string target;  // "0.8" or "80%"
  WorkloadOptions workload;
  std::string format = "table";
  std::string output;
};

double parse_target(const std::string& text) {
  std::string t = text;
  bool percent = false;
  if (!t.empty() && t.back() == '%') {
    percent = true;
    t.pop_back();
  }
  double v = 0.0;
  std::size_t used = 0;
  try {
    v = std::stod(t, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != t.size())
    throw UsageError("--target", fmt::format("'{}' is not an efficiency (e.g. 0.8 or 80%)", text));
  if (percent || v > 1.0) v /= 100.0;
  if (!(v > 0.0 && v <= 1.0)) throw UsageError("--target", fmt::format("'{}' is not an efficiency in (0, 100%]", text));
  return v;
}

/// explain's JSON document (lib/plan writes it) with --explain-sources' "sources" added as predict adds them.
std::string with_sources(const std::string& document, const RunInfo& info) {
  if (info.sources.empty()) return document;
  auto j = nlohmann::ordered_json::parse(document);
  j["sources"] = sources_json(info.sources);
  return j.dump(2) + "\n";
}

void run_explain(const ExplainCliOptions& o) {
  const bool json = json_format(o.format);
  RunInfo info;
  info.command_line = command_line();
  ScenarioOptions so = o.scenario;
  so.sources_in_json = json;  // --explain-sources: into the document's "sources"
  const Scenario sc = build_scenario(so, info);
  int gpus = sc.cluster.max_gpus();
  if (!o.scenario.gpus.empty()) {
    const auto list = parse_gpu_list(o.scenario.gpus);
    if (list.size() != 1) throw UsageError("--gpus", "explain takes one GPU count");
    gpus = list.front();
  }
  ExplainOptions eo;
  if (!o.target.empty()) eo.target_efficiency = parse_target(o.target);
  eo.workload = workload_for(sc.network, o.workload);
  if (sc.parallel) {  // model parallelism (lib/plan/parallel_explain.cpp), with the time to train
    if (eo.target_efficiency)
      throw UsageError("--target",
                       "searches data-parallel changes (links, buckets, GPU counts); a model-parallel layout's "
                       "alternatives are what plan --parallel ranks");
    if (json) return emit(with_sources(explain_parallel_json(sc, gpus, eo.workload), info), o.output);
    return emit(explain_parallel(sc, gpus) + format_time_to_train(Predictor(sc).predict(gpus), eo.workload, sc), o.output);
  }
  const Explanation e = explain(sc, gpus, eo);
  emit(json ? with_sources(format_explanation_json(e, sc), info) : format_explanation(e, sc), o.output);
}

}  // namespace

void setup_explain(CLI::App& app) {
  auto opt = std::make_shared<ExplainCliOptions>();
  opt->scenario.gpus = "";
  auto* cmd = app.add_subcommand("explain",
                                 "Explain one configuration: critical path, bottleneck, what doubling each "
                                 "resource buys, best buckets, time and cost to train");
  add_scenario_options(*cmd, opt->scenario);
  cmd->get_option("--gpus")->description("One GPU count (default: the whole cluster)");
  cmd->add_option("--target", opt->target, "Target efficiency (0.8 or 80%): search the smallest change that reaches it")
      ->type_name("EFF");
  add_workload_options(*cmd, opt->workload);
  cmd->add_option("--format", opt->format, "table or json")->capture_default_str();
  cmd->add_option("-o,--output", opt->output, "Write to FILE (atomically) instead of standard output")->type_name("FILE");
  cmd->callback([opt] { run_explain(*opt); });
}

}  // namespace dlscale::cli
