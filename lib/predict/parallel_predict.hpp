// Internal: the Predictor's model-parallel path (issue 37): a Scenario with `parallel` predicted by eq. P13
// (parallel_step) instead of the data-parallel recurrence. predict.cpp and validate.cpp call it through
// one-line hooks; plan and explain reuse parallel_prediction for layouts they make themselves.
#pragma once

#include "dlscale/error.hpp"
#include "dlscale/parallel.hpp"
#include "dlscale/predict.hpp"

namespace dlscale {

/// validate(Scenario)'s part for `parallel`: the layout's checks that do not depend on the GPU count
/// (InputError keys "parallel.tp", "parallel.pp", ...), and what a layout cannot take: a profile (it measured
/// one GPU's whole model) and segment checkpointing (the recompute modes split per block instead).
/// MFU (or HFU): the FLOPs of the samples a second over what the GPUs' peak (FLOP/s each) would do; 0 without a
/// peak. One formula for the data-parallel and the model-parallel predictions.
inline double flops_utilisation(double samples_per_s, double flops_per_sample, int gpus, double peak_flops) noexcept {
  return peak_flops > 0.0 ? samples_per_s * flops_per_sample / (static_cast<double>(gpus) * peak_flops) : 0.0;
}

void validate_parallel(const Scenario& sc);

/// The whole layers' times a layout is split from: the measured layers, else the kernel model's divided by
/// the framework's compute efficiency (before any recompute: eq. P13 adds it on the rank's times).
LayerTimes parallel_whole_times(const Scenario& sc, const LayerTimes& modelled);

/// The layer times a layout's step is split from (eq. P6) and what they are: the measured layers (whole), else
/// the kernel model's on one TP rank's network (tp_rank_network) at the micro-batch, over the framework's compute
/// efficiency; for t = 1 `whole` itself, the rank's network being the whole one.
struct ParallelTimes {
  LayerTimes times;
  LayerTimesOf of = LayerTimesOf::whole_layers;
};
ParallelTimes parallel_layer_times(const Scenario& sc, const ParallelLayout& l, const ComputeOptions& opt,
                                   const LayerTimes& whole);

/// One GPU's step at the micro-batch alone and the optimiser step in it: the baseline of a layout's speedup.
struct OneGpuStep {
  Seconds iteration{}, update{};
};
/// Eq. P22: the speedup of a layout's step over one GPU training the same global batch: (B/b)·(t_1 − u_1) + u_1,
/// B/b micro-batches of b accumulated before one optimiser step, over the layout's step. 0 without a step.
double layout_speedup(OneGpuStep one, std::int64_t global_batch, int micro_batch, Seconds step) noexcept;

/// One prediction of a parallel scenario on `gpus` (eq. P13 into a Prediction): the global batch b·m·dp per
/// step, tokens/s and MFU from it, memory per GPU the worst stage's (eq. P10). `one`: the speedup's baseline (eq.
/// P22; a zero iteration leaves speedup and efficiency at 0). Errors: the layout's InputError with its field
/// prefixed "parallel." ("gpus" stays: the count does not divide).
Prediction parallel_prediction(const Scenario& sc, const LayerTimes& whole, const CollectiveModel& coll, int gpus,
                               const GpuPlacement& at, OneGpuStep one);
/// The same for a layout, compute options and sharding of the caller's (plan's grid): sc's parallel, compute and
/// strategy.sharding are not read; `reserved` in each stage's memory (plan's reserve).
Prediction parallel_prediction(const Scenario& sc, const ParallelLayout& layout, const ComputeOptions& opt,
                               const Sharding& sharding, const ParallelTimes& times, const CollectiveModel& coll, int gpus,
                               const GpuPlacement& at, OneGpuStep one, Bytes reserved = bytes(kDefaultReservedBytes));

/// The layout resolved for a GPU count (m from a global batch, with_global_batch) and its step (eq. P13), with
/// parallel_prediction's errors: what parallel_prediction turns into a Prediction, and the simulator's pipeline
/// (eq. P32) reads stage by stage.
LayoutStep parallel_layout_step(const Scenario& sc, const ParallelLayout& layout, const ComputeOptions& opt,
                                const Sharding& sharding, const ParallelTimes& times, const CollectiveModel& coll, int gpus,
                                Bytes reserved = bytes(kDefaultReservedBytes));

/// eq::expected_max_normal(n), remembered per thread: the integral costs some 0.1 ms and a sweep or a plan asks for
/// the same GPU counts again and again.
double max_normal(int n);

/// Eq. P43: a layout's expected wait for its slowest GPU. Every pass of a stage waits for the slowest of its t·c ranks
/// (TP and CP collectives in every block), every stage for its neighbours (the sends), every replica for the others at
/// the DP reduction: the step runs at the pace of the slowest of the job's N GPUs, each drawing 1 + cv·z per iteration
/// on its passes (the framework's jitter_cv, as the data-parallel path's eq. sync_wait draws it on forward+backward):
/// cv·E[max of N]·(m + (p−1)/v)·(t_mb − sends), the passes of P7's pipeline at the slowest stage's t_mb less its sends.
/// 0 for one GPU or cv 0.
Seconds layout_sync_wait(const ParallelLayout& l, const ParallelStep& s, double cv, int gpus);

/// The prefix "parallel." on an InputError's key from the parallel layer ("gpus" and "network" kept).
[[noreturn]] void rethrow_parallel_field(const InputError& e);

}  // namespace dlscale
