// The model zoo: compact architecture descriptions (models/arch/NAME.yaml) and the generator that turns
// one into a Network (per learnable layer: params, MACs, FLOPs, activation bytes, output shape), plus the
// writer of the generated models/NAME.yaml files. Format and counting conventions: docs/models.md.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "dlscale/network.hpp"

namespace dlscale {

/// The folder of the architecture descriptions: data_dir()/models/arch.
std::filesystem::path architecture_dir();
/// The names of the shipped architecture descriptions (file stems in architecture_dir()), sorted.
std::vector<std::string> architecture_names();
/// NAME or path → the architecture file. Throws UsageError(option, …) for an unknown name.
std::filesystem::path resolve_architecture(std::string_view name_or_file, std::string_view option);

/// Parses an architecture description and computes every learnable layer. Any problem (unknown key or
/// layer kind, a non-positive size, a shape that does not fit) is an InputError naming file:line:col.
Network build_network(const std::filesystem::path& arch_file);
/// A different input size than the description's: the sequence length of a token model, or the height
/// and width of an image model (0: as described). Errors name the option's value, not a file location.
struct InputOverride {
  int seq_len = 0;
  int image_size = 0;
};
Network build_network(const std::filesystem::path& arch_file, const InputOverride& input);
/// The same, from text (for tests); `display_name` appears in error messages.
Network build_network_from_string(const std::string& text, const std::string& display_name);

/// The text of the generated models/NAME.yaml for a network built from `arch_name`'s description
/// (deterministic: the checked-in files must equal it byte for byte).
std::string network_to_yaml(const Network& net, std::string_view arch_name);

}  // namespace dlscale
