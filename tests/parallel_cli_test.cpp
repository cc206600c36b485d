// The model-parallel options on the command line (issue 37): bad layouts are one line naming the option, exit
// 2, nothing written; a framework file's `parallel:` section is a layout; the simulator refuses one.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numbers>
#include <ostream>
#include <string>
#include <vector>

#include "support/run.hpp"
#include "support/table_json.hpp"

namespace dlscale {
namespace {
namespace fs = std::filesystem;
using test::run_cli;

// Llama-2-70B (64 heads, 8 key/value heads, 80 blocks, 4096 tokens) on 8 DGX H100 nodes with Megatron-Core.
const std::string kCommon = "predict --cluster dgx-h100-ndr --nodes 8 --model llama2-70b --precision bf16 ";
const std::string kBase = kCommon + "--framework megatron-core ";

/// A framework file as megatron-core.yaml but for its `parallel:` section, `parallel` (the map's inside).
std::filesystem::path megatron_file(const std::string& name, const std::string& parallel) {
  return test::temp_file(name + ".yaml",
                         "name: " + name +
                             "\n"
                             "io: {prefetch: true, memory: pinned}\n"
                             "aggregation: allreduce\n"
                             "overlap: bucketed\n"
                             "update: after_aggregation\n"
                             "attention: flash\n"
                             "compile: true\n"
                             "buckets: {size: \"80 MB\", first: \"80 MB\"}\n"
                             "sharding: {stage: 1, group: all}\n"
                             "kernels: {host_issue: \"16.4 us\", launch_gap: \"2.1 us\", attention: cudnn}\n"
                             "jitter_cv: 0.0055\n"  // megatron-core.yaml's: eq. P43 charges its wait on a layout too
                             "parallel: {" +
                             parallel + "}\n");
}

struct Bad {
  std::string args, option;
};

void PrintTo(const Bad& b, std::ostream* os) { *os << b.args; }

class ParallelBadInput : public ::testing::TestWithParam<Bad> {};

TEST_P(ParallelBadInput, OneLineNamingTheOptionExitTwoNothingWritten) {
  const Bad& b = GetParam();
  const fs::path out = fs::temp_directory_path() / ("dlscale-parallel-cli-" + std::to_string(::getpid()));
  fs::remove(out);
  const auto r = run_cli(kBase + b.args + " -o " + out.string());
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("'" + b.option + "'"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, ParallelBadInput,
    ::testing::Values(Bad{"--tp 8 --pp 4 --micro-batches 8 --gpus 48", "--gpus"},  // 32 does not divide 48
                      Bad{"--tp 3 --gpus 48", "--tp"},                             // 3 does not divide 64 heads
                      Bad{"--tp 128 --gpus 64", "--tp"},                           // more ranks than heads
                      Bad{"--pp 160 --gpus 64", "--pp"},                           // more stages than 80 blocks
                      Bad{"--cp 3 --gpus 48", "--cp"},                             // 4096 tokens in 6 chunks
                      Bad{"--tp 8 --vp 2 --gpus 64", "--vp"},                      // virtual stages without a pipeline's m
                      Bad{"--tp 8 --pp 2 --global-batch 102 --gpus 64", "--global-batch"},  // 102 over 4 DP ranks
                      Bad{"--tp 8 --schedule zigzag", "--schedule"}, Bad{"--tp 8 --rank-order tp-dp-pp", "--rank-order"},
                      Bad{"--tp 8 --micro-batches 4 --global-batch 64", "--global-batch"},
                      Bad{"--tp 8 --tp-comm-overlap --gpus 64", "--tp-comm-overlap"},  // TE's overlap needs SP
                      Bad{"--tp 8 --ep 2 --gpus 64", "--ep"},                          // experts on a dense model
                      Bad{"--tp 8 --cp 2 --cp-comm a2a --gpus 64", "--cp-comm"},       // Ulysses: 1 key/value head a TP rank
                      Bad{"--cp 2 --cp-comm ring --gpus 64", "--cp-comm"},             // not one of Megatron's names
                      // eq. P31: 80 blocks on pp 8, 10 a chunk; a method Megatron does not have
                      Bad{"--tp 8 --pp 8 --checkpointing full --recompute-num-layers 11 --gpus 64", "--recompute-num-layers"},
                      Bad{"--tp 8 --checkpointing full --recompute-method diagonal", "--recompute-method"},
                      // eq. P35: Megatron asserts it off with SP, and it acts on full recompute's checkpoints
                      Bad{"--tp 8 --sp --checkpointing full --distribute-saved-activations --gpus 64",
                          "--distribute-saved-activations"},
                      Bad{"--tp 8 --no-sp --distribute-saved-activations --gpus 64", "--distribute-saved-activations"},
                      // eq. P36: a2a+p2p's inner size divides cp; given only with a2a+p2p
                      Bad{"--tp 8 --cp 4 --cp-comm a2a+p2p --hierarchical-cp 3 --gpus 64", "--hierarchical-cp"},
                      Bad{"--tp 8 --cp 4 --hierarchical-cp 2 --gpus 64", "--hierarchical-cp"}));

TEST(ParallelCli, PredictsALayoutWithItsPartsAndMemory) {
  const auto r = run_cli(kBase + "--tp 8 --sp --pp 2 --micro-batches 32 --gpus 64 --no-train");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("# layout: tp 8 (sp, async backward) × pp 2 (1f1b) × cp 1, micro-batch 1, 32 micro-batches"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("# parallel, 64 GPUs: TP "), std::string::npos) << r.out;
}

// Eq. P29: the layout line names a CP exchange other than the ring; torchtitan's is all_gather (its default rotate
// method), megatron-core's the ring; --cp-comm over either. The ring's CP part is what its sends leave past the
// attention; all_gather's gather and reduce-scatter, whole, are more here (TP 8, CP 2 inside a node).
TEST(ParallelCli, CpCommInTheLayoutAndTheFrameworks) {
  const std::string layout = "--tp 8 --sp --pp 2 --cp 2 --micro-batches 8 --gpus 64 --no-train";
  const auto part = [](const std::string& out) {
    const auto at = out.find(", CP ");
    return at == std::string::npos ? -1.0 : std::stod(out.substr(at + 5));
  };
  const auto ring = run_cli(kBase + layout);
  ASSERT_EQ(ring.status, 0) << ring.err;
  EXPECT_NE(ring.out.find("× cp 2, micro-batch"), std::string::npos) << ring.out;
  const auto gather = run_cli(kBase + layout + " --cp-comm all_gather");
  ASSERT_EQ(gather.status, 0) << gather.err;
  EXPECT_NE(gather.out.find("× cp 2 (all_gather), micro-batch"), std::string::npos) << gather.out;
  EXPECT_GT(part(gather.out), part(ring.out));
  const auto titan = run_cli(kCommon + "--framework torchtitan " + layout);
  ASSERT_EQ(titan.status, 0) << titan.err;
  EXPECT_NE(titan.out.find("× cp 2 (all_gather), micro-batch"), std::string::npos) << titan.out;
  const auto titan_ring = run_cli(kCommon + "--framework torchtitan " + layout + " --cp-comm p2p");
  ASSERT_EQ(titan_ring.status, 0) << titan_ring.err;
  EXPECT_NE(titan_ring.out.find("× cp 2, micro-batch"), std::string::npos) << titan_ring.out;
  const auto ex = run_cli("explain " + kCommon.substr(8) +
                          "--framework megatron-core --tp 4 --sp --pp 2 --cp 2 --micro-batches 8 --gpus 64 --cp-comm a2a");
  EXPECT_EQ(ex.status, 0) << ex.err;
  EXPECT_NE(ex.out.find("cp 2 (a2a)"), std::string::npos) << ex.out;
}

// Eq. P31 on the command line and in a framework file: the first 5 of each stage's 10 blocks recomputed run fewer
// forwards again than every block (and more than none), and the file's keys are the options.
TEST(ParallelCli, PartialFullRecomputeFromTheOptionsAndTheFile) {
  const std::string layout = "--tp 8 --sp --pp 8 --micro-batches 32 --gpus 64 --no-train --format json ";
  const auto step = [](const std::string& json) {
    const auto at = json.find("\"iteration_time_s\"");
    return std::stod(json.substr(json.find(':', at) + 1));
  };
  const auto full = run_cli(kBase + layout + "--checkpointing full");
  ASSERT_EQ(full.status, 0) << full.err;
  const auto half = run_cli(kBase + layout + "--checkpointing full --recompute-method block --recompute-num-layers 5");
  ASSERT_EQ(half.status, 0) << half.err;
  const auto none = run_cli(kBase + layout);
  ASSERT_EQ(none.status, 0) << none.err;
  EXPECT_LT(step(half.out), step(full.out));
  EXPECT_GT(step(half.out), step(none.out));
  const auto text = run_cli(kBase +
                            "--tp 8 --sp --pp 8 --micro-batches 32 --gpus 64 --no-train --checkpointing full "
                            "--recompute-method block --recompute-num-layers 5");
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find(", full recompute block 5"), std::string::npos) << text.out;
  const auto explain = run_cli(
      "explain --cluster dgx-h100-ndr --nodes 8 --model llama2-70b --precision bf16 --framework "
      "megatron-core --tp 8 --sp --pp 8 --micro-batches 32 --gpus 64 --checkpointing full "
      "--recompute-method block --recompute-num-layers 5");
  ASSERT_EQ(explain.status, 0) << explain.err;
  EXPECT_NE(explain.out.find("; recompute full (block 5);"), std::string::npos) << explain.out;
  const auto fw = megatron_file(
      "megatron-block5",
      "tp: 8, sp: true, tp_async_backward: true, pp: 8, micro_batches: 32, recompute_method: block, recompute_num_layers: 5");
  const auto file = run_cli(kCommon + "--format json --no-train --checkpointing full --gpus 64 --framework " + fw.string());
  ASSERT_EQ(file.status, 0) << file.err;
  const auto opts = run_cli(kBase +
                            "--format json --no-train --tp 8 --sp --pp 8 --micro-batches 32 --gpus 64 "
                            "--checkpointing full --recompute-method block --recompute-num-layers 5");
  ASSERT_EQ(opts.status, 0) << opts.err;
  EXPECT_DOUBLE_EQ(step(file.out), step(opts.out));
}

// Eq. P35 on the command line and in a framework file: distributing the checkpoints' inputs over TP 8 (no SP) keeps
// an eighth of them and gathers each before its recompute: a slower step, less memory; the file's key is the option.
TEST(ParallelCli, DistributedSavedActivationsFromTheOptionAndTheFile) {
  const std::string layout = "--tp 8 --no-sp --pp 8 --micro-batches 32 --gpus 64 --no-train --checkpointing full --format json ";
  const auto number = [](const std::string& json, const std::string& key) {
    const auto at = json.find("\"" + key + "\"");
    return std::stod(json.substr(json.find(':', at) + 1));
  };
  const auto whole = run_cli(kBase + layout);
  ASSERT_EQ(whole.status, 0) << whole.err;
  const auto split = run_cli(kBase + layout + "--distribute-saved-activations");
  ASSERT_EQ(split.status, 0) << split.err;
  EXPECT_GT(number(split.out, "iteration_time_s"), number(whole.out, "iteration_time_s"));
  EXPECT_GT(number(split.out, "tp_comm_s"), number(whole.out, "tp_comm_s"));
  const auto text = run_cli(kBase +
                            "--tp 8 --no-sp --pp 8 --micro-batches 32 --gpus 64 --no-train --checkpointing full "
                            "--distribute-saved-activations");
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find(", saved activations distributed"), std::string::npos) << text.out;
  const auto fw =
      megatron_file("megatron-distributed",
                    "tp: 8, sp: false, tp_async_backward: true, pp: 8, micro_batches: 32, distribute_saved_activations: true");
  const auto file = run_cli(kCommon + "--format json --no-train --checkpointing full --gpus 64 --framework " + fw.string());
  ASSERT_EQ(file.status, 0) << file.err;
  EXPECT_DOUBLE_EQ(number(file.out, "iteration_time_s"), number(split.out, "iteration_time_s"));
}

// Eq. P36 on the command line and in a framework file: Llama-2-70B at CP 4 as 2×2 (8 key/value heads over TP 2, 4 a
// rank, divisible by 2); the header names the groups, and the file's keys are the options.
TEST(ParallelCli, HierarchicalCpFromTheOptionsAndTheFile) {
  const std::string layout = "--tp 2 --cp 4 --pp 8 --micro-batches 8 --gpus 64 --no-train --format json ";
  const auto step = [](const std::string& json) {
    const auto at = json.find("\"iteration_time_s\"");
    return std::stod(json.substr(json.find(':', at) + 1));
  };
  const auto opts = run_cli(kBase + layout + "--cp-comm a2a+p2p --hierarchical-cp 2");
  ASSERT_EQ(opts.status, 0) << opts.err;
  const auto text = run_cli(kBase +
                            "--tp 2 --cp 4 --pp 8 --micro-batches 8 --gpus 64 --no-train --cp-comm a2a+p2p "
                            "--hierarchical-cp 2");
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("cp 4 (a2a+p2p 2×2)"), std::string::npos) << text.out;
  const auto fw = megatron_file(
      "megatron-hcp",
      "tp: 2, sp: false, tp_async_backward: true, cp: 4, pp: 8, micro_batches: 8, cp_comm: a2a+p2p, hierarchical_cp: 2");
  const auto file = run_cli(kCommon + "--format json --no-train --gpus 64 --framework " + fw.string());
  ASSERT_EQ(file.status, 0) << file.err;
  EXPECT_DOUBLE_EQ(step(file.out), step(opts.out));
}

// DeepSeek-V3 (multi-head latent attention, 256 experts) under Megatron-Core's TP 8 × PP 8 × EP 8 on 128 DGX H100
// nodes; TP must divide its 128 heads.
TEST(ParallelCli, DeepSeekV3PredictsUnderTpPpEp) {
  const std::string on =
      "predict --cluster dgx-h100-ndr --nodes 128 --model deepseek-v3 --framework megatron-core --precision bf16 ";
  const auto r = run_cli(on + "--tp 8 --sp --pp 8 --ep 8 --global-batch 1024 --no-train");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("# layout: tp 8 (sp, async backward) × pp 8 (1f1b) × cp 1 × ep 8, micro-batch 1, global batch 1024"),
            std::string::npos)
      << r.out;
  const auto bad = run_cli(on + "--tp 3 --pp 8 --ep 8 --gpus 960 --no-train");
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.err, "dlscale: '--tp': tp 3 does not divide the 128 attention heads\n");
}

TEST(ParallelCli, FrameworkFileGivesTheLayout) {
  const auto fw = megatron_file("megatron-tp8", "tp: 8, sp: true, tp_async_backward: true, pp: 2, micro_batches: 32");
  const auto a = run_cli(kCommon + "--format json --no-train --framework " + fw.string());
  ASSERT_EQ(a.status, 0) << a.err;
  const auto b = run_cli(kBase + "--format json --no-train --tp 8 --sp --pp 2 --micro-batches 32");
  ASSERT_EQ(b.status, 0) << b.err;
  // the same step: the file's section is the options' layout (the framework's name aside)
  const auto step = [](const std::string& json) { return json.substr(json.find("\"iteration_time_s\""), 60); };
  EXPECT_EQ(step(a.out), step(b.out));
  EXPECT_NE(a.out.find("\"parallel\""), std::string::npos);
}

// Eq. P39 on the command line: each trivial layout option alone predicts the step without it (the issue's case:
// torchtitan's Llama-3-8B on 8 H100s read 1.2927 s against 1.3132 s with --tp 1); --sp at tp 1 acts on nothing and says
// so on stderr; --micro-batches 3 is --accumulate 3; the layout line names it data parallelism, the speedup eq. 8's.
TEST(ParallelCli, ATrivialLayoutIsThePlainPrediction) {
  const std::string cmd =
      "predict --cluster dgx-h100-ndr --model llama3-8b --framework torchtitan --precision bf16 --batch 1 "
      "--gpus 8 --no-train --format json ";
  const auto plain = run_cli(cmd);
  ASSERT_EQ(plain.status, 0) << plain.err;
  const auto predictions = [](const std::string& out) { return nlohmann::json::parse(out)["predictions"]; };
  for (const char* o : {"--tp 1", "--pp 1", "--sp", "--micro-batches 1", "--rank-order tp-cp-dp-pp", "--ep 1"}) {
    const auto r = run_cli(cmd + o);
    ASSERT_EQ(r.status, 0) << o << ": " << r.err;
    EXPECT_EQ(predictions(r.out), predictions(plain.out)) << o;
    EXPECT_NE(r.out.find("data parallelism, 1 micro-batches accumulated (eq. P39)"), std::string::npos) << o;
    EXPECT_EQ(r.err.find("with tp 1 there is none") != std::string::npos, std::string(o) == "--sp") << o << ": " << r.err;
  }
  const auto m = run_cli(cmd + "--micro-batches 3"), k = run_cli(cmd + "--accumulate 3");
  ASSERT_EQ(m.status, 0) << m.err;
  ASSERT_EQ(k.status, 0) << k.err;
  EXPECT_EQ(predictions(m.out), predictions(k.out));
  // an option that acts on groups of one rank only: the same step, one note naming it
  const auto idle = run_cli(cmd + "--tp 1 --no-dp-comm-overlap");
  ASSERT_EQ(idle.status, 0) << idle.err;
  EXPECT_EQ(predictions(idle.out), predictions(plain.out));
  EXPECT_NE(idle.err.find("(eq. P39): --[no-]dp-comm-overlap act on nothing there"), std::string::npos) << idle.err;
  const auto table = run_cli(
      "predict --cluster dgx-h100-ndr --model llama3-8b --framework torchtitan --precision bf16 "
      "--batch 1 --gpus 8 --no-train --tp 1");
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("# layout: tp 1 × pp 1 × cp 1"), std::string::npos) << table.out;  // no "(sp)" at tp 1
  EXPECT_NE(table.out.find("(eq. 8)"), std::string::npos) << table.out;
}

TEST(ParallelCli, BadFrameworkSectionFailsAtItsLine) {
  const auto fw = test::temp_file("bad-schedule.yaml",
                                  "name: bad\n"
                                  "io: {prefetch: true, memory: pinned}\n"
                                  "aggregation: allreduce\n"
                                  "overlap: layerwise\n"
                                  "update: after_aggregation\n"
                                  "parallel: {schedule: zigzag}\n");
  const auto r = run_cli(kCommon + "--framework " + fw.string());
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("bad-schedule.yaml:6:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("unknown pipeline schedule 'zigzag'"), std::string::npos) << r.err;
}

// Eq. P40: a hybrid framework whose shard group does not divide the layout's data-parallel ranks (3 of TP 4's DP 16
// on 64 GPUs), or exceeds them (32): one line naming the key, exit 2, nothing written; fsdp-hybrid's own `node` group
// (2 of them a node) runs.
TEST(ParallelCli, HybridShardGroupThatDoesNotDivideTheDataParallelRanksFails) {
  for (int n : {3, 32}) {
    const auto fw = test::temp_file(fmt::format("hsdp-{}.yaml", n),
                                    "name: hsdp\n"
                                    "io: {prefetch: true, memory: pinned}\n"
                                    "aggregation: allreduce\n"
                                    "overlap: layerwise\n"
                                    "update: after_aggregation\n" +
                                        fmt::format("sharding: {{stage: 3, group: {}}}\n", n));
    const fs::path out = fs::temp_directory_path() / ("dlscale-parallel-cli-hsdp-" + std::to_string(::getpid()));
    fs::remove(out);
    const auto r = run_cli(kCommon + "--framework " + fw.string() + " --gpus 64 --tp 4 -o " + out.string());
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(fmt::format("groups of {} data-parallel ranks", n)), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("(dp 16 × cp 1)"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out));
  }
  const auto ok = run_cli(kCommon + "--framework fsdp-hybrid --gpus 64 --tp 4");
  EXPECT_EQ(ok.status, 0) << ok.err;
  // explain names the groups: DP 16 with 2 ranks a node, so 4 TP ranks × 8 nodes = 32 shard groups of 2 inside a node,
  // and for each of the 4 dp·cp groups 2 replica groups of 8, one rank a node
  const std::string explain = "explain" + kCommon.substr(std::string("predict").size());
  const auto x = run_cli(explain + "--framework fsdp-hybrid --gpus 64 --tp 4");
  ASSERT_EQ(x.status, 0) << x.err;
  EXPECT_NE(x.out.find("  DP shard    2 ranks, 32 groups: inside a node"), std::string::npos) << x.out;
  EXPECT_NE(x.out.find("  DP replicas 8 ranks, 8 groups: across 8 nodes, 1 a node"), std::string::npos) << x.out;
  // the labels in one column, as wide as "DP replicas": every group row's counts start where its do
  EXPECT_NE(x.out.find("  TP          4 ranks, 16 groups: inside a node"), std::string::npos) << x.out;
  EXPECT_NE(x.out.find("  PP          1 rank: no group"), std::string::npos) << x.out;
}

// Eq. P32: simulate runs a layout's pipeline, and writes its trace (eq. P37: the file written, two tracks a stage);
// what acts on data parallelism's links and tasks alone is refused, nothing written.
TEST(ParallelCli, SimulatorRunsALayoutAndRefusesTheDataParallelOptions) {
  const std::string layout =
      "simulate --cluster dgx-h100-ndr --nodes 8 --model llama2-70b --framework megatron-core "
      "--precision bf16 --tp 8 --pp 2 --gpus 64 --iterations 2";
  const auto ok = run_cli(layout);
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_NE(ok.out.find("pipeline (eq. P32): 2 stages"), std::string::npos) << ok.out;
  const auto trace = std::filesystem::temp_directory_path() / "dlscale-parallel-cli-trace.json";
  std::filesystem::remove(trace);
  const auto traced = run_cli(layout + " --trace " + trace.string());
  EXPECT_EQ(traced.status, 0) << traced.err;
  ASSERT_TRUE(std::filesystem::exists(trace));
  const std::string text = test::slurp(trace);
  EXPECT_NE(text.find("\"stage 1 passes\""), std::string::npos);
  EXPECT_NE(text.find("\"stage 1 DP collectives\""), std::string::npos);
  std::filesystem::remove(trace);
  const auto r = run_cli(layout + " --contention --trace " + trace.string());
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("--contention"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
  EXPECT_FALSE(std::filesystem::exists(trace));
}

// explain of a layout prints its time to train (issue 35: --dataset-samples and --epochs were dropped without a word):
// TP 8 × PP 2 on 64 GPUs leaves dp 4, so 32 micro-batches of 1 train 128 samples a step and 1,280 samples take 10
// steps of predict's step time.
TEST(ParallelCli, ExplainOfALayoutGivesItsTimeToTrain) {
  const std::string layout = "--tp 8 --sp --pp 2 --micro-batches 32 --gpus 64 ";
  const auto csv = run_cli(kBase + layout + "--no-train --format csv");
  ASSERT_EQ(csv.status, 0) << csv.err;
  const std::string row = csv.out.substr(csv.out.find('\n') + 1);
  std::vector<std::string> fields;
  for (std::size_t at = 0, next = 0; next != std::string::npos; at = next + 1) {
    next = row.find(',', at);
    fields.push_back(row.substr(at, next == std::string::npos ? std::string::npos : next - at));
  }
  ASSERT_GT(fields.size(), 3U);
  const double step = std::stod(fields[3]);  // iteration_time_s
  const auto ex = run_cli("explain " + kBase.substr(8) + layout + "--dataset-samples 1280 --epochs 1");
  ASSERT_EQ(ex.status, 0) << ex.err;
  EXPECT_NE(ex.out.find(fmt::format("  10 iterations, {:.2f} h on 64 GPUs", 10 * step / 3600.0)), std::string::npos) << ex.out;
}

// report of a layout explains it as explain does (issue 35: its page was data parallelism's, the bubble printed as
// "io (exposed)" and a bucket table of one number), with the step's parts and its time to train.
TEST(ParallelCli, ReportOfALayoutExplainsItAsExplainDoes) {
  const std::string layout = "--tp 8 --sp --pp 2 --micro-batches 32 --gpus 64 --dataset-samples 1280 ";
  const auto ex = run_cli("explain " + kBase.substr(8) + layout);
  ASSERT_EQ(ex.status, 0) << ex.err;
  const auto html = std::filesystem::temp_directory_path() / "dlscale-parallel-cli-report.html";
  const auto r = run_cli("report " + kBase.substr(8) + layout + "--no-timeline -o " + html.string());
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string page = test::slurp(html);
  std::filesystem::remove(html);
  for (const char* part : {"bubble", "DP exposed", "time to train:"}) {
    const std::size_t at = ex.out.find(part);
    ASSERT_NE(at, std::string::npos) << part;
    const std::string line = ex.out.substr(at, ex.out.find('\n', at) - at);
    EXPECT_NE(page.find(line), std::string::npos) << line;
  }
  EXPECT_EQ(page.find("io (exposed)"), std::string::npos);  // neither in the explanation nor in the critical path's plot
  EXPECT_NE(page.find("<title>bubble: "), std::string::npos);
  EXPECT_EQ(page.find("bucket plan"), std::string::npos);
}

// Eq. P23 on the command line: Mixtral-8x7B as the README predicts it (TP 2 × PP 4 × EP 4 on 4 DGX H100 nodes).
const std::string kMixtralOn = "--cluster dgx-h100-ndr --nodes 4 --model mixtral-8x7b --precision bf16 ";
const std::string kMixtral = kMixtralOn + "--framework megatron-core ";
const std::string kMixtralLayout = "--tp 2 --sp --pp 4 --ep 4 --global-batch 256 ";

TEST(ParallelCli, MoeImbalanceBadValuesNameTheOption) {
  for (const char* bad : {"0.9", "abc", "nan"}) {
    const auto r = run_cli("predict " + kMixtral + kMixtralLayout + "--no-train --moe-imbalance " + bad);
    EXPECT_EQ(r.status, 2) << bad << ": " << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find("'--moe-imbalance'"), std::string::npos) << r.err;
  }
  // without a layout it has nothing to act on
  const auto r = run_cli("predict " + kMixtral + "--no-train --moe-imbalance 1.5");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("'--moe-imbalance'"), std::string::npos) << r.err;
}

TEST(ParallelCli, MoeImbalanceInAFrameworkFileFailsAtItsLine) {
  for (const char* bad : {"0.9", "lots"}) {
    const auto fw = test::temp_file("bad-imbalance.yaml",
                                    std::string("name: bad\n"
                                                "io: {prefetch: true, memory: pinned}\n"
                                                "aggregation: allreduce\n"
                                                "overlap: layerwise\n"
                                                "update: after_aggregation\n"
                                                "parallel:\n"
                                                "  moe_imbalance: ") +
                                        bad + "\n");
    const auto r = run_cli(kCommon + "--framework " + fw.string());
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find("bad-imbalance.yaml:7:18:"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("moe_imbalance"), std::string::npos) << r.err;
  }
}

// explain and plan say the imbalance they charge; the step at 1.5 is longer than the balanced one
TEST(ParallelCli, ExplainAndPlanShowTheMoeImbalance) {
  const auto even = run_cli("explain " + kMixtral + kMixtralLayout);
  ASSERT_EQ(even.status, 0) << even.err;
  EXPECT_EQ(even.out.find("routing imbalance"), std::string::npos) << even.out;
  const auto r = run_cli("explain " + kMixtral + kMixtralLayout + "--moe-imbalance 1.5");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("(ep 4 of 8 experts, top-2, routing imbalance 1.5: the busiest EP rank's load)"), std::string::npos)
      << r.out;
  const auto step = [](const std::string& out) { return std::stod(out.substr(out.find("step ") + 5)); };
  EXPECT_GT(step(r.out), step(even.out));
  const auto p = run_cli("plan --parallel " + kMixtralOn +
                         "--frameworks megatron-core --gpus 32 --global-batch 256 --tp 2 --pp 4 --vp 1 --cp 1 --ep 4 "
                         "--micro-batch 1 --recompute none --zero 1 --moe-imbalance 1.5");
  ASSERT_EQ(p.status, 0) << p.err;
  EXPECT_NE(p.out.find("# routing imbalance 1.5: at every ep > 1"), std::string::npos) << p.out;
}

// Eq. P24 on the command line: padded to 1.25 the step is the one P23 charges at f 1.25 (the same load on every
// part), dropping at 1.25 leaves balanced routing as it is and holds f 1.5 to 1.25; a framework file's keys are the
// options'; explain says the load it charges; a spread of 0.3 at ep 4 charges 1 + 0.3·m_4·√(4/8) (m_4 = 1.0294).
TEST(ParallelCli, CapacityFactorAndSpreadAsTheirLoads) {
  const auto step = [](const std::string& args) {
    const auto r = run_cli("explain " + kMixtral + kMixtralLayout + args);
    EXPECT_EQ(r.status, 0) << args << ": " << r.err;
    return r.out.substr(r.out.find("step "), r.out.find('\n', r.out.find("step ")) - r.out.find("step "));
  };
  const std::string balanced = step("");
  EXPECT_EQ(step("--moe-expert-capacity-factor 1.25 --moe-pad-expert-input-to-capacity"), step("--moe-imbalance 1.25"));
  EXPECT_EQ(step("--moe-expert-capacity-factor 1.25"), balanced);
  EXPECT_EQ(step("--moe-expert-capacity-factor 1.25 --moe-imbalance 1.5"), step("--moe-imbalance 1.25"));
  // a framework file's keys act as the options do (one minimal file both ways)
  const std::string minimal =
      "name: minimal\nio: {prefetch: true, memory: pinned}\naggregation: allreduce\n"
      "overlap: layerwise\nupdate: after_aggregation\n";
  const auto padded = test::temp_file("capacity.yaml",
                                      minimal +
                                          "parallel:\n  moe_expert_capacity_factor: 1.25\n"
                                          "  moe_pad_expert_input_to_capacity: true\n");
  const auto plain = test::temp_file("plain.yaml", minimal);
  const auto file_step = [](const std::string& args) {
    const auto r = run_cli("explain " + kMixtralOn + kMixtralLayout + args);
    EXPECT_EQ(r.status, 0) << args << ": " << r.err;
    return r.out.substr(r.out.find("step "), r.out.find('\n', r.out.find("step ")) - r.out.find("step "));
  };
  EXPECT_EQ(file_step("--framework " + padded.string()), file_step("--framework " + plain.string() + " --moe-imbalance 1.25"));
  EXPECT_NE(file_step("--framework " + padded.string()), file_step("--framework " + plain.string()));
  const auto e = run_cli("explain " + kMixtral + kMixtralLayout + "--moe-expert-load-cv 0.3");
  ASSERT_EQ(e.status, 0) << e.err;
  EXPECT_NE(e.out.find("expert load spread 0.3: imbalance 1.218 at ep 4"), std::string::npos) << e.out;
}

// plan --parallel charges each ep its own f from the spread: at v 0.3 the layout at ep 2 ranks as at imbalance
// 1 + 0.3·m_2·√(2/8) (m_2 = 1/√π) and at ep 4 as at 1 + 0.3·m_4·√(4/8) (m_4 = (3/(2√π))·(1 + (2/π)·asin(1/3))).
TEST(ParallelCli, PlanChargesEachEpItsOwnImbalanceFromTheSpread) {
  const auto best = [](const std::string& args) {
    const auto r = run_cli("plan --parallel " + kMixtralOn +
                           "--frameworks megatron-core --gpus 32 --global-batch 256 --tp 2 --pp 4 --vp 1 --cp 1 "
                           "--micro-batch 1 --recompute none --zero 1 --top 1 " +
                           args);
    EXPECT_EQ(r.status, 0) << args << ": " << r.err;
    const auto row = r.out.find("\n   1 ");
    return row == std::string::npos ? std::string() : r.out.substr(row, r.out.find('\n', row + 1) - row);
  };
  const double rpi = std::sqrt(std::numbers::pi);
  const double f2 = 1.0 + 0.3 / rpi * std::sqrt(2.0 / 8.0);
  const double f4 = 1.0 + 0.3 * 1.5 / rpi * (1.0 + 2.0 / std::numbers::pi * std::asin(1.0 / 3.0)) * std::sqrt(4.0 / 8.0);
  const std::string at2 = best("--ep 2 --moe-expert-load-cv 0.3"), at4 = best("--ep 4 --moe-expert-load-cv 0.3");
  EXPECT_FALSE(at2.empty());
  EXPECT_EQ(at2, best(fmt::format("--ep 2 --moe-imbalance {:.17g}", f2)));
  EXPECT_EQ(at4, best(fmt::format("--ep 4 --moe-imbalance {:.17g}", f4)));
  EXPECT_NE(at4, best("--ep 4 --moe-imbalance 1.0846"));
}

// The "#1 as predict takes it" line names the precision only where predict would take another: megatron-core's own
// bf16 goes unnamed (and predict of the line without --precision is the plan's row), fp8 is named.
TEST(ParallelCli, PlanBestNamesThePrecisionPredictWouldNotTake) {
  const std::string on = "--cluster dgx-h100-ndr --nodes 1 --model llama3-8b ";
  const std::string narrow = "--tp 2 --pp 1 --vp 1 --cp 1 --micro-batch 1 --recompute selective --zero 1 --no-refine";
  const std::string tag = "# #1 as predict takes it: ";
  const auto line_of = [&](const std::string& out) {
    const auto at = out.find(tag);
    EXPECT_NE(at, std::string::npos) << out;
    return at == std::string::npos ? std::string() : out.substr(at + tag.size(), out.find('\n', at) - at - tag.size());
  };
  const auto own = run_cli("plan --parallel " + on + "--frameworks megatron-core --gpus 8 --top 1 " + narrow);
  ASSERT_EQ(own.status, 0) << own.err;
  EXPECT_THAT(own.out, ::testing::HasSubstr("megatron-core, bf16,"));
  const std::string options = line_of(own.out);
  EXPECT_EQ(options.find("--precision"), std::string::npos) << options;
  const auto plain = run_cli("predict " + on + options + " --format json");
  ASSERT_EQ(plain.status, 0) << options << ": " << plain.err;
  EXPECT_EQ(nlohmann::json::parse(plain.out).at("inputs").at("precision"), "bf16");
  const auto fp8 = run_cli("plan --parallel " + on + "--frameworks megatron-core --gpus 8 --top 1 --precision fp8 " + narrow);
  ASSERT_EQ(fp8.status, 0) << fp8.err;
  EXPECT_THAT(line_of(fp8.out), ::testing::EndsWith(" --precision fp8"));
}

// Eq. P38's round trip: plan --parallel's "#1 as predict takes it" line, given to predict on the same cluster, model
// and framework, predicts the row the plan printed (its tokens/s per GPU and step; its memory is the plan's less the
// 4 GB more the plan keeps free): for a refined CP exchange (TP 2 × CP 2 of Llama-3-8B) and a refined block N (full
// recompute at micro-batch 4), whose keys the variant column names.
TEST(ParallelCli, PlanBestAsPredictTakesItPredictsItsRow) {
  const std::string on = "--cluster dgx-h100-ndr --nodes 1 --model llama3-8b --precision bf16 ";
  for (const std::string narrow : {"--tp 2 --pp 1 --vp 1 --cp 2 --micro-batch 1 --recompute selective --zero 1",
                                   "--tp 2 --pp 1 --vp 1 --cp 1 --micro-batch 4 --recompute full --zero 1"}) {
    const auto plan = run_cli("plan --parallel " + on + "--frameworks megatron-core --gpus 8 --top 1 " + narrow);
    ASSERT_EQ(plan.status, 0) << plan.err;
    const std::string tag = "# #1 as predict takes it: ";
    const auto at = plan.out.find(tag);
    ASSERT_NE(at, std::string::npos) << plan.out;
    const std::string options = plan.out.substr(at + tag.size(), plan.out.find('\n', at) - at - tag.size());
    const auto row = plan.out.find("\n   1 ");
    ASSERT_NE(row, std::string::npos) << plan.out;
    const std::string line = plan.out.substr(row + 1, plan.out.find('\n', row + 1) - row - 1);
    // the row's cells: ... tokens/s tok/s/GPU MFU% mem GB step TP-node variant
    std::vector<std::string> cells;
    for (std::size_t i = 0; i < line.size();) {
      const auto b = line.find_first_not_of(' ', i);
      if (b == std::string::npos) break;
      const auto e = line.find(' ', b);
      cells.push_back(line.substr(b, e == std::string::npos ? std::string::npos : e - b));
      i = e == std::string::npos ? line.size() : e;
    }
    ASSERT_GE(cells.size(), 9U) << line;
    const std::string variant = cells.back();
    EXPECT_NE(variant, "-") << line;
    const double per_gpu = std::stod(cells[cells.size() - 7]), step = std::stod(cells[cells.size() - 3]);
    // the line names the framework itself (predict's default is the cluster file's, pytorch-ddp here)
    EXPECT_EQ(options.rfind("--framework megatron-core ", 0), 0U) << options;
    const auto predict = run_cli("predict " + on + options + " --format json");
    ASSERT_EQ(predict.status, 0) << options << ": " << predict.err;
    const auto value = [&](const std::string& key) {
      const auto k = predict.out.find("\"" + key + "\": ");
      EXPECT_NE(k, std::string::npos) << key;
      return std::stod(predict.out.substr(k + key.size() + 4));
    };
    EXPECT_NEAR(value("throughput_tokens_per_s") / 8.0, per_gpu, 0.05 + 1e-9) << options;
    EXPECT_NEAR(value("iteration_time_s"), step, 0.0005 + 1e-9) << options;
    if (variant.starts_with("block:"))
      EXPECT_NE(options.find("--recompute-method block --recompute-num-layers " + variant.substr(6)), std::string::npos);
    else EXPECT_NE(options.find("--cp-comm " + variant), std::string::npos) << options;
  }
}

// Issue 37: a row planned at a sharding stage other than the framework's is reproducible: its "#1 as predict takes it"
// line names the stage (--zero) where it differs, and predict of that line gives the plan's step and memory (the plan's
// less the 4 GB more it keeps free: a 5 GB reserve against predict's 1 GB, as ParallelPlan.DataParallelRowIsWhatPredict-
// Prints accounts). On one DGX H100: Llama-3-8B in TP 4 under megatron-core (distributed optimiser, stage 1) at stage
// 0 and under torchtitan (FSDP2, stage 3) at stage 1; GPT-3 1.3B's data-parallel point TP 1 (eq. P41) under
// megatron-core at stage 0 (Llama-3-8B's replicated state does not fit there); at the framework's own stage the line
// names none. Before, the line left the stage out and predict took the framework's: at stage 0 instead of 1 the memory
// differs by the optimiser state's shards (47.5 against 35.4 GB in the plan's table for the first case).
TEST(ParallelCli, PlanBestAtAnotherShardingStageIsReproducible) {
  struct Case {
    std::string model, framework, tp;
    int zero;
    bool own;  // the framework's own stage
  };
  for (const Case& c : {Case{"llama3-8b", "megatron-core", "4", 0, false}, Case{"llama3-8b", "torchtitan", "4", 1, false},
                        Case{"gpt3-1.3b", "megatron-core", "1", 0, false}, Case{"llama3-8b", "megatron-core", "4", 1, true}}) {
    const std::string on = "--cluster dgx-h100-ndr --nodes 1 --model " + c.model + " --precision bf16 ";
    const std::string what = c.model + " " + c.framework + " tp " + c.tp + " zero " + std::to_string(c.zero);
    const auto plan = run_cli("plan --parallel " + on + "--frameworks " + c.framework + " --gpus 8 --top 1 --no-refine --tp " +
                              c.tp + " --pp 1 --vp 1 --cp 1 --micro-batch 1 --recompute selective --zero " +
                              std::to_string(c.zero) + " --format json");
    ASSERT_EQ(plan.status, 0) << what << ": " << plan.err;
    const auto row = nlohmann::json::parse(plan.out).at("layouts").at(0);
    ASSERT_EQ(row.at("zero").get<int>(), c.zero) << what;
    const std::string options = row.at("predict_options");
    if (c.own) EXPECT_EQ(options.find("--zero"), std::string::npos) << options;
    else EXPECT_NE(options.find(fmt::format(" --zero {}", c.zero)), std::string::npos) << options;
    const auto predict = run_cli("predict " + on + options + " --format json --no-train");
    ASSERT_EQ(predict.status, 0) << options << ": " << predict.err;
    const auto p = nlohmann::json::parse(predict.out).at("predictions").at(0);
    const auto& planned = row.at("prediction");
    const double step = planned.at("iteration_time_s").get<double>();
    EXPECT_NEAR(p.at("iteration_time_s").get<double>(), step, 1e-9 * step) << options;
    EXPECT_NEAR(p.at("memory").at("per_gpu_bytes").get<double>() + 4e9, planned.at("memory").at("per_gpu_bytes").get<double>(),
                1.0)
        << options;
  }
}

/// The plan's first row (JSON) and predict of its "as predict takes it" options: the step to 1e-9 relative and the memory
/// less the 4 GB reserve difference (the plan keeps 5 GB free, predict 1 GB).
struct PlanRoundTrip {
  nlohmann::json row, predicted;
};
PlanRoundTrip plan_round_trip(const std::string& on, const std::string& plan_args) {
  PlanRoundTrip r;
  const auto plan = run_cli("plan --parallel " + on + plan_args + " --top 1 --no-refine --format json");
  EXPECT_EQ(plan.status, 0) << plan_args << ": " << plan.err;
  if (plan.status != 0) return r;
  r.row = nlohmann::json::parse(plan.out).at("layouts").at(0);
  const std::string options = r.row.at("predict_options");
  const auto predict = run_cli("predict " + on + options + " --format json --no-train");
  EXPECT_EQ(predict.status, 0) << options << ": " << predict.err;
  if (predict.status != 0) return r;
  r.predicted = nlohmann::json::parse(predict.out).at("predictions").at(0);
  const auto& planned = r.row.at("prediction");
  const double step = planned.at("iteration_time_s").get<double>();
  EXPECT_NEAR(r.predicted.at("iteration_time_s").get<double>(), step, 1e-9 * step) << options;
  EXPECT_NEAR(r.predicted.at("memory").at("per_gpu_bytes").get<double>() + 4e9,
              planned.at("memory").at("per_gpu_bytes").get<double>(), 1.0)
      << options;
  return r;
}

// Eq. P44 (P40): a hybrid framework's plan rows shard in its own groups, so predict of a row's line gives the plan's step
// and memory: fsdp-hybrid (`group: node`) on 2 DGX H100 nodes at stage 1, TP 2 (DP 8, 4 ranks a node: shard groups of 4,
// replicas 2) and TP 1 (data parallelism, P41: groups of 8), with the framework's group (the line names none) and with
// `--shard-group` 2 (TP 2; 4 for TP 1, whose state over 2 does not fit) and `all` in its place (the line names them). Before, the
// plan sharded over all 8 DP ranks whatever the group: 46.048 s and 52.24 GB against predict's 46.066 s and 58.26 GB for the TP 2
// row.
TEST(ParallelCli, PlanHybridShardingRowIsReproducible) {
  const std::string on = "--cluster dgx-h100-ndr --nodes 2 --model llama3-8b ";  // bf16: the plan's, the line's
  const std::string grid = "--frameworks fsdp-hybrid --gpus 16 --pp 1 --vp 1 --cp 1 --micro-batch 1 --recompute full --zero 1";
  for (const std::string tp : {"2", "1"})
    for (const std::string& group : {std::string(), std::string(tp == "2" ? "2" : "4"), std::string("all")}) {
      SCOPED_TRACE("tp " + tp + " shard group " + (group.empty() ? "the framework's" : group));
      const auto r = plan_round_trip(on, grid + " --tp " + tp + (group.empty() ? "" : " --shard-group " + group));
      if (r.row.is_null()) continue;
      const std::string options = r.row.at("predict_options");
      if (group.empty()) EXPECT_EQ(options.find("--shard-group"), std::string::npos) << options;
      else EXPECT_NE(options.find(" --shard-group " + group), std::string::npos) << options;
    }
}

// Eq. P44 by hand: the TP 2 row's state at stage 1 is its rank's fp32 master weights and AdamW's two moments, 12 B a
// parameter, sharded over the shard group: 4 ranks with fsdp-hybrid's `node` (TP 2 leaves 4 DP ranks a node of 8), 8
// with --shard-group all, the rest (bf16 weights and gradients, activations) the same. A TP 2 rank of Llama-3-8B holds
// (32 blocks × (2·4096² + 2·4096·1024 + 3·4096·14336) + 2 × 128256·4096)/2 + 32·2·4096 + 4096 = 4,015,263,744
// parameters (eq. P5: the linear maps, the vocabulary-parallel embedding and head split over t, the norms whole), so the
// node row holds 12·P·(1/4 − 1/8) = 1.5·P = 6,022,895,616 B more.
TEST(ParallelCli, PlanHybridRowShardsTheStateOverTheNodesRanksByHand) {
  const std::string args =
      "plan --parallel --cluster dgx-h100-ndr --nodes 2 --model llama3-8b --precision bf16 --frameworks fsdp-hybrid "
      "--gpus 16 --tp 2 --pp 1 --vp 1 --cp 1 --micro-batch 1 --recompute selective --zero 1 --top 1 --no-refine "
      "--format json";
  const auto node = run_cli(args), all = run_cli(args + " --shard-group all");
  ASSERT_EQ(node.status, 0) << node.err;
  ASSERT_EQ(all.status, 0) << all.err;
  const auto mem = [](const std::string& out) {
    return nlohmann::json::parse(out).at("layouts").at(0).at("prediction").at("memory").at("per_gpu_bytes").get<double>();
  };
  const double blocks = 32.0 * (2.0 * 4096 * 4096 + 2.0 * 4096 * 1024 + 3.0 * 4096 * 14336);
  const double P = (blocks + 2.0 * 128256 * 4096) / 2 + 32.0 * 2 * 4096 + 4096;
  ASSERT_EQ(P, 4'015'263'744.0);
  EXPECT_NEAR(mem(node.out) - mem(all.out), 12.0 * P * (1.0 / 4 - 1.0 / 8), 1.0);
}

// Eq. P44: a framework that offloads its optimiser (S9) keeps the offload on the plan's data-parallel rows of a sharded
// stage (P41: predict's path models it), and leaves out the layouts predict refuses it on (tp, pp, cp or ep above 1,
// P13; stage 0) with a note saying how many and why; --no-offload-optimizer plans every layout without it, and the line
// then names it. Each printed row is what predict of its line gives.
TEST(ParallelCli, PlanOffloadRowsAreReproducible) {
  const std::string on = "--cluster dgx-h100-ndr --nodes 2 --model llama3-8b ";  // bf16: the plan's, the line's
  const std::string grid = "--gpus 16 --pp 1 --vp 1 --cp 1 --micro-batch 1 --recompute full";
  for (const std::string fw : {"deepspeed-zero2-offload", "deepspeed-zero3-offload"}) {
    SCOPED_TRACE(fw);
    // the grid holds TP 1 and 2 at stages 0 and 1: only TP 1 at stage 1 keeps the offload
    const auto kept = run_cli("plan --parallel " + on + "--frameworks " + fw + " " + grid + " --tp 1,2 --zero 0,1 --no-refine");
    ASSERT_EQ(kept.status, 0) << kept.err;
    EXPECT_NE(kept.out.find("# 3 combinations left out: '" + fw + "' offloads its optimiser to the CPU (eq. S9)"),
              std::string::npos)
        << kept.out;
    const auto r = plan_round_trip(on, "--frameworks " + fw + " " + grid + " --tp 1,2 --zero 0,1");
    if (r.row.is_null()) continue;
    EXPECT_EQ(r.row.at("tp").get<int>(), 1);
    EXPECT_EQ(r.row.at("zero").get<int>(), 1);
    EXPECT_TRUE(r.row.at("prediction").contains("offload")) << r.row.dump();  // S9's host side, as predict's
    EXPECT_TRUE(r.predicted.contains("offload"));
    EXPECT_EQ(r.row.at("predict_options").get<std::string>().find("-offload-optimizer"), std::string::npos);
    // without offload: the TP 2 layout is planned, its line names --no-offload-optimizer
    const auto off = plan_round_trip(on, "--frameworks " + fw + " " + grid + " --tp 2 --zero 1 --no-offload-optimizer");
    if (off.row.is_null()) continue;
    EXPECT_NE(off.row.at("predict_options").get<std::string>().find(" --no-offload-optimizer"), std::string::npos);
    EXPECT_FALSE(off.predicted.contains("offload"));
  }
  // a framework that keeps its state on the GPU, offloaded with the option: the line names --offload-optimizer
  const auto on_ = plan_round_trip(on, "--frameworks deepspeed-zero2 " + grid + " --tp 1 --zero 1 --offload-optimizer");
  if (!on_.row.is_null())
    EXPECT_NE(on_.row.at("predict_options").get<std::string>().find(" --offload-optimizer"), std::string::npos);
}

// Eq. P45: `--zero` takes stages 2 and 3, each row timed at its own stage as predict times it: torchtitan (FSDP2, stage 3;
// its parameters kept gathered under a pipeline, `pp_reshard_after_forward: false`) on one DGX H100 at its data-parallel
// point (P41: the data-parallel path, S5-S7 at stage 3), TP 4 (P20 without a pipeline) and TP 2 × PP 2 (P20 under one),
// and deepspeed-zero3-offload's data-parallel rows, which keep their offload (P44). Predict of each row's line gives its
// step to 1e-9 and its memory less the 4 GB reserve difference; the line names --zero 2 and no stage at the framework's
// own 3. Before, `--zero 2` or `3` was refused, and the TP 2 × PP 2 row resharded after each forward where predict of its
// line (torchtitan's file) does not: 117.2156 s against predict's 117.1262 s.
TEST(ParallelCli, PlanRowsAtStagesTwoAndThreeAreReproducible) {
  const std::string on = "--cluster dgx-h100-ndr --nodes 1 --model llama3-8b ";  // bf16: the plan's, the line's
  struct Case {
    std::string framework, layout;
  };
  for (const Case& c : {Case{"torchtitan", "--tp 1 --pp 1"}, Case{"torchtitan", "--tp 4 --pp 1"},
                        Case{"torchtitan", "--tp 2 --pp 2"}, Case{"deepspeed-zero3-offload", "--tp 1 --pp 1"}})
    for (int zero : {2, 3}) {
      SCOPED_TRACE(fmt::format("{} {} zero {}", c.framework, c.layout, zero));
      const auto r = plan_round_trip(on,
                                     fmt::format("--frameworks {} --gpus 8 {} --vp 1 --cp 1 --micro-batch 1 "
                                                 "--recompute full --zero {}",
                                                 c.framework, c.layout, zero));
      if (r.row.is_null()) continue;
      EXPECT_EQ(r.row.at("zero").get<int>(), zero);
      const std::string options = r.row.at("predict_options");
      if (zero == 3) {
        EXPECT_EQ(options.find("--zero"), std::string::npos) << options;
      } else {
        EXPECT_NE(options.find(" --zero 2"), std::string::npos) << options;
      }
      const bool offload = c.framework == "deepspeed-zero3-offload";
      EXPECT_EQ(r.row.at("prediction").contains("offload"), offload) << options;
      if (!r.predicted.is_null()) {
        EXPECT_EQ(r.predicted.contains("offload"), offload) << options;
      }
    }
  // a stage outside 0-3: one line naming the option, exit 2, nothing written
  const auto bad = run_cli("plan --parallel " + on + "--frameworks torchtitan --gpus 8 --zero 1,4");
  EXPECT_EQ(bad.status, 2) << bad.err;
  EXPECT_EQ(bad.out, "");
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
  EXPECT_NE(bad.err.find("'--zero'"), std::string::npos) << bad.err;
}

// Eq. P45: fp8 all-gather (S12) is FSDP's on the data-parallel path. A plan with it keeps it on the stage-3 data-parallel
// rows (the line names --fp8-all-gather, and predict of it gives the row), leaves the stage-3 layouts with t, p, c or e
// above 1 out, counted (predict refuses it there), and plans stages 0-2 without it (their lines do not name it).
// torchtitan, fp8 tensor-wise, Llama-3-8B on one DGX H100: TP 1 and 2 (PP, CP 1, micro-batch 1, full recompute) at
// stages 1 and 3: the one TP 2 row at stage 3 left out.
TEST(ParallelCli, PlanFp8AllGatherOnTheStage3DataParallelRowsOnly) {
  const std::string on = "--cluster dgx-h100-ndr --nodes 1 --model llama3-8b ";  // the line names fp8 and the all-gather
  const std::string grid =
      "--frameworks torchtitan --precision fp8 --fp8-all-gather --gpus 8 --pp 1 --vp 1 --cp 1 --micro-batch 1 --recompute full";
  const auto all = run_cli("plan --parallel " + on + grid + " --tp 1,2 --zero 1,3 --no-refine --top 8 --format json");
  ASSERT_EQ(all.status, 0) << all.err;
  const auto doc = nlohmann::json::parse(all.out);
  EXPECT_EQ(doc.at("stage_skipped").get<int>(), 1);
  for (const auto& row : doc.at("layouts")) {
    const bool stage3 = row.at("zero").get<int>() == 3;
    if (stage3) {
      EXPECT_EQ(row.at("tp").get<int>(), 1) << row.dump();
    }
    EXPECT_EQ(row.at("predict_options").get<std::string>().find("--fp8-all-gather") != std::string::npos, stage3) << row.dump();
  }
  const auto text = run_cli("plan --parallel " + on + grid + " --tp 1,2 --zero 1,3 --no-refine --top 1");
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("# 1 combinations left out: fp8 all-gather (eq. S12)"), std::string::npos) << text.out;
  for (const std::string tp : {"1", "2"})
    for (const std::string zero : {"1", "3"}) {
      if (tp == "2" && zero == "3") continue;
      SCOPED_TRACE("tp " + tp + " zero " + zero);
      plan_round_trip(on, grid + " --tp " + tp + " --zero " + zero);
    }
}

// Eq. P42: `--zero` puts another optimiser-sharding stage in place of the framework's, and the GEMMs keep the
// framework's rate (eq. K16): the distributed optimiser's collectives run once a step, beside no GEMM. Llama-3-8B in
// TP 4 on one DGX H100 (DP 2) under megatron-core (stage 1): at stage 0 forward and backward are the same seconds,
// the update runs over the whole of a TP rank's parameters instead of half of them (2x), and the memory holds the
// other half of the optimiser state. Before, stage 0 dropped K16 and the forward came out 0.77x (Hopper's factor).
TEST(ParallelCli, ZeroStageKeepsTheFrameworksGemmRate) {
  const std::string args =
      "predict --cluster dgx-h100 --model llama3-8b --framework megatron-core --gpus 8 --tp 4 --batch 1 "
      "--micro-batches 8 --format json --no-train";
  const auto own = run_cli(args), zero = run_cli(args + " --zero 0");
  ASSERT_EQ(own.status, 0) << own.err;
  ASSERT_EQ(zero.status, 0) << zero.err;
  const auto a = nlohmann::json::parse(own.out).at("predictions").at(0),
             b = nlohmann::json::parse(zero.out).at("predictions").at(0);
  const auto &ab = a.at("breakdown"), &bb = b.at("breakdown");
  EXPECT_DOUBLE_EQ(bb.at("forward_s").get<double>(), ab.at("forward_s").get<double>());
  EXPECT_DOUBLE_EQ(bb.at("backward_s").get<double>(), ab.at("backward_s").get<double>());
  EXPECT_NEAR(bb.at("update_s").get<double>(), 2 * ab.at("update_s").get<double>(), 1e-12);
  EXPECT_GT(b.at("memory").at("per_gpu_bytes").get<double>(), a.at("memory").at("per_gpu_bytes").get<double>());
}

// --no-refine plans the grid alone (eq. P38 off): the same TP 2 × CP 2 layout under the framework's ring, no variant,
// no refinement line, and slower than the refined plan's all_gather.
TEST(ParallelCli, PlanNoRefineKeepsTheGridsLayout) {
  const std::string args =
      "plan --parallel --cluster dgx-h100-ndr --nodes 1 --model llama3-8b --precision bf16 "
      "--frameworks megatron-core --gpus 8 --top 1 --tp 2 --pp 1 --vp 1 --cp 2 --micro-batch 1 "
      "--recompute selective --zero 1";
  const auto refined = run_cli(args), grid = run_cli(args + " --no-refine");
  ASSERT_EQ(refined.status, 0) << refined.err;
  ASSERT_EQ(grid.status, 0) << grid.err;
  EXPECT_NE(refined.out.find("# refined (eq. P38)"), std::string::npos) << refined.out;
  EXPECT_EQ(grid.out.find("# refined (eq. P38)"), std::string::npos) << grid.out;
  EXPECT_NE(grid.out.find(" inside -\n"), std::string::npos) << grid.out;
  EXPECT_NE(grid.out.find("--cp-comm p2p"), std::string::npos) << grid.out;
  EXPECT_NE(refined.out.find(" inside all_gather\n"), std::string::npos) << refined.out;
}

// `sweep --simulate` times a layout row with the simulator's pipeline (eq. P32), as `simulate` does for the same
// scenario: the row's iteration time is simulate's, and (its framework's jitter on) not predict's closed form.
TEST(ParallelCli, SweepSimulatesALayoutAsSimulateDoes) {
  const auto spec = test::temp_file("layout-sim.yaml",
                                    "name: layout-sim\n"
                                    "grid:\n"
                                    "  cluster: {name: dgx-h100, nodes: 2, fabric: \"infiniband:400Gb/s:8\"}\n"
                                    "  model: llama3-8b\n"
                                    "  framework: megatron-core\n"
                                    "  gpus: 16\n"
                                    "  precision: bf16\n"
                                    "  layout: {tp: 4, pp: 2, sp: true, micro_batches: 8}\n");
  const auto sweep = run_cli("sweep --spec " + spec.string() + " --simulate --threads 1 --format jsonl");
  ASSERT_EQ(sweep.status, 0) << sweep.err;
  const auto step = [](const std::string& json) {
    const auto at = json.find("\"iteration_time_s\"");
    return at == std::string::npos ? -1.0 : std::stod(json.substr(json.find(':', at) + 1));
  };
  const std::string scenario =
      "--cluster dgx-h100 --nodes 2 --fabric infiniband:400Gb/s:8 --model llama3-8b --framework megatron-core "
      "--precision bf16 --batch 1 --tp 4 --pp 2 --sp --micro-batches 8 --gpus 16 --format json";
  const auto sim = run_cli("simulate " + scenario);
  ASSERT_EQ(sim.status, 0) << sim.err;
  const auto closed = run_cli("predict " + scenario + " --no-train");
  ASSERT_EQ(closed.status, 0) << closed.err;
  EXPECT_GT(step(sweep.out), 0.0) << sweep.out;
  EXPECT_NEAR(step(sweep.out), step(sim.out), 1e-6 * step(sim.out));
  EXPECT_NE(step(sweep.out), step(closed.out));
}

// ---- plan --parallel and explain of a layout as JSON (issue 35): every number the table shows is a JSON field -------
using test::find_line;
using test::shown;

/// Llama-3-8B on one DGX H100 node over a small grid (fast), refined; its JSON is tests/golden/plan-parallel-llama3-8b.json.
const std::string kPlanJsonArgs =
    "plan --parallel --cluster dgx-h100-ndr --nodes 1 --model llama3-8b --precision bf16 --frameworks megatron-core "
    "--gpus 8 --top 3 --tp 1,2 --pp 1,2 --cp 1,2 --micro-batch 1,2 --recompute selective,full --zero 1";

/// Where a group sits, as plan --parallel's "# the best" line says it (its where()).
std::string where_text(const nlohmann::json& g) {
  if (g.at("size").get<int>() <= 1) return "none";
  if (g.at("inside_node").get<bool>()) return fmt::format("{} inside a node", g.at("size").get<int>());
  return fmt::format("{} across {} nodes ({} a node)", g.at("size").get<int>(), g.at("nodes").get<int>(),
                     g.at("per_node").get<int>());
}

TEST(ParallelCli, PlanTableNumbersAreItsJsonFields) {
  const auto table = run_cli(kPlanJsonArgs), json = run_cli(kPlanJsonArgs + " --format json");
  ASSERT_EQ(table.status, 0) << table.err;
  ASSERT_EQ(json.status, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j.at("command"), "plan --parallel");
  auto g = find_line(table.out, R"(# dlscale plan --parallel: .*, global batch (\d+) \((\S+) M tokens a step\))");
  ASSERT_EQ(g.size(), 3U) << table.out;
  EXPECT_EQ(g[1], std::to_string(j.at("inputs").at("global_batch").get<std::int64_t>()));
  EXPECT_EQ(g[2], shown("{:.4g}", j.at("inputs").at("tokens_per_step").get<double>() / 1e6));
  g = find_line(
      table.out,
      R"(# (\d+) layouts checked, (\d+) do not fit the (\S+) GB of a GPU, (\d+) combinations the model or the GPU count does not take)");
  ASSERT_EQ(g.size(), 5U) << table.out;
  EXPECT_EQ(g[1], std::to_string(j.at("evaluated").get<int>()));
  EXPECT_EQ(g[2], std::to_string(j.at("out_of_memory").get<int>()));
  EXPECT_EQ(g[3], shown("{:.3g}", j.at("gpu_memory_bytes").get<double>() / 1e9));
  EXPECT_EQ(g[4], std::to_string(j.at("invalid").get<int>()));
  g = find_line(
      table.out,
      R"(# refined \(eq. P38\): the (\d+) fastest, the (\d+) fastest under full recompute and up to (\d+) layouts .*: (\d+) timed, (\d+) made faster or made to fit)");
  ASSERT_EQ(g.size(), 6U) << table.out;
  const auto& refine = j.at("refinement");
  EXPECT_EQ(g[1], std::to_string(refine.at("leaders").get<int>()));
  EXPECT_EQ(g[2], std::to_string(refine.at("full_recompute_leaders").get<int>()));
  EXPECT_EQ(g[3], std::to_string(refine.at("near_misses").get<int>()));
  EXPECT_EQ(g[4], std::to_string(refine.at("timed").get<int>()));
  EXPECT_EQ(g[5], std::to_string(refine.at("improved").get<int>()));
  g = find_line(table.out, R"(# memory reserve (\S+) GB a GPU .* stay within (\S+) GB; .*)");
  ASSERT_EQ(g.size(), 3U) << table.out;
  EXPECT_EQ(g[1], shown("{:.3g}", j.at("memory_reserve_bytes").get<double>() / 1e9));
  EXPECT_EQ(g[2], shown("{:.3g}", j.at("memory_limit_bytes").get<double>() / 1e9));
  const auto& rows = j.at("layouts");
  ASSERT_EQ(rows.size(), 3U);
  for (const auto& row : rows) {
    // rank tp pp vp cp dp mb m sp recompute zero tokens/s tok/s/GPU MFU mem GB step TP-node variant (no experts: no ep)
    g = find_line(
        table.out,
        fmt::format(
            R"( +{} +(\d+) +(\d+) +(\d+) +(\d+) +(\d+) +(\d+) +(\d+) +(sp|-) +(\S+) +(z1|-) +(\S+) +(\S+) +(\S+)% +(\S+) GB +(\S+) +(inside|across) (\S+))",
            row.at("rank").get<int>()));
    ASSERT_EQ(g.size(), 18U) << row.at("rank");
    const auto& p = row.at("prediction");
    int k = 1;
    for (const char* key : {"tp", "pp", "vp", "cp", "dp", "micro_batch", "micro_batches"})
      EXPECT_EQ(g[k++], std::to_string(row.at(key).get<int>())) << key;
    EXPECT_EQ(g[8] == "sp", row.at("sp").get<bool>());
    EXPECT_EQ(g[9], row.at("recompute").get<std::string>());
    EXPECT_EQ(g[10], row.at("zero").get<int>() > 0 ? fmt::format("z{}", row.at("zero").get<int>()) : "-");
    EXPECT_EQ(g[11], shown("{:.4g}", p.at("throughput_tokens_per_s").get<double>()));
    EXPECT_EQ(g[12], shown("{:.1f}", row.at("tokens_per_s_per_gpu").get<double>()));
    EXPECT_EQ(g[13], shown("{:.1f}", 100.0 * p.at("mfu").get<double>()));
    EXPECT_EQ(g[14], shown("{:.1f}", p.at("memory").at("per_gpu_bytes").get<double>() / 1e9));
    EXPECT_EQ(g[15], shown("{:.3f}", p.at("iteration_time_s").get<double>()));
    EXPECT_EQ(g[16] == "inside", row.at("tp_inside_node").get<bool>());
    std::string variant;
    for (const auto& v : row.at("variant")) variant += (variant.empty() ? "" : ",") + v.get<std::string>();
    EXPECT_EQ(g[17], variant.empty() ? "-" : variant);
    EXPECT_NEAR(row.at("tokens_per_s_per_gpu").get<double>() * 8.0, p.at("throughput_tokens_per_s").get<double>(), 1e-6);
    EXPECT_TRUE(p.at("memory").at("fits").get<bool>());
  }
  const auto& at = j.at("best_placement");
  EXPECT_THAT(table.out,
              ::testing::HasSubstr(fmt::format("# the best, #1: TP {}, CP {}, PP {}, DP {}\n", where_text(at.at("tp")),
                                               where_text(at.at("cp")), where_text(at.at("pp")), where_text(at.at("dp")))));
  // why the next best loses: its slowdown, the three parts it loses most on, both memories
  const auto& next = j.at("next_best");
  std::string why;
  for (std::size_t i = 0; i < next.at("parts").size() && i < 3; ++i)
    why += fmt::format("{}{} {:+.3f} s", i ? ", " : "", next.at("parts")[i].at("part").get<std::string>(),
                       next.at("parts")[i].at("delta_s").get<double>());
  EXPECT_THAT(table.out,
              ::testing::HasSubstr(
                  fmt::format("# the next best, #2, is {:.1f} % slower: {} (memory {:.1f} GB against {:.1f} GB)\n",
                              100.0 * next.at("slower").get<double>(), why, next.at("memory_per_gpu_bytes").get<double>() / 1e9,
                              next.at("best_memory_per_gpu_bytes").get<double>() / 1e9)));
  const double r1 = rows[0].at("prediction").at("throughput_tokens_per_s").get<double>();
  const double r2 = rows[1].at("prediction").at("throughput_tokens_per_s").get<double>();
  EXPECT_NEAR(next.at("slower").get<double>(), 1.0 - r2 / r1, 1e-12);
  EXPECT_THAT(table.out,
              ::testing::HasSubstr("# #1 as predict takes it: " + rows[0].at("predict_options").get<std::string>() + "\n"));
}

TEST(ParallelCli, PlanJsonMatchesGolden) {
  const auto r = run_cli(kPlanJsonArgs + " --format json");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, test::slurp(std::filesystem::path(DLSCALE_SOURCE_DIR) / "tests/golden/plan-parallel-llama3-8b.json"))
      << "refresh on purpose with tests/golden/refresh.sh";
}

TEST(ParallelCli, ExplainTableNumbersAreItsJsonFields) {
  const std::string args =
      "explain " + kBase.substr(8) + "--tp 8 --sp --pp 2 --micro-batches 32 --gpus 64 --dataset-samples 1280 ";
  const auto table = run_cli(args), json = run_cli(args + "--format json");
  ASSERT_EQ(table.status, 0) << table.err;
  ASSERT_EQ(json.status, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  const auto& p = j.at("prediction");
  const auto& l = j.at("layout");
  auto g = find_line(
      table.out,
      R"(# layout: tp (\d+) \(sp\) × pp (\d+) \((\S+)\) × cp (\d+) × dp (\d+); micro-batch (\d+), (\d+) micro-batches, global batch (\d+) \((\S+) M tokens\); recompute (\S+); rank order (\S+))");
  ASSERT_EQ(g.size(), 12U) << table.out;
  EXPECT_EQ(g[1], std::to_string(l.at("tp").get<int>()));
  EXPECT_EQ(g[2], std::to_string(l.at("pp").get<int>()));
  EXPECT_EQ(g[3], l.at("schedule").get<std::string>());
  EXPECT_EQ(g[4], std::to_string(l.at("cp").get<int>()));
  EXPECT_EQ(g[5], std::to_string(l.at("dp").get<int>()));
  EXPECT_EQ(g[6], std::to_string(l.at("micro_batch").get<int>()));
  EXPECT_EQ(g[7], std::to_string(l.at("micro_batches").get<int>()));
  EXPECT_EQ(g[8], std::to_string(l.at("global_batch").get<std::int64_t>()));
  EXPECT_EQ(g[9], shown("{:.4g}", l.at("tokens_per_step").get<double>() / 1e6));
  EXPECT_EQ(g[10], l.at("recompute").get<std::string>());
  EXPECT_EQ(g[11], l.at("rank_order").get<std::string>());
  g = find_line(table.out, R"(step (\S+) s: (\S+) tokens/s \((\S+) per GPU\), MFU (\S+) %)");
  ASSERT_EQ(g.size(), 5U) << table.out;
  EXPECT_EQ(g[1], shown("{:.4f}", p.at("iteration_time_s").get<double>()));
  EXPECT_EQ(g[2], shown("{:.4g}", p.at("throughput_tokens_per_s").get<double>()));
  EXPECT_EQ(g[3], shown("{:.1f}", j.at("tokens_per_s_per_gpu").get<double>()));
  EXPECT_EQ(g[4], shown("{:.1f}", 100.0 * p.at("mfu").get<double>()));
  g = find_line(table.out, R"(bound by: (\S+) \((.+)\): (\S+)% of the step, doubling it gains (\S+)% tokens/s)");
  ASSERT_EQ(g.size(), 5U) << table.out;
  EXPECT_EQ(g[1], p.at("bottleneck").get<std::string>());
  EXPECT_EQ(g[2], p.at("bottleneck_resource").get<std::string>());
  EXPECT_EQ(g[3], shown("{:.1f}", 100.0 * p.at("bottleneck_share").get<double>()));
  EXPECT_EQ(g[4], shown("{:+.1f}", 100.0 * p.at("bottleneck_gain").get<double>()));
  for (const auto& part : j.at("step_parts")) {
    g = find_line(table.out, "(" + test::escaped(part.at("part").get<std::string>()) + R"() +(\S+) +(\S+)%)");
    ASSERT_EQ(g.size(), 4U) << part.at("part");
    EXPECT_EQ(g[2], shown("{:.4f}", part.at("time_s").get<double>()));
    EXPECT_EQ(g[3], shown("{:.1f}", 100.0 * part.at("share").get<double>()));
  }
  g = find_line(table.out, R"(# slowest stage: (\d+) of (\d+); .*)");
  ASSERT_EQ(g.size(), 3U) << table.out;
  EXPECT_EQ(g[1], std::to_string(p.at("parallel").at("slowest_stage").get<int>()));
  for (const auto& st : j.at("stages")) {
    g = find_line(table.out, fmt::format(R"(  stage {} +(\S+) GB(  does not fit)?)", st.at("stage").get<int>()));
    ASSERT_EQ(g.size(), 3U) << st;
    EXPECT_EQ(g[1], shown("{:.1f}", st.at("memory_bytes").get<double>() / 1e9));
    EXPECT_EQ(g[2].empty(), st.at("fits").get<bool>());
  }
  g = find_line(table.out, R"(  \(a GPU holds (\S+) GB: (every stage fits|a stage does not fit)\))");
  ASSERT_EQ(g.size(), 3U) << table.out;
  EXPECT_EQ(g[1], shown("{:.1f}", p.at("memory").at("capacity_bytes").get<double>() / 1e9));
  EXPECT_EQ(g[2] == "every stage fits", p.at("memory").at("fits").get<bool>());
  for (const auto& d : j.at("doubling")) {
    g = find_line(table.out,
                  "  (" + test::escaped(d.at("resource").get<std::string>()) +
                      R"() +(\S+)% samples/s   (.*?)( \[graph model rescaled by the alpha-beta ratio\])?)");
    ASSERT_EQ(g.size(), 5U) << d.at("resource");
    EXPECT_EQ(g[2], shown("{:+.1f}", 100.0 * d.at("throughput_gain").get<double>()));
    EXPECT_EQ(g[3], d.at("what").get<std::string>());
  }
  for (const auto& [name, key] : {std::pair<std::string, std::string>{"TP", "tp"}, {"CP", "cp"}, {"PP", "pp"}, {"DP", "dp"}}) {
    const auto& grp = j.at("groups").at(key);
    g = find_line(table.out, "  " + name + R"( +(\d+) ranks, (\d+) groups: .*)");
    if (grp.at("size").get<int>() <= 1) {
      EXPECT_THAT(table.out, ::testing::HasSubstr(fmt::format("  {:<6} 1 rank: no group\n", name)));
      continue;
    }
    ASSERT_EQ(g.size(), 3U) << name;
    EXPECT_EQ(g[1], std::to_string(grp.at("size").get<int>()));
    EXPECT_EQ(g[2], std::to_string(grp.at("groups").get<int>()));
  }
  const auto& c = p.at("time_to_train");
  g = find_line(table.out, R"(  (\S+) iterations, (\S+) h on (\d+) GPUs, (\S+) GPU-hours.*)");
  ASSERT_EQ(g.size(), 5U) << table.out;
  EXPECT_EQ(g[1], shown("{:.0f}", c.at("iterations").get<double>()));
  EXPECT_EQ(g[2], shown("{:.2f}", c.at("hours").get<double>()));
  EXPECT_EQ(g[4], shown("{:.1f}", c.at("gpu_hours").get<double>()));
}

}  // namespace
}  // namespace dlscale
