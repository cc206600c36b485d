// The scenario with one resource doubled or its links changed: what `explain` and the bottleneck of every
// prediction compare against (docs/planning.md, "The bottleneck"). The Predictor uses it, so it sits
// with the Predictor, below lib/plan.
#pragma once

#include <memory>

#include "dlscale/bottleneck.hpp"
#include "dlscale/cluster.hpp"
#include "dlscale/collective.hpp"
#include "dlscale/predict.hpp"

namespace dlscale {

/// The scenario with one resource doubled:
///   gpu          peak FLOP/s (fp32, fp16, tf32) and memory bandwidth ×2; measured layer or profile
///                forward/backward/update times ×½ (the roofline halves every term)
///   host_to_gpu  pinned and pageable copy bandwidth ×2; a profile's h2d ×½
///   intra_node   the intra-node link bandwidth ×2 (see with_links)
///   inter_node   the inter-node link bandwidth ×2 (see with_links)
///   storage      disk and page-cache bandwidth ×2; a profile's io ×½
///   host_issue   the framework's host_issue ×½ (eq. K20: the host issues kernels twice as fast); measured or
///                profiled times are unchanged (no floor is charged on them)
/// Predictor::doubled predicts the iteration with each of them; explain and the bottleneck read it.
Scenario with_doubled(const Scenario& sc, Resource r);

/// A collective model whose links changed from `before` to `after` (simple-form links): the α-β ring
/// on the new links as is, and a graph (NCCL) or calibrated model `base` scaled, size by size, by the
/// ratio of the α-β ring's times on the new and the old links — a first-order rescaling, since the
/// graph itself cannot be rewired. Returns `base` unchanged when the links did not change.
std::shared_ptr<const CollectiveModel> rescale_links(std::shared_ptr<const CollectiveModel> base, const Cluster& before,
                                                     const Cluster& after);
/// The scenario on a cluster whose simple links were changed (`changed`, same nodes and GPUs): the
/// cluster replaced and, where the scenario's collective model is a graph or a calibration, that model
/// rescaled with rescale_links; measured communication totals of a profile are dropped.
Scenario with_links(const Scenario& sc, const Cluster& changed);
/// Whether the scenario's collective model is the α-β ring on its simple links (no graph, no calibration).
bool uses_simple_links(const Scenario& sc) noexcept;

}  // namespace dlscale
