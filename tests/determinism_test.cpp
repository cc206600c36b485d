// Determinism (issue 9, item 5): the same inputs and seed give byte-identical outputs, run after run and
// across thread counts. Every command that produces output runs several times as separate processes
// (so with different address-space layouts: an order that follows pointers, or an unordered container's
// iteration, shows up as a difference) and its stdout and every file it writes are compared byte for byte.
//
// The one date in dlscale's outputs, the provenance of `calibrate import`, follows SOURCE_DATE_EPOCH
// (reproducible-builds.org); its host is this machine's name, the same for every run here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "support/run.hpp"

namespace dlscale {
namespace {
namespace fs = std::filesystem;
using test::run_cli;
using test::slurp;

const std::string kSrc = DLSCALE_SOURCE_DIR;
const std::string kData = kSrc + "/tests/data";

fs::path work_dir() {
  static const fs::path dir = [] {
    const fs::path d = fs::temp_directory_path() / ("dlscale-determinism-" + std::to_string(::getpid()));
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

/// Removes the work folder when the test program ends.
class CleanUp : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(work_dir(), ec);
  }
};
[[maybe_unused]] ::testing::Environment* const kCleanUp = ::testing::AddGlobalTestEnvironment(new CleanUp);

/// What one run produced: its stdout and every file under the output folder (path relative to it).
struct Outputs {
  int status = -1;
  std::string out, err;
  std::map<std::string, std::string> files;
};

/// Runs `args` ({out} = a fresh, empty output folder that is the same path for every run, so that the
/// command line recorded in outputs is the same too) and collects what it wrote.
Outputs run_once(const std::string& args) {
  const fs::path out = work_dir() / "out";
  fs::remove_all(out);
  fs::create_directories(out);
  std::string cmd = args;
  for (auto pos = cmd.find("{out}"); pos != std::string::npos; pos = cmd.find("{out}", pos)) cmd.replace(pos, 5, out.string());
  const auto r = run_cli(cmd);
  Outputs o{r.status, r.out, r.err, {}};
  for (const auto& e : fs::recursive_directory_iterator(out))
    if (e.is_regular_file()) o.files[fs::relative(e.path(), out).string()] = slurp(e.path());
  return o;
}

/// The first difference between two texts, for a readable failure.
std::string first_difference(const std::string& a, const std::string& b) {
  const auto m = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  const auto at = static_cast<std::size_t>(m.first - a.begin());
  const std::size_t from = at > 60 ? at - 60 : 0;
  return "at byte " + std::to_string(at) + ":\n  first:  ..." + a.substr(from, 120) + "\n  second: ..." + b.substr(from, 120);
}

void expect_same(const Outputs& a, const Outputs& b, const std::string& what) {
  EXPECT_EQ(a.status, b.status) << what;
  EXPECT_TRUE(a.out == b.out) << what << ": stdout differs " << first_difference(a.out, b.out);
  ASSERT_EQ(a.files.size(), b.files.size()) << what;
  for (const auto& [name, text] : a.files) {
    const auto it = b.files.find(name);
    ASSERT_NE(it, b.files.end()) << what << ": " << name << " written once only";
    EXPECT_TRUE(text == it->second) << what << ": " << name << " differs " << first_difference(text, it->second);
  }
}

/// Runs `args` `times` times and checks that every run succeeded and gave the same bytes as the first.
Outputs expect_repeatable(const std::string& args, int times = 2) {
  SCOPED_TRACE("dlscale " + args);
  const Outputs first = run_once(args);
  EXPECT_EQ(first.status, 0) << first.err;
  EXPECT_FALSE(first.out.empty() && first.files.empty()) << "the command produced nothing";
  for (int i = 1; i < times; ++i) expect_same(first, run_once(args), "run " + std::to_string(i + 1));
  return first;
}

/// Sets an environment variable for the runs of one test (children inherit it) and restores it after.
class Env {
 public:
  Env(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~Env() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// ---- predict -----------------------------------------------------------------------------------------
TEST(Determinism, PredictTableJsonCsv) {
  for (const char* format : {"table", "json", "csv"}) {
    // the paper's cluster (alpha-beta model) and a topology cluster (NCCL's model), bucketed overlap
    expect_repeatable(std::string("predict --format ") + format);
    expect_repeatable(std::string("predict --cluster dgx-a100-hdr --model bert-base --framework pytorch-ddp --batch 16 "
                                  "--precision fp16 --gpus 1,2,8,16,64 --format ") +
                      format);
  }
  expect_repeatable("predict --profile worked-example-cntk-alexnet --gpus 1,2,4,8,16 --format json -o {out}/p.json");
}

TEST(Determinism, PredictWithCalibrationAndExplainedSources) {
  expect_repeatable("predict --cluster " + kData + "/calibration/cluster-a100x8.yaml --model " + kData +
                    "/calibration/tiny-net.yaml --batch 32 --gpus 1,2,4,8 --format json --explain-sources --calibration " +
                    kData + "/calibration/tiny-net-layers-a100.yaml");
}

// ---- simulate: random streams from --seed, stragglers, contention, a trace ---------------------------------
TEST(Determinism, SimulateWithSeedJitterAndStragglers) {
  const std::string base =
      "simulate --cluster dgx1v --model resnet50 --framework pytorch-ddp --gpus 1,4,8,16 --iterations 6 --seed 42 "
      "--jitter 0.1 --link-jitter 0.05 --speed 3=0.5 --contention --channels 2 ";
  for (const char* format : {"table", "csv"}) expect_repeatable(base + "--format " + format, 2);
  expect_repeatable(base + "--merge best --format json -o {out}/sim.json --trace {out}/trace.json");
  // the seed matters: another seed gives other iteration times (so the runs above did draw random numbers)
  const Outputs a = run_once(base + "--format json");
  const Outputs b = run_once(
      "simulate --cluster dgx1v --model resnet50 --framework pytorch-ddp --gpus 1,4,8,16 --iterations 6 "
      "--seed 43 --jitter 0.1 --link-jitter 0.05 --speed 3=0.5 --contention --channels 2 --format json");
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_NE(a.out.substr(a.out.find("\"simulation\"")), b.out.substr(b.out.find("\"simulation\"")));
}

TEST(Determinism, SimulateHorovodAndParameterServer) {
  expect_repeatable(
      "simulate --cluster shi-chu-p40 --model vgg16 --framework horovod --gpus 2,8,16 --iterations 4 --seed 7 "
      "--jitter 0.2 --readers 2 --decode \"2 ms\" --node-gpu 1=p40-base-clock --format json");
  // (one node: across nodes MXNet's ps-lite transport is not a flow the contention model has)
  expect_repeatable(
      "simulate --cluster shi-chu-p40 --model alexnet --framework mxnet --gpus 2,4 --iterations 4 --seed 3 "
      "--link-jitter 0.3 --contention");
}

// ---- collective, topo, model ------------------------------------------------------------------------------
TEST(Determinism, Collective) {
  for (const char* op : {"allreduce", "allgather", "broadcast"}) {
    expect_repeatable(std::string("collective --cluster dgx-a100-hdr --gpus 16 --op ") + op + " --sweep 8B:1GiB");
    expect_repeatable(std::string("collective --cluster dgx1v --gpus 8 --op ") + op + " --sweep 1KiB:256MiB --format json");
  }
  expect_repeatable("collective --cluster ac922 --gpus 4 --bytes 64MiB --format json -o {out}/c.json");
}

TEST(Determinism, TopoShowAndImport) {
  for (const char* c : {"dgx1v", "dgx2", "dgx-h100-ndr", "ac922", "dell-c4140-pcie"}) {
    expect_repeatable(std::string("topo show ") + c);
    expect_repeatable(std::string("topo show ") + c + " --bandwidth -o {out}/t.txt");
    expect_repeatable(std::string("topo show ") + c + " --format json -o {out}/t.json");
  }
  expect_repeatable("topo import nvidia-smi " + kData + "/topo/dgx1v-nvidia-smi.txt -o {out}/smi.yaml");
  expect_repeatable("topo import nccl-xml " + kData + "/topo/dgx1v-nccl-topo.xml -o {out}/xml.yaml");
}

TEST(Determinism, ModelListShowExport) {
  expect_repeatable("model list");
  expect_repeatable("model list --format json");
  expect_repeatable("model list --format json -o {out}/list.json");
  expect_repeatable("model show resnet50 --gpu v100-sxm2 --batch 64 --kernels --format json");
  expect_repeatable("model show resnet50 --gpu v100-sxm2 --batch 64");
  expect_repeatable("model show gpt2 --gpu a100-sxm4-40gb --precision fp16 --format json -o {out}/gpt2.json");
  // every architecture into a fresh folder: the same files, the same bytes
  const Outputs all = expect_repeatable("model export all --dir {out}", 2);
  EXPECT_GE(all.files.size(), 17u);
}

// ---- sweep: across runs and across thread counts --------------------------------------------------------
TEST(Determinism, SweepAcrossThreadCounts) {
  const std::string spec = kData + "/plan/sweep-small.yaml";
  for (const char* format : {"csv", "jsonl"}) {
    SCOPED_TRACE(format);
    std::optional<Outputs> reference;
    for (const char* threads : {"1", "2", "7"}) {
      const Outputs o =
          expect_repeatable("sweep --spec " + spec + " --format " + format + " --threads " + threads + " -o {out}/sweep", 2);
      if (!reference) reference = o;
      else expect_same(*reference, o, std::string("--threads ") + threads + " against --threads 1");
    }
  }
  // ranked (ties broken the same way whatever the threads)
  std::optional<Outputs> top;
  for (const char* threads : {"1", "2", "7"}) {
    const Outputs o = run_once("sweep --spec " + spec + " --top 7 --by efficiency --threads " + std::string(threads));
    ASSERT_EQ(o.status, 0) << o.err;
    if (!top) top = o;
    else expect_same(*top, o, std::string("--top 7 with --threads ") + threads);
  }
}

TEST(Determinism, SimulatedSweepAcrossThreadCounts) {
  const std::string spec = kData + "/plan/sweep-small.yaml";
  const Outputs one = run_once("sweep --spec " + spec + " --simulate --format jsonl --threads 1");
  ASSERT_EQ(one.status, 0) << one.err;
  for (const char* threads : {"2", "7"})
    expect_same(one, run_once("sweep --spec " + spec + " --simulate --format jsonl --threads " + std::string(threads)),
                std::string("--simulate --threads ") + threads);
}

// ---- explain, report, reproduce -------------------------------------------------------------------------------
TEST(Determinism, Explain) {
  expect_repeatable("explain --gpus 16 --target 80%");
  expect_repeatable(
      "explain --cluster dgx-a100-hdr --model gpt2 --framework pytorch-ddp --batch 8 --gpus 32 --target 0.9 "
      "-o {out}/explain.txt");
}

TEST(Determinism, HtmlReport) {
  expect_repeatable("report --gpus 1,2,4,8,16 -o {out}/report.html", 2);
  expect_repeatable("report --cluster dgx1v --model resnet50 --framework pytorch-ddp --gpus 1,8 -o {out}/dgx1v.html", 2);
}

TEST(Determinism, ReproduceWithPlots) {
  const Outputs all = expect_repeatable("reproduce all --format json -o {out}/all.json --plots {out}/plots", 2);
  EXPECT_GE(all.files.size(), 3u);  // the JSON and at least two figures
  expect_repeatable("reproduce dgx2-comparison --format csv", 2);
}

// ---- calibrate import ---------------------------------------------------------------------------------------
TEST(Determinism, CalibrateImportWithSourceDateEpoch) {
  const Env epoch("SOURCE_DATE_EPOCH", "1700000000");
  const Outputs nccl = expect_repeatable("calibrate import nccl-tests " + kData + "/calibration/all_reduce_perf-a100x8.log " +
                                         kData + "/calibration/all_reduce_perf-a100-2and4.log " + kData +
                                         "/calibration/all_gather_perf-a100x8.log -o {out}/nccl.yaml");
  // 1700000000 s after 1970-01-01T00:00:00Z: 19675 days (= 2023-11-14) and 80000 s (= 22:13:20)
  EXPECT_NE(nccl.files.at("nccl.yaml").find("date: \"2023-11-14T22:13:20Z\""), std::string::npos) << nccl.files.at("nccl.yaml");
  expect_repeatable("calibrate import nccl-tests " + kData + "/calibration/all_reduce_perf-v100-old.log");
  const Outputs nv =
      expect_repeatable("calibrate import nvbandwidth " + kData + "/calibration/nvbandwidth-h100x2.json -o {out}/nv.yaml");
  EXPECT_NE(nv.files.at("nv.yaml").find("date: \"2023-11-14T22:13:20Z\""), std::string::npos);
}

TEST(Determinism, SourceDateEpochMustBeANumber) {
  const Env epoch("SOURCE_DATE_EPOCH", "yesterday");
  const auto r = run_cli("calibrate import nvbandwidth " + kData + "/calibration/nvbandwidth-h100x2.json");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "dlscale: 'SOURCE_DATE_EPOCH': 'yesterday' is not a number of seconds since 1970-01-01\n");
}

}  // namespace
}  // namespace dlscale
