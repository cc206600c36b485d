// libFuzzer target: NCCL_TOPO_DUMP_FILE XML
#include "fuzz_support.hpp"
#include "dlscale/topology.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dlscale;
  fuzz::expect_clean([&] { (void)import_nccl_xml(fuzz::as_text(data, size), "fuzz.xml"); });
  return 0;
}
