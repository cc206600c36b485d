// Layer times shared by a sweep's groups (sweep_layer_times.hpp): a fingerprint of each network, the
// process-wide memo of layer times already computed, and the per-run tables that key them.
#include "plan/sweep_layer_times.hpp"

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

#include "dlscale/resources.hpp"

namespace dlscale::sweep_detail {
namespace {

/// Every field of a network, byte for byte (names included): two networks with the same fingerprint
/// are the same input to the kernel model. The static_asserts stop a build whose structs gained a
/// field this does not write.
void put(std::string& out, const void* p, std::size_t n) { out.append(static_cast<const char*>(p), n); }
template <class T>
void put(std::string& out, const T& v) {
  put(out, &v, sizeof v);
}
void put(std::string& out, const std::string& v) {
  put(out, v.size());
  out += v;
}
void put(std::string& out, const std::vector<std::int64_t>& v) {
  put(out, v.size());
  put(out, v.data(), v.size() * sizeof(std::int64_t));
}
std::string network_fingerprint(const Network& net) {
  // The sizes of the structs as this fingerprint knows them (libstdc++ on 64-bit targets; elsewhere the
  // check is skipped): a new field changes them and stops the build here.
  constexpr bool known_abi = sizeof(std::string) == 32 && sizeof(void*) == 8;
  static_assert(!known_abi || sizeof(Operator) == 120, "Operator changed: update network_fingerprint");
  static_assert(!known_abi || sizeof(Layer) == 240, "Layer changed: update network_fingerprint");
  static_assert(!known_abi || sizeof(Network) == 152, "Network changed: update network_fingerprint");
  std::string out;
  put(out, net.name);
  put(out, net.description);
  put(out, net.input_kind);
  put(out, net.input_shape);
  put(out, in_bytes(net.input_bytes_per_sample));
  put(out, net.layers.size());
  for (const auto& l : net.layers) {
    put(out, l.name);
    put(out, static_cast<int>(l.kind));
    put(out, l.params);
    put(out, l.macs_per_sample);
    put(out, l.forward_flops_per_sample);
    put(out, l.activation_bytes_per_sample);
    put(out, l.output_shape);
    put(out, l.input_shape);
    for (int v : {l.kernel_h, l.kernel_w, l.stride_h, l.stride_w, l.groups, l.heads, l.kv_heads}) put(out, v);
    put(out, l.hidden);
    put(out, l.head_dim);
    put(out, l.window);
    for (bool b : {l.gated, l.causal, l.probs_dropout, l.rotary, l.rms}) put(out, b);
    for (int v : {l.experts, l.top_k, l.local_experts}) put(out, v);
    put(out, l.expert_load);
    put(out, l.ops.size());
    for (const auto& o : l.ops) {
      put(out, o.name);
      put(out, static_cast<int>(o.kind));
      put(out, o.input_shape);
      put(out, o.output_shape);
      put(out, o.activation_bytes_per_sample);
      for (int v : {o.kernel_h, o.kernel_w, o.stride_h, o.stride_w, o.branches}) put(out, v);
    }
    for (int v : {l.q_lora, l.kv_lora, l.qk_rope, l.v_head_dim}) put(out, v);
  }
  return out;
}

/// Layer times already computed in this process, by network (its fingerprint, kept whole so that two
/// different networks never share a key) and the rest of the key (LayerTimesTables::times). The kernel
/// model is a pure function of these (its parameters are the shipped file's, loaded once per process),
/// so a sweep run again (a second run of a spec, a sweep over variants of one) reuses them. Bounded:
/// cleared past 4,096 entries. Kept for the process, not for one run: repeated runs are the point.
class LayerTimesMemo {
 public:
  /// The id of a network with this fingerprint: the same id for the same fingerprint, for the process.
  int network_id(std::string fingerprint) {
    const std::lock_guard lock(mutex_);
    auto [it, fresh] = networks_.try_emplace(std::move(fingerprint), static_cast<int>(networks_.size()));
    return it->second;
  }
  /// The times kept under `key`, or null.
  std::shared_ptr<const LayerTimes> find(const std::string& key) {
    const std::lock_guard lock(mutex_);
    if (auto it = times_.find(key); it != times_.end()) return it->second;
    return nullptr;
  }
  void keep(const std::string& key, const std::shared_ptr<const LayerTimes>& times) {
    const std::lock_guard lock(mutex_);
    if (times_.size() >= 4096) times_.clear();
    times_.emplace(key, times);
  }

 private:
  std::mutex mutex_;
  std::map<std::string, int> networks_;  // fingerprint → id
  std::map<std::string, std::shared_ptr<const LayerTimes>> times_;
};

LayerTimesMemo& layer_times_memo() {
  static LayerTimesMemo memo;
  return memo;
}

/// The framework's sharding as the kernel model reads it (layer_times_sharding: eqs. K27a-b, S10, S11), appended to
/// `out`. What that leaves at its defaults (the shard group, the units in flight, the CPU offload, and what the stage
/// or the precision makes unread) is not keyed: frameworks that differ only there share their times.
void append_sharding_key(std::string& out, const Sharding& s) {
  // The size of the sharding as this key knows it (libstdc++ on 64-bit targets): a new field stops the build here
  // until it is keyed, or said to change no layer time.
  constexpr bool known_abi = sizeof(std::string) == 32 && sizeof(void*) == 8;
  static_assert(!known_abi || sizeof(Sharding) == 72, "Sharding changed: key what the kernel model reads of it");
  fmt::format_to(std::back_inserter(out), "|{}|{}{}{}{}|{}|{}|{}|{}|{}", s.stage, s.per_parameter, s.reshard_after_forward,
                 s.reduce_fp32, s.fp32_shards, static_cast<int>(s.wrap), s.unit_params, s.gather_ops, s.reduce_ops,
                 s.unit_op_issue.base());
}

/// The rest of what the kernel model reads from a step's options (estimate_layer_times): the optimiser's
/// kernels, compilation, the sharded rate (eq. K16) and the sharding (append_sharding_key), the pooling index and the
/// framework's own update kernels. Two frameworks that differ in any of these time a network differently. fp8's
/// scaling recipe (eq. K15) too: a row-wise step casts again in the backward; and fp8 all-gather (eq. S12). The
/// recompute, checkpointing, accumulation and RMSNorm's saved tensors are the memory's and the Predictor's (eq. R1-R3,
/// M1a), not the layer times': not keyed.
std::string step_key(const ComputeOptions& c) {
  // The sizes of the options as this key and LayerTimesTables::times know them (libstdc++ on 64-bit targets, as
  // network_fingerprint's): a new field changes them and stops the build here, until it is keyed.
  constexpr bool known_abi = sizeof(std::string) == 32 && sizeof(void*) == 8;
  static_assert(!known_abi || sizeof(ComputeOptions) == 248, "ComputeOptions changed: key it in step_key");
  static_assert(!known_abi || sizeof(KernelExecution) == 40, "KernelExecution changed: key it in LayerTimesTables::times");
  static_assert(!known_abi || sizeof(ConvAlgorithmPolicy) == 24, "ConvAlgorithmPolicy changed: key it in policy_key");
  const auto& u = c.update_kernels;
  std::string out = fmt::format("{}|{}{}{}|{}|{}|{}|{}{}", static_cast<int>(c.optimizer_impl.value_or(OptimizerImpl::fused)),
                                c.compiled, c.compiled_loss, c.sharded, c.pool_index_bytes, u ? u->traffic : -1.0,
                                u ? u->per_tensor.base() : -1.0, to_string(c.fp8_scaling),
                                c.fp8_all_gather ? "+ag" : "");  // eq. S12's casts and copies
  append_sharding_key(out, layer_times_sharding(c));
  return out;
}

/// One run's tables for keying layer times: each network's memo id, each cluster's GPU doubled, and
/// the parts of the key that stay the same from group to group, each formatted once.
class LayerTimesTables {
 public:
  explicit LayerTimesTables(const SweepSpec& spec)
      : spec_(spec),
        net_id_(spec.networks.size(), -1),
        doubled_(spec.clusters.size()),
        gpu_keys_(spec.clusters.size()),
        policy_keys_(spec.strategies.size()) {}

  /// The times of group `g` on `gpu` (its cluster's, or that GPU doubled when `twice`).
  std::shared_ptr<const LayerTimes> times(const SweepGroup& g, const GpuSpec& gpu, bool twice) {
    const Strategy& st = spec_.strategies[g.framework];
    ComputeOptions base;
    base.precision = g.precision;
    base.fp8_scaling = g.fp8_scaling;
    base.fp8_all_gather = g.fp8_all_gather;  // eq. S12
    base.optimizer = default_optimizer(spec_.networks[g.model], st);
    const ComputeOptions c = step_compute(base, st, gpu);
    const KernelExecution& x = c.execution;  // eqs. K18-K20
    // step_key appended, not formatted: fmt ignores an argument past the last placeholder, and so once dropped it
    // (frameworks that differ only in what it holds shared their layer times)
    const std::string key =
        fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}{}{}{}{}{}|{}|{}|{}|{}|", network_id(g.model), gpu_key(g.cluster, gpu, twice),
                    g.batch, to_string(g.precision), policy_key(g.framework), to_string(c.attention), c.fp32_gradients, c.lrn,
                    to_string(c.optimizer), x.streaming, x.bn_relu, x.bn_add_relu, x.by_class, x.transformers_gpt2,
                    x.transformers_bert, x.cudnn_attention, x.host_issue.base(), (x.launch_gap ? x.launch_gap->base() : -1.0),
                    x.issued_per_kernel) +
        step_key(c);
    auto& slot = seen_[key];
    if (!slot) slot = memo_or_model(key, g, gpu, c);
    return slot;
  }

  /// Each cluster's GPU doubled, as the bottleneck's doubled scenario has it.
  const GpuSpec& doubled_gpu(std::size_t cluster) {
    if (!doubled_[cluster]) {
      Scenario sc;
      sc.cluster = spec_.clusters[cluster];
      doubled_[cluster] = with_doubled(sc, Resource::gpu).cluster.gpu;
    }
    return *doubled_[cluster];
  }

 private:
  int network_id(std::size_t model) {
    if (net_id_[model] < 0) net_id_[model] = layer_times_memo().network_id(network_fingerprint(spec_.networks[model]));
    return net_id_[model];
  }
  /// Every figure of the GPU that the kernel model reads (the memory's size, the links and the source it does not).
  const std::string& gpu_key(std::size_t cluster, const GpuSpec& gpu, bool twice) {
    // The size of the GPU as this key knows it (libstdc++ on 64-bit targets): a new field stops the build here.
    constexpr bool known_abi = sizeof(std::string) == 32 && sizeof(void*) == 8;
    static_assert(!known_abi || sizeof(GpuSpec) == 192, "GpuSpec changed: key it in gpu_key if the kernel model reads it");
    std::string& k = gpu_keys_[cluster][twice ? 1 : 0];
    if (k.empty())
      k = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", gpu.name, gpu.architecture, gpu.sm_version, gpu.sm_count,
                      gpu.peak_fp32.base(), gpu.peak_fp16.base(), gpu.peak_bf16.base(), gpu.peak_tf32.base(), gpu.peak_fp8.base(),
                      gpu.memory_bandwidth.base(), gpu.boost_clock.base(), gpu.base_clock.base());
    return k;
  }
  /// The framework's convolution algorithms.
  const std::string& policy_key(std::size_t framework) {
    std::string& k = policy_keys_[framework];
    if (k.empty()) {
      const ConvAlgorithmPolicy& pol = spec_.strategies[framework].conv_algorithms;
      k = fmt::format("{}|{}|{}|{}", pol.winograd, pol.fft, pol.workspace_limit.base(), to_string(pol.layout));
    }
    return k;
  }
  /// The memo's times under `key`, or the kernel model's (then kept in the memo).
  std::shared_ptr<const LayerTimes> memo_or_model(const std::string& key, const SweepGroup& g, const GpuSpec& gpu,
                                                  const ComputeOptions& c) {
    auto& memo = layer_times_memo();
    if (auto kept = memo.find(key)) return kept;
    auto made = std::make_shared<const LayerTimes>(estimate_layer_times(spec_.networks[g.model], gpu, g.batch, c));
    memo.keep(key, made);
    return made;
  }

  const SweepSpec& spec_;
  std::vector<int> net_id_;
  std::vector<std::optional<GpuSpec>> doubled_;
  std::vector<std::array<std::string, 2>> gpu_keys_;
  std::vector<std::string> policy_keys_;
  std::map<std::string, std::shared_ptr<const LayerTimes>> seen_;
};

}  // namespace

GroupLayerTimes shared_layer_times(const SweepSpec& spec, const std::vector<std::vector<int>>& counts) {
  GroupLayerTimes out{std::vector<std::shared_ptr<const LayerTimes>>(spec.groups.size()),
                      std::vector<std::shared_ptr<const LayerTimes>>(spec.groups.size())};
  LayerTimesTables tables(spec);
  // Groups that differ only in links or buckets have the same times: their key is not formatted again.
  std::map<std::tuple<std::size_t, std::size_t, std::size_t, int, Precision, Fp8Scaling, bool>, std::size_t> same;
  for (std::size_t i = 0; i < spec.groups.size(); ++i) {
    if (counts[i].empty()) continue;
    const auto& g = spec.groups[i];
    if (auto [it, fresh] =
            same.try_emplace({g.cluster, g.model, g.framework, g.batch, g.precision, g.fp8_scaling, g.fp8_all_gather}, i);
        !fresh) {
      out.gpu[i] = out.gpu[it->second];
      out.doubled_gpu[i] = out.doubled_gpu[it->second];
      continue;
    }
    out.gpu[i] = tables.times(g, spec.clusters[g.cluster].gpu, false);
    if (!spec.strategies[g.framework].sharding.sharded())
      out.doubled_gpu[i] = tables.times(g, tables.doubled_gpu(g.cluster), true);
  }
  return out;
}

}  // namespace dlscale::sweep_detail
