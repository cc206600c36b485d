// Internal: what doubling each resource buys, as `explain` lists it for data parallelism (explain.cpp) and for a
// model-parallel layout (parallel_explain.cpp): the same rows, from Predictor::doubled.
#pragma once

#include <string>
#include <vector>

#include "dlscale/plan.hpp"

namespace dlscale {

/// One row per resource the prediction uses, each with what doubling it means on this scenario (the GPU's peaks,
/// the links, the reader, the host's issue rate where its floor binds) and the throughput it gains.
std::vector<ResourceGain> resource_gains(const Scenario& sc, const Prediction& p, const DoubledTimes& doubled);

/// The rows as explain prints them, under "gain from doubling one resource:".
std::string doubling_text(const std::vector<ResourceGain>& gains);

}  // namespace dlscale
