// Cluster files (docs/input-formats.md, "Cluster"; docs/topology.md) and the --fabric spec.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dlscale/io.hpp"
#include "dlscale/topology.hpp"
#include "io/numbers.hpp"
#include "io/text.hpp"
#include "io/yaml_reader.hpp"
#include "loaders/gpu_entry.hpp"
#include "loaders/input_entry.hpp"
#include "loaders/link_entry.hpp"
#include "topology/parse.hpp"

namespace dlscale {
namespace fs = std::filesystem;
using yamlio::MapReader;
using yamlio::Node;

// ---- clusters (simple form) -------------------------------------------------------------------------
LinkSpec read_link(const Node& n) {
  MapReader m(n);
  LinkSpec l;
  l.bandwidth = m.required("bandwidth").bandwidth();
  if (auto lat = m.optional("latency")) l.latency = lat->latency();
  m.finish();
  return l;
}

FabricSpec parse_fabric_spec(std::string_view text, std::string_view field) {
  const std::string key(field);
  const std::string t(text);
  const auto bad = [&](const std::string& why) -> FabricSpec {
    throw InputError(SourceLocation{}, key,
                     fmt::format("'{}' {} (expected KIND:SPEED[:COUNT], e.g. infiniband:200Gb/s:8)", t, why));
  };
  const auto c1 = t.find(':');
  if (c1 == std::string::npos) return bad("has no speed");
  FabricSpec f;
  f.kind = t.substr(0, c1);
  if (f.kind == "ib") f.kind = "infiniband";
  if (f.kind == "roce" || f.kind == "eth") f.kind = "ethernet";
  if (f.kind != "infiniband" && f.kind != "ethernet")
    return bad(fmt::format("names the network '{}' (infiniband or ethernet)", f.kind));
  const auto c2 = t.find(':', c1 + 1);
  const std::string speed = t.substr(c1 + 1, c2 == std::string::npos ? std::string::npos : c2 - c1 - 1);
  try {
    f.speed = parse_bandwidth(speed);
  } catch (const std::exception& e) {
    return bad(fmt::format("has the speed '{}': {}", speed, e.what()));
  }
  if (!(f.speed > BytesPerSecond{})) return bad("needs a speed greater than zero");
  if (c2 != std::string::npos) {
    const auto n = whole_number(t.substr(c2 + 1), 1, 1024);
    if (!n) return bad(fmt::format("has the NIC count '{}' (a whole number from 1 to 1024)", t.substr(c2 + 1)));
    f.nics = static_cast<int>(*n);
  }
  return f;
}

namespace {

/// `nodes`, `gpus_per_node` and `gpu`, as the overrides (--nodes, --gpu) change them.
void read_size(MapReader& m, Cluster& c, const ClusterOverrides& ov, const fs::path& data) {
  {
    const Node n = m.required("nodes");
    c.max_nodes = n.int_at_most(1'000'000);
    if (c.max_nodes < 1) n.fail("a cluster needs at least one node");
    if (ov.nodes > 0) c.max_nodes = ov.nodes;
  }
  {
    const Node n = m.required("gpus_per_node");
    c.gpus_per_node = n.int_at_most(1024);
    if (c.gpus_per_node < 1) n.fail("a node needs at least one GPU");
    if (ov.gpus_per_node > c.gpus_per_node)
      throw InputError(
          SourceLocation{}, "gpus_per_node",
          fmt::format("'{}' has {} GPUs a node; a job cannot use {} of them", c.name, c.gpus_per_node, ov.gpus_per_node));
  }
  c.gpu = read_gpu_node(m.required("gpu"), data);
  if (ov.gpu) c.gpu = *ov.gpu;  // --gpu: the whole cluster as if its `gpu:` named this one
}

/// The graph (docs/topology.md): a node template and the fabric between nodes. With a graph, the
/// simple bandwidths may be left out; they are then derived from it.
void read_graph(MapReader& m, Cluster& c, const ClusterOverrides& ov) {
  const auto node_section = m.optional("node");
  const auto fabric_section = m.optional("fabric");
  if (fabric_section && !node_section) fabric_section->fail("'fabric' needs a 'node' section beside it");
  if (ov.nodes > 1 && !ov.fabric && !fabric_section && (node_section || !m.optional("inter_node")))
    throw InputError(SourceLocation{}, "nodes",
                     fmt::format("'{}' is one node with no network between nodes: say which with --fabric "
                                 "KIND:SPEED[:COUNT] (e.g. infiniband:100Gb/s:8)",
                                 c.name));
  if (node_section && ov.gpu && ov.gpu->sm_version <= 0)
    throw InputError(SourceLocation{}, "gpu",
                     fmt::format("'{}' gives no 'sm' (compute capability): '{}' has a topology graph, whose NVLink "
                                 "bandwidths depend on it",
                                 ov.gpu->name, c.name));
  if (node_section)
    c.topology = topo::read_topology(*node_section, fabric_section, c.gpus_per_node, c.max_nodes, c.gpu.sm_version,
                                     ov.fabric ? &*ov.fabric : nullptr, ov.gpus_per_node);
  if (ov.gpus_per_node > 0) c.gpus_per_node = ov.gpus_per_node;  // the job's nodes: its GPUs on each
}

/// `host_to_gpu: {pinned, pageable}`, or with a graph gpu0's own PCIe link as NCCL rates it.
void read_host_to_gpu(MapReader& m, Cluster& c, bool derive) {
  if (auto h2d = derive ? m.optional("host_to_gpu") : std::optional<Node>(m.required("host_to_gpu"))) {
    MapReader h(*h2d);
    c.h2d_pinned = h.required("pinned").bandwidth();
    c.h2d_pageable = h.optional("pageable") ? h.required("pageable").bandwidth() : c.h2d_pinned;
    h.finish();
  } else {
    // the GPU's own PCIe link as NCCL rates it
    BytesPerSecond pcie{};
    for (const auto& l : c.topology->links())
      if (l.kind == LinkKind::pcie && (l.a == "gpu0" || l.b == "gpu0")) pcie = max(pcie, l.bandwidth);
    if (!(pcie > BytesPerSecond{})) m.node().fail("'host_to_gpu' is required: gpu0 has no PCIe link to derive it from");
    c.h2d_pinned = c.h2d_pageable = pcie;
  }
}

/// `intra_node`, or with a graph NCCL's ring over the whole node.
void read_intra_node(MapReader& m, Cluster& c, const ClusterOverrides& ov, bool derive) {
  if (auto n = derive ? m.optional("intra_node") : std::optional<Node>(m.required("intra_node"))) {
    c.intra_node = read_link(*n);
  } else if (ov.graph_only) {
    // not asked for: the ring search below is most of a one-node collective's work
  } else if (c.gpus_per_node > 1) {
    // NCCL's ring over the whole node: channels × per-channel speed, one step of Simple latency
    std::vector<int> all(static_cast<std::size_t>(c.gpus_per_node));
    for (int i = 0; i < c.gpus_per_node; ++i) all[static_cast<std::size_t>(i)] = i;
    const auto ring = c.topology->channels(ChannelPattern::ring, all, 1);
    c.intra_node.bandwidth = ring.bw_intra * static_cast<double>(ring.channels);
    c.intra_node.latency = microseconds(ring.type_intra == PathType::nvl ? 3.4 : 5.7);
  } else {
    c.intra_node.bandwidth = c.h2d_pinned;
  }
}

/// `inter_node`, the --fabric override of it, or with a graph the fabric's NICs.
void read_inter_node(MapReader& m, Cluster& c, const ClusterOverrides& ov, bool derive) {
  const auto inter = m.optional("inter_node");
  if (inter) c.inter_node = read_link(*inter);
  if (ov.fabric && !derive) {  // the simple form: COUNT NICs (one by default) at the fabric's speed
    c.inter_node.bandwidth = ov.fabric->speed * static_cast<double>(std::max(1, ov.fabric->nics));
    if (!(c.inter_node.latency > Seconds{})) c.inter_node.latency = microseconds(14.0);
  } else if (inter && !ov.fabric) {
    // as the file says
  } else if (derive && c.max_nodes > 1) {
    const auto& f = c.topology->fabric();
    c.inter_node.bandwidth = f.effective_nic_bandwidth() * static_cast<double>(std::max(1, f.nics_per_node));
    c.inter_node.latency = microseconds(14.0) + f.latency;
  } else if (c.max_nodes > 1) {
    m.node().fail("a cluster of more than one node needs 'inter_node'");
  }
}

/// `storage`, `input`, `gpudirect_rdma` and the host's memory.
void read_node_io(MapReader& m, Cluster& c, const ClusterOverrides& ov, const fs::path& data) {
  {
    MapReader s(m.required("storage"));
    c.disk = s.required("disk").bandwidth();
    c.page_cache = s.required("page_cache").bandwidth();
    if (auto n = s.optional("dataset_in_page_cache")) c.dataset_in_page_cache = n->boolean();
    s.finish();
  }
  if (auto n = m.optional("input"); n && !ov.graph_only) c.input = read_input(*n, c, data);
  if (auto n = m.optional("gpudirect_rdma")) c.gpudirect_rdma = n->boolean();
  if (auto n = m.optional("host_memory")) c.host_memory = n->bandwidth();
  if (auto n = m.optional("host_memory_size")) {
    c.host_memory_size = n->bytes();
    if (!(c.host_memory_size > Bytes{})) n->fail("a node's host memory is a positive size like \"2 TB\"");
  }
}

/// `price_per_gpu_hour: "2.5 USD"`: an amount and a currency code.
void read_price(const Node& n, Cluster& c) {
  const std::string text = n.scalar();
  const auto space = text.find(' ');
  std::size_t used = 0;
  double amount = -1.0;
  try {
    amount = std::stod(text.substr(0, space), &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string cur = space == std::string::npos ? "" : text.substr(space + 1);
  const bool code = cur.size() == 3 && std::all_of(cur.begin(), cur.end(), [](char ch) { return ch >= 'A' && ch <= 'Z'; });
  if (used == 0 || used != std::min(space, text.size()) || !code || !(amount >= 0.0))
    n.fail(fmt::format("'{}' is not a price per GPU-hour like \"2.5 USD\" (an amount ≥ 0 and a currency code)", text));
  c.price_per_gpu_hour = amount;
  c.currency = cur;
}

/// `framework` (the default of predictions on this cluster), `assumed` and `price_per_gpu_hour`.
void read_defaults(MapReader& m, Cluster& c, const ClusterOverrides& ov, const fs::path& data) {
  if (auto n = m.optional("framework")) {  // the default framework of predictions on this cluster
    c.framework = n->scalar();
    const auto known = ov.graph_only ? std::vector<std::string>{c.framework} : list_names(DataKind::framework, data);
    if (std::find(known.begin(), known.end(), c.framework) == known.end())
      n->fail(fmt::format("unknown framework '{}' (a name in models/frameworks/: {})", c.framework, fmt::join(known, ", ")));
  }
  if (auto n = m.optional("assumed")) {
    for (auto& [key, value] : MapReader(*n).entries()) {
      if (key != "framework" && key != "input" && key != "gpu" && key != "cpu" && key != "nics")
        value.fail("unknown key (known keys here: cpu, framework, gpu, input, nics)");
      c.assumed.emplace_back(key, value.scalar());
    }
  }
  if (auto n = m.optional("price_per_gpu_hour")) read_price(*n, c);
}

/// `data`: the data folder the file's names (GPU, input, framework) are looked up in.
Cluster read_cluster(const Node& root, const std::string& source, const fs::path& data, const ClusterOverrides& ov = {}) {
  MapReader m(root);
  Cluster c;
  c.source_file = source;
  c.name = m.required("name").scalar();
  if (auto n = m.optional("description")) c.description = n->scalar();
  read_size(m, c, ov, data);
  read_graph(m, c, ov);
  const bool derive = static_cast<bool>(c.topology);
  read_host_to_gpu(m, c, derive);
  read_intra_node(m, c, ov, derive);
  read_inter_node(m, c, ov, derive);
  read_node_io(m, c, ov, data);
  read_defaults(m, c, ov, data);
  m.finish();
  return c;
}
}  // namespace

Cluster load_cluster(const fs::path& file) { return read_cluster(yamlio::load_file(file), file.string(), data_folder_of(file)); }
Cluster load_cluster(const fs::path& file, const ClusterOverrides& overrides) {
  Cluster c = read_cluster(yamlio::load_file(file), file.string(), data_folder_of(file), overrides);
  if (overrides.gpu) c.description += fmt::format(" [GPU: {}]", c.gpu.name);
  if (overrides.gpus_per_node > 0) c.description += fmt::format(" [a job on {} GPUs of each node]", c.gpus_per_node);
  if (overrides.nodes > 0 || overrides.fabric) {
    if (overrides.nodes > 0) c.description += fmt::format(" [{} nodes", c.max_nodes);
    if (overrides.fabric)
      c.description +=
          fmt::format("{}{} x {} {}]", overrides.nodes > 0 ? ", " : " [",
                      overrides.fabric->nics > 0 ? std::to_string(overrides.fabric->nics) : std::string("node's NICs"),
                      overrides.fabric->kind, fmt::format("{:.12g} GB/s", in_gigabytes_per_second(overrides.fabric->speed)));
    else c.description += "]";
  }
  return c;
}
Cluster parse_cluster(const std::string& yaml_text, const std::string& display_name) {
  return read_cluster(yamlio::load_string(yaml_text, display_name), display_name, data_dir());
}

}  // namespace dlscale
