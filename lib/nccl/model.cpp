// NCCL's cost model (src/graph/tuning.cc of NCCL 2.30.7) over the channels the search finds:
//   time_us = lat + nBytes / (1000 · bw)      (ncclTopoGetAlgoTime; bw in GB/s)
// per (algorithm, protocol), the pair with the smallest time wins.
#include "nccl/model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <shared_mutex>

#include "dlscale/error.hpp"
#include "dlscale/format.hpp"
#include "topology/graph.hpp"

namespace dlscale::nccl {

namespace {
// NCCL_ALGO's and NCCL_PROTO's names, in the Algo/Proto order (lower case, as `collective --algo/--proto` takes them).
constexpr std::array<std::string_view, NALGO_ALL> kAlgoNames = {"tree", "ring",           "nvls",         "nvls_tree",
                                                                "pat",  "collnet_direct", "collnet_chain"};
constexpr std::array<std::string_view, NPROTO> kProtoNames = {"ll", "ll128", "simple"};
}  // namespace

std::string_view algorithm_name(int a) noexcept {
  return a >= 0 && a < NALGO_ALL ? kAlgoNames[static_cast<std::size_t>(a)] : "ring";
}
std::string_view protocol_name(int p) noexcept { return p == LL ? "LL" : p == LL128 ? "LL128" : "Simple"; }

int algorithm_from_name(std::string_view name) noexcept {
  for (std::size_t i = 0; i < kAlgoNames.size(); ++i)
    if (kAlgoNames[i] == name) return static_cast<int>(i);
  return -1;
}
int protocol_from_name(std::string_view name) noexcept {
  for (std::size_t i = 0; i < kProtoNames.size(); ++i)
    if (kProtoNames[i] == name) return static_cast<int>(i);
  return -1;
}

double busbw_factor(CollectiveOp op, int n) noexcept {
  switch (op) {
    case CollectiveOp::allreduce:
      return 2.0 * (n - 1) / n;
    case CollectiveOp::allgather:
    case CollectiveOp::reducescatter:
      return static_cast<double>(n - 1) / n;
    case CollectiveOp::broadcast:
    case CollectiveOp::reduce:
      return 1.0;
  }
  return 1.0;
}

namespace {

/// floor(log2(v)) for v > 0, and 0 for v ≤ 0 (NCCL's log2i on message sizes).
int log2i(long long v) { return v > 0 ? static_cast<int>(std::bit_width(static_cast<unsigned long long>(v))) - 1 : 0; }

topo::CpuVendor cpu_vendor(const Topology& t) {
  const auto& g = t.impl().graph;
  for (auto v : boost::make_iterator_range(boost::vertices(g)))
    if (g[v].kind == VertexKind::cpu) return g[v].arch == topo::CpuArch::x86 ? g[v].vendor : topo::CpuVendor::other;
  return topo::CpuVendor::intel;
}

// ncclTopoTuneModel's per-(algorithm, protocol) bandwidth (GB/s, algorithm bandwidth) and latency (µs).
struct Tuned {
  double bw = 0;  // 0: disabled
  double lat = 0;
  int channels = 0;  // NVLS: its own channel count (the other algorithms take their graph's)
};

/// The latency of one inter-node hop (µs): NCCL's network row for the algorithm and protocol (the Tree row
/// with one GPU per node), which stands for the proxy threads and the NIC on both sides, plus the graph's
/// own inter-node latency (here the fabric's `latency`), counted once more for Simple, whose receiver
/// flushes the data it got (tuning.cc 2.30; shared/docs/nccl-tuning-2.30.md, "How a latency is formed").
double inter_hop_latency_us(const Table& t, int algo, int proto, int ranks_per_node, double fabric_us) {
  const auto p = static_cast<std::size_t>(proto);
  const double hw =
      ranks_per_node == 1 ? t.hw_latency_us[HW_NET][TREE][p] : t.hw_latency_us[HW_NET][static_cast<std::size_t>(algo)][p];
  return hw + fabric_us * (proto == SIMPLE ? 2.0 : 1.0);
}

Tuned tune(const Table& t, const ChannelSet& graph, int algo, int proto, CollectiveOp op, int n_ranks, int n_nodes, int sm,
           topo::CpuVendor vendor, double fabric_us, double delivered) {
  Tuned out;
  const int ppn = n_ranks / n_nodes;
  const std::size_t cc = Table::generation(sm);
  const std::size_t i2 = n_nodes <= 2 ? static_cast<std::size_t>(n_nodes - 1) : 2;
  const double ll_max = t.ll_max[cc][i2];
  const double per_ch_tree = t.per_channel_tree[cc][i2];
  const double per_ch_ring_ll128 = t.per_channel_ring_ll128[cc][i2];
  const double per_ch_tree_ll128 = t.per_channel_tree_ll128[cc][i2];
  const int nsteps = op == CollectiveOp::allreduce                           ? 2 * (n_ranks - 1)
      : (op == CollectiveOp::reducescatter || op == CollectiveOp::allgather) ? n_ranks - 1
                                                                             : n_ranks;
  // Protocol enablement: LL128 only over NVLink inside nodes (and at most PXB to the NIC), on Volta and newer.
  if (proto == LL128) {
    const bool inter_ok = n_nodes == 1 || graph.type_inter <= PathType::pxb;
    if (!(inter_ok && graph.type_intra <= PathType::nvb && sm >= 70)) return out;
  }
  const double bw = n_nodes <= 2 ? in_gigabytes_per_second(graph.bw_intra) : in_gigabytes_per_second(graph.bw_inter);
  double bus = graph.channels * bw * delivered;
  if (algo == RING && proto == LL) bus = std::min(ll_max, bus * t.ring_ll_factor);
  if (algo == RING && proto == LL128)
    bus = std::min(bus * (ppn < 2 ? 0.7 : t.ring_ll128_factor), graph.channels * per_ch_ring_ll128);
  if (algo == TREE && op == CollectiveOp::allreduce) bus = std::min(bus * t.tree_allreduce_factor, graph.channels * per_ch_tree);
  if (algo == TREE && proto == LL) bus = std::min(bus / t.tree_ll_divisor, ll_max);
  if (algo == TREE && proto == LL128)
    bus = std::min(bus * (n_nodes == 1 ? t.tree_ll128_factor_1node : t.tree_ll128_factor), graph.channels * per_ch_tree_ll128);
  if (algo == TREE && graph.plain_tree) bus *= t.plain_tree_factor;
  // Bus bandwidth → algorithm bandwidth.
  const double ratio = algo == RING ? static_cast<double>(n_ranks) / nsteps : 0.5;
  out.bw = bus * ratio;

  const auto a = static_cast<std::size_t>(algo), p = static_cast<std::size_t>(proto);
  out.lat = t.base_latency_us[a][p];
  const std::size_t intra_hw = graph.type_intra == PathType::nvl ? HW_NVLINK : HW_PCI;
  const std::size_t hw = n_nodes == 1 ? intra_hw : static_cast<std::size_t>(HW_NET);
  double intra_lat = t.hw_latency_us[intra_hw][a][p];
  const double inter_lat = inter_hop_latency_us(t, algo, proto, ppn, fabric_us);
  if (algo == RING) {
    if (op == CollectiveOp::reduce || op == CollectiveOp::broadcast) {
      if (graph.same_channels) {
        out.lat += t.hw_latency_us[hw][RING][p];
      } else {
        const double lat = proto == SIMPLE ? t.hw_latency_us[hw][TREE][p] : t.hw_latency_us[hw][RING][p];
        out.lat += nsteps * lat;
      }
    } else {
      double net_overhead = 0;
      if (n_nodes > 1) {
        net_overhead = vendor == topo::CpuVendor::amd ? t.net_overhead_other_us : t.net_overhead_intel_us;
        if (proto == SIMPLE) net_overhead *= 3;
      }
      intra_lat = std::max(intra_lat, net_overhead);
      const int n_inter = n_nodes == 1 ? 0 : op == CollectiveOp::allreduce ? 2 * (n_nodes - 1) : n_nodes - 1;
      out.lat += (nsteps - n_inter) * intra_lat + n_inter * inter_lat;
    }
  } else {  // tree all-reduce
    out.lat += 2 * ((n_ranks / n_nodes - 1) * intra_lat + log2i(n_nodes) * inter_lat);
  }
  return out;
}

bool has_nvswitch(const Topology& t) {
  const auto& g = t.impl().graph;
  for (auto v : boost::make_iterator_range(boost::vertices(g)))
    if (g[v].kind == VertexKind::nvswitch) return true;
  return false;
}

/// NVLink SHARP needs NVSwitches that reduce (third-generation NVSwitch, Hopper GPUs and newer).
bool has_nvls(const Topology& t) { return t.sm_version() >= 90 && has_nvswitch(t); }

/// What the links of a one-node NVLink graph deliver over what NCCL's search booked them at (the
/// channels × per-channel speed of its graph): NCCL books a V100's NVLink at its rating, 20 GB/s a link
/// (topo.h), and the measured bus bandwidths carry more, 23.0 GB/s a link between two GPUs and 20.6 to a
/// first-generation NVSwitch (Table::volta_nvlink_*: where the numbers come from). The channel count and
/// their routes stay the search's; only the rate at which the booked links move data changes. 1 elsewhere:
/// graphs that cross PCIe, a CPU or the network (their links are NCCL's ratings), and other GPU
/// generations, of which no measurement is at hand.
double delivered_over_booked(const Table& t, const Topology& topo, const ChannelSet& graph, int n_nodes) {
  const int sm = topo.sm_version();
  if (n_nodes != 1 || sm < 70 || sm >= 80 || graph.type_intra > PathType::nvb) return 1.0;
  const double delivered = has_nvswitch(topo) ? t.volta_nvlink_nvswitch_gbps : t.volta_nvlink_gpu_gbps;
  return delivered / topo::nvlink_gbs(sm);
}

/// The inter-node speed of NCCL's NVLS graph (search.cc, NVLS pattern): one channel per GPU of the node,
/// each received and sent by one NIC beside its head GPU, NICs taken in turn. The pattern is not a tree,
/// so each direction of a NIC carries the channel once (a tree graph books both ways and runs at half
/// the NIC): the speed is the fastest inter-node speed of the GPU's generation (Hopper's or Blackwell's
/// list) that the channels sharing the narrowest NIC route fit into. Without NICs in the graph, the tree
/// graph's inter-node speed stands in.
double nvls_inter_speed(const Table& t, const Topology& topo, const ChannelSet& tree, int channels) {
  const auto nics = static_cast<int>(topo.nic_names().size());
  if (nics == 0) return in_gigabytes_per_second(tree.bw_inter);
  double narrowest = std::numeric_limits<double>::infinity();
  for (int k = 0; k < nics; ++k) {
    double widest = 0;  // the route from the NIC's own GPU
    for (int g = 0; g < topo.gpus_per_node(); ++g)
      widest = std::max(widest, in_gigabytes_per_second(topo.nic_path(g, k).bandwidth));
    narrowest = std::min(narrowest, widest);
  }
  narrowest = std::min(narrowest, in_gigabytes_per_second(topo.fabric().effective_nic_bandwidth()));
  const int per_nic = (channels + nics - 1) / nics;  // channels that share a NIC
  for (double s : t.inter_speeds(topo.sm_version()))
    if (s * per_nic <= narrowest) return s;
  return 0;
}

/// NVLS on one node (all-reduce, all-gather, reduce-scatter) and NVLS Tree across nodes (all-reduce),
/// Simple protocol (shared/docs/nccl-tuning-2.30.md, "How a bus bandwidth is formed" and "How a latency
/// is formed"). The NVLS graph has one channel per GPU of the node (each GPU heads one), at most the
/// generation's NVLS channel count (Table::nvls_max_channels: only a 72-GPU NVLink domain reaches it); its
/// per-channel speed is the largest of the generation's intra-node speeds that the channels together fit
/// into a GPU's NVLink bandwidth to the switches (search.cc) — our reading, which gives 8 × 40 GB/s on HGX
/// H100 and 32 × 20 GB/s on GB200 NVL72.
Tuned tune_nvls(const Table& t, const Topology& topo, const ChannelSet& tree, CollectiveOp op, int n_ranks, int n_nodes,
                double fabric_us) {
  Tuned out;
  const int ppn = n_ranks / n_nodes;
  if (ppn < 2) return out;  // NVLS and NVLS Tree need at least two channels
  const std::size_t cc = Table::generation(topo.sm_version());
  const std::size_t i2 = n_nodes <= 2 ? static_cast<std::size_t>(n_nodes - 1) : 2;
  const int channels = std::min(ppn, t.nvls_max_channels[cc]);
  if (channels < 2) return out;
  const double nvlink = in_gigabytes_per_second(topo.gpu_link_bandwidth(0));
  double speed = 0;
  for (double s : t.intra_speeds(topo.sm_version()))
    if (channels * s <= nvlink) {
      speed = s;
      break;
    }
  if (speed <= 0) return out;
  const double ch = channels;
  out.channels = channels;
  double per = speed * t.nvls_efficiency[cc] * (ch - 1.0) / ch;
  per *= op == CollectiveOp::allreduce ? 2.0 : (ppn - 1.0) / ppn;
  if (n_nodes > 1) {
    const double inter = nvls_inter_speed(t, topo, tree, channels);
    per = std::min({per, inter * (n_nodes <= 2 ? 2.0 : 1.0), t.per_channel_nvls_tree[cc][i2]});
  }
  const int nsteps = op == CollectiveOp::allreduce ? 2 * (n_ranks - 1) : n_ranks - 1;
  out.bw = ch * per * static_cast<double>(n_ranks) / nsteps;
  out.lat = t.nvls_hw_latency_nvlink_us;  // base latency 0, one intra-node hop
  if (n_nodes > 1) out.lat += 2.0 * log2i(n_nodes) * (t.nvls_tree_hw_latency_net_us + 2.0 * fabric_us);  // Simple flushes: ×2
  return out;
}

/// PAT, NCCL 2.23+'s "Parallel Aggregated Trees" for all-gather and reduce-scatter (Simple protocol
/// only; NCCL 2.30 enables it only with one GPU per node, nranks == nnodes: the caller checks that).
/// shared/docs/nccl-tuning-2.30.md, "How a bus bandwidth is formed" and "How a latency is formed":
///   busBw = channels × per-channel speed of the graph (bwIntra on ≤ 2 nodes, bwInter on more) × 0.75
///   algbw = busBw × 0.5   (PAT is not among Ring/NVLS/NVLS Tree, which convert by ranks/steps: "the
///                          others by one half")
///   lat   = 8.0 + log2(nodes) × inter / 3.5 + ranks × 2.8  µs
/// Assumed where the doc is silent: (1) the graph is NCCL's tree graph (tree and PAT share the graph
/// array slot in NCCL's init, and PAT is a tree-shaped algorithm; the doc names no PAT graph), searched for
/// the one GPU of each node; (2) `inter` is the inter-node hop latency as every other algorithm forms it
/// (the Tree network row with one GPU per node, 14 µs Simple, plus the fabric latency twice for Simple),
/// which is also PAT's own network row; (3) no Tree caps (the 0.92 factor and the per-channel maximum are
/// all-reduce only, the LL/LL128 ones do not apply to Simple) and no tree correction by size.
Tuned tune_pat(const Table& t, const ChannelSet& tree, int n_ranks, int n_nodes, double fabric_us) {
  Tuned out;
  if (n_nodes < 2 || n_ranks != n_nodes || tree.channels <= 0) return out;
  const double speed = n_nodes <= 2 ? in_gigabytes_per_second(tree.bw_intra) : in_gigabytes_per_second(tree.bw_inter);
  const double bus = tree.channels * speed * t.pat_bw_factor;
  out.bw = bus * 0.5;
  const double inter = inter_hop_latency_us(t, TREE, SIMPLE, 1, fabric_us);
  out.lat = t.pat_base_latency_us + log2i(n_nodes) * inter / t.pat_inter_divisor + n_ranks * t.pat_per_rank_us;
  return out;
}

/// CollNet Direct and CollNet Chain: all-reduce across nodes with the reduction done in the InfiniBand
/// switches (SHARP), Simple protocol only. From shared/docs/nccl-tuning-2.30.md: base latency 0, per-hop
/// latencies (Direct 3.7 / 31 µs, Chain 2.8 / 30 µs inside the node, NVLink or PCIe alike / over the network), "CollNet always
/// intra" (the bandwidth starts from channels × the graph's intra-node speed) and bus → algorithm bandwidth
/// by one half. Recalled from tuning.cc (the page is silent): Direct's bandwidth divided by
/// r − (r − 1)/2, r = GPUs per node / channels (every GPU wants a NIC channel of its own), × 0.85 from
/// Hopper on, and its latency 2 · (min(1, ppn − 1) · intra + (ppn − 1) · 0.4 µs) + inter; Chain × 0.75 and
/// 2 · (ppn − 1) · intra + inter. The inter-node hop is formed as every other algorithm's (network row plus
/// the fabric latency, twice for Simple's flush). Assumed: the graph is the tree graph (CollNet's graphs are
/// tree-pattern searches through the NICs in NCCL).
Tuned tune_collnet(const Table& t, const ChannelSet& tree, int algo, int n_ranks, int n_nodes, int sm, double fabric_us) {
  Tuned out;
  if (n_nodes < 2 || tree.channels <= 0) return out;
  const int ppn = n_ranks / n_nodes;
  double bus = tree.channels * in_gigabytes_per_second(tree.bw_intra);
  const bool direct = algo == COLLNET_DIRECT;
  if (direct) {
    double r = static_cast<double>(ppn) / tree.channels;
    r -= (r - 1.0) / 2.0;
    bus /= r;
    if (sm >= 90) bus *= t.collnet_direct_hopper_factor;
  } else {
    bus *= t.collnet_chain_bw_factor;
  }
  out.bw = bus * 0.5;
  const double intra = direct ? t.collnet_direct_hw_latency_intra_us : t.collnet_chain_hw_latency_intra_us;
  const double inter = (direct ? t.collnet_direct_hw_latency_net_us : t.collnet_chain_hw_latency_net_us) + 2.0 * fabric_us;
  out.lat = direct ? 2.0 * (std::min(1, ppn - 1) * intra + (ppn - 1) * t.collnet_direct_arity_us) + inter
                   : 2.0 * (ppn - 1) * intra + inter;
  return out;
}

std::vector<int> first_gpus(int k) {
  std::vector<int> v(static_cast<std::size_t>(k));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

}  // namespace

namespace {

/// What choose() needs that does not depend on the message size: the tuned latency and bandwidth of
/// every (algorithm, protocol) pair for one collective on one placement (ncclTopoTuneModel's output).
struct Candidates {
  static constexpr std::size_t kBuckets = 24;  // log2(size / 64) buckets of the tree correction, and one beyond
  using PerBucket = std::array<double, kBuckets>;
  struct Entry {
    int algo = RING, proto = SIMPLE, channels = 0;
  };
  static constexpr std::size_t kMaxEntries = 10;  // tree and ring × 3 protocols, NVLS or PAT, 2 CollNets
  std::array<Entry, kMaxEntries> entries{};
  int count = 0;
  // Each entry's numbers, laid out for fastest() (every per-layer time goes through it): one bucket's
  // values of all entries side by side.
  //   lat: µs; lat_plateau: lat with the ring plateau factor (multi-node ring Simple all-reduce).
  //   upb: µs per byte, 1 / (1000 · bw), with the tree correction of each log2(size / 64) bucket folded in
  //     (bucket 23: sizes outside the correction table): fastest() multiplies instead of dividing.
  //   pad: µs of the cheapest larger size in a later bucket (the start of bucket k' > k; +inf for the
  //     last). NCCL's tree correction rises at some bucket edges, so its formula can fall when a byte is
  //     added; a message can always be padded to the larger size, so the model takes the smaller of the
  //     two and stays non-decreasing in size (tests/robustness_test.cpp, NcclTreeTimeNeverFallsWhenAMessageGrows).
  std::array<double, kMaxEntries> lat{}, lat_plateau{};
  std::array<std::array<double, kMaxEntries>, kBuckets> upb_by_bucket{}, pad_by_bucket{};
  void add(Entry e, double lat_us, double lat_plateau_us, const PerBucket& upb, const PerBucket& pad) {
    const auto i = static_cast<std::size_t>(count++);
    entries[i] = e;
    lat[i] = lat_us;
    lat_plateau[i] = lat_plateau_us;
    for (std::size_t k = 0; k < kBuckets; ++k) {
      upb_by_bucket[k][i] = upb[k];
      pad_by_bucket[k][i] = pad[k];
    }
  }
  int n = 0, nodes = 1, ring_channels = 0, sm = 0;
  // The ring plateau applies to multi-node messages with at least 64 bytes per rank and channel:
  // bytes / (ring_channels · n) ≥ 64, kept as a size threshold (+inf on one node).
  double plateau_bytes = std::numeric_limits<double>::infinity();
  CollectiveOp op = CollectiveOp::allreduce;
  // Why NCCL cannot run an (algorithm, protocol) pair that is not among the entries (for --algo/--proto).
  std::array<std::array<std::string, NPROTO>, NALGO_ALL> why_not;  // no {}: clang 14 crashes value-initializing it here
  void reject(int algo, std::string why) {
    for (auto& w : why_not[static_cast<std::size_t>(algo)])
      if (w.empty()) w = why;
  }
  void reject(int algo, int proto, std::string why) {
    auto& w = why_not[static_cast<std::size_t>(algo)][static_cast<std::size_t>(proto)];
    if (w.empty()) w = std::move(why);
  }
  /// The entries of one algorithm and/or protocol (-1: any), as NCCL_ALGO / NCCL_PROTO leave them.
  [[nodiscard]] Candidates only(Forced f) const {
    Candidates out = *this;
    out.count = 0;
    for (int i = 0; i < count; ++i) {
      const auto j = static_cast<std::size_t>(i);
      const auto& e = entries[j];
      if ((f.algorithm >= 0 && e.algo != f.algorithm) || (f.protocol >= 0 && e.proto != f.protocol)) continue;
      PerBucket upb{}, pad{};
      for (std::size_t k = 0; k < kBuckets; ++k) {
        upb[k] = upb_by_bucket[k][j];
        pad[k] = pad_by_bucket[k][j];
      }
      out.add(e, lat[j], lat_plateau[j], upb, pad);
    }
    return out;
  }
};

/// One bandwidth at every size (no tree correction), and no cheaper padded size: NVLS, NVLS Tree, PAT.
Candidates::PerBucket flat_per_byte(double bw) {
  Candidates::PerBucket upb;
  upb.fill(1.0 / (1000.0 * bw));
  return upb;
}
Candidates::PerBucket no_padding() {
  Candidates::PerBucket pad;
  pad.fill(std::numeric_limits<double>::infinity());
  return pad;
}

/// What every algorithm's tuning reads: the topology, the table, the collective and the GPUs it runs on.
struct Setting {
  const Topology& topo;
  const Table& t;
  CollectiveOp op;
  int ppn = 0, nodes = 1, n = 0;
  const std::vector<int>& gpus;
  const ChannelSet& ring;
  const ChannelSet& tree;
  bool tree_ok = false;
  topo::CpuVendor vendor{};
  double fabric_us = 0;
};

// One tree or ring entry for one protocol: the tree correction folded into the per-byte time of each
// bucket, and the cheapest padded size of a later bucket.
void add_tree_or_ring(Candidates& c, const Setting& s, const ChannelSet& graph, int algo, int proto) {
  const Table& t = s.t;
  const Tuned tu = tune(t, graph, algo, proto, s.op, s.n, s.nodes, c.sm, s.vendor, s.fabric_us,
                        delivered_over_booked(t, s.topo, graph, s.nodes));
  if (tu.bw <= 0) {
    if (proto == LL128)
      c.reject(algo, proto, "NCCL runs LL128 only over NVLink inside a node (at most PXB to a NIC) on Volta or newer GPUs");
    return;
  }
  double lat_plateau = tu.lat;
  if (algo == RING && proto == SIMPLE && s.nodes > 1 && s.op == CollectiveOp::allreduce)
    lat_plateau = tu.lat * (c.sm < 80 ? t.ring_plateau_pre_ampere : t.ring_plateau_ampere);
  Candidates::PerBucket upb{}, pad{};
  for (std::size_t k = 0; k < Candidates::kBuckets; ++k) {
    double bw = tu.bw;
    if (algo == TREE && s.op == CollectiveOp::allreduce && k < 23) bw *= t.tree_correction[static_cast<std::size_t>(proto)][k];
    upb[k] = 1.0 / (1000.0 * bw);
  }
  pad[23] = std::numeric_limits<double>::infinity();
  for (std::size_t k = 23; k-- > 0;) {
    const double start = 64.0 * std::ldexp(1.0, static_cast<int>(k + 1));  // first size of bucket k + 1
    const double at_start = (start >= c.plateau_bytes ? lat_plateau : tu.lat) + start * upb[k + 1];
    pad[k] = std::min(pad[k + 1], at_start);
  }
  c.add({algo, proto, graph.channels}, tu.lat, lat_plateau, upb, pad);
}

void add_trees_and_rings(Candidates& c, const Setting& s) {
  for (int algo : {TREE, RING}) {
    if (algo == TREE && !s.tree_ok) continue;
    const ChannelSet& graph = algo == TREE ? s.tree : s.ring;
    if (graph.channels <= 0) c.reject(algo, fmt::format("NCCL's search finds no {} graph for these GPUs", algorithm_name(algo)));
    for (int proto : {LL, LL128, SIMPLE}) add_tree_or_ring(c, s, graph, algo, proto);
  }
}

// NVLS on one node; NVLS Tree (all-reduce) across nodes. Tree correction and ring plateau do not apply.
void add_nvls(Candidates& c, const Setting& s) {
  const CollectiveOp op = s.op;
  const int nodes = s.nodes;
  const bool nvls_op = op == CollectiveOp::allreduce || op == CollectiveOp::allgather || op == CollectiveOp::reducescatter;
  const int nvls_algo = nodes == 1 ? NVLS : NVLS_TREE;
  c.reject(nodes == 1 ? NVLS_TREE : NVLS,
           nodes == 1 ? "NCCL runs nvls_tree across nodes only (on one node: nvls)"
                      : "NCCL runs nvls on one node only (across nodes: nvls_tree)");
  if (!nvls_op) c.reject(nvls_algo, "NCCL runs nvls for all-reduce, all-gather and reduce-scatter only");
  else if (!has_nvls(s.topo))
    c.reject(nvls_algo, "NVLink SHARP needs NVSwitches and Hopper or newer GPUs, which this cluster does not have");
  else if (nodes > 1 && op != CollectiveOp::allreduce) c.reject(nvls_algo, "NCCL runs nvls_tree for all-reduce only");
  else {
    const Tuned tu = tune_nvls(s.t, s.topo, s.tree, op, s.n, nodes, s.fabric_us);
    if (tu.bw > 0) c.add({nvls_algo, SIMPLE, tu.channels}, tu.lat, tu.lat, flat_per_byte(tu.bw), no_padding());
    else c.reject(nvls_algo, "NVLS needs at least two GPUs on each node and an NVLink speed the search can book");
  }
}

// PAT: all-gather and reduce-scatter with one GPU per node on several nodes (NCCL 2.23+), Simple only.
void add_pat(Candidates& c, const Setting& s) {
  if (s.op != CollectiveOp::allgather && s.op != CollectiveOp::reducescatter)
    c.reject(PAT, "NCCL runs pat for all-gather and reduce-scatter only");
  else if (s.ppn != 1 || s.nodes < 2) c.reject(PAT, "NCCL 2.30 runs pat only with one GPU on each of several nodes");
  else {
    const ChannelSet pat_graph = s.topo.channels(ChannelPattern::tree, s.gpus, s.nodes);
    const Tuned tu = tune_pat(s.t, pat_graph, s.n, s.nodes, s.fabric_us);
    if (tu.bw > 0) c.add({PAT, SIMPLE, pat_graph.channels}, tu.lat, tu.lat, flat_per_byte(tu.bw), no_padding());
    else c.reject(PAT, "NCCL's search finds no tree graph for pat");
  }
}

// CollNet (SHARP): all-reduce across nodes on a fabric whose switches reduce, Simple only.
void add_collnet(Candidates& c, const Setting& s) {
  for (int algo : {COLLNET_DIRECT, COLLNET_CHAIN}) {
    if (s.op != CollectiveOp::allreduce) c.reject(algo, fmt::format("{} is modelled for all-reduce only", algorithm_name(algo)));
    else if (s.nodes < 2) c.reject(algo, fmt::format("NCCL runs {} across nodes only", algorithm_name(algo)));
    else if (!s.topo.fabric().sharp)
      c.reject(algo,
               fmt::format("{} needs InfiniBand switches that reduce (SHARP; a cluster's fabric: {{sharp: true}}), "
                           "which this cluster's fabric does not have",
                           algorithm_name(algo)));
    else {
      const Tuned tu = tune_collnet(s.t, s.tree, algo, s.n, s.nodes, c.sm, s.fabric_us);
      if (tu.bw > 0) c.add({algo, SIMPLE, s.tree.channels}, tu.lat, tu.lat, flat_per_byte(tu.bw), no_padding());
      else c.reject(algo, "NCCL's search finds no tree graph through the NICs");
    }
  }
}

Candidates prepare(const Topology& topo, const Table& t, CollectiveOp op, const GpuPlacement& where) {
  const int nodes = std::max(1, where.nodes);
  const int ppn = where.gpus_per_node > 0 ? where.gpus_per_node : where.gpus / nodes;
  const int n = ppn * nodes;
  if (where.gpus != n) throw InputError(fmt::format("{} GPUs do not make {} nodes of {} GPUs", where.gpus, nodes, ppn));
  if (ppn > topo.gpus_per_node())
    throw InputError(fmt::format("{} GPUs per node asked, a node has {}", ppn, topo.gpus_per_node()));
  if (nodes > topo.max_nodes()) throw InputError(fmt::format("{} nodes asked, the cluster has {}", nodes, topo.max_nodes()));
  Candidates c;
  c.n = n;
  c.nodes = nodes;
  c.op = op;
  c.sm = topo.sm_version();
  if (n <= 1) return c;
  const auto gpus = first_gpus(ppn);
  const ChannelSet ring = topo.channels(ChannelPattern::ring, gpus, nodes);
  const bool tree_ok = op == CollectiveOp::allreduce;
  const ChannelSet tree = tree_ok ? topo.channels(ChannelPattern::tree, gpus, nodes) : ChannelSet{};
  const double fabric_us = nodes > 1 ? in_us(topo.fabric().latency) : 0.0;
  const Setting s{topo, t, op, ppn, nodes, n, gpus, ring, tree, tree_ok, cpu_vendor(topo), fabric_us};
  c.ring_channels = s.ring.channels;
  if (nodes > 1) c.plateau_bytes = s.ring.channels > 0 ? 64.0 * s.ring.channels * n : 0.0;
  const std::string only_simple = "NCCL runs {} with the Simple protocol only";
  for (int algo : std::array<int, 5>{NVLS, NVLS_TREE, PAT, COLLNET_DIRECT, COLLNET_CHAIN})
    for (int proto : {LL, LL128}) c.reject(algo, proto, fmt::format(fmt::runtime(only_simple), algorithm_name(algo)));
  if (!s.tree_ok) c.reject(TREE, "NCCL runs tree for all-reduce only");
  add_trees_and_rings(c, s);
  add_nvls(c, s);
  add_pat(c, s);
  add_collnet(c, s);
  return c;
}

/// The tree-correction bucket of a size: log2(S / 64), or 23 past the end of NCCL's table.
std::size_t size_bucket(double bytes) {
  const int log_size = log2i(static_cast<long long>(bytes) >> 6);
  return log_size >= 0 && log_size < 23 ? static_cast<std::size_t>(log_size) : 23;
}

/// ncclTopoGetAlgoTime over the prepared pairs: the size-dependent corrections, then the fastest.
/// Returns the index of the winning entry and its time (µs).
std::pair<int, double> fastest(const Candidates& c, double bytes) {
  const std::size_t k = size_bucket(bytes);
  const auto& lat = bytes >= c.plateau_bytes ? c.lat_plateau : c.lat;
  const auto& upb = c.upb_by_bucket[k];
  const auto& pad = c.pad_by_bucket[k];
  int best = -1;
  double best_us = std::numeric_limits<double>::infinity();
  for (int i = 0; i < c.count; ++i) {
    const auto j = static_cast<std::size_t>(i);
    const double us = std::min(lat[j] + bytes * upb[j], pad[j]);
    if (us < best_us) {
      best_us = us;
      best = i;
    }
  }
  return {best, best_us};
}

/// Why no entry of `c` is left under `forced`: the reason prepare() recorded for the forced pair (with a
/// protocol alone forced, the ring's, which every collective has, then the others').
std::string why_not(const Candidates& c, Forced forced) {
  for (int a : std::array<int, NALGO_ALL>{RING, TREE, NVLS, NVLS_TREE, PAT, COLLNET_DIRECT, COLLNET_CHAIN}) {
    if (forced.algorithm >= 0 && a != forced.algorithm) continue;
    for (int p : {SIMPLE, LL, LL128}) {  // Simple first: an algorithm's own reason, not its protocols'
      if (forced.protocol >= 0 && p != forced.protocol) continue;
      const auto& w = c.why_not[static_cast<std::size_t>(a)][static_cast<std::size_t>(p)];
      if (!w.empty()) return w;
    }
  }
  return "NCCL's search finds no graph for these GPUs";
}

Choice pick(const Candidates& c, double bytes) {
  Choice best;
  const auto [i, us] = fastest(c, bytes);
  if (i < 0) return best;
  const auto j = static_cast<std::size_t>(i);
  const auto& e = c.entries[j];
  best.time = microseconds(us);
  best.algorithm = e.algo;
  best.protocol = e.proto;
  best.channels = e.channels;
  best.algbw_model = gigabytes_per_second(1.0 / (1000.0 * c.upb_by_bucket[size_bucket(bytes)][j]));
  best.latency = microseconds(bytes >= c.plateau_bytes ? c.lat_plateau[j] : c.lat[j]);
  return best;
}

}  // namespace

Choice choose(const Topology& topo, const Table& t, CollectiveOp op, Bytes size, const GpuPlacement& where, Forced forced) {
  const Candidates c = prepare(topo, t, op, where);
  if (forced.algorithm < 0 && forced.protocol < 0) return pick(c, in_bytes(size));
  const Candidates some = c.only(forced);
  if (some.count == 0 && c.n > 1) throw InputError(why_not(c, forced));
  return pick(some, in_bytes(size));
}

std::string why_not(const Topology& topo, const Table& t, CollectiveOp op, const GpuPlacement& where, Forced forced) {
  const Candidates c = prepare(topo, t, op, where);
  return c.n <= 1 || c.only(forced).count > 0 ? std::string() : why_not(c, forced);
}

Seconds host_issue_time(const Table& t, int gpus_per_thread) noexcept {
  return microseconds(t.launch_us_per_gpu * std::max(1, gpus_per_thread));
}

Seconds nccl_tests_time(Seconds device, const Table& t, int gpus_per_thread) noexcept {
  // (k − 1)·t_launch + max(t_launch, device) = max(k·t_launch, (k − 1)·t_launch + device)
  return issue_before_last(t, gpus_per_thread) + max(host_issue_time(t, 1), device);
}

Seconds issue_before_last(const Table& t, int gpus_per_thread) noexcept {
  return host_issue_time(t, gpus_per_thread) - host_issue_time(t, 1);
}

namespace {

class NcclModel final : public CollectiveModel {
 public:
  NcclModel(std::shared_ptr<const Topology> t, std::string name) : topo_(std::move(t)), name_(std::move(name)) {}

  Seconds time(CollectiveOp op, Bytes size, const GpuPlacement& where) const override {
    return microseconds(fastest(tuned(op, where), in_bytes(size)).second);
  }

  // A layer list: tuned once per (collective, placement), then only the size-dependent choice per message.
  void times(CollectiveOp op, std::span<const Bytes> sizes, const GpuPlacement& where, std::span<Seconds> out) const override {
    const Candidates& c = tuned(op, where);
    for (std::size_t i = 0; i < sizes.size(); ++i) out[i] = microseconds(fastest(c, in_bytes(sizes[i])).second);
  }

  // Parameter server with k servers: every GPU pushes S/k to each server and pulls S/k back. Each
  // server's ingress carries the pushes of every GPU not on the server's own node (incast): across
  // nodes, the server node's NICs, where each sender is one flow (a single-flow cap limits each
  // sender, not the sum); inside one node, the server GPU's own links. Push and pull do not overlap.
  Seconds parameter_server(Bytes size, const GpuPlacement& where, int servers) const override {
    if (where.gpus <= 1) return {};
    const int nodes = std::max(1, where.nodes);
    const int k = servers > 0 ? servers : nodes;
    const auto& t = default_table();
    const Bytes share = size / static_cast<double>(k);
    if (nodes == 1) {
      const int senders = where.gpus - 1;
      // A server takes ceil(k / gpus) shares when there are more servers than GPUs; ignore that corner.
      const BytesPerSecond in = gpu_link_bandwidth();
      const Seconds step = microseconds(t.hw_latency_us[HW_PCI][RING][SIMPLE]);
      return 2.0 * (step + share * static_cast<double>(senders) / in);
    }
    const auto& f = topo_->fabric();
    const int senders = where.gpus - where.gpus_per_node;
    const double nics = std::max(1, f.nics_per_node);
    BytesPerSecond ingress = f.nic_bandwidth * nics;
    if (f.single_flow > BytesPerSecond{})
      ingress = min(ingress, f.single_flow * static_cast<double>(f.flows) * static_cast<double>(senders));
    const int servers_per_node = (k + nodes - 1) / nodes;  // servers share their node's NICs
    const Seconds step = microseconds(t.hw_latency_us[HW_NET][RING][SIMPLE]) + f.latency;
    return 2.0 * (step + share * static_cast<double>(senders) * static_cast<double>(servers_per_node) / ingress);
  }

  std::string describe() const override {
    return fmt::format("NCCL {} cost model (ring/tree × LL/LL128/Simple{}) on the topology graph of '{}'",
                       default_table().version, has_nvls(*topo_) ? ", NVLS/NVLS-tree" : "", name_);
  }

 private:
  /// prepare()'s result, kept per (collective, placement): a model is shared by threads and asked
  /// about the same few placements again and again (a sweep, a Predictor per GPU count).
  const Candidates& tuned(CollectiveOp op, const GpuPlacement& where) const {
    const Key key{static_cast<int>(op), where.gpus, where.nodes, where.gpus_per_node};
    {
      std::shared_lock lock(mutex_);
      if (auto it = cache_.find(key); it != cache_.end()) return *it->second;
    }
    auto fresh = std::make_unique<Candidates>(prepare(*topo_, default_table(), op, where));  // may throw
    std::unique_lock lock(mutex_);
    auto [it, inserted] = cache_.try_emplace(key, std::move(fresh));
    return *it->second;  // entries are never erased: the reference stays valid
  }

  using Key = std::array<int, 4>;
  /// Topology::gpu_link_bandwidth(0), once: a parameter server asks for it for every message.
  BytesPerSecond gpu_link_bandwidth() const {
    std::call_once(link_once_, [this] { link_bw_ = topo_->gpu_link_bandwidth(0); });
    return link_bw_;
  }

  std::shared_ptr<const Topology> topo_;
  std::string name_;
  mutable std::once_flag link_once_;
  mutable BytesPerSecond link_bw_{};
  mutable std::shared_mutex mutex_;
  mutable std::map<Key, std::unique_ptr<const Candidates>> cache_;
};

}  // namespace

std::shared_ptr<const CollectiveModel> make_nccl_model(std::shared_ptr<const Topology> topo, std::string cluster_name) {
  return std::make_shared<NcclModel>(std::move(topo), std::move(cluster_name));
}

}  // namespace dlscale::nccl
