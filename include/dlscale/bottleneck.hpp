// What bounds an iteration: one definition for every output (predict, simulate, sweep, report, explain).
// The bottleneck is the resource whose doubling gains the most samples/s, each doubling re-predicted as
// `explain` prints it (resources.hpp, with_doubled); beside it, the share of the iteration it holds on the
// critical path. Light on purpose: enums, a few functions, forward declarations.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "dlscale/detail/enum_names.hpp"
#include "dlscale/units.hpp"

namespace dlscale {

struct Prediction;
struct Breakdown;

/// The phase a bottleneck belongs to (the record's `bottleneck` field).
enum class Bottleneck { io, h2d, compute, communication, update };
template <>
struct EnumNames<Bottleneck> {
  static constexpr std::array<EnumName<Bottleneck>, 5> names{{
      {Bottleneck::io, "io"},
      {Bottleneck::h2d, "h2d"},
      {Bottleneck::compute, "compute"},
      {Bottleneck::communication, "communication"},
      {Bottleneck::update, "update"},
  }};
  static constexpr std::array<EnumName<Bottleneck>, 0> aliases{};
};

/// The resources `explain` doubles and the bottleneck is chosen from.
/// `host_issue` is the host's cost of issuing a kernel (eq. K20, a framework's `kernels: {host_issue}`): doubled,
/// the host issues twice as fast; it holds time only where a phase waits at the issue floor.
enum class Resource { gpu, host_to_gpu, intra_node, inter_node, storage, host_issue };
template <>
struct EnumNames<Resource> {
  static constexpr std::array<EnumName<Resource>, 6> names{{
      {Resource::gpu, "GPU (peak FLOP/s and memory bandwidth)"},
      {Resource::host_to_gpu, "host-to-GPU copies"},
      {Resource::intra_node, "intra-node GPU links"},
      {Resource::inter_node, "inter-node network"},
      {Resource::storage, "input (storage and decoding)"},
      {Resource::host_issue, "host (kernel issue)"},
  }};
  static constexpr std::array<EnumName<Resource>, 0> aliases{};
};
inline constexpr Resource kAllResources[] = {Resource::gpu,        Resource::host_to_gpu, Resource::intra_node,
                                             Resource::inter_node, Resource::storage,     Resource::host_issue};
inline constexpr std::size_t kResourceCount = std::size(kAllResources);

/// The iteration time with each resource doubled, in kAllResources order.
using DoubledTimes = std::array<Seconds, kResourceCount>;

/// The throughput gain of doubling a resource: t_iter / t_iter(doubled) − 1 (0.25: 25 % more samples/s).
double doubling_gain(Seconds baseline, Seconds doubled) noexcept;

/// The phase a resource's bottleneck is reported as: GPU and the host's kernel issue → compute (the floor
/// lengthens the compute phases), host-to-GPU → h2d, links → communication, storage and decoding → io.
Bottleneck phase_of(Resource r) noexcept;

/// The time a resource holds on the prediction's critical path (the segments of plan.hpp's critical_path):
///   storage      the reader's time not hidden (Breakdown::reader_loss)
///   host_to_gpu  the host-to-GPU copy
///   intra_node, inter_node  the communication not hidden behind backward
///   host_issue   the forward's, backward's and update's time at the host's issue floor beyond the GPU's own
///                work (eq. K20: Breakdown::forward_host + backward_host + update_host)
///   gpu          the rest of the GPU side: t_iter − reader loss − h2d − exposed communication − the
///                framework's fixed overhead − CPU offload's copies and CPU step − the host's issue floor
///                (forward, backward, the update on the path, the wait for the slowest GPU, GPU decoding)
Seconds time_on_path(Resource r, const Prediction& p) noexcept;

/// Eq. K20: the time the step's phases wait at the host's issue floor beyond the GPU's own work
/// (forward_host + backward_host + update_host); zero where the floor does not bind.
Seconds host_floor(const Breakdown& b) noexcept;

struct Bound {
  Resource resource = Resource::gpu;
  double gain = 0.0;   // doubling_gain of the resource
  double share = 0.0;  // time_on_path / t_iter
};

/// The bottleneck of a prediction: the resource whose doubling gains the most; gains within 1e-9 of each
/// other tie, and a tie goes to the resource first in kAllResources order.
Bound bound_by(const Prediction& p, const DoubledTimes& doubled) noexcept;

/// The bottleneck as the tables print it: "communication (47%): intra-node GPU links (15 GB/s)".
std::string bottleneck_text(const Prediction& p);

}  // namespace dlscale
