// The input pipeline's reader time (include/dlscale/input_pipeline.hpp, docs/input-formats.md, "Input pipeline").
#include "dlscale/input_pipeline.hpp"

#include <fmt/format.h>

#include "dlscale/error.hpp"

namespace dlscale {

std::string_view to_string(DataSource d) noexcept {
  switch (d) {
    case DataSource::synthetic:
      return "synthetic";
    case DataSource::ram:
      return "ram";
    case DataSource::nvme:
      return "nvme";
    case DataSource::nfs:
      return "nfs";
  }
  return "";
}

DataSource data_source_from_string(std::string_view s, std::string_view option) {
  if (s == "synthetic") return DataSource::synthetic;
  if (s == "ram") return DataSource::ram;
  if (s == "nvme") return DataSource::nvme;
  if (s == "nfs") return DataSource::nfs;
  throw InputError(SourceLocation{}, std::string(option),
                   fmt::format("unknown data source '{}' (synthetic, ram, nvme or nfs)", s));
}

ReaderTime reader_time(const InputPipeline& p, int batch_per_gpu, int gpus_per_node, int nodes) {
  ReaderTime r;
  r.tier = p.data;
  if (p.data == DataSource::synthetic) return r;
  // Later epochs find the dataset in the page cache when a node's memory holds it (ram = 0: it does).
  const bool fits = !(p.ram > Bytes{}) || p.dataset_size <= p.ram;
  if (p.data != DataSource::ram && !p.first_epoch && fits) r.tier = DataSource::ram;
  switch (r.tier) {
    case DataSource::ram:
      r.bandwidth = p.page_cache;
      break;
    case DataSource::nvme:
      r.bandwidth = p.nvme;
      break;
    case DataSource::nfs:
      r.bandwidth = eq::shared_read_bandwidth(p.nfs_aggregate, p.nfs_per_node, nodes);
      break;
    case DataSource::synthetic:
      break;
  }
  const double samples = static_cast<double>(batch_per_gpu) * gpus_per_node;
  if (r.bandwidth > BytesPerSecond{}) r.storage = p.sample_size * samples / r.bandwidth;
  if (p.gpu_decode_mpix > 0.0) {
    r.gpu_decode = seconds(static_cast<double>(batch_per_gpu) * p.sample_megapixels / p.gpu_decode_mpix);
  } else if (p.decode_mpix_per_core > 0.0) {
    r.workers = p.workers_per_gpu > 0 ? std::min(p.cores, p.workers_per_gpu * gpus_per_node) : p.cores;
    r.decode = eq::decode_time(samples, p.sample_megapixels, r.workers, p.decode_mpix_per_core);
  }
  r.reader = eq::reader_time(r.storage, r.decode);
  return r;
}

}  // namespace dlscale
