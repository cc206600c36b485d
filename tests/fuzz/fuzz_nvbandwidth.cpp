// libFuzzer target: nvbandwidth JSON
#include "dlscale/calibration.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dlscale;
  std::vector<std::string> warnings;
  fuzz::expect_clean([&] { (void)parse_nvbandwidth(fuzz::as_text(data, size), "fuzz.json", &warnings); });
  return 0;
}
