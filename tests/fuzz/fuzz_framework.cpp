// libFuzzer target: framework strategy files
#include "dlscale/io.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dlscale;
  fuzz::expect_clean([&] { (void)parse_strategy(fuzz::as_text(data, size), "fuzz.yaml"); });
  return 0;
}
