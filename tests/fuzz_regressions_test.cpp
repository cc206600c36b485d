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

// fuzz_nvidia_smi: a header whose second column is binary bytes ("G\x80\xff…\xf39\0") over one row, GPU2.
// The importer took the column for a NIC and wrote it into the cluster YAML unquoted, which the cluster
// loader then rejected as malformed YAML. The fixture now stops at its only row, which is not GPU0 (line 2,
// column 1); the rule for device columns is checked by hand below.
TEST(FuzzRegressions, NvidiaSmiColumnThatIsNoDeviceName) {
  try {
    (void)import_nvidia_smi(fixture("nvidia-smi-binary-column-name.txt"), "capture.txt");
    FAIL() << "accepted a binary column name";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "capture.txt:2:1: row 'GPU2' where GPU0 belongs (the rows are GPU0, GPU1, ... in order, each once)");
  }
  // by hand, the fuzzer's bytes in a well-formed matrix: column 'G\x80\xff' starts at column 7 ("\tGPU0\t")
  try {
    (void)import_nvidia_smi("\tGPU0\tG\x80\xff\tCPU Affinity\nGPU0\t X \tSYS\t0-9\n", "b.txt");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "b.txt:1:7: column 'G\\x80\\xff' is not a device name "
                 "(a letter or digit, then letters, digits, '_', '-' or '.')");
  }
  // by hand: a NIC column with a YAML flow character is refused at its column (1 + "\tGPU0\tGPU1\t" = 12)...
  const std::string header = "\tGPU0\tGPU1\t";
  const std::string rows = "GPU0\t X \tNV1\tSYS\t0-9\nGPU1\tNV1\t X \tSYS\t0-9\n";
  try {
    (void)import_nvidia_smi(header + "mlx5,0}\tCPU Affinity\n" + rows, "c.txt");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "c.txt:1:12: column 'mlx5,0}' is not a device name "
                 "(a letter or digit, then letters, digits, '_', '-' or '.')");
  }
  // ...and an ordinary one goes into the YAML as the NIC's name
  const std::string yaml = import_nvidia_smi(header + "mlx5_0\tCPU Affinity\n" + rows, "c.txt");
  EXPECT_THAT(yaml, HasSubstr("{name: mlx5_0,"));
}

// fuzz_nvbandwidth: a number too large for a double ("2457777777.77e7777…"): nlohmann::json threw
// json::out_of_range (406, number overflow), not the parse_error the importer caught, so a foreign
// exception escaped. Now it is malformed JSON at the number's place: here the file's first byte.
TEST(FuzzRegressions, NvbandwidthNumberOverflow) {
  try {
    (void)parse_nvbandwidth(fixture("nvbandwidth-number-overflow.json"), "nvb.json");
    FAIL() << "accepted an overflowing number";
  } catch (const InputError& e) {
    EXPECT_THAT(std::string(e.what()),
                ::testing::StartsWith("nvb.json:1:1: malformed JSON: number overflow parsing '2457777777.77e"));
  }
  // by hand, inside the document: '1e999' starts at column 32 of {"nvbandwidth": {"testcases": [1e999]}}
  // ({ at 1, "nvbandwidth" 2-14, : 15, space 16, { 17, "testcases" 18-28, : 29, space 30, [ 31)
  try {
    (void)parse_nvbandwidth("{\"nvbandwidth\": {\"testcases\": [1e999]}}", "t.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "t.json:1:32: malformed JSON: number overflow parsing '1e999'");
  }
}

// fuzz_nvidia_smi (a timeout): the DGX-1V matrix pasted twice. The importer took all 16 rows as GPUs, 8
// of them in no column, and loading the YAML it wrote ran NCCL's channel search for over 10 s. Rows must
// be GPU0, GPU1, ... in order: line 9 (the second "GPU0", after the header and rows GPU0-GPU6) is refused.
TEST(FuzzRegressions, NvidiaSmiMatrixPastedTwice) {
  try {
    (void)import_nvidia_smi(fixture("nvidia-smi-matrix-pasted-twice.txt"), "capture.txt");
    FAIL() << "accepted a repeated GPU row";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "capture.txt:9:1: row 'GPU0' where GPU7 belongs (the rows are GPU0, GPU1, ... in order, each once)");
  }
  // by hand: rows GPU0 then GPU2 (GPU1 skipped) fail on line 3, column 1
  try {
    (void)import_nvidia_smi("\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV1\t0-9\nGPU2\tNV1\t X \t0-9\n", "s.txt");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "s.txt:3:1: row 'GPU2' where GPU1 belongs (the rows are GPU0, GPU1, ... in order, each once)");
  }
}

// fuzz_nccl_xml (seeded with tests/data/layouts): a <cpu> whose numaid holds binary bytes. The importer
// named the CPU vertex "cpu" + numaid and wrote the bytes into the cluster YAML, which then did not load.
// numaid is NCCL's NUMA node, a whole number (-1 where the kernel does not say): refused at the <cpu>.
TEST(FuzzRegressions, NcclXmlCpuNumaIdThatIsNoNumber) {
  try {
    (void)import_nccl_xml(fixture("nccl-xml-binary-numaid.xml"), "topo.xml");
    FAIL() << "accepted a binary numaid";
  } catch (const InputError& e) {
    EXPECT_THAT(std::string(e.what()), ::testing::StartsWith("topo.xml:2:3: <cpu> 'numaid' must be a whole number, not '\\x00"));
  }
  // by hand: numaid -1 is NCCL's "unknown" and is kept; "0x1" is not a number
  const std::string gpu =
      "<pci busid=\"0000:01:00.0\" class=\"0x030200\" link_speed=\"8 GT/s\" link_width=\"16\">"
      "<gpu dev=\"0\" sm=\"70\"/></pci>";
  EXPECT_THAT(import_nccl_xml("<system version=\"1\">\n<cpu numaid=\"-1\">" + gpu + "</cpu>\n</system>\n", "m.xml"),
              HasSubstr("{name: cpu-1,"));
  try {
    (void)import_nccl_xml("<system version=\"1\">\n<cpu numaid=\"0x1\">" + gpu + "</cpu>\n</system>\n", "h.xml");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "h.xml:2:1: <cpu> 'numaid' must be a whole number, not '0x1'");
  }
}

}  // namespace
}  // namespace dlscale
