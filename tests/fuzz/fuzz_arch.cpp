// libFuzzer target: compact architecture descriptions (models/arch/*.yaml)
#include "fuzz_support.hpp"
#include "dlscale/zoo.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dlscale;
  fuzz::expect_clean([&] { (void)build_network_from_string(fuzz::as_text(data, size), "fuzz.yaml"); });
  return 0;
}
