// Internal: the JSON records plan, plan --parallel and explain share (docs/planning.md, "JSON of plan and
// explain"). Each record has one writer; a prediction inside any of them is predict's (plan/prediction_json.hpp).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "dlscale/parallel.hpp"
#include "dlscale/plan.hpp"

namespace dlscale {

/// {"schema": 1, "command": command}: the head of each of the three documents.
nlohmann::ordered_json plan_document(const char* command);
/// The "inputs" the three documents open with: {"cluster", "gpu", "model", "framework", "precision"}; each adds its own.
nlohmann::ordered_json scenario_inputs_json(const Scenario& sc);
/// A group's placement (eq. P11): {"size", "groups", "inside_node", "nodes", "per_node", "path", "nic_share"}.
nlohmann::ordered_json group_json(const GroupPlacement& g);
/// One row of explain's "gain from doubling one resource": {"resource", "what", "baseline_s", "doubled_s",
/// "throughput_gain", "rescaled"}.
nlohmann::ordered_json resource_gain_json(const ResourceGain& g);
/// A part of an iteration or step: {"part", "time_s", "share"} (share of `whole`; 0 when it is zero).
nlohmann::ordered_json part_json(const std::string& part, Seconds t, Seconds whole);
/// The document as the commands print it: two-space indents and a newline.
std::string dump_document(const nlohmann::ordered_json& j);

}  // namespace dlscale
