// A GPU cluster in the simple form: nodes of identical GPUs, and the bandwidths that the S-SGD model
// needs. The topology issue adds a graph (`topology`) that refines the GPU-to-GPU links; the simple
// bandwidths stay as the fallback and as what a hand-written cluster file gives.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dlscale/gpu.hpp"
#include "dlscale/input_pipeline.hpp"
#include "dlscale/units.hpp"

namespace dlscale {

class Topology;  // defined by the topology component; opaque here

struct LinkSpec {
  BytesPerSecond bandwidth{};  // per direction
  Seconds latency{};
};

struct Cluster {
  std::string name;
  std::string description;
  std::string source_file;
  int max_nodes = 1;
  int gpus_per_node = 1;
  GpuSpec gpu;
  BytesPerSecond h2d_pinned{};    // host -> GPU copy from pinned memory
  BytesPerSecond h2d_pageable{};  // host -> GPU copy from pageable memory
  LinkSpec intra_node;            // GPU <-> GPU inside a node (the slowest pair a ring uses)
  LinkSpec inter_node;            // node <-> node (one NIC per node unless the topology says more)
  BytesPerSecond disk{};          // B_disk
  BytesPerSecond page_cache{};    // B_cache
  bool dataset_in_page_cache = true;
  /// The `input:` section (docs/input-formats.md): storage tiers, decode on CPU cores or the GPU, synthetic
  /// data. Absent: the reader moves the network's input bytes at B_cache or B_disk (Section IV-A).
  std::optional<InputPipeline> input;
  /// GPUDirect RDMA between the NICs and the GPUs (`gpudirect_rdma: false`: every inter-node byte is staged
  /// through host memory at eq::staged_bandwidth), and the host memory bandwidth that staging uses.
  bool gpudirect_rdma = true;
  BytesPerSecond host_memory{};  // 0: not limiting
  /// Host memory of one node (`host_memory_size: "2 TB"`), which CPU offload of the optimiser state fills
  /// (docs/model.md, eq. S9d); 0: not given (kDefaultHostMemoryBytes is assumed).
  Bytes host_memory_size{};
  std::shared_ptr<const Topology> topology;  // null for the simple form
  /// What-if scales of the graph's links (with_doubled, resources.hpp): a point-to-point path on `topology` inside a
  /// node (intra) or between nodes (inter) runs its bytes this many times faster, its latency as it was (eq. P12's
  /// sends of a layout). 1: as the graph says. The collectives' graph model is rescaled on its own (rescale_links).
  double topology_intra_scale = 1.0;
  double topology_inter_scale = 1.0;
  /// The framework a prediction on this cluster takes when no `--framework` names one (`framework: NAME`, a
  /// name in models/frameworks/); empty: the tools' default (caffe-mpi, the Shi & Chu runs).
  std::string framework;
  double price_per_gpu_hour = 0.0;  // optional `price_per_gpu_hour: "2.5 USD"`; 0 = not given
  /// Values the file's writer assumed rather than read (`assumed: {framework: ..., input: ..., gpu: ...}`, as
  /// `topo import` writes them): key (framework, input, gpu, cpu, nics) and what was assumed. Every
  /// prediction on the cluster says them, less those the command line replaces.
  std::vector<std::pair<std::string, std::string>> assumed;
  std::string currency;  // e.g. "USD"; empty when no price is given

  [[nodiscard]] int max_gpus() const noexcept { return max_nodes * gpus_per_node; }
};

/// A network between nodes given as `KIND:SPEED[:COUNT]` (`infiniband:200Gb/s:8`): the `fabric` of
/// ClusterOverrides or of a sweep's cluster item.
struct FabricSpec {
  std::string kind;        // "infiniband" or "ethernet"
  BytesPerSecond speed{};  // per NIC, per direction
  int nics = 0;            // NICs per node; 0: the node's own NICs (one when it has none)
};
/// Parses `KIND:SPEED[:COUNT]`; a malformed one is an InputError whose key is `field` (the command line
/// says the option that gave it).
FabricSpec parse_fabric_spec(std::string_view text, std::string_view field = "fabric");

/// What `--nodes N --fabric KIND:SPEED[:COUNT]` change in a cluster file as it is loaded: N nodes (0: the
/// file's) joined by that network (the file's NICs take its speed; COUNT adds NICs beside the GPUs, or
/// keeps the first COUNT of the file's).
struct ClusterOverrides {
  int nodes = 0;
  std::optional<FabricSpec> fabric;
  std::optional<GpuSpec> gpu;  // every GPU of the cluster, as if its file's `gpu:` named this one
  /// A job on the first K GPUs of each node (--gpus-per-node; 0: all): 64 of an NVL72 rack's 72, half a DGX. The
  /// cluster becomes one of K-GPU nodes; its graph keeps what those GPUs reach (topo::read_topology's job_gpus).
  int gpus_per_node = 0;
  /// Read only what a question about the graph needs (`dlscale collective`): the input pipeline (and the
  /// catalogues it names), the framework's check against models/frameworks/ and the intra-node link
  /// derived by a channel search are skipped, left at their defaults. Not a change to the cluster's values.
  bool graph_only = false;
  [[nodiscard]] bool empty() const noexcept { return nodes == 0 && !fabric && !gpu && gpus_per_node == 0; }
};

}  // namespace dlscale
