// The text entry points (parse_cluster, parse_network, parse_strategy, parse_profile, parse_calibration,
// parse_nvbandwidth) read exactly what the file loaders read and fail with the same one-line message,
// the display name standing where the path stood; and the GPU catalogue cache follows the file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "dlscale/calibration.hpp"
#include "dlscale/error.hpp"
#include "dlscale/io.hpp"
#include "dlscale/topology.hpp"
#include "support/data_dir.hpp"
#include "support/run.hpp"

namespace dlscale {
namespace {

namespace fs = std::filesystem;
using test::slurp;
using test::temp_file;
using ::testing::HasSubstr;

/// The message of the dlscale::Error that `f` throws ("" if it throws none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

/// `message` with every occurrence of `from` replaced by `to`.
std::string replaced(std::string message, const std::string& from, const std::string& to) {
  for (auto pos = message.find(from); pos != std::string::npos; pos = message.find(from, pos + to.size()))
    message.replace(pos, from.size(), to);
  return message;
}

/// Loads `text` both ways and expects the same message, naming `shown` (the display name) at `where`.
template <class Load, class Parse>
void expect_same_error(const std::string& text, Load&& load, Parse&& parse, const std::string& expected) {
  const auto file = temp_file("bad.yaml", text);
  const std::string from_file = error_of([&] { (void)load(file); });
  const std::string from_text = error_of([&] { (void)parse(text, "shown.yaml"); });
  EXPECT_EQ(from_text, expected);
  EXPECT_EQ(replaced(from_file, file.string(), "shown.yaml"), expected);
}

TEST(ParseText, ClusterErrorsNameTheDisplayNameLineColumnAndKey) {
  // gpus_per_node misspelt: the mapping (line 1, column 1) lacks the required key
  expect_same_error(
      "name: x\nnodes: 1\ngpu: p40\ngpus_per_nod: 4\n", [](const fs::path& f) { return load_cluster(f); },
      [](const std::string& t, const std::string& n) { return parse_cluster(t, n); },
      "shown.yaml:1:1: 'gpus_per_node': missing required key");
  // a bad unit: 'storage.disk' on line 8, the value at column 9
  const std::string bad_unit =
      "name: x\nnodes: 1\ngpus_per_node: 1\ngpu: p40\nhost_to_gpu: {pinned: \"10 GB/s\"}\nintra_node: {bandwidth: \"10 GB/s\"}\n"
      "storage:\n  disk: \"12 parsecs\"\n  page_cache: \"5 GB/s\"\n";
  const std::string msg = error_of([&] { (void)parse_cluster(bad_unit, "shown.yaml"); });
  EXPECT_THAT(msg, HasSubstr("shown.yaml:8:9: 'storage.disk': "));
  expect_same_error(
      bad_unit, [](const fs::path& f) { return load_cluster(f); },
      [](const std::string& t, const std::string& n) { return parse_cluster(t, n); }, msg);
}

TEST(ParseText, NetworkStrategyProfileCalibrationErrorsMatchTheFileLoaders) {
  expect_same_error(
      "name: n\ninput: {shape: [3], bytes_per_sample: \"1 KB\"}\nlayers: []\nextra: 1\n",
      [](const fs::path& f) { return load_network(f); },
      [](const std::string& t, const std::string& n) { return parse_network(t, n); },
      "shown.yaml:1:1: a model needs at least one learnable layer");
  expect_same_error(
      "name: s\nio: {prefetch: maybe, memory: pinned}\n", [](const fs::path& f) { return load_strategy(f); },
      [](const std::string& t, const std::string& n) { return parse_strategy(t, n); },
      "shown.yaml:2:16: 'io.prefetch': 'maybe' is not true or false");
  // the profile's error sits on line 3, the value of batch_per_gpu at column 16
  expect_same_error(
      "model: resnet50\nframework: cntk\nbatch_per_gpu: 0\n", [](const fs::path& f) { return load_profile(f); },
      [](const std::string& t, const std::string& n) { return parse_profile(t, n); },
      "shown.yaml:3:16: 'batch_per_gpu': must be at least 1");
  expect_same_error(
      "schema: 99\n", [](const fs::path& f) { return load_calibration(f); },
      [](const std::string& t, const std::string& n) { return parse_calibration(t, n); },
      "shown.yaml:1:9: 'schema': calibration schema version 99 is not supported (this dlscale reads version 1)");
  // malformed YAML: the unclosed flow mapping is reported where yaml-cpp finds it
  const std::string broken = "name: x\nio: {prefetch: true\n";
  const std::string msg = error_of([&] { (void)parse_strategy(broken, "shown.yaml"); });
  EXPECT_THAT(msg, HasSubstr("shown.yaml:"));
  EXPECT_THAT(msg, HasSubstr("malformed YAML"));
  expect_same_error(
      broken, [](const fs::path& f) { return load_strategy(f); },
      [](const std::string& t, const std::string& n) { return parse_strategy(t, n); }, msg);
}

TEST(ParseText, ShippedFilesParseFromTextAsFromTheirPath) {
  const fs::path dir = data_dir();
  const auto path = dir / "topologies" / "dgx1v.yaml";
  const Cluster a = load_cluster(path), b = parse_cluster(slurp(path), "dgx1v.yaml");
  EXPECT_EQ(a.source_file, path.string());
  EXPECT_EQ(b.source_file, "dgx1v.yaml");
  EXPECT_EQ(b.name, a.name);
  EXPECT_EQ(b.gpus_per_node, a.gpus_per_node);
  EXPECT_EQ(b.max_nodes, a.max_nodes);
  EXPECT_EQ(b.gpu.name, a.gpu.name);
  EXPECT_EQ(in_bytes_per_second(b.intra_node.bandwidth), in_bytes_per_second(a.intra_node.bandwidth));
  EXPECT_EQ(in_bytes_per_second(b.inter_node.bandwidth), in_bytes_per_second(a.inter_node.bandwidth));
  ASSERT_TRUE(a.topology && b.topology);
  EXPECT_EQ(b.topology->links().size(), a.topology->links().size());

  const auto net = dir / "models" / "resnet50.yaml";
  const Network n1 = load_network(net), n2 = parse_network(slurp(net), "r.yaml");
  ASSERT_EQ(n2.layers.size(), n1.layers.size());
  EXPECT_EQ(n2.total_params(), n1.total_params());

  const auto fw = dir / "models" / "frameworks" / "cntk.yaml";
  EXPECT_EQ(parse_strategy(slurp(fw), "c.yaml").name, load_strategy(fw).name);

  const auto nvb = fs::path(DLSCALE_TEST_DATA_DIR) / "calibration" / "nvbandwidth-h100x2.json";
  const Calibration c1 = import_nvbandwidth(nvb), c2 = parse_nvbandwidth(slurp(nvb), "nvb.json");
  EXPECT_EQ(c2.transfers.size(), c1.transfers.size());
  EXPECT_EQ(c2.provenance.sources, std::vector<std::string>{"nvb.json"});
}

std::string catalogue(const std::string& id, const std::string& name) {
  return "gpus:\n  - id: " + id + "\n    name: " + name +
      "\n    peak_fp32: \"10 TFLOPS\"\n    peak_fp16: \"20 TFLOPS\"\n    memory_bandwidth: \"500 GB/s\"\n"
      "    memory: \"16 GB\"\n";
}

TEST(GpuCatalogue, CacheFollowsTheFile) {
  const fs::path dir = fs::temp_directory_path() / ("dlscale-catalogue-" + std::to_string(::getpid()));
  fs::create_directories(dir / "topologies");
  const test::DataDir use(dir.string());
  const auto file = dir / "topologies" / "gpus.yaml";
  std::ofstream(file, std::ios::binary) << catalogue("alpha", "Alpha GPU");
  EXPECT_EQ(find_gpu("alpha").name, "Alpha GPU");
  EXPECT_EQ(find_gpu("ALPHA").name, "Alpha GPU");  // cached the second time, still case-insensitive

  // rewritten with another GPU (another size, and a later modification time)
  std::ofstream(file, std::ios::binary | std::ios::trunc) << catalogue("beta-gpu", "Beta GPU, second edition");
  fs::last_write_time(file, fs::last_write_time(file) + std::chrono::seconds(2));
  EXPECT_EQ(find_gpu("beta-gpu").name, "Beta GPU, second edition");
  EXPECT_THAT(error_of([] { (void)find_gpu("alpha"); }), HasSubstr("unknown GPU 'alpha' (known: beta-gpu)"));

  // a catalogue that breaks is reported every time, not served from the cache
  std::ofstream(file, std::ios::binary | std::ios::trunc) << "gpus: [\n";
  fs::last_write_time(file, fs::last_write_time(file) + std::chrono::seconds(2));
  EXPECT_THAT(error_of([] { (void)find_gpu("beta-gpu"); }), HasSubstr("malformed YAML"));
  EXPECT_THAT(error_of([] { (void)find_gpu("beta-gpu"); }), HasSubstr("malformed YAML"));
  fs::remove_all(dir);
}

TEST(GpuCatalogue, ManyThreadsLookUpAtOnce) {
  // 8 threads × 50 look-ups of the shipped catalogue: every one finds the P40 (Tesla P40, gpus.yaml)
  std::vector<int> found(8, 0);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < found.size(); ++t)
    threads.emplace_back([&found, t] {
      for (int i = 0; i < 50; ++i)
        if (find_gpu("p40").name == "Tesla P40") ++found[t];
    });
  for (auto& th : threads) th.join();
  for (int f : found) EXPECT_EQ(f, 50);
}

}  // namespace
}  // namespace dlscale
