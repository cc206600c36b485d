// dlscale-calibrate: measure this machine's GPUs, copies, collectives, GEMMs, layers and storage, and
// write a dlscale calibration file (docs/calibration.md) that `dlscale predict --calibration` reads.
// Exit status: 0 written, 2 bad option or input, 3 no usable GPU (one line, nothing written), 1 other.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <sstream>

#include "common.hpp"
#include "dlscale/report.hpp"

namespace {
using namespace dlscale;
using namespace dlscale::calib;

std::string utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string samples_csv(const std::vector<RawSample>& raw) {
  std::ostringstream o;
  o << "measurement,size_bytes,time_s,dropped_throttled\n";
  for (const auto& r : raw)
    o << r.measurement << ',' << fmt::format("{}", r.size_bytes) << ',' << fmt::format("{:.9g}", r.time_s) << ','
      << (r.dropped ? 1 : 0) << '\n';
  return o.str();
}

void run_all(Run& run, const std::string& command_line) {
  const auto t0 = std::chrono::steady_clock::now();
  auto& prov = run.cal.provenance;
  prov.tool = "dlscale-calibrate 0.1.0";
  prov.date = utc_now();
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  prov.host = host;
  prov.command_line = command_line;
  probe_devices(run);  // DeviceError (exit 3) when no GPU is usable: before anything is written
  const auto section = [&](const char* name, void (*fn)(Run&)) {
    if (run.opt.skipped(name)) {
      run.progress(fmt::format("{}: skipped (--skip)", name));
      return;
    }
    run.progress(fmt::format("== {}", name));
    fn(run);
  };
  section("copies", measure_copies);
  section("collectives", measure_collectives);
  section("gemm", measure_gemm);
  section("layers", measure_layers);
  if (!run.opt.storage.empty()) section("storage", measure_storage);
  prov.notes =
      fmt::format("{} run in {:.0f} s; bandwidth = bytes copied / median time; collectives timed as nccl-tests",
                  run.opt.quick ? "quick" : "full", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());

  // Everything measured: write the beside-files first, the calibration last, each atomically.
  const std::filesystem::path out(run.opt.out);
  const std::string base = out.filename().string();
  const std::string stem = base.size() > 5 && base.ends_with(".yaml") ? base.substr(0, base.size() - 5) : base;
  const std::filesystem::path dir = out.parent_path();
  run.cal.raw_samples = stem + ".samples.csv";
  write_file_atomically((dir / run.cal.raw_samples).string(), samples_csv(run.raw));
  if (!run.topology_xml.empty()) {
    run.cal.topology_file = stem + ".nccl-topo.xml";
    write_file_atomically((dir / run.cal.topology_file).string(), run.topology_xml);
  }
  save_calibration(run.cal, out);
  run.progress(fmt::format("wrote {} (+ {}{})", out.string(), run.cal.raw_samples,
                           run.cal.topology_file.empty() ? "" : ", " + run.cal.topology_file));
}

}  // namespace

int main(int argc, char** argv) {
  std::string command_line;
  for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);
  Run run;
  CLI::App app{"dlscale-calibrate: measure this machine's GPUs and write a dlscale calibration file"};
  app.add_option("-o,--out", run.opt.out,
                 "Calibration file to write (atomically); raw samples and NCCL's topology "
                 "dump are written beside it")
      ->required()
      ->type_name("FILE");
  app.add_flag("--quick", run.opt.quick, "About one minute: fewer sizes, samples and precisions");
  app.add_option("--model", run.opt.model, "Network of models/ whose layers are timed")->capture_default_str();
  app.add_option("--batch", run.opt.batches, "Batch size(s) for the layer times")->delimiter(',')->capture_default_str();
  app.add_option("--precision", run.opt.precisions,
                 "fp32 (strict), tf32 (TF32 allowed: PyTorch's default for convolutions; Ampere and newer) and/or fp16 "
                 "(mixed) for the layer times")
      ->delimiter(',')
      ->check(CLI::IsMember({"fp32", "tf32", "fp16"}))
      ->capture_default_str();
  app.add_option("--storage", run.opt.storage, "File or folder whose sequential read bandwidth to measure")->type_name("PATH");
  app.add_option("--skip", run.opt.skip, "Sections to skip: copies, p2p, collectives, gemm, layers")
      ->delimiter(',')
      ->check(CLI::IsMember({"copies", "p2p", "collectives", "gemm", "layers", "storage"}));
  app.add_option("--max-gpus", run.opt.max_gpus, "Use at most this many GPUs (0: all visible)");
  app.add_option("--budget", run.opt.budget_s, "Seconds at most per measurement (0: 0.25 with --quick, else 2)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "dlscale-calibrate: %s\n", e.what());
    return 2;
  }
  try {
    run_all(run, command_line);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dlscale-calibrate: %s\n", e.what());
    return exit_code_for(e);
  }
  return 0;
}
