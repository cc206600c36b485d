// libFuzzer target: nvidia-smi topo -m captures
#include "fuzz_support.hpp"
#include "dlscale/topology.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dlscale;
  fuzz::expect_clean([&] { (void)import_nvidia_smi(fuzz::as_text(data, size), "fuzz.txt"); });
  return 0;
}
