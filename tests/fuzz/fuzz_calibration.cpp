// libFuzzer target: calibration YAML files
#include "fuzz_support.hpp"
#include "dlscale/calibration.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dlscale;
  const auto& p = fuzz::write_scratch(data, size, ".yaml");
  fuzz::expect_clean([&] { (void)load_calibration(p); });
  return 0;
}
