#include <fmt/format.h>

#include <stdexcept>
#include <string>

#include "dlscale/collective.hpp"
#include "dlscale/gpu.hpp"
#include "dlscale/network.hpp"
#include "dlscale/predict.hpp"
#include "dlscale/strategy.hpp"
#include "io/text.hpp"

namespace dlscale {

std::string_view to_string(LayerKind k) noexcept {
  switch (k) {
    case LayerKind::conv: return "conv";
    case LayerKind::linear: return "linear";
    case LayerKind::batchnorm: return "batchnorm";
    case LayerKind::layernorm: return "layernorm";
    case LayerKind::embedding: return "embedding";
    case LayerKind::attention: return "attention";
    case LayerKind::other: return "other";
    case LayerKind::relu: return "relu";
    case LayerKind::gelu: return "gelu";
    case LayerKind::silu: return "silu";
    case LayerKind::tanh: return "tanh";
    case LayerKind::dropout: return "dropout";
    case LayerKind::maxpool: return "maxpool";
    case LayerKind::avgpool: return "avgpool";
    case LayerKind::add: return "add";
    case LayerKind::concat: return "concat";
    case LayerKind::lrn: return "lrn";
    case LayerKind::reshape: return "reshape";
  }
  return "other";
}

LayerKind layer_kind_from_string(std::string_view name) {
  for (auto k : {LayerKind::conv, LayerKind::linear, LayerKind::batchnorm, LayerKind::layernorm, LayerKind::embedding,
                 LayerKind::attention, LayerKind::other, LayerKind::relu, LayerKind::gelu, LayerKind::silu,
                 LayerKind::tanh, LayerKind::dropout, LayerKind::maxpool, LayerKind::avgpool, LayerKind::add,
                 LayerKind::concat, LayerKind::lrn, LayerKind::reshape})
    if (to_string(k) == name) return k;
  throw std::invalid_argument("unknown layer kind '" + std::string(name) +
                              "' (expected conv, linear, batchnorm, layernorm, embedding, attention, other, or a "
                              "parameter-free relu, gelu, silu, tanh, dropout, maxpool, avgpool, add, concat, lrn, reshape)");
}

std::string_view to_string(Precision p) noexcept {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::bf16: return "bf16";
    case Precision::fp16: return "fp16";
    case Precision::fp8: return "fp8";
  }
  return "fp32";
}

Precision precision_from_string(std::string_view name) {
  const std::string lower = lower_ascii(name);
  for (auto p : {Precision::fp32, Precision::tf32, Precision::bf16, Precision::fp16, Precision::fp8})
    if (to_string(p) == lower) return p;
  // As frameworks and published tables name them: PyTorch's and NVIDIA's "AMP" and "mixed precision" are
  // fp16 autocast with fp32 master weights, which is what fp16 means here.
  if (lower == "amp" || lower == "mixed" || lower == "float16" || lower == "half") return Precision::fp16;
  if (lower == "bfloat16") return Precision::bf16;
  if (lower == "float32") return Precision::fp32;
  throw std::invalid_argument("unknown precision '" + std::string(name) + "' (expected " + std::string(kPrecisionNames) + ")");
}

std::string GpuSpec::missing_mode(Precision p, std::string_view cluster) const {
  const std::string_view needs = p == Precision::tf32  ? "TF32 tensor cores, Ampere or newer"
                                 : p == Precision::fp8 ? "fp8 tensor cores, Hopper or newer"
                                                       : "bf16 math, Ampere or newer";
  if (cluster.empty()) return fmt::format("the {} has no {} mode (it needs {})", name, to_string(p), needs);
  return fmt::format("the {} of cluster '{}' has no {} mode (it needs {})", name, cluster, to_string(p), needs);
}

std::string_view to_string(Aggregation a) noexcept {
  switch (a) {
    case Aggregation::allreduce: return "allreduce";
    case Aggregation::parameter_server: return "parameter_server";
    case Aggregation::hybrid: return "hybrid";
    case Aggregation::broadcast_reduce: return "broadcast_reduce";
  }
  return "";
}
std::string_view to_string(Overlap o) noexcept {
  switch (o) {
    case Overlap::none: return "none";
    case Overlap::layerwise: return "layerwise";
    case Overlap::bucketed: return "bucketed";
  }
  return "";
}
std::string_view to_string(UpdatePlacement u) noexcept {
  switch (u) {
    case UpdatePlacement::per_layer: return "per_layer";
    case UpdatePlacement::after_aggregation: return "after_aggregation";
    case UpdatePlacement::on_root: return "on_root";
  }
  return "";
}
std::string_view to_string(CollectiveOp op) noexcept {
  switch (op) {
    case CollectiveOp::allreduce: return "allreduce";
    case CollectiveOp::allgather: return "allgather";
    case CollectiveOp::reducescatter: return "reducescatter";
    case CollectiveOp::broadcast: return "broadcast";
    case CollectiveOp::reduce: return "reduce";
  }
  return "";
}
std::string_view to_string(Bottleneck b) noexcept {
  switch (b) {
    case Bottleneck::io: return "io";
    case Bottleneck::h2d: return "h2d";
    case Bottleneck::compute: return "compute";
    case Bottleneck::communication: return "communication";
    case Bottleneck::update: return "update";
  }
  return "";
}

std::int64_t Network::total_params() const noexcept {
  std::int64_t n = 0;
  for (const auto& l : layers) n += l.params;
  return n;
}
double Network::total_forward_flops_per_sample() const noexcept {
  double f = 0;
  for (const auto& l : layers) f += l.forward_flops_per_sample;
  return f;
}

}  // namespace dlscale
