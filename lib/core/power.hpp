#pragma once
// A power with its unit, for the GPU catalogue's power limits (docs/compute-model.md, eq. G1). No unit type:
// watts appear nowhere else in the model, only as the key into an entry's documented clock shares.

#include <string_view>

namespace dlscale {

/// "750 W", "750W", "1.2 kW" in watts. A UnitError for a bare number, another unit, zero or a negative value.
double parse_watts(std::string_view text);

}  // namespace dlscale
