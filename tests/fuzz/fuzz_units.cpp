// libFuzzer target: the unit-string parsers
#include "dlscale/units.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dlscale;
  const std::string s = fuzz::as_text(data, size);
  fuzz::expect_clean([&] { (void)parse_seconds(s); });
  fuzz::expect_clean([&] { (void)parse_bytes(s); });
  fuzz::expect_clean([&] { (void)parse_bandwidth(s); });
  fuzz::expect_clean([&] { (void)parse_flops(s); });
  fuzz::expect_clean([&] { (void)parse_flops_rate(s); });
  fuzz::expect_clean([&] { (void)parse_frequency(s); });
  return 0;
}
