// Strong unit types for dlscale.
//
// A quantity carries its dimension in the type: exponents of bytes, floating-point operations and
// seconds. Values are built only through named factories (`seconds(1.5)`, `gigabits_per_second(56)`)
// and read back only through named accessors (`in_ms(t)`), so a bare `double` never silently turns
// into a time or a bandwidth. Dimensional operators follow from the exponents:
//   Bytes / BytesPerSecond -> Seconds,  Flops / FlopsPerSecond -> Seconds,
//   BytesPerSecond * Seconds -> Bytes,  Bytes / Bytes -> double.
//
// Decimal and binary prefixes are different names: GB is 10^9 bytes, GiB is 2^30 bytes, as nccl-tests
// uses them. Bit rates (Gb/s) are converted to bytes at 8 bits per byte.
//
// This header has no dependencies beyond the standard library; fmt formatters live in format.hpp.
#pragma once

#include <compare>
#include <string_view>

namespace dlscale {

template <int ByteExp, int FlopExp, int TimeExp>
class Quantity {
 public:
  constexpr Quantity() = default;

  /// Escape hatch: the value in base units (bytes, FLOPs, seconds and their products).
  [[nodiscard]] static constexpr Quantity from_base(double v) noexcept { return Quantity(v); }
  [[nodiscard]] constexpr double base() const noexcept { return v_; }

  constexpr Quantity& operator+=(Quantity o) noexcept {
    v_ += o.v_;
    return *this;
  }
  constexpr Quantity& operator-=(Quantity o) noexcept {
    v_ -= o.v_;
    return *this;
  }
  constexpr Quantity& operator*=(double k) noexcept {
    v_ *= k;
    return *this;
  }
  constexpr Quantity& operator/=(double k) noexcept {
    v_ /= k;
    return *this;
  }
  friend constexpr Quantity operator+(Quantity a, Quantity b) noexcept { return Quantity(a.v_ + b.v_); }
  friend constexpr Quantity operator-(Quantity a, Quantity b) noexcept { return Quantity(a.v_ - b.v_); }
  friend constexpr Quantity operator-(Quantity a) noexcept { return Quantity(-a.v_); }
  friend constexpr Quantity operator*(Quantity a, double k) noexcept { return Quantity(a.v_ * k); }
  friend constexpr Quantity operator*(double k, Quantity a) noexcept { return Quantity(a.v_ * k); }
  friend constexpr Quantity operator/(Quantity a, double k) noexcept { return Quantity(a.v_ / k); }
  friend constexpr auto operator<=>(Quantity, Quantity) noexcept = default;
  friend constexpr bool operator==(Quantity, Quantity) noexcept = default;

 private:
  constexpr explicit Quantity(double v) noexcept : v_(v) {}
  double v_ = 0.0;
};

namespace detail {
template <int B, int F, int T>
constexpr auto make_quantity(double v) noexcept {
  if constexpr (B == 0 && F == 0 && T == 0) {
    return v;  // a ratio of like quantities is a plain number
  } else {
    return Quantity<B, F, T>::from_base(v);
  }
}
}  // namespace detail

template <int B1, int F1, int T1, int B2, int F2, int T2>
constexpr auto operator*(Quantity<B1, F1, T1> a, Quantity<B2, F2, T2> b) noexcept {
  return detail::make_quantity<B1 + B2, F1 + F2, T1 + T2>(a.base() * b.base());
}
template <int B1, int F1, int T1, int B2, int F2, int T2>
constexpr auto operator/(Quantity<B1, F1, T1> a, Quantity<B2, F2, T2> b) noexcept {
  return detail::make_quantity<B1 - B2, F1 - F2, T1 - T2>(a.base() / b.base());
}
template <int B, int F, int T>
constexpr auto operator/(double k, Quantity<B, F, T> a) noexcept {
  return detail::make_quantity<-B, -F, -T>(k / a.base());
}

using Seconds = Quantity<0, 0, 1>;
using Bytes = Quantity<1, 0, 0>;
using BytesPerSecond = Quantity<1, 0, -1>;
using Flops = Quantity<0, 1, 0>;
using FlopsPerSecond = Quantity<0, 1, -1>;
using Hertz = Quantity<0, 0, -1>;

template <int B, int F, int T>
constexpr Quantity<B, F, T> max(Quantity<B, F, T> a, Quantity<B, F, T> b) noexcept {
  return a < b ? b : a;
}
template <int B, int F, int T>
constexpr Quantity<B, F, T> min(Quantity<B, F, T> a, Quantity<B, F, T> b) noexcept {
  return b < a ? b : a;
}

// ---- factories ------------------------------------------------------------------------------------
constexpr Seconds seconds(double v) noexcept { return Seconds::from_base(v); }
constexpr Seconds milliseconds(double v) noexcept { return Seconds::from_base(v * 1e-3); }
constexpr Seconds microseconds(double v) noexcept { return Seconds::from_base(v * 1e-6); }
constexpr Seconds nanoseconds(double v) noexcept { return Seconds::from_base(v * 1e-9); }

constexpr Bytes bytes(double v) noexcept { return Bytes::from_base(v); }
constexpr Bytes kilobytes(double v) noexcept { return Bytes::from_base(v * 1e3); }
constexpr Bytes megabytes(double v) noexcept { return Bytes::from_base(v * 1e6); }
constexpr Bytes gigabytes(double v) noexcept { return Bytes::from_base(v * 1e9); }
constexpr Bytes terabytes(double v) noexcept { return Bytes::from_base(v * 1e12); }
constexpr Bytes kibibytes(double v) noexcept { return Bytes::from_base(v * 1024.0); }
constexpr Bytes mebibytes(double v) noexcept { return Bytes::from_base(v * 1048576.0); }
constexpr Bytes gibibytes(double v) noexcept { return Bytes::from_base(v * 1073741824.0); }

constexpr BytesPerSecond bytes_per_second(double v) noexcept { return BytesPerSecond::from_base(v); }
constexpr BytesPerSecond megabytes_per_second(double v) noexcept { return BytesPerSecond::from_base(v * 1e6); }
constexpr BytesPerSecond gigabytes_per_second(double v) noexcept { return BytesPerSecond::from_base(v * 1e9); }
constexpr BytesPerSecond gibibytes_per_second(double v) noexcept { return BytesPerSecond::from_base(v * 1073741824.0); }
constexpr BytesPerSecond megabits_per_second(double v) noexcept { return BytesPerSecond::from_base(v * 1e6 / 8.0); }
constexpr BytesPerSecond gigabits_per_second(double v) noexcept { return BytesPerSecond::from_base(v * 1e9 / 8.0); }

constexpr Flops flops(double v) noexcept { return Flops::from_base(v); }
constexpr Flops gigaflops(double v) noexcept { return Flops::from_base(v * 1e9); }
constexpr FlopsPerSecond flops_per_second(double v) noexcept { return FlopsPerSecond::from_base(v); }
constexpr FlopsPerSecond gigaflops_per_second(double v) noexcept { return FlopsPerSecond::from_base(v * 1e9); }
constexpr FlopsPerSecond teraflops_per_second(double v) noexcept { return FlopsPerSecond::from_base(v * 1e12); }

constexpr Hertz hertz(double v) noexcept { return Hertz::from_base(v); }
constexpr Hertz megahertz(double v) noexcept { return Hertz::from_base(v * 1e6); }

// ---- accessors --------------------------------------------------------------------------------------
constexpr double in_seconds(Seconds t) noexcept { return t.base(); }
constexpr double in_ms(Seconds t) noexcept { return t.base() * 1e3; }
constexpr double in_us(Seconds t) noexcept { return t.base() * 1e6; }
constexpr double in_bytes(Bytes b) noexcept { return b.base(); }
constexpr double in_megabytes(Bytes b) noexcept { return b.base() / 1e6; }
constexpr double in_mebibytes(Bytes b) noexcept { return b.base() / 1048576.0; }
constexpr double in_gigabytes(Bytes b) noexcept { return b.base() / 1e9; }
constexpr double in_bytes_per_second(BytesPerSecond b) noexcept { return b.base(); }
constexpr double in_gigabytes_per_second(BytesPerSecond b) noexcept { return b.base() / 1e9; }
constexpr double in_gigabits_per_second(BytesPerSecond b) noexcept { return b.base() * 8.0 / 1e9; }
constexpr double in_flops(Flops f) noexcept { return f.base(); }
constexpr double in_gigaflops(Flops f) noexcept { return f.base() / 1e9; }
constexpr double in_teraflops_per_second(FlopsPerSecond f) noexcept { return f.base() / 1e12; }
constexpr double in_megahertz(Hertz f) noexcept { return f.base() / 1e6; }

// ---- parsing of unit strings ------------------------------------------------------------------------
// Each parser accepts "<number> <unit>" (the space is optional) and throws dlscale::UnitError with a
// one-line message when the number or the unit is missing or unknown, or when the value is negative.
// Rates must also be non-zero and physical: a bandwidth of at least 1 kB/s, a FLOP rate of at least
// 1 MFLOPS. A value whose product with its unit exceeds the largest double is an error too.
//   time:       s, ms, us (or µs), ns, min, h
//   size:       B, kB, MB, GB, TB, PB (10^3 steps), KiB, MiB, GiB, TiB (2^10 steps)
//   bandwidth:  B/s, kB/s, MB/s, GB/s, TB/s, KiB/s … TiB/s, and bit rates b/s, kb/s, Mb/s, Gb/s, Tb/s
//               (also written bps, Kbps, Mbps, Gbps, Tbps); "GBps"-style byte rates as in simgrid
//   FLOP count: FLOP, kFLOP, MFLOP, GFLOP, TFLOP, PFLOP
//   FLOP rate:  FLOPS or FLOP/s with the same prefixes (e.g. "15.7 TFLOPS")
//   frequency:  Hz, kHz, MHz, GHz
Seconds parse_seconds(std::string_view text);
Bytes parse_bytes(std::string_view text);
BytesPerSecond parse_bandwidth(std::string_view text);
Flops parse_flops(std::string_view text);
FlopsPerSecond parse_flops_rate(std::string_view text);
Hertz parse_frequency(std::string_view text);

}  // namespace dlscale
