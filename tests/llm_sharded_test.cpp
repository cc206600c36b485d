// Published sharded language-model training runs (tests/data/llm-sharded/measurements.yaml, a byte-identical
// copy of shared/data/llm-sharded): every complete row that the model can express is predicted, its tokens/s
// per GPU set beside the published figure, and the per-architecture sustained tensor rate (eq. K16,
// topologies/compute-params.yaml) is fitted here in-sample and leaving one source out. Prints the table;
// docs/compute-model.md ("Language-model training") quotes it.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "dlscale/io.hpp"
#include "dlscale/kernels.hpp"
#include "dlscale/memory.hpp"
#include "dlscale/predict.hpp"
#include "dlscale/sharding.hpp"
#include "dlscale/zoo.hpp"

namespace dlscale {
namespace {

const std::filesystem::path kData = std::filesystem::path(DLSCALE_TEST_DATA_DIR) / "llm-sharded" / "measurements.yaml";

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

/// One published run, as the model takes it.
struct LlmRun {
  std::string id, source;  // source: the repository the row cites (fms-fsdp, torchtitan, ao, DeepSpeedExamples)
  std::string architecture;
  Scenario scenario;
  int gpus = 0;
  double measured = 0.0;  // tokens/s per GPU
};

/// The source of a row: the repository of `source.ref` ("pytorch/torchtitan@..." -> "torchtitan").
std::string source_of(const YAML::Node& row) {
  const std::string ref = row["source"]["ref"].as<std::string>();
  const std::size_t slash = ref.find('/'), at = ref.find('@');
  return ref.substr(slash + 1, at - slash - 1);
}

/// The cluster, the GPU and the fabric a row ran on, as the shipped files describe them.
struct Machine {
  std::string cluster, gpu, fabric;
  int gpus_per_node = 8;
};
std::optional<Machine> machine_of(const YAML::Node& row) {
  const std::string type = row["gpu"]["type"].as<std::string>();
  const std::string detail = row["gpu"]["detail"] ? lower(row["gpu"]["detail"].as<std::string>()) : "";
  const std::string net =
      !row["interconnect"] || row["interconnect"].IsNull() ? "" : lower(row["interconnect"].as<std::string>());
  Machine m;
  if (type == "A100") m = {"dgx-a100-hdr", "a100-sxm4-80gb", ""};
  else if (type == "H100") m = {"dgx-h100-ndr", contains(detail, "hbm2e") ? "h100-sxm-hbm2e" : "h100-sxm", ""};
  else if (type == "H200") m = {"dgx-h100-ndr", "h200", ""};
  else if (type == "B200") m = {"dgx-b200", contains(detail, "750w") ? "b200@750W" : "", ""};  // torchao's power cap
  else if (type == "V100") m = {"dgx2", "", "", 16};
  else return std::nullopt;  // MI300X: not in the catalogue
  // fms-fsdp states its inter-node bandwidth per node: 400 Gb/s (A100), 800 Gb/s (H100)
  if (contains(net, "400 gbps inter-node")) m.fabric = "ib:200Gb/s:2";
  if (contains(net, "800 gbps inter-node")) m.fabric = "ib:400Gb/s:2";
  return m;
}

/// The recompute mode a row's checkpointing detail names (eq. R1-R3).
void set_recompute(const YAML::Node& row, ComputeOptions& c) {
  const YAML::Node ck = row["activation_checkpointing"];
  if (!ck || !ck.IsScalar() || ck.as<std::string>() != "true") return;
  const std::string d =
      row["activation_checkpointing_detail"] ? lower(row["activation_checkpointing_detail"].as<std::string>()) : "";
  if (contains(d, "selective layer")) {  // torchtitan's selective_ac_option = 2: every second block in full
    c.recompute = Recompute::full;
    c.recompute_blocks = 0.5;
  } else if (contains(d, "op")) {
    c.recompute = Recompute::op;
  } else if (contains(d, "every k-th block") && row["measured"]["hfu_fraction"]) {
    // fms-fsdp's selective_checkpointing: its HFU/MFU ratio says how many blocks were checkpointed, a
    // property of the configuration, not of the speed: HFU/MFU − 1 = the recomputed forward over the 3
    // forwards' worth a step runs, so 3·(HFU/MFU − 1) ≈ the fraction of blocks (the published two-digit
    // fractions make it ±0.1).
    const double r = row["measured"]["hfu_fraction"].as<double>() / row["measured"]["mfu_fraction"].as<double>();
    c.recompute = Recompute::full;
    c.recompute_blocks = std::clamp(3.0 * (r - 1.0), 0.1, 1.0);
  } else {
    c.recompute = Recompute::full;
  }
}

/// The row's fp8 recipe (its `float8` text, lower case) on an fp8 step; false (and `why`) for one the model does not
/// express.
bool set_float8(const std::string& float8, ComputeOptions& c, std::string& why) {
  // torchao's "rowwise" recipe (eq. K15); "rowwise_with_gw_hp" keeps the weight gradient's product in bf16, which the
  // model does not express (its rows ran on MI300X, not in the catalogue, and are skipped above)
  if (contains(float8, "rowwise_with_gw_hp")) return why = "fp8 recipe rowwise_with_gw_hp not modelled", false;
  if (contains(float8, "rowwise")) c.fp8_scaling = Fp8Scaling::rowwise;
  // torchao's mxfp8_cublas recipes (MX block scaling, eq. K15c; "_rceil" rounds the scales' exponents up, which the
  // model does not tell apart: the same casts, scales and products)
  if (contains(float8, "mxfp8")) c.fp8_scaling = Fp8Scaling::mxfp8;
  // eq. S12, FSDP's float8 all-gather: torchao's "tensorwise with float8 all-gather" (H100, MI300X) and "float8
  // tensorwise (f8 all-gather)" (B200), torchtitan's "quantize.linear.float8 with enable_fsdp_float8_all_gather,
  // precompute_float8_dynamic_scale_for_fsdp, force_recompute_fp8_weight_in_bwd" (H200); not "rowwise with bfloat16
  // all-gather", nor torchtitan's 2024 "float8 linears", which do not say
  c.fp8_all_gather = c.precision == Precision::fp8 && c.fp8_scaling == Fp8Scaling::tensorwise &&
      (contains(float8, "float8 all-gather") || contains(float8, "f8 all-gather") || contains(float8, "float8_all_gather"));
  return true;
}

/// A row as a scenario; nullopt (with the reason) when the model cannot express it.
std::optional<LlmRun> run_of(const YAML::Node& row, std::string& why) {
  if (row["completeness"].as<std::string>() != "full") return why = "partial row", std::nullopt;
  const YAML::Node m = row["model"];
  const std::string name = lower(m["name"].as<std::string>());
  if (contains(name, "bert")) return why = "an encoder, not a decoder", std::nullopt;
  const auto mach = machine_of(row);
  if (!mach) return why = "GPU not in the catalogue", std::nullopt;
  const YAML::Node meas = row["measured"];
  double measured = 0.0;
  const int gpus = row["gpus"].as<int>();
  if (meas["tokens_per_s_per_gpu"]) measured = meas["tokens_per_s_per_gpu"].as<double>();
  else if (meas["samples_per_s_total"]) measured = meas["samples_per_s_total"].as<double>() * m["seq_len"].as<double>() / gpus;
  else return why = "no tokens/s", std::nullopt;

  DecoderShape d;
  d.layers = m["layers"].as<int>();
  d.hidden = m["hidden"].as<int>();
  d.heads = m["heads"].as<int>();
  d.kv_heads = m["kv_heads"] ? m["kv_heads"].as<int>() : 0;
  d.vocab = m["vocab"].as<int>();
  d.seq = m["seq_len"].as<int>();
  if (contains(name, "gpt")) {  // GPT-2: GELU MLP of 4·D, learned positions (1,024), biases, tied output
    d.ffn = 4 * d.hidden;
    d.ffn_kind = "gelu";
    d.positions = "learned";
    d.context = 1024;
    d.tied = d.bias = true;
  } else {
    d.ffn = m["ffn_hidden"].as<int>();
  }
  LlmRun r;
  r.id = row["id"].as<std::string>();
  r.source = source_of(row);
  r.gpus = gpus;
  r.measured = measured;
  Scenario& sc = r.scenario;
  ClusterOverrides ov;
  ov.nodes = std::max(1, gpus / mach->gpus_per_node);
  if (!mach->gpu.empty()) ov.gpu = find_gpu(mach->gpu);
  if (!mach->fabric.empty()) ov.fabric = parse_fabric_spec(mach->fabric);
  sc.cluster = load_cluster(resolve(DataKind::cluster, mach->cluster, "--cluster"), ov);
  r.architecture = sc.cluster.gpu.architecture;
  sc.network = build_decoder(d, r.id);
  const std::string strategy = row["strategy"].as<std::string>();
  const std::string framework = lower(row["framework"].as<std::string>());
  // torchtitan's 2024-12 benchmarks ran at commit 9dec370, before it compiled the loss (torchtitan-2024.yaml)
  const bool titan_2024 = row["notes"] && contains(row["notes"].as<std::string>(), "torchtitan 9dec370");
  // DeepSpeedExamples' GPT-2 rows ran the Hugging Face Trainer of transformers 4.12 with DeepSpeed 0.5 (eq. K24)
  const bool hf = contains(framework, "hugging face");
  const std::string fw = contains(framework, "fsdp2") ? (titan_2024 ? "torchtitan-2024" : "torchtitan")
      : strategy == "fsdp-hybrid"                     ? "fsdp-hybrid"
      : strategy == "zero1"                           ? (hf ? "hf-deepspeed-zero1" : "deepspeed-zero1")
                                                      : "fsdp";
  sc.strategy = load_strategy(resolve(DataKind::framework, fw, "--framework"));
  sc.strategy.jitter_cv = 0.0;  // a published mean over steps
  // torchao's H100 rows name "torchtitan 0.0.2", a version string torchtitan's source kept until 0.1.0, so the commit is
  // not known: before 9dec370's "TODO: compiling loss function causes CUDA errors" was lifted (the loss eager under
  // --compile, as torchtitan-2024.yaml) or after (compiled, as torchtitan.yaml). Their published peak decides it: 51.2
  // GB, the eager loss 50.4 (-1.7 %), the compiled one 41.6 (-18.9 %), when this was chosen (50.2 since eq. S4b's block
  // units); so these rows take the eager loss. That makes their memory check no independent test; their tokens/s are one
  // (+6.1/+3.9/+17.6 % -> +5.0/+2.5/+16.1 % then).
  if (contains(framework, "torchtitan 0.0.2")) sc.strategy.compile_loss = false;
  sc.batch_per_gpu = row["micro_batch_per_gpu"].as<int>();
  if (row["grad_accum"] && row["grad_accum"].IsScalar()) sc.compute.accumulate = row["grad_accum"].as<int>();
  const std::string precision = lower(row["precision"].as<std::string>());
  const std::string float8 = row["float8"] && row["float8"].IsScalar() ? lower(row["float8"].as<std::string>()) : "none";
  sc.compute.precision = contains(precision, "fp16") ? Precision::fp16 : Precision::bf16;
  if (float8 != "none" || contains(precision, "float8")) sc.compute.precision = Precision::fp8;
  if (!set_float8(float8, sc.compute, why)) return std::nullopt;
  sc.compute.optimizer = Optimizer::adamw;
  sc.compute.compiled = row["compile"] && row["compile"].IsScalar() && row["compile"].as<std::string>() == "true";
  set_recompute(row, sc.compute);
  return r;
}

std::vector<LlmRun> load_runs(std::vector<std::string>* skipped = nullptr) {
  std::vector<LlmRun> out;
  for (const auto& row : YAML::LoadFile(kData.string())["measurements"]) {
    std::string why;
    if (auto r = run_of(row, why)) out.push_back(std::move(*r));
    else if (skipped) skipped->push_back(row["id"].as<std::string>() + ": " + why);
  }
  return out;
}

/// The architectures eq. K16 is fitted for: those whose rows are FSDP runs of PyTorch (the V100 rows are
/// DeepSpeed under the Hugging Face Trainer, one source: fitting there would absorb what the model lacks).
const std::set<std::string> kFitted = {"ampere", "hopper"};
/// Architectures whose K16 is borrowed from a fitted one (compute-params.yaml: Blackwell takes Hopper's): leaving a
/// source out refits the lender without that source.
const std::map<std::string, std::string> kBorrowed = {{"blackwell", "hopper"}};

/// Tokens/s per GPU of every run at each sharded_tensor of the grid (its architecture's parameter).
struct Grid {
  std::vector<double> values;
  std::vector<std::vector<double>> predicted;  // [run][value]
};
Grid predict_grid(const std::vector<LlmRun>& runs) {
  Grid g;
  for (int i = 0; i <= 70; ++i) g.values.push_back(0.3 + 0.01 * i);
  const auto shipped = shipped_kernel_params();
  for (const LlmRun& r : runs) {
    std::vector<double> row;
    for (double v : g.values) {
      auto set = std::make_shared<KernelParamSet>(*shipped);
      bool found = false;
      for (auto& a : set->architectures)
        if (a.architecture == r.architecture) a.sharded_tensor = v, found = true;
      if (!found) {
        KernelParams a = set->defaults;
        a.architecture = r.architecture;
        a.sharded_tensor = v;
        set->architectures.push_back(a);
      }
      Scenario sc = r.scenario;
      sc.compute.kernel_params = set;
      const Prediction p = Predictor(sc, Predictor::TimesOnly{}).predict(r.gpus);
      row.push_back(p.throughput_tokens_per_s / r.gpus);
    }
    g.predicted.push_back(std::move(row));
  }
  return g;
}

double rel(double predicted, double measured) { return predicted / measured - 1.0; }

/// The grid value that minimises the mean absolute log error over the runs of `arch` the filter keeps.
template <class Keep>
std::size_t fit(const std::vector<LlmRun>& runs, const Grid& g, const std::string& arch, Keep keep) {
  std::size_t best = g.values.size() - 1;
  double best_err = 1e300;
  for (std::size_t v = 0; v < g.values.size(); ++v) {
    double err = 0.0;
    int n = 0;
    for (std::size_t i = 0; i < runs.size(); ++i)
      if (runs[i].architecture == arch && keep(runs[i])) err += std::abs(std::log(g.predicted[i][v] / runs[i].measured)), ++n;
    if (n > 0 && err < best_err) best_err = err, best = v;
  }
  return best;
}

/// The shipped value's grid index for `arch`.
std::size_t shipped_index(const Grid& g, const std::string& arch) {
  const double v = shipped_kernel_params()->for_architecture(arch).sharded_tensor;
  std::size_t best = 0;
  for (std::size_t i = 0; i < g.values.size(); ++i)
    if (std::abs(g.values[i] - v) < std::abs(g.values[best] - v)) best = i;
  return best;
}

TEST(LlmSharded, TheSharedRowsAreCopiedByteForByte) {
  const auto shared = std::filesystem::path(DLSCALE_SOURCE_DIR) / ".." / "shared" / "data" / "llm-sharded" / "measurements.yaml";
  if (!std::filesystem::exists(shared)) GTEST_SKIP() << "no shared/ beside the repository";
  EXPECT_EQ(slurp(shared), slurp(kData)) << "tests/data/llm-sharded/measurements.yaml differs from " << shared;
}

TEST(LlmSharded, EveryCompleteDecoderRowOnAKnownGpuIsPredicted) {
  std::vector<std::string> skipped;
  const auto runs = load_runs(&skipped);
  for (const auto& s : skipped) std::printf("skipped %s\n", s.c_str());
  // 72 rows: 8 partial, 4 MI300X, 4 encoders (BERT-large, DeBERTa) and mds-bert leave 56 decoders
  EXPECT_EQ(runs.size(), 56u);
  for (const LlmRun& r : runs) {
    const Prediction p = Predictor(r.scenario, Predictor::TimesOnly{}).predict(r.gpus);
    EXPECT_TRUE(p.memory.fits) << r.id << " ran, and is predicted to need " << in_bytes(p.memory.per_gpu) / 1e9 << " GB of "
                               << in_bytes(p.memory.capacity) / 1e9;
  }
}

/// The peak memory a row publishes, in bytes (peak_memory_gib or peak_memory_gb), or 0. Every row that publishes
/// one ran torchtitan, which logs the allocator's peak reserved memory in GiB ("memory: X GiB", max_reserved;
/// torchtitan's metrics code, recalled, not read here); torchao's tables, labelled GB, are parsed from those
/// logs (the rows' notes name parse_torchtitan_logs.py), so their numbers are taken as GiB too.
double published_peak(const std::string& id) {
  for (const auto& row : YAML::LoadFile(kData.string())["measurements"]) {
    if (row["id"].as<std::string>() != id) continue;
    const YAML::Node m = row["measured"];
    if (m["peak_memory_gib"]) return m["peak_memory_gib"].as<double>() * 1073741824.0;
    if (m["peak_memory_gb"]) return m["peak_memory_gb"].as<double>() * 1073741824.0;
  }
  return 0.0;
}

TEST(LlmSharded, PeakMemoryBesideWhatTheRunsPublish) {
  std::vector<double> errors;
  for (const LlmRun& r : load_runs()) {
    const double published = published_peak(r.id);
    if (published <= 0.0) continue;
    const Prediction p = Predictor(r.scenario, Predictor::TimesOnly{}).predict(r.gpus);
    // against the allocator's reserved peak: the model's tensors and slack, not the CUDA context and workspaces
    const double e = rel(in_bytes(p.memory.allocator_reserved), published);
    std::printf("%-42s published %6.1f GB, predicted %6.1f GB (%+.1f %%)\n", r.id.c_str(), published / 1e9,
                in_bytes(p.memory.allocator_reserved) / 1e9, 100 * e);
    errors.push_back(std::abs(e));
  }
  double mean = 0;
  for (double e : errors) mean += e / static_cast<double>(errors.size());
  std::printf("peak memory of %zu rows: mean |error| %.1f %%, worst %.1f %%, %td within 15 %%\n", errors.size(), 100 * mean,
              100 * *std::max_element(errors.begin(), errors.end()),
              std::count_if(errors.begin(), errors.end(), [](double e) { return e <= 0.15; }));
  // 17 rows publish a peak (torchtitan's H100 and H200 benchmarks, torchao's H100 and B200 tables), torchtitan's
  // max_reserved in GiB, set beside the allocator's reserved figure. Where it stands: mean 6.6 %, 16 within 15 %,
  // worst 15.5 % (6.5 %, 16 and 16.1 % before eq. S4b held the root beside a block wrap's units; 9.6 %, 13 and 18.9 % before
  // torchao's H100 rows took the eager loss their peak shows, run_of; 11.1 %, 12 and 22.2 % before eq. M2 stopped counting the
  // head's half logits beside the loss's; 16.6 %, 12 and 42.2 % before the loss's backward, FSDP2's fp32 shards, its gradients'
  // own pool and per-op SAC's saved products were counted); the miss, one of torchao's B200 rows (+15.5 %), is discussed in
  // docs/compute-model.md ("Memory").
  EXPECT_EQ(errors.size(), 17u);
  EXPECT_LT(mean, 0.08);
  EXPECT_GE(std::count_if(errors.begin(), errors.end(), [](double e) { return e <= 0.15; }), 16);
}

// The framework the DeepSpeedExamples GPT-2 rows run under (models/frameworks/hf-deepspeed-zero1.yaml): transformers
// 4.12's eager GPT-2 code (eq. K24), eager attention (no SDPA then, no FlashAttention on a V100), ZeRO-1 with
// DeepSpeed 0.5's default overlap_comm false (one bucket: the exchange after the whole backward).
TEST(LlmSharded, TheDeepSpeedExamplesRowsRunTransformersEagerCode) {
  const auto runs = load_runs();
  int rows = 0;
  for (const LlmRun& r : runs) {
    if (r.source != "DeepSpeedExamples") continue;
    ++rows;
    const Strategy& s = r.scenario.strategy;
    EXPECT_EQ(s.name, "hf-deepspeed-zero1") << r.id;
    EXPECT_TRUE(s.execution.transformers_gpt2) << r.id;
    EXPECT_EQ(s.attention, AttentionKernel::eager) << r.id;
    EXPECT_EQ(s.sharding.stage, 1) << r.id;
    EXPECT_GT(in_bytes(s.bucket_size), 2.0 * static_cast<double>(r.scenario.network.total_params())) << r.id;
  }
  EXPECT_EQ(rows, 7);
  EXPECT_FALSE(load_strategy(resolve(DataKind::framework, "deepspeed-zero1", "--framework")).execution.transformers_gpt2);
}

TEST(LlmSharded, TokensPerGpuInSampleAndLeavingOneSourceOut) {
  const auto runs = load_runs();
  const Grid g = predict_grid(runs);
  std::set<std::string> sources;
  for (const LlmRun& r : runs) sources.insert(r.source);
  // in-sample: each architecture's value fitted on all its rows; the shipped file must hold it
  std::map<std::string, std::size_t> in_sample;
  for (const auto& arch : kFitted) {
    in_sample[arch] = fit(runs, g, arch, [](const LlmRun&) { return true; });
    std::printf("sharded_tensor %s: fitted %.2f, shipped %.2f\n", arch.c_str(), g.values[in_sample[arch]],
                g.values[shipped_index(g, arch)]);
    EXPECT_NEAR(g.values[in_sample[arch]], g.values[shipped_index(g, arch)], 0.011) << "refit compute-params.yaml: " << arch;
  }
  std::printf("%-42s %-18s %-9s %9s %9s %8s %8s\n", "row", "source", "arch", "measured", "predicted", "in", "loso");
  std::map<std::string, std::vector<double>> err_in, err_out;  // by group: "fsdp" (fitted architectures) or "all"
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const LlmRun& r = runs[i];
    const bool fitted = kFitted.count(r.architecture) > 0;
    const std::size_t vi = shipped_index(g, r.architecture);
    // leave this row's source out: refit its architecture on the other sources' rows (none: the default, 1)
    std::size_t vo = g.values.size() - 1;
    if (auto lender = kBorrowed.find(r.architecture); lender != kBorrowed.end())
      vo = fit(runs, g, lender->second, [&](const LlmRun& o) { return o.source != r.source; });
    if (fitted) {
      bool others = false;
      for (const LlmRun& o : runs) others = others || (o.architecture == r.architecture && o.source != r.source);
      if (others) vo = fit(runs, g, r.architecture, [&](const LlmRun& o) { return o.source != r.source; });
    }
    const double ein = rel(g.predicted[i][vi], r.measured), eout = rel(g.predicted[i][vo], r.measured);
    std::printf("%-42s %-18s %-9s %9.0f %9.0f %+7.1f%% %+7.1f%%\n", r.id.c_str(), r.source.c_str(), r.architecture.c_str(),
                r.measured, g.predicted[i][vi], 100 * ein, 100 * eout);
    for (const std::string grp : {fitted ? "fsdp" : "other", "all"}) {
      err_in[grp].push_back(std::abs(ein));
      err_out[grp].push_back(std::abs(eout));
    }
  }
  auto mean = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return v.empty() ? 0.0 : s / static_cast<double>(v.size());
  };
  for (const auto& [grp, v] : err_in)
    std::printf("%s rows (%zu): mean |error| in-sample %.1f %%, leaving one source out %.1f %%\n", grp.c_str(), v.size(),
                100 * mean(v), 100 * mean(err_out[grp]));
  // The FSDP rows of the fitted architectures (A100, H100, H200: fms-fsdp, torchtitan, torchao): in-sample
  // within 8 % and leaving one source out within 12 % on average (issue 33). Where it stands: 4.9 % and 6.9 % (5.0 % and 7.0 %
  // before eq. S4b's per-block units and S11's operations, Hopper's sharded_tensor 0.79 then; 5.1 % and 7.1 % before torchao's
  // H100 rows took the eager loss, run_of; 5.5 % in-sample before R1b) (5.7 % and 7.2 % before eq. S7b shared the node's NICs
  // among fms-fsdp's HSDP replica all-reduces); held a little above that so that a change which loses ground shows. The B200 and
  // the DeepSpeed rows are printed, not held to it (docs/compute-model.md, "Language-model training": what the model lacks there,
  // and what was tried on fms-fsdp's 13B rows).
  EXPECT_LT(mean(err_in["fsdp"]), 0.08);
  EXPECT_LT(mean(err_out["fsdp"]), 0.12);
  EXPECT_LT(mean(err_in["fsdp"]), 0.053);
  EXPECT_LT(mean(err_out["fsdp"]), 0.072);
}

// torchao's compiled row-wise runs beside its tensor-wise ones (Llama-3-8B, 8 GPUs, per-op SAC, 8,192 tokens a GPU a
// step): the H100 row-wise step is 145 ms longer, the B200 one 162 ms, where eq. K15 gives 4 and 5. Three candidate
// mechanisms, each worked out from the rows and the model's own kernel times (docs/compute-model.md, K15, "What makes
// torchao's compiled row-wise runs slower"): (a) the row-wise re-casts' memory traffic, counted here by hand per
// nn.Linear (rows·in + rows·out + in·out elements each: the input and the output gradient along the tokens, the weight
// along its outputs); (b) a slower row-wise product, as the ratio of rates that would close the gap on the step's fp8
// products (eq. K16's rate, per-op SAC's half forward again); (c) the weight gradient's product in bf16. Held: what
// refutes (a) and (c) and keeps (b) out of the model. (a) needs the re-casts to stream at a share of the bandwidth
// 2.6 times larger on the H100 than on the B200, and at the H100's share would have made our compiled H200 row-wise step
// (PyTorch 2.11, 4 blocks) about 12 ms slower than the tensor-wise one, where it ran 7 ms faster; (c) closes 67 % of the
// H100 gap and 41 % of the B200 one, and the rows name the "rowwise" recipe, not "rowwise_with_gw_hp"; (b) needs the
// products at 0.71 (H100) and 0.60 (B200) of the tensor-wise rate, below anything measured here (0.94-1.02 on the
// H200 under PyTorch 2.11's cuBLASLt): one factor per architecture fitted to one row each, not admitted.
TEST(LlmSharded, RowWiseGapBesideItsCandidateMechanisms) {
  const auto runs = load_runs();
  const auto run = [&](const std::string& id) {
    for (const LlmRun& r : runs)
      if (r.id == id) return r;
    ADD_FAILURE() << id;
    return LlmRun{};
  };
  // the re-cast elements of one Llama-3-8B block at `rows` tokens, by nn.Linear (wq, wk, wv, wo, w1, w3, w2)
  const auto recast_elements = [](double rows) {
    double e = 0;
    for (const auto& [in, out] : std::vector<std::pair<double, double>>{
             {4096, 4096}, {4096, 1024}, {4096, 1024}, {4096, 4096}, {4096, 14336}, {4096, 14336}, {14336, 4096}})
      e += rows * in + rows * out + in * out;
    return e;
  };
  const double tokens = 8192, cast_bytes = 3;  // bf16 read, fp8 written (eq. K15, compiled)
  std::map<std::string, double> share, ratio, gw_hp;
  for (const auto& [gpu, tw, rw] :
       std::vector<std::array<std::string, 3>>{{"H100", "torchao-h100-8b-tensorwise", "torchao-h100-8b-rowwise"},
                                               {"B200", "torchao-b200-8b-f8tensorwise", "torchao-b200-8b-f8rowwise"}}) {
    const LlmRun t = run(tw), w = run(rw);
    ASSERT_EQ(t.scenario.compute.recompute, Recompute::op);
    const auto step_ms = [&](const LlmRun& r, double per_gpu) { return 1e3 * tokens * r.scenario.batch_per_gpu / per_gpu; };
    const auto predicted = [&](const LlmRun& r) {
      return step_ms(r, Predictor(r.scenario, Predictor::TimesOnly{}).predict(r.gpus).throughput_tokens_per_s / r.gpus);
    };
    const double gap = step_ms(w, w.measured) - step_ms(t, t.measured), modelled = predicted(w) - predicted(t);
    const double open = gap - modelled;
    // the step's fp8 products as the model times them (K16 included), and the weight gradients' in bf16
    double products = 0, wgrad8 = 0, wgrad16 = 0;
    const Network& net = t.scenario.network;
    for (Precision p : {Precision::fp8, Precision::bf16}) {
      Scenario sc = t.scenario;
      sc.compute.precision = p;
      const ComputeOptions opt = step_compute(sc);  // FSDP2: the products at eq. K16's rate, as on eight GPUs
      for (std::size_t i = 0; i < net.layers.size(); ++i) {
        if (!net.layers[i].name.starts_with("model.layers.")) continue;  // the blocks' linear maps; the head stays bf16
        for (const KernelTiming& k :
             layer_kernels(net.layers[i], i == 0, i + 1 == net.layers.size(), sc.cluster.gpu, sc.batch_per_gpu, opt)) {
          if (k.flops <= Flops{} || contains(k.name, "attention")) continue;
          const double ms = 1e3 * in_seconds(k.time);
          if (p == Precision::fp8) products += contains(k.name, " fwd") ? 1.5 * ms : ms;  // R3: half the forward again
          if (contains(k.name, " wgrad")) (p == Precision::fp8 ? wgrad8 : wgrad16) += ms;
        }
      }
    }
    const auto blocks =
        std::count_if(net.layers.begin(), net.layers.end(), [](const Layer& l) { return l.name.ends_with(".mlp"); });
    const double elements = recast_elements(tokens * t.scenario.batch_per_gpu) * static_cast<double>(blocks);
    share[gpu] = elements * cast_bytes / (open * 1e-3) / in_bytes_per_second(t.scenario.cluster.gpu.memory_bandwidth);
    ratio[gpu] = 1.0 / (1.0 + open / products);
    gw_hp[gpu] = (wgrad16 - wgrad8) / open;
    std::printf(
        "%s row-wise over tensor-wise: measured %+.1f ms, modelled %+.1f ms; fp8 products %.1f ms, re-cast %.2f G "
        "elements; (a) at %.3f of the bandwidth, (b) products at %.3f of the rate, (c) a bf16 weight gradient "
        "%+.1f ms (%.0f %% of it)\n",
        gpu.c_str(), gap, modelled, products, elements / 1e9, share[gpu], ratio[gpu], wgrad16 - wgrad8, 100 * gw_hp[gpu]);
  }
  // (a): one share of the bandwidth for one kernel class on both GPUs would not do (eq. K21's premise) ...
  EXPECT_GT(share["H100"] / share["B200"], 2.0);
  // ... and our compiled H200 steps (PyTorch 2.11, 4 blocks, the re-casts compiled) say row-wise costs nothing extra
  double h200_tw = 0, h200_rw = 0;
  std::ifstream in(std::filesystem::path(DLSCALE_TEST_DATA_DIR) / "h200-pytorch" / "host-2026-11-28" / "call1-decoder.jsonl");
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.value("shape", "") != "llama3-8b" || !j.value("compile", false) || j.value("ac", "") != "none") continue;
    if (j["precision"] == "fp8-rowwise") h200_rw = j["ms_per_iter"];
    if (j["precision"] == "fp8") h200_tw = j["ms_per_iter"];
  }
  ASSERT_GT(h200_tw * h200_rw, 0.0);
  const double h200_a =
      1e3 * recast_elements(tokens) * 4 * cast_bytes / (share["H100"] * in_bytes_per_second(find_gpu("h200").memory_bandwidth));
  std::printf("H200 compiled, 4 blocks: row-wise over tensor-wise measured %+.1f ms; (a) at the H100's share %+.1f ms\n",
              h200_rw - h200_tw, h200_a);
  EXPECT_LT(h200_rw - h200_tw, 0.0);
  EXPECT_GT(h200_a, 5.0);
  // (b): both below the row-wise products' rate measured on the H200 (0.94-1.02 of tensor-wise, PyTorch 2.11), and
  // apart from each other: a factor per architecture
  EXPECT_LT(ratio["H100"], 0.9);
  EXPECT_LT(ratio["B200"], 0.9);
  EXPECT_GT(ratio["H100"] - ratio["B200"], 0.05);
  // (c): a bf16 weight gradient would close the two gaps in very different shares
  EXPECT_GT(gw_hp["H100"] - gw_hp["B200"], 0.2);
}

}  // namespace
}  // namespace dlscale

namespace dlscale {
namespace {

// The worked example of docs/compute-model.md ("Language-model training: a worked example"): Llama-2-7B at
// sequence 4096 on 8 H100s under FSDP full shard, every figure derived by hand from the shape.
Network llama2_7b() {
  return build_decoder(DecoderShape{.layers = 32, .hidden = 4096, .heads = 32, .ffn = 11008, .vocab = 32000, .seq = 4096},
                       "llama2-7b");
}

TEST(LlmWorkedExample, FlopsOfOneBlock) {
  const Network net = llama2_7b();
  const double S = 4096, D = 4096, F = 11008;
  // GEMMs of one block, forward, per sequence (2 FLOPs a multiply-add):
  const double qkv = 2 * S * D * (3 * D);  // 412,316,860,416
  const double out = 2 * S * D * D;        // 137,438,953,472
  const double up = 2 * S * D * (2 * F);   // gate and up: 738,734,374,912
  const double down = 2 * S * F * D;       // 369,367,187,456
  const double core = 2 * 2 * S * S * D;   // Q·Kᵀ and P·V, counted in full: 274,877,906,944
  EXPECT_DOUBLE_EQ(qkv, 412316860416.0);
  EXPECT_DOUBLE_EQ(up + down, 1108101562368.0);
  // the zoo's layers of block 0: input norm, attention (projections + core), post norm, MLP
  const Layer& attn = net.layers[2];
  const Layer& mlp = net.layers[4];
  ASSERT_EQ(attn.kind, LayerKind::attention);
  ASSERT_EQ(mlp.kind, LayerKind::linear);
  EXPECT_DOUBLE_EQ(attn.forward_flops_per_sample, qkv + out + core);
  EXPECT_DOUBLE_EQ(mlp.forward_flops_per_sample, up + down);
  EXPECT_EQ(net.total_params(), 6738415616);  // 2·32000·4096 + 32·(4·4096² + 3·4096·11008 + 2·4096) + 4096
}

TEST(LlmWorkedExample, BytesGatheredAndReduceScatteredPerStep) {
  const Network net = llama2_7b();
  const double P = 6738415616.0;
  Strategy fsdp = load_strategy(resolve(DataKind::framework, "fsdp", "--framework"));
  const GpuPlacement at{8, 1, 8};
  ASSERT_EQ(fsdp.sharding.wrap, Sharding::Wrap::block);
  const StepTraffic t = step_traffic(net, fsdp.sharding, Precision::bf16, at);
  // bus bytes per GPU: all-gather of the bf16 working copy before forward, P·2·(n−1)/n; again before backward, but a
  // unit per block (eq. S4b) holds the root (2·32000·4096 + 4096 = 262,148,096 parameters: embedding, final norm,
  // output) from its forward to the end of the backward, so only the blocks, (P − 262,148,096)·2·(n−1)/n; the
  // reduce-scatter of bf16 gradients, P·2·(n−1)/n
  const double root = 2.0 * 32000 * 4096 + 4096;
  EXPECT_DOUBLE_EQ(in_bytes(t.allgather_forward), P * 2 * 7 / 8);            // 11,792,227,328 B
  EXPECT_DOUBLE_EQ(in_bytes(t.allgather_backward), (P - root) * 2 * 7 / 8);  // 11,333,468,160 B
  EXPECT_DOUBLE_EQ(in_bytes(t.reducescatter), P * 2 * 7 / 8);
  // torchtitan reduces in fp32 (reduce_dtype): twice the reduce-scatter
  Strategy titan = load_strategy(resolve(DataKind::framework, "torchtitan", "--framework"));
  EXPECT_DOUBLE_EQ(in_bytes(step_traffic(net, titan.sharding, Precision::bf16, at).reducescatter), P * 4 * 7 / 8);
}

TEST(LlmWorkedExample, RecomputeUnderEachMode) {
  const Network net = llama2_7b();
  const double S = 4096, D = 4096;
  const double block = 412316860416.0 + 137438953472.0 + 274877906944.0 + 1108101562368.0 + 2 * (2 * S * D);  // + 2 RMSNorms
  ComputeOptions c;
  c.recompute = Recompute::full;
  EXPECT_DOUBLE_EQ(recompute_flops_per_sample(net, c), 32 * block);  // R1: every block's forward again
  c.recompute_blocks = 0.5;
  EXPECT_DOUBLE_EQ(recompute_flops_per_sample(net, c), 16 * block);  // every second block
  c.recompute = Recompute::selective;
  EXPECT_DOUBLE_EQ(recompute_flops_per_sample(net, c), 32 * 274877906944.0);  // R2: the attention cores
  // MFU and HFU of a predicted step differ by exactly the recomputed share
  Scenario sc;
  sc.cluster = load_cluster(resolve(DataKind::cluster, "dgx-h100", "--cluster"));
  sc.network = net;
  sc.strategy = load_strategy(resolve(DataKind::framework, "fsdp", "--framework"));
  sc.strategy.jitter_cv = 0.0;
  sc.batch_per_gpu = 1;
  sc.compute.precision = Precision::bf16;
  sc.compute.optimizer = Optimizer::adamw;
  sc.compute.recompute = Recompute::full;
  const Prediction p = Predictor(sc).predict(8);
  EXPECT_NEAR(p.hfu / p.mfu, 1.0 + 32 * block / (3 * net.total_forward_flops_per_sample()), 1e-12);
}

TEST(LlmWorkedExample, MemoryPerGpuUnderFullShardAndFullRecompute) {
  const Network net = llama2_7b();
  const double P = 6738415616.0, n = 8;
  ComputeOptions c;
  c.precision = Precision::bf16;
  c.optimizer = Optimizer::adamw;
  c.recompute = Recompute::full;
  c.attention = AttentionKernel::flash;
  Strategy fsdp = load_strategy(resolve(DataKind::framework, "fsdp", "--framework"));
  const MemoryEstimate m = estimate_training_memory(net, 1, c, fsdp.sharding, 8);
  // eq. M5a: FSDP1's shards are the fp32 flat parameters (the bf16 shard each all-gather reads is freed after it) and
  // each bf16 reduced gradient shard is cast back to fp32
  EXPECT_DOUBLE_EQ(in_bytes(m.weights), P * 4 / n);          // fp32 parameter shard
  EXPECT_DOUBLE_EQ(in_bytes(m.gradients), P * 4 / n);        // fp32 gradient shard
  EXPECT_DOUBLE_EQ(in_bytes(m.optimizer_state), P * 8 / n);  // AdamW's two fp32 moments
  // activations: each of the 32 blocks keeps its input, S·D bf16; the largest block's tensors are live during
  // its recompute; the embedding, final norm and output projection keep theirs (at least the blocks' inputs)
  const double inputs = 32 * 4096.0 * 4096 * 2;
  EXPECT_GT(in_bytes(m.activations), inputs);
  ComputeOptions none = c;
  none.recompute = Recompute::none;
  EXPECT_LT(in_bytes(m.activations), in_bytes(estimate_training_memory(net, 1, none, fsdp.sharding, 8).activations) / 4);
}

}  // namespace
}  // namespace dlscale

namespace dlscale {
namespace {

// Our own decoder steps on an H200 (tests/data/h200-pytorch/decoder-steps.csv, README there): torchtitan's
// Llama in eager or compiled PyTorch 2.11, one GPU, FSDP2 at world size 1 (`fsdp`: torchtitan's
// MixedPrecisionPolicy, fused AdamW) or a plain module under autocast (`single`: foreach AdamW), full recompute
// or none, bf16 or torchao-style eager fp8. No parameter was fitted to the steps; the Hopper flash rates (K9)
// were read off the profile of the 4-block 8B row at sequence 4,096 (call3-profile-8b-eager.txt), and the
// memory-bound kernel classes' rates (K21) off that one's and the 125M row's (call3-profile-*.txt).
struct DecoderStep {
  Scenario scenario;
  DecoderShape shape;
  std::string mode;  // `fsdp` or `single`
  std::string label;
  double ms = 0.0;
  double peak_allocated = 0.0;  // torch.cuda.max_memory_allocated over the timed steps; 0: not measured cleanly
  double peak_reserved = 0.0;   // torch.cuda.max_memory_reserved over the same steps
};

/// One of bench/pytorch/decoder_steps.py's rows on the H200 as a scenario, from its columns (`mode`, `checkpointing`,
/// `precision`, `attention`, `optimizer`, `compile`, `batch`): torchtitan's FSDP2 or a plain module under autocast;
/// `fp8` is torchao's tensor-wise recipe, `fp8-rowwise` its row-wise one (eq. K15).
Scenario h200_step(const Cluster& h200, const DecoderShape& d, std::map<std::string, std::string>& c) {
  Scenario sc;
  sc.cluster = h200;
  sc.network = build_decoder(d, "decoder");
  sc.strategy = load_strategy(resolve(DataKind::framework, c["mode"] == "fsdp" ? "torchtitan" : "pytorch-ddp", "--framework"));
  sc.strategy.jitter_cv = 0.0;
  // the bench's RMSNorm is Llama's composite `_norm(x.float()).type_as(x) * weight` (eq. M1a)
  sc.strategy.rmsnorm_composite = true;
  sc.strategy.attention = AttentionKernel::flash;  // the rows force SDPA's flash backend (one row cuDNN's)
  sc.strategy.execution.cudnn_attention = c["attention"] == "cudnn";
  sc.batch_per_gpu = std::stoi(c.at("batch"));
  sc.compute.precision = c["precision"] == "fp8" || c["precision"] == "fp8-rowwise" ? Precision::fp8 : Precision::bf16;
  if (c["precision"] == "fp8-rowwise") sc.compute.fp8_scaling = Fp8Scaling::rowwise;
  sc.compute.optimizer = Optimizer::adamw;
  sc.compute.optimizer_impl = optimizer_impl_from_string(c.at("optimizer"));  // fused or torch.optim's foreach
  // `blocks`: each block compiled, the loss eager (LIST=sac; torchtitan-2024.yaml's compile_loss: false)
  sc.compute.compiled = c["compile"] == "true" || c["compile"] == "blocks";
  if (c["compile"] == "blocks") sc.strategy.compile_loss = false;
  if (c["checkpointing"] == "full") sc.compute.recompute = Recompute::full;
  if (c["checkpointing"] == "op") sc.compute.recompute = Recompute::op;  // torchtitan's per-op SAC (eq. R3)
  return sc;
}

std::vector<DecoderStep> h200_decoder_steps() {
  std::ifstream in(std::filesystem::path(DLSCALE_TEST_DATA_DIR) / "h200-pytorch" / "decoder-steps.csv");
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  for (std::stringstream h(line); std::getline(h, line, ',');) header.push_back(line);
  std::vector<DecoderStep> out;
  ClusterOverrides ov;
  ov.gpu = find_gpu("h200");
  const Cluster h200 = load_cluster(resolve(DataKind::cluster, "dgx-h100", "--cluster"), ov);
  while (std::getline(in, line)) {
    std::map<std::string, std::string> c;
    std::stringstream cells(line);
    for (const std::string& name : header) std::getline(cells, c[name], ',');
    const auto num = [&](const char* k) { return std::stoll(c.at(k)); };
    DecoderShape d{.layers = num("layers"),
                   .hidden = num("hidden"),
                   .heads = num("heads"),
                   .kv_heads = num("kv_heads"),
                   .ffn = num("ffn"),
                   .vocab = num("vocab"),
                   .seq = num("seq")};
    DecoderStep s;
    s.label = fmt::format("{}x{}/{} V{} seq {} b{} {} {} {} {} {}{}", d.layers, d.hidden, d.kv_heads, d.vocab, d.seq,
                          num("batch"), c["mode"], c["checkpointing"], c["precision"], c["attention"], c["optimizer"],
                          c["compile"] == "true"         ? " compiled"
                              : c["compile"] == "blocks" ? " blocks compiled"
                                                         : "");
    s.ms = std::stod(c.at("ms_per_iter"));
    if (!c["peak_allocated_bytes"].empty()) s.peak_allocated = std::stod(c["peak_allocated_bytes"]);
    if (!c["peak_reserved_bytes"].empty()) s.peak_reserved = std::stod(c["peak_reserved_bytes"]);
    s.scenario = h200_step(h200, d, c);
    s.shape = d;
    s.mode = c["mode"];
    out.push_back(std::move(s));
  }
  return out;
}

TEST(H200DecoderSteps, BesideThePredictions) {
  const std::vector<DecoderStep> steps = h200_decoder_steps();
  ASSERT_EQ(steps.size(), 35U);
  double sum = 0, worst = 0;
  int rows = 0;
  for (const DecoderStep& s : steps) {
    const double predicted = 1e3 * in_seconds(Predictor(s.scenario, Predictor::TimesOnly{}).predict(1).iteration_time);
    const double e = rel(predicted, s.ms);
    std::printf("H200 decoder %-60s measured %7.1f ms predicted %7.1f ms (%+.1f %%)\n", s.label.c_str(), s.ms, predicted,
                100 * e);
    sum += std::abs(e);
    worst = std::max(worst, std::abs(e));
    ++rows;
  }
  std::printf("H200 decoder steps: %d rows, mean |error| %.1f %%, worst %.1f %%\n", rows, 100 * sum / rows, 100 * worst);
  EXPECT_LT(sum / rows, 0.06);  // where it stands: 3.6 % (3.9 % before R1b's early stop; 4.1 % before K21's upcast class and the
                                // optimiser's per-dispatch charge; 6.5 % before K21's memory-bound kernels by class)
  EXPECT_LT(worst, 0.20);  // the 125M model with full recompute, +14.1 % (+16.0 % before R1b; docs/compute-model.md says why)
}

// The same steps' memory: every one ran, so each must be predicted to fit; the model's tensors at the step's peak
// beside PyTorch's allocated peak, and what its allocator holds beside the reserved peak, where a run measured them
// on an empty allocator.
TEST(H200DecoderSteps, MemoryBesideTheAllocatorsPeak) {
  double sum = 0, signed_sum = 0, worst = 0, reserved_sum = 0;
  int rows = 0, within = 0;
  for (const DecoderStep& s : h200_decoder_steps()) {
    const Prediction p = Predictor(s.scenario, Predictor::TimesOnly{}).predict(1);
    EXPECT_TRUE(p.memory.fits) << s.label;
    if (s.peak_allocated <= 0) continue;
    // the model's tensors at the step's peak, what torch.cuda.max_memory_allocated counts
    const double e = rel(in_bytes(p.memory.allocated), s.peak_allocated);
    std::printf(
        "H200 decoder %-60s allocated %6.1f GB predicted %6.1f GB (%+.1f %%); reserved %6.1f GB predicted %6.1f GB "
        "(%+.1f %%)\n",
        s.label.c_str(), s.peak_allocated / 1e9, in_bytes(p.memory.allocated) / 1e9, 100 * e, s.peak_reserved / 1e9,
        in_bytes(p.memory.allocator_reserved) / 1e9, 100 * rel(in_bytes(p.memory.allocator_reserved), s.peak_reserved));
    reserved_sum += std::abs(rel(in_bytes(p.memory.allocator_reserved), s.peak_reserved));
    sum += std::abs(e);
    signed_sum += e;
    worst = std::max(worst, std::abs(e));
    within += std::abs(e) <= 0.15 ? 1 : 0;
    ++rows;
  }
  std::printf(
      "H200 decoder memory: %d rows, mean |error| %.1f %%, mean signed %+.1f %%, worst %.1f %%, %d within 15 %%; "
      "reserved: mean |error| %.1f %%\n",
      rows, 100 * sum / rows, 100 * signed_sum / rows, 100 * worst, within, 100 * reserved_sum / rows);
  EXPECT_EQ(rows, 33);
  // where it stands: 0.7 %, worst 5.1 % (Llama-2-7B's 4 blocks with full recompute), 33 within 15 %, reserved 4.6 % (0.9 %
  // before eq. S4b's root beside a block wrap's units; 1.7 %, worst 15.4 % (the plain-autocast 8B row) and 32 within 15 %
  // before eq. M4 counted plain autocast; 2.2 % before M3's
  // end-of-backward peak; 6.7 %, worst 17.8 %, 27 and reserved 7.9 % before eq. M1-M2 counted what the eager decoder
  // code saves and the head's logits once; 15.5 %,
  // worst 37.4 % before the step's peak was the loss's backward or a recomputed block, and FSDP2's shards fp32 alone;
  // docs/compute-model.md, "Memory")
  EXPECT_LT(sum / rows, 0.015);
  EXPECT_GE(within, 33);
  EXPECT_LT(worst, 0.08);
  EXPECT_LT(reserved_sum / rows, 0.06);
}

// Eager beside compiled, no recompute (issue 33 item 6): the three FSDP2 shapes the H200 ran both ways at the same
// sequence and batch (bf16, flash, fused AdamW; 8B shape 4 blocks at 2 × 4,096 tokens, 1.3B at 8 × 2,048, 125M at
// 32 × 1,024). Their allocated peaks differ by what the eager code saves beyond the compiled block, by hand from
// bench/pytorch/decoder_steps.py's code (T tokens, L blocks of width D, key/value width D_kv, MLP F, vocabulary V):
// eq. M1 a block, 24D + 8F where the compiled block keeps the layers' 12D + 4D_kv + 6F (the composite norms' fp32
// inputs and normalized tensors, silu's output, k and v repeated to the query's heads; flash's log-sum-exp in both),
// the final norm's 4D (M1a), and the loss, 12 B a logit eager against the compiled loss's 4 (M2). Measured over hand:
// 0.951 (the 8B shape: 0.54 GB less than derived, the model +0.8 % eager and −0.4 % compiled), 0.991, 0.993. Per-op
// SAC (torchtitan's published pairs) has no such pair here: docs/compute-model.md, "M6".
TEST(H200DecoderSteps, EagerOverCompiledByHand) {
  const std::vector<DecoderStep> steps = h200_decoder_steps();
  int pairs = 0;
  for (const DecoderStep& c : steps) {
    if (!c.label.ends_with(" compiled") || c.peak_allocated <= 0 || c.mode != "fsdp") continue;
    const std::string eager_label = c.label.substr(0, c.label.size() - std::string(" compiled").size());
    const auto e = std::find_if(steps.begin(), steps.end(), [&](const DecoderStep& s) { return s.label == eager_label; });
    if (e == steps.end() || e->peak_allocated <= 0 || c.scenario.compute.recompute != Recompute::none) continue;
    const DecoderShape& d = c.shape;
    const auto num = [](std::int64_t v) { return static_cast<double>(v); };
    const double D = num(d.hidden), F = num(d.ffn), V = num(d.vocab), L = num(d.layers);
    const double Dkv = D / num(d.heads) * num(d.kv_heads), T = num(c.scenario.batch_per_gpu) * num(d.seq);
    const double hand = L * T * ((24 * D + 8 * F) - (12 * D + 4 * Dkv + 6 * F)) + 4 * D * T + (12 - 4) * V * T;
    const double measured = e->peak_allocated - c.peak_allocated;
    const auto allocated = [](const DecoderStep& s) {
      return in_bytes(Predictor(s.scenario, Predictor::TimesOnly{}).predict(1).memory.allocated);
    };
    const double model = allocated(*e) - allocated(c);
    std::printf("H200 eager - compiled %-50s measured %.3f GB, by hand %.3f GB (measured/hand %.3f), model %.3f GB\n",
                eager_label.c_str(), measured / 1e9, hand / 1e9, measured / hand, model / 1e9);
    EXPECT_LT(std::abs(rel(model, hand)), 0.01) << eager_label;
    EXPECT_LT(std::abs(rel(measured, hand)), 0.06) << eager_label;
    ++pairs;
  }
  EXPECT_EQ(pairs, 3);
}

// Eq. M4 by hand on the three plain-autocast rows (`single`: fp32 weights under bf16 autocast, foreach AdamW, eager,
// no recompute), every term from bench/pytorch/decoder_steps.py's code, at the loss's backward (T tokens, L blocks of
// width D, key/value width D_kv, MLP F, H heads, vocabulary V): the fp32 weights and AdamW's two words (12 B a parameter;
// the fp32 gradients, set to None, come later); autocast's bf16 copy of every product's weight, held for its backward
// (2 B a parameter but the embedding's and the norms'); a block's 34D + 8F + 4H a token (each norm its fp32 input and
// fp32 normalized tensor, 8D; q, k, v each their bf16 copy of the norm's output, 6D; flash's q, k and v repeated to the
// query's heads and its output, 8D, and log-sum-exp, 4H; w1 and w3 their copies, 4D; silu's input and output, w3's
// output and w2's input, 8F); the final norm's 8D and the head's copy, 2D; the eager loss's 12 B a logit.
TEST(H200DecoderSteps, PlainAutocastMemoryByHand) {
  int rows = 0;
  for (const DecoderStep& s : h200_decoder_steps()) {
    if (s.mode != "single") continue;
    const DecoderShape& d = s.shape;
    const auto num = [](std::int64_t v) { return static_cast<double>(v); };
    const double D = num(d.hidden), F = num(d.ffn), H = num(d.heads), V = num(d.vocab), L = num(d.layers);
    const double Dkv = D / H * num(d.kv_heads), T = num(s.scenario.batch_per_gpu) * num(d.seq);
    const double products = L * (2 * D * D + 2 * D * Dkv + 3 * D * F) + V * D;  // the blocks' and the head's weights
    const double P = products + V * D + (2 * L + 1) * D;                        // the embedding and the norms beside
    const double hand = 12 * P + 2 * products + L * T * (34 * D + 8 * F + 4 * H) + 10 * D * T + 12 * V * T;
    const double model = in_bytes(Predictor(s.scenario, Predictor::TimesOnly{}).predict(1).memory.allocated);
    std::printf(
        "H200 plain autocast %-60s measured %.2f GB, by hand %.2f GB (%+.2f %%), model %.2f GB (%+.2f %% of the hand sum)\n",
        s.label.c_str(), s.peak_allocated / 1e9, hand / 1e9, 100 * rel(hand, s.peak_allocated), model / 1e9,
        100 * rel(model, hand));
    EXPECT_LT(std::abs(rel(model, hand)), 0.005) << s.label;
    EXPECT_LT(std::abs(rel(hand, s.peak_allocated)), 0.005) << s.label;  // 1.3B -0.1 %, 125M -0.3 %, 8B -0.1 %
    ++rows;
  }
  EXPECT_EQ(rows, 3);
}

// Row-wise fp8 beside tensor-wise and bf16 on the same H200 (tests/data/h200-pytorch/host-2026-11-28/: call 1's
// LIST=rowwise rows and call 2's compiled bf16 row, PyTorch 2.11; README there, "Host floor, row-wise fp8 ..."): 4
// blocks of Llama-3-8B and 2 of Llama-3-70B at 8,192 tokens, FSDP2 at world size 1, eager (none and full recompute)
// and compiled. Each fp8 row is predicted with its recipe (eq. K15) and, for the row-wise ones, also as tensor-wise,
// the way the model charged them before. No parameter was fitted to these rows.
TEST(H200DecoderSteps, RowWiseFp8BesideTensorWise) {
  ClusterOverrides ov;
  ov.gpu = find_gpu("h200");
  const Cluster h200 = load_cluster(resolve(DataKind::cluster, "dgx-h100", "--cluster"), ov);
  const auto dir = std::filesystem::path(DLSCALE_TEST_DATA_DIR) / "h200-pytorch" / "host-2026-11-28";
  struct Row {
    std::string label, precision;
    double ms = 0, predicted = 0, as_tensorwise = 0;
  };
  std::vector<Row> rows;
  for (const char* file : {"call1-decoder.jsonl", "call2-decoder.jsonl"}) {
    std::ifstream in(dir / file);
    ASSERT_TRUE(in) << file;
    for (std::string line; std::getline(in, line);) {
      const auto j = nlohmann::json::parse(line);
      if (!j.contains("shape") || !j["shape"].get<std::string>().starts_with("llama3-")) continue;  // GEMMs, small models
      std::map<std::string, std::string> c{{"mode", j["mode"]},
                                           {"checkpointing", j["ac"]},
                                           {"precision", j["precision"]},
                                           {"attention", j["sdpa"]},
                                           {"optimizer", j["optimizer"]},
                                           {"compile", j["compile"].get<bool>() ? "true" : "false"},
                                           {"batch", std::to_string(j["batch"].get<int>())}};
      const DecoderShape d{.layers = j["layers"],
                           .hidden = j["hidden"],
                           .heads = j["heads"],
                           .kv_heads = j["kv_heads"],
                           .ffn = j["ffn"],
                           .vocab = j["vocab"],
                           .seq = j["seq"]};
      Scenario sc = h200_step(h200, d, c);
      const auto step_ms = [](const Scenario& x) {
        return 1e3 * in_seconds(Predictor(x, Predictor::TimesOnly{}).predict(1).iteration_time);
      };
      Row r{fmt::format("{} x{} {} {}{} ({})", j["shape"].get<std::string>(), d.layers, c["checkpointing"], c["precision"],
                        c["compile"] == "true" ? " compiled" : "", file),
            c["precision"], j["ms_per_iter"].get<double>()};
      r.predicted = step_ms(sc);
      sc.compute.fp8_scaling = Fp8Scaling::tensorwise;
      r.as_tensorwise = step_ms(sc);
      std::printf("H200 row-wise %-48s measured %6.1f ms predicted %6.1f ms (%+.1f %%)", r.label.c_str(), r.ms, r.predicted,
                  100 * rel(r.predicted, r.ms));
      if (r.precision == "fp8-rowwise")
        std::printf("; charged as tensor-wise %6.1f ms (%+.1f %%)", r.as_tensorwise, 100 * rel(r.as_tensorwise, r.ms));
      std::printf("\n");
      rows.push_back(r);
    }
  }
  ASSERT_EQ(rows.size(), 11U);  // call 1: 10 rows of the 8B and 70B shapes; call 2: the compiled bf16 8B row
  // What row-wise scaling adds to the tensor-wise step of the same configuration, measured and modelled.
  const auto find = [&](const std::string& shape, const std::string& ac, const std::string& precision, bool compiled) {
    for (const Row& r : rows)
      if (r.label.starts_with(shape + " ") && contains(r.label, " " + ac + " ") && r.precision == precision &&
          contains(r.label, "compiled") == compiled)
        return r;
    ADD_FAILURE() << shape << " " << ac << " " << precision;
    return Row{};
  };
  double sum = 0;
  for (const auto& [shape, ac, compiled] : std::vector<std::tuple<std::string, std::string, bool>>{{"llama3-8b", "none", false},
                                                                                                   {"llama3-8b", "full", false},
                                                                                                   {"llama3-70b", "none", false},
                                                                                                   {"llama3-8b", "none", true}}) {
    const Row t = find(shape, ac, "fp8", compiled), w = find(shape, ac, "fp8-rowwise", compiled);
    std::printf("H200 row-wise over tensor-wise, %s %s%s: measured %+.1f ms, predicted %+.1f ms\n", shape.c_str(), ac.c_str(),
                compiled ? " compiled" : "", w.ms - t.ms, w.predicted - t.predicted);
    // eager, what row-wise adds is its re-casts: measured +41.6 (8B), +42.8 (8B, full recompute), +52.4 ms (70B);
    // modelled +51.2, +51.2 and +54.5 (within 25 % of it). Compiled it measured -7.0 ms, modelled +0.6: not held.
    if (!compiled) {
      EXPECT_NEAR((w.predicted - t.predicted) / (w.ms - t.ms), 1.0, 0.25) << shape << " " << ac;
    }
  }
  for (const Row& r : rows) {
    sum += std::abs(rel(r.predicted, r.ms));
    // where they stand: eager -6.9 % (70B tensor-wise) ... +3.2 %; the compiled fp8 rows +14 % (tensor-wise) and +21 %
    // (row-wise), the compiled bf16 row -2.8 % (docs/compute-model.md, K15: what the compiled fp8 rows leave open)
    EXPECT_NEAR(r.predicted / r.ms, 1.0, contains(r.label, "compiled") ? 0.25 : 0.08) << r.label;
  }
  std::printf("H200 row-wise rows: %zu, mean |error| %.1f %%\n", rows.size(), 100 * sum / static_cast<double>(rows.size()));
}

// Eq. K15 gives row-wise and tensor-wise fp8 products one rate: on the H200 (PyTorch 2.11, cuBLASLt for both)
// torch._scaled_mm with row-wise scales took 0.94-1.04 of the tensor-wise time shape by shape
// (host-2026-11-28/call1-decoder.jsonl, best of 3 windows of 10 calls each), 0.988 time-weighted over the seven 8B and
// 70B shapes. Held: that ratio within 3 %, the model's two plans equal.
TEST(H200DecoderSteps, RowWiseGemmsRunAtTheTensorWiseRate) {
  std::ifstream in(std::filesystem::path(DLSCALE_TEST_DATA_DIR) / "h200-pytorch" / "host-2026-11-28" / "call1-decoder.jsonl");
  double tensorwise = 0, rowwise = 0;
  int shapes = 0;
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    if (!j.value("gemm", false)) continue;
    const double t = j["fp8_ms"], w = j["fp8_rowwise_ms"];
    std::printf("H200 fp8 GEMM %5d x %5d x %5d: row-wise at %.3f of tensor-wise's rate\n", j["m"].get<int>(), j["n"].get<int>(),
                j["k"].get<int>(), t / w);
    if (j["k"].get<int>() < 4096 || j["n"].get<int>() < 1024) continue;  // the 125M and 1.3B shapes
    tensorwise += t, rowwise += w, ++shapes;
  }
  std::printf("H200 fp8 GEMMs of %d decoder shapes: row-wise at %.3f of tensor-wise's rate\n", shapes, tensorwise / rowwise);
  EXPECT_EQ(shapes, 7);
  EXPECT_NEAR(tensorwise / rowwise, 1.0, 0.03);
  // the model plans the products alike whatever the scaling
  ComputeOptions c;
  c.precision = Precision::fp8;
  Network net = build_decoder(
      DecoderShape{.layers = 1, .hidden = 4096, .heads = 32, .kv_heads = 8, .ffn = 14336, .vocab = 128256, .seq = 8192},
      "decoder");
  const GpuSpec h200 = find_gpu("h200");
  std::vector<KernelTiming> t = layer_kernels(net.layers[4], false, false, h200, 1, c);
  c.fp8_scaling = Fp8Scaling::rowwise;
  std::vector<KernelTiming> w = layer_kernels(net.layers[4], false, false, h200, 1, c);
  int gemms = 0;
  for (const KernelTiming& k : t)
    for (const KernelTiming& r : w)
      if (k.name == r.name && k.flops > Flops{}) {
        EXPECT_EQ(in_seconds(k.time), in_seconds(r.time)) << k.name;
        ++gemms;
      }
  EXPECT_EQ(gemms, 6);  // the MLP's up and down products: forward, data and weight gradients
}

// Eq. K16 holds only where a collective runs beside the step's kernels: a sharded step on one GPU is timed at
// the model's own tensor rate, the same step on eight GPUs at sharded_tensor of it.
TEST(H200DecoderSteps, ShardedTensorRateOnlyWhereCollectivesRun) {
  Scenario sc = h200_decoder_steps().front().scenario;  // 4 blocks of Llama-3-8B, FSDP2, sequence 4,096
  ASSERT_TRUE(sc.strategy.sharding.sharded());
  auto unfactored = std::make_shared<KernelParamSet>(*shipped_kernel_params());
  for (auto& a : unfactored->architectures) a.sharded_tensor = 1.0;
  const double k16 = shipped_kernel_params()->for_architecture("hopper").sharded_tensor;
  ASSERT_LT(k16, 1.0);
  const Predictor shipped(sc, Predictor::TimesOnly{});
  Scenario plain_sc = sc;
  plain_sc.compute.kernel_params = unfactored;
  const Predictor plain(plain_sc, Predictor::TimesOnly{});
  const Prediction one = shipped.predict(1), eight = shipped.predict(8);
  EXPECT_DOUBLE_EQ(in_seconds(one.iteration_time), in_seconds(plain.predict(1).iteration_time));
  EXPECT_DOUBLE_EQ(one.speedup, 1.0);
  // on eight GPUs the forward is slower than on one: its GEMMs and attention at k16 of the rate
  EXPECT_GT(in_seconds(eight.breakdown.forward), in_seconds(one.breakdown.forward) * (1.0 + 0.5 * (1.0 / k16 - 1.0)));
  EXPECT_LT(in_seconds(plain.predict(8).breakdown.forward), in_seconds(eight.breakdown.forward));
  // the speedup's baseline is the one GPU as it runs, alone (eq. 8)
  EXPECT_DOUBLE_EQ(eight.speedup, 8 * in_seconds(one.iteration_time) / in_seconds(eight.iteration_time));
}

// Eq. R1b by hand: under torchtitan (PyTorch's non-reentrant checkpoint, `checkpoint_early_stop: true`) a block's
// full recompute stops at its last kept tensor, the input of the down projection, so the down product's forward and
// the residual addition after it are not run again. The step with early stop is shorter than the one without by
// exactly those two kernels of every block, as `model show --kernels` lists them ("….mlp.down fwd", "….add_1 fwd").
TEST(H200DecoderSteps, FullRecomputeStopsAtTheBlocksLastKeptTensor) {
  Scenario sc = h200_decoder_steps().front().scenario;  // 4 blocks of Llama-3-8B, FSDP2 at world size 1
  sc.compute.recompute = Recompute::full;
  ASSERT_TRUE(sc.strategy.checkpoint_early_stop);
  Scenario whole = sc;
  whole.strategy.checkpoint_early_stop = false;
  ComputeOptions c = step_compute(sc);
  c.sharded = false;  // one GPU: no collective beside the kernels (eq. K16)
  double tail = 0.0;
  int blocks = 0;
  for (std::size_t i = 0; i < sc.network.layers.size(); ++i) {
    const Layer& l = sc.network.layers[i];
    for (const KernelTiming& k : layer_kernels(l, i == 0, i + 1 == sc.network.layers.size(), sc.cluster.gpu, sc.batch_per_gpu, c))
      if (k.name == l.name + ".down fwd" || (!l.ops.empty() && k.name == l.ops.back().name + " fwd" && l.hidden > 0)) {
        tail += in_seconds(k.time);
        blocks += k.name == l.name + ".down fwd";
      }
  }
  ASSERT_EQ(blocks, 4);
  const double stopped = in_seconds(Predictor(sc, Predictor::TimesOnly{}).predict(1).iteration_time);
  const double all = in_seconds(Predictor(whole, Predictor::TimesOnly{}).predict(1).iteration_time);
  EXPECT_NEAR(all - stopped, tail, 1e-12);
  EXPECT_GT(tail, 0.0);
  // no recompute, no difference
  sc.compute.recompute = whole.compute.recompute = Recompute::none;
  EXPECT_DOUBLE_EQ(in_seconds(Predictor(sc, Predictor::TimesOnly{}).predict(1).iteration_time),
                   in_seconds(Predictor(whole, Predictor::TimesOnly{}).predict(1).iteration_time));
}

// The recompute's cost as measured: each H200 row with full recompute beside the same configuration without, the
// measured difference (what the recompute costs) against the model's, with and without the early stop (eq. R1b).
// Held: with it, the ten pairs' mean |error| below 15 % (where it stands: 11.2 %; without it 28.2 %, every pair +17 to
// +39 %) and below the whole forward's. What is left is on the eager small models (125M +29 %, 1.3B +19 %): the
// per-kernel charge of their short kernels, docs/compute-model.md, R1b.
TEST(H200DecoderSteps, RecomputeCostBesideTheMeasuredDifference) {
  const std::vector<DecoderStep> steps = h200_decoder_steps();
  const auto ms = [](Scenario sc) {
    return 1e3 * in_seconds(Predictor(std::move(sc), Predictor::TimesOnly{}).predict(1).iteration_time);
  };
  double sum_stop = 0, sum_whole = 0;
  int pairs = 0;
  for (const DecoderStep& f : steps) {
    const std::size_t at = f.label.find(" full ");
    if (at == std::string::npos) continue;
    std::string plain = f.label;
    plain.replace(at, 6, " none ");
    const auto none = std::find_if(steps.begin(), steps.end(), [&](const DecoderStep& s) { return s.label == plain; });
    if (none == steps.end()) continue;
    Scenario whole = f.scenario, whole_none = none->scenario;
    whole.strategy.checkpoint_early_stop = whole_none.strategy.checkpoint_early_stop = false;
    const double measured = f.ms - none->ms;
    const double stop = ms(f.scenario) - ms(none->scenario), all = ms(whole) - ms(whole_none);
    std::printf("H200 recompute %-60s measured %6.1f ms, model %6.1f ms (%+.1f %%), whole forward %6.1f ms (%+.1f %%)\n",
                f.label.c_str(), measured, stop, 100 * rel(stop, measured), all, 100 * rel(all, measured));
    sum_stop += std::abs(rel(stop, measured));
    sum_whole += std::abs(rel(all, measured));
    ++pairs;
  }
  std::printf("H200 recompute pairs: %d, mean |error| %.1f %% (whole forward %.1f %%)\n", pairs, 100 * sum_stop / pairs,
              100 * sum_whole / pairs);
  ASSERT_EQ(pairs, 10);
  EXPECT_LT(sum_stop / pairs, 0.15);
  EXPECT_LT(sum_stop, sum_whole);
}

}  // namespace
}  // namespace dlscale

namespace dlscale {
namespace {

// The decoder's GEMMs alone on the same H200 (tests/data/h200-pytorch/decoder-gemms.csv: torch.mm of 8,192
// tokens by the Llama-3-8B/70B, 1.3B and 125M weight shapes, bf16, and torch._scaled_mm in fp8 with
// tensor-wise scales; the best of 3 windows of 10 back-to-back calls) beside the kernel model's plan of each,
// max(compute, memory) of eq. K4 (back-to-back calls pay no framework issue cost); the percentages are the
// model's rate over the measured one. Printed; held where every dimension is at least 4,096 (the 8B and 70B
// shapes and the output projection): bf16 within 20 % (where it stands: -3.6 to +18.8 %, the hidden-8192
// products measured at 631-685 TFLOP/s where the model gives every large shape about 750), and fp8 faster
// than bf16 from 2,048 on, measured and modelled. The smaller shapes (the 1.3B and 125M models') run well
// below the model's rate (+23 to +75 % in bf16), and the model's fp8 rate is 7-26 % above cuBLAS's at the
// large ones: docs/compute-model.md, "Checked on a real H200: decoder steps".
TEST(H200DecoderSteps, GemmsOfTheDecoderShapes) {
  std::ifstream in(std::filesystem::path(DLSCALE_TEST_DATA_DIR) / "h200-pytorch" / "decoder-gemms.csv");
  std::string line;
  std::getline(in, line);
  ASSERT_EQ(line, "m,n,k,bf16_ms,fp8_ms");
  const GpuSpec gpu = find_gpu("h200");
  const KernelParams& kp = shipped_kernel_params()->for_architecture(gpu.architecture);
  int rows = 0;
  while (std::getline(in, line)) {
    std::stringstream cells(line);
    std::int64_t m = 0, n = 0, k = 0;
    double bf16_ms = 0, fp8_ms = 0;
    char comma = 0;
    cells >> m >> comma >> n >> comma >> k >> comma >> bf16_ms >> comma >> fp8_ms;
    ASSERT_TRUE(cells) << line;
    const auto model_ms = [&](Precision p) {
      const GemmPlan plan = plan_gemm(GemmShape{m, n, k}, gpu, p, kp);
      return 1e3 * in_seconds(max(plan.compute, plan.memory));
    };
    const double bf16 = model_ms(Precision::bf16), fp8 = model_ms(Precision::fp8);
    const double flop = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
    std::printf(
        "H200 GEMM %5lld x %6lld x %5lld: bf16 measured %6.1f TFLOP/s, model %6.1f (%+.1f %%); "
        "fp8 measured %7.1f, model %7.1f (%+.1f %%)\n",
        static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k), flop / bf16_ms / 1e9, flop / bf16 / 1e9,
        100 * rel(bf16_ms / bf16, 1.0), flop / fp8_ms / 1e9, flop / fp8 / 1e9, 100 * rel(fp8_ms / fp8, 1.0));
    if (std::min({m, n, k}) >= 4096) {
      EXPECT_NEAR(bf16_ms / bf16, 1.0, 0.20) << line;
    }
    if (std::min({m, n, k}) >= 2048) {
      EXPECT_LT(fp8_ms, bf16_ms) << line;
      EXPECT_LT(fp8, bf16) << line;
    }
    ++rows;
  }
  EXPECT_EQ(rows, 12);
}

}  // namespace
}  // namespace dlscale

namespace dlscale {
namespace {

// The host's issue floor (eq. K20) of the eager decoders, against this session's H200 (tests/data/h200-pytorch/
// host-2026-11-28, README there, "Host floor, ..."): each step timed eager and replayed as one CUDA graph (graph_ms:
// the GPU's work, equal to the profiled GPU time within 1-4 %), its GPU operations counted by torch.profiler
// (gpu_ops_per_step: kernels, memcpys and memsets). torchtitan's Llama in `single` mode (host_floor.py: fp32 weights
// under bf16 autocast, fused AdamW, the embedding frozen), FSDP2 at world size 1 (decoder_steps.py, call2-decoder.jsonl),
// and transformers' GPT-2 with eager attention (call2-host.jsonl). The framework files give host_issue per kernel the
// model counts (models/frameworks/torchtitan.yaml, hf-deepspeed-zero1.yaml).
struct HostRow {
  std::string label;
  Scenario scenario;
  double eager = 0.0, graph = 0.0;  // ms; graph 0: not captured (GPT-2, FSDP)
  double gpu_ops = 0.0;             // profiled GPU operations a step; 0: not profiled
};

Cluster h200_cluster() {
  ClusterOverrides ov;
  ov.gpu = find_gpu("h200");
  return load_cluster(resolve(DataKind::cluster, "dgx-h100", "--cluster"), ov);
}

std::vector<YAML::Node> json_lines(const std::string& file) {
  std::ifstream in(std::filesystem::path(DLSCALE_TEST_DATA_DIR) / "h200-pytorch" / "host-2026-11-28" / file);
  std::vector<YAML::Node> out;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(YAML::Load(line));
  return out;
}

Scenario host_scenario(const Cluster& c, const DecoderShape& d, const std::string& framework, int batch) {
  Scenario sc;
  sc.cluster = c;
  sc.network = build_decoder(d, "decoder");
  sc.strategy = load_strategy(resolve(DataKind::framework, framework, "--framework"));
  sc.strategy.jitter_cv = 0.0;
  sc.batch_per_gpu = batch;
  sc.compute.precision = Precision::bf16;
  sc.compute.optimizer = Optimizer::adamw;
  sc.compute.optimizer_impl = OptimizerImpl::fused;
  return sc;
}

std::vector<HostRow> host_rows() {
  const Cluster h200 = h200_cluster();
  const std::map<std::string, std::array<int, 4>> llama = {{"llama-125m", {768, 12, 2048}}, {"llama-1.3b", {2048, 16, 5632}}};
  const std::map<std::string, std::array<int, 2>> gpt2 = {
      {"gpt2", {12, 768}}, {"gpt2-medium", {24, 1024}}, {"gpt2-large", {36, 1280}}, {"gpt2-xl", {48, 1600}}};
  std::vector<HostRow> out;
  for (const YAML::Node& r : json_lines("call1-host.jsonl")) {
    if (!r["kind"] || r["kind"].as<std::string>() != "decoder") continue;
    const auto& m = llama.at(r["model"].as<std::string>());
    const DecoderShape d{.layers = r["layers"].as<int>(),
                         .hidden = m[0],
                         .heads = m[1],
                         .kv_heads = m[1],
                         .ffn = m[2],
                         .vocab = 32000,
                         .seq = r["seq"].as<int>()};
    HostRow h{fmt::format("{} seq {} b{} single", r["model"].as<std::string>(), d.seq, r["batch"].as<int>()),
              host_scenario(h200, d, "torchtitan", r["batch"].as<int>()), r["eager_ms"].as<double>(), r["graph_ms"].as<double>(),
              r["gpu_ops_per_step"].as<double>()};
    // a plain module: no FSDP2 copies, fp32 weights under autocast; torchtitan's kernels and floor
    h.scenario.strategy.sharding = Sharding{};
    h.scenario.strategy.fp32_gradients = true;
    out.push_back(std::move(h));
  }
  for (const YAML::Node& r : json_lines("call2-decoder.jsonl")) {
    if (!r["mode"] || r["mode"].as<std::string>() != "fsdp") continue;
    const std::string shape = r["shape"].as<std::string>();
    if (!llama.count(shape)) continue;
    const DecoderShape d{.layers = r["layers"].as<int>(),
                         .hidden = r["hidden"].as<int>(),
                         .heads = r["heads"].as<int>(),
                         .kv_heads = r["kv_heads"].as<int>(),
                         .ffn = r["ffn"].as<int>(),
                         .vocab = r["vocab"].as<int>(),
                         .seq = r["seq"].as<int>()};
    const bool compiled = r["compile"].as<bool>();
    HostRow h{fmt::format("{} seq {} b{} fsdp{}", shape, d.seq, r["batch"].as<int>(), compiled ? " compiled" : ""),
              host_scenario(h200, d, "torchtitan", r["batch"].as<int>()), r["ms_per_iter"].as<double>(), 0.0, 0.0};
    h.scenario.compute.compiled = compiled;
    out.push_back(std::move(h));
  }
  for (const YAML::Node& r : json_lines("call2-host.jsonl")) {
    if (!r["kind"] || !r["eager_ms"]) continue;
    const auto& m = gpt2.at(r["model"].as<std::string>());
    DecoderShape d{
        .layers = m[0], .hidden = m[1], .heads = m[1] / 64, .ffn = 4 * m[1], .vocab = 50257, .seq = r["seq"].as<int>()};
    d.ffn_kind = "gelu";
    d.positions = "learned";
    d.context = 1024;
    d.tied = d.bias = true;
    out.push_back({fmt::format("{} seq {} b{}", r["model"].as<std::string>(), d.seq, r["batch"].as<int>()),
                   host_scenario(h200, d, "hf-deepspeed-zero1", r["batch"].as<int>()), r["eager_ms"].as<double>(), 0.0,
                   r["gpu_ops_per_step"].as<double>()});
  }
  return out;
}

double predicted_ms(const Scenario& sc) {
  return 1e3 * in_seconds(Predictor(sc, Predictor::TimesOnly{}).predict(1).iteration_time);
}

LayerTimes model_phases(const Scenario& sc) {
  return estimate_layer_times(sc.network, sc.cluster.gpu, sc.batch_per_gpu, step_compute(sc));
}

// The kernels the model counts a step beside those torch.profiler saw (kernels, memcpys, memsets): the model counts a
// composite operator's kernels, not cuBLAS's split-K reductions, memsets, the autocast casts of the fp32 weights nor
// the optimiser's bookkeeping kernels. Where it stands: 0.52-0.61 of torchtitan's Llama, 0.66-0.75 of GPT-2's. The
// framework files' host_issue is per model kernel (eager_ms over the model's count), checked here against the data.
TEST(H200HostFloor, KernelCountsBesideTheProfile) {
  for (const HostRow& r : host_rows()) {
    if (r.gpu_ops <= 0) continue;
    const LayerTimes t = model_phases(r.scenario);
    const double k = t.forward_kernels + t.backward_kernels + t.update_kernels;
    std::printf("H200 host %-41s model kernels %5.0f (%4.0f fwd, %4.0f bwd, %3.0f update), profiled %5.0f: %.2f\n",
                r.label.c_str(), k, t.forward_kernels, t.backward_kernels, t.update_kernels, r.gpu_ops, k / r.gpu_ops);
    EXPECT_GT(k / r.gpu_ops, 0.5) << r.label;
    EXPECT_LT(k / r.gpu_ops, 0.8) << r.label;
  }
  // torchtitan.yaml's 62.4 us: 125M at seq 2048 batch 2, 55.797 ms eager over the model's kernels; hf-deepspeed-zero1's
  // 55.2 us: GPT-2 XL at 512 x 1, 205.057 ms
  for (const auto& [label, framework] :
       {std::pair{"llama-125m seq 2048 b2 single", "torchtitan"}, std::pair{"gpt2-xl seq 512 b1", "hf-deepspeed-zero1"}})
    for (const HostRow& r : host_rows())
      if (r.label == label) {
        const LayerTimes t = model_phases(r.scenario);
        const double k = t.forward_kernels + t.backward_kernels + t.update_kernels;
        const Seconds issue = load_strategy(resolve(DataKind::framework, framework, "--framework")).execution.host_issue;
        EXPECT_NEAR(in_seconds(issue) * 1e6, 1e3 * r.eager / k, 0.05) << framework;
      }
}

// Eq. K20 by hand on the 125M single step at batch 2: each phase is host-bound, so its time is its kernels times
// torchtitan's 62.4 us, and the step their sum; without the floor each phase is the GPU's, shorter.
TEST(H200HostFloor, TheFloorOfAHostBoundStepByHand) {
  for (const HostRow& r : host_rows()) {
    if (r.label != "llama-125m seq 2048 b2 single") continue;
    const LayerTimes t = model_phases(r.scenario);
    ComputeOptions gpu_only = step_compute(r.scenario);
    gpu_only.execution.host_issue = Seconds{};  // the fitted per-kernel charge, 22.5 us, as launch_gap keeps it
    const LayerTimes g = estimate_layer_times(r.scenario.network, r.scenario.cluster.gpu, 2, gpu_only);
    EXPECT_NEAR(in_seconds(t.total_forward()), t.forward_kernels * 62.4e-6, 1e-9);
    EXPECT_NEAR(in_seconds(t.total_backward()), t.backward_kernels * 62.4e-6, 1e-9);
    EXPECT_NEAR(in_seconds(t.total_update()), t.update_kernels * 62.4e-6, 1e-9);
    EXPECT_LT(g.total_forward(), t.total_forward());
    EXPECT_LT(g.total_backward(), t.total_backward());
    EXPECT_LT(g.total_update(), t.total_update());
    EXPECT_EQ(g.forward_kernels, t.forward_kernels);
    return;
  }
  FAIL() << "no 125M batch-2 row in call1-host.jsonl";
}

// Eq. S11 by hand on the 125M FSDP2 step at batch 2 beside the plain module's at the same shape: the kernels the model
// counts differ by FSDP2's own operations alone (eq. S10's copies are a unit's kernels, counted there): 13 units (12
// blocks and the root, eq. S4b) gather 11 each in the forward, 13 x 11 = 143; in the backward the 12 blocks gather
// again and all 13 reduce-scatter, 12 x 11 + 13 x 3 = 171. Both steps are host-bound: each phase is its kernels at
// 62.4 us and FSDP2's operations at 51.8 us (torchtitan.yaml).
TEST(H200HostFloor, FsdpOpsPerUnitInTheFloorByHand) {
  const HostRow* fsdp = nullptr;
  const HostRow* single = nullptr;
  const std::vector<HostRow> rows = host_rows();
  for (const HostRow& r : rows) {
    if (r.label == "llama-125m seq 2048 b2 fsdp") fsdp = &r;
    if (r.label == "llama-125m seq 2048 b2 single") single = &r;
  }
  ASSERT_TRUE(fsdp && single);
  const LayerTimes f = model_phases(fsdp->scenario), s = model_phases(single->scenario);
  EXPECT_DOUBLE_EQ(f.forward_kernels - s.forward_kernels, 13.0 * 11.0);
  EXPECT_DOUBLE_EQ(f.backward_kernels - s.backward_kernels, 12.0 * 11.0 + 13.0 * 3.0);
  EXPECT_DOUBLE_EQ(f.update_kernels, s.update_kernels);
  EXPECT_NEAR(in_seconds(f.total_forward()), s.forward_kernels * 62.4e-6 + 143.0 * 51.8e-6, 1e-9);
  EXPECT_NEAR(in_seconds(f.total_backward()), s.backward_kernels * 62.4e-6 + 171.0 * 51.8e-6, 1e-9);
}

// The model's step beside the eager one and, where the step was captured, the model without the floor beside the
// graph replay (the GPU's work). Where it stands (docs/compute-model.md, K20): the host-bound single 125M rows and
// GPT-2 XL within 4 %; the eager FSDP2 rows -6 to +3 % (125M) and -10, -18 % (1.3B, one rank: the copy-in and the
// gradient copies that move the whole model there, eq. S11), 12.9 % on average before eq. S11 counted FSDP2's own
// operations per unit (-4 to -22 %), the compiled one -37 % (printed: its 69.9 ms is the eager rows' floor with fewer
// kernels); the 1.3B single at batch 1 +29 % (its host issue does not grow with the kernel count:
// 1.97 times the 125M's kernels in at most 91 ms); the GPU-bound rows as before.
TEST(H200HostFloor, EagerStepsBesideThePredictions) {
  std::map<std::string, std::vector<double>> errors;  // by kind: single, fsdp, gpt2
  for (const HostRow& r : host_rows()) {
    const double p = predicted_ms(r.scenario), e = rel(p, r.eager);
    std::string graph;
    if (r.graph > 0) {
      Scenario no_floor = r.scenario;
      no_floor.strategy.execution.host_issue = Seconds{};
      const double g = predicted_ms(no_floor);
      graph =
          fmt::format("; graph {:6.1f} ms, model without the floor {:6.1f} ms ({:+.1f} %)", r.graph, g, 100 * rel(g, r.graph));
    }
    std::printf("H200 host %-41s measured %6.1f ms predicted %6.1f ms (%+.1f %%)%s\n", r.label.c_str(), r.eager, p, 100 * e,
                graph.c_str());
    const bool fsdp = r.label.find("fsdp") != std::string::npos;
    errors[r.label.find("compiled") != std::string::npos ? "compiled"
               : fsdp                                    ? "fsdp"
               : r.label.find("gpt2") == 0               ? "gpt2"
                                                         : "single"]
        .push_back(e);
    if (r.label == "llama-125m seq 2048 b2 single" || r.label == "llama-125m seq 1024 b8 single" ||
        r.label.find("gpt2-xl") == 0) {
      EXPECT_LT(std::abs(e), 0.05) << r.label;  // host-bound: the floor
    }
  }
  for (const auto& [kind, v] : errors) {
    double sum = 0;
    for (double x : v) sum += std::abs(x);
    std::printf("H200 host %s rows (%zu): mean |error| %.1f %%\n", kind.c_str(), v.size(),
                100 * sum / static_cast<double>(v.size()));
  }
  double fsdp = 0;
  for (double x : errors["fsdp"]) fsdp += std::abs(x) / static_cast<double>(errors["fsdp"].size());
  EXPECT_EQ(errors["fsdp"].size(), 6U);
  EXPECT_LT(fsdp, 0.075);  // 6.7 % (12.9 % before eq. S11; 36 % without the floor)
}

}  // namespace
}  // namespace dlscale

namespace dlscale {
namespace {

// PyTorch's memory-bound operators measured alone on the same H200 (tests/data/h200-pytorch/host-2026-11-28/
// elementwise.jsonl, bench/pytorch/elementwise_rate.py: the best of 3 windows of 10 back-to-back calls, bytes read +
// written counted by hand per operator). One row a JSON object; the few keys read here.
struct ElementwiseRow {
  std::string op, dtype;
  std::int64_t rows = 0, cols = 0;
  double bytes = 0.0, ms = 0.0;
};

std::vector<ElementwiseRow> h200_elementwise() {
  std::ifstream in(std::filesystem::path(DLSCALE_TEST_DATA_DIR) / "h200-pytorch" / "host-2026-11-28" / "elementwise.jsonl");
  std::vector<ElementwiseRow> out;
  for (std::string line; std::getline(in, line);) {
    const YAML::Node n = YAML::Load(line);  // a JSON object is YAML
    if (!n["op"]) continue;                 // the header line: versions
    out.push_back(ElementwiseRow{.op = n["op"].as<std::string>(),
                                 .dtype = n["dtype"].as<std::string>(),
                                 .rows = n["shape"][0].as<std::int64_t>(),
                                 .cols = n["shape"][1].as<std::int64_t>(),
                                 .bytes = n["bytes"].as<double>(),
                                 .ms = n["ms"].as<double>()});
  }
  return out;
}

// Each operator beside its kernel class's rate (eq. K21): the bytes counted here by hand over the datasheet 4.8 TB/s
// times the class's share. The element-wise operators and the downcast run PyTorch's vectorized kernel, the upcast
// (bf16 -> fp32) the unrolled direct copy, the means and sums reduce_kernel. No issue cost: the calls run back to back
// (as H200DecoderSteps.GemmsOfTheDecoderShapes). Held: the vectorized and upcast classes within 10 % at the two large
// shapes (117 M and 524 M elements, where a kernel's fixed cost is under 2 % of it); at the two small ones (25 M and
// 34 M elements, 27-98 us an operator) the model may be up to 20 % fast and 10 % slow: the upcast's time over the two
// large shapes is 4.2 us a kernel beside 2.17 TB/s, which the model charges per kernel (kernel_overhead), not in the
// rate. Reductions run at memory_efficiency (0.53, K21: the class's own rate did not help the steps); measured alone
// at 0.56-0.91, so the model is never faster than a measured reduction.
TEST(H200MemoryBound, OperatorsBesideTheirClassRates) {
  const GpuSpec gpu = find_gpu("h200");
  const KernelParams& kp = shipped_kernel_params()->for_architecture(gpu.architecture);
  int held = 0, rows = 0;
  for (const ElementwiseRow& r : h200_elementwise()) {
    if (r.op.starts_with("rmsnorm") || r.op.starts_with("adamw")) continue;
    const double n = static_cast<double>(r.rows) * static_cast<double>(r.cols);
    const double eb = r.dtype == "bfloat16" ? 2.0 : 4.0, other = 6.0 - eb;  // the cast's other width
    MemoryClass cls = MemoryClass::vectorized;
    double moved = 2.0 * n * eb;  // copy, x * 0.5, silu, pow(2): read and write
    if (r.op == "add") moved = 3.0 * n * eb;
    if (r.op == "mean_lastdim") moved = n * eb + static_cast<double>(r.rows) * eb, cls = MemoryClass::reduction;
    if (r.op == "sum_all") moved = n * eb, cls = MemoryClass::reduction;
    if (r.op.starts_with("to_")) moved = n * (eb + other);
    if (r.op == "to_float32") cls = MemoryClass::upcast;
    ASSERT_DOUBLE_EQ(moved, r.bytes) << r.op;
    const double model = 1e3 * in_seconds(bytes(moved) / (gpu.memory_bandwidth * memory_class_efficiency(kp, cls)));
    const double e = rel(model, r.ms);
    std::printf("H200 %-12s %-8s %5lld x %5lld: %8.1f MB measured %8.4f ms (%.3f of 4.8 TB/s) model %8.4f ms (%+.1f %%)\n",
                r.op.c_str(), r.dtype.c_str(), static_cast<long long>(r.rows), static_cast<long long>(r.cols), moved / 1e6, r.ms,
                moved / r.ms / 4.8e9, model, 100 * e);
    ++rows;
    if (cls == MemoryClass::reduction) {
      EXPECT_GE(model, r.ms) << r.op << " " << r.rows << "x" << r.cols;
      continue;
    }
    if (n >= 1e8) {
      EXPECT_NEAR(model / r.ms, 1.0, 0.10) << r.op << " " << r.dtype << " " << r.rows << "x" << r.cols;
      ++held;
    } else {
      EXPECT_GT(model / r.ms, 0.80) << r.op << " " << r.dtype << " " << r.rows << "x" << r.cols;
      EXPECT_LT(model / r.ms, 1.10) << r.op << " " << r.dtype << " " << r.rows << "x" << r.cols;
    }
  }
  EXPECT_EQ(rows, 64);
  EXPECT_EQ(held, 24);
}

// Llama's eager RMSNorm in bf16 (x.float(), pow, mean, + eps, rsqrt, the product, type_as, the weight) timed alone
// beside the model's forward of the norm by class (eq. K21: upcast 6 B an element, the two broadcast products 12 B
// strided, pow and the downcast 14 B vectorized, the mean 4 B a reduction; 36 B as K14 counts them), its kernels'
// launches left out as above. Held within 10 % at every shape (where it stands: -8 to +3 %).
TEST(H200MemoryBound, EagerRmsNormChain) {
  const GpuSpec gpu = find_gpu("h200");
  auto params = std::make_shared<KernelParamSet>(*shipped_kernel_params());
  for (auto& a : params->architectures) a.kernel_overhead = Seconds{};  // back to back: no issue cost
  ComputeOptions o;
  o.precision = Precision::bf16;
  o.execution.by_class = true;
  o.kernel_params = params;
  int rows = 0;
  for (const ElementwiseRow& r : h200_elementwise()) {
    if (r.op != "rmsnorm_eager") continue;
    ASSERT_DOUBLE_EQ(r.bytes, 36.0 * static_cast<double>(r.rows) * static_cast<double>(r.cols));
    Layer norm;
    norm.name = "norm";
    norm.kind = LayerKind::layernorm;
    norm.rms = true;
    norm.params = r.cols;
    norm.input_shape = norm.output_shape = {r.rows, r.cols};
    double model = 0.0;
    for (const KernelTiming& k : layer_kernels(norm, false, false, gpu, 1, o))
      if (!k.backward) model += 1e3 * in_seconds(k.time);
    std::printf("H200 eager RMSNorm bf16 %5lld x %5lld: measured %.4f ms model %.4f ms (%+.1f %%)\n",
                static_cast<long long>(r.rows), static_cast<long long>(r.cols), r.ms, model, 100 * rel(model, r.ms));
    EXPECT_NEAR(model / r.ms, 1.0, 0.10) << r.rows << "x" << r.cols;
    ++rows;
  }
  EXPECT_EQ(rows, 4);
}

// torch.optim's AdamW over fp32 parameters in 400 and in 50 tensors of 2,684,354 (2^30 and 2^27 parameters) on the
// same H200, one step (the best of 3 windows of 5), beside the model's update of a network of as many one-tensor
// layers, as it charges it (bytes at the implementation's rate, kernel_overhead per operator dispatched): fused (28 B a
// parameter, one operator), foreach (80 B in eight _foreach_* operators), for-loop (_single_tensor_adamw: the same
// eight passes, an operator each per tensor, PyTorch's vectorized kernels). Fused and foreach held within 10 %
// (where they stand: +0.3 to +4.5 %). The for-loop is held between its bytes at the vectorized rate and the model's
// charge: it took 98 us a tensor, 5.8 us a kernel beyond its bytes, where the model charges each of its kernels the
// fitted 22.5 us (eager PyTorch's host cost where it is not measured, K20), so it is 2.4x slow here.
TEST(H200MemoryBound, AdamWImplementations) {
  const GpuSpec gpu = find_gpu("h200");
  const KernelParams& kp = shipped_kernel_params()->for_architecture(gpu.architecture);
  int rows = 0;
  for (const ElementwiseRow& r : h200_elementwise()) {
    if (!r.op.starts_with("adamw_")) continue;
    Network net;
    net.name = "tensors";
    for (std::int64_t i = 0; i < r.rows; ++i) {
      Layer l;
      l.name = fmt::format("p{}", i);
      l.kind = LayerKind::linear;
      l.params = r.cols;
      l.input_shape = {r.cols};
      l.output_shape = {1};
      net.layers.push_back(l);
    }
    ComputeOptions o;
    o.precision = Precision::fp32;
    o.optimizer = Optimizer::adamw;
    const std::string impl = r.op.substr(6);
    o.optimizer_impl = optimizer_impl_from_string(impl == "forloop" ? "for_loop" : impl);
    const double params = static_cast<double>(r.rows) * static_cast<double>(r.cols);
    ASSERT_DOUBLE_EQ(r.bytes, 28.0 * params);  // the file counts the fused kernel's minimum for every implementation
    const LayerTimes t = estimate_layer_times(net, gpu, 1, o);
    double model = 0.0;
    for (Seconds u : t.update) model += 1e3 * in_seconds(u);
    std::printf("H200 AdamW %-7s %3lld tensors of %lld: measured %7.3f ms model %7.3f ms (%+.1f %%)\n", impl.c_str(),
                static_cast<long long>(r.rows), static_cast<long long>(r.cols), r.ms, model, 100 * rel(model, r.ms));
    if (impl != "forloop") {
      EXPECT_NEAR(model / r.ms, 1.0, 0.10) << r.op << " " << r.rows;
    } else {
      const double streaming = 1e3 * 80.0 * params /
          (in_bytes_per_second(gpu.memory_bandwidth) * memory_class_efficiency(kp, MemoryClass::vectorized));
      const double kernels = 8.0 * static_cast<double>(r.rows);
      EXPECT_NEAR(model, streaming + 1e3 * kernels * in_seconds(kp.kernel_overhead), 1e-9 * model);
      const double per_kernel_us = 1e3 * (r.ms - streaming) / kernels;
      std::printf("H200 AdamW for-loop: %.2f us a kernel beyond its bytes at the vectorized rate (model: %.1f us)\n",
                  per_kernel_us, 1e6 * in_seconds(kp.kernel_overhead));
      EXPECT_GT(r.ms, streaming);
      EXPECT_LT(r.ms, model);
    }
    ++rows;
  }
  EXPECT_EQ(rows, 6);
}

}  // namespace
}  // namespace dlscale
