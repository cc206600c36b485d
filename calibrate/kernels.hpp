// The kernels of dlscale-calibrate (kernels.cu). Launchers return the launch status; callers wrap them
// in CUDA_CALL. Kept free of C++20 and dlscale headers so that nvcc sees only this.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace dlscale::calib {

/// Spins until *flag != 0 (host-mapped memory) or `timeout_ns` passed: holds a stream while work is queued.
cudaError_t launch_blocking_kernel(cudaStream_t s, const volatile int* flag, unsigned long long timeout_ns);
/// Writes {clock64(), %globaltimer ns} to out[0..1] (one thread): SM-clock probes around a sample.
cudaError_t launch_clock_probe(cudaStream_t s, unsigned long long* out);
/// Fills with uniform values in [-1, 1) from a hash of the index (deterministic, no cuRAND).
cudaError_t launch_fill_float(cudaStream_t s, float* p, std::size_t n, unsigned seed);
cudaError_t launch_fill_half(cudaStream_t s, void* p, std::size_t n, unsigned seed);  // __half
cudaError_t launch_fill_bf16(cudaStream_t s, void* p, std::size_t n, unsigned seed);  // __nv_bfloat16

}  // namespace dlscale::calib
