// libFuzzer target: sweep specs (docs/planning.md). Names resolve against the data folder
// (DLSCALE_DATA_DIR), so seeds that name shipped clusters, models and frameworks reach the grid.
#include "dlscale/sweep.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dlscale;
  fuzz::expect_clean([&] {
    const SweepSpec spec = parse_sweep_spec(fuzz::as_text(data, size), "fuzz.yaml");
    (void)spec.configurations();
  });
  return 0;
}
