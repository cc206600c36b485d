// The simulator's front: turns a Scenario and SimOptions into the model's Setup, runs the merge
// policies, and fills the same Prediction record as the closed form (see simulator.hpp).
#include "dlscale/sim/simulator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "dlscale/equations.hpp"
#include "dlscale/error.hpp"
#include "dlscale/format.hpp"
#include "dlscale/kernels.hpp"
#include "dlscale/sharding.hpp"
#include "dlscale/sim/pipeline.hpp"
#include "dlscale/topology.hpp"
#include "model.hpp"
#include "random.hpp"

namespace dlscale::sim {

std::string_view to_string(MergePolicy m) noexcept {
  switch (m) {
    case MergePolicy::strategy:
      return "strategy";
    case MergePolicy::none:
      return "none";
    case MergePolicy::ddp:
      return "ddp";
    case MergePolicy::horovod:
      return "horovod";
    case MergePolicy::mgwfbp:
      return "mgwfbp";
    case MergePolicy::best:
      return "best";
  }
  return "?";
}

MergePolicy merge_policy_from_string(std::string_view s) {
  for (auto m :
       {MergePolicy::strategy, MergePolicy::none, MergePolicy::ddp, MergePolicy::horovod, MergePolicy::mgwfbp, MergePolicy::best})
    if (s == to_string(m)) return m;
  throw InputError(SourceLocation{}, "merge",
                   fmt::format("unknown merge policy '{}' (expected strategy, none, ddp, horovod, mgwfbp or best)", s));
}

std::string_view to_string(AllreduceAlgorithm a) noexcept {
  switch (a) {
    case AllreduceAlgorithm::ring:
      return "ring";
    case AllreduceAlgorithm::tree:
      return "tree";
    case AllreduceAlgorithm::hierarchical:
      return "hierarchical";
  }
  return "?";
}

AllreduceAlgorithm allreduce_algorithm_from_string(std::string_view s) {
  for (auto a : {AllreduceAlgorithm::ring, AllreduceAlgorithm::tree, AllreduceAlgorithm::hierarchical})
    if (s == to_string(a)) return a;
  throw InputError(SourceLocation{}, "allreduce",
                   fmt::format("unknown all-reduce algorithm '{}' (expected ring, tree or hierarchical)", s));
}

namespace {

using detail::FlowSpec;
using detail::Phase;
using detail::Setup;

std::vector<double> to_doubles(const std::vector<Seconds>& v) {
  std::vector<double> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = in_seconds(v[i]);
  return out;
}

detail::GpuClass make_class(const LayerTimes& t) {
  detail::GpuClass c;
  c.f = to_doubles(t.forward);
  c.b = to_doubles(t.backward);
  c.u = to_doubles(t.update);
  c.u_total = in_seconds(t.total_update());
  return c;
}

/// A plan policy: what the model is asked to do.
struct PlanChoice {
  std::string name;
  bool horovod = false;
  double threshold = 0.0;
  std::vector<Bucket> plan;
};

}  // namespace

/// The options' values that no type rules out, and what the simulator does not model for this scenario.
void validate(const SimOptions& opt, const Scenario& sc) {
  if (sc.parallel) {  // eq. P32: the pipeline of passes; what acts on data parallelism's tasks and links only is refused
    const SimOptions plain;
    for (auto [field, off] : {std::pair{"contention", !opt.contention}, std::pair{"merge", opt.merge == plain.merge},
                              std::pair{"allreduce", opt.allreduce == plain.allreduce},
                              std::pair{"node_gpu", opt.node_gpu.empty()}, std::pair{"channels", opt.channels == plain.channels},
                              std::pair{"decode_per_sample", opt.decode_per_sample == plain.decode_per_sample},
                              std::pair{"readers_per_node", opt.readers_per_node == plain.readers_per_node},
                              std::pair{"prefetch_depth", opt.prefetch_depth == plain.prefetch_depth},
                              std::pair{"gpus_per_pcie_switch", opt.gpus_per_pcie_switch == plain.gpus_per_pcie_switch}})
      if (!off)
        throw InputError(SourceLocation{}, field,
                         "a model-parallel layout is simulated as its pipeline (eq. P32), without links, buckets or the "
                         "input pipeline; leave this option out");
  }
  if (opt.iterations < 1) throw InputError(SourceLocation{}, "iterations", "at least one iteration must be simulated");
  if (sc.compute.accumulate != 1)
    throw InputError(SourceLocation{}, "compute.accumulate", "the simulator does not model gradient accumulation; use predict");
  if (opt.warmup < 0) throw InputError(SourceLocation{}, "warmup", "the warm-up cannot be negative");
  if (opt.channels < 1) throw InputError(SourceLocation{}, "channels", "at least one channel");
  if (opt.readers_per_node < 1) throw InputError(SourceLocation{}, "readers_per_node", "at least one reader thread per node");
  if (opt.prefetch_depth < 0)
    throw InputError(SourceLocation{}, "prefetch_depth",
                     "the prefetch queue holds at least one batch (0: the framework's io.depth)");
  if (opt.gpus_per_pcie_switch < 1) throw InputError(SourceLocation{}, "gpus_per_pcie_switch", "at least one GPU per switch");
  if (!(opt.compute_jitter >= 0 && std::isfinite(opt.compute_jitter)))
    throw InputError(SourceLocation{}, "compute_jitter",
                     fmt::format("a jitter σ is a finite number ≥ 0, got {}", opt.compute_jitter));
  if (!(opt.link_jitter >= 0 && std::isfinite(opt.link_jitter)))
    throw InputError(SourceLocation{}, "link_jitter", fmt::format("a jitter σ is a finite number ≥ 0, got {}", opt.link_jitter));
  if (opt.cycle_time <= Seconds{}) throw InputError(SourceLocation{}, "cycle_time", "the Horovod cycle time must be positive");
  for (auto [field, size] : {std::pair{"bucket_size", opt.bucket_size}, std::pair{"first_bucket", opt.first_bucket},
                             std::pair{"fusion_threshold", opt.fusion_threshold}})
    if (!(in_bytes(size) >= 0.0 && std::isfinite(in_bytes(size))))
      throw InputError(SourceLocation{}, field,
                       fmt::format("a size is a finite number ≥ 0 B (0: the framework's), got {} B", in_bytes(size)));
  if (!(in_seconds(opt.decode_per_sample) >= 0.0 && std::isfinite(in_seconds(opt.decode_per_sample))))
    throw InputError(SourceLocation{}, "decode_per_sample",
                     fmt::format("a decode time is a finite number ≥ 0 s, got {} s", in_seconds(opt.decode_per_sample)));
  for (const auto& [g, f] : opt.speed)
    if (!(f > 0.0) || g < 0) throw InputError(SourceLocation{}, "speed", fmt::format("GPU {} speed factor {} must be > 0", g, f));
  if (sc.strategy.sharding.sharded()) {  // docs/model.md, "What the model leaves out"
    if (opt.contention)
      throw InputError(SourceLocation{}, "contention", "link contention is not modelled for sharded strategies (ZeRO, FSDP) yet");
    if (opt.merge != MergePolicy::strategy)
      throw InputError(SourceLocation{}, "merge", "a sharded strategy aggregates its own units; only --merge strategy applies");
  }
}

struct Simulator::Impl {
  Scenario sc;
  SimOptions opt;
  Predictor pred;
  std::shared_ptr<const CollectiveModel> coll;
  std::vector<Bytes> grads;
  std::vector<detail::GpuClass> classes;  // 0: the cluster's GPU; then one per node_gpu entry
  std::vector<std::string> names;
  Seconds iter_one{};

  // eq. P39: a layout that is data parallelism simulated as the data-parallel step it is (as the Predictor takes it)
  Impl(Scenario s, SimOptions o) : sc(data_parallel_form(s)), opt(std::move(o)), pred(std::move(s)) {
    sc.strategy.io_prefetch = pred.scenario().strategy.io_prefetch;  // reader_prefetches: the batch fits the buffer
    validate(opt, sc);
    if (sc.parallel) return;  // eq. P32: the layout's passes come from the predictor's step (run_layout)
    coll = with_transport(sc.collectives ? sc.collectives : make_collective_model(sc.cluster), sc.strategy.transport, sc.cluster);
    const double bpe = gradient_bytes_per_element(pred.scenario().compute);  // the predictor's step_compute
    for (const auto& l : sc.network.layers) {
      grads.push_back(Network::gradient_bytes(l, bpe));
      names.push_back(l.name);
    }
    classes.push_back(make_class(pred.layer_times()));
    if (!opt.node_gpu.empty()) {
      const LayerTimes base = estimate_layer_times(sc.network, sc.cluster.gpu, sc.batch_per_gpu, sc.compute);
      for (const auto& [node, gpu] : opt.node_gpu) {
        (void)node;
        const LayerTimes other = estimate_layer_times(sc.network, gpu, sc.batch_per_gpu, sc.compute);
        LayerTimes t = pred.layer_times();
        auto scale = [](std::vector<Seconds>& v, const std::vector<Seconds>& num, const std::vector<Seconds>& den) {
          for (std::size_t i = 0; i < v.size(); ++i)
            if (den[i] > Seconds{}) v[i] = v[i] * (num[i] / den[i]);
        };
        scale(t.forward, other.forward, base.forward);
        scale(t.backward, other.backward, base.backward);
        scale(t.update, other.update, base.update);
        classes.push_back(make_class(t));
      }
    }
    iter_one = pred.predict(1).iteration_time;
  }

  // ---- communication times without contention -----------------------------------------------------------
  [[nodiscard]] double reference_time(double size, const GpuPlacement& at) const {
    if (at.gpus <= 1) return 0.0;
    const Bytes s = bytes(size);
    const GpuPlacement intra{at.gpus_per_node, 1, at.gpus_per_node};
    const GpuPlacement across{at.nodes, at.nodes, 1};
    const Strategy& st = sc.strategy;
    if (st.sharding.sharded())  // a sharded step's plan is static: plan_times gives each unit's time (eq. S7)
      throw std::logic_error("simulator: a sharded strategy's collectives are timed per plan unit (plan_times)");
    switch (st.aggregation) {
      case Aggregation::allreduce:
        switch (opt.allreduce) {
          case AllreduceAlgorithm::ring:
            return in_seconds(coll->time(CollectiveOp::allreduce, s, at));
          case AllreduceAlgorithm::tree:
            return in_seconds(tree_time(size, at));
          case AllreduceAlgorithm::hierarchical:
            if (at.nodes <= 1 || at.gpus_per_node <= 1) return in_seconds(coll->time(CollectiveOp::allreduce, s, at));
            return in_seconds(coll->time(CollectiveOp::reducescatter, s, intra) +
                              coll->time(CollectiveOp::allreduce, s / static_cast<double>(at.gpus_per_node), across) +
                              coll->time(CollectiveOp::allgather, s, intra));
        }
        return 0.0;
      case Aggregation::parameter_server:
        return in_seconds(coll->parameter_server(s, at, st.parameter_servers));
      case Aggregation::hybrid: {
        Seconds c = coll->time(CollectiveOp::allreduce, s, intra);
        if (at.nodes > 1) c += coll->parameter_server(s, across, st.parameter_servers);
        return in_seconds(c);
      }
      case Aggregation::broadcast_reduce:
        return in_seconds(coll->time(CollectiveOp::broadcast, s, at) + coll->time(CollectiveOp::reduce, s, at));
    }
    return 0.0;
  }

  /// Pipelined tree all-reduce (NCCL's tree, src/graph/tuning.cc): latency
  /// 2·((n_g − 1)·α_intra + ⌈log2 N⌉·α_inter), bandwidth term 2·S/β (algbw = busbw/2), with α and β of a
  /// point-to-point hop taken from the collective model (a 2-GPU broadcast).
  [[nodiscard]] Seconds tree_time(double size, const GpuPlacement& at) const {
    const GpuPlacement two_intra{2, 1, 2}, two_inter{2, 2, 1};
    const Seconds a_intra = coll->time(CollectiveOp::broadcast, Bytes{}, two_intra);
    const Seconds a_inter = coll->time(CollectiveOp::broadcast, Bytes{}, two_inter);
    const GpuPlacement& hop = at.nodes > 1 ? two_inter : two_intra;
    const Seconds bw = coll->time(CollectiveOp::broadcast, bytes(size), hop) - coll->time(CollectiveOp::broadcast, Bytes{}, hop);
    const double depth = at.nodes > 1 ? std::ceil(std::log2(static_cast<double>(at.nodes))) : 0.0;
    return 2.0 * (a_intra * static_cast<double>(at.gpus_per_node - 1) + a_inter * depth) + 2.0 * bw;
  }

  // ---- each static plan unit's time, from the closed form's functions -----------------------------------
  /// Each unit of a static plan: its parameters and, at stage 3, the fp8 linear maps' weights of those it gathers
  /// (eq. S12): a stage-3 plan's units are the gather units (eq. S4b: the root holds every parameter outside the
  /// blocks), a bucket's parameters are its layers'.
  void plan_params(const std::vector<Bucket>& plan, std::vector<double>& params, std::vector<double>& fp8) const {
    const Sharding& sh = sc.strategy.sharding;
    if (sh.stage >= 3) {
      for (const GatherUnit& u : gather_units(sc.network, sh)) {
        params.push_back(static_cast<double>(u.params));
        fp8.push_back(unit_fp8_elements(sc.network, u));
      }
      if (params.size() != plan.size())
        throw std::logic_error("simulator: a stage-3 plan is the strategy's gather units (eq. S4)");
      return;
    }
    for (const Bucket& b : plan) {
      double p = 0.0;
      for (int i = b.first; i <= b.last; ++i) p += static_cast<double>(sc.network.layers[static_cast<std::size_t>(i)].params);
      params.push_back(p);
    }
  }

  /// Each unit's time on the aggregation channel without contention, and (sharded) on the gather channel, as the
  /// closed form times its units: shard_unit_times (eq. S5, S7, S7b, S12, M5c) or aggregation_times, over the whole
  /// plan in order. Empty where only the simulator models the aggregation (--allreduce tree or hierarchical):
  /// reference_time then times each collective by its bytes.
  [[nodiscard]] std::vector<double> plan_times(const std::vector<Bucket>& plan, const GpuPlacement& at,
                                               std::vector<double>* gather = nullptr) const {
    const Scenario& ps = pred.scenario();
    std::vector<Seconds> t(plan.size());
    if (ps.strategy.sharding.sharded()) {
      std::vector<double> params, fp8;
      plan_params(plan, params, fp8);
      std::vector<Seconds> g(plan.size());
      shard_unit_times(params, fp8, ps.strategy.sharding, ps.compute, ps.cluster, shard_groups(ps.strategy.sharding, at), *coll,
                       t, g);
      if (gather) *gather = to_doubles(g);
      return to_doubles(t);
    }
    if (at.gpus <= 1) return std::vector<double>(plan.size(), 0.0);
    if (ps.strategy.aggregation == Aggregation::allreduce && opt.allreduce != AllreduceAlgorithm::ring) return {};
    std::vector<Bytes> sizes;
    for (const Bucket& b : plan) sizes.push_back(b.bytes);
    aggregation_times(ps.strategy, *coll, sizes, at, t);
    return to_doubles(t);
  }

  // ---- links and paths for contention -------------------------------------------------------------------
  struct Net {
    std::vector<LinkId> gpu_out, gpu_in, nic_out, nic_in;
    std::uint32_t chain = 0, chain_rev = 0, tree = 0;
    std::vector<std::uint32_t> ring_all;  // per channel
    std::vector<std::uint32_t> ring_node, ring_rank;
    std::vector<std::vector<std::uint32_t>> ps_push, ps_pull;  // [sender][server]
  };

  /// Adds links and paths to a Setup: a hop between two GPUs goes through their intra-node ports in one
  /// node, through the nodes' NICs across nodes.
  struct PathBuilder {
    Setup& s;
    Net& n;
    int gpn;
    LinkId link(std::string name, std::string kind, double cap) {
      s.links.push_back(Setup::LinkDef{std::move(name), std::move(kind), cap});
      return static_cast<LinkId>(s.links.size() - 1);
    }
    void hop(std::vector<LinkId>& p, int a, int b) const {
      if (a == b) return;
      if (a / gpn == b / gpn) {
        p.push_back(n.gpu_out[static_cast<std::size_t>(a)]);
        p.push_back(n.gpu_in[static_cast<std::size_t>(b)]);
      } else {
        p.push_back(n.nic_out[static_cast<std::size_t>(a / gpn)]);
        p.push_back(n.nic_in[static_cast<std::size_t>(b / gpn)]);
      }
    }
    std::uint32_t add_path(std::vector<LinkId> p) {
      s.paths.push_back(std::move(p));
      return static_cast<std::uint32_t>(s.paths.size() - 1);
    }
    std::uint32_t ring(const std::vector<int>& members) {
      std::vector<LinkId> p;
      if (members.size() > 1)
        for (std::size_t i = 0; i < members.size(); ++i) hop(p, members[i], members[(i + 1) % members.size()]);
      return add_path(std::move(p));
    }
  };

  void build_links(Setup& s, Net& n, const GpuPlacement& at, int servers) const {
    PathBuilder pb{s, n, at.gpus_per_node};
    add_links(pb, at);
    add_rings(pb, at);
    add_chains_and_tree(pb, at);
    add_ps_paths(pb, at, servers);
  }

  /// The links: each GPU's intra-node ports, each node's NIC, the PCIe switch uplinks and each node's storage.
  void add_links(PathBuilder& pb, const GpuPlacement& at) const {
    Setup& s = pb.s;
    Net& n = pb.n;
    const double intra = in_bytes_per_second(sc.cluster.intra_node.bandwidth);
    const double inter = in_bytes_per_second(sc.cluster.inter_node.bandwidth);
    const int G = at.gpus, gpn = at.gpus_per_node, N = at.nodes;
    // With a topology graph, a GPU's port carries its own links' total (NCCL's totalBw: the sum of its
    // NVLinks, or its PCIe link); without one, the cluster's intra-node bandwidth.
    const Topology* topo = sc.cluster.topology.get();
    for (int g = 0; g < G; ++g) {
      const double port = topo ? in_bytes_per_second(topo->gpu_link_bandwidth(g % gpn)) : intra;
      n.gpu_out.push_back(pb.link(fmt::format("GPU {} intra-node out", g), "gpu-out", port > 0 ? port : intra));
      n.gpu_in.push_back(pb.link(fmt::format("GPU {} intra-node in", g), "gpu-in", port > 0 ? port : intra));
    }
    for (int k = 0; k < N; ++k) {
      n.nic_out.push_back(pb.link(fmt::format("node {} NIC out", k), "nic-out", inter));
      n.nic_in.push_back(pb.link(fmt::format("node {} NIC in", k), "nic-in", inter));
    }
    const double D = s.input_bytes;
    const int per_switch = opt.gpus_per_pcie_switch;
    for (int g = 0; g < G; ++g) {
      if (g % per_switch == 0 || g % gpn == 0)
        pb.link(fmt::format("PCIe switch uplink of GPU {}", g), "pcie", s.h2d > 0 ? D / s.h2d : 1e30);
      s.pcie_link.push_back(static_cast<LinkId>(s.links.size() - 1));
    }
    for (int k = 0; k < N; ++k)
      s.storage_link.push_back(pb.link(fmt::format("node {} storage", k), "storage", s.t_read > 0 ? D / s.t_read : 1e30));
  }

  /// The job-wide ring of each channel: NCCL's ring order inside every node (from the topology's
  /// channel search, channel c using order c mod the orders found), nodes in sequence; rank order
  /// without a topology graph.
  void add_rings(PathBuilder& pb, const GpuPlacement& at) const {
    const int G = at.gpus, gpn = at.gpus_per_node, N = at.nodes;
    const Topology* topo = sc.cluster.topology.get();
    std::vector<int> all(static_cast<std::size_t>(G));
    std::iota(all.begin(), all.end(), 0);
    std::vector<std::vector<int>> orders;
    if (topo && G > 1) {
      std::vector<int> local(static_cast<std::size_t>(gpn));
      std::iota(local.begin(), local.end(), 0);
      const ChannelSet cs = topo->channels(ChannelPattern::ring, local, N);
      for (const auto& o : cs.orders)
        if (static_cast<int>(o.size()) == gpn) orders.push_back(o);
    }
    if (orders.empty()) {
      pb.n.ring_all.push_back(pb.ring(all));
    } else {
      for (int c = 0; c < opt.channels; ++c) {
        const auto& o = orders[static_cast<std::size_t>(c) % orders.size()];
        std::vector<int> m;
        for (int k = 0; k < N; ++k)
          for (int j : o) m.push_back(k * gpn + j);
        pb.n.ring_all.push_back(pb.ring(m));
      }
    }
  }

  /// The chain through all GPUs both ways, the ring of each node and of each local rank, and the tree.
  static void add_chains_and_tree(PathBuilder& pb, const GpuPlacement& at) {
    Net& n = pb.n;
    const int G = at.gpus, gpn = at.gpus_per_node, N = at.nodes;
    {
      std::vector<LinkId> c, r;
      for (int g = 0; g + 1 < G; ++g) pb.hop(c, g, g + 1);
      for (int g = G - 1; g > 0; --g) pb.hop(r, g, g - 1);
      n.chain = pb.add_path(std::move(c));
      n.chain_rev = pb.add_path(std::move(r));
    }
    for (int k = 0; k < N; ++k) {
      std::vector<int> m;
      for (int j = 0; j < gpn; ++j) m.push_back(k * gpn + j);
      n.ring_node.push_back(pb.ring(m));
    }
    for (int j = 0; j < gpn; ++j) {
      std::vector<int> m;
      for (int k = 0; k < N; ++k) m.push_back(k * gpn + j);
      n.ring_rank.push_back(pb.ring(m));
    }
    {  // binary tree over nodes (parent of k: (k−1)/2) and a chain inside each node; both directions
      std::vector<LinkId> p;
      for (int k = 1; k < N; ++k) {
        pb.hop(p, k * gpn, ((k - 1) / 2) * gpn);
        pb.hop(p, ((k - 1) / 2) * gpn, k * gpn);
      }
      for (int k = 0; k < N; ++k)
        for (int j = 0; j + 1 < gpn; ++j) {
          pb.hop(p, k * gpn + j, k * gpn + j + 1);
          pb.hop(p, k * gpn + j + 1, k * gpn + j);
        }
      n.tree = pb.add_path(std::move(p));
    }
  }

  /// Parameter servers: with several nodes, server s sits on node s mod N and the GPUs of a node send
  /// through its NIC (one aggregated flow per node and server: equal flows on one path share equally);
  /// in one node, server s is GPU s mod G and every GPU sends to it through its intra-node port.
  static void add_ps_paths(PathBuilder& pb, const GpuPlacement& at, int servers) {
    Net& n = pb.n;
    const int G = at.gpus, N = at.nodes;
    const int k = std::max(servers, 1);
    if (N > 1) {
      for (int a = 0; a < N; ++a) {
        n.ps_push.emplace_back();
        n.ps_pull.emplace_back();
        for (int sv = 0; sv < k; ++sv) {
          const int node = sv % N;
          n.ps_push.back().push_back(
              pb.add_path({n.nic_out[static_cast<std::size_t>(a)], n.nic_in[static_cast<std::size_t>(node)]}));
          n.ps_pull.back().push_back(
              pb.add_path({n.nic_out[static_cast<std::size_t>(node)], n.nic_in[static_cast<std::size_t>(a)]}));
        }
      }
    } else {
      for (int g = 0; g < G; ++g) {
        n.ps_push.emplace_back();
        n.ps_pull.emplace_back();
        for (int sv = 0; sv < k; ++sv) {
          const int srv = sv % G;
          // the server's own gradients still enter through its port (the closed form counts N senders)
          std::vector<LinkId> push{n.gpu_in[static_cast<std::size_t>(srv)]}, pull{n.gpu_out[static_cast<std::size_t>(srv)]};
          if (g != srv) {
            push.insert(push.begin(), n.gpu_out[static_cast<std::size_t>(g)]);
            pull.push_back(n.gpu_in[static_cast<std::size_t>(g)]);
          }
          n.ps_push.back().push_back(pb.add_path(std::move(push)));
          n.ps_pull.back().push_back(pb.add_path(std::move(pull)));
        }
      }
    }
  }

  /// The phases of one aggregation with contention. Each flow's cap is the rate that makes it last
  /// exactly the collective model's bandwidth term when alone, so contention can only slow it.
  [[nodiscard]] std::vector<Phase> phases(double size, const GpuPlacement& at, const Net& n) const {
    std::vector<Phase> out;
    const int C = opt.channels, G = at.gpus, gpn = at.gpus_per_node, N = at.nodes;
    const GpuPlacement intra{gpn, 1, gpn}, across{N, N, 1};
    auto t = [&](CollectiveOp op, double sz, const GpuPlacement& w) { return in_seconds(coll->time(op, bytes(sz), w)); };
    auto cap_for = [](double flow_bytes, double total, double lat) {
      const double bw = total - lat;
      return bw > 0 ? flow_bytes / bw : 0.0;
    };
    auto ring_phase = [&](CollectiveOp op, double sz, const GpuPlacement& w, const std::vector<std::uint32_t>& rings,
                          double wire_factor) {
      Phase ph;
      ph.latency = t(op, 0.0, w);
      const double total = t(op, sz, w);
      const double fb = sz / C * wire_factor;
      for (std::uint32_t r : rings)
        for (int c = 0; c < C; ++c) ph.flows.push_back(FlowSpec{fb, r, cap_for(fb, total, ph.latency)});
      return ph;
    };
    auto ps_phases = [&](double sz, const GpuPlacement& w, int senders_per_flow, std::size_t senders) {
      const int k = sc.strategy.parameter_servers > 0 ? sc.strategy.parameter_servers : w.nodes;
      // one point-to-point hop between a worker and a server: two GPUs on two nodes, or in one node
      const GpuPlacement two = w.nodes > 1 ? GpuPlacement{2, 2, 1} : GpuPlacement{2, 1, 2};
      const double lat = t(CollectiveOp::broadcast, 0.0, two);
      Phase push, pull;
      push.latency = pull.latency = lat;
      for (std::size_t a = 0; a < senders; ++a)
        for (int sv = 0; sv < k; ++sv) {
          const double fb = sz / k * senders_per_flow;
          push.flows.push_back(FlowSpec{fb, n.ps_push[a][static_cast<std::size_t>(sv)], 0.0});
          pull.flows.push_back(FlowSpec{fb, n.ps_pull[a][static_cast<std::size_t>(sv)], 0.0});
        }
      out.push_back(std::move(push));
      out.push_back(std::move(pull));
    };
    const double ring_wire = 2.0 * (G - 1) / G;
    switch (sc.strategy.aggregation) {
      case Aggregation::allreduce:
        if (opt.allreduce == AllreduceAlgorithm::tree) {
          Phase ph;
          const double total = in_seconds(tree_time(size, at));
          ph.latency = in_seconds(tree_time(0.0, at));
          const double fb = size / C;
          for (int c = 0; c < C; ++c) ph.flows.push_back(FlowSpec{fb, n.tree, cap_for(fb, total, ph.latency)});
          out.push_back(std::move(ph));
        } else if (opt.allreduce == AllreduceAlgorithm::hierarchical && N > 1 && gpn > 1) {
          const double part = (gpn - 1.0) / gpn;
          out.push_back(ring_phase(CollectiveOp::reducescatter, size, intra, n.ring_node, part));
          out.push_back(ring_phase(CollectiveOp::allreduce, size / gpn, across, n.ring_rank, 2.0 * (N - 1) / N));
          out.push_back(ring_phase(CollectiveOp::allgather, size, intra, n.ring_node, part));
        } else {
          Phase ph = ring_phase(CollectiveOp::allreduce, size, at, {n.ring_all.front()}, ring_wire);
          for (std::size_t c = 0; c < ph.flows.size(); ++c) ph.flows[c].path = n.ring_all[c % n.ring_all.size()];
          out.push_back(std::move(ph));
        }
        break;
      case Aggregation::parameter_server:
        if (N > 1) ps_phases(size, at, gpn, static_cast<std::size_t>(N));
        else ps_phases(size, at, 1, static_cast<std::size_t>(G));
        break;
      case Aggregation::hybrid:
        if (gpn > 1) out.push_back(ring_phase(CollectiveOp::allreduce, size, intra, n.ring_node, 2.0 * (gpn - 1) / gpn));
        if (N > 1) ps_phases(size, across, 1, static_cast<std::size_t>(N));
        break;
      case Aggregation::broadcast_reduce: {
        for (auto [op, path] : {std::pair{CollectiveOp::reduce, n.chain_rev}, std::pair{CollectiveOp::broadcast, n.chain}}) {
          Phase ph;
          ph.latency = t(op, 0.0, at);
          const double total = t(op, size, at);
          const double fb = size / C;
          for (int c = 0; c < C; ++c) ph.flows.push_back(FlowSpec{fb, path, cap_for(fb, total, ph.latency)});
          out.push_back(std::move(ph));
        }
        break;
      }
    }
    return out;
  }

  // ---- plans -------------------------------------------------------------------------------------------
  [[nodiscard]] Bytes ddp_cap() const {
    if (opt.bucket_size > Bytes{}) return opt.bucket_size;
    return sc.strategy.overlap == Overlap::bucketed ? sc.strategy.bucket_size : mebibytes(25);
  }
  [[nodiscard]] Bytes ddp_first() const {
    if (opt.first_bucket > Bytes{}) return opt.first_bucket;
    return sc.strategy.overlap == Overlap::bucketed ? sc.strategy.first_bucket : mebibytes(1);
  }
  [[nodiscard]] std::vector<Bucket> strategy_plan() const {
    if (sc.strategy.sharding.stage >= 3) {  // the gather units (eq. S4)
      std::vector<Bucket> plan;
      const double bpe = gradient_bytes_per_element(pred.scenario().compute);
      for (const GatherUnit& u : gather_units(sc.network, sc.strategy.sharding))  // the unit's own parameters (S4b)
        plan.push_back(Bucket{u.first, u.last, bytes(static_cast<double>(u.params) * bpe)});
      return plan;
    }
    return sc.strategy.overlap == Overlap::bucketed ? ddp_buckets(grads, sc.strategy.first_bucket, sc.strategy.bucket_size)
                                                    : per_layer_buckets(grads);
  }

  [[nodiscard]] std::vector<PlanChoice> choices(MergePolicy m, const GpuPlacement& at) const {
    auto ddp = [&](Bytes first, Bytes cap, std::string name) {
      return PlanChoice{std::move(name), false, 0.0, ddp_buckets(grads, first, cap)};
    };
    const Bytes thr = opt.fusion_threshold > Bytes{} ? opt.fusion_threshold
        : sc.strategy.overlap == Overlap::bucketed   ? sc.strategy.bucket_size
                                                     : mebibytes(64);
    auto hvd = [&] {
      return PlanChoice{fmt::format("horovod (threshold {}, cycle {})", thr, opt.cycle_time), true, in_bytes(thr), {}};
    };
    auto mg = [&] {
      std::vector<Bytes> sizes = grads;
      sizes.push_back(std::accumulate(grads.begin(), grads.end(), Bytes{}));
      const AlphaBeta fit = fit_alpha_beta([&](Bytes s) { return seconds(reference_time(in_bytes(s), at)); }, sizes);
      return PlanChoice{fmt::format("mgwfbp (alpha {}, {} per MiB)", fit.alpha, fit.per_byte * 1048576.0), false, 0.0,
                        mgwfbp_buckets(pred.layer_times().backward, grads, fit)};
    };
    switch (m) {
      case MergePolicy::strategy:
        return {PlanChoice{
            sc.strategy.sharding.stage >= 3
                ? (sc.strategy.sharding.wrap == Sharding::Wrap::block
                       ? std::string("strategy: gather units, one per transformer block")
                       : fmt::format("strategy: gather units of {} parameters", sc.strategy.sharding.unit_params))
                : sc.strategy.overlap == Overlap::bucketed
                ? fmt::format("strategy: ddp buckets (first {}, then {})", sc.strategy.first_bucket, sc.strategy.bucket_size)
                : std::string("strategy: one bucket per layer"),
            false, 0.0, strategy_plan()}};
      case MergePolicy::none:
        return {PlanChoice{"none: one bucket per layer", false, 0.0, per_layer_buckets(grads)}};
      case MergePolicy::ddp:
        return {ddp(ddp_first(), ddp_cap(), fmt::format("ddp (first {}, then {})", ddp_first(), ddp_cap()))};
      case MergePolicy::horovod:
        return {hvd()};
      case MergePolicy::mgwfbp:
        return {mg()};
      case MergePolicy::best: {
        std::vector<PlanChoice> v{PlanChoice{"none: one bucket per layer", false, 0.0, per_layer_buckets(grads)},
                                  ddp(ddp_first(), ddp_cap(), fmt::format("ddp (first {}, then {})", ddp_first(), ddp_cap())),
                                  mg(), hvd()};
        for (double mib : {1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0})
          v.push_back(ddp(mebibytes(mib), mebibytes(mib), fmt::format("ddp (every bucket {})", mebibytes(mib))));
        return v;
      }
    }
    return {};
  }

  // ---- one simulation ----------------------------------------------------------------------------------
  SimResult run_one(int gpus, const GpuPlacement& at, const Prediction& closed, const PlanChoice& choice, bool trace) const {
    const Setup s = make_setup(gpus, at, closed, choice, trace);
    const detail::Outcome o = detail::simulate(s);

    SimResult r;
    r.events = o.events;
    r.simulated_seconds = o.span;
    r.merge = choice.name;
    r.buckets = choice.horovod ? o.last_buckets : choice.plan;
    r.utilisation = o.utilisation;
    r.trace_json = o.trace_json;
    const double mean = iteration_statistics(o, r.iterations);
    r.prediction = simulated_prediction(gpus, at, closed, o, mean);
    hiding_case(r.prediction, s, at, r.buckets);
    simulated_bottleneck(r.prediction, o, closed);
    return r;
  }

  // ---- run_one's phases ---------------------------------------------------------------------------------
  /// The simulation's setup: the GPUs and their classes, the sharded step, the strategy, the input and the
  /// communication (with links and paths under contention).
  [[nodiscard]] Setup make_setup(int gpus, const GpuPlacement& at, const Prediction& closed, const PlanChoice& choice,
                                 bool trace) const {
    Setup s;
    s.gpus = gpus;
    s.nodes = at.nodes;
    s.gpn = at.gpus_per_node;
    s.layers = static_cast<int>(grads.size());
    s.iterations = opt.iterations;
    s.warmup = opt.warmup;
    s.classes = classes;
    setup_sharding(s, at, closed, choice);
    setup_gpus(s, gpus);
    setup_strategy_and_input(s, at, closed, choice);
    setup_communication(s, gpus, at, choice, trace);
    return s;
  }

  /// Eq. S5-S9: each GPU updates its 1/n of the parameters; the all-gathers per unit; CPU offload.
  void setup_sharding(Setup& s, const GpuPlacement& at, const Prediction& closed, const PlanChoice& choice) const {
    const Sharding& sh = sc.strategy.sharding;
    if (!sh.sharded()) return;  // eq. S5-S8: each GPU updates its 1/n of the parameters
    const ShardGroups g = shard_groups(sh, at);
    for (auto& c : s.classes) {
      for (double& x : c.u) x /= g.shard;
      c.u_total /= g.shard;
    }
    s.shard_stage = sh.stage;
    s.gather_backward = sh.stage >= 3 && sh.reshard_after_forward;
    s.in_flight = sh.in_flight;
    std::vector<double> gather;  // eq. S5, S12: each unit's all-gather, as the closed form times it (shard_unit_times)
    s.plan_time = plan_times(choice.plan, at, &gather);  // eq. S7: each unit's reduce channel
    for (double t : gather) {
      if (sh.stage >= 3) s.gather_time.push_back(t);
      else s.post_gather += t;  // eq. S8: ZeRO-1/2 gather the updated parameters after the step
    }
    if (sh.stage >= 3) {  // eq. S4b: a block wrap's root is held from its forward to the end of the backward
      const std::vector<GatherUnit> units = gather_units(sc.network, sh);
      const bool same = units.size() == choice.plan.size() &&
          std::equal(units.begin(), units.end(), choice.plan.begin(),
                     [](const GatherUnit& u, const Bucket& b) { return u.first == b.first && u.last == b.last; });
      if (same && std::any_of(units.begin(), units.end(), [](const GatherUnit& u) { return u.held; })) {
        s.gather_time_backward = s.gather_time;
        for (std::size_t i = 0; i < units.size(); ++i)
          if (units[i].held) s.gather_time_backward[i] = 0.0;
      }
    }
    if (sh.offload_optimizer) {  // eq. S9: the GPU steps nothing; the CPU step and the copy back instead
      for (auto& c : s.classes) {
        for (double& x : c.u) x = 0.0;
        c.u_total = 0.0;
      }
      s.offload_pcie = in_bytes_per_second(sc.cluster.h2d_pinned);
      // eq. S9a: each plan unit's gradient shard at the width the reduce leaves (eq. K27), as the closed form copies it
      std::vector<double> params, fp8;
      plan_params(choice.plan, params, fp8);
      for (double p : params)
        s.offload_copy.push_back(in_bytes(offload_gradient_bytes(p, sh, sc.compute.precision, g.shard)) / s.offload_pcie);
      s.offload_update = in_seconds(closed.breakdown.offload_cpu + closed.breakdown.offload_h2d);
    }
  }

  /// Each GPU's class (node_gpu) and speed, the layers' gradient bytes and names.
  void setup_gpus(Setup& s, int gpus) const {
    s.gpu_class.assign(static_cast<std::size_t>(gpus), 0);
    for (std::size_t c = 0; c < opt.node_gpu.size(); ++c) {
      const int node = opt.node_gpu[c].first;
      for (int j = 0; j < s.gpn; ++j) {
        const int g = node * s.gpn + j;
        if (node >= 0 && g < gpus) s.gpu_class[static_cast<std::size_t>(g)] = static_cast<int>(c + 1);
      }
    }
    s.speed.assign(static_cast<std::size_t>(gpus), 1.0);
    for (const auto& [g, f] : opt.speed)
      if (g < gpus) s.speed[static_cast<std::size_t>(g)] = f;
    for (Bytes b : grads) s.grad_bytes.push_back(in_bytes(b));
    s.layer_names = names;
  }

  /// The strategy's overlap, update and merge plan; the reader, decode and host-to-GPU copy.
  void setup_strategy_and_input(Setup& s, const GpuPlacement& at, const Prediction& closed, const PlanChoice& choice) const {
    const Strategy& st = sc.strategy;
    s.overlapped = st.overlap != Overlap::none && st.aggregation != Aggregation::broadcast_reduce;
    s.update = st.update;
    if (!s.overlapped && s.update == UpdatePlacement::per_layer) s.update = UpdatePlacement::after_aggregation;
    s.horovod = choice.horovod;
    s.fusion_threshold = choice.threshold;
    s.cycle_time = in_seconds(opt.cycle_time);
    s.plan = choice.plan;

    s.prefetch = st.io_prefetch;
    s.handover = in_seconds(closed.breakdown.input_handover);  // eq. F2a, as the closed form charges it
    s.depth = opt.prefetch_depth > 0 ? opt.prefetch_depth : st.prefetch_depth;
    s.readers = opt.readers_per_node;
    s.t_read = in_seconds(closed.breakdown.io) / at.gpus_per_node;
    s.decode = in_seconds(opt.decode_per_sample) * sc.batch_per_gpu;
    // GPU decoding (DALI) runs on the GPU's copy stream before the forward pass, like the copy itself
    s.h2d = in_seconds(closed.breakdown.h2d + closed.breakdown.gpu_decode);
    const double D = in_bytes(sc.network.input_bytes_per_sample) * sc.batch_per_gpu;
    s.input_bytes = D > 0 ? D : 1.0;
  }

  /// The communication: a measured total's factor, the reference times, the links under contention; the
  /// jitter, the overhead, the seed and the trace.
  void setup_communication(Setup& s, int gpus, const GpuPlacement& at, const PlanChoice& choice, bool trace) const {
    const Sharding& sh = sc.strategy.sharding;
    const Strategy& st = sc.strategy;
    // a measured communication total at this scale scales the model's times, as in the closed form
    s.comm_factor = 1.0;
    if (sc.profile && gpus > 1 && !sh.sharded()) {  // as in the closed form, not for sharded strategies
      auto it = sc.profile->measured.find(gpus);
      if (it != sc.profile->measured.end() && it->second.comm) {
        double modelled = 0.0;
        const std::vector<Bucket> plan = strategy_plan();
        const std::vector<double> units = plan_times(plan, at);
        for (std::size_t i = 0; i < plan.size(); ++i)
          modelled += units.empty() ? reference_time(in_bytes(plan[i].bytes), at) : units[i];
        if (modelled > 0) s.comm_factor = in_seconds(*it->second.comm) / modelled;
      }
    }
    s.reference_time = [this, at](double size) { return reference_time(size, at); };
    if (!choice.horovod && !sh.sharded())
      s.plan_time = plan_times(choice.plan, at);  // a static plan: each unit as the closed form has it
    s.contention = opt.contention;
    auto net = std::make_shared<Net>();
    if (opt.contention) {
      build_links(s, *net, at, st.parameter_servers > 0 ? st.parameter_servers : at.nodes);
      s.phases = [this, at, net](double size) { return phases(size, at, *net); };
    }
    s.compute_jitter = opt.compute_jitter;
    s.link_jitter = opt.link_jitter;
    s.iteration_cv = sc.strategy.jitter_cv;
    // A plan that simulates Horovod's cycle pays its wait tick by tick; the strategy's iteration_overhead
    // stands for that wait in the closed form (horovod-tensorflow's 2.5 ms, half a cycle), so it is not added twice.
    s.overhead = choice.horovod ? 0.0 : in_seconds(sc.strategy.iteration_overhead);
    s.seed = opt.seed;
    s.trace = trace;
    s.trace_max_gpus = opt.trace_max_gpus;
  }

  /// Iteration statistics over the steady state; returns the mean (seconds).
  [[nodiscard]] double iteration_statistics(const detail::Outcome& o, IterationStats& it) const {
    const std::size_t N = o.iteration_end.size();
    const std::size_t from = std::min(static_cast<std::size_t>(opt.warmup), N - 1);
    std::vector<double> v;
    for (std::size_t k = from; k < N; ++k) v.push_back(o.iteration_end[k] - (k > 0 ? o.iteration_end[k - 1] : 0.0));
    for (double x : v) it.samples.push_back(seconds(x));
    std::vector<double> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    auto pct = [&](double p) {
      const double pos = p * static_cast<double>(sorted.size() - 1);
      const auto lo = static_cast<std::size_t>(std::floor(pos));
      const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
      return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
    };
    const double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
    it.mean = seconds(mean);
    it.p50 = seconds(pct(0.5));
    it.p99 = seconds(pct(0.99));
    it.min = seconds(sorted.front());
    it.max = seconds(sorted.back());
    return mean;
  }

  /// The simulated iteration as a Prediction: throughput, scaling and the breakdown.
  [[nodiscard]] Prediction simulated_prediction(int gpus, const GpuPlacement& at, const Prediction& closed,
                                                const detail::Outcome& o, double mean) const {
    Prediction p;
    p.gpus = gpus;
    p.nodes = at.nodes;
    p.batch_per_gpu = sc.batch_per_gpu;
    p.iteration_time = seconds(mean);
    p.memory = closed.memory;
    p.throughput_samples_per_s = static_cast<double>(gpus) * sc.batch_per_gpu / mean;  // N·M can pass 2^31
    if (closed.throughput_samples_per_s > 0.0) {                                       // tokens/s and MFU scale with samples/s
      const double ratio = p.throughput_samples_per_s / closed.throughput_samples_per_s;
      p.throughput_tokens_per_s = closed.throughput_tokens_per_s * ratio;
      p.mfu = closed.mfu * ratio;
    }
    p.speedup = eq::speedup(gpus, iter_one, p.iteration_time);
    p.efficiency = p.speedup / gpus;
    p.breakdown = Breakdown{closed.breakdown.io, seconds(o.h2d),  seconds(o.forward), seconds(o.backward),
                            seconds(o.update),   seconds(o.comm), seconds(o.exposed)};
    p.breakdown.input_handover = closed.breakdown.input_handover;  // eq. F2a: a constant the simulation charges as is
    if (sc.strategy.sharding.offload_optimizer) {                  // eq. S9: the offload parts as the closed form costs them
      const Breakdown& cb = closed.breakdown;
      p.breakdown.offload_d2h = cb.offload_d2h;
      p.breakdown.offload_d2h_exposed = cb.offload_d2h_exposed;
      p.breakdown.offload_cpu = cb.offload_cpu;
      p.breakdown.offload_h2d = cb.offload_h2d;
      p.breakdown.offload_bytes = cb.offload_bytes;
    }
    return p;
  }

  /// The hiding case and boundary of the buckets as simulated (eq. classify_hiding).
  void hiding_case(Prediction& p, const Setup& s, const GpuPlacement& at, const std::vector<Bucket>& buckets) const {
    const int gpus = p.gpus;
    if (s.overlapped && gpus > 1) {
      const auto& plan = buckets;
      std::vector<Seconds> b(plan.size()), c(plan.size());
      for (std::size_t u = 0; u < plan.size(); ++u) {
        for (int i = plan[u].first; i <= plan[u].last; ++i) b[u] += pred.layer_times().backward[static_cast<std::size_t>(i)];
        const bool planned = s.plan_time.size() == plan.size();  // a static plan (not Horovod's fused buffers)
        c[u] = seconds((planned ? s.plan_time[u] : reference_time(in_bytes(plan[u].bytes), at)) * s.comm_factor);
      }
      const auto h = eq::classify_hiding(b, c);
      p.hiding_case = h.which;
      p.boundary_layer = h.boundary;
    } else if (s.overlapped) {
      p.hiding_case = 1;
    }
  }

  /// The bottleneck: the closed form's, with the share of the simulated iteration it holds.
  void simulated_bottleneck(Prediction& p, const detail::Outcome& o, const Prediction& closed) const {
    const Strategy& st = sc.strategy;
    const int gpus = p.gpus;
    // bottleneck: the closed form's (bottleneck.hpp: the resource whose doubling gains the most, as
    // `explain` re-predicts it), with the share of the simulated iteration it holds
    const double io = in_seconds(closed.breakdown.io);
    p.breakdown.reader_loss = seconds(st.io_prefetch ? o.input_wait : io);
    const Bound bound = bound_by(closed, pred.doubled(gpus));
    p.bottleneck = closed.bottleneck;
    p.bottleneck_gain = closed.bottleneck_gain;
    Prediction on_path = p;  // the framework's fixed overhead sits in the simulated update: not the GPU's
    on_path.breakdown.overhead = closed.breakdown.overhead;
    on_path.breakdown.forward_host = closed.breakdown.forward_host;  // eq. K20: the closed form's floor
    on_path.breakdown.backward_host = closed.breakdown.backward_host;
    on_path.breakdown.update_host = closed.breakdown.update_host;
    p.bottleneck_share = p.iteration_time > Seconds{} ? time_on_path(bound.resource, on_path) / p.iteration_time : 0.0;
    std::string name = closed.bottleneck_resource.str();
    if (opt.contention && p.bottleneck == Bottleneck::communication && !o.busiest_link.empty())
      name += fmt::format("; busiest link simulated: {}, busy {:.0f}%", o.busiest_link, 100.0 * o.busiest_link_fraction);
    p.bottleneck_resource = ResourceName(std::move(name));
  }

  /// Eq. P32: what the iterations of a layout's pipelines gave (seconds), and its busy shares summed.
  struct LayoutRuns {
    std::vector<double> steps, pipes, bubbles, busy;
    int replicas = 1, from = 0;
    std::uint64_t events = 0;
    std::string trace;  // eq. P37: the last iteration's slowest replica, when opt.trace
  };

  /// Eq. P37: a trace of one replica's step (Chrome/Perfetto trace events, as the data-parallel trace): a process
  /// for the replica, per stage a track of its passes and the update, and one of its DP collectives; times from
  /// `offset` (seconds), in µs.
  static std::string layout_trace(const PipelineOrder& order, const PipelineRecord& rec, const PipelineRun& run,
                                  const ParallelStep& st, const PipelineTimes& times, bool events, int replica, double offset,
                                  double link) {
    std::string out = "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"generator\":\"dlscale simulate\"},\"traceEvents\":[\n";
    bool first = true;
    const auto sep = [&] {
      if (!first) out += ",\n";
      first = false;
    };
    const auto slice = [&](int tid, const std::string& name, double t0, double t1) {
      sep();
      out += fmt::format(R"j({{"ph":"X","name":"{}","pid":0,"tid":{},"ts":{:.3f},"dur":{:.3f}}})j", name, tid,
                         (offset + t0) * 1e6, (t1 - t0) * 1e6);
    };
    sep();
    out += fmt::format(R"j({{"ph":"M","name":"process_name","pid":0,"tid":0,"args":{{"name":"replica {} (the slowest)"}}}})j",
                       replica);
    const int p = order.stages;
    for (int s = 0; s < p; ++s) {
      sep();
      out += fmt::format(R"j({{"ph":"M","name":"thread_name","pid":0,"tid":{},"args":{{"name":"stage {} passes"}}}})j", 2 * s, s);
      sep();
      out += fmt::format(R"j({{"ph":"M","name":"thread_name","pid":0,"tid":{},"args":{{"name":"stage {} DP collectives"}}}})j",
                         2 * s + 1, s);
    }
    for (std::size_t i = 0; i < order.ops.size(); ++i) {
      const PipelineOp& op = order.ops[i];
      slice(2 * op.stage, fmt::format("{} mb {} chunk {}", op.backward ? "backward" : "forward", op.micro_batch, op.chunk),
            rec.start[i], rec.end[i]);
    }
    for (const auto& c : rec.collectives) {
      const std::string what = c.gather ? "DP all-gather" : "DP reduction";
      slice(2 * c.stage + 1, c.chunk < 0 ? what : fmt::format("{} chunk {}", what, c.chunk), c.start, c.end);
    }
    const double tied = in_seconds(st.embedding_grads);
    for (int s = 0; s < p; ++s) {
      const auto z = static_cast<std::size_t>(s);
      double t = run.reduced[z];
      if (!events) {  // eq. P20's exposed collectives after the pipeline, as the closed form has them
        slice(2 * s + 1, "DP collectives (eq. P20)", run.makespan, run.makespan + in_seconds(st.dp_comm) * link);
        t = run.makespan + in_seconds(st.dp_comm) * link;
      }
      if (tied > 0.0 && (s == 0 || s == p - 1)) {
        const double from = events ? std::max(run.reduced.front(), run.reduced.back()) : t;
        slice(2 * s + 1, "tied embedding all-reduce", from, from + tied);
        t = from + tied;
      }
      const double u = events ? in_seconds(st.stage_passes[z].update) : in_seconds(st.update);
      slice(2 * s, "update", t, t + u);
      if (events && !times.dp_overlap && times.gather[z] > 0.0)
        slice(2 * s + 1, "DP all-gather", t + u, t + u + times.gather[z] * link);
    }
    out += "\n]}\n";
    return out;
  }

  /// Eq. P32's passes of a layout's step (ParallelStep::stage_passes, its sends) for run_pipeline.
  /// Eq. P37: with `events`, each stage's DP collectives beside its passes (overlapped under the layout's
  /// dp_comm_overlap); FSDP (stage 3) keeps eq. P20's closed form after the pipeline.
  static PipelineTimes pipeline_times(const ParallelStep& st, const ParallelLayout& l, bool events) {
    PipelineTimes times;
    for (const auto& x : st.stage_passes) {
      times.forward.push_back(in_seconds(x.forward));
      times.backward.push_back(in_seconds(x.backward));
      times.forward_window.push_back(in_seconds(x.forward_compute));
      times.backward_window.push_back(in_seconds(x.backward_compute));
      if (!events) continue;
      times.reduce.push_back(in_seconds(x.dp_reduce));
      times.gather.push_back(in_seconds(x.dp_gather));
    }
    times.send = in_seconds(st.send);
    times.sends_overlapped = st.sends_overlapped;
    times.first_share = st.dp_first_share;
    times.dp_overlap = l.dp_comm_overlap;
    return times;
  }

  /// Eq. P37: a replica's step from its run: every stage's reduction, the tied embedding's all-reduce between the
  /// first and the last stage (eq. P33), the stage's update and, not overlapped, its parameters' all-gather after it;
  /// FSDP (stage 3): the pipeline, then eq. P20's exposed collectives and the update.
  static double replica_step(const PipelineRun& run, const PipelineTimes& times, const ParallelStep& st, bool events,
                             double link) {
    const double tied = in_seconds(st.embedding_grads);
    if (!events) return run.makespan + in_seconds(st.dp_comm) * link + tied + in_seconds(st.update);
    const std::size_t p = run.reduced.size();
    const double ends = tied > 0.0 ? std::max(run.reduced.front(), run.reduced.back()) + tied : 0.0;
    double step = 0.0;
    for (std::size_t s = 0; s < p; ++s) {
      const double done = (tied > 0.0 && (s == 0 || s + 1 == p)) ? ends : run.reduced[s];
      const double gather = times.dp_overlap ? 0.0 : times.gather[s] * link;
      step = std::max(step, done + in_seconds(st.stage_passes[s].update) + gather);
    }
    return step;
  }

  /// Eq. P32: a --speed slows the stage of its replica, the slowest of the stage's ranks setting its passes: per
  /// replica d and stage s (d·p + s), the factor on its passes' time.
  [[nodiscard]] std::vector<double> stage_slowdowns(const ParallelLayout& l, int gpus) const {
    const int p = l.pp;
    std::vector<double> slow(static_cast<std::size_t>(l.dp(gpus)) * static_cast<std::size_t>(p), 1.0);
    for (const auto& [g, f] : opt.speed) {
      if (g >= gpus) throw InputError(SourceLocation{}, "speed", fmt::format("GPU {} is not among the {} GPUs", g, gpus));
      const RankCoordinates c = rank_coordinates(l, gpus, g);
      double& x = slow[static_cast<std::size_t>(c.dp) * static_cast<std::size_t>(p) + static_cast<std::size_t>(c.pp)];
      x = std::max(x, 1.0 / f);
    }
    return slow;
  }

  /// Eq. P32: opt.iterations steps, each the slowest replica's pipeline, then the DP collectives and the update.
  [[nodiscard]] LayoutRuns layout_runs(const LayoutStep& ls, int gpus) const {
    const ParallelLayout& l = ls.layout;
    const ParallelStep& st = ls.step;
    const int p = l.pp, ranks = l.tp * l.cp;  // ranks: the GPUs that run each pass of a stage together
    const PipelineOrder order = pipeline_order(l.schedule, p, l.micro_batches, l.vp);
    const bool events = sc.strategy.sharding.stage < 3;  // eq. P37; P20's stage 3 after the pipeline
    const PipelineTimes times = pipeline_times(st, l, events);
    const std::vector<double> slow = stage_slowdowns(l, gpus);
    const double cv = sc.strategy.jitter_cv, sigma = opt.compute_jitter;
    const double overhead = gpus > 1 ? in_seconds(sc.strategy.iteration_overhead) : 0.0;
    LayoutRuns out;
    out.replicas = cv == 0.0 && sigma == 0.0 && opt.speed.empty() ? 1 : l.dp(gpus);  // alike: one replica for all
    out.from = std::min(opt.warmup, opt.iterations - 1);                             // iteration_statistics' first
    out.busy.assign(static_cast<std::size_t>(p), 0.0);
    Rng pass_rng(splitmix64(opt.seed ^ 0x70617373ull)), iter_rng(splitmix64(opt.seed ^ 0x736C6F77ull)),
        link_rng(splitmix64(opt.seed ^ 0x6C696E6Bull));
    std::vector<double> factor(static_cast<std::size_t>(p), 1.0);
    const auto draw = [&](int s) {  // --jitter: a log-normal factor per pass, the largest of the stage's ranks
      const double f = factor[static_cast<std::size_t>(s)];
      if (!(sigma > 0.0)) return f;
      return f * std::exp(sigma * draw_slowest(pass_rng, ranks).z - 0.5 * sigma * sigma);
    };
    PipelineRecord rec;
    double elapsed = 0.0;  // the steps before this one
    for (int it = 0; it < opt.iterations; ++it) {
      const bool tracing = opt.trace && it + 1 == opt.iterations;
      double pipe = 0.0, bubble = 0.0, step = 0.0;
      const double link = opt.link_jitter > 0.0 ? link_rng.jitter(opt.link_jitter) : 1.0;
      for (int d = 0; d < out.replicas; ++d) {
        for (int s = 0; s < p; ++s) {  // the framework's jitter: a factor per GPU and iteration, the stage's slowest
          double f = slow[static_cast<std::size_t>(d) * static_cast<std::size_t>(p) + static_cast<std::size_t>(s)];
          if (cv > 0.0) f *= std::max(0.0, 1.0 + cv * draw_slowest(iter_rng, ranks).z);
          factor[static_cast<std::size_t>(s)] = f;
        }
        const PipelineRun run = run_pipeline(order, times, draw, link, tracing ? &rec : nullptr);
        out.events += order.ops.size();
        const double mine = replica_step(run, times, st, events, link);
        if (tracing && (d == 0 || mine > step)) out.trace = layout_trace(order, rec, run, st, times, events, d, elapsed, link);
        step = std::max(step, mine);
        if (d == 0 || run.makespan > pipe) {
          pipe = run.makespan;
          bubble = run.makespan - *std::max_element(run.busy.begin(), run.busy.end());
        }
        if (it >= out.from && run.makespan > 0.0)
          for (std::size_t s = 0; s < out.busy.size(); ++s) out.busy[s] += run.busy[s] / run.makespan;
      }
      step += overhead;  // eq. P43: the framework's fixed cost per iteration of more than one GPU, as the closed form's
      out.steps.push_back(step);
      elapsed += step;
      out.pipes.push_back(pipe);
      out.bubbles.push_back(bubble);
    }
    return out;
  }

  /// Eq. P32: a model-parallel layout's steps, one pipeline per data-parallel replica (simulator.hpp).
  [[nodiscard]] SimResult run_layout(int gpus) const {
    const Prediction closed = pred.predict(gpus);
    const LayoutStep ls = pred.layout_step(gpus);
    const LayoutRuns runs = layout_runs(ls, gpus);
    SimResult r;
    r.iterations = statistics(runs.steps);
    const auto tail_mean = [&runs](const std::vector<double>& v) {
      return std::accumulate(v.begin() + runs.from, v.end(), 0.0) /
          static_cast<double>(v.size() - static_cast<std::size_t>(runs.from));
    };
    PipelineStats ps;
    ps.stages = ls.layout.pp;
    ps.micro_batches = ls.layout.micro_batches;
    ps.chunks = ls.layout.schedule == PipelineSchedule::interleaved ? std::max(ls.layout.vp, 1) : 1;
    ps.replicas = runs.replicas;
    ps.closed_form = closed.iteration_time;
    ps.pipeline = seconds(tail_mean(runs.pipes));
    ps.bubble = seconds(tail_mean(runs.bubbles));
    ps.update = ls.step.update;
    // eq. P37: what the simulated step has past the pipeline beside the update and the tied embedding's (eq. P33)
    ps.dp_comm = seconds(tail_mean(runs.steps) - tail_mean(runs.pipes)) - ls.step.update - ls.step.embedding_grads -
        closed.breakdown.overhead;
    const double n = static_cast<double>(runs.replicas) * static_cast<double>(opt.iterations - runs.from);
    for (double b : runs.busy) ps.stage_busy.push_back(b / n);
    // the closed form's record with the simulated step: throughput, tokens/s, MFU and speedup scale with 1/step
    Prediction pr = closed;
    const double ratio = in_seconds(closed.iteration_time) / in_seconds(r.iterations.mean);
    pr.iteration_time = r.iterations.mean;
    for (double* x : {&pr.throughput_samples_per_s, &pr.throughput_tokens_per_s, &pr.mfu, &pr.hfu, &pr.speedup, &pr.efficiency})
      *x *= ratio;
    if (pr.breakdown.parallel) pr.breakdown.parallel->bubble = ps.bubble;
    r.prediction = std::move(pr);
    r.merge = "pipeline";
    r.events = runs.events;
    r.trace_json = runs.trace;
    r.simulated_seconds = std::accumulate(runs.steps.begin(), runs.steps.end(), 0.0);
    const int gpus_per_stage = ls.layout.tp * ls.layout.cp * ls.layout.dp(gpus);
    for (std::size_t s = 0; s < ps.stage_busy.size(); ++s) {
      const double b = ps.stage_busy[s];
      r.utilisation.push_back(
          {fmt::format("stage {} compute", s), "compute", gpus_per_stage, b, b, fmt::format("stage {}", s), Bytes{}});
    }
    r.pipeline = std::move(ps);
    return r;
  }

  /// Iteration statistics of `steps` (seconds each) after the warm-up.
  [[nodiscard]] IterationStats statistics(const std::vector<double>& steps) const {
    detail::Outcome o;
    double t = 0.0;
    for (double x : steps) o.iteration_end.push_back(t += x);
    IterationStats it;
    (void)iteration_statistics(o, it);
    return it;
  }

  SimResult run(int gpus) const {
    if (sc.parallel) return run_layout(gpus);
    const GpuPlacement at = pred.place(gpus);
    if (opt.contention && at.nodes > 1 && !sc.strategy.transport.is_default())
      throw InputError(SourceLocation{}, "contention",
                       fmt::format("the flows under contention run at NCCL's rates; framework '{}' crosses "
                                   "nodes over transport '{}' at {} GPUs, which they do not model: leave out "
                                   "--contention",
                                   sc.strategy.name, sc.strategy.transport.name, gpus));
    for (const auto& [node, gpu] : opt.node_gpu) {
      (void)gpu;
      if (node < 0 || node >= sc.cluster.max_nodes)
        throw InputError(SourceLocation{}, "node_gpu",
                         fmt::format("node {} is not in cluster '{}' ({} nodes)", node, sc.cluster.name, sc.cluster.max_nodes));
    }
    const Prediction closed = pred.predict(gpus);
    const auto list = choices(opt.merge, at);
    if (list.size() == 1) return run_one(gpus, at, closed, list.front(), opt.trace);
    std::vector<PlanCandidate> cands;
    std::size_t best = 0;
    Seconds best_t{};
    for (std::size_t i = 0; i < list.size(); ++i) {
      const SimResult r = run_one(gpus, at, closed, list[i], false);
      cands.push_back(PlanCandidate{list[i].name, r.prediction.iteration_time, r.buckets.size()});
      if (i == 0 || r.prediction.iteration_time < best_t) {
        best = i;
        best_t = r.prediction.iteration_time;
      }
    }
    SimResult r = run_one(gpus, at, closed, list[best], opt.trace);
    r.candidates = std::move(cands);
    return r;
  }
};

Simulator::Simulator(Scenario scenario, SimOptions options)
    : impl_(std::make_unique<Impl>(std::move(scenario), std::move(options))) {}
Simulator::~Simulator() = default;
Simulator::Simulator(Simulator&&) noexcept = default;
Simulator& Simulator::operator=(Simulator&&) noexcept = default;

SimResult Simulator::run(int gpus) const { return impl_->run(gpus); }
std::vector<SimResult> Simulator::run(std::span<const int> gpu_counts) const {
  std::vector<SimResult> out;
  for (int g : gpu_counts) out.push_back(run(g));
  return out;
}
const Predictor& Simulator::predictor() const noexcept { return impl_->pred; }
const SimOptions& Simulator::options() const noexcept { return impl_->opt; }

}  // namespace dlscale::sim
