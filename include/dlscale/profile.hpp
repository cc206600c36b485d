// Measured single-GPU phase times of one framework training one model, and optional measurements
// at larger GPU counts that override the model's estimates (the shape of issue 2 / Table V).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "dlscale/units.hpp"

namespace dlscale {

struct PhaseTimes {
  Seconds io{}, h2d{}, forward{}, backward{}, update{};
};

struct MeasuredAt {
  std::optional<Seconds> io;
  std::optional<Seconds> h2d;
  std::optional<Seconds> comm;
  std::optional<Seconds> iteration;     // kept for comparison; never used to compute a prediction
  std::optional<Seconds> iteration_sd;  // its standard deviation over the measured iterations: data for a
                                        // framework's jitter_cv (tests/validation_test.cpp), not read by a prediction
};

struct Profile {
  std::string source_file;
  std::string model;
  std::string framework;
  std::string cluster;  // optional: the system it was measured on
  int batch_per_gpu = 0;
  PhaseTimes single_gpu;
  /// What `io` measured (`io_measures:`): the reader's own time per iteration (false, the default and the
  /// meaning of every file written before the key existed) or the wait the GPU saw for its batch (true).
  bool io_is_exposed_wait = false;
  std::map<int, MeasuredAt> measured;  // by total GPU count
};

}  // namespace dlscale
