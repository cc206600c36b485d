// The YAML emitter (io/yaml_writer.hpp).
#include "io/yaml_writer.hpp"

#include <cctype>
#include <nlohmann/json.hpp>

namespace dlscale::yamlio {

std::string quoted(std::string_view text, Escape escape) {
  if (escape == Escape::json) return nlohmann::json(std::string(text)).dump();  // a JSON string is a YAML string
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string scalar(std::string_view s) {
  bool plain = !s.empty();
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' || c == '-')) plain = false;
  if (plain && (s.front() == '-' || s.front() == '.' || s == "true" || s == "false" || s == "null" || s == "yes" || s == "no"))
    plain = false;
  return plain ? std::string(s) : quoted(s);
}

std::string flow_sequence(std::span<const std::string> items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += items[i];
  }
  return out + "]";
}

FlowMap& FlowMap::add(std::string_view key, std::string_view value) {
  if (text_.size() > 1) text_ += ", ";
  text_ += key;
  text_ += ": ";
  text_ += value;
  return *this;
}

void Emitter::end_line(std::string_view note, int pad) {
  if (!note.empty()) {
    text_.append(static_cast<std::size_t>(pad), ' ');
    text_ += "# ";
    text_ += note;
  }
  text_ += '\n';
}

Emitter& Emitter::comment(std::string_view text) {
  text_ += "# ";
  text_ += text;
  text_ += '\n';
  return *this;
}

Emitter& Emitter::key(int indent, std::string_view key, std::string_view note, int pad) {
  text_.append(static_cast<std::size_t>(indent), ' ');
  text_ += key;
  text_ += ':';
  end_line(note, pad);
  return *this;
}

Emitter& Emitter::pair(int indent, std::string_view key, std::string_view value, std::string_view note, int pad) {
  text_.append(static_cast<std::size_t>(indent), ' ');
  text_ += key;
  text_ += ": ";
  text_ += value;
  end_line(note, pad);
  return *this;
}

Emitter& Emitter::pair_if(int indent, std::string_view key, std::string_view value) {
  return value.empty() ? *this : pair(indent, key, value);
}

Emitter& Emitter::item(int indent, std::string_view value, std::string_view note, int pad) {
  text_.append(static_cast<std::size_t>(indent), ' ');
  text_ += "- ";
  text_ += value;
  end_line(note, pad);
  return *this;
}

Emitter& Emitter::item_pair(int indent, std::string_view key, std::string_view value) {
  text_.append(static_cast<std::size_t>(indent), ' ');
  text_ += "- ";
  return pair(0, key, value);
}

}  // namespace dlscale::yamlio
