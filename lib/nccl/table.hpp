// Internal: NCCL's constants as data. One struct per NCCL version; a newer NCCL is a new table
// (kNccl_2_30_7 in table.cpp), not new code. Values in GB/s (10^9 B/s) and microseconds, as NCCL keeps them.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

namespace dlscale::nccl {

enum Proto { LL = 0, LL128 = 1, SIMPLE = 2, NPROTO = 3 };
enum Algo { TREE = 0, RING = 1, NALGO = 2 };
// NVLink SHARP (NVLS) on one node and NVLS Tree across nodes: Simple only, with their own constants below
// (the arrays indexed by Algo stay Tree and Ring).
inline constexpr int NVLS = 2;
inline constexpr int NVLS_TREE = 3;
// PAT, "Parallel Aggregated Trees" (NCCL 2.23+): all-gather and reduce-scatter with one GPU per node, Simple only.
inline constexpr int PAT = 4;
// CollNet (SHARP: the reduction done by the InfiniBand switches), across nodes, Simple only: CollNet Direct
// (every GPU of a node talks to the NICs directly) and CollNet Chain (the node's GPUs in a chain to the NIC).
inline constexpr int COLLNET_DIRECT = 5;
inline constexpr int COLLNET_CHAIN = 6;
inline constexpr int NALGO_ALL = 7;  // every algorithm above, as NCCL_ALGO names them
enum Hw { HW_NVLINK = 0, HW_PCI = 1, HW_NET = 2 };

struct Table {
  std::string version;  // "2.30.7"
  std::string source;   // where the numbers come from

  // src/graph/tuning.cc
  std::array<std::array<double, NPROTO>, NALGO> base_latency_us;               // [algo][proto]
  std::array<std::array<std::array<double, NPROTO>, NALGO>, 3> hw_latency_us;  // [hw][algo][proto]
  // Per-channel caps, index [generation (generation()): 0 Volta, 1 Ampere, 2 Hopper, 3 Blackwell]
  // [0: 1 node, 1: 2 nodes, 2: more]
  static constexpr std::size_t kGenerations = 4;
  std::array<std::array<double, 3>, kGenerations> per_channel_tree;
  std::array<std::array<double, 3>, kGenerations> per_channel_ring_ll128;
  std::array<std::array<double, 3>, kGenerations> per_channel_tree_ll128;
  std::array<std::array<double, 3>, kGenerations> ll_max;
  double ring_ll_factor;           // Ring LL: busBw × this
  double ring_ll128_factor;        // Ring LL128: busBw × this (≥ 2 GPUs per node)
  double tree_allreduce_factor;    // Tree all-reduce: busBw × this
  double tree_ll_divisor;          // Tree LL: busBw / this
  double tree_ll128_factor_1node;  // Tree LL128 on one node
  double tree_ll128_factor;        // Tree LL128 on several nodes
  double plain_tree_factor;        // Tree whose graph is a plain tree, not a balanced one
  // treeCorrectionFactor[proto][log2(bytes/64)], 23 buckets (ncclTopoGetAlgoTime)
  std::array<std::array<double, 23>, NPROTO> tree_correction;
  double ring_plateau_pre_ampere;  // Simple ring all-reduce latency ×, nNodes > 1 (ncclTopoGetAlgoTime)
  double ring_plateau_ampere;
  double net_overhead_intel_us;  // getNetOverhead
  double net_overhead_other_us;

  // NVLS and NVLS Tree (shared/docs/nccl-tuning-2.30.md): base latency 0; per-hop Simple latencies;
  // efficiency by generation; NVLS Tree per-channel cap [generation][nodes index]; the most NVLS channels
  // (CTAs) by generation.
  std::array<double, kGenerations> nvls_efficiency;
  std::array<int, kGenerations> nvls_max_channels;
  double nvls_hw_latency_nvlink_us;    // NVLS and NVLS Tree, NVLink row, Simple
  double nvls_hw_latency_net_us;       // NVLS, network row
  double nvls_tree_hw_latency_net_us;  // NVLS Tree, network row
  std::array<std::array<double, 3>, kGenerations> per_channel_nvls_tree;

  // PAT (shared/docs/nccl-tuning-2.30.md): base latency (Simple), the share of the tree graph's bus
  // bandwidth it keeps, and its latency "base + log2(nodes) × inter / 3.5 + ranks × 2.8".
  double pat_base_latency_us;
  double pat_bw_factor;
  double pat_inter_divisor;
  double pat_per_rank_us;

  // CollNet Direct and Chain (shared/docs/nccl-tuning-2.30.md): base latency 0; Simple per-hop latencies
  // inside a node (NVLink and PCIe rows alike) and over the network; the rest is recalled from tuning.cc
  // (not in that page): Direct's 0.4 µs of arity serialization per extra GPU of a node, its bandwidth
  // divided by the GPU/NIC-channel ratio's (r − (r − 1)/2) and × 0.85 from Hopper on, Chain's × 0.75.
  double collnet_direct_hw_latency_intra_us;
  double collnet_chain_hw_latency_intra_us;
  double collnet_direct_hw_latency_net_us;
  double collnet_chain_hw_latency_net_us;
  double collnet_direct_arity_us;       // recalled
  double collnet_direct_hopper_factor;  // recalled
  double collnet_chain_bw_factor;       // recalled

  // Not in tuning.cc: what the hardware delivers where NCCL's search books a rating. NCCL books a V100's
  // NVLink at 20 GB/s per link (topo.h SM70_NVLINK_BW); nccl-tests moves more through it. Fitted from
  // measured bus bandwidths (table.cpp says which, tests/nccl_logs_test.cpp prints the fit): per link and
  // direction, between two GPUs and between a GPU and a first-generation NVSwitch (DGX-2), whose
  // non-posted writes take acknowledgements back over the reverse direction.
  double volta_nvlink_gpu_gbps;
  double volta_nvlink_nvswitch_gbps;

  // Not in tuning.cc: NCCL's model times the device side only (docs/topology.md, "Against real nccl-tests
  // logs", says where the value comes from).
  double launch_us_per_gpu;  // host time to issue one collective on one GPU (NCCL enqueue + kernel launch)

  // src/graph/search.cc
  std::vector<double> speed_intra, speed_inter, sm90_speed_intra, sm90_speed_inter, sm100_speed_intra, sm100_speed_inter;
  int max_channels;         // ring graph maxChannels (MAXCHANNELS/2)
  double dup_threshold;     // ncclTopoDupChannels: bwIntra ≥ this duplicates the channels
  int search_timeout;       // NCCL_SEARCH_TIMEOUT
  int search_timeout_tree;  // NCCL_SEARCH_TIMEOUT_TREE
  int search_timeout_same;  // NCCL_SEARCH_TIMEOUT_SAMECHANNELS
  long search_timeout_global;
  double intel_p2p_overhead;  // INTEL_P2P_OVERHEAD: × on PCIe links of a PHB path through an Intel CPU
  double loc_bw;              // LOC_BW
  double fallback_bw;         // "falling back to simple order"

  /// The row of the per-generation arrays for a GPU of compute capability `sm` (tuning.cc's compCapIndex).
  static std::size_t generation(int sm) { return sm >= 100 ? 3 : sm >= 90 ? 2 : sm >= 80 ? 1 : 0; }
  /// The channel search's speed lists (search.cc): one list before Hopper, one for Hopper, one for Blackwell.
  const std::vector<double>& intra_speeds(int sm) const {
    return sm >= 100 ? sm100_speed_intra : sm >= 90 ? sm90_speed_intra : speed_intra;
  }
  const std::vector<double>& inter_speeds(int sm) const {
    return sm >= 100 ? sm100_speed_inter : sm >= 90 ? sm90_speed_inter : speed_inter;
  }
};

/// The table this build uses (NCCL 2.30.7).
const Table& default_table();

}  // namespace dlscale::nccl
