// The model-parallel parts of a prediction in the table and the JSON (lib/report/parallel_report.hpp).
#include "report/parallel_report.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <string>

namespace dlscale {

namespace {
/// Eq. P43's terms where a layout has them: the wait for the slowest GPU and the framework's per-iteration overhead.
std::string sync_part(const Breakdown& b) {
  std::string out;
  if (b.sync_wait > Seconds{}) out += fmt::format("; slowest-GPU wait {:.4f} s", in_seconds(b.sync_wait));
  if (b.overhead > Seconds{}) out += fmt::format("; overhead {:.4f} s", in_seconds(b.overhead));
  return out;
}
}  // namespace

void write_parallel_rows(std::ostream& out, std::span<const Prediction> preds) {
  for (const auto& p : preds) {
    if (!p.breakdown.parallel) continue;
    const auto& par = *p.breakdown.parallel;
    std::string stages;
    for (std::size_t i = 0; i < par.stage_memory.size(); ++i)
      stages += fmt::format("{}{:.3g}", i ? " " : "", in_bytes(par.stage_memory[i]) / 1e9);
    fmt::print(out,
               "# parallel, {} GPUs: TP {:.4f} s, CP {:.4f} s, {}PP sends {:.4f} s, bubble {:.4f} s, DP {:.4f} s{} "
               "exposed{}; slowest stage {}; memory per stage (GB): {}\n",
               p.gpus, in_seconds(par.tp_comm), in_seconds(par.cp_comm),
               par.ep_comm > Seconds{} ? fmt::format("EP all-to-all {:.4f} s, ", in_seconds(par.ep_comm)) : std::string(),
               in_seconds(par.pp_p2p), in_seconds(par.bubble), in_seconds(par.dp_comm),
               par.embedding_grads > Seconds{}
                   ? fmt::format(", tied embedding all-reduce {:.4f} s", in_seconds(par.embedding_grads))
                   : std::string(),
               sync_part(p.breakdown), par.slowest_stage, stages);
  }
}

}  // namespace dlscale
