// The measurement protocol of dlscale-calibrate (see common.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "common.hpp"

namespace dlscale::calib {

void throw_device_error(const char* expr, const char* what, const char* file, int line) {
  throw DeviceError(fmt::format("{}:{}: {} failed: {}", file, line, expr, what));
}

bool Options::skipped(const std::string& section) const { return std::find(skip.begin(), skip.end(), section) != skip.end(); }

StoppingRule Options::rule() const {
  StoppingRule r;
  if (quick) {
    r.min_samples = 5;
    r.max_samples = 200;
    r.max_relative_noise = 0.05;
    r.min_time_s = 0.002;
    r.budget_s = 0.25;
  } else {
    r.min_samples = 10;
    r.max_samples = 1000;
    r.max_relative_noise = 0.02;
    r.min_time_s = 0.05;
    r.budget_s = 2.0;
  }
  if (budget_s > 0) r.budget_s = budget_s;
  return r;
}

void Run::progress(const std::string& line) const {
  std::fprintf(stderr, "[dlscale-calibrate] %s\n", line.c_str());
  std::fflush(stderr);
}

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

Timed measure_gpu(Run& run, const std::string& label, double size_bytes, int device, cudaStream_t stream,
                  const std::function<void(cudaStream_t)>& enqueue, int warmup) {
  DeviceScope scope(device);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < warmup; ++i) enqueue(stream);
  CUDA_CALL(cudaStreamSynchronize(stream));

  PinnedBuffer flag(sizeof(int), true);
  auto* host_flag = static_cast<volatile int*>(flag.get());
  int* dev_flag = nullptr;
  CUDA_CALL(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev_flag), flag.get(), 0));
  DeviceBuffer probes(4 * sizeof(unsigned long long));
  auto* probe = probes.as<unsigned long long>();
  Event start, stop;
  SampleCollector samples(run.opt.rule());
  const double peak_hz =
      device < static_cast<int>(run.max_clock_khz.size()) ? run.max_clock_khz[static_cast<std::size_t>(device)] * 1e3 : 0.0;
  constexpr unsigned long long kHoldTimeoutNs = 5'000'000'000ULL;
  do {
    *host_flag = 0;
    CUDA_CALL(launch_blocking_kernel(stream, dev_flag, kHoldTimeoutNs));
    CUDA_CALL(launch_clock_probe(stream, probe));
    start.record(stream);
    enqueue(stream);
    stop.record(stream);
    CUDA_CALL(launch_clock_probe(stream, probe + 2));
    *host_flag = 1;  // release the queued work at once
    CUDA_CALL(cudaStreamSynchronize(stream));
    const double t = stop.since(start);
    unsigned long long p[4] = {};
    CUDA_CALL(cudaMemcpy(p, probe, sizeof p, cudaMemcpyDeviceToHost));
    bool throttled = false;
    if (peak_hz > 0 && p[3] > p[1] && p[2] > p[0]) {
      const double hz = static_cast<double>(p[2] - p[0]) / (static_cast<double>(p[3] - p[1]) * 1e-9);
      // clock64 of two one-thread kernels: meaningful only when both ran on SMs with comparable
      // counters; a rate far above the peak says they did not, and the sample is kept.
      throttled = hz < 0.75 * peak_hz && hz > 0.05 * peak_hz;
    }
    samples.add(t, throttled);
    run.raw.push_back(RawSample{label, size_bytes, t, throttled});
  } while (!samples.done(seconds_since(t0)));
  if (samples.samples().empty()) throw DeviceError(label + ": every sample was dropped as throttled");
  return Timed{samples.stats(), samples.dropped()};
}

Timed measure_host(Run& run, const std::string& label, double size_bytes, const std::function<void()>& call, int warmup) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < warmup; ++i) call();
  SampleCollector samples(run.opt.rule());
  do {
    const auto a = std::chrono::steady_clock::now();
    call();
    const double t = seconds_since(a);
    samples.add(t);
    run.raw.push_back(RawSample{label, size_bytes, t, false});
  } while (!samples.done(seconds_since(t0)));
  return Timed{samples.stats(), samples.dropped()};
}

}  // namespace dlscale::calib
