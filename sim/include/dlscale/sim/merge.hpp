// Gradient merging: which layers' gradients are aggregated together (a "bucket").
//
// Buckets are runs of consecutive learnable layers, kept input side first like Network::layers
// (element 0 of a plan holds layer 1's bucket). Three plans are static and computed here; Horovod's
// tensor fusion depends on when gradients become ready and is decided inside the simulator.
#pragma once

#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "dlscale/units.hpp"

namespace dlscale::sim {

struct Bucket {
  int first = 0;  // 0-based index of the input-most layer in the bucket
  int last = 0;   // 0-based index of the output-most layer in the bucket
  Bytes bytes{};
};

/// One bucket per layer (layer-wise aggregation, WFBP).
std::vector<Bucket> per_layer_buckets(std::span<const Bytes> gradients);

/// PyTorch DDP's assignment (torch/csrc/distributed/c10d/reducer.cpp,
/// compute_bucket_assignment_by_size): walk the gradients from the output side, add each to the open
/// bucket, and close the bucket once it holds at least its cap; the first bucket's cap is `first_cap`
/// (dist._DEFAULT_FIRST_BUCKET_BYTES, 1 MiB), every later one `cap` (bucket_cap_mb, 25 MiB).
std::vector<Bucket> ddp_buckets(std::span<const Bytes> gradients, Bytes first_cap, Bytes cap);

/// T(s) = alpha + s · per_byte: the α-β fit of a collective.
struct AlphaBeta {
  Seconds alpha{};
  Seconds per_byte{};  // seconds per byte, stored as the time of one byte
  [[nodiscard]] Seconds time(Bytes s) const noexcept { return alpha + per_byte * in_bytes(s); }
};

/// Least-squares fit of T(s) = α + β·s over the sizes given (α and β clamped at ≥ 0).
AlphaBeta fit_alpha_beta(const std::function<Seconds(Bytes)>& collective_time, std::span<const Bytes> sizes);

/// MG-WFBP's merged-gradient plan (Shi, Chu & Li, "MG-WFBP: Efficient Data Communication for
/// Distributed Synchronous SGD Algorithms", INFOCOM 2019), as a greedy pass from the output layer.
/// With times measured from the start of backward, ready(i) = Σ_{j=i..L} t_b^(j), T(s) = α + β·s, the
/// open bucket B = layers i+1..j (ready at r_B = ready(i+1), S_B bytes) and d the end of the previous
/// bucket's aggregation, layer i (s_i bytes) is merged into B iff
///     max(d, ready(i)) + T(S_B + s_i)  ≤  max(max(d, r_B) + T(S_B), ready(i)) + T(s_i),
/// i.e. iff sending B and layer i together ends no later than sending them one after the other. When
/// B's aggregation would still run at ready(i), the test reduces to the paper's condition: merge when
/// waiting for layer i costs less than the start-up time α it saves. Otherwise B is closed with
/// d ← max(d, r_B) + T(S_B) and layer i opens a new bucket. O(L).
std::vector<Bucket> mgwfbp_buckets(std::span<const Seconds> backward, std::span<const Bytes> gradients, const AlphaBeta& fit);

/// The end of the last aggregation for a plan (the closed form's recurrence over buckets, from the
/// start of backward): the reference the merge policies are compared with.
Seconds plan_done_exact(std::span<const Seconds> backward, std::span<const Bucket> plan,
                        const std::function<Seconds(Bytes)>& collective_time);

std::string_view describe_plan_kind(std::string_view kind) noexcept;

}  // namespace dlscale::sim
