// dlscale topo: show a cluster's topology (an nvidia-smi topo -m style matrix as NCCL sees the paths,
// and the link list), and import topology dumps (nvidia-smi topo -m, NCCL_TOPO_DUMP_FILE) as YAML.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/scenario_options.hpp"
#include "dlscale/error.hpp"
#include "dlscale/format.hpp"
#include "dlscale/io.hpp"
#include "dlscale/report.hpp"
#include "dlscale/topology.hpp"
#include "io/files.hpp"

namespace dlscale::cli {
namespace {

struct ShowOptions {
  std::string cluster;
  bool bandwidth = false;
  std::string format = "table";
  std::string output;
};

struct ImportOptions {
  std::string file;
  std::string output;
  std::string gpu, cpu;  // --gpu ID, --cpu VENDOR[:MODEL]
  ScaleOptions scale;    // --nodes, --fabric
};

constexpr const char* kNcclVersion = "2.30.7";  // the NCCL whose path rules lib/nccl follows

std::string cell(const GpuPath& p) {
  if (p.type == PathType::loc) return " X ";
  if (p.nvlinks > 0) return fmt::format("NV{}", p.nvlinks);
  return std::string(to_string(p.type));
}

/// The routes NCCL takes from GPU `a` to the NICs: the widest (fewest hops among equals), PXN routes relayed over
/// NVLink through the NIC's own GPU. Empty: no route.
std::vector<std::pair<int, Topology::NicRoute>> widest_nic_routes(const Topology& t, int a, int nics) {
  std::vector<std::pair<int, Topology::NicRoute>> r;
  for (int k = 0; k < nics; ++k) r.emplace_back(k, t.nic_route(a, k));
  double best = 0;
  int hops = 1 << 30;
  for (const auto& [k, x] : r) best = std::max(best, in_gigabytes_per_second(x.path.bandwidth));
  for (const auto& [k, x] : r)
    if (in_gigabytes_per_second(x.path.bandwidth) == best) hops = std::min(hops, x.path.hops);
  std::vector<std::pair<int, Topology::NicRoute>> out;
  for (const auto& [k, x] : r)
    if (best > 0 && in_gigabytes_per_second(x.path.bandwidth) == best && x.path.hops == hops) out.emplace_back(k, x);
  return out;
}

std::string show_table(const Cluster& c, bool bandwidth) {
  const Topology& t = *c.topology;
  const int n = t.gpus_per_node();
  const auto nics = t.nic_names();
  std::ostringstream out;
  out << fmt::format(
      "# {}: {} node{} x {} {} (paths as NCCL {} sees them: NV# = NVLinks between the pair,\n"
      "# NVL = through NVSwitch, NVB = NVLink through a GPU, PIX/PXB = PCIe switch(es), PHB = host\n"
      "# bridge, SYS = across sockets; a pair NCCL will not P2P is marked *)\n",
      c.name, t.max_nodes(), t.max_nodes() > 1 ? "s" : "", n, c.gpu.name, kNcclVersion);
  out << "\t";
  for (int g = 0; g < n; ++g) out << "GPU" << g << "\t";
  for (const auto& nic : nics) out << nic << "\t";
  out << "\n";
  for (int a = 0; a < n; ++a) {
    out << "GPU" << a << "\t";
    for (int b = 0; b < n; ++b) {
      const GpuPath p = t.path(a, b);
      std::string s = cell(p);
      if (p.type != PathType::loc && !p.p2p) s += "*";
      if (bandwidth && p.type != PathType::loc) s = fmt::format("{:g}", in_gigabytes_per_second(p.bandwidth));
      out << s << "\t";
    }
    for (int k = 0; k < static_cast<int>(nics.size()); ++k) {
      const GpuPath p = t.nic_path(a, k);
      out << (bandwidth ? fmt::format("{:g}", in_gigabytes_per_second(p.bandwidth)) : std::string(to_string(p.type))) << "\t";
    }
    out << "\n";
  }
  if (bandwidth) out << "# (GB/s per direction, narrowest link of the path)\n";
  if (!nics.empty()) {
    out << "\n# GPU -> NIC as NCCL routes it (the widest routes; PXN = over NVLink to the GPU beside the NIC)\n";
    for (int a = 0; a < n; ++a) {
      std::string list;
      for (const auto& [k, x] : widest_nic_routes(t, a, static_cast<int>(nics.size())))
        list += fmt::format("{}{} ({}, {:g} GB/s)", list.empty() ? "" : ", ", nics[static_cast<std::size_t>(k)],
                            x.pxn ? "PXN" : to_string(x.path.type), in_gigabytes_per_second(x.path.bandwidth));
      out << fmt::format("GPU{}\t{}\n", a, list.empty() ? "no route" : list);
    }
  }
  out << "\n# Vertices\n";
  for (const auto& v : t.vertices()) out << fmt::format("  {:<10} {:<12} {}\n", v.name, to_string(v.kind), v.detail);
  out << "\n# Links (bandwidth per direction as NCCL rates it)\n";
  for (const auto& l : t.links()) {
    std::string what(to_string(l.kind));
    if (l.kind == LinkKind::nvlink) what += fmt::format(" x{}", l.count);
    if (l.kind == LinkKind::pcie && l.generation > 0) what += fmt::format(" gen{} x{}", l.generation, l.lanes);
    out << fmt::format("  {:<10} {:<10} {:<18} {:>8.1f} GB/s\n", l.a, l.b, what, in_gigabytes_per_second(l.bandwidth));
  }
  if (t.max_nodes() > 1) {
    const auto& f = t.fabric();
    out << fmt::format("\n# Fabric: {}, {} NIC{} per node at {:g} GB/s", f.kind, f.nics_per_node, f.nics_per_node > 1 ? "s" : "",
                       in_gigabytes_per_second(f.nic_bandwidth));
    if (f.single_flow > BytesPerSecond{})
      out << fmt::format(", single flow {:g} GB/s x {} flow{}", in_gigabytes_per_second(f.single_flow), f.flows,
                         f.flows > 1 ? "s" : "");
    out << "\n";
  }
  return out.str();
}

/// A path of the matrix to `to` (a GPU's index or a NIC's name, under `key`): {key, "path" (NCCL's type: NVL, NVB,
/// PIX, ...), "nvlinks", "hops" (links on NCCL's path; to a NIC, counted to its network vertex), "bandwidth_gb_per_s"}.
nlohmann::ordered_json path_json(const char* key, const nlohmann::ordered_json& to, const GpuPath& p) {
  return {{key, to},
          {"path", std::string(to_string(p.type))},
          {"nvlinks", p.nvlinks},
          {"hops", p.hops},
          {"bandwidth_gb_per_s", in_gigabytes_per_second(p.bandwidth)}};
}

/// The JSON of the table (docs/topology.md, "topo show --format json"): both matrices (path types and GB/s), the
/// routes to the NICs, the vertices, the links and the fabric; every bandwidth in GB/s per direction.
std::string show_json(const Cluster& c) {
  const Topology& t = *c.topology;
  const int n = t.gpus_per_node();
  const auto nics = t.nic_names();
  nlohmann::ordered_json j;
  j["schema"] = 1;
  j["command"] = "topo show";
  j["cluster"] = c.name;
  j["gpu"] = c.gpu.name;
  j["nodes"] = t.max_nodes();
  j["gpus_per_node"] = n;
  j["nccl_version"] = kNcclVersion;
  j["nics"] = nics;
  auto matrix = nlohmann::ordered_json::array();
  for (int a = 0; a < n; ++a) {
    auto peers = nlohmann::ordered_json::array();
    for (int b = 0; b < n; ++b) {
      if (b == a) continue;
      const GpuPath p = t.path(a, b);
      auto e = path_json("gpu", b, p);
      e["p2p"] = p.p2p;  // false: NCCL goes through host memory (the table's *)
      peers.push_back(std::move(e));
    }
    auto to_nics = nlohmann::ordered_json::array();
    for (int k = 0; k < static_cast<int>(nics.size()); ++k) {
      to_nics.push_back(path_json("nic", nics[static_cast<std::size_t>(k)], t.nic_path(a, k)));
    }
    auto routes = nlohmann::ordered_json::array();
    for (const auto& [k, x] : widest_nic_routes(t, a, static_cast<int>(nics.size()))) {
      auto e = path_json("nic", nics[static_cast<std::size_t>(k)], x.path);
      e["pxn"] = x.pxn;  // relayed over NVLink through the GPU beside the NIC
      routes.push_back(std::move(e));
    }
    matrix.push_back({{"gpu", a}, {"peers", std::move(peers)}, {"nics", std::move(to_nics)}, {"nic_routes", std::move(routes)}});
  }
  j["gpus"] = std::move(matrix);
  auto vertices = nlohmann::ordered_json::array();
  for (const auto& v : t.vertices())
    vertices.push_back({{"name", v.name}, {"kind", std::string(to_string(v.kind))}, {"detail", v.detail}});
  j["vertices"] = std::move(vertices);
  auto links = nlohmann::ordered_json::array();
  for (const auto& l : t.links()) {
    nlohmann::ordered_json e{{"a", l.a}, {"b", l.b}, {"kind", std::string(to_string(l.kind))}};
    e["nvlinks"] = l.kind == LinkKind::nvlink ? nlohmann::ordered_json(l.count) : nlohmann::ordered_json(nullptr);
    e["pcie_generation"] = l.kind == LinkKind::pcie && l.generation > 0 ? nlohmann::ordered_json(l.generation) : nullptr;
    e["pcie_lanes"] = l.kind == LinkKind::pcie && l.generation > 0 ? nlohmann::ordered_json(l.lanes) : nullptr;
    e["bandwidth_gb_per_s"] = in_gigabytes_per_second(l.bandwidth);
    links.push_back(std::move(e));
  }
  j["links"] = std::move(links);
  if (t.max_nodes() > 1) {
    const auto& f = t.fabric();
    j["fabric"] = {{"kind", f.kind},
                   {"nics_per_node", f.nics_per_node},
                   {"nic_bandwidth_gb_per_s", in_gigabytes_per_second(f.nic_bandwidth)},
                   {"single_flow_gb_per_s",
                    f.single_flow > BytesPerSecond{} ? nlohmann::ordered_json(in_gigabytes_per_second(f.single_flow))
                                                     : nlohmann::ordered_json(nullptr)},
                   {"flows", f.flows}};
  } else {
    j["fabric"] = nullptr;  // one node: no network between nodes
  }
  return j.dump(2) + "\n";
}

void run_show(const ShowOptions& o) {
  const bool json = json_format(o.format);
  const Cluster c = load_cluster(resolve(DataKind::cluster, o.cluster, "CLUSTER"));
  if (!c.topology) throw UsageError("CLUSTER", fmt::format("cluster '{}' has no topology graph ('node:' section)", c.name));
  emit(json ? show_json(c) : show_table(c, o.bandwidth), o.output);
}

void run_import(const ImportOptions& o, bool xml) {
  TopologyImportOptions opt;
  opt.gpu = o.gpu;
  opt.cpu = o.cpu;
  const ClusterOverrides ov = cluster_overrides(o.scale);
  opt.nodes = ov.nodes;
  opt.fabric = ov.fabric;
  const std::string text = read_input_file(o.file);
  std::vector<std::string> warnings;
  const std::string yaml = xml ? import_nccl_xml(text, o.file, opt, &warnings) : import_nvidia_smi(text, o.file, opt, &warnings);
  // The file written must load: an import that writes a cluster dlscale then refuses is a bug, said now.
  (void)parse_cluster(yaml, o.output.empty() || o.output == "-" ? "(imported)" : o.output);
  for (const auto& w : warnings) fmt::print(stderr, "dlscale: warning: {}\n", w);
  emit(yaml, o.output);
}

}  // namespace

void setup_topo(CLI::App& app) {
  auto* topo = app.add_subcommand("topo", "Show or import cluster topologies");
  topo->require_subcommand(1);
  auto show = std::make_shared<ShowOptions>();
  auto* s = topo->add_subcommand("show", "nvidia-smi topo -m style matrix of a cluster's node, and its links");
  s->add_option("CLUSTER", show->cluster, "Cluster name or file")->required();
  s->add_flag("--bandwidth", show->bandwidth, "Print path bandwidths (GB/s) instead of path types (JSON has both)");
  s->add_option("--format", show->format, "table or json")->capture_default_str();
  s->add_option("-o,--output", show->output, "Write to FILE (atomically) instead of standard output")->type_name("FILE");
  s->callback([show] { run_show(*show); });

  auto* imp = topo->add_subcommand("import", "Write a topology YAML from a dump");
  imp->require_subcommand(1);
  for (const bool xml : {false, true}) {
    auto opt = std::make_shared<ImportOptions>();
    auto* cmd = imp->add_subcommand(xml ? "nccl-xml" : "nvidia-smi",
                                    xml ? "from an NCCL_TOPO_DUMP_FILE" : "from a 'nvidia-smi topo -m' capture");
    cmd->add_option("FILE", opt->file, "The dump")->required();
    cmd->add_option("-o,--output", opt->output, "Write to FILE (atomically) instead of standard output")->type_name("FILE");
    cmd->add_option("--gpu", opt->gpu, "The GPU, an id of topologies/gpus.yaml (default: guessed from the dump)")
        ->type_name("ID");
    cmd->add_option("--cpu", opt->cpu,
                    "The CPU, VENDOR[:MODEL]: intel, intel:skylake, amd, power, arm (default: the dump's, or intel)")
        ->type_name("VENDOR[:MODEL]");
    add_scale_options(*cmd, opt->scale);
    cmd->callback([opt, xml] { run_import(*opt, xml); });
  }
}

}  // namespace dlscale::cli
