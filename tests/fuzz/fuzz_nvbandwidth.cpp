// libFuzzer target: nvbandwidth JSON
#include "fuzz_support.hpp"
#include "dlscale/calibration.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dlscale;
  const auto& p = fuzz::write_scratch(data, size, ".json");
  fuzz::expect_clean([&] { (void)import_nvbandwidth(p); });
  return 0;
}
