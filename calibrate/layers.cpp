// Per-layer forward and backward times of a network of models/ at a batch size: convolutions with
// cuDNN (the algorithm chosen by cudnnFind*, as PyTorch's cudnn.benchmark does), linear layers with
// cuBLAS GEMMs, batch normalisation with cuDNN's batch-norm kernels. Other kinds (attention,
// embedding, layernorm) are left to the roofline and say so. Shapes come from infer_conv_shape /
// infer_linear_shape (lib/calibration/layer_shapes.cpp). fp32 is strict FP32 (cuDNN's FMA math, cuBLAS's
// 32F compute: PyTorch with TF32 off); tf32 lets cuDNN and cuBLAS use TF32 tensor cores (PyTorch's default
// for convolutions, both with allow_tf32); fp16 is mixed precision (fp16 tensors, fp32 accumulation).
#include <fmt/format.h>

#include <algorithm>

#include "common.hpp"
#include "dlscale/format.hpp"
#include "dlscale/io.hpp"
#include "dlscale/network.hpp"

namespace dlscale::calib {
namespace {

template <class T, class Destroy>
struct Desc {
  T d = nullptr;
  Destroy destroy;
  Desc(T x, Destroy f) : d(x), destroy(f) {}
  ~Desc() {
    if (d) destroy(d);
  }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
};

cudnnTensorDescriptor_t tensor4(int n, int c, int h, int w, cudnnDataType_t t) {
  cudnnTensorDescriptor_t d = nullptr;
  CUDNN_CALL(cudnnCreateTensorDescriptor(&d));
  CUDNN_CALL(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, t, n, c, h, w));
  return d;
}

struct Workspace {
  DeviceBuffer buf;
  void* ensure(std::size_t bytes) {
    if (bytes > buf.size()) buf = DeviceBuffer(bytes);
    return buf.get();
  }
};

constexpr std::size_t kMaxWorkspace = std::size_t{2} << 30;

/// The arithmetic a layer is timed in: strict fp32, TF32 allowed, or mixed fp16.
enum class Math { fp32, tf32, fp16 };

struct Fill {
  cudaStream_t s;
  bool half;
  void operator()(DeviceBuffer& b, std::size_t elems) const {
    if (half) CUDA_CALL(launch_fill_half(s, b.get(), elems, 3));
    else CUDA_CALL(launch_fill_float(s, b.as<float>(), elems, 3));
  }
};

LayerTiming time_conv(Run& run, const std::string& tag, const Layer& layer, const ConvShape& c, int batch, Math math,
                      cudnnHandle_t h, cudaStream_t s, Workspace& ws) {
  const bool half = math == Math::fp16;
  const cudnnDataType_t t = half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
  const std::size_t el = half ? 2 : 4;
  Desc x(tensor4(batch, c.in_channels, c.in_h, c.in_w, t), cudnnDestroyTensorDescriptor);
  Desc y(tensor4(batch, c.out_channels, c.out_h, c.out_w, t), cudnnDestroyTensorDescriptor);
  cudnnFilterDescriptor_t wd = nullptr;
  CUDNN_CALL(cudnnCreateFilterDescriptor(&wd));
  Desc w(wd, cudnnDestroyFilterDescriptor);
  CUDNN_CALL(cudnnSetFilter4dDescriptor(wd, t, CUDNN_TENSOR_NCHW, c.out_channels, c.in_channels, c.kernel, c.kernel));
  cudnnConvolutionDescriptor_t cd = nullptr;
  CUDNN_CALL(cudnnCreateConvolutionDescriptor(&cd));
  Desc conv(cd, cudnnDestroyConvolutionDescriptor);
  CUDNN_CALL(cudnnSetConvolution2dDescriptor(cd, c.padding, c.padding, c.stride, c.stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                             CUDNN_DATA_FLOAT));
  // fp32: FMA math only (cuDNN's default math lets Ampere and newer run fp32 convolutions in TF32)
  CUDNN_CALL(cudnnSetConvolutionMathType(cd,
                                         half                     ? CUDNN_TENSOR_OP_MATH
                                             : math == Math::tf32 ? CUDNN_DEFAULT_MATH
                                                                  : CUDNN_FMA_MATH));
  int n = 0, co = 0, ho = 0, wo = 0;
  CUDNN_CALL(cudnnGetConvolution2dForwardOutputDim(cd, x.d, wd, &n, &co, &ho, &wo));
  if (ho != c.out_h || wo != c.out_w)
    throw DeviceError(
        fmt::format("{}: inferred convolution gives {}x{}, the model says {}x{}", layer.name, ho, wo, c.out_h, c.out_w));
  const std::size_t nx = static_cast<std::size_t>(batch) * c.in_channels * c.in_h * c.in_w;
  const std::size_t ny = static_cast<std::size_t>(batch) * c.out_channels * c.out_h * c.out_w;
  const std::size_t nw = static_cast<std::size_t>(c.out_channels) * c.in_channels * c.kernel * c.kernel;
  DeviceBuffer bx(nx * el), by(ny * el), bw(nw * el), bdx(nx * el), bdy(ny * el), bdw(nw * el);
  Fill fill{s, half};
  fill(bx, nx);
  fill(bw, nw);
  fill(bdy, ny);
  const float one = 1.0f, zero = 0.0f;

  cudnnConvolutionFwdAlgoPerf_t fwd[8];
  int got = 0;
  CUDNN_CALL(cudnnFindConvolutionForwardAlgorithm(h, x.d, wd, cd, y.d, 8, &got, fwd));
  const auto pick = [&](auto* perf, int count) {
    for (int i = 0; i < count; ++i)
      if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= kMaxWorkspace) return perf[i];
    throw DeviceError(fmt::format("{}: cudnnFind found no usable algorithm", layer.name));
  };
  const auto f = pick(fwd, got);
  void* wsf = ws.ensure(f.memory);
  const Timed tf = measure_gpu(run, tag + "/forward", 0, 0, s, [&](cudaStream_t) {
    CUDNN_CALL(cudnnConvolutionForward(h, &one, x.d, bx.get(), wd, bw.get(), cd, f.algo, wsf, f.memory, &zero, y.d, by.get()));
  });

  cudnnConvolutionBwdFilterAlgoPerf_t bf[8];
  CUDNN_CALL(cudnnFindConvolutionBackwardFilterAlgorithm(h, x.d, y.d, cd, wd, 8, &got, bf));
  const auto bfp = pick(bf, got);
  cudnnConvolutionBwdDataAlgoPerf_t bd[8];
  int got_d = 0;
  std::optional<cudnnConvolutionBwdDataAlgoPerf_t> bdp;
  if (!c.first) {
    CUDNN_CALL(cudnnFindConvolutionBackwardDataAlgorithm(h, wd, y.d, cd, x.d, 8, &got_d, bd));
    bdp = pick(bd, got_d);
  }
  void* wsb = ws.ensure(std::max(bfp.memory, bdp ? bdp->memory : std::size_t{0}));
  const Timed tb = measure_gpu(run, tag + "/backward", 0, 0, s, [&](cudaStream_t) {
    CUDNN_CALL(cudnnConvolutionBackwardFilter(h, &one, x.d, bx.get(), y.d, bdy.get(), cd, bfp.algo, wsb, bfp.memory, &zero, wd,
                                              bdw.get()));
    if (bdp)
      CUDNN_CALL(cudnnConvolutionBackwardData(h, &one, wd, bw.get(), y.d, bdy.get(), cd, bdp->algo, wsb, bdp->memory, &zero, x.d,
                                              bdx.get()));
  });
  LayerTiming lt;
  lt.name = layer.name;
  lt.forward = seconds(tf.stats.median);
  lt.backward = seconds(tb.stats.median);
  lt.how = fmt::format("cudnn conv {}x{} s{} p{} {}->{} ch, algos fwd {} bwd-filter {}{}", c.kernel, c.kernel, c.stride,
                       c.padding, c.in_channels, c.out_channels, static_cast<int>(f.algo), static_cast<int>(bfp.algo),
                       bdp ? fmt::format(" bwd-data {}", static_cast<int>(bdp->algo)) : std::string(" (no input gradient)"));
  return lt;
}

LayerTiming time_linear(Run& run, const std::string& tag, const Layer& layer, const LinearShape& g, int batch, Math math,
                        cublasHandle_t h, cudaStream_t s) {
  const auto in = static_cast<int>(g.in_features), out = static_cast<int>(g.out_features);
  const auto rows = static_cast<int>(g.rows_per_sample * batch);
  const bool half = math == Math::fp16;
  const std::size_t el = half ? 2 : 4;
  const cudaDataType_t t = half ? CUDA_R_16F : CUDA_R_32F;
  const cublasComputeType_t compute = math == Math::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  DeviceBuffer w(static_cast<std::size_t>(in) * out * el), x(static_cast<std::size_t>(in) * rows * el),
      y(static_cast<std::size_t>(out) * rows * el), dx(static_cast<std::size_t>(in) * rows * el),
      dw(static_cast<std::size_t>(in) * out * el);
  Fill fill{s, half};
  fill(w, static_cast<std::size_t>(in) * out);
  fill(x, static_cast<std::size_t>(in) * rows);
  fill(y, static_cast<std::size_t>(out) * rows);
  const float one = 1.0f, zero = 0.0f;
  // column-major: Y[out×rows] = W[out×in]·X[in×rows]; dX = Wᵀ·dY; dW = dY·Xᵀ
  const Timed tf = measure_gpu(run, tag + "/forward", 0, 0, s, [&](cudaStream_t) {
    CUBLAS_CALL(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, out, rows, in, &one, w.get(), t, out, x.get(), t, in, &zero, y.get(), t,
                             out, compute, CUBLAS_GEMM_DEFAULT));
  });
  const Timed tb = measure_gpu(run, tag + "/backward", 0, 0, s, [&](cudaStream_t) {
    CUBLAS_CALL(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, in, rows, out, &one, w.get(), t, out, y.get(), t, out, &zero, dx.get(),
                             t, in, compute, CUBLAS_GEMM_DEFAULT));
    CUBLAS_CALL(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_T, out, in, rows, &one, y.get(), t, out, x.get(), t, in, &zero, dw.get(),
                             t, out, compute, CUBLAS_GEMM_DEFAULT));
  });
  LayerTiming lt;
  lt.name = layer.name;
  lt.forward = seconds(tf.stats.median);
  lt.backward = seconds(tb.stats.median);
  lt.how = fmt::format("cublas gemm {}x{}x{} (+2 for backward)", out, rows, in);
  return lt;
}

LayerTiming time_batchnorm(Run& run, const std::string& tag, const Layer& layer, int batch, Math math, cudnnHandle_t h,
                           cudaStream_t s) {
  const bool half = math == Math::fp16;
  const auto& shape = layer.output_shape;
  const int c = static_cast<int>(shape[0]);
  const int hh = shape.size() > 1 ? static_cast<int>(shape[1]) : 1;
  const int ww = shape.size() > 2 ? static_cast<int>(shape[2]) : 1;
  const cudnnDataType_t t = half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
  const std::size_t el = half ? 2 : 4;
  Desc x(tensor4(batch, c, hh, ww, t), cudnnDestroyTensorDescriptor);
  Desc p(tensor4(1, c, 1, 1, CUDNN_DATA_FLOAT), cudnnDestroyTensorDescriptor);
  const std::size_t n = static_cast<std::size_t>(batch) * c * hh * ww;
  DeviceBuffer bx(n * el), by(n * el), bdy(n * el), bdx(n * el);
  DeviceBuffer scale(c * 4u), bias(c * 4u), mean(c * 4u), var(c * 4u), smean(c * 4u), svar(c * 4u), dscale(c * 4u), dbias(c * 4u);
  Fill fill{s, half};
  fill(bx, n);
  fill(bdy, n);
  CUDA_CALL(launch_fill_float(s, scale.as<float>(), static_cast<std::size_t>(c), 5));
  CUDA_CALL(cudaMemsetAsync(bias.get(), 0, c * 4u, s));
  CUDA_CALL(cudaMemsetAsync(mean.get(), 0, c * 4u, s));
  CUDA_CALL(cudaMemsetAsync(var.get(), 0, c * 4u, s));
  const float one = 1.0f, zero = 0.0f;
  const double eps = 1e-5;
  const Timed tf = measure_gpu(run, tag + "/forward", 0, 0, s, [&](cudaStream_t) {
    CUDNN_CALL(cudnnBatchNormalizationForwardTraining(h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, x.d, bx.get(), x.d, by.get(), p.d,
                                                      scale.get(), bias.get(), 0.1, mean.get(), var.get(), eps, smean.get(),
                                                      svar.get()));
  });
  const Timed tb = measure_gpu(run, tag + "/backward", 0, 0, s, [&](cudaStream_t) {
    CUDNN_CALL(cudnnBatchNormalizationBackward(h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero, x.d, bx.get(), x.d,
                                               bdy.get(), x.d, bdx.get(), p.d, scale.get(), dscale.get(), dbias.get(), eps,
                                               smean.get(), svar.get()));
  });
  LayerTiming lt;
  lt.name = layer.name;
  lt.forward = seconds(tf.stats.median);
  lt.backward = seconds(tb.stats.median);
  lt.how = "cudnn batch-norm (spatial, training)";
  return lt;
}

}  // namespace

void measure_layers(Run& run) {
  const Network net = load_network(resolve(DataKind::network, run.opt.model, "--model"));
  const int device = 0;
  DeviceScope scope(device);
  Stream stream;
  cudnnHandle_t dnn = nullptr;
  CUDNN_CALL(cudnnCreate(&dnn));
  Desc dnn_guard(dnn, cudnnDestroy);
  CUDNN_CALL(cudnnSetStream(dnn, stream.get()));
  cublasHandle_t blas = nullptr;
  CUBLAS_CALL(cublasCreate(&blas));
  Desc blas_guard(blas, cublasDestroy);
  CUBLAS_CALL(cublasSetStream(blas, stream.get()));
  Workspace ws;
  std::vector<std::string> precisions = run.opt.precisions;
  if (run.opt.quick && precisions.size() > 1) precisions.resize(1);
  std::vector<int> batches = run.opt.batches;
  if (run.opt.quick && batches.size() > 1) batches.resize(1);
  for (const auto& precision : precisions) {
    const Math math = precision == "fp16" ? Math::fp16 : precision == "tf32" ? Math::tf32 : Math::fp32;
    if (math == Math::tf32 && run.cal.devices.front().sm_version < 80) {
      run.progress(fmt::format("{}: tf32 skipped (TF32 needs an Ampere or newer GPU)", net.name));
      continue;
    }
    for (int batch : batches) {
      LayerProfile lp;
      lp.model = net.name;
      lp.batch = batch;
      lp.precision = precision;
      lp.gpu = run.cal.devices.front().name;
      Seconds f{}, b{};
      std::size_t measured = 0;
      for (std::size_t i = 0; i < net.layers.size(); ++i) {
        const Layer& layer = net.layers[i];
        const std::string tag = fmt::format("layer/{}/{}/b{}/{}", net.name, precision, batch, layer.name);
        LayerTiming lt;
        lt.name = layer.name;
        try {
          if (auto c = infer_conv_shape(net, i)) lt = time_conv(run, tag, layer, *c, batch, math, dnn, stream.get(), ws);
          else if (auto g = infer_linear_shape(net, i)) lt = time_linear(run, tag, layer, *g, batch, math, blas, stream.get());
          else if (layer.kind == LayerKind::batchnorm && !layer.output_shape.empty())
            lt = time_batchnorm(run, tag, layer, batch, math, dnn, stream.get());
          else lt.how = fmt::format("not measured ({} layer: no shape to time it with)", to_string(layer.kind));
        } catch (const DeviceError& e) {
          lt = LayerTiming{layer.name, std::nullopt, std::nullopt, std::string("not measured: ") + e.what()};
          run.progress(fmt::format("{} {}: {}", net.name, layer.name, lt.how));
          cudaGetLastError();
        }
        if (lt.forward) {
          f += *lt.forward;
          b += *lt.backward;
          ++measured;
        }
        lp.layers.push_back(std::move(lt));
      }
      run.progress(fmt::format("{} batch {} {}: {} of {} layers measured, forward {} backward {}", net.name, batch, precision,
                               measured, net.layers.size(), f, b));
      run.cal.layers.push_back(std::move(lp));
    }
  }
}

}  // namespace dlscale::calib
