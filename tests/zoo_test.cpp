// Model zoo and GPU catalogue: the shipped files load, and their counts match published figures.
#include <gtest/gtest.h>

#include <string>

#include "dlscale/io.hpp"

namespace dlscale {
namespace {

TEST(GpuCatalogue, HasEveryIdTheTopologiesUse) {
  for (const char* id : {"p40", "p40-base-clock", "p100-pcie", "p100-sxm2", "v100-pcie", "v100-sxm2", "v100-sxm3",
                         "rtx2080ti", "a100-sxm4-40gb", "a100-sxm4-80gb", "h100-sxm", "h100-pcie", "h200", "rtx4090"}) {
    SCOPED_TRACE(id);
    const GpuSpec g = find_gpu(id);
    EXPECT_GT(g.peak_fp32, FlopsPerSecond{});
    EXPECT_GE(g.peak_fp16, g.peak_fp32);
    EXPECT_GT(g.memory_bandwidth, BytesPerSecond{});
    EXPECT_GT(g.memory_size, Bytes{});
  }
}

TEST(GpuCatalogue, DatasheetFiguresTheReferencePapersQuote) {
  // /work/shared/docs/model.md: V100 15.7 TFLOPS fp32, 125 tensor (SXM2), PCIe 14 / 112, 900 GB/s;
  // RTX 2080 Ti 13.4 TFLOPS, 616 GB/s; P100-PCIe 9.3 TFLOPS.
  EXPECT_DOUBLE_EQ(in_teraflops_per_second(find_gpu("v100-sxm2").peak_fp32), 15.7);
  EXPECT_DOUBLE_EQ(in_teraflops_per_second(find_gpu("v100-sxm2").peak_fp16), 125.0);
  EXPECT_DOUBLE_EQ(in_teraflops_per_second(find_gpu("v100-pcie").peak_fp32), 14.0);
  EXPECT_DOUBLE_EQ(in_teraflops_per_second(find_gpu("v100-pcie").peak_fp16), 112.0);
  EXPECT_DOUBLE_EQ(in_gigabytes_per_second(find_gpu("v100-pcie").memory_bandwidth), 900.0);
  EXPECT_DOUBLE_EQ(in_teraflops_per_second(find_gpu("rtx2080ti").peak_fp32), 13.4);
  EXPECT_DOUBLE_EQ(in_gigabytes_per_second(find_gpu("rtx2080ti").memory_bandwidth), 616.0);
  EXPECT_DOUBLE_EQ(in_teraflops_per_second(find_gpu("p100-pcie").peak_fp32), 9.3);
}

TEST(ModelFiles, FirstNetworksLoad) {
  for (const char* name : {"alexnet", "googlenet", "resnet50"}) {
    SCOPED_TRACE(name);
    const Network net = load_network(resolve(DataKind::network, name, "--model"));
    EXPECT_EQ(net.name, name);
    EXPECT_FALSE(net.layers.empty());
  }
}

}  // namespace
}  // namespace dlscale
