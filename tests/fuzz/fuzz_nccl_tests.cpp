// libFuzzer target: nccl-tests logs (all_reduce_perf and friends, old and new columns)
#include "dlscale/calibration.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dlscale;
  fuzz::expect_clean([&] { (void)parse_nccl_tests(fuzz::as_text(data, size), "fuzz.log"); });
  return 0;
}
