// The library names a bad value by its field (validate(const Scenario&), Predictor::place, the simulator's
// options, the sweep and plan helpers); the command line took it from one of its options, and says which.
#include <algorithm>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>

#include "cli/commands.hpp"
#include "cli/parallel_options.hpp"
#include "dlscale/error.hpp"

namespace dlscale::cli {
namespace {
// Field as the library's structs and parameters call it → the option (or positional) that sets it.
constexpr std::pair<std::string_view, std::string_view> kFieldOptions[] = {
    // Scenario (validate) and Predictor::place
    {"batch_per_gpu", "--batch"},
    {"compute.accumulate", "--accumulate"},
    {"compute.checkpointing", "--checkpointing"},
    {"compute.fp8_all_gather", "--fp8-all-gather"},
    {"compute.fp8_scaling", "--fp8-scaling"},
    {"compute.recompute", "--checkpointing"},
    {"compute.recompute_blocks", "--checkpointing"},
    {"gpus", "--gpus"},
    {"strategy.jitter_cv", "--jitter-cv"},
    {"strategy.sharding.group", "--shard-group"},
    {"strategy.sharding.offload_optimizer", "--offload-optimizer"},
    // sim::SimOptions
    {"allreduce", "--allreduce"},
    {"bucket_size", "--bucket-size"},
    {"channels", "--channels"},
    {"compute_jitter", "--jitter"},
    {"contention", "--contention"},
    {"cycle_time", "--cycle-time"},
    {"decode_per_sample", "--decode"},
    {"first_bucket", "--first-bucket"},
    {"fusion_threshold", "--fusion-threshold"},
    {"gpus_per_pcie_switch", "--gpus-per-pcie-switch"},
    {"iterations", "--iterations"},
    {"link_jitter", "--link-jitter"},
    {"merge", "--merge"},
    {"node_gpu", "--node-gpu"},
    {"prefetch_depth", "--prefetch-depth"},
    {"readers_per_node", "--readers"},
    {"speed", "--speed"},
    {"trace", "--trace"},
    {"warmup", "--warmup"},
    // resolve's fields: the names of inputs in the data folder
    {"cluster", "--cluster"},
    {"framework", "--framework"},
    {"network", "--model"},
    {"profile", "--profile"},
    // ClusterOverrides, TopologyImportOptions, InputOverride
    {"cpu", "--cpu"},
    {"gpu", "--gpu"},
    {"image_size", "--image-size"},
    {"nodes", "--nodes"},
    {"gpus_per_node", "--gpus-per-node"},
    {"seq_len", "--seq-len"},
    // plan, explain, sweep, report, reproduce
    {"epochs", "--epochs"},
    {"format", "--format"},
    {"paper", "PAPER"},
    {"parts", "PART"},
    {"rank", "--by"},
    {"samples", "--dataset-samples"},
    {"shard", "--shard"},
    {"strategies", "--frameworks"},
    {"target", "--target"},
};
}  // namespace

std::string_view option_for_field(std::string_view field) noexcept {
  if (auto o = parallel_option_for_field(field); !o.empty()) return o;  // lib/cli/parallel_options.cpp
  const auto* it =
      std::find_if(std::begin(kFieldOptions), std::end(kFieldOptions), [&](const auto& p) { return p.first == field; });
  return it != std::end(kFieldOptions) ? it->second : std::string_view{};
}

std::string error_line(const std::exception& e) {
  const auto* in = dynamic_cast<const InputError*>(&e);
  // A place in a file (line > 0) is the file's own key; without one, the key is a field, and its file (if
  // any) the path the field named (resolve: "FILE: 'profile': cannot open file").
  if (in == nullptr || in->where().line > 0) return e.what();
  const std::string_view option = option_for_field(in->key());
  if (option.empty()) return e.what();
  if (!in->where().file.empty()) return InputError(in->where(), std::string(option), in->message()).what();
  return UsageError(std::string(option), in->message()).what();
}

}  // namespace dlscale::cli
