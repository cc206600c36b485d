// The simulator's pipeline (issue 37; docs/model.md, eq. P32): one data-parallel replica of a model-parallel
// layout as events, a stage's forward and backward passes of every micro-batch (and model chunk) in the order its
// schedule runs them, each after the pass it depends on. With every stage's passes as eq. P13 times them, no
// jitter and no straggler, its step is the closed form's (m + (p−1)/v)·t_mb wherever the stages are alike; the
// closed form is its reference.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "dlscale/parallel_layout.hpp"
#include "dlscale/units.hpp"

namespace dlscale::sim {

/// One pass of one micro-batch through one model chunk on one stage.
struct PipelineOp {
  int stage = 0;
  bool backward = false;
  int chunk = 0;        // the model chunk on its stage (0 ≤ chunk < v; 0 but interleaved)
  int micro_batch = 0;  // 0 ≤ micro_batch < m
  int before = -1;      // the op its stage ran just before it (index into PipelineOrder::ops), -1 for its first
  int after = -1;       // the op of another stage (or its own forward) whose output it takes, -1 for none
};

/// Eq. P32: every op of a schedule in an order that puts each after both ops it waits for (before, after), so one
/// pass over it times them all. GPipe: every forward, then every backward. 1F1B (Megatron's
/// forward_backward_pipelining_without_interleaving): stage s runs min(p−s−1, m) forwards, then a forward and a
/// backward by turns, then the backwards left. Interleaved (Megatron's forward_backward_pipelining_with_interleaving,
/// m a multiple of p): forward k of the m·v runs chunk ⌊(k mod p·v)/p⌋ of micro-batch ⌊k/(p·v)⌋·p + k mod p, the
/// backwards the chunks in reverse; stage s warms up with min(m·v, 2(p−s−1) + (v−1)·p) forwards (all of them when
/// m = p), then by turns, then the rest. A forward waits for the same chunk's forward on the stage before (chunk
/// c > 0 on stage 0: chunk c−1's on the last stage), a backward for the next stage's (chunk c < v−1 on the last
/// stage: chunk c+1's on stage 0; the last chunk on the last stage: its own forward).
struct PipelineOrder {
  int stages = 1, micro_batches = 1, chunks = 1;
  std::vector<PipelineOp> ops;
};
/// InputError("parallel.micro_batches") for an interleaved m not a multiple of p (parallel_step refuses it first).
PipelineOrder pipeline_order(PipelineSchedule schedule, int p, int m, int v);

/// What one replica's ops take: per stage, one chunk's forward and backward of one micro-batch (the stage's passes
/// over v), and the send each pass ends with (eq. P4: every pass, as eq. P13 charges 2·v of them a micro-batch).
/// Blocking sends (eq. P13) take the stage's time after its pass and the receiver's with it; overlapped ones (eq.
/// P25) leave the stage free: the receiver waits for the pass plus the send, and the stage's next pass ends no
/// sooner than the send has (the last pass's send after it, whole).
///
/// Eq. P37, the data-parallel collectives as events beside the pipeline (each stage on its own DP group, its chunks'
/// collectives queued on one stream; empty `reduce`: none). A chunk's reduction (reduce/v) with `dp_overlap` (eq.
/// P19, Megatron's overlap_grad_reduce) starts once the chunk's last backward has `backward_window`/v of compute left
/// (its buckets fill during it) and ends no sooner than φ·reduce/v after that backward (its first block's gradients,
/// complete at the end): done = max(max(queue, E − τ) + c, E + φ·c), E the stage's time free after the pass (its send
/// in it, as P13 and P25 charge every pass one). The parameters' all-gather (gather/v a chunk, queued from the step's
/// start, chunk 0 first) holds the chunk's first forward: it starts φ·gather/v into its chunk's gather and ends no
/// sooner than the gather plus the pass's part outside `forward_window` (the window hides the gather, P19's t_w).
/// Without `dp_overlap` the stage's whole reduction follows its last pass, and the gathers are the caller's (after the
/// update). Windows are scaled with their pass; empty windows: the passes'.
struct PipelineTimes {
  std::vector<double> forward, backward;  // seconds, per stage
  double send = 0.0;
  bool sends_overlapped = false;
  std::vector<double> forward_window, backward_window;  // eq. P37: the passes' compute, per stage
  std::vector<double> reduce, gather;                   // eq. P37: each stage's DP collectives, whole (seconds)
  double first_share = 1.0;                             // φ
  bool dp_overlap = false;
};

struct PipelineRun {
  double makespan = 0.0;        // the last op's end (with its send, overlapped), from the first forward's start
  std::vector<double> busy;     // per stage: its ops' own durations (their sends in them, blocking), the stage's t_mb·m
  std::vector<double> reduced;  // eq. P37, per stage: when its DP reduction is done (its last end without one)
};

/// What one run did, for a trace: every op's start and end (index of PipelineOrder::ops) and each DP collective.
struct PipelineRecord {
  struct Collective {
    int stage = 0, chunk = 0;  // chunk −1: the stage's whole reduction (not overlapped)
    bool gather = false;       // the parameters' all-gather, else the gradients' reduction
    double start = 0.0, end = 0.0;
  };
  std::vector<double> start, end;
  std::vector<Collective> collectives;
};

/// Eq. P32: times one replica's ops in `order` with `times`, each stage's pass durations scaled by
/// `factor(stage)` (called once an op, in the order's order: the jitter and straggler draws); null: 1. Eq. P37: the
/// DP collectives beside them, their times scaled by `link` (the link jitter's draw). `record`: filled when given.
PipelineRun run_pipeline(const PipelineOrder& order, const PipelineTimes& times,
                         const std::function<double(int stage)>& factor = nullptr, double link = 1.0,
                         PipelineRecord* record = nullptr);

}  // namespace dlscale::sim
