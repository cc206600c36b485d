// Writing an output file so that a failure never leaves a partial one behind.
#pragma once

#include <string>
#include <string_view>

namespace dlscale {

/// Writes `content` to `path` through a temporary file in the same folder and a rename, so that a
/// failure never leaves a partial file behind.
void write_file_atomically(const std::string& path, std::string_view content);

}  // namespace dlscale
