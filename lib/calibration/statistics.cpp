// Statistics of samples, the α-β least-squares fit, interpolation over sizes and nccl-tests' bandwidth
// definitions: the CPU-side numerics of calibration, tested without a GPU (tests/calibration_test.cpp).
#include <Eigen/Dense>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "dlscale/calibration.hpp"

namespace dlscale {

// ---- samples ---------------------------------------------------------------------------------------

namespace {
/// Quantile q of sorted data by linear interpolation between order statistics (Hyndman & Fan type 7,
/// the default of R and numpy): h = (n−1)·q, x[⌊h⌋] + (h − ⌊h⌋)(x[⌊h⌋+1] − x[⌊h⌋]).
double quantile_sorted(const std::vector<double>& x, double q) {
  const double h = static_cast<double>(x.size() - 1) * q;
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, x.size() - 1);
  return x[lo] + (h - static_cast<double>(lo)) * (x[hi] - x[lo]);
}
}  // namespace

SampleStats summarize(std::span<const double> samples) {
  if (samples.empty()) throw std::invalid_argument("no samples to summarize");
  std::vector<double> x(samples.begin(), samples.end());
  std::sort(x.begin(), x.end());
  SampleStats s;
  s.count = x.size();
  s.median = quantile_sorted(x, 0.5);
  s.q1 = quantile_sorted(x, 0.25);
  s.q3 = quantile_sorted(x, 0.75);
  s.min = x.front();
  s.max = x.back();
  s.mean = std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size());
  return s;
}

void SampleCollector::add(double sample_s, bool throttled) {
  if (throttled || !(sample_s >= 0) || !std::isfinite(sample_s)) {
    ++dropped_;
    return;
  }
  kept_.push_back(sample_s);
  total_ += sample_s;
}

bool SampleCollector::done(double elapsed_s) const {
  if (kept_.size() >= rule_.max_samples) return true;
  if (elapsed_s >= rule_.budget_s) return true;
  if (kept_.size() < rule_.min_samples || total_ < rule_.min_time_s) return false;
  return summarize(kept_).relative_noise() <= rule_.max_relative_noise;
}

// ---- nccl-tests definitions ------------------------------------------------------------------------

/// nccl-tests doc/PERFORMANCE.md: algbw = S / t.
BytesPerSecond algorithm_bandwidth(Bytes size, Seconds time) noexcept { return size / time; }

/// nccl-tests doc/PERFORMANCE.md ("bus bandwidth"): the factor that makes busbw comparable to the
/// hardware's link speed. all-reduce 2(n−1)/n; reduce-scatter, all-gather (n−1)/n; broadcast, reduce 1.
double bus_bandwidth_factor(CollectiveOp op, int ranks) noexcept {
  const double n = ranks;
  switch (op) {
    case CollectiveOp::allreduce:
      return ranks > 0 ? 2.0 * (n - 1) / n : 0.0;
    case CollectiveOp::allgather:
    case CollectiveOp::reducescatter:
      return ranks > 0 ? (n - 1) / n : 0.0;
    case CollectiveOp::broadcast:
    case CollectiveOp::reduce:
      return 1.0;
  }
  return 1.0;
}

// ---- α-β fit -----------------------------------------------------------------------------------------

AlphaBeta fit_alpha_beta(std::span<const CollectivePoint> points, FitWeighting weighting) {
  // Model t_i = α + γ·S_i with γ = 1/β, solved as weighted least squares: rows √w_i·[1, S_i/S_max]
  // (sizes scaled for conditioning), right side √w_i·t_i; w_i = 1 (absolute) or 1/t_i² (relative).
  std::vector<const CollectivePoint*> pts;
  for (const auto& p : points)
    if (p.size > Bytes{} && p.time > Seconds{}) pts.push_back(&p);
  double smax = 0;
  for (auto* p : pts) smax = std::max(smax, in_bytes(p->size));
  {
    std::vector<double> sizes;
    for (auto* p : pts) sizes.push_back(in_bytes(p->size));
    std::sort(sizes.begin(), sizes.end());
    if (std::unique(sizes.begin(), sizes.end()) - sizes.begin() < 2)
      throw std::invalid_argument("an alpha-beta fit needs at least two distinct sizes");
  }
  const auto n = static_cast<Eigen::Index>(pts.size());
  Eigen::MatrixXd A(n, 2);
  Eigen::VectorXd b(n);
  Eigen::VectorXd sw(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const double t = in_seconds(pts[static_cast<std::size_t>(i)]->time);
    const double s = in_bytes(pts[static_cast<std::size_t>(i)]->size) / smax;
    sw(i) = weighting == FitWeighting::relative ? 1.0 / t : 1.0;
    A(i, 0) = sw(i);
    A(i, 1) = sw(i) * s;
    b(i) = sw(i) * t;
  }
  Eigen::Vector2d x = A.colPivHouseholderQr().solve(b);
  double alpha = x(0);
  double gamma = x(1) / smax;
  if (alpha < 0) {  // pin α = 0: γ = Σ a_i1 b_i / Σ a_i1²
    alpha = 0;
    gamma = A.col(1).dot(b) / A.col(1).squaredNorm() / smax;
  }
  if (!(gamma > 0)) throw std::invalid_argument("the measured times do not grow with the size: no bandwidth to fit");
  return AlphaBeta{seconds(alpha), bytes_per_second(1.0 / gamma)};
}

// ---- interpolation -----------------------------------------------------------------------------------

namespace {
/// Linear interpolation of y over x between the two neighbours of `at` (sorted x, at inside the range).
template <class Pts, class X, class Y>
double interpolate(const Pts& pts, double at, X x, Y y) {
  auto hi = std::lower_bound(pts.begin(), pts.end(), at, [&](const auto& p, double v) { return x(p) < v; });
  if (hi == pts.begin()) return y(*hi);
  if (hi == pts.end()) return y(pts.back());
  if (x(*hi) == at) return y(*hi);
  auto lo = std::prev(hi);
  const double f = (at - x(*lo)) / (x(*hi) - x(*lo));
  return y(*lo) + f * (y(*hi) - y(*lo));
}
}  // namespace

Seconds curve_time(const CollectiveCurve& curve, Bytes size, CurveSource* source) {
  const auto& pts = curve.points;
  if (pts.empty()) throw std::invalid_argument("an empty collective curve");
  const double s = in_bytes(size);
  auto xs = [](const CollectivePoint& p) { return in_bytes(p.size); };
  auto ys = [](const CollectivePoint& p) { return in_seconds(p.time); };
  if (s >= xs(pts.front()) && s <= xs(pts.back())) {
    if (source) *source = CurveSource::interpolated;
    return seconds(interpolate(pts, s, xs, ys));
  }
  if (source) *source = CurveSource::extrapolated;
  // Beyond the range: the fit's slope 1/β continued from the nearest measured point.
  double gamma = 0;
  if (curve.fit) {
    gamma = 1.0 / in_bytes_per_second(curve.fit->beta);
  } else if (pts.size() >= 2) {
    try {
      gamma = 1.0 / in_bytes_per_second(fit_alpha_beta(pts).beta);
    } catch (const std::invalid_argument&) {
      gamma = 0;  // flat: no size dependence was measured
    }
  }
  const CollectivePoint& anchor = s > xs(pts.back()) ? pts.back() : pts.front();
  const double t = ys(anchor) + (s - xs(anchor)) * gamma;
  return seconds(std::max(t, 0.0));
}

BytesPerSecond TransferCurve::peak() const noexcept { return points.empty() ? BytesPerSecond{} : points.back().bandwidth; }

BytesPerSecond transfer_bandwidth(const TransferCurve& curve, Bytes size) {
  const auto& pts = curve.points;
  if (pts.empty()) throw std::invalid_argument("an empty transfer curve");
  if (pts.size() == 1 || !(size > Bytes{})) return pts.back().bandwidth;
  const double s = in_bytes(size);
  auto xs = [](const BandwidthPoint& p) { return in_bytes(p.size); };
  auto ys = [](const BandwidthPoint& p) { return in_seconds(p.time); };
  double t = 0;
  if (s >= xs(pts.front()) && s <= xs(pts.back())) {
    t = interpolate(pts, s, xs, ys);
  } else {  // the line through the two nearest points (α-β of the copy engine), continued
    const auto& a = s > xs(pts.back()) ? pts[pts.size() - 2] : pts[0];
    const auto& b = s > xs(pts.back()) ? pts.back() : pts[1];
    const double slope = std::max((ys(b) - ys(a)) / (xs(b) - xs(a)), 0.0);
    const auto& anchor = s > xs(pts.back()) ? b : a;
    t = ys(anchor) + (s - xs(anchor)) * slope;
    if (!(t > 0)) return anchor.bandwidth;
  }
  return bytes_per_second(s / t);
}

// ---- lookups -------------------------------------------------------------------------------------------

const CollectiveCurve* Calibration::find_curve(CollectiveOp op, int gpus, int nodes) const noexcept {
  for (const auto& c : collectives)
    if (c.op == op && c.gpus == gpus && c.nodes == nodes) return &c;
  return nullptr;
}

const TransferCurve* Calibration::find_transfer(TransferKind kind) const noexcept {
  const TransferCurve* best = nullptr;
  for (const auto& t : transfers)
    if (t.kind == kind && !t.points.empty() && (best == nullptr || t.device < best->device)) best = &t;
  return best;
}

const LayerProfile* Calibration::find_layers(std::string_view model, int batch, std::string_view precision) const noexcept {
  for (const auto& l : layers)
    if (l.model == model && l.batch == batch && l.precision == precision) return &l;
  return nullptr;
}

std::string gpu_family(std::string_view name) {
  std::string word;
  auto is_brand = [](const std::string& w) {
    return w == "nvidia" || w == "tesla" || w == "geforce" || w == "quadro" || w == "rtx" || w == "gtx";
  };
  auto flush = [&]() -> std::string {
    std::string w;
    w.swap(word);
    if (w.empty() || is_brand(w)) return {};
    return std::any_of(w.begin(), w.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; })
        ? w
        : std::string{};
  };
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (auto w = flush(); !w.empty()) {
      return w;
    }
  }
  return flush();
}

}  // namespace dlscale
