// A GPU's datasheet figures: what the compute model and the memory-fit check read.
#pragma once

#include <string>

#include "dlscale/units.hpp"

namespace dlscale {

enum class Precision { fp32, fp16 };  // fp16 = mixed precision (fp16/bf16 tensor cores, fp32 master weights)

struct GpuSpec {
  std::string name;                 // e.g. "Tesla P40"
  std::string architecture;         // e.g. "pascal", "volta", "ampere", "hopper"
  int sm_version = 0;               // e.g. 61, 70, 80, 90
  FlopsPerSecond peak_fp32{};       // vector fp32
  FlopsPerSecond peak_fp16{};       // dense fp16/bf16 (tensor cores where present)
  FlopsPerSecond peak_tf32{};       // dense tf32 tensor; zero where it does not exist
  BytesPerSecond memory_bandwidth{};
  Bytes memory_size{};
  Hertz base_clock{};
  Hertz boost_clock{};
  int nvlink_count = 0;             // NVLinks per GPU
  int nvlink_generation = 0;
  int pcie_generation = 0;
  int pcie_width = 16;
  std::string source;               // where the figures come from

  [[nodiscard]] FlopsPerSecond peak(Precision p) const noexcept {
    return p == Precision::fp16 && peak_fp16 > FlopsPerSecond{} ? peak_fp16 : peak_fp32;
  }
};

}  // namespace dlscale
