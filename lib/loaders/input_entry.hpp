// Internal: an `input:` section as a YAML file gives it (a cluster's, or a reproduce experiment's override
// of one: docs/input-formats.md, "Input pipeline"; docs/reproduce.md).
#pragma once

#include <filesystem>

#include "dlscale/cluster.hpp"
#include "dlscale/input_pipeline.hpp"
#include "io/yaml_reader.hpp"

namespace dlscale {

/// The section's storage tiers default to the cluster's (default_storage); read with a default Cluster they
/// stay zero unless the section gives them. Errors name the node's file:line:col.
InputPipeline read_input(const yamlio::Node& n, const Cluster& c);
/// The same, the dataset and CPU looked up in `data_folder`'s models/input/.
InputPipeline read_input(const yamlio::Node& n, const Cluster& c, const std::filesystem::path& data_folder);

/// The tiers a section leaves out (zero: a given bandwidth is never zero) are the cluster's: the page cache
/// is `storage.page_cache`, the local disk `storage.disk`.
inline void default_storage(InputPipeline& p, const Cluster& c) {
  if (!(p.page_cache > BytesPerSecond{})) p.page_cache = c.page_cache;
  if (!(p.nvme > BytesPerSecond{})) p.nvme = c.disk;
}

}  // namespace dlscale
