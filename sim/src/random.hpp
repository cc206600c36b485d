// Random numbers for the simulator, identical across standard libraries: std::mt19937_64 is fully
// specified by the C++ standard, but the std:: distributions are not, so the conversions are ours.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>

namespace dlscale::sim {

/// SplitMix64 (Steele, Lea & Flood 2014): derives independent seeds for per-GPU and per-link streams.
constexpr std::uint64_t splitmix64(std::uint64_t x) noexcept {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

class Rng {
 public:
  explicit Rng(std::uint64_t seed = 1) : gen_(seed) {}
  /// Uniform in (0, 1): the top 53 bits, shifted off zero.
  double uniform() noexcept { return (static_cast<double>(gen_() >> 11) + 0.5) * 0x1.0p-53; }
  /// Standard normal by Box–Muller (both values of a pair are used).
  double normal() noexcept {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = uniform(), u2 = uniform();
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double a = 6.283185307179586476925 * u2;
    spare_ = r * std::sin(a);
    has_spare_ = true;
    return r * std::cos(a);
  }
  /// A multiplicative jitter factor with mean 1: exp(σ·z − σ²/2), z standard normal (log-normal).
  double jitter(double sigma) noexcept {
    if (sigma <= 0.0) return 1.0;
    return std::exp(sigma * normal() - 0.5 * sigma * sigma);
  }

 private:
  std::mt19937_64 gen_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

/// The standard normal quantile Φ⁻¹(p), 0 < p < 1: Acklam's rational approximation (relative error
/// 1.15e-9) and one Halley step on erfc, which brings it to the precision of a double.
inline double normal_quantile(double p) noexcept {
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
                                 1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01,
                                 -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                                 -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00};
  constexpr double lo = 0.02425;
  double x = 0.0;
  if (p < lo) {
    const double q = std::sqrt(-2.0 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  } else if (p > 1.0 - lo) {
    const double q = std::sqrt(-2.0 * std::log1p(-p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  } else {
    const double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
  }
  const double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
  const double u = e * std::sqrt(2.0 * 3.14159265358979323846) * std::exp(0.5 * x * x);
  return x - u / (1.0 + 0.5 * x * u);
}

/// One iteration of n alike GPUs, each of whose forward+backward is scaled by 1 + cv·z, z standard normal:
/// the all-reduce waits only for the slowest, so only the largest of the n draws sets the time. It is
/// drawn from its own distribution, P(max ≤ m) = Φ(m)^n, by inversion: m = −Φ⁻¹(1 − U^{1/n}) with
/// 1 − U^{1/n} = −expm1(ln U / n) (exact where U^{1/n} rounds to 1), for one GPU chosen uniformly; each of
/// the other n − 1 takes the mean of a normal below m, E[z | z < m] = −φ(m)/Φ(m), so that the mean over
/// the GPUs of z is 0, as the n draws' is in expectation. Two uniforms per iteration instead of n normals.
struct SlowestDraw {
  int gpu = 0;        // the slowest GPU
  double z = 0.0;     // its draw, the largest
  double rest = 0.0;  // every other GPU's
};
inline SlowestDraw draw_slowest(Rng& rng, int n) noexcept {
  SlowestDraw d;
  const double q = -std::expm1(std::log(rng.uniform()) / n);  // 1 − Φ(m)
  d.z = -normal_quantile(q);
  d.rest = n > 1 ? -std::exp(-0.5 * d.z * d.z) / std::sqrt(2.0 * 3.14159265358979323846) / (1.0 - q) : 0.0;
  d.gpu = std::min(n - 1, static_cast<int>(rng.uniform() * n));
  return d;
}

}  // namespace dlscale::sim
