// Internal: a prediction's bottleneck as the JSON outputs write it, the same four members in the
// predictions of `predict` (report/predictions.cpp) and in the rows of `sweep --format jsonl`
// (plan/sweep_output.cpp).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "dlscale/predict.hpp"

namespace dlscale {

/// "bottleneck", "bottleneck_resource", "bottleneck_share" and "bottleneck_gain" (bottleneck.hpp); all four null
/// for a prediction that names none (Predictor::TimesOnly: the configurations plan ranks).
inline void add_bottleneck_json(nlohmann::ordered_json& j, const Prediction& p) {
  if (p.bottleneck_resource.empty()) {
    for (const char* key : {"bottleneck", "bottleneck_resource", "bottleneck_share", "bottleneck_gain"}) j[key] = nullptr;
    return;
  }
  j["bottleneck"] = std::string(to_string(p.bottleneck));
  j["bottleneck_resource"] = p.bottleneck_resource.str();
  j["bottleneck_share"] = p.bottleneck_share;
  j["bottleneck_gain"] = p.bottleneck_gain;
}

}  // namespace dlscale
