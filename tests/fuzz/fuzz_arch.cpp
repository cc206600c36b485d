// libFuzzer target: compact architecture descriptions (models/arch/*.yaml)
#include "dlscale/zoo.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dlscale;
  fuzz::expect_clean([&] { (void)build_network_from_string(fuzz::as_text(data, size), "fuzz.yaml"); });
  return 0;
}
