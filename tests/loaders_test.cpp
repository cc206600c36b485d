// The loaders (lib/loaders, include/dlscale/io.hpp and cluster.hpp) called as a library: a network file read
// from memory, its errors at file:line:col with the field, and the fabric spec the cluster overrides take,
// whose errors name the field (`fabric`), not a command-line option. The files' other errors are io_test's
// (cluster, framework, profile) and bad_input_test's (through the command line). Expected values are
// counted by hand in each text.
#include <gtest/gtest.h>

#include <string>

#include "dlscale/cluster.hpp"
#include "dlscale/error.hpp"
#include "dlscale/io.hpp"

namespace dlscale {
namespace {

constexpr const char* kNet =
    "name: tiny-net\n"                                                           // 1
    "input: {kind: image, shape: [3, 32, 32], bytes_per_sample: \"12288 B\"}\n"  // 2
    "layers:\n"                                                                  // 3
    "  - {name: conv1, kind: conv, params: 896, forward_flops: 1769472}\n"       // 4
    "  - {name: fc, kind: linear, params: 10250, forward_flops: 20480}\n";       // 5

// 896 = 3·3·3·32 + 32 and 10250 = 1024·10 + 10 parameters; 1769472 + 20480 FLOPs a sample.
TEST(Loaders, ANetworkReadFromMemoryHasItsLayersAndTotals) {
  const Network net = parse_network(kNet, "m.yaml");
  EXPECT_EQ(net.name, "tiny-net");
  ASSERT_EQ(net.layers.size(), 2U);
  EXPECT_EQ(net.layers[0].kind, LayerKind::conv);
  EXPECT_EQ(net.layers[1].name, "fc");
  EXPECT_EQ(net.total_params(), 11'146);
  EXPECT_DOUBLE_EQ(net.total_forward_flops_per_sample(), 1'789'952.0);
  EXPECT_DOUBLE_EQ(in_bytes(net.input_bytes_per_sample), 12'288.0);
}

// A negative parameter count on line 5: the value starts at column 38 ("  - {name: fc, kind: linear, params: "
// is 37 characters), and the field is the second layer's `params`.
TEST(Loaders, ABadValueIsAnInputErrorAtFileLineColumnAndField) {
  std::string text = kNet;
  text.replace(text.find("10250"), 5, "-5");
  try {
    (void)parse_network(text, "m.yaml");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, "m.yaml");
    EXPECT_EQ(e.where().line, 5);
    EXPECT_EQ(e.where().column, 38);
    EXPECT_EQ(e.key(), "layers[1].params");
  }
}

// KIND:SPEED[:COUNT]: ib and roce are other names of infiniband and ethernet; 200 Gb/s is 25 GB/s a NIC.
TEST(Loaders, AFabricSpecGivesKindSpeedAndNics) {
  const FabricSpec ib = parse_fabric_spec("ib:200Gb/s:8");
  EXPECT_EQ(ib.kind, "infiniband");
  EXPECT_DOUBLE_EQ(in_gigabytes_per_second(ib.speed), 25.0);
  EXPECT_EQ(ib.nics, 8);
  const FabricSpec roce = parse_fabric_spec("roce:100Gb/s");
  EXPECT_EQ(roce.kind, "ethernet");
  EXPECT_DOUBLE_EQ(in_gigabytes_per_second(roce.speed), 12.5);
  EXPECT_EQ(roce.nics, 0);  // the node's own NICs
}

// The library names the field; the command line turns it into --fabric (lib/cli/scenario_options.cpp).
TEST(Loaders, AMalformedFabricSpecNamesTheField) {
  try {
    (void)parse_fabric_spec("infiniband");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "fabric");
    EXPECT_EQ(e.message(), "'infiniband' has no speed (expected KIND:SPEED[:COUNT], e.g. infiniband:200Gb/s:8)");
  }
  try {
    (void)parse_fabric_spec("ethernet:100Gb/s:0", "grid.cluster[0].fabric");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "grid.cluster[0].fabric");
  }
}

}  // namespace
}  // namespace dlscale
