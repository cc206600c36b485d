// The kernel-model parameter files (topologies/compute-params.yaml): parse once at the edge into
// KernelParamSet; every error names file:line:col and the key.
#include <fmt/format.h>

#include <tuple>
#include <utility>

#include "dlscale/error.hpp"
#include "dlscale/kernels.hpp"
#include "io/yaml_reader.hpp"
#include "io/yaml_writer.hpp"

namespace dlscale {
namespace {
using yamlio::MapReader;
using yamlio::Node;

double fraction(const Node& n) {
  const double v = n.number();
  if (!(v > 0.0 && v <= 1.0)) n.fail(fmt::format("an efficiency lies in (0, 1], got {}", v));
  return v;
}

/// Eqs. K22 and K23: the convolution and pooling kernel classes' rates per SM per clock (0 or absent: not measured).
void read_conv_pool_classes(MapReader& m, KernelParams& base) {
  for (auto [key, field] : {std::pair{"small_channel_forward_rate", &base.small_channel_forward_rate},
                            std::pair{"small_channel_wgrad_rate", &base.small_channel_wgrad_rate}}) {
    if (auto n = m.optional(key)) {
      *field = n->number();
      if (!(*field >= 0.0 && *field <= 8192.0)) n->fail("a convolution's multiply-adds per SM per clock lie in [0, 8192]");
    }
  }
  for (auto [key, field] : {std::pair{"small_channel_forward_clocks", &base.small_channel_forward_clocks},
                            std::pair{"small_channel_wgrad_clocks", &base.small_channel_wgrad_clocks}}) {
    if (auto n = m.optional(key)) {
      *field = n->number();
      if (!(*field >= 0.0 && *field <= 64.0)) n->fail("SM clocks per output element lie in [0, 64]");
    }
  }
  if (auto n = m.optional("fp32_conv_efficiency")) {
    base.fp32_conv_efficiency = n->number();
    if (!(base.fp32_conv_efficiency >= 0.0 && base.fp32_conv_efficiency <= 1.0))
      n->fail("a share of the modelled rate lies in [0, 1]");
  }
  for (auto [key, field] :
       {std::pair{"pool_forward_rate", &base.pool_forward_rate}, std::pair{"pool_backward_rate", &base.pool_backward_rate}}) {
    if (auto n = m.optional(key)) {
      *field = n->number();
      if (!(*field >= 0.0 && *field <= 64.0)) n->fail("a pooling kernel's window elements per SM per clock lie in [0, 64]");
    }
  }
}

/// Reads the keys of one architecture's block over `base` (the defaults, or built-in values).
KernelParams read_params(const Node& node, KernelParams base, const std::string& arch) {
  MapReader m(node);
  base.architecture = arch;
  if (auto n = m.optional("tensor_efficiency")) base.tensor_efficiency = fraction(*n);
  if (auto n = m.optional("vector_efficiency")) base.vector_efficiency = fraction(*n);
  if (auto n = m.optional("conv_efficiency")) base.conv_efficiency = fraction(*n);
  if (auto n = m.optional("memory_efficiency")) base.memory_efficiency = fraction(*n);
  if (auto n = m.optional("copy_efficiency")) base.copy_efficiency = fraction(*n);
  if (auto n = m.optional("flash_forward_efficiency")) base.flash_forward_efficiency = fraction(*n);
  if (auto n = m.optional("flash_backward_efficiency")) base.flash_backward_efficiency = fraction(*n);
  if (auto n = m.optional("cudnn_forward_efficiency")) base.cudnn_forward_efficiency = fraction(*n);
  if (auto n = m.optional("cudnn_backward_efficiency")) base.cudnn_backward_efficiency = fraction(*n);
  if (auto n = m.optional("sharded_tensor")) base.sharded_tensor = fraction(*n);
  if (auto n = m.optional("fused_optimizer_efficiency")) base.fused_optimizer_efficiency = fraction(*n);
  if (auto n = m.optional("optimizer_pass_efficiency")) base.optimizer_pass_efficiency = fraction(*n);
  if (auto n = m.optional("kernel_overhead")) {
    base.kernel_overhead = n->seconds();
    if (base.kernel_overhead < Seconds{} || base.kernel_overhead > seconds(1.0)) n->fail("a kernel overhead lies in [0, 1 s]");
  }
  if (auto n = m.optional("winograd_gain")) {
    base.winograd_gain = n->number();
    if (!(base.winograd_gain >= 1.0 && base.winograd_gain <= 4.0))
      n->fail("Winograd saves 1x to 4x the multiplies (F(4x4,3x3)), got a value outside [1, 4]");
  }
  if (auto n = m.optional("fft_taps")) {
    base.fft_taps = n->number();
    if (!(base.fft_taps >= 1.0 && base.fft_taps <= 1000.0)) n->fail("fft_taps lies in [1, 1000]");
  }
  if (auto n = m.optional("operand_feed")) {
    base.operand_feed = n->number();
    if (!(base.operand_feed >= 0.0 && base.operand_feed <= 256.0)) n->fail("operand_feed lies in [0, 256]");
  }
  for (auto [key, field] :
       {std::pair{"nchw_norm_rate", &base.nchw_norm_rate}, std::pair{"nchw_norm_rate_bf16", &base.nchw_norm_rate_bf16}}) {
    if (auto n = m.optional(key)) {
      *field = n->number();
      if (!(*field > 0.0 && *field <= 64.0)) n->fail("a batch norm's element passes per SM per clock lie in (0, 64]");
    }
  }
  read_conv_pool_classes(m, base);
  if (auto n = m.optional("source")) base.source = n->scalar();
  m.finish();
  return base;
}

/// Eq. K21, `memory_classes: {vectorized, strided, upcast, reduction, softmax, chunk_cat}`: each class of memory-bound
/// kernel's rate, for every architecture (an architecture's own block overrides none of them).
void read_memory_classes(const Node& node, KernelParams& p) {
  MapReader m(node);
  auto& c = p.memory_classes;
  for (auto [key, field] :
       {std::pair{"vectorized", &c.vectorized}, std::pair{"strided", &c.strided}, std::pair{"upcast", &c.upcast},
        std::pair{"reduction", &c.reduction}, std::pair{"softmax", &c.softmax}, std::pair{"chunk_cat", &c.chunk_cat}})
    if (auto n = m.optional(key)) *field = fraction(*n);
  m.finish();
}

KernelParamSet read_set(const Node& root, const std::string& name) {
  MapReader top(root);
  KernelParamSet set;
  set.source = name;
  std::string source;
  if (auto n = top.optional("source")) source = n->scalar();
  KernelParams builtin;
  builtin.source = source;
  set.defaults = read_params(top.required("defaults"), builtin, "default");
  if (auto classes = top.optional("memory_classes")) read_memory_classes(*classes, set.defaults);
  if (auto archs = top.optional("architectures")) {
    MapReader a(*archs);
    for (auto& [arch, node] : a.entries()) set.architectures.push_back(read_params(node, set.defaults, arch));
    a.finish();
  }
  top.finish();
  return set;
}

std::string num(double v) { return fmt::format("{:.4g}", v); }
}  // namespace

const KernelParams& KernelParamSet::for_architecture(std::string_view architecture) const noexcept {
  for (const auto& a : architectures)
    if (a.architecture == architecture) return a;
  return defaults;
}

double memory_class_efficiency(const KernelParams& kp, MemoryClass c) noexcept {
  const auto& r = kp.memory_classes;
  double rate = 0.0;
  switch (c) {
    case MemoryClass::fitted:
      break;
    case MemoryClass::vectorized:
      rate = r.vectorized;
      break;
    case MemoryClass::strided:
      rate = r.strided;
      break;
    case MemoryClass::upcast:
      rate = r.upcast;
      break;
    case MemoryClass::reduction:
      rate = r.reduction;
      break;
    case MemoryClass::softmax:
      rate = r.softmax;
      break;
    case MemoryClass::chunk_cat:
      rate = r.chunk_cat;
      break;
  }
  return rate > 0.0 ? rate : kp.memory_efficiency;
}

KernelParamSet load_kernel_params(const std::filesystem::path& file) { return read_set(yamlio::load_file(file), file.string()); }
KernelParamSet parse_kernel_params(const std::string& yaml_text, const std::string& display_name) {
  return read_set(yamlio::load_string(yaml_text, display_name), display_name);
}

std::shared_ptr<const KernelParamSet> shipped_kernel_params() {
  static const std::shared_ptr<const KernelParamSet> set = std::make_shared<const KernelParamSet>(
      parse_kernel_params(std::string(shipped_kernel_params_yaml()), "topologies/compute-params.yaml (built in)"));
  return set;
}

namespace {
// "{key: value, ...}" of a parameter set; with a base, only what differs from it.
std::string params_flow_map(const KernelParams& p, const KernelParams* base) {
  yamlio::FlowMap m;
  auto put = [&](const char* key, double v, double b) {
    if (!base || v != b) m.add(key, num(v));
  };
  put("tensor_efficiency", p.tensor_efficiency, base ? base->tensor_efficiency : 0);
  put("vector_efficiency", p.vector_efficiency, base ? base->vector_efficiency : 0);
  put("conv_efficiency", p.conv_efficiency, base ? base->conv_efficiency : 0);
  put("memory_efficiency", p.memory_efficiency, base ? base->memory_efficiency : 0);
  if (!base || p.kernel_overhead != base->kernel_overhead)
    m.add("kernel_overhead", yamlio::quoted(fmt::format("{} us", num(in_us(p.kernel_overhead)))));
  put("winograd_gain", p.winograd_gain, base ? base->winograd_gain : 0);
  put("fft_taps", p.fft_taps, base ? base->fft_taps : 0);
  put("operand_feed", p.operand_feed, base ? base->operand_feed : 0);
  put("copy_efficiency", p.copy_efficiency, base ? base->copy_efficiency : 0);
  put("nchw_norm_rate", p.nchw_norm_rate, base ? base->nchw_norm_rate : 0);
  put("nchw_norm_rate_bf16", p.nchw_norm_rate_bf16, base ? base->nchw_norm_rate_bf16 : 0);
  put("flash_forward_efficiency", p.flash_forward_efficiency, base ? base->flash_forward_efficiency : 0);
  put("flash_backward_efficiency", p.flash_backward_efficiency, base ? base->flash_backward_efficiency : 0);
  put("sharded_tensor", p.sharded_tensor, base ? base->sharded_tensor : 0);
  if (p.cudnn_forward_efficiency > 0.0)  // 0: the flash shares, not written
    put("cudnn_forward_efficiency", p.cudnn_forward_efficiency, base ? base->cudnn_forward_efficiency : 0);
  if (p.cudnn_backward_efficiency > 0.0)
    put("cudnn_backward_efficiency", p.cudnn_backward_efficiency, base ? base->cudnn_backward_efficiency : 0);
  if (p.fused_optimizer_efficiency > 0.0)  // 0: as memory_efficiency, not written
    put("fused_optimizer_efficiency", p.fused_optimizer_efficiency, base ? base->fused_optimizer_efficiency : 0);
  if (p.optimizer_pass_efficiency > 0.0)
    put("optimizer_pass_efficiency", p.optimizer_pass_efficiency, base ? base->optimizer_pass_efficiency : 0);
  for (auto [key, v, b] :
       {std::tuple{"small_channel_forward_rate", p.small_channel_forward_rate, base ? base->small_channel_forward_rate : 0},
        std::tuple{"small_channel_forward_clocks", p.small_channel_forward_clocks, base ? base->small_channel_forward_clocks : 0},
        std::tuple{"small_channel_wgrad_rate", p.small_channel_wgrad_rate, base ? base->small_channel_wgrad_rate : 0},
        std::tuple{"small_channel_wgrad_clocks", p.small_channel_wgrad_clocks, base ? base->small_channel_wgrad_clocks : 0},
        std::tuple{"pool_forward_rate", p.pool_forward_rate, base ? base->pool_forward_rate : 0},
        std::tuple{"pool_backward_rate", p.pool_backward_rate, base ? base->pool_backward_rate : 0},
        std::tuple{"fp32_conv_efficiency", p.fp32_conv_efficiency, base ? base->fp32_conv_efficiency : 0}})
    if (v > 0.0) put(key, v, b);  // K6 (fp32), K22, K23: 0 (not measured) is not written
  return m.str();
}
}  // namespace

std::string kernel_params_to_yaml(const KernelParamSet& set, std::string_view header_comment) {
  yamlio::Emitter o;
  for (std::size_t start = 0; start < header_comment.size();) {
    const auto end = std::min(header_comment.find('\n', start), header_comment.size());
    o.comment(header_comment.substr(start, end - start));
    start = end + 1;
  }
  if (!set.defaults.source.empty()) o.pair(0, "source", yamlio::quoted(set.defaults.source));
  o.pair(0, "defaults", params_flow_map(set.defaults, nullptr));
  if (const auto& c = set.defaults.memory_classes;
      c.vectorized > 0.0 || c.strided > 0.0 || c.upcast > 0.0 || c.reduction > 0.0 || c.softmax > 0.0 || c.chunk_cat > 0.0) {
    yamlio::FlowMap m;  // eq. K21
    for (auto [key, v] :
         {std::pair{"vectorized", c.vectorized}, std::pair{"strided", c.strided}, std::pair{"upcast", c.upcast},
          std::pair{"reduction", c.reduction}, std::pair{"softmax", c.softmax}, std::pair{"chunk_cat", c.chunk_cat}})
      if (v > 0.0) m.add(key, num(v));
    o.pair(0, "memory_classes", m.str());
  }
  if (!set.architectures.empty()) {
    o.key(0, "architectures");
    for (const auto& a : set.architectures) o.pair(2, a.architecture, params_flow_map(a, &set.defaults));
  }
  return std::move(o).str();
}

}  // namespace dlscale
