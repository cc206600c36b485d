// Prints reproduced experiments in the shape of the papers' tables (throughput and speedup per GPU
// count, Table V phases, t_comm, ratios between systems or frameworks, bus bandwidth per size), and as
// JSON or CSV. Measured values are printed beside predictions with the relative error
// (predicted − measured) / measured.
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>

#include "dlscale/reproduce.hpp"
#include "repro/series.hpp"

namespace dlscale::repro {
namespace {

double error_percent(double predicted, double measured) { return 100.0 * (predicted - measured) / measured; }

std::vector<int> gpu_columns(const std::vector<RowSeries>& ss) {
  std::set<int> g;
  for (const auto& s : ss)
    for (const Row* r : s.rows) g.insert(r->gpus);
  return {g.begin(), g.end()};
}

std::string cell(double predicted, const Row& r, const char* key, const char* number_format) {
  std::string s = fmt::format(fmt::runtime(number_format), predicted);
  if (auto it = r.measured.find(key); it != r.measured.end())
    s +=
        fmt::format(" ({} {:+.1f}%)", fmt::format(fmt::runtime(number_format), it->second), error_percent(predicted, it->second));
  return s;
}

void grid_table(std::ostream& out, const ExperimentResult& x, const char* what, const char* unit,
                const std::function<std::string(const Row&)>& value) {
  const auto ss = series_of(x);
  if (ss.empty()) return;
  const auto ls = series_labels(ss);
  const auto cols = gpu_columns(ss);
  std::size_t lw = 12;
  for (const auto& l : ls) lw = std::max(lw, l.size());
  std::vector<std::vector<std::string>> cells(ss.size(), std::vector<std::string>(cols.size(), "-"));
  std::vector<std::size_t> cw(cols.size(), 6);
  for (std::size_t i = 0; i < ss.size(); ++i)
    for (const Row* r : ss[i].rows) {
      const auto c = static_cast<std::size_t>(std::find(cols.begin(), cols.end(), r->gpus) - cols.begin());
      cells[i][c] = value(*r);
      cw[c] = std::max(cw[c], cells[i][c].size());
    }
  fmt::print(out, "{} ({}) by GPU count\n", what, unit);
  fmt::print(out, "{:<{}}", "", lw);
  for (std::size_t c = 0; c < cols.size(); ++c) fmt::print(out, "  {:>{}}", fmt::format("{} GPU", cols[c]), cw[c]);
  out << '\n';
  for (std::size_t i = 0; i < ss.size(); ++i) {
    fmt::print(out, "{:<{}}", ls[i], lw);
    for (std::size_t c = 0; c < cols.size(); ++c) fmt::print(out, "  {:>{}}", cells[i][c], cw[c]);
    out << '\n';
  }
}

void phases_table(std::ostream& out, const ExperimentResult& x) {
  // Table V: per model and inputs, the phases as rows and the frameworks as columns.
  static const std::pair<const char*, const char*> phases[] = {{"t_io wait", "io_exposed_s"}, {"t_h2d", "h2d_s"},
                                                               {"t_f", "forward_s"},          {"t_b", "backward_s"},
                                                               {"t_u", "update_s"},           {"t_iter", "iteration_time_s"}};
  std::vector<std::pair<std::string, std::string>> blocks;  // (model, inputs)
  std::vector<std::string> frameworks;
  for (const auto& r : x.rows) {
    if (r.gpus != 1) continue;
    if (std::find(blocks.begin(), blocks.end(), std::pair{r.model, r.inputs}) == blocks.end())
      blocks.emplace_back(r.model, r.inputs);
    if (std::find(frameworks.begin(), frameworks.end(), r.framework) == frameworks.end()) frameworks.push_back(r.framework);
  }
  fmt::print(out, "single-GPU phases (s): predicted (measured, error)\n");
  for (const auto& [model, inputs] : blocks) {
    fmt::print(out, "{} [{}]\n", model, inputs == "profile" ? "phases from the profile" : "from specifications");
    fmt::print(out, "{:<9}", "phase");
    for (const auto& f : frameworks) fmt::print(out, "  {:>26}", f);
    out << '\n';
    for (const auto& [label, key] : phases) {
      fmt::print(out, "{:<9}", label);
      for (const auto& f : frameworks) {
        std::string c = "-";
        for (const auto& r : x.rows)
          if (r.gpus == 1 && r.model == model && r.inputs == inputs && r.framework == f)
            c = cell(r.predicted(key), r, key, "{:.4f}");
        fmt::print(out, "  {:>26}", c);
      }
      out << '\n';
    }
  }
}

const char* quantity_label(const std::string& key) {
  static const std::map<std::string, const char*> names{{"iteration_time_s", "t_iter (s)"},
                                                        {"throughput_samples_per_s", "samples/s"},
                                                        {"speedup", "speedup"},
                                                        {"comm_s", "t_comm (s)"},
                                                        {"io_s", "t_io (s)"},
                                                        {"io_exposed_s", "t_io wait (s)"},
                                                        {"h2d_s", "t_h2d (s)"},
                                                        {"forward_s", "t_f (s)"},
                                                        {"backward_s", "t_b (s)"},
                                                        {"update_s", "t_u (s)"},
                                                        {"allreduce_efficiency", "E_allreduce"},
                                                        {"r_u2g", "r_u2g"}};
  auto it = names.find(key);
  return it == names.end() ? "?" : it->second;
}

void compare_table(std::ostream& out, const ExperimentResult& x) {
  fmt::print(out, "predicted vs the paper\n");
  fmt::print(out, "{:<12} {:<11} {:<8} {:>4}  {:<12} {:>10} {:>10} {:>8}  {}\n", "model", "framework", "inputs", "GPUs",
             "quantity", "predicted", "paper", "error", "source");
  for (const auto& r : x.rows)
    for (const auto& [key, meas] : r.measured) {
      const double pred = r.predicted(key);
      const bool pct = key == "allreduce_efficiency" || key == "r_u2g";
      const std::string p = pct ? fmt::format("{:.2f}%", 100 * pred) : fmt::format("{:.4g}", pred);
      const std::string m = pct ? fmt::format("{:.2f}%", 100 * meas) : fmt::format("{:.4g}", meas);
      fmt::print(out, "{:<12} {:<11} {:<8} {:>4}  {:<12} {:>10} {:>10} {:>+7.2f}%  {}\n", r.model, r.framework, r.inputs, r.gpus,
                 quantity_label(key), p, m, error_percent(pred, meas), r.measured_source.at(key));
    }
}

std::string dimension_value(const Row& r, const std::string& d) {
  return d == "system" ? r.system : d == "framework" ? r.framework : r.precision;
}

void ratio_table(std::ostream& out, const ExperimentResult& x) {
  if (!x.ratio_dimension) return;
  const std::string& d = *x.ratio_dimension;
  // match rows that differ only in the dimension (and the batch, which systems may size differently)
  auto other_key = [&](const Row& r) {
    return fmt::format("{}|{}|{}|{}|{}|{}|{}", d == "system" ? "" : r.system, r.variant, r.model,
                       d == "framework" ? "" : r.framework, d == "precision" ? "" : r.precision, r.inputs, r.gpus);
  };
  std::map<std::string, const Row*> to;
  for (const auto& r : x.rows)
    if (dimension_value(r, d) == *x.ratio_to) to[other_key(r)] = &r;
  ExperimentResult ratios;
  for (const auto& r : x.rows) {
    if (dimension_value(r, d) != *x.ratio_of) continue;
    auto it = to.find(other_key(r));
    if (it == to.end()) continue;
    Row q = r;
    q.measured.clear();
    q.throughput_samples_per_s = r.throughput_samples_per_s / it->second->throughput_samples_per_s;
    ratios.rows.push_back(q);
  }
  grid_table(out, ratios, fmt::format("throughput ratio {} / {}", *x.ratio_of, *x.ratio_to).c_str(), "×",
             [](const Row& r) { return fmt::format("{:.3f}", r.throughput_samples_per_s); });
}

void busbw_table(std::ostream& out, const ExperimentResult& x) {
  std::vector<std::pair<std::string, std::string>> blocks;  // (operation, system)
  for (const auto& b : x.busbw)
    if (std::find(blocks.begin(), blocks.end(), std::pair{b.operation, b.system}) == blocks.end())
      blocks.emplace_back(b.operation, b.system);
  for (const auto& [op, system] : blocks) {
    std::vector<int> gpus;
    std::vector<double> sizes;
    std::map<std::pair<double, int>, double> v;
    for (const auto& b : x.busbw) {
      if (b.operation != op || b.system != system) continue;
      if (std::find(gpus.begin(), gpus.end(), b.gpus) == gpus.end()) gpus.push_back(b.gpus);
      if (std::find(sizes.begin(), sizes.end(), b.size_bytes) == sizes.end()) sizes.push_back(b.size_bytes);
      v[{b.size_bytes, b.gpus}] = b.busbw_gb_per_s;
    }
    fmt::print(out, "{} bus bandwidth (GB/s) on {}\n{:>10}", op, system, "size");
    for (int g : gpus) fmt::print(out, "  {:>7}", fmt::format("{} GPU", g));
    out << '\n';
    for (double s : sizes) {
      const std::string label =
          s >= 1073741824.0 ? fmt::format("{:g} GiB", s / 1073741824.0) : fmt::format("{:g} MiB", s / 1048576.0);
      fmt::print(out, "{:>10}", label);
      for (int g : gpus) fmt::print(out, "  {:>7.2f}", v[{s, g}]);
      out << '\n';
    }
  }
}

void write_table(std::ostream& out, const std::vector<PaperResult>& papers) {
  for (const auto& p : papers) {
    fmt::print(out, "# {}: {}\n# scenarios: {}\n", p.paper, p.title, p.file);
    for (const auto& x : p.experiments) {
      fmt::print(out, "\n## {}: {}\n", x.id, x.title);
      if (!x.source.empty()) fmt::print(out, "# paper: {}\n", x.source);
      for (const auto& t : x.tables) {
        if (t == "throughput")
          grid_table(out, x, "throughput", "samples/s; in parentheses the paper's value and the error",
                     [](const Row& r) { return cell(r.throughput_samples_per_s, r, "throughput_samples_per_s", "{:.1f}"); });
        else if (t == "speedup")
          grid_table(out, x, "speedup", "against 1 GPU of the same series",
                     [](const Row& r) { return cell(r.speedup, r, "speedup", "{:.3f}"); });
        else if (t == "comm")
          grid_table(out, x, "t_comm", "s, total / exposed after overlap", [](const Row& r) {
            std::string s = fmt::format("{:.4f}/{:.4f}", r.comm_s, r.comm_exposed_s);
            if (auto it = r.measured.find("comm_s"); it != r.measured.end())
              s += fmt::format(" ({:.4f} {:+.1f}%)", it->second, error_percent(r.comm_s, it->second));
            return s;
          });
        else if (t == "phases") phases_table(out, x);
        else if (t == "compare") compare_table(out, x);
        else if (t == "ratio") ratio_table(out, x);
        else if (t == "busbw") busbw_table(out, x);
      }
      for (const auto& n : x.notes) fmt::print(out, "# note: {}\n", n);
    }
    out << '\n';
  }
}

nlohmann::ordered_json row_json(const Row& r) {
  nlohmann::ordered_json e;
  e["paper"] = r.paper;
  e["experiment"] = r.experiment;
  e["system"] = r.system;
  e["model"] = r.model;
  e["framework"] = r.framework;
  e["precision"] = r.precision;
  e["batch_per_gpu"] = r.batch_per_gpu;
  e["gpus"] = r.gpus;
  e["nodes"] = r.nodes;
  e["inputs"] = r.inputs;
  e["iteration_time_s"] = r.iteration_time_s;
  e["throughput_samples_per_s"] = r.throughput_samples_per_s;
  e["speedup"] = r.speedup;
  e["comm_s"] = r.comm_s;
  e["comm_exposed_s"] = r.comm_exposed_s;
  if (!r.variant.empty()) e["variant"] = r.variant;
  e["breakdown"] = {{"io_s", r.io_s},           {"h2d_s", r.h2d_s},
                    {"forward_s", r.forward_s}, {"backward_s", r.backward_s},
                    {"update_s", r.update_s},   {"sync_wait_s", r.sync_wait_s}};
  e["bottleneck"] = r.bottleneck;
  e["memory"] = {{"per_gpu_bytes", r.memory_per_gpu_bytes}, {"fits", r.memory_fits}};
  nlohmann::ordered_json d;
  for (const auto& [k, v] : r.derived) d[k] = v;
  e["derived"] = d;
  if (!r.measured.empty()) {
    nlohmann::ordered_json m, err;
    for (const auto& [k, v] : r.measured) {
      m[k] = v;
      err[k] = error_percent(r.predicted(k), v);
    }
    e["measured"] = m;
    nlohmann::ordered_json src;
    for (const auto& [k, v] : r.measured_source) src[k] = v;
    e["measured_source"] = src;
    e["error_percent"] = err;
  }
  return e;
}

void write_json(std::ostream& out, const std::vector<PaperResult>& papers) {
  nlohmann::ordered_json j;
  j["schema"] = 2;  // 2: bus_bandwidth's algbw_gb_per_s, busbw_gb_per_s (1: algbw_gb_s, busbw_gb_s), as collective's
  auto rows = nlohmann::ordered_json::array();
  auto bus = nlohmann::ordered_json::array();
  for (const auto& p : papers)
    for (const auto& x : p.experiments) {
      for (const auto& r : x.rows) rows.push_back(row_json(r));
      for (const auto& b : x.busbw)
        bus.push_back(nlohmann::ordered_json{{"paper", b.paper},
                                             {"experiment", b.experiment},
                                             {"system", b.system},
                                             {"operation", b.operation},
                                             {"gpus", b.gpus},
                                             {"nodes", b.nodes},
                                             {"size_bytes", b.size_bytes},
                                             {"time_s", b.time_s},
                                             {"algbw_gb_per_s", b.algbw_gb_per_s},
                                             {"busbw_gb_per_s", b.busbw_gb_per_s}});
    }
  j["experiments"] = std::move(rows);
  j["bus_bandwidth"] = std::move(bus);
  out << j.dump(2) << '\n';
}

void write_csv(std::ostream& out, const std::vector<PaperResult>& papers) {
  out << "paper,experiment,system,model,framework,precision,batch_per_gpu,gpus,nodes,inputs,variant,iteration_time_s,"
         "throughput_samples_per_s,speedup,comm_s,comm_exposed_s,measured\n";
  bool any_bus = false;
  for (const auto& p : papers)
    for (const auto& x : p.experiments) {
      any_bus = any_bus || !x.busbw.empty();
      for (const auto& r : x.rows) {
        std::string m;
        for (const auto& [k, v] : r.measured) m += fmt::format("{}{}={}", m.empty() ? "" : ";", k, v);
        fmt::print(out, "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", r.paper, r.experiment, r.system, r.model,
                   r.framework, r.precision, r.batch_per_gpu, r.gpus, r.nodes, r.inputs, r.variant, r.iteration_time_s,
                   r.throughput_samples_per_s, r.speedup, r.comm_s, r.comm_exposed_s, m);
      }
    }
  if (!any_bus) return;
  out << "\npaper,experiment,system,operation,gpus,nodes,size_bytes,time_s,algbw_gb_per_s,busbw_gb_per_s\n";
  for (const auto& p : papers)
    for (const auto& x : p.experiments)
      for (const auto& b : x.busbw)
        fmt::print(out, "{},{},{},{},{},{},{},{},{},{}\n", b.paper, b.experiment, b.system, b.operation, b.gpus, b.nodes,
                   b.size_bytes, b.time_s, b.algbw_gb_per_s, b.busbw_gb_per_s);
}

}  // namespace

void write_reproduction(std::ostream& out, OutputFormat format, const std::vector<PaperResult>& papers) {
  switch (format) {
    case OutputFormat::table:
      write_table(out, papers);
      break;
    case OutputFormat::json:
      write_json(out, papers);
      break;
    case OutputFormat::csv:
      write_csv(out, papers);
      break;
  }
}

}  // namespace dlscale::repro
