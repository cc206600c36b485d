// The YAML that dlscale's data files are written in, read without LibYAML (issue 35's start-up: LibYAML's
// scanner, a token and an event allocated per scalar, was 2.8 of the 6.8 M instructions of a one-node
// `dlscale collective`). Block mappings and sequences by indentation, flow mappings and sequences, plain
// scalars on one line, quoted scalars without escapes, comments. Anything else (anchors, tags, block
// scalars, escapes, a scalar over two lines, an empty value, a tab, a character outside ASCII but in a
// comment, a document marker...) and anything malformed makes it give up, and the caller asks LibYAML:
// what it accepts, it reads into the same tree LibYAML's events build (tests/io_test.cpp compares them
// on every shipped file and on snippets of each construct).
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/yaml_reader.hpp"

namespace dlscale::yamlio::detail {
namespace {

constexpr int kNoLine = -1;  // a line's indent at the end of the text

/// Whether LibYAML takes every character of `text`: valid UTF-8 of the characters YAML prints (it
/// rejects the others anywhere, in comments too, before it reads a token).
bool printable(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b < 0x80) {
      if ((b < 0x20 && b != '\t' && b != '\n' && b != '\r') || b == 0x7f) return false;
      ++i;
      continue;
    }
    const std::size_t n = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 0;
    if (n == 0 || b >= 0xf8 || i + n > text.size()) return false;
    char32_t c = b & (0x7f >> n);
    for (std::size_t k = 1; k < n; ++k) {
      const auto t = static_cast<unsigned char>(text[i + k]);
      if ((t & 0xc0) != 0x80) return false;
      c = (c << 6) | (t & 0x3f);
    }
    const char32_t least = n == 2 ? 0x80 : n == 3 ? 0x800 : 0x10000;  // shorter forms are invalid
    if (c < least || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff) || (c < 0xa0 && c != 0x85) || c == 0xfffe || c == 0xffff)
      return false;
    i += n;
  }
  return true;
}

class SimpleReader {
 public:
  SimpleReader(std::string_view text, Document& doc) : s_(text), doc_(doc) {}

  bool read() {
    if (s_.find('\r') != std::string_view::npos || !printable(s_)) return false;
    doc_.items.reserve(s_.size() / 6 + 1);
    const int indent = next_line();
    if (!ok_ || indent != 0 || peek() == '{' || peek() == '[') return false;  // an empty or a flow document: LibYAML's
    const int after = entry_dash() ? block_sequence(0) : block_mapping(0);
    return ok_ && after == kNoLine;
  }

 private:
  // ---- characters and lines ----
  [[nodiscard]] char peek(std::size_t ahead = 0) const { return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0'; }
  [[nodiscard]] int column() const { return static_cast<int>(pos_ - line_start_); }
  [[nodiscard]] static bool blank(char c) { return c == ' ' || c == '\n' || c == '\0'; }
  [[nodiscard]] static bool flow_indicator(char c) { return c == ',' || c == '[' || c == ']' || c == '{' || c == '}'; }
  [[nodiscard]] bool entry_dash() const { return peek() == '-' && blank(peek(1)); }
  /// A comment starts here: '#' at the start of a line or after a space.
  [[nodiscard]] bool comment() const { return peek() == '#' && (pos_ == line_start_ || s_[pos_ - 1] == ' '); }
  [[nodiscard]] bool line_end() const { return peek() == '\n' || pos_ >= s_.size() || comment(); }
  int fail() {
    ok_ = false;
    return kNoLine;
  }
  std::string_view no_text() {
    ok_ = false;
    return {};
  }
  void skip_spaces() {
    while (peek() == ' ') ++pos_;
  }
  void newline() {  // at a '\n'
    ++pos_;
    ++line_;
    line_start_ = pos_;
  }
  /// Past the rest of the line (spaces, a comment), which must hold nothing else.
  void end_line() {
    skip_spaces();
    if (comment())
      while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
    if (peek() == '\n') newline();
    else if (pos_ < s_.size()) fail();
  }
  /// From the start of a line, past blank and comment lines, to the first character of the next line with
  /// content: its indent, or kNoLine at the end of the text. A document marker gives up.
  int next_line() {
    while (ok_ && pos_ < s_.size()) {
      skip_spaces();
      if (!line_end()) {
        const std::string_view rest = s_.substr(pos_);
        if (column() == 0 && (rest.starts_with("---") || rest.starts_with("..."))) return fail();
        return column();
      }
      end_line();
    }
    return kNoLine;
  }

  // ---- the tree, built as yaml_reader.cpp's TreeBuilder builds it from LibYAML's events ----
  int add(Item::Kind kind, int line, int column, std::string_view value = {}) {
    const int id = static_cast<int>(doc_.items.size());
    Item& it = doc_.items.emplace_back();
    it.kind = kind;
    it.line = line;
    it.column = column;
    it.value.assign(value);
    if (!open_.empty()) pending_.push_back(id);
    return id;
  }
  void open(Item::Kind kind) {
    const int id = add(kind, line_, column());  // first: it joins its parent's children
    open_.emplace_back(id, pending_.size());
  }
  void close() {
    const auto [id, first] = open_.back();
    const auto from = pending_.begin() + static_cast<std::ptrdiff_t>(first);
    doc_.items[static_cast<std::size_t>(id)].children.assign(from, pending_.end());
    pending_.erase(from, pending_.end());
    open_.pop_back();
  }
  // yaml-cpp's null (yaml_reader.cpp): a plain "~", "null", "Null" or "NULL"
  void add_scalar(std::string_view v, bool plain, int line, int column) {
    const bool null = plain && (v == "~" || v == "null" || v == "Null" || v == "NULL");
    if (null) add(Item::Kind::null, line, column);
    else add(Item::Kind::scalar, line, column, v);
  }

  // ---- scalars ----
  /// A plain scalar's text from here, on this line: it ends before ": ", " #", the line's end and, in a
  /// flow collection, before , [ ] { }. Gives up on what it does not read the way LibYAML does.
  std::string_view plain(bool flow) {
    const std::size_t start = pos_;
    const char first = peek();
    if (std::string_view(",[]{}#&*!|>'\"%@`?:").find(first) != std::string_view::npos || blank(first) ||
        (first == '-' && blank(peek(1))))
      return no_text();
    std::size_t end = pos_;  // past the last non-space character
    for (char c = peek(); c != '\n' && pos_ < s_.size(); c = peek()) {
      if (c == ':' && (blank(peek(1)) || flow)) break;  // flow: a ':' inside a scalar is LibYAML's to read
      if (flow && flow_indicator(c)) break;
      if (c == '#') {
        if (s_[pos_ - 1] == ' ') break;
        return no_text();  // "a#b": LibYAML's
      }
      if (c < ' ' || c > '~') return no_text();  // a tab, a control or non-ASCII character
      ++pos_;
      if (c != ' ') end = pos_;
    }
    return s_.substr(start, end - start);
  }
  /// A quoted scalar on one line, without escapes ('' or backslashes): its text.
  std::string_view quoted() {
    const char q = peek();
    const std::size_t start = ++pos_;
    for (char c = peek(); c != q; c = peek()) {
      if (c < ' ' || c > '~' || c == '\\') return no_text();
      ++pos_;
    }
    ++pos_;
    if (q == '\'' && peek() == '\'') return no_text();
    return s_.substr(start, pos_ - 1 - start);
  }
  /// A scalar (plain or quoted) at pos_ into the tree.
  void scalar(bool flow) {
    const int line = line_, col = column();
    const bool is_plain = peek() != '"' && peek() != '\'';
    const std::string_view v = is_plain ? plain(flow) : quoted();
    if (ok_) add_scalar(v, is_plain, line, col);
  }
  /// A block scalar ('|' or '>', clipped or with '-' stripped) whose lines share one indent past `indent`,
  /// with no blank line but at its end, and no trailing space: LibYAML's text, the lines kept or folded.
  int block_scalar(int indent) {
    const int line = line_, col = column();
    const bool folded = peek() == '>';
    ++pos_;
    const bool strip = peek() == '-';
    if (strip) ++pos_;
    end_line();  // an explicit indent or '+': LibYAML's
    std::string text;
    int content = kNoLine;
    bool blank_line = false;
    while (ok_ && pos_ < s_.size()) {
      skip_spaces();
      if (peek() == '\n' || pos_ >= s_.size()) {
        blank_line = true;
        if (peek() == '\n') newline();
        continue;
      }
      if (content == kNoLine) content = column() > indent ? column() : fail();
      if (column() < content) break;
      if (column() > content || blank_line) return fail();
      const std::size_t from = pos_;
      for (; peek() != '\n' && pos_ < s_.size(); ++pos_)
        if (peek() < ' ' || peek() > '~') return fail();
      if (s_[pos_ - 1] == ' ') return fail();
      if (!text.empty()) text += folded ? ' ' : '\n';
      text.append(s_.substr(from, pos_ - from));
      if (peek() == '\n') newline();
    }
    if (!ok_ || content == kNoLine) return fail();
    if (!strip) text += '\n';
    add(Item::Kind::scalar, line, col, text);
    return next_line();
  }
  /// Whether the line from here is a key and ': ' (a compact mapping in a sequence entry); pos_ unchanged.
  bool key_here() {
    const std::size_t at = pos_;
    const bool is_plain = peek() != '"' && peek() != '\'';
    const std::string_view k = is_plain ? plain(false) : quoted();
    const bool key = ok_ && !k.empty() && peek() == ':' && blank(peek(1));
    pos_ = at;
    ok_ = true;  // what follows reads it again, and gives up there if need be
    return key;
  }

  // ---- block collections: each returns the indent of the line after it (kNoLine at the end) ----
  int block_node(int indent) { return entry_dash() ? block_sequence(indent) : block_mapping(indent); }
  int block_mapping(int indent) {
    open(Item::Kind::map);
    int next = kNoLine;
    do {
      if (entry_dash() || peek() == '?') return fail();
      const int line = line_, col = column();
      const bool is_plain = peek() != '"' && peek() != '\'';
      const std::string_view key = is_plain ? plain(false) : quoted();
      if (!ok_ || key.size() > 1000 || peek() != ':' || !blank(peek(1))) return fail();  // LibYAML's simple keys: 1,024
      add_scalar(key, is_plain, line, col);
      ++pos_;
      next = value(indent, true);
    } while (ok_ && next == indent);
    if (!ok_ || next > indent) return fail();
    close();
    return next;
  }
  int block_sequence(int indent) {
    open(Item::Kind::sequence);
    int next = kNoLine;
    do {
      ++pos_;  // the '-'
      next = value(indent, false);
    } while (ok_ && next == indent && entry_dash());
    if (!ok_ || next > indent) return fail();
    close();
    return next;
  }
  /// What follows a key's ':' (in_mapping) or a sequence's '-' at `indent`: on the next lines, a block
  /// collection more indented (or, for a key, a sequence at the key's own indent); on this line, a flow
  /// collection, a scalar, or (in a sequence) a compact mapping.
  int value(int indent, bool in_mapping) {
    skip_spaces();
    if (line_end()) {
      end_line();
      const int next = next_line();
      if (!ok_) return kNoLine;
      if (next > indent) return block_node(next);
      if (next == indent && in_mapping && entry_dash()) return block_sequence(indent);
      return fail();  // an empty value: LibYAML places its null
    }
    const char c = peek();
    if (c == '|' || c == '>') return block_scalar(indent);
    if (c == '{' || c == '[') flow_collection(indent);
    else if (!in_mapping && !entry_dash() && key_here()) return block_mapping(column());
    else scalar(false);
    if (!ok_) return kNoLine;
    end_line();
    const int next = next_line();
    return next > indent ? fail() : next;  // more indented: a scalar continued, or an error
  }

  // ---- flow collections ----
  /// Spaces, comments and line breaks inside a flow collection; a line's content must be indented past
  /// the block it sits in.
  void flow_space(int indent) {
    for (;;) {
      skip_spaces();
      if (comment())
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
      if (peek() != '\n') break;
      newline();
      skip_spaces();
      if (!line_end() && column() <= indent) {
        fail();
        return;
      }
    }
  }
  void flow_node(int indent) {
    if (peek() == '{' || peek() == '[') flow_collection(indent);
    else scalar(true);
  }
  void flow_collection(int indent) {
    const bool map = peek() == '{';
    const char end = map ? '}' : ']';
    open(map ? Item::Kind::map : Item::Kind::sequence);
    ++pos_;
    flow_space(indent);
    while (ok_ && peek() != end) {
      if (map) scalar(true);  // a key: a collection there is LibYAML's
      else flow_node(indent);
      if (map && ok_) {
        if (peek() != ':' || !blank(peek(1))) return (void)fail();
        ++pos_;
        flow_space(indent);
        flow_node(indent);
      }
      if (!ok_) return;
      flow_space(indent);
      if (peek() == ',') {
        ++pos_;
        flow_space(indent);
        if (peek() == end) return (void)fail();  // a trailing comma: LibYAML's
      } else if (peek() != end) {
        return (void)fail();  // a key in a sequence, a scalar over two lines, the end of the text...
      }
    }
    if (!ok_) return;
    ++pos_;
    close();
  }

  std::string_view s_;
  Document& doc_;
  std::size_t pos_ = 0, line_start_ = 0;
  int line_ = 0;
  bool ok_ = true;
  std::vector<std::pair<int, std::size_t>> open_;  // the open collections, where their children start in pending_
  std::vector<int> pending_;
};

}  // namespace

bool parse_simple(std::string_view text, Document& doc) { return SimpleReader(text, doc).read(); }

}  // namespace dlscale::yamlio::detail
