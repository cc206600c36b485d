#include "io/yaml_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

namespace dlscale::yamlio {
namespace {

SourceLocation location(const YAML::Mark& m, const std::string& file) {
  if (m.line < 0) return {file, 0, 0};
  return {file, m.line + 1, m.column + 1};
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) {
    if (!out.empty()) out += ", ";
    out += s;
  }
  return out;
}

Node parse_text(const std::string& text, const std::string& display_name) {
  auto file = std::make_shared<const std::string>(display_name);
  try {
    YAML::Node root = YAML::Load(text);
    return Node(root, file, "");
  } catch (const YAML::ParserException& e) {
    throw InputError(location(e.mark, display_name), "", "malformed YAML: " + e.msg);
  }
}

}  // namespace

Node::Node(YAML::Node node, std::shared_ptr<const std::string> file, std::string path)
    : node_(std::move(node)), file_(std::move(file)), path_(std::move(path)) {}

SourceLocation Node::where() const { return location(node_.Mark(), *file_); }

void Node::fail(const std::string& message) const { throw InputError(where(), path_, message); }

std::string Node::scalar() const {
  if (!node_.IsScalar()) fail(node_.IsNull() ? "a value is required" : "expected a single value, not a list or a mapping");
  return node_.Scalar();
}

double Node::number() const {
  const std::string s = scalar();
  double v = 0;
  const char* first = s.data();
  if (!s.empty() && *first == '+') ++first;
  auto [ptr, ec] = std::from_chars(first, s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(v)) fail("'" + s + "' is not a number");
  return v;
}

double Node::positive_number() const {
  const double v = number();
  if (!(v > 0)) fail(fmt::format("must be greater than zero, got {}", scalar()));
  return v;
}

std::int64_t Node::integer() const {
  const double v = number();
  if (v != std::floor(v)) fail("'" + scalar() + "' is not a whole number");
  if (std::fabs(v) > 9.0e15) fail("'" + scalar() + "' is out of range (whole numbers up to 9e15 in magnitude)");
  return static_cast<std::int64_t>(v);
}

int Node::int_at_most(int max) const {
  const auto v = integer();
  if (v > max) fail(fmt::format("{} is too large (at most {})", v, max));
  if (v < -static_cast<std::int64_t>(max)) fail(fmt::format("{} is out of range", v));
  return static_cast<int>(v);
}

std::int64_t Node::non_negative_integer() const {
  const auto v = integer();
  if (v < 0) fail(fmt::format("must not be negative, got {}", v));
  return v;
}

bool Node::boolean() const {
  const std::string s = scalar();
  if (s == "true" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "no" || s == "off") return false;
  fail("'" + s + "' is not true or false");
}

template <class T>
T Node::quantity(T (*parse)(std::string_view)) const {
  const std::string s = scalar();
  try {
    return parse(s);
  } catch (const UnitError& e) {
    fail(e.what());
  }
}

Seconds Node::seconds() const { return quantity(&parse_seconds); }
Bytes Node::bytes() const { return quantity(&parse_bytes); }
BytesPerSecond Node::bandwidth() const { return quantity(&parse_bandwidth); }
Flops Node::flops() const { return quantity(&parse_flops); }
FlopsPerSecond Node::flops_rate() const { return quantity(&parse_flops_rate); }
Hertz Node::frequency() const { return quantity(&parse_frequency); }

std::string Node::choice(std::initializer_list<std::string_view> choices) const {
  const std::string s = scalar();
  for (auto c : choices)
    if (c == s) return s;
  std::string list;
  for (auto c : choices) list += (list.empty() ? "" : ", ") + std::string(c);
  fail("unknown value '" + s + "' (expected one of: " + list + ")");
}

std::vector<Node> Node::items() const {
  if (!node_.IsSequence()) fail("expected a list");
  std::vector<Node> out;
  out.reserve(node_.size());
  for (std::size_t i = 0; i < node_.size(); ++i) out.emplace_back(node_[i], file_, fmt::format("{}[{}]", path_, i));
  return out;
}

std::vector<std::int64_t> Node::integer_list() const {
  std::vector<std::int64_t> out;
  for (const auto& n : items()) out.push_back(n.integer());
  return out;
}

Node load_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(SourceLocation{file.string(), 0, 0}, "", "cannot open file (no such file or not readable)");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_text(ss.str(), file.string());
}

Node load_string(const std::string& text, const std::string& display_name) { return parse_text(text, display_name); }

MapReader::MapReader(Node map) : map_(std::move(map)) {
  if (!map_.raw().IsMap()) {
    // An empty document has no position; its error belongs at its start.
    if (map_.raw().IsNull() && map_.path().empty() && map_.raw().Mark().line < 0)
      throw InputError(SourceLocation{map_.file(), 1, 1}, "", "the file is empty (expected a mapping of keys to values)");
    map_.fail(map_.raw().IsNull() ? "expected a mapping, found nothing" : "expected a mapping of keys to values");
  }
  for (auto it = map_.raw().begin(); it != map_.raw().end(); ++it) {
    if (!it->first.IsScalar()) throw InputError(location(it->first.Mark(), map_.file()), map_.path(), "keys must be plain names");
    const std::string key = it->first.Scalar();
    if (std::find(keys_.begin(), keys_.end(), key) != keys_.end()) {
      const std::string full = map_.path().empty() ? key : map_.path() + "." + key;
      throw InputError(location(it->first.Mark(), map_.file()), full, "duplicate key");
    }
    keys_.push_back(key);
  }
  used_.assign(keys_.size(), false);
}

Node MapReader::child(const YAML::Node& value, std::string_view key) const {
  const std::string full = map_.path().empty() ? std::string(key) : map_.path() + "." + std::string(key);
  return Node(value, map_.file_ptr(), full);
}

bool MapReader::has(std::string_view key) const {
  return std::find(keys_.begin(), keys_.end(), key) != keys_.end();
}

std::optional<Node> MapReader::optional(std::string_view key) {
  asked_.emplace_back(key);
  const auto it = std::find(keys_.begin(), keys_.end(), key);
  if (it == keys_.end()) return std::nullopt;
  used_[static_cast<std::size_t>(it - keys_.begin())] = true;
  return child(map_.raw()[std::string(key)], key);
}

Node MapReader::required(std::string_view key) {
  auto n = optional(key);
  if (!n) {
    const std::string full = map_.path().empty() ? std::string(key) : map_.path() + "." + std::string(key);
    throw InputError(map_.where(), full, "missing required key");
  }
  return *n;
}

std::vector<std::pair<std::string, Node>> MapReader::entries() {
  std::vector<std::pair<std::string, Node>> out;
  for (std::size_t i = 0; i < keys_.size(); ++i) {
    used_[i] = true;
    out.emplace_back(keys_[i], child(map_.raw()[keys_[i]], keys_[i]));
  }
  return out;
}

void MapReader::finish() const {
  std::size_t i = 0;
  for (auto it = map_.raw().begin(); it != map_.raw().end(); ++it, ++i) {
    if (used_[i]) continue;
    const std::string full = map_.path().empty() ? keys_[i] : map_.path() + "." + keys_[i];
    std::vector<std::string> known = asked_;
    std::sort(known.begin(), known.end());
    known.erase(std::unique(known.begin(), known.end()), known.end());
    throw InputError(location(it->first.Mark(), map_.file()), full, "unknown key (known keys here: " + join(known) + ")");
  }
}

}  // namespace dlscale::yamlio
