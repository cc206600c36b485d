// Every file real users published that tests/data/real-inputs keeps (SOURCES.md there names each one's
// origin): imported as it is, loaded, and checked against what the file itself says, counted by hand.
// The nccl-tests logs are also compared with the topology they describe (shipped or imported).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "dlscale/calibration.hpp"
#include "dlscale/collective.hpp"
#include "dlscale/io.hpp"
#include "dlscale/topology.hpp"
#include "nccl/model.hpp"
#include "nccl/table.hpp"
#include "support/run.hpp"

namespace dlscale {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

fs::path real(const std::string& rel) { return fs::path(DLSCALE_TEST_DATA_DIR) / "real-inputs" / rel; }
std::string text(const std::string& rel) { return test::slurp(real(rel)); }
double gbs(BytesPerSecond b) { return in_gigabytes_per_second(b); }

int nic_index(const Topology& t, const std::string& name) {
  const auto names = t.nic_names();
  return static_cast<int>(std::find(names.begin(), names.end(), name) - names.begin());
}

int nvlink_links(const Topology& t) {
  int n = 0;
  for (const auto& l : t.links()) n += l.kind == LinkKind::nvlink;
  return n;
}

// ---- nvidia-smi topo -m -----------------------------------------------------------------------------

// 8 x A100, NV12 between every pair, 17 NICs (NIC0..NIC16 named by the NIC Legend), space-separated, with
// NUMA Affinity and GPU NUMA ID columns.
TEST(RealInputs, NvidiaSmiA100With17NicsAndGpuNumaId) {
  std::vector<std::string> warnings;
  const std::string yaml = import_nvidia_smi(text("nvidia-smi/a100-8gpu-17nic-gpunumaid.txt"), "a100.txt", {}, &warnings);
  const Cluster c = parse_cluster(yaml, "a100.yaml");
  ASSERT_TRUE(c.topology);
  EXPECT_EQ(c.gpus_per_node, 8);
  // NV12 to 7 peers is 84 links, more than a GPU has: NVSwitches, 12 links per GPU → an A100 SXM
  EXPECT_EQ(c.gpu.sm_version, 80);
  EXPECT_EQ(c.gpu.nvlink_count, 12);
  EXPECT_EQ(c.topology->path(0, 7).type, PathType::nvl);
  const auto nics = c.topology->nic_names();
  ASSERT_EQ(nics.size(), 17U);
  EXPECT_NE(std::find(nics.begin(), nics.end(), "mlx5_2"), nics.end());       // NIC0: mlx5_2
  EXPECT_NE(std::find(nics.begin(), nics.end(), "mlx5_bond_0"), nics.end());  // NIC16: mlx5_bond_0
  // GPU0–NIC0 is PXB in the capture (NIC0 and NIC1 are PIX: two ports behind one switch)
  EXPECT_EQ(c.topology->nic_path(0, nic_index(*c.topology, "mlx5_2")).type, PathType::pxb);
  EXPECT_THAT(yaml, HasSubstr("gpu: a100-sxm4-40gb"));
  EXPECT_THAT(yaml, HasSubstr("# gpu 'a100-sxm4-40gb' guessed from 12 NVLinks per GPU"));
  ASSERT_EQ(warnings.size(), 2U);  // the CPU and the GPU were guessed, and it says so
  EXPECT_THAT(warnings[1], HasSubstr("--gpu ID says which"));
}

// 2 x GTX 1080 Ti, PHB, "NUMA Affinity N/A", a shell prompt before the matrix.
TEST(RealInputs, NvidiaSmiTwoGeForcesOnAHostBridge) {
  TopologyImportOptions opt;
  opt.gpu = "rtx2080ti";  // the closest GeForce of the catalogue, named as a user would
  const Cluster c = parse_cluster(import_nvidia_smi(text("nvidia-smi/gtx1080ti-2gpu-phb-home.txt"), "g.txt", opt), "g.yaml");
  ASSERT_TRUE(c.topology);
  EXPECT_EQ(c.gpus_per_node, 2);
  EXPECT_EQ(c.gpu.name, find_gpu("rtx2080ti").name);
  EXPECT_TRUE(c.topology->nic_names().empty());
  EXPECT_EQ(c.topology->path(0, 1).type, PathType::phb);
}

// 8 x RTX 4090 on 2 x EPYC in NPS4 (NUMA nodes 0-7), all pairs SYS, 4 NICs behind GPU6 with a legend.
TEST(RealInputs, NvidiaSmiRtx4090OnEightNumaNodes) {
  TopologyImportOptions opt;
  opt.gpu = "rtx4090";
  opt.cpu = "amd";
  const std::string yaml = import_nvidia_smi(text("nvidia-smi/rtx4090-8gpu-epyc-sys-4nic.txt"), "r.txt", opt);
  const Cluster c = parse_cluster(yaml, "r.yaml");
  ASSERT_TRUE(c.topology);
  EXPECT_EQ(c.gpus_per_node, 8);
  int cpus = 0;
  for (const auto& v : c.topology->vertices()) cpus += v.kind == VertexKind::cpu;
  EXPECT_EQ(cpus, 8);  // one per NUMA node, as NCCL sees them
  EXPECT_THAT(yaml, HasSubstr("kind: infinity_fabric"));
  for (int a = 0; a < 8; ++a)
    for (int b = a + 1; b < 8; ++b) EXPECT_EQ(c.topology->path(a, b).type, PathType::sys) << a << " " << b;
  EXPECT_EQ(c.topology->nic_names(), (std::vector<std::string>{"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}));
  EXPECT_EQ(c.topology->nic_path(6, 0).type, PathType::phb);
  EXPECT_EQ(c.topology->nic_path(0, 0).type, PathType::sys);
}

// 8 x V100 SXM2 (hybrid cube-mesh with another NV1/NV2 numbering than DGX-1), tab-separated, 2019.
TEST(RealInputs, NvidiaSmiV100HybridCubeMesh) {
  const Cluster c = parse_cluster(import_nvidia_smi(text("nvidia-smi/v100-sxm2-8gpu-hcm-2019.txt"), "v.txt"), "v.yaml");
  ASSERT_TRUE(c.topology);
  EXPECT_EQ(c.gpus_per_node, 8);
  EXPECT_EQ(c.gpu.sm_version, 70);           // NV1+NV1+NV2+NV2 = 6 links per GPU: a V100 SXM2
  EXPECT_EQ(nvlink_links(*c.topology), 16);  // 4 peers per GPU, each pair once
  EXPECT_EQ(c.topology->path(0, 3).nvlinks, 2);
  EXPECT_EQ(c.topology->path(0, 1).nvlinks, 1);
  EXPECT_EQ(c.topology->path(0, 4).nvlinks, 0);  // SYS in the capture
}

// ---- NCCL topology XML ------------------------------------------------------------------------------

// Azure NC A100 v4: link_speed="" link_width="0" (NCCL: Gen3 x16), a <nic> straight under a <cpu>.
TEST(RealInputs, NcclXmlAzureVmWithEmptyLinkAttributes) {
  std::vector<std::string> warnings;
  const std::string yaml = import_nccl_xml(text("nccl-xml/azure-ncv4-a100pcie-4gpu-2023.txt"), "az.xml", {}, &warnings);
  EXPECT_THAT(yaml, Not(HasSubstr("lanes: 0")));
  const Cluster c = parse_cluster(yaml, "az.yaml");
  ASSERT_TRUE(c.topology);
  EXPECT_EQ(c.gpus_per_node, 4);
  EXPECT_EQ(c.gpu.sm_version, 80);
  EXPECT_EQ(c.topology->path(0, 1).nvlinks, 12);
  EXPECT_EQ(c.topology->path(2, 3).nvlinks, 12);
  EXPECT_EQ(c.topology->nic_names(), std::vector<std::string>{"eth0"});  // kept, not dropped
  // Gen3 x16 as NCCL rates it: 16 lanes x 60 / 80 = 12 GB/s
  for (const auto& l : c.topology->links()) {
    if (l.kind == LinkKind::pcie && l.a == "gpu0") {
      EXPECT_DOUBLE_EQ(gbs(l.bandwidth), 12.0);
    }
  }
  EXPECT_THAT(warnings.front(), HasSubstr("4 PCI link(s) without a link_speed or link_width"));
}

// OCI BM.GPU.H100.8: 8 x H100 on 4 NVSwitches (4 or 5 links to each, 18 in all), 16 NIC ports at 200 Gb/s.
TEST(RealInputs, NcclXmlOciH100) {
  const Cluster c = parse_cluster(import_nccl_xml(text("nccl-xml/oci-bm-gpu-h100-8.txt"), "oci.xml"), "oci.yaml");
  ASSERT_TRUE(c.topology);
  EXPECT_EQ(c.gpus_per_node, 8);
  EXPECT_EQ(c.gpu.sm_version, 90);
  EXPECT_EQ(c.gpu.nvlink_count, 18);
  EXPECT_EQ(c.topology->nic_names().size(), 16U);
  EXPECT_DOUBLE_EQ(gbs(c.topology->nic_path(0, nic_index(*c.topology, "mlx5_18")).bandwidth), 25.0);  // 200 Gb/s
}

// The OCI node made 2 nodes on its own 16 NIC ports at 200 Gb/s against the measured 2-node all-reduce
// (oracle-japan/ocitutorials, NCCL 2.21.5) at its largest size, 16 GiB: 464.6 GB/s measured, above what
// any ring can carry over 16 x 25 GB/s of NICs per node (400 GB/s). Rings: 15 of 24 GB/s (PXN takes
// each to the NIC beside a GPU; the 16th does not fit a GPU's 18 NVLinks): 359 GB/s. Trees: the
// balanced tree's second GPU reaches the NIC only through PXN, which NCCL uses to send and never to
// receive, so the search falls back to a plain tree (Hopper on), whose first GPU takes the NIC both
// ways; the tree graph books each way twice: 2s <= 25 GB/s, s = 12. NVLS Tree: its own graph books each
// way once, s = 24, doubled on two nodes = 48 per channel, x 8 channels = 384 GB/s busbw: 0.83x.
TEST(RealInputs, OciH100TwoNodesPredictTheMeasuredBusBandwidth) {
  TopologyImportOptions opt;
  opt.nodes = 2;
  opt.fabric = parse_fabric_spec("infiniband:200Gb/s");
  const Cluster c = parse_cluster(import_nccl_xml(text("nccl-xml/oci-bm-gpu-h100-8.txt"), "oci.xml", opt), "oci2.yaml");
  ASSERT_TRUE(c.topology);
  ASSERT_EQ(c.max_nodes, 2);
  const NcclTestsLog log = parse_nccl_tests(text("nccl-tests/allreduce-h100-oci-bmgpuh100-2node.txt"), "oci.log");
  ASSERT_EQ(log.curves.size(), 1U);
  const auto& curve = log.curves.front();
  ASSERT_EQ(curve.gpus, 16);
  ASSERT_EQ(curve.nodes, 2);
  const auto& largest = curve.points.back();
  ASSERT_EQ(in_bytes(largest.size), 17179869184.0);
  const std::vector<int> node_gpus{0, 1, 2, 3, 4, 5, 6, 7};
  const auto tree = c.topology->channels(ChannelPattern::tree, node_gpus, 2);
  EXPECT_TRUE(tree.plain_tree);
  EXPECT_DOUBLE_EQ(in_gigabytes_per_second(tree.bw_inter), 12.0);
  const auto choice =
      nccl::choose(*c.topology, nccl::default_table(), CollectiveOp::allreduce, largest.size, GpuPlacement{16, 2, 8});
  EXPECT_EQ(choice.algorithm, nccl::NVLS_TREE);
  const double factor = 2.0 * 15 / 16;
  const double predicted = in_bytes(largest.size) / in_seconds(choice.time) / 1e9 * factor;
  const double measured = in_bytes(largest.size) / in_seconds(largest.time) / 1e9 * factor;  // 464.57 printed
  EXPECT_NEAR(measured, 464.57, 0.01);
  EXPECT_NEAR(predicted, 384.0, 0.5);
  std::printf("OCI 2 nodes, 16 GiB: predicted %.1f GB/s, measured %.1f GB/s\n", predicted, measured);
  EXPECT_NEAR(predicted / measured, 1.0, 0.20) << predicted << " vs " << measured;
  // Every size of the log (1 GiB to 16 GiB: the shared log has no 1 MiB or 32 MiB rows), printed.
  for (const auto& pt : curve.points) {
    const double bytes = in_bytes(pt.size);
    const auto ch = nccl::choose(*c.topology, nccl::default_table(), CollectiveOp::allreduce, pt.size, GpuPlacement{16, 2, 8});
    std::printf("OCI 2 nodes, %.0f B: predicted/measured busbw %.2f (%s)\n", bytes, in_seconds(pt.time) / in_seconds(ch.time),
                std::string(nccl::algorithm_name(ch.algorithm)).c_str());
  }
}

// ---- nccl-tests ----------------------------------------------------------------------------------------

// GB200 NVL72, trimmed to the last "Rank 71" line, no command line: 72 GPUs on 18 hosts of 4 (device
// indices up to 3), the collective told by its columns (size = count x 4, redop sum, root -1).
TEST(RealInputs, NcclTestsTrimmedGb200Log) {
  const NcclTestsLog log = parse_nccl_tests(text("nccl-tests/allreduce-gb200-nvl72-trimmed-coreweave.txt"), "gb200.log");
  ASSERT_EQ(log.curves.size(), 1U);
  const auto& c = log.curves.front();
  EXPECT_EQ(c.op, CollectiveOp::allreduce);
  EXPECT_EQ(c.gpus, 72);
  EXPECT_EQ(c.nodes, 18);
  ASSERT_EQ(c.points.size(), 5U);
  EXPECT_EQ(in_bytes(c.points.front().size), 536870912.0);
  EXPECT_NEAR(in_seconds(c.points.front().time) * 1e6, 1806.7, 1e-6);
  EXPECT_EQ(log.gpu_name, "NVIDIA Graphics Device");
  // --gpus/--nodes replace the counts
  const NcclTestsLog fixed = parse_nccl_tests(text("nccl-tests/allreduce-gb200-nvl72-trimmed-coreweave.txt"), "gb200.log",
                                              NcclTestsImport{std::nullopt, 72, 1});
  EXPECT_EQ(fixed.curves.front().nodes, 1);
}

// OCI H100 x 16: the command line before the header and a trailing "$" prompt.
TEST(RealInputs, NcclTestsOciLogWithCommandLine) {
  const NcclTestsLog log = parse_nccl_tests(text("nccl-tests/allreduce-h100-oci-bmgpuh100-2node.txt"), "oci.log");
  ASSERT_EQ(log.curves.size(), 1U);
  EXPECT_EQ(log.curves.front().op, CollectiveOp::allreduce);  // ./build/all_reduce_perf on the command line
  EXPECT_EQ(log.curves.front().points.size(), 5U);
  EXPECT_EQ(log.gpu_name, "NVIDIA H100 80GB HBM3");
}

// T4 x 2 on EFA: "[1,0]<stdout>:" on every line, NCCL INFO lines inside the table, two size-0 rows.
TEST(RealInputs, NcclTestsTaggedOutputWithInfoLinesAndSizeZeroRows) {
  const NcclTestsLog log = parse_nccl_tests(text("nccl-tests/allreduce-t4-g4dn-efa-2node-tagged.txt"), "t4.log");
  ASSERT_EQ(log.curves.size(), 1U);
  const auto& c = log.curves.front();
  EXPECT_EQ(c.gpus, 2);
  EXPECT_EQ(c.nodes, 2);  // test-nccl-efa-worker-0 and -1
  EXPECT_EQ(log.gpu_name, "Tesla T4");
  EXPECT_EQ(log.nccl_version, "2.12.7");
  // -b 1 -e 1G -f 2: 31 rows, the first two of size 0 (skipped), 4 B … 1 GiB kept
  ASSERT_EQ(c.points.size(), 29U);
  EXPECT_EQ(in_bytes(c.points.front().size), 4.0);
  EXPECT_EQ(in_bytes(c.points.back().size), 1073741824.0);
}

// V100 SXM2 x 8, 2019 layout (no root, an "error" column, no agg iters), a root prompt first; compared
// with the same machine's nvidia-smi capture, imported.
TEST(RealInputs, NcclTestsV100Log2019AgainstItsOwnCapture) {
  const NcclTestsLog log = parse_nccl_tests(text("nccl-tests/allreduce-v100-sxm2-8gpu-2019.txt"), "v100.log");
  ASSERT_EQ(log.curves.size(), 1U);
  const auto& c = log.curves.front();
  EXPECT_EQ(c.gpus, 8);
  EXPECT_EQ(c.nodes, 1);
  ASSERT_EQ(c.points.size(), 25U);  // 8 B … 128 MiB
  const Cluster box = parse_cluster(import_nvidia_smi(text("nvidia-smi/v100-sxm2-8gpu-hcm-2019.txt"), "v.txt"), "v.yaml");
  const auto& p = c.points.back();
  const auto choice = nccl::choose(*box.topology, nccl::default_table(), CollectiveOp::allreduce, p.size, GpuPlacement{8, 1, 8});
  const double ratio = in_seconds(p.time) / in_seconds(choice.time);  // predicted busbw / measured busbw
  EXPECT_NEAR(ratio, 1.0, 0.35) << ratio;
}

// DGX-2, 12 of 16 GPUs, five collectives in one file (pre-2020 all_gather/reduce_scatter convention,
// size-0 rows, a FAILED validation); compared with the shipped dgx2.
TEST(RealInputs, NcclTestsFiveCollectivesOnTwelveDgx2Gpus) {
  const NcclTestsLog log = parse_nccl_tests(text("nccl-tests/dgx2-12gpu-five-collectives-2020.txt"), "dgx2.log");
  ASSERT_EQ(log.curves.size(), 5U);
  std::vector<CollectiveOp> ops;
  for (const auto& c : log.curves) {
    ops.push_back(c.op);
    EXPECT_EQ(c.gpus, 12);
    EXPECT_EQ(c.nodes, 1);
  }
  EXPECT_EQ(ops,
            (std::vector<CollectiveOp>{CollectiveOp::allgather, CollectiveOp::allreduce, CollectiveOp::broadcast,
                                       CollectiveOp::reduce, CollectiveOp::reducescatter}));
  // all_gather: 3 size-0 rows of 31 skipped
  EXPECT_EQ(log.curves[0].points.size(), 28U);
  // --op picks one collective of the five
  const NcclTestsLog one = parse_nccl_tests(text("nccl-tests/dgx2-12gpu-five-collectives-2020.txt"), "dgx2.log",
                                            NcclTestsImport{CollectiveOp::broadcast, 0, 0});
  ASSERT_EQ(one.curves.size(), 1U);
  EXPECT_EQ(one.curves.front().op, CollectiveOp::broadcast);

  const Cluster dgx2 = load_cluster(resolve(DataKind::cluster, "dgx2", "--cluster"));
  const auto& ar = log.curves[1];
  const auto& p = ar.points.back();
  const auto choice =
      nccl::choose(*dgx2.topology, nccl::default_table(), CollectiveOp::allreduce, p.size, GpuPlacement{12, 1, 12});
  const double ratio = in_seconds(p.time) / in_seconds(choice.time);
  EXPECT_NEAR(ratio, 1.0, 0.35) << ratio;
}

// ---- nvbandwidth ---------------------------------------------------------------------------------------

// DCGM's fixture: the JSON between WARNING lines; v0.5 without a buffer size, so 64 MiB.
TEST(RealInputs, NvbandwidthJsonBetweenWarningLines) {
  std::vector<std::string> warnings;
  const Calibration cal = parse_nvbandwidth(text("nvbandwidth/dcgm-fixture-1gpu-v0.5-with-warnings.txt"), "dcgm.txt", &warnings);
  const auto* h2d = cal.find_transfer(TransferKind::h2d_pinned);
  ASSERT_NE(h2d, nullptr);
  ASSERT_EQ(h2d->points.size(), 1U);
  EXPECT_EQ(in_bytes(h2d->points.front().size), 64.0 * 1024 * 1024);
  EXPECT_NEAR(gbs(h2d->points.front().bandwidth), 12.3964, 1e-9);
  EXPECT_EQ(cal.provenance.driver, "565.02");
  EXPECT_THAT(warnings, Contains(HasSubstr("taking nvbandwidth v0.5's default, 64 MiB")));
}

// ---- the commands on them ------------------------------------------------------------------------------

TEST(RealInputs, CommandsImportEveryFile) {
  const fs::path dir = fs::temp_directory_path() / ("dlscale-real-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const auto& [cmd, file] : std::vector<std::pair<std::string, std::string>>{
           {"topo import nvidia-smi", "nvidia-smi/a100-8gpu-17nic-gpunumaid.txt"},
           {"topo import nvidia-smi", "nvidia-smi/gtx1080ti-2gpu-phb-home.txt"},
           {"topo import nvidia-smi", "nvidia-smi/rtx4090-8gpu-epyc-sys-4nic.txt"},
           {"topo import nvidia-smi", "nvidia-smi/v100-sxm2-8gpu-hcm-2019.txt"},
           {"topo import nccl-xml", "nccl-xml/azure-ncv4-a100pcie-4gpu-2023.txt"},
           {"topo import nccl-xml", "nccl-xml/oci-bm-gpu-h100-8.txt"},
           {"calibrate import nccl-tests", "nccl-tests/allreduce-gb200-nvl72-trimmed-coreweave.txt"},
           {"calibrate import nccl-tests", "nccl-tests/allreduce-h100-oci-bmgpuh100-2node.txt"},
           {"calibrate import nccl-tests", "nccl-tests/allreduce-t4-g4dn-efa-2node-tagged.txt"},
           {"calibrate import nccl-tests", "nccl-tests/allreduce-v100-sxm2-8gpu-2019.txt"},
           {"calibrate import nccl-tests", "nccl-tests/dgx2-12gpu-five-collectives-2020.txt"},
           {"calibrate import nvbandwidth", "nvbandwidth/dcgm-fixture-1gpu-v0.5-with-warnings.txt"}}) {
    const fs::path out = dir / "out.yaml";
    fs::remove(out);
    const auto r = test::run_cli(cmd + " " + real(file).string() + " -o " + out.string());
    EXPECT_EQ(r.status, 0) << file << ": " << r.err;
    EXPECT_TRUE(fs::exists(out)) << file;
    if (cmd.rfind("topo", 0) == 0) {
      EXPECT_NO_THROW((void)load_cluster(out)) << file;
    }
    if (cmd.rfind("calibrate", 0) == 0) {
      EXPECT_NO_THROW((void)load_calibration(out)) << file;
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dlscale
