#include "dlscale/units.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <string>
#include <utility>

#include "core/power.hpp"
#include "dlscale/error.hpp"

namespace dlscale {
namespace {

struct UnitScale {
  std::string_view unit;
  double scale;  // to base units
};

constexpr std::array kTime{UnitScale{"s", 1.0},   UnitScale{"ms", 1e-3},  UnitScale{"us", 1e-6}, UnitScale{"\xC2\xB5s", 1e-6},
                           UnitScale{"ns", 1e-9}, UnitScale{"min", 60.0}, UnitScale{"h", 3600.0}};

constexpr std::array kSize{UnitScale{"B", 1.0},
                           UnitScale{"kB", 1e3},
                           UnitScale{"KB", 1e3},
                           UnitScale{"MB", 1e6},
                           UnitScale{"GB", 1e9},
                           UnitScale{"TB", 1e12},
                           UnitScale{"PB", 1e15},
                           UnitScale{"KiB", 1024.0},
                           UnitScale{"MiB", 1048576.0},
                           UnitScale{"GiB", 1073741824.0},
                           UnitScale{"TiB", 1099511627776.0}};

constexpr std::array kBitRate{UnitScale{"b/s", 1.0},  UnitScale{"kb/s", 1e3},  UnitScale{"Kb/s", 1e3}, UnitScale{"Mb/s", 1e6},
                              UnitScale{"Gb/s", 1e9}, UnitScale{"Tb/s", 1e12}, UnitScale{"bps", 1.0},  UnitScale{"kbps", 1e3},
                              UnitScale{"Kbps", 1e3}, UnitScale{"Mbps", 1e6},  UnitScale{"Gbps", 1e9}, UnitScale{"Tbps", 1e12}};

constexpr std::array kPrefix{UnitScale{"", 1.0},  UnitScale{"k", 1e3},  UnitScale{"K", 1e3}, UnitScale{"M", 1e6},
                             UnitScale{"G", 1e9}, UnitScale{"T", 1e12}, UnitScale{"P", 1e15}};

struct Split {
  double value;
  std::string_view unit;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

Split split(std::string_view text, std::string_view what) {
  const std::string_view s = trim(text);
  if (s.empty()) throw UnitError(std::string("empty ") + std::string(what) + " value");
  const char* first = s.data();
  if (*first == '+') ++first;
  double v = 0;
  auto [ptr, ec] = std::from_chars(first, s.data() + s.size(), v);
  if (ec != std::errc() || !std::isfinite(v)) {
    throw UnitError("'" + std::string(text) + "' is not a " + std::string(what) + " (expected a number and a unit)");
  }
  const std::string_view unit = trim(std::string_view(ptr, static_cast<std::size_t>(s.data() + s.size() - ptr)));
  if (unit.empty()) {
    throw UnitError("'" + std::string(text) + "' has no unit (" + std::string(what) + " needs one, e.g. " +
                    (what == "time"            ? "\"5 us\""
                         : what == "size"      ? "\"25 MiB\""
                         : what == "bandwidth" ? "\"25 GB/s\""
                         : what == "power"     ? "\"750 W\""
                                               : "\"15.7 TFLOPS\"") +
                    ")");
  }
  if (v < 0) throw UnitError("'" + std::string(text) + "' is negative");
  return {v, unit};
}

template <std::size_t N>
const UnitScale* find(const std::array<UnitScale, N>& table, std::string_view unit) {
  for (const auto& u : table)
    if (u.unit == unit) return &u;
  return nullptr;
}

[[noreturn]] void unknown_unit(std::string_view text, std::string_view unit, std::string_view what, std::string_view examples) {
  throw UnitError("unknown " + std::string(what) + " unit '" + std::string(unit) + "' in '" + std::string(text) + "' (use " +
                  std::string(examples) + ")");
}

double prefixed(std::string_view unit, std::string_view stem) {
  // unit = <prefix><stem>
  if (unit.size() < stem.size() || unit.substr(unit.size() - stem.size()) != stem) return -1;
  const auto* p = find(kPrefix, unit.substr(0, unit.size() - stem.size()));
  return p ? p->scale : -1;
}

void require_positive(double v, std::string_view text) {
  if (v == 0) throw UnitError("'" + std::string(text) + "' must be greater than zero");
}

/// v·scale in base units; a product past the largest double (e.g. "1e300 TB/s") is an error, not infinity.
double in_base(double v, double scale, std::string_view text) {
  const double x = v * scale;
  if (!std::isfinite(x)) throw UnitError("'" + std::string(text) + "' is too large");
  return x;
}

/// A rate below `floor` (base units) is no physical link, disk or processor: an exponent or unit typed wrong
/// ("1e-300 GB/s" would make a 300-digit iteration time and blame the wrong link).
void require_physical(double x, double floor, std::string_view floor_text, std::string_view text) {
  if (x < floor)
    throw UnitError("'" + std::string(text) + "' is below " + std::string(floor_text) + ", slower than any real hardware");
}

/// A rate's value in base units: greater than zero and not below `floor`.
double physical_rate(double v, double scale, double floor, std::string_view floor_text, std::string_view text) {
  require_positive(v, text);
  const double x = in_base(v, scale, text);
  require_physical(x, floor, floor_text, text);
  return x;
}

/// "<number> <SI prefix><stem>" (e.g. "2.5 GHz") in base units; `examples` lists the units an error suggests.
double prefixed_value(std::string_view text, std::string_view what, std::string_view stem, std::string_view examples) {
  const auto [v, unit] = split(text, what);
  const double s = prefixed(unit, stem);
  if (s < 0) unknown_unit(text, unit, what, examples);
  return in_base(v, s, text);
}

}  // namespace

Seconds parse_seconds(std::string_view text) {
  const auto [v, unit] = split(text, "time");
  if (const auto* u = find(kTime, unit)) return Seconds::from_base(in_base(v, u->scale, text));
  unknown_unit(text, unit, "time", "s, ms, us, ns");
}

Bytes parse_bytes(std::string_view text) {
  const auto [v, unit] = split(text, "size");
  if (const auto* u = find(kSize, unit)) return Bytes::from_base(in_base(v, u->scale, text));
  unknown_unit(text, unit, "size", "B, kB, MB, GB, KiB, MiB, GiB");
}

BytesPerSecond parse_bandwidth(std::string_view text) {
  const auto [v, unit] = split(text, "bandwidth");
  double scale = -1;
  if (unit.size() > 2 && unit.substr(unit.size() - 2) == "/s") {
    if (const auto* u = find(kSize, unit.substr(0, unit.size() - 2))) scale = u->scale;
  }
  if (scale < 0 && unit.size() > 3 && unit.substr(unit.size() - 3) == "Bps") {
    if (const auto* u = find(kSize, unit.substr(0, unit.size() - 2))) scale = u->scale;
  }
  if (scale < 0) {
    if (const auto* u = find(kBitRate, unit)) scale = u->scale / 8.0;
  }
  if (scale < 0) unknown_unit(text, unit, "bandwidth", "B/s, MB/s, GB/s, GiB/s, Mb/s, Gb/s");
  return BytesPerSecond::from_base(physical_rate(v, scale, 1e3, "1 kB/s", text));
}

Flops parse_flops(std::string_view text) {
  return Flops::from_base(prefixed_value(text, "FLOP count", "FLOP", "FLOP, MFLOP, GFLOP, TFLOP"));
}

FlopsPerSecond parse_flops_rate(std::string_view text) {
  const auto [v, unit] = split(text, "FLOP rate");
  double s = prefixed(unit, "FLOPS");
  if (s < 0) s = prefixed(unit, "FLOP/s");
  if (s < 0) unknown_unit(text, unit, "FLOP rate", "GFLOPS, TFLOPS, TFLOP/s");
  return FlopsPerSecond::from_base(physical_rate(v, s, 1e6, "1 MFLOPS", text));
}

Hertz parse_frequency(std::string_view text) { return Hertz::from_base(prefixed_value(text, "frequency", "Hz", "Hz, MHz, GHz")); }

double parse_watts(std::string_view text) {
  const auto [v, unit] = split(text, "power");
  require_positive(v, text);
  const double s = prefixed(unit, "W");
  if (s < 0) unknown_unit(text, unit, "power", "W, kW");
  return in_base(v, s, text);
}

}  // namespace dlscale
