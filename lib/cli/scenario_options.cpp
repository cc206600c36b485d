#include "cli/scenario_options.hpp"

#include <fmt/format.h>

#include <charconv>

#include "dlscale/error.hpp"
#include "dlscale/io.hpp"

namespace dlscale::cli {

void add_scale_options(CLI::App& cmd, ScaleOptions& o, bool with_nodes) {
  if (with_nodes)
    cmd.add_option_function<int>(
           "--nodes", [&o](const int& v) { o.nodes = v == 0 ? -1 : v; },
           "Make the cluster N nodes (with --fabric for a single-node file)")
        ->type_name("N");
  cmd.add_option("--fabric", o.fabric,
                 "The network between nodes, KIND:SPEED[:COUNT] NICs per node (e.g. infiniband:200Gb/s:8); "
                 "replaces the file's")
      ->type_name("KIND:SPEED[:COUNT]");
}

ClusterOverrides cluster_overrides(const ScaleOptions& o) {
  ClusterOverrides ov;
  if (o.nodes < 0) throw UsageError("--nodes", fmt::format("a cluster needs at least one node, got {}", o.nodes == -1 ? 0 : o.nodes));
  ov.nodes = o.nodes;
  if (!o.fabric.empty()) ov.fabric = parse_fabric_spec(o.fabric, "--fabric");
  return ov;
}

void add_scenario_options(CLI::App& cmd, ScenarioOptions& o) {
  add_scale_options(cmd, o.scale);
  cmd.add_option("--cluster", o.cluster, "Cluster: a name in topologies/ or a YAML file")->type_name("NAME|FILE");
  cmd.add_option("--model", o.model, "Network: a name in models/ or a YAML file")->type_name("NAME|FILE");
  cmd.add_option("--framework", o.framework, "Framework strategy: a name in models/frameworks/ or a YAML file")
      ->type_name("NAME|FILE");
  cmd.add_option_function<int>(
         "--batch",
         [&o](const int& v) {
           o.batch = v;
           o.batch_given = true;
         },
         "Samples per GPU per iteration (weak scaling)")
      ->type_name("M");
  cmd.add_option("--gpus", o.gpus, "GPU counts, comma-separated")->type_name("LIST")->capture_default_str();
  cmd.add_option("--profile", o.profile, "Measured single-GPU phase times (and optional measured values at larger counts)")
      ->type_name("FILE");
  cmd.add_option("--precision", o.precision, "fp32 or fp16 (mixed precision)")->capture_default_str();
  cmd.add_option("--calibration", o.calibration, "Measured curves and layer times (dlscale-calibrate or calibrate import)")
      ->type_name("FILE");
  cmd.add_flag("--explain-sources", o.explain_sources, "Say on stderr which numbers came from where");
}

std::vector<int> parse_gpu_list(const std::string& text) {
  std::vector<int> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    int v = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || v < 1)
      throw UsageError("--gpus", fmt::format("'{}' is not a list of GPU counts ≥ 1 (e.g. 1,2,4,8)", text));
    out.push_back(v);
    start = end + 1;
  }
  return out;
}

Scenario build_scenario(const ScenarioOptions& o, RunInfo& info) {
  Scenario sc;
  if (o.batch_given && o.batch < 1) throw UsageError("--batch", fmt::format("the batch per GPU must be at least 1, got {}", o.batch));
  std::string model = o.model, framework = o.framework, cluster = o.cluster;
  if (!o.profile.empty()) {
    Profile p = load_profile(resolve(DataKind::profile, o.profile, "--profile"));
    if (!model.empty() && model != p.model && resolve(DataKind::network, model, "--model").stem() != p.model)
      throw UsageError("--model", fmt::format("the profile {} is for model '{}', not '{}'", o.profile, p.model, model));
    if (!framework.empty() && framework != p.framework &&
        resolve(DataKind::framework, framework, "--framework").stem() != p.framework)
      throw UsageError("--framework",
                       fmt::format("the profile {} is for framework '{}', not '{}'", o.profile, p.framework, framework));
    if (model.empty()) model = p.model;
    if (framework.empty()) framework = p.framework;
    if (cluster.empty() && !p.cluster.empty()) cluster = p.cluster;
    if (o.batch_given && o.batch != p.batch_per_gpu)
      throw UsageError("--batch", fmt::format("the profile {} was measured at batch {} per GPU, not {}", o.profile,
                                              p.batch_per_gpu, o.batch));
    sc.batch_per_gpu = p.batch_per_gpu;
    info.profile = o.profile;
    sc.profile = std::move(p);
  } else {
    sc.batch_per_gpu = o.batch_given ? o.batch : kDefaultBatch;
  }
  if (sc.batch_per_gpu < 1) throw UsageError("--batch", "the batch per GPU must be at least 1");
  if (cluster.empty()) cluster = kDefaultCluster;
  if (model.empty()) model = kDefaultModel;
  if (framework.empty()) framework = kDefaultFramework;

  if (o.precision == "fp32") sc.compute.precision = Precision::fp32;
  else if (o.precision == "fp16") sc.compute.precision = Precision::fp16;
  else throw UsageError("--precision", fmt::format("unknown precision '{}' (expected fp32 or fp16)", o.precision));

  sc.cluster = load_cluster(resolve(DataKind::cluster, cluster, "--cluster"), cluster_overrides(o.scale));
  sc.network = load_network(resolve(DataKind::network, model, "--model"));
  sc.strategy = load_strategy(resolve(DataKind::framework, framework, "--framework"));

  info.cluster = sc.cluster.name;
  info.model = sc.network.name;
  info.framework = sc.strategy.name;
  info.batch_per_gpu = sc.batch_per_gpu;
  info.precision = o.precision;
  if (!o.calibration.empty() || o.explain_sources) apply_calibration(o, sc, info);
  return sc;
}

}  // namespace dlscale::cli
