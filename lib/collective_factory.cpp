// Chooses the collective model a cluster description supports.
#include "dlscale/cluster.hpp"
#include "dlscale/collective.hpp"

namespace dlscale {

std::shared_ptr<const CollectiveModel> make_collective_model(const Cluster& cluster) {
  return make_alpha_beta_model(cluster);
}

}  // namespace dlscale
