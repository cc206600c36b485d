// The model-parallel step (issue 37, eqs. P1-P13) against published Megatron-LM runs: Korthikanti et al.
// 2022's four GPT configurations (22B to 1T parameters, tensor parallelism 8, pipelines of up to 64 stages, 8
// to 512 A100s), each with full recompute and with sequence parallelism plus selective recompute
// (tests/data/model-parallel/korthikanti-2022.yaml, whose figures are recalled and cross-checked there).
// Nothing in the model was fitted to these rows.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "dlscale/cluster.hpp"
#include "dlscale/io.hpp"
#include "dlscale/predict.hpp"
#include "dlscale/zoo.hpp"

namespace dlscale {
namespace {

const std::filesystem::path kData = std::filesystem::path(DLSCALE_TEST_DATA_DIR) / "model-parallel" / "korthikanti-2022.yaml";

struct PublishedRun {
  std::string id;
  int gpus = 0;
  double iteration_s = 0.0;
  double mfu_percent = 0.0;  // 0: not published
  Scenario scenario;
};

DecoderShape shape_of(const YAML::Node& model, const YAML::Node& run) {
  DecoderShape d;
  d.layers = run["layers"].as<int>();
  d.hidden = run["hidden"].as<int>();
  d.heads = run["heads"].as<int>();
  d.ffn = 4 * d.hidden;
  d.vocab = model["vocab"].as<int>();
  d.seq = model["seq"].as<int>();
  d.context = d.seq;
  d.ffn_kind = model["ffn_kind"].as<std::string>();
  d.positions = model["positions"].as<std::string>();
  d.bias = model["bias"].as<bool>();
  d.tied = model["tied"].as<bool>();
  return d;
}

std::vector<PublishedRun> load_runs() {
  const YAML::Node doc = YAML::LoadFile(kData.string());
  const GpuSpec gpu = find_gpu(doc["gpu"].as<std::string>());
  std::vector<PublishedRun> out;
  for (const auto& row : doc["runs"]) {
    PublishedRun r;
    r.id = row["id"].as<std::string>();
    r.gpus = row["gpus"].as<int>();
    r.iteration_s = row["iteration_s"].as<double>();
    if (row["mfu_percent"]) r.mfu_percent = row["mfu_percent"].as<double>();
    Scenario& sc = r.scenario;
    ClusterOverrides ov;
    ov.nodes = r.gpus / 8;
    ov.gpu = gpu;
    sc.cluster = load_cluster(resolve(DataKind::cluster, doc["cluster"].as<std::string>(), "--cluster"), ov);
    sc.network = build_decoder(shape_of(doc["model"], row), r.id);
    sc.strategy = load_strategy(resolve(DataKind::framework, "megatron-core", "--framework"));
    sc.strategy.attention = AttentionKernel::eager;  // 2022's Megatron-LM: no flash attention (why selective recompute pays)
    sc.compute.precision = Precision::bf16;
    sc.compute.optimizer = Optimizer::adamw;
    sc.compute.recompute = recompute_from_string(row["recompute"].as<std::string>());
    ParallelLayout l = sc.strategy.parallel.value_or(ParallelLayout{});  // megatron-core's: eq. P28's async backward
    l.tp = row["tp"].as<int>();
    l.sp = row["sp"].as<bool>();
    l.pp = row["pp"].as<int>();
    l.micro_batch = 1;
    l.micro_batches = row["global_batch"].as<int>() / (r.gpus / (l.tp * l.pp));
    sc.parallel = l;
    out.push_back(std::move(r));
  }
  return out;
}

TEST(PublishedModelParallel, KorthikantiGptRunsOnA100) {
  const std::vector<PublishedRun> runs = load_runs();
  ASSERT_EQ(runs.size(), 8u);
  double sum = 0.0;
  double worst = 0.0;
  std::printf(
      "| run | GPUs | published s/iter | predicted | error | published MFU | predicted MFU |\n|---|---|---|---|---|---|---|\n");
  for (const PublishedRun& r : runs) {
    const Prediction p = Predictor(r.scenario).predict(r.gpus);
    ASSERT_TRUE(p.breakdown.parallel.has_value()) << r.id;
    EXPECT_TRUE(p.memory.fits) << r.id << ": " << in_bytes(p.memory.per_gpu) / 1e9 << " GB; the run ran";
    const double t = in_seconds(p.iteration_time);
    const double err = t / r.iteration_s - 1.0;
    sum += std::abs(err);
    worst = std::max(worst, std::abs(err));
    std::printf("| %s | %d | %.2f | %.2f | %+.1f %% | %s | %.1f %% |\n", r.id.c_str(), r.gpus, r.iteration_s, t, 100.0 * err,
                r.mfu_percent > 0 ? (std::to_string(r.mfu_percent).substr(0, 4) + " %").c_str() : "-", 100.0 * p.mfu);
  }
  const double mean = sum / static_cast<double>(runs.size());
  std::printf("mean |error| %.1f %%, worst %.1f %% over %zu runs\n", 100.0 * mean, 100.0 * worst, runs.size());
  // issue 37 judges tokens/s per GPU within 15 %; these rows are outside every fit. Mean 7.3 %, worst 16.1 % with
  // eager attention's three softmax passes; 1.3 / 3.9 % with the fused scale-mask-softmax and TP's GEMMs taken as
  // the whole layer's divided; 9.2 / 18.7 % timed at a TP rank's own shapes with the fitted 22.5 us a kernel; 3.2 /
  // 6.6 % with megatron-core's launch gap (eq. K20) in its place; 3.1 / 7.1 % after P28; 6.8 / 11.8 % after P30 (the
  // recomputed forward's TP collectives, charged as Megatron runs them) and R1b's refit of K16 (Ampere 0.88 -> 0.86,
  // fitted on the FSDP rows); 8.2 / 13.5 % since eq. P43 charges megatron-core's jitter (cv 0.0055, PyTorch's, borrowed)
  // as the wait for the slowest of the run's GPUs (+1.3 % at 8 GPUs, +1.7 % at 512), which the data-parallel rows K16
  // was fitted on carry too. Held to the 15 % a run and a mean below 9 %: these recalled rows fit nothing.
  EXPECT_LT(mean, 0.09);
  EXPECT_LT(worst, 0.15);
}

// Sequence parallelism with selective recompute beats full recompute on every configuration, as the paper's
// Table 5 says (29-32 % more throughput); the model must order them the same way.
TEST(PublishedModelParallel, SelectiveWithSequenceParallelBeatsFullRecompute) {
  const std::vector<PublishedRun> runs = load_runs();
  for (std::size_t i = 0; i + 1 < runs.size(); i += 2) {
    const double full = in_seconds(Predictor(runs[i].scenario).predict(runs[i].gpus).iteration_time);
    const double sel = in_seconds(Predictor(runs[i + 1].scenario).predict(runs[i + 1].gpus).iteration_time);
    EXPECT_LT(sel, full) << runs[i + 1].id;
    EXPECT_GT(full / sel, 1.10) << runs[i].id;  // the paper's gains are 1.29-1.32
  }
}

}  // namespace
}  // namespace dlscale
