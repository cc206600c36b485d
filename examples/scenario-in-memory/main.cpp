// A scenario built in memory: a cluster of NODES nodes with GPUS GPUs each, a four-layer perceptron and a
// bucketed all-reduce framework, all written in code. validate() says which field is out of range before
// anything is predicted (here: a batch of zero); then 1 GPU up to the whole cluster are predicted.
//
// Links the installed dlscale package (find_package(dlscale)). Usage:
//   scenario-in-memory [gpus per node (default 8)] [nodes (default 4)]
#include <dlscale/error.hpp>
#include <dlscale/predict.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

namespace {

using namespace dlscale;

Scenario perceptron_on_a_cluster(int gpus_per_node, int nodes) {
  Scenario sc;
  Cluster& c = sc.cluster;
  c.name = "in-memory";
  c.max_nodes = nodes;
  c.gpus_per_node = gpus_per_node;
  c.gpu.name = "a 100 TFLOP/s GPU";
  c.gpu.architecture = "hopper";  // selects the shipped kernel-model parameters of that architecture
  c.gpu.sm_version = 90;
  c.gpu.peak_fp32 = teraflops_per_second(60);
  c.gpu.peak_fp16 = c.gpu.peak_bf16 = teraflops_per_second(100);
  c.gpu.memory_bandwidth = gigabytes_per_second(3000);
  c.gpu.memory_size = gigabytes(80);
  c.h2d_pinned = c.h2d_pageable = gigabytes_per_second(25);
  c.intra_node = {gigabytes_per_second(300), microseconds(3)};  // NVLink, per direction
  c.inter_node = {gigabytes_per_second(25), microseconds(5)};   // one 200 Gb/s NIC per node
  c.disk = c.page_cache = gigabytes_per_second(10);

  Network& net = sc.network;
  net.name = "mlp-4x8192";
  net.input_kind = "tokens";
  net.input_shape = {8192};
  net.input_bytes_per_sample = kilobytes(32);  // 8192 fp32 features
  for (int i = 0; i < 4; ++i) {
    Layer l;
    l.name = "fc" + std::to_string(i + 1);
    l.kind = LayerKind::linear;
    l.params = 8192LL * 8192 + 8192;  // weights and biases
    l.macs_per_sample = 8192.0 * 8192.0;
    l.forward_flops_per_sample = 2.0 * l.macs_per_sample;
    l.input_shape = l.output_shape = {8192};
    l.activation_bytes_per_sample = 4.0 * 8192;
    net.layers.push_back(l);
  }

  Strategy& s = sc.strategy;
  s.name = "bucketed all-reduce";
  s.aggregation = Aggregation::allreduce;
  s.overlap = Overlap::bucketed;
  s.bucket_size = mebibytes(25);
  s.first_bucket = mebibytes(1);

  sc.batch_per_gpu = 64;
  sc.compute.precision = Precision::bf16;
  sc.compute.optimizer = Optimizer::adamw;
  return sc;
}

}  // namespace

int main(int argc, char** argv) {
  // Everything in this scenario is written below; the kernel-model parameters are built into the library
  // (the shipped topologies/compute-params.yaml), so no data folder is read.
  const int gpus_per_node = argc > 1 ? std::atoi(argv[1]) : 8;
  const int nodes = argc > 2 ? std::atoi(argv[2]) : 4;
  try {
    using namespace dlscale;
    Scenario sc = perceptron_on_a_cluster(gpus_per_node, nodes);

    // A bad value is an InputError naming the field as Scenario calls it, before any prediction.
    Scenario wrong = sc;
    wrong.batch_per_gpu = 0;
    try {
      validate(wrong);
    } catch (const InputError& e) {
      std::printf("validate: field '%s': %s\n", e.key().c_str(), e.message().c_str());
    }

    validate(sc);  // the arguments may make it wrong too (zero GPUs per node)
    const Predictor predictor(sc);
    std::printf("%s, batch %d per GPU, bf16, %s on %d node%s of %d GPUs\n", sc.network.name.c_str(), sc.batch_per_gpu,
                sc.strategy.name.c_str(), nodes, nodes == 1 ? "" : "s", gpus_per_node);
    std::printf("%6s %12s %10s %12s\n", "GPUs", "samples/s", "efficiency", "iteration");
    for (int g = 1; g <= sc.cluster.max_gpus(); g = g < gpus_per_node ? g * 2 : g + gpus_per_node) {
      if (g > gpus_per_node && g % gpus_per_node != 0) continue;
      const Prediction p = predictor.predict(g);
      std::printf("%6d %12.1f %9.1f%% %9.3f ms\n", p.gpus, p.throughput_samples_per_s, 100.0 * p.efficiency,
                  1e3 * in_seconds(p.iteration_time));
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "scenario-in-memory: %s\n", e.what());
    return 2;
  }
}
