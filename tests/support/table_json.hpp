// Test helper: reading the numbers a table prints, to compare each with its JSON field formatted as the table
// formats it (plan, plan --parallel and explain print both from the same records).
#pragma once

#include <fmt/format.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace dlscale::test {

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

/// The groups of `re` matched against the whole of `line` (groups[0] the line); empty when it does not match.
inline std::vector<std::string> groups(const std::string& line, const std::string& re) {
  std::smatch m;
  std::vector<std::string> out;
  if (!std::regex_match(line, m, std::regex(re))) return out;
  for (const auto& g : m) out.push_back(g.str());
  return out;
}

/// The first line of `text` that matches `re`, as its groups; empty when none does.
inline std::vector<std::string> find_line(const std::string& text, const std::string& re) {
  for (const auto& line : lines_of(text))
    if (auto g = groups(line, re); !g.empty()) return g;
  return {};
}

/// `text` as a regular expression that matches it literally.
inline std::string escaped(const std::string& text) {
  static const std::regex special(R"([.^$|()\[\]{}*+?\\])");
  return std::regex_replace(text, special, R"(\$&)");
}

/// A JSON number as the table prints it (`spec`: the table's format, e.g. "{:.3f}").
inline std::string shown(const char* spec, double v) { return fmt::format(fmt::runtime(spec), v); }

inline std::string trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(' ');
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(' ') - b + 1);
}

}  // namespace dlscale::test
