// Inputs parsed once at the edge: every shipped file loads, and bad input gets one line naming
// file:line:col and the key.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>

#include "dlscale/error.hpp"
#include "dlscale/io.hpp"
#include "dlscale/predict.hpp"
#include "io/text.hpp"
#include "io/yaml_reader.hpp"
#include "io/yaml_writer.hpp"
#include "support/data_dir.hpp"
#include "support/run.hpp"

namespace dlscale {
namespace {

using test::temp_file;
using ::testing::HasSubstr;

// ---- the YAML reader against yaml-cpp ------------------------------------------------------------
// lib/io/yaml_reader parses with libyaml into a tree of its own. The reference is yaml-cpp, which
// dlscale used before and which the error messages were written against: the same tree (kinds, scalar
// text, nulls, key order) with the same positions, node by node.
void expect_same_tree(const yamlio::Node& ours, const YAML::Node& ref, const std::string& where) {
  SCOPED_TRACE(where);
  const auto& it = ours.item();
  ASSERT_EQ(ours.is_null(), ref.IsNull());
  ASSERT_EQ(ours.is_scalar(), ref.IsScalar());
  ASSERT_EQ(ours.is_sequence(), ref.IsSequence());
  ASSERT_EQ(ours.is_map(), ref.IsMap());
  if (!ours.is_null()) {  // yaml-cpp places a missing value at the next token; no message uses it
    EXPECT_EQ(it.line, ref.Mark().line);
    EXPECT_EQ(it.column, ref.Mark().column);
  }
  if (ref.IsScalar()) {
    EXPECT_EQ(it.value, ref.Scalar());
  }
  if (ref.IsSequence()) {
    const auto items = ours.items();
    ASSERT_EQ(items.size(), ref.size());
    for (std::size_t i = 0; i < items.size(); ++i) expect_same_tree(items[i], ref[i], where + "[" + std::to_string(i) + "]");
  }
  if (ref.IsMap()) {
    yamlio::MapReader m(ours);
    const auto entries = m.entries();
    ASSERT_EQ(entries.size(), ref.size());
    std::size_t i = 0;
    for (auto r = ref.begin(); r != ref.end(); ++r, ++i) {
      EXPECT_EQ(entries[i].first, r->first.Scalar());
      expect_same_tree(entries[i].second, r->second, where + "." + entries[i].first);
    }
  }
}

/// Calls `f(path, text)` for every .yaml or .yml file below the source tree's `folders` (those that exist).
template <typename F>
void for_each_yaml_file(std::initializer_list<const char*> folders, F f) {
  namespace fs = std::filesystem;
  for (const char* folder : folders) {
    const fs::path root = fs::path(DLSCALE_SOURCE_DIR) / folder;
    if (!fs::exists(root)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root)) {
      if (!e.is_regular_file() || (e.path().extension() != ".yaml" && e.path().extension() != ".yml")) continue;
      std::ifstream in(e.path(), std::ios::binary);
      std::stringstream text;
      text << in.rdbuf();
      f(e.path(), text.str());
    }
  }
}

TEST(YamlReader, ReadsEveryShippedFileAsYamlCppDoes) {
  int files = 0;
  for_each_yaml_file({"models", "topologies", "tests/data", "examples"},
                     [&](const std::filesystem::path& path, const std::string& text) {
                       YAML::Node ref;
                       try {
                         ref = YAML::Load(text);
                       } catch (const YAML::Exception&) {
                         return;  // a deliberately malformed test input: yaml-cpp itself reads those (below)
                       }
                       expect_same_tree(yamlio::load_file(path), ref, path.string());
                       ++files;
                     });
  EXPECT_GT(files, 80);  // 89 when written: fewer means the folders moved
}

TEST(YamlReader, NullsEmptyDocumentsAndAliasesAsYamlCpp) {
  // What yaml-cpp calls null: a plain ~, null, Null, NULL or nothing; quoted, they are text.
  const std::string text = "a: ~\nb: null\nc:\nd: \"null\"\ne: 'NULL'\nf: Null\ng: &x {k: [1, 2]}\nh: *x\n";
  const auto ours = yamlio::load_string(text, "t.yaml");
  expect_same_tree(ours, YAML::Load(text), "t.yaml");
  yamlio::MapReader m(ours);
  EXPECT_TRUE(m.required("a").is_null());
  EXPECT_TRUE(m.required("c").is_null());
  EXPECT_EQ(m.required("d").scalar(), "null");
  EXPECT_EQ(m.required("h").size(), 1u);
  // An empty file (or one of comments only) is a null without a position: the MapReader says so.
  for (const std::string empty : {"", "# nothing\n"}) {
    try {
      yamlio::MapReader r(yamlio::load_string(empty, "e.yaml"));
      FAIL();
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()), "e.yaml:1:1: the file is empty (expected a mapping of keys to values)");
    }
  }
  // Malformed YAML keeps yaml-cpp's message and position (libyaml's verdict is only a first look).
  try {
    (void)yamlio::load_string("a: [1, 2\nb: 3\n", "m.yaml");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "m.yaml:2:2: malformed YAML: end of sequence flow not found");
  }
}

// ---- the simple reader against LibYAML ----------------------------------------------------------
// lib/io/yaml_simple.cpp reads the data files' YAML without LibYAML and gives up on anything else. The
// reference is LibYAML's own tree (yaml_reader.cpp's TreeBuilder): whatever the simple reader accepts,
// LibYAML accepts too, with the same items (kinds, text, positions, children) in the same order.
std::string tree_text(const yamlio::detail::Document& doc) {
  std::string out;
  for (const auto& it : doc.items) {
    out += std::to_string(static_cast<int>(it.kind)) + " " + std::to_string(it.line) + ":" + std::to_string(it.column) + " '" +
        it.value + "' [";
    for (int c : it.children) out += std::to_string(c) + " ";
    out += "]\n";
  }
  return out;
}

/// Whether the simple reader read `text`; when it did, its tree is LibYAML's.
bool simple_as_libyaml(const std::string& text, const std::string& where) {
  SCOPED_TRACE(where);
  yamlio::detail::Document simple, libyaml;
  if (!yamlio::detail::parse_simple(text, simple)) return false;
  EXPECT_TRUE(yamlio::detail::parse_libyaml(text, libyaml)) << "LibYAML rejects what the simple reader read";
  EXPECT_EQ(tree_text(simple), tree_text(libyaml));
  return true;
}

TEST(YamlReader, SimpleReaderReadsEveryDataFileAsLibyaml) {
  int files = 0, read = 0;
  const auto folders = {"models", "topologies", "tests/data", "examples", "../shared/data"};
  for_each_yaml_file(folders, [&](const std::filesystem::path& path, const std::string& text) {
    ++files;
    const bool simple = simple_as_libyaml(text, path.string());
    read += simple;
    // the shipped data, which every command reads, must stay on the fast path
    const std::string rel = std::filesystem::relative(path, DLSCALE_SOURCE_DIR).generic_string();
    if (rel.starts_with("models/") || rel.starts_with("topologies/")) {
      EXPECT_TRUE(simple) << rel << " is left to LibYAML";
    }
  });
  EXPECT_GT(files, 80);
  EXPECT_GT(read, files / 2);
}

TEST(YamlReader, SimpleReaderLeavesWhatItDoesNotReadToLibyaml) {
  // read: LibYAML's tree, node for node
  for (const std::string text :
       {"a: 1\n", "a: 1\nb: \"x y\"  # c\n# c\nc: 'q'\n", "a:\n  b: ~\n  c: null\n  d: [1, -2, x y]\n",
        "a:\n- 1\n- {k: v, l: [m, n]}\nb: 2\n", "- a: 1\n  b:\n    - x\n- [ ]\n- {}\n", "url: https://x.org/a#b\n",
        "a: [1,\n  2, # c\n  3]\nb: 1", "k  : v\n", "a: >-\n  x y\n  # z\n\nb: |\n   p\n   q\n\n\nc: 1\n",
        "- >\n  x\n- a: |-\n    y\n", "a: >-\n  x\n\n", "a:\n  - - 1\n", "- a:\n  - 1\n  b: 2\n"}) {
    const bool simple = simple_as_libyaml(text, text);
    if (text != "a:\n  - - 1\n" && text != "url: https://x.org/a#b\n") {
      EXPECT_TRUE(simple) << text;
    }
  }
  // left to LibYAML (or to yaml-cpp after it): anchors, tags, block scalars kept ('+'), with an indent or
  // with a blank or more-indented line inside, escapes, a scalar over two lines, empty values, tabs, document
  // markers, keys in flow sequences, trailing commas, bad indentation, a comment LibYAML rejects (not UTF-8)
  for (const std::string text : {"a: &x 1\nb: *x\n", "a: !!str 1\n",       "a: |+\n  x\n",
                                 "a: |2\n  x\n",     "a: >\n  x\n\n  y\n", "a: >\n  x\n    y\n",
                                 "a: >\n  x \n",     "a: >\nb: 1\n",       "a: \"x\\ty\"\n",
                                 "a: 'it''s'\n",     "a: x\n  y\n",        "a:\nb: 1\n",
                                 "a:\t1\n",          "---\na: 1\n",        "a: [b: c]\n",
                                 "a: [1, 2,]\n",     "a: 1\n b: 2\n",      "a:\n  b: 1\n c: 2\n",
                                 "a: [1, 2\nb: 3\n", "a: b: c\n",          "",
                                 "# only\n",         "# \xff\na: 1\n",     "[1, 2]\n",
                                 "a: {b}\n",         "a: \"\xc3\xa9\"\n",  "a: 1\r\n",
                                 "? a\n: 1\n",       "a: x #\n  y\n"}) {
    EXPECT_FALSE(simple_as_libyaml(text, text)) << text;
  }
}

// The one YAML emitter (io/yaml_writer.hpp): the quoting rules the writers rely on, and a document that
// reads back as what was written.
TEST(YamlWriter, QuotesByItsRulesAndReadsBack) {
  // Names stay plain; what YAML would read as another type, or cannot carry plain, is quoted.
  EXPECT_EQ(yamlio::scalar("resnet50-v1.5/a_b"), "resnet50-v1.5/a_b");
  for (const char* s : {"", "true", "no", "null", "-x", ".x", "a b", "a:b", "#c"}) EXPECT_EQ(yamlio::scalar(s).front(), '"') << s;
  // Both escapes take '"' and '\'; only the JSON one writes control characters as escapes.
  EXPECT_EQ(yamlio::quoted("say \"hi\" \\ now"), R"("say \"hi\" \\ now")");
  EXPECT_EQ(yamlio::quoted("say \"hi\" \\ now", yamlio::Escape::json), R"("say \"hi\" \\ now")");
  EXPECT_EQ(yamlio::quoted("a\tb\n", yamlio::Escape::json), R"("a\tb\n")");
  EXPECT_EQ(yamlio::quoted("a\tb"), "\"a\tb\"");

  yamlio::Emitter o;
  o.comment("a test");
  o.pair(0, "name", yamlio::scalar("x"), "a note").key(0, "storage", "aligned", 5).pair(2, "disk", yamlio::quoted("1 GB/s"));
  o.pair_if(2, "empty", "").key(0, "items").item_pair(2, "op", "allreduce").pair(4, "gpus", "8");
  const std::vector<std::string> shape{"3", "224"};
  yamlio::FlowMap flow;
  flow.add("text", yamlio::quoted("a\n\"b\"", yamlio::Escape::json)).add("shape", yamlio::flow_sequence(shape));
  o.item(2, flow.str());
  const std::string text = std::move(o).str();
  EXPECT_EQ(text,
            "# a test\nname: x  # a note\nstorage:     # aligned\n  disk: \"1 GB/s\"\nitems:\n  - op: allreduce\n    gpus: 8\n"
            "  - {text: \"a\\n\\\"b\\\"\", shape: [3, 224]}\n");
  yamlio::MapReader m(yamlio::load_string(text, "w.yaml"));
  EXPECT_EQ(m.required("name").scalar(), "x");
  const auto items = m.required("items").items();
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(yamlio::MapReader(items[0]).required("op").scalar(), "allreduce");
  yamlio::MapReader second(items[1]);
  EXPECT_EQ(second.required("text").scalar(), "a\n\"b\"");
  EXPECT_EQ(second.required("shape").size(), 2u);
}

TEST(Inputs, EveryShippedFrameworkLoads) {
  const auto names = list_names(DataKind::framework);
  for (const char* want : {"caffe-mpi", "cntk", "mxnet", "tensorflow", "horovod", "pytorch-ddp", "pytorch-dataparallel"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  for (const auto& n : names) {
    SCOPED_TRACE(n);
    const Strategy s = load_strategy(resolve(DataKind::framework, n, "--framework"));
    EXPECT_EQ(s.name, n);
  }
}

TEST(Inputs, FrameworkStrategiesSayWhatThePaperSays) {
  const Strategy cntk = load_strategy(resolve(DataKind::framework, "cntk", "--framework"));
  // eq. 8 adds t_io for CNTK's AlexNet, whose batch its limited buffer cannot hold (Section VI-A); GoogLeNet's and
  // ResNet-50's reading "can be hidden this time" (Section VI-B). Decoded input 224x224x3x4 B a sample, by hand:
  // AlexNet's 1024 take 588 MiB, GoogLeNet's 128 take 73.5 MiB, ResNet-50's 32 a quarter of that.
  EXPECT_TRUE(cntk.io_prefetch);
  auto prefetched = [&](const char* model, int batch) {
    Scenario sc;
    sc.strategy = cntk;
    sc.network = load_network(resolve(DataKind::network, model, "--model"));
    sc.batch_per_gpu = batch;
    EXPECT_DOUBLE_EQ(in_bytes(sc.network.input_bytes_per_sample), 224.0 * 224 * 3 * 4) << model;
    return reader_prefetches(sc);
  };
  EXPECT_FALSE(prefetched("alexnet", 1024));
  EXPECT_TRUE(prefetched("googlenet", 128));
  EXPECT_TRUE(prefetched("resnet50", 32));
  EXPECT_LT(in_mebibytes(cntk.prefetch_buffer), 588.0);
  EXPECT_GE(in_mebibytes(cntk.prefetch_buffer), 73.5);
  EXPECT_EQ(cntk.overlap, Overlap::none);  // "not pipelined"
  const Strategy mxnet = load_strategy(resolve(DataKind::framework, "mxnet", "--framework"));
  EXPECT_EQ(mxnet.aggregation, Aggregation::parameter_server);
  EXPECT_EQ(mxnet.update, UpdatePlacement::per_layer);
  EXPECT_FALSE(mxnet.pinned_memory);
  const Strategy tf = load_strategy(resolve(DataKind::framework, "tensorflow", "--framework"));
  EXPECT_EQ(tf.aggregation, Aggregation::hybrid);
  EXPECT_EQ(tf.update, UpdatePlacement::after_aggregation);
  const Strategy ddp = load_strategy(resolve(DataKind::framework, "pytorch-ddp", "--framework"));
  EXPECT_EQ(ddp.overlap, Overlap::bucketed);
  EXPECT_EQ(ddp.bucket_size, mebibytes(25));
  EXPECT_EQ(ddp.first_bucket, mebibytes(1));
}

// The tuned stacks' files (NVIDIA DeepLearningExamples' ResNet-50 v1.5): channels_last and streaming memory-bound
// kernels in all three, batch norm fused with ReLU and with the residual addition and ReLU in TensorFlow-XLA and
// MXNet, none in PyTorch (eager); the fitted per-kernel charge, not the host's issue floor (eqs. K18-K20).
TEST(Inputs, TunedStacksSayHowTheirKernelsRun) {
  for (const char* name : {"pytorch-dle", "tensorflow-xla", "mxnet-nhwc"}) {
    SCOPED_TRACE(name);
    const Strategy s = load_strategy(resolve(DataKind::framework, name, "--framework"));
    EXPECT_EQ(s.conv_algorithms.layout, TensorLayout::nhwc);
    EXPECT_TRUE(s.execution.streaming);
    const bool eager = std::string(name) == "pytorch-dle";
    EXPECT_EQ(s.execution.bn_relu, !eager);
    EXPECT_EQ(s.execution.bn_add_relu, !eager);
    EXPECT_EQ(s.execution.host_issue, Seconds{});  // eq. K20 waits for a refit (docs/compute-model.md)
  }
  const Strategy ddp = load_strategy(resolve(DataKind::framework, "pytorch-ddp", "--framework"));
  EXPECT_FALSE(ddp.execution.streaming);  // the plain files run as the shipped fit
  // eq. K20 for transformers' BERT only: 70.29 ms / (838 x 3.0 + 145) kernels (pytorch-ddp.yaml's arithmetic)
  EXPECT_TRUE(ddp.execution.transformers_bert);
  EXPECT_NEAR(in_us(ddp.execution.host_issue), 70.29e3 / (838 * 3.0 + 145), 0.05);
  EXPECT_EQ(ddp.execution.issued_per_kernel, 3.0);
  EXPECT_FALSE(ddp.execution.launch_gap.has_value());  // the fitted kernel_overhead: the GPU's time unchanged
}

TEST(Inputs, ShiChuClusterCarriesThePapersFigures) {
  const Cluster c = load_cluster(resolve(DataKind::cluster, "shi-chu-p40", "--cluster"));
  EXPECT_EQ(c.max_nodes, 4);
  EXPECT_EQ(c.gpus_per_node, 4);
  EXPECT_EQ(c.h2d_pinned, gigabytes_per_second(11.4));
  EXPECT_EQ(c.h2d_pageable, gigabytes_per_second(8.7));
  EXPECT_EQ(c.inter_node.bandwidth, gigabytes_per_second(7));  // 56 Gb/s
  EXPECT_EQ(c.page_cache, gibibytes_per_second(3.5));
  EXPECT_EQ(c.disk, BytesPerSecond::from_base(750.0 * 1048576.0));
}

TEST(Inputs, TableVProfilesAreAllShipped) {
  const auto names = list_names(DataKind::profile);
  int table5 = 0;
  for (const auto& n : names) {
    if (n.rfind("table5-", 0) != 0) continue;
    ++table5;
    const Profile p = load_profile(resolve(DataKind::profile, n, "--profile"));
    EXPECT_TRUE(p.batch_per_gpu == 1024 || p.batch_per_gpu == 128 || p.batch_per_gpu == 32) << n;
  }
  EXPECT_EQ(table5, 12);
  const Profile w = load_profile(resolve(DataKind::profile, "worked-example-cntk-alexnet", "--profile"));
  EXPECT_EQ(w.single_gpu.io, seconds(0.223));
  ASSERT_TRUE(w.measured.at(2).comm.has_value());
  EXPECT_EQ(*w.measured.at(2).comm, seconds(0.0359));
  EXPECT_EQ(*w.measured.at(4).io, seconds(0.72));
}

// ---- bad input: one line, file:line:col and the key -------------------------------------------------
struct BadInput {
  const char* name;
  const char* kind;  // cluster | framework | profile
  const char* text;
  const char* expected;  // message after "<file>:"
};

constexpr const char* kGoodCluster = R"(name: tiny
nodes: 2
gpus_per_node: 2
gpu: {name: Test GPU, peak_fp32: "10 TFLOPS", memory_bandwidth: "300 GB/s"}
host_to_gpu: {pinned: "10 GB/s"}
intra_node: {bandwidth: "10 GB/s", latency: "5 us"}
inter_node: {bandwidth: "56 Gb/s", latency: "10 us"}
storage: {disk: "500 MB/s", page_cache: "3 GB/s"}
)";

std::string with_line(int line, const std::string& replacement) {
  std::string text = kGoodCluster;
  std::size_t pos = 0;
  for (int i = 1; i < line; ++i) pos = text.find('\n', pos) + 1;
  const std::size_t end = text.find('\n', pos);
  return text.substr(0, pos) + replacement + text.substr(end);
}

class BadInputs : public ::testing::TestWithParam<BadInput> {};

TEST_P(BadInputs, OneLineWithFileLineColumnAndKey) {
  const BadInput& c = GetParam();
  const auto path = temp_file(std::string(c.name) + ".yaml", c.text);
  try {
    if (std::string(c.kind) == "cluster") (void)load_cluster(path);
    else if (std::string(c.kind) == "framework") (void)load_strategy(path);
    else (void)load_profile(path);
    FAIL() << "no error for " << c.name;
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what, path.string() + ":" + c.expected);
    EXPECT_EQ(what.find('\n'), std::string::npos);
  }
}

// Line and column numbers below are counted by hand in the text of each case (1-based; the column
// is where the offending key or value starts).
const std::string kWrongUnit = with_line(6, R"(intra_node: {bandwidth: "10 GBs", latency: "5 us"})");
const std::string kNoUnit = with_line(7, R"(inter_node: {bandwidth: "56", latency: "10 us"})");
const std::string kNegative = with_line(5, R"(host_to_gpu: {pinned: "-10 GB/s"})");
const std::string kZero = with_line(8, R"(storage: {disk: "0 MB/s", page_cache: "3 GB/s"})");
const std::string kUnknownKey = std::string(kGoodCluster) + "colour: blue\n";
const std::string kNestedUnknown = with_line(6, R"(intra_node: {bandwidth: "10 GB/s", latncy: "5 us"})");
const std::string kMissing = with_line(5, "");
const std::string kNodes = with_line(2, "nodes: 0");
const std::string kDuplicate = std::string(kGoodCluster) + "nodes: 3\n";
const std::string kMalformed = with_line(3, "gpus_per_node: [2");
const std::string kCountType = with_line(3, "gpus_per_node: four");

const BadInput kCases[] = {
    {"wrong_unit", "cluster", kWrongUnit.c_str(),
     "6:25: 'intra_node.bandwidth': unknown bandwidth unit 'GBs' in '10 GBs' (use B/s, MB/s, GB/s, GiB/s, Mb/s, Gb/s)"},
    {"no_unit", "cluster", kNoUnit.c_str(),
     "7:25: 'inter_node.bandwidth': '56' has no unit (bandwidth needs one, e.g. \"25 GB/s\")"},
    {"negative", "cluster", kNegative.c_str(), "5:23: 'host_to_gpu.pinned': '-10 GB/s' is negative"},
    {"zero", "cluster", kZero.c_str(), "8:17: 'storage.disk': '0 MB/s' must be greater than zero"},
    {"unknown_key", "cluster", kUnknownKey.c_str(),
     "9:1: 'colour': unknown key (known keys here: assumed, description, fabric, framework, gpu, gpudirect_rdma, gpus_per_node, "
     "host_memory, host_memory_size, host_to_gpu, input, inter_node, intra_node, name, node, nodes, price_per_gpu_hour, "
     "storage)"},
    {"nested_unknown", "cluster", kNestedUnknown.c_str(),
     "6:36: 'intra_node.latncy': unknown key (known keys here: bandwidth, latency)"},
    {"missing_key", "cluster", kMissing.c_str(), "1:1: 'host_to_gpu': missing required key"},
    {"zero_nodes", "cluster", kNodes.c_str(), "2:8: 'nodes': a cluster needs at least one node"},
    {"duplicate", "cluster", kDuplicate.c_str(), "9:1: 'nodes': duplicate key"},
    {"not_a_number", "cluster", kCountType.c_str(), "3:16: 'gpus_per_node': 'four' is not a number"},
    {"framework_choice", "framework",
     "name: x\nio: {prefetch: true, memory: pinned}\naggregation: gossip\noverlap: none\nupdate: on_root\n",
     "3:14: 'aggregation': unknown value 'gossip' (expected one of: allreduce, parameter_server, hybrid, broadcast_reduce)"},
    {"framework_bool", "framework",
     "name: x\nio: {prefetch: maybe, memory: pinned}\naggregation: allreduce\noverlap: none\nupdate: on_root\n",
     "2:16: 'io.prefetch': 'maybe' is not true or false"},
    {"bucketed_without_buckets", "framework",
     "name: x\nio: {prefetch: true, memory: pinned}\naggregation: allreduce\noverlap: bucketed\nupdate: after_aggregation\n",
     "1:1: overlap 'bucketed' needs 'buckets: {size: ..., first: ...}'"},
    {"profile_time_unit", "profile",
     "model: alexnet\nframework: cntk\nbatch_per_gpu: 1024\nsingle_gpu: {io: \"0.2 s\", h2d: \"0.05 s\", forward: \"0.17\", "
     "backward: \"0.29 s\", update: \"0.0086 s\"}\n",
     "4:51: 'single_gpu.forward': '0.17' has no unit (time needs one, e.g. \"5 us\")"},
    {"profile_measured_key", "profile",
     "model: alexnet\nframework: cntk\nbatch_per_gpu: 1024\nsingle_gpu: {io: \"0.2 s\", h2d: \"0.05 s\", forward: \"0.17 s\", "
     "backward: \"0.29 s\", update: \"0.0086 s\"}\nmeasured:\n  two: {comm: \"0.03 s\"}\n",
     "6:8: 'measured.two': keys of 'measured' are GPU counts (whole numbers ≥ 1)"},
    {"profile_batch", "profile",
     "model: alexnet\nframework: cntk\nbatch_per_gpu: 0\nsingle_gpu: {io: \"0.2 s\", h2d: \"0.05 s\", forward: \"0.17 s\", "
     "backward: \"0.29 s\", update: \"0.0086 s\"}\n",
     "3:16: 'batch_per_gpu': must be at least 1"},
};

INSTANTIATE_TEST_SUITE_P(Catalogue, BadInputs, ::testing::ValuesIn(kCases),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

// The flow sequence opened on line 3 is unclosed; yaml-cpp notices at the next key (line 4, column 4).
TEST(Inputs, MalformedYamlNamesTheSpot) {
  const auto path = temp_file("malformed.yaml", kMalformed);
  try {
    (void)load_cluster(path);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr(path.string() + ":4:4: malformed YAML: end of sequence flow not found"));
  }
}

TEST(Inputs, MissingFileIsAnInputError) {
  try {
    (void)load_cluster("/nonexistent/dir/cluster.yaml");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "/nonexistent/dir/cluster.yaml: cannot open file (no such file)");
  }
}

TEST(Inputs, UnknownNamesListWhatIsKnown) {
  try {
    (void)resolve(DataKind::framework, "caffe3", "framework");
    FAIL();
  } catch (const InputError& e) {
    // the library names the field; lib/cli names the option that set it
    EXPECT_EQ(dynamic_cast<const UsageError*>(&e), nullptr);
    EXPECT_TRUE(e.where().file.empty());
    EXPECT_EQ(e.key(), "framework");
    EXPECT_THAT(std::string(e.what()), HasSubstr("'framework': unknown framework 'caffe3' (known: caffe-mpi, caffe2, cntk,"));
  }
}

// A shipped file's references (a cluster's GPU and input, a framework's transport, a profile's names) are
// looked up in the data folder the file lies in, whatever DLSCALE_DATA_DIR says; a name given to resolve
// with a data folder is looked up there.
TEST(Inputs, ReferencesResolveInTheDataFolderOfTheFile) {
  namespace fs = std::filesystem;
  const fs::path src = DLSCALE_SOURCE_DIR;
  const fs::path empty = fs::temp_directory_path() / "dlscale-io-test-empty-data";
  fs::create_directories(empty);
  const test::DataDir elsewhere(empty.string());
  EXPECT_EQ(data_dir(), empty);
  EXPECT_EQ(data_folder_of(src / "topologies" / "dgx1v.yaml"), src);
  EXPECT_EQ(data_folder_of(src / "models" / "frameworks" / "pytorch-ddp.yaml"), src);
  EXPECT_EQ(data_folder_of(empty / "c.yaml"), empty);  // in no data folder: data_dir()

  EXPECT_EQ(resolve(DataKind::cluster, "dgx1v", "cluster", src), src / "topologies" / "dgx1v.yaml");
  const Cluster c = load_cluster(resolve(DataKind::cluster, "dgx1v", "cluster", src));
  EXPECT_EQ(c.gpu.name, find_gpu("v100-sxm2", src).name);
  const Strategy s = load_strategy(resolve(DataKind::framework, "mxnet", "framework", src));
  EXPECT_FALSE(s.transport.name.empty());  // models/frameworks/transports/ps-lite-tcp.yaml, beside it
  // the same names without a folder are looked up in the (empty) data folder
  EXPECT_THROW((void)resolve(DataKind::cluster, "dgx1v", "cluster"), InputError);
  EXPECT_THROW((void)find_gpu("v100-sxm2"), InputError);
  fs::remove_all(empty);
}

}  // namespace
}  // namespace dlscale

// A command line's comma-separated list (plan's --gpus, --tp, --frameworks): spaces dropped, empty items skipped.
TEST(Text, CommaItemsAsACommandLineWritesThem) {
  EXPECT_EQ(dlscale::comma_items("1, 2,4"), (std::vector<std::string>{"1", "2", "4"}));
  EXPECT_EQ(dlscale::comma_items(",fsdp,,deepspeed-zero3, "), (std::vector<std::string>{"fsdp", "deepspeed-zero3"}));
  EXPECT_TRUE(dlscale::comma_items("").empty());
  EXPECT_TRUE(dlscale::comma_items(" , ").empty());
}
