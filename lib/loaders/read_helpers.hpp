// Internal: small readers the loaders share.
#pragma once

#include <fmt/format.h>

#include "io/yaml_reader.hpp"

namespace dlscale {

/// A whole number from 0 to `max` held in an int (a count, a version, a width).
inline int small_count(const yamlio::Node& n, int max) {
  const int v = n.int_at_most(max);
  if (v < 0) n.fail(fmt::format("must not be negative, got {}", v));
  return v;
}

}  // namespace dlscale
