// libFuzzer target: profile files
#include "fuzz_support.hpp"
#include "dlscale/io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dlscale;
  const auto& p = fuzz::write_scratch(data, size, ".yaml");
  fuzz::expect_clean([&] { (void)load_profile(p); });
  return 0;
}
