// Internal: the one YAML emitter behind every file dlscale writes (imported clusters, calibration files,
// generated models). Lines are written in order, block keys and sequence items at a given indent, flow
// maps and sequences on one line; scalars are quoted by the rules below, so that every writer quotes the
// same way and every file reads back through io/yaml_reader.hpp.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace dlscale::yamlio {

/// How a double-quoted scalar escapes its text.
enum class Escape {
  quotes,  ///< '"' and '\' only; every other byte as it is (names, descriptions from our own files)
  json,    ///< as a JSON string (also control characters; the text must be UTF-8): any text at all
};

/// `text` as a double-quoted scalar.
std::string quoted(std::string_view text, Escape escape = Escape::quotes);

/// `text` plain when it is a simple name (letters, digits, '_', '.', '/', '-'; not starting with '-' or
/// '.', not true/false/null/yes/no), double-quoted otherwise.
std::string scalar(std::string_view text);

/// "[a, b, c]" of scalars already written.
std::string flow_sequence(std::span<const std::string> items);

/// "{key: value, ...}" built a member at a time; values are scalars already written.
class FlowMap {
 public:
  FlowMap& add(std::string_view key, std::string_view value);
  [[nodiscard]] std::string str() const { return text_ + "}"; }

 private:
  std::string text_ = "{";
};

/// A YAML document written a line at a time. `indent` counts spaces; `value` is a scalar or flow
/// collection already written. A note is a trailing comment, `pad` spaces after the value.
class Emitter {
 public:
  /// "# text"
  Emitter& comment(std::string_view text);
  /// "key:" with the block that follows at a deeper indent
  Emitter& key(int indent, std::string_view key, std::string_view note = {}, int pad = 2);
  /// "key: value"
  Emitter& pair(int indent, std::string_view key, std::string_view value, std::string_view note = {}, int pad = 2);
  /// "key: value", or nothing when `value` is empty
  Emitter& pair_if(int indent, std::string_view key, std::string_view value);
  /// "- value"
  Emitter& item(int indent, std::string_view value, std::string_view note = {}, int pad = 2);
  /// "- key: value", the first member of a block map in a sequence (the rest at indent + 2)
  Emitter& item_pair(int indent, std::string_view key, std::string_view value);

  [[nodiscard]] const std::string& str() const& { return text_; }
  [[nodiscard]] std::string str() && { return std::move(text_); }

 private:
  void end_line(std::string_view note, int pad);
  std::string text_;
};

}  // namespace dlscale::yamlio
