// NCCL collectives on 2..n local GPUs of one process (ncclCommInitAll), reported as nccl-tests does:
// time per operation, algbw = S/t, busbw = algbw × factor (doc/PERFORMANCE.md), S as nccl-tests' "size"
// (per-rank array for all-reduce and broadcast, the whole gathered array for all-gather and
// reduce-scatter). One sample = `iters` back-to-back operations between CUDA events on every rank's
// stream; the slowest rank's time counts. An α-β fit per (collective, GPU count) closes each curve.
// The first communicator also dumps NCCL's view of the machine (NCCL_TOPO_DUMP_FILE).
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include "common.hpp"
#include "dlscale/format.hpp"

namespace dlscale::calib {
namespace {

std::vector<std::size_t> collective_sizes(bool quick) {
  std::vector<std::size_t> s;
  const std::size_t step = quick ? 16 : 4;
  for (std::size_t b = 8; b <= (std::size_t{1} << 30); b *= step) s.push_back(b);
  if (s.back() != (std::size_t{1} << 30)) s.push_back(std::size_t{1} << 30);
  return s;
}

struct Ranks {
  std::vector<int> devices;
  std::vector<ncclComm_t> comms;
  std::vector<Stream> streams;
  std::vector<DeviceBuffer> send, recv;
  std::vector<Event> start, stop;

  explicit Ranks(int n, std::size_t bytes_per_buffer) : devices(static_cast<std::size_t>(n)), comms(static_cast<std::size_t>(n)) {
    for (int i = 0; i < n; ++i) devices[static_cast<std::size_t>(i)] = i;
    NCCL_CALL(ncclCommInitAll(comms.data(), n, devices.data()));
    for (int i = 0; i < n; ++i) {
      DeviceScope scope(i);
      streams.emplace_back();
      send.emplace_back(bytes_per_buffer);
      recv.emplace_back(bytes_per_buffer);
      CUDA_CALL(
          launch_fill_float(streams.back().get(), send.back().as<float>(), bytes_per_buffer / 4, 7u + static_cast<unsigned>(i)));
      CUDA_CALL(cudaMemsetAsync(recv.back().get(), 0, bytes_per_buffer, streams.back().get()));
      start.emplace_back();
      stop.emplace_back();
    }
    sync();
  }
  ~Ranks() {
    for (auto c : comms)
      if (c) ncclCommDestroy(c);
  }
  Ranks(const Ranks&) = delete;
  Ranks& operator=(const Ranks&) = delete;
  void sync() {
    for (std::size_t i = 0; i < devices.size(); ++i) {
      DeviceScope scope(devices[i]);
      CUDA_CALL(cudaStreamSynchronize(streams[i].get()));
    }
  }
  [[nodiscard]] int size() const { return static_cast<int>(devices.size()); }
};

/// One collective of `bytes` (nccl-tests' size) on every rank, as a group.
void launch(Ranks& r, CollectiveOp op, std::size_t size) {
  const int n = r.size();
  const std::size_t count = size / sizeof(float);
  NCCL_CALL(ncclGroupStart());
  for (int i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    void* sb = r.send[k].get();
    void* rb = r.recv[k].get();
    cudaStream_t s = r.streams[k].get();
    switch (op) {
      case CollectiveOp::allreduce:
        NCCL_CALL(ncclAllReduce(sb, rb, count, ncclFloat, ncclSum, r.comms[k], s));
        break;
      case CollectiveOp::allgather:
        NCCL_CALL(ncclAllGather(sb, rb, count / static_cast<std::size_t>(n), ncclFloat, r.comms[k], s));
        break;
      case CollectiveOp::reducescatter:
        NCCL_CALL(ncclReduceScatter(sb, rb, count / static_cast<std::size_t>(n), ncclFloat, ncclSum, r.comms[k], s));
        break;
      case CollectiveOp::broadcast:
        NCCL_CALL(ncclBroadcast(sb, rb, count, ncclFloat, 0, r.comms[k], s));
        break;
      case CollectiveOp::reduce:
        NCCL_CALL(ncclReduce(sb, rb, count, ncclFloat, ncclSum, 0, r.comms[k], s));
        break;
    }
  }
  NCCL_CALL(ncclGroupEnd());
}

/// NVLinks per GPU from NCCL's topology dump: the sum of <nvlink count="k"> under each <gpu dev="i">.
void nvlinks_from_dump(const std::string& xml, std::vector<DeviceInfo>& devices) {
  static const std::regex gpu(R"re(<gpu\s[^>]*dev="(\d+)")re");
  static const std::regex link(R"re(<nvlink\s[^>]*count="(\d+)")re");
  std::istringstream in(xml);
  std::string line;
  int current = -1;
  std::vector<int> links(devices.size(), 0);
  bool any = false;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, gpu)) current = std::stoi(m[1].str());
    else if (line.find("</gpu>") != std::string::npos) current = -1;
    else if (current >= 0 && current < static_cast<int>(links.size()) && std::regex_search(line, m, link)) {
      links[static_cast<std::size_t>(current)] += std::stoi(m[1].str());
      any = true;
    }
  }
  if (!any) return;
  for (std::size_t i = 0; i < devices.size(); ++i)
    if (devices[i].nvlinks == 0) devices[i].nvlinks = links[i];
}

}  // namespace

void measure_collectives(Run& run) {
  const int ndev = static_cast<int>(run.cal.devices.size());
  const std::string dump = fmt::format("/tmp/dlscale-calibrate-{}.nccl-topo.xml", ::getpid());
  ::setenv("NCCL_TOPO_DUMP_FILE", dump.c_str(), 1);
  const auto sizes = collective_sizes(run.opt.quick);
  const std::size_t max_size = sizes.back();
  std::vector<int> counts;
  if (ndev == 1) counts = {1};  // no collective to time, but NCCL still dumps the topology
  else if (run.opt.quick) counts = {ndev};
  else
    for (int n = 2; n <= ndev; ++n) counts.push_back(n);

  StoppingRule rule = run.opt.rule();
  rule.min_samples = run.opt.quick ? 3 : 5;
  rule.budget_s = run.opt.budget_s > 0 ? run.opt.budget_s : (run.opt.quick ? 0.3 : 1.0);
  for (int n : counts) {
    Ranks ranks(n, max_size);
    {
      std::ifstream f(dump);
      std::stringstream ss;
      ss << f.rdbuf();
      if (!ss.str().empty()) {
        run.topology_xml = ss.str();
        nvlinks_from_dump(run.topology_xml, run.cal.devices);
      }
    }
    if (n < 2) {
      run.progress("one GPU: no collective to time (NCCL topology dumped)");
      break;
    }
    for (CollectiveOp op :
         {CollectiveOp::allreduce, CollectiveOp::allgather, CollectiveOp::reducescatter, CollectiveOp::broadcast}) {
      CollectiveCurve curve;
      curve.op = op;
      curve.gpus = n;
      curve.nodes = 1;
      curve.source = "dlscale-calibrate (ncclCommInitAll)";
      for (std::size_t size : sizes) {
        const bool split = op == CollectiveOp::allgather || op == CollectiveOp::reducescatter;
        if (size % (sizeof(float) * (split ? static_cast<std::size_t>(n) : 1)) != 0) continue;  // as nccl-tests aligns
        // iterations per sample: enough that one sample lasts ~1 ms at least for tiny sizes
        const int iters = size <= (1u << 20) ? 20 : (size <= (64u << 20) ? 5 : 1);
        for (int w = 0; w < 5; ++w) launch(ranks, op, size);
        ranks.sync();
        SampleCollector samples(rule);
        const auto t0 = std::chrono::steady_clock::now();
        const std::string label = fmt::format("nccl_{}/{}gpus", to_string(op), n);
        do {
          for (int i = 0; i < n; ++i) {
            DeviceScope scope(i);
            ranks.start[static_cast<std::size_t>(i)].record(ranks.streams[static_cast<std::size_t>(i)].get());
          }
          for (int it = 0; it < iters; ++it) launch(ranks, op, size);
          for (int i = 0; i < n; ++i) {
            DeviceScope scope(i);
            ranks.stop[static_cast<std::size_t>(i)].record(ranks.streams[static_cast<std::size_t>(i)].get());
          }
          ranks.sync();
          double t = 0;
          for (int i = 0; i < n; ++i)
            t = std::max(t, ranks.stop[static_cast<std::size_t>(i)].since(ranks.start[static_cast<std::size_t>(i)]) / iters);
          samples.add(t);
          run.raw.push_back(RawSample{label, static_cast<double>(size), t, false});
        } while (!samples.done(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()));
        const SampleStats st = samples.stats();
        CollectivePoint p;
        p.size = bytes(static_cast<double>(size));
        p.time = seconds(st.median);
        p.iqr = seconds(st.iqr());
        p.samples = st.count;
        curve.points.push_back(p);
        const BytesPerSecond alg = algorithm_bandwidth(p.size, p.time);
        run.progress(fmt::format("{} {} GPUs {}: {} algbw {:.2f} GB/s busbw {:.2f} GB/s", to_string(op), n, p.size, p.time,
                                 in_gigabytes_per_second(alg), in_gigabytes_per_second(alg) * bus_bandwidth_factor(op, n)));
      }
      try {
        curve.fit = fit_alpha_beta(curve.points);
        run.progress(fmt::format("{} {} GPUs: alpha {} beta {}", to_string(op), n, curve.fit->alpha, curve.fit->beta));
      } catch (const std::invalid_argument& e) {
        run.progress(fmt::format("{} {} GPUs: no alpha-beta fit ({})", to_string(op), n, e.what()));
      }
      run.cal.collectives.push_back(std::move(curve));
    }
  }
  std::remove(dump.c_str());
}

}  // namespace dlscale::calib
