// Bucket plans (see merge.hpp).
#include "dlscale/sim/merge.hpp"

#include <algorithm>
#include <cassert>

#include "dlscale/equations.hpp"

namespace dlscale::sim {

std::vector<Bucket> per_layer_buckets(std::span<const Bytes> gradients) {
  std::vector<Bucket> out(gradients.size());
  for (std::size_t i = 0; i < gradients.size(); ++i) out[i] = Bucket{static_cast<int>(i), static_cast<int>(i), gradients[i]};
  return out;
}

std::vector<Bucket> ddp_buckets(std::span<const Bytes> gradients, Bytes first_cap, Bytes cap) {
  std::vector<Bucket> out;
  const int L = static_cast<int>(gradients.size());
  Bucket open{L - 1, L - 1, Bytes{}};
  bool any = false;
  Bytes limit = first_cap;
  for (int k = L - 1; k >= 0; --k) {
    if (!any) open = Bucket{k, k, Bytes{}};
    open.first = k;
    open.bytes += gradients[static_cast<std::size_t>(k)];
    any = true;
    if (open.bytes >= limit) {
      out.push_back(open);
      any = false;
      limit = cap;
    }
  }
  if (any) out.push_back(open);
  std::reverse(out.begin(), out.end());
  return out;
}

AlphaBeta fit_alpha_beta(const std::function<Seconds(Bytes)>& collective_time, std::span<const Bytes> sizes) {
  // Ordinary least squares of t on s.
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (Bytes s : sizes) {
    const double x = in_bytes(s);
    const double y = in_seconds(collective_time(s));
    n += 1;
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  AlphaBeta f;
  if (n < 1) return f;
  const double den = n * sxx - sx * sx;
  double beta = den > 0 ? (n * sxy - sx * sy) / den : (sx > 0 ? sy / sx : 0.0);
  beta = std::max(beta, 0.0);
  double alpha = std::max((sy - beta * sx) / n, 0.0);
  f.alpha = seconds(alpha);
  f.per_byte = seconds(beta);
  return f;
}

std::vector<Bucket> mgwfbp_buckets(std::span<const Seconds> backward, std::span<const Bytes> gradients, const AlphaBeta& fit) {
  assert(backward.size() == gradients.size());
  const int L = static_cast<int>(gradients.size());
  std::vector<Bucket> out;
  if (L == 0) return out;
  Seconds d{};                                                // end of the previous bucket's aggregation
  Seconds ready = backward[static_cast<std::size_t>(L - 1)];  // ready(L)
  Bucket open{L - 1, L - 1, gradients[static_cast<std::size_t>(L - 1)]};
  Seconds r_open = ready;  // ready time of the open bucket
  for (int i = L - 2; i >= 0; --i) {
    const auto ui = static_cast<std::size_t>(i);
    ready += backward[ui];
    const Seconds merged = max(d, ready) + fit.time(open.bytes + gradients[ui]);
    const Seconds open_end = max(d, r_open) + fit.time(open.bytes);
    const Seconds separate = max(open_end, ready) + fit.time(gradients[ui]);
    if (merged <= separate) {
      open.first = i;
      open.bytes += gradients[ui];
      r_open = ready;
    } else {
      out.push_back(open);
      d = open_end;
      open = Bucket{i, i, gradients[ui]};
      r_open = ready;
    }
  }
  out.push_back(open);
  std::reverse(out.begin(), out.end());
  return out;
}

Seconds plan_done_exact(std::span<const Seconds> backward, std::span<const Bucket> plan,
                        const std::function<Seconds(Bytes)>& collective_time) {
  std::vector<Seconds> b(plan.size()), c(plan.size());
  for (std::size_t u = 0; u < plan.size(); ++u) {
    for (int i = plan[u].first; i <= plan[u].last; ++i) b[u] += backward[static_cast<std::size_t>(i)];
    c[u] = collective_time(plan[u].bytes);
  }
  return eq::overlap_done_exact(b, c);
}

std::string_view describe_plan_kind(std::string_view kind) noexcept {
  if (kind == "none") return "one bucket per layer (layer-wise, WFBP)";
  if (kind == "ddp") return "PyTorch DDP buckets from the output side (first bucket smaller)";
  if (kind == "horovod") return "Horovod tensor fusion (gradients ready at each cycle, fused up to the threshold)";
  if (kind == "mgwfbp") return "MG-WFBP greedy merge with the alpha-beta fit of the collective";
  return "";
}

}  // namespace dlscale::sim
