// A collective model for hand-worked tests: every operation of S bytes takes S / (1 GB/s) on more than one
// GPU, nothing on one.
#pragma once

#include <string>

#include "dlscale/collective.hpp"

namespace dlscale::test {

class OneGBps final : public CollectiveModel {
 public:
  Seconds time(CollectiveOp, Bytes size, const GpuPlacement& at) const override {
    return at.gpus > 1 ? size / gigabytes_per_second(1) : Seconds{};
  }
  std::string describe() const override { return "1 GB/s test model"; }
};

}  // namespace dlscale::test
