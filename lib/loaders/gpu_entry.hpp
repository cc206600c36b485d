// Internal: a GPU as a YAML file gives it (a cluster's `gpu:`, a sweep's composed cluster): a catalogue id
// or alias, or a map with the catalogue entry's keys (docs/input-formats.md, "GPU catalogue entry").
#pragma once

#include <filesystem>

#include "dlscale/gpu.hpp"
#include "io/yaml_reader.hpp"

namespace dlscale {

/// A map may keep a catalogue entry's `id` and `aliases` (copied whole); they are not used. An unknown name
/// fails at the node (its file:line:col); an error inside the catalogue keeps its own place.
GpuSpec read_gpu_node(const yamlio::Node& n);
/// The same, a name looked up in `data_folder`'s catalogue.
GpuSpec read_gpu_node(const yamlio::Node& n, const std::filesystem::path& data_folder);

}  // namespace dlscale
