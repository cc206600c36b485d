// Copies: host<->device from pinned and pageable memory over sizes, device-local copy, and the GPU<->GPU
// P2P bandwidth/latency matrix with and without peer access (as the CUDA samples' bandwidthTest and
// p2pBandwidthLatencyTest measure them). Bandwidth = bytes copied / time (a device-local copy reads
// and writes each byte: twice that in memory traffic).
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <memory>

#include "common.hpp"
#include "dlscale/format.hpp"

namespace dlscale::calib {
namespace {

std::vector<std::size_t> copy_sizes(bool quick) {
  if (quick) return {64u << 10, 1u << 20, 16u << 20, 256u << 20};
  std::vector<std::size_t> s;
  for (std::size_t b = 4u << 10; b <= (std::size_t{1} << 30); b *= 4) s.push_back(b);
  return s;
}

BandwidthPoint point(std::size_t size, const Timed& t) {
  BandwidthPoint p;
  p.size = bytes(static_cast<double>(size));
  p.time = seconds(t.stats.median);
  p.bandwidth = p.size / p.time;
  p.iqr = seconds(t.stats.iqr());
  p.samples = t.stats.count;
  return p;
}

}  // namespace

void measure_copies(Run& run) {
  const auto sizes = copy_sizes(run.opt.quick);
  const std::size_t max_size = sizes.back();
  const int ndev = static_cast<int>(run.cal.devices.size());
  const int copy_devices = run.opt.quick ? 1 : ndev;
  for (int d = 0; d < copy_devices; ++d) {
    DeviceScope scope(d);
    Stream stream;
    DeviceBuffer dev(max_size), dev2(max_size);
    PinnedBuffer pinned(max_size);
    std::unique_ptr<char[]> pageable(new char[max_size]);
    std::memset(pageable.get(), 1, max_size);
    std::memset(pinned.get(), 1, max_size);
    CUDA_CALL(cudaMemset(dev.get(), 0, max_size));
    CUDA_CALL(cudaMemset(dev2.get(), 0, max_size));
    TransferCurve h2d_pin{TransferKind::h2d_pinned, d, "dlscale-calibrate", {}};
    TransferCurve h2d_page{TransferKind::h2d_pageable, d, "dlscale-calibrate", {}};
    TransferCurve d2h_pin{TransferKind::d2h_pinned, d, "dlscale-calibrate", {}};
    TransferCurve d2h_page{TransferKind::d2h_pageable, d, "dlscale-calibrate", {}};
    TransferCurve local{TransferKind::device_copy, d, "dlscale-calibrate", {}};
    for (std::size_t n : sizes) {
      const double sz = static_cast<double>(n);
      auto report = [&](TransferCurve& curve, const char* what, const Timed& t) {
        curve.points.push_back(point(n, t));
        run.progress(fmt::format("GPU {} {} {}: {} (median of {}, IQR {:.1f} %{})", d, what, bytes(sz),
                                 curve.points.back().bandwidth, t.stats.count, 100 * t.stats.relative_noise(),
                                 t.dropped ? fmt::format(", {} throttled dropped", t.dropped) : ""));
      };
      report(h2d_pin, "H2D pinned",
             measure_gpu(run, fmt::format("h2d_pinned/gpu{}", d), sz, d, stream.get(), [&](cudaStream_t s) {
               CUDA_CALL(cudaMemcpyAsync(dev.get(), pinned.get(), n, cudaMemcpyHostToDevice, s));
             }));
      report(d2h_pin, "D2H pinned",
             measure_gpu(run, fmt::format("d2h_pinned/gpu{}", d), sz, d, stream.get(), [&](cudaStream_t s) {
               CUDA_CALL(cudaMemcpyAsync(pinned.get(), dev.get(), n, cudaMemcpyDeviceToHost, s));
             }));
      // Pageable copies block the host (the driver stages them), so they cannot sit behind a blocking
      // kernel: timed on the host around a synchronous cudaMemcpy, as the CUDA samples do.
      report(h2d_page, "H2D pageable", measure_host(run, fmt::format("h2d_pageable/gpu{}", d), sz, [&] {
               CUDA_CALL(cudaMemcpy(dev.get(), pageable.get(), n, cudaMemcpyHostToDevice));
             }));
      report(d2h_page, "D2H pageable", measure_host(run, fmt::format("d2h_pageable/gpu{}", d), sz, [&] {
               CUDA_CALL(cudaMemcpy(pageable.get(), dev.get(), n, cudaMemcpyDeviceToHost));
             }));
      report(local, "device copy",
             measure_gpu(run, fmt::format("device_copy/gpu{}", d), sz, d, stream.get(), [&](cudaStream_t s) {
               CUDA_CALL(cudaMemcpyAsync(dev2.get(), dev.get(), n, cudaMemcpyDeviceToDevice, s));
             }));
    }
    for (auto* c : {&h2d_pin, &h2d_page, &d2h_pin, &d2h_page, &local}) run.cal.transfers.push_back(std::move(*c));
  }

  if (ndev < 2 || run.opt.skipped("p2p")) return;
  // ---- P2P matrix ----
  const std::size_t big = run.opt.quick ? (64u << 20) : (256u << 20);
  const std::size_t small = 4;
  std::vector<DeviceBuffer> bufs;
  for (int d = 0; d < ndev; ++d) {
    DeviceScope scope(d);
    bufs.emplace_back(big);
    CUDA_CALL(cudaMemset(bufs.back().get(), 0, big));
  }
  for (bool peer : {true, false}) {
    for (int src = 0; src < ndev; ++src) {
      for (int dst = 0; dst < ndev; ++dst) {
        if (src == dst) continue;
        int can = 0;
        CUDA_CALL(cudaDeviceCanAccessPeer(&can, dst, src));
        if (peer && !can) continue;
        {
          DeviceScope scope(dst);
          if (peer) {
            const cudaError_t e = cudaDeviceEnablePeerAccess(src, 0);
            if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) CUDA_CALL(e);
            cudaGetLastError();
          } else {  // both directions off, so the copy is staged through host memory
            if (cudaDeviceDisablePeerAccess(src) != cudaSuccess) cudaGetLastError();  // not enabled: fine
          }
        }
        if (!peer) {
          DeviceScope other(src);
          if (cudaDeviceDisablePeerAccess(dst) != cudaSuccess) cudaGetLastError();
        }
        DeviceScope scope(dst);
        Stream stream;
        const std::string tag = fmt::format("p2p{}/{}->{}", peer ? "" : "_staged", src, dst);
        const Timed bw = measure_gpu(run, tag, static_cast<double>(big), dst, stream.get(), [&](cudaStream_t s) {
          CUDA_CALL(cudaMemcpyPeerAsync(bufs[static_cast<std::size_t>(dst)].get(), dst, bufs[static_cast<std::size_t>(src)].get(),
                                        src, big, s));
        });
        const Timed lat = measure_gpu(run, tag + "/latency", static_cast<double>(small), dst, stream.get(), [&](cudaStream_t s) {
          CUDA_CALL(cudaMemcpyPeerAsync(bufs[static_cast<std::size_t>(dst)].get(), dst, bufs[static_cast<std::size_t>(src)].get(),
                                        src, small, s));
        });
        P2PEntry e;
        e.src = src;
        e.dst = dst;
        e.peer_access = peer;
        e.bandwidth = bytes(static_cast<double>(big)) / seconds(bw.stats.median);
        e.latency = seconds(lat.stats.median);
        run.progress(fmt::format("P2P {} -> {} ({}): {}, {}-byte copy {}", src, dst, peer ? "peer access" : "staged",
                                 *e.bandwidth, small, *e.latency));
        run.cal.p2p.push_back(e);
      }
    }
  }
}

}  // namespace dlscale::calib
