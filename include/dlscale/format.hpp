// fmt formatters for the unit types. A value prints with a unit chosen for its size:
//   seconds(0.0359) -> "35.9 ms",  gigabytes_per_second(7) -> "7 GB/s",  mebibytes(25) -> "26.21 MB".
// The format spec is a floating-point spec applied to the scaled number ("{:.2f}" -> "35.90 ms");
// the default is 4 significant digits.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <string_view>

#include "dlscale/units.hpp"

namespace dlscale::detail {

struct Scaled {
  double value;
  std::string_view unit;
};

inline Scaled scale_seconds(double s) {
  const double a = std::fabs(s);
  if (a == 0 || a >= 1) return {s, "s"};
  if (a >= 1e-3) return {s * 1e3, "ms"};
  if (a >= 1e-6) return {s * 1e6, "us"};
  return {s * 1e9, "ns"};
}
inline Scaled scale_decimal(double v, std::string_view b, std::string_view k, std::string_view m, std::string_view g,
                            std::string_view t, std::string_view p) {
  const double a = std::fabs(v);
  if (a >= 1e15) return {v / 1e15, p};
  if (a >= 1e12) return {v / 1e12, t};
  if (a >= 1e9) return {v / 1e9, g};
  if (a >= 1e6) return {v / 1e6, m};
  if (a >= 1e3) return {v / 1e3, k};
  return {v, b};
}

template <class Q>
struct QuantityFormatter {
  bool has_spec = false;
  fmt::formatter<double> inner;

  constexpr auto parse(fmt::format_parse_context& ctx) {
    auto it = ctx.begin();
    has_spec = it != ctx.end() && *it != '}';
    return inner.parse(ctx);
  }
  template <class Ctx>
  auto format_scaled(Scaled s, Ctx& ctx) const {
    auto out = has_spec ? inner.format(s.value, ctx) : fmt::format_to(ctx.out(), "{:.4g}", s.value);
    out = fmt::format_to(out, " {}", s.unit);
    return out;
  }
};

}  // namespace dlscale::detail

template <>
struct fmt::formatter<dlscale::Seconds> : dlscale::detail::QuantityFormatter<dlscale::Seconds> {
  template <class Ctx>
  auto format(dlscale::Seconds v, Ctx& ctx) const {
    return format_scaled(dlscale::detail::scale_seconds(v.base()), ctx);
  }
};
template <>
struct fmt::formatter<dlscale::Bytes> : dlscale::detail::QuantityFormatter<dlscale::Bytes> {
  template <class Ctx>
  auto format(dlscale::Bytes v, Ctx& ctx) const {
    return format_scaled(dlscale::detail::scale_decimal(v.base(), "B", "kB", "MB", "GB", "TB", "PB"), ctx);
  }
};
template <>
struct fmt::formatter<dlscale::BytesPerSecond> : dlscale::detail::QuantityFormatter<dlscale::BytesPerSecond> {
  template <class Ctx>
  auto format(dlscale::BytesPerSecond v, Ctx& ctx) const {
    return format_scaled(dlscale::detail::scale_decimal(v.base(), "B/s", "kB/s", "MB/s", "GB/s", "TB/s", "PB/s"), ctx);
  }
};
template <>
struct fmt::formatter<dlscale::Flops> : dlscale::detail::QuantityFormatter<dlscale::Flops> {
  template <class Ctx>
  auto format(dlscale::Flops v, Ctx& ctx) const {
    return format_scaled(dlscale::detail::scale_decimal(v.base(), "FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP"), ctx);
  }
};
template <>
struct fmt::formatter<dlscale::FlopsPerSecond> : dlscale::detail::QuantityFormatter<dlscale::FlopsPerSecond> {
  template <class Ctx>
  auto format(dlscale::FlopsPerSecond v, Ctx& ctx) const {
    return format_scaled(dlscale::detail::scale_decimal(v.base(), "FLOPS", "kFLOPS", "MFLOPS", "GFLOPS", "TFLOPS", "PFLOPS"),
                         ctx);
  }
};
