// Random numbers for the simulator, identical across standard libraries: std::mt19937_64 is fully
// specified by the C++ standard, but the std:: distributions are not, so the conversions are ours.
#pragma once

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

}  // namespace dlscale::sim
