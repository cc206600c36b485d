// Internal: what the predictions' table adds for a model-parallel step (its JSON: plan/prediction_json.hpp) (Breakdown::parallel;
// issue 37).
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <span>

#include "dlscale/report.hpp"

namespace dlscale {

/// One comment line per parallel prediction under the table: the step's parts and each stage's memory.
void write_parallel_rows(std::ostream& out, std::span<const Prediction> preds);

}  // namespace dlscale
