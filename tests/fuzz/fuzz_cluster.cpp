// libFuzzer target: cluster files (simple form and topology graph: the `node:` and `fabric:` sections).
// A cluster that loads must also answer the questions a prediction asks of its graph.
#include "dlscale/io.hpp"
#include "dlscale/topology.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dlscale;
  fuzz::expect_clean([&] {
    const Cluster c = parse_cluster(fuzz::as_text(data, size), "fuzz.yaml");
    if (!c.topology) return;
    const Topology& t = *c.topology;
    // The loader already ran NCCL's ring search over the node; a second search (trees, or across nodes
    // with the NICs) can take seconds under ASan, so only the cheap path queries are asked here.
    const int last = t.gpus_per_node() - 1;
    (void)t.path(0, last);
    (void)t.gpu_link_bandwidth(last);
    (void)t.measured_p2p(0, last);
    if (t.max_nodes() > 1) {
      (void)t.path(0, t.gpus_per_node());
      if (!t.nic_names().empty()) (void)t.nic_path(last, static_cast<int>(t.nic_names().size()) - 1);
    }
  });
  return 0;
}
