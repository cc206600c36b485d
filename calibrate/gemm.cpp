// GEMM throughput with cuBLAS (cublasGemmEx): fp32 (CUBLAS_COMPUTE_32F), tf32 (32F_FAST_TF32), fp16 and
// bf16 inputs with fp32 accumulation, square m = n = k. rate = 2·m·n·k / time.
#include <fmt/format.h>

#include "common.hpp"
#include "dlscale/format.hpp"

namespace dlscale::calib {

void measure_gemm(Run& run) {
  const std::vector<int> dims = run.opt.quick ? std::vector<int>{4096} : std::vector<int>{1024, 2048, 4096, 8192};
  const int device = 0;
  DeviceScope scope(device);
  Stream stream;
  cublasHandle_t handle = nullptr;
  CUBLAS_CALL(cublasCreate(&handle));
  struct HandleGuard {
    cublasHandle_t h;
    ~HandleGuard() { cublasDestroy(h); }
  } guard{handle};
  CUBLAS_CALL(cublasSetStream(handle, stream.get()));
  const int max_dim = dims.back();
  const std::size_t elems = static_cast<std::size_t>(max_dim) * static_cast<std::size_t>(max_dim);
  DeviceBuffer a(elems * 4), b(elems * 4), c(elems * 4);
  DeviceBuffer workspace(64u << 20);
  CUBLAS_CALL(cublasSetWorkspace(handle, workspace.get(), workspace.size()));

  struct Kind {
    const char* name;
    cudaDataType_t type;
    cublasComputeType_t compute;
  };
  for (const Kind k : {Kind{"fp32", CUDA_R_32F, CUBLAS_COMPUTE_32F}, Kind{"tf32", CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32},
                       Kind{"fp16", CUDA_R_16F, CUBLAS_COMPUTE_32F}, Kind{"bf16", CUDA_R_16BF, CUBLAS_COMPUTE_32F}}) {
    for (auto* buf : {&a, &b, &c}) {
      if (k.type == CUDA_R_32F) CUDA_CALL(launch_fill_float(stream.get(), buf->as<float>(), elems, 11));
      else if (k.type == CUDA_R_16F) CUDA_CALL(launch_fill_half(stream.get(), buf->get(), elems, 11));
      else CUDA_CALL(launch_fill_bf16(stream.get(), buf->get(), elems, 11));
    }
    for (int n : dims) {
      const float alpha = 1.0f, beta = 0.0f;
      const Timed t = measure_gpu(run, fmt::format("gemm_{}/{}", k.name, n), 0.0, device, stream.get(), [&](cudaStream_t) {
        CUBLAS_CALL(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a.get(), k.type, n, b.get(), k.type, n, &beta,
                                 c.get(), k.type, n, k.compute, CUBLAS_GEMM_DEFAULT));
      });
      GemmResult r;
      r.precision = k.name;
      r.m = r.n = r.k = n;
      r.time = seconds(t.stats.median);
      r.rate = flops(2.0 * n * static_cast<double>(n) * n) / r.time;
      r.iqr = seconds(t.stats.iqr());
      r.samples = t.stats.count;
      run.progress(
          fmt::format("GEMM {} {}^3: {:.1f} TFLOPS ({} per product)", k.name, n, in_teraflops_per_second(r.rate), r.time));
      run.cal.gemm.push_back(r);
    }
  }
}

}  // namespace dlscale::calib
