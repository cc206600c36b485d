// dlscale calibrate import nccl-tests LOG... | nvbandwidth OUTPUT  -o FILE
// and the --calibration / --explain-sources hook that predict (and every command built on
// build_scenario) shares.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <map>
#include <set>

#include "cli/commands.hpp"
#include "cli/scenario_options.hpp"
#include "dlscale/calibration.hpp"
#include "dlscale/error.hpp"
#include "dlscale/format.hpp"
#include "io/files.hpp"
#include "io/numbers.hpp"

namespace dlscale::cli {
namespace {

/// The import's date: now, or SOURCE_DATE_EPOCH (seconds since 1970-01-01 UTC) when it is set, so that
/// an import can be repeated byte for byte (reproducible-builds.org/specs/source-date-epoch).
std::string utc_now() {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH"); epoch != nullptr && *epoch != '\0') {
    const auto v = whole_number(epoch, 0, 253'402'300'799);  // up to 9999-12-31T23:59:59Z
    if (!v) throw UsageError("SOURCE_DATE_EPOCH", fmt::format("'{}' is not a number of seconds since 1970-01-01", epoch));
    t = static_cast<std::time_t>(*v);
  }
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return {};
  return buf;
}

void print_warnings(const std::vector<std::string>& w) {
  for (const auto& line : w) fmt::print(stderr, "dlscale: warning: {}\n", line);
}

struct ImportOptions {
  std::vector<std::string> inputs;
  std::string output;
  std::string op;
  int gpus = 0, nodes = 0;  // --gpus/--nodes: replace the counts read from the log
};

std::optional<CollectiveOp> op_option(const std::string& s) {
  if (s.empty()) return std::nullopt;
  for (auto op : {CollectiveOp::allreduce, CollectiveOp::allgather, CollectiveOp::reducescatter, CollectiveOp::broadcast,
                  CollectiveOp::reduce})
    if (to_string(op) == s) return op;
  throw UsageError("--op",
                   fmt::format("unknown collective '{}' (expected allreduce, allgather, reducescatter, "
                               "broadcast or reduce)",
                               s));
}

void finish_import(Calibration& cal, const std::vector<std::string>& warnings, const std::string& output) {
  cal.provenance.date = utc_now();
  cal.provenance.host = host_name();
  cal.provenance.command_line = command_line();
  const std::string text = to_yaml(cal);  // everything computed before anything is written
  print_warnings(warnings);
  emit(text, output);
}

void run_import_nccl(const ImportOptions& o) {
  std::vector<std::filesystem::path> logs(o.inputs.begin(), o.inputs.end());
  std::vector<std::string> warnings;
  if (o.gpus < 0) throw UsageError("--gpus", fmt::format("the GPU count must be at least 1, got {}", o.gpus));
  if (o.nodes < 0) throw UsageError("--nodes", fmt::format("the node count must be at least 1, got {}", o.nodes));
  Calibration cal = import_nccl_tests(logs, NcclTestsImport{op_option(o.op), o.gpus, o.nodes}, &warnings);
  finish_import(cal, warnings, o.output);
}

void run_import_nvbandwidth(const ImportOptions& o) {
  std::vector<std::string> warnings;
  Calibration cal = import_nvbandwidth(o.inputs.front(), &warnings);
  finish_import(cal, warnings, o.output);
}

// ---- --calibration / --explain-sources -------------------------------------------------------------

std::string range_text(const CollectiveCurve& c) { return fmt::format("{} to {}", c.points.front().size, c.points.back().size); }

GpuPlacement place(const Cluster& c, int gpus) {
  if (gpus <= c.gpus_per_node) return GpuPlacement{gpus, 1, gpus};
  return GpuPlacement{gpus, std::max(1, gpus / c.gpus_per_node), c.gpus_per_node};
}

}  // namespace

void setup_calibrate(CLI::App& app) {
  auto* cmd = app.add_subcommand("calibrate", "Calibration files: import what was measured elsewhere");
  cmd->require_subcommand(1);
  auto* imp = cmd->add_subcommand("import", "Convert measurements into a dlscale calibration file (docs/calibration.md)");
  imp->require_subcommand(1);
  {
    auto o = std::make_shared<ImportOptions>();
    auto* c = imp->add_subcommand("nccl-tests",
                                  "nccl-tests logs (all_reduce_perf, all_gather_perf, reduce_scatter_perf, "
                                  "broadcast_perf, reduce_perf output)");
    c->add_option("logs", o->inputs, "Log files (the collective is read from the log or the file name)")
        ->required()
        ->type_name("LOG...");
    c->add_option("-o,--output", o->output, "Write the calibration to FILE (atomically) instead of standard output")
        ->type_name("FILE");
    c->add_option("--op", o->op,
                  "The collective, when neither the log nor its file name says it (and the one "
                  "to import from a log of several)")
        ->type_name("allreduce|allgather|reducescatter|broadcast|reduce");
    c->add_option_function<int>(
         "--gpus", [o](const int& v) { o->gpus = v < 1 ? -1 : v; },
         "GPUs the log measured, when its '# Rank' lines are trimmed or missing")
        ->type_name("N");
    c->add_option_function<int>(
         "--nodes", [o](const int& v) { o->nodes = v < 1 ? -1 : v; },
         "Nodes those GPUs sat on (default: distinct host names of the log)")
        ->type_name("K");
    c->callback([o] { run_import_nccl(*o); });
  }
  {
    auto o = std::make_shared<ImportOptions>();
    auto* c = imp->add_subcommand("nvbandwidth", "The output of nvbandwidth: its JSON (-j) or its text");
    c->add_option("json", o->inputs, "nvbandwidth output file (JSON or text)")->required()->expected(1)->type_name("OUTPUT");
    c->add_option("-o,--output", o->output, "Write the calibration to FILE (atomically) instead of standard output")
        ->type_name("FILE");
    c->callback([o] { run_import_nvbandwidth(*o); });
  }
  setup_calibrate_fit(*cmd);
}

namespace {
// ---- per-layer compute ----
void explain_compute(const ScenarioOptions& o, const Scenario& sc, const CalibrationUse& used,
                     std::vector<ValueSource>& explain) {
  const std::string precision(to_string(sc.compute.precision));
  if (used.layer_times) {
    const auto& roofline = used.roofline_layers;
    std::string rest;
    for (std::size_t i = 0; i < roofline.size() && i < 8; ++i) rest += (i ? ", " : "") + roofline[i];
    if (roofline.size() > 8) rest += fmt::format(", … ({} more)", roofline.size() - 8);
    explain.push_back(
        {"forward/backward",
         fmt::format("{} of {} layers measured", sc.network.layers.size() - roofline.size(), sc.network.layers.size()),
         fmt::format("{}: {} batch {} {}{}{}", o.calibration, sc.network.name, sc.batch_per_gpu, precision,
                     roofline.empty() ? "" : "; roofline for " + rest,
                     sc.profile ? "; they replace the profile's forward/backward totals" : "")});
  } else if (sc.profile) {
    explain.push_back({"forward/backward/update", fmt::format("profile {}", o.profile),
                       "phase totals spread over layers by the roofline's shape"});
  } else {
    const KernelParams& k = sc.compute.kernel(sc.cluster.gpu);
    const std::string params =
        sc.compute.kernel_params ? sc.compute.kernel_params->source : std::string("topologies/compute-params.yaml");
    explain.push_back({"forward/backward", fmt::format("kernel model on {} ({})", sc.cluster.gpu.name, precision), params});
    explain.push_back({fmt::format("peak_{}", precision), fmt::format("{}", sc.cluster.gpu.peak(sc.compute.precision)),
                       fmt::format("GPU catalogue: {}", sc.cluster.gpu.name)});
    for (const auto& [name, value] :
         {std::pair{"tensor_efficiency", k.tensor_efficiency}, std::pair{"vector_efficiency", k.vector_efficiency},
          std::pair{"conv_efficiency", k.conv_efficiency}, std::pair{"memory_efficiency", k.memory_efficiency}})
      explain.push_back({name, fmt::format("{}", value), params});
  }
  if (!sc.profile) explain.push_back({"update", "kernel model", "a memory-bound pass over parameters and optimiser state"});
}

// ---- host-to-GPU copies and storage ----
void explain_input(const ScenarioOptions& o, const Scenario& sc, const CalibrationUse& used, std::vector<ValueSource>& explain) {
  const Bytes batch_bytes = input_per_gpu(sc);
  const TransferKind h2d_kind = sc.strategy.pinned_memory ? TransferKind::h2d_pinned : TransferKind::h2d_pageable;
  const BytesPerSecond h2d = sc.strategy.pinned_memory ? sc.cluster.h2d_pinned : sc.cluster.h2d_pageable;
  if (sc.profile) explain.push_back({"io, h2d", fmt::format("profile {}", o.profile), "the profile's phase times"});
  else if (used.h2d)
    explain.push_back({"h2d", fmt::format("{} for a batch of {}", h2d, batch_bytes),
                       fmt::format("measured {} copy, {}", to_string(h2d_kind), o.calibration)});
  else
    explain.push_back(
        {"h2d", fmt::format("{}", h2d),
         fmt::format("cluster file {}, {} memory", sc.cluster.source_file, sc.strategy.pinned_memory ? "pinned" : "pageable")});
  if (!sc.profile)
    explain.push_back(
        {"io", fmt::format("{}", sc.cluster.dataset_in_page_cache ? sc.cluster.page_cache : sc.cluster.disk),
         fmt::format("{}, {}", used.storage ? "measured by " + o.calibration : "cluster file " + sc.cluster.source_file,
                     sc.cluster.dataset_in_page_cache ? "page cache" : "disk")});
}

// The bytes of gradients exchanged per parameter and the optimiser, and where they come from; returns the
// smallest and largest gradient of a layer.
std::pair<Bytes, Bytes> explain_gradients(const ScenarioOptions& o, const Scenario& sc, std::vector<ValueSource>& explain) {
  const ComputeOptions step = step_compute(sc);
  const double per_element = gradient_bytes_per_element(step);
  std::string why(to_string(step.precision));
  if (is_mixed(step.precision) && step.fp32_gradients)
    why = fmt::format("fp32 in {}: framework '{}' keeps fp32 parameters, mixed_precision: {{gradients: fp32}}", why,
                      sc.strategy.name);
  else if (is_mixed(step.precision)) why += ": the gradients of the half-precision working copy";
  explain.push_back({"gradients exchanged", fmt::format("{} B per parameter", per_element), why});
  explain.push_back({"optimizer", std::string(to_string(step.optimizer)),
                     !o.optimizer.empty() ? std::string("--optimizer")
                         : sc.strategy.optimizer
                         ? fmt::format("framework '{}' says optimizer: {}", sc.strategy.name, to_string(*sc.strategy.optimizer))
                         : fmt::format("the default for {} models", sc.network.input_kind)});
  Bytes smallest = bytes(1e300), largest{};
  for (const auto& l : sc.network.layers) {
    const Bytes g = Network::gradient_bytes(l, per_element);
    if (g > Bytes{}) {
      smallest = min(smallest, g);
      largest = max(largest, g);
    }
  }
  return {smallest, largest};
}
}  // namespace

namespace {
// The collectives a framework's aggregation runs: (op, across nodes only).
std::vector<std::pair<CollectiveOp, bool>> aggregation_ops(Aggregation a) {
  switch (a) {
    case Aggregation::allreduce:
      return {{CollectiveOp::allreduce, false}};
    case Aggregation::parameter_server:
      return {{CollectiveOp::broadcast, false}};
    case Aggregation::hybrid:
      return {{CollectiveOp::allreduce, false}, {CollectiveOp::broadcast, true}};
    case Aggregation::broadcast_reduce:
      return {{CollectiveOp::broadcast, false}, {CollectiveOp::reduce, false}};
  }
  return {};
}

// --explain-sources: where each GPU count's communication time comes from (a measured curve, the α-β fit
// outside it, or the model).
void explain_collectives(const ScenarioOptions& o, const Scenario& sc, const CalibrationUse& used, const Calibration* cal,
                         std::vector<ValueSource>& explain) {
  const std::shared_ptr<const CollectiveModel>& fallback = used.fallback;
  const std::shared_ptr<const CalibratedCollectiveModel>& calibrated = used.collectives;
  const auto [smallest, largest] = explain_gradients(o, sc, explain);
  const std::vector<std::pair<CollectiveOp, bool>> ops = aggregation_ops(sc.strategy.aggregation);
  std::vector<int> counts;
  try {
    counts = parse_gpu_list(o.gpus);
  } catch (const UsageError&) {
    counts.clear();  // the command reports a bad --gpus itself
  }
  for (int g : counts) {
    if (g < 2 || g > sc.cluster.max_gpus()) continue;
    const GpuPlacement at = place(sc.cluster, g);
    for (auto [op, across] : ops) {
      GpuPlacement where = at;
      if (sc.strategy.aggregation == Aggregation::hybrid)
        where = across ? GpuPlacement{2, 2, 1} : GpuPlacement{at.gpus_per_node, 1, at.gpus_per_node};
      if (sc.strategy.aggregation == Aggregation::parameter_server) where.gpus = 2;
      if (where.gpus < 2) continue;
      const CollectiveCurve* c = calibrated ? calibrated->curve_for(op, where) : nullptr;
      const std::string name = fmt::format("communication, {} GPUs ({} node{})", g, at.nodes, at.nodes > 1 ? "s" : "");
      if (c) {
        const bool outside = smallest < c->points.front().size || largest > c->points.back().size;
        explain.push_back(
            {name,
             fmt::format("{} measured on {} GPUs, {} interpolated{}", to_string(op), where.gpus, range_text(*c),
                         outside && c->fit ? fmt::format("; gradients of {} to {} outside it from the α-β fit (α = {}, β = {})",
                                                         smallest, largest, c->fit->alpha, c->fit->beta)
                                           : ""),
             c->source});
      } else if (!cal) {
        explain.push_back({name, fmt::format("{} from the model", to_string(op)), fallback->describe()});
      } else {
        explain.push_back({name,
                           fmt::format("{} on {} GPU{} / {} node{} not measured", to_string(op), where.gpus,
                                       where.gpus > 1 ? "s" : "", where.nodes, where.nodes > 1 ? "s" : ""),
                           fallback->describe()});
      }
    }
  }
}

}  // namespace

void apply_calibration(const ScenarioOptions& o, Scenario& sc, RunInfo& info) {
  std::vector<ValueSource> explain;
  std::shared_ptr<const Calibration> cal;
  if (!o.calibration.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(o.calibration, ec))
      throw InputError(SourceLocation{o.calibration, 0, 0}, "--calibration", cannot_open(o.calibration));
    cal = std::make_shared<const Calibration>(load_calibration(o.calibration));
  }
  // The measurements into the scenario, another GPU's refused (the library's, docs/calibration.md).
  const CalibrationUse used = dlscale::apply_calibration(sc, cal);
  for (const auto& w : used.warnings) fmt::print(stderr, "dlscale: warning: {}\n", w);
  if (cal)
    explain.push_back(
        {"calibration", o.calibration,
         fmt::format("{}, {}{}", cal->provenance.tool, cal->provenance.date.empty() ? "undated" : cal->provenance.date,
                     cal->gpu.empty() ? "" : ", " + cal->gpu)});

  explain_compute(o, sc, used, explain);
  explain_input(o, sc, used, explain);
  if (!o.explain_sources) return;
  explain_collectives(o, sc, used, cal.get(), explain);
  if (sc.strategy.jitter_cv > 0.0 || sc.strategy.iteration_overhead > Seconds{}) {  // more than one GPU synchronizes
    explain.push_back({"jitter_cv", fmt::format("{}", sc.strategy.jitter_cv),
                       fmt::format("{}; the expected wait for the slowest GPU",
                                   o.jitter_cv >= 0.0 ? "--jitter-cv" : "framework '" + sc.strategy.name + "'")});
    explain.push_back({"iteration_overhead", fmt::format("{}", sc.strategy.iteration_overhead),
                       fmt::format("framework '{}'", sc.strategy.name)});
  }
  if (o.sources_in_json) {  // the command's JSON document carries them ("sources"); stderr stays quiet
    info.sources = std::move(explain);
    return;
  }
  fmt::print(stderr, "# sources (--explain-sources)\n");
  for (const auto& s : explain) fmt::print(stderr, "#   {}: {} ({})\n", s.name, s.value, s.source);
}

}  // namespace dlscale::cli
