// Test helpers for topology graphs: a shipped cluster's graph (loaded once), a bandwidth in GB/s and a NIC's
// index by name. Used by topology_test and import_test.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "dlscale/io.hpp"
#include "dlscale/topology.hpp"

namespace dlscale::test {

/// The topology graph of the shipped cluster `name` (models/clusters), loaded once per test program.
inline const Topology& topo_of(const std::string& name) {
  static std::map<std::string, Cluster> cache;
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, load_cluster(resolve(DataKind::cluster, name, "--cluster"))).first;
  EXPECT_TRUE(it->second.topology) << name;
  return *it->second.topology;
}

inline double gbs(BytesPerSecond b) { return in_gigabytes_per_second(b); }

/// The index of the NIC called `name` among the graph's NICs (their count when there is none).
inline int nic_index(const Topology& t, const std::string& name) {
  const auto n = t.nic_names();
  return static_cast<int>(std::find(n.begin(), n.end(), name) - n.begin());
}

}  // namespace dlscale::test
