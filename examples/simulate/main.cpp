// The simulator beside the closed form: a shipped cluster, model and framework, each GPU count of one node
// and up to four nodes simulated for 20 iterations with link contention and 2 % compute jitter, next to what
// Predictor says. A bad simulator option is an InputError naming the SimOptions field.
//
// Links the installed dlscale package (find_package(dlscale), target dlscale::sim). Usage:
//   simulate [cluster (default dgx1v)] [model (default resnet50)] [framework (default pytorch-ddp)]
#include <dlscale/error.hpp>
#include <dlscale/io.hpp>
#include <dlscale/predict.hpp>
#include <dlscale/sim/simulator.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  // The installed data folder: resolve() finds the named files there, and what they name in turn (the
  // GPU catalogue, input pipelines, transports) is read from the data folder each file lies in.
  const std::filesystem::path data = DLSCALE_EXAMPLE_DATA_DIR;
  const std::string cluster = argc > 1 ? argv[1] : "dgx1v";
  const std::string model = argc > 2 ? argv[2] : "resnet50";
  const std::string framework = argc > 3 ? argv[3] : "pytorch-ddp";
  try {
    using namespace dlscale;
    Scenario sc;
    sc.cluster = load_cluster(resolve(DataKind::cluster, cluster, "cluster", data));
    sc.network = load_network(resolve(DataKind::network, model, "network", data));
    sc.strategy = load_strategy(resolve(DataKind::framework, framework, "framework", data));
    sc.batch_per_gpu = 64;
    sc.compute.precision = Precision::fp16;

    sim::SimOptions opt;
    opt.iterations = 20;
    opt.seed = 7;
    opt.contention = true;  // aggregations become flows sharing the links
    opt.compute_jitter = 0.02;

    sim::SimOptions wrong = opt;
    wrong.iterations = 0;
    try {
      (void)sim::Simulator(sc, wrong);
    } catch (const InputError& e) {
      std::printf("Simulator: field '%s': %s\n", e.key().c_str(), e.message().c_str());
    }

    const sim::Simulator simulator(sc, opt);
    const Predictor& closed = simulator.predictor();  // the same scenario, closed form
    std::printf("%s, batch %d per GPU, fp16, %s on %s; %d iterations, contention, jitter %.2f\n", sc.network.name.c_str(),
                sc.batch_per_gpu, sc.strategy.name.c_str(), sc.cluster.name.c_str(), opt.iterations, opt.compute_jitter);
    std::printf("%6s %14s %14s %12s %12s\n", "GPUs", "closed form", "simulated", "p99", "samples/s");
    std::vector<int> counts;
    for (int g = 1; g <= sc.cluster.gpus_per_node; g *= 2) counts.push_back(g);
    for (int n = 2; n <= std::min(4, sc.cluster.max_nodes); n *= 2) counts.push_back(n * sc.cluster.gpus_per_node);
    for (int g : counts) {
      const sim::SimResult r = simulator.run(g);
      std::printf("%6d %11.2f ms %11.2f ms %9.2f ms %12.0f\n", g, 1e3 * in_seconds(closed.predict(g).iteration_time),
                  1e3 * in_seconds(r.iterations.mean), 1e3 * in_seconds(r.iterations.p99), r.prediction.throughput_samples_per_s);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "simulate: %s\n", e.what());
    return 2;
  }
}
