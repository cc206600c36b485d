// libFuzzer target: NCCL_TOPO_DUMP_FILE XML
#include "dlscale/io.hpp"
#include "dlscale/topology.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dlscale;
  std::string yaml;
  fuzz::expect_clean([&] { yaml = import_nccl_xml(fuzz::as_text(data, size), "fuzz.xml"); });
  if (!yaml.empty()) fuzz::expect_loadable(yaml, [](const std::string& y) { (void)parse_cluster(y, "imported.yaml"); });
  return 0;
}
