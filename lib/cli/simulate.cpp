// dlscale simulate: the discrete-event simulator for each GPU count (docs/simulator.md). Prints the
// same prediction record as `predict` (table, JSON, CSV) plus what only a simulation knows.
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/scenario_options.hpp"
#include "dlscale/error.hpp"
#include "dlscale/format.hpp"
#include "dlscale/io.hpp"
#include "dlscale/report.hpp"
#include "dlscale/sim/simulator.hpp"
#include "report/prediction_json.hpp"

namespace dlscale::cli {
namespace {

struct SimulateOptions {
  ScenarioOptions scenario;
  std::string format = "table";
  std::string output;
  std::string trace;
  int iterations = 10;
  int warmup = 1;
  std::uint64_t seed = 1;
  std::string merge = "strategy";
  std::string bucket_size, first_bucket, fusion_threshold, cycle_time = "5 ms";
  bool contention = false;
  int channels = 1;
  std::string allreduce = "ring";
  int readers = 1;
  int prefetch_depth = 0;  // 0: the framework's io.depth
  std::string decode = "0 s";
  int gpus_per_pcie_switch = 1;
  double jitter = 0.0, link_jitter = 0.0;
  std::vector<std::string> speed, node_gpu;
  int trace_gpus = 64;
};

template <class F>
auto parse_unit(const std::string& option, const std::string& text, F parse) {
  try {
    return parse(text);
  } catch (const UnitError& e) {
    throw UsageError(option, e.what());
  }
}

std::pair<int, std::string> split_pair(const std::string& option, const std::string& text) {
  const auto eq = text.find('=');
  int index = -1;
  if (eq != std::string::npos) {
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + eq, index);
    if (ec != std::errc() || ptr != text.data() + eq || index < 0) index = -1;
  }
  if (index < 0 || eq + 1 >= text.size()) throw UsageError(option, fmt::format("'{}' is not INDEX=VALUE (e.g. 3=0.5)", text));
  return {index, text.substr(eq + 1)};
}

sim::SimOptions to_sim_options(const SimulateOptions& o) {
  sim::SimOptions s;
  s.iterations = o.iterations;
  s.warmup = o.warmup;
  s.seed = o.seed;
  s.merge = sim::merge_policy_from_string(o.merge);
  if (!o.bucket_size.empty()) s.bucket_size = parse_unit("--bucket-size", o.bucket_size, parse_bytes);
  if (!o.first_bucket.empty()) s.first_bucket = parse_unit("--first-bucket", o.first_bucket, parse_bytes);
  if (!o.fusion_threshold.empty()) s.fusion_threshold = parse_unit("--fusion-threshold", o.fusion_threshold, parse_bytes);
  s.cycle_time = parse_unit("--cycle-time", o.cycle_time, parse_seconds);
  s.contention = o.contention;
  s.channels = o.channels;
  s.allreduce = sim::allreduce_algorithm_from_string(o.allreduce);
  s.readers_per_node = o.readers;
  s.prefetch_depth = o.prefetch_depth;
  s.decode_per_sample = parse_unit("--decode", o.decode, parse_seconds);
  s.gpus_per_pcie_switch = o.gpus_per_pcie_switch;
  s.compute_jitter = o.jitter;
  s.link_jitter = o.link_jitter;
  for (const auto& text : o.speed) {
    auto [g, v] = split_pair("--speed", text);
    double f = 0.0;
    auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), f);
    if (ec != std::errc() || ptr != v.data() + v.size() || !(f > 0.0) || !std::isfinite(f))
      throw UsageError("--speed", fmt::format("'{}': the speed factor must be a finite number > 0", text));
    s.speed.emplace_back(g, f);
  }
  for (const auto& text : o.node_gpu) {
    auto [node, name] = split_pair("--node-gpu", text);
    try {
      s.node_gpu.emplace_back(node, find_gpu(name));
    } catch (const UsageError&) {
      throw;
    } catch (const InputError& e) {
      if (!e.where().file.empty()) throw;  // an error inside the GPU catalogue keeps its own place
      throw UsageError("--node-gpu", e.message());
    }
  }
  s.trace = !o.trace.empty();
  s.trace_max_gpus = o.trace_gpus;
  return s;
}

std::string plan_text(const std::vector<sim::Bucket>& b) {
  std::string out;
  for (std::size_t i = b.size(); i-- > 0;) {  // output side first, as they are sent
    if (!out.empty()) out += ", ";
    out += b[i].first == b[i].last ? fmt::format("L{}", b[i].first + 1) : fmt::format("L{}-{}", b[i].first + 1, b[i].last + 1);
    out += fmt::format(" ({:.2f} MiB)", in_mebibytes(b[i].bytes));
  }
  return out;
}

nlohmann::ordered_json simulation_json(const sim::SimResult& r) {
  nlohmann::ordered_json j;
  j["gpus"] = r.prediction.gpus;
  j["iterations"] = r.iterations.samples.size();
  j["mean_s"] = in_seconds(r.iterations.mean);
  j["p50_s"] = in_seconds(r.iterations.p50);
  j["p99_s"] = in_seconds(r.iterations.p99);
  j["min_s"] = in_seconds(r.iterations.min);
  j["max_s"] = in_seconds(r.iterations.max);
  auto samples = nlohmann::ordered_json::array();
  for (Seconds s : r.iterations.samples) samples.push_back(in_seconds(s));
  j["iteration_times_s"] = std::move(samples);
  j["merge"] = r.merge;
  auto buckets = nlohmann::ordered_json::array();
  for (const auto& b : r.buckets)
    buckets.push_back({{"first_layer", b.first + 1}, {"last_layer", b.last + 1}, {"size_bytes", in_bytes(b.bytes)}});
  j["buckets"] = std::move(buckets);
  auto cands = nlohmann::ordered_json::array();
  for (const auto& c : r.candidates)
    cands.push_back({{"policy", c.policy}, {"iteration_time_s", in_seconds(c.iteration)}, {"buckets", c.buckets}});
  j["candidates"] = std::move(cands);
  auto util = nlohmann::ordered_json::array();
  for (const auto& u : r.utilisation)
    util.push_back({{"resource", u.name},
                    {"kind", u.kind},
                    {"count", u.count},
                    {"busy_mean", u.busy_mean},
                    {"busy_max", u.busy_max},
                    {"busiest", u.busiest},
                    {"carried_bytes", in_bytes(u.bytes)}});
  j["utilisation"] = std::move(util);
  j["events"] = r.events;
  j["simulated_s"] = r.simulated_seconds;
  if (r.pipeline) {  // eq. P32: a layout's pipeline as simulated, beside the closed form's step it is checked against
    const sim::PipelineStats& ps = *r.pipeline;
    auto busy = nlohmann::ordered_json::array();
    for (double b : ps.stage_busy) busy.push_back(b);
    j["pipeline"] = {{"stages", ps.stages},
                     {"micro_batches", ps.micro_batches},
                     {"chunks", ps.chunks},
                     {"replicas", ps.replicas},
                     {"closed_form_s", in_seconds(ps.closed_form)},
                     {"pipeline_s", in_seconds(ps.pipeline)},
                     {"bubble_s", in_seconds(ps.bubble)},
                     {"dp_comm_s", in_seconds(ps.dp_comm)},
                     {"update_s", in_seconds(ps.update)},
                     {"stage_busy", std::move(busy)}};
  }
  return j;
}

void run_simulate(const SimulateOptions& o) {
  const OutputFormat fmt = output_format_from_string(o.format);
  std::vector<int> gpus;  // a malformed --gpus fails before any file is read; none given: the cluster's default
  if (!o.scenario.gpus.empty()) gpus = parse_gpu_list(o.scenario.gpus);
  const sim::SimOptions sopt = to_sim_options(o);
  RunInfo info;
  info.command = "simulate";
  info.command_line = command_line();
  ScenarioOptions so = o.scenario;
  so.sources_in_json = fmt == OutputFormat::json;  // --explain-sources: into the document's "sources"
  sim::Simulator simulator(build_scenario(so, info), sopt);
  if (gpus.empty() && simulator.predictor().scenario().parallel)  // a layout: the whole cluster, as predict runs it
    gpus = parallel_gpu_counts(simulator.predictor().scenario());
  gpus = gpus.empty() ? default_gpu_counts(simulator.predictor().scenario().cluster)
                      : placeable_gpu_counts(simulator.predictor(), gpus);
  const auto results = simulator.run(gpus);  // everything computed before anything is printed
  const Scenario& sc = simulator.predictor().scenario();
  info.collective_model =
      with_transport(sc.collectives ? sc.collectives : make_collective_model(sc.cluster), sc.strategy.transport, sc.cluster)
          ->describe() +
      fmt::format(" | simulated: {} iterations ({} warm-up), {}, allreduce {}, {} channel(s), seed {}", sopt.iterations,
                  sopt.warmup, sopt.contention ? "links shared max-min" : "no link contention", sim::to_string(sopt.allreduce),
                  sopt.channels, sopt.seed);
  std::vector<Prediction> preds;
  for (const auto& r : results) preds.push_back(r.prediction);

  std::ostringstream out;
  if (fmt == OutputFormat::json) {
    auto j = predictions_json(info, preds);  // predict's record, with what only a simulation knows
    // 2: the unit in every key, buckets' size_bytes (as explain's) and utilisation's carried_bytes (1: bytes)
    j["schema"] = 2;
    auto arr = nlohmann::ordered_json::array();
    for (const auto& r : results) arr.push_back(simulation_json(r));
    j["simulation"] = std::move(arr);
    out << j.dump(2) << '\n';
  } else {
    write_predictions(out, fmt, info, preds);
    if (fmt == OutputFormat::table) {
      for (const auto& r : results) {
        fmt::print(out, "# {} GPUs: iteration mean {:.6f} s, p50 {:.6f} s, p99 {:.6f} s over {} iterations; {} events\n",
                   r.prediction.gpus, in_seconds(r.iterations.mean), in_seconds(r.iterations.p50), in_seconds(r.iterations.p99),
                   r.iterations.samples.size(), r.events);
        if (r.pipeline) {
          const sim::PipelineStats& ps = *r.pipeline;
          fmt::print(out,
                     "#   pipeline (eq. P32): {} stages × {} chunk(s), {} micro-batches, {} replica(s) simulated: {:.6f} s, "
                     "bubble {:.6f} s ({:.1f}%), then DP {:.6f} s + update {:.6f} s; closed form {:.6f} s\n",
                     ps.stages, ps.chunks, ps.micro_batches, ps.replicas, in_seconds(ps.pipeline), in_seconds(ps.bubble),
                     ps.pipeline > Seconds{} ? 100.0 * (ps.bubble / ps.pipeline) : 0.0, in_seconds(ps.dp_comm),
                     in_seconds(ps.update), in_seconds(ps.closed_form));
        } else {
          fmt::print(out, "#   merge: {}; {} bucket(s): {}\n", r.merge, r.buckets.size(), plan_text(r.buckets));
        }
        for (const auto& c : r.candidates)
          fmt::print(out, "#   candidate {:<45} {:.6f} s ({} buckets)\n", c.policy, in_seconds(c.iteration), c.buckets);
        for (const auto& u : r.utilisation)
          fmt::print(out, "#   busy {:<28} mean {:5.1f}%  max {:5.1f}% ({}){}\n", u.name + fmt::format(" ×{}", u.count),
                     100 * u.busy_mean, 100 * u.busy_max, u.busiest,
                     u.bytes > Bytes{} ? fmt::format(", {:.3f} GB carried", in_gigabytes(u.bytes)) : "");
      }
    }
  }
  if (!o.trace.empty()) write_file_atomically(o.trace, results.back().trace_json);
  emit(out.str(), o.output);
}

}  // namespace

void setup_simulate(CLI::App& app) {
  auto opt = std::make_shared<SimulateOptions>();
  auto* cmd = app.add_subcommand("simulate", "Simulate training iterations event by event (contention, buckets, stragglers)");
  add_scenario_options(*cmd, opt->scenario);
  cmd->add_option("--iterations", opt->iterations, "Iterations to simulate")->capture_default_str();
  cmd->add_option("--warmup", opt->warmup, "Leading iterations left out of the statistics")->capture_default_str();
  cmd->add_option("--seed", opt->seed, "Seed of every random stream")->capture_default_str();
  cmd->add_option("--merge", opt->merge, "Gradient merging: strategy, none, ddp, horovod, mgwfbp or best")->capture_default_str();
  cmd->add_option("--bucket-size", opt->bucket_size, "DDP bucket size (default: the strategy's, or 25 MiB)")->type_name("SIZE");
  cmd->add_option("--first-bucket", opt->first_bucket, "DDP first bucket (default: the strategy's, or 1 MiB)")->type_name("SIZE");
  cmd->add_option("--fusion-threshold", opt->fusion_threshold,
                  "Horovod fusion threshold (default: the strategy's bucket size, or 64 MiB)")
      ->type_name("SIZE");
  cmd->add_option("--cycle-time", opt->cycle_time, "Horovod cycle time")->capture_default_str();
  cmd->add_flag("--contention", opt->contention, "Share links max-min fairly between concurrent flows");
  cmd->add_option("--channels", opt->channels, "Rings per collective (with --contention)")->capture_default_str();
  cmd->add_option("--allreduce", opt->allreduce, "ring, tree or hierarchical")->capture_default_str();
  cmd->add_option("--readers", opt->readers, "Reader threads per node")->capture_default_str();
  cmd->add_option("--prefetch-depth", opt->prefetch_depth,
                  "Batches each GPU's prefetch queue holds (0: the framework's io.depth, 2 unless it says)")
      ->capture_default_str();
  cmd->add_option("--decode", opt->decode, "CPU decode time per sample on the reader thread")->capture_default_str();
  cmd->add_option("--gpus-per-pcie-switch", opt->gpus_per_pcie_switch, "GPUs sharing one PCIe uplink (with --contention)")
      ->capture_default_str();
  cmd->add_option("--jitter", opt->jitter, "σ of the log-normal jitter of compute tasks")->capture_default_str();
  cmd->add_option("--link-jitter", opt->link_jitter, "σ of the log-normal jitter of aggregations")->capture_default_str();
  cmd->add_option("--speed", opt->speed, "GPU=FACTOR: a GPU's speed (0.5 = a straggler at half speed); repeatable")
      ->type_name("GPU=FACTOR");
  cmd->add_option("--node-gpu", opt->node_gpu, "NODE=GPU: a different GPU model on a node; repeatable")->type_name("NODE=NAME");
  cmd->add_option("--trace", opt->trace, "Write a Chrome/Perfetto trace of the last GPU count to FILE")->type_name("FILE");
  cmd->add_option("--trace-gpus", opt->trace_gpus, "GPUs whose streams go into the trace")->capture_default_str();
  cmd->add_option("--format", opt->format, "table, json or csv")->capture_default_str();
  cmd->add_option("-o,--output", opt->output, "Write to FILE (atomically) instead of standard output")->type_name("FILE");
  cmd->callback([opt] { run_simulate(*opt); });
}

}  // namespace dlscale::cli
