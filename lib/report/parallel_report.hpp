// Internal: what the predictions' table and JSON add for a model-parallel step (Breakdown::parallel; issue 37).
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <span>

#include "dlscale/report.hpp"

namespace dlscale {

/// One comment line per parallel prediction under the table: the step's parts and each stage's memory.
void write_parallel_rows(std::ostream& out, std::span<const Prediction> preds);
/// The "parallel" member of a prediction's JSON object (nothing without Breakdown::parallel).
void add_parallel_json(nlohmann::ordered_json& e, const Prediction& p);

}  // namespace dlscale
