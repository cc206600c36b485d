// The NCCL model against real nccl-tests logs (issue 14, item 4). The logs are public ones that users
// posted (tests/data/real-inputs/nccl-tests, byte-identical copies of shared/data/real-inputs/nccl-tests;
// sources in docs/topology.md "Against real nccl-tests logs"). For each log whose machine a shipped
// topology describes, the predicted time of one operation as nccl-tests measures it is compared with the
// measured (out-of-place) time at 8 B, 64 KiB, 1 MiB, 32 MiB and the largest size the log has.
//
// The expected values are the measurements themselves: the test asserts the model's error against them
// (25 %, the issue's bound) where the note in docs/topology.md says the machine is modelled, and prints
// the whole table (the one in docs/topology.md) so that anyone can rerun it:
//   build/bin/nccl_logs_test --gtest_filter='*PrintsTheTable*'
//
// The logs are read by a small tolerant reader of this file, not by lib/calibration/nccl_tests.cpp: the
// logs carry mpirun tags, NCCL INFO lines inside the table, several collectives per file, size-0 rows and
// the 2019/2020 layouts, which that importer is being taught separately (issue 15).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "dlscale/collective.hpp"
#include "dlscale/io.hpp"
#include "dlscale/topology.hpp"
#include "nccl/model.hpp"

namespace dlscale {
namespace {

// ---- a tolerant nccl-tests reader -------------------------------------------------------------------
struct Row {
  double bytes = 0;
  double time_us = 0;  // out-of-place
};
struct Series {
  CollectiveOp op = CollectiveOp::allreduce;
  std::string op_name = "all_reduce";
  int gpus_per_thread = 1;  // nccl-tests -g
  std::vector<Row> rows;
};

std::optional<CollectiveOp> op_of(const std::string& name) {
  if (name == "all_reduce") return CollectiveOp::allreduce;
  if (name == "all_gather") return CollectiveOp::allgather;
  if (name == "reduce_scatter") return CollectiveOp::reducescatter;
  if (name == "broadcast") return CollectiveOp::broadcast;
  if (name == "reduce") return CollectiveOp::reduce;
  return std::nullopt;
}

bool is_integer(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

/// Every series of a log: a new one starts at each `X_perf` command line or `# nThread` header.
std::vector<Series> read_log(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  const std::regex tag(R"(^\[\d+,\d+\]<std(out|err)>:)");
  const std::regex perf(R"((all_reduce|all_gather|reduce_scatter|broadcast|reduce)_perf)");
  const std::regex header(R"(^# nThread (\d+) nGpus (\d+))");
  std::vector<Series> out;
  Series cur;
  std::string pending_op = "all_reduce";
  std::optional<std::size_t> time_col;  // index of the first `time` column in the last header row
  auto flush = [&] {
    if (!cur.rows.empty()) out.push_back(cur);
    cur.rows.clear();
  };
  for (std::string line; std::getline(in, line);) {
    line = std::regex_replace(line, tag, "");
    std::smatch m;
    if (std::regex_search(line, m, perf)) pending_op = m[1];
    if (std::regex_search(line, m, header)) {
      flush();
      cur.op_name = pending_op;
      cur.op = *op_of(pending_op);
      cur.gpus_per_thread = std::stoi(m[2]);
      continue;
    }
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string s; words >> s;) w.push_back(s);
    if (w.size() > 3 && w[0] == "#" && w[1] == "size") {  // column names: '#', size, count, type, …
      for (std::size_t i = 2; i < w.size(); ++i)
        if (w[i] == "time") {
          time_col = i - 1;
          break;
        }
      continue;
    }
    if (w.size() < 5 || !is_integer(w[0]) || !is_integer(w[1]) || !time_col || *time_col >= w.size()) continue;
    if (cur.rows.empty() && out.empty() && cur.op_name != pending_op) {  // a log without a `# nThread` line
      cur.op_name = pending_op;
      cur.op = *op_of(pending_op);
    }
    cur.rows.push_back({std::stod(w[0]), std::stod(w[*time_col])});
  }
  flush();
  return out;
}

// ---- the comparison ---------------------------------------------------------------------------------
std::string log_path(const std::string& file) { return std::string(DLSCALE_TEST_DATA_DIR) + "/real-inputs/nccl-tests/" + file; }

/// A measured point the model does not reach within the bound, with the reason (docs/topology.md).
struct Known {
  std::string op;
  double min_bytes = 0;  // the rows of `op` in [min_bytes, max_bytes]
  double max_bytes = 1e30;
  std::string why;
};

struct LogCase {
  std::string file;
  std::string cluster;  // empty: no shipped topology describes the machine
  GpuPlacement where;
  std::vector<Known> known;
};

constexpr double kBound = 0.25;  // issue 14: each point within 25 %

const std::vector<LogCase>& cases() {
  static const std::vector<LogCase> c = {
      // 8 × V100-SXM2 in a hybrid cube-mesh like the DGX-1's; nccl-tests -g 8 (one thread), NCCL of 2019.
      {"allreduce-v100-sxm2-8gpu-2019.txt", "dgx1v", {8, 1, 8}, {}},
      // DGX-2, 12 of its 16 GPUs; nccl-tests -g 12 (one thread), NCCL of early 2020.
      {"dgx2-12gpu-five-collectives-2020.txt",
       "dgx2",
       {12, 1, 12},
       {{"all_gather", 33554400, 1e30, "measured busbw 50-60 % of the same GPUs' all-reduce"},
        {"reduce_scatter", 33554400, 1e30, "measured busbw 50-60 % of the same GPUs' all-reduce"},
        {"all_reduce", 1048576, 1048576,
         "less the 52.8 µs of issue, the log's 1 MiB took 36 µs: twice as fast as 2.30's LL there"}}},
      // OCI BM.GPU.H100.8 × 2 (RoCE, 16 × 200 Gb/s per node; dgx-h100-ndr has the same 400 GB/s per node).
      {"allreduce-h100-oci-bmgpuh100-2node.txt", "dgx-h100-ndr", {16, 2, 8}, {}},
      {"allreduce-t4-g4dn-efa-2node-tagged.txt", "", {2, 2, 1}, {}},
      // GB200 NVL72, one rack: 72 GPUs in one NVLink domain, one process per GPU (the log keeps only its
      // last "Rank 71" line). Its busbw climbs until 4 GiB: 0.5 ms more than the 4-8 GiB slope at 512 MiB to
      // 2 GiB, which no constant of NCCL's cost model gives (NVLS there has a 25 µs latency).
      {"allreduce-gb200-nvl72-trimmed-coreweave.txt",
       "gb200-nvl72",
       {72, 1, 72},
       {{"all_reduce", 536870912, 536870912, "measured busbw climbs to 4 GiB (0.5 ms above the 4-8 GiB slope below it)"}}},
  };
  return c;
}

const Known* known_miss(const LogCase& c, const std::string& op, double bytes) {
  for (const auto& k : c.known)
    if (k.op == op && bytes >= k.min_bytes && bytes <= k.max_bytes) return &k;
  return nullptr;
}

const Topology& topo(const std::string& name) {
  static std::map<std::string, Cluster> cache;
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, load_cluster(resolve(DataKind::cluster, name, "--cluster"))).first;
  return *it->second.topology;
}

/// The measured rows nearest to 8 B, 64 KiB, 1 MiB, 32 MiB (within 10 %: all-gather sizes are multiples
/// of ranks × 4 B) and the largest row.
std::vector<Row> probe_rows(const Series& s) {
  std::vector<Row> out;
  // The smallest size with data (8 B, or ranks × 4 B for all-gather and reduce-scatter).
  for (const auto& r : s.rows)
    if (r.bytes >= 8) {
      out.push_back(r);
      break;
    }
  for (double target : {65536.0, 1048576.0, 33554432.0}) {
    const Row* best = nullptr;
    for (const auto& r : s.rows)
      if (r.bytes > 0 && std::abs(r.bytes / target - 1) <= 0.1 &&
          (!best || std::abs(r.bytes - target) < std::abs(best->bytes - target)))
        best = &r;
    if (best && (out.empty() || best->bytes > out.back().bytes)) out.push_back(*best);
  }
  if (!s.rows.empty() && (out.empty() || s.rows.back().bytes > out.back().bytes * 1.1)) out.push_back(s.rows.back());
  return out;
}

struct Compared {
  std::string file, op, cluster;
  double bytes = 0, measured_us = 0, predicted_us = 0;
  std::string how;     // algorithm/protocol
  double host_us = 0;  // the host issue that nccl_tests_time adds: (k − 1) launches
  double error() const { return predicted_us / measured_us - 1; }
};

/// The probed rows of one series, measured against the model.
std::vector<Compared> compare(const LogCase& c, const Series& s) {
  std::vector<Compared> out;
  for (const auto& r : probe_rows(s)) {
    Compared x{c.file, s.op_name, c.cluster, r.bytes, r.time_us, 0, ""};
    if (!c.cluster.empty()) {
      const auto& table = nccl::default_table();
      const auto ch = nccl::choose(topo(c.cluster), table, s.op, bytes(r.bytes), c.where);
      x.predicted_us = in_us(nccl::nccl_tests_time(ch.time, table, s.gpus_per_thread));
      x.host_us = in_us(nccl::issue_before_last(table, s.gpus_per_thread));
      x.how = fmt::format("{}/{}", nccl::algorithm_name(ch.algorithm), nccl::protocol_name(ch.protocol));
    }
    out.push_back(x);
  }
  return out;
}

std::vector<Compared> compare(const LogCase& c) {
  std::vector<Compared> out;
  for (const auto& s : read_log(log_path(c.file))) {
    const auto some = compare(c, s);
    out.insert(out.end(), some.begin(), some.end());
  }
  return out;
}

std::string size_text(double b) {
  if (b >= 1073741824.0 && std::fmod(b, 1073741824.0) == 0) return fmt::format("{} GiB", b / 1073741824.0);
  if (b >= 1048576.0 && std::fmod(b, 1048576.0) == 0) return fmt::format("{} MiB", b / 1048576.0);
  if (b >= 1024.0 && std::fmod(b, 1024.0) == 0) return fmt::format("{} KiB", b / 1024.0);
  return fmt::format("{} B", b);
}

TEST(NcclLogs, ReaderFindsEveryCollectiveAndItsLayout) {
  // Counted by hand in the files: the DGX-2 log has five collectives of 8 B–8 GiB (31 rows each with the
  // size-0 rows of all_gather and reduce_scatter: 3 + 28); the T4 log's 31 tagged rows (0, 0, then 4 B … 1 GiB: 2 + 29).
  const auto dgx2 = read_log(log_path("dgx2-12gpu-five-collectives-2020.txt"));
  ASSERT_EQ(dgx2.size(), 5u);
  EXPECT_EQ(dgx2[0].op_name, "all_gather");
  EXPECT_EQ(dgx2[4].op_name, "reduce_scatter");
  EXPECT_EQ(dgx2[1].gpus_per_thread, 12);
  EXPECT_EQ(dgx2[1].rows.front().bytes, 8.0);
  EXPECT_DOUBLE_EQ(dgx2[1].rows.front().time_us, 61.03);
  EXPECT_DOUBLE_EQ(dgx2[0].rows.back().time_us, 106773.0);
  const auto t4 = read_log(log_path("allreduce-t4-g4dn-efa-2node-tagged.txt"));
  ASSERT_EQ(t4.size(), 1u);
  EXPECT_EQ(t4[0].rows.size(), 31u);
  EXPECT_DOUBLE_EQ(t4[0].rows[3].time_us, 64.88);  // 8 B
  const auto v100 = read_log(log_path("allreduce-v100-sxm2-8gpu-2019.txt"));
  ASSERT_EQ(v100.size(), 1u);
  EXPECT_DOUBLE_EQ(v100[0].rows.back().time_us, 1818.8);  // the 2019 layout: no root column
}

TEST(NcclLogs, EveryModelledPointIsWithinTwentyFivePercent) {
  int checked = 0;
  for (const auto& c : cases()) {
    if (c.cluster.empty()) continue;
    for (const auto& x : compare(c)) {
      if (const Known* k = known_miss(c, x.op, x.bytes)) {
        // Kept honest: a known miss that the model starts to meet must leave the list (and the note).
        EXPECT_GT(std::abs(x.error()), kBound) << x.file << " " << x.op << " " << x.bytes << " B now fits: " << k->why;
        continue;
      }
      EXPECT_LE(std::abs(x.error()), kBound) << x.file << " " << x.op << " " << x.bytes << " B: measured " << x.measured_us
                                             << " µs, predicted " << x.predicted_us << " µs (" << x.how << ")";
      ++checked;
    }
  }
  EXPECT_EQ(checked, 28);  // V100 5 of 5, DGX-2 20 of 25, H100 2 (1 GiB and 16 GiB), GB200 1 of 2 (8 GiB)
}

// Every row of the two single-thread logs (nccl-tests -g 8 and -g 12), not only the probed sizes, but the
// all_gather/reduce_scatter rows from 32 MiB (their bandwidth, a known miss above): the issue of the first
// k − 1 GPUs added to NCCL's time fits them better than the issue and the device overlapping,
// max(k × 5 µs, NCCL's time), which is what the model said before (docs/topology.md).
TEST(NcclLogs, WholeCurvesOfTheSingleThreadLogs) {
  const auto& table = nccl::default_table();
  double now = 0, overlapped = 0;
  int rows = 0, now15 = 0, overlapped15 = 0;
  for (const auto& c : cases()) {
    if (c.cluster.empty() || c.where.gpus_per_node == 1) continue;
    for (const auto& s : read_log(log_path(c.file))) {
      if (s.gpus_per_thread < 2) continue;
      for (const auto& r : s.rows) {
        if (r.bytes <= 0 || ((s.op == CollectiveOp::allgather || s.op == CollectiveOp::reducescatter) && r.bytes >= 33554400))
          continue;
        const auto ch = nccl::choose(topo(c.cluster), table, s.op, bytes(r.bytes), c.where);
        const double a = std::abs(in_us(nccl::nccl_tests_time(ch.time, table, s.gpus_per_thread)) / r.time_us - 1);
        const double b = std::abs(std::max(5.0 * s.gpus_per_thread, in_us(ch.time)) / r.time_us - 1);
        now += a;
        overlapped += b;
        now15 += a <= 0.15;
        overlapped15 += b <= 0.15;
        ++rows;
      }
    }
  }
  ASSERT_EQ(rows, 156);  // hand count: V100 25 sizes (8 B-128 MiB); DGX-2 31 (8 B-8 GiB) of all_reduce, broadcast
                         // and reduce, 19 (48 B-16 MiB) of all_gather and reduce_scatter
  std::printf("single-thread logs, %d rows: mean |error| %.1f %% (%d within 15 %%); issue and device overlapping: %.1f %% (%d)\n",
              rows, 100 * now / rows, now15, 100 * overlapped / rows, overlapped15);
  EXPECT_LT(now, overlapped);
  EXPECT_GT(now15, overlapped15);
}

TEST(NcclLogs, PrintsTheTable) {
  std::cout << "| log | collective | size | measured (µs) | predicted (µs) | error | NCCL choice (predicted) |\n"
               "|---|---|---|---|---|---|---|\n";
  for (const auto& c : cases())
    for (const auto& x : compare(c)) {
      const Known* k = known_miss(c, x.op, x.bytes);
      std::cout << fmt::format("| {} | {} | {} | {:.1f} | {} | {}{} | {} |\n", x.file, x.op, size_text(x.bytes), x.measured_us,
                               x.cluster.empty() ? "–" : fmt::format("{:.1f}", x.predicted_us),
                               x.cluster.empty() ? "no topology" : fmt::format("{:+.0f} %", 100 * x.error()),
                               k ? " (" + k->why + ")" : "",
                               x.how + (x.host_us > 0 ? fmt::format(" + {:.1f} µs issue", x.host_us) : ""));
    }
}

// Issue 35: per size class, the geometric mean over every modelled series (one log's one collective) of
// predicted / measured: the time of the smallest size (8 B where the log starts there; its first row
// otherwise), the time at 1 MiB, and the bus bandwidth of the largest size (measured time / predicted
// time). The 15 % bound holds for the points that are not known misses (cases(): each with its reason in
// docs/topology.md); the geometric mean with them is printed beside it. Every log of shared/data/real-inputs/nccl-tests must be
// one of cases(): a new log there fails this test until it is modelled or listed without a topology (and the reason in
// docs/topology.md).
TEST(NcclLogs, GeomeanPerSizeClassIsWithinFifteenPercent) {
  const std::filesystem::path shared =
      std::filesystem::path(DLSCALE_SOURCE_DIR) / ".." / "shared" / "data" / "real-inputs" / "nccl-tests";
  if (std::filesystem::is_directory(shared)) {
    for (const auto& f : std::filesystem::directory_iterator(shared)) {
      bool listed = false;
      for (const auto& c : cases()) listed = listed || c.file == f.path().filename().string();
      EXPECT_TRUE(listed) << f.path() << " is a shared nccl-tests log that tests/nccl_logs_test.cpp does not compare";
      std::ifstream a(f.path()), b(log_path(f.path().filename().string()));
      const std::string sa((std::istreambuf_iterator<char>(a)), {}), sb((std::istreambuf_iterator<char>(b)), {});
      EXPECT_EQ(sa, sb) << f.path() << " differs from its copy in tests/data/real-inputs/nccl-tests";
    }
  }
  struct Class {
    std::string name;
    double log_sum = 0, log_sum_all = 0;
    int n = 0, n_all = 0;
  };
  std::array<Class, 3> classes{{{"smallest size, time"}, {"1 MiB, time"}, {"largest size, busbw"}}};
  std::cout << "| log | collective | smallest | 1 MiB | largest (busbw) |\n|---|---|---|---|---|\n";
  for (const auto& c : cases()) {
    if (c.cluster.empty()) continue;
    for (const auto& s : read_log(log_path(c.file))) {
      const auto rows = compare(c, s);
      ASSERT_FALSE(rows.empty());
      std::array<std::string, 3> cell{"–", "–", "–"};
      auto add = [&](std::size_t k, double ratio, double bytes) {
        const Known* miss = known_miss(c, s.op_name, bytes);
        classes[k].log_sum_all += std::log(ratio);
        ++classes[k].n_all;
        if (!miss) {
          classes[k].log_sum += std::log(ratio);
          ++classes[k].n;
        }
        cell[k] = fmt::format("{:.2f} ({}){}", ratio, size_text(bytes), miss ? ", known miss" : "");
      };
      add(0, rows.front().predicted_us / rows.front().measured_us, rows.front().bytes);
      for (const auto& x : rows)
        if (std::abs(x.bytes / 1048576.0 - 1) <= 0.1) add(1, x.predicted_us / x.measured_us, x.bytes);
      add(2, rows.back().measured_us / rows.back().predicted_us, rows.back().bytes);
      std::cout << fmt::format("| {} | {} | {} | {} | {} |\n", c.file, s.op_name, cell[0], cell[1], cell[2]);
    }
  }
  for (const auto& k : classes) {
    ASSERT_GT(k.n, 0);
    const double g = std::exp(k.log_sum / k.n);
    std::cout << fmt::format(
        "{}: geometric mean of predicted/measured over {} series = {:.3f} ({:.3f} over all {} with the known misses)\n", k.name,
        k.n, g, std::exp(k.log_sum_all / k.n_all), k.n_all);
    EXPECT_NEAR(g, 1.0, 0.15) << k.name;
  }
}

// The V100's delivered NVLink rates of nccl::Table (volta_nvlink_gpu_gbps, volta_nvlink_nvswitch_gbps),
// fitted again here from the measurements table.cpp names, with their in-sample and leave-one-out errors.
// A measured bus bandwidth B at S bytes on L links per GPU, with NCCL's latency λ of the winning ring:
// the links' rate r solves S / (algbw) = λ + S / (r · L · n/nsteps), i.e. r = S / (L · ratio · (S / B' − λ))
// where B' is the measured algbw and ratio = n / (2(n − 1)).
TEST(NcclLogs, VoltaNvlinkRatesAreTheFitOfTheMeasuredBusBandwidths) {
  struct Point {
    std::string what, cluster;
    int gpus, links;
    double bytes, busbw, issue_us;  // measured bus bandwidth (GB/s); host issue inside the measured time
  };
  const auto& t = nccl::default_table();
  auto rate = [&](const Point& p) {
    const GpuPlacement where{p.gpus, 1, p.gpus};
    const double ratio = static_cast<double>(p.gpus) / (2.0 * (p.gpus - 1));
    const double measured_us = p.bytes / (p.busbw * ratio * 1e3);  // algbw = busbw · n / (2(n − 1))
    const auto ch = nccl::choose(topo(p.cluster), t, CollectiveOp::allreduce, bytes(p.bytes), where);
    return p.bytes / (p.links * ratio * 1e3 * (measured_us - p.issue_us - in_us(ch.latency)));
  };
  auto busbw = [&](const Point& p) {
    const GpuPlacement where{p.gpus, 1, p.gpus};
    return p.bytes / in_us(nccl::choose(topo(p.cluster), t, CollectiveOp::allreduce, bytes(p.bytes), where).time) / 1e3 *
        nccl::busbw_factor(CollectiveOp::allreduce, p.gpus);
  };
  const std::vector<Point> direct = {{"DGX-1V, 8 GPUs (DGX-2 comparison paper, Fig. 2)", "dgx1v", 8, 6, 1073741824.0, 135.5, 0},
                                     {"AC922, 2 GPUs (the same figure)", "ac922", 2, 3, 1073741824.0, 70.0, 0}};
  double log_sum = 0;
  std::vector<double> r;
  for (const auto& p : direct) {
    r.push_back(rate(p));
    log_sum += std::log(r.back());
  }
  const double fit = std::exp(log_sum / static_cast<double>(direct.size()));
  std::printf("GPU-GPU NVLink: per-link rates %.2f, %.2f GB/s; fit (geometric mean) %.2f; table %.2f\n", r[0], r[1], fit,
              t.volta_nvlink_gpu_gbps);
  EXPECT_NEAR(t.volta_nvlink_gpu_gbps, fit, 0.05);
  for (std::size_t i = 0; i < direct.size(); ++i) {
    const double in_sample = busbw(direct[i]) / direct[i].busbw - 1;
    // Refit without point i: the other point's rate; at 1 GiB the bus bandwidth scales with the rate.
    const double other = r[1 - i];
    const double loo = (1 + in_sample) * other / t.volta_nvlink_gpu_gbps - 1;
    std::printf("  %s: measured %.1f, predicted %.1f GB/s (%+.1f %%); leave-one-out (rate %.2f) %+.1f %%\n",
                direct[i].what.c_str(), direct[i].busbw, busbw(direct[i]), 100 * in_sample, other, 100 * loo);
    EXPECT_LE(std::abs(in_sample), 0.03);
  }
  // The NVSwitch rate: DGX-2, 12 GPUs, all_reduce at 8 GiB (the log; nccl-tests -g 12 adds 11 issues).
  const auto dgx2 = read_log(log_path("dgx2-12gpu-five-collectives-2020.txt"));
  const Row& big = dgx2[1].rows.back();
  const double measured_busbw = big.bytes / big.time_us / 1e3 * nccl::busbw_factor(CollectiveOp::allreduce, 12);
  const Point sw{"DGX-2, 12 GPUs, all_reduce 8 GiB (log)", "dgx2", 12, 6, big.bytes, measured_busbw,
                 in_us(nccl::issue_before_last(t, 12))};
  const double r_sw = rate(sw);
  std::printf("GPU-NVSwitch NVLink: %.2f GB/s per link from %s (%.1f GB/s); table %.2f\n", r_sw, sw.what.c_str(), measured_busbw,
              t.volta_nvlink_nvswitch_gbps);
  EXPECT_NEAR(t.volta_nvlink_nvswitch_gbps, r_sw, 0.05);
  // Out of sample: broadcast and reduce at 8 GiB on the same GPUs (busbw = algbw), within 3 %.
  for (std::size_t k : {2u, 3u}) {
    const Row& row = dgx2[k].rows.back();
    const auto ch = nccl::choose(topo("dgx2"), t, dgx2[k].op, bytes(row.bytes), {12, 1, 12});
    const double predicted = in_us(nccl::nccl_tests_time(ch.time, t, 12));
    std::printf("  %s 8 GiB: measured %.0f, predicted %.0f us (%+.1f %%)\n", dgx2[k].op_name.c_str(), row.time_us, predicted,
                100 * (predicted / row.time_us - 1));
    EXPECT_LE(std::abs(predicted / row.time_us - 1), 0.03);
  }
}

}  // namespace
}  // namespace dlscale
