// The simulator's pipeline (eq. P32; pipeline.hpp): the schedules' op orders and one pass that times them.
#include "dlscale/sim/pipeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>

#include "dlscale/error.hpp"

namespace dlscale::sim {
namespace {

struct Pass {
  bool backward;
  int chunk, micro_batch;
};

/// The passes stage `s` runs, in its schedule's order (pipeline.hpp).
std::vector<Pass> stage_passes(PipelineSchedule schedule, int p, int m, int v, int s) {
  std::vector<Pass> out;
  out.reserve(static_cast<std::size_t>(2 * m * v));
  if (schedule == PipelineSchedule::gpipe) {
    for (int j = 0; j < m; ++j) out.push_back({false, 0, j});
    for (int j = 0; j < m; ++j) out.push_back({true, 0, j});
    return out;
  }
  const int n = m * v;
  // forward k and backward k of the n (Megatron's get_model_chunk_id and the micro-batch of its group of p)
  auto fwd = [&](int k) { return Pass{false, (k % (p * v)) / p, (k / (p * v)) * p + k % p}; };
  auto bwd = [&](int k) {
    Pass x = fwd(k);
    return Pass{true, v - 1 - x.chunk, x.micro_batch};
  };
  int warmup = std::min(p - s - 1, m);
  if (schedule == PipelineSchedule::interleaved) warmup = m == p ? n : std::min(n, 2 * (p - s - 1) + (v - 1) * p);
  for (int k = 0; k < warmup; ++k) out.push_back(fwd(k));
  for (int k = 0; k < n - warmup; ++k) {
    out.push_back(fwd(warmup + k));
    out.push_back(bwd(k));
  }
  for (int k = n - warmup; k < n; ++k) out.push_back(bwd(k));
  return out;
}

}  // namespace

PipelineOrder pipeline_order(PipelineSchedule schedule, int p, int m, int v) {
  p = std::max(p, 1);
  m = std::max(m, 1);
  v = schedule == PipelineSchedule::interleaved ? std::max(v, 1) : 1;
  if (schedule == PipelineSchedule::interleaved && m % p != 0)
    throw InputError(SourceLocation{}, "parallel.micro_batches",
                     fmt::format("the interleaved schedule needs micro-batches in groups of pp {}, got {}", p, m));
  PipelineOrder o{p, m, v, {}};
  std::vector<std::vector<Pass>> lists;
  for (int s = 0; s < p; ++s) lists.push_back(stage_passes(schedule, p, m, v, s));
  // where each pass landed in `ops`: key ((s·2 + backward)·v + chunk)·m + micro_batch
  auto key = [&](int s, bool b, int c, int j) {
    return ((static_cast<std::size_t>(s) * 2 + (b ? 1 : 0)) * static_cast<std::size_t>(v) + static_cast<std::size_t>(c)) *
        static_cast<std::size_t>(m) +
        static_cast<std::size_t>(j);
  };
  std::vector<int> at(static_cast<std::size_t>(2 * p * v * m), -1);
  std::vector<std::size_t> next(static_cast<std::size_t>(p), 0);
  std::vector<int> last(static_cast<std::size_t>(p), -1);
  o.ops.reserve(at.size());
  // round robin over the stages, each as far as its next pass's input is there: a topological order
  for (std::size_t placed = 0; placed < at.size();) {
    const std::size_t before = placed;
    for (int s = 0; s < p; ++s) {
      auto& i = next[static_cast<std::size_t>(s)];
      const auto& list = lists[static_cast<std::size_t>(s)];
      for (; i < list.size(); ++i) {
        const Pass x = list[i];
        int dep = -1;
        if (!x.backward) {
          if (s > 0) dep = at[key(s - 1, false, x.chunk, x.micro_batch)];
          else if (x.chunk > 0) dep = at[key(p - 1, false, x.chunk - 1, x.micro_batch)];
          const bool needs = s > 0 || x.chunk > 0;
          if (needs && dep < 0) break;
        } else {
          if (s < p - 1) dep = at[key(s + 1, true, x.chunk, x.micro_batch)];
          else if (x.chunk < v - 1) dep = at[key(0, true, x.chunk + 1, x.micro_batch)];
          else dep = at[key(s, false, x.chunk, x.micro_batch)];
          if (dep < 0) break;
        }
        const int index = static_cast<int>(o.ops.size());
        o.ops.push_back({s, x.backward, x.chunk, x.micro_batch, last[static_cast<std::size_t>(s)], dep});
        last[static_cast<std::size_t>(s)] = index;
        at[key(s, x.backward, x.chunk, x.micro_batch)] = index;
        ++placed;
      }
    }
    if (placed == before)  // a schedule that waits on itself: a bug in the orders above, not an input
      throw Error(fmt::format("pipeline schedule {} (p {}, m {}, v {}) deadlocks", to_string(schedule), p, m, v));
  }
  return o;
}

PipelineRun run_pipeline(const PipelineOrder& order, const PipelineTimes& t, const std::function<double(int)>& factor,
                         double link, PipelineRecord* record) {
  const auto p = static_cast<std::size_t>(order.stages);
  const double v = static_cast<double>(order.chunks);
  PipelineRun r;
  r.busy.assign(p, 0.0);
  std::vector<double> end(order.ops.size(), 0.0);
  std::vector<double> free(p, 0.0);  // blocking: the stage's last end; overlapped: also its last send's end
  const double blocking = t.sends_overlapped ? 0.0 : t.send, wire = t.sends_overlapped ? t.send : 0.0;
  // eq. P37: each stage's DP stream, where its queued reductions end (and, overlapped, its chunks' gathers)
  const bool dp = !t.reduce.empty(), overlap = dp && t.dp_overlap;
  const bool gathers = overlap && !t.gather.empty();
  r.reduced.assign(p, 0.0);
  const double phi = t.first_share, last_mb = static_cast<double>(order.micro_batches - 1);
  const auto window = [](const std::vector<double>& w, const std::vector<double>& pass, std::size_t s) {
    return w.empty() ? pass[s] : w[s];
  };
  if (record) {
    record->start.assign(order.ops.size(), 0.0);
    record->end.assign(order.ops.size(), 0.0);
    record->collectives.clear();
  }
  for (std::size_t i = 0; i < order.ops.size(); ++i) {
    const PipelineOp& op = order.ops[i];
    const auto s = static_cast<std::size_t>(op.stage);
    const double pass = (op.backward ? t.backward[s] : t.forward[s]) / v;
    const double k = factor ? factor(op.stage) : 1.0;
    const double d = pass * k + blocking;
    double start = op.before >= 0 ? end[static_cast<std::size_t>(op.before)] : 0.0;
    if (op.after >= 0) {
      const auto a = static_cast<std::size_t>(op.after);
      start = std::max(start, end[a] + (order.ops[a].stage == op.stage ? 0.0 : wire));
    }
    double floor = 0.0;  // eq. P37: the end the chunk's gather allows its first forward
    if (gathers && !op.backward && op.micro_batch == 0) {
      const double c = t.gather[s] * link / v, from = c * static_cast<double>(op.chunk);  // queued from the step's start
      start = std::max(start, from + phi * c);
      floor = from + c + (pass - window(t.forward_window, t.forward, s) / v) * k + blocking;
      if (record) record->collectives.push_back({op.stage, op.chunk, true, from, from + c});
    }
    double e = std::max(start + d, floor);
    // eq. P25: the previous pass's send hides behind this one; the stage goes on once both are done
    if (op.before >= 0) e = std::max(e, end[static_cast<std::size_t>(op.before)] + wire);
    end[i] = e;
    free[s] = e + wire;
    if (record) {
      record->start[i] = start;
      record->end[i] = e;
    }
    r.busy[s] += d;
    // eq. P37: the chunk's last backward: its reduction during it (overlapped), queued behind the chunk before it
    if (overlap && op.backward && static_cast<double>(op.micro_batch) == last_mb) {
      const double c = t.reduce[s] * link / v, tau = window(t.backward_window, t.backward, s) / v * k;
      const double from = std::max(r.reduced[s], free[s] - tau);
      r.reduced[s] = std::max(from + c, free[s] + phi * c);
      if (record) record->collectives.push_back({op.stage, op.chunk, false, from, r.reduced[s]});
    }
  }
  for (std::size_t s = 0; s < p; ++s) {
    r.makespan = std::max(r.makespan, free[s]);
    if (dp && !overlap) {  // after the stage's whole backward
      r.reduced[s] = free[s] + t.reduce[s] * link;
      if (record) record->collectives.push_back({static_cast<int>(s), -1, false, free[s], r.reduced[s]});
    }
    if (!dp) r.reduced[s] = free[s];
  }
  return r;
}

}  // namespace dlscale::sim
