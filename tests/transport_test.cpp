// Transports between nodes (include/dlscale/transport.hpp): NCCL staged through host memory without
// GPUDirect RDMA, the RPC parameter-server exchange of TensorFlow 1.x (gRPC) and MXNet (ps-lite), and CNTK's
// MPI all-reduce on host copies reduced at one root node (eq. transport-3, docs/model.md F1).
// Expected values are worked by hand in the comments.
#include <gtest/gtest.h>

#include <array>

#include "dlscale/collective.hpp"
#include "dlscale/error.hpp"
#include "dlscale/io.hpp"
#include "dlscale/predict.hpp"
#include "dlscale/transport.hpp"

namespace dlscale {
namespace {

Cluster two_nodes() {
  Cluster c;
  c.name = "hand";
  c.max_nodes = 4;
  c.gpus_per_node = 4;
  c.intra_node = {gigabytes_per_second(12), Seconds{}};
  c.inter_node = {gigabytes_per_second(1), Seconds{}};
  c.h2d_pinned = c.h2d_pageable = gigabytes_per_second(12);
  return c;
}

// α-β ring, no latency: all-reduce of S = 0.3 GB over 8 GPUs on 2 nodes runs at the slowest link, 1 GB/s:
// 2·(8−1)/8 · 0.3 GB / 1 GB/s = 0.525 s. Without GPUDirect RDMA every byte is staged through host memory at
// min(net 1 GB/s, PCIe 12 GB/s, host 1.2 GB/s / 2 = 0.6 GB/s) = 0.6 GB/s (eq. transport-1), so it takes
// 0.525 · 1 / 0.6 = 0.875 s. Inside one node (4 GPUs, 2·3/4·0.3/12 = 0.0375 s) nothing changes.
TEST(Transport, StagedAllreduceWithoutGpuDirect) {
  Cluster c = two_nodes();
  const auto direct = with_transport(make_alpha_beta_model(c), Transport{}, c);
  EXPECT_NEAR(in_seconds(direct->time(CollectiveOp::allreduce, gigabytes(0.3), {8, 2, 4})), 0.525, 1e-12);
  c.gpudirect_rdma = false;
  c.host_memory = gigabytes_per_second(1.2);
  EXPECT_NEAR(in_gigabytes_per_second(eq::staged_bandwidth(c.inter_node.bandwidth, c.h2d_pinned, c.host_memory)), 0.6, 1e-12);
  const auto staged = with_transport(make_alpha_beta_model(c), Transport{}, c);
  EXPECT_NEAR(in_seconds(staged->time(CollectiveOp::allreduce, gigabytes(0.3), {8, 2, 4})), 0.875, 1e-12);
  EXPECT_NEAR(in_seconds(staged->time(CollectiveOp::allreduce, gigabytes(0.3), {4, 1, 4})), 0.0375, 1e-12);
}

// gRPC parameter servers on 56 Gb/s = 7 GB/s InfiniBand: TCP reaches 0.4 of it, 2.8 GB/s (staging through host
// memory is not slower: PCIe 12 GB/s, host memory not limiting). 16 workers on 4 nodes push S = 100 MB to
// k = 4 servers and pull it back, 100 us per message each way (eq. transport-2):
// t = 2·(100 us + 16 · 100 MB / (4 · 2.8 GB/s)) = 2·(0.0001 + 0.142857…) = 0.285914… s.
// TensorFlow's hybrid sends one worker per node across nodes: 4 workers, 2·(0.0001 + 4·0.1/(4·2.8)) = 0.071629 s.
TEST(Transport, GrpcParameterServerExchange) {
  Cluster c = two_nodes();
  c.inter_node.bandwidth = gigabits_per_second(56);
  Transport grpc;
  grpc.name = "grpc-tcp";
  grpc.wire_efficiency = 0.4;
  grpc.per_message = microseconds(100);
  grpc.staged = true;
  const auto m = with_transport(make_alpha_beta_model(c), grpc, c);
  EXPECT_NEAR(in_seconds(m->parameter_server(megabytes(100), {16, 4, 4}, 4)), 2 * (0.0001 + 1.6 / 11.2), 1e-12);
  EXPECT_NEAR(in_seconds(m->parameter_server(megabytes(100), {16, 4, 4}, 4)), 0.285914, 1e-6);
  EXPECT_NEAR(in_seconds(m->parameter_server(megabytes(100), {4, 4, 1}, 0)), 0.071629, 1e-6);
  // inside one node the GPU parameter server of the base model is used as it is
  const auto base = make_alpha_beta_model(c);
  EXPECT_EQ(m->parameter_server(megabytes(100), {4, 1, 4}, 0), base->parameter_server(megabytes(100), {4, 1, 4}, 0));
}

TEST(Transport, FrameworkFilesNameTheirTransport) {
  const std::string head =
      "name: x\nio: {prefetch: true, memory: pinned}\naggregation: parameter_server\n"
      "overlap: layerwise\nupdate: per_layer\n";
  const Strategy s = parse_strategy(head + "transport: ps-lite-tcp\n", "x.yaml");
  EXPECT_EQ(s.transport.name, "ps-lite-tcp");
  EXPECT_DOUBLE_EQ(s.transport.wire_efficiency, 0.5);
  EXPECT_NEAR(in_us(s.transport.per_message), 50.0, 1e-9);
  EXPECT_TRUE(s.transport.staged);
  EXPECT_TRUE(parse_strategy(head, "x.yaml").transport.is_default());
  try {
    (void)parse_strategy(head + "transport: carrier-pigeon\n", "x.yaml");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "x.yaml:6:12: 'transport': unknown transport 'carrier-pigeon' (known: grpc-tcp, "
              "mpi-host-root, nccl, ps-lite-tcp)");
  }
}

// Eq. transport-3 by hand. F1a: 2·(N−1)·(α + S/B): 4 nodes, 10 us, 0.3 GB at 1 GB/s: 6·(0.00001 + 0.3) = 1.80006 s;
// 2 nodes: 2·0.30001 = 0.60002 s. F1b: (S_first + S_last)/B_copy = (0.3 + 0.05) GB / 12 GB/s = 0.0291666… s.
TEST(Transport, RootAllreduceEquations) {
  EXPECT_NEAR(in_seconds(eq::root_allreduce(gigabytes(0.3), 4, gigabytes_per_second(1), microseconds(10))), 1.80006, 1e-12);
  EXPECT_NEAR(in_seconds(eq::root_allreduce(gigabytes(0.3), 2, gigabytes_per_second(1), microseconds(10))), 0.60002, 1e-12);
  EXPECT_EQ(in_seconds(eq::root_allreduce(gigabytes(0.3), 1, gigabytes_per_second(1), microseconds(10))), 0.0);
  EXPECT_NEAR(in_seconds(eq::staging_exposed(gigabytes(0.3), gigabytes(0.05), gigabytes_per_second(12))), 0.35 / 12, 1e-15);
}

// The transport applies it to all-reduces across nodes, a tensor list at a time: on the hand cluster (1 GB/s between
// nodes, 10 us, pinned copies at 12 GB/s) four units of 0, 0.3, 0.1 and 0.05 GB over 16 GPUs on 4 nodes take
// 0; 6·(1e-5 + 0.3) + 0.3/12 = 1.82506; 6·(1e-5 + 0.1) = 0.60006; 6·(1e-5 + 0.05) + 0.05/12 = 0.3042266… s (the
// empty unit neither exchanges nor copies; the first and the last tensor carry the exposed copies). time() is one
// tensor of such a sequence, its exchange only: 0.3 GB on 2 nodes, 2·(1e-5 + 0.3) = 0.60002 s. Inside a node, and
// for other operations, the collective model is kept (its staging at min(1, 12) GB/s costs nothing here).
TEST(Transport, RootAllreduceOnHostCopies) {
  Cluster c = two_nodes();
  c.inter_node.latency = microseconds(10);
  Transport mpi;
  mpi.name = "mpi-host-root";
  mpi.staged = true;
  mpi.root_allreduce = true;
  EXPECT_FALSE(mpi.is_default());
  const auto base = make_alpha_beta_model(c);
  const auto m = with_transport(base, mpi, c);
  const std::array<Bytes, 4> sizes{Bytes{}, gigabytes(0.3), gigabytes(0.1), gigabytes(0.05)};
  std::array<Seconds, 4> out{};
  m->times(CollectiveOp::allreduce, sizes, {16, 4, 4}, out);
  EXPECT_EQ(in_seconds(out[0]), 0.0);
  EXPECT_NEAR(in_seconds(out[1]), 1.80006 + 0.3 / 12, 1e-12);
  EXPECT_NEAR(in_seconds(out[2]), 0.60006, 1e-12);
  EXPECT_NEAR(in_seconds(out[3]), 0.30006 + 0.05 / 12, 1e-12);
  EXPECT_NEAR(in_seconds(m->time(CollectiveOp::allreduce, gigabytes(0.3), {8, 2, 4})), 0.60002, 1e-12);
  EXPECT_EQ(m->time(CollectiveOp::allreduce, gigabytes(0.3), {4, 1, 4}),
            base->time(CollectiveOp::allreduce, gigabytes(0.3), {4, 1, 4}));
  EXPECT_EQ(m->time(CollectiveOp::broadcast, gigabytes(0.3), {8, 2, 4}),
            base->time(CollectiveOp::broadcast, gigabytes(0.3), {8, 2, 4}));
}

// CNTK's file names it, and the transport file says it (models/frameworks/transports/mpi-host-root.yaml).
TEST(Transport, CntkCrossesNodesByMpiOnHostCopies) {
  const Strategy s = load_strategy(resolve(DataKind::framework, "cntk", "framework"));
  EXPECT_EQ(s.transport.name, "mpi-host-root");
  EXPECT_TRUE(s.transport.root_allreduce);
  EXPECT_TRUE(s.transport.staged);
  EXPECT_DOUBLE_EQ(s.transport.wire_efficiency, 1.0);
  EXPECT_EQ(s.transport.per_message, Seconds{});
}

// The predictor uses it: MXNet-style parameter servers across 2 nodes of the hand cluster, one layer of 0.3 GB,
// ps-lite at 0.5 of 1 GB/s and 50 us per message: 2·(50 us + 8·0.3 GB/(2·0.5 GB/s)) = 4.8001 s of communication.
TEST(Transport, PredictorAppliesTheFrameworksTransport) {
  Scenario sc;
  sc.cluster = two_nodes();
  sc.cluster.name = "hand";
  sc.cluster.gpu.name = "hand GPU";
  sc.cluster.gpu.peak_fp32 = teraflops_per_second(10);
  sc.cluster.gpu.memory_bandwidth = gigabytes_per_second(300);
  sc.cluster.page_cache = sc.cluster.disk = gigabytes_per_second(1);
  sc.network.name = "one";
  sc.network.input_bytes_per_sample = megabytes(1);
  Layer l;
  l.name = "l1";
  l.kind = LayerKind::linear;
  l.params = 75'000'000;  // 0.3 GB of fp32 gradients
  l.forward_flops_per_sample = 1e6;
  sc.network.layers.push_back(l);
  sc.measured_layers = LayerTimes{{seconds(0.1)}, {seconds(0.2)}, {seconds(0.01)}, {}, {}, {}, {}};
  sc.batch_per_gpu = 10;
  sc.strategy.aggregation = Aggregation::parameter_server;
  sc.strategy.overlap = Overlap::none;
  sc.strategy.transport.name = "ps-lite-tcp";
  sc.strategy.transport.wire_efficiency = 0.5;
  sc.strategy.transport.per_message = microseconds(50);
  sc.strategy.transport.staged = true;
  const auto eight = Predictor(sc).predict(8);
  EXPECT_NEAR(in_seconds(eight.breakdown.comm), 2 * (50e-6 + 8 * 0.3 / (2 * 0.5)), 1e-9);
}

}  // namespace
}  // namespace dlscale
