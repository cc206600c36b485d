// Inputs the fuzz targets (tests/fuzz) found to crash a parser, kept as regression tests: each must now
// be rejected with one clean InputError that names the file and line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dlscale/calibration.hpp"
#include "dlscale/error.hpp"
#include "dlscale/topology.hpp"
#include "support/run.hpp"

namespace dlscale {
namespace {

using ::testing::HasSubstr;

std::string fixture(const std::string& name) {
  return test::slurp(std::string(DLSCALE_TEST_DATA_DIR) + "/fuzz-regressions/" + name);
}

// fuzz_nvidia_smi: the DGX-1V capture with GPU1's row mutated to "GPU1\vNV1\t X \tNV6…": the first cell
// is not separated, so the cell under GPU0 reads " X " and a later one is not an NVLink count;
// std::stoi threw std::invalid_argument out of the parser.
TEST(FuzzRegressions, NvidiaSmiCellThatIsNoNvlinkCount) {
  try {
    (void)import_nvidia_smi(fixture("nvidia-smi-nv-count-not-a-number.txt"), "capture.txt");
    FAIL() << "accepted a malformed matrix";
  } catch (const InputError& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("capture.txt:"));
  }
}

// The same family, written by hand: a column header that names no GPU row, and an "NV" cell without a count.
TEST(FuzzRegressions, NvidiaSmiColumnNamesNoGpuRow) {
  const std::string text = "\tGPU0\tGPU7\tCPU Affinity\nGPU0\t X \tNV1\t0-9\nGPU1\tNV1\t X \t0-9\n";
  try {
    (void)import_nvidia_smi(text, "c.txt");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "c.txt:1:7: column 'GPU7' names no GPU row (the matrix has GPU0 … GPU1)");
  }
  const std::string nv = "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNVx\t0-9\nGPU1\tNV1\t X \t0-9\n";
  try {
    (void)import_nvidia_smi(nv, "n.txt");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "n.txt:2:10: 'NVx' is not an NVLink count like NV2");
  }
}

// nccl-tests headers whose numbers overflow int (std::stoi threw std::out_of_range).
TEST(FuzzRegressions, NcclTestsNumbersThatOverflow) {
  const std::string log = "# nThread 99999999999999999999 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor)\n";
  try {
    (void)parse_nccl_tests(log, "big.log");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "big.log:1:1: nThread and nGpus must be whole numbers from 1 to 65536");
  }
}

}  // namespace
}  // namespace dlscale
