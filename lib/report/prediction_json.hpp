// Internal: the one JSON writer of a Prediction (the schema of include/dlscale/report.hpp). `predict`
// prints predictions_json; `simulate` prints it with its "simulation" member added.
#pragma once

#include <nlohmann/json.hpp>
#include <span>

#include "dlscale/report.hpp"

namespace dlscale {

/// One member of "predictions"; with `train`, its "time_to_train".
nlohmann::ordered_json prediction_json(const Prediction& p, const TrainingCost* train = nullptr);

/// The whole document: {"schema", "inputs", "predictions"}; `train` empty or one entry per prediction.
nlohmann::ordered_json predictions_json(const RunInfo& info, std::span<const Prediction> preds,
                                        std::span<const TrainingCost> train = {});

}  // namespace dlscale
