// How many DGX-2 nodes reach 20,000 images/s on ResNet-50 at >= 80 % scaling efficiency?
//
// Links the installed dlscale package (find_package(dlscale)). Usage:
//   plan-dgx2 [cluster] [target images/s] [minimum efficiency] [framework]
// The cluster defaults to "dgx2" (topologies/dgx2.yaml) and may be any shipped cluster name or file.
#include <dlscale/error.hpp>
#include <dlscale/io.hpp>
#include <dlscale/predict.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>

int main(int argc, char** argv) {
  // The installed data folder: the names below are looked up there, and what those files name in turn
  // (the GPU catalogue, input pipelines, transports) in the data folder each file lies in.
  const std::filesystem::path data = PLAN_DGX2_DATA_DIR;
  const std::string cluster_name = argc > 1 ? argv[1] : "dgx2";
  const double target = argc > 2 ? std::atof(argv[2]) : 20000.0;
  const double min_eff = argc > 3 ? std::atof(argv[3]) : 0.80;
  const std::string framework = argc > 4 ? argv[4] : "pytorch-ddp";
  try {
    using namespace dlscale;
    Scenario sc;
    sc.cluster = load_cluster(resolve(DataKind::cluster, cluster_name, "cluster", data));
    sc.network = load_network(resolve(DataKind::network, "resnet50", "network", data));
    sc.strategy = load_strategy(resolve(DataKind::framework, framework, "framework", data));
    sc.batch_per_gpu = 64;
    sc.compute.precision = Precision::fp16;
    const Predictor predictor(sc);  // per-layer times prepared once; each node count is cheap

    std::printf("ResNet-50, batch 64 per GPU, mixed precision, %s on %s (%d GPUs per node, up to %d nodes)\n",
                sc.strategy.name.c_str(), sc.cluster.name.c_str(), sc.cluster.gpus_per_node, sc.cluster.max_nodes);
    std::printf("%6s %6s %12s %10s\n", "nodes", "GPUs", "images/s", "efficiency");
    for (int nodes = 1; nodes <= sc.cluster.max_nodes; ++nodes) {
      const Prediction p = predictor.predict(nodes * sc.cluster.gpus_per_node);
      std::printf("%6d %6d %12.0f %9.1f%%\n", nodes, p.gpus, p.throughput_samples_per_s, 100.0 * p.efficiency);
      if (p.throughput_samples_per_s >= target) {
        if (p.efficiency >= min_eff) {
          std::printf("answer: %d node%s (%d GPUs): %.0f images/s at %.1f%% efficiency\n", nodes, nodes > 1 ? "s" : "", p.gpus,
                      p.throughput_samples_per_s, 100.0 * p.efficiency);
          return 0;
        }
        std::printf("answer: none: %d nodes reach %.0f images/s but only at %.1f%% efficiency\n", nodes,
                    p.throughput_samples_per_s, 100.0 * p.efficiency);
        return 0;
      }
    }
    std::printf("answer: none: the cluster's %d node%s do not reach %.0f images/s\n", sc.cluster.max_nodes,
                sc.cluster.max_nodes > 1 ? "s" : "", target);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plan-dgx2: %s\n", e.what());
    return 2;
  }
}
