// dlscale calibrate fit MEASUREMENTS.csv... [-o params.yaml] [--leave-one-out gpu|model|source|both|all]
//   [--fp32-is-fp32[-in CSV]] [--framework NAME] [--framework-in CSV[:LAYOUT]=NAME]
// Sets the kernel model's parameters from measured single-GPU throughputs (docs/compute-model.md,
// "Fitting the parameters"); the result is a topologies/compute-params.yaml that --compute-params reads.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "cli/commands.hpp"
#include "cli/scenario_options.hpp"
#include "dlscale/atomic_file.hpp"
#include "dlscale/error.hpp"
#include "dlscale/fit.hpp"
#include "dlscale/io.hpp"
#include "dlscale/strategy.hpp"

namespace dlscale::cli {
namespace {
struct FitCliOptions {
  std::vector<std::string> measurements;  // one or more CSV files, their rows fitted together
  std::string output;
  std::string start;                     // starting parameters (default: the shipped file)
  std::vector<std::string> model_names;  // FILE=ZOO
  bool fp32_is_fp32 = false;
  std::vector<std::string> strict_fp32_files;  // --fp32-is-fp32-in: only these files' fp32 rows are strict
  std::string leave_one_out;                   // "", "gpu", "model", "source", "both" (gpu and model), "all"
  std::string memory_format;                   // rows without the column: nchw or nhwc
  std::string framework;                       // the runs' framework: its cuDNN search, attention, LRN, layout
  std::vector<std::string> frameworks_in;      // CSV[:LAYOUT]=NAME: one file's (or its LAYOUT rows') framework
  std::vector<std::string> fixed;              // parameters kept at their starting values
  std::string report;                          // --report FILE: the report as JSON
};

/// `--fixed NAME,...`: the parameters the fit keeps at their starting values.
FitOptions fit_options(const std::vector<std::string>& fixed) {
  FitOptions f;
  for (const auto& name : fixed) {
    if (name == "all") {  // nothing fitted: the table and errors of the starting set on these rows
      f.tensor_efficiency = f.vector_efficiency = f.conv_efficiency = f.memory_efficiency = f.kernel_overhead = f.operand_feed =
          false;
    } else if (name == "tensor_efficiency") f.tensor_efficiency = false;
    else if (name == "vector_efficiency") f.vector_efficiency = false;
    else if (name == "conv_efficiency") f.conv_efficiency = false;
    else if (name == "memory_efficiency") f.memory_efficiency = false;
    else if (name == "kernel_overhead") f.kernel_overhead = false;
    else if (name == "operand_feed") f.operand_feed = false;
    else
      throw UsageError("--fixed",
                       fmt::format("'{}' is not a fitted parameter (tensor_efficiency, vector_efficiency, "
                                   "conv_efficiency, memory_efficiency, kernel_overhead, operand_feed, or all)",
                                   name));
  }
  return f;
}

/// Whether `net` has a layer of `kind` (a layout matters to convolutions, an attention kernel to attention).
bool has_layer(const Network& net, LayerKind kind) {
  return std::any_of(net.layers.begin(), net.layers.end(), [kind](const Layer& l) { return l.kind == kind; });
}

/// Each row as it was fitted: how it ran (precision, batch, layout, attention, framework), measured and predicted.
std::string table(const std::vector<ThroughputSample>& s, const std::vector<double>& pred) {
  std::string o = fmt::format("{:<18} {:<18} {:>6} {:>6} {:>6} {:>16} {:>10} {:>10} {:>8}  {}\n", "gpu", "model", "prec", "batch",
                              "layout", "attention", "measured", "predicted", "error", "framework");
  for (std::size_t i = 0; i < s.size(); ++i) {
    const Network& net = *s[i].network;
    o += fmt::format("{:<18} {:<18} {:>6} {:>6} {:>6} {:>16} {:>10.1f} {:>10.1f} {:>+7.1f}%  {}\n", s[i].gpu_id, s[i].model_id,
                     to_string(s[i].precision), s[i].batch,
                     has_layer(net, LayerKind::conv) ? std::string(to_string(s[i].layout)) : std::string("-"),
                     has_layer(net, LayerKind::attention) ? std::string(to_string(s[i].attention)) : std::string("-"),
                     s[i].samples_per_s, pred[i], 100.0 * (pred[i] / s[i].samples_per_s - 1.0),
                     s[i].framework.empty() ? std::string("-") : s[i].framework);
  }
  return o;
}

// Files are matched as paths (./a.csv is a.csv), not as spellings.
bool same_file(const std::string& a, const std::string& b) {
  std::error_code ea, eb;
  const auto ca = std::filesystem::weakly_canonical(a, ea), cb = std::filesystem::weakly_canonical(b, eb);
  return ea || eb ? a == b : ca == cb;
}

/// `--framework-in CSV[:LAYOUT]=NAME`: the framework of one measurement file's rows (or of those whose memory_format
/// cell names LAYOUT), for rows without a framework cell.
struct FileFramework {
  std::string file;
  std::optional<TensorLayout> layout;
  std::shared_ptr<const Strategy> framework;
};

std::vector<FileFramework> file_frameworks(const FitCliOptions& o) {
  std::vector<FileFramework> out;
  for (const auto& spec : o.frameworks_in) {
    const auto eq = spec.rfind('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      throw UsageError("--framework-in",
                       fmt::format("'{}' is not CSV=NAME or CSV:LAYOUT=NAME (e.g. h100.csv:nhwc=pytorch-dle)", spec));
    FileFramework f;
    f.file = spec.substr(0, eq);
    const auto colon = f.file.rfind(':');
    if (colon != std::string::npos) {
      const std::string layout = f.file.substr(colon + 1);
      if (layout == "nchw" || layout == "nhwc") {
        f.layout = memory_format_option(layout);
        f.file.resize(colon);
      }
    }
    if (std::none_of(o.measurements.begin(), o.measurements.end(), [&](const std::string& m) { return same_file(f.file, m); }))
      throw UsageError("--framework-in",
                       fmt::format("'{}' is not one of the measurement files ({})", f.file, fmt::join(o.measurements, ", ")));
    f.framework =
        std::make_shared<const Strategy>(load_strategy(resolve(DataKind::framework, spec.substr(eq + 1), "--framework-in")));
    out.push_back(std::move(f));
  }
  return out;
}

/// The options every file's rows are read with (the frameworks, the layout, the model names, fp32).
MeasurementOptions measurement_options(const FitCliOptions& o) {
  MeasurementOptions mo;
  mo.fp32_means_tf32 = !o.fp32_is_fp32;
  if (!o.framework.empty())  // the rows' steps as predict makes that framework's (step_compute)
    mo.take_framework(load_strategy(resolve(DataKind::framework, o.framework, "--framework")));
  if (!o.memory_format.empty()) mo.layout = memory_format_option(o.memory_format);
  for (const auto& m : o.model_names) {
    const auto eq = m.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == m.size())
      throw UsageError("--model-name", fmt::format("'{}' is not FILE_NAME=ZOO_NAME (e.g. bert-base=bert-squad)", m));
    mo.model_names[m.substr(0, eq)] = m.substr(eq + 1);
  }
  return mo;
}

/// Every file's rows, each file read with its own options (--fp32-is-fp32-in, --framework-in).
std::vector<ThroughputSample> read_samples(const FitCliOptions& o) {
  const MeasurementOptions mo = measurement_options(o);
  // --fp32-is-fp32-in names files among the measurements whose fp32 rows ran strict fp32 (e.g. dlscale's own
  // bench/pytorch runs beside Lambda's rows, whose fp32 is PyTorch's default TF32).
  const auto strict = [&](const std::string& file) {
    return std::any_of(o.strict_fp32_files.begin(), o.strict_fp32_files.end(),
                       [&](const std::string& f) { return same_file(f, file); });
  };
  for (const auto& f : o.strict_fp32_files) {
    if (o.fp32_is_fp32)
      throw UsageError("--fp32-is-fp32-in", "--fp32-is-fp32 already says it of every file: give one or the other");
    if (std::none_of(o.measurements.begin(), o.measurements.end(), [&](const std::string& m) { return same_file(f, m); }))
      throw UsageError("--fp32-is-fp32-in",
                       fmt::format("'{}' is not one of the measurement files ({})", f, fmt::join(o.measurements, ", ")));
  }
  const std::vector<FileFramework> frameworks = file_frameworks(o);
  std::vector<ThroughputSample> samples;
  for (const auto& file : o.measurements) {
    MeasurementOptions file_mo = mo;
    if (strict(file)) file_mo.fp32_means_tf32 = false;
    for (const auto& f : frameworks) {
      if (!same_file(f.file, file)) continue;
      if (f.layout) {
        file_mo.framework_by_layout[*f.layout] = f.framework;
      } else {
        file_mo.take_framework(*f.framework);
        if (!o.memory_format.empty()) file_mo.layout = mo.layout;  // --memory-format still says the rows without a cell
      }
    }
    auto rows = read_throughput_csv(file, file_mo);
    samples.insert(samples.end(), std::make_move_iterator(rows.begin()), std::make_move_iterator(rows.end()));
  }
  return samples;
}

/// The fit and its leave-one-out refits: what the report prints (stderr) and writes (--report, JSON).
struct FitReport {
  const std::vector<ThroughputSample>& samples;
  const FitResult& fit;
  struct Refits {
    const char* by;  // "gpu", "model" or "source"
    std::vector<LeaveOneOut> runs;
    double mape = 0;
  };
  std::vector<Refits> refits;
};

std::string report_text(const FitReport& r, const std::string& files) {
  std::string report = fmt::format("# dlscale calibrate fit: {} single-GPU rows of {}\n", r.samples.size(), files);
  report += table(r.samples, r.fit.predicted);
  report += fmt::format("in-sample MAPE {:.1f}% (rms log error {:.3f})\n", r.fit.mape, r.fit.rms_log);
  const KernelParams& d = r.fit.params.defaults;
  report += fmt::format(
      "fitted: tensor_efficiency {:.3f}, vector_efficiency {:.3f}, conv_efficiency {:.3f}, "
      "memory_efficiency {:.3f}, kernel_overhead {:.2f} us, winograd_gain {:.3f}, operand_feed {:.2f}\n",
      d.tensor_efficiency, d.vector_efficiency, d.conv_efficiency, d.memory_efficiency, in_us(d.kernel_overhead), d.winograd_gain,
      d.operand_feed);
  for (const auto& f : r.refits) {
    for (const auto& run : f.runs) report += fmt::format("leave out {} {}: MAPE {:.1f}%\n", f.by, run.left_out, run.mape);
    report += fmt::format("leave-one-{}-out MAPE {:.1f}%\n", f.by, f.mape);
  }
  return report;
}

/// --report FILE: every number of the stderr report (docs/calibration.md, "The fit's report as JSON").
std::string report_json(const FitReport& r, const std::vector<std::string>& files) {
  nlohmann::ordered_json j;
  j["schema"] = 1;
  j["command"] = "calibrate fit";
  j["files"] = files;
  auto rows = nlohmann::ordered_json::array();
  const auto name_or_null = [](bool applies, std::string_view v) {
    return applies ? nlohmann::ordered_json(std::string(v)) : nlohmann::ordered_json(nullptr);
  };
  for (std::size_t i = 0; i < r.samples.size(); ++i) {
    const ThroughputSample& s = r.samples[i];
    const Network& net = *s.network;
    rows.push_back({{"gpu", s.gpu_id},
                    {"model", s.model_id},
                    {"precision", std::string(to_string(s.precision))},
                    {"batch_per_gpu", s.batch},
                    {"layout", name_or_null(has_layer(net, LayerKind::conv), to_string(s.layout))},
                    {"attention", name_or_null(has_layer(net, LayerKind::attention), to_string(s.attention))},
                    {"framework", name_or_null(!s.framework.empty(), s.framework)},
                    {"measured_samples_per_s", s.samples_per_s},
                    {"predicted_samples_per_s", r.fit.predicted[i]},
                    {"error_percent", 100.0 * (r.fit.predicted[i] / s.samples_per_s - 1.0)}});
  }
  j["rows"] = std::move(rows);
  j["mape_percent"] = r.fit.mape;
  j["rms_log_error"] = r.fit.rms_log;
  const KernelParams& d = r.fit.params.defaults;
  j["fitted"] = {{"tensor_efficiency", d.tensor_efficiency},
                 {"vector_efficiency", d.vector_efficiency},
                 {"conv_efficiency", d.conv_efficiency},
                 {"memory_efficiency", d.memory_efficiency},
                 {"kernel_overhead_s", in_seconds(d.kernel_overhead)},
                 {"winograd_gain", d.winograd_gain},
                 {"operand_feed", d.operand_feed}};
  auto refits = nlohmann::ordered_json::array();
  for (const auto& f : r.refits) {
    auto runs = nlohmann::ordered_json::array();
    for (const auto& run : f.runs) runs.push_back({{"left_out", run.left_out}, {"mape_percent", run.mape}});
    refits.push_back({{"by", f.by}, {"runs", std::move(runs)}, {"mape_percent", f.mape}});
  }
  j["leave_one_out"] = std::move(refits);  // empty without --leave-one-out
  return j.dump(2) + "\n";
}

void run_fit(const FitCliOptions& o) {
  if (!o.report.empty() && o.report == "-" && (o.output.empty() || o.output == "-"))
    throw UsageError("--report", "the parameters already go to standard output: give -o FILE or --report FILE");
  if (!o.report.empty() && o.report != "-" && !o.output.empty() && o.output != "-") {
    std::error_code a, b;  // the same file by another name too (./p.yaml, a link); a path that fails compares as given
    const auto report = std::filesystem::weakly_canonical(o.report, a), output = std::filesystem::weakly_canonical(o.output, b);
    if (a || b ? o.report == o.output : report == output)
      throw UsageError("--report", fmt::format("'{}' is also the parameters' file (-o): give the report another file", o.report));
  }
  const std::vector<ThroughputSample> samples = read_samples(o);
  const std::string files = fmt::format("{}", fmt::join(o.measurements, " "));
  const KernelParamSet start = o.start.empty() ? *shipped_kernel_params() : load_kernel_params(o.start);
  const FitOptions fo = fit_options(o.fixed);
  const FitResult fit = fit_kernel_params(samples, start, fo);
  FitReport rep{samples, fit, {}};
  for (const auto& [by, what] :
       {std::pair{"gpu", LeaveOut::gpu}, std::pair{"model", LeaveOut::network}, std::pair{"source", LeaveOut::source}}) {
    const bool both = o.leave_one_out == "both" && what != LeaveOut::source;
    if (o.leave_one_out != by && !both && o.leave_one_out != "all") continue;
    auto runs = leave_one_out(samples, start, what, fo);
    const double mape = leave_one_out_mape(runs, samples);
    rep.refits.push_back({by, std::move(runs), mape});
  }
  KernelParamSet out = fit.params;
  const bool fitted = fo.fits_anything();
  out.defaults.source = fmt::format("{} `dlscale calibrate fit` {} {} ({} rows; in-sample MAPE {:.1f}%)",
                                    fitted ? "fitted by" : "the starting set, nothing fitted, evaluated by", fitted ? "to" : "on",
                                    files, samples.size(), fit.mape);
  const std::string json = o.report.empty() ? std::string() : report_json(rep, o.measurements);
  const std::string params =
      kernel_params_to_yaml(out,
                            "Kernel-model parameters (docs/compute-model.md), written by dlscale calibrate fit.\n" +
                                std::string("Command: ") + command_line());
  // Both files or neither: each is staged beside its target (every check made, the content written) before
  // either is put in place, so that a report that cannot be written leaves the parameters file untouched.
  const auto to_file = [](const std::string& output) { return !output.empty() && output != "-"; };
  std::optional<StagedFile> params_file, report_file;
  if (to_file(o.output)) params_file.emplace(o.output, params);
  if (to_file(o.report)) report_file.emplace(o.report, json);
  if (!to_file(o.output)) emit(params, "");
  if (o.report == "-") emit(json, "");
  if (params_file) params_file->commit();
  if (report_file) report_file->commit();
  fmt::print(stderr, "{}", report_text(rep, files));
}
}  // namespace

void setup_calibrate_fit(CLI::App& calibrate) {
  auto o = std::make_shared<FitCliOptions>();
  auto* c = calibrate.add_subcommand("fit", "Fit the kernel model's parameters to measured single-GPU throughputs (CSV)");
  c->add_option("measurements", o->measurements,
                "CSV files (their rows fitted together): gpu,gpus,precision,model,global_batch|batch_per_gpu,samples_per_s")
      ->required()
      ->type_name("CSV");
  c->add_option("-o,--output", o->output, "Write the parameters to FILE (atomically) instead of standard output")
      ->type_name("FILE");
  c->add_option("--report", o->report,
                "Also write the report (each row measured and predicted, the MAPEs, the fitted values) as JSON to FILE "
                "(atomically)")
      ->type_name("FILE");
  c->add_option("--start", o->start, "Starting parameters (default: topologies/compute-params.yaml)")->type_name("FILE");
  // Each of these takes one value per occurrence (repeat the option for more), so that the CSV files after it
  // stay measurements.
  c->add_option("--model-name", o->model_names, "A model name of the file and its zoo name, e.g. bert-base=bert-squad")
      ->type_name("FILE_NAME=ZOO_NAME")
      ->allow_extra_args(false);
  c->add_flag("--fp32-is-fp32", o->fp32_is_fp32,
              "Rows marked fp32 ran in true fp32 (default: in TF32 where the GPU has it, as PyTorch's default)");
  c->add_option("--fp32-is-fp32-in", o->strict_fp32_files,
                "As --fp32-is-fp32 for the rows of this measurement file only (repeatable; the others keep the default)")
      ->type_name("CSV")
      ->allow_extra_args(false);
  c->add_option("--memory-format", o->memory_format,
                "The layout of image activations in rows without a memory_format (nchw: PyTorch's default; default: the "
                "framework's, else nhwc)")
      ->type_name("LAYOUT");
  c->add_option("--framework", o->framework,
                "The framework the rows ran with (models/frameworks/NAME.yaml or a file): its cuDNN algorithm search, "
                "attention kernel (rows without an attention column), layout (rows without a memory_format) and LRN")
      ->type_name("NAME|FILE");
  c->add_option("--framework-in", o->frameworks_in,
                "The framework of one measurement file's rows, or with :nchw or :nhwc of its rows whose memory_format says "
                "that layout (repeatable; a row's framework column comes first, --framework last)")
      ->type_name("CSV[:LAYOUT]=NAME")
      ->allow_extra_args(false);
  c->add_option("--fixed", o->fixed,
                "Keep these parameters at their starting values (e.g. kernel_overhead; all: only evaluate the start)")
      ->delimiter(',')
      ->type_name("NAME[,NAME]")
      ->allow_extra_args(false);
  c->add_option("--leave-one-out", o->leave_one_out,
                "Also refit without each GPU, each model, each measurement file, GPU and model (both) or all three, and "
                "report the errors")
      ->check(CLI::IsMember({"gpu", "model", "source", "both", "all"}))
      ->type_name("gpu|model|source|both|all");
  c->callback([o] { run_fit(*o); });
}

}  // namespace dlscale::cli
