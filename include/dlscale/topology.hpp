// The wiring of a cluster: one node's graph (GPUs, CPU sockets, PCIe switches, NVSwitches, NICs, drives
// and the links between them) repeated `nodes` times and joined by a fabric (NICs per node, link speed,
// single-flow cap). Built from the `node:` and `fabric:` sections of a cluster file (docs/topology.md).
//
// The graph itself (Boost.Graph) and NCCL's path and channel search live in lib/topology and lib/nccl;
// this header is the narrow view the rest of dlscale needs: path type and bandwidth between two GPUs,
// and the channels (rings or trees) NCCL would build on a set of GPUs.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dlscale/cluster.hpp"
#include "dlscale/detail/enum_names.hpp"
#include "dlscale/units.hpp"

namespace dlscale {

/// NCCL's path types (src/graph/topo.h), best to worst. `dis`: no path.
enum class PathType { loc, nvl, nvb, pix, pxb, phb, sys, net, dis };
template <>
struct EnumNames<PathType> {
  static constexpr std::array<EnumName<PathType>, 9> names{{
      {PathType::loc, "LOC"},
      {PathType::nvl, "NVL"},
      {PathType::nvb, "NVB"},
      {PathType::pix, "PIX"},
      {PathType::pxb, "PXB"},
      {PathType::phb, "PHB"},
      {PathType::sys, "SYS"},
      {PathType::net, "NET"},
      {PathType::dis, "DIS"},
  }};
  static constexpr std::array<EnumName<PathType>, 0> aliases{};
};

enum class VertexKind { gpu, cpu, pcie_switch, nvswitch, nic, network_switch, storage };
template <>
struct EnumNames<VertexKind> {
  static constexpr std::array<EnumName<VertexKind>, 7> names{{
      {VertexKind::gpu, "gpu"},
      {VertexKind::cpu, "cpu"},
      {VertexKind::pcie_switch, "pcie_switch"},
      {VertexKind::nvswitch, "nvswitch"},
      {VertexKind::nic, "nic"},
      {VertexKind::network_switch, "network_switch"},
      {VertexKind::storage, "storage"},
  }};
  static constexpr std::array<EnumName<VertexKind>, 0> aliases{};
};

enum class LinkKind { nvlink, pcie, xbus, upi, qpi, infinity_fabric, smp, infiniband, ethernet };
template <>
struct EnumNames<LinkKind> {
  static constexpr std::array<EnumName<LinkKind>, 9> names{{
      {LinkKind::nvlink, "nvlink"},
      {LinkKind::pcie, "pcie"},
      {LinkKind::xbus, "xbus"},
      {LinkKind::upi, "upi"},
      {LinkKind::qpi, "qpi"},
      {LinkKind::infinity_fabric, "infinity_fabric"},
      {LinkKind::smp, "smp"},
      {LinkKind::infiniband, "infiniband"},
      {LinkKind::ethernet, "ethernet"},
  }};
  static constexpr std::array<EnumName<LinkKind>, 0> aliases{};
};

struct TopologyVertex {
  std::string name;
  VertexKind kind = VertexKind::gpu;
  int gpu = -1;        // local GPU index for GPUs
  std::string detail;  // e.g. "x86 intel skylake", "100 Gb/s"
};

struct TopologyLink {
  std::string a, b;
  LinkKind kind = LinkKind::pcie;
  int count = 1;               // NVLinks in the bundle
  int lanes = 0;               // PCIe lanes
  int generation = 0;          // PCIe generation
  BytesPerSecond bandwidth{};  // per direction, as NCCL rates the link (or as the file overrides it)
  Seconds latency{};
};

struct FabricInfo {
  std::string kind;  // "infiniband", "ethernet", or empty for a single node
  int nics_per_node = 0;
  BytesPerSecond nic_bandwidth{};  // per NIC, per direction
  BytesPerSecond single_flow{};    // cap of one flow (zero: none)
  int flows = 1;                   // flows one connection uses (matters only with a single-flow cap)
  Seconds latency{};
  bool sharp = false;  // InfiniBand switches that reduce (SHARP): NCCL's CollNet algorithms
  /// What one NIC can carry for one connection: min(NIC, flows × single-flow cap).
  [[nodiscard]] BytesPerSecond effective_nic_bandwidth() const noexcept;
};

/// A path between two GPUs as NCCL computes it (after its P2P rules).
struct GpuPath {
  PathType type = PathType::dis;
  BytesPerSecond bandwidth{};  // the narrowest link on the path, per direction
  int hops = 0;
  bool p2p = false;  // direct peer-to-peer (NVLink or PCIe up to PXB); false: through host memory
  int nvlinks = 0;   // NVLinks directly between the two GPUs (0 if none)
};

enum class ChannelPattern { ring, tree };

/// The result of NCCL's channel search for one GPU set (src/graph/search.cc, ncclTopoCompute).
struct ChannelSet {
  ChannelPattern pattern = ChannelPattern::ring;
  int channels = 0;
  BytesPerSecond bw_intra{};  // per channel
  BytesPerSecond bw_inter{};  // per channel
  PathType type_intra = PathType::loc;
  PathType type_inter = PathType::loc;
  bool same_channels = false;
  bool fallback = false;                 // no path found; NCCL's "simple order" fallback (0.1 GB/s)
  bool plain_tree = false;               // NCCL's simpler tree pattern (Hopper on, when no balanced tree fits): 15 % slower
  std::vector<std::vector<int>> orders;  // per channel, the local GPU indices in ring/chain order
};

class Topology {
 public:
  struct Impl;
  explicit Topology(std::unique_ptr<Impl> impl);
  ~Topology();
  Topology(Topology&&) noexcept;
  Topology& operator=(Topology&&) noexcept;
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;

  [[nodiscard]] int max_nodes() const noexcept;
  [[nodiscard]] int gpus_per_node() const noexcept;
  [[nodiscard]] int max_gpus() const noexcept { return max_nodes() * gpus_per_node(); }
  [[nodiscard]] int sm_version() const noexcept;
  [[nodiscard]] const FabricInfo& fabric() const noexcept;

  /// One node's vertices and links (every node is the same).
  [[nodiscard]] std::vector<TopologyVertex> vertices() const;
  [[nodiscard]] std::vector<TopologyLink> links() const;
  [[nodiscard]] std::vector<std::string> nic_names() const;

  /// Path between two GPUs, numbered across the cluster (GPU g sits on node g / gpus_per_node).
  /// GPUs on different nodes: type NET, bandwidth the narrower of the two GPU→NIC paths and the NIC.
  [[nodiscard]] GpuPath path(int gpu_a, int gpu_b) const;
  /// Path from a GPU to a NIC of its node, as NCCL sees it (GPU Direct RDMA rules applied): the GPU's own
  /// path (what nvidia-smi shows), also where NCCL relays the traffic through another GPU (PXN).
  [[nodiscard]] GpuPath nic_path(int local_gpu, int nic) const;
  /// The route NCCL's traffic takes from a GPU to a NIC: `pxn` when NCCL (PXN, on by default) sends it over
  /// NVLink to the GPU beside the NIC and out from there, with that route's type, bandwidth and hops.
  struct NicRoute {
    GpuPath path;
    bool pxn = false;
  };
  [[nodiscard]] NicRoute nic_route(int local_gpu, int nic) const;
  /// Bandwidth a measured P2P copy reaches between two GPUs of a node, if the file gives one.
  [[nodiscard]] BytesPerSecond measured_p2p(int local_a, int local_b) const noexcept;
  /// The total bandwidth of a GPU's own links (sum of its NVLinks, or its PCIe link): NCCL's totalBw.
  [[nodiscard]] BytesPerSecond gpu_link_bandwidth(int local_gpu) const;

  /// NCCL's channel search on GPUs `local_gpus` of each of `nodes` nodes (NICs join when nodes > 1).
  /// Results are cached per (pattern, GPU set, nodes > 1); safe to call from several threads.
  [[nodiscard]] ChannelSet channels(ChannelPattern pattern, std::span<const int> local_gpus, int nodes) const;

  [[nodiscard]] const Impl& impl() const noexcept { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

/// Time of a cudaMemcpyPeer-style copy of `size` bytes from GPU `gpu_a` to `gpu_b` (cluster-wide
/// indices): one step's latency (NCCL's Simple per-step latency of the path's hardware: NVLink, PCI or
/// network) plus size over the path bandwidth (or the measured P2P bandwidth the file gives).
Seconds p2p_copy_time(const Topology& topology, int gpu_a, int gpu_b, Bytes size);

/// What `topo import` is told beyond the dump.
struct TopologyImportOptions {
  std::string gpu;                   // --gpu: a catalogue id; empty: from the dump's SM and NVLinks (a guess, stated)
  std::string cpu;                   // --cpu VENDOR[:MODEL] (intel, intel:skylake, amd, power, arm); empty: the dump's, or Intel
  int nodes = 0;                     // --nodes: nodes of the cluster written (0: one)
  std::optional<FabricSpec> fabric;  // --fabric KIND:SPEED[:COUNT]: the network between them
};

/// Writes the topology of `file` (an `nvidia-smi topo -m` capture or an NCCL_TOPO_DUMP_FILE XML) as a
/// cluster YAML with a `node:` section. Errors name the file and line; what the dump does not say and
/// was guessed goes to `warnings` and into the YAML as comments.
std::string import_nvidia_smi(const std::string& text, const std::string& display_name, const TopologyImportOptions& options = {},
                              std::vector<std::string>* warnings = nullptr);
std::string import_nccl_xml(const std::string& text, const std::string& display_name, const TopologyImportOptions& options = {},
                            std::vector<std::string>* warnings = nullptr);

}  // namespace dlscale
