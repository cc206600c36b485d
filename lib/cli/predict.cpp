// dlscale predict: the closed-form prediction for each GPU count.
#include <sstream>
#include <utility>

#include "cli/commands.hpp"
#include "cli/scenario_options.hpp"
#include "cli/workload_options.hpp"
#include "dlscale/plan.hpp"
#include "dlscale/predict.hpp"
#include "dlscale/report.hpp"

namespace dlscale::cli {
namespace {

struct PredictOptions {
  ScenarioOptions scenario;
  std::string format = "table";
  std::string output;
  WorkloadOptions workload;
  bool no_train = false;
};

void run_predict(const PredictOptions& o) {
  const OutputFormat fmt = output_format_from_string(o.format);
  std::vector<int> gpus;  // a malformed --gpus fails before any file is read; none given: the cluster's default
  if (!o.scenario.gpus.empty()) gpus = parse_gpu_list(o.scenario.gpus);
  RunInfo info;
  info.command_line = command_line();
  ScenarioOptions so = o.scenario;
  so.sources_in_json = fmt == OutputFormat::json;  // --explain-sources: into the document's "sources"
  Predictor predictor(build_scenario(so, info));
  if (gpus.empty() && predictor.scenario().parallel) gpus = parallel_gpu_counts(predictor.scenario());  // the whole cluster
  gpus = gpus.empty() ? default_gpu_counts(predictor.scenario().cluster) : placeable_gpu_counts(predictor, gpus);
  const auto preds = predictor.predict(gpus);  // everything computed before anything is printed
  warn_memory_by_gpu_count(predictor.scenario(), preds);
  std::vector<TrainingCost> train;
  if (!o.no_train) {
    const auto workload = workload_for(predictor.scenario().network, o.workload);
    if (workload) {
      info.workload = workload->source;
      for (const auto& p : preds) train.push_back(time_to_train(p, *workload, predictor.scenario().cluster));
    }
  }
  {
    const Scenario& s = predictor.scenario();
    info.collective_model =
        with_transport(s.collectives ? s.collectives : make_collective_model(s.cluster), s.strategy.transport, s.cluster)
            ->describe();
  }
  std::ostringstream out;
  write_predictions(out, fmt, info, preds, train);
  emit(out.str(), o.output);
}

}  // namespace

void setup_predict(CLI::App& app) {
  auto opt = std::make_shared<PredictOptions>();
  auto* cmd = app.add_subcommand("predict", "Predict iteration time, throughput, speedup and bottleneck per GPU count");
  add_scenario_options(*cmd, opt->scenario);
  cmd->add_option("--format", opt->format, "table, json or csv")->capture_default_str();
  add_workload_options(*cmd, opt->workload);
  cmd->add_flag("--no-train", opt->no_train, "Leave out the time and cost to train");
  cmd->add_option("-o,--output", opt->output, "Write to FILE (atomically) instead of standard output")->type_name("FILE");
  cmd->callback([opt] { run_predict(*opt); });
}

}  // namespace dlscale::cli
