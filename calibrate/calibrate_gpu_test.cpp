// Tests of dlscale-calibrate itself (label `gpu`). Each checks first whether the CUDA runtime sees a GPU
// and skips, saying why, when the case does not apply: without a GPU only the "exit 3, one line, nothing
// written" contract is testable; with one, a --quick run must write a calibration that dlscale reads.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "dlscale/calibration.hpp"
#include "dlscale/format.hpp"

namespace {
namespace fs = std::filesystem;

int usable_gpus() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

struct Result {
  int status = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

fs::path fresh_dir(const std::string& name) {
  const auto d = fs::temp_directory_path() / ("dlscale-calibrate-test-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

Result run(const std::string& args, const fs::path& logs) {
  const auto out = logs / "stdout.txt", err = logs / "stderr.txt";
  const std::string cmd = std::string(DLSCALE_CALIBRATE) + " " + args + " >" + out.string() + " 2>" + err.string();
  const int rc = std::system(cmd.c_str());
  Result r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

TEST(CalibrateWithoutGpu, ExitsThreeWithOneLineAndWritesNothing) {
  if (usable_gpus() > 0) GTEST_SKIP() << "a GPU is usable here: the no-GPU contract cannot be observed";
  const auto logs = fresh_dir("logs");
  const auto outdir = fresh_dir("out");
  const Result r = run("--quick --out " + (outdir / "cal.yaml").string(), logs);
  EXPECT_EQ(r.status, 3);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("no usable GPU"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_empty(outdir)) << "dlscale-calibrate wrote something without a GPU";
}

TEST(CalibrateOnGpu, QuickRunWritesACalibrationThatDlscaleReads) {
  if (usable_gpus() == 0) GTEST_SKIP() << "no usable GPU (cudaGetDeviceCount): nothing to measure";
  const auto logs = fresh_dir("gpu-logs");
  const auto outdir = fresh_dir("gpu-out");
  const fs::path file = outdir / "cal.yaml";
  const Result r = run("--quick --out " + file.string(), logs);
  ASSERT_EQ(r.status, 0) << r.err;
  const dlscale::Calibration cal = dlscale::load_calibration(file);
  ASSERT_FALSE(cal.devices.empty());
  EXPECT_FALSE(cal.provenance.cuda.empty());
  EXPECT_TRUE(fs::exists(outdir / cal.raw_samples));
  // Plausibility, not values: a PCIe/C2C host copy moves between 1 and 1000 GB/s, fp32 GEMM beats 1 TFLOPS.
  const auto* h2d = cal.find_transfer(dlscale::TransferKind::h2d_pinned);
  ASSERT_NE(h2d, nullptr);
  EXPECT_GT(dlscale::in_gigabytes_per_second(h2d->peak()), 1.0);
  EXPECT_LT(dlscale::in_gigabytes_per_second(h2d->peak()), 1000.0);
  bool fp32 = false;
  for (const auto& g : cal.gemm)
    if (g.precision == "fp32") fp32 = dlscale::in_teraflops_per_second(g.rate) > 1.0;
  EXPECT_TRUE(fp32);
  ASSERT_FALSE(cal.layers.empty());
  std::size_t measured = 0;
  for (const auto& l : cal.layers.front().layers) measured += l.forward ? 1 : 0;
  EXPECT_GT(measured, cal.layers.front().layers.size() / 2);
}

}  // namespace
