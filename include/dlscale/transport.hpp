// How bytes cross between nodes (docs/input-formats.md, "Transports"): NCCL over RDMA with GPUDirect (the
// collective models' own assumption), NCCL staging through host memory where the cluster has no GPUDirect
// RDMA, and the RPC transports of 2017 parameter servers (TensorFlow 1.x gRPC, MXNet's ps-lite), which reach
// only part of the link over TCP (IPoIB), pay a software cost per message and copy every tensor through host
// memory. A framework file names its transport (models/frameworks/transports/NAME.yaml).
#pragma once

#include <memory>
#include <string>

#include "dlscale/collective.hpp"
#include "dlscale/units.hpp"

namespace dlscale {

struct Transport {
  std::string name = "nccl";  // the default: the collective model as it is
  std::string description;
  double wire_efficiency = 1.0;  // share of the inter-node link the protocol reaches (TCP over IPoIB < 1)
  Seconds per_message{};         // software cost of one message (an RPC, a ZeroMQ send) per direction
  bool staged = false;           // copies every tensor through host memory even where GPUDirect RDMA exists
  /// `allreduce: root`: across nodes an all-reduce is reduced at one root node and broadcast back, a tensor at a
  /// time on host copies (eq. transport-3: MPI as CNTK 2.1 calls it); default: the collective model's algorithm.
  bool root_allreduce = false;
  std::string source;

  [[nodiscard]] bool is_default() const noexcept {
    return wire_efficiency == 1.0 && per_message == Seconds{} && !staged && !root_allreduce;
  }
};

namespace eq {

/// Transport-1: a transfer staged through host memory (no GPUDirect RDMA) is pipelined in chunks through a
/// host bounce buffer: GPU → host over PCIe, host → NIC, and the mirror at the receiver. Each byte crosses
/// PCIe once per side and host memory twice per side (the copy writes it, the NIC reads it), so the transfer
/// runs at min(B_net, B_pcie, B_host / 2).
constexpr BytesPerSecond staged_bandwidth(BytesPerSecond net, BytesPerSecond pcie, BytesPerSecond host_memory) noexcept {
  return min(net, min(pcie, host_memory / 2.0));
}

/// Transport-2: a parameter-server exchange over an RPC transport. Every worker pushes its S bytes of
/// gradients, split over k servers, and pulls the parameters back; each server's link carries N·S/k bytes
/// each way at the transport's bandwidth B, and each direction pays the per-message cost α:
/// t = 2·(α + N·S/(k·B)).
constexpr Seconds rpc_parameter_server(Bytes size, int workers, int servers, BytesPerSecond bandwidth,
                                       Seconds per_message) noexcept {
  return (per_message + size * (static_cast<double>(workers) / servers) / bandwidth) * 2.0;
}

/// Transport-3 (docs/model.md, F1a): one tensor's all-reduce across N nodes reduced at one root node and
/// broadcast back from it: the root's link takes the other N−1 nodes' S in and sends the result out, each
/// message paying the latency α: t = 2·(N−1)·(α + S/B).
constexpr Seconds root_allreduce(Bytes size, int nodes, BytesPerSecond bandwidth, Seconds latency) noexcept {
  return (latency + size / bandwidth) * (2.0 * static_cast<double>(nodes - 1));
}

/// Transport-3 (docs/model.md, F1b): the host copies a tensor-at-a-time MPI all-reduce leaves outside the
/// network's shadow, the first tensor's copy to the host and the last one's copy back: (S_first + S_last)/B_copy.
constexpr Seconds staging_exposed(Bytes first, Bytes last, BytesPerSecond copy) noexcept { return (first + last) / copy; }

}  // namespace eq

/// `base` with the transport and the cluster's GPUDirect RDMA applied to every operation that crosses
/// nodes; `base` itself when nothing changes (the default transport on a cluster with GPUDirect RDMA).
std::shared_ptr<const CollectiveModel> with_transport(std::shared_ptr<const CollectiveModel> base, const Transport& t,
                                                      const Cluster& cluster);

}  // namespace dlscale
