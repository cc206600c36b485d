// Sharded sweeps (include/dlscale/sweep.hpp): "I/N" parsed, the part of a spec that shard I of N
// evaluates, and the parts' outputs merged back into the output of the whole sweep.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "dlscale/error.hpp"
#include "dlscale/sweep.hpp"
#include "io/files.hpp"
#include "plan/sweep_csv.hpp"

namespace dlscale {
namespace fs = std::filesystem;
using sweep_detail::kCsvHeader;
using sweep_detail::kCsvLayoutHeader;

SweepShard sweep_shard_from_string(std::string_view s) {
  auto number = [&](std::string_view part, std::size_t& out) {
    if (part.empty() || part.size() > 9) return false;
    out = 0;
    for (char c : part) {
      if (c < '0' || c > '9') return false;
      out = out * 10 + static_cast<std::size_t>(c - '0');
    }
    return true;
  };
  const auto slash = s.find('/');
  SweepShard sh;
  if (slash == std::string_view::npos || !number(s.substr(0, slash), sh.index) || !number(s.substr(slash + 1), sh.count))
    throw InputError(SourceLocation{}, "shard", fmt::format("'{}' is not I/N (part I of N, e.g. 3/8)", s));
  if (sh.count < 1 || sh.index < 1 || sh.index > sh.count)
    throw InputError(SourceLocation{}, "shard", fmt::format("'{}': the part I of I/N runs from 1 to N, and N is at least 1", s));
  return sh;
}

SweepSpec shard_sweep_spec(const SweepSpec& spec, SweepShard shard) {
  const std::size_t total = spec.configurations();
  if (shard.count < 1 || shard.index < 1 || shard.index > shard.count)
    throw InputError(SourceLocation{}, "shard", fmt::format("part {} of {} does not exist", shard.index, shard.count));
  if (shard.count > total)
    throw InputError(SourceLocation{}, "shard",
                     fmt::format("{} parts of a sweep of {} configuration{} would leave some empty (N is at "
                                 "most the number of configurations)",
                                 shard.count, total, total == 1 ? "" : "s"));
  // [begin, end) of the configuration numbers; products stay far below 2^64 (C ≤ groups × 10^7 counts).
  const std::size_t begin = (shard.index - 1) * total / shard.count;
  const std::size_t end = shard.index * total / shard.count;
  SweepSpec out = spec;
  out.groups.clear();
  std::size_t k = 0;
  for (const auto& g : spec.groups) {
    const std::size_t n = g.gpus.size();
    const std::size_t lo = std::max(begin, k), hi = std::min(end, k + n);
    if (lo < hi) {
      SweepGroup part = g;
      part.gpus.assign(g.gpus.begin() + static_cast<std::ptrdiff_t>(lo - k),
                       g.gpus.begin() + static_cast<std::ptrdiff_t>(hi - k));
      out.groups.push_back(std::move(part));
    }
    k += n;
  }
  return out;
}

std::string merge_sweep_parts(std::span<const fs::path> parts) {
  if (parts.empty()) throw InputError(SourceLocation{}, "parts", "give the parts of a sharded sweep, in order");
  std::string out;
  bool csv = false;
  std::string_view header = kCsvHeader;  // the first part's: a sweep with a layout axis has the layout columns
  std::vector<std::string> texts;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string name = parts[i].string();
    const std::string text = read_input_file(parts[i]);
    auto fail = [&](int line, int col, const std::string& what) { throw InputError(SourceLocation{name, line, col}, "", what); };
    // A part given twice (the same file, or a copy with the same rows) would repeat its rows; two parts
    // without rows are the same harmlessly.
    for (std::size_t j = 0; j < i; ++j) {
      std::error_code ec;
      if (fs::equivalent(parts[i], parts[j], ec) || (text == texts[j] && !text.empty() && text != header))
        fail(0, 0,
             fmt::format("the same part as {} (part {} of the list, given again as part {}): each part once", parts[j].string(),
                         j + 1, i + 1));
    }
    texts.push_back(text);
    if (i == 0) {
      csv = text.starts_with(kCsvHeader.substr(0, kCsvHeader.find(',') + 1));
      if (text.starts_with(kCsvLayoutHeader)) header = kCsvLayoutHeader;
    }
    if (!text.empty() && text.back() != '\n') {
      const int line = static_cast<int>(std::count(text.begin(), text.end(), '\n')) + 1;
      const auto col = text.size() - (text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1) + 1;
      fail(line, static_cast<int>(col), "the last line has no end (a part cut short?)");
    }
    std::size_t body = 0;
    if (csv) {
      if (!text.starts_with(header))
        fail(1, 1, fmt::format("not a CSV part of a dlscale sweep (the first line is not the header of {})", parts[0].string()));
      body = header.size();
      if (i == 0) out.append(header);
    }
    // Every row: CSV rows begin with a cluster name, JSON lines are objects; a header in the middle or
    // a part of the other format is refused.
    int line = csv ? 2 : 1;
    for (std::size_t pos = body; pos < text.size(); ++line) {
      const std::size_t eol = text.find('\n', pos);
      const std::string_view row(text.data() + pos, eol - pos);
      const bool object = row.starts_with('{') && row.ends_with('}');
      if (csv ? (object || row.empty() || row == header.substr(0, header.size() - 1)) : !object)
        fail(line, 1,
             csv ? fmt::format("not a CSV row of a dlscale sweep (the parts are CSV, as {} is)", parts[0].string())
                 : fmt::format("not a JSON object (the parts are JSON lines, as {} is)", parts[0].string()));
      pos = eol + 1;
    }
    out.append(text, body, std::string::npos);
  }
  return out;
}

}  // namespace dlscale
