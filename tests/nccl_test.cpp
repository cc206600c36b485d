// NCCL's channel search and cost model (NCCL 2.30.7 constants, shared/docs/nccl-model.md). Every
// expected value is derived by hand in the comments from the search rules:
//   - speeds tried (intra): 40, 30, 20, 18, 15, 12, 10, …; (SM90) 60, 50, 40, 30, 24, 20, …
//   - start at the first speed ≤ maxBw (best GPU-GPU path) with speed·minChannels ≤ totalBw;
//   - a channel reserves its speed on every link (per direction) of every hop of its ring;
//   - stop once nChannels·speed ≥ totalBw (a GPU's NVLinks together); else lower the speed while
//     next/best > .49; keep the best nChannels·speed;
//   - bwIntra ≥ 25 → channels doubled at half speed (not on SM>80 with bw < 50 and > 4 channels);
//   - trees must find as many channels as the ring (init.cc), reserving both directions.
// and the tuning: time_us = lat + bytes / (1000 · algbw), ring algbw = busBw · n / nsteps.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <unistd.h>

#include "dlscale/collective.hpp"
#include "dlscale/error.hpp"
#include "dlscale/io.hpp"
#include "dlscale/topology.hpp"
#include "nccl/model.hpp"
#include "nccl/system.hpp"
#include "support/run.hpp"
#include "topology/graph.hpp"

namespace dlscale {
namespace {

const Cluster& cluster(const std::string& name) {
  static std::map<std::string, Cluster> cache;
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, load_cluster(resolve(DataKind::cluster, name, "--cluster"))).first;
  return it->second;
}
const Topology& topo(const std::string& name) { return *cluster(name).topology; }

std::vector<int> first(int n) {
  std::vector<int> v;
  for (int i = 0; i < n; ++i) v.push_back(i);
  return v;
}

double gbs(BytesPerSecond b) { return in_gigabytes_per_second(b); }

void expect_channels(const ChannelSet& c, int channels, double per_channel) {
  EXPECT_FALSE(c.fallback);
  EXPECT_EQ(c.channels, channels);
  EXPECT_DOUBLE_EQ(gbs(c.bw_intra), per_channel);
}

// ---- channel search -------------------------------------------------------------------------------
TEST(NcclSearch, Dgx1vEightGpusSixRingsAtTwenty) {
  // totalBw = 6 links × 20 = 120, maxBw = 40 (2-link pairs). At 40 only the 2-link cycle
  // 0-3-2-1-5-6-7-4 works, once per direction: 2 × 40 = 80 < 120. 30: 2 × 30. 20 (20/40 = .5 > .49):
  // 2-link pairs carry 2 rings per direction, 1-link pairs 1: the 2-link cycle twice each way (4) and the
  // 1-link cycle 0-1-3-7-5-4-6-2 once each way (2) → 6 × 20 = 120 = totalBw, stop. 20 < 25: no duplication.
  const auto c = topo("dgx1v").channels(ChannelPattern::ring, first(8), 1);
  expect_channels(c, 6, 20.0);
  EXPECT_EQ(c.type_intra, PathType::nvl);
  ASSERT_EQ(c.orders.size(), 6u);
  for (const auto& o : c.orders) EXPECT_EQ(o.size(), 8u);
}

TEST(NcclSearch, Dgx1vGpus0To3FourRingsAtTwenty) {
  // Without GPUs 4-7 their links vanish: GPU0 keeps 1+1+2 links, totalBw = 80, maxBw = 40. Every
  // 4-cycle uses a 1-link edge at GPU0 (its only 2-link peer is 3), so 40 and 30 fail. At 20:
  // 0→3→2→1→0, 0→1→2→3→0, 0→2→1→3→0, 0→3→1→2→0 fit (2-link edges used twice per direction,
  // 1-link once): 4 × 20 = 80 = totalBw.
  expect_channels(topo("dgx1v").channels(ChannelPattern::ring, first(4), 1), 4, 20.0);
  // GPUs 0 and 1 share one link: totalBw = 20 (> PCIe 12), one ring 0→1→0 at 20.
  expect_channels(topo("dgx1v").channels(ChannelPattern::ring, first(2), 1), 1, 20.0);
}

TEST(NcclSearch, Dgx2SixChannelsAfterDuplication) {
  // One merged NVSwitch: GPU↔NVS 6 × 20 = 120 = totalBw = maxBw. At 40 each ring takes 40 of every
  // GPU's link: 3 × 40 = 120 → stop. 40 ≥ 25 → doubled: 6 × 20. Pass 2 tries 30 × 6 = 180 > 120: no.
  expect_channels(topo("dgx2").channels(ChannelPattern::ring, first(16), 1), 6, 20.0);
}

TEST(NcclSearch, DgxA100TwelveRingsAndTwelveTreesAtTen) {
  // GPU↔NVS 12 × 20 = 240: 6 × 40 = 240 → stop; doubled (sm 80 is not > 80) → 12 × 20.
  const auto& t = topo("dgx-a100");
  expect_channels(t.channels(ChannelPattern::ring, first(8), 1), 12, 20.0);
  // Trees need 12 channels (as many as the ring). A chain reserves both directions, so an inner GPU
  // uses 2·speed of its 240 GB/s each way: 12 chains fit at 240 / 24 = 10 → the first speed ≤ 10 is 10.
  expect_channels(t.channels(ChannelPattern::tree, first(8), 1), 12, 10.0);
}

TEST(NcclSearch, DgxH100TwelveRingsAtThirty) {
  // SM90 speeds; totalBw = 18 × 20.6 = 370.8. 60: 6 channels (360 < 370.8); 50 → 7 × 50 = 350, 40 →
  // 9 × 40 = 360 and 30 → 12 × 30 = 360 are not better; 24/60 < .49 stops. 60 ≥ 50 → doubled: 12 × 30.
  expect_channels(topo("dgx-h100").channels(ChannelPattern::ring, first(8), 1), 12, 30.0);
}

TEST(NcclSearch, Ac922AndP40AreBoundBetweenSockets) {
  // AC922, 4 GPUs: the ring crosses the 32 GB/s X-bus twice (once per direction): 1 × 30, doubled
  // (30 ≥ 25) to 2 × 15.
  expect_channels(topo("ac922").channels(ChannelPattern::ring, first(4), 1), 2, 15.0);
  // P40 node: the ring crosses QPI (6 GB/s) twice: one channel at 6.
  const auto p40 = topo("shi-chu-p40").channels(ChannelPattern::ring, first(4), 1);
  expect_channels(p40, 1, 6.0);
  EXPECT_EQ(p40.type_intra, PathType::sys);
}

TEST(NcclSearch, AwsSingleFlowLimitsTheNetworkChannel) {
  // One 100 Gb/s NIC capped by one 10 Gb/s flow = 1.25 GB/s: the first inter speed ≤ 1.25 is 1.2.
  const auto c = topo("aws-p3dn").channels(ChannelPattern::ring, first(8), 2);
  expect_channels(c, 1, 1.2);
  EXPECT_DOUBLE_EQ(gbs(c.bw_inter), 1.2);
}

TEST(NcclSearch, OneRingPerHdrNicAcrossNodes) {
  // 8 HDR NICs of 25 GB/s, each on a Gen4 switch with its GPUs: one channel per NIC at 24 (the first
  // inter speed ≤ 25), crossNic 0 → 8 × 24; 24 < 25: no duplication.
  const auto c = topo("dgx-a100-hdr").channels(ChannelPattern::ring, first(8), 4);
  expect_channels(c, 8, 24.0);
  EXPECT_EQ(c.type_inter, PathType::pix);
}

TEST(NcclSearch, Dgx2EightGpusTreesAtTen) {
  // The ring on GPUs 0-7 of DGX-2 (GPU↔NVS 6 × 20 = 120): 3 × 40 = 120 → stop, doubled → 6 × 20. Trees
  // need those 6 channels; a chain books each hop both ways, so an inner GPU spends 2·speed of its
  // 120 GB/s per channel: 6 chains need speed ≤ 120 / 12 = 10; 20, 18, 15 and 12 fail (NCCL spends a
  // search budget on each, dlscale proves them short by the same count of GPU link capacity), 10 fits.
  const auto& t = topo("dgx2");
  expect_channels(t.channels(ChannelPattern::ring, first(8), 1), 6, 20.0);
  const auto tree = t.channels(ChannelPattern::tree, first(8), 1);
  expect_channels(tree, 6, 10.0);
  EXPECT_EQ(tree.type_intra, PathType::nvl);
}

TEST(NcclSearch, SkippingSearchesProvedShortChangesNothing) {
  // The reference is NCCL's own procedure: every search run with its budget (skip_doomed = false).
  // The skipping search must find the same channels, speeds, path types and GPU orders on every
  // shipped node, for every first-k GPU set, inside one node and across nodes (with the NICs), rings
  // and trees (the tree asked for the ring's count).
  // gb300-nvl72 is gb200-nvl72's NVLink domain (searched at every k) with a ConnectX-8 PCIe switch per GPU: it
  // is searched at k = 1..8, the powers of two and 72 only, which keeps this test's time (every k there would
  // more than double it).
  const auto& table = nccl::default_table();
  int compared = 0, trees = 0;
  for (const auto& name : list_names(DataKind::cluster)) {
    const Cluster& c = cluster(name);
    if (!c.topology) continue;
    for (int k = 1; k <= c.gpus_per_node; ++k)
      for (bool nets : {false, true}) {
        if (name == "gb300-nvl72" && k > 8 && (k & (k - 1)) != 0 && k != c.gpus_per_node) continue;
        if (nets && c.topology->nic_names().empty()) continue;
        if (!nets && k == 1) continue;
        SCOPED_TRACE(name + ", " + std::to_string(k) + " GPUs" + (nets ? " with NICs" : ""));
        const auto gpus = first(k);
        auto run = [&](ChannelPattern p, int lo, int hi, bool skip) {
          auto sys = nccl::build_system(c.topology->impl(), gpus, nets, table);
          return nccl::compute_channels(sys, p, lo, hi, table, skip);
        };
        auto same = [&](const ChannelSet& a, const ChannelSet& b) {
          EXPECT_EQ(a.channels, b.channels);
          EXPECT_EQ(a.bw_intra, b.bw_intra);
          EXPECT_EQ(a.bw_inter, b.bw_inter);
          EXPECT_EQ(a.type_intra, b.type_intra);
          EXPECT_EQ(a.fallback, b.fallback);
          EXPECT_EQ(a.orders, b.orders);
          ++compared;
        };
        const ChannelSet ring = run(ChannelPattern::ring, 1, table.max_channels, false);
        same(run(ChannelPattern::ring, 1, table.max_channels, true), ring);
        const ChannelSet tree = run(ChannelPattern::tree, ring.channels, ring.channels, false);
        same(run(ChannelPattern::tree, ring.channels, ring.channels, true), tree);
        ++trees;
      }
  }
  EXPECT_GT(trees, 100);  // the shipped nodes give this many GPU sets; fewer means clusters went missing
  EXPECT_EQ(compared, 2 * trees);
}

// ---- tuning ---------------------------------------------------------------------------------------
TEST(NcclTuning, BusBandwidthFactorsFollowNcclTests) {
  EXPECT_DOUBLE_EQ(nccl::busbw_factor(CollectiveOp::allreduce, 8), 14.0 / 8.0);
  EXPECT_DOUBLE_EQ(nccl::busbw_factor(CollectiveOp::allgather, 8), 7.0 / 8.0);
  EXPECT_DOUBLE_EQ(nccl::busbw_factor(CollectiveOp::reducescatter, 4), 3.0 / 4.0);
  EXPECT_DOUBLE_EQ(nccl::busbw_factor(CollectiveOp::broadcast, 16), 1.0);
  EXPECT_DOUBLE_EQ(nccl::busbw_factor(CollectiveOp::reduce, 16), 1.0);
}

nccl::Choice choose(const std::string& c, CollectiveOp op, Bytes s, GpuPlacement p) {
  return nccl::choose(topo(c), nccl::default_table(), op, s, p);
}

TEST(NcclTuning, LargeAllReduceOnDgx1vIsBandwidthBound) {
  // Ring Simple: NCCL books 6 channels × 20 (120); the V100's NVLinks between GPUs deliver 23 GB/s where
  // NCCL books 20 (Table::volta_nvlink_gpu_gbps), so busBw = 6 × 23 = 138, algbw = 138 · 8/14;
  // lat = 8.4 + 14 × 3.4 (NVLink) = 56 µs.
  const double bytes = 1073741824.0;
  const auto ch = choose("dgx1v", CollectiveOp::allreduce, gibibytes(1), {8, 1, 8});
  EXPECT_EQ(ch.algorithm, nccl::RING);
  EXPECT_EQ(ch.protocol, nccl::SIMPLE);
  EXPECT_EQ(ch.channels, 6);
  const double expected_us = 56.0 + bytes / (1000.0 * 138.0 * 8.0 / 14.0);
  EXPECT_NEAR(in_us(ch.time), expected_us, 1e-6 * expected_us);
  // nccl-tests busbw = S/t · 14/8 → just under 138 GB/s: 1073741824 / (56 + 13603.6) µs · 14/8
  EXPECT_NEAR(bytes / in_seconds(ch.time) * 14.0 / 8.0 / 1e9, 137.43, 0.01);
}

TEST(NcclTuning, SmallAllReduceOnDgx1vIsLatencyBound) {
  // Ring LL: lat = 6.6 + 14 × 0.6 = 15.0 µs; tree LL: 6.8 + 2·7·0.6 = 15.2 µs; Simple 56 µs.
  const auto ch = choose("dgx1v", CollectiveOp::allreduce, bytes(8), {8, 1, 8});
  EXPECT_EQ(ch.algorithm, nccl::RING);
  EXPECT_EQ(ch.protocol, nccl::LL);
  // bw = min(llMax 39, 120·0.5) · 8/14
  EXPECT_NEAR(in_us(ch.time), 15.0 + 8.0 / (1000.0 * 39.0 * 8.0 / 14.0), 1e-9);
  // latency-dominated: 1 KiB costs within 5 % of 8 B; bandwidth-dominated: 1 GiB ≈ 2 × 512 MiB
  const auto kib = choose("dgx1v", CollectiveOp::allreduce, kibibytes(1), {8, 1, 8});
  EXPECT_LT(in_us(kib.time) / in_us(ch.time), 1.05);
  const auto half = choose("dgx1v", CollectiveOp::allreduce, mebibytes(512), {8, 1, 8});
  const auto full = choose("dgx1v", CollectiveOp::allreduce, gibibytes(1), {8, 1, 8});
  EXPECT_NEAR(in_us(full.time) / in_us(half.time), 2.0, 0.01);
}

TEST(NcclTuning, ProtocolSwitchPointsOnDgx1vFollowFromLatencyAndBandwidth) {
  // 8 GPUs, ring (µs, bytes), the links delivering 6 × 23 = 138 GB/s where NCCL books 120: LL 15.0 +
  // S / (min(39, 69) · 8/14 · 1000); LL128 (14 + 14 × 1.9) = 40.6 + S / (min(138 · .92, 6 × 20) = 120 ·
  // 8/14 · 1000); Simple 56.0 + S / (138 · 8/14 · 1000). LL = LL128 at
  // S = 25.6 / (14/39000/8 − 14/120000/8) = 845,206 B; LL128 = Simple at 15.4 / (14/120000/8 − 14/138000/8)
  // = 8,096,000 B.
  const double ll_to_ll128 = 25.6 / (14.0 / 39000.0 / 8.0 - 14.0 / 120000.0 / 8.0);
  const double ll128_to_simple = 15.4 / (14.0 / 120000.0 / 8.0 - 14.0 / 138000.0 / 8.0);
  EXPECT_NEAR(ll_to_ll128, 845206.0, 1.0);
  EXPECT_NEAR(ll128_to_simple, 8096000.0, 1.0);
  auto proto_at = [](double s) { return choose("dgx1v", CollectiveOp::allreduce, bytes(s), {8, 1, 8}).protocol; };
  EXPECT_EQ(proto_at(0.97 * ll_to_ll128), nccl::LL);
  EXPECT_EQ(proto_at(1.03 * ll_to_ll128), nccl::LL128);
  EXPECT_EQ(proto_at(0.97 * ll128_to_simple), nccl::LL128);
  EXPECT_EQ(proto_at(1.03 * ll128_to_simple), nccl::SIMPLE);
}

TEST(NcclTuning, AllGatherUsesNMinusOneSteps) {
  // Ring Simple: algbw = 138 · 8/7 (6 channels on links delivering 23 GB/s); lat = 8.4 + 7 × 3.4 = 32.2 µs.
  const double bytes = 1073741824.0;
  const auto ch = choose("dgx1v", CollectiveOp::allgather, gibibytes(1), {8, 1, 8});
  EXPECT_EQ(ch.algorithm, nccl::RING);
  EXPECT_EQ(ch.protocol, nccl::SIMPLE);
  EXPECT_NEAR(in_us(ch.time), 32.2 + bytes / (1000.0 * 138.0 * 8.0 / 7.0), 1e-3);
  const auto rs = choose("dgx1v", CollectiveOp::reducescatter, gibibytes(1), {8, 1, 8});
  EXPECT_NEAR(in_us(rs.time), in_us(ch.time), 1e-9);
}

TEST(NcclTuning, Dgx2SixteenGpus) {
  // Ring Simple: lat = 8.4 + 30 × 3.4 = 110.4 µs; 6 channels × 20 booked, each GPU's 6 links to the
  // NVSwitches delivering 20.6 (Table::volta_nvlink_nvswitch_gbps): algbw = 123.6 · 16/30 = 65.92 GB/s.
  const double bytes = 1073741824.0;
  const auto ch = choose("dgx2", CollectiveOp::allreduce, gibibytes(1), {16, 1, 16});
  EXPECT_NEAR(in_us(ch.time), 110.4 + bytes / 65920.0, 1e-3);
}

TEST(NcclTuning, MultiNodeRingPaysNetworkStepsAndPlateau) {
  // dgx-a100-hdr, 4 nodes × 8: ring 8 × 24 (bwInter for > 2 nodes) = 192 busBw, algbw 192 · 32/62.
  // A network step costs NCCL's 14 µs plus the fabric's 1 µs twice (Simple flushes): 16 µs.
  // lat = 8.4 + (62 − 6) · max(3.4, AMD net overhead 2 × 3) + 6 × 16 = 440.4 µs, × 1.4 (plateau, sm 80).
  const double bytes = 1073741824.0;
  const auto ch = choose("dgx-a100-hdr", CollectiveOp::allreduce, gibibytes(1), {32, 4, 8});
  EXPECT_EQ(ch.algorithm, nccl::RING);
  EXPECT_EQ(ch.protocol, nccl::SIMPLE);
  EXPECT_NEAR(in_us(ch.time), 440.4 * 1.4 + bytes / (1000.0 * 192.0 * 32.0 / 62.0), 1e-3);
}

TEST(NcclTuning, NetworkHopsPayTheFabricLatency) {
  // aws-p3dn (sockets over 100 Gb/s Ethernet, fabric latency 25 µs), 2 nodes × 8, 8 B: the ring needs
  // 2 network steps of 30 steps. Ring LL: 6.6 + 28 × max(0.6 NVLink, 1 µs Intel net overhead) + 2 × (2.7 +
  // 25) = 90.0 µs; tree LL: 6.8 + 2 × (7 × 0.6 + log2(2) × (5.0 + 25)) = 75.2 µs; Simple adds 2 × 25 per
  // network hop and LL128 is off (no NIC within PXB of the GPUs): tree LL wins.
  const auto ch = choose("aws-p3dn", CollectiveOp::allreduce, bytes(8), {16, 2, 8});
  EXPECT_EQ(ch.algorithm, nccl::TREE);
  EXPECT_EQ(ch.protocol, nccl::LL);
  EXPECT_NEAR(in_us(ch.latency), 75.2, 1e-9);
}

// ---- NVLS (NVLink SHARP) and NVLS Tree, shared/docs/nccl-tuning-2.30.md ----------------------------------
TEST(NcclNvls, EightH100AllReduceNearNvidiasFourHundredEighty) {
  // One channel per GPU (8); speed: the largest SM90 intra speed with 8 × s ≤ 18 × 20.6 = 370.8 → 40
  // (50 would need 400). busBw = 8 × 40 × 0.85 (Hopper NVLS efficiency) × 7/8 × 2 (all-reduce) = 476 GB/s,
  // NVIDIA's "about 480 GB/s" for NVLS on 8 × H100 (the ring gives 356). algbw = 476 × 8/14 = 272 GB/s;
  // latency 25 µs (base 0 + one NVLink hop). 1 GiB: 25 + 1073741824 / 272,000 µs.
  const auto ch = choose("dgx-h100", CollectiveOp::allreduce, gibibytes(1), {8, 1, 8});
  EXPECT_EQ(ch.algorithm, nccl::NVLS);
  EXPECT_EQ(ch.protocol, nccl::SIMPLE);
  EXPECT_EQ(ch.channels, 8);
  EXPECT_NEAR(gbs(ch.algbw_model), 272.0, 1e-9);
  EXPECT_NEAR(in_us(ch.time), 25.0 + 1073741824.0 / 272000.0, 1e-6);
  EXPECT_EQ(nccl::algorithm_name(ch.algorithm), "nvls");
}

// Blackwell (SM100) takes its own rows of nccl-tuning-2.30.md: NVLS efficiency 0.74, the speed list 90, 80, …,
// 18, NVLink 40.1 GB/s per link, at most 32 NVLS channels.
TEST(NcclNvls, EightB200AllReduceOnBlackwellsRows) {
  // dgx-b200: 18 links × 40.1 = 721.8 GB/s per GPU; 8 channels; the largest SM100 intra speed with
  // 8 × s ≤ 721.8 is 90. busBw = 8 × 90 × 0.74 × 7/8 × 2 = 932.4 GB/s; algbw = 932.4 × 8/14 = 532.8 GB/s.
  const auto ch = choose("dgx-b200", CollectiveOp::allreduce, gibibytes(8), {8, 1, 8});
  EXPECT_EQ(ch.algorithm, nccl::NVLS);
  EXPECT_EQ(ch.channels, 8);
  EXPECT_NEAR(gbs(ch.algbw_model), 932.4 * 8.0 / 14.0, 1e-9);
  EXPECT_NEAR(in_us(ch.time), 25.0 + 8589934592.0 / (1000.0 * 932.4 * 8.0 / 14.0), 1e-6);
}

TEST(NcclNvls, SeventyTwoGpuNvlinkDomainCapsTheNvlsChannels) {
  // gb200-nvl72: 72 GPUs in one NVLink domain. NVLS runs 32 channels (not one per GPU); 32 × s ≤ 721.8
  // gives s = 20 (24 would need 768). The GPU's NVLink-C2C to its Grace (450 GB/s) is NCCL's LINK_C2C and
  // not part of that total. busBw = 32 × 20 × 0.74 × 31/32 × 2 = 917.6 GB/s; algbw = 917.6 × 72/142.
  EXPECT_NEAR(gbs(cluster("gb200-nvl72").topology->gpu_link_bandwidth(0)), 721.8, 1e-9);
  const auto ch = choose("gb200-nvl72", CollectiveOp::allreduce, gibibytes(8), {72, 1, 72});
  EXPECT_EQ(ch.algorithm, nccl::NVLS);
  EXPECT_EQ(ch.channels, 32);
  EXPECT_NEAR(gbs(ch.algbw_model), 917.6 * 72.0 / 142.0, 1e-9);
}

TEST(NcclNvls, BlackwellUltraNvlinkDomainsAreBlackwells) {
  // dgx-b300 and gb300-nvl72 keep the NVLink wiring of dgx-b200 and gb200-nvl72 (18 NVLink-5 links per GPU,
  // 18 x 40.1 = 721.8 GB/s), and B300 is sm_103, which takes the SM100 rows: the same channels and speeds as
  // above, busBw 932.4 GB/s on 8 GPUs and 917.6 GB/s on 72.
  EXPECT_EQ(cluster("dgx-b300").topology->sm_version(), 103);
  EXPECT_NEAR(gbs(cluster("dgx-b300").topology->gpu_link_bandwidth(0)), 721.8, 1e-9);
  EXPECT_NEAR(gbs(cluster("gb300-nvl72").topology->gpu_link_bandwidth(71)), 721.8, 1e-9);
  const auto node = choose("dgx-b300", CollectiveOp::allreduce, gibibytes(8), {8, 1, 8});
  EXPECT_EQ(node.algorithm, nccl::NVLS);
  EXPECT_EQ(node.channels, 8);
  EXPECT_NEAR(gbs(node.algbw_model), 932.4 * 8.0 / 14.0, 1e-9);
  const auto rack = choose("gb300-nvl72", CollectiveOp::allreduce, gibibytes(8), {72, 1, 72});
  EXPECT_EQ(rack.algorithm, nccl::NVLS);
  EXPECT_EQ(rack.channels, 32);
  EXPECT_NEAR(gbs(rack.algbw_model), 917.6 * 72.0 / 142.0, 1e-9);
}

TEST(NcclNvls, SmallMessagesAndAllGatherStayOnTheRing) {
  // 8 B: NVLS costs 25 µs, ring LL 6.6 + 14 × 0.6 = 15.0 µs.
  const auto small = choose("dgx-h100", CollectiveOp::allreduce, bytes(8), {8, 1, 8});
  EXPECT_EQ(small.algorithm, nccl::RING);
  EXPECT_NEAR(in_us(small.latency), 15.0, 1e-9);
  // All-gather: NVLS busBw 8 × 40 × 0.85 × 7/8 × 7/8 = 208.25, algbw × 8/7 = 238 GB/s, below the ring's
  // 12 × 30 × 8/7 = 411.4 GB/s: the ring wins at 1 GiB.
  const auto ag = choose("dgx-h100", CollectiveOp::allgather, gibibytes(1), {8, 1, 8});
  EXPECT_EQ(ag.algorithm, nccl::RING);
  // No NVLS before Hopper: DGX A100 (NVSwitch, SM80) keeps ring/tree.
  const auto a100 = choose("dgx-a100", CollectiveOp::allreduce, gibibytes(1), {8, 1, 8});
  EXPECT_NE(a100.algorithm, nccl::NVLS);
}

TEST(NcclNvls, TwoH100NodesUseNvlsTreeCappedByTheNetwork) {
  // dgx-h100-ndr, 2 nodes × 8, one 400 Gb/s (50 GB/s) NIC per GPU. The NVLS graph's inter-node speed is
  // the first Hopper inter speed ≤ 50: 48 (the tree graph books each NIC both ways and gets 24). NVLS
  // Tree per channel = min(40 × 0.85 × 7/8 × 2 = 59.5, 2 × 48 = 96, Hopper's 2-node cap 57.7) = 57.7;
  // busBw 8 × 57.7 = 461.6, algbw 461.6 × 16/30 = 246.187 GB/s. Latency: 25 + 2 × log2(2) × (20.9 + 2 × 1 µs
  // fabric) = 70.8 µs.
  const auto tree = topo("dgx-h100-ndr").channels(ChannelPattern::tree, first(8), 2);
  ASSERT_DOUBLE_EQ(gbs(tree.bw_inter), 24.0);
  const auto ch = choose("dgx-h100-ndr", CollectiveOp::allreduce, gibibytes(1), {16, 2, 8});
  EXPECT_EQ(ch.algorithm, nccl::NVLS_TREE);
  EXPECT_NEAR(gbs(ch.algbw_model), 8 * 57.7 * 16.0 / 30.0, 1e-9);
  EXPECT_NEAR(in_us(ch.latency), 70.8, 1e-9);
  // Reduce-scatter and all-gather across nodes have no NVLS Tree: ring.
  EXPECT_EQ(choose("dgx-h100-ndr", CollectiveOp::reducescatter, gibibytes(1), {16, 2, 8}).algorithm, nccl::RING);
}

// ---- PAT (NCCL 2.23+ "Parallel Aggregated Trees"), shared/docs/nccl-tuning-2.30.md --------------------------
TEST(NcclPat, SixteenNodesOfOneGpuPickPatForSmallAndRingForLargeAllGathers) {
  // dgx-h100-ndr, 16 nodes × 1 GPU (nranks == nnodes: the only case NCCL 2.30 enables PAT). PAT runs on
  // the tree graph searched for one GPU per node: one channel at 30 GB/s, duplicated to 2 × 15, then the
  // second pass raises the intra speed back to 30 (it may reach twice the inter speed): 2 channels,
  // bwIntra 30, bwInter 15. The ring graph: 2 × 24.
  const auto tree = topo("dgx-h100-ndr").channels(ChannelPattern::tree, first(1), 16);
  ASSERT_EQ(tree.channels, 2);
  ASSERT_DOUBLE_EQ(gbs(tree.bw_inter), 15.0);
  ASSERT_DOUBLE_EQ(gbs(tree.bw_intra), 30.0);
  // PAT: more than two nodes → bwInter; busBw = 2 × 15 × 0.75 ("PAT keeps 75 %") = 22.5, algbw = 22.5 / 2
  // (not Ring/NVLS: one half) = 11.25 GB/s. Inter-node hop: 14 µs (Tree network row, Simple) + 2 × 1 µs
  // fabric (Simple flushes) = 16 µs; latency = 8 + log2(16) × 16 / 3.5 + 16 × 2.8 = 8 + 18.2857 + 44.8
  // = 71.0857 µs.
  const double pat_lat = 8.0 + 4.0 * 16.0 / 3.5 + 16 * 2.8;
  // Ring LL: busBw min(35 Hopper LL max on > 2 nodes, 48 × 0.5) = 24, algbw 24 × 16/15 = 25.6; latency
  // 6.6 + 15 network steps × (5.0 Tree LL network row + 1 µs fabric) = 96.6 µs. At 1 KiB:
  // PAT 71.0857 + 1024 / 11,250 = 71.177 µs < ring LL 96.6 + 1024 / 25,600 = 96.64 µs: PAT wins.
  const auto small = choose("dgx-h100-ndr", CollectiveOp::allgather, kibibytes(1), {16, 16, 1});
  EXPECT_EQ(small.algorithm, nccl::PAT);
  EXPECT_EQ(small.protocol, nccl::SIMPLE);
  EXPECT_EQ(nccl::algorithm_name(small.algorithm), "pat");
  EXPECT_NEAR(gbs(small.algbw_model), 11.25, 1e-9);
  EXPECT_NEAR(in_us(small.latency), pat_lat, 1e-9);
  EXPECT_NEAR(in_us(small.time), pat_lat + 1024.0 / 11250.0, 1e-9);
  // Reduce-scatter is costed the same way.
  EXPECT_NEAR(in_us(choose("dgx-h100-ndr", CollectiveOp::reducescatter, kibibytes(1), {16, 16, 1}).time), in_us(small.time),
              1e-9);
  // PAT against ring LL: 71.0857 + x / 11,250 = 96.6 + x / 25,600 at x ≈ 512 kB; at 256 KiB PAT still wins.
  EXPECT_EQ(choose("dgx-h100-ndr", CollectiveOp::allgather, kibibytes(256), {16, 16, 1}).algorithm, nccl::PAT);
  EXPECT_EQ(choose("dgx-h100-ndr", CollectiveOp::allgather, mebibytes(1), {16, 16, 1}).algorithm, nccl::RING);
  // 1 GiB: ring Simple, busBw 2 × 24 = 48, algbw 48 × 16/15 = 51.2; latency 8.4 + 15 × 16 = 248.4 µs:
  // 248.4 + 1073741824 / 51,200 = 21,219.9 µs against PAT's 71.09 + 1073741824 / 11,250 = 95,515 µs.
  const auto large = choose("dgx-h100-ndr", CollectiveOp::allgather, gibibytes(1), {16, 16, 1});
  EXPECT_EQ(large.algorithm, nccl::RING);
  EXPECT_EQ(large.protocol, nccl::SIMPLE);
  EXPECT_NEAR(in_us(large.time), 248.4 + 1073741824.0 / 51200.0, 1e-6);
}

TEST(NcclPat, OnlyWithOneGpuPerNodeAndOnlyForGathersAndScatters) {
  // 2 nodes × 1: PAT (bwIntra 30 on ≤ 2 nodes: algbw 2 × 30 × 0.75 / 2 = 22.5; latency 8 + 16/3.5 + 5.6 =
  // 18.17 µs) loses 1 KiB to ring LL (6.6 + 6 = 12.6 µs).
  EXPECT_EQ(choose("dgx-h100-ndr", CollectiveOp::allgather, kibibytes(1), {2, 2, 1}).algorithm, nccl::RING);
  // Several GPUs per node, or an all-reduce: never PAT.
  EXPECT_NE(choose("dgx-h100-ndr", CollectiveOp::allgather, kibibytes(1), {128, 16, 8}).algorithm, nccl::PAT);
  EXPECT_NE(choose("dgx-h100-ndr", CollectiveOp::allreduce, kibibytes(1), {16, 16, 1}).algorithm, nccl::PAT);
}

TEST(NcclNvls, DescribeSaysWhenNvlsIsModelled) {
  EXPECT_NE(make_collective_model(cluster("dgx-h100"))->describe().find("NVLS"), std::string::npos);
  EXPECT_EQ(make_collective_model(cluster("dgx-a100"))->describe().find("NVLS"), std::string::npos);
}

TEST(NcclTuning, NcclTestsTimeAddsTheIssueOfAllButTheLastGpu) {
  // nccl-tests -g 12 (one thread, 12 GPUs): 11 × 4.8 µs = 52.8 µs of host issue before the last GPU's.
  // DGX-2 8 B all-reduce: ring LL 6.6 + 22 × 0.6 = 19.8 µs on the device, above the last 4.8 µs:
  // 52.8 + 19.8 = 72.6 µs (the 2020 log: 61.03 µs).
  const auto& t = nccl::default_table();
  const auto ch = choose("dgx2", CollectiveOp::allreduce, bytes(8), {12, 1, 12});
  const double device = 19.8 + 8.0 / (1000.0 * 39.0 * 12.0 / 22.0);
  EXPECT_NEAR(in_us(ch.time), device, 1e-9);
  EXPECT_NEAR(in_us(nccl::nccl_tests_time(ch.time, t, 12)), 52.8 + device, 1e-9);
  // One GPU per thread (MPI): 4.8 µs < 19.8 µs, the device alone.
  EXPECT_NEAR(in_us(nccl::nccl_tests_time(ch.time, t, 1)), device, 1e-9);
  // A device time below one launch (no data: 0 µs) is the host loop alone, k × 4.8 µs: the zero-byte rows
  // of the DGX-2 log, 57.1-57.3 µs for 12 GPUs.
  EXPECT_NEAR(in_us(nccl::nccl_tests_time(Seconds{}, t, 12)), 57.6, 1e-9);
  // 1 GiB: the 52.8 µs still add.
  const auto big = choose("dgx2", CollectiveOp::allreduce, gibibytes(1), {12, 1, 12});
  EXPECT_NEAR(in_us(nccl::nccl_tests_time(big.time, t, 12)), in_us(big.time) + 52.8, 1e-6);
}

TEST(NcclTuning, ParameterServerIncast) {
  auto model = make_collective_model(cluster("dgx1v"));
  // One node, 8 GPUs, one server GPU: 7 senders push 100 MB into its 120 GB/s of NVLinks, then pull:
  // 2 × (5.7 µs + 7 · 100 MB / 120 GB/s).
  EXPECT_NEAR(in_seconds(model->parameter_server(megabytes(100), {8, 1, 8}, 1)), 2 * (5.7e-6 + 7 * 100e6 / 120e9), 1e-12);
  // AWS p3dn, 2 nodes, one server per node: each gets 50 MB from the 8 remote GPUs; each sender is one
  // 10 Gb/s flow, so ingress = min(12.5, 8 × 1.25) = 10 GB/s; step = 14 µs + 25 µs fabric latency.
  auto aws = make_collective_model(cluster("aws-p3dn"));
  EXPECT_NEAR(in_seconds(aws->parameter_server(megabytes(100), {16, 2, 8}, 2)), 2 * (39e-6 + 8 * 50e6 / 10e9), 1e-12);
}

TEST(NcclTuning, FactoryPicksNcclWhenTheClusterHasAGraph) {
  EXPECT_NE(make_collective_model(cluster("dgx1v"))->describe().find("NCCL 2.30.7"), std::string::npos);
  const auto file =
      test::temp_file("simple.yaml",
                      "name: s\nnodes: 1\ngpus_per_node: 2\ngpu: v100-sxm2\nhost_to_gpu: {pinned: \"12 GB/s\"}\n"
                      "intra_node: {bandwidth: \"20 GB/s\"}\nstorage: {disk: \"1 GB/s\", page_cache: \"2 GB/s\"}\n");
  EXPECT_NE(make_collective_model(load_cluster(file))->describe().find("alpha-beta"), std::string::npos);
}

// ---- CLI ------------------------------------------------------------------------------------------
TEST(CollectiveCli, JsonCarriesTheResults) {
  const auto r = test::run_cli("collective --cluster dgx1v --op allreduce --gpus 8 --bytes 1GiB --format json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["results"].size(), 1u);
  const auto& x = j["results"][0];
  EXPECT_DOUBLE_EQ(x["size_bytes"].get<double>(), 1073741824.0);
  EXPECT_NEAR(x["busbw_gb_per_s"].get<double>(), x["algbw_gb_per_s"].get<double>() * 14.0 / 8.0, 1e-9);
  EXPECT_NEAR(x["algbw_gb_per_s"].get<double>() * x["time_s"].get<double>() * 1e9, 1073741824.0, 1.0);
  EXPECT_EQ(x["algorithm"], "ring");
  EXPECT_EQ(x["protocol"], "Simple");
  EXPECT_EQ(x["channels"], 6);
}

TEST(CollectiveCli, SweepPrintsAnAllReducePerfTable) {
  const auto r = test::run_cli("collective --cluster dgx2 --gpus 16 --sweep 8B:64B");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("algbw"), std::string::npos);
  EXPECT_NE(r.out.find("# Avg bus bandwidth"), std::string::npos);
  int rows = 0;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') ++rows;
  EXPECT_EQ(rows, 4);  // 8, 16, 32, 64 bytes
}

TEST(CollectiveCli, GpusPerThreadAddsTheHostIssueAsNcclTestsSeesIt) {
  // DGX-2, 12 GPUs, 8 B all-reduce: NCCL's ring LL takes 19.8 µs + 8 B / (39 · 12/22 GB/s) ≈ 19.8 µs; one
  // thread for the 12 GPUs adds the issue of 11 of them, 11 × 4.8 = 52.8 µs (the 2020 log measured 61.03 µs).
  const auto one = test::run_cli("collective --cluster dgx2 --gpus 12 --bytes 8B --format json");
  const auto twelve = test::run_cli("collective --cluster dgx2 --gpus 12 --gpus-per-thread 12 --bytes 8B --format json");
  ASSERT_EQ(one.status, 0) << one.err;
  ASSERT_EQ(twelve.status, 0) << twelve.err;
  const double t1 = nlohmann::json::parse(one.out)["results"][0]["time_s"].get<double>();
  const double t12 = nlohmann::json::parse(twelve.out)["results"][0]["time_s"].get<double>();
  EXPECT_NEAR(t1 * 1e6, 19.8 + 8.0 / (1000.0 * 39.0 * 12.0 / 22.0), 1e-6);
  EXPECT_NEAR(t12 * 1e6, 52.8 + 19.8 + 8.0 / (1000.0 * 39.0 * 12.0 / 22.0), 1e-6);
}

// collective --format json (README, "collective --format json"): every number of the table a field, the unit in its key,
// against the hand computation of GpusPerThreadAddsTheHostIssueAsNcclTestsSeesIt: DGX-2, 12 GPUs driven by one thread,
// 8 B and 16 B all-reduce at 11 × 4.8 + 19.8 µs + S / (39 · 12/22 GB/s).
TEST(CollectiveCli, JsonCarriesEveryNumberOfTheTable) {
  const std::string args = "collective --cluster dgx2 --gpus 12 --gpus-per-thread 12 --sweep 8B:16B";
  const auto r = test::run_cli(args + " --format json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], 2);
  EXPECT_EQ(j["command"], "collective");
  EXPECT_EQ(j["nodes"], 1);
  EXPECT_EQ(j["gpus_per_node"], 12);
  EXPECT_EQ(j["gpus_per_thread"], 12);
  EXPECT_DOUBLE_EQ(j["launch_s_per_gpu"].get<double>(), 4.8e-6);
  EXPECT_TRUE(j["algo"].is_null());
  EXPECT_TRUE(j["proto"].is_null());
  ASSERT_EQ(j["results"].size(), 2u);
  double sum = 0;
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& x = j["results"][i];
    const double s = 8.0 * static_cast<double>(i + 1);
    const double t_us = 52.8 + 19.8 + s / (1000.0 * 39.0 * 12.0 / 22.0);
    const double algbw = s / t_us / 1e3, busbw = algbw * 2.0 * 11.0 / 12.0;  // GB/s; nccl-tests: 2(n-1)/n
    EXPECT_DOUBLE_EQ(x["size_bytes"].get<double>(), s);
    EXPECT_EQ(x["count_elements"], static_cast<int>(s / 4));  // floats
    EXPECT_EQ(x["type"], "float");
    EXPECT_EQ(x["redop"], "sum");
    EXPECT_EQ(x["root"], -1);
    EXPECT_NEAR(x["time_s"].get<double>() * 1e6, t_us, 1e-6);
    EXPECT_NEAR(x["algbw_gb_per_s"].get<double>(), algbw, 1e-9);
    EXPECT_NEAR(x["busbw_gb_per_s"].get<double>(), busbw, 1e-9);
    EXPECT_EQ(x["algorithm"], "ring");
    EXPECT_EQ(x["protocol"], "LL");
    sum += busbw;
  }
  EXPECT_NEAR(j["avg_busbw_gb_per_s"].get<double>(), sum / 2, 1e-9);
  // The table prints the same numbers: each data row's columns from the fields, formatted as the table does.
  const auto table = test::run_cli(args);
  ASSERT_EQ(table.status, 0) << table.err;
  std::istringstream in(table.out);
  std::size_t row = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    ASSERT_LT(row, 2u);
    const auto& x = j["results"][row++];
    EXPECT_EQ(line,
              fmt::format("  {:>10.0f} {:>13} {:>9} {:>7} {:>7} {:>10.1f} {:>7.2f} {:>7.2f}  {:<9} {:<8} {:>8}",
                          x["size_bytes"].get<double>(), x["count_elements"].get<long long>(), x["type"].get<std::string>(),
                          x["redop"].get<std::string>(), x["root"].get<int>(), x["time_s"].get<double>() * 1e6,
                          x["algbw_gb_per_s"].get<double>(), x["busbw_gb_per_s"].get<double>(), x["algorithm"].get<std::string>(),
                          x["protocol"].get<std::string>(), x["channels"].get<int>()));
  }
  EXPECT_EQ(row, 2u);
  EXPECT_NE(table.out.find(fmt::format("# Avg bus bandwidth    : {:.3f}\n", j["avg_busbw_gb_per_s"].get<double>())),
            std::string::npos);
}

TEST(CollectiveCli, GoldenJson) {
  // every member and number as printed (tests/golden/refresh.sh); the command line names the binary, so it is left out
  const auto r = test::run_cli("collective --cluster dgx2 --gpus 12 --gpus-per-thread 12 --sweep 8B:1GiB --format json");
  ASSERT_EQ(r.status, 0) << r.err;
  auto got = nlohmann::ordered_json::parse(r.out);
  auto want = nlohmann::ordered_json::parse(
      test::slurp(std::filesystem::path(DLSCALE_SOURCE_DIR) / "tests/golden/collective-dgx2-g12.json"));
  got.erase("command_line");
  want.erase("command_line");
  EXPECT_EQ(got.dump(2), want.dump(2)) << "refresh on purpose with tests/golden/refresh.sh";
}

// The table's columns by operation (nccl-tests' own): allgather and reducescatter count the elements of one
// rank's part, S / 4 / n; broadcast and reduce have root 0; allgather and broadcast reduce nothing.
TEST(CollectiveCli, JsonColumnsFollowTheOperation) {
  struct Case {
    const char* op;
    long long count;
    const char* redop;
    int root;
  };
  for (const Case& c : {Case{"allgather", 1048576 / 4 / 8, "none", -1}, Case{"reducescatter", 1048576 / 4 / 8, "sum", -1},
                        Case{"broadcast", 1048576 / 4, "none", 0}, Case{"reduce", 1048576 / 4, "sum", 0}}) {
    const auto r = test::run_cli(std::string("collective --cluster dgx1v --gpus 8 --bytes 1MiB --format json --op ") + c.op);
    ASSERT_EQ(r.status, 0) << r.err;
    const auto x = nlohmann::json::parse(r.out)["results"][0];
    EXPECT_EQ(x["count_elements"].get<long long>(), c.count) << c.op;
    EXPECT_EQ(x["redop"], c.redop) << c.op;
    EXPECT_EQ(x["root"], c.root) << c.op;
  }
}

// ---- issue 35: what a V100's NVLink delivers, NCCL_ALGO / NCCL_PROTO, CollNet ----------------------------
TEST(NcclVoltaNvlink, Dgx1vEightGpusAboveDgx2AndNearTheMeasured135) {
  // 1 GiB all-reduce, ring Simple, lat 56 µs (8.4 + 14 × 3.4). DGX-1V: 6 channels booked at 20 on links that
  // deliver 23 → busBw 138; DGX-2 (8 of 16 GPUs): 6 × 20 booked, links to the NVSwitches deliver 20.6 → 123.6.
  // nccl-tests busbw = S / t · 14/8; the DGX-2 comparison paper measured 135.5 GB/s on the DGX-1V and less on
  // the DGX-2 (the NVSwitch's acknowledgements; issue 35).
  const double s = 1073741824.0;
  auto busbw = [&](const std::string& c) {
    return s / in_us(choose(c, CollectiveOp::allreduce, gibibytes(1), {8, 1, 8}).time) / 1e3 * 14.0 / 8.0;
  };
  const double dgx1v = busbw("dgx1v"), dgx2 = busbw("dgx2");
  EXPECT_NEAR(dgx1v, s / (56.0 + s / (1000.0 * 138.0 * 8.0 / 14.0)) / 1e3 * 14.0 / 8.0, 1e-9);
  EXPECT_NEAR(dgx2, s / (56.0 + s / (1000.0 * 123.6 * 8.0 / 14.0)) / 1e3 * 14.0 / 8.0, 1e-9);
  EXPECT_GT(dgx1v, dgx2);
  EXPECT_LE(std::abs(dgx1v / 135.5 - 1), 0.10);
  // AC922, 2 GPUs: 4 channels × 15 booked on the 3-link pair (60), delivered 3 × 23 = 69; the paper: 70.
  // 2 ranks: algbw = busBw · 2/2, lat = 8.4 + 2 × 3.4 = 15.2 µs; nccl-tests busbw = S / t.
  const double ac922 = s / in_us(choose("ac922", CollectiveOp::allreduce, gibibytes(1), {2, 1, 2}).time) / 1e3;
  EXPECT_NEAR(ac922, s / (15.2 + s / 69000.0) / 1e3, 1e-9);
  // Graphs through PCIe or a CPU keep NCCL's ratings: AC922 at 4 GPUs crosses the X-bus (2 × 15 booked).
  const auto four = choose("ac922", CollectiveOp::allreduce, gibibytes(1), {4, 1, 4});
  EXPECT_NEAR(s / in_us(four.time) / 1e3 * 6.0 / 4.0, s / (8.4 + 6 * 5.7 + s / (1000.0 * 30.0 * 4.0 / 6.0)) / 1e3 * 6.0 / 4.0,
              0.5);
}

TEST(NcclForced, RingOnEightH100sIsTheRingsOwnTime) {
  // NCCL would run NVLS at 1 GiB; NCCL_ALGO=Ring leaves the ring: 12 channels × 30 (NCCL's search, H100
  // links at NCCL's rating), Simple: algbw 360 · 8/14, lat 56 µs → busbw 356.2 GB/s.
  const auto& t = nccl::default_table();
  const double s = 1073741824.0;
  const auto free = nccl::choose(topo("dgx-h100"), t, CollectiveOp::allreduce, gibibytes(1), {8, 1, 8});
  EXPECT_EQ(free.algorithm, nccl::NVLS);
  const auto ring = nccl::choose(topo("dgx-h100"), t, CollectiveOp::allreduce, gibibytes(1), {8, 1, 8}, {nccl::RING, -1});
  EXPECT_EQ(ring.algorithm, nccl::RING);
  EXPECT_EQ(ring.protocol, nccl::SIMPLE);
  EXPECT_NEAR(in_us(ring.time), 56.0 + s / (1000.0 * 360.0 * 8.0 / 14.0), 1e-6);
  // NCCL_PROTO=LL on the DGX-1V at 1 GiB: ring LL, 15.0 µs + S / (39 · 8/14 GB/s) (llMax caps 138 · 0.5).
  const auto ll = nccl::choose(topo("dgx1v"), t, CollectiveOp::allreduce, gibibytes(1), {8, 1, 8}, {nccl::RING, nccl::LL});
  EXPECT_NEAR(in_us(ll.time), 15.0 + s / (1000.0 * 39.0 * 8.0 / 14.0), 1e-6);
  EXPECT_EQ(nccl::algorithm_from_name("collnet_chain"), nccl::COLLNET_CHAIN);
  EXPECT_EQ(nccl::protocol_from_name("ll128"), nccl::LL128);
  EXPECT_EQ(nccl::algorithm_from_name("Ring"), -1);  // lower case, as the option takes them
}

TEST(NcclForced, WhatNcclCannotRunSaysWhy) {
  const auto& t = nccl::default_table();
  auto why = [&](const std::string& c, CollectiveOp op, GpuPlacement w, int a, int p) {
    return nccl::why_not(topo(c), t, op, w, {a, p});
  };
  EXPECT_EQ(why("dgx-h100", CollectiveOp::allreduce, {8, 1, 8}, nccl::NVLS, -1), "");
  EXPECT_NE(why("dgx1v", CollectiveOp::allreduce, {8, 1, 8}, nccl::NVLS, -1).find("NVSwitches and Hopper"), std::string::npos);
  EXPECT_NE(why("dgx-h100", CollectiveOp::allreduce, {8, 1, 8}, nccl::NVLS, nccl::LL).find("Simple protocol only"),
            std::string::npos);
  EXPECT_NE(why("dgx-h100", CollectiveOp::allreduce, {8, 1, 8}, nccl::NVLS_TREE, -1).find("across nodes only"),
            std::string::npos);
  EXPECT_NE(why("dgx1v", CollectiveOp::allgather, {8, 1, 8}, nccl::TREE, -1).find("all-reduce only"), std::string::npos);
  EXPECT_NE(why("exxact-ts4-rtx2080ti", CollectiveOp::allreduce, {8, 1, 8}, -1, nccl::LL128).find("LL128 only over NVLink"),
            std::string::npos);
  EXPECT_NE(why("dgx-h100-ndr", CollectiveOp::allgather, {16, 2, 8}, nccl::PAT, -1).find("one GPU on each"), std::string::npos);
  EXPECT_NE(why("dgx-h100-ndr", CollectiveOp::allreduce, {16, 2, 8}, nccl::COLLNET_DIRECT, -1).find("sharp: true"),
            std::string::npos);
  EXPECT_THROW(nccl::choose(topo("dgx1v"), t, CollectiveOp::allreduce, bytes(8), {8, 1, 8}, {nccl::NVLS, -1}), InputError);
}

/// dgx-h100-ndr with InfiniBand switches that reduce (fabric: {sharp: true}).
const Topology& sharp_h100() {
  static const Cluster c = [] {
    const auto dir = std::filesystem::temp_directory_path() / ("dlscale-sharp-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::ifstream in(std::string(DLSCALE_SOURCE_DIR) + "/topologies/dgx-h100-ndr.yaml");
    std::string text((std::istreambuf_iterator<char>(in)), {});
    const std::string at = "  latency: \"1 us\"\n";
    text.replace(text.find(at), at.size(), at + "  sharp: true\n");
    std::ofstream(dir / "sharp.yaml") << text;
    Cluster out = load_cluster(dir / "sharp.yaml");
    std::filesystem::remove_all(dir);
    return out;
  }();
  return *c.topology;
}

TEST(NcclCollNet, DirectAndChainOnTwoH100NodesFollowTheirFormulas) {
  // 2 nodes × 8, fabric latency 1 µs. Latency (µs): Direct 2 · (1 · 3.7 + 7 · 0.4) + 31 + 2 · 1 = 46;
  // Chain 2 · 7 · 2.8 + 30 + 2 = 71.2. Bandwidth from the tree graph (channels c at bwIntra b, as NCCL's
  // CollNet graphs): Direct c · b / (r − (r − 1)/2) · 0.85 (Hopper) · 0.5, r = 8 / c; Chain c · b · 0.75 · 0.5.
  const auto& t = nccl::default_table();
  const GpuPlacement w{16, 2, 8};
  const auto tree = sharp_h100().channels(ChannelPattern::tree, first(8), 2);
  ASSERT_GT(tree.channels, 0);
  const double c = tree.channels, b = gbs(tree.bw_intra);
  double r = 8.0 / c;
  r -= (r - 1) / 2;
  const double s = 1073741824.0;
  const auto direct = nccl::choose(sharp_h100(), t, CollectiveOp::allreduce, gibibytes(1), w, {nccl::COLLNET_DIRECT, -1});
  EXPECT_EQ(direct.protocol, nccl::SIMPLE);
  EXPECT_NEAR(in_us(direct.latency), 46.0, 1e-9);
  EXPECT_NEAR(in_us(direct.time), 46.0 + s / (1000.0 * c * b / r * 0.85 * 0.5), 1e-6);
  const auto chain = nccl::choose(sharp_h100(), t, CollectiveOp::allreduce, gibibytes(1), w, {nccl::COLLNET_CHAIN, -1});
  EXPECT_NEAR(in_us(chain.latency), 71.2, 1e-9);
  EXPECT_NEAR(in_us(chain.time), 71.2 + s / (1000.0 * c * b * 0.75 * 0.5), 1e-6);
  // Without SHARP the same cluster never offers CollNet; with it, NCCL's choice is the fastest of all.
  const auto free = nccl::choose(sharp_h100(), t, CollectiveOp::allreduce, gibibytes(1), w);
  EXPECT_LE(in_us(free.time), std::min(in_us(direct.time), in_us(chain.time)) + 1e-9);
  EXPECT_EQ(nccl::why_not(sharp_h100(), t, CollectiveOp::allreduce, w, {nccl::COLLNET_DIRECT, -1}), "");
  EXPECT_NE(nccl::why_not(sharp_h100(), t, CollectiveOp::allreduce, {8, 1, 8}, {nccl::COLLNET_DIRECT, -1}).find("across nodes"),
            std::string::npos);
}

TEST(CollectiveCli, AlgoAndProtoAsNcclAlgoAndNcclProto) {
  auto r = test::run_cli("collective --cluster dgx-h100 --gpus 8 --bytes 1GiB --algo ring --format json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["algo"], "ring");
  EXPECT_EQ(j["results"][0]["algorithm"], "ring");
  // What NCCL cannot run: one line naming the option, exit 2, nothing written.
  r = test::run_cli("collective --cluster dgx1v --gpus 8 --bytes 1MiB --algo nvls");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(r.out.empty());
  EXPECT_EQ(r.err,
            "dlscale: '--algo': nvls cannot run allreduce on 8 GPUs of 'dgx1v': NVLink SHARP needs NVSwitches and "
            "Hopper or newer GPUs, which this cluster does not have\n");
  r = test::run_cli("collective --cluster dgx-h100 --gpus 8 --bytes 1MiB --algo nvls --proto ll");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err,
            "dlscale: '--proto': nvls/ll cannot run allreduce on 8 GPUs of 'dgx-h100': NCCL runs nvls with the "
            "Simple protocol only\n");
}

TEST(CollectiveCli, BadInputExitsTwoWithOneLine) {
  auto r = test::run_cli("collective --cluster dgx1v --op alltoall --gpus 8 --bytes 1MiB");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find("--op"), std::string::npos) << r.err;
  r = test::run_cli("collective --cluster dgx1v --gpus 8 --bytes 1MB/s");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--bytes"), std::string::npos) << r.err;
  r = test::run_cli("collective --cluster dgx1v --gpus 64 --bytes 1MiB");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(r.out.empty());
}

}  // namespace
}  // namespace dlscale
