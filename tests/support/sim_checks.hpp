// Test helper shared by sim_test and robustness_test: when the simulator may legitimately differ from the
// closed form.
#pragma once

#include "dlscale/predict.hpp"

namespace dlscale::test {

/// The closed form's per-layer-update assumption: each layer's update ends before the next iteration's
/// forward reaches it (the simulator enforces that dependency; eq. 6/7 ignore it). With per-layer
/// aggregation units and FIFO order, done(i) ≤ done(1); the forward of layer i starts at
/// done(1) + u(1) + h2d + Σ_{j<i} f(j) in the next iteration. Where this is false the simulator is slower.
inline bool per_layer_update_never_waits(const Predictor& p, const Prediction& closed) {
  const auto& t = p.layer_times();
  const auto& st = p.scenario().strategy;
  if (st.update != UpdatePlacement::per_layer || st.aggregation == Aggregation::broadcast_reduce || st.overlap == Overlap::none)
    return true;
  if (st.overlap == Overlap::bucketed) {
    // Buckets update as wholes: a sufficient condition is that all updates together fit before the
    // first layer's next forward (each bucket's update is at most their sum).
    Seconds all{};
    for (auto u : t.update) all += u;
    return all <= t.update.front() + closed.breakdown.h2d;
  }
  Seconds f_before{};
  for (std::size_t i = 0; i < t.update.size(); ++i) {
    if (t.update[i] > t.update.front() + closed.breakdown.h2d + f_before) return false;
    f_before += t.forward[i];
  }
  return true;
}

}  // namespace dlscale::test
