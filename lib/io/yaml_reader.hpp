// Internal: the only place that sees a YAML parser. Wraps a YAML node with its file and key path so that
// every error is one line "file:line:col: 'key.path': message", and a MapReader that rejects keys it
// was not asked for. Documents are parsed by libyaml (LibYAML's event parser, fast enough that a
// command's start-up is not spent in it) into a small tree of their own; a document libyaml rejects is
// handed to yaml-cpp, whose verdict and messages the error tests were written against.
#pragma once

#include <array>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dlscale/detail/enum_names.hpp"
#include "dlscale/error.hpp"
#include "dlscale/units.hpp"

namespace dlscale::yamlio {

namespace detail {
/// One node of a parsed document. A mapping's children alternate key, value.
struct Item {
  enum class Kind : unsigned char { null, scalar, sequence, map };
  Kind kind = Kind::null;
  int line = -1, column = -1;  // 0-based; -1: no position (an empty document)
  std::string value;
  std::vector<int> children;
};
struct Document {
  std::vector<Item> items;  // items[0] is the root
};
/// The first document of `text` read by the simple reader (yaml_simple.cpp), which reads the YAML of the
/// data files only; false when it leaves the text to LibYAML (`doc` then holds what it had read).
bool parse_simple(std::string_view text, Document& doc);
/// The first document of `text` read by LibYAML; false when LibYAML rejects it or it uses what the tree
/// does not hold (yaml-cpp is then asked).
bool parse_libyaml(const std::string& text, Document& doc);
}  // namespace detail

class Node {
 public:
  Node(std::shared_ptr<const detail::Document> doc, int index, std::shared_ptr<const std::string> file, std::string path);

  [[nodiscard]] SourceLocation where() const;
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] const std::string& file() const noexcept { return *file_; }
  [[noreturn]] void fail(const std::string& message) const;

  [[nodiscard]] bool is_map() const { return item().kind == detail::Item::Kind::map; }
  [[nodiscard]] bool is_sequence() const { return item().kind == detail::Item::Kind::sequence; }
  [[nodiscard]] bool is_scalar() const { return item().kind == detail::Item::Kind::scalar; }
  [[nodiscard]] bool is_null() const { return item().kind == detail::Item::Kind::null; }
  /// A mapping's number of keys, a sequence's number of elements (0 otherwise).
  [[nodiscard]] std::size_t size() const;

  [[nodiscard]] std::string scalar() const;
  [[nodiscard]] double number() const;
  [[nodiscard]] double positive_number() const;
  /// A coefficient of variation (a framework's jitter_cv): a number ≥ 0 and < 1.
  [[nodiscard]] double coefficient_of_variation() const;
  [[nodiscard]] std::int64_t integer() const;
  [[nodiscard]] std::int64_t non_negative_integer() const;
  /// integer() as an int no larger than `max` in magnitude (a count of nodes, GPUs, links...): a value
  /// that does not fit is an error, never a silent wrap-around. Callers check their own lower bound.
  [[nodiscard]] int int_at_most(int max) const;
  [[nodiscard]] bool boolean() const;
  [[nodiscard]] Seconds seconds() const;
  /// A link's or a fabric's latency: a time of at most a minute (more is a unit typed wrong: "5 min" for "5 us").
  [[nodiscard]] Seconds latency() const;
  [[nodiscard]] Bytes bytes() const;
  [[nodiscard]] BytesPerSecond bandwidth() const;
  [[nodiscard]] Flops flops() const;
  [[nodiscard]] FlopsPerSecond flops_rate() const;
  [[nodiscard]] Hertz frequency() const;
  /// One of `choices`; fails naming them otherwise.
  [[nodiscard]] std::string choice(std::initializer_list<std::string_view> choices) const;
  [[nodiscard]] std::string choice(std::span<const std::string_view> choices) const;
  /// One of the names of enum E (its EnumNames table, in the table's order; aliases not accepted) as E.
  template <NamedEnum E>
  [[nodiscard]] E choice() const {
    std::array<std::string_view, EnumNames<E>::names.size()> names{};
    for (std::size_t i = 0; i < names.size(); ++i) names[i] = EnumNames<E>::names[i].name;
    return *enum_from_string<E>(choice(std::span<const std::string_view>(names)));
  }

  [[nodiscard]] std::vector<Node> items() const;                 // a sequence's elements
  [[nodiscard]] std::vector<std::int64_t> integer_list() const;  // a sequence of integers
  [[nodiscard]] const detail::Item& item() const noexcept { return doc_->items[static_cast<std::size_t>(index_)]; }
  [[nodiscard]] const std::shared_ptr<const detail::Document>& document() const noexcept { return doc_; }
  [[nodiscard]] std::shared_ptr<const std::string> file_ptr() const noexcept { return file_; }

 private:
  template <class T>
  T quantity(T (*parse)(std::string_view)) const;
  std::shared_ptr<const detail::Document> doc_;
  int index_ = 0;
  std::shared_ptr<const std::string> file_;
  std::string path_;
};

/// Loads and parses a file (missing file and malformed YAML are InputErrors with file:line:col).
Node load_file(const std::filesystem::path& file);
/// Parses text as if it came from `display_name` (for tests and embedded data).
Node load_string(const std::string& text, const std::string& display_name);
/// Parses text that code generated in place of `at` (a zoo operation that expands into others): every
/// node of it reports errors at `at`'s file, position and key path.
Node load_generated(const std::string& text, const Node& at);

class MapReader {
 public:
  explicit MapReader(Node map);  // fails unless `map` is a mapping; rejects duplicate keys

  [[nodiscard]] bool has(std::string_view key) const;
  [[nodiscard]] Node required(std::string_view key);
  [[nodiscard]] std::optional<Node> optional(std::string_view key);
  /// Every key of the mapping, in file order (marks them all used).
  [[nodiscard]] std::vector<std::pair<std::string, Node>> entries();
  [[nodiscard]] const Node& node() const noexcept { return map_; }
  /// Fails on the first key (in file order) that no required/optional call asked for.
  void finish() const;

 private:
  Node child(int value, std::string_view key) const;
  /// A key of the mapping: a view of its text in the document (which map_ keeps), its value's item, and
  /// whether a call asked for it. One vector, not one per field: a file's graph reads a thousand mappings.
  struct Entry {
    std::string_view key;
    int value = 0;
    bool used = false;
  };
  [[nodiscard]] std::vector<Entry>::const_iterator find(std::string_view key) const;
  Node map_;
  std::vector<Entry> entries_;
  std::string asked_;  // the keys asked for and not here, each followed by '\n' (with the entries used: finish()'s known keys)
};

}  // namespace dlscale::yamlio
