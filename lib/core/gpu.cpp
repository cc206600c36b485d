// The GPU's precisions (include/dlscale/gpu.hpp; their names are the table beside the type).
#include <fmt/format.h>

#include <stdexcept>
#include <string>

#include "dlscale/gpu.hpp"

namespace dlscale {

Precision precision_from_string(std::string_view name) {
  if (const auto p = enum_from_string<Precision>(name, NameCase::ignore_ascii_case)) return *p;
  throw std::invalid_argument("unknown precision '" + std::string(name) + "' (expected " + std::string(kPrecisionNames) + ")");
}

std::string GpuSpec::missing_mode(Precision p, std::string_view cluster) const {
  const std::string_view needs = p == Precision::tf32 ? "TF32 tensor cores, Ampere or newer"
      : p == Precision::fp8                           ? "fp8 tensor cores, Hopper or newer"
                                                      : "bf16 math, Ampere or newer";
  if (cluster.empty()) return fmt::format("the {} has no {} mode (it needs {})", name, to_string(p), needs);
  return fmt::format("the {} of cluster '{}' has no {} mode (it needs {})", name, cluster, to_string(p), needs);
}

}  // namespace dlscale
