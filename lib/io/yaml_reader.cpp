#include "io/files.hpp"
#include "io/yaml_reader.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>
#include <yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

namespace dlscale::yamlio {
namespace {

using detail::Document;
using detail::Item;

SourceLocation location(int line, int column, const std::string& file) {
  if (line < 0) return {file, 0, 0};
  return {file, line + 1, column + 1};
}
SourceLocation location(const YAML::Mark& m, const std::string& file) { return location(m.line, m.column, file); }

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) {
    if (!out.empty()) out += ", ";
    out += s;
  }
  return out;
}

// yaml-cpp's null: a plain, untagged "~", "null", "Null", "NULL", or nothing at all.
bool null_scalar(std::string_view v) { return v.empty() || v == "~" || v == "null" || v == "Null" || v == "NULL"; }

/// dlscale's tree from libyaml's events. The open collections are kept with where their children start in
/// `pending_`: a collection's children gather on that one shared list and are given to it, in one
/// allocation, when it ends.
class TreeBuilder {
 public:
  TreeBuilder(Document& doc, std::size_t text_size) : doc_(doc) {
    doc_.items.reserve(text_size / 6 + 1);  // the data files hold an item per 6.6 bytes or more: no moves
  }
  bool done = false;  // the first document has ended
  bool any = false;   // a document has started

  /// One event into the tree; false when the tree cannot hold it (a tag, an alias of no anchor).
  bool event(const yaml_event_t& ev) {
    switch (ev.type) {
      case YAML_DOCUMENT_START_EVENT:
        any = true;
        return true;
      case YAML_DOCUMENT_END_EVENT:
      case YAML_STREAM_END_EVENT:
        done = true;
        return true;
      case YAML_SCALAR_EVENT:
        return scalar(ev);
      case YAML_SEQUENCE_START_EVENT:
      case YAML_MAPPING_START_EVENT:
        return open(ev);
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT:
        close();
        return true;
      case YAML_ALIAS_EVENT:
        return alias(ev);
      default:
        return true;
    }
  }

 private:
  static Item at(const yaml_event_t& ev, Item::Kind kind) {
    Item it;
    it.kind = kind;
    it.line = static_cast<int>(ev.start_mark.line);
    it.column = static_cast<int>(ev.start_mark.column);
    return it;
  }
  int add(Item item, const yaml_char_t* anchor) {
    const int id = static_cast<int>(doc_.items.size());
    doc_.items.push_back(std::move(item));
    if (!stack_.empty()) pending_.push_back(id);
    if (anchor) anchors_[reinterpret_cast<const char*>(anchor)] = id;
    return id;
  }
  bool scalar(const yaml_event_t& ev) {
    const std::string_view v(reinterpret_cast<const char*>(ev.data.scalar.value), ev.data.scalar.length);
    const bool plain = ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE && ev.data.scalar.plain_implicit;
    Item it = at(ev, plain && null_scalar(v) ? Item::Kind::null : Item::Kind::scalar);
    if (it.kind == Item::Kind::scalar) it.value.assign(v);
    add(std::move(it), ev.data.scalar.anchor);
    return ev.data.scalar.tag == nullptr;  // tags: yaml-cpp's reading decides
  }
  bool open(const yaml_event_t& ev) {
    const bool map = ev.type == YAML_MAPPING_START_EVENT;
    const int id = add(at(ev, map ? Item::Kind::map : Item::Kind::sequence),
                       map ? ev.data.mapping_start.anchor : ev.data.sequence_start.anchor);
    stack_.emplace_back(id, pending_.size());
    return (map ? ev.data.mapping_start.tag : ev.data.sequence_start.tag) == nullptr;
  }
  void close() {
    const auto [id, first] = stack_.back();
    const auto from = pending_.begin() + static_cast<std::ptrdiff_t>(first);
    doc_.items[static_cast<std::size_t>(id)].children.assign(from, pending_.end());
    pending_.erase(from, pending_.end());
    stack_.pop_back();
  }
  bool alias(const yaml_event_t& ev) {
    const auto a = anchors_.find(reinterpret_cast<const char*>(ev.data.alias.anchor));
    if (a == anchors_.end() || stack_.empty()) return false;
    pending_.push_back(a->second);
    return true;
  }

  Document& doc_;
  std::vector<std::pair<int, std::size_t>> stack_;
  std::vector<int> pending_;
  std::map<std::string, int, std::less<>> anchors_;
};

}  // namespace

bool detail::parse_libyaml(const std::string& text, Document& doc) {
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) return false;
  yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data()), text.size());
  TreeBuilder tree(doc, text.size());
  bool ok = true;
  while (ok && !tree.done) {
    yaml_event_t ev;
    if (!yaml_parser_parse(&parser, &ev)) {
      ok = false;
      break;
    }
    ok = tree.event(ev);
    yaml_event_delete(&ev);
  }
  yaml_parser_delete(&parser);
  if (!ok) return false;
  if (!tree.any || doc.items.empty()) {  // no document: a null root without a position, as yaml-cpp gives
    doc.items.assign(1, Item{});
  }
  return true;
}

namespace {

int convert(const YAML::Node& n, Document& doc) {
  const int id = static_cast<int>(doc.items.size());
  doc.items.emplace_back();
  {
    Item& it = doc.items.back();
    it.line = n.Mark().line;
    it.column = n.Mark().column;
    if (n.IsScalar()) {
      it.kind = Item::Kind::scalar;
      it.value = n.Scalar();
    } else if (n.IsSequence()) {
      it.kind = Item::Kind::sequence;
    } else if (n.IsMap()) {
      it.kind = Item::Kind::map;
    }
  }
  if (n.IsSequence()) {
    for (const auto& e : n) {
      const int c = convert(e, doc);
      doc.items[static_cast<std::size_t>(id)].children.push_back(c);
    }
  } else if (n.IsMap()) {
    for (const auto& e : n) {
      const int k = convert(e.first, doc);
      const int v = convert(e.second, doc);
      auto& ch = doc.items[static_cast<std::size_t>(id)].children;
      ch.push_back(k);
      ch.push_back(v);
    }
  }
  return id;
}

Node parse_text(const std::string& text, const std::string& display_name) {
  auto file = std::make_shared<const std::string>(display_name);
  auto doc = std::make_shared<Document>();
  // The data files' YAML by the simple reader, without LibYAML's allocation per token; what it leaves, by
  // LibYAML; what LibYAML rejects, by yaml-cpp.
  bool read = detail::parse_simple(text, *doc);
  if (!read) {
    doc->items.clear();
    read = detail::parse_libyaml(text, *doc);
  }
  if (!read) {
    doc->items.clear();
    try {
      convert(YAML::Load(text), *doc);
    } catch (const YAML::ParserException& e) {
      throw InputError(location(e.mark, display_name), "", "malformed YAML: " + e.msg);
    }
  }
  return Node(std::move(doc), 0, file, "");
}

}  // namespace

Node::Node(std::shared_ptr<const Document> doc, int index, std::shared_ptr<const std::string> file, std::string path)
    : doc_(std::move(doc)), index_(index), file_(std::move(file)), path_(std::move(path)) {}

SourceLocation Node::where() const { return location(item().line, item().column, *file_); }

std::size_t Node::size() const {
  const auto& it = item();
  return it.kind == Item::Kind::map ? it.children.size() / 2 : it.kind == Item::Kind::sequence ? it.children.size() : 0;
}

void Node::fail(const std::string& message) const { throw InputError(where(), path_, message); }

std::string Node::scalar() const {
  if (!is_scalar()) fail(is_null() ? "a value is required" : "expected a single value, not a list or a mapping");
  return item().value;
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

double Node::coefficient_of_variation() const {
  const double v = number();
  if (!(v >= 0.0 && v < 1.0)) fail("a coefficient of variation is a number ≥ 0 and < 1 (0.02 for 2 %)");
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
Seconds Node::latency() const {
  const Seconds t = seconds();
  if (t > dlscale::seconds(60.0)) fail(fmt::format("'{}' is more than a minute, longer than any link's latency", scalar()));
  return t;
}
Bytes Node::bytes() const { return quantity(&parse_bytes); }
BytesPerSecond Node::bandwidth() const { return quantity(&parse_bandwidth); }
Flops Node::flops() const { return quantity(&parse_flops); }
FlopsPerSecond Node::flops_rate() const { return quantity(&parse_flops_rate); }
Hertz Node::frequency() const { return quantity(&parse_frequency); }

std::string Node::choice(std::initializer_list<std::string_view> choices) const {
  return choice(std::span<const std::string_view>(choices.begin(), choices.size()));
}

std::string Node::choice(std::span<const std::string_view> choices) const {
  const std::string s = scalar();
  for (auto c : choices)
    if (c == s) return s;
  std::string list;
  for (auto c : choices) list += (list.empty() ? "" : ", ") + std::string(c);
  fail("unknown value '" + s + "' (expected one of: " + list + ")");
}

std::vector<Node> Node::items() const {
  if (!is_sequence()) fail("expected a list");
  const auto& children = item().children;
  std::vector<Node> out;
  out.reserve(children.size());
  for (std::size_t i = 0; i < children.size(); ++i) {
    std::string path;  // "parent[i]", in one allocation
    const std::string index = std::to_string(i);
    path.reserve(path_.size() + index.size() + 2);
    path.append(path_).append(1, '[').append(index).append(1, ']');
    out.emplace_back(doc_, children[i], file_, std::move(path));
  }
  return out;
}

std::vector<std::int64_t> Node::integer_list() const {
  std::vector<std::int64_t> out;
  for (const auto& n : items()) out.push_back(n.integer());
  return out;
}

Node load_file(const std::filesystem::path& file) { return parse_text(read_input_file(file), file.string()); }

Node load_string(const std::string& text, const std::string& display_name) { return parse_text(text, display_name); }

Node load_generated(const std::string& text, const Node& at) {
  auto doc = std::make_shared<Document>(*parse_text(text, at.file()).document());
  for (Item& it : doc->items) {
    it.line = at.item().line;
    it.column = at.item().column;
  }
  return Node(std::move(doc), 0, at.file_ptr(), at.path());
}

MapReader::MapReader(Node map) : map_(std::move(map)) {
  const Item& m = map_.item();
  if (m.kind != Item::Kind::map) {
    // An empty document has no position; its error belongs at its start.
    if (m.kind == Item::Kind::null && map_.path().empty() && m.line < 0)
      throw InputError(SourceLocation{map_.file(), 1, 1}, "", "the file is empty (expected a mapping of keys to values)");
    map_.fail(m.kind == Item::Kind::null ? "expected a mapping, found nothing" : "expected a mapping of keys to values");
  }
  const auto& items = map_.document()->items;
  entries_.reserve(m.children.size() / 2);
  for (std::size_t i = 0; i + 1 < m.children.size(); i += 2) {
    const Item& k = items[static_cast<std::size_t>(m.children[i])];
    if (k.kind != Item::Kind::scalar)
      throw InputError(location(k.line, k.column, map_.file()), map_.path(), "keys must be plain names");
    const std::string& key = k.value;
    if (find(key) != entries_.end()) {
      const std::string full = map_.path().empty() ? key : map_.path() + "." + key;
      throw InputError(location(k.line, k.column, map_.file()), full, "duplicate key");
    }
    entries_.push_back(Entry{key, m.children[i + 1], false});
  }
}

std::vector<MapReader::Entry>::const_iterator MapReader::find(std::string_view key) const {
  return std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.key == key; });
}

Node MapReader::child(int value, std::string_view key) const {
  std::string full;  // "parent.key", built in one allocation (a file's graph asks for a thousand of them)
  full.reserve(map_.path().size() + 1 + key.size());
  if (!map_.path().empty()) full.append(map_.path()).push_back('.');
  full.append(key);
  return Node(map_.document(), value, map_.file_ptr(), std::move(full));
}

bool MapReader::has(std::string_view key) const { return find(key) != entries_.end(); }

std::optional<Node> MapReader::optional(std::string_view key) {
  const auto it = find(key);
  if (it == entries_.end()) {
    asked_.append(key).push_back('\n');  // a key asked for and found is known by its entry's mark
    return std::nullopt;
  }
  auto& e = entries_[static_cast<std::size_t>(it - entries_.begin())];
  e.used = true;
  return child(e.value, key);
}

Node MapReader::required(std::string_view key) {
  auto n = optional(key);
  if (!n) {
    const std::string full = map_.path().empty() ? std::string(key) : map_.path() + "." + std::string(key);
    throw InputError(map_.where(), full, "missing required key");
  }
  return std::move(*n);
}

std::vector<std::pair<std::string, Node>> MapReader::entries() {
  std::vector<std::pair<std::string, Node>> out;
  for (auto& e : entries_) {
    e.used = true;
    out.emplace_back(std::string(e.key), child(e.value, e.key));
  }
  return out;
}

void MapReader::finish() const {
  const auto& children = map_.item().children;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].used) continue;
    const std::string key(entries_[i].key);
    const std::string full = map_.path().empty() ? key : map_.path() + "." + key;
    std::vector<std::string> known;
    for (const Entry& asked : entries_)
      if (asked.used) known.emplace_back(asked.key);
    for (std::size_t b = 0, e = 0; (e = asked_.find('\n', b)) != std::string::npos; b = e + 1)
      known.push_back(asked_.substr(b, e - b));
    std::sort(known.begin(), known.end());
    known.erase(std::unique(known.begin(), known.end()), known.end());
    const Item& k = map_.document()->items[static_cast<std::size_t>(children[2 * i])];
    throw InputError(location(k.line, k.column, map_.file()), full, "unknown key (known keys here: " + join(known) + ")");
  }
}

}  // namespace dlscale::yamlio
