// Calibration: statistics, the α-β fit, interpolation, the nccl-tests and nvbandwidth importers, the
// calibration file, shape recovery for dlscale-calibrate, and `predict --calibration` end to end.
// Every expected number is worked out by hand in the comment beside it from the fixtures in
// tests/data/calibration/ (synthetic samples in the real formats).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "dlscale/calibration.hpp"
#include "dlscale/compute.hpp"
#include "dlscale/error.hpp"
#include "dlscale/io.hpp"
#include "dlscale/network.hpp"
#include "support/one_gbps.hpp"
#include "support/run.hpp"

namespace {
using namespace dlscale;
namespace fs = std::filesystem;

const fs::path kData = fs::path(DLSCALE_TEST_DATA_DIR) / "calibration";

std::string read(const fs::path& p) { return test::slurp(p); }

const CollectivePoint& at_size(const CollectiveCurve& c, double size) {
  for (const auto& p : c.points)
    if (in_bytes(p.size) == size) return p;
  throw std::runtime_error("no such size");
}

// ---- statistics ------------------------------------------------------------------------------------

TEST(CalibrationStatistics, MedianAndQuartilesInterpolateBetweenOrderStatistics) {
  // sorted {1,2,3,4,5}: median x[2] = 3; q1 at h = 4·0.25 = 1 -> 2; q3 at h = 3 -> 4
  const double odd[] = {3, 1, 2, 5, 4};
  const SampleStats a = summarize(odd);
  EXPECT_DOUBLE_EQ(a.median, 3);
  EXPECT_DOUBLE_EQ(a.q1, 2);
  EXPECT_DOUBLE_EQ(a.q3, 4);
  EXPECT_DOUBLE_EQ(a.relative_noise(), 2.0 / 3.0);
  // {1,2,3,4}: median h = 1.5 -> 2.5; q1 h = 0.75 -> 1.75; q3 h = 2.25 -> 3.25
  const double even[] = {4, 1, 3, 2};
  const SampleStats b = summarize(even);
  EXPECT_DOUBLE_EQ(b.median, 2.5);
  EXPECT_DOUBLE_EQ(b.q1, 1.75);
  EXPECT_DOUBLE_EQ(b.q3, 3.25);
  EXPECT_DOUBLE_EQ(b.mean, 2.5);
  EXPECT_THROW((void)summarize(std::span<const double>{}), std::invalid_argument);
}

TEST(CalibrationStatistics, CollectorDropsThrottledSamplesAndStopsOnNoiseOrBudget) {
  StoppingRule rule;
  rule.min_samples = 3;
  rule.max_samples = 100;
  rule.max_relative_noise = 0.05;
  rule.min_time_s = 0;
  rule.budget_s = 10;
  SampleCollector c(rule);
  c.add(1.0);
  c.add(5.0, /*throttled=*/true);
  c.add(1.0);
  EXPECT_FALSE(c.done(0.1));  // 2 kept < 3
  c.add(1.0);
  EXPECT_TRUE(c.done(0.1));  // {1,1,1}: IQR 0
  EXPECT_EQ(c.dropped(), 1u);
  EXPECT_EQ(c.samples().size(), 3u);

  SampleCollector noisy(rule);
  for (double x : {1.0, 2.0, 3.0, 4.0}) noisy.add(x);  // IQR/median = 1.5/2.5 = 0.6 > 0.05
  EXPECT_FALSE(noisy.done(1.0));
  EXPECT_TRUE(noisy.done(10.0));  // the budget ends it
}

TEST(CalibrationStatistics, BusBandwidthFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::allreduce, 8), 1.75);      // 2·7/8
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::allgather, 8), 0.875);     // 7/8
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::reducescatter, 4), 0.75);  // 3/4
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::broadcast, 16), 1.0);
}

// ---- α-β fit -----------------------------------------------------------------------------------------

std::vector<CollectivePoint> points_mb_us(std::initializer_list<std::pair<double, double>> xy) {
  std::vector<CollectivePoint> out;
  for (auto [mb, us] : xy) out.push_back(CollectivePoint{megabytes(mb), microseconds(us), {}, {}, 0});
  return out;
}

TEST(CalibrationFit, AbsoluteLeastSquaresMatchesTheHandSolvedNormalEquations) {
  // x = S in MB {1,2,3}, y = t in us {12,15,20}: n = 3, Σx = 6, Σx² = 14, Σy = 47, Σxy = 102.
  // slope = (3·102 − 6·47)/(3·14 − 36) = 24/6 = 4 us/MB -> β = 1e6 B / 4e-6 s = 250 GB/s;
  // intercept = (47 − 4·6)/3 = 23/3 us = 7.6667 us.
  const auto pts = points_mb_us({{1, 12}, {2, 15}, {3, 20}});
  const AlphaBeta f = fit_alpha_beta(pts, FitWeighting::absolute);
  EXPECT_NEAR(in_us(f.alpha), 23.0 / 3.0, 1e-9);
  EXPECT_NEAR(in_gigabytes_per_second(f.beta), 250.0, 1e-6);
}

TEST(CalibrationFit, RelativeLeastSquaresMatchesTheHandSolvedWeightedEquations) {
  // Same points, rows divided by t (weights 1/t²). With a = α (us), g = 1/β (us/MB):
  //   Σ1/t² = 1/144 + 1/225 + 1/400 = 0.0069444 + 0.0044444 + 0.0025 = 0.0138889
  //   Σx/t² = 1/144 + 2/225 + 3/400 = 0.0069444 + 0.0088889 + 0.0075 = 0.0233333
  //   Σx²/t² = 1/144 + 4/225 + 9/400 = 0.0069444 + 0.0177778 + 0.0225 = 0.0472222
  //   Σ1/t = 1/12 + 1/15 + 1/20 = 0.2;  Σx/t = 1/12 + 2/15 + 3/20 = 0.3666667
  // det = 0.0138889·0.0472222 − 0.0233333² = 0.00065586 − 0.00054444 = 0.00011142
  // a = (0.2·0.0472222 − 0.3666667·0.0233333)/det = (0.0094444 − 0.0085556)/0.00011142 = 7.9778 us
  // g = (0.0138889·0.3666667 − 0.0233333·0.2)/det = (0.0050926 − 0.0046667)/0.00011142 = 3.8227 us/MB
  const auto pts = points_mb_us({{1, 12}, {2, 15}, {3, 20}});
  const AlphaBeta f = fit_alpha_beta(pts);
  EXPECT_NEAR(in_us(f.alpha), 7.9778, 2e-3);
  EXPECT_NEAR(1e6 / in_bytes_per_second(f.beta) * 1e6, 3.8227, 2e-3);  // us per MB
}

TEST(CalibrationFit, ExactLineIsRecoveredAndNegativeAlphaIsPinnedAtZero) {
  // t = 10 us + S / 250 GB/s: 1 MB -> 14 us, 4 MB -> 26 us, 16 MB -> 74 us
  const AlphaBeta exact = fit_alpha_beta(points_mb_us({{1, 14}, {4, 26}, {16, 74}}));
  EXPECT_NEAR(in_us(exact.alpha), 10.0, 1e-9);
  EXPECT_NEAR(in_gigabytes_per_second(exact.beta), 250.0, 1e-6);
  // {1,2},{2,5},{3,8} lie on t = 3x − 1: α < 0 is unphysical; with α = 0 the absolute fit is
  // g = Σxt/Σx² = (2 + 10 + 24)/14 = 36/14 = 2.5714 us/MB
  const AlphaBeta pinned = fit_alpha_beta(points_mb_us({{1, 2}, {2, 5}, {3, 8}}), FitWeighting::absolute);
  EXPECT_DOUBLE_EQ(in_us(pinned.alpha), 0.0);
  EXPECT_NEAR(1e6 / in_bytes_per_second(pinned.beta) * 1e6, 36.0 / 14.0, 1e-9);
  EXPECT_THROW((void)fit_alpha_beta(points_mb_us({{1, 2}, {1, 3}})), std::invalid_argument);
}

TEST(CalibrationFit, CurveInterpolatesInsideAndContinuesTheFitOutside) {
  CollectiveCurve c;
  c.points = points_mb_us({{1, 14}, {4, 26}, {16, 74}});
  c.fit = AlphaBeta{microseconds(10), gigabytes_per_second(250)};  // 4 us per MB
  CurveSource src{};
  EXPECT_NEAR(in_us(curve_time(c, megabytes(4), &src)), 26.0, 1e-9);  // a measured size
  EXPECT_EQ(src, CurveSource::interpolated);
  // 2.5 MB: halfway between 1 MB (14 us) and 4 MB (26 us) -> 20 us
  EXPECT_NEAR(in_us(curve_time(c, megabytes(2.5))), 20.0, 1e-9);
  // 32 MB: 74 us + (32 − 16) MB · 4 us/MB = 138 us
  EXPECT_NEAR(in_us(curve_time(c, megabytes(32), &src)), 138.0, 1e-9);
  EXPECT_EQ(src, CurveSource::extrapolated);
  // 0.5 MB: 14 us − 0.5 MB · 4 us/MB = 12 us
  EXPECT_NEAR(in_us(curve_time(c, megabytes(0.5))), 12.0, 1e-9);
}

TEST(CalibrationFit, TransferBandwidthInterpolatesTimeNotBandwidth) {
  // 1 MiB in 100 us, 4 MiB in 250 us. 2 MiB: 100 + (1/3)·150 = 150 us -> 2097152 B / 150 us = 13.98 GB/s.
  TransferCurve t;
  t.points.push_back(BandwidthPoint{bytes(1048576), microseconds(100), bytes(1048576) / microseconds(100), {}, 0});
  t.points.push_back(BandwidthPoint{bytes(4194304), microseconds(250), bytes(4194304) / microseconds(250), {}, 0});
  EXPECT_NEAR(in_gigabytes_per_second(transfer_bandwidth(t, bytes(2097152))), 2097152 / 150e-6 / 1e9, 1e-9);
  // 128 KiB lies below: the line through both points gives 100 − 917504·150/3145728 = 56.25 us
  EXPECT_NEAR(in_gigabytes_per_second(transfer_bandwidth(t, bytes(131072))), 131072 / 56.25e-6 / 1e9, 1e-9);
}

// ---- nccl-tests --------------------------------------------------------------------------------------

TEST(NcclTestsImport, CurrentFormatOnEightGpus) {
  const auto log = parse_nccl_tests(read(kData / "all_reduce_perf-a100x8.log"), "all_reduce_perf-a100x8.log");
  ASSERT_EQ(log.curves.size(), 1u);
  const CollectiveCurve& c = log.curves[0];
  EXPECT_EQ(c.op, CollectiveOp::allreduce);
  EXPECT_EQ(c.gpus, 8);  // eight "# Rank" lines
  EXPECT_EQ(c.nodes, 1);
  EXPECT_EQ(c.points.size(), 28u);  // 8 B = 2^3 ... 1 GiB = 2^30
  EXPECT_EQ(log.gpu_name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(log.nccl_version, "2.18.5");  // nccl-library=21805
  EXPECT_TRUE(log.warnings.empty());
  // the 4 MiB row: 54.18 us out of place, 53.64 us in place
  const auto& p = at_size(c, 4194304);
  EXPECT_DOUBLE_EQ(in_us(p.time), 54.18);
  ASSERT_TRUE(p.time_in_place);
  EXPECT_DOUBLE_EQ(in_us(*p.time_in_place), 53.64);
  // algbw = 4194304 B / 54.18 us = 77.41 GB/s and busbw = 77.41 · 2·7/8 = 135.47 GB/s, as printed
  const BytesPerSecond alg = algorithm_bandwidth(p.size, p.time);
  EXPECT_NEAR(in_gigabytes_per_second(alg), 77.41, 0.005);
  EXPECT_NEAR(in_gigabytes_per_second(alg) * bus_bandwidth_factor(c.op, c.gpus), 135.47, 0.01);
  ASSERT_TRUE(c.fit);
  // the fixture was made with busbw 230 GB/s at large sizes: algbw 230·8/14 = 131.4 GB/s
  EXPECT_NEAR(in_gigabytes_per_second(c.fit->beta), 131.4, 131.4 * 0.02);
}

TEST(NcclTestsImport, OldFormatWithErrorColumnAndNoRoot) {
  const auto log = parse_nccl_tests(read(kData / "all_reduce_perf-v100-old.log"), "all_reduce_perf-v100-old.log");
  ASSERT_EQ(log.curves.size(), 1u);
  EXPECT_EQ(log.curves[0].gpus, 8);
  EXPECT_EQ(log.gpu_name, "Tesla V100-SXM2-16GB");
  EXPECT_EQ(log.curves[0].points.size(), 25u);  // 2^3 ... 2^27
  // 128 MiB row: 1846.0 us; algbw = 134217728/1846e-6 = 72.71 GB/s; busbw = 72.71·1.75 = 127.24 GB/s
  const auto& p = at_size(log.curves[0], 134217728);
  EXPECT_DOUBLE_EQ(in_us(p.time), 1846.0);
  EXPECT_NEAR(in_gigabytes_per_second(algorithm_bandwidth(p.size, p.time)) * 1.75, 127.24, 0.01);
  EXPECT_TRUE(log.nccl_version.empty());
}

TEST(NcclTestsImport, SeveralGpuCountsInOneLog) {
  const auto log = parse_nccl_tests(read(kData / "all_reduce_perf-a100-2and4.log"), "x.log", CollectiveOp::allreduce);
  ASSERT_EQ(log.curves.size(), 2u);
  EXPECT_EQ(log.curves[0].gpus, 2);
  EXPECT_EQ(log.curves[1].gpus, 4);
  EXPECT_EQ(log.curves[0].points.front().size, bytes(1024));
  EXPECT_EQ(log.curves[1].points.back().size, bytes(268435456));
}

TEST(NcclTestsImport, AllGatherFromTheFileNameWithTimingColumns) {
  // the log itself never names the test: the file name does
  const auto log = parse_nccl_tests(read(kData / "all_gather_perf-a100x8.log"), "all_gather_perf-a100x8.log");
  ASSERT_EQ(log.curves.size(), 1u);
  EXPECT_EQ(log.curves[0].op, CollectiveOp::allgather);
  // 1 MiB row: 21.95 us; algbw = 1048576/21.95e-6 = 47.77 GB/s; busbw = 47.77·7/8 = 41.80 GB/s
  const auto& p = at_size(log.curves[0], 1048576);
  EXPECT_DOUBLE_EQ(in_us(p.time), 21.95);
  EXPECT_NEAR(in_gigabytes_per_second(algorithm_bandwidth(p.size, p.time)) * 0.875, 41.80, 0.01);
}

TEST(NcclTestsImport, TwoNodesFromTheRankHostNames) {
  const auto log = parse_nccl_tests(read(kData / "all_reduce_perf-a100-2nodes.log"), "all_reduce_perf-a100-2nodes.log");
  ASSERT_EQ(log.curves.size(), 1u);
  EXPECT_EQ(log.curves[0].gpus, 16);
  EXPECT_EQ(log.curves[0].nodes, 2);
}

std::string expect_input_error(const std::string& text, const std::string& name, std::optional<CollectiveOp> op = std::nullopt) {
  try {
    (void)parse_nccl_tests(text, name, op);
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError for " << name;
  return {};
}

TEST(NcclTestsImport, TruncatedLogIsAnErrorWithItsLocation) {
  const std::string text = read(kData / "all_reduce_perf-a100x8.log");
  // keep lines 1..40 (the table runs from line 20 to 47; "# Avg bus bandwidth" is line 50)
  std::istringstream in(text);
  std::string line, cut;
  for (int i = 0; i < 40 && std::getline(in, line); ++i) cut += line + "\n";
  const std::string msg = expect_input_error(cut, "cut.log", CollectiveOp::allreduce);
  EXPECT_NE(msg.find("cut.log:40:1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  // a row cut in the middle (a column short)
  const std::string half_row = cut + "     8388608       2097152     float     sum      -1    84.97   98.72\n";
  const std::string msg2 = expect_input_error(half_row, "cut.log", CollectiveOp::allreduce);
  EXPECT_NE(msg2.find("cut.log:41:"), std::string::npos) << msg2;
  EXPECT_NE(msg2.find("columns"), std::string::npos) << msg2;
}

TEST(NcclTestsImport, GarbledBusBandwidthOrGpuCountIsAnError) {
  std::string text = read(kData / "all_reduce_perf-a100x8.log");
  const std::string row = "135.47";
  text.replace(text.find(row), row.size(), "235.47");  // line 40, out-of-place busbw
  const std::string msg = expect_input_error(text, "garbled.log");
  EXPECT_NE(msg.find("garbled.log:40:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("busbw"), std::string::npos) << msg;
  // a number that is no number
  std::string text2 = read(kData / "all_reduce_perf-a100x8.log");
  text2.replace(text2.find("54.18"), 5, "54.1x");
  EXPECT_NE(expect_input_error(text2, "g2.log").find("not a number"), std::string::npos);
}

TEST(NcclTestsImport, UnknownCollectiveNeedsOp) {
  std::string text = read(kData / "all_gather_perf-a100x8.log");
  const std::string msg = expect_input_error(text, "results.txt");
  EXPECT_NE(msg.find("--op"), std::string::npos) << msg;
  EXPECT_EQ(parse_nccl_tests(text, "results.txt", CollectiveOp::allgather).curves.size(), 1u);
}

// ---- layouts of other nccl-tests versions and launchers (tests/data/layouts/nccl-tests, synthetic rows
// that obey algbw = S/t and busbw = algbw x factor) --------------------------------------------------------

std::string layout(const std::string& rel) { return read(fs::path(DLSCALE_TEST_DATA_DIR) / "layouts" / rel); }

bool any_contains(const std::vector<std::string>& lines, const std::string& what) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(what) != std::string::npos; });
}

// nccl-tests 2.13+: five tests in one file, each after '# Collective test starting: X_perf'; --op picks one.
TEST(NcclTestsLayouts, FiveCollectivesOfNcclTests213AndOpSelection) {
  const std::string text = layout("nccl-tests/five-collectives-nccl-tests-2.13.txt");
  const auto all = parse_nccl_tests(text, "five.txt");
  ASSERT_EQ(all.curves.size(), 5u);
  EXPECT_EQ(all.nccl_version, "2.19.3");  // nccl-library=21903
  const auto ag = parse_nccl_tests(text, "five.txt", CollectiveOp::allgather);
  ASSERT_EQ(ag.curves.size(), 1u);
  EXPECT_EQ(ag.curves[0].op, CollectiveOp::allgather);
  EXPECT_EQ(ag.curves[0].gpus, 8);
  // 128 MiB in 2704.4 us: algbw 134217728 / 2704.4 us = 49.63 GB/s, busbw x 7/8 = 43.43 (as printed)
  EXPECT_DOUBLE_EQ(in_us(at_size(ag.curves[0], 134217728).time), 2704.4);
  // sizes 8 and 16 B are 0 B on 8 GPUs of 4-byte floats (skipped): 32 B ... 128 MiB, 23 sizes
  EXPECT_EQ(ag.curves[0].points.size(), 23u);
}

// all_reduce then alltoall (not modelled) in one log: the all_reduce is imported, the alltoall said.
TEST(NcclTestsLayouts, AlltoallBesideAllReduceIsSkipped) {
  const auto log = parse_nccl_tests(layout("nccl-tests/all-reduce-then-alltoall.txt"), "two.txt");
  ASSERT_EQ(log.curves.size(), 1u);
  EXPECT_EQ(log.curves[0].op, CollectiveOp::allreduce);
  EXPECT_TRUE(any_contains(log.warnings, "two.txt:59: alltoall_perf table skipped")) << ::testing::PrintToString(log.warnings);
}

// -d all: one table, four sweeps (int8, half, float, double); the float one is kept (128 MiB in 3854.8 us,
// where int8 took 5011.2 and double 3662.1).
TEST(NcclTestsLayouts, SeveralDataTypesKeepTheFloatSweep) {
  const auto log = parse_nccl_tests(layout("nccl-tests/all-reduce-four-data-types.txt"), "d.txt");
  ASSERT_EQ(log.curves.size(), 1u);
  EXPECT_EQ(log.curves[0].points.size(), 25u);  // 8 B ... 128 MiB
  EXPECT_DOUBLE_EQ(in_us(at_size(log.curves[0], 134217728).time), 3854.8);
  EXPECT_TRUE(any_contains(log.warnings, "holds 4 sweeps of sizes"));
}

// pdsh on two hosts at once, their lines interleaved: one curve (the host whose header comes first,
// node02: 1 GiB in 31312 us), the other host's said in a warning.
TEST(NcclTestsLayouts, PdshOfTwoHostsIsReadApart) {
  const auto log = parse_nccl_tests(layout("nccl-tests/all-reduce-pdsh-two-hosts.txt"), "all_reduce_perf.txt");
  ASSERT_EQ(log.curves.size(), 1u);
  EXPECT_EQ(log.curves[0].gpus, 8);
  EXPECT_EQ(log.curves[0].nodes, 1);
  EXPECT_DOUBLE_EQ(in_us(at_size(log.curves[0], 1073741824).time), 31312);
  EXPECT_TRUE(any_contains(log.warnings, "measured again by 'node01'"));
}

// srun --label with 16 tasks pads the labels (" 0: "): 16 ranks on two hosts.
TEST(NcclTestsLayouts, PaddedSrunLabelsOnTwoNodes) {
  const auto log = parse_nccl_tests(layout("nccl-tests/all-reduce-srun-label-two-nodes.txt"), "s.txt", CollectiveOp::allreduce);
  ASSERT_EQ(log.curves.size(), 1u);
  EXPECT_EQ(log.curves[0].gpus, 16);
  EXPECT_EQ(log.curves[0].nodes, 2);
  // busbw 65.28 = 34.82 x 2·15/16 (the 16-GPU factor; 8 GPUs would give 60.93)
  EXPECT_DOUBLE_EQ(in_us(at_size(log.curves[0], 134217728).time), 3854.8);
}

// The trailer left out by the poster: the last row is maxBytes (128 MiB), so the table is whole.
TEST(NcclTestsLayouts, TableWithoutItsTrailerThatReachesMaxBytes) {
  const auto log = parse_nccl_tests(layout("nccl-tests/all-reduce-without-trailer.txt"), "t.txt");
  ASSERT_EQ(log.curves.size(), 1u);
  EXPECT_EQ(log.curves[0].points.size(), 25u);
  EXPECT_TRUE(any_contains(log.warnings, "its rows reach the end of the sweep (maxBytes): read as complete"));
  // cut one row earlier (64 MiB of a sweep to 128 MiB): truncated, an error naming the last line
  std::string text = layout("nccl-tests/all-reduce-without-trailer.txt");
  text = text.substr(0, text.find("   134217728"));
  const std::string msg = expect_input_error(text, "t.txt", CollectiveOp::allreduce);
  EXPECT_NE(msg.find("t.txt:40:1: the log ends inside a table (truncated?): its last row is 67108864 B of a sweep to "
                     "134217728 B (maxBytes)"),
            std::string::npos)
      << msg;
}

// ---- nvbandwidth ---------------------------------------------------------------------------------------

TEST(NvbandwidthImport, CopiesP2PAndLatencies) {
  std::vector<std::string> warnings;
  const Calibration cal = import_nvbandwidth(kData / "nvbandwidth-h100x2.json", &warnings);
  EXPECT_EQ(cal.gpu, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(cal.provenance.cuda, "12.4");  // 12040
  ASSERT_EQ(cal.devices.size(), 2u);
  const TransferCurve* h2d = cal.find_transfer(TransferKind::h2d_pinned);
  ASSERT_NE(h2d, nullptr);
  EXPECT_EQ(h2d->device, 0);
  // one point at nvbandwidth's default 512 MiB buffer: time = 536870912 B / 53.69 GB/s = 9999.458 us
  ASSERT_EQ(h2d->points.size(), 1u);
  EXPECT_EQ(h2d->points[0].size, mebibytes(512));
  EXPECT_NEAR(in_us(h2d->points[0].time), 536870912.0 / 53.69e9 * 1e6, 1e-6);
  ASSERT_EQ(cal.p2p.size(), 2u);
  EXPECT_EQ(cal.p2p[0].src, 0);
  EXPECT_EQ(cal.p2p[0].dst, 1);
  EXPECT_NEAR(in_gigabytes_per_second(*cal.p2p[0].bandwidth), 389.14, 1e-9);
  EXPECT_NEAR(in_gigabytes_per_second(*cal.p2p[1].bidirectional), 734.10, 1e-9);
  EXPECT_NEAR(in_us(*cal.p2p[0].latency), 0.71742, 1e-12);  // 717.42 ns
  // the waived test case, and the buffer size taken without a "bufferSize" or a "version" to tell it
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("no buffer size and no version in the file: assuming 512 MiB"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[1].find("Waived"), std::string::npos);
  EXPECT_NE(cal.provenance.notes.find("all_to_host_memcpy_ce not imported"), std::string::npos);
}

TEST(NvbandwidthImport, MalformedJsonNamesLineAndColumn) {
  const auto p = test::temp_file("bad-nvbandwidth.json", "{\n  \"nvbandwidth\": {\n    \"testcases\": [ , ]\n");
  try {
    (void)import_nvbandwidth(p);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().line, 3) << e.what();
  }
}

// nvbandwidth's text output (tests/data/layouts/nvbandwidth): v0.4 on 2 GPUs, 64 MiB copies (before v0.7).
TEST(NvbandwidthLayouts, TextOutputOfV04) {
  std::vector<std::string> warnings;
  const Calibration cal = parse_nvbandwidth(layout("nvbandwidth/v0.4-text-2gpu.txt"), "v04.txt", &warnings);
  EXPECT_EQ(cal.gpu, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(cal.provenance.cuda, "12.2");  // 12020
  EXPECT_EQ(cal.provenance.driver, "535.104.05");
  ASSERT_EQ(cal.devices.size(), 2u);
  const TransferCurve* h2d = cal.find_transfer(TransferKind::h2d_pinned);
  ASSERT_NE(h2d, nullptr);
  ASSERT_EQ(h2d->points.size(), 1u);
  EXPECT_EQ(h2d->points[0].size, mebibytes(64));
  EXPECT_NEAR(in_gigabytes_per_second(h2d->points[0].bandwidth), 55.61, 1e-9);
  // read: row 1 reads column 0 (389.21), so 0 -> 1; bidirectional and latency (717.42 ns) of row 0, column 1
  ASSERT_EQ(cal.p2p.size(), 2u);
  EXPECT_EQ(cal.p2p[0].src, 0);
  EXPECT_EQ(cal.p2p[0].dst, 1);
  EXPECT_NEAR(in_gigabytes_per_second(*cal.p2p[0].bandwidth), 389.21, 1e-9);
  EXPECT_NEAR(in_gigabytes_per_second(*cal.p2p[0].bidirectional), 734.10, 1e-9);
  EXPECT_NEAR(in_us(*cal.p2p[0].latency), 0.71742, 1e-12);
  EXPECT_TRUE(any_contains(warnings, "taking nvbandwidth v0.4's default, 64 MiB"));
}

// v0.2 with CRLF line ends and no SUM lines, one GPU: a waived test case, device_local_copy's matrix
// without a "(row)".
TEST(NvbandwidthLayouts, TextOutputOfV02WithCrlfAndAWaivedTest) {
  std::vector<std::string> warnings;
  const Calibration cal = parse_nvbandwidth(layout("nvbandwidth/v0.2-text-1gpu-crlf-waived.txt"), "v02.txt", &warnings);
  ASSERT_NE(cal.find_transfer(TransferKind::d2h_pinned), nullptr);
  EXPECT_NEAR(in_gigabytes_per_second(cal.find_transfer(TransferKind::d2h_pinned)->points[0].bandwidth), 26.30, 1e-9);
  ASSERT_NE(cal.find_transfer(TransferKind::device_copy), nullptr);
  EXPECT_NEAR(in_gigabytes_per_second(cal.find_transfer(TransferKind::device_copy)->points[0].bandwidth), 1424.31, 1e-9);
  EXPECT_TRUE(any_contains(warnings, "device_to_device_memcpy_read_ce is Waived"));
}

// v0.8 (multinode build): "Process 0 (host): device N: NAME (bus)" lines, 512 MiB copies.
TEST(NvbandwidthLayouts, TextOutputOfV08WithProcessDeviceLines) {
  const Calibration cal = parse_nvbandwidth(layout("nvbandwidth/v0.8-text-process-device-list.txt"), "v08.txt");
  EXPECT_EQ(cal.gpu, "NVIDIA H200");
  ASSERT_EQ(cal.devices.size(), 2u);
  EXPECT_EQ(cal.devices[1].pci_bus_id, "00000000:3b:00");
  const TransferCurve* h2d = cal.find_transfer(TransferKind::h2d_pinned);
  ASSERT_NE(h2d, nullptr);
  EXPECT_EQ(h2d->points[0].size, mebibytes(512));
  // write: row -> column
  ASSERT_EQ(cal.p2p.size(), 2u);
  EXPECT_NEAR(in_gigabytes_per_second(*cal.p2p[1].bandwidth), 390.87, 1e-9);  // 1 -> 0
}

// ---- the calibration file ----------------------------------------------------------------------------

TEST(CalibrationFile, WriteThenReadGivesTheSameNumbers) {
  const fs::path logs[] = {kData / "all_reduce_perf-a100x8.log", kData / "all_gather_perf-a100x8.log"};
  Calibration cal = import_nccl_tests(logs);
  const Calibration nv = import_nvbandwidth(kData / "nvbandwidth-h100x2.json");
  cal.transfers = nv.transfers;
  cal.p2p = nv.p2p;
  const auto file = test::temp_file("roundtrip.yaml", to_yaml(cal));
  const Calibration back = load_calibration(file);
  ASSERT_EQ(back.collectives.size(), 2u);
  const auto& a = cal.collectives[0];
  const auto& b = back.collectives[0];
  EXPECT_EQ(b.op, a.op);
  EXPECT_EQ(b.gpus, 8);
  ASSERT_EQ(b.points.size(), a.points.size());
  for (std::size_t i = 0; i < a.points.size(); ++i) {
    EXPECT_NEAR(in_us(b.points[i].time), in_us(a.points[i].time), 1e-6);
    EXPECT_EQ(b.points[i].size, a.points[i].size);
  }
  ASSERT_TRUE(b.fit);
  EXPECT_NEAR(in_us(b.fit->alpha), in_us(a.fit->alpha), 1e-6);
  EXPECT_EQ(back.gpu, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(back.transfers.size(), nv.transfers.size());
  EXPECT_NEAR(in_us(*back.p2p[0].latency), 0.71742, 1e-9);
}

// dlscale-calibrate's own output from a real H200 (tests/data/h200-pytorch/README.md) loads, and its
// per-layer times add up to what the binary printed when it measured them (cal256.log: "resnet50 batch 256
// fp32: 107 of 107 layers measured, forward 29.87 ms backward 64.32 ms", relabelled tf32 since cuDNN's
// default math ran them in TF32; "fp16: forward 24.92 ms backward 45.72 ms").
TEST(CalibrationFile, AnH200RunLoadsAndItsLayersAddUpToWhatTheBinaryPrinted) {
  const Calibration cal = load_calibration(fs::path(DLSCALE_TEST_DATA_DIR) / "h200-pytorch" / "calibrate-resnet50-b256.yaml");
  EXPECT_EQ(cal.gpu, "NVIDIA H200");
  ASSERT_FALSE(cal.devices.empty());
  EXPECT_EQ(cal.devices.front().sm_count, 132);
  const struct {
    const char* precision;
    double forward, backward;
  } expect[] = {{"tf32", 29.87e-3, 64.32e-3}, {"fp16", 24.92e-3, 45.72e-3}};
  for (const auto& e : expect) {
    const LayerProfile* lp = cal.find_layers("resnet50", 256, e.precision);
    ASSERT_NE(lp, nullptr) << e.precision;
    EXPECT_EQ(lp->layers.size(), 107u);
    double f = 0, b = 0;
    for (const auto& l : lp->layers) {
      if (l.forward) f += in_seconds(*l.forward);
      if (l.backward) b += in_seconds(*l.backward);
    }
    EXPECT_NEAR(f, e.forward, 0.005e-3) << e.precision;
    EXPECT_NEAR(b, e.backward, 0.005e-3) << e.precision;
  }
  EXPECT_EQ(cal.find_layers("resnet50", 256, "fp32"), nullptr);  // strict fp32 was not measured
}

// The strict-fp32 calibration (cuDNN FMA math, cuBLAS 32F) on a GPU, an H100 SXM
// (tests/data/h100-pytorch/calibrate-quick.yaml, dlscale-calibrate --quick): its layers add up to what the
// binary printed ("resnet50 batch 64 fp32: 107 of 107 layers measured, forward 19.28 ms backward 46.95 ms"),
// its fp32 GEMM ran at fp32 speed (51.5 TFLOPS, under the H100 SXM's 67 TFLOPS fp32 peak; TF32 ran at 397),
// and the layers at batch 64 times 4 are within 5 % of the strict-fp32 PyTorch step measured at batch 256
// on the same GPU (259.3 ms, training-steps.csv), where the TF32 runs it replaced took 94 ms at batch 256.
TEST(CalibrationFile, AnH100RunTimesStrictFp32) {
  const Calibration cal = load_calibration(fs::path(DLSCALE_TEST_DATA_DIR) / "h100-pytorch" / "calibrate-quick.yaml");
  EXPECT_EQ(cal.gpu, "NVIDIA H100 80GB HBM3");
  const LayerProfile* lp = cal.find_layers("resnet50", 64, "fp32");
  ASSERT_NE(lp, nullptr);
  EXPECT_EQ(lp->layers.size(), 107u);
  double f = 0, b = 0;
  for (const auto& l : lp->layers) {
    if (l.forward) f += in_seconds(*l.forward);
    if (l.backward) b += in_seconds(*l.backward);
  }
  EXPECT_NEAR(f, 19.28e-3, 0.005e-3);
  EXPECT_NEAR(b, 46.95e-3, 0.005e-3);
  EXPECT_NEAR(4 * (f + b), 259.331e-3, 0.05 * 259.331e-3);
  bool fp32_gemm = false;
  for (const auto& g : cal.gemm)
    if (g.precision == "fp32") {
      fp32_gemm = true;
      EXPECT_LT(in_teraflops_per_second(g.rate), 67.0);  // a TF32 product would run at ~400
    }
  EXPECT_TRUE(fp32_gemm);
}

TEST(CalibrationFile, AnotherSchemaVersionIsRefusedAtItsLine) {
  try {
    (void)load_calibration(kData / "schema2.yaml");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().line, 2);
    EXPECT_EQ(e.where().column, 9);
    EXPECT_NE(std::string(e.what()).find("schema version 2 is not supported"), std::string::npos) << e.what();
  }
}

TEST(CalibrationFile, UnknownKeysAndInconsistentBandwidthsAreErrors) {
  const auto unknown = test::temp_file("unknown.yaml", "schema: 1\nprovenance: {tool: t}\ncolectives: []\n");
  EXPECT_THROW((void)load_calibration(unknown), InputError);
  // 1 MiB in 10 us is 104.9 GB/s of algbw, not 50
  const auto bad = test::temp_file("bad-algbw.yaml",
                                   "schema: 1\nprovenance: {tool: t}\ncollectives:\n  - op: allreduce\n    gpus: 2\n"
                                   "    points:\n      - {size: \"1048576 B\", time: \"10 us\", algbw: \"50 GB/s\"}\n");
  try {
    (void)load_calibration(bad);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().line, 7);
    EXPECT_NE(std::string(e.what()).find("algbw"), std::string::npos) << e.what();
  }
}

TEST(CalibrationFile, GpuFamilies) {
  EXPECT_EQ(gpu_family("NVIDIA H100 80GB HBM3"), "h100");
  EXPECT_EQ(gpu_family("Tesla P40 (1.3 GHz base clock)"), "p40");
  EXPECT_EQ(gpu_family("NVIDIA GeForce RTX 2080 Ti"), "2080");
  EXPECT_EQ(gpu_family("NVIDIA A100-SXM4-80GB"), "a100");
  EXPECT_EQ(gpu_family("a100-sxm4-40gb"), "a100");
  EXPECT_EQ(gpu_family("unknown"), "");
}

// ---- shapes for dlscale-calibrate ----------------------------------------------------------------------

TEST(CalibrationShapes, ConvolutionsOfResNet50AreRecovered) {
  const fs::path file = fs::path(DLSCALE_SOURCE_DIR) / "models" / "resnet50.yaml";
  if (!fs::exists(file)) GTEST_SKIP() << "models/resnet50.yaml is not in this tree";
  const Network net = load_network(file);
  auto find = [&](const std::string& name) {
    for (std::size_t i = 0; i < net.layers.size(); ++i)
      if (net.layers[i].name == name) return i;
    throw std::runtime_error(name);
  };
  // conv1: 236027904 FLOPs / (2·64·112·112) = 147 = 3·7²; from the 3×224×224 input: stride 2, and
  // (224 + 2p − 7)/2 + 1 = 112 gives p = 3
  auto c1 = infer_conv_shape(net, find("conv1"));
  ASSERT_TRUE(c1);
  EXPECT_EQ(c1->in_channels, 3);
  EXPECT_EQ(c1->kernel, 7);
  EXPECT_EQ(c1->stride, 2);
  EXPECT_EQ(c1->padding, 3);
  EXPECT_TRUE(c1->first);
  // layer2.0.conv2: 231211008 / (2·128·28·28) = 1152 = 128·3²; its 128-channel input is 56×56: stride 2, p = 1
  auto c2 = infer_conv_shape(net, find("layer2.0.conv2"));
  ASSERT_TRUE(c2);
  EXPECT_EQ(c2->in_channels, 128);
  EXPECT_EQ(c2->kernel, 3);
  EXPECT_EQ(c2->stride, 2);
  EXPECT_EQ(c2->padding, 1);
  // layer2.0.downsample.0: 205520896 / (2·512·28·28) = 256 = 256·1²; the 256-channel map is 56×56: stride 2
  auto d = infer_conv_shape(net, find("layer2.0.downsample.0"));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->in_channels, 256);
  EXPECT_EQ(d->kernel, 1);
  EXPECT_EQ(d->stride, 2);
  EXPECT_EQ(d->padding, 0);
  EXPECT_FALSE(infer_conv_shape(net, find("bn1")));
}

TEST(CalibrationShapes, LinearLayerAsGemm) {
  const Network net = load_network(kData / "tiny-net.yaml");
  // fc2: 6291456 FLOPs / (2·3072·1) = 1024 inputs; params 1024·3072 = 3145728
  auto g = infer_linear_shape(net, 1);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->in_features, 1024);
  EXPECT_EQ(g->out_features, 3072);
  EXPECT_EQ(g->rows_per_sample, 1);
}

// ---- end to end: the model reads calibration -------------------------------------------------------------

nlohmann::json predict_json(const std::string& extra) {
  const auto r =
      test::run_cli("predict --cluster " + (kData / "cluster-a100x8.yaml").string() + " --model " +
                    (kData / "tiny-net.yaml").string() + " --framework caffe-mpi --batch 32 --gpus 8 --format json " + extra);
  EXPECT_EQ(r.status, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

// A real log run with one thread for 8 GPUs (nccl-tests -g 8; the 2019 V100 box of tests/data/real-inputs):
// the curve keeps the measured times and says how they were taken, and a prediction takes the host issue of
// 7 GPUs (7 × 4.8 = 33.6 µs, nccl::nccl_tests_time) out: 8 B 48.46 − 33.6 = 14.86 µs (NCCL 2.30's model says
// 15.0 for that ring), 32 MiB 550.8 − 33.6 = 517.2 µs.
TEST(CalibrationEndToEnd, SingleThreadLogsLoseTheirHostIssueInPredictions) {
  const fs::path log = fs::path(DLSCALE_TEST_DATA_DIR) / "real-inputs" / "nccl-tests" / "allreduce-v100-sxm2-8gpu-2019.txt";
  const std::vector<fs::path> logs{log};
  auto cal = std::make_shared<Calibration>(import_nccl_tests(logs, CollectiveOp::allreduce));
  ASSERT_EQ(cal->collectives.size(), 1u);
  EXPECT_EQ(cal->collectives[0].gpus_per_thread, 8);
  EXPECT_DOUBLE_EQ(in_us(cal->collectives[0].points.front().time), 48.46);
  // the key survives the file
  const Calibration again = parse_calibration(to_yaml(*cal), "again.yaml");
  EXPECT_EQ(again.collectives[0].gpus_per_thread, 8);
  const CalibratedCollectiveModel m(cal, std::make_shared<test::OneGBps>());
  EXPECT_NEAR(in_us(m.time(CollectiveOp::allreduce, bytes(8), {8, 1, 8})), 48.46 - 33.6, 1e-9);
  EXPECT_NEAR(in_us(m.time(CollectiveOp::allreduce, mebibytes(32), {8, 1, 8})), 550.8 - 33.6, 1e-9);
  // more GPUs per thread than GPUs in a calibration file: refused at the key
  std::string text = to_yaml(*cal);
  text.replace(text.find("gpus_per_thread: 8"), 18, "gpus_per_thread: 9");
  try {
    (void)parse_calibration(text, "bad.yaml");
    ADD_FAILURE() << "accepted 9 GPUs per thread of 8";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'collectives[0].gpus_per_thread': more GPUs per thread than GPUs"), std::string::npos)
        << e.what();
  }
}

TEST(CalibrationEndToEnd, ImportedNcclTestsCurveBecomesThePredictedCommunication) {
  const fs::path out = fs::temp_directory_path() / ("dlscale-cal-e2e-" + std::to_string(::getpid()) + ".yaml");
  const auto imp =
      test::run_cli("calibrate import nccl-tests " + (kData / "all_reduce_perf-a100x8.log").string() + " -o " + out.string());
  ASSERT_EQ(imp.status, 0) << imp.err;
  EXPECT_EQ(imp.out, "");
  // tiny-net's fp32 gradients, all-reduced on 8 GPUs, from the fixture's out-of-place times:
  //   fc1  4194304 B  (a measured size)                       54.18 us
  //   fc2 12582912 B  (halfway between 8 MiB 84.97 us and 16 MiB 149.7 us) (84.97 + 149.7)/2 = 117.335 us
  //   fc3     1024 B  (a measured size)                       22.23 us
  //   comm = 54.18 + 117.335 + 22.23 = 193.745 us
  const auto with = predict_json("--calibration " + out.string());
  const double comm = with["predictions"][0]["breakdown"]["comm_s"];
  EXPECT_NEAR(comm, 193.745e-6, 1e-12);
  // without the calibration the α-β ring over the cluster's 240 GB/s links answers: something else
  const auto without = predict_json("");
  EXPECT_GT(std::abs(double(without["predictions"][0]["breakdown"]["comm_s"]) - comm), 1e-6);
  // and it says where the numbers came from
  const auto r = test::run_cli("predict --cluster " + (kData / "cluster-a100x8.yaml").string() + " --model " +
                               (kData / "tiny-net.yaml").string() + " --framework caffe-mpi --batch 32 --gpus 8,16 " +
                               "--calibration " + out.string() + " --explain-sources");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("communication, 8 GPUs (1 node): allreduce measured on 8 GPUs"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("communication, 16 GPUs (2 nodes): allreduce on 16 GPUs / 2 nodes not measured"), std::string::npos)
      << r.err;
  fs::remove(out);
}

TEST(CalibrationEndToEnd, MeasuredLayerTimesAndCopiesReplaceTheRoofline) {
  const auto j = predict_json("--calibration " + (kData / "tiny-net-layers-a100.yaml").string());
  const auto& b = j["predictions"][0]["breakdown"];
  // fc3 is not in the calibration: the compute model's estimate stays (its kernels, the loss's among them,
  // each at least one kernel overhead); fc1 and fc2 are replaced.
  const Network net = load_network(kData / "tiny-net.yaml");
  const LayerTimes roof = estimate_layer_times(net, load_cluster(kData / "cluster-a100x8.yaml").gpu, 32, ComputeOptions{});
  EXPECT_GE(roof.forward[2], shipped_kernel_params()->defaults.kernel_overhead);
  // forward = fc1 1 ms + fc2 3 ms + fc3's estimate; backward = 2 ms + 6 ms + fc3's estimate
  EXPECT_NEAR(double(b["forward_s"]), 4e-3 + in_seconds(roof.forward[2]), 1e-12);
  EXPECT_NEAR(double(b["backward_s"]), 8e-3 + in_seconds(roof.backward[2]), 1e-12);
  // h2d: a batch of 32 · 4 KiB = 131072 B, below the measured 1 MiB: 56.25 us (see the transfer test)
  EXPECT_NEAR(double(b["h2d_s"]), 56.25e-6, 1e-12);
}

TEST(CalibrationEndToEnd, BadCalibrationsExitTwoWithOneLineAndNoOutput) {
  // another schema version
  const auto v2 = test::run_cli("predict --cluster " + (kData / "cluster-a100x8.yaml").string() + " --model " +
                                (kData / "tiny-net.yaml").string() + " --framework caffe-mpi --gpus 8 --calibration " +
                                (kData / "schema2.yaml").string());
  EXPECT_EQ(v2.status, 2);
  EXPECT_EQ(v2.out, "");
  EXPECT_NE(v2.err.find("schema2.yaml:2:9"), std::string::npos) << v2.err;
  // a calibration of another GPU (V100 curves for an A100 cluster)
  const fs::path v100 = fs::temp_directory_path() / ("dlscale-cal-v100-" + std::to_string(::getpid()) + ".yaml");
  ASSERT_EQ(
      test::run_cli("calibrate import nccl-tests " + (kData / "all_reduce_perf-v100-old.log").string() + " -o " + v100.string())
          .status,
      0);
  const auto mix =
      test::run_cli("predict --cluster " + (kData / "cluster-a100x8.yaml").string() + " --model " +
                    (kData / "tiny-net.yaml").string() + " --framework caffe-mpi --gpus 8 --calibration " + v100.string());
  EXPECT_EQ(mix.status, 2);
  EXPECT_EQ(mix.out, "");
  EXPECT_NE(mix.err.find("Tesla V100-SXM2-16GB"), std::string::npos) << mix.err;
  EXPECT_EQ(std::count(mix.err.begin(), mix.err.end(), '\n'), 1);
  fs::remove(v100);
  // a truncated log (cut before its last size, 1 GiB of a sweep to 1 GiB): no output file at all
  std::string text = read(kData / "all_reduce_perf-a100x8.log");
  const auto cut = test::temp_file("all_reduce_perf-cut.log", text.substr(0, text.find("  1073741824     268435456")));
  const fs::path target = fs::temp_directory_path() / ("dlscale-cal-cut-" + std::to_string(::getpid()) + ".yaml");
  const auto r = test::run_cli("calibrate import nccl-tests " + cut.string() + " -o " + target.string());
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("truncated"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(target));
}

}  // namespace
