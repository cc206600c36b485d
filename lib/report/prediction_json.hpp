// Internal: the one JSON writer of a Prediction (the schema of include/dlscale/report.hpp). `predict`
// prints predictions_json; `simulate` prints it with its "simulation" member added.
#pragma once

#include <nlohmann/json.hpp>
#include <span>

#include "dlscale/report.hpp"
#include "plan/prediction_json.hpp"  // prediction_json, one prediction

namespace dlscale {

/// The whole document: {"schema", "inputs", "predictions"}; `train` empty or one entry per prediction.
nlohmann::ordered_json predictions_json(const RunInfo& info, std::span<const Prediction> preds,
                                        std::span<const TrainingCost> train = {});

/// --explain-sources as JSON: [{"name", "value", "source"}], the value a string with its unit. predictions_json
/// adds it as "sources" when `info.sources` has any; explain adds it to its own document.
nlohmann::ordered_json sources_json(std::span<const ValueSource> sources);

}  // namespace dlscale
