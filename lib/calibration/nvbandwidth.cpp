// Importer of NVIDIA nvbandwidth's output into a calibration: its JSON (`nvbandwidth -j`), or its text,
// which is read into the document -j would have printed (below, "nvbandwidth's text output").
//   host_to_device_memcpy_ce (or _sm)              -> transfers h2d_pinned, one curve per GPU (column)
//   device_to_host_memcpy_ce (or _sm)              -> transfers d2h_pinned
//   device_local_copy                              -> transfers device_copy
//   device_to_device_memcpy_write_ce (or read, _sm) -> p2p bandwidth (write: row -> column; read: column -> row)
//   device_to_device_bidirectional_memcpy_*        -> p2p bidirectional
//   device_to_device_latency_sm                    -> p2p latency
// nvbandwidth copies from pinned host memory, one buffer size per run (--bufferSize; its default is
// 512 MiB from v0.7 on and was 64 MiB before, so a JSON without the size takes it from "version"):
// each bandwidth becomes one point at that size. Waived or failed test cases are listed in the notes.
// The JSON may sit between other lines (DCGM's capture puts WARNING lines around it); those lines are
// blanked, keeping every line and column where it was for errors. A file is text output when no line
// opens a JSON object and it has nvbandwidth's version line or a "Running <test>." line.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "dlscale/calibration.hpp"
#include "dlscale/error.hpp"
#include "io/files.hpp"

namespace dlscale {
namespace {
using json = nlohmann::json;

SourceLocation location_of_byte(const std::string& file, const std::string& text, std::size_t byte) {
  int line = 1, col = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return SourceLocation{file, line, col};
}

// nlohmann::json keeps no positions. For an error, the text is parsed once more through SAX from an
// unbuffered stream, so that each event knows how far the parser has read: the value at a JSON pointer
// starts at the first character after the previous event that is not white space, ',' or ':'.
class CountingBuf : public std::streambuf {
 public:
  explicit CountingBuf(const std::string& s) : s_(s) {}
  [[nodiscard]] std::size_t pos() const noexcept { return pos_; }

 protected:
  int_type underflow() override { return pos_ < s_.size() ? traits_type::to_int_type(s_[pos_]) : traits_type::eof(); }
  int_type uflow() override { return pos_ < s_.size() ? traits_type::to_int_type(s_[pos_++]) : traits_type::eof(); }

 private:
  const std::string& s_;
  std::size_t pos_ = 0;
};

class Locator final : public nlohmann::json_sax<json> {
 public:
  Locator(const std::string& text, const CountingBuf& buf) : text_(text), buf_(buf) {}
  std::map<std::string, std::size_t> offsets;  // JSON pointer -> byte offset (a member: its key)

  bool null() override { return scalar(); }
  bool boolean(bool) override { return scalar(); }
  bool number_integer(number_integer_t) override { return scalar(); }
  bool number_unsigned(number_unsigned_t) override { return scalar(); }
  bool number_float(number_float_t, const string_t&) override { return scalar(); }
  bool string(string_t&) override { return scalar(); }
  bool binary(binary_t&) override { return scalar(); }
  bool start_object(std::size_t) override { return open(false); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    frames_.back().key = k;
    offsets.emplace(frames_.back().path + "/" + k, start());
    prev_ = buf_.pos();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  struct Frame {
    bool array = false;
    std::size_t index = 0;
    std::string key, path;
  };
  std::size_t start() const {
    std::size_t i = prev_;
    while (i < text_.size() && (std::isspace(static_cast<unsigned char>(text_[i])) || text_[i] == ',' || text_[i] == ':')) ++i;
    return i;
  }
  std::string value_path() const {
    if (frames_.empty()) return "";
    const Frame& f = frames_.back();
    return f.path + "/" + (f.array ? std::to_string(f.index) : f.key);
  }
  void value_at(const std::string& path) {
    if (!frames_.empty() && frames_.back().array) offsets.emplace(path, start());
    if (frames_.empty()) offsets.emplace("", start());
  }
  void done() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
    prev_ = buf_.pos();
  }
  bool scalar() {
    value_at(value_path());
    done();
    return true;
  }
  bool open(bool array) {
    const std::string path = value_path();
    value_at(path);
    frames_.push_back(Frame{array, 0, "", path});
    prev_ = buf_.pos();
    return true;
  }
  bool close() {
    frames_.pop_back();
    done();
    return true;
  }
  const std::string& text_;
  const CountingBuf& buf_;
  std::vector<Frame> frames_;
  std::size_t prev_ = 0;
};

/// Errors of one nvbandwidth file: `fail("/nvbandwidth/testcases/2", "nvbandwidth.testcases[2]", ...)`
/// names file:line:col of that value (of its key, for an object member).
class Reporter {
 public:
  Reporter(std::string file, const std::string& text) : file_(std::move(file)), text_(text) {}
  /// For nvbandwidth's text output: where each value was read, and the key to name it by.
  Reporter(std::string file, const std::string& text, std::map<std::string, SourceLocation> places,
           std::map<std::string, std::string> keys)
      : file_(std::move(file)), text_(text), places_(std::move(places)), keys_(std::move(keys)) {}
  [[noreturn]] void fail(const std::string& pointer, const std::string& key, const std::string& message) const {
    const auto k = keys_.find(pointer);
    throw InputError(where(pointer), k == keys_.end() ? key : k->second, message);
  }

 private:
  SourceLocation where(const std::string& pointer) const {
    if (!places_.empty()) {
      for (std::string p = pointer;; p = p.substr(0, p.rfind('/'))) {
        if (auto it = places_.find(p); it != places_.end()) return it->second;
        if (p.empty()) break;
      }
      return SourceLocation{file_, 1, 1};
    }
    CountingBuf buf(text_);
    std::istream in(&buf);
    Locator loc(text_, buf);
    (void)json::sax_parse(in, &loc);
    // the pointer itself, else its nearest recorded parent
    for (std::string p = pointer;; p = p.substr(0, p.rfind('/'))) {
      if (auto it = loc.offsets.find(p); it != loc.offsets.end()) return location_of_byte(file_, text_, it->second);
      if (p.empty()) break;
    }
    return SourceLocation{file_, 1, 1};
  }
  std::string file_;
  const std::string& text_;
  std::map<std::string, SourceLocation> places_;  // JSON pointer -> place in the text output
  std::map<std::string, std::string> keys_;       // JSON pointer -> the key errors name
};

/// A matrix entry: a number, or a string holding one; "N/A" and empty entries are absent. Anything else
/// (text, a negative, NaN or infinite bandwidth) is an error naming the entry.
std::optional<double> entry(const json& v, const Reporter& report, std::size_t test, const char* matrix, std::size_t r,
                            std::size_t c) {
  auto bad = [&](const std::string& why) {
    report.fail(fmt::format("/nvbandwidth/testcases/{}/{}/{}/{}", test, matrix, r, c),
                fmt::format("nvbandwidth.testcases[{}].{}[{}][{}]", test, matrix, r, c), why);
  };
  double d = 0;
  if (v.is_number()) {
    d = v.get<double>();
  } else if (v.is_string()) {
    const auto s = v.get<std::string>();
    if (s.empty() || s == "N/A" || s == "n/a") return std::nullopt;
    std::size_t pos = 0;
    try {
      d = std::stod(s, &pos);
    } catch (const std::exception&) {
      pos = 0;
    }
    if (pos == 0 || pos != s.size()) bad(fmt::format("'{}' is not a number (nor N/A)", s));
  } else if (v.is_null()) {
    return std::nullopt;
  } else {
    bad("expected a number or N/A");
  }
  if (!std::isfinite(d)) bad(fmt::format("{} is not a finite number", v.dump()));
  if (d < 0) bad(fmt::format("{} is negative", v.dump()));
  return d;
}

}  // namespace

namespace {
/// `text` with the lines before the first line that starts with '{' and after the last line that starts
/// with '}' blanked (spaces), so that a JSON document wrapped in log lines parses and its errors keep their
/// places. Unchanged when no such pair of lines exists.
std::string unwrap_json(const std::string& text) {
  std::vector<std::pair<std::size_t, std::size_t>> lines;  // [begin, end) of each line, without '\n'
  for (std::size_t b = 0; b <= text.size();) {
    const auto e = std::min(text.find('\n', b), text.size());
    lines.emplace_back(b, e);
    b = e + 1;
  }
  auto first_char = [&](std::size_t i) {
    const auto [b, e] = lines[i];
    const auto p = text.find_first_not_of(" \t\r", b);
    return p == std::string::npos || p >= e ? '\0' : text[p];
  };
  std::size_t open = lines.size(), close = lines.size();
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (first_char(i) == '{') {
      open = i;
      break;
    }
  for (std::size_t i = lines.size(); i-- > 0;)
    if (first_char(i) == '}') {
      close = i;
      break;
    }
  if (open == lines.size() || close == lines.size() || close < open) return text;
  std::string out = text;
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (i < open || i > close)
      for (std::size_t k = lines[i].first; k < lines[i].second; ++k) out[k] = ' ';
  return out;
}

// ---- nvbandwidth's text output -----------------------------------------------------------------------
// Without -j, nvbandwidth prints (every version so far):
//   nvbandwidth Version: v0.4                      CUDA Runtime Version: 12020      Driver Version: 535.54.03
//   Device 0: NVIDIA H100 80GB HBM3 (00000000:19:00)   (v0.6+ multinode: "Process 0 (host): device 0: …")
//   Running host_to_device_memcpy_ce.
//   memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)
//              0         1
//    0     55.61     55.60
//   SUM host_to_device_memcpy_ce 111.21            (v0.4 on)
// and a test case it could not run is waived ("Waived" on its line). The text becomes the document -j
// would have printed, with the place of every value for errors.

struct TextOutput {
  json doc;
  std::map<std::string, SourceLocation> places;
  std::map<std::string, std::string> keys;
};

/// Whitespace-separated words of `line` and their 1-based columns.
std::vector<std::pair<std::string, int>> words(const std::string& line) {
  std::vector<std::pair<std::string, int>> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i >= line.size()) break;
    const std::size_t b = i;
    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    out.emplace_back(line.substr(b, i - b), static_cast<int>(b) + 1);
  }
  return out;
}

bool all_digits(const std::string& w) {
  return !w.empty() && std::all_of(w.begin(), w.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
}

/// Whether `text` is nvbandwidth's text output: no line that opens a JSON object, and nvbandwidth's
/// version line or a "Running <test>." line.
bool is_text_output(const std::string& text) {
  static const std::regex running(R"((^|\n)\s*Running [a-z_0-9]+\.\s*(\r?\n|$))");
  static const std::regex json_open(R"((^|\n)\s*\{)");
  return !std::regex_search(text, json_open) &&
      (text.find("nvbandwidth Version:") != std::string::npos || std::regex_search(text, running));
}

/// nvbandwidth's text output read line by line into the document -j would have printed.
class TextReader {
 public:
  explicit TextReader(const std::string& file) : file_(file) {}

  void read_line(std::string line) {
    ++lineno_;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto w = words(line);
    if (state_ == State::matrix) {
      if (matrix_row(line, w)) return;
      if (current()["bandwidth_matrix"].size() < rows_expected_) unfinished(lineno_);
      state_ = State::outside;  // a blank line, "SUM …": the matrix is over
    }
    if (test_start(line) || matrix_title(line) || matrix_header(w) || status_line(line)) return;
    header_line(line);
  }

  TextOutput finish() {
    if (state_ == State::described || (state_ == State::matrix && current()["bandwidth_matrix"].size() < rows_expected_))
      unfinished(lineno_);
    // a test case that printed no matrix and no status (cut short, or an error of the tool): not passed
    for (auto& tc : cases_)
      if (tc["status"] == "Passed" && !tc.contains("bandwidth_matrix")) tc["status"] = "without a matrix";
    nv_["testcases"] = std::move(cases_);
    if (!devices_.empty()) nv_["GPU Device list"] = std::move(devices_);
    out_.doc = json{{"nvbandwidth", std::move(nv_)}};
    out_.places["/nvbandwidth"] = SourceLocation{file_, 1, 1};
    out_.places["/nvbandwidth/testcases"] =
        out_.doc["nvbandwidth"]["testcases"].empty() ? SourceLocation{file_, 1, 1} : out_.places["/nvbandwidth/testcases/0"];
    out_.keys["/nvbandwidth/testcases"] = "nvbandwidth";
    return std::move(out_);
  }

 private:
  enum class State { outside, in_test, described, matrix };
  using Words = std::vector<std::pair<std::string, int>>;

  json& current() { return cases_.back(); }
  std::string pointer() const { return fmt::format("/nvbandwidth/testcases/{}", cases_.size() - 1); }
  [[noreturn]] void unfinished(int at) {
    throw InputError(SourceLocation{file_, at, 1}, "",
                     fmt::format("nvbandwidth's output ends inside the {} matrix (truncated?): rerun nvbandwidth (-j gives "
                                 "JSON) and keep its whole output",
                                 current()["name"].get<std::string>()));
  }

  bool matrix_row(const std::string& line, const Words& w) {
    if (!(!w.empty() && all_digits(w[0].first) && w.size() > 1 && current()["bandwidth_matrix"].size() < rows_expected_))
      return false;
    json& tc = current();
    const std::size_t r = tc["bandwidth_matrix"].size();
    if (w.size() - 1 < columns_)
      throw InputError(SourceLocation{file_, lineno_, static_cast<int>(line.find_last_not_of(" \t")) + 2}, "",
                       fmt::format("row {} of the {} matrix has {} values, its header {} columns (a cut-off row? rerun "
                                   "nvbandwidth and keep its whole output)",
                                   w[0].first, tc["name"].get<std::string>(), w.size() - 1, columns_));
    json row = json::array();
    for (std::size_t c = 1; c < w.size(); ++c) {
      row.push_back(w[c].first);
      const std::string ptr = fmt::format("{}/bandwidth_matrix/{}/{}", pointer(), r, c - 1);
      out_.places[ptr] = SourceLocation{file_, lineno_, w[c].second};
      out_.keys[ptr] = fmt::format("{}[{}][{}]", tc["name"].get<std::string>(), r, c - 1);
    }
    tc["bandwidth_matrix"].push_back(std::move(row));
    return true;
  }

  bool test_start(const std::string& line) {
    static const std::regex running(R"(^\s*Running ([a-z_0-9]+)\.\s*$)");
    std::smatch m;
    if (!std::regex_search(line, m, running)) return false;
    if (state_ == State::described) unfinished(lineno_);
    cases_.push_back(json{{"name", m[1].str()}, {"status", "Passed"}});
    out_.places[pointer()] = SourceLocation{file_, lineno_, static_cast<int>(line.find('R')) + 1};
    state_ = State::in_test;
    return true;
  }

  // the matrix's title: "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)", "memcpy local GPU(column)
  // bandwidth (GB/s)", "Device to Device Latency SM GPU(row) <-> GPU(column) (ns)"
  bool matrix_title(const std::string& line) {
    if (!(state_ == State::in_test &&
          (line.find("(column)") != std::string::npos || line.find("(GB/s)") != std::string::npos ||
           line.find("(ns)") != std::string::npos)))
      return false;
    current()["bandwidth_description"] = line.substr(line.find_first_not_of(" \t"));
    current()["bandwidth_matrix"] = json::array();
    description_line_ = lineno_;
    state_ = State::described;
    return true;
  }

  bool matrix_header(const Words& w) {
    if (!(state_ == State::described && !w.empty())) return false;
    if (!std::all_of(w.begin(), w.end(), [](const auto& x) { return all_digits(x.first); })) unfinished(description_line_);
    columns_ = w.size();
    // a row per GPU when the rows are GPUs, else one (the CPU, or a GPU's own copy)
    rows_expected_ = current()["bandwidth_description"].get<std::string>().find("GPU(row)") != std::string::npos ? columns_ : 1;
    state_ = State::matrix;
    return true;
  }

  bool status_line(const std::string& line) {
    static const std::regex waived(R"(^\s*(Waived|WAIVED|Failed|FAILED|Error|ERROR)\b)");
    static const std::regex named_test(R"(\b([a-z]+(?:_[a-z0-9]+)*_(?:ce|sm)|device_local_copy)\b)");
    std::smatch m;
    if (!std::regex_search(line, m, waived)) return false;
    std::string name;
    std::smatch t;
    if (std::regex_search(line, t, named_test)) name = t[1].str();
    if (!cases_.empty() && state_ == State::in_test && (name.empty() || name == current()["name"].get<std::string>())) {
      current()["status"] = m[1].str() == "WAIVED" ? "Waived" : m[1].str() == "FAILED" ? "Failed" : m[1].str();
    } else if (!name.empty()) {
      cases_.push_back(json{{"name", name}, {"status", m[1].str() == "WAIVED" ? "Waived" : m[1].str()}});
      out_.places[pointer()] = SourceLocation{file_, lineno_, 1};
    }
    return true;
  }

  void header_line(const std::string& line) {
    static const std::regex device(R"((?:^|:\s)[Dd]evice (\d+): (.*\S)\s*$)");
    std::smatch m;
    if (const auto p = line.find("nvbandwidth Version:"); p != std::string::npos) {
      const auto v = words(line.substr(p + 20));
      if (!v.empty()) nv_["version"] = v[0].first;
    } else if (line.find("CUDA Runtime Version:") != std::string::npos) {
      const auto v = words(line.substr(line.find(':') + 1));
      if (!v.empty() && all_digits(v[0].first) && v[0].first.size() < 9) nv_["CUDA Runtime Version"] = std::stoi(v[0].first);
    } else if (line.find("Driver Version:") != std::string::npos && line.find("CUDA") == std::string::npos) {
      const auto v = words(line.substr(line.find(':') + 1));
      if (!v.empty()) nv_["Driver Version"] = v[0].first;
    } else if (state_ == State::outside && std::regex_search(line, m, device)) {
      devices_.push_back(fmt::format("{}: {}", m[1].str(), m[2].str()));
    }
  }

  const std::string& file_;
  TextOutput out_;
  json nv_ = json::object();
  json cases_ = json::array();
  json devices_ = json::array();
  int lineno_ = 0;
  State state_ = State::outside;
  std::size_t columns_ = 0, rows_expected_ = 0;
  int description_line_ = 0;
};

TextOutput read_text_output(const std::string& text, const std::string& file) {
  TextReader reader(file);
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) reader.read_line(line);
  return reader.finish();
}

/// nvbandwidth's default --bufferSize for a "version" like "v0.5": 64 MiB before v0.7, 512 MiB since.
std::optional<Bytes> default_buffer_of_version(const std::string& version) {
  unsigned major = 0, minor = 0;
  if (std::sscanf(version.c_str(), "v%u.%u", &major, &minor) != 2 && std::sscanf(version.c_str(), "%u.%u", &major, &minor) != 2)
    return std::nullopt;
  return major == 0 && minor < 7 ? mebibytes(64) : mebibytes(512);
}

/// The JSON document in `text`; a parse error names its line and column.
json parse_json(const std::string& text, const std::string& file) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    // what() is "[json.exception.parse_error.101] parse error at line L, column C: <reason>": the place is
    // said once, in front, as everywhere else
    std::string reason = e.what();
    if (const auto colon = reason.find(": "); colon != std::string::npos) reason = reason.substr(colon + 2);
    if (reason.find("unexpected end of input") != std::string::npos)
      reason += " (the file ends early: rerun nvbandwidth -j and keep its whole output)";
    throw InputError(location_of_byte(file, text, e.byte > 0 ? e.byte - 1 : 0), "", fmt::format("malformed JSON: {}", reason));
  } catch (const json::out_of_range& e) {
    // "[json.exception.out_of_range.406] number overflow parsing '1e999'" (found by fuzz_nvbandwidth: it
    // escaped as a foreign exception). nlohmann names the number but not its place: find it in the text.
    std::string reason = e.what();
    if (const auto bracket = reason.find("] "); bracket != std::string::npos) reason = reason.substr(bracket + 2);
    std::size_t at = 0;
    const auto q1 = reason.find('\''), q2 = reason.rfind('\'');
    if (q1 != std::string::npos && q2 > q1 + 1)
      if (const auto p = text.find(reason.substr(q1 + 1, q2 - q1 - 1)); p != std::string::npos) at = p;
    throw InputError(location_of_byte(file, text, at), "", fmt::format("malformed JSON: {}", reason));
  }
}

// The driver, the CUDA runtime and the devices nvbandwidth names, into the calibration.
void read_system(const json& nv, Calibration& cal) {
  if (nv.contains("Driver Version") && nv["Driver Version"].is_string())
    cal.provenance.driver = nv["Driver Version"].get<std::string>();
  if (nv.contains("CUDA Runtime Version") && nv["CUDA Runtime Version"].is_number_integer()) {
    const int v = nv["CUDA Runtime Version"].get<int>();  // CUDART_VERSION: major·1000 + minor·10
    cal.provenance.cuda = fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
  }
  if (nv.contains("GPU Device list") && nv["GPU Device list"].is_array()) {
    // "0: NVIDIA H100 80GB HBM3 (00000000:19:00)"
    for (const auto& d : nv["GPU Device list"]) {
      if (!d.is_string()) continue;
      std::string s = d.get<std::string>();
      DeviceInfo info;
      const auto colon = s.find(':');
      try {
        info.index = colon != std::string::npos ? std::stoi(s.substr(0, colon)) : static_cast<int>(cal.devices.size());
      } catch (const std::exception&) {
        info.index = static_cast<int>(cal.devices.size());
      }
      std::string name = colon != std::string::npos ? s.substr(colon + 1) : s;
      if (const auto paren = name.rfind('('); paren != std::string::npos) {
        const auto close = name.find(')', paren);
        info.pci_bus_id = name.substr(paren + 1, close == std::string::npos ? std::string::npos : close - paren - 1);
        name = name.substr(0, paren);
      }
      while (!name.empty() && name.front() == ' ') name.erase(0, 1);
      while (!name.empty() && name.back() == ' ') name.pop_back();
      info.name = name;
      if (cal.gpu.empty()) cal.gpu = name;
      cal.devices.push_back(info);
    }
  }
}

// The size of nvbandwidth's copies: the file's, else the default of its version, else 512 MiB.
Bytes buffer_size(const json& nv, const Reporter& report, const std::string& file, std::vector<std::string>* warnings) {
  Bytes buffer = mebibytes(512);
  bool buffer_given = false;
  for (const char* key : {"bufferSize", "buffer_size", "Buffer Size"}) {
    if (!nv.contains(key)) continue;
    const json& v = nv[key];
    if (!v.is_number() || !std::isfinite(v.get<double>()) || !(v.get<double>() > 0))
      report.fail(fmt::format("/nvbandwidth/{}", key), fmt::format("nvbandwidth.{}", key),
                  fmt::format("{} is not a buffer size in MiB (a number greater than zero)", v.dump()));
    buffer = mebibytes(v.get<double>());
    buffer_given = true;
  }
  if (!buffer_given) {
    const std::string version = nv.contains("version") && nv["version"].is_string() ? nv["version"].get<std::string>() : "";
    if (const auto b = default_buffer_of_version(version)) {
      buffer = *b;
      if (warnings)
        warnings->push_back(fmt::format("{}: no buffer size in the file: taking nvbandwidth {}'s default, {} MiB", file, version,
                                        in_mebibytes(buffer)));
    } else if (warnings) {
      warnings->push_back(
          fmt::format("{}: no buffer size and no version in the file: assuming 512 MiB (nvbandwidth "
                      "v0.7 and later; earlier versions used 64 MiB)",
                      file));
    }
  }
  return buffer;
}

const char* matrix_key(const json& tc) {
  for (const char* k : {"bandwidth_matrix", "latency_matrix", "matrix"})
    if (tc.contains(k) && tc[k].is_array()) return k;
  return "";
}

const json* matrix(const json& tc) {
  const char* k = matrix_key(tc);
  return *k ? &tc[k] : nullptr;
}

/// The passed test cases of a document and what they give a calibration: host copies, and GPU-to-GPU
/// bandwidths and latencies.
class CaseImport {
 public:
  CaseImport(const Reporter& report, std::string file, Bytes buffer, std::vector<std::string>* warnings)
      : report_(report), file_(std::move(file)), buffer_(buffer), warnings_(warnings) {}

  // The test cases by name; those not passed are said in `notes` and skipped.
  void read_cases(const json& nv, std::string& notes) {
    for (std::size_t i = 0; i < nv["testcases"].size(); ++i) {
      const json& tc = nv["testcases"][i];
      if (!tc.is_object() || !tc.contains("name") || !tc["name"].is_string())
        report_.fail(fmt::format("/nvbandwidth/testcases/{}", i), fmt::format("nvbandwidth.testcases[{}]", i),
                     "a test case without a name");
      index_of_[&tc] = i;
      const auto name = tc["name"].get<std::string>();
      const std::string status = tc.contains("status") && tc["status"].is_string() ? tc["status"].get<std::string>() : "Passed";
      if (status != "Passed") {
        notes += fmt::format("; {} {}", name, status);
        if (warnings_) warnings_->push_back(fmt::format("{}: test case {} is {}: skipped", file_, name, status));
        continue;
      }
      cases_[name] = &tc;
    }
  }

  void host_copies(Calibration& cal, TransferKind kind, std::initializer_list<const char*> names) {
    auto [name, tc] = first_of(names);
    if (!tc) return;
    const json* m = matrix(*tc);
    if (!m || m->empty() || !(*m)[0].is_array()) {
      if (warnings_) warnings_->push_back(fmt::format("{}: {} has no bandwidth matrix: skipped", file_, name));
      return;
    }
    // one row (the CPU) with a column per GPU; device_local_copy may also be a diagonal
    const json& rows = *m;
    for (std::size_t r = 0; r < rows.size(); ++r) {
      for (std::size_t col = 0; col < rows[r].size(); ++col) {
        if (rows.size() > 1 && r != col) continue;
        auto v = entry(rows[r][col], report_, index_of_[tc], matrix_key(*tc), r, col);
        if (!v || *v <= 0) continue;
        TransferCurve t;
        t.kind = kind;
        t.device = static_cast<int>(col);
        t.source = fmt::format("{} ({})", file_, name);
        const BytesPerSecond bw = gigabytes_per_second(*v);
        t.points.push_back(BandwidthPoint{buffer_, buffer_ / bw, bw, std::nullopt, 0});
        cal.transfers.push_back(std::move(t));
      }
    }
  }

  template <class Apply>
  void p2p_matrix(std::initializer_list<const char*> names, Apply apply) {
    auto [name, tc] = first_of(names);
    if (!tc) return;
    const json* m = matrix(*tc);
    if (!m) return;
    const bool read = name.find("read") != std::string::npos;
    for (std::size_t r = 0; r < m->size(); ++r) {
      if (!(*m)[r].is_array()) continue;
      for (std::size_t col = 0; col < (*m)[r].size(); ++col) {
        if (r == col) continue;
        auto v = entry((*m)[r][col], report_, index_of_[tc], matrix_key(*tc), r, col);
        if (!v || *v <= 0) continue;
        const int src = static_cast<int>(read ? col : r), dst = static_cast<int>(read ? r : col);
        P2PEntry& e = p2p_[{src, dst}];
        e.src = src;
        e.dst = dst;
        apply(e, *v, *tc);
      }
    }
  }

  void p2p(Calibration& cal) {
    p2p_matrix({"device_to_device_memcpy_write_ce", "device_to_device_memcpy_read_ce", "device_to_device_memcpy_write_sm",
                "device_to_device_memcpy_read_sm"},
               [](P2PEntry& e, double v, const json&) { e.bandwidth = gigabytes_per_second(v); });
    p2p_matrix({"device_to_device_bidirectional_memcpy_write_ce", "device_to_device_bidirectional_memcpy_read_ce",
                "device_to_device_bidirectional_memcpy_write_sm", "device_to_device_bidirectional_memcpy_read_sm"},
               [](P2PEntry& e, double v, const json&) { e.bidirectional = gigabytes_per_second(v); });
    p2p_matrix({"device_to_device_latency_sm"}, [](P2PEntry& e, double v, const json& tc) {
      const std::string d = tc.contains("bandwidth_description") && tc["bandwidth_description"].is_string()
          ? tc["bandwidth_description"].get<std::string>()
          : "";
      e.latency = d.find("(us)") != std::string::npos ? microseconds(v) : nanoseconds(v);  // nvbandwidth prints ns
    });
    for (auto& [k, e] : p2p_) cal.p2p.push_back(e);
  }

  // The passed test cases dlscale does not import, said in `notes`.
  void note_unused(std::string& notes) const {
    for (const auto& [name, tc] : cases_) {
      static const std::set<std::string> used = {"host_to_device_memcpy_ce",
                                                 "host_to_device_memcpy_sm",
                                                 "device_to_host_memcpy_ce",
                                                 "device_to_host_memcpy_sm",
                                                 "device_local_copy",
                                                 "device_to_device_memcpy_write_ce",
                                                 "device_to_device_memcpy_read_ce",
                                                 "device_to_device_memcpy_write_sm",
                                                 "device_to_device_memcpy_read_sm",
                                                 "device_to_device_bidirectional_memcpy_write_ce",
                                                 "device_to_device_bidirectional_memcpy_read_ce",
                                                 "device_to_device_bidirectional_memcpy_write_sm",
                                                 "device_to_device_bidirectional_memcpy_read_sm",
                                                 "device_to_device_latency_sm"};
      if (!used.count(name)) notes += fmt::format("; {} not imported", name);
    }
  }

 private:
  std::pair<std::string, const json*> first_of(std::initializer_list<const char*> names) const {
    for (const char* n : names)
      if (auto it = cases_.find(n); it != cases_.end()) return {n, it->second};
    return {"", nullptr};
  }

  const Reporter& report_;
  std::string file_;
  Bytes buffer_;
  std::vector<std::string>* warnings_;
  std::map<std::string, const json*> cases_;
  std::map<const json*, std::size_t> index_of_;  // a test case's position in the list, for errors
  std::map<std::pair<int, int>, P2PEntry> p2p_;
};

// `file` names the input in errors, warnings and provenance (a path, or the display name of text).
Calibration read_nvbandwidth(const std::string& raw, const std::filesystem::path& file, std::vector<std::string>* warnings) {
  if (raw.find_first_not_of(" \t\r\n") == std::string::npos)
    throw InputError(SourceLocation{file.string(), 1, 1}, "",
                     "the file is empty (expected the output of nvbandwidth, as text or -j JSON)");
  const bool text_output = is_text_output(raw);
  const std::string text = text_output ? raw : unwrap_json(raw);
  std::optional<TextOutput> from_text;
  if (text_output) from_text = read_text_output(raw, file.string());
  const json doc = from_text ? from_text->doc : parse_json(text, file.string());
  const Reporter report =
      from_text ? Reporter(file.string(), text, from_text->places, from_text->keys) : Reporter(file.string(), text);
  if (!doc.is_object() || !doc.contains("nvbandwidth") || !doc["nvbandwidth"].is_object())
    report.fail("/nvbandwidth", "nvbandwidth", "not an nvbandwidth JSON file (no top-level 'nvbandwidth' object)");
  const json& nv = doc["nvbandwidth"];
  if (!nv.contains("testcases")) report.fail("/nvbandwidth", "nvbandwidth.testcases", "missing list of test cases");
  if (!nv["testcases"].is_array())
    report.fail("/nvbandwidth/testcases", "nvbandwidth.testcases", "expected a list of test cases");

  Calibration cal;
  cal.provenance.tool = "dlscale calibrate import nvbandwidth";
  cal.provenance.sources.push_back(file.string());
  read_system(nv, cal);
  const Bytes buffer = buffer_size(nv, report, file.string(), warnings);
  std::string notes = fmt::format("nvbandwidth copies of {} MiB from pinned host memory", in_mebibytes(buffer));

  CaseImport cases(report, file.string(), buffer, warnings);
  cases.read_cases(nv, notes);
  cases.host_copies(cal, TransferKind::h2d_pinned, {"host_to_device_memcpy_ce", "host_to_device_memcpy_sm"});
  cases.host_copies(cal, TransferKind::d2h_pinned, {"device_to_host_memcpy_ce", "device_to_host_memcpy_sm"});
  cases.host_copies(cal, TransferKind::device_copy, {"device_local_copy"});
  cases.p2p(cal);
  cases.note_unused(notes);
  cal.provenance.notes = notes;
  if (cal.transfers.empty() && cal.p2p.empty())
    report.fail("/nvbandwidth/testcases", "nvbandwidth.testcases",
                "no passed copy or latency test case that dlscale can use: rerun nvbandwidth with its copy tests (the "
                "default set, or -t host_to_device_memcpy_ce device_to_host_memcpy_ce device_to_device_memcpy_read_ce) and "
                "import its whole output");
  return cal;
}

}  // namespace

Calibration import_nvbandwidth(const std::filesystem::path& file, std::vector<std::string>* warnings) {
  return read_nvbandwidth(read_input_file(file), file, warnings);
}

Calibration parse_nvbandwidth(const std::string& json_text, const std::string& display_name, std::vector<std::string>* warnings) {
  return read_nvbandwidth(json_text, std::filesystem::path(display_name), warnings);
}

}  // namespace dlscale
