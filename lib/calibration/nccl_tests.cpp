// Importer of nccl-tests logs (all_reduce_perf and friends) into calibration curves.
//
// The table is read by its header line, so every layout of shared/docs/nccl-model.md works: the oldest
// (size count type [redop] time algbw busbw error ×2), the current one with redop, root and #wrong, and
// the optional i_min/i_max/i_p99/i_cv% columns. Each row is checked against nccl-tests' own definitions
// computed from the row's own size and time (algbw = S/t, busbw = S/t × factor(n)), within what printing
// the three numbers rounded can explain; a disagreement means a garbled row or a wrong GPU count and is
// an error, never a silent guess. all_gather/reduce_scatter logs of nccl-tests before mid-2020 printed
// algbw = busbw = S·(n−1)/n / t: a table whose numbers follow that convention is read as such.
//
// Real logs come wrapped: `mpirun --tag-output` prefixes ("[1,0]<stdout>:"), `srun --label` prefixes
// ("3: "), timestamps of a log collector, indentation, NCCL INFO/WARN lines and other text between the
// rows. Prefixes are stripped, and a line inside a table that does not start with a number is not a row.
// Rows of size 0 (all_gather on many GPUs at small sizes, `-b 1`) carry no time per byte and are skipped.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "dlscale/calibration.hpp"
#include "dlscale/error.hpp"
#include "io/files.hpp"
#include "io/numbers.hpp"

namespace dlscale {
namespace {

struct Token {
  std::string text;
  int column = 1;  // 1-based
};

std::vector<Token> tokenize(const std::string& line, std::size_t from = 0) {
  std::vector<Token> out;
  std::size_t i = from;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i >= line.size()) break;
    const std::size_t start = i;
    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    out.push_back(Token{line.substr(start, i - start), static_cast<int>(start) + 1});
  }
  return out;
}

std::optional<CollectiveOp> op_from_perf_name(std::string_view name) {
  if (name == "all_reduce") return CollectiveOp::allreduce;
  if (name == "all_gather") return CollectiveOp::allgather;
  if (name == "reduce_scatter") return CollectiveOp::reducescatter;
  if (name == "broadcast") return CollectiveOp::broadcast;
  if (name == "reduce") return CollectiveOp::reduce;
  return std::nullopt;  // alltoall, sendrecv, scatter, gather, hypercube: not collectives the model uses
}

/// The last "<name>_perf" mentioned in `text` (a command line or a file name).
std::optional<std::string> last_perf_name(const std::string& text) {
  static const std::regex re(R"(([a-z_]+)_perf)");
  std::optional<std::string> found;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it) {
    std::string n = (*it)[1].str();
    // "./build/all_reduce_perf" or "nccl_all_reduce_perf": keep the known suffix
    for (const char* known : {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv",
                              "scatter", "gather", "hypercube"}) {
      const std::string k = known;
      if (n.size() >= k.size() && n.compare(n.size() - k.size(), k.size(), k) == 0 &&
          (n.size() == k.size() || n[n.size() - k.size() - 1] == '_' || n[n.size() - k.size() - 1] == '/')) {
        n = k;
        break;
      }
    }
    found = n;
  }
  return found;
}

struct Rank {
  int rank = 0;
  std::string host;
  std::string gpu;
  int device = 0;  // the CUDA device index on its host
};

struct Columns {
  int size = -1;
  int count_c = -1, type = -1, redop = -1, root = -1;             // what tells the collective when nothing names it
  int time = -1, algbw = -1, busbw = -1, wrong = -1;              // out-of-place
  int time_ip = -1, algbw_ip = -1, busbw_ip = -1, wrong_ip = -1;  // in-place
  bool wrong_is_error = false;  // old logs: "error" = max. relative error; new: "#wrong" = count
  std::size_t count = 0;
};

Columns read_columns(const std::vector<Token>& t) {
  Columns c;
  c.count = t.size();
  int group = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const std::string& n = t[i].text;
    const int idx = static_cast<int>(i);
    if (n == "size") c.size = idx;
    else if (n == "count") c.count_c = idx;
    else if (n == "type") c.type = idx;
    else if (n == "redop") c.redop = idx;
    else if (n == "root") c.root = idx;
    else if (n == "time") {
      ++group;
      (group == 1 ? c.time : c.time_ip) = idx;
    } else if (n == "algbw") (group <= 1 ? c.algbw : c.algbw_ip) = idx;
    else if (n == "busbw") (group <= 1 ? c.busbw : c.busbw_ip) = idx;
    else if (n == "#wrong" || n == "error" || n == "#errors") {
      (group <= 1 ? c.wrong : c.wrong_ip) = idx;
      c.wrong_is_error = n == "error";
    }
  }
  return c;
}

/// What launchers and log collectors put in front of nccl-tests' output on one line.
struct Prefix {
  std::size_t length = 0;  // characters before the text nccl-tests printed
  std::string stream;      // who printed the line: the pdsh host, MPI rank, srun task, pod ("" when none says)
};

/// `line`'s prefixes: mpirun --tag-output's "[1,0]<stdout>:", MPICH/Intel MPI -l's "[3] ", srun --label's
/// "12: " (padded " 3: " when there are more than ten tasks), an ISO-8601 timestamp (kubectl logs
/// --timestamps), a Kubernetes pod name "[pod/name/container] ", pdsh's "host: ".
Prefix strip_prefix(const std::string& line) {
  static const std::regex prefixes(
      R"(^(?:(\[\d+,\d+\])<std(?:out|err)>:|(\[\d{1,6}\]) |\s*(\d{1,6}): |\d{4}-\d\d-\d\dT[0-9:.,]+(?:Z|[+-]\d\d:?\d\d)? |(\[pod/[^\]\s]+\]) |([A-Za-z0-9][A-Za-z0-9._-]*): ))");
  Prefix p;
  for (int guard = 0; guard < 4; ++guard) {  // "[pod/x] 2024-...Z [1,0]<stdout>:" has three
    std::smatch m;
    const std::string rest = line.substr(p.length);
    if (!std::regex_search(rest, m, prefixes)) break;
    for (std::size_t g = 1; g < m.size(); ++g)
      if (m[g].matched) p.stream += (p.stream.empty() ? "" : " ") + m[g].str();
    p.length += static_cast<std::size_t>(m.length(0));
  }
  return p;
}

/// One line of a log as nccl-tests printed it: its number in the file, the prefixes blanked (columns in
/// errors count from the line as written), and who printed it.
struct Line {
  int number = 0;
  std::string text;
  std::string stream;
};

std::vector<Line> read_lines(const std::string& text) {
  std::vector<Line> out;
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const Prefix p = strip_prefix(line);
    std::fill(line.begin(), line.begin() + static_cast<std::ptrdiff_t>(p.length), ' ');
    out.push_back(Line{lineno, std::move(line), p.stream});
  }
  return out;
}

/// pdsh runs a test on several hosts at once and interleaves their outputs line by line, each after
/// "host: "; so do mpirun, srun and kubectl when every rank runs a test of its own (nccl-tests built
/// without MPI). Each prefix that printed a '# nThread' header is a stream of its own; any other log is
/// one (in a test of many ranks only rank 0 prints the table).
std::vector<std::vector<Line>> streams_of(const std::vector<Line>& lines) {
  static const std::regex threads(R"(^\s*#\s*nThread\s)");
  std::vector<std::string> keys;
  for (const auto& l : lines)
    if (!l.stream.empty() && std::regex_search(l.text, threads) && std::find(keys.begin(), keys.end(), l.stream) == keys.end())
      keys.push_back(l.stream);
  if (keys.size() < 2) return {lines};
  std::vector<std::vector<Line>> out(keys.size());
  for (const auto& l : lines) {
    const auto it = std::find(keys.begin(), keys.end(), l.stream);
    if (it != keys.end()) out[static_cast<std::size_t>(it - keys.begin())].push_back(l);
  }
  return out;
}

/// Half a unit in the last printed place of a number token ("1818.8" → 0.05, "69338" → 0.5).
double half_ulp(const std::string& token) {
  const auto dot = token.find('.');
  if (dot == std::string::npos) return 0.5;
  std::size_t decimals = 0;
  for (std::size_t i = dot + 1; i < token.size() && std::isdigit(static_cast<unsigned char>(token[i])); ++i) ++decimals;
  return 0.5 * std::pow(10.0, -static_cast<double>(decimals));
}

/// One sweep of sizes in a table (a table holds several with nccl-tests -d all, -o all or -N).
struct Pass {
  std::string type, redop;
  int first_line = 0;
  std::vector<CollectivePoint> points;
};

class Parser {
 public:
  Parser(const std::string& name, const NcclTestsImport& opt) : name_(name), hint_(opt.op), opt_(opt) {}

  NcclTestsLog run(const std::vector<Line>& lines) {
    if (auto p = last_perf_name(std::filesystem::path(name_).filename().string())) file_perf_ = *p;
    int last = 1;
    for (const auto& l : lines) {
      handle(l.text, l.number);
      last = l.number;
    }
    if (in_table_) close_unfinished_table(last);
    if (log_.curves.empty() && !unmodelled_.empty())
      fail(unmodelled_.front().second, 1,
           fmt::format("{}_perf is not a collective dlscale models (allreduce, allgather, reducescatter, broadcast, "
                       "reduce)",
                       unmodelled_.front().first));
    if (log_.curves.empty() && skipped_ > 0)
      throw InputError(
          SourceLocation{name_, 1, 1}, "",
          fmt::format("no {} table in this log (--op selects one of the collectives the log measured)", to_string(*hint_)));
    if (log_.curves.empty())
      throw InputError(SourceLocation{name_, 1, 1}, "",
                       "no nccl-tests result table found (expected a '#  size  count  type ... time  algbw  busbw' "
                       "header): rerun the test and keep its whole output, from the '# nThread' line to '# Avg bus "
                       "bandwidth'");
    for (const auto& [perf, line] : unmodelled_)
      warn(line, fmt::format("{}_perf table skipped: not a collective dlscale models", perf));
    return std::move(log_);
  }

 private:
  [[noreturn]] void fail(int line, int col, const std::string& msg) const {
    throw InputError(SourceLocation{name_, line, col}, "", msg);
  }
  void warn(int line, const std::string& msg) { log_.warnings.push_back(fmt::format("{}:{}: {}", name_, line, msg)); }

  double number(const Token& t, int line, const char* what) const {
    double v = 0;
    const char* b = t.text.data();
    const char* e = b + t.text.size();
    auto [p, ec] = std::from_chars(b, e, v);
    if (ec != std::errc() || p != e || !std::isfinite(v))
      fail(line, t.column, fmt::format("garbled row: {} '{}' is not a number", what, t.text));
    return v;
  }

  void handle(const std::string& line, int lineno) {
    static const std::regex threads(R"(nThread\s+(\d+)\s+nGpus\s+(\d+))");
    static const std::regex rank(
        R"(^\s*#\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?(?:Pid\s+\d+\s+)?on\s+(\S+)\s+device\s+\d+\s+\[[^\]]*\]\s+(.*\S)\s*$)");
    static const std::regex version(R"(NCCL version\s+([0-9][0-9.]*[0-9]))");
    static const std::regex library(R"(nccl-library=(\d+))");
    static const std::regex avg(R"(^\s*#\s*Avg bus bandwidth\s*:\s*(\S+))");
    std::smatch m;
    if (auto p = last_perf_name(line)) last_perf_ = *p;
    if (std::regex_search(line, m, version)) log_.nccl_version = m[1].str();
    else if (std::regex_search(line, m, library)) {
      // NCCL_VERSION_CODE: major·10000 + minor·100 + patch
      if (const auto v = whole_number(m[1].str(), 0, 99'999'999))
        log_.nccl_version = fmt::format("{}.{}.{}", *v / 10000, (*v / 100) % 100, *v % 100);
    }
    const bool comment =
        !line.empty() && line.find_first_not_of(" \t") != std::string::npos && line[line.find_first_not_of(" \t")] == '#';
    if (std::regex_search(line, m, threads)) {
      end_table_if_open(lineno);
      const auto nthreads = whole_number(m[1].str(), 1, 65536), ngpus = whole_number(m[2].str(), 1, 65536);
      if (!nthreads || !ngpus) fail(lineno, 1, "nThread and nGpus must be whole numbers from 1 to 65536");
      threads_gpus_ = static_cast<int>(*nthreads * *ngpus);
      gpus_per_thread_ = static_cast<int>(*ngpus);
      ranks_.clear();
      read_sweep(line);
      return;
    }
    if (std::regex_search(line, m, rank)) {
      const auto r = whole_number(m[1].str(), 0, 1'000'000);
      if (!r) fail(lineno, 1, fmt::format("rank '{}' is not a whole number from 0 to 1000000", m[1].str()));
      static const std::regex device(R"(\sdevice\s+(\d+)\s)");
      std::smatch d;
      int dev = 0;
      if (std::regex_search(line, d, device)) dev = static_cast<int>(whole_number(d[1].str(), 0, 1'000'000).value_or(0));
      ranks_.push_back(Rank{static_cast<int>(*r), m[2].str(), m[3].str(), dev});
      return;
    }
    if (comment) {
      const auto toks = tokenize(line, line.find('#') + 1);
      if (!toks.empty() && toks[0].text == "size" &&
          std::any_of(toks.begin(), toks.end(), [](const Token& t) { return t.text == "time"; })) {
        end_table_if_open(lineno);
        start_table(toks, lineno);
        return;
      }
      if (std::regex_search(line, m, avg)) {
        finish_table(lineno, m[1].str());
        return;
      }
      if (in_table_ && (!passes_.empty() || zero_rows_ > 0)) {
        // "# Out of bounds values : 0 OK" and the like end the rows; the average follows
        rows_done_ = true;
        if (line.find("Out of bounds values") != std::string::npos) saw_out_of_bounds_ = true;
      }
      return;
    }
    const auto toks = tokenize(line);
    if (toks.empty()) return;
    if (!in_table_) return;  // text outside a table (warnings of NCCL, prompts) is not ours
    // A row starts with its size, a number; anything else between the rows (NCCL INFO lines of another
    // rank, a launcher's messages) is not part of the table.
    // (a line of a host whose name starts with a digit, "9a417caaf03b:746:746 [0] NCCL INFO …", is not a
    // row either: a row's size is digits alone, or the row has the header's columns)
    const std::string& first = toks[0].text;
    if (!std::isdigit(static_cast<unsigned char>(first[0]))) return;
    if (!std::all_of(first.begin(), first.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }) &&
        toks.size() != cols_.count)
      return;
    if (rows_done_) fail(lineno, 1, "garbled log: a result row after the end of its table");
    if (toks.size() != cols_.count) {
      fail(lineno, toks.back().column,
           fmt::format("garbled or truncated row: {} columns, the header at line {} has {}", toks.size(), header_line_,
                       cols_.count));
    }
    if (gpus_from_rows_) pending_.emplace_back(toks, lineno);
    else add_row(toks, lineno);
  }

  /// The GPU count of a table whose log says none (no '# Rank' lines, no 'nThread N nGpus M' header, no
  /// --gpus): the n from 1 to 4096 whose factor busbw/algbw (2(n−1)/n for all-reduce, (n−1)/n for
  /// all-gather, reduce-scatter) every row agrees with, to the printed digits of algbw and busbw, when
  /// exactly one n does; a factor that more n fit (broadcast and reduce: 1) or none asks for --gpus.
  int gpus_from_bandwidth_ratio() {
    std::optional<CollectiveOp> op = curve_.op;
    if (infer_op_)
      for (const auto& [t, line] : pending_)
        if (const double size = number(t[static_cast<std::size_t>(cols_.size)], line, "size"); size > 0) {
          op = infer_op(t, size);
          break;
        }
    struct Pair {
      double alg, bus, alg_half_ulp, bus_half_ulp;  // a row's printed algbw and busbw, and half their last digit
    };
    std::vector<Pair> pairs;
    for (const auto& [t, line] : pending_)
      for (auto [a, b] : {std::pair{cols_.algbw, cols_.busbw}, std::pair{cols_.algbw_ip, cols_.busbw_ip}}) {
        if (a < 0 || b < 0 || t[static_cast<std::size_t>(a)].text == "N/A") continue;
        const Token &alg = t[static_cast<std::size_t>(a)], &bus = t[static_cast<std::size_t>(b)];
        const Pair p{number(alg, line, "algbw"), number(bus, line, "busbw"), half_ulp(alg.text), half_ulp(bus.text)};
        if (p.alg > 0) pairs.push_back(p);
      }
    std::vector<int> fits;
    for (int n = 1; op && !pairs.empty() && n <= 4096 && fits.size() < 2; ++n) {
      const double f = bus_bandwidth_factor(*op, n);
      if (std::all_of(pairs.begin(), pairs.end(),
                      [&](const Pair& p) { return std::fabs(p.bus - p.alg * f) <= p.bus_half_ulp + p.alg_half_ulp * f + 1e-9; }))
        fits.push_back(n);
    }
    const std::string none = "no '# Rank ... device' lines and no 'nThread N nGpus M' header before the table";
    if (fits.size() != 1)
      fail(header_line_, 1,
           fmt::format("{}, and busbw/algbw {}: GPU count unknown (pass --gpus N [--nodes K], or rerun "
                       "and keep the whole output)",
                       none, fits.empty() ? "fits no GPU count" : fmt::format("fits {} and {} GPUs alike", fits[0], fits[1])));
    warn(header_line_,
         fmt::format("{}: taking {} GPUs, the only count whose busbw/algbw factor ({:.4g}) the rows give "
                     "(--gpus N [--nodes K] corrects this)",
                     none, fits[0], bus_bandwidth_factor(*op, fits[0])));
    return fits[0];
  }

  void start_table(const std::vector<Token>& toks, int lineno) {
    cols_ = read_columns(toks);
    header_line_ = lineno;
    rows_done_ = saw_out_of_bounds_ = false;
    passes_.clear();
    zero_rows_ = 0;
    last_size_ = -1;
    if (cols_.size < 0 || cols_.time < 0 || cols_.algbw < 0 || cols_.busbw < 0)
      fail(lineno, 1, "table header without size, time, algbw and busbw columns");
    // which collective: the log's own "<name>_perf" (a command line before the table) first, then the
    // file name; --op names a table that says nothing, and selects among tables that do.
    std::optional<CollectiveOp> op;
    const std::string perf = !last_perf_.empty() ? last_perf_ : file_perf_;
    if (!perf.empty()) {
      op = op_from_perf_name(perf);
      if (skip_unwanted_table(perf, op, lineno)) return;
    }
    if (hint_) op = hint_;
    infer_op_ = !op;  // the first row's size, count, type, redop and root will tell
    skip_table_ = false;
    const auto [gpus, nodes] = table_gpus(lineno);
    open_curve(op, gpus, nodes, lineno);
  }

  // alltoall, sendrecv, ... (a log of several tests may hold them): skipped, an error only when
  // nothing else is left; with --op, a table of another collective is skipped too
  bool skip_unwanted_table(const std::string& perf, std::optional<CollectiveOp> op, int lineno) {
    if (!((!op && !hint_) || (hint_ && op != hint_ && !last_perf_.empty()))) return false;
    if (!op && !hint_) unmodelled_.emplace_back(perf, lineno);
    else ++skipped_;
    skip_table_ = true;
    in_table_ = true;
    rows_done_ = false;
    header_line_ = lineno;
    return true;
  }

  /// How many GPUs and nodes a table ran on: the '# Rank' lines, else nThread·nGpus (0 GPUs: the rows
  /// will tell); --gpus and --nodes win.
  std::pair<int, int> table_gpus(int lineno) {
    int gpus = 0, nodes = 1;
    if (!ranks_.empty()) {
      std::tie(gpus, nodes) = gpus_from_ranks(lineno);
    } else if (threads_gpus_ > 0) {
      gpus = threads_gpus_;
      if (opt_.gpus == 0)
        warn(lineno, fmt::format("no '# Rank' lines: taking the GPU count {} from nThread·nGpus (one process)", gpus));
    }
    if (opt_.gpus > 0) gpus = opt_.gpus;
    if (opt_.nodes > 0) nodes = opt_.nodes;
    return {gpus, nodes};
  }

  std::pair<int, int> gpus_from_ranks(int lineno) {
    std::set<int> ids;
    std::set<std::string> hosts;
    int max_rank = 0, max_device = 0;
    for (const auto& r : ranks_) {
      ids.insert(r.rank);
      hosts.insert(r.host);
      max_rank = std::max(max_rank, r.rank);
      max_device = std::max(max_device, r.device);
      if (log_.gpu_name.empty()) log_.gpu_name = r.gpu;
      else if (r.gpu != log_.gpu_name) warn(lineno, fmt::format("mixed GPUs: '{}' and '{}'", log_.gpu_name, r.gpu));
    }
    int gpus = static_cast<int>(ids.size());
    int nodes = static_cast<int>(hosts.size());
    // NCCL takes a GPU once per communicator: ranks with the same host name and device index ran on
    // different machines that share a name (containers named "localhost")
    std::map<std::pair<std::string, int>, int> uses;
    int most = 0;
    for (const auto& r : ranks_) most = std::max(most, ++uses[{r.host, r.device}]);
    if (most > nodes) {
      if (opt_.nodes == 0)
        warn(lineno,
             fmt::format("{} ranks name the same host and device: taking {} nodes that share host names "
                         "(--nodes corrects this)",
                         most, most));
      nodes = most;
    }
    if (max_rank + 1 > gpus) {
      // A trimmed log ("only the last Rank line kept"): ranks 0..max exist, hosts of at least
      // max_device + 1 GPUs each.
      gpus = max_rank + 1;
      const int per_host = max_device + 1;
      nodes = std::max(1, (gpus + per_host - 1) / per_host);
      if (opt_.gpus == 0 || opt_.nodes == 0)
        warn(lineno,
             fmt::format("only {} of the '# Rank' lines are in the log (trimmed?): taking {} GPUs (ranks 0 to "
                         "{}) on {} host(s) of {} (device indices up to {}); --gpus and --nodes correct this",
                         ids.size(), gpus, max_rank, nodes, per_host, max_device));
    } else if (threads_gpus_ > 0 && gpus % threads_gpus_ != 0 && opt_.gpus == 0) {
      fail(lineno, 1,
           fmt::format("{} '# Rank' lines do not match the header's nThread·nGpus = {}: pass --gpus", gpus, threads_gpus_));
    }
    return {gpus, nodes};
  }

  void open_curve(std::optional<CollectiveOp> op, int gpus, int nodes, int lineno) {
    gpus_from_rows_ = gpus == 0;  // a trimmed log: its rows' busbw/algbw tell (gpus_from_bandwidth_ratio)
    pending_.clear();
    if (!gpus_from_rows_ && nodes > gpus)
      fail(lineno, 1, fmt::format("{} nodes for {} GPUs: each node runs at least one (check --gpus/--nodes)", nodes, gpus));
    curve_ = CollectiveCurve{};
    curve_.op = op.value_or(CollectiveOp::allreduce);
    curve_.gpus = gpus;
    curve_.nodes = nodes;
    curve_.source = fmt::format("{}:{}", name_, lineno);
    old_convention_ = std::nullopt;
    in_table_ = true;
    busbw_sum_ = 0;
    busbw_n_ = 0;
  }

  /// The collective a row of an unnamed table measures, from nccl-tests' own columns: size = count ×
  /// element size for all_reduce, broadcast and reduce (a root ≥ 0 for the last two, broadcast without a
  /// reduction), size = count × element size × GPUs for all_gather (no reduction) and reduce_scatter.
  std::optional<CollectiveOp> infer_op(const std::vector<Token>& t, double size) const {
    if (cols_.count_c < 0 || cols_.type < 0) return std::nullopt;
    static const std::map<std::string, double> word{{"int8", 1},     {"uint8", 1}, {"char", 1},    {"int32", 4},  {"uint32", 4},
                                                    {"int", 4},      {"int64", 8}, {"uint64", 8},  {"half", 2},   {"float16", 2},
                                                    {"bfloat16", 2}, {"float", 4}, {"float32", 4}, {"double", 8}, {"float64", 8},
                                                    {"f8e4m3", 1},   {"f8e5m2", 1}};
    const auto w = word.find(t[static_cast<std::size_t>(cols_.type)].text);
    double count = 0;
    const auto& ct = t[static_cast<std::size_t>(cols_.count_c)].text;
    if (w == word.end() || std::from_chars(ct.data(), ct.data() + ct.size(), count).ec != std::errc()) return std::nullopt;
    const std::string redop = cols_.redop >= 0 ? t[static_cast<std::size_t>(cols_.redop)].text : "";
    const bool reduces = !redop.empty() && redop != "none";
    const bool rooted = cols_.root >= 0 && t[static_cast<std::size_t>(cols_.root)].text != "-1";
    if (size == count * w->second) {
      if (rooted) return reduces ? CollectiveOp::reduce : CollectiveOp::broadcast;
      if (reduces) return CollectiveOp::allreduce;
      return std::nullopt;
    }
    if (size == count * w->second * curve_.gpus && !rooted)
      return reduces ? CollectiveOp::reducescatter : CollectiveOp::allgather;
    return std::nullopt;
  }

  /// A row's time in µs from one group of columns (out-of-place or in-place), its algbw and busbw
  /// checked against size/time; nothing where the group is absent or, if optional, "N/A".
  std::optional<double> read_group(const std::vector<Token>& t, int lineno, double size, int time_c, int alg_c, int bus_c,
                                   int wrong_c, bool optional) {
    const auto at = [&](int i) -> const Token& { return t[static_cast<std::size_t>(i)]; };
    if (time_c < 0) return std::nullopt;
    if (optional && at(time_c).text == "N/A") return std::nullopt;
    const double us = number(at(time_c), lineno, "time");
    if (us <= 0) fail(lineno, at(time_c).column, "garbled row: a time must be greater than zero");
    const double alg = number(at(alg_c), lineno, "algbw");
    const double bus = number(at(bus_c), lineno, "busbw");
    // What the row's size and time give, and how far printing can move it: the time is printed with
    // 2, 1 or 0 decimals (a relative error up to half its last place over its value), algbw and busbw
    // with 2 (an absolute error up to 0.005 GB/s); 0.2 % more for the averaging over ranks.
    const double rate = size / (us * 1e-6) / 1e9;  // GB/s, GB = 10^9 B
    const double rel = half_ulp(at(time_c).text) / us + 2e-3;
    auto agrees = [&](double printed, const Token& tok, double expected) {
      return std::fabs(printed - expected) <= half_ulp(tok.text) * 1.001 + 1e-9 + rel * expected;
    };
    const double factor = bus_bandwidth_factor(curve_.op, curve_.gpus);
    const bool gather = curve_.op == CollectiveOp::allgather || curve_.op == CollectiveOp::reducescatter;
    const bool now = agrees(alg, at(alg_c), rate) && agrees(bus, at(bus_c), rate * factor);
    // nccl-tests before mid-2020: algbw = busbw = S·(n−1)/n / t for all_gather and reduce_scatter
    const bool old = gather && agrees(alg, at(alg_c), rate * factor) && agrees(bus, at(bus_c), rate * factor);
    if (now != old) {  // a row where the two conventions differ by more than printing can explain
      if (old_convention_ && *old_convention_ != old)
        fail(lineno, at(alg_c).column,
             fmt::format("algbw {} GB/s follows the {} convention, rows above the other one (garbled log?)", at(alg_c).text,
                         old ? "pre-2020 (S·(n−1)/n / t)" : "current (S/t)"));
      if (!old_convention_ && old)
        warn(lineno,
             fmt::format("{} table of nccl-tests before mid-2020 (algbw = busbw = S·(n−1)/n / t): read as such",
                         to_string(curve_.op)));
      old_convention_ = old;
    }
    if (!now && !old) {
      if (!agrees(alg, at(alg_c), rate) && !(gather && agrees(alg, at(alg_c), rate * factor)))
        fail(lineno, at(alg_c).column,
             fmt::format("algbw {} GB/s disagrees with size/time = {:.2f} GB/s (garbled row?)", at(alg_c).text, rate));
      fail(lineno, at(bus_c).column,
           fmt::format("busbw {} GB/s is not size/time × {:.4g} (the {} factor for {} GPUs) = {:.2f} GB/s: the log is "
                       "for another GPU count (--gpus N corrects it) or the row is garbled",
                       at(bus_c).text, factor, to_string(curve_.op), curve_.gpus, rate * factor));
    }
    if (wrong_c >= 0 && at(wrong_c).text != "N/A") {
      const double wrong = number(at(wrong_c), lineno, "#wrong/error");
      if (cols_.wrong_is_error ? wrong > 1e-3 : wrong > 0)
        warn(lineno, fmt::format("result validation failed on this row ({}); its time is kept", at(wrong_c).text));
    }
    busbw_sum_ += bus;
    ++busbw_n_;
    return us;
  }

  void add_row(const std::vector<Token>& t, int lineno) {
    if (skip_table_) return;
    const auto at = [&](int i) -> const Token& { return t[static_cast<std::size_t>(i)]; };
    const double size = number(at(cols_.size), lineno, "size");
    if (size < 0 || size != std::floor(size))
      fail(lineno, at(cols_.size).column, "garbled row: the size must be a whole number of bytes");
    last_size_ = size;
    if (infer_op_ && size > 0) {
      const auto op = infer_op(t, size);
      if (!op)
        fail(header_line_, 1,
             "cannot tell which collective this table measures: name the file after the test "
             "(e.g. all_reduce_perf.log) or pass --op");
      curve_.op = *op;
      infer_op_ = false;
      warn(lineno, fmt::format("the log does not name its test: the columns say {} (--op says otherwise)", to_string(*op)));
    }
    if (size == 0) {  // no bytes moved: nothing to learn about bandwidth, and algbw = busbw = 0
      for (int c : {cols_.busbw, cols_.busbw_ip})
        if (c >= 0 && at(c).text != "N/A") {
          busbw_sum_ += number(at(c), lineno, "busbw");
          ++busbw_n_;
        }
      ++zero_rows_;
      return;
    }
    CollectivePoint p;
    p.size = bytes(size);
    p.time = microseconds(*read_group(t, lineno, size, cols_.time, cols_.algbw, cols_.busbw, cols_.wrong, false));
    if (cols_.time_ip >= 0) {
      if (cols_.algbw_ip < 0 || cols_.busbw_ip < 0) fail(header_line_, 1, "in-place columns without algbw/busbw");
      if (auto ip = read_group(t, lineno, size, cols_.time_ip, cols_.algbw_ip, cols_.busbw_ip, cols_.wrong_ip, true))
        p.time_in_place = microseconds(*ip);
    }
    // Sizes grow along a sweep; a smaller size, or another data type or reduction, starts the next sweep
    // of the same table (nccl-tests -d all, -o all, -N).
    const std::string type = cols_.type >= 0 ? at(cols_.type).text : "", redop = cols_.redop >= 0 ? at(cols_.redop).text : "";
    if (passes_.empty() || passes_.back().type != type || passes_.back().redop != redop ||
        p.size < passes_.back().points.back().size)
      passes_.push_back(Pass{type, redop, lineno, {}});
    else if (p.size == passes_.back().points.back().size)
      fail(lineno, at(cols_.size).column, fmt::format("size {} appears twice in one table", size));
    passes_.back().points.push_back(p);
  }

  /// The sweep a table stands for when it holds several: nccl-tests' default (float, sum), else the
  /// first in float, else the first; said in a warning.
  const Pass& chosen_pass(int lineno) {
    if (passes_.size() == 1) return passes_.front();
    auto it = std::find_if(passes_.begin(), passes_.end(), [](const Pass& p) {
      return p.type == "float" && (p.redop == "sum" || p.redop == "none" || p.redop.empty());
    });
    if (it == passes_.end()) it = std::find_if(passes_.begin(), passes_.end(), [](const Pass& p) { return p.type == "float"; });
    if (it == passes_.end()) it = passes_.begin();
    warn(lineno,
         fmt::format("the table at line {} holds {} sweeps of sizes (nccl-tests -d all, -o all or -N): kept the "
                     "one from line {}{}",
                     header_line_, passes_.size(), it->first_line,
                     it->type.empty() ? "" : fmt::format(" ({}{})", it->type, it->redop.empty() ? "" : " " + it->redop)));
    return *it;
  }

  void finish_table(int lineno, const std::string& avg_text) {
    if (!in_table_) return;
    if (skip_table_) {
      in_table_ = skip_table_ = rows_done_ = false;
      return;
    }
    if (gpus_from_rows_ && !pending_.empty()) {
      curve_.gpus = gpus_from_bandwidth_ratio();
      if (curve_.nodes > curve_.gpus)
        fail(header_line_, 1,
             fmt::format("{} nodes for {} GPUs: each node runs at least one (check --gpus/--nodes)", curve_.nodes, curve_.gpus));
      gpus_from_rows_ = false;
      for (const auto& [t, line] : pending_) add_row(t, line);
      pending_.clear();
    }
    if (infer_op_ && !passes_.empty())
      fail(header_line_, 1,
           "cannot tell which collective this table measures: name the file after the test "
           "(e.g. all_reduce_perf.log) or pass --op");
    if (passes_.empty())
      fail(lineno, 1,
           fmt::format("the table at line {} has no rows{}: rerun the test and keep its whole output", header_line_,
                       zero_rows_ > 0 ? " of more than 0 bytes" : ""));
    double avg = 0;
    auto [p, ec] = std::from_chars(avg_text.data(), avg_text.data() + avg_text.size(), avg);
    if (ec == std::errc() && busbw_n_ > 0) {
      const double mean = busbw_sum_ / static_cast<double>(busbw_n_);
      if (std::fabs(mean - avg) > 0.05 + 0.02 * avg)
        warn(lineno,
             fmt::format("'# Avg bus bandwidth' {} differs from the mean busbw of the rows ({:.4g}): rows missing?", avg_text,
                         mean));
    }
    curve_.points = chosen_pass(lineno).points;
    curve_.gpus_per_thread = gpus_per_thread_;
    if (gpus_per_thread_ > 1)
      warn(header_line_,
           fmt::format("one thread drove {} GPUs (nGpus {}): the times hold the host's issue of {} of them, "
                       "which predictions take out (gpus_per_thread in the calibration)",
                       gpus_per_thread_, gpus_per_thread_, gpus_per_thread_ - 1));
    std::sort(curve_.points.begin(), curve_.points.end(), [](auto& a, auto& b) { return a.size < b.size; });
    try {
      curve_.fit = fit_alpha_beta(curve_.points);
    } catch (const std::invalid_argument& e) {
      warn(lineno, fmt::format("no alpha-beta fit for this table: {}", e.what()));
    }
    for (const auto& c : log_.curves)
      if (c.op == curve_.op && c.gpus == curve_.gpus && c.nodes == curve_.nodes)
        fail(header_line_, 1,
             fmt::format("a second {} table on {} GPUs ({} node(s)) in one log; the first is at {}", to_string(c.op), c.gpus,
                         c.nodes, c.source));
    log_.curves.push_back(curve_);
    in_table_ = false;
    rows_done_ = false;
    passes_.clear();
  }

  /// '# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) ...': where the sweep ends.
  void read_sweep(const std::string& line) {
    static const std::regex sweep(R"(maxBytes\s+(\d+)\s+step:\s*(\d+)\((factor|bytes)\))");
    std::smatch m;
    max_bytes_ = step_factor_ = step_bytes_ = 0;
    if (!std::regex_search(line, m, sweep)) return;
    const auto max = whole_number(m[1].str(), 1, 1LL << 50), step = whole_number(m[2].str(), 1, 1LL << 50);
    if (!max || !step) return;
    max_bytes_ = static_cast<double>(*max);
    (m[3].str() == "factor" ? step_factor_ : step_bytes_) = static_cast<double>(*step);
  }

  /// Whether the last row is the last size of the announced sweep: the next size (× factor, + bytes)
  /// would pass maxBytes. (all_gather and reduce_scatter print sizes rounded down to whole elements per
  /// GPU, which never carries a size past the next step.)
  [[nodiscard]] bool sweep_complete() const {
    if (max_bytes_ <= 0 || last_size_ < 0) return false;
    if (step_factor_ > 1) return last_size_ * step_factor_ > max_bytes_;
    if (step_bytes_ > 0) return last_size_ + step_bytes_ > max_bytes_;
    return false;
  }

  /// A table that stops before its '# Avg bus bandwidth' line (at the end of the log, or at the next
  /// test's header): complete when its '# Out of bounds values' line came or its rows reach the end of
  /// the sweep the '# nThread' line announced (a copy that left out the trailer; a warning); otherwise the
  /// log was cut: an error that says what to rerun.
  void close_unfinished_table(int lineno) {
    if (skip_table_) {
      in_table_ = skip_table_ = rows_done_ = false;
      return;
    }
    if (!passes_.empty() && (saw_out_of_bounds_ || sweep_complete())) {
      warn(lineno,
           fmt::format("the table at line {} has no '# Avg bus bandwidth' line, but {}: read as complete", header_line_,
                       saw_out_of_bounds_ ? "its '# Out of bounds values' line follows the rows"
                                          : "its rows reach the end of the sweep (maxBytes)"));
      finish_table(lineno, "");
      return;
    }
    const std::string what = max_bytes_ > 0 && last_size_ >= 0
        ? fmt::format("its last row is {:.0f} B of a sweep to {:.0f} B (maxBytes)", last_size_, max_bytes_)
        : std::string("no '# Avg bus bandwidth' line after the last row");
    fail(lineno, 1,
         fmt::format("the log ends inside a table (truncated?): {}; rerun the test and keep its whole output, "
                     "from the '# nThread' line to '# Avg bus bandwidth'",
                     what));
  }

  void end_table_if_open(int lineno) {
    if (!in_table_) return;
    if (skip_table_ || (!passes_.empty() && (saw_out_of_bounds_ || sweep_complete()))) {
      close_unfinished_table(lineno);
      return;
    }
    fail(lineno, 1,
         fmt::format("the table at line {} ends without its '# Avg bus bandwidth' line (truncated log?): "
                     "rerun the test and keep its whole output",
                     header_line_));
  }

  std::string name_;
  std::optional<CollectiveOp> hint_;
  NcclTestsImport opt_;
  bool skip_table_ = false;  // a table of another collective than --op
  bool infer_op_ = false;    // no name for this table's collective yet: its first row tells
  int skipped_ = 0;
  std::optional<bool> old_convention_;  // this table's algbw convention, once a row tells
  std::string last_perf_, file_perf_;
  NcclTestsLog log_;
  int threads_gpus_ = 0;
  int gpus_per_thread_ = 1;  // nGpus of the '# nThread' line: GPUs one thread issues each call on
  std::vector<Rank> ranks_;
  bool gpus_from_rows_ = false;                              // this table's GPU count waits for its rows
  std::vector<std::pair<std::vector<Token>, int>> pending_;  // those rows and their line numbers
  Columns cols_;
  int header_line_ = 0;
  bool in_table_ = false, rows_done_ = false;
  CollectiveCurve curve_;
  std::vector<Pass> passes_;
  int zero_rows_ = 0;                                        // rows of size 0 in this table
  double last_size_ = -1;                                    // the size of this table's last row
  bool saw_out_of_bounds_ = false;                           // its '# Out of bounds values' line
  double max_bytes_ = 0, step_factor_ = 0, step_bytes_ = 0;  // the sweep '# nThread' announced
  std::vector<std::pair<std::string, int>> unmodelled_;      // tables of alltoall, sendrecv, ...: name, line
  double busbw_sum_ = 0;
  int busbw_n_ = 0;
};

}  // namespace

NcclTestsLog parse_nccl_tests(const std::string& text, const std::string& display_name, std::optional<CollectiveOp> op_hint) {
  return parse_nccl_tests(text, display_name, NcclTestsImport{op_hint, 0, 0});
}
NcclTestsLog parse_nccl_tests(const std::string& text, const std::string& display_name, const NcclTestsImport& options) {
  const auto streams = streams_of(read_lines(text));
  if (streams.size() == 1) return Parser(display_name, options).run(streams.front());
  // pdsh: the same test on each host; the first host's curves, the others' said in a warning
  NcclTestsLog all;
  for (const auto& stream : streams) {
    NcclTestsLog log = Parser(display_name, options).run(stream);
    all.warnings.insert(all.warnings.end(), log.warnings.begin(), log.warnings.end());
    if (all.gpu_name.empty()) all.gpu_name = log.gpu_name;
    if (all.nccl_version.empty()) all.nccl_version = log.nccl_version;
    for (auto& c : log.curves) {
      const auto same = std::find_if(all.curves.begin(), all.curves.end(), [&](const CollectiveCurve& k) {
        return k.op == c.op && k.gpus == c.gpus && k.nodes == c.nodes;
      });
      if (same == all.curves.end()) {
        all.curves.push_back(std::move(c));
      } else {
        all.warnings.push_back(
            fmt::format("{}: {} on {} GPUs measured again by '{}' (each host or rank ran the test): "
                        "kept the one at {}",
                        c.source, to_string(c.op), c.gpus, stream.front().stream, same->source));
      }
    }
  }
  return all;
}

Calibration import_nccl_tests(std::span<const std::filesystem::path> logs, std::optional<CollectiveOp> op_hint,
                              std::vector<std::string>* warnings) {
  return import_nccl_tests(logs, NcclTestsImport{op_hint, 0, 0}, warnings);
}

Calibration import_nccl_tests(std::span<const std::filesystem::path> logs, const NcclTestsImport& options,
                              std::vector<std::string>* warnings) {
  Calibration cal;
  cal.provenance.tool = "dlscale calibrate import nccl-tests";
  for (const auto& file : logs) {
    NcclTestsLog log = parse_nccl_tests(read_input_file(file), file.string(), options);
    if (warnings) warnings->insert(warnings->end(), log.warnings.begin(), log.warnings.end());
    if (!log.gpu_name.empty()) {
      if (cal.gpu.empty()) cal.gpu = log.gpu_name;
      else if (gpu_family(cal.gpu) != gpu_family(log.gpu_name))
        throw InputError(SourceLocation{file.string(), 0, 0}, "",
                         fmt::format("measured on '{}' but an earlier log was measured on '{}': import them into "
                                     "separate calibration files",
                                     log.gpu_name, cal.gpu));
    }
    if (!log.nccl_version.empty()) {
      if (cal.provenance.nccl.empty()) cal.provenance.nccl = log.nccl_version;
      else if (cal.provenance.nccl != log.nccl_version && warnings)
        warnings->push_back(
            fmt::format("{}: NCCL {} while an earlier log used NCCL {}", file.string(), log.nccl_version, cal.provenance.nccl));
    }
    for (auto& c : log.curves) {
      if (const auto* prev = cal.find_curve(c.op, c.gpus, c.nodes))
        throw InputError(SourceLocation{file.string(), 0, 0}, "",
                         fmt::format("{} on {} GPUs ({} node(s)) was already imported from {}", to_string(c.op), c.gpus, c.nodes,
                                     prev->source));
      cal.collectives.push_back(std::move(c));
    }
    cal.provenance.sources.push_back(file.string());
  }
  std::sort(cal.collectives.begin(), cal.collectives.end(), [](const auto& a, const auto& b) {
    return std::tuple(static_cast<int>(a.op), a.nodes, a.gpus) < std::tuple(static_cast<int>(b.op), b.nodes, b.gpus);
  });
  return cal;
}

}  // namespace dlscale
