// The JSON records plan, plan --parallel and explain share (lib/plan/plan_json.hpp).
#include "plan/plan_json.hpp"

#include "dlscale/format.hpp"

namespace dlscale {

nlohmann::ordered_json plan_document(const char* command) {
  nlohmann::ordered_json j;
  j["schema"] = 1;
  j["command"] = command;
  return j;
}

nlohmann::ordered_json scenario_inputs_json(const Scenario& sc) {
  return {{"cluster", sc.cluster.name},
          {"gpu", sc.cluster.gpu.name},
          {"model", sc.network.name},
          {"framework", sc.strategy.name},
          {"precision", precision_label(sc.compute.precision, sc.compute.fp8_scaling)}};
}

nlohmann::ordered_json group_json(const GroupPlacement& g) {
  return {{"size", g.size},         {"groups", g.groups},        {"inside_node", g.inside_node}, {"nodes", g.nodes},
          {"per_node", g.per_node}, {"path", to_string(g.path)}, {"nic_share", g.nic_share}};
}

nlohmann::ordered_json resource_gain_json(const ResourceGain& g) {
  return {{"resource", to_string(g.resource)},    {"what", g.what},
          {"baseline_s", in_seconds(g.baseline)}, {"doubled_s", in_seconds(g.doubled)},
          {"throughput_gain", g.throughput_gain}, {"rescaled", g.rescaled}};
}

nlohmann::ordered_json part_json(const std::string& part, Seconds t, Seconds whole) {
  return {{"part", part}, {"time_s", in_seconds(t)}, {"share", whole > Seconds{} ? t / whole : 0.0}};
}

std::string dump_document(const nlohmann::ordered_json& j) { return j.dump(2) + '\n'; }

}  // namespace dlscale
