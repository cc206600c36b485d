// Printing predictions: table, JSON and CSV read the same records. The JSON form is a contract:
//   {"schema": 1, "predictions": [{"gpus", "nodes", "iteration_time_s", "throughput_samples_per_s",
//    "throughput_tokens_per_s" (null for images), "mfu", "speedup", "efficiency", "hiding_case", "bottleneck",
//    "breakdown": {"io_s", "h2d_s", "forward_s",
//    "backward_s", "update_s", "comm_s", "comm_exposed_s"}, "time_to_train": {"hours", "gpu_hours",
//    "cost", "currency"} (when a workload applies)}], "inputs": {..., "workload"}}
#pragma once

#include <iosfwd>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dlscale/atomic_file.hpp"  // write_file_atomically, which the printers' callers use
#include "dlscale/plan.hpp"
#include "dlscale/predict.hpp"

namespace dlscale {

enum class OutputFormat { table, json, csv };
OutputFormat output_format_from_string(std::string_view s);  // throws InputError("format", …)

/// What the predictions were made from, printed with them (provenance).
struct RunInfo {
  std::string command = "predict";  // the subcommand that made the records (predict, simulate, …)
  std::string cluster, model, framework, precision, profile, collective_model, command_line;
  std::string gpu;  // the cluster's GPU as predicted (its catalogue name; --gpu may have replaced the file's)
  int batch_per_gpu = 0;
  std::string workload;  // what `train` below was computed for (TrainingWorkload::source); "" without
  /// What the cluster file's writer assumed (Cluster::assumed) and the command line left standing, as
  /// "key: value" items; the table's first line and JSON's inputs.assumed say them.
  std::vector<std::string> assumed;
};

/// Prints the predictions; with `train` (one entry per prediction, plan.hpp's time_to_train) also the time
/// and cost to train at each GPU count: a second table, JSON "time_to_train" members, CSV columns.
void write_predictions(std::ostream& out, OutputFormat fmt, const RunInfo& info, std::span<const Prediction> preds,
                       std::span<const TrainingCost> train = {});

}  // namespace dlscale
