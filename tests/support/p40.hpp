// Test helper: a scenario on a shipped cluster (the Shi & Chu P40 cluster by default) with a shipped network
// and framework file, the optimiser each network defaults to (validation, input pipeline and predictor tests).
#pragma once

#include <string>

#include "dlscale/io.hpp"
#include "dlscale/predict.hpp"

namespace dlscale::test {

inline Scenario shipped_scenario(const std::string& cluster, const std::string& model, const std::string& framework, int batch) {
  Scenario sc;
  sc.cluster = load_cluster(resolve(DataKind::cluster, cluster, "--cluster"));
  sc.network = load_network(resolve(DataKind::network, model, "--model"));
  sc.strategy = load_strategy(resolve(DataKind::framework, framework, "--framework"));
  sc.batch_per_gpu = batch;
  sc.compute.optimizer = default_optimizer(sc.network, sc.strategy);  // as predict takes it: the framework's, else the network's
  return sc;
}

inline Scenario p40_scenario(const std::string& model, const std::string& framework, int batch) {
  return shipped_scenario("shi-chu-p40", model, framework, batch);
}

}  // namespace dlscale::test
