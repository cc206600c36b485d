// The library as a package: install this build into a fresh temporary prefix, configure and build
// examples/plan-dgx2 against it with find_package(dlscale), run it, and compare its answer with the
// same question asked of the library in this process (a plain loop over Predictor); the same for
// examples/scenario-in-memory (validate's error and the rows) and examples/simulate (its closed-form
// column against Predictor here).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include <sstream>

#include "dlscale/io.hpp"
#include "dlscale/predict.hpp"
#include "support/run.hpp"

namespace dlscale {

/// Under the asan preset the installed library is instrumented, so the example must link the same runtime.
std::string sanitize_flags() {
#ifdef DLSCALE_SANITIZE_FLAGS
  return " -DCMAKE_CXX_FLAGS=" DLSCALE_SANITIZE_FLAGS " -DCMAKE_EXE_LINKER_FLAGS=" DLSCALE_SANITIZE_FLAGS;
#else
  return "";
#endif
}
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

int sh(const std::string& cmd, const fs::path& log) {
  const int rc = std::system((cmd + " >>" + log.string() + " 2>&1").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/// The reference: the smallest node count whose throughput reaches `target`, and its efficiency.
std::string expected_answer(const std::string& cluster, double target, double min_eff) {
  Scenario sc;
  sc.cluster = load_cluster(resolve(DataKind::cluster, cluster, "cluster"));
  sc.network = load_network(resolve(DataKind::network, "resnet50", "model"));
  sc.strategy = load_strategy(resolve(DataKind::framework, "pytorch-ddp", "framework"));
  sc.batch_per_gpu = 64;
  sc.compute.precision = Precision::fp16;
  const Predictor p(sc);
  for (int n = 1; n <= sc.cluster.max_nodes; ++n) {
    const Prediction r = p.predict(n * sc.cluster.gpus_per_node);
    if (r.throughput_samples_per_s >= target) {
      char buf[200];
      if (r.efficiency >= min_eff) std::snprintf(buf, sizeof buf, "answer: %d node%s (%d GPUs)", n, n > 1 ? "s" : "", r.gpus);
      else std::snprintf(buf, sizeof buf, "answer: none: %d nodes reach", n);
      return buf;
    }
  }
  return "answer: none: the cluster's";
}

TEST(Package, InstalledTreeBuildsAndRunsThePlanningExample) {
  const fs::path build = fs::path(DLSCALE_CLI).parent_path().parent_path();
  const fs::path tmp = fs::temp_directory_path() / ("dlscale-package-" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  const fs::path prefix = tmp / "prefix", ex = tmp / "example", log = tmp / "log.txt";
  ASSERT_EQ(sh("cmake --install " + build.string() + " --prefix " + prefix.string(), log), 0) << test::slurp(log);
  // What the package holds
  EXPECT_TRUE(fs::exists(prefix / "include/dlscale/predict.hpp"));
  EXPECT_TRUE(fs::exists(prefix / "include/dlscale/sweep.hpp"));
  EXPECT_TRUE(fs::exists(prefix / "share/dlscale/models/resnet50.yaml"));
  EXPECT_TRUE(fs::exists(prefix / "share/dlscale/topologies/shi-chu-p40.yaml"));
  bool config = false;
  for (const auto& e : fs::recursive_directory_iterator(prefix)) config = config || e.path().filename() == "dlscaleConfig.cmake";
  EXPECT_TRUE(config);

  ASSERT_EQ(sh("cmake -S " + std::string(DLSCALE_SOURCE_DIR) + "/examples/plan-dgx2 -B " + ex.string() +
                   " -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=" + prefix.string() + sanitize_flags(),
               log),
            0)
      << test::slurp(log);
  ASSERT_EQ(sh("cmake --build " + ex.string(), log), 0) << test::slurp(log);

  // Run it with the installed data only, which it names itself: DLSCALE_DATA_DIR points at a folder that
  // holds nothing, so a file's references (the GPU catalogue, ...) must resolve in the folder the file lies
  // in. On the DGX-2 (one node), and on a multi-node cluster given on the command line.
  const fs::path no_data = tmp / "no-data";
  fs::create_directories(no_data);
  const std::string no_data_env = "env DLSCALE_DATA_DIR=" + no_data.string();
  for (const std::string cluster : {"dgx2", "dgx-a100-hdr"}) {
    const fs::path out = tmp / (cluster + ".out");
    const int rc =
        std::system((no_data_env + " " + (ex / "plan-dgx2").string() + " " + cluster + " >" + out.string() + " 2>&1").c_str());
    const std::string text = test::slurp(out);
    EXPECT_EQ(WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, 0) << text;
    EXPECT_THAT(text, HasSubstr(expected_answer(cluster, 20000, 0.80))) << text;
  }

  // The other two examples, built against the same prefix and run with its data only.
  const auto build_and_run = [&](const std::string& name, std::string& text, const std::string& env = "env -u DLSCALE_DATA_DIR") {
    const fs::path dir = tmp / name;
    ASSERT_EQ(sh("cmake -S " + std::string(DLSCALE_SOURCE_DIR) + "/examples/" + name + " -B " + dir.string() +
                     " -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=" + prefix.string() + sanitize_flags(),
                 log),
              0)
        << test::slurp(log);
    ASSERT_EQ(sh("cmake --build " + dir.string(), log), 0) << test::slurp(log);
    const fs::path out = tmp / (name + ".out");
    const int rc = std::system((env + " " + (dir / name).string() + " >" + out.string() + " 2>&1").c_str());
    text = test::slurp(out);
    EXPECT_EQ(WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, 0) << text;
  };
  // A scenario written in code needs no data file at all (the kernel-model parameters are built in): run with a
  // data folder that holds nothing, where any read of one would fail.
  std::string memory;
  build_and_run("scenario-in-memory", memory, no_data_env);
  EXPECT_THAT(memory, HasSubstr("validate: field 'batch_per_gpu': the batch per GPU must be at least 1, got 0\n"));
  // 4 nodes of 8 GPUs: 1, 2, 4, 8 in a node, then whole nodes; one GPU is its own baseline
  std::vector<int> rows;
  std::istringstream lines(memory);
  for (std::string line; std::getline(lines, line);) {
    int g = 0;
    double rate = 0.0, eff = 0.0;
    if (std::sscanf(line.c_str(), "%d %lf %lf%%", &g, &rate, &eff) == 3) {
      rows.push_back(g);
      if (g == 1) {
        EXPECT_DOUBLE_EQ(eff, 100.0) << line;
      }
    }
  }
  EXPECT_EQ(rows, (std::vector<int>{1, 2, 4, 8, 16, 24, 32})) << memory;

  std::string simulated;
  build_and_run("simulate", simulated, no_data_env);
  EXPECT_THAT(simulated, HasSubstr("Simulator: field 'iterations': at least one iteration must be simulated\n"));
  Scenario sc;  // the example's defaults: ResNet-50, batch 64, fp16, PyTorch DDP on a DGX-1V
  sc.cluster = load_cluster(resolve(DataKind::cluster, "dgx1v", "cluster"));
  sc.network = load_network(resolve(DataKind::network, "resnet50", "model"));
  sc.strategy = load_strategy(resolve(DataKind::framework, "pytorch-ddp", "framework"));
  sc.batch_per_gpu = 64;
  sc.compute.precision = Precision::fp16;
  const Predictor closed(sc);
  for (int g : {1, 8}) {
    const std::string row = fmt::format("{:6d} {:11.2f} ms ", g, 1e3 * in_seconds(closed.predict(g).iteration_time));
    EXPECT_THAT(simulated, HasSubstr("\n" + row)) << simulated;
  }
  fs::remove_all(tmp);
}

}  // namespace
}  // namespace dlscale
