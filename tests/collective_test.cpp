// The collective folder's α-β ring (lib/collective/collective.cpp, issue 2): t = steps·α + (bytes on the wire
// per rank)/β over the slowest link the GPUs use, and the parameter-server exchange every model inherits.
// Transports have their own test (transport_test.cpp); NCCL's model is nccl_test.cpp's. Every expected time
// is worked by hand in the comment above it from the ring's step counts: all-reduce 2(n−1) steps of S/n,
// all-gather and reduce-scatter n−1 steps of S/n, broadcast and reduce a pipelined chain of n−1 hops.
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "dlscale/cluster.hpp"
#include "dlscale/collective.hpp"

namespace dlscale {
namespace {

// Inside a node 10 GB/s and 2 us a hop; between nodes 5 GB/s and 10 us.
Cluster hand_cluster() {
  Cluster c;
  c.name = "hand";
  c.max_nodes = 4;
  c.gpus_per_node = 4;
  c.intra_node = {gigabytes_per_second(10), microseconds(2)};
  c.inter_node = {gigabytes_per_second(5), microseconds(10)};
  return c;
}

double time_s(CollectiveOp op, Bytes size, GpuPlacement where) {
  return in_seconds(make_alpha_beta_model(hand_cluster())->time(op, size, where));
}

// 4 GPUs in one node, S = 100 MB: 2·3 steps · 2 us + 2·3/4 · 100e6 B / 10e9 B/s = 12e-6 + 0.015 s.
TEST(AlphaBetaRing, AllreduceInsideOneNode) {
  EXPECT_NEAR(time_s(CollectiveOp::allreduce, megabytes(100), {4, 1, 4}), 0.015012, 1e-12);
}

// 8 GPUs on 2 nodes run at the slower link and the longer hop: β = 5 GB/s, α = 10 us. All-gather of
// S = 80 MB (the gathered array): 7 · 10 us + 7/8 · 80e6 / 5e9 = 70e-6 + 0.014 s; reduce-scatter the same.
TEST(AlphaBetaRing, AllgatherAndReduceScatterAcrossNodesUseTheSlowerLink) {
  EXPECT_NEAR(time_s(CollectiveOp::allgather, megabytes(80), {8, 2, 4}), 0.01407, 1e-12);
  EXPECT_NEAR(time_s(CollectiveOp::reducescatter, megabytes(80), {8, 2, 4}), 0.01407, 1e-12);
}

// A broadcast (or reduce) pipelines S once over the chain: 3 hops · 2 us + 10e6 / 10e9 = 6e-6 + 1e-3 s.
// One rank a node: the ring crosses no link inside a node, so only the network sets β and α. With the inside
// link the slower one (1 GB/s, 50 us against 5 GB/s, 10 us), 4 GPUs on 4 nodes all-reduce S = 100 MB in
// 2·3 · 10 us + 2·3/4 · 100e6 / 5e9 = 60e-6 + 0.03 s; 8 GPUs on 2 nodes cross both and take the slower.
TEST(AlphaBetaRing, OneRankANodeCrossesOnlyTheNetwork) {
  Cluster c = hand_cluster();
  c.intra_node = {gigabytes_per_second(1), microseconds(50)};
  const auto model = make_alpha_beta_model(c);
  EXPECT_NEAR(in_seconds(model->time(CollectiveOp::allreduce, megabytes(100), {4, 4, 1})), 0.03006, 1e-12);
  // 2·7 · 50 us + 2·7/8 · 100e6 / 1e9 = 700e-6 + 0.175 s
  EXPECT_NEAR(in_seconds(model->time(CollectiveOp::allreduce, megabytes(100), {8, 2, 4})), 0.1757, 1e-12);
}

TEST(AlphaBetaRing, BroadcastAndReduceSendTheArrayOnce) {
  EXPECT_NEAR(time_s(CollectiveOp::broadcast, megabytes(10), {4, 1, 4}), 0.001006, 1e-12);
  EXPECT_NEAR(time_s(CollectiveOp::reduce, megabytes(10), {4, 1, 4}), 0.001006, 1e-12);
}

TEST(AlphaBetaRing, OneGpuCommunicatesNothing) { EXPECT_EQ(time_s(CollectiveOp::allreduce, megabytes(100), {1, 1, 1}), 0.0); }

// The many-sizes call gives each size's time: 2 GPUs, all-reduce 2·1·2 us + S/10e9 (2·1/2 = 1).
TEST(AlphaBetaRing, ManySizesAtOnceMatchOneAtATime) {
  const auto model = make_alpha_beta_model(hand_cluster());
  const std::array<Bytes, 3> sizes{bytes(0), megabytes(1), gigabytes(1)};
  std::array<Seconds, 3> out{};
  model->times(CollectiveOp::allreduce, sizes, {2, 1, 2}, out);
  EXPECT_NEAR(in_seconds(out[0]), 4e-6, 1e-15);
  EXPECT_NEAR(in_seconds(out[1]), 4e-6 + 1e-4, 1e-15);
  EXPECT_NEAR(in_seconds(out[2]), 4e-6 + 0.1, 1e-12);
}

// Parameter servers: each GPU pushes S split over k servers and pulls it back, so each server's link carries
// N·S/k bytes each way. 8 GPUs on 2 nodes, servers ≤ 0 → one per node (k = 2), S = 10 MB: 40 MB each way over
// the inter-node link, one hop each: 2 · (10 us + 40e6 / 5e9) = 2 · 0.00801 s.
TEST(AlphaBetaRing, ParameterServersCarryTheirShareBothWays) {
  const auto model = make_alpha_beta_model(hand_cluster());
  EXPECT_NEAR(in_seconds(model->parameter_server(megabytes(10), {8, 2, 4}, 0)), 0.01602, 1e-12);
  // one server: 80 MB each way, 2 · (10 us + 0.016 s)
  EXPECT_NEAR(in_seconds(model->parameter_server(megabytes(10), {8, 2, 4}, 1)), 0.03202, 1e-12);
  EXPECT_EQ(in_seconds(model->parameter_server(megabytes(10), {1, 1, 1}, 1)), 0.0);
}

}  // namespace
}  // namespace dlscale
