#include "cli/workload_options.hpp"

namespace dlscale::cli {

void add_workload_options(CLI::App& cmd, WorkloadOptions& o) {
  cmd.add_option("--dataset-samples", o.dataset_samples,
                 "Samples per epoch for the time to train (default for image models: ImageNet-1k, 1,281,167)")
      ->type_name("N");
  cmd.add_option("--epochs", o.epochs, "Epochs for the time to train (default 90 for image models, 1 otherwise)")->type_name("E");
}

std::optional<TrainingWorkload> workload_for(const Network& net, const WorkloadOptions& o) {
  return make_workload(net, o.dataset_samples, o.epochs);
}

}  // namespace dlscale::cli
