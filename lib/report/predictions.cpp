#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>
#include <ostream>
#include <utility>

#include "dlscale/error.hpp"
#include "dlscale/format.hpp"
#include "dlscale/report.hpp"
#include "plan/bottleneck_json.hpp"
#include "report/parallel_report.hpp"
#include "report/prediction_json.hpp"

namespace dlscale {

OutputFormat output_format_from_string(std::string_view s) {
  if (s == "table") return OutputFormat::table;
  if (s == "json") return OutputFormat::json;
  if (s == "csv") return OutputFormat::csv;
  throw InputError(SourceLocation{}, "format", fmt::format("unknown format '{}' (expected table, json or csv)", s));
}

nlohmann::ordered_json predictions_json(const RunInfo& info, std::span<const Prediction> preds,
                                        std::span<const TrainingCost> train) {
  nlohmann::ordered_json j;
  j["schema"] = 1;
  j["inputs"] = {{"cluster", info.cluster},
                 {"gpu", info.gpu},
                 {"model", info.model},
                 {"framework", info.framework},
                 {"batch_per_gpu", info.batch_per_gpu},
                 {"precision", info.precision},
                 {"profile", info.profile.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(info.profile)},
                 {"collective_model", info.collective_model}};
  if (!info.layout.empty()) j["inputs"]["layout"] = info.layout;
  if (!train.empty()) j["inputs"]["workload"] = info.workload;
  if (!info.assumed.empty()) j["inputs"]["assumed"] = info.assumed;
  auto arr = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < preds.size(); ++i) arr.push_back(prediction_json(preds[i], i < train.size() ? &train[i] : nullptr));
  j["predictions"] = std::move(arr);
  if (!info.sources.empty()) j["sources"] = sources_json(info.sources);
  return j;
}

nlohmann::ordered_json sources_json(std::span<const ValueSource> sources) {
  auto arr = nlohmann::ordered_json::array();
  for (const ValueSource& s : sources) arr.push_back({{"name", s.name}, {"value", s.value}, {"source", s.source}});
  return arr;
}

std::string to_json(const Prediction& p) { return prediction_json(p).dump(); }

namespace {

std::string hiding(const Prediction& p) {
  if (p.hiding_case == 0) return "-";
  if (p.hiding_case == 1) return "1";
  return fmt::format("2 (C={})", p.boundary_layer);
}

/// Memory per GPU, "!" where the GPU cannot hold it; TB from 1,000 GB (three digits never read as 2.99e+03 GB).
std::string memory_text(const Prediction& p) {
  if (!(p.memory.per_gpu > Bytes{})) return "-";
  const double gb = in_bytes(p.memory.per_gpu) / 1e9;
  const char* mark = p.memory.fits ? "" : "!";
  if (fmt::format("{:.3g}", gb).find('e') != std::string::npos) return fmt::format("{:.3g} TB{}", gb / 1e3, mark);
  return fmt::format("{:.3g} GB{}", gb, mark);
}

std::string cost_text(const TrainingCost& c) { return c.cost ? fmt::format("{:.2f}", *c.cost) : std::string("-"); }

void write_table(std::ostream& out, const RunInfo& info, std::span<const Prediction> preds, std::span<const TrainingCost> train) {
  fmt::print(out, "# dlscale {}: {} on {}, {} ({}), batch {} per GPU{}\n", info.command, info.model, info.cluster, info.framework,
             info.precision, info.batch_per_gpu,
             info.assumed.empty() ? "" : fmt::format("; assumed by the cluster file: {}", fmt::join(info.assumed, "; ")));
  if (!info.profile.empty()) fmt::print(out, "# single-GPU phases from profile {}\n", info.profile);
  if (!info.layout.empty()) fmt::print(out, "# layout: {}\n", info.layout);
  fmt::print(out, "# communication: {}\n", info.collective_model);
  // Token models also show tokens/s and MFU beside samples/s (JSON and CSV always carry them).
  bool tokens = false;
  for (const auto& p : preds) tokens = tokens || p.throughput_tokens_per_s > 0.0;
  fmt::print(out, "{:>5} {:>5} {:>10} {:>11}{} {:>8} {:>6} {:>8} {:>9} | {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} | {}\n",
             "GPUs", "nodes", "iter (s)", "samples/s", tokens ? fmt::format(" {:>11} {:>6}", "tokens/s", "MFU") : "", "speedup",
             "eff", "hiding", "mem/GPU", "io", "h2d", "forward", "backward", "update", "comm", "exposed", "bottleneck");
  bool overflow = false;
  for (const auto& p : preds) {
    const auto& b = p.breakdown;
    overflow = overflow || !p.memory.fits;
    const std::string tok = tokens ? fmt::format(" {:>11.4g} {:>5.1f}%", p.throughput_tokens_per_s, 100.0 * p.mfu) : "";
    fmt::print(out,
               "{:>5} {:>5} {:>10.4f} {:>11.1f}{} {:>8.4g} {:>5.1f}% {:>8} {:>9} | {:>9.4f} {:>9.4f} {:>9.4f} {:>9.4f} {:>9.4f} "
               "{:>9.4f} {:>9.4f} | {}\n",
               p.gpus, p.nodes, in_seconds(p.iteration_time), p.throughput_samples_per_s, tok, p.speedup, 100.0 * p.efficiency,
               hiding(p), memory_text(p), in_seconds(b.io), in_seconds(b.h2d), in_seconds(b.forward), in_seconds(b.backward),
               in_seconds(b.update), in_seconds(b.comm), in_seconds(b.comm_exposed), bottleneck_text(p));
  }
  if (info.layout.empty() || info.layout_data_parallel)
    fmt::print(out, "# times in seconds; speedup = N_g·t_iter(1)/t_iter(N_g) (eq. 8); eff = speedup/N_g\n");
  else  // a model-parallel layout's baseline: one GPU on the same global batch (docs/model.md, eq. P22)
    fmt::print(out,
               "# times in seconds; speedup = one GPU's time for the step's global batch (micro-batches accumulated, one "
               "update) / t_iter(N_g) (eq. P22); eff = speedup/N_g\n");
  fmt::print(out,
             "# bottleneck: the resource whose doubling gains the most samples/s (as explain doubles it), "
             "with its share of the iteration\n");
  const bool fp8 = info.precision.starts_with("fp8");  // "fp8", "fp8-rowwise" or "fp8-mxfp8" (precision_label)
  if (tokens)  // fp8 against bf16's peak, as GpuSpec::mfu_peak reckons it (torchtitan's and Transformer Engine's reports)
    fmt::print(out, "# MFU = 3 × forward FLOPs per sample × samples/s / (GPUs × the GPU's dense {} peak){}\n",
               fp8 ? "bf16" : info.precision, fp8 ? "; fp8 runs are reported against bf16's" : "");
  if (overflow && !preds.empty())
    fmt::print(out, "# mem/GPU ending in '!': more than the GPU's {:.3g} GB; such a step cannot run as configured\n",
               in_bytes(preds.front().memory.capacity) / 1e9);
  for (const auto& p : preds) {  // CPU offload of the optimiser (docs/model.md, eq. S9)
    if (!(p.memory.host_per_node > Bytes{})) continue;
    const auto& b = p.breakdown;
    fmt::print(out,
               "# offload, {} GPUs: {:.3g} GB per GPU over PCIe; d2h {:.4f} s ({:.4f} exposed), CPU Adam {:.4f} s, "
               "h2d {:.4f} s; host memory {:.4g} of {:.4g} GB per node{}\n",
               p.gpus, in_bytes(b.offload_bytes) / 1e9, in_seconds(b.offload_d2h), in_seconds(b.offload_d2h_exposed),
               in_seconds(b.offload_cpu), in_seconds(b.offload_h2d), in_bytes(p.memory.host_per_node) / 1e9,
               in_bytes(p.memory.host_capacity) / 1e9, p.memory.host_fits ? "" : " (does not fit)");
  }
  write_parallel_rows(out, preds);  // model parallelism (parallel_report.cpp)
  if (train.empty()) return;
  std::string currency;
  for (const auto& c : train)
    if (c.cost) currency = c.currency;
  fmt::print(out, "\n# time to train: {}\n", info.workload);
  fmt::print(out, "{:>5} {:>14} {:>12} {:>12} {:>12}\n", "GPUs", "iterations", "hours", "GPU-hours",
             currency.empty() ? std::string("cost") : fmt::format("cost ({})", currency));
  for (std::size_t i = 0; i < preds.size() && i < train.size(); ++i)
    fmt::print(out, "{:>5} {:>14.0f} {:>12.4g} {:>12.4g} {:>12}\n", preds[i].gpus, train[i].iterations,
               in_seconds(train[i].wall_time) / 3600.0, train[i].gpu_hours, cost_text(train[i]));
  if (currency.empty()) fmt::print(out, "# no cost: the cluster file gives no price_per_gpu_hour\n");
}

void write_json(std::ostream& out, const RunInfo& info, std::span<const Prediction> preds, std::span<const TrainingCost> train) {
  out << predictions_json(info, preds, train).dump(2) << '\n';
}

void write_csv(std::ostream& out, std::span<const Prediction> preds, std::span<const TrainingCost> train) {
  out << "gpus,nodes,batch_per_gpu,iteration_time_s,throughput_samples_per_s,speedup,efficiency,hiding_case,"
         "boundary_layer,bottleneck,io_s,h2d_s,forward_s,backward_s,update_s,comm_s,comm_exposed_s,memory_per_gpu_bytes,"
         "memory_fits,throughput_tokens_per_s,mfu,bottleneck_share,bottleneck_gain";
  out << (train.empty() ? "\n" : ",train_iterations,train_hours,gpu_hours,cost\n");
  for (std::size_t i = 0; i < preds.size(); ++i) {
    const Prediction& p = preds[i];
    const auto& b = p.breakdown;
    fmt::print(out, "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}", p.gpus, p.nodes, p.batch_per_gpu,
               in_seconds(p.iteration_time), p.throughput_samples_per_s, p.speedup, p.efficiency, p.hiding_case, p.boundary_layer,
               to_string(p.bottleneck), in_seconds(b.io), in_seconds(b.h2d), in_seconds(b.forward), in_seconds(b.backward),
               in_seconds(b.update), in_seconds(b.comm), in_seconds(b.comm_exposed));
    fmt::print(out, ",{},{},{},{},{},{}", in_bytes(p.memory.per_gpu), p.memory.fits ? "true" : "false", p.throughput_tokens_per_s,
               p.mfu, p.bottleneck_share, p.bottleneck_gain);
    if (i < train.size())
      fmt::print(out, ",{},{},{},{}", train[i].iterations, in_seconds(train[i].wall_time) / 3600.0, train[i].gpu_hours,
                 train[i].cost ? fmt::format("{}", *train[i].cost) : std::string());
    out << '\n';
  }
}

}  // namespace

void write_predictions(std::ostream& out, OutputFormat f, const RunInfo& info, std::span<const Prediction> preds,
                       std::span<const TrainingCost> train) {
  switch (f) {
    case OutputFormat::table:
      write_table(out, info, preds, train);
      break;
    case OutputFormat::json:
      write_json(out, info, preds, train);
      break;
    case OutputFormat::csv:
      write_csv(out, preds, train);
      break;
  }
}
}  // namespace dlscale
