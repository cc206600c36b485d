// Recovering convolution and GEMM shapes from the per-layer records of models/NAME.yaml, so that
// dlscale-calibrate can time each layer with cuDNN and cuBLAS (see calibration.hpp).
#include <cmath>
#include <numeric>

#include "dlscale/calibration.hpp"
#include "dlscale/network.hpp"

namespace dlscale {

std::optional<ConvShape> infer_conv_shape(const Network& net, std::size_t i) {
  if (i >= net.layers.size()) return std::nullopt;
  const Layer& l = net.layers[i];
  if (l.kind != LayerKind::conv || l.output_shape.size() != 3) return std::nullopt;
  const auto c_out = l.output_shape[0], h = l.output_shape[1], w = l.output_shape[2];
  const double denom = 2.0 * static_cast<double>(c_out * h * w);
  const double k_total = l.forward_flops_per_sample / denom;  // C_in·k²
  const auto K = static_cast<std::int64_t>(std::llround(k_total));
  if (K <= 0 || std::fabs(k_total - static_cast<double>(K)) > 1e-6 * k_total) return std::nullopt;
  if (l.params != K * c_out && l.params != K * c_out + c_out) return std::nullopt;

  struct Source {
    std::int64_t channels, h, w;
    long index;  // -1: the network input
  };
  std::optional<ConvShape> best;
  long best_index = -2;
  for (int k : {3, 1, 5, 7, 11}) {
    if (K % (k * k) != 0) continue;
    const std::int64_t c_in = K / (k * k);
    // the most recent earlier producer with that channel count
    std::optional<Source> src;
    for (long j = static_cast<long>(i) - 1; j >= 0; --j) {
      const auto& s = net.layers[static_cast<std::size_t>(j)].output_shape;
      if (s.size() == 3 && s[0] == c_in) {
        src = Source{s[0], s[1], s[2], j};
        break;
      }
    }
    if (!src && net.input_shape.size() == 3 && net.input_shape[0] == c_in)
      src = Source{net.input_shape[0], net.input_shape[1], net.input_shape[2], -1};
    if (!src || src->h < h || src->index <= best_index) continue;
    const auto stride = static_cast<int>(std::llround(static_cast<double>(src->h) / static_cast<double>(h)));
    if (stride < 1) continue;
    // the padding that gives the recorded output size: (in + 2p − k)/s + 1 = out
    for (int p = 0; p <= k; ++p) {
      if ((src->h + 2 * p - k) / stride + 1 == h && (src->w + 2 * p - k) / stride + 1 == w && src->h + 2 * p - k >= 0) {
        best = ConvShape{static_cast<int>(c_in),
                         static_cast<int>(c_out),
                         k,
                         stride,
                         p,
                         static_cast<int>(src->h),
                         static_cast<int>(src->w),
                         static_cast<int>(h),
                         static_cast<int>(w),
                         src->index < 0};
        best_index = src->index;
        break;
      }
    }
  }
  return best;
}

std::optional<LinearShape> infer_linear_shape(const Network& net, std::size_t i) {
  if (i >= net.layers.size()) return std::nullopt;
  const Layer& l = net.layers[i];
  if (l.kind != LayerKind::linear || l.output_shape.empty()) return std::nullopt;
  const std::int64_t out = l.output_shape.back();
  const std::int64_t rows =
      std::accumulate(l.output_shape.begin(), l.output_shape.end() - 1, std::int64_t{1}, std::multiplies<>());
  if (out <= 0 || rows <= 0) return std::nullopt;
  const double in_d = l.forward_flops_per_sample / (2.0 * static_cast<double>(out * rows));
  const auto in = static_cast<std::int64_t>(std::llround(in_d));
  if (in <= 0 || std::fabs(in_d - static_cast<double>(in)) > 1e-6 * in_d) return std::nullopt;
  if (l.params != in * out && l.params != in * out + out) return std::nullopt;
  return LinearShape{in, out, rows};
}

}  // namespace dlscale
