// --dataset-samples and --epochs: the workload that the time and cost to train are computed for
// (predict, explain, report). Not given: the model's default (ImageNet-1k × 90 epochs for image models).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>

#include "dlscale/network.hpp"
#include "dlscale/plan.hpp"

namespace dlscale::cli {

struct WorkloadOptions {
  std::optional<std::int64_t> dataset_samples;  // ≥ 1 when given
  std::optional<double> epochs;                 // > 0 when given
};

void add_workload_options(CLI::App& cmd, WorkloadOptions& o);

/// The workload for `net` (make_workload: UsageError naming the option for a value ≤ 0); empty for a
/// token model without --dataset-samples.
std::optional<TrainingWorkload> workload_for(const Network& net, const WorkloadOptions& o);

}  // namespace dlscale::cli
