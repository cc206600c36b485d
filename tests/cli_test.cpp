// The dlscale command as a user runs it: exit status, what goes to stdout and stderr, the JSON
// contract, golden outputs (refresh with tests/golden/refresh.sh).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "dlscale/format.hpp"

#include "support/run.hpp"

namespace dlscale {
namespace {

using test::run_cli;
using test::slurp;
using test::temp_file;
using ::testing::HasSubstr;

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

TEST(Cli, WorkedExampleProfilePrintsThePapersSpeedups) {
  // The paper's eq. 8 arithmetic has no synchronization loss: --jitter-cv 0 takes CNTK's out.
  const auto r = run_cli("predict --profile worked-example-cntk-alexnet --gpus 1,2,4 --jitter-cv 0");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  // speedup column: 1, 1.478, 2.32 (Shi & Chu, Section VI-B)
  EXPECT_THAT(r.out, HasSubstr("  1.478 "));
  EXPECT_THAT(r.out, HasSubstr("   2.32 "));
}

// The help of --checkpointing names only modes the option takes (issue 35: it said "bare (or sqrt)", and
// --checkpointing bare was refused as an unknown mode).
TEST(Cli, CheckpointingHelpNamesOnlyModesItTakes) {
  const auto help = run_cli("predict --help");
  ASSERT_EQ(help.status, 0);
  const std::size_t at = help.out.find("--checkpointing [MODE]");
  ASSERT_NE(at, std::string::npos);
  const std::string text = help.out.substr(at, help.out.find("\n  --", at + 1) - at);
  const auto bare = run_cli("predict --checkpointing bare --no-train");
  EXPECT_EQ(bare.status, 2);
  EXPECT_EQ(text.find("bare"), std::string::npos) << text;
  for (const char* mode : {"sqrt", "full", "selective", "op"}) {
    EXPECT_NE(text.find(mode), std::string::npos) << mode;
    const auto r = run_cli(std::string("predict --model gpt3-125m --gpus 1 --no-train --checkpointing ") + mode);
    EXPECT_EQ(r.status, 0) << mode << ": " << r.err;
  }
}

// Memory of a terabyte or more reads in TB, not "2.99e+03 GB!" (issue 35): Llama-3-70B under DDP at batch 1 needs
// about 3 TB a GPU; the table says what JSON's per_gpu_bytes says, to three digits.
TEST(Cli, TerabytesOfMemoryReadAsTerabytes) {
  const std::string q =
      "predict --cluster dgx-h100-ndr --nodes 2 --model llama3-70b --framework pytorch-ddp --precision bf16 "
      "--batch 1 --gpus 16 --no-train";
  const auto json = run_cli(q + " --format json");
  ASSERT_EQ(json.status, 0) << json.err;
  const auto key = json.out.find("\"per_gpu_bytes\": ");
  ASSERT_NE(key, std::string::npos);
  const double bytes = std::stod(json.out.substr(key + 17));
  ASSERT_GT(bytes, 1e12);
  const auto table = run_cli(q);
  EXPECT_EQ(table.out.find("e+03 GB"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find(fmt::format(" {:.3g} TB!", bytes / 1e12)), std::string::npos) << table.out;
}

TEST(Cli, JsonFollowsTheContract) {
  const auto r = run_cli("predict --profile worked-example-cntk-alexnet --gpus 1,2,4 --format json --jitter-cv 0");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("schema"), 1);
  const auto& p = j.at("predictions");
  ASSERT_EQ(p.size(), 3u);
  for (const char* key : {"gpus", "nodes", "iteration_time_s", "throughput_samples_per_s", "speedup", "efficiency", "hiding_case",
                          "bottleneck", "breakdown"})
    EXPECT_TRUE(p[0].contains(key)) << key;
  for (const char* key :
       {"io_s", "h2d_s", "forward_s", "backward_s", "update_s", "comm_s", "comm_exposed_s", "sync_wait_s", "overhead_s"})
    EXPECT_TRUE(p[0]["breakdown"].contains(key)) << key;
  EXPECT_NEAR(p[1]["speedup"].get<double>(), 2 * 0.7445 / (0.5215 + 0.45 + 0.0359), 1e-12);
  EXPECT_NEAR(p[2]["speedup"].get<double>(), 4 * 0.7445 / (0.5215 + 0.72 + 0.042), 1e-12);
  EXPECT_NEAR(p[2]["breakdown"]["comm_s"].get<double>(), 0.042, 1e-12);
  EXPECT_EQ(p[2]["bottleneck"], "io");
  // throughput = N_g·M / t_iter: 4 × 1024 / 1.2835
  EXPECT_NEAR(p[2]["throughput_samples_per_s"].get<double>(), 4096 / 1.2835, 1e-9);
}

// fp8's MFU is reckoned against bf16's dense peak (GpuSpec::mfu_peak, as torchtitan and Transformer Engine report it):
// the same model and GPUs in fp8 and bf16 have MFUs in the ratio of their token rates, and the legend names bf16.
TEST(Cli, Fp8MfuIsAgainstTheBf16Peak) {
  const std::string cmd = "predict --model llama3-8b --cluster dgx-h100 --gpus 8 --framework torchtitan --batch 1 --seq-len 8192";
  const auto fp8 = run_cli(cmd + " --precision fp8 --format json");
  const auto bf16 = run_cli(cmd + " --precision bf16 --format json");
  ASSERT_EQ(fp8.status, 0) << fp8.err;
  ASSERT_EQ(bf16.status, 0) << bf16.err;
  const auto f = nlohmann::json::parse(fp8.out).at("predictions").at(0);
  const auto b = nlohmann::json::parse(bf16.out).at("predictions").at(0);
  EXPECT_NEAR(f.at("mfu").get<double>() / b.at("mfu").get<double>(),
              f.at("throughput_tokens_per_s").get<double>() / b.at("throughput_tokens_per_s").get<double>(), 1e-9);
  const auto text = run_cli(cmd + " --precision fp8");
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("(GPUs × the GPU's dense bf16 peak); fp8 runs are reported against bf16's\n"));
}

// llm-foundry's framework files run an MPT model of its recipes: the table prints tokens/s and MFU, and the JSON's
// agree with the model's size by hand. mpt-125m (L = 12, D = 768, S = 2048, V = 50368), multiply-adds a sequence as
// the zoo counts them: per block two norms 2·S·D, q/k/v and output 4·S·D², scores and context 2·S²·D, the MLP 8·S·D²;
// the final norm S·D and the tied head S·V·D. MFU = 3 × 2 × MACs × samples/s / (8 × the H100's dense bf16 989 TFLOPS);
// tokens/s = 2048 × samples/s.
TEST(Cli, LlmFoundryPredictsAnMptRecipeModel) {
  const std::string cmd =
      "predict --model mpt-125m --framework llm-foundry --cluster dgx-h100 --gpus 8 --batch 8 --precision bf16";
  const auto text = run_cli(cmd);
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("# dlscale predict: mpt-125m on dgx-h100, llm-foundry (bf16), batch 8 per GPU\n"));
  EXPECT_THAT(text.out, HasSubstr("tokens/s"));
  EXPECT_THAT(text.out, HasSubstr("MFU"));
  const auto json = run_cli(cmd + " --format json");
  ASSERT_EQ(json.status, 0) << json.err;
  const auto p = nlohmann::json::parse(json.out).at("predictions").at(0);
  const double S = 2048, D = 768, L = 12, V = 50368;
  const double macs = L * (2 * S * D + 4 * S * D * D + 2 * S * S * D + 8 * S * D * D) + S * D + S * V * D;
  const double samples = p.at("throughput_samples_per_s").get<double>();
  ASSERT_GT(samples, 0.0);
  EXPECT_NEAR(p.at("throughput_tokens_per_s").get<double>(), S * samples, 1e-6 * S * samples);
  EXPECT_NEAR(p.at("mfu").get<double>(), 6.0 * macs * samples / (8 * 989e12), 1e-9);
  // the pure-bf16 file runs the same model; its reduce-scatters move half the bytes, so its step is no slower
  const auto pure = run_cli(
      "predict --model mpt-125m --framework llm-foundry-pure --cluster dgx-h100 --gpus 8 --batch 8 "
      "--precision bf16 --format json");
  ASSERT_EQ(pure.status, 0) << pure.err;
  EXPECT_GE(nlohmann::json::parse(pure.out).at("predictions").at(0).at("throughput_samples_per_s").get<double>(), samples);
}

// Without --precision a run takes its framework's (`precision:` in the framework file, default_precision): torchtitan's
// bf16 is the same prediction as --precision bf16, and fp16 on a V100, which has no bf16; a framework naming none runs
// fp32 and, for a language model, says so on stderr. model show takes --framework's the same way.
TEST(Cli, WithoutAPrecisionTheFrameworksOwn) {
  const std::string run = "predict --model llama3-8b --seq-len 2048 --batch 1 --gpus 8 --jitter-cv 0 --format json ";
  const auto own = run_cli(run + "--cluster dgx-h100 --framework torchtitan");
  const auto given = run_cli(run + "--cluster dgx-h100 --framework torchtitan --precision bf16");
  ASSERT_EQ(own.status, 0) << own.err;
  ASSERT_EQ(given.status, 0) << given.err;
  EXPECT_EQ(own.out, given.out);
  EXPECT_EQ(nlohmann::json::parse(own.out).at("inputs").at("precision"), "bf16");
  const auto volta = run_cli(run + "--cluster dgx1v --framework torchtitan");
  ASSERT_EQ(volta.status, 0) << volta.err;
  EXPECT_EQ(nlohmann::json::parse(volta.out).at("inputs").at("precision"), "fp16");
  const auto none = run_cli(run + "--cluster dgx-h100 --framework fsdp");
  ASSERT_EQ(none.status, 0) << none.err;
  EXPECT_EQ(nlohmann::json::parse(none.out).at("inputs").at("precision"), "fp32");
  EXPECT_THAT(none.err, HasSubstr("note: fsdp names no precision, so this is fp32"));
  EXPECT_THAT(own.err, ::testing::Not(HasSubstr("names no precision")));
  const auto show = run_cli("model show llama3-8b --framework megatron-core --gpu h100-sxm --format json");
  ASSERT_EQ(show.status, 0) << show.err;
  EXPECT_EQ(nlohmann::json::parse(show.out).at("precision"), "bf16");
}

// Without --batch a decoder language model runs one sequence a GPU (32 of Llama-3-8B's would need 1.4 TB), an image
// model 32 images, as before.
TEST(Cli, ADecodersDefaultBatchIsOneSequence) {
  const std::string run = "predict --cluster dgx-h100 --gpus 8 --framework torchtitan --format json --model ";
  const auto llm = run_cli(run + "llama3-8b");
  ASSERT_EQ(llm.status, 0) << llm.err;
  EXPECT_EQ(nlohmann::json::parse(llm.out).at("inputs").at("batch_per_gpu"), 1);
  const auto image = run_cli("predict --cluster dgx-h100 --gpus 8 --format json --model resnet50");
  ASSERT_EQ(image.status, 0) << image.err;
  EXPECT_EQ(nlohmann::json::parse(image.out).at("inputs").at("batch_per_gpu"), 32);
}

// Row-wise fp8 (eq. K15) is named where the precision is: predict's header and JSON inputs, explain's header and
// model show's JSON say "fp8-rowwise" (they said "fp8", as for tensor-wise, before), and MFU stays against bf16.
TEST(Cli, RowWiseFp8IsNamedInEveryOutput) {
  const std::string scenario =
      "--model gpt3-125m --cluster dgx-h100 --gpus 8 --framework pytorch-ddp --batch 8 --precision fp8 --fp8-scaling rowwise";
  const auto text = run_cli("predict " + scenario);
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("# dlscale predict: gpt3-125m on dgx-h100, pytorch-ddp (fp8-rowwise), batch 8 per GPU\n"));
  EXPECT_THAT(text.out, HasSubstr("(GPUs × the GPU's dense bf16 peak); fp8 runs are reported against bf16's\n"));
  const auto json = run_cli("predict " + scenario + " --format json");
  ASSERT_EQ(json.status, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out).at("inputs").at("precision"), "fp8-rowwise");
  const auto explain = run_cli("explain " + scenario);
  ASSERT_EQ(explain.status, 0) << explain.err;
  EXPECT_THAT(explain.out, HasSubstr("pytorch-ddp (mixed fp8-rowwise), batch 8 per GPU"));
  for (const char* scaling : {"tensorwise", "rowwise"}) {
    const auto show = run_cli(
        std::string("model show gpt3-125m --gpu h100-sxm --batch 8 --precision fp8 --format json --fp8-scaling ") + scaling);
    ASSERT_EQ(show.status, 0) << show.err;
    EXPECT_EQ(nlohmann::json::parse(show.out).at("precision"), std::string(scaling) == "rowwise" ? "fp8-rowwise" : "fp8");
  }
}

// MX block scaling (eq. K15c) is named "fp8-mxfp8" where the precision is (predict's header and JSON, explain's header,
// model show's JSON), on a Blackwell cluster. It casts what row-wise scaling casts plus the blocks' scales, so its step is
// slower than row-wise's, by less than row-wise is than tensor-wise here (gpt3-125m, eager: the scales are 1/32 B an
// element beside the chain's 35 B); memory keeps no fp8 copies in any recipe, so it is row-wise's to the byte.
TEST(Cli, MxFp8IsNamedInEveryOutput) {
  const std::string scenario =
      "--model gpt3-125m --cluster dgx-b200 --gpus 8 --framework pytorch-ddp --batch 8 --precision fp8 --fp8-scaling ";
  const auto text = run_cli("predict " + scenario + "mxfp8");
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("# dlscale predict: gpt3-125m on dgx-b200, pytorch-ddp (fp8-mxfp8), batch 8 per GPU\n"));
  nlohmann::json p[3];
  const char* scalings[3] = {"tensorwise", "rowwise", "mxfp8"};
  for (int i = 0; i < 3; ++i) {
    const auto json = run_cli("predict " + scenario + scalings[i] + " --format json");
    ASSERT_EQ(json.status, 0) << json.err;
    p[i] = nlohmann::json::parse(json.out);
  }
  EXPECT_EQ(p[2].at("inputs").at("precision"), "fp8-mxfp8");
  const double tensorwise = p[0]["predictions"][0]["iteration_time_s"], rowwise = p[1]["predictions"][0]["iteration_time_s"],
               mx = p[2]["predictions"][0]["iteration_time_s"];
  EXPECT_GT(mx, rowwise);
  EXPECT_LT(mx - rowwise, rowwise - tensorwise);
  EXPECT_EQ(p[2]["predictions"][0]["memory"], p[1]["predictions"][0]["memory"]);
  const auto explain = run_cli("explain " + scenario + "mxfp8");
  ASSERT_EQ(explain.status, 0) << explain.err;
  EXPECT_THAT(explain.out, HasSubstr("pytorch-ddp (mixed fp8-mxfp8), batch 8 per GPU"));
  const auto show = run_cli("model show gpt3-125m --gpu b200 --batch 8 --precision fp8 --format json --fp8-scaling mxfp8");
  ASSERT_EQ(show.status, 0) << show.err;
  EXPECT_EQ(nlohmann::json::parse(show.out).at("precision"), "fp8-mxfp8");
}

TEST(Cli, MemoryWarningSaysWhatThePredictionSays) {
  // Llama-2-7B with DDP in bf16: the stderr warning and the JSON's memory are one estimate (the framework's fp32
  // gradients included in both): 6,738,415,616 × (4 + 4 + 8) B and autocast's 2 B copies of the products' weights
  // (eq. M4b: less the embedding's 131,072,000 and the norms' 266,240) = 121.03 GB of weights, gradients and state.
  const auto r = run_cli(
      "predict --cluster dgx-h100 --model llama2-7b --framework pytorch-ddp --precision bf16 --batch 1 "
      "--gpus 1 --format json --no-train");
  ASSERT_EQ(r.status, 0) << r.err;
  const double need = nlohmann::json::parse(r.out).at("predictions")[0].at("memory").at("per_gpu_bytes").get<double>();
  EXPECT_NE(r.err.find(fmt::format("needs about {:.1f} GB per GPU", need / 1e9)), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("121 GB weights, gradients and optimiser state"), std::string::npos) << r.err;
}

TEST(Cli, ComputeParamsReplaceTheShippedKernelParameters) {
  // What `calibrate fit -o` writes, read back: a set with no per-kernel overhead and memory at half the
  // datasheet's bandwidth makes ResNet-50's momentum step as pytorch-ddp runs it (torch.optim's foreach SGD in
  // fp32: buf ·= μ 8 B, buf += g 12 B, w −= lr·buf 12 B, 32 B per parameter) 25,557,032 × 32 B / (900 GB/s × 0.5)
  // = 1.81739 ms on a V100.
  const std::string params = temp_file("params.yaml",
                                       "defaults: {tensor_efficiency: 0.9, vector_efficiency: 0.8, conv_efficiency: 0.9, "
                                       "memory_efficiency: 0.5, kernel_overhead: \"0 us\"}\n");
  const std::string cmd = "predict --cluster dgx1v --model resnet50 --framework pytorch-ddp --gpus 1 --no-train --format json";
  const auto mine = run_cli(cmd + " --compute-params " + params);
  ASSERT_EQ(mine.status, 0) << mine.err;
  const auto update = [](const std::string& out) {
    return nlohmann::json::parse(out).at("predictions")[0].at("breakdown").at("update_s").get<double>();
  };
  EXPECT_NEAR(update(mine.out), 25'557'032.0 * 32 / (900e9 * 0.5), 1e-9);
  const auto shipped = run_cli(cmd);
  const auto named = run_cli(cmd + " --compute-params " + std::string(DLSCALE_SOURCE_DIR) + "/topologies/compute-params.yaml");
  ASSERT_EQ(shipped.status, 0) << shipped.err;
  EXPECT_EQ(shipped.out, named.out);  // the shipped file, named, is the default
  EXPECT_NE(update(shipped.out), update(mine.out));
  const auto missing = run_cli(cmd + " --compute-params no-such-params.yaml");
  EXPECT_EQ(missing.status, 2);
  EXPECT_EQ(lines(missing.err), 1) << missing.err;
}

TEST(Cli, CollectiveReadsOnlyTheClustersGraph) {
  // A collective needs the cluster's graph, not its input pipeline (issue 35's start-up: the dataset and
  // CPU catalogues and a 16-GPU ring search were most of a one-node collective's work). dgx2 with a dataset
  // that does not exist: the collective answers as on dgx2, a prediction still refuses the file.
  std::string text = slurp(std::string(DLSCALE_SOURCE_DIR) + "/topologies/dgx2.yaml");
  const auto at = text.find("dataset: imagenet");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 17, "dataset: no-such-dataset");
  const std::string file = temp_file("dgx2-no-dataset.yaml", text).string();
  const std::string args = " --op allreduce --gpus 8 --bytes 1GiB";
  const auto shipped = run_cli("collective --cluster dgx2" + args);
  const auto mine = run_cli("collective --cluster " + file + args);
  ASSERT_EQ(shipped.status, 0) << shipped.err;
  ASSERT_EQ(mine.status, 0) << mine.err;
  EXPECT_EQ(mine.out, shipped.out);
  const auto predict = run_cli("predict --cluster " + file + " --model resnet50 --gpus 8");
  EXPECT_EQ(predict.status, 2) << predict.out;
  EXPECT_NE(predict.err.find("unknown datasets 'no-such-dataset'"), std::string::npos) << predict.err;
}

TEST(Cli, FitKeepsTheFixedParametersAtTheirStart) {
  // Two GPUs' rows, written here, fitted from a start whose kernel overhead (7 us) and operand feed (9) are
  // held: they come back as they went in, while a free parameter moves off its start.
  const std::string start = temp_file("start.yaml",
                                      "defaults: {tensor_efficiency: 0.5, vector_efficiency: 0.5, conv_efficiency: 0.5, "
                                      "memory_efficiency: 0.5, kernel_overhead: \"7 us\", operand_feed: 9}\n");
  const std::string csv = temp_file("m.csv",
                                    "gpu,gpus,precision,model,global_batch,samples_per_s\n"
                                    "v100-sxm2,1,fp32,resnet50,64,300\nv100-sxm2,1,fp16,resnet50,128,800\n"
                                    "a100-sxm4-40gb,1,fp16,resnet50,128,1500\n");
  const std::string out = temp_file("fitted.yaml", "");
  const auto r = run_cli("calibrate fit " + csv + " --start " + start + " --fixed kernel_overhead,operand_feed -o " + out);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string fitted = slurp(out);
  EXPECT_NE(fitted.find("kernel_overhead: \"7 us\""), std::string::npos) << fitted;
  EXPECT_NE(fitted.find("operand_feed: 9,"), std::string::npos) << fitted;
  EXPECT_EQ(fitted.find("memory_efficiency: 0.5,"), std::string::npos) << fitted;
  // The report says how each row was taken: ResNet-50 without a memory_format column is NHWC, and has no
  // attention layer to name a kernel for.
  EXPECT_NE(r.err.find("layout"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("   nhwc                -"), std::string::npos) << r.err;
  // --fixed all fits nothing: the start comes back as it went in.
  const auto none = run_cli("calibrate fit " + csv + " --start " + start + " --fixed all -o " + out);
  ASSERT_EQ(none.status, 0) << none.err;
  EXPECT_NE(slurp(out).find("memory_efficiency: 0.5,"), std::string::npos) << slurp(out);
}

TEST(Cli, FitReportJsonCarriesEveryNumberOfTheReport) {
  // calibrate fit --report FILE: the stderr report as JSON. The rows' measured throughputs are the CSV's, the held
  // parameters the start file's (7 us, 9), each error 100 (predicted / measured − 1), the MAPE their mean magnitude,
  // and each table line of the report prints the row's fields.
  const std::string start = temp_file("start-r.yaml",
                                      "defaults: {tensor_efficiency: 0.5, vector_efficiency: 0.5, conv_efficiency: 0.5, "
                                      "memory_efficiency: 0.5, kernel_overhead: \"7 us\", operand_feed: 9}\n");
  const std::string csv = temp_file("m-r.csv",
                                    "gpu,gpus,precision,model,global_batch,samples_per_s\n"
                                    "v100-sxm2,1,fp32,resnet50,64,300\nv100-sxm2,1,fp16,resnet50,128,800\n"
                                    "a100-sxm4-40gb,1,fp16,resnet50,128,1500\n");
  const std::string out = temp_file("fitted-r.yaml", ""), report = temp_file("report.json", "");
  const auto r = run_cli("calibrate fit " + csv + " --start " + start +
                         " --fixed kernel_overhead,operand_feed --leave-one-out gpu -o " + out + " --report " + report);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(slurp(report));
  EXPECT_EQ(j.at("command"), "calibrate fit");
  ASSERT_EQ(j.at("rows").size(), 3u);
  const double measured[] = {300, 800, 1500};
  const int batch[] = {64, 128, 128};
  double sum = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& row = j.at("rows")[i];
    const double m = row.at("measured_samples_per_s").get<double>(), p = row.at("predicted_samples_per_s").get<double>();
    EXPECT_DOUBLE_EQ(m, measured[i]);
    EXPECT_EQ(row.at("batch_per_gpu"), batch[i]);
    EXPECT_EQ(row.at("layout"), "nhwc");  // ResNet-50 without a memory_format column
    EXPECT_TRUE(row.at("attention").is_null());
    EXPECT_NEAR(row.at("error_percent").get<double>(), 100.0 * (p / m - 1.0), 1e-9);
    sum += std::abs(p / m - 1.0) * 100.0;
    EXPECT_NE(r.err.find(fmt::format("{:>10.1f} {:>10.1f} {:>+7.1f}%", m, p, 100.0 * (p / m - 1.0))), std::string::npos) << r.err;
  }
  EXPECT_NEAR(j.at("mape_percent").get<double>(), sum / 3, 1e-9);
  EXPECT_NE(r.err.find(fmt::format("in-sample MAPE {:.1f}%", sum / 3)), std::string::npos) << r.err;
  EXPECT_DOUBLE_EQ(j.at("fitted").at("kernel_overhead_s").get<double>(), 7e-6);
  EXPECT_DOUBLE_EQ(j.at("fitted").at("operand_feed").get<double>(), 9.0);
  ASSERT_EQ(j.at("leave_one_out").size(), 1u);
  const auto& loo = j.at("leave_one_out")[0];
  EXPECT_EQ(loo.at("by"), "gpu");
  ASSERT_EQ(loo.at("runs").size(), 2u);  // the two GPUs of the CSV
  for (const auto& run : loo.at("runs"))
    EXPECT_NE(r.err.find(fmt::format("leave out gpu {}: MAPE {:.1f}%", run.at("left_out").get<std::string>(),
                                     run.at("mape_percent").get<double>())),
              std::string::npos)
        << r.err;
  // Both on standard output would mix YAML and JSON: one line, exit 2, nothing printed.
  const auto both = run_cli("calibrate fit " + csv + " --report -");
  EXPECT_EQ(both.status, 2);
  EXPECT_TRUE(both.out.empty());
  EXPECT_EQ(both.err, "dlscale: '--report': the parameters already go to standard output: give -o FILE or --report FILE\n");
}

TEST(Cli, DefaultGpuCountsAreThoseTheClusterHolds) {
  // Without --gpus: 1, 2, 4, 8, 16 and one node, those the cluster holds (beyond a node in whole nodes), and
  // the whole cluster when it has 16 GPUs or fewer. A one-server cluster used to fail with "'--gpus': ...
  // holds at most 8 GPUs, asked for 16" though no --gpus was given.
  const auto counts = [](const std::string& args) {
    const auto r = run_cli("predict --model resnet50 --no-train --format json " + args);
    EXPECT_EQ(r.status, 0) << args << ": " << r.err;
    std::vector<int> out;
    if (r.status != 0) return out;
    const auto j = nlohmann::json::parse(r.out);  // kept: a range-for over parse(...).at(...) would dangle
    for (const auto& p : j.at("predictions")) out.push_back(p.at("gpus").get<int>());
    return out;
  };
  using V = std::vector<int>;
  EXPECT_EQ(counts("--cluster shi-chu-p40"), (V{1, 2, 4, 8, 16}));      // 4 nodes x 4: as before
  EXPECT_EQ(counts("--cluster dgx-a100"), (V{1, 2, 4, 8}));             // one node of 8
  EXPECT_EQ(counts("--cluster dell-c4140-p100-sxm2"), (V{1, 2, 4}));    // one node of 4
  EXPECT_EQ(counts("--cluster gb200-nvl72"), (V{1, 2, 4, 8, 16, 72}));  // one 72-GPU NVLink domain
  EXPECT_EQ(counts("--cluster gb300-nvl72"), (V{1, 2, 4, 8, 16, 72}));  // the same for Blackwell Ultra
  EXPECT_EQ(counts("--cluster dgx-b300"), (V{1, 2, 4, 8}));
  EXPECT_EQ(counts("--cluster dgx-h100 --nodes 3 --fabric infiniband:400Gb/s:8"), (V{1, 2, 4, 8, 16}));  // 24 > 16
  EXPECT_EQ(counts("--cluster dgx-a100 --gpus 2,8"), (V{2, 8}));
  const auto sim = run_cli("simulate --cluster dgx-a100 --model resnet50 --iterations 2");
  EXPECT_EQ(sim.status, 0) << sim.err;
}

TEST(Cli, AClusterFileNamesTheFrameworkTakenWithoutOne) {
  // `framework: NAME` in a cluster file: what predict, simulate, explain and report take when no --framework
  // is given (the modern servers say pytorch-ddp); without the key, caffe-mpi (the Shi & Chu runs) as before.
  const auto predicted = [](const std::string& args) {
    const auto r = run_cli("predict --model resnet50 --no-train --format json --gpus 1,8 " + args);
    EXPECT_EQ(r.status, 0) << args << ": " << r.err;
    return r.status == 0 ? nlohmann::json::parse(r.out) : nlohmann::json();
  };
  const auto framework = [&](const std::string& args) {
    const auto j = predicted(args);
    return j.is_null() ? std::string() : j.at("inputs").at("framework").get<std::string>();
  };
  EXPECT_EQ(framework("--cluster dgx-h100"), "pytorch-ddp");
  EXPECT_EQ(framework("--cluster dgx-h100 --framework caffe-mpi"), "caffe-mpi");
  EXPECT_EQ(framework("--cluster shi-chu-p40"), "caffe-mpi");
  EXPECT_EQ(framework("--cluster dell-c4140-pcie"), "caffe-mpi");
  // The default is the named file itself: the same predictions as naming it.
  EXPECT_EQ(predicted("--cluster dgx-a100").at("predictions"),
            predicted("--cluster dgx-a100 --framework pytorch-ddp").at("predictions"));
  // A cluster file of one's own.
  const std::string own =
      temp_file("own-cluster.yaml",
                "name: own\nnodes: 1\ngpus_per_node: 2\ngpu: v100-sxm2\nframework: cntk\n"
                "host_to_gpu: {pinned: \"12 GB/s\"}\nintra_node: {bandwidth: \"20 GB/s\", latency: \"5 us\"}\n"
                "storage: {disk: \"1 GB/s\", page_cache: \"5 GB/s\"}\n");
  const auto r = run_cli("predict --cluster " + own + " --model resnet50 --no-train --gpus 1,2");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("resnet50 on own, cntk (fp32)"), std::string::npos) << r.out;
}

TEST(Cli, FitTakesStrictFp32FromTheFilesThatSaySo) {
  // The same A100 row in two files: Lambda-style (fp32 is PyTorch's default, TF32 on Ampere) and one named by
  // --fp32-is-fp32-in (strict fp32, as bench/pytorch runs it). Fitted together, each row is reported as the
  // fit of its file alone reports it: the first as tf32 (the default), the second as fp32 (--fp32-is-fp32).
  const std::string header = "gpu,gpus,precision,model,global_batch,samples_per_s\n";
  const std::string row = "a100-sxm4-40gb,1,fp32,resnet50,128,1000\n";
  const std::string lambda = temp_file("lambda.csv", header + row), mine = temp_file("mine.csv", header + row);
  const std::string out = temp_file("fitted.yaml", "");
  const auto row_of = [](const std::string& report) {  // the table's one data row
    const auto at = report.find("a100-sxm4-40gb");
    return at == std::string::npos ? std::string() : report.substr(at, report.find('\n', at) - at);
  };
  const auto tf32 = run_cli("calibrate fit " + lambda + " --fixed all -o " + out);
  const auto fp32 = run_cli("calibrate fit " + mine + " --fp32-is-fp32 --fixed all -o " + out);
  ASSERT_EQ(tf32.status, 0) << tf32.err;
  ASSERT_EQ(fp32.status, 0) << fp32.err;
  ASSERT_NE(row_of(tf32.err).find(" tf32 "), std::string::npos) << tf32.err;
  ASSERT_NE(row_of(fp32.err).find(" fp32 "), std::string::npos) << fp32.err;
  // The file named as another spelling of the same path (its folder's "./").
  const std::string mine_again = (std::filesystem::path(mine).parent_path() / "." / "mine.csv").string();
  const auto r = run_cli("calibrate fit " + lambda + " " + mine + " --fp32-is-fp32-in " + mine_again + " --fixed all -o " + out);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto first = r.err.find(row_of(tf32.err));
  ASSERT_NE(first, std::string::npos) << r.err;
  EXPECT_NE(r.err.find(row_of(fp32.err), first), std::string::npos) << r.err;
  // The options before the files take one value each: the files after them stay measurements.
  const auto first_options =
      run_cli("calibrate fit --fp32-is-fp32-in " + mine + " --fixed all " + lambda + " " + mine + " -o " + out);
  ASSERT_EQ(first_options.status, 0) << first_options.err;
  EXPECT_EQ(first_options.err, r.err);
  // Without the option both rows are TF32's.
  const auto both = run_cli("calibrate fit " + lambda + " " + mine + " --fixed all -o " + out);
  ASSERT_EQ(both.status, 0) << both.err;
  EXPECT_EQ(both.err.find(row_of(fp32.err)), std::string::npos) << both.err;
}

TEST(Cli, Fp32OnATf32GpuSaysWhatFrameworksRunThere) {
  const auto fp32 = run_cli("predict --cluster dgx-a100 --model resnet50 --framework pytorch-ddp --gpus 1 --no-train");
  ASSERT_EQ(fp32.status, 0) << fp32.err;
  EXPECT_NE(fp32.err.find("note: fp32 is strict FP32; on the A100 SXM4 40 GB"), std::string::npos) << fp32.err;
  EXPECT_NE(fp32.err.find("--precision tf32 predicts that"), std::string::npos) << fp32.err;
  const auto tf32 =
      run_cli("predict --cluster dgx-a100 --model resnet50 --framework pytorch-ddp --gpus 1 --no-train --precision tf32");
  ASSERT_EQ(tf32.status, 0) << tf32.err;
  EXPECT_EQ(tf32.err, "");
  const auto volta = run_cli("predict --cluster dgx1v --model resnet50 --framework pytorch-ddp --gpus 1 --no-train");
  EXPECT_EQ(volta.err, "");  // no TF32 on a V100: fp32 is what runs
  // A command that fails after the note was due prints its error alone, one line.
  const auto bad = run_cli("predict --cluster dgx-a100 --model resnet50 --framework pytorch-ddp --gpus 16 --no-train");
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
  EXPECT_EQ(bad.err.find("note:"), std::string::npos) << bad.err;
}

TEST(Cli, ShardedStepsThatDoNotFitAreNamedByGpuCount) {
  // FSDP shards Llama-2-7B's state over the GPUs: one H100 cannot hold it, eight can. The warning names the
  // count that does not fit with the JSON's own figure, and only that one.
  const auto r = run_cli(
      "predict --cluster dgx-h100 --model llama2-7b --framework fsdp --precision bf16 --batch 1 --gpus 1,8 "
      "--format json --no-train");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto p = nlohmann::json::parse(r.out).at("predictions");
  ASSERT_FALSE(p[0].at("memory").at("fits").get<bool>());
  ASSERT_TRUE(p[1].at("memory").at("fits").get<bool>());
  EXPECT_NE(r.err.find(fmt::format("{} at 1 GPU;", dlscale::bytes(p[0].at("memory").at("per_gpu_bytes").get<double>()))),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("at 8 GPUs"), std::string::npos) << r.err;
  const auto fits =
      run_cli("predict --cluster dgx-h100 --model llama2-7b --framework fsdp --precision bf16 --batch 1 --gpus 8 --no-train");
  EXPECT_EQ(fits.err, "");
}

TEST(Cli, BlackwellUltraClustersPredictLlamaUnderFsdpAndTimeCollectives) {
  // The two Blackwell Ultra clusters (issue 37): Llama-3-8B under FSDP on one node / the whole rack, with the
  // GPU's 288 GB (read as GiB, as the catalogue reads NVIDIA's "GB": 288 x 1,073,741,824 = 309,237,645,312 B).
  for (const auto& [cluster, all] : std::vector<std::pair<std::string, int>>{{"dgx-b300", 8}, {"gb300-nvl72", 72}}) {
    SCOPED_TRACE(cluster);
    const auto r = run_cli("predict --cluster " + cluster +
                           " --model llama3-8b --framework fsdp --precision bf16 --batch 1 "
                           "--gpus 1," +
                           std::to_string(all) + " --format json --no-train");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    const auto& p = j.at("predictions");
    ASSERT_EQ(p.size(), 2u);
    for (const auto& x : p) {
      EXPECT_DOUBLE_EQ(x.at("memory").at("capacity_bytes").get<double>(), 309237645312.0);
      EXPECT_TRUE(x.at("memory").at("fits").get<bool>());
      EXPECT_GT(x.at("throughput_tokens_per_s").get<double>(), 0.0);
    }
    EXPECT_EQ(p[1].at("gpus").get<int>(), all);
    EXPECT_GT(p[1].at("throughput_tokens_per_s").get<double>(), p[0].at("throughput_tokens_per_s").get<double>());
    // The NVLink domain is wired as dgx-b200's / gb200-nvl72's: NVLS on Blackwell's rows, 8 channels at 90 GB/s
    // on 8 GPUs (busbw 8 x 90 x 0.74 x 7/8 x 2 = 932.4 GB/s) and 32 at 20 on 72 (32 x 20 x 0.74 x 31/32 x 2 =
    // 917.6); 1 GiB takes 25 us + bytes / (busbw x n / (2(n - 1))).
    const auto c = run_cli("collective --cluster " + cluster + " --op allreduce --gpus " + std::to_string(all) +
                           " --bytes 1GiB --format json");
    ASSERT_EQ(c.status, 0) << c.err;
    const auto cj = nlohmann::json::parse(c.out);  // kept: a reference into parse(...)'s result would dangle
    const auto& x = cj.at("results").at(0);
    EXPECT_EQ(x.at("algorithm"), "nvls");
    const double busbw = all == 8 ? 932.4 : 917.6, n = all;
    EXPECT_NEAR(x.at("time_s").get<double>(), 25e-6 + 1073741824.0 / (busbw * 1e9 * n / (2 * (n - 1))), 1e-9);
  }
  // Across nodes the 800 Gb/s ConnectX-8s count: 16 DGX B300 at 800 Gb/s beat the same nodes at 400 Gb/s.
  auto seconds = [](const std::string& fabric) {
    const auto r = run_cli("collective --cluster dgx-b300 --nodes 16 --fabric " + fabric +
                           " --op allreduce --gpus 128 --bytes 1GiB --format json");
    EXPECT_EQ(r.status, 0) << r.err;
    return r.status == 0 ? nlohmann::json::parse(r.out).at("results").at(0).at("time_s").get<double>() : 0.0;
  };
  EXPECT_LT(seconds("infiniband:800Gb/s"), seconds("infiniband:400Gb/s"));
}

TEST(Cli, ExplainSourcesSaysWhichGradientsAreExchanged) {
  // PyTorch DDP under AMP keeps fp32 parameters: 4 B per parameter; DeepSpeed exchanges its fp16 working
  // copy's: 2 B.
  const auto ddp =
      run_cli("predict --cluster dgx-a100 --framework pytorch-ddp --precision fp16 --gpus 8 --no-train --explain-sources");
  ASSERT_EQ(ddp.status, 0) << ddp.err;
  EXPECT_NE(ddp.err.find("gradients exchanged: 4 B per parameter (fp32 in fp16: framework 'pytorch-ddp'"), std::string::npos)
      << ddp.err;
  const auto zero =
      run_cli("predict --cluster dgx-a100 --framework deepspeed-zero2 --precision fp16 --gpus 8 --no-train --explain-sources");
  ASSERT_EQ(zero.status, 0) << zero.err;
  EXPECT_NE(zero.err.find("gradients exchanged: 2 B per parameter (fp16:"), std::string::npos) << zero.err;
}

TEST(Cli, NamesAsPeopleWriteThem) {
  // "ResNet-50", "DGX A100", "PyTorch-DDP": letters and digits compared when exactly one file answers, so the
  // output is the one the file names give (the header names the files' own names).
  const auto canonical =
      run_cli("predict --cluster dgx-a100 --model resnet50 --framework pytorch-ddp --precision tf32 --gpus 1,8 --no-train");
  const auto written =
      run_cli("predict --cluster 'DGX A100' --model ResNet-50 --framework PyTorch-DDP --precision tf32 --gpus 1,8 --no-train");
  ASSERT_EQ(canonical.status, 0) << canonical.err;
  ASSERT_EQ(written.status, 0) << written.err;
  EXPECT_EQ(written.out, canonical.out);
  // "resnet" is no model's name: the error lists the known ones
  const auto unknown = run_cli("predict --model ResNet --gpus 1 --no-train");
  EXPECT_EQ(unknown.status, 2);
  EXPECT_NE(unknown.err.find("unknown model 'ResNet' (known: alexnet,"), std::string::npos) << unknown.err;
}

TEST(Cli, FrameworkJitterWaitsForTheSlowestGpu) {
  // CNTK's jitter_cv 0.0635 (the median of its Table V standard deviations over t_f + t_b) on the worked
  // example: σ = 0.0635 × (0.1684 + 0.2918) s; the expected maximum of N standard normals is 1/√π for 2
  // (Harter 1961: 0.5642) and 1.0294 for 4. CNTK neither prefetches nor overlaps, so the wait adds in full.
  const auto r = run_cli("predict --profile worked-example-cntk-alexnet --gpus 1,2,4 --format json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto p = nlohmann::json::parse(r.out).at("predictions");
  const double sigma = 0.0635 * (0.1684 + 0.2918);
  EXPECT_EQ(p[0]["breakdown"]["sync_wait_s"].get<double>(), 0.0);  // one GPU waits for nobody
  EXPECT_NEAR(p[1]["breakdown"]["sync_wait_s"].get<double>(), 0.56419 * sigma, 1e-6);
  EXPECT_NEAR(p[2]["breakdown"]["sync_wait_s"].get<double>(), 1.0294 * sigma, 1e-5);
  EXPECT_NEAR(p[1]["iteration_time_s"].get<double>(), 0.5215 + 0.45 + 0.0359 + 0.56419 * sigma, 1e-6);
  EXPECT_NEAR(p[2]["iteration_time_s"].get<double>(), 0.5215 + 0.72 + 0.042 + 1.0294 * sigma, 1e-5);
  // --jitter-cv replaces the file's value on every scenario command.
  for (const char* cmd : {"predict", "simulate --iterations 2", "explain", "report"}) {
    const auto z = run_cli(std::string(cmd) + " --profile worked-example-cntk-alexnet --gpus 2 --jitter-cv 1.5 -o /dev/null");
    EXPECT_EQ(z.status, 2) << cmd;
    EXPECT_NE(z.err.find("--jitter-cv"), std::string::npos) << cmd << ": " << z.err;
  }
  // --explain-sources says where the value came from.
  const auto src = run_cli("predict --profile worked-example-cntk-alexnet --gpus 2 --explain-sources");
  EXPECT_NE(src.err.find("jitter_cv: 0.0635 (framework 'cntk'"), std::string::npos) << src.err;
  const auto given = run_cli("predict --profile worked-example-cntk-alexnet --gpus 2 --explain-sources --jitter-cv 0.02");
  EXPECT_NE(given.err.find("jitter_cv: 0.02 (--jitter-cv"), std::string::npos) << given.err;
  const auto plan = run_cli("plan --model resnet50 --gpus 2 --jitter-cv -0.1");
  EXPECT_EQ(plan.status, 2);
  EXPECT_NE(plan.err.find("--jitter-cv"), std::string::npos) << plan.err;
}

TEST(Cli, AFrameworksOptimizerIsTheOneARunTakesUnlessItNamesOne) {
  // horovod-tensorflow.yaml says `optimizer: sgd` (tf_cnn_benchmarks' default). AlexNet on the P40, one GPU: plain SGD
  // streams 12 B a parameter, momentum 20 B; with the optimiser fused (one kernel per layer either way) the two
  // updates differ by 61,100,840 x 8 B over 346 GB/s x the memory-bound efficiency 0.5294 (compute-params.yaml).
  auto update = [](const std::string& extra, const std::string& framework = "horovod-tensorflow") {
    const auto r = run_cli("predict --cluster shi-chu-p40 --model alexnet --framework " + framework +
                           " --batch 1024 --gpus 1 --format json" + extra);
    EXPECT_EQ(r.status, 0) << r.err;
    return nlohmann::json::parse(r.out).at("predictions")[0].at("breakdown").at("update_s").get<double>();
  };
  const double framework = update(""), sgd = update(" --optimizer sgd"), momentum = update(" --optimizer momentum");
  EXPECT_EQ(framework, sgd);
  EXPECT_NEAR(momentum - sgd, 61100840.0 * 8.0 / (346e9 * 0.5294), 1e-6);
  // tensorflow.yaml also gives its own update kernels (`update_kernels`, Shi & Chu's Table V) for plain SGD: a run
  // naming SGD takes them; one naming momentum takes the optimiser's modelled kernels, as horovod-tensorflow's.
  EXPECT_EQ(update(" --optimizer sgd", "tensorflow"), update("", "tensorflow"));
  EXPECT_NE(update("", "tensorflow"), sgd);
  EXPECT_EQ(update(" --optimizer momentum", "tensorflow"), momentum);
  const auto src = run_cli("predict --cluster shi-chu-p40 --model alexnet --framework tensorflow --gpus 1 --explain-sources");
  EXPECT_NE(src.err.find("optimizer: sgd (framework 'tensorflow' says optimizer: sgd)"), std::string::npos) << src.err;
  // A framework that says nothing leaves the network's default: momentum for an image model.
  const auto caffe = run_cli("predict --cluster shi-chu-p40 --model alexnet --framework caffe-mpi --gpus 1 --explain-sources");
  EXPECT_NE(caffe.err.find("optimizer: momentum (the default for image models)"), std::string::npos) << caffe.err;
}

TEST(Cli, CsvHasOneRowPerGpuCount) {
  const auto r = run_cli("predict --profile worked-example-cntk-alexnet --gpus 1,2,4,8,16 --format csv");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(lines(r.out), 6);
  EXPECT_EQ(r.out.substr(0, 16), "gpus,nodes,batch");
}

TEST(Cli, DefaultScenarioNeedsNoArguments) {
  const auto r = run_cli("predict");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("resnet50 on shi-chu-p40, caffe-mpi (fp32), batch 32 per GPU"));
  // 3 header lines, column titles, 5 GPU counts, 2 footer lines (times, what the bottleneck is); then the
  // time to train: a blank line, its title, column titles, 5 GPU counts and the note that the cluster gives
  // no price.
  EXPECT_EQ(lines(r.out), 4 + 5 + 1 + 1 + 2 + 5 + 1);
  const auto bare = run_cli("predict --no-train");
  ASSERT_EQ(bare.status, 0) << bare.err;
  EXPECT_EQ(lines(bare.out), 4 + 5 + 1);
}

// Time and cost to train (issue 8, item 3): iterations = epochs · ⌈samples / (N_g · M)⌉, hours =
// iterations · t_iter / 3600, GPU-hours = hours · N_g, cost = GPU-hours · price. The expectations are
// computed here from the printed iteration time with that arithmetic.
TEST(Cli, PredictReportsTimeAndCostToTrain) {
  const auto cluster = temp_file("priced.yaml",
                                 "name: priced\nnodes: 2\ngpus_per_node: 4\ngpu: v100-sxm2\n"
                                 "host_to_gpu: {pinned: \"12 GB/s\"}\n"
                                 "intra_node: {bandwidth: \"20 GB/s\", latency: \"5 us\"}\n"
                                 "inter_node: {bandwidth: \"100 Gb/s\", latency: \"14 us\"}\n"
                                 "storage: {disk: \"2 GB/s\", page_cache: \"10 GB/s\"}\n"
                                 "price_per_gpu_hour: \"2.5 USD\"\n");
  const auto r = run_cli("predict --cluster " + cluster.string() +
                         " --model resnet50 --batch 64 --gpus 1,8 --dataset-samples 1000 --epochs 3 --format csv");
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream in(r.out);
  std::string header, row;
  std::getline(in, header);
  EXPECT_THAT(header, testing::EndsWith(",train_iterations,train_hours,gpu_hours,cost"));
  for (const int gpus : {1, 8}) {
    ASSERT_TRUE(std::getline(in, row));
    std::vector<std::string> f;
    std::stringstream ss(row);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    ASSERT_EQ(f.size(), 27u) << row;  // 23 prediction columns (…, tokens/s, mfu, bottleneck share and gain), 4 to train
    EXPECT_EQ(std::stoi(f[0]), gpus);
    const double t_iter = std::stod(f[3]);
    // 1 GPU: ⌈1000 / 64⌉ = 16 per epoch, 48 in all; 8 GPUs: ⌈1000 / 512⌉ = 2 per epoch, 6 in all.
    const double iterations = gpus == 1 ? 48.0 : 6.0;
    EXPECT_DOUBLE_EQ(std::stod(f[23]), iterations);
    EXPECT_NEAR(std::stod(f[24]), iterations * t_iter / 3600.0, 1e-12);
    EXPECT_NEAR(std::stod(f[25]), iterations * t_iter / 3600.0 * gpus, 1e-12);
    EXPECT_NEAR(std::stod(f[26]), iterations * t_iter / 3600.0 * gpus * 2.5, 1e-12);
  }
  const auto j = run_cli("predict --cluster " + cluster.string() + " --model resnet50 --gpus 8 --format json");
  ASSERT_EQ(j.status, 0) << j.err;
  EXPECT_THAT(j.out, HasSubstr("\"workload\": \"ImageNet-1k (1,281,167 images)"));
  EXPECT_THAT(j.out, HasSubstr("\"currency\": \"USD\""));
  const auto bad = run_cli("predict --epochs -1");
  EXPECT_EQ(bad.status, 2);
  EXPECT_THAT(bad.err, HasSubstr("--epochs"));
}

TEST(Cli, GoldenTableOfTheWorkedExample) {
  const auto r = run_cli("predict --profile worked-example-cntk-alexnet --gpus 1,2,4,8,16");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, slurp(std::string(DLSCALE_SOURCE_DIR) + "/tests/golden/predict-worked-example.txt"))
      << "refresh on purpose with tests/golden/refresh.sh";
}

TEST(Cli, GoldenJsonOfTheWorkedExample) {
  // the JSON schema of report.hpp, every member and number as printed
  const auto r = run_cli("predict --profile worked-example-cntk-alexnet --gpus 1,2,4,8,16 --format json");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, slurp(std::string(DLSCALE_SOURCE_DIR) + "/tests/golden/predict-worked-example.json"))
      << "refresh on purpose with tests/golden/refresh.sh";
}

struct BadRun {
  const char* name;
  std::string args;
  std::string expected_err;  // whole stderr
};

class CliBadInput : public ::testing::TestWithParam<BadRun> {};

TEST_P(CliBadInput, ExitTwoOneLineNothingOnStdout) {
  const auto& c = GetParam();
  const auto r = run_cli(c.args);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, c.expected_err);
  EXPECT_EQ(lines(r.err), 1);
}

const std::string kBadCluster =
    temp_file("bad-cluster.yaml", "name: x\nnodes: 1\ngpus_per_node: 4\ngpu: p40\nhost_to_gpu: {pinned: \"-3 GB/s\"}\n").string();
const std::string kBadYaml = temp_file("bad-yaml.yaml", "name: x\nnodes: [1\n").string();

INSTANTIATE_TEST_SUITE_P(
    Catalogue, CliBadInput,
    ::testing::Values(
        BadRun{"too_many_gpus", "predict --gpus 32,6",
               "dlscale: '--gpus': cluster 'shi-chu-p40' holds at most 16 GPUs (4 nodes × 4), asked for 32; 6 GPUs do not fill "
               "whole nodes of 4 GPUs on cluster 'shi-chu-p40'\n"},
        BadRun{"bad_gpu_list", "predict --gpus 1,two",
               "dlscale: '--gpus': '1,two' is not a list of GPU counts ≥ 1 (e.g. 1,2,4,8)\n"},
        BadRun{"bad_format", "predict --format xml", "dlscale: '--format': unknown format 'xml' (expected table, json or csv)\n"},
        BadRun{"missing_file", "predict --cluster /nonexistent/c.yaml",
               "dlscale: /nonexistent/c.yaml: '--cluster': cannot open file (no such file)\n"},
        BadRun{"negative_bandwidth", "predict --cluster " + kBadCluster,
               "dlscale: " + kBadCluster + ":5:23: 'host_to_gpu.pinned': '-3 GB/s' is negative\n"},
        BadRun{"malformed_yaml", "predict --cluster " + kBadYaml,
               "dlscale: " + kBadYaml + ":3:1: malformed YAML: end of sequence flow not found\n"},
        BadRun{"profile_batch_mismatch", "predict --profile worked-example-cntk-alexnet --batch 64",
               "dlscale: '--batch': the profile worked-example-cntk-alexnet was measured at batch 1024 per GPU, not 64\n"},
        BadRun{"unknown_option", "predict --colour red", "dlscale: The following arguments were not expected: red --colour\n"}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

// --gpu: the cluster as if its file's `gpu:` named that GPU. The reference is the shipped file with that one
// line edited, and a hand-written GPU file with the catalogue entry's figures must give the same numbers.
TEST(Cli, GpuOptionEqualsTheFileWithItsGpuReplaced) {
  std::string text = slurp(std::string(DLSCALE_TEST_DATA_DIR) + "/../../topologies/dgx-a100.yaml");
  const std::string line = "gpu: a100-sxm4-40gb\n";
  ASSERT_NE(text.find(line), std::string::npos);
  text.replace(text.find(line), line.size(), "gpu: h100-sxm\n");
  const auto edited = temp_file("dgx-a100-with-h100.yaml", text);
  const auto gpu = temp_file("my-h100.yaml",
                             "name: H100 SXM5 80 GB\narchitecture: hopper\nsm: 90\nsms: 132\npeak_bf16: \"989 TFLOPS\"\n"
                             "peak_fp32: \"67 TFLOPS\"\npeak_fp16: \"989 TFLOPS\"\npeak_tf32: \"494.5 TFLOPS\"\n"
                             "memory_bandwidth: \"3.35 TB/s\"\nmemory: \"80 GiB\"\nbase_clock: \"1590 MHz\"\n"
                             "boost_clock: \"1980 MHz\"\nnvlinks: 18\nnvlink_generation: 4\npcie_generation: 5\n");
  const std::string rest =
      " --model bert-squad --framework pytorch-ddp --precision bf16 --batch 32 --gpus 1,8 --no-train --format json";
  auto numbers = [](const test::RunResult& r) {
    EXPECT_EQ(r.status, 0) << r.err;
    std::vector<double> v;
    const auto j = nlohmann::json::parse(r.out);
    for (const auto& p : j.at("predictions"))
      for (const char* k : {"iteration_time_s", "throughput_samples_per_s", "speedup"}) v.push_back(p[k].get<double>());
    return v;
  };
  const auto by_option = numbers(run_cli("predict --cluster dgx-a100 --gpu h100-sxm" + rest));
  const auto by_file = numbers(run_cli("predict --cluster " + edited.string() + rest));
  const auto by_gpu_file = numbers(run_cli("predict --cluster dgx-a100 --gpu " + gpu.string() + rest));
  ASSERT_EQ(by_option.size(), 6u);
  EXPECT_EQ(by_option, by_file);
  EXPECT_EQ(by_option, by_gpu_file);
  // and it is not the A100's answer
  EXPECT_NE(by_option, numbers(run_cli("predict --cluster dgx-a100" + rest)));
  // an aliased name (Lambda's) works too; the collective sees the GPU's NCCL generation
  EXPECT_EQ(by_option, numbers(run_cli("predict --cluster dgx-a100 --gpu H100-SXM5-80GB" + rest)));
  const auto coll = run_cli("collective --cluster dgx-a100 --gpus 8 --bytes 1GiB --gpu h100-sxm");
  EXPECT_EQ(coll.status, 0) << coll.err;
  // the JSON says which GPU was predicted
  const auto j = nlohmann::json::parse(run_cli("predict --cluster dgx-a100 --gpu h100-sxm" + rest).out);
  EXPECT_EQ(j["inputs"]["cluster"], "dgx-a100");
  EXPECT_EQ(j["inputs"]["gpu"], "H100 SXM5 80 GB");
}

TEST(Cli, GpuOptionRefusesWhatItCannotUse) {
  const auto unknown = run_cli("predict --cluster dgx-a100 --gpu a200 -o /dev/null");
  EXPECT_EQ(unknown.status, 2);
  EXPECT_THAT(unknown.err, HasSubstr("dlscale: '--gpu': unknown GPU 'a200' (known: "));
  EXPECT_EQ(lines(unknown.err), 1);
  const auto missing = run_cli("predict --cluster dgx-a100 --gpu no/such.yaml");
  EXPECT_EQ(missing.status, 2);
  EXPECT_EQ(missing.err, "dlscale: '--gpu': 'no/such.yaml': no such GPU file (or not readable)\n");
  const auto bad = temp_file("bad-gpu.yaml", "name: X\npeak_fp32: \"10 TFLOPS\"\nmemory_bandwidth: \"900 GB\"\n");
  const auto unit = run_cli("predict --cluster dgx-a100 --gpu " + bad.string());
  EXPECT_EQ(unit.status, 2);
  EXPECT_THAT(unit.err, HasSubstr("bad-gpu.yaml:3:19: 'memory_bandwidth': unknown bandwidth unit"));
  // a GPU without its compute capability cannot go into a topology graph (NVLink bandwidths depend on it)
  const auto nosm = temp_file("no-sm.yaml", "name: Mystery GPU\npeak_fp32: \"10 TFLOPS\"\nmemory_bandwidth: \"1 TB/s\"\n");
  const auto graph = run_cli("predict --cluster dgx-a100 --gpu " + nosm.string() + " -o /dev/null");
  EXPECT_EQ(graph.status, 2);
  EXPECT_EQ(graph.err,
            "dlscale: '--gpu': 'Mystery GPU' gives no 'sm' (compute capability): 'dgx-a100' has a topology graph, "
            "whose NVLink bandwidths depend on it\n");
  // a precision the replacement lacks is refused as for a file that names it
  const auto v100 = run_cli("predict --cluster dgx-a100 --gpu v100-sxm2 --precision bf16");
  EXPECT_EQ(v100.status, 2);
  EXPECT_THAT(v100.err, HasSubstr("'--precision'"));
}

// The unknown-name message lists what is known; compare its fixed prefix.
TEST(Cli, UnknownNameListsKnownNames) {
  const auto r = run_cli("predict --cluster dgx-9");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("shi-chu-p40"));
}

TEST(Cli, OutputFileIsWrittenWholeOrNotAtAll) {
  const auto dir = std::filesystem::temp_directory_path() / ("dlscale-out-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto good = dir / "good.json";
  auto r = run_cli("predict --format json -o " + good.string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(nlohmann::json::parse(slurp(good)).at("predictions").size(), 5u);
  const auto bad = dir / "bad.json";
  r = run_cli("predict --gpus 64,128 --format json -o " + bad.string());
  EXPECT_EQ(r.status, 2);
  EXPECT_FALSE(std::filesystem::exists(bad));
  for (const auto& e : std::filesystem::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
  std::filesystem::remove_all(dir);
}

// -o through a symbolic link writes the link's target and keeps the link; a device is written, not
// replaced; a full disk (on -o or on standard output) is an error with a non-zero status.
TEST(Cli, OutputWritesThroughLinksAndDevicesAndFailsOnAFullDisk) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("dlscale-cli-links-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "real");
  { std::ofstream(dir / "real" / "result.txt") << "old\n"; }
  fs::create_symlink(dir / "real" / "result.txt", dir / "link.txt");
  auto r = test::run_cli("predict --gpus 1 -o " + (dir / "link.txt").string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir / "link.txt")));
  EXPECT_EQ(test::slurp(dir / "real" / "result.txt").rfind("# dlscale predict", 0), 0U);
  std::size_t entries = 0;  // no temporary file left beside the target
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir / "real")) ++entries;
  EXPECT_EQ(entries, 1U);
  if (fs::exists("/dev/null")) {
    r = test::run_cli("predict --gpus 1 -o /dev/null");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(fs::is_character_file("/dev/null"));
  }
  if (fs::exists("/dev/stdout")) {
    // /dev/stdout on a pipe: /proc/self/fd/1 links to "pipe:[N]", which no path reaches; written directly.
    const std::string cmd = "{ " + std::string(DLSCALE_CLI) + " predict --gpus 1 -o /dev/stdout 2>" + (dir / "err").string() +
        "; echo $? >" + (dir / "status").string() + "; } | cat >" + (dir / "piped").string();
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    EXPECT_EQ(test::slurp(dir / "status"), "0\n") << test::slurp(dir / "err");
    EXPECT_EQ(test::slurp(dir / "piped").rfind("# dlscale predict", 0), 0U) << test::slurp(dir / "err");
  }
  if (fs::exists("/dev/full")) {
    r = test::run_cli("predict --gpus 1 -o /dev/full");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err, "dlscale: /dev/full: cannot write output file: No space left on device\n");
    const int status =
        std::system((std::string(DLSCALE_CLI) + " predict --gpus 1 >/dev/full 2>" + (dir / "err").string()).c_str());
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 1);
    EXPECT_EQ(test::slurp(dir / "err"), "dlscale: cannot write standard output: No space left on device\n");
  }
  fs::remove_all(dir);
}

// Issue 35: --gpus answers the counts the cluster can place and says on one line which it skipped and why.
TEST(Cli, GpuCountsThatCannotBePlacedAreSkipped) {
  const auto all = run_cli("predict --cluster dgx-a100-hdr --gpus 8,16 --format json");
  const auto some = run_cli("predict --cluster dgx-a100-hdr --gpus 8,12,16,2000 --format json");
  ASSERT_EQ(some.status, 0) << some.err;
  EXPECT_EQ(some.out, all.out);  // the counts it can, as if only they were asked for
  // dgx-a100-hdr: 128 nodes of 8 GPUs
  EXPECT_THAT(some.err,
              HasSubstr("dlscale: warning: --gpus: skipped 2 of 4 counts: 12 GPUs do not fill whole nodes of 8 GPUs on "
                        "cluster 'dgx-a100-hdr'; cluster 'dgx-a100-hdr' holds at most 1024 GPUs (128 nodes × 8), "
                        "asked for 2000\n"));
}

// Issue 35: an imported cluster predicts with pytorch-ddp and storage that does not bind, and says so on the
// first line of every prediction; what the command line gives instead is no longer called assumed.
TEST(Cli, AnImportedClusterSaysWhatItAssumed) {
  const auto yaml = temp_file("imported.yaml", "");
  const std::string xml = std::string(DLSCALE_TEST_DATA_DIR) + "/topo/dgx1v-nccl-topo.xml";
  const auto imp = run_cli("topo import nccl-xml " + xml + " -o " + yaml.string());
  ASSERT_EQ(imp.status, 0) << imp.err;
  const auto r = run_cli("predict --cluster " + yaml.string() + " --gpus 1,8");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')),
            "# dlscale predict: resnet50 on dgx1v-nccl-topo, pytorch-ddp (fp32), batch 32 per GPU; assumed by the cluster file: "
            "framework pytorch-ddp; input synthetic data (the capture names no storage); gpu v100-sxm2 (guessed from SM 70 and 6 "
            "NVLinks per GPU)");
  // synthetic data: no reader time at all, so the I/O column is zero and I/O is never the bottleneck
  const auto j = nlohmann::json::parse(run_cli("predict --cluster " + yaml.string() + " --gpus 8 --format json").out);
  for (const auto& p : j.at("predictions")) {
    EXPECT_EQ(p.at("breakdown").at("io_s").get<double>(), 0.0);
    EXPECT_EQ(p.at("bottleneck").get<std::string>().rfind("io", 0), std::string::npos);
  }
  const auto given =
      run_cli("predict --cluster " + yaml.string() + " --gpus 8 --framework horovod --gpu v100-sxm2 --data synthetic");
  ASSERT_EQ(given.status, 0) << given.err;
  EXPECT_EQ(given.out.substr(0, given.out.find('\n')),
            "# dlscale predict: resnet50 on dgx1v-nccl-topo, horovod (fp32), batch 32 per GPU");
}

// Issue 35: an nccl-tests log cut to its table (no '# Rank' lines, no '# nThread' header) takes the GPU count
// from busbw/algbw when one count fits: the rows' 1.5 = 2(n−1)/n is n = 4, and 3 or 5 GPUs (1.333, 1.6) are
// off by more than the printed digits.
TEST(Cli, ATrimmedNcclTestsLogTakesItsGpuCountFromBusbwOverAlgbw) {
  const std::string table =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
      "     1048576        262144     float     sum      -1    50.00   20.97   31.46       0    50.00   20.97   31.46       0\n"
      "     2097152        524288     float     sum      -1    80.00   26.21   39.32       0    80.00   26.21   39.32       0\n"
      "# Avg bus bandwidth    : 35.39\n";
  const auto log = temp_file("all_reduce_perf.log", table);
  const auto cal = temp_file("trimmed-cal.yaml", "");
  const auto r = run_cli("calibrate import nccl-tests " + log.string() + " -o " + cal.string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(slurp(cal), HasSubstr("gpus: 4\n"));
  EXPECT_THAT(r.err, HasSubstr("taking 4 GPUs, the only count whose busbw/algbw factor (1.5) the rows give"));
}

// Issue 35: -o keeps the rules of a shell redirection. A file the user may not write is left as it is (the
// rename would need only the folder's permission), as an unprivileged user in a folder anyone may write;
// a file the user may write keeps its mode and owner when replaced.
TEST(Cli, OutputKeepsTheRulesOfARedirection) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("dlscale-cli-modes-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::all);  // 0777: the rename into it is allowed to anyone
  const fs::path prot = dir / "protected.txt";
  { std::ofstream(prot) << "mine\n"; }
  fs::permissions(prot, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);  // 0444
  const struct passwd* nobody = ::getpwnam("nobody");
  const bool root = ::geteuid() == 0;
  if (root && !nobody) GTEST_SKIP() << "running as root and no user 'nobody' to drop privileges to";
  // The command as an unprivileged user: as root, in a child that becomes 'nobody'.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (root && (::setgid(nobody->pw_gid) != 0 || ::setuid(nobody->pw_uid) != 0)) ::_exit(100);
    const int err = ::open((dir / "err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (err < 0 || ::dup2(err, 2) < 0) ::_exit(101);
    ::execl(DLSCALE_CLI, DLSCALE_CLI, "predict", "--gpus", "1", "-o", prot.c_str(), static_cast<char*>(nullptr));
    ::_exit(102);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2) << slurp(dir / "err");
  EXPECT_EQ(slurp(dir / "err"), "dlscale: " + prot.string() + ": cannot write output file: Permission denied\n");
  EXPECT_EQ(slurp(prot), "mine\n");
  EXPECT_EQ(fs::status(prot).permissions() & fs::perms::mask, fs::perms(0444));
  std::size_t entries = 0;  // no temporary file left
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 2U);
  if (!root) {
    fs::remove_all(dir);
    GTEST_SKIP() << "the rest needs root: a file of another user that root replaces keeps its mode and owner";
  }
  // Root may write anything (access(W_OK) holds): the file is replaced and keeps its mode 0444 and its
  // owner (here 'nobody'), as `cat >` would leave them.
  ASSERT_EQ(::chown(prot.c_str(), nobody->pw_uid, nobody->pw_gid), 0);
  const auto r = run_cli("predict --gpus 1 -o " + prot.string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(slurp(prot).rfind("# dlscale predict", 0), 0U);
  EXPECT_EQ(fs::status(prot).permissions() & fs::perms::mask, fs::perms(0444));
  struct stat st {};
  ASSERT_EQ(::stat(prot.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, nobody->pw_uid);
  EXPECT_EQ(st.st_gid, nobody->pw_gid);
  fs::remove_all(dir);
}

// ---- issue 35: calibrate fit's two outputs together or not at all ----------------------------------------------

// The parameters (-o) and the report (--report) are both staged beside their targets before either is put in
// place: a report that cannot be written (a directory; a folder the user may not write) leaves the parameters
// file as it was, exit 2 with one line, no temporary file left. As root the folder's permission does not bind,
// so that case runs as 'nobody', as OutputKeepsTheRulesOfARedirection does.
TEST(Cli, FitWritesItsParametersAndReportTogetherOrNeither) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("dlscale-cli-fit-pair-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "report-dir");
  fs::create_directories(dir / "rw");
  fs::create_directories(dir / "ro");
  const fs::path csv = dir / "m.csv";
  { std::ofstream(csv) << "gpu,gpus,precision,model,global_batch,samples_per_s\nv100-sxm2,1,fp32,resnet50,64,300\n"; }
  const fs::path params = dir / "rw" / "params.yaml";
  { std::ofstream(params) << "old\n"; }
  const auto entries = [](const fs::path& d) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(d)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  };
  // the report onto a directory
  const auto r = run_cli("calibrate fit " + csv.string() + " --fixed all -o " + params.string() + " --report " +
                         (dir / "report-dir").string());
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "dlscale: " + (dir / "report-dir").string() + ": cannot write output file: is a directory\n");
  EXPECT_EQ(slurp(params), "old\n");
  EXPECT_EQ(entries(dir / "rw"), std::vector<std::string>{"params.yaml"});
  EXPECT_TRUE(fs::is_empty(dir / "report-dir"));
  // both writable: both written, the report valid JSON
  const fs::path report = dir / "rw" / "report.json";
  const auto ok =
      run_cli("calibrate fit " + csv.string() + " --fixed all -o " + params.string() + " --report " + report.string());
  ASSERT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(slurp(params).rfind("# Kernel-model parameters", 0), 0U) << slurp(params);
  EXPECT_EQ(nlohmann::json::parse(slurp(report)).at("command"), "calibrate fit");
  // the report into a folder the user may not write (0555), the parameters into one anyone may (0777)
  { std::ofstream(params) << "old\n"; }
  fs::remove(report);
  fs::permissions(dir / "rw", fs::perms::all);
  fs::permissions(params, fs::perms(0666));
  fs::permissions(dir / "ro", fs::perms(0555));
  const struct passwd* nobody = ::getpwnam("nobody");
  const bool root = ::geteuid() == 0;
  if (root && !nobody) GTEST_SKIP() << "running as root and no user 'nobody' to drop privileges to";
  const fs::path denied = dir / "ro" / "report.json";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (root && (::setgid(nobody->pw_gid) != 0 || ::setuid(nobody->pw_uid) != 0)) ::_exit(100);
    const int err = ::open((dir / "rw" / "err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (err < 0 || ::dup2(err, 2) < 0) ::_exit(101);
    ::execl(DLSCALE_CLI, DLSCALE_CLI, "calibrate", "fit", csv.c_str(), "--fixed", "all", "-o", params.c_str(), "--report",
            denied.c_str(), static_cast<char*>(nullptr));
    ::_exit(102);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2) << slurp(dir / "rw" / "err");
  EXPECT_EQ(slurp(dir / "rw" / "err"), "dlscale: " + denied.string() + ": cannot write output file: Permission denied\n");
  EXPECT_EQ(slurp(params), "old\n");
  EXPECT_EQ(entries(dir / "rw"), (std::vector<std::string>{"err", "params.yaml"}));  // no temporary left
  EXPECT_TRUE(fs::is_empty(dir / "ro"));
  fs::permissions(dir / "ro", fs::perms::owner_all);
  fs::remove_all(dir);
}

// ---- issue 35: --explain-sources in the JSON document ---------------------------------------------------------

/// The "#   name: value (source)" lines of a table run's stderr.
std::vector<std::string> source_lines(const std::string& err) {
  std::vector<std::string> lines;
  std::istringstream in(err);
  bool in_block = false;
  for (std::string line; std::getline(in, line);) {
    if (line == "# sources (--explain-sources)") in_block = true;
    else if (in_block && line.rfind("#   ", 0) == 0) lines.push_back(line.substr(4));
    else in_block = false;
  }
  return lines;
}

// With --format json the sources are the document's "sources" ({name, value, source}, the value a string with
// its unit) and stderr stays quiet; the table's stderr lines say the same entries. The values are checked
// against their files: PyTorch DDP under AMP exchanges fp32 gradients (4 B), CNTK's jitter_cv 0.0635 and the
// P40's fp32 peak in topologies/gpus.yaml.
TEST(Cli, ExplainSourcesGoIntoTheJsonDocument) {
  const std::string q =
      "predict --cluster dgx-a100 --framework pytorch-ddp --precision fp16 --gpus 8 --no-train --explain-sources";
  const auto table = run_cli(q);
  const auto json = run_cli(q + " --format json");
  ASSERT_EQ(table.status, 0) << table.err;
  ASSERT_EQ(json.status, 0) << json.err;
  EXPECT_EQ(json.err, "");
  const auto j = nlohmann::json::parse(json.out);
  std::vector<std::string> from_json;
  for (const auto& s : j.at("sources"))
    from_json.push_back(fmt::format("{}: {} ({})", s.at("name").get<std::string>(), s.at("value").get<std::string>(),
                                    s.at("source").get<std::string>()));
  EXPECT_EQ(from_json, source_lines(table.err));
  const auto entry = [](const nlohmann::json& doc, const std::string& name) {
    for (const auto& s : doc.at("sources"))
      if (s.at("name") == name) return s;
    ADD_FAILURE() << "no source named " << name;
    return nlohmann::json::object();
  };
  EXPECT_EQ(entry(j, "gradients exchanged").at("value"), "4 B per parameter");
  EXPECT_EQ(entry(j, "optimizer").at("value"), "momentum");
  // without --explain-sources no "sources" at all (the goldens' documents are unchanged)
  const auto plain =
      run_cli("predict --cluster dgx-a100 --framework pytorch-ddp --precision fp16 --gpus 8 --no-train --format json");
  ASSERT_EQ(plain.status, 0) << plain.err;
  EXPECT_FALSE(nlohmann::json::parse(plain.out).contains("sources"));
  // simulate and explain carry them the same way; explain's document is otherwise the one without them
  const std::string cntk = " --profile worked-example-cntk-alexnet --gpus 2 --format json";
  const auto sim = run_cli("simulate --iterations 2" + cntk + " --explain-sources");
  ASSERT_EQ(sim.status, 0) << sim.err;
  EXPECT_EQ(sim.err, "");
  EXPECT_EQ(entry(nlohmann::json::parse(sim.out), "jitter_cv").at("value"), "0.0635");
  const auto ex = run_cli("explain" + cntk + " --explain-sources");
  const auto ex_plain = run_cli("explain" + cntk);
  ASSERT_EQ(ex.status, 0) << ex.err;
  ASSERT_EQ(ex_plain.status, 0) << ex_plain.err;
  EXPECT_EQ(ex.err, "");
  auto e = nlohmann::ordered_json::parse(ex.out);
  EXPECT_EQ(entry(e, "jitter_cv").at("source"), "framework 'cntk'; the expected wait for the slowest GPU");
  e.erase("sources");
  EXPECT_EQ(e.dump(2) + "\n", ex_plain.out);
  const auto p40 =
      run_cli("predict --cluster shi-chu-p40 --model alexnet --framework cntk --gpus 1 --format json --explain-sources");
  ASSERT_EQ(p40.status, 0) << p40.err;
  EXPECT_EQ(entry(nlohmann::json::parse(p40.out), "peak_fp32").at("value"), "10.01 TFLOPS");
}

// ---- issue 35: the unit in every numeric key ------------------------------------------------------------------

// One convention across every JSON and CSV the program writes (README, "Output keys and units"): a numeric
// value's key ends in its unit, or names a dimensionless quantity of this explicit list.
bool dimensionless_key(const std::string& key) {
  static const std::set<std::string> kDimensionless{
      // versions, indices and counts
      "schema", "gpus", "nodes", "gpus_per_node", "gpus_per_thread", "nics_per_node", "cores", "gpu", "rank", "root", "stage",
      "stages", "chunks", "replicas", "first_layer", "last_layer", "boundary_layer", "slowest_stage", "hiding_case", "count",
      "count_elements", "channels", "nvlinks", "hops", "flows", "pcie_generation", "pcie_lanes", "groups", "per_node", "batch",
      "batch_per_gpu", "global_batch", "micro_batch", "micro_batches", "accumulate", "largest_batch", "shard_group", "tp", "pp",
      "vp", "cp", "dp", "ep", "zero", "recompute_num_layers", "tokens_per_step", "iterations", "events", "steps",
      "train_iterations", "evaluated", "fit", "out_of_memory", "invalid", "offload_skipped", "stage_skipped", "leaders",
      "full_recompute_leaders", "near_misses", "timed", "improved", "params", "macs", "flops", "macs_per_sample",
      "flops_per_sample", "output_shape", "shape", "input_shape",
      "size",  // a process group's size in ranks (plan --parallel's and explain's "groups")
      // ratios, fractions and efficiencies
      "speedup", "efficiency", "mfu", "hfu", "share", "bottleneck_share", "bottleneck_gain", "nic_share", "reader_loss_share",
      "throughput_gain", "best_gain", "slower", "busy_mean", "busy_max", "stage_busy", "jitter_cv", "allreduce_efficiency",
      "r_u2g", "rms_log_error", "tensor_efficiency", "vector_efficiency", "conv_efficiency", "memory_efficiency", "winograd_gain",
      "operand_feed"};
  return kDimensionless.count(key) > 0;
}

/// The key names its unit: a unit (`hours`) or `_UNIT` at its end, with `_per_gpu` or `_per_sample` after it;
/// lower case, and a rate per second spelt `_per_s` (`_gb_per_s`, not `_gb_s` or `_GBps`).
bool unit_key(const std::string& key) {
  static const std::regex kUnit("^(.*_)?(s|hours|bytes|gb|gb_per_s|per_s|percent)(_per_(gpu|sample))?$");
  static const std::regex kRateWithoutPer("^(.*_)?(b|kb|mb|gb|tb|gib|bytes|flops|tflops|samples|tokens)_s$");
  static const std::regex kLowerCase("^[a-z0-9_]+$");
  return std::regex_match(key, kLowerCase) && std::regex_match(key, kUnit) && !std::regex_match(key, kRateWithoutPer);
}

bool is_number(const nlohmann::json& v) { return v.is_number(); }

/// Every key below `j` whose value is a number (or a list of numbers) and that names neither a unit nor a
/// dimensionless quantity, with its path. An object named by a unit (error_percent) holds one value per
/// quantity in that unit: its keys are the quantities' names.
void unitless_keys(const nlohmann::json& j, const std::string& path, std::set<std::string>& bad) {
  if (j.is_array()) {
    for (const auto& e : j) unitless_keys(e, path + "[]", bad);
    return;
  }
  if (!j.is_object()) return;
  for (const auto& [key, value] : j.items()) {
    const bool numbers =
        is_number(value) || (value.is_array() && !value.empty() && std::all_of(value.begin(), value.end(), is_number));
    if (numbers && !unit_key(key) && !dimensionless_key(key)) bad.insert(path + "." + key);
    if (value.is_object() && unit_key(key)) continue;  // quantity -> value in the unit its key names
    unitless_keys(value, path + "." + key, bad);
  }
}

TEST(OutputKeys, EveryNumberInTheGoldenDocumentsHasItsUnitInItsKey) {
  namespace fs = std::filesystem;
  std::set<std::string> bad;
  std::size_t documents = 0;
  for (const auto& e : fs::directory_iterator(fs::path(DLSCALE_SOURCE_DIR) / "tests" / "golden")) {
    const std::string name = e.path().filename().string();
    // the Chrome trace-event format fixes its own keys (ts and dur in microseconds, pid, tid)
    if (name.ends_with("-trace.json")) continue;
    if (name.ends_with(".json")) {
      unitless_keys(nlohmann::json::parse(slurp(e.path())), name, bad);
      ++documents;
    } else if (name.ends_with(".jsonl")) {
      std::istringstream lines(slurp(e.path()));
      for (std::string line; std::getline(lines, line);)
        if (!line.empty()) {
          unitless_keys(nlohmann::json::parse(line), name, bad);
          ++documents;
        }
    }
  }
  EXPECT_GE(documents, 8u);
  EXPECT_TRUE(bad.empty()) << ::testing::PrintToString(bad);
  // the checks themselves: a unit-less number fails, a unit or a listed ratio passes
  std::set<std::string> probe;
  unitless_keys(
      nlohmann::json::parse(R"({"algbw_gb_s": 1, "bytes_moved": 2, "busbw_gb_per_s": 3, "mfu": 0.5, "x": [1, 2], "algbw_GBps": 4,
                                          "error_percent": {"time_s": 5}, "t": {"forward_s": 6}})"),
      "", probe);
  EXPECT_EQ(probe, (std::set<std::string>{".algbw_gb_s", ".bytes_moved", ".x", ".algbw_GBps"}));
}

/// The numeric columns of a CSV block (header, then rows) whose names are neither units nor listed.
void unitless_columns(const std::string& csv, const std::string& what, std::set<std::string>& bad) {
  std::istringstream in(csv);
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  const auto split = [](const std::string& line) {
    std::vector<std::string> f;
    std::istringstream cells(line);
    for (std::string c; std::getline(cells, c, ',');) f.push_back(c);
    return f;
  };
  const auto names = split(header), values = split(row);
  for (std::size_t i = 0; i < names.size() && i < values.size(); ++i) {
    char* end = nullptr;
    (void)std::strtod(values[i].c_str(), &end);
    const bool number = !values[i].empty() && end == values[i].c_str() + values[i].size();
    if (number && !unit_key(names[i]) && !dimensionless_key(names[i])) bad.insert(what + ": " + names[i]);
  }
}

// The documents no golden holds (model list and show, reproduce, calibrate fit's report, a layout's predict and
// explain, predict with its sources) and every CSV, by the same rule.
TEST(OutputKeys, DocumentsWithoutAGoldenAndEveryCsvFollowTheSameRule) {
  std::set<std::string> bad;
  const std::string layout =
      " --cluster dgx-h100-ndr --nodes 2 --model llama3-8b --framework megatron-core --gpus 16 --tp 2 --sp --pp 2 --batch 1 "
      "--micro-batches 8 --format json";
  for (const std::string& q : {std::string("model list --format json"),
                               std::string("model show llama2-7b --gpu h100-sxm --batch 1 --kernels --format json"),
                               std::string("reproduce all --format json"), "predict" + layout, "explain" + layout,
                               std::string("plan --cluster dgx-h100-ndr --model llama2-7b --gpus 16 --top 2 --format json"),
                               std::string("predict --cluster dgx-a100 --gpus 8 --format json --explain-sources")}) {
    const auto r = run_cli(q);
    ASSERT_EQ(r.status, 0) << q << ": " << r.err;
    unitless_keys(nlohmann::json::parse(r.out), q, bad);
  }
  const std::string csv = temp_file("keys.csv",
                                    "gpu,gpus,precision,model,global_batch,samples_per_s\n"
                                    "v100-sxm2,1,fp32,resnet50,64,300\n");
  const std::string report = temp_file("keys-report.json", "");
  const auto fit = run_cli("calibrate fit " + csv + " --fixed all -o /dev/null --report " + report);
  ASSERT_EQ(fit.status, 0) << fit.err;
  unitless_keys(nlohmann::json::parse(slurp(report)), "calibrate fit --report", bad);
  for (const std::string& q : {std::string("predict --format csv"), std::string("simulate --iterations 2 --format csv"),
                               "predict" + layout.substr(0, layout.size() - 4) + "csv"}) {
    const auto r = run_cli(q);
    ASSERT_EQ(r.status, 0) << q << ": " << r.err;
    unitless_columns(r.out, q, bad);
  }
  const auto repro = run_cli("reproduce all --format csv");  // the runs, then after an empty line the bus bandwidths
  ASSERT_EQ(repro.status, 0) << repro.err;
  const auto gap = repro.out.find("\n\n");
  ASSERT_NE(gap, std::string::npos);
  unitless_columns(repro.out.substr(0, gap + 1), "reproduce csv", bad);
  unitless_columns(repro.out.substr(gap + 2), "reproduce csv, bus bandwidth", bad);
  unitless_columns(slurp(std::string(DLSCALE_SOURCE_DIR) + "/tests/golden/sweep-small.csv"), "sweep-small.csv", bad);
  EXPECT_TRUE(bad.empty()) << ::testing::PrintToString(bad);
}

}  // namespace
}  // namespace dlscale
