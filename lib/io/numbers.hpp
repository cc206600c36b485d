// Internal: number parsing that never throws (std::stoi/std::stod throw std::invalid_argument and
// std::out_of_range, which a parser must turn into a one-line InputError instead).
#pragma once

#include <charconv>
#include <cmath>
#include <optional>
#include <string_view>

namespace dlscale {

/// All of `s` as a whole number in [lo, hi]; nothing for anything else (empty, junk, overflow).
inline std::optional<long long> whole_number(std::string_view s, long long lo, long long hi) noexcept {
  long long v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size() || v < lo || v > hi) return std::nullopt;
  return v;
}

/// All of `s` as a finite decimal number; nothing for anything else (empty, junk, inf, nan).
inline std::optional<double> finite_number(std::string_view s) noexcept {
  double v = 0.0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace dlscale
