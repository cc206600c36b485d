// Printing predictions: table, JSON and CSV read the same records. The JSON form is a contract, written
// by one writer (lib/report/prediction_json.hpp) for predict and simulate:
//   {"schema": 1,
//    "inputs": {"cluster", "gpu", "model", "framework", "batch_per_gpu", "precision" (precision_label: "fp8-rowwise"
//               for fp8 with row-wise scaling, "fp8-mxfp8" with MX block scaling), "profile" (null without),
//               "collective_model", "workload" (with time to train), "assumed" (when the cluster file assumed)},
//    "predictions": [a Prediction: {"gpus", "nodes", "batch_per_gpu", "iteration_time_s",
//      "throughput_samples_per_s", "throughput_tokens_per_s" (null for images), "mfu", "speedup", "efficiency",
//      "hiding_case", "boundary_layer", "bottleneck", "bottleneck_resource", "bottleneck_share", "bottleneck_gain",
//      "memory": {"per_gpu_bytes", "capacity_bytes", "fits", and with CPU offload "host_per_node_bytes",
//                 "host_capacity_bytes", "host_fits"},
//      "offload": {"pcie_bytes_per_gpu", "d2h_s", "d2h_exposed_s", "cpu_adam_s", "h2d_s"} (CPU offload only),
//      "breakdown": {"io_s", "h2d_s", "forward_s", "backward_s", "update_s", "comm_s", "comm_exposed_s",
//                    "sync_wait_s", "overhead_s"},
//      "time_to_train": {"iterations", "hours", "gpu_hours", "cost", "currency"} (when a workload applies)}],
//    "simulation": [...] (simulate only, its schema 2: per GPU count its iteration statistics, buckets, utilisation),
//    "sources": [{"name", "value", "source"}] (--explain-sources only: where each value came from)}
// A sweep's JSON lines are another record by design: one flat line per configuration (sweep.hpp). plan, plan
// --parallel and explain write documents of their own around this record (docs/planning.md, "JSON of plan and
// explain"); a prediction that names no bottleneck (Predictor::TimesOnly, plan's) has the four bottleneck keys null.
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

/// Where one value of a prediction came from (--explain-sources): its name, the value with its unit (or the
/// method, for a part a model computes) and its source (a file, an option, a default). A table or CSV
/// prints one stderr line "name: value (source)" each; JSON carries them as its "sources" array.
struct ValueSource {
  std::string name, value, source;
};

/// What the predictions were made from, printed with them (provenance).
struct RunInfo {
  std::string command = "predict";  // the subcommand that made the records (predict, simulate, …)
  std::string cluster, model, framework, precision, profile, collective_model, command_line;
  std::string gpu;  // the cluster's GPU as predicted (its catalogue name; --gpu may have replaced the file's)
  int batch_per_gpu = 0;
  std::string layout;  // a model-parallel layout as the header says it (empty: data parallelism alone)
  /// The layout is data parallelism (eq. P39: TP, PP, CP and EP 1), predicted on the data-parallel path: eq. 8's speedup.
  bool layout_data_parallel = false;
  std::string workload;  // what `train` below was computed for (TrainingWorkload::source); "" without
  /// What the cluster file's writer assumed (Cluster::assumed) and the command line left standing, as
  /// "key: value" items; the table's first line and JSON's inputs.assumed say them.
  std::vector<std::string> assumed;
  /// --explain-sources with --format json: the sources, as the document's "sources" (empty: none asked for).
  std::vector<ValueSource> sources;
};

/// Prints the predictions; with `train` (one entry per prediction, plan.hpp's time_to_train) also the time
/// and cost to train at each GPU count: a second table, JSON "time_to_train" members, CSV columns.
void write_predictions(std::ostream& out, OutputFormat fmt, const RunInfo& info, std::span<const Prediction> preds,
                       std::span<const TrainingCost> train = {});

/// One prediction as the JSON object of "predictions" above (without "time_to_train"), on one line.
std::string to_json(const Prediction& p);

}  // namespace dlscale
