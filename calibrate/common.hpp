// dlscale-calibrate: shared host-side pieces. CUDA_CALL-style macros that throw DeviceError with
// file:line (nvbench's cuda_call.cuh), move-only RAII for streams, events and buffers, and the
// measurement protocol (nvbench's measure_cold): warm-up, the stream held by a blocking kernel while
// the timed work is queued (so launch cost stays out), CUDA events around the work, a clock probe
// before and after each sample (throttled samples dropped), median and IQR, stop on relative noise or
// the time budget (SampleCollector in libdlscale).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "dlscale/calibration.hpp"
#include "dlscale/error.hpp"
#include "kernels.hpp"

namespace dlscale::calib {

[[noreturn]] void throw_device_error(const char* expr, const char* what, const char* file, int line);

#define DLSCALE_CHECK_(expr, ok, text)                                                                                   \
  do {                                                                                                                   \
    auto dlscale_status_ = (expr);                                                                                       \
    if (dlscale_status_ != (ok)) ::dlscale::calib::throw_device_error(#expr, text(dlscale_status_), __FILE__, __LINE__); \
  } while (0)
#define CUDA_CALL(expr) DLSCALE_CHECK_(expr, cudaSuccess, cudaGetErrorString)
#define NCCL_CALL(expr) DLSCALE_CHECK_(expr, ncclSuccess, ncclGetErrorString)
#define CUBLAS_CALL(expr) DLSCALE_CHECK_(expr, CUBLAS_STATUS_SUCCESS, cublasGetStatusString)
#define CUDNN_CALL(expr) DLSCALE_CHECK_(expr, CUDNN_STATUS_SUCCESS, cudnnGetErrorString)

// ---- RAII ------------------------------------------------------------------------------------------

class Stream {
 public:
  Stream() { CUDA_CALL(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (s_) cudaStreamDestroy(s_);
  }
  Stream(Stream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  Stream& operator=(Stream&& o) noexcept {
    std::swap(s_, o.s_);
    return *this;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  [[nodiscard]] cudaStream_t get() const noexcept { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  Event() { CUDA_CALL(cudaEventCreate(&e_)); }
  ~Event() {
    if (e_) cudaEventDestroy(e_);
  }
  Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  Event& operator=(Event&& o) noexcept {
    std::swap(e_, o.e_);
    return *this;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  [[nodiscard]] cudaEvent_t get() const noexcept { return e_; }
  void record(cudaStream_t s) { CUDA_CALL(cudaEventRecord(e_, s)); }
  /// Seconds from `start` to this event (both recorded and complete).
  [[nodiscard]] double since(const Event& start) const {
    float ms = 0;
    CUDA_CALL(cudaEventElapsedTime(&ms, start.e_, e_));
    return static_cast<double>(ms) * 1e-3;
  }

 private:
  cudaEvent_t e_ = nullptr;
};

/// Device memory on the current device.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : n_(bytes) { CUDA_CALL(cudaMalloc(&p_, bytes)); }
  ~DeviceBuffer() {
    if (p_) cudaFree(p_);
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  [[nodiscard]] void* get() const noexcept { return p_; }
  template <class T>
  [[nodiscard]] T* as() const noexcept {
    return static_cast<T*>(p_);
  }
  [[nodiscard]] std::size_t size() const noexcept { return n_; }

 private:
  void* p_ = nullptr;
  std::size_t n_ = 0;
};

/// Page-locked host memory (cudaHostAlloc; `mapped` also maps it into the device's address space).
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t bytes, bool mapped = false) : n_(bytes) {
    CUDA_CALL(cudaHostAlloc(&p_, bytes, mapped ? cudaHostAllocMapped : cudaHostAllocDefault));
  }
  ~PinnedBuffer() {
    if (p_) cudaFreeHost(p_);
  }
  PinnedBuffer(PinnedBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  [[nodiscard]] void* get() const noexcept { return p_; }
  [[nodiscard]] std::size_t size() const noexcept { return n_; }

 private:
  void* p_ = nullptr;
  std::size_t n_ = 0;
};

/// Makes `device` current for a scope.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    CUDA_CALL(cudaGetDevice(&prev_));
    CUDA_CALL(cudaSetDevice(device));
  }
  ~DeviceScope() { cudaSetDevice(prev_); }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int prev_ = 0;
};

// ---- measurement ------------------------------------------------------------------------------------

struct RawSample {
  std::string measurement;
  double size_bytes = 0;
  double time_s = 0;
  bool dropped = false;
};

struct Options {
  bool quick = false;
  std::string out;
  std::string model = "resnet50";
  std::vector<int> batches{64};
  std::vector<std::string> precisions{"fp32", "tf32", "fp16"};  // tf32 skipped before Ampere
  std::string storage;  // path to read (a file or a folder for a temporary file); empty: skipped
  std::vector<std::string> skip;
  int max_gpus = 0;     // 0: all visible
  double budget_s = 0;  // per measurement; 0: the default of quick/full
  [[nodiscard]] bool skipped(const std::string& section) const;
  [[nodiscard]] StoppingRule rule() const;
};

/// What the whole run accumulates.
struct Run {
  Options opt;
  Calibration cal;
  std::vector<RawSample> raw;
  std::vector<int> max_clock_khz;  // per device: the peak SM clock (cudaDevAttrClockRate)
  std::string topology_xml;        // NCCL's topology dump (NCCL_TOPO_DUMP_FILE), written beside --out
  /// One progress line on stderr.
  void progress(const std::string& line) const;
};

struct Timed {
  SampleStats stats;
  std::size_t dropped = 0;
};

/// Times the work that `enqueue` puts on `stream` (device `device`): one sample = one call, held
/// behind a blocking kernel and bracketed by CUDA events; `warmup` calls first. Throttled samples (SM
/// clock below 75 % of the peak during the sample) are dropped. Raw samples go to run.raw.
Timed measure_gpu(Run& run, const std::string& label, double size_bytes, int device, cudaStream_t stream,
                  const std::function<void(cudaStream_t)>& enqueue, int warmup = 3);
/// Times a host-side call with the steady clock (pageable copies, file reads, multi-GPU groups).
Timed measure_host(Run& run, const std::string& label, double size_bytes, const std::function<void()>& call, int warmup = 2);

// ---- sections ----------------------------------------------------------------------------------------
void probe_devices(Run& run);        // devices.cpp (throws DeviceError without a usable GPU)
void measure_copies(Run& run);       // copies.cpp: H2D/D2H pinned and pageable, device copy, P2P
void measure_collectives(Run& run);  // collectives.cpp: NCCL, plus the topology dump
void measure_gemm(Run& run);         // gemm.cpp
void measure_layers(Run& run);       // layers.cpp
void measure_storage(Run& run);      // storage.cpp

}  // namespace dlscale::calib
