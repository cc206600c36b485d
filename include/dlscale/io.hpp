// Reading dlscale's inputs. Every loader parses a YAML file once into a plain struct; any problem is an
// InputError naming file:line:col and the key. Names (e.g. "resnet50") are looked up in the data folders:
//   clusters    topologies/NAME.yaml
//   GPUs        topologies/gpus.yaml
//   networks    models/NAME.yaml
//   frameworks  models/frameworks/NAME.yaml
//   profiles    models/profiles/**/NAME.yaml (searched recursively by file name)
// The data folder is $DLSCALE_DATA_DIR if set, else the installed share/dlscale, else the source tree;
// a caller that knows its data folder (an installed package's dlscale_DATA_DIR) passes it to resolve().
// What a file names in turn (a cluster's GPU, input dataset and CPU, and default framework; a framework's
// transport; a profile's model, framework and cluster) is looked up in the data folder the file lies in
// (data_folder_of), so a shipped file reads the same wherever the data folder is and whatever
// $DLSCALE_DATA_DIR says; a file outside any data folder looks in data_dir().
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "dlscale/cluster.hpp"
#include "dlscale/gpu.hpp"
#include "dlscale/network.hpp"
#include "dlscale/profile.hpp"
#include "dlscale/strategy.hpp"

namespace dlscale {

enum class DataKind { cluster, network, framework, profile };

std::filesystem::path data_dir();
/// The data folder `file` lies in: its nearest enclosing folder holding topologies/gpus.yaml and models/;
/// data_dir() for a file in none.
std::filesystem::path data_folder_of(const std::filesystem::path& file);
/// The names of the shipped files of a kind, sorted (in data_dir(), or in `data_folder`).
std::vector<std::string> list_names(DataKind kind);
std::vector<std::string> list_names(DataKind kind, const std::filesystem::path& data_folder);
/// NAME or path → path. A value that names an existing file (or contains '/' or ends in .yaml) is a
/// path; otherwise a name in the data folder. An unknown name is an InputError without a place naming
/// `field`, the field that held it ("cluster", "network", "framework", "profile", "grid.cluster", ...):
/// "'framework': unknown framework 'x' (known: …)"; lib/cli says which option set the field.
std::filesystem::path resolve(DataKind kind, std::string_view name_or_file, std::string_view field);
/// The same, a name looked up in `data_folder` rather than data_dir().
std::filesystem::path resolve(DataKind kind, std::string_view name_or_file, std::string_view field,
                              const std::filesystem::path& data_folder);

Cluster load_cluster(const std::filesystem::path& file);
/// The same, made into `overrides.nodes` nodes on `overrides.fabric` (docs/topology.md, "Composing").
Cluster load_cluster(const std::filesystem::path& file, const ClusterOverrides& overrides);
Network load_network(const std::filesystem::path& file);
Strategy load_strategy(const std::filesystem::path& file);
Profile load_profile(const std::filesystem::path& file);
/// The same on text already read: `display_name` stands for the file in errors (file:line:col) and in
/// Cluster::source_file / Profile::source_file.
Cluster parse_cluster(const std::string& yaml_text, const std::string& display_name);
Network parse_network(const std::string& yaml_text, const std::string& display_name);
Strategy parse_strategy(const std::string& yaml_text, const std::string& display_name);
Profile parse_profile(const std::string& yaml_text, const std::string& display_name);
/// The GPU catalogue entry of that name (case-insensitive), e.g. "p40" or "V100-SXM2". The catalogue
/// (<data dir>/topologies/gpus.yaml) is parsed once and cached (thread-safe) until the file changes.
GpuSpec find_gpu(std::string_view name);
/// The same in `data_folder`'s catalogue (<data_folder>/topologies/gpus.yaml).
GpuSpec find_gpu(std::string_view name, const std::filesystem::path& data_folder);
/// A GPU named on the command line: a catalogue id or name (find_gpu), or a YAML file holding one map with
/// the catalogue entry's keys (docs/input-formats.md, "GPU catalogue entry"; `id`, `aliases` and the
/// optional figures may be left out). An unknown name is an InputError without a place; a file's errors
/// carry its file:line:col.
GpuSpec load_gpu(const std::string& name_or_file);
/// The ids of the GPU catalogue, in the file's order.
std::vector<std::string> list_gpu_ids();
std::vector<GpuSpec> load_gpu_catalogue();

}  // namespace dlscale
