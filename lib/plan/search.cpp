// dlscale plan: the fastest strategy × shard group × micro-batch × accumulation that fits in memory, and
// why the others lose (include/dlscale/plan.hpp; docs/planning.md, "Choosing a configuration"). Every
// number comes out of Predictor::predict.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>

#include "dlscale/error.hpp"
#include "dlscale/format.hpp"
#include "dlscale/memory.hpp"
#include "dlscale/plan.hpp"
#include "dlscale/sharding.hpp"
#include "plan/plan_json.hpp"
#include "plan/prediction_json.hpp"

namespace dlscale {

std::shared_ptr<const CollectiveModel> make_collective_model(const Cluster& cluster);

namespace {

std::string config_text(const PlanEntry& e) {
  return fmt::format("{}{}, micro-batch {}, accumulate {}{}", e.framework,
                     e.shard_group > 1 ? fmt::format(" (shard group {})", e.shard_group) : std::string(), e.micro_batch,
                     e.accumulate, e.checkpointing ? ", checkpointing" : "");
}

/// Seconds per sample of one part of the iteration.
double per_sample(Seconds t, const PlanEntry& e) {
  return in_seconds(t) / (static_cast<double>(e.micro_batch) * e.accumulate * e.prediction.gpus);
}

}  // namespace

namespace {

/// The strategy's shard groups to try: its own, then all GPUs and one node (each kept once later).
std::vector<Strategy> shard_variants(const Strategy& st) {
  std::vector<Strategy> variants{st};
  if (st.sharding.sharded())
    for (int g : {Sharding::kGroupAll, Sharding::kGroupNode}) {
      Strategy v = st;
      v.sharding.group = g;
      variants.push_back(v);
    }
  return variants;
}

/// The search's state: the shared scenario, the placement, and what it has found so far.
struct PlanSearch {
  Scenario sc;
  int gpus;
  const PlanSpace& space;
  GpuPlacement at;
  PlanResult r;
  std::map<std::string, Bytes> smallest_need;  // per framework: the least memory any configuration needs

  /// Every shard group, micro-batch, accumulation and checkpointing of one strategy.
  void strategy(const Strategy& st) {
    std::set<int> groups_seen;
    std::map<int, std::shared_ptr<const LayerTimes>> layers;  // per micro-batch, shared by groups and accumulations
    for (const Strategy& v : shard_variants(st)) {
      int group = 1;
      if (v.sharding.sharded()) {
        try {
          group = shard_groups(v.sharding, at).shard;
        } catch (const InputError&) {  // shard_groups' "gpus"
          continue;                    // this shard group does not divide the GPUs
        }
      }
      if (!groups_seen.insert(group).second) continue;  // the same group as an earlier variant
      for (int mb : space.micro_batches) {
        auto& lt = layers[mb];
        if (!lt) {
          ComputeOptions c = step_compute(sc.compute, v, sc.cluster.gpu);
          c.accumulate = 1;
          c.fp8_all_gather = fp8_all_gather(v);
          lt = std::make_shared<const LayerTimes>(estimate_layer_times(sc.network, sc.cluster.gpu, mb, c));
        }
        for (int k : space.accumulations)
          for (bool ckpt : space.checkpointing) configuration(v, group, mb, k, ckpt, lt);
      }
    }
  }

  /// Eq. S12: the scenario's fp8 all-gather where the strategy shards the parameters (stage 3); the others gather none.
  [[nodiscard]] bool fp8_all_gather(const Strategy& v) const noexcept {
    return sc.compute.fp8_all_gather && v.sharding.stage >= 3;
  }

  /// One configuration predicted, counted, and ranked if it fits.
  void configuration(const Strategy& v, int group, int mb, int k, bool ckpt, const std::shared_ptr<const LayerTimes>& lt) {
    if (ckpt && checkpoint_segments(sc.network).size() < 2) return;  // nothing to checkpoint
    Scenario one = sc;
    one.strategy = v;
    one.batch_per_gpu = mb;
    one.compute.accumulate = k;
    one.compute.checkpointing = ckpt;
    one.compute.fp8_all_gather = fp8_all_gather(v);
    one.modelled_layers = lt;
    PlanEntry e{v.name, group, mb, k, ckpt, Predictor(std::move(one), Predictor::TimesOnly{}).predict(gpus), std::nullopt};
    ++r.evaluated;
    auto [it, fresh] = smallest_need.try_emplace(v.name, e.prediction.memory.per_gpu);
    if (!fresh) it->second = min(it->second, e.prediction.memory.per_gpu);
    if (!e.prediction.memory.fits) {
      ++r.out_of_memory;
      return;
    }
    if (space.target_tokens && e.prediction.throughput_tokens_per_s > 0.0)
      e.time_to_train = seconds(*space.target_tokens / e.prediction.throughput_tokens_per_s);
    r.ranked.push_back(std::move(e));
  }
};

/// Fastest first; at equal speed, the one that needs less memory.
void rank(std::vector<PlanEntry>& ranked) {
  std::stable_sort(ranked.begin(), ranked.end(), [](const PlanEntry& a, const PlanEntry& b) {
    if (a.prediction.throughput_samples_per_s != b.prediction.throughput_samples_per_s)
      return a.prediction.throughput_samples_per_s > b.prediction.throughput_samples_per_s;
    return a.prediction.memory.per_gpu < b.prediction.memory.per_gpu;
  });
}

/// Why a strategy whose best is `best` loses to the winner: a tie, or how much slower and where (the fields of
/// `loss` and its sentence).
void slower_than(PlanLoss& loss, const PlanEntry& best, const PlanEntry& win) {
  const Breakdown& b = best.prediction.breakdown;
  const Breakdown& w = win.prediction.breakdown;
  struct Part {
    const char* what;
    double loss;  // seconds per sample more than the winner
  };
  const Part parts[] = {{"exposed communication", per_sample(b.comm_exposed, best) - per_sample(w.comm_exposed, win)},
                        {"the optimiser step", per_sample(b.update, best) - per_sample(w.update, win)},
                        {"compute (recomputation or a smaller micro-batch)",
                         per_sample(b.forward + b.backward, best) - per_sample(w.forward + w.backward, win)},
                        {"input and copies", per_sample(b.h2d + b.io, best) - per_sample(w.h2d + w.io, win)}};
  const Part* worst = &parts[0];
  for (const Part& p : parts)
    if (p.loss > worst->loss) worst = &p;
  const double slower = 1.0 - best.prediction.throughput_samples_per_s / win.prediction.throughput_samples_per_s;
  const double more_memory = best.prediction.memory.per_gpu / win.prediction.memory.per_gpu - 1.0;
  loss.best = best;
  loss.slower = slower;
  if (slower < 5e-4) {  // a tie; within 0.5 % of the memory too (ZeRO-3 and FSDP's full shard): one step in this model
    loss.reason = PlanLoss::Reason::tie;
    loss.why =
        fmt::format("at its best ({}) within 0.05 % of the choice's samples/s{}", config_text(best),
                    std::abs(more_memory) < 5e-3 ? std::string(" and 0.5 % of its memory: the same step in this model")
                                                 : fmt::format(", with {} per GPU against the choice's {}",
                                                               best.prediction.memory.per_gpu, win.prediction.memory.per_gpu));
    return;
  }
  loss.reason = PlanLoss::Reason::slower;
  loss.worst_part = worst->what;
  loss.worst_part_per_sample = seconds(std::max(worst->loss, 0.0));
  loss.why = fmt::format("{:.1f} % slower at its best ({}): {} costs {} more per sample", 100.0 * slower, config_text(best),
                         worst->what, loss.worst_part_per_sample);
}

/// Why each other strategy loses: nothing fits, or its best is slower, and by what.
std::vector<PlanLoss> losses(const PlanSearch& s, const Scenario& base) {
  std::vector<PlanLoss> out;
  const auto& ranked = s.r.ranked;
  const PlanEntry* win = ranked.empty() ? nullptr : &ranked.front();
  for (const Strategy& st : s.space.strategies) {
    if (win && st.name == win->framework) continue;
    const auto best = std::find_if(ranked.begin(), ranked.end(), [&](const PlanEntry& e) { return e.framework == st.name; });
    PlanLoss loss;
    loss.framework = st.name;
    if (best == ranked.end()) {
      const auto need = s.smallest_need.find(st.name);
      if (need == s.smallest_need.end()) {
        loss.reason = PlanLoss::Reason::unplaceable;
        loss.why = "no configuration could be placed on these GPUs";
      } else {
        loss.reason = PlanLoss::Reason::out_of_memory;
        loss.least_memory = need->second;
        loss.why = fmt::format("out of memory: every configuration needs at least {} per GPU, the {} holds {}", need->second,
                               base.cluster.gpu.name, base.cluster.gpu.memory_size);
      }
    } else {
      slower_than(loss, *best, *win);
    }
    out.push_back(std::move(loss));
  }
  return out;
}

}  // namespace

PlanResult plan(const Scenario& base, int gpus, const PlanSpace& space) {
  if (space.strategies.empty()) throw InputError(SourceLocation{}, "strategies", "no framework to plan with");
  Scenario sc = base;
  if (!sc.collectives) sc.collectives = make_collective_model(sc.cluster);  // shared by every candidate
  sc.profile.reset();
  sc.measured_layers.reset();
  sc.batch_per_gpu = space.micro_batches.empty() ? 1 : space.micro_batches.front();
  sc.strategy = space.strategies.front();
  Scenario placed = sc;  // eq. S12: the first framework need not shard the parameters
  placed.compute.fp8_all_gather = placed.compute.fp8_all_gather && placed.strategy.sharding.stage >= 3;
  const GpuPlacement at =
      Predictor(std::move(placed), Predictor::TimesOnly{}).place(gpus);  // InputError("gpus") when the cluster cannot hold them
  PlanSearch search{std::move(sc), gpus, space, at, {}, {}};
  for (const Strategy& st : space.strategies) search.strategy(st);
  rank(search.r.ranked);
  search.r.losses = losses(search, base);
  return std::move(search.r);
}

std::string format_plan(const PlanResult& r, const Scenario& base, int gpus, int top) {
  std::string o =
      fmt::format("# dlscale plan: {} on {} GPUs of {} ({}, {}): {} configurations, {} out of memory\n", base.network.name, gpus,
                  base.cluster.name, precision_label(base.compute.precision, base.compute.fp8_scaling),
                  to_string(base.compute.optimizer), r.evaluated, r.out_of_memory);
  if (r.ranked.empty()) {
    o += "no configuration fits the GPU's memory\n";
  } else {
    const bool tokens = r.ranked.front().prediction.throughput_tokens_per_s > 0.0;
    const bool ttt = r.ranked.front().time_to_train.has_value();
    o += fmt::format("{:>4}  {:<32} {:>6} {:>5} {:>4} {:>10} {:>11} {:>11} {:>6} {:>9}{}\n", "rank", "framework (shard group)",
                     "micro", "accum", "ckpt", "iter (s)", "samples/s", tokens ? "tokens/s" : "-", "MFU", "mem/GPU",
                     ttt ? "  time to train" : "");
    const int n = std::min<int>(top, static_cast<int>(r.ranked.size()));
    for (int i = 0; i < n; ++i) {
      const PlanEntry& e = r.ranked[static_cast<std::size_t>(i)];
      const Prediction& p = e.prediction;
      o += fmt::format("{:>4}  {:<32} {:>6} {:>5} {:>4} {:>10.4f} {:>11.1f} {:>11.4g} {:>5.1f}% {:>6.3g} GB{}\n", i + 1,
                       e.framework + (e.shard_group > 1 ? fmt::format(" ({})", e.shard_group) : std::string()), e.micro_batch,
                       e.accumulate, e.checkpointing ? "yes" : "no", in_seconds(p.iteration_time), p.throughput_samples_per_s,
                       p.throughput_tokens_per_s, 100.0 * p.mfu, in_bytes(p.memory.per_gpu) / 1e9,
                       e.time_to_train ? fmt::format("  {:.4g} h", in_seconds(*e.time_to_train) / 3600.0) : std::string());
    }
    const PlanEntry& w = r.ranked.front();
    o += fmt::format("choice: {} — {:.1f} samples/s, {:.3g} GB of the {}'s {} per GPU, communication {} exposed of {}\n",
                     config_text(w), w.prediction.throughput_samples_per_s, in_bytes(w.prediction.memory.per_gpu) / 1e9,
                     base.cluster.gpu.name, base.cluster.gpu.memory_size, w.prediction.breakdown.comm_exposed,
                     w.prediction.breakdown.comm);
  }
  for (const PlanLoss& l : r.losses) o += fmt::format("  {}: {}\n", l.framework, l.why);
  return o;
}

namespace {

const char* reason_name(PlanLoss::Reason r) {
  switch (r) {
    case PlanLoss::Reason::unplaceable:
      return "unplaceable";
    case PlanLoss::Reason::out_of_memory:
      return "out_of_memory";
    case PlanLoss::Reason::tie:
      return "tie";
    case PlanLoss::Reason::slower:
      break;
  }
  return "slower";
}

/// A configuration: its keys, the time to train when asked for, and its prediction (predict's record).
nlohmann::ordered_json entry_json(const PlanEntry& e) {
  nlohmann::ordered_json j;
  j["framework"] = e.framework;
  j["shard_group"] = e.shard_group;
  j["micro_batch"] = e.micro_batch;
  j["accumulate"] = e.accumulate;
  j["checkpointing"] = e.checkpointing;
  j["time_to_train_s"] = e.time_to_train ? nlohmann::ordered_json(in_seconds(*e.time_to_train)) : nlohmann::ordered_json(nullptr);
  j["prediction"] = prediction_json(e.prediction);
  return j;
}

}  // namespace

std::string format_plan_json(const PlanResult& r, const Scenario& base, int gpus, int top) {
  nlohmann::ordered_json j = plan_document("plan");
  j["inputs"] = {{"cluster", base.cluster.name},
                 {"gpu", base.cluster.gpu.name},
                 {"model", base.network.name},
                 {"precision", precision_label(base.compute.precision, base.compute.fp8_scaling)},
                 {"optimizer", to_string(base.compute.optimizer)},
                 {"gpus", gpus}};
  j["evaluated"] = r.evaluated;
  j["out_of_memory"] = r.out_of_memory;
  j["fit"] = r.ranked.size();
  j["gpu_memory_bytes"] = in_bytes(base.cluster.gpu.memory_size);
  auto rows = nlohmann::ordered_json::array();
  const std::size_t n = std::min(r.ranked.size(), static_cast<std::size_t>(std::max(top, 0)));
  for (std::size_t i = 0; i < n; ++i) {
    nlohmann::ordered_json row{{"rank", i + 1}};
    row.update(entry_json(r.ranked[i]));
    rows.push_back(std::move(row));
  }
  j["configurations"] = std::move(rows);  // the first is the choice
  auto losses = nlohmann::ordered_json::array();
  for (const PlanLoss& l : r.losses) {
    nlohmann::ordered_json o{{"framework", l.framework}, {"reason", reason_name(l.reason)}, {"why", l.why}};
    const bool has_best = l.reason == PlanLoss::Reason::tie || l.reason == PlanLoss::Reason::slower;
    o["slower"] = has_best ? nlohmann::ordered_json(l.slower) : nlohmann::ordered_json(nullptr);
    o["worst_part"] =
        l.reason == PlanLoss::Reason::slower ? nlohmann::ordered_json(l.worst_part) : nlohmann::ordered_json(nullptr);
    o["worst_part_s_per_sample"] = l.reason == PlanLoss::Reason::slower
        ? nlohmann::ordered_json(in_seconds(l.worst_part_per_sample))
        : nlohmann::ordered_json(nullptr);
    o["least_memory_per_gpu_bytes"] = l.reason == PlanLoss::Reason::out_of_memory
        ? nlohmann::ordered_json(in_bytes(l.least_memory))
        : nlohmann::ordered_json(nullptr);
    o["best"] = l.best ? entry_json(*l.best) : nlohmann::ordered_json(nullptr);
    losses.push_back(std::move(o));
  }
  j["losses"] = std::move(losses);
  return dump_document(j);
}

}  // namespace dlscale
