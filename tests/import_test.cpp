// The importers of topology dumps (lib/import): nvidia-smi topo -m and NCCL's XML, read into a cluster
// YAML whose graph the topology loader builds. The captures must round-trip to the shipped DGX-1V graph;
// the layouts of other driver and NCCL versions (tests/data/layouts, written by hand in each tool's
// format) give the counts their comments work out; a small matrix written here gives each field it says.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

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

// ---- captures of the shipped DGX-1V ---------------------------------------------------------------
using test::slurp;

void expect_same_graph_as_dgx1v(const std::string& yaml, const std::string& name) {
  const auto file = test::temp_file(name, yaml);
  const Cluster imported = load_cluster(file);
  ASSERT_TRUE(imported.topology);
  const auto& a = *imported.topology;
  const auto& b = topo_of("dgx1v");
  ASSERT_EQ(a.gpus_per_node(), 8);
  for (int x = 0; x < 8; ++x)
    for (int y = 0; y < 8; ++y) {
      const auto pa = a.path(x, y), pb = b.path(x, y);
      EXPECT_EQ(pa.type, pb.type) << x << "-" << y;
      EXPECT_DOUBLE_EQ(gbs(pa.bandwidth), gbs(pb.bandwidth)) << x << "-" << y;
      EXPECT_EQ(pa.nvlinks, pb.nvlinks) << x << "-" << y;
      EXPECT_EQ(pa.p2p, pb.p2p) << x << "-" << y;
    }
  for (const auto& nic : b.nic_names())
    for (int g = 0; g < 8; ++g)
      EXPECT_EQ(a.nic_path(g, nic_index(a, nic)).type, b.nic_path(g, nic_index(b, nic)).type) << nic << " " << g;
  const std::vector<int> all{0, 1, 2, 3, 4, 5, 6, 7};
  const auto ra = a.channels(ChannelPattern::ring, all, 1), rb = b.channels(ChannelPattern::ring, all, 1);
  EXPECT_EQ(ra.channels, rb.channels);
  EXPECT_DOUBLE_EQ(gbs(ra.bw_intra), gbs(rb.bw_intra));
}

TEST(TopologyImport, NvidiaSmiCaptureRoundTripsToDgx1v) {
  const std::string yaml =
      import_nvidia_smi(slurp(std::filesystem::path(DLSCALE_TEST_DATA_DIR) / "topo/dgx1v-nvidia-smi.txt"), "dgx1v-smi.txt");
  expect_same_graph_as_dgx1v(yaml, "from-smi.yaml");
}

TEST(TopologyImport, NcclXmlDumpRoundTripsToDgx1v) {
  const std::string yaml =
      import_nccl_xml(slurp(std::filesystem::path(DLSCALE_TEST_DATA_DIR) / "topo/dgx1v-nccl-topo.xml"), "dgx1v.xml");
  EXPECT_NE(yaml.find("model: broadwell"), std::string::npos);  // family 6 model 79
  EXPECT_NE(yaml.find("gpu: v100-sxm2"), std::string::npos);    // sm 70 with NVLinks
  expect_same_graph_as_dgx1v(yaml, "from-xml.yaml");
}

TEST(TopologyImport, MalformedXmlNamesTheLine) {
  try {
    (void)import_nccl_xml("<system version=\"1\">\n  <cpu numaid=\"0\">\n    <pci busid=\"x\">\n  </cpu>\n</system>\n",
                          "bad.xml");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.xml:4:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("does not match"), std::string::npos) << e.what();
  }
}

// ---- layouts of other driver and NCCL versions (tests/data/layouts, written by hand in each tool's format) ----

std::string layout(const std::string& rel) { return slurp(std::filesystem::path(DLSCALE_TEST_DATA_DIR) / "layouts" / rel); }

int count_links(const Topology& t, LinkKind kind) {
  int n = 0;
  for (const auto& l : t.links()) n += l.kind == kind;
  return n;
}

int count_vertices(const Topology& t, VertexKind kind) {
  int n = 0;
  for (const auto& v : t.vertices()) n += v.kind == kind;
  return n;
}

// Driver 384 (2017): NICs are columns named by device (mlx5_0 …), the socket link is SOC; a DGX-1 with
// P100s, one NVLink between each of the 16 hybrid cube-mesh pairs (4 per GPU: a P100 SXM2).
TEST(ImportLayouts, NvidiaSmiDriver384WithSocAndDeviceNamedNics) {
  std::vector<std::string> warnings;
  const std::string yaml =
      import_nvidia_smi(layout("nvidia-smi/dgx1-p100-driver384-soc-mlx5-columns.txt"), "d.txt", {}, &warnings);
  const Cluster c = parse_cluster(yaml, "d.yaml");
  ASSERT_TRUE(c.topology);
  EXPECT_EQ(c.gpus_per_node, 8);
  EXPECT_EQ(count_links(*c.topology, LinkKind::nvlink), 16);
  EXPECT_EQ(c.topology->path(0, 4).nvlinks, 1);  // NV1
  EXPECT_EQ(c.topology->path(0, 5).nvlinks, 0);  // SOC
  EXPECT_EQ(c.topology->nic_names(), (std::vector<std::string>{"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}));
  EXPECT_EQ(c.topology->nic_path(0, 0).type, PathType::pix);   // GPU0-mlx5_0 PIX
  EXPECT_EQ(count_vertices(*c.topology, VertexKind::cpu), 2);  // affinities 0-19,40-59 and 20-39,60-79
  EXPECT_NE(yaml.find("gpu: p100-sxm2"), std::string::npos) << yaml;
}

// An HGX H100 as nvidia-smi prints it on a terminal: the header underlined (ESC[4m … ESC[0m), CRLF line
// ends, NUMA Affinity 0/1, GPU NUMA ID N/A, NIC0..NIC11 named by the NIC Legend; NV18 to 7 peers is more
// than a GPU has: NVSwitches, 18 links each.
TEST(ImportLayouts, NvidiaSmiUnderlinedHeaderWithCrlf) {
  const Cluster c = parse_cluster(import_nvidia_smi(layout("nvidia-smi/hgx-h100-underlined-header-crlf.txt"), "h.txt"), "h.yaml");
  ASSERT_TRUE(c.topology);
  EXPECT_EQ(c.gpus_per_node, 8);
  EXPECT_EQ(c.gpu.sm_version, 90);
  EXPECT_EQ(c.gpu.nvlink_count, 18);
  EXPECT_EQ(c.topology->path(0, 7).type, PathType::nvl);
  const auto nics = c.topology->nic_names();
  ASSERT_EQ(nics.size(), 12U);
  EXPECT_EQ(nics.front(), "mlx5_0");
  EXPECT_EQ(nics.back(), "mlx5_11");
  EXPECT_EQ(c.topology->nic_path(1, nic_index(*c.topology, "mlx5_1")).type, PathType::pix);  // GPU1-NIC1 PIX
  EXPECT_EQ(count_vertices(*c.topology, VertexKind::cpu), 2);
}

// DGX-2: 16 GPUs, NV6 between every pair (the NVSwitches), 10 NICs as device-named columns.
TEST(ImportLayouts, NvidiaSmiSixteenGpusOnNvswitches) {
  const Cluster c = parse_cluster(import_nvidia_smi(layout("nvidia-smi/dgx2-16gpu-nv6-mlx5-columns.txt"), "x.txt"), "x.yaml");
  ASSERT_TRUE(c.topology);
  EXPECT_EQ(c.gpus_per_node, 16);
  EXPECT_EQ(c.gpu.nvlink_count, 6);
  EXPECT_EQ(count_vertices(*c.topology, VertexKind::nvswitch), 1);
  EXPECT_EQ(c.topology->path(0, 15).type, PathType::nvl);
  EXPECT_EQ(c.topology->nic_names().size(), 10U);
  EXPECT_EQ(c.topology->nic_path(15, nic_index(*c.topology, "mlx5_7")).type, PathType::pix);  // GPU14/15 share mlx5_7
}

// A GB200 compute tray: 4 GPUs NV18, two Grace sockets (NUMA 0 and 1), GPU NUMA ID a number (2, 10, 18,
// 26), NIC0..NIC5 with a legend, a shell prompt first.
TEST(ImportLayouts, NvidiaSmiGb200TrayWithGpuNumaIds) {
  TopologyImportOptions opt;
  opt.cpu = "arm";
  const Cluster c = parse_cluster(import_nvidia_smi(layout("nvidia-smi/gb200-tray-gpu-numa-id.txt"), "g.txt", opt), "g.yaml");
  ASSERT_TRUE(c.topology);
  EXPECT_EQ(c.gpus_per_node, 4);
  EXPECT_EQ(c.topology->path(0, 3).type, PathType::nvl);  // 3 x NV18 = 54 links: NVSwitches
  EXPECT_EQ(count_vertices(*c.topology, VertexKind::cpu), 2);
  EXPECT_EQ(c.topology->nic_names().size(), 6U);
  EXPECT_EQ(c.topology->nic_path(0, nic_index(*c.topology, "mlx5_3")).type, PathType::sys);  // NIC3 on the other socket
}

// The same tray captured by pdsh on two hosts at once: the lines interleave, each after "host: ". The
// first host's capture is read: 4 GPUs, not 8.
TEST(ImportLayouts, NvidiaSmiPdshOfTwoHosts) {
  const Cluster c = parse_cluster(import_nvidia_smi(layout("nvidia-smi/gb200-tray-pdsh-two-hosts.txt"), "p.txt"), "p.yaml");
  ASSERT_TRUE(c.topology);
  EXPECT_EQ(c.gpus_per_node, 4);
  EXPECT_EQ(c.topology->nic_names().size(), 6U);
}

// NCCL 2.19 dump of a job on GPUs 4-7 of an HGX H100 (dev = NVML index 4..7), an <?xml?> prolog and a
// comment, a root port of speed "Unknown", a switch without link_width, GPU7 at 2.5 GT/s with width 0,
// NVLinks to 4 NVSwitches (4+5+4+5 = 18, or 18 to one), a 400 Gb/s NIC with coll="1".
TEST(ImportLayouts, NcclXmlGpusNumberedByNvmlIndex) {
  std::vector<std::string> warnings;
  const std::string yaml = import_nccl_xml(layout("nccl-xml/hgx-h100-gpus-4-to-7-prolog.xml"), "h.xml", {}, &warnings);
  const Cluster c = parse_cluster(yaml, "h.yaml");
  ASSERT_TRUE(c.topology);
  EXPECT_EQ(c.gpus_per_node, 4);
  EXPECT_EQ(c.gpu.nvlink_count, 18);
  EXPECT_EQ(c.topology->path(0, 3).type, PathType::nvl);
  EXPECT_NE(yaml.find("{name: mlx5_4, speed: \"400000 Mb/s\"}"), std::string::npos) << yaml;
  // GPU0 (dev 4) and the NIC behind one Gen5 x16 switch: 16 lanes x 240 / 80 = 48 GB/s, under the NIC's 50
  EXPECT_EQ(c.topology->nic_path(0, nic_index(*c.topology, "mlx5_4")).type, PathType::pix);
  EXPECT_DOUBLE_EQ(gbs(c.topology->nic_path(0, nic_index(*c.topology, "mlx5_4")).bandwidth), 48.0);
  EXPECT_NE(yaml.find("{a: gpu3, b: cpu1, kind: pcie, generation: 1, lanes: 16}"), std::string::npos) << yaml;  // dev 7
  ASSERT_FALSE(warnings.empty());
  EXPECT_NE(warnings.front().find("GPUs dev 4, 5, 6, 7"), std::string::npos) << warnings.front();
}

// GB200 (NCCL 2.23): arm64 CPUs without a vendor, host_hash, <c2c> in each <gpu>, NVLinks to switches outside
// the tray (target fffffff:ffff:ff), GPU links of empty speed and width 0.
TEST(ImportLayouts, NcclXmlGb200WithC2c) {
  std::vector<std::string> warnings;
  const std::string yaml = import_nccl_xml(layout("nccl-xml/gb200-tray-c2c.xml"), "g.xml", {}, &warnings);
  const Cluster c = parse_cluster(yaml, "g.yaml");
  ASSERT_TRUE(c.topology);
  EXPECT_EQ(c.gpus_per_node, 4);
  EXPECT_NE(yaml.find("arch: arm"), std::string::npos);
  EXPECT_EQ(c.topology->path(1, 2).type, PathType::nvl);
  bool said = false;
  for (const auto& w : warnings) said = said || w.find("4 GPU(s) with a <c2c> link") != std::string::npos;
  EXPECT_TRUE(said);
}

// An NCCL_TOPO_FILE written for a VM (Azure's nd*-topo.xml style): GPUs (0x0302) and NICs (0x0207) are
// bare <pci> elements; two per switch, a switch per socket.
TEST(ImportLayouts, NcclXmlGpusAndNicsByPciClassAlone) {
  std::vector<std::string> warnings;
  // no <gpu> element names the model: --gpu must (issue 35: it was imported as the catalogue's first GPU)
  try {
    (void)import_nccl_xml(layout("nccl-xml/vm-topo-file-pci-class-only.xml"), "v.xml");
    ADD_FAILURE() << "GPUs by PCI class alone imported without a GPU";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "gpu");  // TopologyImportOptions::gpu; the command line says --gpu
  }
  TopologyImportOptions opt;
  opt.gpu = "v100-sxm2";
  const std::string yaml = import_nccl_xml(layout("nccl-xml/vm-topo-file-pci-class-only.xml"), "v.xml", opt, &warnings);
  const Cluster c = parse_cluster(yaml, "v.yaml");
  EXPECT_EQ(c.gpu.sm_version, 70);
  ASSERT_TRUE(c.topology);
  EXPECT_EQ(c.gpus_per_node, 4);
  EXPECT_EQ(c.topology->nic_names(), (std::vector<std::string>{"nic0", "nic1", "nic2", "nic3"}));
  EXPECT_EQ(count_links(*c.topology, LinkKind::nvlink), 0);
  EXPECT_EQ(c.topology->path(0, 1).type, PathType::pix);
  EXPECT_EQ(c.topology->path(0, 2).type, PathType::sys);
  EXPECT_EQ(c.topology->nic_path(3, 2).type, PathType::pix);
  ASSERT_FALSE(warnings.empty());
  EXPECT_NE(warnings.front().find("4 GPU(s) and 4 NIC(s) are placed by their PCI class alone"), std::string::npos);
}

// POWER9 (AC922): NVLinks to the CPU have tclass 0x068001, three links each; three between the GPU pair.
TEST(ImportLayouts, NcclXmlPower9NvlinksToTheCpu) {
  const std::string yaml = import_nccl_xml(layout("nccl-xml/power9-nvlink-to-cpu.xml"), "p.xml");
  EXPECT_NE(yaml.find("{a: gpu0, b: cpu0, kind: nvlink, count: 3}"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("{a: gpu2, b: cpu8, kind: nvlink, count: 3}"), std::string::npos) << yaml;
  const Cluster c = parse_cluster(yaml, "p.yaml");
  ASSERT_TRUE(c.topology);
  EXPECT_EQ(c.topology->path(0, 1).nvlinks, 3);
}

// GPUs of PCI class 0x0380 (display controller) NVLinked to each other: a GPU-to-GPU link, not one to the CPU.
TEST(ImportLayouts, NcclXmlDisplayClassGpus) {
  const Cluster c = parse_cluster(import_nccl_xml(layout("nccl-xml/display-class-gpus-nvlink.xml"), "d.xml"), "d.yaml");
  ASSERT_TRUE(c.topology);
  EXPECT_EQ(c.topology->path(0, 1).nvlinks, 4);
}

// ---- a matrix written here -----------------------------------------------------------------------

// Two sockets (CPU affinity 0-9 and 10-19), a pair of GPUs on each joined by two NVLinks (NV2), SYS
// across the sockets; one NIC on GPU0's PCIe switch (PIX), behind GPU1's host bridge (PHB).
constexpr const char* kTwoPairs =
    "\tGPU0\tGPU1\tGPU2\tGPU3\tmlx5_0\tCPU Affinity\n"
    "GPU0\t X \tNV2\tSYS\tSYS\tPIX\t0-9\n"
    "GPU1\tNV2\t X \tSYS\tSYS\tPHB\t0-9\n"
    "GPU2\tSYS\tSYS\t X \tNV2\tSYS\t10-19\n"
    "GPU3\tSYS\tSYS\tNV2\t X \tSYS\t10-19\n";

TEST(ImportNvidiaSmi, EachCellOfASmallMatrixBecomesItsLink) {
  const Cluster c = parse_cluster(import_nvidia_smi(kTwoPairs, "pairs.txt"), "pairs.yaml");
  ASSERT_TRUE(c.topology);
  const Topology& t = *c.topology;
  EXPECT_EQ(c.gpus_per_node, 4);
  EXPECT_EQ(t.path(0, 1).nvlinks, 2);  // NV2
  EXPECT_EQ(t.path(2, 3).nvlinks, 2);
  EXPECT_EQ(t.path(0, 1).type, PathType::nvl);
  EXPECT_EQ(t.path(1, 2).type, PathType::sys);  // SYS: across the sockets
  EXPECT_EQ(t.path(1, 2).nvlinks, 0);
  EXPECT_EQ(count_vertices(t, VertexKind::cpu), 2);  // two affinities
  EXPECT_EQ(t.nic_names(), (std::vector<std::string>{"mlx5_0"}));
  EXPECT_EQ(t.nic_path(0, 0).type, PathType::pix);
  EXPECT_EQ(t.nic_path(1, 0).type, PathType::phb);
  EXPECT_EQ(t.nic_path(3, 0).type, PathType::sys);
}

// An NVLink cell that is no count is an InputError at its line and column: line 3 (the GPU1 row), column
// 14 (the cell under GPU2 starts after "GPU1\tNV2\t X \t", 13 characters).
TEST(ImportNvidiaSmi, ABadNvlinkCellNamesItsLineAndColumn) {
  std::string bad = kTwoPairs;
  const std::string row = "GPU1\tNV2\t X \tSYS";
  bad.replace(bad.find(row), row.size(), "GPU1\tNV2\t X \tNVQ");
  try {
    (void)import_nvidia_smi(bad, "bad.txt");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "bad.txt:3:14: 'NVQ' is not an NVLink count like NV2");
  }
}

}  // namespace
}  // namespace dlscale
