// Internal: small text helpers shared by the parsers.
#pragma once

#include <cctype>
#include <string>
#include <string_view>
#include <vector>

namespace dlscale {

/// The items of a comma-separated list as a command line gives it ("1, 2,4" → {"1", "2", "4"}): spaces
/// dropped, empty items skipped.
inline std::vector<std::string> comma_items(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : text) {
    if (c == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

/// lower_ascii(s) written into `out`, whose buffer is reused (one GPU catalogue entry after another).
inline void lower_ascii_into(std::string_view s, std::string& out) {
  out.assign(s);
  // std::tolower in the "C" locale, without a branch so that the loop vectorises
  for (auto& c : out) c = static_cast<char>(c + (static_cast<unsigned char>(c - 'A') < 26u ? 'a' - 'A' : 0));
}

/// `s` with ASCII letters in lower case (names compared without case: GPU ids, PCI bus ids).
inline std::string lower_ascii(std::string_view s) {
  std::string out;
  lower_ascii_into(s, out);
  return out;
}

/// A name as people write it, reduced to compare: its letters (lower case) and digits only ("ResNet-50" and
/// "resnet50", "DGX A100" and "dgx-a100" give the same key).
inline std::string name_key(std::string_view s) {
  std::string out;
  for (char c : s)
    if (std::isalnum(static_cast<unsigned char>(c))) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// A GPU name's key: name_key without a leading "NVIDIA", "Tesla" or "GeForce" ("NVIDIA GeForce RTX 3090" →
/// "rtx3090", "NVIDIA A100-SXM4-80GB" → "a100sxm480gb", the same as the ids rtx-3090 and a100-sxm4-80gb).
inline std::string gpu_name_key(std::string_view s) {
  std::string out = name_key(s);
  for (bool again = true; again;) {
    again = false;
    for (std::string_view prefix : {"nvidia", "tesla", "geforce"})
      if (out.size() > prefix.size() && out.starts_with(prefix)) {
        out.erase(0, prefix.size());
        again = true;
      }
  }
  return out;
}

}  // namespace dlscale
