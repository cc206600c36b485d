// The bottleneck of an iteration (include/dlscale/bottleneck.hpp): the resource whose doubling gains the
// most, and the share of the iteration it holds.
#include "dlscale/bottleneck.hpp"

#include <fmt/format.h>

#include "dlscale/predict.hpp"

namespace dlscale {

double doubling_gain(Seconds baseline, Seconds doubled) noexcept { return doubled > Seconds{} ? baseline / doubled - 1.0 : 0.0; }

Bottleneck phase_of(Resource r) noexcept {
  switch (r) {
    case Resource::gpu:
    case Resource::host_issue:
      return Bottleneck::compute;
    case Resource::host_to_gpu:
      return Bottleneck::h2d;
    case Resource::intra_node:
    case Resource::inter_node:
      return Bottleneck::communication;
    case Resource::storage:
      return Bottleneck::io;
  }
  return Bottleneck::compute;
}

Seconds host_floor(const Breakdown& b) noexcept { return b.forward_host + b.backward_host + b.update_host; }

Seconds time_on_path(Resource r, const Prediction& p) noexcept {
  const Breakdown& b = p.breakdown;
  switch (r) {
    case Resource::storage:
      return b.reader_loss;
    case Resource::host_to_gpu:
      return b.h2d;
    case Resource::intra_node:
    case Resource::inter_node:
      return b.comm_exposed;
    case Resource::host_issue:
      return host_floor(b);
    case Resource::gpu: {
      // The critical path adds up to t_iter (plan.hpp, critical_path): what is left once the other
      // resources' segments, the fixed overhead, the CPU offload's steps and the host's issue floor are
      // taken out is the GPU's (the input hand-over, eq. F2a, is the training thread's, not the GPU's).
      const Seconds offload = b.offload_d2h_exposed + b.offload_cpu + b.offload_h2d;
      return max(
          p.iteration_time - b.reader_loss - b.h2d - b.comm_exposed - b.overhead - offload - host_floor(b) - b.input_handover,
          Seconds{});
    }
  }
  return {};
}

Bound bound_by(const Prediction& p, const DoubledTimes& doubled) noexcept {
  constexpr double kTie = 1e-9;
  Bound best;
  bool any = false;
  for (std::size_t i = 0; i < kResourceCount; ++i) {
    const double gain = doubling_gain(p.iteration_time, doubled[i]);
    if (!any || gain > best.gain + kTie) {
      best.resource = kAllResources[i];
      best.gain = gain;
      any = true;
    }
  }
  best.share = p.iteration_time > Seconds{} ? time_on_path(best.resource, p) / p.iteration_time : 0.0;
  return best;
}

std::string bottleneck_text(const Prediction& p) {
  return fmt::format("{} ({:.0f}%): {}", to_string(p.bottleneck), 100.0 * p.bottleneck_share, p.bottleneck_resource.str());
}

}  // namespace dlscale
