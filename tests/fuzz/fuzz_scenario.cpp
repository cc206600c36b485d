// libFuzzer target: reproduction scenario files (examples/papers/*.yaml, docs/reproduce.md): the grids
// of systems, models, frameworks, GPU counts and batches, selectors, variants, overrides and measured
// values. Parsing only: predicting a whole paper takes up to seconds, far too slow to fuzz.
#include "fuzz_support.hpp"
#include "repro/spec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dlscale;
  const auto& p = fuzz::write_scratch(data, size, ".yaml");  // the parser reads a path only
  fuzz::expect_clean([&] { (void)repro::load_paper(p); });
  return 0;
}
