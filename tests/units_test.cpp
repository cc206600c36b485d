// Unit types: dimensional operators, parsing of unit strings, formatting.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <type_traits>
#include <vector>

#include "dlscale/error.hpp"
#include "dlscale/format.hpp"
#include "dlscale/gpu.hpp"
#include "dlscale/units.hpp"

namespace dlscale {
namespace {

TEST(Units, DimensionalOperatorsProduceTheRightTypes) {
  static_assert(std::is_same_v<decltype(Bytes{} / BytesPerSecond{}), Seconds>);
  static_assert(std::is_same_v<decltype(Flops{} / FlopsPerSecond{}), Seconds>);
  static_assert(std::is_same_v<decltype(BytesPerSecond{} * Seconds{}), Bytes>);
  static_assert(std::is_same_v<decltype(Bytes{} / Seconds{}), BytesPerSecond>);
  static_assert(std::is_same_v<decltype(Seconds{} / Seconds{}), double>);
  static_assert(!std::is_convertible_v<double, Seconds>, "no implicit double -> Seconds");
  static_assert(!std::is_convertible_v<Seconds, double>, "no implicit Seconds -> double");
  // 588 MiB over 3.5 GiB/s = 588 / (3.5 · 1024) s = 0.1640625 s
  EXPECT_DOUBLE_EQ(in_seconds(mebibytes(588) / gibibytes_per_second(3.5)), 588.0 / (3.5 * 1024.0));
  EXPECT_DOUBLE_EQ(in_bytes(gigabytes_per_second(7) * seconds(2)), 14e9);
  EXPECT_DOUBLE_EQ(mebibytes(2) / mebibytes(1), 2.0);
  EXPECT_DOUBLE_EQ(in_seconds(teraflops_per_second(10).base() > 0 ? flops(1e13) / teraflops_per_second(10) : Seconds{}), 1.0);
}

TEST(Units, DecimalAndBinaryPrefixesAreDifferent) {
  EXPECT_DOUBLE_EQ(in_bytes(parse_bytes("1 GB")), 1e9);
  EXPECT_DOUBLE_EQ(in_bytes(parse_bytes("1 GiB")), 1073741824.0);
  EXPECT_DOUBLE_EQ(in_bytes(parse_bytes("25 MiB")), 25.0 * 1048576.0);
  EXPECT_DOUBLE_EQ(in_bytes(parse_bytes("602112 B")), 602112.0);
  EXPECT_DOUBLE_EQ(in_bytes(parse_bytes("1.5 kB")), 1500.0);
}

TEST(Units, ParsesBandwidthsInBytesAndBits) {
  EXPECT_DOUBLE_EQ(in_bytes_per_second(parse_bandwidth("13 GB/s")), 13e9);
  EXPECT_DOUBLE_EQ(in_bytes_per_second(parse_bandwidth("56 Gb/s")), 7e9);  // 56e9 bits / 8
  EXPECT_DOUBLE_EQ(in_bytes_per_second(parse_bandwidth("750 MB/s")), 750e6);
  EXPECT_DOUBLE_EQ(in_bytes_per_second(parse_bandwidth("100 Gbps")), 12.5e9);
  EXPECT_DOUBLE_EQ(in_bytes_per_second(parse_bandwidth("25GBps")), 25e9);
  EXPECT_DOUBLE_EQ(in_bytes_per_second(parse_bandwidth("3.5 GiB/s")), 3.5 * 1073741824.0);
  EXPECT_DOUBLE_EQ(in_bytes_per_second(parse_bandwidth("10 Mb/s")), 1.25e6);
}

TEST(Units, ParsesTimesFlopsAndFrequencies) {
  EXPECT_DOUBLE_EQ(in_seconds(parse_seconds("5 us")), 5e-6);
  EXPECT_DOUBLE_EQ(in_seconds(parse_seconds("5us")), 5e-6);
  EXPECT_DOUBLE_EQ(in_seconds(parse_seconds("0.0359 s")), 0.0359);
  EXPECT_DOUBLE_EQ(in_seconds(parse_seconds("12 ms")), 0.012);
  EXPECT_DOUBLE_EQ(in_seconds(parse_seconds("250 ns")), 250e-9);
  EXPECT_DOUBLE_EQ(in_seconds(parse_seconds("2 min")), 120.0);
  EXPECT_DOUBLE_EQ(in_seconds(parse_seconds("1e-3 s")), 1e-3);
  EXPECT_DOUBLE_EQ(parse_flops_rate("15.7 TFLOPS").base(), 15.7e12);
  EXPECT_DOUBLE_EQ(parse_flops_rate("125 TFLOP/s").base(), 125e12);
  EXPECT_DOUBLE_EQ(parse_flops("4.1 GFLOP").base(), 4.1e9);
  EXPECT_DOUBLE_EQ(in_megahertz(parse_frequency("1530 MHz")), 1530.0);
}

TEST(Units, RejectsMissingWrongAndNegativeUnits) {
  EXPECT_THROW((void)parse_seconds("5"), UnitError);
  EXPECT_THROW((void)parse_bandwidth("13 GBs"), UnitError);
  EXPECT_THROW((void)parse_bandwidth("-5 GB/s"), UnitError);
  EXPECT_THROW((void)parse_bandwidth("0 GB/s"), UnitError);
  EXPECT_THROW((void)parse_bytes("25 MiB/s"), UnitError);
  EXPECT_THROW((void)parse_seconds("fast"), UnitError);
  EXPECT_THROW((void)parse_seconds(""), UnitError);
  EXPECT_THROW((void)parse_flops_rate("15 TB/s"), UnitError);
  try {
    (void)parse_bandwidth("13 GBs");
    FAIL();
  } catch (const UnitError& e) {
    EXPECT_STREQ(e.what(), "unknown bandwidth unit 'GBs' in '13 GBs' (use B/s, MB/s, GB/s, GiB/s, Mb/s, Gb/s)");
  }
  try {
    (void)parse_seconds("5");
    FAIL();
  } catch (const UnitError& e) {
    EXPECT_STREQ(e.what(), "'5' has no unit (time needs one, e.g. \"5 us\")");
  }
}

TEST(Units, FormatsWithAScaleChosenForTheValue) {
  EXPECT_EQ(fmt::format("{}", seconds(0.0359)), "35.9 ms");
  EXPECT_EQ(fmt::format("{}", seconds(1.478)), "1.478 s");
  EXPECT_EQ(fmt::format("{}", microseconds(5)), "5 us");
  EXPECT_EQ(fmt::format("{:.2f}", seconds(0.0359)), "35.90 ms");
  EXPECT_EQ(fmt::format("{}", gigabits_per_second(56)), "7 GB/s");
  EXPECT_EQ(fmt::format("{}", megabytes(588)), "588 MB");
  EXPECT_EQ(fmt::format("{}", teraflops_per_second(15.7)), "15.7 TFLOPS");
}

}  // namespace
}  // namespace dlscale
