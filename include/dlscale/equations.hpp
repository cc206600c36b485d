// The S-SGD performance model of Shi & Chu (2018), equations 1-12, as small named functions, and context
// parallelism's ring attention step by step (docs/model.md, "Model parallelism", P15).
// shared/docs/model.md is the specification; every function cites its equation.
//
// Layer vectors are indexed from 0: element i-1 holds layer i, so element 0 is layer 1 (input side)
// and element L-1 is layer L (output side). Backward runs from layer L down to layer 1.
//
// The paper's forms (eq. 6 and 7, "as printed") and the exact max-plus recurrence sit side by side:
// the paper's to reproduce the paper, the exact one for prediction.
#pragma once

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>

#include "dlscale/units.hpp"

namespace dlscale::eq {

/// Eq. 1: one GPU, nothing overlapped. t_iter = t_io + t_h2d + t_f + t_b + t_u.
constexpr Seconds iteration_serial(Seconds io, Seconds h2d, Seconds f, Seconds b, Seconds u) noexcept {
  return io + h2d + f + b + u;
}

/// Eq. 2: S-SGD, nothing overlapped. t_iter = t_io + t_h2d + t_f + t_b + t_u + t_comm.
constexpr Seconds iteration_with_comm(Seconds io, Seconds h2d, Seconds f, Seconds b, Seconds u, Seconds comm) noexcept {
  return io + h2d + f + b + u + comm;
}

/// Eq. 3: t_gpu = t_h2d + t_f + t_b + t_u (so that eq. 2 reads t_iter = t_io + t_gpu + t_comm).
constexpr Seconds gpu_time(Seconds h2d, Seconds f, Seconds b, Seconds u) noexcept { return h2d + f + b + u; }

/// Eq. 4: I/O hidden by prefetching threads; the average iteration is the slower of the GPU side and
/// the readers: t̄_iter = max(t_gpu + t_comm, t_io).
constexpr Seconds iteration_io_hidden(Seconds gpu, Seconds comm, Seconds io) noexcept { return max(gpu + comm, io); }

/// Section IV-A: t_io = D·n_g / B — one reader per node feeds the n_g GPUs of that node, D bytes each,
/// at B = B_cache when the data set sits in the page cache (B_disk when it does not).
constexpr Seconds io_time(Bytes per_gpu, int gpus_per_node, BytesPerSecond read_bandwidth) noexcept {
  return per_gpu * static_cast<double>(gpus_per_node) / read_bandwidth;
}

/// Synchronization loss (not in Shi & Chu): E[max(Z_1..Z_n)] for n independent standard normal
/// variables, the expected largest of n order statistics (Harter 1961, "Expected values of normal order
/// statistics", Biometrika 48; Teichroew 1956): E = ∫ x · n φ(x) Φ(x)^(n−1) dx, integrated numerically
/// (composite Simpson, 4800 steps over [−12, 12], Φ^(n−1) taken in logs so that n = 10^5 stays exact).
/// n = 2: 1/√π = 0.5642, 4: 1.0294, 8: 1.4236, 16: 1.7660, 32: 2.0697, 64: 2.3437. n ≤ 1: 0.
inline double expected_max_normal(int n) noexcept {
  if (n <= 1) return 0.0;
  constexpr double lo = -12.0, hi = 12.0;
  constexpr int steps = 4800;  // even
  const double h = (hi - lo) / steps;
  const double inv_sqrt2 = 0.70710678118654752440, inv_sqrt2pi = 0.39894228040143267794;
  auto f = [&](double x) {
    // log Φ(x): from erfc on both sides, log1p where Φ is near 1
    const double log_cdf = x < 0 ? std::log(0.5 * std::erfc(-x * inv_sqrt2)) : std::log1p(-0.5 * std::erfc(x * inv_sqrt2));
    return x * n * inv_sqrt2pi * std::exp(-0.5 * x * x + (n - 1) * log_cdf);
  };
  double sum = f(lo) + f(hi);
  for (int i = 1; i < steps; ++i) sum += (i % 2 ? 4.0 : 2.0) * f(lo + i * h);
  return sum * h / 3.0;
}

/// Synchronization loss of an iteration: N synchronous workers whose compute time t_c varies from
/// iteration to iteration with coefficient of variation cv (σ = cv·t_c, independent, normal) all wait
/// for the slowest at the aggregation, so the expected iteration grows by E[max of N] · σ, with
/// `expected_max` = expected_max_normal(N) (0 for one worker, who waits for nobody).
constexpr Seconds sync_wait(double expected_max, double cv, Seconds compute) noexcept { return compute * (cv * expected_max); }

/// Eq. 5: communication overlapped with backward, given the instants at which aggregation starts
/// and ends (measured from the start of layer L's backward):
/// t_iter = t_io + t_h2d + t_f + t_b^(L) + (τ_comm_end − τ_comm_start) + t_u.
constexpr Seconds iteration_overlapped(Seconds io, Seconds h2d, Seconds f, Seconds b_last, Seconds comm_start, Seconds comm_end,
                                       Seconds u) noexcept {
  return io + h2d + f + b_last + (comm_end - comm_start) + u;
}

/// The hiding case of Section IV-C. Case 1: t_comm^(i) ≤ t_b^(i−1) for every i = 2..L.
/// Otherwise Case 2 with the boundary layer C, found by the paper's definition read from the input
/// side: C is the first layer i ≥ 2 with t_comm^(i) > t_b^(i−1), so that the printed condition
/// "≤ for i = 2..C−1" holds exactly. `suffix_exceeds` says whether the other half of the printed
/// condition ("> for i = C..L") also holds; when it does not, eq. 7 is only an approximation.
struct HidingCase {
  int which = 1;               // 1 or 2
  int boundary = 0;            // C (1-based layer number) in Case 2, 0 in Case 1
  bool suffix_exceeds = true;  // Case 2: t_comm^(i) > t_b^(i−1) for every i = C..L
};

inline HidingCase classify_hiding(std::span<const Seconds> backward, std::span<const Seconds> comm) noexcept {
  assert(backward.size() == comm.size());
  const std::size_t L = backward.size();
  HidingCase h;
  for (std::size_t i = 2; i <= L; ++i) {  // 1-based layer numbers
    if (comm[i - 1] > backward[i - 2]) {
      h.which = 2;
      h.boundary = static_cast<int>(i);
      for (std::size_t j = i; j <= L; ++j) {
        if (!(comm[j - 1] > backward[j - 2])) {
          h.suffix_exceeds = false;
          break;
        }
      }
      return h;
    }
  }
  return h;
}

/// Eq. 6 (Case 1, as printed): t_iter = t_io + t_h2d + t_f + t_b + t_comm^(1) + t_u^(1).
constexpr Seconds iteration_case1(Seconds io, Seconds h2d, Seconds f, Seconds b, Seconds comm_first,
                                  Seconds update_first) noexcept {
  return io + h2d + f + b + comm_first + update_first;
}

/// Eq. 7 (Case 2, exactly as printed):
/// t_iter = t_io + t_h2d + t_f + Σ_{i=C..L} t_comm^(i) + Σ_{i=1..C−1} t_b^(i) + t_comm^(1) + t_u^(1).
/// `boundary` is C (1-based, 2 ≤ C ≤ L).
inline Seconds iteration_case2(Seconds io, Seconds h2d, Seconds f, std::span<const Seconds> backward,
                               std::span<const Seconds> comm, int boundary, Seconds update_first) noexcept {
  const auto C = static_cast<std::size_t>(boundary);
  assert(C >= 2 && C <= comm.size());
  Seconds comm_top{}, back_bottom{};
  for (std::size_t i = C; i <= comm.size(); ++i) comm_top += comm[i - 1];
  for (std::size_t i = 1; i + 1 <= C; ++i) back_bottom += backward[i - 1];
  return io + h2d + f + comm_top + back_bottom + comm.front() + update_first;
}

/// The exact end of the last gradient aggregation for one communication channel that handles layers in
/// the order their gradients become ready (shared/docs/model.md, "How we read equations 5-7"):
///   ready(L) = t_b^(L);  ready(i) = ready(i+1) + t_b^(i)
///   done(L+1) = 0;       done(i)  = max(done(i+1), ready(i)) + t_comm^(i)
/// Returns done(1), measured from the start of backward. Equals max_k(Σ_{j=k..L} t_b^(j) + Σ_{j=1..k} t_comm^(j)).
inline Seconds overlap_done_exact(std::span<const Seconds> backward, std::span<const Seconds> comm) noexcept {
  assert(backward.size() == comm.size());
  Seconds ready{}, done{};
  for (std::size_t k = backward.size(); k-- > 0;) {
    ready += backward[k];
    done = max(done, ready) + comm[k];
  }
  return done;
}

/// Exact recurrence, per-layer update overlapped with aggregation (MXNet's PS updates each layer as
/// its aggregation ends; only layer 1's update is exposed):
/// t_iter = t_io + t_h2d + t_f + done(1) + t_u^(1).
inline Seconds iteration_exact_per_layer_update(Seconds io, Seconds h2d, Seconds f, std::span<const Seconds> backward,
                                                std::span<const Seconds> comm, Seconds update_first) noexcept {
  return io + h2d + f + overlap_done_exact(backward, comm) + update_first;
}

/// Exact recurrence, update after the last aggregation (TensorFlow, Caffe-MPI, Horovod, DDP):
/// t_iter = t_io + t_h2d + t_f + done(1) + t_u.
inline Seconds iteration_exact_update_after(Seconds io, Seconds h2d, Seconds f, std::span<const Seconds> backward,
                                            std::span<const Seconds> comm, Seconds update) noexcept {
  return io + h2d + f + overlap_done_exact(backward, comm) + update;
}

/// Eq. 8, general form: weak-scaling speedup S = N_g · t_iter(1) / t_iter(N_g).
constexpr double speedup(int gpus, Seconds iter_one, Seconds iter_n) noexcept {
  return static_cast<double>(gpus) * (iter_one / iter_n);
}

/// Eq. 8 as printed: S = N_g (t_io,1 + t_gpu) / (t_io,n_g + t_gpu + t_comm).
constexpr double speedup_eq8(int gpus, Seconds io_one, Seconds gpu, Seconds io_ng, Seconds comm) noexcept {
  return static_cast<double>(gpus) * ((io_one + gpu) / (io_ng + gpu + comm));
}

/// Eq. 9 (MXNet), Case 1: S = N_g (t_io,1 + t_gpu) / (t_io,n_g + t_h2d + t_f + t_b + t_comm^(1) + t_u^(1)).
constexpr double speedup_eq9_case1(int gpus, Seconds io_one, Seconds io_ng, Seconds h2d, Seconds f, Seconds b, Seconds u,
                                   Seconds comm_first, Seconds update_first) noexcept {
  return static_cast<double>(gpus) *
      ((io_one + gpu_time(h2d, f, b, u)) / iteration_case1(io_ng, h2d, f, b, comm_first, update_first));
}

/// Eq. 10: TensorFlow's hybrid in one node (all-reduce overlapped with backward, update after the last
/// aggregation): t_iter = t_io + t_h2d + t_f + t_b + t_comm^(1) + t_u.
constexpr Seconds iteration_tf_hybrid(Seconds io, Seconds h2d, Seconds f, Seconds b, Seconds comm_first, Seconds u) noexcept {
  return io + h2d + f + b + comm_first + u;
}

/// Eq. 11: S = N_g (t_io,1 + t_gpu) / (t_io,n_g + t_h2d + t_f + t_b + t_comm^(1) + t_u).
constexpr double speedup_eq11(int gpus, Seconds io_one, Seconds io_ng, Seconds h2d, Seconds f, Seconds b, Seconds u,
                              Seconds comm_first) noexcept {
  return static_cast<double>(gpus) * ((io_one + gpu_time(h2d, f, b, u)) / iteration_tf_hybrid(io_ng, h2d, f, b, comm_first, u));
}

/// Eq. 12: all-reduce efficiency E = S_g / (t_comm · B_rdma), where the paper takes S_g as the
/// gradient size times N_g (the bytes all GPUs contribute).
constexpr double allreduce_efficiency(Bytes aggregated, Seconds comm, BytesPerSecond rdma) noexcept {
  return aggregated / (comm * rdma);
}

/// r_u2g = t_u / (t_h2d + t_f + t_b): the share of update in GPU time (Section VI-B).
constexpr double update_to_gpu_ratio(Seconds u, Seconds h2d, Seconds f, Seconds b) noexcept { return u / (h2d + f + b); }

// ---- fp8 scaling recipes (docs/compute-model.md, K15) -------------------------------------------------------------

/// Eq. K15c: MX block scaling's block, the consecutive elements along a product's reduction dimension that share one
/// E8M0 scale (the OCP Microscaling format's MXFP8, as Transformer Engine and torchao run it; recalled).
inline constexpr double kMxBlockElements = 32.0;
/// Eq. K15c: the bytes one fp8 element cast with MX block scaling moves: `eb` read at the working width, 1 B of e4m3
/// written, and its share of the block's 1-byte scale (1/32 B). Row-wise and tensor-wise scaling write no such bytes
/// per element (a scale a row or a tensor, negligible beside the data).
constexpr double mx_cast_bytes_per_element(double eb) noexcept { return eb + 1.0 + 1.0 / kMxBlockElements; }
/// Eq. K15c: the scales of `elements` fp8 elements with MX block scaling, 1 B per block of 32.
constexpr double mx_scale_bytes(double elements) noexcept { return elements / kMxBlockElements; }

// ---- sliding-window attention (docs/models.md, "Decoder-only transformers"; docs/compute-model.md, K25) -------------

/// Eq. K25a: the (query, key) pairs causal attention lets through when each query sees at most the `w` positions up
/// to and including its own (a sliding window; w = 0: none): query i (1 … s) sees min(i, w) keys, and the sum is
/// Σ_{i=1..s} min(i, w) = w·(w+1)/2 + (s − w)·w for w ≤ s (the first w queries see all before them, the rest w
/// each), s·(s+1)/2 without a window or with w ≥ s.
constexpr std::int64_t causal_window_pairs(std::int64_t s, std::int64_t w) noexcept {
  const std::int64_t v = w > 0 && w < s ? w : s;
  return v * (v + 1) / 2 + (s - v) * v;
}

/// Eq. K25b: the pairs the model counts for causal attention with a window, in its own convention for a causal mask,
/// which counts the full s×s square (the zoo's products, docs/models.md) and half of it in FlashAttention's skip
/// (K9). The full square is twice the visible pairs less the diagonal, 2·s(s+1)/2 − s = s²: the pairs |i − j| < s.
/// With a window the same form gives the band |i − j| < w: 2·K25a − s = s·(2w − 1) − w·(w − 1), and s² exactly when
/// w ≥ s or there is no window, so a window as long as the sequence changes nothing.
constexpr std::int64_t attention_band_pairs(std::int64_t s, std::int64_t w) noexcept { return 2 * causal_window_pairs(s, w) - s; }

// ---- context parallelism: ring attention step by step (docs/model.md, P15) -----------------------------------

/// Eq. P15a: the block of the causal mask that ring step `step` (0 … c−1) of CP rank `rank` computes in
/// Transformer Engine's load-balanced layout (the "p2p" CP of Megatron-Core): the sequence cut into 2c chunks of
/// n = s/(2c) tokens, rank i holding chunks i and 2c−1−i (its s/c queries, keys and values), and at step j the
/// keys and values of rank (i−j) mod c. Step 0 is the diagonal: its two chunks against themselves under the
/// causal mask, half of its (s/c)² pairs. From a rank r < i both of i's query chunks see r's early chunk whole
/// and its late one (2c−1−r > 2c−1−i) not at all: all the queries, half the keys. From r > i only i's late
/// chunk sees anything, and both of r's chunks whole: half the queries, all the keys. Every step is the same
/// ½·(s/c)² pairs (half a square, a triangle or a rectangle); the c steps make the rank's ½·s²/c, and the c
/// ranks the whole mask's ½·s², each pair once.
struct RingBlock {
  double queries = 1.0;  // the share of the rank's s/c queries the step computes (and its merge touches)
  double keys = 1.0;     // the share of the s/c keys and values it holds that the step reads
  bool causal = false;   // the diagonal: the mask's lower triangle of queries × keys
  /// The pairs it computes, as a share of the (s/c)² square.
  [[nodiscard]] constexpr double work() const noexcept { return queries * keys * (causal ? 0.5 : 1.0); }
};
constexpr RingBlock ring_attention_block(int rank, int step, int c) noexcept {
  if (step == 0) return {1.0, 1.0, true};
  const int source = ((rank - step) % c + c) % c;
  return source < rank ? RingBlock{1.0, 0.5, false} : RingBlock{0.5, 1.0, false};
}

/// Eq. P15b, the definition: a ring whose step j computes for `compute[j]` while the send started with it (the
/// next step's block, on its own stream) takes `send[j]`: the next step waits for the later of the two, so the
/// ring exposes Σ_j max(0, send_j − compute_j) beyond its compute. `send` is as long as `compute` (0 where a
/// step sends nothing).
inline Seconds ring_exposed(std::span<const Seconds> compute, std::span<const Seconds> send) noexcept {
  assert(compute.size() == send.size());
  Seconds t{};
  for (std::size_t j = 0; j < compute.size(); ++j) t += max(Seconds{}, send[j] - compute[j]);
  return t;
}

/// Eq. P15b forward, TE's loop with every step `step` long (P15a: equal work): step j < c−1 sends the K/V it
/// holds to the next rank beside its own attention (the first step computes on the rank's own K/V, so the first
/// send starts at once and only its part past that step's attention is exposed); the last step sends nothing:
/// (c−1)·max(0, t_KV − t_step).
constexpr Seconds ring_forward_exposed(Seconds kv_send, Seconds step, int c) noexcept {
  return c > 1 ? max(Seconds{}, kv_send - step) * static_cast<double>(c - 1) : Seconds{};
}

/// Eq. P28, Megatron-LM's asynchronous column-parallel backward: the input gradient's collective (the all-reduce, or
/// with SP the reduce-scatter) is launched as soon as the data-gradient GEMM ends and runs beside that linear's own
/// weight-gradient GEMM, which the backward waits for it after: exposed max(0, t_comm − t_wgrad).
constexpr Seconds async_input_grad_exposed(Seconds comm, Seconds wgrad) noexcept { return max(Seconds{}, comm - wgrad); }

/// Eq. P11, the node's NICs shared: `groups` groups that leave the node run their collectives at once, each
/// with `ranks` ranks on it, and a group drives min(ranks, N) of the node's N NICs (NCCL's rail-local rings),
/// so the NICs are asked max(1, groups·min(ranks, N)/N) times over (N = 1 for the simple form's one link).
constexpr double nic_share(int groups, int ranks, int nics) noexcept {
  const int n = nics > 0 ? nics : 1;
  const double share = static_cast<double>(groups) * static_cast<double>(ranks < n ? ranks : n) / n;
  return share > 1.0 ? share : 1.0;
}

/// Eq. P15b backward: step 0 sends the K/V on, the middle c−2 steps the K/V and the dK/dV accumulated on the
/// block before (one batched send of twice the bytes), the last step the dK/dV only (TE's p2p buffers hold both,
/// the dK/dV a step behind its K/V; recalled, not checked against its source here): 2(c−1) K/V blocks in all,
/// twice the forward's, each send beside a step's attention backward:
/// 2·max(0, t_KV − t_step) + (c−2)·max(0, t_2KV − t_step).
constexpr Seconds ring_backward_exposed(Seconds kv_send, Seconds kv_dkv_send, Seconds step, int c) noexcept {
  if (c < 2) return Seconds{};
  return max(Seconds{}, kv_send - step) * 2.0 + max(Seconds{}, kv_dkv_send - step) * static_cast<double>(c - 2);
}

/// Eq. P15c forward: the merge after a step (TE's output and log-sum-exp correction), a memory-bound pass: the
/// step's partial output of `out` elements read at `e` bytes, the fp32 accumulator read and written (8 B), and
/// for each of its `rows` (query × head) the step's log-sum-exp read and the running one read and written (fp32,
/// 12 B).
constexpr Bytes ring_forward_merge_bytes(double out, double rows, double e) noexcept {
  return bytes(out * (e + 8.0) + rows * 12.0);
}
/// Eq. P15c, the forward's end: the fp32 output accumulator of `out` elements cast to the activations' `e` bytes.
constexpr Bytes ring_output_cast_bytes(double out, double e) noexcept { return bytes(out * (4.0 + e)); }
/// Eq. P15c backward: the step's gradients (`grads` elements of dQ, dK and dV) added to their accumulators:
/// the step's read, the accumulator read and written, at `e` bytes each.
constexpr Bytes ring_backward_merge_bytes(double grads, double e) noexcept { return bytes(grads * 3.0 * e); }

}  // namespace dlscale::eq
