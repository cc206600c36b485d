// dlscale report: one self-contained HTML page (inputs, tables, plots, explanation) for a scenario over
// its GPU counts. The timeline plot comes from one simulated iteration (dlscale_sim).
#include <fmt/format.h>

#include <algorithm>

#include "cli/commands.hpp"
#include "cli/scenario_options.hpp"
#include "cli/workload_options.hpp"
#include "dlscale/error.hpp"
#include "dlscale/format.hpp"
#include "dlscale/parallel_plan.hpp"
#include "dlscale/plan.hpp"
#include "dlscale/plot.hpp"
#include "dlscale/sim/simulator.hpp"

namespace dlscale::cli {
namespace {

struct ReportCliOptions {
  ScenarioOptions scenario;
  std::string output;
  WorkloadOptions workload;
  bool no_timeline = false;
};

void run_report(const ReportCliOptions& o) {
  RunInfo info;
  info.command_line = command_line();
  const Scenario sc = build_scenario(o.scenario, info);
  const Predictor predictor(sc);
  const std::vector<int> gpus =
      o.scenario.gpus.empty() ? default_gpu_counts(sc.cluster) : placeable_gpu_counts(predictor, parse_gpu_list(o.scenario.gpus));
  const auto preds = predictor.predict(gpus);
  warn_memory_by_gpu_count(sc, preds);
  const auto coll = sc.collectives ? sc.collectives : make_collective_model(sc.cluster);

  ReportContent c;
  c.title = fmt::format("dlscale report: {} on {} with {}", sc.network.name, sc.cluster.name, sc.strategy.name);
  c.command_line = info.command_line;
  c.inputs = {
      {"cluster",
       fmt::format("{} ({} nodes x {} {})", sc.cluster.name, sc.cluster.max_nodes, sc.cluster.gpus_per_node,
                   sc.cluster.gpu.name)},
      {"model", fmt::format("{} ({:.1f} M parameters)", sc.network.name, static_cast<double>(sc.network.total_params()) / 1e6)},
      {"framework", sc.strategy.name},
      {"batch per GPU", fmt::format("{}", sc.batch_per_gpu)},
      {"precision", info.precision},
      {"communication", coll->describe()},
      {"links",
       fmt::format("host-to-GPU {}, intra-node {}, inter-node {}", sc.cluster.h2d_pinned, sc.cluster.intra_node.bandwidth,
                   sc.cluster.inter_node.bandwidth)}};
  if (!info.profile.empty()) c.inputs.emplace_back("profile", info.profile);
  if (sc.cluster.price_per_gpu_hour > 0)
    c.inputs.emplace_back("price", fmt::format("{:g} {} per GPU-hour", sc.cluster.price_per_gpu_hour, sc.cluster.currency));
  c.workload = workload_for(sc.network, o.workload);
  c.predictions = preds;

  const int largest = *std::max_element(gpus.begin(), gpus.end());
  ExplainOptions eo;
  eo.workload = c.workload;
  if (sc.parallel) {  // a layout's page, as explain prints it (not the data-parallel path, whose rows it lacks)
    const auto it = std::find_if(preds.begin(), preds.end(), [&](const Prediction& p) { return p.gpus == largest; });
    c.explanation_text = explain_parallel(sc, largest) + format_time_to_train(*it, c.workload, sc);
  } else {
    c.explanation = explain(sc, largest, eo);
    c.explanation_text = format_explanation(*c.explanation, sc);
  }

  const Seconds first_update = predictor.layer_times().update.empty() ? Seconds{} : predictor.layer_times().update.front();
  c.plots.emplace_back("Throughput vs GPUs (log-log) with the ideal linear scaling",
                       throughput_plot_svg(preds, fmt::format("{}: throughput", sc.network.name)));
  c.plots.emplace_back("Speedup vs GPUs (log-log), eq. 8", speedup_plot_svg(preds, fmt::format("{}: speedup", sc.network.name)));
  c.plots.emplace_back("Critical path of one iteration per GPU count",
                       breakdown_plot_svg(preds, predictor.scenario().strategy, first_update, "iteration breakdown"));
  std::vector<GpuPlacement> places;
  for (int g : gpus)
    if (g > 1) places.push_back(predictor.place(g));
  if (!places.empty())
    c.plots.emplace_back("All-reduce bus bandwidth vs message size (the collective model)",
                         busbw_plot_svg(*coll, places, bytes(1024), mebibytes(1024), "all-reduce busbw"));
  if (!o.no_timeline) {
    sim::SimOptions so;
    so.iterations = 2;
    so.warmup = 1;
    so.trace = true;
    so.trace_max_gpus = 2;
    const sim::Simulator simulator(sc, so);
    const sim::SimResult r = simulator.run(largest);
    const double end = r.simulated_seconds;
    const double t_iter = in_seconds(r.prediction.iteration_time);
    c.plots.emplace_back(
        fmt::format("One simulated iteration on {} GPUs (the last of {}; GPUs 0-1 shown)", largest, so.iterations),
        timeline_svg(r.trace_json, std::max(0.0, end - t_iter), end, 8, "simulated iteration"));
  }
  write_file_atomically(o.output, html_report(c, sc.cluster));
}

}  // namespace

void setup_report(CLI::App& app) {
  auto opt = std::make_shared<ReportCliOptions>();
  auto* cmd = app.add_subcommand("report", "Write a self-contained HTML report (inputs, tables, SVG plots, explanation)");
  add_scenario_options(*cmd, opt->scenario);
  cmd->add_option("-o,--output", opt->output, "The HTML file to write (atomically)")->required()->type_name("FILE");
  add_workload_options(*cmd, opt->workload);
  cmd->add_flag("--no-timeline", opt->no_timeline, "Leave out the simulated iteration's timeline");
  cmd->callback([opt] { run_report(*opt); });
}

}  // namespace dlscale::cli
