// dlscale reproduce: predict every experiment of the reference papers (examples/papers/*.yaml) and print
// it in the shape of the paper's tables, measured values beside the predictions.
#include <fmt/format.h>

#include <sstream>

#include "cli/commands.hpp"
#include "dlscale/error.hpp"
#include "dlscale/reproduce.hpp"

namespace dlscale::cli {
namespace {

struct ReproduceOptions {
  std::string paper = "all";
  std::string format = "table";
  std::string output;
  std::string plots;
  std::string experiment;
};

void run_reproduce(const ReproduceOptions& o) {
  const OutputFormat fmt = output_format_from_string(o.format);
  std::vector<repro::PaperResult> papers;
  for (const auto& file : repro::select_scenarios(o.paper)) papers.push_back(repro::reproduce_file(file));
  if (!o.experiment.empty()) {  // keep one experiment (by id) of the selected papers
    bool found = false;
    for (auto& p : papers) {
      std::erase_if(p.experiments, [&](const repro::ExperimentResult& x) { return x.id != o.experiment; });
      found = found || !p.experiments.empty();
    }
    if (!found) throw UsageError("--experiment", fmt::format("no experiment '{}' in the selected papers", o.experiment));
  }
  std::ostringstream out;  // everything computed before anything is printed or written
  repro::write_reproduction(out, fmt, papers);
  if (!o.plots.empty()) (void)repro::write_plots(o.plots, papers);
  emit(out.str(), o.output);
}

}  // namespace

void setup_reproduce(CLI::App& app) {
  auto opt = std::make_shared<ReproduceOptions>();
  auto* cmd = app.add_subcommand("reproduce", "Predict the experiments of the reference papers beside their published values");
  cmd->add_option("paper", opt->paper, "all, a paper (shi-chu-2018, dell-v100, dell-p100, dgx2-comparison) or a scenario file")
      ->type_name("PAPER|FILE")
      ->capture_default_str();
  cmd->add_option("--format", opt->format, "table, json or csv")->capture_default_str();
  cmd->add_option("-o,--output", opt->output, "Write to FILE (atomically) instead of standard output")->type_name("FILE");
  cmd->add_option("--experiment", opt->experiment, "Keep only the experiment with this id")->type_name("ID");
  cmd->add_option("--plots", opt->plots, "Write SVG scaling figures (throughput log-log, speedup) into DIR")->type_name("DIR");
  cmd->callback([opt] { run_reproduce(*opt); });
}

}  // namespace dlscale::cli
