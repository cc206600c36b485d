// What feeds the GPUs (docs/input-formats.md, "Input pipeline"): where the samples are read from (synthetic data,
// the page cache, a node's local NVMe, a network file system shared by every node), the CPU work of
// decoding and augmenting them (JPEG decode, a rate per core in megapixels per second, so that the time of a
// sample grows with its size), the cores and loader workers that do it, or a GPU decoder (DALI) that costs
// GPU time instead. Parsed at the edge from a cluster file's `input:` section (docs/input-formats.md); the
// decode rates of common CPUs and the datasets' sizes are data (models/input/*.yaml) with their sources.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "dlscale/units.hpp"

namespace dlscale {

/// Where the reader finds its samples.
enum class DataSource : std::uint8_t {
  synthetic,  // made on the GPU: no reader, no host-to-GPU copy
  ram,        // the page cache (the dataset was read before, or preloaded)
  nvme,       // the node's local disk
  nfs         // a network file system whose aggregate bandwidth all nodes share
};
std::string_view to_string(DataSource d) noexcept;
/// "synthetic", "ram", "nvme", "nfs"; anything else throws InputError(option, …) (no file; the key is `option`).
DataSource data_source_from_string(std::string_view s, std::string_view option = "--data");

struct InputPipeline {
  DataSource data = DataSource::ram;
  bool first_epoch = false;  // the first epoch reads storage; later ones the page cache if the data fits
  // storage tiers
  BytesPerSecond page_cache{};     // B_cache (the cluster's storage.page_cache)
  BytesPerSecond nvme{};           // a node's local disk
  BytesPerSecond nfs_aggregate{};  // the network file system's total, shared by every node reading it
  BytesPerSecond nfs_per_node{};   // one node's link to it (0: no limit but the aggregate)
  Bytes ram{};                     // a node's memory for the page cache (0: the dataset fits)
  // the dataset (models/input/datasets.yaml)
  std::string dataset;
  Bytes dataset_size{};            // as stored
  Bytes sample_size{};             // one stored sample (a JPEG)
  double sample_megapixels = 0.0;  // pixels decoded per sample, in millions
  // CPU work
  std::string cpu;                    // models/input/cpus.yaml id
  double decode_mpix_per_core = 0.0;  // decode + augmentation, megapixels per second per core (0: nothing to decode)
  int cores = 0;                      // CPU cores per node
  int workers_per_gpu = 0;            // loader worker threads per GPU (0: every core of the node)
  // GPU decoding (DALI with nvJPEG): the CPU decodes nothing, each GPU spends its own time
  double gpu_decode_mpix = 0.0;  // megapixels per second one GPU decodes (0: decoded on the CPU)
};

/// The reader's time per iteration on one node, by stage.
struct ReaderTime {
  Seconds storage{};                  // reading the node's samples from its tier
  Seconds decode{};                   // decoding them on the node's loader workers
  Seconds reader{};                   // the pipeline: the slower stage (eq. input-1)
  Seconds gpu_decode{};               // GPU time per iteration decoding one GPU's batch (DALI), on the GPU side
  BytesPerSecond bandwidth{};         // the tier's bandwidth as this node sees it
  DataSource tier = DataSource::ram;  // the tier read (nvme/nfs become ram in later epochs when the data fits)
  int workers = 0;
};

namespace eq {

/// Input-3: a network file system of aggregate bandwidth A read by n nodes at once, each through a link of
/// bandwidth P (P = 0: no per-node limit): every node gets min(P, A / n). It saturates from n = A / P nodes on.
constexpr BytesPerSecond shared_read_bandwidth(BytesPerSecond aggregate, BytesPerSecond per_node, int nodes) noexcept {
  const BytesPerSecond share = aggregate / static_cast<double>(std::max(1, nodes));
  return per_node > BytesPerSecond{} ? min(per_node, share) : share;
}

/// Input-2: decoding s samples of m megapixels each on w workers that each decode r megapixels per second:
/// t = s·m / (w·r). Decode and augmentation costs grow with the pixels of the stored image.
inline Seconds decode_time(double samples, double megapixels, int workers, double mpix_per_worker) noexcept {
  return seconds(samples * megapixels / (static_cast<double>(std::max(1, workers)) * mpix_per_worker));
}

/// Input-1: the reader's stages (storage reads, CPU decode) run concurrently on the loader workers with a
/// prefetch queue between them, so a node's reader delivers a batch every max(t_storage, t_decode). This is
/// the t_io of eq. 4 (t_iter = max(t_gpu + t_comm, t_io)).
constexpr Seconds reader_time(Seconds storage, Seconds decode) noexcept { return max(storage, decode); }

/// Eq. F2a (docs/model.md, "F2"): the training thread's fixed cost of taking a prefetched batch from the
/// readers' queue (the queue's pop, the synchronisation with the copy stream), h a batch, paid every
/// iteration whether or not the read was hidden (Strategy::input_handover). It exists only where a reader
/// prefetches: without prefetching (eq. 2, CNTK's AlexNet past its buffer) the iteration waits out the whole
/// read, and whatever handing over there is lies inside that t_io.
constexpr Seconds input_handover(Seconds per_batch, bool prefetched) noexcept { return prefetched ? per_batch : Seconds{}; }

/// Eq. F2b: with prefetching the hand-over joins the GPU side of eq. 4, t_iter = max(t_gpu + t_comm + h, t_io),
/// so the iteration's exposed input wait (Table V's t_io), t_iter − (t_gpu + t_comm), is
/// w = max(h, t_io − (t_gpu + t_comm)); without prefetching w = t_io (eq. 2). `gpu_side` is t_gpu + t_comm
/// without h, `handover` eq. F2a's (zero where nothing is prefetched).
constexpr Seconds exposed_input_wait(Seconds io, Seconds gpu_side, Seconds handover, bool prefetched) noexcept {
  return prefetched ? max(handover, io - gpu_side) : io;
}

}  // namespace eq

/// The reader of one node feeding `gpus_per_node` GPUs of `batch_per_gpu` samples each, with `nodes` nodes
/// reading at once (they share a network file system).
ReaderTime reader_time(const InputPipeline& p, int batch_per_gpu, int gpus_per_node, int nodes);

}  // namespace dlscale
