// The one JSON writer of a Prediction (lib/plan/prediction_json.hpp).
#include "plan/prediction_json.hpp"

#include "plan/bottleneck_json.hpp"

namespace dlscale {
namespace {
/// The "parallel" member of a prediction's JSON object (nothing without Breakdown::parallel).
void add_parallel_json(nlohmann::ordered_json& e, const Prediction& p) {
  if (!p.breakdown.parallel) return;
  const auto& par = *p.breakdown.parallel;
  auto mem = nlohmann::ordered_json::array();
  for (const auto& m : par.stage_memory) mem.push_back(in_bytes(m));
  e["parallel"] = {{"tp_comm_s", in_seconds(par.tp_comm)}, {"cp_comm_s", in_seconds(par.cp_comm)},
                   {"pp_p2p_s", in_seconds(par.pp_p2p)},   {"bubble_s", in_seconds(par.bubble)},
                   {"dp_comm_s", in_seconds(par.dp_comm)}, {"slowest_stage", par.slowest_stage},
                   {"stage_memory_bytes", std::move(mem)}};
  if (par.ep_comm > Seconds{}) e["parallel"]["ep_comm_s"] = in_seconds(par.ep_comm);  // a mixture of experts (eq. P18)
  if (par.embedding_grads > Seconds{}) e["parallel"]["embedding_grads_s"] = in_seconds(par.embedding_grads);  // eq. P33
}
}  // namespace

nlohmann::ordered_json prediction_json(const Prediction& p, const TrainingCost* train) {
  const auto& b = p.breakdown;
  nlohmann::ordered_json e;
  e["gpus"] = p.gpus;
  e["nodes"] = p.nodes;
  e["batch_per_gpu"] = p.batch_per_gpu;
  e["iteration_time_s"] = in_seconds(p.iteration_time);
  e["throughput_samples_per_s"] = p.throughput_samples_per_s;
  e["throughput_tokens_per_s"] =
      p.throughput_tokens_per_s > 0.0 ? nlohmann::ordered_json(p.throughput_tokens_per_s) : nlohmann::ordered_json(nullptr);
  e["mfu"] = p.mfu;
  // null where the prediction has no baseline to speed up from (0: plan --parallel's layouts are timed alone)
  e["speedup"] = p.speedup > 0.0 ? nlohmann::ordered_json(p.speedup) : nlohmann::ordered_json(nullptr);
  e["efficiency"] = p.speedup > 0.0 ? nlohmann::ordered_json(p.efficiency) : nlohmann::ordered_json(nullptr);
  e["hiding_case"] = p.hiding_case;
  e["boundary_layer"] = p.boundary_layer;
  add_bottleneck_json(e, p);
  e["memory"] = {
      {"per_gpu_bytes", in_bytes(p.memory.per_gpu)}, {"capacity_bytes", in_bytes(p.memory.capacity)}, {"fits", p.memory.fits}};
  if (p.memory.host_per_node > Bytes{}) {  // CPU offload (eq. S9); absent otherwise
    e["memory"]["host_per_node_bytes"] = in_bytes(p.memory.host_per_node);
    e["memory"]["host_capacity_bytes"] = in_bytes(p.memory.host_capacity);
    e["memory"]["host_fits"] = p.memory.host_fits;
    e["offload"] = {{"pcie_bytes_per_gpu", in_bytes(b.offload_bytes)},
                    {"d2h_s", in_seconds(b.offload_d2h)},
                    {"d2h_exposed_s", in_seconds(b.offload_d2h_exposed)},
                    {"cpu_adam_s", in_seconds(b.offload_cpu)},
                    {"h2d_s", in_seconds(b.offload_h2d)}};
  }
  e["breakdown"] = {{"io_s", in_seconds(b.io)},
                    {"h2d_s", in_seconds(b.h2d)},
                    {"forward_s", in_seconds(b.forward)},
                    {"backward_s", in_seconds(b.backward)},
                    {"update_s", in_seconds(b.update)},
                    {"comm_s", in_seconds(b.comm)},
                    {"comm_exposed_s", in_seconds(b.comm_exposed)},
                    {"sync_wait_s", in_seconds(b.sync_wait)},  // the wait for the slowest GPU (jitter_cv)
                    {"overhead_s", in_seconds(b.overhead)}};   // the framework's fixed cost per iteration
  if (b.input_handover > Seconds{})  // eq. F2a: the prefetched batch's hand-over (absent where there is none)
    e["breakdown"]["input_handover_s"] = in_seconds(b.input_handover);
  if (host_floor(b) > Seconds{})  // eq. K20: the parts of forward, backward and update at the host's issue floor
    e["breakdown"]["host_issue"] = {{"forward_s", in_seconds(b.forward_host)},
                                    {"backward_s", in_seconds(b.backward_host)},
                                    {"update_s", in_seconds(b.update_host)}};
  add_parallel_json(e, p);  // model parallelism (parallel_report.cpp); absent otherwise
  if (train) {
    const TrainingCost& c = *train;
    e["time_to_train"] = {{"iterations", c.iterations},
                          {"hours", in_seconds(c.wall_time) / 3600.0},
                          {"gpu_hours", c.gpu_hours},
                          {"cost", c.cost ? nlohmann::ordered_json(*c.cost) : nlohmann::ordered_json(nullptr)},
                          {"currency", c.cost ? nlohmann::ordered_json(c.currency) : nlohmann::ordered_json(nullptr)}};
  }
  return e;
}

}  // namespace dlscale
