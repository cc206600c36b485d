// The model-parallel parts of a prediction in the table and the JSON (lib/report/parallel_report.hpp).
#include "report/parallel_report.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <string>

namespace dlscale {

void write_parallel_rows(std::ostream& out, std::span<const Prediction> preds) {
  for (const auto& p : preds) {
    if (!p.breakdown.parallel) continue;
    const auto& par = *p.breakdown.parallel;
    std::string stages;
    for (std::size_t i = 0; i < par.stage_memory.size(); ++i)
      stages += fmt::format("{}{:.3g}", i ? " " : "", in_bytes(par.stage_memory[i]) / 1e9);
    fmt::print(out,
               "# parallel, {} GPUs: TP {:.4f} s, CP {:.4f} s, {}PP sends {:.4f} s, bubble {:.4f} s, DP {:.4f} s{} "
               "exposed; slowest stage {}; memory per stage (GB): {}\n",
               p.gpus, in_seconds(par.tp_comm), in_seconds(par.cp_comm),
               par.ep_comm > Seconds{} ? fmt::format("EP all-to-all {:.4f} s, ", in_seconds(par.ep_comm)) : std::string(),
               in_seconds(par.pp_p2p), in_seconds(par.bubble), in_seconds(par.dp_comm),
               par.embedding_grads > Seconds{}
                   ? fmt::format(", tied embedding all-reduce {:.4f} s", in_seconds(par.embedding_grads))
                   : std::string(),
               par.slowest_stage, stages);
  }
}

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

}  // namespace dlscale
