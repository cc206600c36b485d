// Internal: small text helpers shared by the parsers.
#pragma once

#include <cctype>
#include <string>
#include <string_view>

namespace dlscale {

/// `s` with ASCII letters in lower case (names compared without case: GPU ids, PCI bus ids).
inline std::string lower_ascii(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace dlscale
