// dlscale topo: show a cluster's topology (an nvidia-smi topo -m style matrix as NCCL sees the paths,
// and the link list), and import topology dumps (nvidia-smi topo -m, NCCL_TOPO_DUMP_FILE) as YAML.
#include <fmt/format.h>

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
  std::string output;
};

struct ImportOptions {
  std::string file;
  std::string output;
  std::string gpu, cpu;  // --gpu ID, --cpu VENDOR[:MODEL]
  ScaleOptions scale;    // --nodes, --fabric
};

std::string cell(const GpuPath& p) {
  if (p.type == PathType::loc) return " X ";
  if (p.nvlinks > 0) return fmt::format("NV{}", p.nvlinks);
  return std::string(to_string(p.type));
}

void run_show(const ShowOptions& o) {
  const Cluster c = load_cluster(resolve(DataKind::cluster, o.cluster, "CLUSTER"));
  if (!c.topology) throw UsageError("CLUSTER", fmt::format("cluster '{}' has no topology graph ('node:' section)", c.name));
  const Topology& t = *c.topology;
  const int n = t.gpus_per_node();
  const auto nics = t.nic_names();
  std::ostringstream out;
  out << fmt::format(
      "# {}: {} node{} x {} {} (paths as NCCL {} sees them: NV# = NVLinks between the pair,\n"
      "# NVL = through NVSwitch, NVB = NVLink through a GPU, PIX/PXB = PCIe switch(es), PHB = host\n"
      "# bridge, SYS = across sockets; a pair NCCL will not P2P is marked *)\n",
      c.name, t.max_nodes(), t.max_nodes() > 1 ? "s" : "", n, c.gpu.name, "2.30.7");
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
      if (o.bandwidth && p.type != PathType::loc) s = fmt::format("{:g}", in_gigabytes_per_second(p.bandwidth));
      out << s << "\t";
    }
    for (int k = 0; k < static_cast<int>(nics.size()); ++k) {
      const GpuPath p = t.nic_path(a, k);
      out << (o.bandwidth ? fmt::format("{:g}", in_gigabytes_per_second(p.bandwidth)) : std::string(to_string(p.type))) << "\t";
    }
    out << "\n";
  }
  if (o.bandwidth) out << "# (GB/s per direction, narrowest link of the path)\n";
  if (!nics.empty()) {
    // The NICs a GPU's network traffic leaves by: the widest routes NCCL computes (fewest hops among equals),
    // PXN routes relayed over NVLink through the NIC's own GPU.
    out << "\n# GPU -> NIC as NCCL routes it (the widest routes; PXN = over NVLink to the GPU beside the NIC)\n";
    for (int a = 0; a < n; ++a) {
      std::vector<std::pair<int, Topology::NicRoute>> r;
      for (int k = 0; k < static_cast<int>(nics.size()); ++k) r.emplace_back(k, t.nic_route(a, k));
      double best = 0;
      int hops = 1 << 30;
      for (const auto& [k, x] : r) best = std::max(best, in_gigabytes_per_second(x.path.bandwidth));
      for (const auto& [k, x] : r)
        if (in_gigabytes_per_second(x.path.bandwidth) == best) hops = std::min(hops, x.path.hops);
      std::string list;
      for (const auto& [k, x] : r)
        if (best > 0 && in_gigabytes_per_second(x.path.bandwidth) == best && x.path.hops == hops)
          list += fmt::format("{}{} ({}, {:g} GB/s)", list.empty() ? "" : ", ", nics[static_cast<std::size_t>(k)],
                              x.pxn ? "PXN" : to_string(x.path.type), best);
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
  emit(out.str(), o.output);
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
  s->add_flag("--bandwidth", show->bandwidth, "Print path bandwidths (GB/s) instead of path types");
  s->add_option("-o,--output", show->output, "Write to FILE instead of standard output")->type_name("FILE");
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
