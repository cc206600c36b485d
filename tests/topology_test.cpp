// Topology graphs: paths as NCCL computes them on the shipped systems, validation of topology files, and
// `topo show` / `topo import` on the command line (the importers themselves: import_test.cpp).
// Expected values are derived by hand from NCCL's link ratings (shared/docs/nccl-model.md):
// NVLink 20 GB/s per link on SM70, PCIe Gen3 x16 = 16·60/80 = 12 GB/s, Broadwell QPI 6, POWER9 X-bus 32.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "dlscale/cluster.hpp"
#include "dlscale/error.hpp"
#include "dlscale/io.hpp"
#include "dlscale/topology.hpp"
#include "support/run.hpp"
#include "support/topology.hpp"

namespace dlscale {
namespace {

using test::gbs;
using test::nic_index;
using test::topo_of;

// ---- DGX-1V ---------------------------------------------------------------------------------------
TEST(Dgx1vPaths, DirectNvlinkPairsCarryTwentyGBPerLink) {
  const auto& t = topo_of("dgx1v");
  // 0-3 is a 2-link pair: 2 × 20 = 40 GB/s; 0-1 a 1-link pair: 20 GB/s.
  auto p03 = t.path(0, 3);
  EXPECT_EQ(p03.type, PathType::nvl);
  EXPECT_DOUBLE_EQ(gbs(p03.bandwidth), 40.0);
  EXPECT_EQ(p03.nvlinks, 2);
  EXPECT_TRUE(p03.p2p);
  auto p01 = t.path(0, 1);
  EXPECT_EQ(p01.type, PathType::nvl);
  EXPECT_DOUBLE_EQ(gbs(p01.bandwidth), 20.0);
  EXPECT_EQ(p01.nvlinks, 1);
}

TEST(Dgx1vPaths, NonNeighboursGoThroughOneGpuAsNvb) {
  const auto& t = topo_of("dgx1v");
  // 0→7: via GPU 4, 0-4 two links (40) and 4-7 two links (40): NVB at 40 GB/s.
  EXPECT_EQ(t.path(0, 7).type, PathType::nvb);
  EXPECT_DOUBLE_EQ(gbs(t.path(0, 7).bandwidth), 40.0);
  EXPECT_EQ(t.path(0, 7).hops, 2);
  // 0→5: via 1 (20, 40) or via 4 (40, 20): the best is 20 GB/s.
  EXPECT_EQ(t.path(0, 5).type, PathType::nvb);
  EXPECT_DOUBLE_EQ(gbs(t.path(0, 5).bandwidth), 20.0);
  // 0→6: via 2 (20, 20) or via 4 (40, 20): 20 GB/s.
  EXPECT_DOUBLE_EQ(gbs(t.path(0, 6).bandwidth), 20.0);
  EXPECT_EQ(t.path(0, 7).nvlinks, 0);
}

TEST(Dgx1vPaths, NicPathsFollowThePcieTree) {
  const auto& t = topo_of("dgx1v");
  // GPU0 shares PCIe switch plx0 with mlx5_0: PIX at Gen3 x16 = 12 GB/s.
  EXPECT_EQ(t.nic_path(0, nic_index(t, "mlx5_0")).type, PathType::pix);
  EXPECT_DOUBLE_EQ(gbs(t.nic_path(0, nic_index(t, "mlx5_0")).bandwidth), 12.0);
  // mlx5_1 hangs off the other switch of socket 0: through the host bridge (PHB), 12 GB/s.
  EXPECT_EQ(t.nic_path(0, nic_index(t, "mlx5_1")).type, PathType::phb);
  // mlx5_2 sits on socket 1: across QPI (SYS), 6 GB/s.
  EXPECT_EQ(t.nic_path(0, nic_index(t, "mlx5_2")).type, PathType::sys);
  EXPECT_DOUBLE_EQ(gbs(t.nic_path(0, nic_index(t, "mlx5_2")).bandwidth), 6.0);
}

TEST(Dgx1vPaths, GpusOnDifferentNodesMeetOverTheNetwork) {
  const auto& t = topo_of("dgx1v");
  const auto p = t.path(0, 8);  // GPU 0 of node 1
  EXPECT_EQ(p.type, PathType::net);
  EXPECT_DOUBLE_EQ(gbs(p.bandwidth), 12.0);  // PCIe 12 < EDR 12.5
}

TEST(Dgx1vPaths, TotalNvlinkBandwidthPerGpu) {
  // 6 NVLinks × 20 GB/s = 120 GB/s (NCCL's totalBw)
  EXPECT_DOUBLE_EQ(gbs(topo_of("dgx1v").gpu_link_bandwidth(0)), 120.0);
}

// ---- DGX-2 ----------------------------------------------------------------------------------------
TEST(Dgx2Paths, EveryPairIsOneNvswitchHopAtSixLinks) {
  const auto& t = topo_of("dgx2");
  // NCCL merges the 12 NVSwitches into one node: 6 links × 20 = 120 GB/s between any two GPUs.
  for (int b = 1; b < 16; ++b) {
    const auto p = t.path(0, b);
    EXPECT_EQ(p.type, PathType::nvl) << b;
    EXPECT_DOUBLE_EQ(gbs(p.bandwidth), 120.0) << b;
    EXPECT_EQ(p.hops, 2) << b;
  }
  EXPECT_DOUBLE_EQ(gbs(t.gpu_link_bandwidth(5)), 120.0);
}

// ---- AC922 ----------------------------------------------------------------------------------------
TEST(Ac922Paths, SiblingsOnNvlinkAndSocketsOverXbus) {
  const auto& t = topo_of("ac922");
  // GPU pair of a socket: 3 links × 20 = 60 GB/s.
  EXPECT_EQ(t.path(0, 1).type, PathType::nvl);
  EXPECT_DOUBLE_EQ(gbs(t.path(0, 1).bandwidth), 60.0);
  EXPECT_EQ(t.path(0, 1).nvlinks, 3);
  // Across sockets: GPU0 -NVL(60)- POWER9 -X-bus(32)- POWER9 -NVL(60)- GPU2 → SYS at 32 GB/s;
  // POWER hosts allow P2P up to SYS.
  EXPECT_EQ(t.path(0, 2).type, PathType::sys);
  EXPECT_DOUBLE_EQ(gbs(t.path(0, 2).bandwidth), 32.0);
  EXPECT_TRUE(t.path(0, 2).p2p);
  EXPECT_DOUBLE_EQ(gbs(t.path(1, 3).bandwidth), 32.0);
  // NVLinks of a GPU: 3 to the sibling + 3 to the CPU = 6 × 20 = 120 GB/s.
  EXPECT_DOUBLE_EQ(gbs(t.gpu_link_bandwidth(0)), 120.0);
}

// ---- Shi & Chu P40 node -------------------------------------------------------------------------
TEST(P40Paths, PairsShareASwitchAndSocketsShareQpi) {
  const auto& t = topo_of("shi-chu-p40");
  EXPECT_EQ(t.path(0, 1).type, PathType::pix);
  EXPECT_DOUBLE_EQ(gbs(t.path(0, 1).bandwidth), 12.0);
  EXPECT_TRUE(t.path(0, 1).p2p);
  EXPECT_EQ(t.path(2, 3).type, PathType::pix);
  // 1→2: plx0 → Xeon E5-2650 v4 → QPI (6 GB/s) → Xeon → plx1: SYS, no P2P behind Intel (> PXB).
  const auto p12 = t.path(1, 2);
  EXPECT_EQ(p12.type, PathType::sys);
  EXPECT_DOUBLE_EQ(gbs(p12.bandwidth), 6.0);
  EXPECT_FALSE(p12.p2p);
  EXPECT_DOUBLE_EQ(gbs(t.measured_p2p(0, 1)), 19.0);
  EXPECT_DOUBLE_EQ(gbs(t.measured_p2p(1, 2)), 0.0);
  EXPECT_EQ(t.max_nodes(), 4);
  EXPECT_EQ(t.fabric().nics_per_node, 1);
  EXPECT_DOUBLE_EQ(gbs(t.fabric().nic_bandwidth), 7.0);  // 56 Gb/s / 8
}

TEST(P40Paths, PeerCopyTimeUsesTheMeasuredPairBandwidth) {
  const auto& t = topo_of("shi-chu-p40");
  // 19 MB at 19 GB/s = 1 ms, plus one PCI step of NCCL's Simple latency, 5.7 µs.
  EXPECT_NEAR(in_seconds(p2p_copy_time(t, 0, 1, megabytes(19))), 1e-3 + 5.7e-6, 1e-12);
  // Across sockets there is no measured figure: 6 MB over the 6 GB/s QPI path = 1 ms + 5.7 µs.
  EXPECT_NEAR(in_seconds(p2p_copy_time(t, 1, 2, megabytes(6))), 1e-3 + 5.7e-6, 1e-12);
  // Across nodes: GPU0 → plx0 (12) → cpu0 → mlx4_0 on PCIe Gen3 x8 (8·60/80 = 6 GB/s, below FDR's 7):
  // 6 MB at 6 GB/s = 1 ms, plus NCCL's network step of 14 µs.
  EXPECT_NEAR(in_seconds(p2p_copy_time(t, 0, 4, megabytes(6))), 1e-3 + 14e-6, 1e-12);
}

TEST(P40Cluster, SimpleFormKeysStayAsTheFileGivesThem) {
  const Cluster c = load_cluster(resolve(DataKind::cluster, "shi-chu-p40", "--cluster"));
  EXPECT_DOUBLE_EQ(gbs(c.intra_node.bandwidth), 6.0);
  EXPECT_DOUBLE_EQ(in_gigabits_per_second(c.inter_node.bandwidth), 56.0);
  EXPECT_DOUBLE_EQ(gbs(c.h2d_pinned), 11.4);
  EXPECT_EQ(c.max_gpus(), 16);
}

// ---- every shipped topology ---------------------------------------------------------------------
class ShippedTopology : public ::testing::TestWithParam<std::string> {};

TEST_P(ShippedTopology, LoadsAndEveryGpuPairHasAPath) {
  const Cluster c = load_cluster(resolve(DataKind::cluster, GetParam(), "--cluster"));
  ASSERT_TRUE(c.topology);
  const auto& t = *c.topology;
  EXPECT_EQ(t.gpus_per_node(), c.gpus_per_node);
  for (int a = 0; a < t.gpus_per_node(); ++a)
    for (int b = 0; b < t.gpus_per_node(); ++b) {
      const auto p = t.path(a, b);
      EXPECT_NE(p.type, PathType::dis);
      EXPECT_GT(gbs(p.bandwidth), 0.0);
    }
  // derived simple bandwidths are positive
  EXPECT_GT(gbs(c.intra_node.bandwidth), 0.0);
  EXPECT_GT(gbs(c.h2d_pinned), 0.0);
}

INSTANTIATE_TEST_SUITE_P(Files, ShippedTopology,
                         ::testing::Values("shi-chu-p40", "dell-c4140-pcie", "dell-c4140-sxm2", "dell-c4130-g", "dgx1v",
                                           "aws-p3dn", "dgx2", "ac922", "exxact-ts4-rtx2080ti", "dgx-a100", "dgx-a100-hdr",
                                           "dgx-h100", "dgx-h100-ndr", "rtx4090-pcie", "dgx-b200", "gb200-nvl72", "dgx-b300",
                                           "gb300-nvl72"),
                         [](const auto& param_info) {
                           std::string s = param_info.param;
                           for (auto& c : s)
                             if (c == '-') c = '_';
                           return s;
                         });

// ---- validation -----------------------------------------------------------------------------------
std::string base_cluster(const std::string& node_section) {
  return "name: t\nnodes: 1\ngpus_per_node: 2\ngpu: v100-sxm2\nstorage: {disk: \"1 GB/s\", page_cache: \"2 GB/s\"}\n" +
      node_section;
}

std::string load_error(const std::string& name, const std::string& text) {
  const auto file = test::temp_file(name, text);
  try {
    (void)load_cluster(file);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(TopologyValidation, UnknownKeyNamesFileLineAndKey) {
  const auto msg =
      load_error("unknown.yaml", base_cluster("node:\n  links:\n    - {a: gpu0, b: gpu1, kind: nvlink, cuont: 2}\n"));
  EXPECT_NE(msg.find("unknown.yaml:8:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("node.links[0].cuont"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown key"), std::string::npos) << msg;
}

TEST(TopologyValidation, DanglingEndpointIsNamed) {
  const auto msg = load_error("dangling.yaml", base_cluster("node:\n  links:\n    - {a: gpu0, b: gpu7, kind: nvlink}\n"));
  EXPECT_NE(msg.find("dangling.yaml:8:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no vertex named 'gpu7'"), std::string::npos) << msg;
}

TEST(TopologyValidation, AsymmetricDuplicateIsAnError) {
  const auto msg = load_error("dup.yaml",
                              base_cluster("node:\n  links:\n    - {a: gpu0, b: gpu1, kind: nvlink, count: 2}\n"
                                           "    - {a: gpu1, b: gpu0, kind: nvlink, count: 1}\n"));
  EXPECT_NE(msg.find("dup.yaml:9:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("asymmetric duplicate"), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 8"), std::string::npos) << msg;
}

// A job on the first K GPUs of each node (--gpus-per-node): the graph keeps those GPUs and what their links still
// reach. GB200 NVL72 at 64: GPUs 64-71 go, and with them Graces 32-35 (each joined only to its two GPUs and its two
// NICs) and NICs mlx5_64-71: 64 NICs, one beside each GPU, as the file has them. A DGX H100 at 4: GPUs 4-7 go, but
// the second socket's PCIe switches and their NICs stay, reached over the sockets' UPI link: 8 NICs.
TEST(Topology, AJobOnPartOfEachNodeKeepsWhatItsGpusReach) {
  ClusterOverrides ov;
  ov.nodes = 2;
  ov.fabric = FabricSpec{"infiniband", gigabytes_per_second(50), 0};
  ov.gpus_per_node = 64;
  const Cluster gb = load_cluster(resolve(DataKind::cluster, "gb200-nvl72", "--cluster"), ov);
  EXPECT_EQ(gb.gpus_per_node, 64);
  ASSERT_TRUE(gb.topology);
  EXPECT_EQ(gb.topology->gpus_per_node(), 64);
  EXPECT_EQ(gb.topology->fabric().nics_per_node, 64);
  EXPECT_EQ(gb.max_gpus(), 128);
  // the NVSwitch path between two kept GPUs is the file's
  ClusterOverrides racks = ov;
  racks.gpus_per_node = 0;  // the whole racks
  const Cluster whole = load_cluster(resolve(DataKind::cluster, "gb200-nvl72", "--cluster"), racks);
  EXPECT_EQ(gbs(gb.topology->path(0, 63).bandwidth), gbs(whole.topology->path(0, 63).bandwidth));
  EXPECT_EQ(whole.topology->fabric().nics_per_node, 72);

  ClusterOverrides half;
  half.gpus_per_node = 4;
  const Cluster dgx = load_cluster(resolve(DataKind::cluster, "dgx-h100-ndr", "--cluster"), half);
  EXPECT_EQ(dgx.gpus_per_node, 4);
  EXPECT_EQ(dgx.topology->gpus_per_node(), 4);
  EXPECT_EQ(dgx.topology->fabric().nics_per_node, 8);

  // all of a node's GPUs: the cluster as the file gives it
  ClusterOverrides all;
  all.gpus_per_node = 8;
  const Cluster same = load_cluster(resolve(DataKind::cluster, "dgx-h100-ndr", "--cluster"), all);
  const Cluster file = load_cluster(resolve(DataKind::cluster, "dgx-h100-ndr", "--cluster"));
  EXPECT_EQ(same.gpus_per_node, 8);
  EXPECT_EQ(same.topology->fabric().nics_per_node, file.topology->fabric().nics_per_node);
  EXPECT_EQ(gbs(same.intra_node.bandwidth), gbs(file.intra_node.bandwidth));
}

TEST(TopologyValidation, ImpossibleLinksAreRejected) {
  auto msg = load_error("cpu-nvl.yaml",
                        base_cluster("node:\n  cpus:\n    - {name: c0, arch: x86}\n    - {name: c1, arch: x86}\n"
                                     "  links:\n    - {a: gpu0, b: gpu1, kind: nvlink}\n    - {a: c0, b: c1, kind: nvlink}\n"));
  EXPECT_NE(msg.find("NVLink joins a GPU"), std::string::npos) << msg;
  msg = load_error("pcie.yaml", base_cluster("node:\n  pcie_switches: [s]\n  links:\n    - {a: gpu0, b: s, kind: pcie}\n"));
  EXPECT_NE(msg.find("needs 'generation' and 'lanes'"), std::string::npos) << msg;
  msg = load_error("bad-unit.yaml",
                   base_cluster("node:\n  links:\n    - {a: gpu0, b: gpu1, kind: nvlink, bandwidth: \"25 GBs\"}\n"));
  EXPECT_NE(msg.find("node.links[0].bandwidth"), std::string::npos) << msg;
}

TEST(TopologyValidation, SeveralNodesNeedAFabricAndANic) {
  std::string text = base_cluster("node:\n  links:\n    - {a: gpu0, b: gpu1, kind: nvlink}\n");
  text.replace(text.find("nodes: 1"), 8, "nodes: 2");
  auto msg = load_error("nofabric.yaml", text);
  EXPECT_NE(msg.find("needs a 'fabric'"), std::string::npos) << msg;
  msg = load_error("nonic.yaml", text + "fabric: {kind: infiniband, speed: \"100 Gb/s\"}\n");
  EXPECT_NE(msg.find("at least one NIC"), std::string::npos) << msg;
}

// PXN (NCCL's default): GPU 1 sits under the other socket from the only NIC, but has NVLinks to GPU 0,
// which shares a PCIe switch with it. NCCL sends GPU 1's network traffic over NVLink to GPU 0 and out
// through that switch (PATH_PXN), where the GPU's own path crosses the sockets (SYS). The route is as wide
// as its narrowest link: the Gen3 x16 PCIe hop, 12 GB/s as NCCL rates it.
TEST(Topology, PxnRoutesThroughTheGpuBesideTheNic) {
  const auto file = test::temp_file(
      "pxn.yaml",
      base_cluster("node:\n  cpus:\n    - {name: c0, arch: x86}\n    - {name: c1, arch: x86}\n  pcie_switches: [s0, s1]\n"
                   "  nics:\n    - {name: nic0, speed: \"100 Gb/s\"}\n"
                   "  links:\n    - {a: gpu0, b: gpu1, kind: nvlink, count: 2}\n"
                   "    - {a: gpu0, b: s0, kind: pcie, generation: 3, lanes: 16}\n    - {a: nic0, b: s0, kind: pcie, generation: "
                   "3, lanes: 16}\n"
                   "    - {a: s0, b: c0, kind: pcie, generation: 3, lanes: 16}\n    - {a: gpu1, b: s1, kind: pcie, generation: "
                   "3, lanes: 16}\n"
                   "    - {a: s1, b: c1, kind: pcie, generation: 3, lanes: 16}\n    - {a: c0, b: c1, kind: smp}\n"));
  const Cluster c = load_cluster(file);
  ASSERT_TRUE(c.topology);
  const auto own = c.topology->nic_route(0, 0);
  EXPECT_FALSE(own.pxn);
  EXPECT_EQ(own.path.type, PathType::pix);
  const auto relayed = c.topology->nic_route(1, 0);
  EXPECT_TRUE(relayed.pxn);
  EXPECT_DOUBLE_EQ(in_gigabytes_per_second(relayed.path.bandwidth), 12.0);
  EXPECT_EQ(c.topology->nic_path(1, 0).type, PathType::sys);  // what nvidia-smi would show
  const auto shown = test::run_cli("topo show " + file.string());
  ASSERT_EQ(shown.status, 0) << shown.err;
  EXPECT_NE(shown.out.find("GPU1\tnic0 (PXN, 12 GB/s)"), std::string::npos) << shown.out;
}

TEST(TopologyCli, ShowPrintsTheNvidiaSmiStyleMatrix) {
  const auto r = test::run_cli("topo show dgx1v");
  ASSERT_EQ(r.status, 0) << r.err;
  // the GPU0 row: X, NV1 (1), NV1 (2), NV2 (3), NV2 (4), then NVB to 5, 6, 7; PIX to mlx5_0
  EXPECT_NE(r.out.find("GPU0\t X \tNV1\tNV1\tNV2\tNV2\tNVB\tNVB\tNVB\tPIX\tPHB\tSYS\tSYS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nvlink x2"), std::string::npos);
}

// topo show --format json (docs/topology.md, "topo show --format json"): the figures of topologies/dgx1v.yaml by
// hand, and every cell of both tables (path types, and GB/s with --bandwidth) a field of the JSON.
TEST(TopologyCli, ShowJsonCarriesTheFileFiguresAndEveryTableCell) {
  const auto r = test::run_cli("topo show dgx1v --format json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], 1);
  EXPECT_EQ(j["command"], "topo show");
  EXPECT_EQ(j["nodes"], 4);
  EXPECT_EQ(j["gpus_per_node"], 8);
  EXPECT_EQ(j["nics"], nlohmann::json({"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}));
  ASSERT_EQ(j["gpus"].size(), 8u);
  const auto& g0 = j["gpus"][0];
  ASSERT_EQ(g0["peers"].size(), 7u);  // every other GPU of the node
  const auto peer = [&](int b) {
    for (const auto& p : g0["peers"])
      if (p["gpu"] == b) return p;
    return nlohmann::json();
  };
  // gpu0-gpu3: two NVLinks of a V100 (SM70), 2 × 20 GB/s; gpu0-gpu1: one, 20; gpu0-gpu5 has none: through gpu4
  // (2 + 1 links) or gpu1 (1 + 2), NVB at the narrower hop, 20 GB/s.
  EXPECT_EQ(peer(3)["path"], "NVL");
  EXPECT_EQ(peer(3)["nvlinks"], 2);
  EXPECT_TRUE(peer(3)["p2p"].get<bool>());
  EXPECT_DOUBLE_EQ(peer(3)["bandwidth_gb_per_s"].get<double>(), 40.0);
  EXPECT_EQ(peer(1)["nvlinks"], 1);
  EXPECT_DOUBLE_EQ(peer(1)["bandwidth_gb_per_s"].get<double>(), 20.0);
  EXPECT_EQ(peer(5)["path"], "NVB");
  EXPECT_EQ(peer(5)["nvlinks"], 0);
  EXPECT_DOUBLE_EQ(peer(5)["bandwidth_gb_per_s"].get<double>(), 20.0);
  // gpu0 and mlx5_0 share plx0: PIX, a Gen3 x16 hop, 16 × 60 / 80 = 12 GB/s; the widest route is that NIC.
  EXPECT_EQ(g0["nics"][0]["path"], "PIX");
  EXPECT_DOUBLE_EQ(g0["nics"][0]["bandwidth_gb_per_s"].get<double>(), 12.0);
  ASSERT_EQ(g0["nic_routes"].size(), 1u);
  EXPECT_EQ(g0["nic_routes"][0]["nic"], "mlx5_0");
  EXPECT_FALSE(g0["nic_routes"][0]["pxn"].get<bool>());
  // 16 NVLink bundles, 16 PCIe links and the QPI of the file; the fabric: 100 Gb/s = 12.5 GB/s a NIC, four a node.
  ASSERT_EQ(j["links"].size(), 33u);
  EXPECT_EQ(j["links"][0], nlohmann::json::parse(R"({"a": "gpu0", "b": "gpu3", "kind": "nvlink", "nvlinks": 2,
      "pcie_generation": null, "pcie_lanes": null, "bandwidth_gb_per_s": 40.0})"));
  int pcie = 0;
  for (const auto& l : j["links"])
    if (l["kind"] == "pcie") {
      ++pcie;
      EXPECT_EQ(l["pcie_generation"], 3);
      EXPECT_EQ(l["pcie_lanes"], 16);
      EXPECT_DOUBLE_EQ(l["bandwidth_gb_per_s"].get<double>(), 12.0);
    }
  EXPECT_EQ(pcie, 16);
  EXPECT_EQ(j["fabric"]["kind"], "infiniband");
  EXPECT_EQ(j["fabric"]["nics_per_node"], 4);
  EXPECT_DOUBLE_EQ(j["fabric"]["nic_bandwidth_gb_per_s"].get<double>(), 12.5);
  EXPECT_TRUE(j["fabric"]["single_flow_gb_per_s"].is_null());

  // Every cell of the two tables: the row of GPU a, its columns the GPUs then the NICs.
  const auto types = test::run_cli("topo show dgx1v"), widths = test::run_cli("topo show dgx1v --bandwidth");
  ASSERT_EQ(types.status, 0);
  ASSERT_EQ(widths.status, 0);
  const auto rows = [](const std::string& text) {
    std::vector<std::vector<std::string>> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("GPU", 0) != 0 || line.find(" (") != std::string::npos) continue;  // not the routes' lines
      std::vector<std::string> cells;
      std::istringstream cs(line);
      for (std::string c; std::getline(cs, c, '\t');) cells.push_back(c);
      out.push_back(cells);
    }
    return out;
  };
  const auto t = rows(types.out), w = rows(widths.out);
  ASSERT_EQ(t.size(), 8u);
  ASSERT_EQ(w.size(), 8u);
  for (int a = 0; a < 8; ++a) {
    const auto& ja = j["gpus"][static_cast<std::size_t>(a)];
    ASSERT_EQ(t[a].size(), 1u + 8 + 4) << types.out;
    for (const auto& p : ja["peers"]) {
      const int b = p["gpu"].get<int>();
      const std::string type =
          p["nvlinks"].get<int>() > 0 ? "NV" + std::to_string(p["nvlinks"].get<int>()) : p["path"].get<std::string>();
      EXPECT_EQ(t[a][1 + b], type + (p["p2p"].get<bool>() ? "" : "*")) << a << "-" << b;
      EXPECT_EQ(w[a][1 + b], fmt::format("{:g}", p["bandwidth_gb_per_s"].get<double>())) << a << "-" << b;
    }
    for (std::size_t k = 0; k < 4; ++k) {
      EXPECT_EQ(t[a][9 + k], ja["nics"][k]["path"].get<std::string>());
      EXPECT_EQ(w[a][9 + k], fmt::format("{:g}", ja["nics"][k]["bandwidth_gb_per_s"].get<double>()));
    }
  }
}

TEST(TopologyCli, GoldenJsonOfDgx1v) {
  const auto r = test::run_cli("topo show dgx1v --format json");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, test::slurp(std::filesystem::path(DLSCALE_SOURCE_DIR) / "tests/golden/topo-show-dgx1v.json"))
      << "refresh on purpose with tests/golden/refresh.sh";
}

TEST(TopologyCli, ShowJsonOfOneNodeHasNoFabric) {
  const auto r = test::run_cli("topo show dgx2 --format json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["gpus_per_node"], 16);
  // DGX-2: every pair through the NVSwitches (six NVLinks a GPU, none between GPUs), P2P
  for (const auto& p : j["gpus"][0]["peers"]) {
    EXPECT_EQ(p["path"], "NVL");
    EXPECT_EQ(p["nvlinks"], 0);
  }
  EXPECT_EQ(j["nodes"], 1);  // topologies/dgx2.yaml: one node, so no fabric
  EXPECT_TRUE(j["fabric"].is_null());
}

TEST(TopologyCli, ImportWritesAFileAndFailsCleanly) {
  const auto dir = std::filesystem::temp_directory_path() / ("dlscale-topo-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto out = dir / "dgx1v-imported.yaml";
  auto r = test::run_cli("topo import nccl-xml " + std::string(DLSCALE_TEST_DATA_DIR) + "/topo/dgx1v-nccl-topo.xml -o " +
                         out.string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(out));
  const auto bad = test::temp_file("broken.xml", "<system>\n<cpu>\n");
  const auto out2 = dir / "never.yaml";
  r = test::run_cli("topo import nccl-xml " + bad.string() + " -o " + out2.string());
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(r.out.empty());
  EXPECT_FALSE(std::filesystem::exists(out2));
  EXPECT_NE(r.err.find("broken.xml:"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace dlscale
