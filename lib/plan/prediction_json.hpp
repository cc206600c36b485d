// Internal: the one JSON writer of a Prediction (the schema of include/dlscale/report.hpp), in the plan layer so that
// plan's and explain's documents (lib/plan) and predict's and simulate's (lib/report, lib/cli) share it.
#pragma once

#include <nlohmann/json.hpp>

#include "dlscale/plan.hpp"
#include "dlscale/predict.hpp"

namespace dlscale {

/// One member of "predictions"; with `train`, its "time_to_train".
nlohmann::ordered_json prediction_json(const Prediction& p, const TrainingCost* train = nullptr);

}  // namespace dlscale
