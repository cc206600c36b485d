// NCCL's channel search (src/graph/search.cc of NCCL 2.30.7): depth-first over GPU orders, reserving the
// channel's speed on every link of every hop, trying speeds from a fixed list and path types from NVL
// upward, with NCCL's step budgets; then channel duplication and a second pass that raises the speed.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "nccl/system.hpp"

namespace dlscale::nccl {
namespace {

enum Pattern { BALANCED_TREE = 1, SPLIT_TREE = 2, TREE = 3, RING = 4 };
enum Forced { ORDER_NONE = 0, ORDER_PCI = 1, ORDER_REPLAY = 2 };

struct Graph {
  int pattern = RING;
  int n_channels = 0;
  double bw_intra = 0, bw_inter = 0;
  int type_intra = P_NVL, type_inter = P_PIX;
  bool same_channels = true;
  int min_channels = 1, max_channels = 1;
  int n_hops = 0;
  std::vector<int> intra;  // max_channels × ngpus (local GPU indices)
  std::vector<int> inter;  // max_channels × 2 (NET node indices within of_type[NET])
};

bool is_tree(int pattern) { return pattern == BALANCED_TREE || pattern == SPLIT_TREE || pattern == TREE; }

/// std::round (half away from zero), inline: the search calls it on every link of every hop, and
/// libm's is a call. Exact for |x| < 2^52, where x − trunc(x) has no rounding error.
inline double round_half_away(double x) {
  if (!(std::fabs(x) < 4.0e15)) return std::round(x);
  const double t = static_cast<double>(static_cast<long long>(x));
  const double d = x - t;
  return d >= 0.5 ? t + 1.0 : d <= -0.5 ? t - 1.0 : t;
}

// SUB_ROUND: NCCL keeps bandwidths to 0.001 GB/s.
void sub_round(double& a, double b) { a = round_half_away((a - b) * 1000.0) / 1000.0; }

class Search {
 public:
  // The search books bandwidth on a copy of the system's nodes and links; the paths, which it only reads,
  // stay where they are (copying them was an allocation per pair of nodes, twice per GPU set).
  Search(const System& s, const Table& t) : paths_(s), s_(nodes_and_links(s)), t_(t), ngpus_(s.count(GPU)) {}

  static System nodes_and_links(const System& s) {
    return System{.nodes = s.nodes,
                  .links = s.links,
                  .of_type = s.of_type,
                  .path = {},
                  .max_bw = s.max_bw,
                  .total_bw = s.total_bw,
                  .sm = s.sm,
                  .intel = s.intel,
                  .p2p = {}};
  }

  // followPath: reserve `bw` on the first `max_steps` links of `path`; *steps = how far it got.
  int follow_path(const SPath& path, int start, int max_steps, double bw) {
    double pci_bw = bw;
    if (path.type == P_PHB && s_.nodes[start].type == GPU) {  // the only case the scan can change pci_bw
      for (int l : path.links) {
        const SNode& node = s_.nodes[s_.links[l].to];
        if (node.type == CPU && node.arch == topo::CpuArch::x86 && node.vendor == topo::CpuVendor::intel)
          pci_bw = bw * t_.intel_p2p_overhead;
      }
    }
    for (int step = 0; step < max_steps; ++step) {
      SLink& link = s_.links[path.links[static_cast<std::size_t>(step)]];
      const double fw = link.type == P_PIX ? pci_bw : bw;
      double rev_bw = 0;
      const SNode& to = s_.nodes[link.to];
      // Volta and older GPUs pay for reads from a non-GPU (GDR) in the reverse direction.
      if (to.type == GPU && to.sm < 80 && s_.nodes[start].type != GPU) rev_bw += fw / 8;
      // POWER CPUs: an NVLink to the CPU is charged both ways.
      if (to.type == CPU && to.arch == topo::CpuArch::power && link.type == P_NVL) rev_bw += fw;
      SLink& rev = s_.links[link.rev];
      if (link.bw < fw || (rev_bw != 0 && rev.bw < rev_bw)) return step;
      sub_round(link.bw, fw);
      if (rev_bw != 0) sub_round(rev.bw, rev_bw);
    }
    return max_steps;
  }

  // ncclTopoFollowPath: returns the destination node id, or -1 when the hop is not allowed or lacks bandwidth.
  int follow(Graph& g, int type1, int index1, int type2, int index2, int mult) {
    const int node2 = s_.of_type[type2][index2];
    if (type1 < 0) return node2;
    const int node1 = s_.of_type[type1][index1];
    const SPath& path = paths_.path[node1][node2];
    const SPath& rev = paths_.path[node2][node1];
    if (path.count() == 0) return node2;
    const bool intra = (type1 == GPU || type1 == NVS) && (type2 == GPU || type2 == NVS);
    double bw = intra ? g.bw_intra : g.bw_inter;
    const int type = intra ? g.type_intra : g.type_inter;
    if (path.type >= P_DIS) return -1;
    if (mult == 1 && path.type > type) return -1;
    if (mult == 1 && is_tree(g.pattern) && rev.type > type) return -1;
    bw *= mult;
    const int step = follow_path(path, node1, path.count(), bw);
    if (step < path.count()) {
      follow_path(path, node1, step, -bw);
      return -1;
    }
    if (is_tree(g.pattern)) {  // trees are symmetric: book both ways
      const int rstep = follow_path(rev, node2, rev.count(), bw);
      if (rstep < rev.count()) {
        follow_path(rev, node2, rstep, -bw);
        follow_path(path, node1, path.count(), -bw);
        return -1;
      }
    }
    g.n_hops += mult * path.count();
    return node2;
  }

  int gpu_index(int node) const {
    const auto& v = s_.of_type[GPU];
    return static_cast<int>(std::find(v.begin(), v.end(), node) - v.begin());
  }

  int replay_gpu(const Graph& g, int step) const {
    const int rank = g.intra[static_cast<std::size_t>((g.n_channels - 1) * ngpus_ + step + 1)];
    for (int i = 0; i < ngpus_; ++i)
      if (s_.typed_const(GPU, i).gpu == rank) return i;
    return 0;
  }

  // ncclTopoGetGpuMinPath / ncclTopoGetGpuMaxPath: the best and worst path type from a GPU to the
  // other GPUs (to = GPU) or to the NICs (to = NET).
  int min_path(NodeType to) const {
    int m = P_SYS;
    for (int i = 0; i < ngpus_; ++i)
      for (int j = 0; j < s_.count(to); ++j)
        if (!(to == GPU && i == j)) m = std::min(m, paths_.p(GPU, i, to, j).type);
    return m;
  }
  int max_path(NodeType to) const {
    int m = P_LOC;
    for (int i = 0; i < ngpus_; ++i)
      for (int j = 0; j < s_.count(to); ++j)
        if (!(to == GPU && i == j)) m = std::max(m, paths_.p(GPU, i, to, j).type);
    return m;
  }

  // ncclTopoCompareGraphs
  static bool better(const Graph& g, const Graph& ref) {
    if (g.n_channels < g.min_channels) return false;
    const double a = g.n_channels * g.bw_intra, b = ref.n_channels * ref.bw_intra;
    if (a > b) return true;
    if (a < b) return false;
    return g.pattern == ref.pattern && g.n_hops < ref.n_hops;
  }

  // ncclTopoSearchNextGpuSort: pushes the GPUs to try after `gpu` onto stack_ and returns how many.
  // The search calls this at every step, so it allocates nothing: the candidates go on one stack that
  // the recursion shares (frames keep offsets into it, not pointers).
  int push_next_gpus(const Graph& g, int gpu, int sort_net) {
    const std::uint64_t flag = 1ULL << g.n_channels;
    const int from = s_.of_type[GPU][gpu];
    auto eligible = [&](int o) {
      if (o == gpu) return false;
      const int on = s_.of_type[GPU][o];
      const SPath& p = paths_.path[from][on];
      return p.count() != 0 && p.type < P_DIS && !(s_.nodes[on].used & flag);
    };
    if (s_.count(NVS) > 0) {
      // NVSwitches prefer a limited set of peers: NCCL sorts the candidates, moves the neighbours in index
      // order to the front and keeps only those; the sort cannot change which neighbours are kept nor
      // their order, so it is skipped.
      const int prev = (gpu - 1 + ngpus_) % ngpus_, nxt = (gpu + 1) % ngpus_;
      int first[2] = {nxt, prev};
      int nfirst = 1;
      if (g.pattern == RING) nfirst = 2;
      else if (g.pattern == SPLIT_TREE || g.pattern == BALANCED_TREE) first[0] = prev, first[1] = nxt, nfirst = 2;
      if (nfirst == 2 && first[0] == first[1]) nfirst = 1;
      // each kept neighbour is moved to the front in turn: the last one kept ends up first
      int kept[2];
      int nkept = 0;
      for (int k = 0; k < nfirst; ++k)
        if (eligible(first[k])) kept[nkept++] = first[k];
      for (int k = nkept; k-- > 0;) stack_.push_back(kept[k]);
      return nkept;
    }
    const int net =
        sort_net ? s_.of_type[NET][static_cast<std::size_t>(g.inter[static_cast<std::size_t>(g.n_channels * 2)])] : -1;
    if (net < 0) {
      // Without a NIC to sort by, the score is the path's speed and hops and the distance in index
      // order, none of which changes during the search: the order is sorted once per GPU and only
      // the GPUs still free are taken from it (a subset of a total order keeps its order).
      if (static_orders_.empty()) static_orders_.resize(static_cast<std::size_t>(ngpus_));
      auto& order = static_orders_[static_cast<std::size_t>(gpu)];
      if (!order) {
        order.emplace();
        scores_.clear();
        for (int i = 1; i < ngpus_; ++i) {
          const int o = (gpu + i) % ngpus_;
          const SPath& p = paths_.path[from][s_.of_type[GPU][o]];
          if (p.count() == 0 || p.type >= P_DIS) continue;
          scores_.push_back(Score{o, i, p.count(), static_cast<int>(p.bw), 0, 0, 0});
        }
        std::sort(scores_.begin(), scores_.end(), by_score);
        for (const auto& sc : scores_) order->push_back(sc.g);
      }
      int n = 0;
      for (int o : *order)
        if (!(s_.nodes[s_.of_type[GPU][o]].used & flag)) {
          stack_.push_back(o);
          ++n;
        }
      return n;
    }
    scores_.clear();
    for (int i = 1; i < ngpus_; ++i) {
      const int o = (gpu + i) % ngpus_;
      if (!eligible(o)) continue;
      const int on = s_.of_type[GPU][o];
      const SPath& p = paths_.path[from][on];
      Score sc{o, i, p.count(), static_cast<int>(p.bw), 0, 0, 0};
      if (net >= 0) {
        const SPath& np = paths_.path[net][on];
        sc.inter_hops = np.count();
        sc.inter_bw = static_cast<int>(np.bw);
        for (int l : s_.nodes[on].links)
          if (s_.links[l].type == P_PIX) sc.inter_pci = static_cast<int>(s_.links[l].bw);
      }
      scores_.push_back(sc);
    }
    // NCCL's order; `start` differs between candidates, so the order is total and a plain sort equals
    // NCCL's stable one.
    std::sort(scores_.begin(), scores_.end(), by_score);
    for (const auto& sc : scores_) stack_.push_back(sc.g);
    return static_cast<int>(scores_.size());
  }

  struct Score {
    int g, start, intra_hops, intra_bw, inter_hops, inter_pci, inter_bw;
  };
  static bool by_score(const Score& a, const Score& b) {
    if (a.inter_bw != b.inter_bw) return a.inter_bw > b.inter_bw;
    if (a.inter_pci != b.inter_pci) return a.inter_pci > b.inter_pci;
    if (a.inter_hops != b.inter_hops) return a.inter_hops < b.inter_hops;
    if (a.intra_bw != b.intra_bw) return a.intra_bw > b.intra_bw;
    if (a.intra_hops != b.intra_hops) return a.intra_hops < b.intra_hops;
    return a.start < b.start;
  }

  // ncclTopoSelectNets (simplified): the NICs closest to the GPU(s) first, then by path type up to type_inter.
  // Paths do not change during a search (only the links' remaining bandwidth does), so each answer is
  // computed once per (type_inter, gpu).
  const std::vector<int>& select_nets(int type_inter, int gpu) {
    const std::size_t key =
        static_cast<std::size_t>(type_inter) * static_cast<std::size_t>(ngpus_ + 1) + static_cast<std::size_t>(gpu + 1);
    if (nets_cache_.empty()) nets_cache_.resize(static_cast<std::size_t>(P_DIS + 1) * static_cast<std::size_t>(ngpus_ + 1));
    auto& slot = nets_cache_[key];
    if (slot) return *slot;
    std::vector<int> nets;
    auto add = [&](int n) {
      if (std::find(nets.begin(), nets.end(), n) == nets.end()) nets.push_back(n);
    };
    for (int gi = 0; gi < ngpus_; ++gi) {
      if (gpu >= 0 && gi != gpu) continue;
      for (int n : local(GPU, gi, NET)) add(n);
    }
    for (int t = 0; t <= type_inter; ++t)
      for (int gi = 0; gi < ngpus_; ++gi) {
        if (gpu >= 0 && gi != gpu) continue;
        for (int n = 0; n < s_.count(NET); ++n)
          if (paths_.p(GPU, gi, NET, n).type == t) add(n);
      }
    slot = std::move(nets);
    return *slot;
  }

  // ncclTopoGetLocal: the nodes of `rtype` with the widest path from (type, index), then the best type
  // (a PXN path ranks after PXB, as NCCL's PATH_PXN does).
  std::vector<int> local(NodeType type, int index, NodeType rtype) const {
    double max_bw = 0;
    int min_rank = 2 * P_DIS;
    std::vector<int> out;
    for (int i = 0; i < s_.count(rtype); ++i) {
      const SPath& p = paths_.p(type, index, rtype, i);
      if (p.bw > max_bw || (p.bw == max_bw && p.rank() < min_rank)) {
        max_bw = p.bw;
        min_rank = p.rank();
        out.clear();
      }
      if (p.bw == max_bw && p.rank() == min_rank) out.push_back(i);
    }
    return out;
  }

  // local(NET, n, GPU), once per NIC.
  const std::vector<int>& net_local_gpus(int n) {
    if (net_gpus_.empty()) net_gpus_.resize(static_cast<std::size_t>(s_.count(NET)));
    auto& slot = net_gpus_[static_cast<std::size_t>(n)];
    if (!slot) slot = local(NET, n, GPU);
    return *slot;
  }

  void try_gpu(Graph& g, Graph& save, int step, int back_to_net, int back_to_first, int forced, int& time, int type, int index,
               int gi) {
    const std::uint64_t flag = 1ULL << g.n_channels;
    const int node = follow(g, type, index, GPU, gi, 1);
    if (node < 0) return;
    s_.nodes[node].used ^= flag;
    rec_gpu(g, save, gi, step, back_to_net, back_to_first, forced, time);
    s_.nodes[node].used ^= flag;
    follow(g, type, index, GPU, gi, -1);
  }

  // ncclTopoSearchRecGpu
  void rec_gpu(Graph& g, Graph& save, int gi, int step, int back_to_net, int back_to_first, int forced, int& time) {
    if (time <= 0) return;
    --time;
    if (step == ngpus_) {
      ++g.n_channels;
      if (better(g, save)) {
        save = g;
        if (g.n_channels == g.max_channels) time = -1;
        // A first-pass graph that reaches totalBw ends the search as soon as it returns ("done"), and
        // what is left of the budget no longer counts; when the bound also proves that nothing in
        // this search can beat it, the rest of the search cannot change anything: stop here.
        else if (stop_when_final_ && save.n_channels * save.bw_inter >= s_.total_bw && cannot_improve(g, save)) time = -1;
      }
      if (g.n_channels < g.max_channels) rec(g, save, time);
      --g.n_channels;
      return;
    }
    g.intra[static_cast<std::size_t>(g.n_channels * ngpus_ + step)] = s_.typed_const(GPU, gi).gpu;
    if (step == back_to_net) {
      // first get back to the NIC
      const int start_net = g.inter[static_cast<std::size_t>(g.n_channels * 2)];
      const std::vector<int>& nets = select_nets(g.type_inter, gi);
      for (int n : nets) {
        if (n != start_net) continue;  // crossNic 0: leave through the NIC the channel came in by
        int next_back = -1;
        const double save_inter = g.bw_inter;
        if (g.pattern == BALANCED_TREE) {  // count half of the bandwidth on each of the first two GPUs
          if (step == 0) next_back = 1;
          g.bw_inter /= 2;
        }
        const int net = follow(g, GPU, gi, NET, n, 1);
        g.bw_inter = save_inter;
        if (net >= 0) {
          g.inter[static_cast<std::size_t>(g.n_channels * 2 + 1)] = n;
          rec_gpu(g, save, gi, step, next_back, back_to_first, forced, time);
          if (g.pattern == BALANCED_TREE) g.bw_inter /= 2;
          follow(g, GPU, gi, NET, n, -1);
          g.bw_inter = save_inter;
        }
      }
    } else if (step < ngpus_ - 1) {
      const std::size_t base = stack_.size();
      int count = 1;
      if (forced == ORDER_PCI) {
        stack_.push_back(step + 1);
      } else if (forced == ORDER_REPLAY) {
        stack_.push_back(replay_gpu(g, step));
      } else {
        count = push_next_gpus(g, gi, back_to_net == -1 ? 0 : back_to_net == step + 1 ? 1 : 0);
      }
      // by index: deeper steps push onto the same stack (and may move it), and leave it as they found it
      for (int k = 0; k < count; ++k)
        try_gpu(g, save, step + 1, back_to_net, back_to_first, forced, time, GPU, gi, stack_[base + static_cast<std::size_t>(k)]);
      stack_.resize(base);
    } else if (step == back_to_first) {
      // loop back to the first GPU
      const int rank = g.intra[static_cast<std::size_t>(g.n_channels * ngpus_)];
      int p = 0;
      for (int i = 0; i < ngpus_; ++i)
        if (s_.typed_const(GPU, i).gpu == rank) p = i;
      const int first = follow(g, GPU, gi, GPU, p, 1);
      if (first >= 0) {
        rec_gpu(g, save, p, step + 1, back_to_net, -1, forced, time);
        follow(g, GPU, gi, GPU, p, -1);
      }
    } else {
      rec_gpu(g, save, gi, ngpus_, -1, -1, forced, time);
    }
  }

  void params(int pattern, int& back_to_net, int& back_to_first) const {
    if (s_.count(NET) > 0) {
      back_to_net = pattern == RING ? ngpus_ - 1 : pattern == SPLIT_TREE ? 1 : 0;
      back_to_first = -1;
    } else {
      back_to_net = -1;
      back_to_first = pattern == RING ? ngpus_ - 1 : -1;
    }
  }

  // ncclTopoSearchRecNet
  void rec_net(Graph& g, Graph& save, int back_to_net, int back_to_first, int& time) {
    const double bw = g.bw_inter;
    const std::vector<int>& nets = select_nets(g.type_inter, -1);
    const int count = static_cast<int>(nets.size());
    for (int i = 0; i < count; ++i) {
      const int n = nets[static_cast<std::size_t>((g.n_channels + i) % count)];
      SNode& net = s_.typed(NET, n);
      if (net.net_bw < bw) continue;
      g.inter[static_cast<std::size_t>(g.n_channels * 2)] = n;
      net.net_bw -= bw;
      if (g.n_channels > 0 && g.same_channels) {
        try_gpu(g, save, 0, back_to_net, back_to_first, ORDER_REPLAY, time, NET, n, replay_gpu(g, -1));
      } else {
        if (g.n_channels == 0 && s_.count(NVS) == 0) {
          // always try the PCI order first to set a reference, with a small budget of its own
          int t = 1 << 10;
          try_gpu(g, save, 0, back_to_net, back_to_first, ORDER_PCI, t, NET, n, 0);
          if (t == -1) time = -1;
        }
        for (int gi : net_local_gpus(n)) try_gpu(g, save, 0, back_to_net, back_to_first, ORDER_NONE, time, NET, n, gi);
      }
      net.net_bw += bw;
    }
  }

  // ncclTopoSearchRec
  void rec(Graph& g, Graph& save, int& time) {
    int back_to_net = -1, back_to_first = -1;
    params(g.pattern, back_to_net, back_to_first);
    if (s_.count(NET) > 0) {
      rec_net(g, save, back_to_net, back_to_first, time);
      return;
    }
    if (g.n_channels == 0) {
      try_gpu(g, save, 0, back_to_net, back_to_first, ORDER_PCI, time, -1, -1, 0);
    } else {
      try_gpu(g, save, 0, back_to_net, back_to_first, ORDER_REPLAY, time, -1, -1, replay_gpu(g, -1));
    }
    if (!g.same_channels || g.n_channels == 0)
      for (int gi = 0; gi < ngpus_; ++gi) try_gpu(g, save, 0, back_to_net, back_to_first, ORDER_NONE, time, -1, -1, gi);
  }

  // ncclTopoCompute
  ChannelSet compute(ChannelPattern which, int min_channels, int max_channels, bool skip_doomed) {
    if (skip_doomed)
      if (auto fast = compute_once(which, min_channels, max_channels, true)) return *fast;
    return *compute_once(which, min_channels, max_channels, false);
  }

  /// A bound that proves a first-pass search cannot save anything: ncclTopoCompareGraphs keeps a graph
  /// only with at least min_channels channels (a tree's min is the ring's count) and more channels ×
  /// speed than the best so far (or as much with fewer hops). Every hop a → b reserves at least the
  /// channel's speed on the first link of its path, one of a's outgoing links (×1.2 on PCIe through an
  /// Intel CPU, never less); a ring leaves each GPU once per channel, a tree books each hop both ways,
  /// so its chain of n GPUs leaves the GPUs 2(n − 1) times per channel, at least once from each. A link
  /// of remaining bandwidth C takes at most C / speed hops (plus what sub_round's rounding to 0.001
  /// may give back: at most 0.0005 per hop). A channel's hops count at least the shortest allowed
  /// path each. Only without NICs: the NVSwitch and PCIe nodes where the search spends NCCL's budgets
  /// at speeds that cannot do better.
  bool cannot_improve(const Graph& g, const Graph& best) const {
    if (s_.count(NET) > 0) return cannot_improve_with_nets(g, best);
    if (ngpus_ < 2) return false;
    const double bw = g.bw_intra * std::min(1.0, t_.intel_p2p_overhead);
    if (!(bw > 0)) return false;
    const bool tree = is_tree(g.pattern);
    long total = 0, most = g.max_channels;
    int min_hops = 0;  // links of the shortest path a hop may take
    for (int gi = 0; gi < ngpus_; ++gi) {
      // the links a hop out of this GPU can start on: the first link of its path to each other GPU that
      // the channel's path type allows
      first_links_.clear();
      for (int o = 0; o < ngpus_; ++o) {
        if (o == gi) continue;
        const SPath& p = paths_.p(GPU, gi, GPU, o);
        if (p.count() == 0 || p.type >= P_DIS || p.type > g.type_intra) continue;
        if (min_hops == 0 || p.count() < min_hops) min_hops = p.count();
        const int l = p.links.front();
        if (std::find(first_links_.begin(), first_links_.end(), l) == first_links_.end()) first_links_.push_back(l);
      }
      long cap = 0;
      for (int l : first_links_) {
        const double c = s_.links[static_cast<std::size_t>(l)].bw;
        if (c <= 0) continue;
        cap += static_cast<long>(std::floor((c + 0.0005 * (c / bw + 2.0)) / bw));
      }
      most = std::min(most, cap);  // every channel leaves every GPU at least once
      total += cap;
    }
    const long hops_per_channel = tree ? ngpus_ - 1 : ngpus_;
    const long leaves_per_channel = tree ? 2L * (ngpus_ - 1) : ngpus_;
    most = std::min(most, total / leaves_per_channel);
    // A link every path from one part of the GPUs to the rest crosses (two sockets joined by one link):
    // a channel visits every GPU, so it has a hop from that part to the rest (a ring) or books one
    // (a tree books each hop both ways), and that hop reserves at least the speed on the link.
    for (int l : cut_links()) {
      const double c = s_.links[static_cast<std::size_t>(l)].bw;
      most = std::min(most, c <= 0 ? 0L : static_cast<long>(std::floor((c + 0.0005 * (c / bw + 2.0)) / bw)));
    }
    // A link that every path out of some GPUs crosses (their PCIe switch's uplink when peer-to-peer goes
    // through the host): every channel leaves each of them, so it reserves at least the sum of their
    // charges on it (×1.2 where the path is PHB through an Intel CPU, as follow_path charges).
    for (const auto& [l, factor] : shared_links()) {
      const double c = s_.links[static_cast<std::size_t>(l)].bw;
      const double per_channel = factor * g.bw_intra;
      if (!(per_channel > 0)) continue;
      most = std::min(most, c <= 0 ? 0L : static_cast<long>(std::floor((c + 0.0005 * (c / bw + 2.0)) / per_channel)));
    }
    const double best_bw = best.n_channels * best.bw_intra;
    for (long n = g.min_channels; n <= most; ++n) {
      const double a = static_cast<double>(n) * g.bw_intra;
      if (a > best_bw) return false;
      if (a == best_bw && g.pattern == best.pattern && n * hops_per_channel * min_hops < best.n_hops) return false;
    }
    return true;
  }

  /// The links that split the GPUs: a directed link l and a part A of the GPUs such that the path from
  /// every GPU of A to every GPU outside A crosses l. Found once per search (paths do not change).
  const std::vector<int>& cut_links() const {
    if (cuts_done_) return cuts_;
    cuts_done_ = true;
    if (ngpus_ > 64) return cuts_;
    const std::uint64_t all = ngpus_ == 64 ? ~0ULL : (1ULL << ngpus_) - 1;
    // to[l * ngpus + a]: the GPUs b whose path from a crosses l
    std::vector<std::uint64_t> to(s_.links.size() * static_cast<std::size_t>(ngpus_), 0);
    for (int a = 0; a < ngpus_; ++a)
      for (int b = 0; b < ngpus_; ++b) {
        if (a == b) continue;
        for (int l : paths_.p(GPU, a, GPU, b).links)
          to[static_cast<std::size_t>(l) * static_cast<std::size_t>(ngpus_) + static_cast<std::size_t>(a)] |= 1ULL << b;
      }
    for (std::size_t l = 0; l < s_.links.size(); ++l) {
      std::uint64_t from = 0, reach = all;
      for (int a = 0; a < ngpus_; ++a) {
        const std::uint64_t m = to[l * static_cast<std::size_t>(ngpus_) + static_cast<std::size_t>(a)];
        if (m == 0) continue;
        from |= 1ULL << a;
        reach &= m;
      }
      if (from != 0 && (from & reach) == 0 && (from | reach) == all) cuts_.push_back(static_cast<int>(l));
    }
    return cuts_;
  }

  /// Links that every path out of two or more GPUs crosses, each with the sum over those GPUs of the
  /// smallest charge factor (per unit of speed) their paths put on it. Found once per search.
  const std::vector<std::pair<int, double>>& shared_links() const {
    if (shared_done_) return shared_;
    shared_done_ = true;
    std::vector<double> factor(s_.links.size(), 0.0);
    std::vector<int> count(s_.links.size(), 0);
    std::vector<double> mine(s_.links.size());
    std::vector<int> hits(s_.links.size());
    for (int a = 0; a < ngpus_; ++a) {
      std::fill(mine.begin(), mine.end(), std::numeric_limits<double>::infinity());
      std::fill(hits.begin(), hits.end(), 0);
      int paths = 0;
      for (int b = 0; b < ngpus_; ++b) {
        if (a == b) continue;
        const SPath& p = paths_.p(GPU, a, GPU, b);
        if (p.count() == 0 || p.type >= P_DIS) continue;
        ++paths;
        const double pci = pci_factor(p, s_.of_type[GPU][static_cast<std::size_t>(a)]);
        for (int l : p.links) {
          const auto li = static_cast<std::size_t>(l);
          ++hits[li];
          mine[li] = std::min(mine[li], s_.links[li].type == P_PIX ? pci : 1.0);
        }
      }
      if (paths == 0) continue;
      for (std::size_t l = 0; l < s_.links.size(); ++l) {
        if (hits[l] != paths) continue;  // some path out of a avoids l
        factor[l] += mine[l];
        ++count[l];
      }
    }
    for (std::size_t l = 0; l < s_.links.size(); ++l)
      if (count[l] >= 2) shared_.emplace_back(static_cast<int>(l), factor[l]);
    return shared_;
  }

  /// follow_path's factor on the PCIe links of a path from `start`: INTEL_P2P_OVERHEAD on a PHB path
  /// from a GPU through an Intel x86 CPU, else 1.
  double pci_factor(const SPath& path, int start) const {
    if (path.type != P_PHB || s_.nodes[static_cast<std::size_t>(start)].type != GPU) return 1.0;
    for (int l : path.links) {
      const SNode& node = s_.nodes[static_cast<std::size_t>(s_.links[static_cast<std::size_t>(l)].to)];
      if (node.type == CPU && node.arch == topo::CpuArch::x86 && node.vendor == topo::CpuVendor::intel)
        return t_.intel_p2p_overhead;
    }
    return 1.0;
  }

  /// The same with NICs: a channel enters through a NIC whose budget (net_bw) it keeps while the
  /// search goes deeper (ncclTopoSearchRecNet), so no more channels stand together than the NICs'
  /// budgets hold at the inter speed. A channel's hops count at least the shortest NIC → GPU path, the
  /// shortest GPU → GPU path for each further GPU and the shortest GPU → NIC path.
  bool cannot_improve_with_nets(const Graph& g, const Graph& best) const {
    const double bw = g.bw_inter;
    if (!(bw > 0)) return false;
    long most = 0;
    for (int n = 0; n < s_.count(NET); ++n) {
      const double c = s_.typed_const(NET, n).net_bw;
      if (c > 0) most += static_cast<long>(std::floor(c / bw + 1e-6));
    }
    most = std::min<long>(most, g.max_channels);
    auto shortest = [&](NodeType from, NodeType to) {
      int m = 0;
      for (int i = 0; i < s_.count(from); ++i)
        for (int j = 0; j < s_.count(to); ++j) {
          const int c = paths_.p(from, i, to, j).count();
          if (c > 0 && (m == 0 || c < m)) m = c;
        }
      return m;
    };
    const long min_hops = shortest(NET, GPU) + (ngpus_ - 1L) * (ngpus_ > 1 ? shortest(GPU, GPU) : 0) + shortest(GPU, NET);
    const double best_bw = best.n_channels * best.bw_intra;
    for (long n = g.min_channels; n <= most; ++n) {
      const double a = static_cast<double>(n) * g.bw_intra;
      if (a > best_bw) return false;
      if (a == best_bw && g.pattern == best.pattern && n * min_hops < best.n_hops) return false;
    }
    return true;
  }

  /// The state of ncclTopoCompute's search loop: the graph being tried, its speed among the table's, the
  /// pass, and the budgets.
  struct Sweep {
    Graph tmp;
    const std::vector<double>& speeds;
    int nspeeds = 0;
    int pass = 1;
    int si = 0;
    double max_bw = 0;
    long global_timeout = 0;
    int time = 0;
    bool skipped = false;
  };
  enum class Step { retry, abandon, proceed };

  // The graph to fill, and the path types the search may use.
  Graph initial_graph(ChannelPattern which, int min_channels, int max_channels, bool nets) {
    Graph graph;
    graph.pattern = which == ChannelPattern::ring ? RING : (s_.sm < 80 ? SPLIT_TREE : BALANCED_TREE);
    graph.min_channels = min_channels;
    graph.max_channels = max_channels;
    // ncclTopoGetGpuMinPath / ncclTopoGetGpuMaxPath: the path types the search tries run from the best
    // to the worst GPU-GPU path of this system (GPU-NET with NICs), not over every type: a type below the
    // best allows no hop, one above the worst allows what the worst does. On an NVSwitch node every pair
    // is NVL, so NCCL searches at NVL only.
    min_type_intra_ = P_LOC;
    int max_type_intra = P_SYS;
    min_type_inter_ = P_PIX;
    max_type_inter_ = P_SYS;
    if (ngpus_ > 1) {
      min_type_intra_ = min_path(GPU);
      max_type_intra = max_path(GPU);
    }
    if (nets) {
      min_type_inter_ = min_path(NET);
      max_type_inter_ = max_path(NET);
      max_type_intra = max_type_inter_;
    }
    max_type_intra_ = max_type_intra;
    graph.type_intra = min_type_intra_;
    graph.type_inter = min_type_inter_;
    graph.same_channels = true;
    graph.intra.assign(static_cast<std::size_t>(max_channels * std::max(ngpus_, 1)), 0);
    graph.inter.assign(static_cast<std::size_t>(max_channels * 2), 0);
    return graph;
  }

  // The first try: the fastest speed the system can carry.
  Sweep first_try(const Graph& graph, bool nets) const {
    const int cc = s_.sm;
    Sweep w{graph, nets ? t_.inter_speeds(cc) : t_.intra_speeds(cc)};
    w.nspeeds = static_cast<int>(w.speeds.size());
    w.max_bw = s_.max_bw;
    double total_bw = s_.total_bw;
    if (ngpus_ > 1 && graph.pattern != RING) total_bw *= ngpus_ * 1.0 / (ngpus_ - 1);
    while ((w.speeds[w.si] > w.max_bw || w.speeds[w.si] * graph.min_channels > total_bw) && w.si < w.nspeeds - 1) ++w.si;
    w.tmp.bw_intra = w.tmp.bw_inter = w.speeds[w.si];
    w.global_timeout = t_.search_timeout_global;
    return w;
  }

  // The second pass raises a ring's speed one step at a time while its searches end before their
  // budget. When the bound proves that no search at this speed or any higher one can keep a graph,
  // the graph is final whichever way the budgets go.
  bool final_at_every_speed(const Sweep& w, const Graph& graph) {
    bool final_graph = true;
    for (int k = w.si; k >= 0 && final_graph; --k) {
      Graph probe = w.tmp;
      probe.bw_intra = probe.bw_inter = w.speeds[static_cast<std::size_t>(k)];
      final_graph = cannot_improve(probe, graph);
    }
    return final_graph;
  }

  // One search of the current try, within its budget.
  void run_try(Sweep& w, Graph& graph, bool skip_doomed) {
    Graph& tmp = w.tmp;
    w.time = tmp.same_channels ? t_.search_timeout_same : tmp.pattern == TREE ? t_.search_timeout_tree : t_.search_timeout;
    tmp.n_channels = 0;
    w.global_timeout -= w.time;
    stop_when_final_ = w.pass == 1 && skip_doomed;
    if (w.pass == 1 && skip_doomed && cannot_improve(tmp, graph)) {
      // NCCL would search and keep nothing: the outcome is "nothing saved" and a remaining budget
      // between 0 and `time`, taken as 0 (see the global timeout below).
      w.time = 0;
      w.skipped = true;
    } else {
      rec(tmp, graph, w.time);
    }
  }

  // Pass 1 has no graph good enough yet: NCCL's next try (other channels, a simpler tree, a worse path
  // type, a lower speed), or on to "done:" once the global budget is spent.
  Step next_try(Sweep& w, const Graph& graph, bool nets) {
    Graph& tmp = w.tmp;
    if (tmp.same_channels) {
      tmp.same_channels = false;
      return Step::retry;
    }
    tmp.same_channels = true;
    if (w.time != -1) w.global_timeout += w.time;
    else w.global_timeout = t_.search_timeout_global;
    if (w.global_timeout < 0 && graph.n_channels) {
      // A skipped search was counted as spending its whole budget; NCCL's may have ended sooner and
      // left the global budget positive. Only here could that change the result: search again
      // without skipping.
      return w.skipped ? Step::abandon : Step::proceed;
    }
    // "Try a simpler tree": from Hopper on, a balanced tree that nothing fits (its second GPU must
    // reach the NIC both ways, which PXN gives only in the send direction) becomes a plain chain
    // whose first GPU both receives from and sends to the NIC; what the search keeps sets the
    // pattern of the later tries.
    if (s_.sm >= 90 && tmp.pattern == BALANCED_TREE) {
      tmp.pattern = TREE;
      return Step::retry;
    }
    tmp.pattern = graph.pattern;
    const int max_intra = nets ? tmp.type_inter : max_type_intra_;
    if (tmp.type_intra < max_intra && (graph.n_channels == 0 || tmp.type_intra < graph.type_intra)) {
      ++tmp.type_intra;
      return Step::retry;
    }
    tmp.type_intra = min_type_intra_;
    if (nets && tmp.type_inter < max_type_inter_ &&
        (graph.n_channels == 0 || tmp.type_inter < graph.type_inter || tmp.type_inter < P_PHB)) {
      ++tmp.type_inter;
      return Step::retry;
    }
    tmp.type_inter = min_type_inter_;
    // decrease the speed until a solution appears
    if (w.si < w.nspeeds - 1 && (graph.n_channels == 0 || w.speeds[w.si + 1] / graph.bw_inter > .49)) {
      tmp.bw_inter = tmp.bw_intra = w.speeds[++w.si];
      return Step::retry;
    }
    w.si = 0;
    while (w.speeds[w.si] > w.max_bw && w.si < w.nspeeds - 1) ++w.si;
    tmp.bw_intra = tmp.bw_inter = w.speeds[w.si];
    return Step::proceed;
  }

  // "done:" after pass 1: the graph duplicated, and pass 2 starts from its speed.
  void start_pass_two(Sweep& w, Graph& graph) {
    w.time = -1;
    dup_channels(graph);
    w.tmp = graph;
    w.si = 0;
    while (w.speeds[w.si] > graph.bw_inter && w.si < w.nspeeds - 1) ++w.si;
    w.tmp.bw_intra = w.tmp.bw_inter = w.speeds[w.si];
    w.tmp.min_channels = graph.n_channels;
    w.pass = 2;
  }

  // Pass 2: one speed higher while the last search ended within its budget; false when the search is over.
  static bool raise_speed(Sweep& w, const Graph& graph) {
    Graph& tmp = w.tmp;
    if (w.time != 0 && w.si > 0 && graph.n_channels > 0) {
      if (graph.pattern == RING) {
        tmp.bw_intra = tmp.bw_inter = w.speeds[--w.si];
        return true;
      }
      if (tmp.bw_intra == graph.bw_intra && tmp.bw_intra < tmp.bw_inter * 2) {
        tmp.bw_intra = w.speeds[--w.si];
        return true;
      }
    }
    return false;
  }

  ChannelSet channel_set(ChannelPattern which, const Graph& graph, bool nets) const {
    ChannelSet out;
    out.pattern = which;
    if (graph.n_channels == 0) {  // "Could not find a path, falling back to simple order"
      out.fallback = true;
      out.channels = 1;
      out.bw_intra = out.bw_inter = gigabytes_per_second(std::min(t_.fallback_bw, fallback_bottleneck()));
      out.type_intra = out.type_inter = PathType::sys;
      std::vector<int> order;
      for (int i = 0; i < ngpus_; ++i) order.push_back(s_.typed_const(GPU, i).gpu);
      out.orders.push_back(order);
      return out;
    }
    out.channels = graph.n_channels;
    out.bw_intra = gigabytes_per_second(graph.bw_intra);
    out.bw_inter = gigabytes_per_second(graph.bw_inter);
    out.type_intra = static_cast<PathType>(graph.type_intra);
    out.type_inter = static_cast<PathType>(nets ? graph.type_inter : P_LOC);
    out.same_channels = graph.same_channels;
    out.plain_tree = graph.pattern == TREE;
    for (int c = 0; c < graph.n_channels; ++c) {
      std::vector<int> order(graph.intra.begin() + c * ngpus_, graph.intra.begin() + (c + 1) * ngpus_);
      out.orders.push_back(std::move(order));
    }
    return out;
  }

  // ncclTopoCompute; nothing when a skipped search could have changed the result (search again without).
  std::optional<ChannelSet> compute_once(ChannelPattern which, int min_channels, int max_channels, bool skip_doomed) {
    const bool nets = s_.count(NET) > 0;
    Graph graph = initial_graph(which, min_channels, max_channels, nets);
    Sweep w = first_try(graph, nets);
    for (;;) {  // the "search:" label
      if (w.pass == 2 && skip_doomed && w.tmp.pattern == RING && final_at_every_speed(w, graph)) break;
      // A tree's second pass raises bwIntra above the graph's and stops as soon as a search saves
      // nothing, whatever budget it left: when the bound proves this one saves nothing, that is the end.
      if (w.pass == 2 && skip_doomed && w.tmp.pattern != RING && cannot_improve(w.tmp, graph)) break;
      run_try(w, graph, skip_doomed);
      const bool done = w.time == -1 || graph.n_channels * graph.bw_inter >= s_.total_bw;
      if (!done && w.pass == 1) {
        const Step step = next_try(w, graph, nets);
        if (step == Step::retry) continue;
        if (step == Step::abandon) return std::nullopt;
      }
      // "done:"
      if (w.pass == 1) start_pass_two(w, graph);
      if (raise_speed(w, graph)) continue;
      break;
    }
    return channel_set(which, graph, nets);
  }

  // NCCL's fallback rates its one channel at 0.1 GB/s whatever the links are (search.cc). That is a
  // rating for choosing an algorithm, not a speed: traffic cannot pass the narrowest link of the
  // fallback order. The channel (GPUs in index order, through NIC 0 when there are nodes to join, else
  // closed back to the first GPU) is therefore also capped at that link, so that a NIC slower than
  // NCCL's slowest search speed (0.12 GB/s, under 1 Gb/s) is not predicted at 0.1 GB/s. dlscale's
  // deviation from NCCL, found by tests/robustness_test.cpp (NcclAllReduceNeverBeatsTheNics).
  [[nodiscard]] double fallback_bottleneck() const {
    double bw = t_.fallback_bw;
    auto take = [&](double b) {
      if (b > 0) bw = std::min(bw, b);
    };
    for (int i = 0; i + 1 < ngpus_; ++i) take(paths_.p(GPU, i, GPU, i + 1).bw);
    if (s_.count(NET) > 0 && ngpus_ > 0) {
      take(s_.typed_const(NET, 0).net_bw);
      take(paths_.p(NET, 0, GPU, 0).bw);
      take(paths_.p(GPU, ngpus_ - 1, NET, 0).bw);
    } else if (ngpus_ > 1) {
      take(paths_.p(GPU, ngpus_ - 1, GPU, 0).bw);
    }
    return bw;
  }

  // ncclTopoDupChannels
  void dup_channels(Graph& g) const {
    if (g.n_channels == 0 || g.bw_intra < t_.dup_threshold) return;
    if (s_.sm > 80 && g.bw_intra < 50.0 && g.n_channels > 4) return;
    const int dup = std::min(g.n_channels * 2, g.max_channels);
    for (int c = g.n_channels; c < dup; ++c)
      for (int i = 0; i < ngpus_; ++i)
        g.intra[static_cast<std::size_t>(c * ngpus_ + i)] = g.intra[static_cast<std::size_t>((c - g.n_channels) * ngpus_ + i)];
    const int div = (dup + g.n_channels - 1) / g.n_channels;
    g.bw_intra /= div;
    g.bw_inter /= div;
    g.n_channels = dup;
  }

 private:
  const System& paths_;  // the system as built: its paths (and of_type, which the copy shares)
  System s_;             // its nodes and links, as the search books them
  const Table& t_;
  int ngpus_;
  int min_type_intra_ = P_NVL, max_type_intra_ = P_SYS, min_type_inter_ = P_PIX, max_type_inter_ = P_SYS;
  std::vector<int> stack_;     // the candidate GPUs of every step of the recursion, innermost last
  std::vector<Score> scores_;  // push_next_gpus's scratch
  std::vector<std::optional<std::vector<int>>> static_orders_;  // push_next_gpus without a NIC, per GPU
  mutable std::vector<int> first_links_;                        // cannot_improve's scratch
  mutable std::vector<int> cuts_;                               // cut_links()
  mutable bool cuts_done_ = false;
  mutable std::vector<std::pair<int, double>> shared_;  // shared_links()
  mutable bool shared_done_ = false;
  bool stop_when_final_ = false;  // rec_gpu: stop once a saved graph is final (see there)
  std::vector<std::optional<std::vector<int>>> nets_cache_, net_gpus_;
};

}  // namespace

ChannelSet compute_channels(const System& sys, ChannelPattern pattern, int min_channels, int max_channels, const Table& t,
                            bool skip_doomed) {
  Search s(sys, t);
  return s.compute(pattern, min_channels, max_channels, skip_doomed);
}

}  // namespace dlscale::nccl
