#include <fmt/format.h>
#include <fmt/ostream.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <system_error>

#include "dlscale/error.hpp"
#include "dlscale/format.hpp"
#include "dlscale/report.hpp"

namespace dlscale {

OutputFormat output_format_from_string(std::string_view s) {
  if (s == "table") return OutputFormat::table;
  if (s == "json") return OutputFormat::json;
  if (s == "csv") return OutputFormat::csv;
  throw UsageError("--format", fmt::format("unknown format '{}' (expected table, json or csv)", s));
}

namespace {

std::string hiding(const Prediction& p) {
  if (p.hiding_case == 0) return "-";
  if (p.hiding_case == 1) return "1";
  return fmt::format("2 (C={})", p.boundary_layer);
}

void write_table(std::ostream& out, const RunInfo& info, std::span<const Prediction> preds) {
  fmt::print(out, "# dlscale {}: {} on {}, {} ({}), batch {} per GPU\n", info.command, info.model, info.cluster, info.framework,
             info.precision, info.batch_per_gpu);
  if (!info.profile.empty()) fmt::print(out, "# single-GPU phases from profile {}\n", info.profile);
  fmt::print(out, "# communication: {}\n", info.collective_model);
  fmt::print(out, "{:>5} {:>5} {:>10} {:>11} {:>8} {:>6} {:>8} | {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} | {}\n",
             "GPUs", "nodes", "iter (s)", "samples/s", "speedup", "eff", "hiding", "io", "h2d", "forward",
             "backward", "update", "comm", "exposed", "bottleneck");
  for (const auto& p : preds) {
    const auto& b = p.breakdown;
    fmt::print(out, "{:>5} {:>5} {:>10.4f} {:>11.1f} {:>8.4g} {:>5.1f}% {:>8} | {:>9.4f} {:>9.4f} {:>9.4f} {:>9.4f} {:>9.4f} {:>9.4f} {:>9.4f} | {}: {}\n",
               p.gpus, p.nodes, in_seconds(p.iteration_time), p.throughput_samples_per_s, p.speedup,
               100.0 * p.efficiency, hiding(p), in_seconds(b.io), in_seconds(b.h2d), in_seconds(b.forward),
               in_seconds(b.backward), in_seconds(b.update), in_seconds(b.comm), in_seconds(b.comm_exposed),
               to_string(p.bottleneck), p.bottleneck_resource);
  }
  fmt::print(out, "# times in seconds; speedup = N_g·t_iter(1)/t_iter(N_g) (eq. 8); eff = speedup/N_g\n");
}

void write_json(std::ostream& out, const RunInfo& info, std::span<const Prediction> preds) {
  nlohmann::ordered_json j;
  j["schema"] = 1;
  j["inputs"] = {{"cluster", info.cluster},
                 {"model", info.model},
                 {"framework", info.framework},
                 {"batch_per_gpu", info.batch_per_gpu},
                 {"precision", info.precision},
                 {"profile", info.profile.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(info.profile)},
                 {"collective_model", info.collective_model}};
  auto arr = nlohmann::ordered_json::array();
  for (const auto& p : preds) {
    const auto& b = p.breakdown;
    nlohmann::ordered_json e;
    e["gpus"] = p.gpus;
    e["nodes"] = p.nodes;
    e["batch_per_gpu"] = p.batch_per_gpu;
    e["iteration_time_s"] = in_seconds(p.iteration_time);
    e["throughput_samples_per_s"] = p.throughput_samples_per_s;
    e["speedup"] = p.speedup;
    e["efficiency"] = p.efficiency;
    e["hiding_case"] = p.hiding_case;
    e["boundary_layer"] = p.boundary_layer;
    e["bottleneck"] = std::string(to_string(p.bottleneck));
    e["bottleneck_resource"] = p.bottleneck_resource;
    e["breakdown"] = {{"io_s", in_seconds(b.io)},           {"h2d_s", in_seconds(b.h2d)},
                      {"forward_s", in_seconds(b.forward)}, {"backward_s", in_seconds(b.backward)},
                      {"update_s", in_seconds(b.update)},   {"comm_s", in_seconds(b.comm)},
                      {"comm_exposed_s", in_seconds(b.comm_exposed)}};
    arr.push_back(std::move(e));
  }
  j["predictions"] = std::move(arr);
  out << j.dump(2) << '\n';
}

void write_csv(std::ostream& out, std::span<const Prediction> preds) {
  out << "gpus,nodes,batch_per_gpu,iteration_time_s,throughput_samples_per_s,speedup,efficiency,hiding_case,"
         "boundary_layer,bottleneck,io_s,h2d_s,forward_s,backward_s,update_s,comm_s,comm_exposed_s\n";
  for (const auto& p : preds) {
    const auto& b = p.breakdown;
    fmt::print(out, "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", p.gpus, p.nodes, p.batch_per_gpu,
               in_seconds(p.iteration_time), p.throughput_samples_per_s, p.speedup, p.efficiency, p.hiding_case,
               p.boundary_layer, to_string(p.bottleneck), in_seconds(b.io), in_seconds(b.h2d), in_seconds(b.forward),
               in_seconds(b.backward), in_seconds(b.update), in_seconds(b.comm), in_seconds(b.comm_exposed));
  }
}

}  // namespace

void write_predictions(std::ostream& out, OutputFormat f, const RunInfo& info, std::span<const Prediction> preds) {
  switch (f) {
    case OutputFormat::table: write_table(out, info, preds); break;
    case OutputFormat::json: write_json(out, info, preds); break;
    case OutputFormat::csv: write_csv(out, preds); break;
  }
}

void write_file_atomically(const std::string& path, std::string_view content) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path tmp = target.parent_path() / (target.filename().string() + ".tmp-dlscale");
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw InputError(SourceLocation{path, 0, 0}, "", "cannot write output file");
    f.write(content.data(), static_cast<std::streamsize>(content.size()));
    f.flush();
    if (!f) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw InputError(SourceLocation{path, 0, 0}, "", "cannot write output file");
    }
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw InputError(SourceLocation{path, 0, 0}, "", "cannot write output file: " + ec.message());
  }
}

}  // namespace dlscale
