// Chooses the collective model a cluster description supports: NCCL's cost model on the topology
// graph when the cluster file has one, else the α-β ring of lib/collective over the simple bandwidths.
#include "dlscale/cluster.hpp"
#include "dlscale/collective.hpp"
#include "nccl/model.hpp"

namespace dlscale {

std::shared_ptr<const CollectiveModel> make_collective_model(const Cluster& cluster) {
  if (cluster.topology) return nccl::make_nccl_model(cluster.topology, cluster.name);
  return make_alpha_beta_model(cluster);
}

}  // namespace dlscale
