// dlscale sweep --spec FILE: many configurations in parallel, to CSV or JSON lines (docs/planning.md).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <sstream>

#include "cli/commands.hpp"
#include "dlscale/error.hpp"
#include "dlscale/sim/simulator.hpp"
#include "dlscale/sweep.hpp"

namespace dlscale::cli {
namespace {

struct SweepCliOptions {
  std::string spec;
  std::string format = "csv";
  std::string output;
  std::size_t top = 0;
  std::string by = "throughput";
  unsigned threads = 0;
  bool simulate = false;
  std::string shard;  // "I/N", empty: the whole sweep
};

struct MergeCliOptions {
  std::vector<std::string> parts;
  std::string output;
};

/// --simulate: the discrete-event simulator with its extras off (docs/simulator.md), one Simulator per group.
class SimulatorEvaluator final : public GroupEvaluator {
 public:
  void evaluate(Scenario sc, std::span<const int> gpus, std::span<Prediction> out) const override {
    const sim::Simulator s(sc, sim::SimOptions{});
    for (std::size_t i = 0; i < gpus.size(); ++i) out[i] = s.run(gpus[i]).prediction;
  }
  std::string name() const override { return "discrete-event simulator (default options)"; }
};

void draw_progress(std::size_t done, std::size_t total) {
  const double f = total ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
  const int width = 40;
  const int filled = static_cast<int>(f * width);
  fmt::print(stderr, "\r[{}{}] {:>3.0f}% {}/{}", std::string(static_cast<std::size_t>(filled), '#'),
             std::string(static_cast<std::size_t>(width - filled), '.'), 100.0 * f, done, total);
  if (done >= total) fmt::print(stderr, "\n");
  std::fflush(stderr);
}

void run_sweep_cli(const SweepCliOptions& o) {
  const SweepFormat format = sweep_format_from_string(o.format);
  const SweepRank by = sweep_rank_from_string(o.by);
  if (o.spec.empty()) throw UsageError("--spec", "is required (or 'dlscale sweep merge PART...' to join the parts of a sweep)");
  std::optional<SweepShard> shard;
  if (!o.shard.empty()) {
    shard = sweep_shard_from_string(o.shard);
    if (o.top > 0)
      throw UsageError("--top", "ranks the whole sweep, not one part: merge the parts ('dlscale sweep merge'), then rank");
  }
  const SweepSpec spec = shard ? shard_sweep_spec(load_sweep_spec(o.spec), *shard) : load_sweep_spec(o.spec);
  SweepOptions so;
  so.threads = o.threads;
  const SimulatorEvaluator sim_eval;
  if (o.simulate) so.evaluator = &sim_eval;
  if (::isatty(STDERR_FILENO)) so.progress = draw_progress;
  const SweepResult r = run_sweep(spec, so);
  if (r.skipped) {
    fmt::print(stderr, "dlscale sweep: {} configuration{} left out (the cluster cannot hold the GPU count), e.g. {}\n", r.skipped,
               r.skipped > 1 ? "s" : "", r.skipped_examples.front());
  }
  if (r.unsupported) {
    fmt::print(stderr,
               "dlscale sweep: {} configuration{} left out (the GPU has no such precision mode or fp8 scaling), e.g. {}\n",
               r.unsupported, r.unsupported > 1 ? "s" : "", r.unsupported_examples.front());
  }
  if (const auto invalid = static_cast<std::size_t>(
          std::count_if(r.rows.begin(), r.rows.end(), [](const SweepRow& row) { return !row.error.empty(); }))) {
    const auto first = std::find_if(r.rows.begin(), r.rows.end(), [](const SweepRow& row) { return !row.error.empty(); });
    fmt::print(
        stderr,
        "dlscale sweep: {} configuration{} with a layout that cannot run (the 'error' column says why), e.g. {} GPUs: {}\n",
        invalid, invalid > 1 ? "s" : "", first->prediction.gpus, first->error);
  }
  std::vector<std::size_t> rows;
  if (o.top > 0) {
    std::string note;
    rows = top_rows(spec, r, o.top, by, &note);
    if (!note.empty()) fmt::print(stderr, "dlscale sweep: {}\n", note);
  }
  std::ostringstream out;
  write_sweep(out, format, spec, r, rows);
  emit(out.str(), o.output);
}

void run_merge_cli(const MergeCliOptions& o) {
  const std::vector<std::filesystem::path> parts(o.parts.begin(), o.parts.end());
  emit(merge_sweep_parts(parts), o.output);
}

}  // namespace

void setup_sweep(CLI::App& app) {
  auto opt = std::make_shared<SweepCliOptions>();
  auto* cmd = app.add_subcommand("sweep", "Evaluate a grid or list of configurations in parallel (CSV or JSON lines)");
  cmd->add_option("--spec", opt->spec, "Sweep spec (YAML; docs/planning.md)")->type_name("FILE");
  cmd->add_option("--shard", opt->shard,
                  "Evaluate only part I of N (1 <= I <= N): parts 1..N, merged in order, are the whole sweep")
      ->type_name("I/N");
  cmd->add_option("--format", opt->format, "csv or jsonl")->capture_default_str();
  cmd->add_option("-o,--output", opt->output, "Write to FILE (atomically) instead of standard output")->type_name("FILE");
  cmd->add_option("--top", opt->top, "Keep the best K rows of those that fit in memory")->type_name("K");
  cmd->add_option("--by", opt->by, "Rank by throughput (samples/s), tokens (tokens/s, of token models' rows), efficiency or cost")
      ->capture_default_str();
  cmd->add_option("--threads", opt->threads, "Worker threads (default: all cores)")->type_name("N");
  cmd->add_flag("--simulate", opt->simulate, "Evaluate with the discrete-event simulator instead of the closed form");
  auto mopt = std::make_shared<MergeCliOptions>();
  auto* merge = cmd->add_subcommand("merge", "Join the parts of a sweep run with --shard (CSV or JSON lines), in order");
  merge->add_option("PART", mopt->parts, "Output files of --shard 1/N ... N/N, in order")->required()->type_name("FILE");
  merge->add_option("-o,--output", mopt->output, "Write to FILE (atomically) instead of standard output")->type_name("FILE");
  merge->callback([mopt] { run_merge_cli(*mopt); });
  cmd->callback([opt, merge] {
    if (merge->parsed()) return;
    run_sweep_cli(*opt);
  });
}

}  // namespace dlscale::cli
