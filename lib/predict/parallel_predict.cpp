// The Predictor's model-parallel path (issue 37; docs/model.md, "Model parallelism", eq. P13): what a
// Scenario with `parallel` predicts, through the parallel layer's step, in the Prediction record.
#include "predict/parallel_predict.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "dlscale/equations.hpp"
#include "dlscale/error.hpp"
#include "dlscale/memory.hpp"

namespace dlscale {

void rethrow_parallel_field(const InputError& e) {
  const std::string& k = e.key();
  // the scenario's own fields (the GPU count, the network, the strategy's: eq. P40's shard group) keep their names
  if (k.empty() || k == "gpus" || k == "network" || k.rfind("parallel.", 0) == 0 || k.rfind("strategy.", 0) == 0) throw e;
  throw InputError(e.where(), "parallel." + k, e.message());
}

bool data_parallel_layout(const ParallelLayout& l) noexcept {
  return l.tp == 1 && l.pp == 1 && l.cp == 1 && l.ep == 1 && l.global_batch_target == 0;
}

Scenario data_parallel_form(Scenario sc) {
  if (!sc.parallel || !data_parallel_layout(*sc.parallel)) return sc;
  // eq. P39: each GPU a replica of the whole model running m micro-batches of b before one gradient exchange and
  // update: data parallelism with m-fold accumulation (under an accumulation already given, m times it)
  const ParallelLayout& l = *sc.parallel;
  sc.batch_per_gpu = l.micro_batch;
  sc.compute.accumulate *= std::max(l.micro_batches, 1);
  sc.parallel.reset();
  return sc;
}

void validate_parallel(const Scenario& sc) {
  if (!sc.parallel) return;
  if (sc.profile)
    throw InputError(SourceLocation{}, "profile",
                     "a profile measures one GPU's whole model; a parallel layout splits the model's (or measured) "
                     "layer times");
  // eq. P5/P12: a layout's data-parallel gradients go through NCCL collectives over the dp·cp group; a parameter
  // server (MXNet), TensorFlow's hybrid or DataParallel's reduce to GPU 0 has no model of it under a layout
  if (sc.strategy.aggregation != Aggregation::allreduce)
    throw InputError(SourceLocation{}, "framework",
                     fmt::format("'{}' aggregates by {}; a model-parallel layout's gradients are all-reduced over its "
                                 "data-parallel group (eq. P5), which this framework does not do",
                                 sc.strategy.name, to_string(sc.strategy.aggregation)));
  // eq. P39: a layout that is data parallelism is predicted by the data-parallel path, which models offload (S9); the
  // layout's step (P13) has no CPU step, no PCIe copies and no host memory, so any other layout refuses it
  if (sc.strategy.sharding.offload_optimizer && !data_parallel_layout(*sc.parallel))
    throw InputError(SourceLocation{}, "framework",
                     fmt::format("'{}' offloads its optimiser to the CPU (eq. S9), which a model-parallel layout's step "
                                 "(eq. P13) does not model: only a layout of tp, pp, cp and ep 1 (data parallelism) takes it",
                                 sc.strategy.name));
  if (sc.compute.checkpointing)
    throw InputError(SourceLocation{}, "compute.checkpointing",
                     "a parallel layout recomputes per block (full, selective), not in checkpoint segments");
  ParallelLayout l = *sc.parallel;
  // eq. P31: Megatron-Core's recompute_method and recompute_num_layers belong to full recompute (it refuses
  // recompute_num_layers beside selective)
  // eq. P35: Megatron-Core's distribute_saved_activations acts on full recompute's checkpoints (recalled)
  if (l.distribute_saved_activations && sc.compute.recompute != Recompute::full)
    throw InputError(SourceLocation{}, "parallel.distribute_saved_activations",
                     fmt::format("distribute_saved_activations needs full recompute, not {}", to_string(sc.compute.recompute)));
  if ((l.recompute_method != RecomputeMethod::uniform || l.recompute_num_layers != 1) && sc.compute.recompute != Recompute::full)
    throw InputError(SourceLocation{},
                     l.recompute_num_layers != 1 ? "parallel.recompute_num_layers" : "parallel.recompute_method",
                     fmt::format("recompute_method {} with recompute_num_layers {} needs full recompute, not {}",
                                 to_string(l.recompute_method), l.recompute_num_layers, to_string(sc.compute.recompute)));
  // m from a global batch is the GPU count's (with_global_batch): checked by each prediction
  if (l.global_batch_target > 0) l.micro_batches = std::max(l.pp, 1);
  try {
    // the GPU count is a prediction's: here every check but whether tp·pp·cp divides it (and ep the dp·cp ranks)
    validate(l, std::max(l.model_parallel(), 1) * std::max(l.ep, 1), transformer_shape(sc.network));
  } catch (const InputError& e) {
    rethrow_parallel_field(e);
  }
}

LayerTimes parallel_whole_times(const Scenario& sc, const LayerTimes& modelled) {
  if (sc.measured_layers) return *sc.measured_layers;
  LayerTimes t = modelled;
  const double eff = sc.strategy.compute_efficiency;
  for (auto* v : {&t.forward, &t.backward, &t.update})
    for (auto& x : *v) x = x / eff;
  return t;
}

ParallelTimes parallel_layer_times(const Scenario& sc, const ParallelLayout& l, const ComputeOptions& opt,
                                   const LayerTimes& whole) {
  if (sc.measured_layers) return {whole, LayerTimesOf::whole_layers};
  if (l.tp <= 1 && l.cp <= 1 && l.ep <= 1) return {whole, LayerTimesOf::tp_rank};
  // eq. P6: the kernel model on one rank's layers (a/t heads, the MLP's and the vocabulary's t-th, s/c tokens)
  LayerTimes t = estimate_layer_times(tp_rank_network(sc.network, l), sc.cluster.gpu, l.micro_batch, opt);
  const double eff = sc.strategy.compute_efficiency;
  for (auto* v : {&t.forward, &t.backward, &t.update})
    for (auto& x : *v) x = x / eff;
  return {std::move(t), LayerTimesOf::tp_rank};
}

namespace {
/// The FLOPs a sample recomputes (what HFU counts beyond MFU): under full recompute the forward FLOPs of the blocks
/// eq. P31 reruns, otherwise recompute_flops_per_sample's.
double layout_recompute_flops(const Network& net, const ParallelLayout& l, const ComputeOptions& opt) {
  if (opt.recompute != Recompute::full) return recompute_flops_per_sample(net, opt);
  const std::vector<int> block = transformer_blocks(net);
  const std::vector<BlockRecompute> full = full_recompute_blocks(net, l, opt.recompute_blocks);
  double f = 0.0;
  for (std::size_t i = 0; i < net.layers.size(); ++i)
    if (block[i] >= 0 && full[static_cast<std::size_t>(block[i])].again) f += net.layers[i].forward_flops_per_sample;
  return f;
}
}  // namespace

double max_normal(int n) {
  thread_local std::unordered_map<int, double> memo;
  auto [it, fresh] = memo.try_emplace(n, 0.0);
  if (fresh) it->second = eq::expected_max_normal(n);
  return it->second;
}

Seconds layout_sync_wait(const ParallelLayout& l, const ParallelStep& s, double cv, int gpus) {
  if (!(cv > 0.0) || gpus <= 1) return {};
  // eq. P43: the jittered passes are P7's (m + (p−1)/v) micro-batches of the slowest stage, sends aside (the
  // simulator scales the passes, not the sends); N = every GPU of the job (docs/model.md, P43, on which ranks wait)
  const Seconds passes = pipeline_time(l.schedule, l.pp, l.micro_batches, l.vp, s.per_microbatch - s.p2p);
  return eq::sync_wait(max_normal(gpus), cv, passes);
}

double layout_speedup(OneGpuStep one, std::int64_t global_batch, int micro_batch, Seconds step) noexcept {
  if (!(step > Seconds{}) || micro_batch < 1) return 0.0;
  // eq. P22: one GPU trains the same global batch, B/b micro-batches accumulated and one optimiser step
  const double micro_batches = static_cast<double>(global_batch) / static_cast<double>(micro_batch);
  const Seconds alone = (one.iteration - one.update) * micro_batches + one.update;
  return in_seconds(alone) / in_seconds(step);
}

Prediction parallel_prediction(const Scenario& sc, const LayerTimes& whole, const CollectiveModel& coll, int gpus,
                               const GpuPlacement& at, OneGpuStep one) {
  return parallel_prediction(sc, *sc.parallel, sc.compute, sc.strategy.sharding,
                             parallel_layer_times(sc, *sc.parallel, sc.compute, whole), coll, gpus, at, one);
}

LayoutStep parallel_layout_step(const Scenario& sc, const ParallelLayout& layout, const ComputeOptions& opt,
                                const Sharding& sharding, const ParallelTimes& times, const CollectiveModel& coll, int gpus,
                                Bytes reserved) {
  ParallelLayout l;
  ParallelStep s;
  try {
    if (gpus % std::max(layout.model_parallel(), 1) == 0) l = with_global_batch(layout, gpus);
    else l = layout;  // parallel_step says the count does not divide
    s = parallel_step(sc.network, times.times, sc.cluster, coll, l, gpus, opt, sharding, times.of, reserved);
  } catch (const InputError& e) {
    if (layout.global_batch_target > 0 && e.key() == "micro_batches")  // m came from the global batch
      throw InputError(e.where(), "parallel.global_batch",
                       fmt::format("global batch {} gives {} micro-batches on {} GPUs: {}", layout.global_batch_target,
                                   l.micro_batches, gpus, e.message()));
    rethrow_parallel_field(e);
  }
  return {l, std::move(s)};
}

Prediction parallel_prediction(const Scenario& sc, const ParallelLayout& layout, const ComputeOptions& opt,
                               const Sharding& sharding, const ParallelTimes& times, const CollectiveModel& coll, int gpus,
                               const GpuPlacement& at, OneGpuStep one, Bytes reserved) {
  const auto [l, s] = parallel_layout_step(sc, layout, opt, sharding, times, coll, gpus, reserved);
  const double mb = static_cast<double>(l.micro_batches);
  // eq. P43: the data-parallel path's synchronisation losses on the layout's step, the wait for the slowest GPU and
  // the framework's fixed cost per iteration of more than one GPU
  const Seconds sync = layout_sync_wait(l, s, sc.strategy.jitter_cv, gpus);
  const Seconds overhead = gpus > 1 ? sc.strategy.iteration_overhead : Seconds{};
  const Seconds step = s.step + sync + overhead;
  Prediction p;
  p.gpus = gpus;
  p.nodes = at.nodes;
  p.batch_per_gpu = l.micro_batch;
  p.iteration_time = step;
  const double samples = static_cast<double>(s.global_batch) / in_seconds(step);
  p.throughput_samples_per_s = samples;
  if (sc.network.input_kind == "tokens") p.throughput_tokens_per_s = s.tokens_per_s * (s.step / step);
  const double peak = in_teraflops_per_second(sc.cluster.gpu.mfu_peak(opt.precision)) * 1e12;
  const double flops = 3.0 * sc.network.total_forward_flops_per_sample();
  p.mfu = flops_utilisation(samples, flops, gpus, peak);
  p.hfu = flops_utilisation(samples, flops + layout_recompute_flops(sc.network, l, opt), gpus, peak);
  if (one.iteration > Seconds{}) {
    p.speedup = layout_speedup(one, s.global_batch, l.micro_batch, step);
    p.efficiency = p.speedup / static_cast<double>(gpus);
  } else {
    p.speedup = p.efficiency = 0.0;
  }
  Breakdown& b = p.breakdown;
  b.forward = s.forward * mb;
  b.backward = s.backward * mb;
  b.update = s.update;
  b.sync_wait = sync;
  b.overhead = overhead;
  Breakdown::Parallel par;
  par.tp_comm = s.tp_exposed * mb;
  par.cp_comm = s.cp_exposed * mb;
  par.ep_comm = s.ep_comm * mb;
  par.pp_p2p = s.p2p * mb;
  par.bubble = s.bubble;
  par.dp_comm = s.dp_comm;
  par.embedding_grads = s.embedding_grads;
  par.slowest_stage = s.slowest_stage;
  b.comm = par.tp_comm + par.cp_comm + par.ep_comm + par.pp_p2p + par.dp_comm + par.embedding_grads;
  b.comm_exposed = b.comm;
  Bytes worst{};
  for (const auto& m : s.memory) {
    par.stage_memory.push_back(m.total());
    worst = max(worst, m.total());
  }
  // the bottleneck: named by the Predictor (Predictor::predict), as for data parallelism, from the doubled layouts
  b.parallel = std::move(par);
  p.memory.per_gpu = worst;
  p.memory.capacity = sc.cluster.gpu.memory_size;
  p.memory.fits = !(p.memory.capacity > Bytes{}) || worst <= p.memory.capacity;
  return p;
}

}  // namespace dlscale
