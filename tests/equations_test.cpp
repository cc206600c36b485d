// The equations of Shi & Chu (2018) against the paper's own worked examples (printed digits), and
// property tests that pin the relations between the paper's forms and the exact recurrence.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "dlscale/equations.hpp"

namespace dlscale {
namespace {

double round_to(double v, int digits) { return std::round(v * std::pow(10.0, digits)) / std::pow(10.0, digits); }

// Section VI-B: CNTK, AlexNet. t_gpu = 0.0527 + 0.1684 + 0.2918 + 0.0086 = 0.5215 s, t_io,1 = 0.223 s.
TEST(WorkedExamples, CntkAlexNetSpeedupOnTwoAndFourGpus) {
  const Seconds gpu = eq::gpu_time(seconds(0.0527), seconds(0.1684), seconds(0.2918), seconds(0.0086));
  EXPECT_NEAR(in_seconds(gpu), 0.5215, 1e-12);
  // S = 2 × 0.7445 / (0.5215 + 0.45 + 0.0359) = 1.478
  EXPECT_DOUBLE_EQ(round_to(eq::speedup_eq8(2, seconds(0.223), gpu, seconds(0.45), seconds(0.0359)), 3), 1.478);
  // S = 4 × 0.7445 / (0.5215 + 0.72 + 0.042) = 2.32
  EXPECT_DOUBLE_EQ(round_to(eq::speedup_eq8(4, seconds(0.223), gpu, seconds(0.72), seconds(0.042)), 2), 2.32);
  // the general eq. 8 on iteration times (eq. 3 for both) gives the same numbers
  const Seconds t1 =
      eq::iteration_with_comm(seconds(0.223), seconds(0.0527), seconds(0.1684), seconds(0.2918), seconds(0.0086), Seconds{});
  const Seconds t2 =
      eq::iteration_with_comm(seconds(0.45), seconds(0.0527), seconds(0.1684), seconds(0.2918), seconds(0.0086), seconds(0.0359));
  EXPECT_DOUBLE_EQ(round_to(eq::speedup(2, t1, t2), 3), 1.478);
}

// Section VI-C, eq. 12: S_g = 63·N_g MB, B_rdma = 7 GB/s, 1 GB = 1024 MB in the paper's arithmetic.
TEST(WorkedExamples, AllReduceEfficiencyOfCntkAlexNet) {
  EXPECT_DOUBLE_EQ(round_to(100 * eq::allreduce_efficiency(mebibytes(63 * 8), seconds(0.0906), gibibytes_per_second(7)), 2),
                   77.61);
  EXPECT_DOUBLE_EQ(round_to(100 * eq::allreduce_efficiency(mebibytes(63 * 16), seconds(0.236), gibibytes_per_second(7)), 2),
                   59.59);
}

// Section VI-B: r_u2g = t_u / (t_h2d + t_f + t_b), the paper's own arithmetic.
TEST(WorkedExamples, UpdateToGpuRatio) {
  EXPECT_DOUBLE_EQ(round_to(100 * eq::update_to_gpu_ratio(seconds(0.0005), seconds(0.016), seconds(0.1129), seconds(0.1856)), 2),
                   0.16);
  EXPECT_DOUBLE_EQ(round_to(100 * eq::update_to_gpu_ratio(seconds(0.0015), seconds(0.045), seconds(0.0767), seconds(0.1345)), 2),
                   0.59);
}

// Section VI-A: S_d = 1024·224·224·3·4 B = 588 MB (binary), t_io = 588 / (3.5·1024) = 0.164 s.
TEST(WorkedExamples, IoTimeOfCntkAlexNetBatch) {
  const Bytes batch = bytes(1024.0 * 224 * 224 * 3 * 4);
  EXPECT_DOUBLE_EQ(round_to(in_mebibytes(batch), 0), 588.0);
  EXPECT_DOUBLE_EQ(round_to(in_seconds(eq::io_time(batch, 1, gibibytes_per_second(3.5))), 3), 0.164);
  // one reader per node feeds n_g GPUs: 0.164·N_g (Section VI-B)
  EXPECT_NEAR(in_seconds(eq::io_time(batch, 4, gibibytes_per_second(3.5))), 4 * 588.0 / 3584.0, 1e-9);
}

TEST(Equations, IoHiddenIsTheSlowerOfGpuAndReaders) {
  EXPECT_DOUBLE_EQ(in_seconds(eq::iteration_io_hidden(seconds(0.5), seconds(0.1), seconds(0.2))), 0.6);
  EXPECT_DOUBLE_EQ(in_seconds(eq::iteration_io_hidden(seconds(0.5), seconds(0.1), seconds(0.72))), 0.72);
}

TEST(Equations, Eq5CountsTheCommunicationWindow) {
  // 0.1 + 0.01 + 0.2 + t_b^(L)=0.05 + (0.4 − 0.06) + 0.005 = 0.705
  EXPECT_NEAR(in_seconds(eq::iteration_overlapped(seconds(0.1), seconds(0.01), seconds(0.2), seconds(0.05), seconds(0.06),
                                                  seconds(0.4), seconds(0.005))),
              0.705, 1e-12);
}

// A three-layer example worked by hand. b = (b1, b2, b3) = (0.3, 0.2, 0.1), c = (0.05, 0.25, 0.3).
// Layer 3's gradient is ready at 0.1; its aggregation ends at 0.4. Layer 2 ready at 0.3, starts at 0.4,
// ends at 0.65. Layer 1 ready at 0.6, starts at 0.65, ends at 0.70. done(1) = 0.70.
// Case test: i=2: c2=0.25 > b1=0.3? no. i=3: c3=0.3 > b2=0.2? yes → Case 2, C = 3.
// Eq. 7 as printed: Σ_{i=3..3} c + Σ_{i=1..2} b + c1 = 0.3 + 0.5 + 0.05 = 0.85 (an over-estimate).
TEST(Equations, HandWorkedThreeLayerOverlap) {
  const std::vector<Seconds> b{seconds(0.3), seconds(0.2), seconds(0.1)};
  const std::vector<Seconds> c{seconds(0.05), seconds(0.25), seconds(0.3)};
  EXPECT_NEAR(in_seconds(eq::overlap_done_exact(b, c)), 0.70, 1e-12);
  const auto h = eq::classify_hiding(b, c);
  EXPECT_EQ(h.which, 2);
  EXPECT_EQ(h.boundary, 3);
  EXPECT_TRUE(h.suffix_exceeds);
  EXPECT_NEAR(in_seconds(eq::iteration_case2(Seconds{}, Seconds{}, Seconds{}, b, c, 3, Seconds{})), 0.85, 1e-12);
  // per-layer update adds only t_u^(1); update-after adds all of t_u
  const std::vector<Seconds> none(3);
  EXPECT_NEAR(in_seconds(eq::iteration_exact_per_layer_update(seconds(1), seconds(0.1), seconds(0.2), b, c, seconds(0.01))),
              1 + 0.1 + 0.2 + 0.70 + 0.01, 1e-12);
  EXPECT_NEAR(in_seconds(eq::iteration_exact_update_after(Seconds{}, Seconds{}, Seconds{}, b, c, seconds(0.03))), 0.73, 1e-12);
}

TEST(Equations, Case1WhenEveryAggregationFitsUnderTheNextBackward) {
  const std::vector<Seconds> b{seconds(0.3), seconds(0.2), seconds(0.1)};
  const std::vector<Seconds> c{seconds(0.05), seconds(0.25), seconds(0.15)};  // c2 ≤ b1, c3 ≤ b2
  const auto h = eq::classify_hiding(b, c);
  EXPECT_EQ(h.which, 1);
  EXPECT_EQ(h.boundary, 0);
  // eq. 6: t_f + t_b + c1 + u1 with t_f = 0: 0.6 + 0.05 = 0.65; the exact recurrence agrees
  EXPECT_NEAR(in_seconds(eq::iteration_case1(Seconds{}, Seconds{}, Seconds{}, seconds(0.6), seconds(0.05), Seconds{})), 0.65,
              1e-12);
  EXPECT_NEAR(in_seconds(eq::overlap_done_exact(b, c)), 0.65, 1e-12);
}

TEST(Equations, Eq10And11TensorFlowHybrid) {
  // eq. 10: 0.001 + 0.016 + 0.1129 + 0.1856 + 0.002 + 0.0005 = 0.318
  EXPECT_NEAR(in_seconds(eq::iteration_tf_hybrid(seconds(0.001), seconds(0.016), seconds(0.1129), seconds(0.1856), seconds(0.002),
                                                 seconds(0.0005))),
              0.318, 1e-12);
  // eq. 11 with t_io,1 = t_io,n = 0.001: S = 4 × 0.316 / 0.318
  EXPECT_NEAR(eq::speedup_eq11(4, seconds(0.001), seconds(0.001), seconds(0.016), seconds(0.1129), seconds(0.1856),
                               seconds(0.0005), seconds(0.002)),
              4 * 0.316 / 0.318, 1e-12);
}

// ---- property tests over random layer profiles ------------------------------------------------------
struct Profile {
  std::vector<Seconds> b, c;
};

Profile random_profile(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> layers(1, 60);
  std::uniform_real_distribution<double> t(1e-5, 5e-2);
  Profile p;
  const int L = layers(rng);
  for (int i = 0; i < L; ++i) {
    p.b.push_back(seconds(t(rng)));
    p.c.push_back(seconds(t(rng) * (i % 3 == 0 ? 0.2 : 1.5)));
  }
  return p;
}

// The closed form max_k(Σ_{j=k..L} b_j + Σ_{j=1..k} c_j), computed independently of the recurrence.
Seconds done_by_max_formula(const Profile& p) {
  const std::size_t L = p.b.size();
  Seconds best{};
  for (std::size_t k = 1; k <= L; ++k) {
    Seconds s{};
    for (std::size_t j = k; j <= L; ++j) s += p.b[j - 1];
    for (std::size_t j = 1; j <= k; ++j) s += p.c[j - 1];
    best = max(best, s);
  }
  return best;
}

// A step-by-step simulation of one channel: layers handed over in the order their gradients are ready.
Seconds done_by_stepping(const Profile& p) {
  Seconds clock{}, channel_free{};
  for (std::size_t k = p.b.size(); k-- > 0;) {
    clock += p.b[k];
    const Seconds start = max(clock, channel_free);
    channel_free = start + p.c[k];
  }
  return channel_free;
}

TEST(EquationProperties, ExactRecurrenceEqualsItsClosedFormAndAStepwiseChannel) {
  std::mt19937_64 rng(20180611);
  for (int trial = 0; trial < 2000; ++trial) {
    const auto p = random_profile(rng);
    const double exact = in_seconds(eq::overlap_done_exact(p.b, p.c));
    EXPECT_NEAR(exact, in_seconds(done_by_max_formula(p)), 1e-12 * std::max(1.0, exact));
    EXPECT_NEAR(exact, in_seconds(done_by_stepping(p)), 1e-12 * std::max(1.0, exact));
  }
}

TEST(EquationProperties, ExactEqualsEq6InCase1) {
  std::mt19937_64 rng(6);
  int case1 = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    auto p = random_profile(rng);
    // shrink communication so that Case 1 is frequent: c_i ≤ b_{i−1}
    for (std::size_t i = 1; i < p.c.size(); ++i) p.c[i] = min(p.c[i], p.b[i - 1]);
    const auto h = eq::classify_hiding(p.b, p.c);
    ASSERT_EQ(h.which, 1);
    ++case1;
    Seconds b_total{};
    for (auto x : p.b) b_total += x;
    const Seconds eq6 = eq::iteration_case1(Seconds{}, Seconds{}, Seconds{}, b_total, p.c.front(), Seconds{});
    EXPECT_NEAR(in_seconds(eq::overlap_done_exact(p.b, p.c)), in_seconds(eq6), 1e-12);
  }
  EXPECT_EQ(case1, 4000);
}

TEST(EquationProperties, ExactIsBoundedByNoOverlapAndByItsLowerBounds) {
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 4000; ++trial) {
    const auto p = random_profile(rng);
    Seconds b_total{}, c_total{};
    for (auto x : p.b) b_total += x;
    for (auto x : p.c) c_total += x;
    const Seconds exact = eq::overlap_done_exact(p.b, p.c);
    // never worse than eq. 2 (no overlap): t_b + t_comm
    EXPECT_LE(in_seconds(exact), in_seconds(b_total + c_total) * (1 + 1e-12));
    // never better than the compute alone plus the last aggregation, nor the communication alone plus
    // the first backward
    EXPECT_GE(in_seconds(exact), in_seconds(b_total + p.c.front()) * (1 - 1e-12));
    EXPECT_GE(in_seconds(exact), in_seconds(c_total + p.b.back()) * (1 - 1e-12));
    EXPECT_GE(in_seconds(exact), in_seconds(max(b_total, c_total)) * (1 - 1e-12));
  }
}

// Eq. 7 as printed is an approximation in both directions: it leaves out t_b^(L) and the aggregations of
// layers 2..C−1, and it charges all of t_b^(1..C−1) after the communication chain.
// Under-estimate, by hand: b = (0.1, 0.3), c = (0.01, 0.5). i=2: c2 = 0.5 > b1 = 0.1 → Case 2, C = 2.
// Eq. 7: c2 + b1 + c1 = 0.5 + 0.1 + 0.01 = 0.61. Exact: layer 2 ready at 0.3, aggregated until 0.8;
// layer 1 ready at 0.4, aggregated 0.8..0.81 → 0.81.
TEST(Equations, Eq7AsPrintedCanUnderestimate) {
  const std::vector<Seconds> b{seconds(0.1), seconds(0.3)};
  const std::vector<Seconds> c{seconds(0.01), seconds(0.5)};
  const auto h = eq::classify_hiding(b, c);
  ASSERT_EQ(h.which, 2);
  ASSERT_EQ(h.boundary, 2);
  EXPECT_NEAR(in_seconds(eq::iteration_case2(Seconds{}, Seconds{}, Seconds{}, b, c, 2, Seconds{})), 0.61, 1e-12);
  EXPECT_NEAR(in_seconds(eq::overlap_done_exact(b, c)), 0.81, 1e-12);
}

// When the condition holds only below C (a layer above C hides its aggregation again), the paper's
// C is still the first violation from the input side, and suffix_exceeds reports the mismatch.
// b = (0.3, 0.2, 0.1, 0.4), c = (0.05, 0.1, 0.5, 0.01): i=2: 0.1 ≤ 0.3; i=3: 0.5 > 0.2 → C = 3;
// i=4: 0.01 > 0.1? no → the printed "> for i = C..L" does not hold.
TEST(Equations, BoundaryLayerIsTheFirstViolationFromTheInputSide) {
  const std::vector<Seconds> b{seconds(0.3), seconds(0.2), seconds(0.1), seconds(0.4)};
  const std::vector<Seconds> c{seconds(0.05), seconds(0.1), seconds(0.5), seconds(0.01)};
  const auto h = eq::classify_hiding(b, c);
  EXPECT_EQ(h.which, 2);
  EXPECT_EQ(h.boundary, 3);
  EXPECT_FALSE(h.suffix_exceeds);
}

// Expected largest of n standard normals against the published tables (Harter 1961, Table 1; Teichroew
// 1956), to their 4 printed decimals, and the two closed forms: n = 2: 1/√π, n = 3: 3/(2√π).
// n = 64 is 2.3437, not the 2.3409 quoted in issue 14: an independent Simpson integration in Python
// (200,000 steps) gives 2.34373, and the same integral reproduces Harter's printed n = 60 (2.3193) and
// n = 100 (2.5076), which bracket it.
TEST(SynchronizationLoss, ExpectedMaxOfNormalsMatchesTheTables) {
  const std::pair<int, double> table[] = {{2, 0.5642},  {4, 1.0294},  {8, 1.4236},  {16, 1.7660},
                                          {32, 2.0697}, {60, 2.3193}, {64, 2.3437}, {100, 2.5076}};
  for (auto [n, e] : table) EXPECT_NEAR(eq::expected_max_normal(n), e, 5e-5) << "n = " << n;
  const double pi = std::acos(-1.0);
  EXPECT_NEAR(eq::expected_max_normal(2), 1.0 / std::sqrt(pi), 1e-9);
  EXPECT_NEAR(eq::expected_max_normal(3), 3.0 / (2.0 * std::sqrt(pi)), 1e-9);
  EXPECT_EQ(eq::expected_max_normal(1), 0.0);  // one worker waits for nobody
  EXPECT_EQ(eq::expected_max_normal(0), 0.0);
}

// Far beyond the tables: Φ^(n−1) in logs keeps the integral finite and growing like √(2 ln n); the
// mean of the largest of 1000 draws of n = 4096 normals (a simple Monte Carlo) agrees to 0.02.
TEST(SynchronizationLoss, ExpectedMaxStaysRightForManyWorkers) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> z;
  double sum = 0.0;
  for (int t = 0; t < 1000; ++t) {
    double m = -1e300;
    for (int i = 0; i < 4096; ++i) m = std::max(m, z(rng));
    sum += m;
  }
  EXPECT_NEAR(eq::expected_max_normal(4096), sum / 1000, 0.02);
  double prev = 0.0;
  for (int n : {2, 10, 100, 1000, 10'000, 100'000}) {
    const double e = eq::expected_max_normal(n);
    EXPECT_GT(e, prev);
    EXPECT_LT(e, std::sqrt(2.0 * std::log(static_cast<double>(n))));  // the classical upper bound
    prev = e;
  }
}

TEST(SynchronizationLoss, SyncWaitIsExpectedMaxTimesSigma) {
  // 16 workers, 100 ms of compute, cv 5 %: σ = 5 ms, wait = 1.7660 × 5 ms = 8.830 ms
  EXPECT_NEAR(in_seconds(eq::sync_wait(eq::expected_max_normal(16), 0.05, seconds(0.1))), 0.008830, 3e-7);
  EXPECT_EQ(eq::sync_wait(eq::expected_max_normal(1), 0.05, seconds(0.1)), Seconds{});
}

}  // namespace
}  // namespace dlscale
