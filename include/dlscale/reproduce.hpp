// Reproducing the reference papers: scenario files (examples/papers/*.yaml, schema in docs/reproduce.md)
// name the systems, models, frameworks, batches and GPU counts of every experiment the papers report;
// `reproduce` predicts each one and keeps the visible measured values beside the predictions.
//
// JSON contract (other tools rely on it):
//   {"schema": 2, "experiments": [{"paper", "experiment", "system", "model", "framework", "precision",
//     "batch_per_gpu", "gpus", "nodes", "inputs": "profile|spec", "iteration_time_s",
//     "throughput_samples_per_s", "speedup", "comm_s", "comm_exposed_s", ... optional "variant",
//     "measured": {...}}], "bus_bandwidth": [{"paper", "experiment", "system", "operation", "gpus",
//     "nodes", "size_bytes", "time_s", "algbw_gb_per_s", "busbw_gb_per_s"}]}
#pragma once

#include <filesystem>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dlscale/report.hpp"

namespace dlscale::repro {

/// One predicted run of an experiment, with the measured values the paper shows for it (if any).
struct Row {
  std::string paper, experiment, system, model, framework, precision, inputs, variant;
  int batch_per_gpu = 0;
  int gpus = 1;
  int nodes = 1;
  double iteration_time_s = 0, throughput_samples_per_s = 0, speedup = 1, comm_s = 0, comm_exposed_s = 0;
  double io_s = 0, h2d_s = 0, forward_s = 0, backward_s = 0, update_s = 0;
  double sync_wait_s = 0;  // the wait for the slowest GPU (the framework's jitter_cv)
  std::string bottleneck;
  double memory_per_gpu_bytes = 0;  // the step's memory per GPU (memory.hpp) and whether the GPU holds it
  bool memory_fits = true;
  /// Derived quantities: r_u2g always; the all-reduce efficiency of eq. 12 where the experiment asks.
  std::map<std::string, double> derived;
  /// Measured values visible in the shared copy of the paper, keyed like the predicted fields
  /// ("iteration_time_s", "speedup", "comm_s", "io_s", "r_u2g", ...), and where they come from.
  std::map<std::string, double> measured;
  std::map<std::string, std::string> measured_source;  // per key: the paper's section or table

  /// The predicted value of a field named like a measured key (NaN if there is none).
  [[nodiscard]] double predicted(std::string_view key) const;
};

/// One point of the bus-bandwidth figure (nccl-tests' definitions, doc/PERFORMANCE.md).
struct BusBandwidthRow {
  std::string paper, experiment, system, operation;
  int gpus = 2, nodes = 1;
  double size_bytes = 0, time_s = 0, algbw_gb_per_s = 0, busbw_gb_per_s = 0;
};

struct ExperimentResult {
  std::string paper, id, title, source, kind;  // kind: training | busbw
  std::vector<std::string> tables;             // which paper-shaped tables to print
  std::vector<std::string> notes;              // modelling choices and assumptions, printed under the tables
  std::optional<std::string> ratio_dimension, ratio_of, ratio_to;
  std::vector<Row> rows;
  std::vector<BusBandwidthRow> busbw;
};

struct PaperResult {
  std::string paper, title, file;
  std::vector<ExperimentResult> experiments;
};

/// The scenario files shipped in <data dir>/examples/papers, sorted.
std::vector<std::filesystem::path> scenario_files();
/// "all", a paper name (the `paper:` of a shipped scenario file) or a scenario file path -> files.
/// Throws InputError("paper", ...) for an unknown name.
std::vector<std::filesystem::path> select_scenarios(std::string_view paper_or_file);
/// Parses and predicts every experiment of one scenario file (InputError with file:line:col on bad input).
PaperResult reproduce_file(const std::filesystem::path& file);

void write_reproduction(std::ostream& out, OutputFormat format, const std::vector<PaperResult>& papers);
/// Writes the SVG scaling figures (throughput vs GPUs log-log with the ideal line; speedup vs GPUs) of
/// every training experiment into `dir`, each atomically; returns the paths written.
std::vector<std::filesystem::path> write_plots(const std::filesystem::path& dir, const std::vector<PaperResult>& papers);

}  // namespace dlscale::repro
