// The bad-input catalogue (issue 9, item 3): malformed inputs of every format, each run through the real
// command, each with the exact line a user should read. For every row: exit status 2, exactly one line on
// stderr, nothing on stdout, and (with -o / --dir) no output file and no temporary file left behind.
//
// How to read a row: `files` are written into the row's own folder; `args` is the command line, where
//   {dir}  = the row's folder           {out}    = {dir}/out/result (its folder must stay empty)
//   {src}  = the source tree            {outdir} = {dir}/out (for `model export --dir`)
//   {mini} = a small data folder (below) whose lists of known names are short and fixed
// and `expected` is the whole of stderr with the same placeholders. `data` sets DLSCALE_DATA_DIR for
// the row (default: the repository).
//
// The line:col in each expectation is counted by hand in the row's text: lines from 1, columns from 1, at
// the first character of the offending value (or key, for unknown and duplicate keys). Most rows edit one
// line of a base input that is shown with its line numbers; the test `BaseInputsAreAccepted` checks that
// every base input is valid, so each error comes from the edit alone.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "support/data_dir.hpp"
#include "support/run.hpp"

namespace dlscale {
namespace {
namespace fs = std::filesystem;
using test::run_cli;

// ---- base inputs (valid) --------------------------------------------------------------------------------

// A cluster in the simple form.
constexpr const char* kCluster =
    "name: tiny\n"                                                                       // 1
    "nodes: 2\n"                                                                         // 2
    "gpus_per_node: 2\n"                                                                 // 3
    "gpu: {name: Test GPU, peak_fp32: \"10 TFLOPS\", memory_bandwidth: \"300 GB/s\"}\n"  // 4
    "host_to_gpu: {pinned: \"10 GB/s\"}\n"                                               // 5
    "intra_node: {bandwidth: \"10 GB/s\", latency: \"5 us\"}\n"                          // 6
    "inter_node: {bandwidth: \"56 Gb/s\", latency: \"10 us\"}\n"                         // 7
    "storage: {disk: \"500 MB/s\", page_cache: \"3 GB/s\"}\n";                           // 8

// A cluster with a topology graph (docs/topology.md): two nodes of two NVLinked GPUs behind a PCIe switch.
constexpr const char* kTopo =
    "name: duo\n"                                                       // 1
    "nodes: 2\n"                                                        // 2
    "gpus_per_node: 2\n"                                                // 3
    "gpu: v100-sxm2\n"                                                  // 4
    "storage: {disk: \"1 GB/s\", page_cache: \"10 GB/s\"}\n"            // 5
    "fabric: {kind: infiniband, speed: \"100 Gb/s\"}\n"                 // 6
    "node:\n"                                                           // 7
    "  cpus:\n"                                                         // 8
    "    - {name: cpu0, arch: x86}\n"                                   // 9
    "  pcie_switches: [sw0]\n"                                          // 10
    "  nics:\n"                                                         // 11
    "    - {name: nic0}\n"                                              // 12
    "  links:\n"                                                        // 13
    "    - {a: gpu0, b: gpu1, kind: nvlink, count: 2}\n"                // 14
    "    - {a: gpu0, b: sw0, kind: pcie, generation: 3, lanes: 16}\n"   // 15
    "    - {a: gpu1, b: sw0, kind: pcie, generation: 3, lanes: 16}\n"   // 16
    "    - {a: nic0, b: sw0, kind: pcie, generation: 3, lanes: 16}\n"   // 17
    "    - {a: sw0, b: cpu0, kind: pcie, generation: 3, lanes: 16}\n";  // 18

// A GPU catalogue (topologies/gpus.yaml) of two entries.
constexpr const char* kGpus =
    "gpus:\n"                                                                                           // 1
    "  - {id: p40, name: Tesla P40, sm: 61, peak_fp32: \"11.8 TFLOPS\", peak_fp16: \"0.18 TFLOPS\",\n"  // 2
    "     memory_bandwidth: \"346 GB/s\", memory: \"24 GB\"}\n"                                         // 3
    "  - {id: v100-sxm2, name: Tesla V100 SXM2, sm: 70, peak_fp32: \"15.7 TFLOPS\",\n"                  // 4
    "     peak_fp16: \"125 TFLOPS\", memory_bandwidth: \"900 GB/s\", memory: \"32 GB\"}\n";             // 5

// A network (models/NAME.yaml).
constexpr const char* kNet =
    "name: tiny-net\n"                                                           // 1
    "input: {kind: image, shape: [3, 32, 32], bytes_per_sample: \"12288 B\"}\n"  // 2
    "layers:\n"                                                                  // 3
    "  - {name: conv1, kind: conv, params: 896, forward_flops: 1769472}\n"       // 4
    "  - {name: fc, kind: linear, params: 10250, forward_flops: 20480}\n";       // 5

// An architecture description (models/arch/NAME.yaml; the name must be the file's).
constexpr const char* kArch =
    "name: small\n"                                          // 1
    "description: \"a small CNN\"\n"                         // 2
    "input: {image: [3, 32, 32]}\n"                          // 3
    "layers:\n"                                              // 4
    "  - conv: {name: conv1, out: 16, kernel: 3, pad: 1}\n"  // 5
    "  - relu\n"                                             // 6
    "  - maxpool: {kernel: 2, stride: 2}\n"                  // 7
    "  - flatten\n"                                          // 8
    "  - linear: {name: fc, out: 10}\n";                     // 9

// A small decoder's description up to its last settings (multi-head latent attention's cases complete line 5).
constexpr const char* kArchDecoder =
    "name: small\n"
    "description: \"a small decoder\"\n"
    "input: {tokens: 16}\n"
    "layers:\n"
    "  - decoder: {layers: 2, width: 64, heads: 4, ffn: 128, ffn_kind: swiglu, vocab: 100, positions: rotary, ";  // 5

// A framework strategy (models/frameworks/NAME.yaml).
constexpr const char* kFramework =
    "name: ddp\n"                                       // 1
    "io: {prefetch: true, memory: pinned}\n"            // 2
    "aggregation: allreduce\n"                          // 3
    "overlap: bucketed\n"                               // 4
    "update: after_aggregation\n"                       // 5
    "buckets: {size: \"25 MiB\", first: \"1 MiB\"}\n";  // 6

// A profile (measured single-GPU phases).
constexpr const char* kProfile =
    "model: alexnet\n"        // 1
    "framework: cntk\n"       // 2
    "cluster: shi-chu-p40\n"  // 3
    "batch_per_gpu: 1024\n"   // 4
    "single_gpu: {io: \"0.223 s\", h2d: \"0.0527 s\", forward: \"0.1684 s\", backward: \"0.2918 s\", update: \"0.0086 s\"}\n"  // 5
    "measured:\n"                                  // 6
    "  2: {io: \"0.45 s\", comm: \"0.0359 s\"}\n"  // 7
    "  4: {io: \"0.72 s\", comm: \"0.042 s\"}\n";  // 8

// A calibration file (docs/calibration.md), for the A100 test cluster.
constexpr const char* kCalibration =
    "schema: 1\n"                                        // 1
    "provenance: {tool: \"hand-written\"}\n"             // 2
    "gpu: \"NVIDIA A100-SXM4-80GB\"\n"                   // 3
    "collectives:\n"                                     // 4
    "  - op: allreduce\n"                                // 5
    "    gpus: 2\n"                                      // 6
    "    points:\n"                                      // 7
    "      - {size: \"1048576 B\", time: \"20 us\"}\n"   // 8
    "      - {size: \"4194304 B\", time: \"60 us\"}\n";  // 9

// The header of a CSV sweep (and of each CSV part of a sharded one).
constexpr const char* kSweepHeader =
    "cluster,model,framework,precision,batch_per_gpu,bucket,links,gpus,nodes,iteration_time_s,throughput_samples_per_s,"
    "speedup,efficiency,hiding_case,bottleneck,bottleneck_share,comm_s,comm_exposed_s,memory_per_gpu_bytes,memory_fits,"
    "train_hours,gpu_hours,cost,currency,throughput_tokens_per_s,tokens_per_s_per_gpu,mfu,hfu\n";

// A sweep spec (docs/planning.md).
constexpr const char* kSweep =
    "name: s\n"                                // 1
    "grid:\n"                                  // 2
    "  cluster: shi-chu-p40\n"                 // 3
    "  model: resnet50\n"                      // 4
    "  framework: [caffe-mpi, pytorch-ddp]\n"  // 5
    "  gpus: [1, 4]\n"                         // 6
    "  links:\n"                               // 7
    "    - {}\n"                               // 8
    "    - {inter_node: \"100 Gb/s\"}\n";      // 9

// A reproduction scenario (docs/reproduce.md).
constexpr const char* kPaper =
    "paper: mini\n"                  // 1
    "title: \"a small scenario\"\n"  // 2
    "experiments:\n"                 // 3
    "  - id: one\n"                  // 4
    "    systems: shi-chu-p40\n"     // 5
    "    models: resnet50\n"         // 6
    "    frameworks: caffe-mpi\n"    // 7
    "    gpus: [1, 2, 4]\n"          // 8
    "    batch: 32\n";               // 9

// An nccl-tests log (all_reduce_perf, current columns) of 4 GPUs. Rows obey algbw = S/t and busbw =
// algbw·2(n−1)/n = 1.5·algbw: 1048576 B / 50 us = 20.97 GB/s, ×1.5 = 31.46.
constexpr const char* kLog =
    "# nThread 1 nGpus 4 minBytes 1048576 maxBytes 4194304 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n"         // 1
    "#\n"                                                                                                                     // 2
    "# Using devices\n"                                                                                                       // 3
    "#  Rank  0 Group  0 Pid  100 on host1 device  0 [0x07] NVIDIA A100-SXM4-80GB\n"                                          // 4
    "#  Rank  1 Group  0 Pid  100 on host1 device  1 [0x0f] NVIDIA A100-SXM4-80GB\n"                                          // 5
    "#  Rank  2 Group  0 Pid  100 on host1 device  2 [0x47] NVIDIA A100-SXM4-80GB\n"                                          // 6
    "#  Rank  3 Group  0 Pid  100 on host1 device  3 [0x4e] NVIDIA A100-SXM4-80GB\n"                                          // 7
    "#\n"                                                                                                                     // 8
    "#                                                              out-of-place                       in-place\n"            // 9
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"  // 10
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"  // 11
    "     1048576        262144     float     sum      -1    50.00   20.97   31.46       0    50.00   20.97   31.46       0\n"  // 12
    "     2097152        524288     float     sum      -1    80.00   26.21   39.32       0    80.00   26.21   39.32       0\n"  // 13
    "     4194304       1048576     float     sum      -1   140.00   29.96   44.94       0   140.00   29.96   44.94       0\n"  // 14
    "# Out of bounds values : 0 OK\n"    // 15
    "# Avg bus bandwidth    : 38.57\n";  // 16

// The same in the oldest layout (no redop/root, "error" columns), 8 GPUs: busbw = 1.75·algbw.
constexpr const char* kOldLog =
    "# nThread 1 nGpus 8 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n"  // 1
    "#       size         count    type     time   algbw   busbw  error     time   algbw   busbw  error\n"             // 2
    "#        (B)    (elements)             (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"                    // 3
    "     1048576        262144   float    44.56   23.53   41.18  1e-07    44.12   23.77   41.59  1e-07\n"             // 4
    "     2097152        524288   float    57.94   36.20   63.34  1e-07    58.81   35.66   62.40  1e-07\n"             // 5
    "# Avg bus bandwidth    : 52.13\n";                                                                                // 6

// A trimmed broadcast_perf log: no '# Rank' lines, no '# nThread' header; busbw = algbw (factor 1).
constexpr const char* kTrimmedBroadcast =
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"  // 1
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"         // 2
    "     1048576        262144     float    none       0    50.00   20.97   20.97       0    50.00   20.97   20.97       0\n"  // 3
    "     2097152        524288     float    none       0    80.00   26.21   26.21       0    80.00   26.21   26.21       0\n"  // 4
    "# Avg bus bandwidth    : 23.59\n";  // 5

// nvbandwidth -j output.
constexpr const char* kNvb =
    "{\n"                                                                          // 1
    "  \"nvbandwidth\": {\n"                                                       // 2
    "    \"GPU Device list\": [\"0: NVIDIA H100 80GB HBM3 (00000000:19:00)\"],\n"  // 3
    "    \"testcases\": [\n"                                                       // 4
    "      {\n"                                                                    // 5
    "        \"name\": \"host_to_device_memcpy_ce\",\n"                            // 6
    "        \"status\": \"Passed\",\n"                                            // 7
    "        \"bandwidth_matrix\": [[\"53.69\"]]\n"                                // 8
    "      }\n"                                                                    // 9
    "    ]\n"                                                                      // 10
    "  }\n"                                                                        // 11
    "}\n";                                                                         // 12

// nvbandwidth's text output (without -j), v0.7: 512 MiB copies.
constexpr const char* kNvbText =
    "nvbandwidth Version: v0.7\n"                           // 1
    "Built from Git version: v0.7\n"                        // 2
    "\n"                                                    // 3
    "Device 0: NVIDIA H100 80GB HBM3 (00000000:19:00)\n"    // 4
    "\n"                                                    // 5
    "Running host_to_device_memcpy_ce.\n"                   // 6
    "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)\n"  // 7
    "           0\n"                                        // 8
    " 0     53.69\n"                                        // 9
    "\n"                                                    // 10
    "SUM host_to_device_memcpy_ce 53.69\n";                 // 11

// nvidia-smi topo -m (tab-separated).
constexpr const char* kSmi =
    "\tGPU0\tGPU1\tmlx5_0\tCPU Affinity\n"  // 1
    "GPU0\t X \tNV2\tPIX\t0-19\n"           // 2
    "GPU1\tNV2\t X \tPIX\t0-19\n"           // 3
    "\n"                                    // 4
    "Legend:\n";                            // 5

// NCCL_TOPO_DUMP_FILE.
constexpr const char* kXml =
    "<system version=\"1\">\n"                                                                       // 1
    "  <cpu numaid=\"0\" arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"85\">\n"   // 2
    "    <pci busid=\"0000:06:00.0\" class=\"0x030200\" link_speed=\"8 GT/s\" link_width=\"16\">\n"  // 3
    "      <gpu dev=\"0\" sm=\"70\" rank=\"0\" gdr=\"1\">\n"                                         // 4
    "        <nvlink target=\"0000:07:00.0\" count=\"2\" tclass=\"0x030200\"/>\n"                    // 5
    "      </gpu>\n"                                                                                 // 6
    "    </pci>\n"                                                                                   // 7
    "    <pci busid=\"0000:07:00.0\" class=\"0x030200\" link_speed=\"8 GT/s\" link_width=\"16\">\n"  // 8
    "      <gpu dev=\"1\" sm=\"70\" rank=\"1\" gdr=\"1\">\n"                                         // 9
    "        <nvlink target=\"0000:06:00.0\" count=\"2\" tclass=\"0x030200\"/>\n"                    // 10
    "      </gpu>\n"                                                                                 // 11
    "    </pci>\n"                                                                                   // 12
    "  </cpu>\n"                                                                                     // 13
    "</system>\n";                                                                                   // 14

/// `text` with line `n` (1-based) replaced by `line`.
std::string edit(const std::string& text, int n, const std::string& line) {
  std::size_t pos = 0;
  for (int i = 1; i < n; ++i) pos = text.find('\n', pos) + 1;
  const std::size_t end = text.find('\n', pos);
  return text.substr(0, pos) + line + text.substr(end);
}
/// `text` without lines `from`..`to`.
std::string drop(const std::string& text, int from, int to) {
  std::size_t a = 0;
  for (int i = 1; i < from; ++i) a = text.find('\n', a) + 1;
  std::size_t b = a;
  for (int i = from; i <= to; ++i) b = text.find('\n', b) + 1;
  return text.substr(0, a) + text.substr(b);
}

// ---- the small data folder {mini} -------------------------------------------------------------------------
// Known names there: cluster tiny; GPUs p40, v100-sxm2; model alexnet; frameworks caffe-mpi, cntk; paper mini;
// architecture alexnet.
fs::path root_dir() {
  static const fs::path dir = fs::temp_directory_path() / ("dlscale-bad-input-" + std::to_string(::getpid()));
  return dir;
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

/// A data folder with a GPU catalogue also needs the kernel-model parameters beside it.
void copy_compute_params(const fs::path& data) {
  if (!fs::is_directory(data / "topologies")) return;
  fs::copy_file(fs::path(DLSCALE_SOURCE_DIR) / "topologies" / "compute-params.yaml", data / "topologies" / "compute-params.yaml",
                fs::copy_options::overwrite_existing);
}

fs::path mini_data_dir() {
  static const fs::path dir = [] {
    const fs::path d = root_dir() / "mini";
    const fs::path src = DLSCALE_SOURCE_DIR;
    write(d / "topologies" / "gpus.yaml", kGpus);
    write(d / "topologies" / "tiny.yaml", edit(kCluster, 4, "gpu: p40"));
    copy_compute_params(d);
    fs::create_directories(d / "models" / "frameworks");
    fs::create_directories(d / "models" / "profiles");
    fs::create_directories(d / "models" / "arch");
    fs::copy_file(src / "models" / "alexnet.yaml", d / "models" / "alexnet.yaml", fs::copy_options::overwrite_existing);
    fs::copy_file(src / "models" / "arch" / "alexnet.yaml", d / "models" / "arch" / "alexnet.yaml",
                  fs::copy_options::overwrite_existing);
    for (const char* f : {"caffe-mpi", "cntk"})
      fs::copy_file(src / "models" / "frameworks" / (std::string(f) + ".yaml"),
                    d / "models" / "frameworks" / (std::string(f) + ".yaml"), fs::copy_options::overwrite_existing);
    fs::create_directories(d / "models" / "frameworks" / "transports");  // cntk's transport: mpi-host-root
    fs::copy_file(src / "models" / "frameworks" / "transports" / "mpi-host-root.yaml",
                  d / "models" / "frameworks" / "transports" / "mpi-host-root.yaml", fs::copy_options::overwrite_existing);
    write(d / "examples" / "papers" / "mini.yaml",
          edit(edit(edit(kPaper, 5, "    systems: tiny"), 6, "    models: alexnet"), 8, "    gpus: [1, 2]"));
    return d;
  }();
  return dir;
}

// ---- the catalogue ---------------------------------------------------------------------------------------
struct Row {
  std::string name;
  std::vector<std::pair<std::string, std::string>> files;
  std::string args;
  std::string expected;
  std::string data = "";
};

std::ostream& operator<<(std::ostream& os, const Row& r) { return os << r.name; }

const std::string kCmdCluster = "predict --cluster {dir}/c.yaml --gpus 1 --format json -o {out}";
const std::string kCmdTopo = "topo show {dir}/t.yaml -o {out}";
const std::string kCmdNet = "predict --model {dir}/m.yaml --gpus 1 --format csv -o {out}";
const std::string kCmdArch = "model export {dir}/small.yaml --dir {outdir}";
const std::string kCmdFramework = "predict --framework {dir}/f.yaml --gpus 1 -o {out}";
const std::string kCmdProfile = "predict --profile {dir}/p.yaml --gpus 1 -o {out}";
const std::string kCmdCalibration =
    "predict --cluster {src}/tests/data/calibration/cluster-a100x8.yaml --model {src}/tests/data/calibration/tiny-net.yaml "
    "--batch 32 --gpus 2 --calibration {dir}/k.yaml -o {out}";
const std::string kCmdSweep = "sweep --spec {dir}/s.yaml --threads 1 -o {out}";
const std::string kCmdPaper = "reproduce {dir}/r.yaml -o {out}";
const std::string kCmdLog = "calibrate import nccl-tests {dir}/all_reduce_perf.log -o {out}";
const std::string kCmdNvb = "calibrate import nvbandwidth {dir}/nv.json -o {out}";
const std::string kCmdSmi = "topo import nvidia-smi {dir}/smi.txt -o {out}";
const std::string kCmdXml = "topo import nccl-xml {dir}/topo.xml -o {out}";
const std::string kCmdGpu = "model show {src}/models/alexnet.yaml --gpu p40 -o {out}";

std::vector<Row> catalogue() {
  const std::string E = "dlscale: ";
  std::vector<Row> rows = {
      // ---- cluster, simple form -------------------------------------------------------------------------
      {"cluster_unclosed_flow_map", {{"c.yaml", edit(kCluster, 5, "host_to_gpu: {pinned: \"10 GB/s\"")}}, kCmdCluster,
       E + "{dir}/c.yaml:6:1: malformed YAML: end of map flow not found\n"},
      {"cluster_tab_indentation", {{"c.yaml", edit(kCluster, 2, "\tnodes: 2")}}, kCmdCluster,
       E + "{dir}/c.yaml:2:1: malformed YAML: illegal tab when looking for indentation\n"},
      {"cluster_empty_file", {{"c.yaml", ""}}, kCmdCluster,
       E + "{dir}/c.yaml:1:1: the file is empty (expected a mapping of keys to values)\n"},
      {"cluster_only_a_comment", {{"c.yaml", "# nothing here yet\n"}}, kCmdCluster,
       E + "{dir}/c.yaml:1:1: the file is empty (expected a mapping of keys to values)\n"},
      {"cluster_is_a_list", {{"c.yaml", "- name: tiny\n- nodes: 2\n"}}, kCmdCluster,
       E + "{dir}/c.yaml:1:1: expected a mapping of keys to values\n"},
      {"cluster_nested_unknown_key", {{"c.yaml", edit(kCluster, 8, "storage: {disk: \"500 MB/s\", page_cache: \"3 GB/s\", ssd: \"2 GB/s\"}")}},
       kCmdCluster,
       E + "{dir}/c.yaml:8:51: 'storage.ssd': unknown key (known keys here: dataset_in_page_cache, disk, page_cache)\n"},
      {"cluster_duplicate_key_in_flow_map", {{"c.yaml", edit(kCluster, 5, "host_to_gpu: {pinned: \"10 GB/s\", pinned: \"12 GB/s\"}")}},
       kCmdCluster, E + "{dir}/c.yaml:5:34: 'host_to_gpu.pinned': duplicate key\n"},
      {"cluster_size_for_a_bandwidth", {{"c.yaml", edit(kCluster, 5, "host_to_gpu: {pinned: \"25 GB\"}")}}, kCmdCluster,
       E + "{dir}/c.yaml:5:23: 'host_to_gpu.pinned': unknown bandwidth unit 'GB' in '25 GB' (use B/s, MB/s, GB/s, GiB/s, Mb/s, Gb/s)\n"},
      {"cluster_bandwidth_for_a_time", {{"c.yaml", edit(kCluster, 6, "intra_node: {bandwidth: \"10 GB/s\", latency: \"5 GB/s\"}")}},
       kCmdCluster, E + "{dir}/c.yaml:6:45: 'intra_node.latency': unknown time unit 'GB/s' in '5 GB/s' (use s, ms, us, ns)\n"},
      {"cluster_negative_latency", {{"c.yaml", edit(kCluster, 7, "inter_node: {bandwidth: \"56 Gb/s\", latency: \"-10 us\"}")}},
       kCmdCluster, E + "{dir}/c.yaml:7:45: 'inter_node.latency': '-10 us' is negative\n"},
      {"cluster_zero_inter_node_bandwidth", {{"c.yaml", edit(kCluster, 7, "inter_node: {bandwidth: \"0 Gb/s\", latency: \"10 us\"}")}},
       kCmdCluster, E + "{dir}/c.yaml:7:25: 'inter_node.bandwidth': '0 Gb/s' must be greater than zero\n"},
      {"cluster_nan_bandwidth", {{"c.yaml", edit(kCluster, 5, "host_to_gpu: {pinned: \".nan GB/s\"}")}}, kCmdCluster,
       E + "{dir}/c.yaml:5:23: 'host_to_gpu.pinned': '.nan GB/s' is not a bandwidth (expected a number and a unit)\n"},
      {"cluster_infinite_bandwidth", {{"c.yaml", edit(kCluster, 8, "storage: {disk: \"inf MB/s\", page_cache: \"3 GB/s\"}")}},
       kCmdCluster, E + "{dir}/c.yaml:8:17: 'storage.disk': 'inf MB/s' is not a bandwidth (expected a number and a unit)\n"},
      {"cluster_overflowing_bandwidth", {{"c.yaml", edit(kCluster, 5, "host_to_gpu: {pinned: \"1e400 GB/s\"}")}}, kCmdCluster,
       E + "{dir}/c.yaml:5:23: 'host_to_gpu.pinned': '1e400 GB/s' is not a bandwidth (expected a number and a unit)\n"},
      // issue 35: rates below what any hardware does, and latencies of minutes, are typos, not inputs
      {"cluster_bandwidth_below_physical", {{"c.yaml", edit(kCluster, 5, "host_to_gpu: {pinned: \"1e-300 GB/s\"}")}}, kCmdCluster,
       E + "{dir}/c.yaml:5:23: 'host_to_gpu.pinned': '1e-300 GB/s' is below 1 kB/s, slower than any real hardware\n"},
      {"cluster_bit_rate_below_physical", {{"c.yaml", edit(kCluster, 7, "inter_node: {bandwidth: \"5 b/s\", latency: \"10 us\"}")}},
       kCmdCluster, E + "{dir}/c.yaml:7:25: 'inter_node.bandwidth': '5 b/s' is below 1 kB/s, slower than any real hardware\n"},
      {"cluster_latency_of_minutes", {{"c.yaml", edit(kCluster, 6, "intra_node: {bandwidth: \"10 GB/s\", latency: \"5 min\"}")}},
       kCmdCluster, E + "{dir}/c.yaml:6:45: 'intra_node.latency': '5 min' is more than a minute, longer than any link's latency\n"},
      {"cluster_gpu_flop_rate_below_physical",
       {{"c.yaml", edit(kCluster, 4, "gpu: {name: Test GPU, peak_fp32: \"1e-9 TFLOPS\", memory_bandwidth: \"300 GB/s\"}")}},
       kCmdCluster, E + "{dir}/c.yaml:4:34: 'gpu.peak_fp32': '1e-9 TFLOPS' is below 1 MFLOPS, slower than any real hardware\n"},
      {"cluster_is_a_directory", {{"c.yaml/keep", ""}}, kCmdCluster, E + "{dir}/c.yaml: '--cluster': cannot open file (it is a directory)\n"},
      {"cluster_nodes_out_of_range", {{"c.yaml", edit(kCluster, 2, "nodes: 99999999999")}}, kCmdCluster,
       E + "{dir}/c.yaml:2:8: 'nodes': 99999999999 is too large (at most 1000000)\n"},
      {"cluster_gpus_per_node_out_of_range", {{"c.yaml", edit(kCluster, 3, "gpus_per_node: 4096")}}, kCmdCluster,
       E + "{dir}/c.yaml:3:16: 'gpus_per_node': 4096 is too large (at most 1024)\n"},
      {"cluster_fractional_gpu_count", {{"c.yaml", edit(kCluster, 3, "gpus_per_node: 2.5")}}, kCmdCluster,
       E + "{dir}/c.yaml:3:16: 'gpus_per_node': '2.5' is not a whole number\n"},
      {"cluster_sequence_for_a_map", {{"c.yaml", edit(kCluster, 8, "storage: [\"500 MB/s\", \"3 GB/s\"]")}}, kCmdCluster,
       E + "{dir}/c.yaml:8:10: 'storage': expected a mapping of keys to values\n"},
      {"cluster_map_for_a_scalar", {{"c.yaml", edit(kCluster, 1, "name: {first: tiny}")}}, kCmdCluster,
       E + "{dir}/c.yaml:1:7: 'name': expected a single value, not a list or a mapping\n"},
      {"cluster_missing_nested_key", {{"c.yaml", edit(kCluster, 6, "intra_node: {latency: \"5 us\"}")}}, kCmdCluster,
       E + "{dir}/c.yaml:6:13: 'intra_node.bandwidth': missing required key\n"},
      {"cluster_needs_inter_node", {{"c.yaml", drop(kCluster, 7, 7)}}, kCmdCluster,
       E + "{dir}/c.yaml:1:1: a cluster of more than one node needs 'inter_node'\n"},
      {"cluster_boolean", {{"c.yaml", edit(kCluster, 8, "storage: {disk: \"500 MB/s\", page_cache: \"3 GB/s\", dataset_in_page_cache: maybe}")}},
       kCmdCluster, E + "{dir}/c.yaml:8:74: 'storage.dataset_in_page_cache': 'maybe' is not true or false\n"},
      {"cluster_framework", {{"c.yaml", std::string(kCluster) + "framework: pytorch\n"}}, kCmdCluster + " --model {mini}/models/alexnet.yaml",
       E + "{dir}/c.yaml:9:12: 'framework': unknown framework 'pytorch' (a name in models/frameworks/: caffe-mpi, cntk)\n", "{mini}"},
      {"cluster_price", {{"c.yaml", std::string(kCluster) + "price_per_gpu_hour: \"2.5 dollars\"\n"}}, kCmdCluster,
       E + "{dir}/c.yaml:9:21: 'price_per_gpu_hour': '2.5 dollars' is not a price per GPU-hour like \"2.5 USD\" (an amount ≥ 0 and a currency code)\n"},
      {"cluster_gpu_flop_rate_unit", {{"c.yaml", edit(kCluster, 4, "gpu: {name: Test GPU, peak_fp32: \"10 TFLOP\", memory_bandwidth: \"300 GB/s\"}")}},
       kCmdCluster, E + "{dir}/c.yaml:4:34: 'gpu.peak_fp32': unknown FLOP rate unit 'TFLOP' in '10 TFLOP' (use GFLOPS, TFLOPS, TFLOP/s)\n"},
      {"cluster_gpu_sm_out_of_range",
       {{"c.yaml", edit(kCluster, 4, "gpu: {name: Test GPU, peak_fp32: \"10 TFLOPS\", memory_bandwidth: \"300 GB/s\", sm: 99999999999}")}},
       kCmdCluster, E + "{dir}/c.yaml:4:81: 'gpu.sm': 99999999999 is too large (at most 1000)\n"},
      {"cluster_unknown_gpu_name", {{"c.yaml", edit(kCluster, 4, "gpu: gtx9090")}}, kCmdCluster + " --model {mini}/models/alexnet.yaml",
       E + "{dir}/c.yaml:4:6: 'gpu': unknown GPU 'gtx9090' (known: p40, v100-sxm2)\n", "{mini}"},

      // ---- cluster with a topology graph (node: / fabric:) ------------------------------------------------
      {"topo_link_to_unknown_vertex", {{"t.yaml", edit(kTopo, 15, "    - {a: gpu0, b: sw9, kind: pcie, generation: 3, lanes: 16}")}},
       kCmdTopo, E + "{dir}/t.yaml:15:20: 'node.links[1].b': no vertex named 'sw9' (known: cpu0, gpu0, gpu1, nic0, sw0)\n"},
      {"topo_unknown_link_kind", {{"t.yaml", edit(kTopo, 14, "    - {a: gpu0, b: gpu1, kind: nvlink4, count: 2}")}}, kCmdTopo,
       E + "{dir}/t.yaml:14:32: 'node.links[0].kind': unknown value 'nvlink4' (expected one of: nvlink, pcie, xbus, upi, qpi, "
           "infinity_fabric, smp, infiniband, ethernet)\n"},
      {"topo_zero_nvlinks", {{"t.yaml", edit(kTopo, 14, "    - {a: gpu0, b: gpu1, kind: nvlink, count: 0}")}}, kCmdTopo,
       E + "{dir}/t.yaml:14:47: 'node.links[0].count': a link bundle has at least one link\n"},
      {"topo_nvlinks_out_of_range", {{"t.yaml", edit(kTopo, 14, "    - {a: gpu0, b: gpu1, kind: nvlink, count: 99999999999}")}},
       kCmdTopo, E + "{dir}/t.yaml:14:47: 'node.links[0].count': 99999999999 is too large (at most 1024)\n"},
      {"topo_pcie_lanes_out_of_range", {{"t.yaml", edit(kTopo, 15, "    - {a: gpu0, b: sw0, kind: pcie, generation: 3, lanes: 99999999999}")}},
       kCmdTopo, E + "{dir}/t.yaml:15:59: 'node.links[1].lanes': 99999999999 is too large (at most 64)\n"},
      {"topo_pcie_without_generation", {{"t.yaml", edit(kTopo, 15, "    - {a: gpu0, b: sw0, kind: pcie, lanes: 16}")}}, kCmdTopo,
       E + "{dir}/t.yaml:15:7: 'node.links[1]': a PCIe link needs 'generation' and 'lanes' (or an explicit 'bandwidth')\n"},
      {"topo_link_to_itself", {{"t.yaml", edit(kTopo, 14, "    - {a: gpu0, b: gpu0, kind: nvlink, count: 2}")}}, kCmdTopo,
       E + "{dir}/t.yaml:14:7: 'node.links[0]': a link joins 'gpu0' to itself\n"},
      {"topo_duplicate_link", {{"t.yaml", std::string(kTopo) + "    - {a: cpu0, b: sw0, kind: pcie, generation: 3, lanes: 16}\n"}},
       kCmdTopo, E + "{dir}/t.yaml:19:7: 'node.links[5]': link cpu0–sw0 (pcie) is declared twice (first at line 18)\n"},
      {"topo_vertex_declared_twice", {{"t.yaml", edit(kTopo, 10, "  pcie_switches: [sw0, sw0]")}}, kCmdTopo,
       E + "{dir}/t.yaml:10:24: 'node.pcie_switches[1]': vertex 'sw0' is declared twice\n"},
      {"topo_nvlink_between_nic_and_switch", {{"t.yaml", edit(kTopo, 17, "    - {a: nic0, b: sw0, kind: nvlink}")}}, kCmdTopo,
       E + "{dir}/t.yaml:17:31: 'node.links[3].kind': an NVLink joins a GPU to a GPU, an NVSwitch or a CPU, not 'nic0' to 'sw0'\n"},
      {"topo_needs_fabric", {{"t.yaml", drop(kTopo, 6, 6)}}, kCmdTopo,
       E + "{dir}/t.yaml:7:3: 'node': a cluster of more than one node needs a 'fabric' section next to 'node'\n"},
      {"topo_fabric_without_node", {{"t.yaml", drop(kTopo, 7, 18)}}, kCmdTopo,
       E + "{dir}/t.yaml:6:9: 'fabric': 'fabric' needs a 'node' section beside it\n"},
      {"topo_fabric_speed_unit", {{"t.yaml", edit(kTopo, 6, "fabric: {kind: infiniband, speed: \"100 Gb\"}")}}, kCmdTopo,
       E + "{dir}/t.yaml:6:35: 'fabric.speed': unknown bandwidth unit 'Gb' in '100 Gb' (use B/s, MB/s, GB/s, GiB/s, Mb/s, Gb/s)\n"},
      {"topo_fabric_kind", {{"t.yaml", edit(kTopo, 6, "fabric: {kind: omnipath, speed: \"100 Gb/s\"}")}}, kCmdTopo,
       E + "{dir}/t.yaml:6:16: 'fabric.kind': unknown value 'omnipath' (expected one of: infiniband, ethernet)\n"},
      {"topo_zero_flows", {{"t.yaml", edit(kTopo, 6, "fabric: {kind: infiniband, speed: \"100 Gb/s\", flows: 0}")}}, kCmdTopo,
       E + "{dir}/t.yaml:6:54: 'fabric.flows': a connection uses at least one flow\n"},
      {"topo_sharp_on_ethernet", {{"t.yaml", edit(kTopo, 6, "fabric: {kind: ethernet, speed: \"100 Gb/s\", sharp: true}")}}, kCmdTopo,
       E + "{dir}/t.yaml:6:52: 'fabric.sharp': SHARP (in-network reduction) is a feature of InfiniBand switches; this fabric is ethernet\n"},
      {"topo_nan_single_flow", {{"t.yaml", edit(kTopo, 6, "fabric: {kind: infiniband, speed: \"100 Gb/s\", single_flow: \"nan Gb/s\"}")}},
       kCmdTopo, E + "{dir}/t.yaml:6:60: 'fabric.single_flow': 'nan Gb/s' is not a bandwidth (expected a number and a unit)\n"},
      {"topo_negative_nic_speed", {{"t.yaml", edit(kTopo, 12, "    - {name: nic0, speed: \"-1 Gb/s\"}")}}, kCmdTopo,
       E + "{dir}/t.yaml:12:27: 'node.nics[0].speed': '-1 Gb/s' is negative\n"},
      {"topo_gpu_without_sm",
       {{"t.yaml", edit(kTopo, 4, "gpu: {name: X, peak_fp32: \"10 TFLOPS\", memory_bandwidth: \"300 GB/s\"}")}}, kCmdTopo,
       E + "{dir}/t.yaml:8:3: 'node': the GPU needs an 'sm' (compute capability) for the topology model: NVLink bandwidth depends on it\n"},
      {"topo_links_not_a_list", {{"t.yaml", drop(edit(kTopo, 13, "  links: {a: gpu0, b: gpu1, kind: nvlink}"), 14, 18)}}, kCmdTopo,
       E + "{dir}/t.yaml:13:10: 'node.links': expected a list\n"},
      {"topo_p2p_same_gpu", {{"t.yaml", std::string(kTopo) + "  p2p_bandwidth: [{gpus: [0, 0], bandwidth: \"10 GB/s\"}]\n"}}, kCmdTopo,
       E + "{dir}/t.yaml:19:26: 'node.p2p_bandwidth[0].gpus': expected two different local GPU indices below 2\n"},
      {"topo_unknown_cpu_arch", {{"t.yaml", edit(kTopo, 9, "    - {name: cpu0, arch: riscv}")}}, kCmdTopo,
       E + "{dir}/t.yaml:9:26: 'node.cpus[0].arch': unknown value 'riscv' (expected one of: x86, x86_64, power, ppc64, arm, aarch64)\n"},
      {"collective_needs_a_graph", {{"c.yaml", kCluster}}, "collective --cluster {dir}/c.yaml --gpus 2 --bytes 1MiB -o {out}",
       E + "'--cluster': cluster 'tiny' has no topology graph ('node:' section); dlscale collective needs one\n"},

      // ---- GPU catalogue (topologies/gpus.yaml of the data folder) ------------------------------------------
      {"gpus_missing_peak_fp16", {{"data/topologies/gpus.yaml", edit(kGpus, 2, "  - {id: p40, name: Tesla P40, sm: 61, peak_fp32: \"11.8 TFLOPS\",")}},
       kCmdGpu, E + "{dir}/data/topologies/gpus.yaml:2:5: 'gpus[0].peak_fp16': missing required key\n", "{dir}/data"},
      {"gpus_unknown_key", {{"data/topologies/gpus.yaml", edit(kGpus, 3, "     memory_bandwidth: \"346 GB/s\", memory: \"24 GB\", tdp: \"250 W\"}")}},
       kCmdGpu,
       E + "{dir}/data/topologies/gpus.yaml:3:53: 'gpus[0].tdp': unknown key (known keys here: aliases, architecture, base_clock, boost_clock, "
           "clock_at_power, id, memory, memory_bandwidth, name, nvlink_generation, nvlinks, pcie_generation, pcie_width, peak_bf16, "
           "peak_fp16, peak_fp32, peak_fp8, peak_tf32, power_limit, rated_power, sm, sms, source)\n",
       "{dir}/data"},
      {"gpus_power_without_unit", {{"data/topologies/gpus.yaml", edit(kGpus, 3, "     memory_bandwidth: \"346 GB/s\", memory: \"24 GB\", rated_power: 250}")}},
       kCmdGpu,
       E + "{dir}/data/topologies/gpus.yaml:3:66: 'gpus[0].rated_power': '250' has no unit (power needs one, e.g. \"750 W\")\n",
       "{dir}/data"},
      {"gpus_size_for_a_bandwidth", {{"data/topologies/gpus.yaml", edit(kGpus, 3, "     memory_bandwidth: \"346 GB\", memory: \"24 GB\"}")}},
       kCmdGpu,
       E + "{dir}/data/topologies/gpus.yaml:3:24: 'gpus[0].memory_bandwidth': unknown bandwidth unit 'GB' in '346 GB' (use B/s, MB/s, "
           "GB/s, GiB/s, Mb/s, Gb/s)\n",
       "{dir}/data"},
      {"gpus_negative_flop_rate", {{"data/topologies/gpus.yaml", edit(kGpus, 2, "  - {id: p40, name: Tesla P40, sm: 61, peak_fp32: \"-11.8 TFLOPS\", peak_fp16: \"0.18 TFLOPS\",")}},
       kCmdGpu, E + "{dir}/data/topologies/gpus.yaml:2:51: 'gpus[0].peak_fp32': '-11.8 TFLOPS' is negative\n", "{dir}/data"},
      {"gpus_duplicate_id", {{"data/topologies/gpus.yaml", edit(kGpus, 4, "  - {id: P40, name: Tesla V100 SXM2, sm: 70, peak_fp32: \"15.7 TFLOPS\",")}},
       kCmdGpu, E + "{dir}/data/topologies/gpus.yaml:4:10: 'gpus[1].id': GPU id 'P40' is used twice\n", "{dir}/data"},
      {"gpus_alias_taken_by_another_id", {{"data/topologies/gpus.yaml", edit(kGpus, 4, "  - {id: v100-sxm2, aliases: [p40], name: Tesla V100 SXM2, sm: 70, peak_fp32: \"15.7 TFLOPS\",")}},
       kCmdGpu, E + "{dir}/data/topologies/gpus.yaml:4:31: 'gpus[1].aliases[0]': GPU name 'p40' is used twice\n", "{dir}/data"},
      {"gpus_map_for_a_list", {{"data/topologies/gpus.yaml", "gpus: {p40: Tesla P40}\n"}}, kCmdGpu,
       E + "{dir}/data/topologies/gpus.yaml:1:7: 'gpus': expected a list\n", "{dir}/data"},
      {"gpus_error_through_a_cluster", {{"data/topologies/gpus.yaml", edit(kGpus, 3, "     memory_bandwidth: \"346 GB/s\", memory: \"24 GBs\"}")},
                                        {"c.yaml", edit(kCluster, 4, "gpu: p40")}},
       kCmdCluster + " --model {src}/models/alexnet.yaml --framework {src}/models/frameworks/caffe-mpi.yaml",
       E + "{dir}/data/topologies/gpus.yaml:3:44: 'gpus[0].memory': unknown size unit 'GBs' in '24 GBs' (use B, kB, MB, GB, KiB, MiB, GiB)\n",
       "{dir}/data"},
      {"gpus_unknown_name_option", {}, "model show alexnet --gpu gtx9090 -o {out}",
       E + "'--gpu': unknown GPU 'gtx9090' (known: p40, v100-sxm2)\n", "{mini}"},

      // ---- network (models/NAME.yaml) ---------------------------------------------------------------------
      {"net_unknown_layer_kind", {{"m.yaml", edit(kNet, 4, "  - {name: conv1, kind: conv3d, params: 896, forward_flops: 1769472}")}},
       kCmdNet, E + "{dir}/m.yaml:4:25: 'layers[0].kind': unknown layer kind 'conv3d' (expected conv, linear, batchnorm, layernorm, "
                    "embedding, attention, other, or a parameter-free relu, gelu, silu, tanh, dropout, maxpool, avgpool, add, "
                    "concat, lrn, reshape)\n"},
      {"net_negative_params", {{"m.yaml", edit(kNet, 4, "  - {name: conv1, kind: conv, params: -896, forward_flops: 1769472}")}}, kCmdNet,
       E + "{dir}/m.yaml:4:39: 'layers[0].params': must not be negative, got -896\n"},
      {"net_params_too_large", {{"m.yaml", edit(kNet, 4, "  - {name: conv1, kind: conv, params: 99999999999999999999, forward_flops: 1769472}")}},
       kCmdNet, E + "{dir}/m.yaml:4:39: 'layers[0].params': '99999999999999999999' is out of range (whole numbers up to 9e15 in magnitude)\n"},
      {"net_flops_not_a_number", {{"m.yaml", edit(kNet, 5, "  - {name: fc, kind: linear, params: 10250, forward_flops: 2e4x}")}}, kCmdNet,
       E + "{dir}/m.yaml:5:60: 'layers[1].forward_flops': '2e4x' is not a number\n"},
      {"net_infinite_flops", {{"m.yaml", edit(kNet, 4, "  - {name: conv1, kind: conv, params: 896, forward_flops: .inf}")}}, kCmdNet,
       E + "{dir}/m.yaml:4:59: 'layers[0].forward_flops': '.inf' is not a number\n"},
      {"net_negative_macs", {{"m.yaml", edit(kNet, 4, "  - {name: conv1, kind: conv, params: 896, forward_flops: 1769472, macs: -1}")}},
       kCmdNet, E + "{dir}/m.yaml:4:74: 'layers[0].macs': must not be negative\n"},
      {"net_zero_dimension", {{"m.yaml", edit(kNet, 2, "input: {kind: image, shape: [3, 0, 32], bytes_per_sample: \"12288 B\"}")}}, kCmdNet,
       E + "{dir}/m.yaml:2:29: 'input.shape': every dimension of a shape must be positive\n"},
      {"net_bandwidth_for_a_size", {{"m.yaml", edit(kNet, 2, "input: {kind: image, shape: [3, 32, 32], bytes_per_sample: \"12 KB/s\"}")}},
       kCmdNet,
       E + "{dir}/m.yaml:2:60: 'input.bytes_per_sample': unknown size unit 'KB/s' in '12 KB/s' (use B, kB, MB, GB, KiB, MiB, GiB)\n"},
      {"net_negative_activations", {{"m.yaml", edit(kNet, 5, "  - {name: fc, kind: linear, params: 10250, forward_flops: 20480, activation_bytes: \"-5 B\"}")}},
       kCmdNet, E + "{dir}/m.yaml:5:85: 'layers[1].activation_bytes': '-5 B' is negative\n"},
      {"net_no_layers", {{"m.yaml", drop(edit(kNet, 3, "layers: []"), 4, 5)}}, kCmdNet,
       E + "{dir}/m.yaml:1:1: a model needs at least one learnable layer\n"},
      {"net_layers_map", {{"m.yaml", drop(edit(kNet, 3, "layers: {name: conv1, kind: conv}"), 4, 5)}}, kCmdNet,
       E + "{dir}/m.yaml:3:9: 'layers': expected a list\n"},
      {"net_duplicate_key", {{"m.yaml", edit(kNet, 5, "  - {name: fc, kind: linear, params: 10250, params: 10, forward_flops: 20480}")}},
       "model show {dir}/m.yaml -o {out}", E + "{dir}/m.yaml:5:45: 'layers[1].params': duplicate key\n"},
      {"net_unknown_key", {{"m.yaml", edit(kNet, 5, "  - {name: fc, kind: linear, params: 10250, forward_flops: 20480, weights: 3}")}},
       "model show {dir}/m.yaml -o {out}",
       E + "{dir}/m.yaml:5:67: 'layers[1].weights': unknown key (known keys here: activation_bytes, branches, causal, experts, forward_flops, gated, groups, "
           "head_dim, heads, hidden, input_shape, kernel, kind, kv_heads, kv_lora, macs, name, output_shape, params, probs_dropout, "
           "q_lora, qk_rope, rms, rotary, stride, top_k, v_head_dim, window)\n"},
      {"net_unknown_name", {}, "model show resnet51 -o {out}", E + "'NAME': unknown model 'resnet51' (known: alexnet)\n", "{mini}"},

      // ---- architecture descriptions (models/arch) -----------------------------------------------------------
      {"arch_unknown_layer_kind", {{"small.yaml", edit(kArch, 6, "  - gelu6")}}, kCmdArch,
       E + "{dir}/small.yaml:6:5: 'layers[1]': unknown layer kind 'gelu6' (known: conv, linear, batchnorm, layernorm, rmsnorm, "
           "embedding, attention, mlp, maxpool, avgpool, adaptive_avgpool, global_avgpool, flatten, first_token, relu, gelu, silu, "
           "tanh, dropout, lrn, residual, concat, block, repeat, decoder)\n"},
      {"arch_kernel_larger_than_input", {{"small.yaml", edit(kArch, 5, "  - conv: {name: conv1, out: 16, kernel: 35}")}}, kCmdArch,
       E + "{dir}/small.yaml:5:42: 'layers[0].conv.kernel': a 35x35 kernel does not fit the 32x32 input (padding 0x0)\n"},
      {"arch_decoder_window_zero",
       {{"small.yaml", edit(edit(kArch, 3, "input: {tokens: 16}"), 5, "  - decoder: {layers: 1, width: 8, heads: 2, ffn: 16, ffn_kind: swiglu, vocab: 10, positions: rotary, window: 0}")}},
       kCmdArch, E + "{dir}/small.yaml:5:111: 'layers[0].decoder.window': must be a positive whole number, got 0\n"},
      {"arch_zero_channels", {{"small.yaml", edit(kArch, 5, "  - conv: {name: conv1, out: 0, kernel: 3, pad: 1}")}}, kCmdArch,
       E + "{dir}/small.yaml:5:30: 'layers[0].conv.out': must be a positive whole number, got 0\n"},
      {"arch_name_is_not_the_file_name", {{"small.yaml", edit(kArch, 1, "name: big")}}, kCmdArch,
       E + "{dir}/small.yaml:1:7: 'name': the name 'big' must match the file name 'small'\n"},
      {"arch_image_and_tokens", {{"small.yaml", edit(kArch, 3, "input: {image: [3, 32, 32], tokens: 128}")}}, kCmdArch,
       E + "{dir}/small.yaml:3:8: 'input': give exactly one of 'image: [C, H, W]' or 'tokens: S' / 'tokens: [N, S]'\n"},
      {"arch_dropout_out_of_range", {{"small.yaml", edit(kArch, 8, "  - dropout: 1.5")}}, kCmdArch,
       E + "{dir}/small.yaml:8:14: 'layers[3].dropout': a dropout probability lies in [0, 1)\n"},
      {"arch_attention_dropout_out_of_range",
       {{"small.yaml", "name: small\ndescription: \"a small encoder\"\ninput: {tokens: 16}\nlayers:\n"
                       "  - embedding: {name: emb, vocab: 100, dim: 32}\n  - attention: {name: attn, heads: 4, dropout: 1.5}\n"}},
       kCmdArch, E + "{dir}/small.yaml:6:48: 'layers[1].attention.dropout': a dropout probability lies in [0, 1)\n"},
      // multi-head latent attention: its keys need `attention: mla`, which has no kv_heads; ranks and head sizes ≥ 1
      {"arch_decoder_mla_key_without_mla", {{"small.yaml", std::string(kArchDecoder) + "kv_lora: 16, qk_nope: 8, qk_rope: 8, v_head: 8}\n"}},
       kCmdArch,
       E + "{dir}/small.yaml:5:115: 'layers[0].decoder.kv_lora': 'kv_lora' is a setting of multi-head latent attention: add "
           "'attention: mla'\n"},
      {"arch_decoder_mla_with_kv_heads",
       {{"small.yaml", std::string(kArchDecoder) + "attention: mla, kv_heads: 2, kv_lora: 16, qk_nope: 8, qk_rope: 8, v_head: 8}\n"}},
       kCmdArch,
       E + "{dir}/small.yaml:5:132: 'layers[0].decoder.kv_heads': multi-head latent attention has no key/value heads of its own: "
           "drop 'kv_heads'\n"},
      {"arch_decoder_mla_zero_rank",
       {{"small.yaml", std::string(kArchDecoder) + "attention: mla, q_lora: 0, kv_lora: 16, qk_nope: 8, qk_rope: 8, v_head: 8}\n"}},
       kCmdArch, E + "{dir}/small.yaml:5:130: 'layers[0].decoder.q_lora': must be a positive whole number, got 0\n"},
      {"arch_decoder_mla_without_v_head",
       {{"small.yaml", std::string(kArchDecoder) + "attention: mla, kv_lora: 16, qk_nope: 8, qk_rope: 8}\n"}}, kCmdArch,
       E + "{dir}/small.yaml:5:117: 'layers[0].decoder.attention': multi-head latent attention needs 'v_head'\n"},
      {"arch_attention_mla_with_bias",
       {{"small.yaml", "name: small\ndescription: \"a small decoder\"\ninput: {tokens: 16}\nlayers:\n"
                       "  - embedding: {name: emb, vocab: 100, dim: 32}\n"
                       "  - attention: {name: attn, heads: 4, kv_lora: 16, qk_nope: 8, qk_rope: 8, v_head: 8}\n"}},
       kCmdArch, E + "{dir}/small.yaml:6:48: 'layers[1].attention.kv_lora': multi-head latent attention has no biases: add 'bias: false'\n"},
      {"arch_layer_name_twice", {{"small.yaml", edit(kArch, 9, "  - linear: {name: conv1, out: 10}")}}, kCmdArch,
       E + "{dir}/small.yaml:9:20: 'layers[4].linear.name': layer name 'conv1' is used twice\n"},
      {"arch_unknown_name", {}, "model export vgg11 --dir {outdir}", E + "'NAME': unknown model architecture 'vgg11' (known: alexnet)\n",
       "{mini}"},

      // ---- framework strategies ---------------------------------------------------------------------------
      {"framework_unknown_overlap", {{"f.yaml", edit(kFramework, 4, "overlap: sometimes")}}, kCmdFramework,
       E + "{dir}/f.yaml:4:10: 'overlap': unknown value 'sometimes' (expected one of: none, layerwise, bucketed)\n"},
      {"framework_zero_bucket", {{"f.yaml", edit(kFramework, 6, "buckets: {size: \"0 MiB\", first: \"1 MiB\"}")}}, kCmdFramework,
       E + "{dir}/f.yaml:6:17: 'buckets.size': a bucket must hold more than zero bytes\n"},
      {"framework_bandwidth_for_a_size", {{"f.yaml", edit(kFramework, 6, "buckets: {size: \"25 MB/s\", first: \"1 MiB\"}")}}, kCmdFramework,
       E + "{dir}/f.yaml:6:17: 'buckets.size': unknown size unit 'MB/s' in '25 MB/s' (use B, kB, MB, GB, KiB, MiB, GiB)\n"},
      {"framework_negative_first_bucket", {{"f.yaml", edit(kFramework, 6, "buckets: {size: \"25 MiB\", first: \"-1 MiB\"}")}}, kCmdFramework,
       E + "{dir}/f.yaml:6:34: 'buckets.first': '-1 MiB' is negative\n"},
      {"framework_buckets_list", {{"f.yaml", edit(kFramework, 6, "buckets: [\"25 MiB\", \"1 MiB\"]")}}, kCmdFramework,
       E + "{dir}/f.yaml:6:10: 'buckets': expected a mapping of keys to values\n"},
      {"framework_negative_efficiency", {{"f.yaml", std::string(kFramework) + "compute_efficiency: -0.5\n"}}, kCmdFramework,
       E + "{dir}/f.yaml:7:21: 'compute_efficiency': must be greater than zero, got -0.5\n"},
      {"framework_nan_efficiency", {{"f.yaml", std::string(kFramework) + "compute_efficiency: .nan\n"}}, kCmdFramework,
       E + "{dir}/f.yaml:7:21: 'compute_efficiency': '.nan' is not a number\n"},
      {"framework_negative_jitter", {{"f.yaml", std::string(kFramework) + "jitter_cv: -0.02\n"}}, kCmdFramework,
       E + "{dir}/f.yaml:7:12: 'jitter_cv': a coefficient of variation is a number ≥ 0 and < 1 (0.02 for 2 %)\n"},
      {"framework_unknown_attention", {{"f.yaml", std::string(kFramework) + "attention: fast\n"}}, kCmdFramework,
       E + "{dir}/f.yaml:7:12: 'attention': unknown attention kernel 'fast' (expected eager, flash, memory_efficient or sdpa)\n"},
      {"framework_unknown_memory_format", {{"f.yaml", std::string(kFramework) + "memory_format: nhcw\n"}}, kCmdFramework,
       E + "{dir}/f.yaml:7:16: 'memory_format': unknown memory format 'nhcw' (nchw or nhwc)\n"},
      {"framework_unknown_precision", {{"f.yaml", std::string(kFramework) + "precision: fp8\n"}}, kCmdFramework,
       E + "{dir}/f.yaml:7:12: 'precision': unknown value 'fp8' (expected one of: fp32, tf32, bf16, fp16)\n"},
      {"framework_unknown_gradient_precision", {{"f.yaml", std::string(kFramework) + "mixed_precision: {gradients: fp8}\n"}},
       kCmdFramework, E + "{dir}/f.yaml:7:30: 'mixed_precision.gradients': unknown value 'fp8' (expected one of: fp32, half)\n"},
      {"framework_sharded_fp32_gradients",
       {{"f.yaml", std::string(kFramework) + "sharding: {stage: 3}\nmixed_precision: {gradients: fp32}\n"}}, kCmdFramework,
       E + "{dir}/f.yaml:8:30: 'mixed_precision.gradients': a sharded framework's gradients are those of its working copy; "
           "'gradients: fp32' is for replicated ones\n"},
      // eq. F2 (docs/model.md): the input hand-over of a prefetched batch, a time >= 0 and <= 100 ms, with prefetching
      {"framework_negative_input_handover", {{"f.yaml", std::string(kFramework) + "input_handover: \"-0.2 ms\"\n"}}, kCmdFramework,
       E + "{dir}/f.yaml:7:17: 'input_handover': '-0.2 ms' is negative\n"},
      {"framework_input_handover_unknown_unit", {{"f.yaml", std::string(kFramework) + "input_handover: \"0.2 msec\"\n"}},
       kCmdFramework, E + "{dir}/f.yaml:7:17: 'input_handover': unknown time unit 'msec' in '0.2 msec' (use s, ms, us, ns)\n"},
      {"framework_input_handover_too_long", {{"f.yaml", std::string(kFramework) + "input_handover: \"0.2 s\"\n"}}, kCmdFramework,
       E + "{dir}/f.yaml:7:17: 'input_handover': an input hand-over is at most 100 ms a batch\n"},
      {"framework_input_handover_without_prefetch",
       {{"f.yaml", edit(kFramework, 2, "io: {prefetch: false, memory: pinned}") + "input_handover: \"0.2 ms\"\n"}}, kCmdFramework,
       E + "{dir}/f.yaml:7:17: 'input_handover': an input hand-over needs a prefetching reader (io: {prefetch: true})\n"},
      {"framework_overhead_without_unit", {{"f.yaml", std::string(kFramework) + "iteration_overhead: 0.5\n"}}, kCmdFramework,
       E + "{dir}/f.yaml:7:21: 'iteration_overhead': '0.5' has no unit (time needs one, e.g. \"5 us\")\n"},
      // ---- the input pipeline (a cluster's input: section, docs/input-formats.md) ------------------------
      {"cluster_decode_rate_without_unit", {{"c.yaml", std::string(kCluster) + "input: {dataset: imagenet, decode: \"43\", cores: 4}\n"}},
       kCmdCluster,
       E + "{dir}/c.yaml:9:36: 'input.decode': '43' is not a decode rate: a number and the unit MP/s (megapixels per second), e.g. \"43 MP/s\"\n"},
      {"cluster_zero_cpu_cores", {{"c.yaml", std::string(kCluster) + "input: {dataset: imagenet, cpu: xeon-e5-2650v4, cores: 0}\n"}},
       kCmdCluster, E + "{dir}/c.yaml:9:56: 'input.cores': a node needs at least one CPU core\n"},
      // ---- CPU offload of the optimiser (docs/model.md, eq. S9) ------------------------------------------
      {"framework_offload_without_sharding", {{"f.yaml", std::string(kFramework) + "sharding: {stage: 0, offload_optimizer: cpu}\n"}},
       kCmdFramework,
       E + "{dir}/f.yaml:7:41: 'sharding.offload_optimizer': offload_optimizer needs a sharded optimiser state (sharding stage 1, 2 or 3)\n"},
      {"framework_cpu_adam_without_unit", {{"f.yaml", std::string(kFramework) + "sharding: {stage: 2, cpu_adam: \"3.9e9\"}\n"}},
       kCmdFramework,
       E + "{dir}/f.yaml:7:32: 'sharding.cpu_adam': '3.9e9' is not a CPU-Adam rate like \"3.9e9 params/s\" (parameters per second of one node)\n"},
      {"framework_offload_flag_without_sharding", {{"f.yaml", kFramework}}, kCmdFramework + " --offload-optimizer",
       E + "'--offload-optimizer': framework 'ddp' does not shard its optimiser state; offload needs ZeRO stage 1-3 or FSDP (e.g. --framework deepspeed-zero2)\n"},
      {"cluster_zero_host_memory", {{"c.yaml", std::string(kCluster) + "host_memory_size: \"0 GB\"\n"}}, kCmdCluster,
       E + "{dir}/c.yaml:9:19: 'host_memory_size': a node's host memory is a positive size like \"2 TB\"\n"},
      {"framework_memory_kind", {{"f.yaml", edit(kFramework, 2, "io: {prefetch: true, memory: shared}")}}, kCmdFramework,
       E + "{dir}/f.yaml:2:30: 'io.memory': unknown value 'shared' (expected one of: pinned, pageable)\n"},
      {"framework_reader_kind", {{"f.yaml", edit(kFramework, 2, "io: {prefetch: true, memory: pinned, reader: jpeg}")}}, kCmdFramework,
       E + "{dir}/f.yaml:2:46: 'io.reader': unknown value 'jpeg' (expected one of: pipeline, bytes)\n"},
      {"framework_buffer_zero", {{"f.yaml", edit(kFramework, 2, "io: {prefetch: true, memory: pinned, buffer: \"0 MiB\"}")}}, kCmdFramework,
       E + "{dir}/f.yaml:2:46: 'io.buffer': a prefetch buffer holds more than zero bytes\n"},
      {"framework_buffer_without_prefetch", {{"f.yaml", edit(kFramework, 2, "io: {prefetch: false, memory: pinned, buffer: \"1 GiB\"}")}}, kCmdFramework,
       E + "{dir}/f.yaml:2:47: 'io.buffer': a prefetch buffer needs prefetch: true\n"},
      {"framework_buffer_no_unit", {{"f.yaml", edit(kFramework, 2, "io: {prefetch: true, memory: pinned, buffer: 256}")}}, kCmdFramework,
       E + "{dir}/f.yaml:2:46: 'io.buffer': '256' has no unit (size needs one, e.g. \"25 MiB\")\n"},
      {"framework_unknown_reduce_dtype", {{"f.yaml", std::string(kFramework) + "sharding: {stage: 3, reduce_dtype: fp64}\n"}},
       kCmdFramework, E + "{dir}/f.yaml:7:36: 'sharding.reduce_dtype': unknown value 'fp64' (expected one of: fp32, half)\n"},
      // Composer's fsdp_config names are not keys here: limit_all_gathers is `in_flight` (models/frameworks/llm-foundry.yaml),
      // and llm-foundry's DecoupledLionW has no optimiser of the model to stand for it
      {"framework_composer_limit_all_gathers", {{"f.yaml", std::string(kFramework) + "sharding: {stage: 3, limit_all_gathers: true}\n"}},
       kCmdFramework,
       E + "{dir}/f.yaml:7:22: 'sharding.limit_all_gathers': unknown key (known keys here: cpu_adam, group, in_flight, offload_optimizer, "
           "params, reduce_dtype, reshard_after_forward, shard_dtype, stage, unit_ops, unit_params, wrap)\n"},
      // eq. S4b and S11: a wrap the model has not, an operation count below zero
      {"framework_unknown_wrap", {{"f.yaml", std::string(kFramework) + "sharding: {stage: 3, wrap: layer}\n"}}, kCmdFramework,
       E + "{dir}/f.yaml:7:28: 'sharding.wrap': unknown value 'layer' (expected one of: size, block)\n"},
      {"framework_negative_unit_ops", {{"f.yaml", std::string(kFramework) + "sharding: {stage: 3, unit_ops: {gather: -1, reduce: 3}}\n"}},
       kCmdFramework, E + "{dir}/f.yaml:7:41: 'sharding.unit_ops.gather': gather operations per unit: a count from 0 to 10^4\n"},
      {"framework_lion_optimizer", {{"f.yaml", std::string(kFramework) + "optimizer: lion\n"}}, kCmdFramework,
       E + "{dir}/f.yaml:7:12: 'optimizer': unknown value 'lion' (expected one of: sgd, momentum, adam, adamw, lamb)\n"},
      {"framework_shard_group_does_not_divide", {{"f.yaml", std::string(kFramework) + "sharding: {stage: 3, group: 3}\n"}},
       "predict --framework {dir}/f.yaml --gpus 4 -o {out}",
       E + "'--shard-group': the framework shards over groups of 3 GPUs; 4 GPUs do not divide into them\n"},
      // eq. S1, P40, P44: --shard-group, a count of GPUs (data-parallel ranks under a layout), node or all
      {"option_shard_group_not_a_count", {}, "predict --model gpt2 --framework fsdp --gpus 8 --shard-group 0 -o {out}",
       E + "'--shard-group': '0' is not a count of at least 1, node or all\n"},
      {"option_shard_group_not_a_number", {}, "predict --model gpt2 --framework fsdp --gpus 8 --shard-group 4x -o {out}",
       E + "'--shard-group': '4x' is not a count of at least 1, node or all\n"},
      {"option_shard_group_does_not_divide_gpus", {}, "predict --model gpt2 --framework fsdp --gpus 8 --shard-group 3 -o {out}",
       E + "'--shard-group': the framework shards over groups of 3 GPUs; 8 GPUs do not divide into them\n"},
      {"option_shard_group_exceeds_gpus", {}, "predict --model gpt2 --framework fsdp --gpus 8 --shard-group 16 -o {out}",
       E + "'--shard-group': the framework shards over groups of 16 GPUs; 8 GPUs do not divide into them\n"},
      {"option_shard_group_does_not_divide_layout", {},
       "predict --cluster dgx-h100-ndr --nodes 1 --model decoder:layers=2,hidden=64,heads=4,ffn=128,vocab=100,seq=16 --tp 2 "
       "--framework fsdp --shard-group 3 --gpus 8 -o {out}",
       E + "'--shard-group': the framework shards over groups of 3 data-parallel ranks; the layout's 4 (dp 4 × cp 1) do not "
           "divide into them (eq. P40)\n"},
      {"option_shard_group_exceeds_layout", {},
       "predict --cluster dgx-h100-ndr --nodes 1 --model decoder:layers=2,hidden=64,heads=4,ffn=128,vocab=100,seq=16 --tp 2 "
       "--framework fsdp --shard-group 8 --gpus 8 -o {out}",
       E + "'--shard-group': the framework shards over groups of 8 data-parallel ranks; the layout's 4 (dp 4 × cp 1) do not "
           "divide into them (eq. P40)\n"},
      {"option_shard_group_unsharded", {}, "predict --model gpt2 --framework pytorch-ddp --gpus 8 --shard-group 4 -o {out}",
       E + "'--shard-group': framework 'pytorch-ddp' does not shard (stage 0); a shard group needs ZeRO stage 1-3 or FSDP "
           "(e.g. --zero 3)\n"},
      {"option_offload_on_and_off", {},
       "predict --model gpt2 --framework deepspeed-zero2 --gpus 8 --offload-optimizer --no-offload-optimizer -o {out}",
       E + "'--no-offload-optimizer': give --offload-optimizer or --no-offload-optimizer, not both\n"},
      {"framework_unknown_optimizer", {{"f.yaml", std::string(kFramework) + "optimizer: nesterov\n"}}, kCmdFramework,
       E + "{dir}/f.yaml:7:12: 'optimizer': unknown value 'nesterov' (expected one of: sgd, momentum, adam, adamw, lamb)\n"},
      {"framework_unknown_pool_indices", {{"f.yaml", std::string(kFramework) + "pool_indices: int16\n"}}, kCmdFramework,
       E + "{dir}/f.yaml:7:15: 'pool_indices': unknown value 'int16' (expected one of: int64, int32, none)\n"},
      {"framework_unknown_rmsnorm", {{"f.yaml", std::string(kFramework) + "rmsnorm: eager\n"}}, kCmdFramework,
       E + "{dir}/f.yaml:7:10: 'rmsnorm': unknown value 'eager' (expected one of: composite, fused)\n"},
      {"framework_unknown_fused_chain", {{"f.yaml", std::string(kFramework) + "kernels: {fused: [conv_bn]}\n"}}, kCmdFramework,
       E + "{dir}/f.yaml:7:19: 'kernels.fused[0]': unknown value 'conv_bn' (expected one of: bn_relu, bn_add_relu)\n"},
      {"framework_unknown_attention_kernel", {{"f.yaml", std::string(kFramework) + "kernels: {attention: xformers}\n"}},
       kCmdFramework, E + "{dir}/f.yaml:7:22: 'kernels.attention': unknown value 'xformers' (expected one of: flash, cudnn)\n"},
      {"framework_gap_without_host_issue", {{"f.yaml", std::string(kFramework) + "kernels: {launch_gap: \"2 us\"}\n"}},
       kCmdFramework,
       E + "{dir}/f.yaml:7:23: 'kernels.launch_gap': launch_gap replaces the fitted kernel_overhead under the host's issue "
           "floor: it needs host_issue\n"},
      {"framework_issued_without_host_issue", {{"f.yaml", std::string(kFramework) + "kernels: {issued_per_kernel: 3}\n"}},
       kCmdFramework,
       E + "{dir}/f.yaml:7:30: 'kernels.issued_per_kernel': issued_per_kernel scales the host's issue floor: it needs "
           "host_issue\n"},
      {"framework_unknown_optimizer_impl", {{"f.yaml", std::string(kFramework) + "optimizer_impl: apex\n"}}, kCmdFramework,
       E + "{dir}/f.yaml:7:17: 'optimizer_impl': unknown value 'apex' (expected one of: fused, foreach, for_loop)\n"},
      {"framework_per_parameter_below_stage_3", {{"f.yaml", std::string(kFramework) + "sharding: {stage: 2, params: per_parameter}\n"}},
       kCmdFramework, E + "{dir}/f.yaml:7:30: 'sharding.params': params: per_parameter is FSDP2's full sharding (stage 3)\n"},
      // eq. P20: whether stage-3 sharding reshards after each micro-batch's forward under a pipeline
      {"framework_pp_reshard_not_boolean", {{"f.yaml", std::string(kFramework) + "parallel: {pp_reshard_after_forward: often}\n"}},
       kCmdFramework, E + "{dir}/f.yaml:7:38: 'parallel.pp_reshard_after_forward': 'often' is not true or false\n"},
      // eq. P25: the pipeline's sends overlapped with the next chunk
      {"framework_pp_comm_overlap_not_boolean", {{"f.yaml", std::string(kFramework) + "parallel: {pp_comm_overlap: 2}\n"}},
       kCmdFramework, E + "{dir}/f.yaml:7:29: 'parallel.pp_comm_overlap': '2' is not true or false\n"},
      // eq. P28: the column-parallel input gradients beside their weight gradients
      {"framework_tp_async_backward_not_boolean", {{"f.yaml", std::string(kFramework) + "parallel: {tp_async_backward: yes please}\n"}},
       kCmdFramework, E + "{dir}/f.yaml:7:31: 'parallel.tp_async_backward': 'yes please' is not true or false\n"},
      // eq. P29: the CP exchange's names, and Ulysses' heads split over the CP ranks
      {"framework_cp_comm_unknown", {{"f.yaml", std::string(kFramework) + "parallel: {cp_comm: ring}\n"}}, kCmdFramework,
       E + "{dir}/f.yaml:7:21: 'parallel.cp_comm': unknown context-parallel exchange 'ring' (p2p, all_gather, a2a)\n"},
      {"framework_plan_variants_unknown_exchange",
       {{"f.yaml", std::string(kFramework) + "parallel: {plan_variants: {cp_comm: [p2p, ring]}}\n"}}, kCmdFramework,
       E + "{dir}/f.yaml:7:43: 'parallel.plan_variants.cp_comm[1]': unknown context-parallel exchange 'ring' (p2p, "
           "all_gather, a2a)\n"},
      {"framework_plan_variants_exchange_twice",
       {{"f.yaml", std::string(kFramework) + "parallel: {plan_variants: {cp_comm: [a2a, a2a]}}\n"}}, kCmdFramework,
       E + "{dir}/f.yaml:7:43: 'parallel.plan_variants.cp_comm[1]': named twice\n"},
      {"framework_plan_variants_unknown_key",
       {{"f.yaml", std::string(kFramework) + "parallel: {plan_variants: {zero_bubble: true}}\n"}}, kCmdFramework,
       E + "{dir}/f.yaml:7:28: 'parallel.plan_variants.zero_bubble': unknown key (known keys here: cp_comm, "
           "distribute_saved_activations, recompute_num_layers, stage_blocks)\n"},
      {"option_cp_comm_unknown", {},
       "predict --cluster dgx-h100-ndr --nodes 1 --model decoder:layers=2,hidden=64,heads=4,ffn=128,vocab=100,seq=16 --cp 2 "
       "--cp-comm ulysses --gpus 8 -o {out}",
       E + "'--cp-comm': unknown context-parallel exchange 'ulysses' (p2p, all_gather, a2a)\n"},
      {"option_cp_comm_a2a_kv_heads", {},
       "predict --cluster dgx-h100-ndr --nodes 1 --model decoder:layers=2,hidden=64,heads=4,kv_heads=2,ffn=128,vocab=100,seq=16 "
       "--cp 4 --cp-comm a2a --gpus 8 -o {out}",
       E + "'--cp-comm': cp_comm a2a over cp 4 needs the heads of a TP rank divisible by cp: 4 attention and 2 key/value heads "
           "(heads 4 and kv_heads 2 over tp 1)\n"},
      // eq. P26: the embedding and the loss counted as layers need the units to split evenly over the chunks
      {"option_account_embedding_uneven", {},
       "predict --cluster dgx-h100-ndr --nodes 1 --model decoder:layers=8,hidden=64,heads=4,ffn=128,vocab=100,seq=16 --pp 4 "
       "--vp 2 --micro-batches 4 --account-for-embedding-in-pipeline-split --gpus 8 -o {out}",
       E + "'--account-for-embedding-in-pipeline-split': 8 blocks and 1 accounted layer do not split evenly over pp 4 × vp 2 = 8 "
           "chunks\n"},
      {"option_account_loss_uneven", {},
       "predict --cluster dgx-h100-ndr --nodes 1 --model decoder:layers=8,hidden=64,heads=4,ffn=128,vocab=100,seq=16 --pp 4 "
       "--account-for-loss-in-pipeline-split --gpus 8 -o {out}",
       E + "'--account-for-loss-in-pipeline-split': 8 blocks and 1 accounted layer do not split evenly over pp 4 × vp 1 = 4 "
           "chunks\n"},
      // eq. P31: Megatron-Core's partial full recompute
      {"framework_unknown_recompute_method", {{"f.yaml", std::string(kFramework) + "parallel: {recompute_method: sideways}\n"}},
       kCmdFramework, E + "{dir}/f.yaml:7:30: 'parallel.recompute_method': unknown recompute method 'sideways' (uniform, block)\n"},
      {"framework_recompute_num_layers_zero", {{"f.yaml", std::string(kFramework) + "parallel: {recompute_num_layers: 0}\n"}},
       kCmdFramework, E + "{dir}/f.yaml:7:34: 'parallel.recompute_num_layers': must be at least 1, got 0\n"},
      {"option_recompute_num_layers_beyond_a_chunk", {},
       "predict --cluster dgx-h100-ndr --nodes 1 --model decoder:layers=8,hidden=64,heads=4,ffn=128,vocab=100,seq=16 --pp 4 "
       "--checkpointing full --recompute-method block --recompute-num-layers 3 --gpus 8 -o {out}",
       E + "'--recompute-num-layers': 3 is more blocks than a model chunk holds: 8 blocks over pp 4 × vp 1 chunks, at most 2 a "
           "chunk\n"},
      {"option_recompute_method_without_full", {},
       "predict --cluster dgx-h100-ndr --nodes 1 --model decoder:layers=8,hidden=64,heads=4,ffn=128,vocab=100,seq=16 --pp 4 "
       "--recompute-method block --gpus 8 -o {out}",
       E + "'--recompute-method': recompute_method block with recompute_num_layers 1 needs full recompute, not none\n"},
      // eq. P35: Megatron-Core's distribute_saved_activations: not with SP (Megatron asserts it), only under full recompute
      {"framework_distribute_saved_activations_not_boolean",
       {{"f.yaml", std::string(kFramework) + "parallel: {distribute_saved_activations: sometimes}\n"}}, kCmdFramework,
       E + "{dir}/f.yaml:7:42: 'parallel.distribute_saved_activations': 'sometimes' is not true or false\n"},
      {"option_distribute_saved_activations_with_sp", {},
       "predict --cluster dgx-h100-ndr --nodes 1 --model decoder:layers=8,hidden=64,heads=4,ffn=128,vocab=100,seq=16 --tp 2 "
       "--sp --checkpointing full --distribute-saved-activations --gpus 8 -o {out}",
       E + "'--distribute-saved-activations': distribute_saved_activations splits the checkpoints over the TP group without "
           "sp; sp is on\n"},
      {"option_distribute_saved_activations_without_full", {},
       "predict --cluster dgx-h100-ndr --nodes 1 --model decoder:layers=8,hidden=64,heads=4,ffn=128,vocab=100,seq=16 --tp 2 "
       "--distribute-saved-activations --gpus 8 -o {out}",
       E + "'--distribute-saved-activations': distribute_saved_activations needs full recompute, not none\n"},
      // eq. P36: hierarchical CP's inner size
      {"framework_hierarchical_cp_zero", {{"f.yaml", std::string(kFramework) + "parallel: {hierarchical_cp: 0}\n"}},
       kCmdFramework, E + "{dir}/f.yaml:7:29: 'parallel.hierarchical_cp': must be at least 1, got 0\n"},
      {"option_hierarchical_cp_not_dividing_cp", {},
       "predict --cluster dgx-h100-ndr --nodes 1 --model decoder:layers=8,hidden=64,heads=4,ffn=128,vocab=100,seq=16 --cp 4 "
       "--cp-comm a2a+p2p --hierarchical-cp 3 --gpus 8 -o {out}",
       E + "'--hierarchical-cp': hierarchical_cp 3 does not divide cp 4\n"},
      {"option_a2a_p2p_without_hierarchical_cp", {},
       "predict --cluster dgx-h100-ndr --nodes 1 --model decoder:layers=8,hidden=64,heads=4,ffn=128,vocab=100,seq=16 --cp 4 "
       "--cp-comm a2a+p2p --gpus 8 -o {out}",
       E + "'--hierarchical-cp': cp_comm a2a+p2p needs hierarchical_cp, the all-to-all group's size (a divisor of cp 4)\n"},
      {"option_hierarchical_cp_without_a2a_p2p", {},
       "predict --cluster dgx-h100-ndr --nodes 1 --model decoder:layers=8,hidden=64,heads=4,ffn=128,vocab=100,seq=16 --cp 2 "
       "--hierarchical-cp 2 --gpus 8 -o {out}",
       E + "'--hierarchical-cp': hierarchical_cp 2 needs cp_comm a2a+p2p, not p2p\n"},
      {"option_hierarchical_cp_beyond_the_heads", {},
       "predict --cluster dgx-h100-ndr --nodes 1 --model decoder:layers=8,hidden=64,heads=4,ffn=128,vocab=100,seq=16 --tp 2 "
       "--cp 4 --cp-comm a2a+p2p --hierarchical-cp 4 --gpus 8 -o {out}",
       E + "'--hierarchical-cp': cp_comm a2a+p2p over hierarchical_cp 4 needs the heads of a TP rank divisible by "
           "hierarchical_cp: 2 attention and 2 key/value heads (heads 4 and kv_heads 4 over tp 2)\n"},
      {"option_optimizer_impl", {}, "predict --optimizer-impl multi_tensor -o {out}",
       E + "'--optimizer-impl': unknown optimizer implementation 'multi_tensor' (expected fused, foreach, for_loop)\n"},
      {"framework_servers_out_of_range", {{"f.yaml", std::string(kFramework) + "parameter_servers: 99999999999\n"}}, kCmdFramework,
       E + "{dir}/f.yaml:7:20: 'parameter_servers': 99999999999 is too large (at most 1000000)\n"},
      {"framework_unknown_name", {}, "predict --framework horovod --cluster tiny --model alexnet -o {out}",
       E + "'--framework': unknown framework 'horovod' (known: caffe-mpi, cntk)\n", "{mini}"},

      // ---- profiles -----------------------------------------------------------------------------------------
      {"profile_bandwidth_for_a_time",
       {{"p.yaml", edit(kProfile, 5, "single_gpu: {io: \"5 GB/s\", h2d: \"0.0527 s\", forward: \"0.1684 s\", backward: \"0.2918 s\", update: \"0.0086 s\"}")}},
       kCmdProfile, E + "{dir}/p.yaml:5:18: 'single_gpu.io': unknown time unit 'GB/s' in '5 GB/s' (use s, ms, us, ns)\n"},
      {"profile_missing_phase",
       {{"p.yaml", edit(kProfile, 5, "single_gpu: {io: \"0.223 s\", h2d: \"0.0527 s\", forward: \"0.1684 s\", backward: \"0.2918 s\"}")}},
       kCmdProfile, E + "{dir}/p.yaml:5:13: 'single_gpu.update': missing required key\n"},
      {"profile_zero_gpus", {{"p.yaml", edit(kProfile, 7, "  0: {io: \"0.45 s\", comm: \"0.0359 s\"}")}}, kCmdProfile,
       E + "{dir}/p.yaml:7:6: 'measured.0': keys of 'measured' are GPU counts (whole numbers ≥ 1)\n"},
      {"profile_measured_list", {{"p.yaml", drop(edit(kProfile, 6, "measured: [2, 4]"), 7, 8)}}, kCmdProfile,
       E + "{dir}/p.yaml:6:11: 'measured': expected a mapping of keys to values\n"},
      {"profile_measured_unknown_key", {{"p.yaml", edit(kProfile, 7, "  2: {io: \"0.45 s\", com: \"0.0359 s\"}")}}, kCmdProfile,
       E + "{dir}/p.yaml:7:21: 'measured.2.com': unknown key (known keys here: comm, h2d, io, iteration, iteration_sd)\n"},
      {"profile_negative_sd", {{"p.yaml", edit(kProfile, 7, "  2: {io: \"0.45 s\", iteration: \"0.6 s\", iteration_sd: \"-0.01 s\"}")}}, kCmdProfile,
       E + "{dir}/p.yaml:7:55: 'measured.2.iteration_sd': '-0.01 s' is negative\n"},
      {"profile_sd_without_mean", {{"p.yaml", edit(kProfile, 7, "  2: {io: \"0.45 s\", iteration_sd: \"0.01 s\"}")}}, kCmdProfile,
       E + "{dir}/p.yaml:7:35: 'measured.2.iteration_sd': 'iteration_sd' needs the mean 'iteration' beside it\n"},
      {"profile_duplicate_gpu_count", {{"p.yaml", edit(kProfile, 8, "  2: {io: \"0.72 s\", comm: \"0.042 s\"}")}}, kCmdProfile,
       E + "{dir}/p.yaml:8:3: 'measured.2': duplicate key\n"},
      {"profile_batch_out_of_range", {{"p.yaml", edit(kProfile, 4, "batch_per_gpu: 99999999999")}}, kCmdProfile,
       E + "{dir}/p.yaml:4:16: 'batch_per_gpu': 99999999999 is too large (at most 1000000)\n"},
      {"profile_negative_time",
       {{"p.yaml", edit(kProfile, 5, "single_gpu: {io: \"-0.223 s\", h2d: \"0.0527 s\", forward: \"0.1684 s\", backward: \"0.2918 s\", update: \"0.0086 s\"}")}},
       kCmdProfile, E + "{dir}/p.yaml:5:18: 'single_gpu.io': '-0.223 s' is negative\n"},
      {"profile_unknown_model", {{"p.yaml", drop(edit(kProfile, 1, "model: alexnet2"), 3, 3)}}, kCmdProfile + " --cluster tiny",
       E + "{dir}/p.yaml:1:8: 'model': unknown model 'alexnet2' (known: alexnet)\n", "{mini}"},
      {"profile_unknown_cluster", {{"p.yaml", kProfile}}, kCmdProfile,
       E + "{dir}/p.yaml:3:10: 'cluster': unknown cluster 'shi-chu-p40' (known: tiny)\n", "{mini}"},
      {"profile_of_another_model", {{"p.yaml", kProfile}}, kCmdProfile + " --model resnet50",
       E + "'--model': the profile {dir}/p.yaml is for model 'alexnet', not 'resnet50'\n"},

      // ---- calibration files --------------------------------------------------------------------------------
      {"calibration_schema_version", {{"k.yaml", edit(kCalibration, 1, "schema: 3")}}, kCmdCalibration,
       E + "{dir}/k.yaml:1:9: 'schema': calibration schema version 3 is not supported (this dlscale reads version 1)\n"},
      {"calibration_schema_not_a_number", {{"k.yaml", edit(kCalibration, 1, "schema: one")}}, kCmdCalibration,
       E + "{dir}/k.yaml:1:9: 'schema': 'one' is not a number\n"},
      {"calibration_of_another_gpu", {{"k.yaml", edit(kCalibration, 3, "gpu: \"Tesla P40\"")}}, kCmdCalibration,
       E + "{dir}/k.yaml:3:6: 'gpu': the calibration was measured on 'Tesla P40', but cluster 'test-a100x8' has "
           "'NVIDIA A100-SXM4-80GB'; use a cluster of that GPU (dlscale-calibrate writes one) or leave out --calibration\n"},
      {"calibration_sizes_out_of_order", {{"k.yaml", edit(kCalibration, 9, "      - {size: \"524288 B\", time: \"60 us\"}")}},
       kCmdCalibration, E + "{dir}/k.yaml:9:16: 'collectives[0].points[1].size': sizes must be listed in increasing order\n"},
      {"calibration_unknown_op", {{"k.yaml", edit(kCalibration, 5, "  - op: alltoall")}}, kCmdCalibration,
       E + "{dir}/k.yaml:5:9: 'collectives[0].op': unknown value 'alltoall' (expected one of: allreduce, allgather, reducescatter, "
           "broadcast, reduce)\n"},
      {"calibration_more_nodes_than_gpus", {{"k.yaml", edit(kCalibration, 6, "    gpus: 2\n    nodes: 3")}}, kCmdCalibration,
       E + "{dir}/k.yaml:7:12: 'collectives[0].nodes': more nodes than GPUs\n"},
      {"calibration_zero_time", {{"k.yaml", edit(kCalibration, 9, "      - {size: \"4194304 B\", time: \"0 us\"}")}}, kCmdCalibration,
       E + "{dir}/k.yaml:9:35: 'collectives[0].points[1].time': a measured time must be greater than zero\n"},
      {"calibration_inconsistent_algbw", {{"k.yaml", edit(kCalibration, 9, "      - {size: \"4194304 B\", time: \"60 us\", algbw: \"50 GB/s\"}")}},
       kCmdCalibration,
       E + "{dir}/k.yaml:9:51: 'collectives[0].points[1].algbw': disagrees with size/time (69.91 GB/s); fix or remove it\n"},
      {"calibration_gpus_out_of_range", {{"k.yaml", edit(kCalibration, 6, "    gpus: 99999999999")}}, kCmdCalibration,
       E + "{dir}/k.yaml:6:11: 'collectives[0].gpus': must be a whole number from 1 to 1000000, got 99999999999\n"},
      {"calibration_missing_provenance", {{"k.yaml", drop(kCalibration, 2, 2)}}, kCmdCalibration,
       E + "{dir}/k.yaml:1:1: 'provenance': missing required key\n"},
      {"calibration_missing_file", {}, "predict --calibration {dir}/nowhere.yaml -o {out}",
       E + "{dir}/nowhere.yaml: '--calibration': cannot open file (no such file)\n"},

      // ---- sweep specs -----------------------------------------------------------------------------------------
      {"sweep_zero_gpus", {{"s.yaml", edit(kSweep, 6, "  gpus: [0, 4]")}}, kCmdSweep,
       E + "{dir}/s.yaml:6:10: 'grid.gpus[0]': a GPU count is a whole number from 1 to 10000000\n"},
      {"sweep_unknown_cluster", {{"s.yaml", edit(edit(kSweep, 3, "  cluster: dgx-9"), 4, "  model: alexnet")}}, kCmdSweep,
       E + "{dir}/s.yaml:3:12: 'grid.cluster': unknown cluster 'dgx-9' (known: tiny)\n", "{mini}"},
      {"sweep_neither_grid_nor_list", {{"s.yaml", "name: s\n"}}, kCmdSweep,
       E + "{dir}/s.yaml:1:1: a sweep spec needs 'grid' or 'list' (or both)\n"},
      {"sweep_negative_link", {{"s.yaml", edit(kSweep, 9, "    - {inter_node: \"-100 Gb/s\"}")}}, kCmdSweep,
       E + "{dir}/s.yaml:9:20: 'grid.links[1].inter_node': '-100 Gb/s' is negative\n"},
      {"sweep_bandwidth_for_a_bucket", {{"s.yaml", edit(kSweep, 6, "  gpus: [1, 4]\n  bucket_size: \"8 MiB/s\"")}}, kCmdSweep,
       E + "{dir}/s.yaml:7:16: 'grid.bucket_size': unknown size unit 'MiB/s' in '8 MiB/s' (use B, kB, MB, GB, KiB, MiB, GiB)\n"},
      {"sweep_unknown_key", {{"s.yaml", edit(kSweep, 6, "  gpus: [1, 4]\n  colour: red")}}, kCmdSweep,
       E + "{dir}/s.yaml:7:3: 'grid.colour': unknown key (known keys here: batch, bucket_size, cluster, fp8_all_gather, fp8_scaling, framework, gpu, gpus, "
           "layout, links, model, precision)\n"},
      // the layout axis (issue 37): its maps read by the framework file's parallel: reader, its keys
      {"sweep_layout_unknown_key", {{"s.yaml", edit(kSweep, 6, "  gpus: [1, 4]\n  layout: [{tp: 2}, {tp: 2, tq: 4}]")}}, kCmdSweep,
       E + "{dir}/s.yaml:7:29: 'grid.layout[1].tq': unknown key (known keys here: account_for_embedding_in_pipeline_split, "
           "account_for_loss_in_pipeline_split, cp, cp_comm, distribute_saved_activations, dp_comm_overlap, ep, global_batch, "
           "hierarchical_cp, micro_batch, micro_batches, "
           "moe_expert_capacity_factor, moe_expert_load_cv, moe_imbalance, moe_pad_expert_input_to_capacity, "
           "num_layers_in_first_pipeline_stage, num_layers_in_last_pipeline_stage, pp, pp_comm_overlap, "
           "pp_reshard_after_forward, rank_order, recompute_method, recompute_num_layers, schedule, sp, tp, tp_async_backward, "
           "tp_comm_overlap, vp)\n"},
      {"sweep_layout_micro_batch_beside_batch",
       {{"s.yaml", edit(kSweep, 6, "  gpus: [1, 4]\n  batch: 2\n  layout: {tp: 2, micro_batch: 4}")}}, kCmdSweep,
       E + "{dir}/s.yaml:8:32: 'grid.layout.micro_batch': the batch axis is the layouts' micro-batch: give it in one place\n"},
      {"sweep_precision", {{"s.yaml", edit(kSweep, 6, "  gpus: [1, 4]\n  precision: fp4")}}, kCmdSweep,
       E + "{dir}/s.yaml:7:14: 'grid.precision': unknown value 'fp4' (expected one of: fp32, tf32, bf16, fp16, fp8)\n"},
      // the fp8_scaling axis (eq. K15): a recipe of the fp8 precision only
      {"sweep_fp8_scaling_unknown", {{"s.yaml", edit(kSweep, 6, "  gpus: [1, 4]\n  precision: fp8\n  fp8_scaling: [tensorwise, colwise]")}},
       kCmdSweep,
       E + "{dir}/s.yaml:8:29: 'grid.fp8_scaling[1]': unknown value 'colwise' (expected one of: tensorwise, rowwise, mxfp8)\n"},
      {"sweep_fp8_rowwise_without_fp8", {{"s.yaml", edit(kSweep, 6, "  gpus: [1, 4]\n  precision: [fp32, bf16]\n  fp8_scaling: rowwise")}},
       kCmdSweep,
       E + "{dir}/s.yaml:8:16: 'grid.fp8_scaling': rowwise scaling is a recipe of fp8 training; no precision here is fp8\n"},
      // eq. S12: fp8 all-gather on tensor-wise fp8 groups only
      {"sweep_fp8_all_gather_without_fp8", {{"s.yaml", edit(kSweep, 6, "  gpus: [1, 4]\n  precision: bf16\n  fp8_all_gather: true")}},
       kCmdSweep,
       E + "{dir}/s.yaml:8:19: 'grid.fp8_all_gather': fp8 all-gather gathers tensor-wise fp8 weights; no group here is fp8 "
           "with tensor-wise scaling\n"},
      {"sweep_format", {{"s.yaml", kSweep}}, "sweep --spec {dir}/s.yaml --format xml -o {out}",
       E + "'--format': unknown format 'xml' (expected csv or jsonl)\n"},
      // --shard I/N and `sweep merge` (kSweep: 2 frameworks × 2 links × 2 GPU counts = 8 configurations)
      {"sweep_shard_zero", {{"s.yaml", kSweep}}, "sweep --spec {dir}/s.yaml --shard 0/3 -o {out}",
       E + "'--shard': '0/3': the part I of I/N runs from 1 to N, and N is at least 1\n"},
      {"sweep_shard_not_a_fraction", {{"s.yaml", kSweep}}, "sweep --spec {dir}/s.yaml --shard 2 -o {out}",
       E + "'--shard': '2' is not I/N (part I of N, e.g. 3/8)\n"},
      {"sweep_shard_more_parts_than_configurations", {{"s.yaml", kSweep}}, "sweep --spec {dir}/s.yaml --shard 9/9 -o {out}",
       E + "'--shard': 9 parts of a sweep of 8 configurations would leave some empty (N is at most the number of "
           "configurations)\n"},
      {"sweep_shard_with_top", {{"s.yaml", kSweep}}, "sweep --spec {dir}/s.yaml --shard 1/2 --top 3 -o {out}",
       E + "'--top': ranks the whole sweep, not one part: merge the parts ('dlscale sweep merge'), then rank\n"},
      {"sweep_without_spec", {}, "sweep -o {out}",
       E + "'--spec': is required (or 'dlscale sweep merge PART...' to join the parts of a sweep)\n"},
      {"sweep_merge_missing_part", {}, "sweep merge {dir}/nowhere.csv -o {out}",
       E + "{dir}/nowhere.csv: cannot open file (no such file)\n"},
      {"sweep_merge_part_cut_short", {{"p1.csv", kSweepHeader}, {"p2.csv", std::string(kSweepHeader) + "shi-chu-p40,resnet50"}},
       "sweep merge {dir}/p1.csv {dir}/p2.csv -o {out}", E + "{dir}/p2.csv:2:21: the last line has no end (a part cut short?)\n"},
      {"sweep_merge_jsonl_among_csv", {{"p1.csv", kSweepHeader}, {"p2.jsonl", "{\"gpus\":1}\n"}},
       "sweep merge {dir}/p1.csv {dir}/p2.jsonl -o {out}",
       E + "{dir}/p2.jsonl:1:1: not a CSV part of a dlscale sweep (the first line is not the header of {dir}/p1.csv)\n"},
      {"sweep_merge_csv_among_jsonl", {{"p1.jsonl", "{\"gpus\":1}\n"}, {"p2.csv", kSweepHeader}},
       "sweep merge {dir}/p1.jsonl {dir}/p2.csv -o {out}",
       E + "{dir}/p2.csv:1:1: not a JSON object (the parts are JSON lines, as {dir}/p1.jsonl is)\n"},

      // ---- reproduction scenarios ------------------------------------------------------------------------------
      {"paper_more_gpus_than_the_system", {{"r.yaml", edit(kPaper, 8, "    gpus: [1, 2, 64]")}}, kCmdPaper,
       E + "{dir}/r.yaml:8:11: 'experiments[0].gpus': experiment 'one': 64 GPUs asked for on 'shi-chu-p40', which holds 16\n"},
      {"paper_zero_batch", {{"r.yaml", edit(kPaper, 9, "    batch: 0")}}, kCmdPaper,
       E + "{dir}/r.yaml:9:12: 'experiments[0].batch': must be a whole number ≥ 1, got 0\n"},
      {"paper_duplicate_id", {{"r.yaml", std::string(kPaper) + "  - {id: one, systems: shi-chu-p40, models: resnet50, frameworks: caffe-mpi, gpus: 1, batch: 32}\n"}},
       kCmdPaper, E + "{dir}/r.yaml:10:5: 'experiments[1]': experiment id 'one' is used twice\n"},
      {"paper_percent_without_sign", {{"r.yaml", std::string(kPaper) + "    measured:\n      - {source: x, allreduce_efficiency: \"59.59\"}\n"}},
       kCmdPaper, E + "{dir}/r.yaml:11:43: 'experiments[0].measured[0].allreduce_efficiency': '59.59' is not a percentage like \"59.59 %\"\n"},
      {"paper_busbw_without_operations", {{"r.yaml", std::string(kPaper) + "    kind: busbw\n"}}, kCmdPaper,
       E + "{dir}/r.yaml:4:5: 'experiments[0].operations': missing required key\n"},
      {"paper_no_experiments", {{"r.yaml", drop(edit(kPaper, 3, "experiments: []"), 4, 9)}}, kCmdPaper,
       E + "{dir}/r.yaml:3:14: 'experiments': a scenario file needs at least one experiment\n"},
      {"paper_unknown_model", {{"r.yaml", edit(edit(kPaper, 5, "    systems: tiny"), 6, "    models: resnet50")}}, kCmdPaper,
       E + "{dir}/r.yaml:6:13: 'experiments[0].models': unknown model 'resnet50' (known: alexnet)\n", "{mini}"},
      {"paper_unknown_name", {}, "reproduce shi-chu-2019 -o {out}", E + "'PAPER': unknown paper 'shi-chu-2019' (known: all, mini)\n",
       "{mini}"},

      // ---- nccl-tests logs -------------------------------------------------------------------------------------
      // cut after the 2 MiB row of a sweep to 4 MiB (maxBytes 4194304, step factor 2)
      {"log_truncated", {{"all_reduce_perf.log", drop(kLog, 14, 16)}}, kCmdLog,
       E + "{dir}/all_reduce_perf.log:13:1: the log ends inside a table (truncated?): its last row is 2097152 B of a sweep to "
           "4194304 B (maxBytes); rerun the test and keep its whole output, from the '# nThread' line to '# Avg bus bandwidth'\n"},
      // no maxBytes to tell (the '# nThread' line is gone) and no trailer
      {"log_truncated_without_its_header", {{"all_reduce_perf.log", drop(drop(kLog, 15, 16), 1, 1)}}, kCmdLog,
       E + "{dir}/all_reduce_perf.log:13:1: the log ends inside a table (truncated?): no '# Avg bus bandwidth' line after the last "
           "row; rerun the test and keep its whole output, from the '# nThread' line to '# Avg bus bandwidth'\n"},
      {"log_cut_mid_row", {{"all_reduce_perf.log", drop(edit(kLog, 14, "     4194304       1048576     float     sum      -1   140.00   29.96   44.94       0   140.00   2"), 15, 16)}},
       kCmdLog, E + "{dir}/all_reduce_perf.log:14:98: garbled or truncated row: 11 columns, the header at line 10 has 13\n"},
      {"log_garbled_time", {{"all_reduce_perf.log", edit(kLog, 13, "     2097152        524288     float     sum      -1    8O.00   26.21   39.32       0    80.00   26.21   39.32       0")}},
       kCmdLog, E + "{dir}/all_reduce_perf.log:13:57: garbled row: time '8O.00' is not a number\n"},
      {"log_algbw_disagrees", {{"all_reduce_perf.log", edit(kLog, 13, "     2097152        524288     float     sum      -1    80.00   36.21   39.32       0    80.00   26.21   39.32       0")}},
       kCmdLog, E + "{dir}/all_reduce_perf.log:13:65: algbw 36.21 GB/s disagrees with size/time = 26.21 GB/s (garbled row?)\n"},
      {"log_rank_lines_disagree", {{"all_reduce_perf.log", edit(kLog, 1, "# nThread 1 nGpus 8 minBytes 1048576 maxBytes 4194304")}},
       kCmdLog, E + "{dir}/all_reduce_perf.log:10:1: 4 '# Rank' lines do not match the header's nThread·nGpus = 8: pass --gpus\n"},
      // busbw from the row's own size and time: 2097152 B / 80 us = 26.2144 GB/s, × 1.5 = 39.32 GB/s
      {"log_busbw_disagrees", {{"all_reduce_perf.log", edit(kLog, 13, "     2097152        524288     float     sum      -1    80.00   26.21   52.42       0    80.00   26.21   39.32       0")}},
       kCmdLog,
       E + "{dir}/all_reduce_perf.log:13:73: busbw 52.42 GB/s is not size/time × 1.5 (the allreduce factor for 4 GPUs) = 39.32 GB/s: the "
           "log is for another GPU count (--gpus N corrects it) or the row is garbled\n"},
      // --gpus corrects the count, not the numbers: 8 GPUs make the factor 1.75, and the rows say 1.5
      {"log_gpus_option_wrong", {{"all_reduce_perf.log", kLog}}, "calibrate import nccl-tests {dir}/all_reduce_perf.log --gpus 8 -o {out}",
       E + "{dir}/all_reduce_perf.log:12:73: busbw 31.46 GB/s is not size/time × 1.75 (the allreduce factor for 8 GPUs) = 36.70 GB/s: the "
           "log is for another GPU count (--gpus N corrects it) or the row is garbled\n"},
      {"log_more_nodes_than_gpus", {{"all_reduce_perf.log", kLog}}, "calibrate import nccl-tests {dir}/all_reduce_perf.log --nodes 8 -o {out}",
       E + "{dir}/all_reduce_perf.log:10:1: 8 nodes for 4 GPUs: each node runs at least one (check --gpus/--nodes)\n"},
      // No '# Rank' lines and no nThread·nGpus: busbw/algbw gives the count when one n fits (4 for kLog's 1.5,
      // accepted: NcclLogs test); broadcast's factor is 1 for every n, so its count stays unknown.
      {"log_gpu_count_unknown", {{"broadcast_perf.log", kTrimmedBroadcast}}, "calibrate import nccl-tests {dir}/broadcast_perf.log -o {out}",
       E + "{dir}/broadcast_perf.log:1:1: no '# Rank ... device' lines and no 'nThread N nGpus M' header before the table, and "
           "busbw/algbw fits 1 and 2 GPUs alike: GPU count unknown (pass --gpus N [--nodes K], or rerun and keep the whole output)\n"},
      {"log_table_without_rows", {{"all_reduce_perf.log", drop(kLog, 12, 14)}}, kCmdLog,
       E + "{dir}/all_reduce_perf.log:13:1: the table at line 10 has no rows: rerun the test and keep its whole output\n"},
      {"log_without_a_table", {{"all_reduce_perf.log", drop(kLog, 8, 16)}}, kCmdLog,
       E + "{dir}/all_reduce_perf.log:1:1: no nccl-tests result table found (expected a '#  size  count  type ... time  algbw  busbw' "
           "header): rerun the test and keep its whole output, from the '# nThread' line to '# Avg bus bandwidth'\n"},
      {"log_op_not_in_the_log", {{"all_reduce_perf.log", kLog}}, "calibrate import nccl-tests {dir}/all_reduce_perf.log --op broadcast -o {out}",
       E + "{dir}/all_reduce_perf.log:12:73: busbw 31.46 GB/s is not size/time × 1 (the broadcast factor for 4 GPUs) = 20.97 GB/s: the log "
           "is for another GPU count (--gpus N corrects it) or the row is garbled\n"},
      {"log_old_columns_garbled", {{"all_reduce_perf.log", edit(kOldLog, 5, "     2097152        524288   float    57.94   36.20   63.34  1e-07    58.81   35.66")}},
       kCmdLog, E + "{dir}/all_reduce_perf.log:5:79: garbled or truncated row: 9 columns, the header at line 2 has 11\n"},
      {"log_not_a_collective", {{"alltoall_perf.log", kLog}}, "calibrate import nccl-tests {dir}/alltoall_perf.log -o {out}",
       E + "{dir}/alltoall_perf.log:10:1: alltoall_perf is not a collective dlscale models (allreduce, allgather, reducescatter, broadcast, "
           "reduce)\n"},
      // the oldest layout has no redop or root column: its numbers alone cannot tell all_reduce from broadcast
      {"log_collective_unknown", {{"bench.log", kOldLog}}, "calibrate import nccl-tests {dir}/bench.log -o {out}",
       E + "{dir}/bench.log:2:1: cannot tell which collective this table measures: name the file after the test (e.g. all_reduce_perf.log) "
           "or pass --op\n"},
      {"log_bad_op_option", {{"bench.log", kLog}}, "calibrate import nccl-tests {dir}/bench.log --op gather -o {out}",
       E + "'--op': unknown collective 'gather' (expected allreduce, allgather, reducescatter, broadcast or reduce)\n"},
      {"log_missing_file", {}, "calibrate import nccl-tests {dir}/all_reduce_perf.log -o {out}",
       E + "{dir}/all_reduce_perf.log: cannot open file (no such file)\n"},

      // ---- nvbandwidth JSON --------------------------------------------------------------------------------------
      {"nvbandwidth_truncated", {{"nv.json", drop(kNvb, 9, 12)}}, kCmdNvb,
       E + "{dir}/nv.json:9:1: malformed JSON: syntax error while parsing object - unexpected end of input; expected '}' (the "
           "file ends early: rerun nvbandwidth -j and keep its whole output)\n"},
      // nvbandwidth's text output, cut: after a matrix's title, after its column line, in a row; a garbled value
      {"nvbandwidth_text_cut_after_a_title",
       {{"nv.json", "nvbandwidth Version: v0.4\n\nRunning host_to_device_memcpy_ce.\nmemcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)\n"}},
       kCmdNvb,
       E + "{dir}/nv.json:4:1: nvbandwidth's output ends inside the host_to_device_memcpy_ce matrix (truncated?): rerun nvbandwidth "
           "(-j gives JSON) and keep its whole output\n"},
      {"nvbandwidth_text_cut_after_the_columns", {{"nv.json", drop(kNvbText, 9, 11)}}, kCmdNvb,
       E + "{dir}/nv.json:8:1: nvbandwidth's output ends inside the host_to_device_memcpy_ce matrix (truncated?): rerun nvbandwidth "
           "(-j gives JSON) and keep its whole output\n"},
      {"nvbandwidth_text_row_cut", {{"nv.json", edit(kNvbText, 8, "           0           1")}}, kCmdNvb,
       E + "{dir}/nv.json:9:13: row 0 of the host_to_device_memcpy_ce matrix has 1 values, its header 2 columns (a cut-off row? "
           "rerun nvbandwidth and keep its whole output)\n"},
      {"nvbandwidth_text_garbled_value", {{"nv.json", edit(kNvbText, 9, " 0     53,69")}}, kCmdNvb,
       E + "{dir}/nv.json:9:8: 'host_to_device_memcpy_ce[0][0]': '53,69' is not a number (nor N/A)\n"},
      {"nvbandwidth_text_only_the_header", {{"nv.json", drop(kNvbText, 5, 11)}}, kCmdNvb,
       E + "{dir}/nv.json:1:1: 'nvbandwidth': no passed copy or latency test case that dlscale can use: rerun nvbandwidth with its "
           "copy tests (the default set, or -t host_to_device_memcpy_ce device_to_host_memcpy_ce "
           "device_to_device_memcpy_read_ce) and import its whole output\n"},
      {"nvbandwidth_empty", {{"nv.json", "\n"}}, kCmdNvb,
       E + "{dir}/nv.json:1:1: the file is empty (expected the output of nvbandwidth, as text or -j JSON)\n"},
      {"nvbandwidth_other_json", {{"nv.json", "{\"benchmarks\": []}\n"}}, kCmdNvb,
       E + "{dir}/nv.json:1:1: 'nvbandwidth': not an nvbandwidth JSON file (no top-level 'nvbandwidth' object)\n"},
      {"nvbandwidth_testcases_not_a_list", {{"nv.json", "{\"nvbandwidth\": {\n  \"testcases\": {\"name\": \"x\"}\n}}\n"}}, kCmdNvb,
       E + "{dir}/nv.json:2:3: 'nvbandwidth.testcases': expected a list of test cases\n"},
      {"nvbandwidth_test_without_name", {{"nv.json", edit(kNvb, 6, "        \"title\": \"host_to_device_memcpy_ce\",")}}, kCmdNvb,
       E + "{dir}/nv.json:5:7: 'nvbandwidth.testcases[0]': a test case without a name\n"},
      {"nvbandwidth_nothing_usable", {{"nv.json", edit(kNvb, 7, "        \"status\": \"Waived\",")}}, kCmdNvb,
       E + "{dir}/nv.json:4:5: 'nvbandwidth.testcases': no passed copy or latency test case that dlscale can use: rerun "
           "nvbandwidth with its copy tests (the default set, or -t host_to_device_memcpy_ce device_to_host_memcpy_ce "
           "device_to_device_memcpy_read_ce) and import its whole output\n"},
      {"nvbandwidth_garbled_entry", {{"nv.json", edit(kNvb, 8, "        \"bandwidth_matrix\": [[\"53,69\"]]")}}, kCmdNvb,
       E + "{dir}/nv.json:8:31: 'nvbandwidth.testcases[0].bandwidth_matrix[0][0]': '53,69' is not a number (nor N/A)\n"},
      {"nvbandwidth_nan_entry", {{"nv.json", edit(kNvb, 8, "        \"bandwidth_matrix\": [[\"NaN\"]]")}}, kCmdNvb,
       E + "{dir}/nv.json:8:31: 'nvbandwidth.testcases[0].bandwidth_matrix[0][0]': \"NaN\" is not a finite number\n"},
      {"nvbandwidth_negative_entry", {{"nv.json", edit(kNvb, 8, "        \"bandwidth_matrix\": [[-53.69]]")}}, kCmdNvb,
       E + "{dir}/nv.json:8:31: 'nvbandwidth.testcases[0].bandwidth_matrix[0][0]': -53.69 is negative\n"},
      {"nvbandwidth_negative_buffer", {{"nv.json", edit(kNvb, 3, "    \"bufferSize\": -5,")}}, kCmdNvb,
       E + "{dir}/nv.json:3:5: 'nvbandwidth.bufferSize': -5 is not a buffer size in MiB (a number greater than zero)\n"},

      // ---- nvidia-smi topo -m ---------------------------------------------------------------------------------------
      {"smi_nvlink_count", {{"smi.txt", edit(kSmi, 2, "GPU0\t X \tNVx\tPIX\t0-19")}}, kCmdSmi,
       E + "{dir}/smi.txt:2:10: 'NVx' is not an NVLink count like NV2\n"},
      {"smi_column_without_row", {{"smi.txt", edit(kSmi, 1, "\tGPU0\tGPU2\tmlx5_0\tCPU Affinity")}}, kCmdSmi,
       E + "{dir}/smi.txt:1:7: column 'GPU2' names no GPU row (the matrix has GPU0 … GPU1)\n"},
      {"smi_row_short_of_a_cell", {{"smi.txt", edit(kSmi, 3, "GPU1\tNV2\t X \t0-19")}}, kCmdSmi,
       E + "{dir}/smi.txt:3:18: row GPU1 has 3 cells, the header names 4 columns\n"},
      {"smi_empty", {{"smi.txt", ""}}, kCmdSmi,
       E + "{dir}/smi.txt:1:1: no 'nvidia-smi topo -m' matrix found (a header row starting with GPU0): rerun nvidia-smi topo -m "
           "and keep its whole output\n"},
      {"smi_other_text", {{"smi.txt", "Failed to initialize NVML: Driver/library version mismatch\n"}}, kCmdSmi,
       E + "{dir}/smi.txt:1:1: no 'nvidia-smi topo -m' matrix found (a header row starting with GPU0): rerun nvidia-smi topo -m "
           "and keep its whole output\n"},
      // cut-off captures: the header alone, the rows stopping short of the header, the header lost, a row cut
      {"smi_header_only", {{"smi.txt", drop(kSmi, 2, 5)}}, kCmdSmi,
       E + "{dir}/smi.txt:1:2: no GPU row follows the header (a cut-off capture): rerun nvidia-smi topo -m and keep its whole output\n"},
      {"smi_rows_stop_short", {{"smi.txt", drop(kSmi, 3, 5)}}, kCmdSmi,
       E + "{dir}/smi.txt:1:7: column 'GPU1' names no GPU row (the matrix has GPU0 … GPU0): the rows stop short of the header (a "
           "cut-off capture); rerun nvidia-smi topo -m and keep its whole output\n"},
      {"smi_header_cut_off", {{"smi.txt", drop(kSmi, 1, 1)}}, kCmdSmi,
       E + "{dir}/smi.txt:1:1: a GPU0 row without the header line above it (a cut-off capture): rerun nvidia-smi topo -m and keep "
           "its whole output\n"},
      {"smi_cut_mid_row", {{"smi.txt", "\tGPU0\tGPU1\tmlx5_0\tCPU Affinity\nGPU0\t X \tNV2\tPIX\t0-19\nGPU1\tNV2"}}, kCmdSmi,
       E + "{dir}/smi.txt:3:9: row GPU1 has 1 cells, the header names 4 columns (the capture ends here: rerun nvidia-smi topo -m "
           "and keep its whole output)\n"},

      // ---- NCCL topology XML ------------------------------------------------------------------------------------------
      {"xml_never_closed", {{"topo.xml", drop(kXml, 6, 14)}}, kCmdXml,
       E + "{dir}/topo.xml:4:7: malformed XML: <gpu> is never closed (a cut-off file?): rerun with NCCL_TOPO_DUMP_FILE=FILE set "
           "and import that file whole\n"},
      {"xml_mismatched_tag", {{"topo.xml", edit(kXml, 7, "    </pcx>")}}, kCmdXml,
       E + "{dir}/topo.xml:7:5: malformed XML: closing tag </pcx> does not match <pci>\n"},
      {"xml_unquoted_attribute", {{"topo.xml", edit(kXml, 2, "  <cpu numaid=0 arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"85\">")}},
       kCmdXml, E + "{dir}/topo.xml:2:15: malformed XML: attribute 'numaid' needs a quoted value\n"},
      {"xml_gpu_dev_not_a_number", {{"topo.xml", edit(kXml, 9, "      <gpu dev=\"one\" sm=\"70\" rank=\"1\" gdr=\"1\">")}}, kCmdXml,
       E + "{dir}/topo.xml:9:7: <gpu> 'dev' must be a whole number, not 'one'\n"},
      {"xml_gpu_dev_twice", {{"topo.xml", edit(kXml, 9, "      <gpu dev=\"0\" sm=\"70\" rank=\"1\" gdr=\"1\">")}}, kCmdXml,
       E + "{dir}/topo.xml:9:7: a second <gpu> with dev 0 (two dumps in one file?)\n"},
      {"xml_without_gpus", {{"topo.xml", "<system version=\"1\">\n  <cpu numaid=\"0\" arch=\"x86_64\">\n  </cpu>\n</system>\n"}}, kCmdXml,
       E + "{dir}/topo.xml:1:1: no <gpu> in the dump (and no <pci> of a GPU class): rerun with NCCL_TOPO_DUMP_FILE=FILE set and "
           "import that file whole\n"},
      {"xml_graph_dump", {{"topo.xml", "<graphs version=\"1\">\n  <graph id=\"0\" pattern=\"4\" nchannels=\"2\"/>\n</graphs>\n"}},
       kCmdXml,
       E + "{dir}/topo.xml:1:1: <graphs> is NCCL's graph dump (NCCL_GRAPH_DUMP_FILE), not its topology: rerun with "
           "NCCL_TOPO_DUMP_FILE=FILE set and import that file\n"},
      {"xml_zero_nvlinks", {{"topo.xml", edit(kXml, 5, "        <nvlink target=\"0000:07:00.0\" count=\"0\" tclass=\"0x030200\"/>")}}, kCmdXml,
       E + "{dir}/topo.xml:5:9: <nvlink> needs a 'count' of at least 1\n"},
      {"xml_nvlink_to_nowhere", {{"topo.xml", edit(kXml, 5, "        <nvlink target=\"0000:ff:00.0\" count=\"2\" tclass=\"0x030200\"/>")}}, kCmdXml,
       E + "{dir}/topo.xml:5:9: <nvlink> target '0000:ff:00.0' is no GPU of the dump\n"},
      {"xml_no_system", {{"topo.xml", "<?xml version=\"1.0\"?>\n<configuration/>\n"}}, kCmdXml,
       E + "{dir}/topo.xml:1:1: no <system> element: not an NCCL_TOPO_DUMP_FILE (rerun with NCCL_TOPO_DUMP_FILE=FILE set and "
           "import that file)\n"},

      // ---- command-line options ------------------------------------------------------------------------------------------
      {"option_zero_gpus", {}, "predict --gpus 0 -o {out}", E + "'--gpus': '0' is not a list of GPU counts ≥ 1 (e.g. 1,2,4,8)\n"},
      {"option_negative_gpus", {}, "predict --gpus 1,-4 -o {out}", E + "'--gpus': '1,-4' is not a list of GPU counts ≥ 1 (e.g. 1,2,4,8)\n"},
      {"option_precision", {}, "predict --precision fp4 -o {out}", E + "'--precision': unknown precision 'fp4' (expected fp32, tf32, bf16, fp16, fp8)\n"},
      {"option_zero_cpu_cores", {}, "predict --cpu-cores 0 -o {out}", E + "'--cpu-cores': a node needs at least one CPU core, got 0\n"},
      {"option_unknown_data_source", {}, "predict --data tape -o {out}",
       E + "'--data': unknown data source 'tape' (synthetic, ram, nvme or nfs)\n"},
      {"option_negative_loader_workers", {}, "predict --loader-workers -3 -o {out}",
       E + "'--loader-workers': a worker count cannot be negative, got -3\n"},
      {"option_zero_batch", {}, "predict --batch 0 -o {out}", E + "'--batch': the batch per GPU must be at least 1, got 0\n"},
      {"option_precision_the_gpu_lacks", {}, "predict --cluster tiny --model alexnet --precision tf32 -o {out}",
       E + "'--precision': the Tesla P40 of cluster 'tiny' has no tf32 mode (it needs TF32 tensor cores, Ampere or newer)\n", "{mini}"},
      {"option_fp8_the_gpu_lacks", {}, "predict --cluster tiny --model alexnet --precision fp8 -o {out}",
       E + "'--precision': the Tesla P40 of cluster 'tiny' has no fp8 mode (it needs fp8 tensor cores, Hopper or newer)\n", "{mini}"},
      {"option_fp8_rowwise_the_gpu_lacks", {},
       "predict --cluster tiny --model alexnet --precision fp8 --fp8-scaling rowwise -o {out}",
       E + "'--precision': the Tesla P40 of cluster 'tiny' has no fp8 mode (it needs fp8 tensor cores, Hopper or newer)\n", "{mini}"},
      {"option_fp8_scaling_unknown", {}, "predict --precision fp8 --fp8-scaling blockwise -o {out}",
       E + "'--fp8-scaling': unknown fp8 scaling 'blockwise' (expected tensorwise, rowwise, mxfp8)\n"},
      {"option_fp8_rowwise_without_fp8", {}, "predict --cluster tiny --model alexnet --precision fp32 --fp8-scaling rowwise -o {out}",
       E + "'--fp8-scaling': rowwise scaling is a recipe of fp8 training; the precision is fp32\n", "{mini}"},
      // eq. S12: fp8 all-gather is tensor-wise fp8 under FSDP (stage 3); the library's refusals name the option
      {"option_fp8_all_gather_without_fp8", {},
       "predict --cluster dgx-h100 --model gpt3-125m --framework fsdp --precision bf16 --fp8-all-gather -o {out}",
       E + "'--fp8-all-gather': fp8 all-gather gathers the fp8 linear maps' weights; the precision is bf16\n"},
      {"option_fp8_all_gather_rowwise", {},
       "predict --cluster dgx-h100 --model gpt3-125m --framework fsdp --precision fp8 --fp8-scaling rowwise --fp8-all-gather -o {out}",
       E + "'--fp8-all-gather': fp8 all-gather needs tensor-wise scaling (row-wise and MX weights are gathered in bf16); the "
           "scaling is rowwise\n"},
      {"option_fp8_all_gather_without_fsdp", {},
       "predict --cluster dgx-h100 --model gpt3-125m --framework pytorch-ddp --precision fp8 --fp8-all-gather -o {out}",
       E + "'--fp8-all-gather': fp8 all-gather is FSDP's: framework 'pytorch-ddp' does not shard the parameters (stage 0)\n"},
      {"option_plan_fp8_all_gather_without_fp8", {},
       "plan --cluster dgx-h100 --model gpt3-125m --gpus 8 --precision bf16 --fp8-all-gather -o {out}",
       E + "'--fp8-all-gather': fp8 all-gather needs --precision fp8 with tensor-wise scaling; the precision is bf16\n"},
      // MX block scaling (eq. K15c) only on Blackwell: refused as a precision the GPU lacks is, naming the option
      {"option_fp8_mxfp8_the_gpu_lacks", {}, "predict --cluster dgx-h100 --model gpt3-125m --precision fp8 --fp8-scaling mxfp8 -o {out}",
       E + "'--fp8-scaling': the H100 SXM5 80 GB of cluster 'dgx-h100' (hopper) has no mxfp8 scaling (it needs Blackwell's "
           "block-scaled tensor cores)\n"},
      {"option_fp8_mxfp8_without_fp8", {}, "predict --cluster dgx-b200 --model gpt3-125m --precision bf16 --fp8-scaling mxfp8 -o {out}",
       E + "'--fp8-scaling': mxfp8 scaling is a recipe of fp8 training; the precision is bf16\n"},
      {"option_model_show_fp8_mxfp8_the_gpu_lacks", {},
       "model show gpt3-125m --gpu h200 --batch 1 --precision fp8 --fp8-scaling mxfp8 -o {out}",
       E + "'--fp8-scaling': the H200 SXM 141 GB (hopper) has no mxfp8 scaling (it needs Blackwell's block-scaled tensor cores)\n"},
      {"option_plan_fp8_mxfp8_the_gpu_lacks", {},
       "plan --cluster dgx-h100 --model gpt3-125m --gpus 8 --precision fp8 --fp8-scaling mxfp8 -o {out}",
       E + "'--fp8-scaling': the H100 SXM5 80 GB of cluster 'dgx-h100' (hopper) has no mxfp8 scaling (it needs Blackwell's "
           "block-scaled tensor cores)\n"},
      {"option_plan_parallel_fp8_mxfp8_the_gpu_lacks", {},
       "plan --parallel --cluster dgx-h100 --model gpt3-125m --gpus 8 --precision fp8 --fp8-scaling mxfp8 -o {out}",
       E + "'--fp8-scaling': the H100 SXM5 80 GB of cluster 'dgx-h100' (hopper) has no mxfp8 scaling (it needs Blackwell's "
           "block-scaled tensor cores)\n"},
      {"option_model_show_fp8_scaling_unknown", {}, "model show alexnet --precision fp8 --fp8-scaling colwise -o {out}",
       E + "'--fp8-scaling': unknown fp8 scaling 'colwise' (expected tensorwise, rowwise, mxfp8)\n"},
      {"option_model_show_optimizer_impl_unknown", {}, "model show alexnet --optimizer-impl turbo -o {out}",
       E + "'--optimizer-impl': unknown optimizer implementation 'turbo' (expected fused, foreach, for_loop)\n"},
      // plan and plan --parallel take --fp8-scaling as the scenario commands do (every configuration they try)
      {"option_plan_fp8_rowwise_without_fp8", {},
       "plan --cluster dgx-h100 --model gpt3-125m --gpus 8 --precision bf16 --fp8-scaling rowwise -o {out}",
       E + "'--fp8-scaling': rowwise scaling is a recipe of fp8 training; the precision is bf16\n"},
      {"option_plan_fp8_scaling_unknown", {},
       "plan --cluster dgx-h100 --model gpt3-125m --gpus 8 --precision fp8 --fp8-scaling blockwise -o {out}",
       E + "'--fp8-scaling': unknown fp8 scaling 'blockwise' (expected tensorwise, rowwise, mxfp8)\n"},
      {"option_plan_parallel_fp8_rowwise_without_fp8", {},
       "plan --parallel --cluster dgx-h100 --model gpt3-125m --gpus 8 --fp8-scaling rowwise -o {out}",
       E + "'--fp8-scaling': rowwise scaling is a recipe of fp8 training; the precision is bf16\n"},
      // plan's two searches take their own options: one of the other search is refused, not dropped (issue 35)
      {"option_plan_tp_without_parallel", {}, "plan --cluster dgx-h100 --model gpt3-125m --gpus 8 --tp 2,4 -o {out}",
       E + "'--tp': is an option of the model-parallel search: give it with --parallel\n"},
      {"option_plan_global_batch_without_parallel", {},
       "plan --cluster dgx-h100 --model gpt3-125m --gpus 8 --global-batch 64 -o {out}",
       E + "'--global-batch': is an option of the model-parallel search: give it with --parallel\n"},
      {"option_plan_parallel_accumulations", {},
       "plan --parallel --cluster dgx-h100 --model gpt3-125m --gpus 8 --accumulations 4 -o {out}",
       E + "'--accumulations': belongs to the data-parallel search, not to --parallel's layouts (--micro-batch and "
           "--global-batch size a layout's step)\n"},
      {"option_plan_parallel_target_tokens", {},
       "plan --parallel --cluster dgx-h100 --model gpt3-125m --gpus 8 --target-tokens 1e9 -o {out}",
       E + "'--target-tokens': belongs to the data-parallel search, not to --parallel's layouts (--micro-batch and "
           "--global-batch size a layout's step)\n"},
      {"option_decoder_kv_heads", {}, "predict --model decoder:layers=2,hidden=64,heads=4,kv_heads=3,ffn=128,vocab=100,seq=16 -o {out}",
       E + "'--model': decoder key 'kv_heads': 3 key/value heads do not divide 4 heads\n"},
      {"option_decoder_beyond_learned_positions", {},
       "predict --model decoder:layers=2,hidden=64,heads=4,ffn=128,vocab=100,seq=16,positions=learned,context=8 -o {out}",
       E + "'--model': decoder key 'seq': 16 tokens do not fit the 8 learned positions ('context')\n"},
      {"option_decoder_unknown_key", {}, "predict --model decoder:layers=2,width=64 -o {out}",
       E + "'--model': unknown decoder key 'width' (keys: layers, hidden, heads, kv_heads, ffn, vocab, seq, ffn_kind, positions, "
           "context, tied, bias, norm, window, experts, top_k, expert_ffn, shared_experts, first_dense, attention, q_lora, kv_lora, "
           "qk_nope, qk_rope, v_head)\n"},
      // a sliding window (eq. K25): a whole number of positions, at least 1
      {"option_decoder_window_zero", {}, "predict --model decoder:layers=2,hidden=64,heads=4,ffn=128,vocab=100,seq=16,window=0 -o {out}",
       E + "'--model': decoder key 'window': '0' is not a whole number ≥ 1\n"},
      {"option_decoder_window_negative", {},
       "predict --model decoder:layers=2,hidden=64,heads=4,ffn=128,vocab=100,seq=16,window=-4 -o {out}",
       E + "'--model': decoder key 'window': '-4' is not a whole number ≥ 1\n"},
      {"option_decoder_window_fraction", {},
       "predict --model decoder:layers=2,hidden=64,heads=4,ffn=128,vocab=100,seq=16,window=2.5 -o {out}",
       E + "'--model': decoder key 'window': '2.5' is not a whole number ≥ 1\n"},
      {"option_decoder_norm_unknown", {},
       "predict --model decoder:layers=2,hidden=64,heads=4,ffn=128,vocab=100,seq=16,norm=batchnorm -o {out}",
       E + "'--model': decoder key 'norm': 'batchnorm' is not one of rmsnorm, layernorm\n"},
      {"option_decoder_window_with_cp", {},
       "predict --cluster dgx-h100-ndr --nodes 1 --model decoder:layers=2,hidden=64,heads=4,ffn=128,vocab=100,seq=16,window=4 "
       "--cp 2 --gpus 8 -o {out}",
       E + "'--cp': cp 2: context parallelism over a sliding window of 4 tokens is not modelled\n"},
      {"option_decoder_missing_key", {}, "predict --model decoder:layers=2,hidden=64,heads=4,ffn=128,vocab=100 -o {out}",
       E + "'--model': decoder spec needs 'seq' (keys: layers, hidden, heads, kv_heads, ffn, vocab, seq, ffn_kind, positions, "
           "context, tied, bias, norm, window, experts, top_k, expert_ffn, shared_experts, first_dense, attention, q_lora, kv_lora, "
           "qk_nope, qk_rope, v_head)\n"},
      // multi-head latent attention (docs/models.md, "Decoder-only transformers")
      {"option_decoder_mla_key_without_mla", {}, "predict --model decoder:layers=2,hidden=64,heads=4,ffn=128,vocab=100,seq=16,qk_rope=8 -o {out}",
       E + "'--model': decoder key 'qk_rope' needs 'attention=mla' (multi-head latent attention)\n"},
      {"option_decoder_mla_with_kv_heads", {},
       "predict --model decoder:layers=2,hidden=64,heads=4,ffn=128,vocab=100,seq=16,attention=mla,kv_heads=2,kv_lora=16,qk_nope=8,"
       "qk_rope=8,v_head=8 -o {out}",
       E + "'--model': decoder key 'kv_heads': multi-head latent attention has no key/value heads of its own\n"},
      {"option_decoder_mla_without_kv_lora", {},
       "predict --model decoder:layers=2,hidden=64,heads=4,ffn=128,vocab=100,seq=16,attention=mla,qk_nope=8,qk_rope=8,v_head=8 -o {out}",
       E + "'--model': decoder key 'attention': multi-head latent attention needs 'kv_lora'\n"},
      {"option_decoder_mla_zero_head_dim", {},
       "predict --model decoder:layers=2,hidden=64,heads=4,ffn=128,vocab=100,seq=16,attention=mla,kv_lora=16,qk_nope=8,qk_rope=8,"
       "v_head=0 -o {out}",
       E + "'--model': decoder key 'v_head': '0' is not a whole number ≥ 1\n"},
      {"option_decoder_attention_unknown", {}, "predict --model decoder:layers=2,hidden=64,heads=4,ffn=128,vocab=100,seq=16,attention=mha -o {out}",
       E + "'--model': decoder key 'attention': 'mha' is not one of gqa, mla\n"},
      // a mixture of experts and expert parallelism (docs/model.md, P16-P17)
      {"option_decoder_top_k_above_experts", {},
       "predict --model decoder:layers=2,hidden=64,heads=4,ffn=128,vocab=100,seq=16,experts=4,top_k=5 -o {out}",
       E + "'--model': decoder key 'top_k': 5 is more than the 4 experts\n"},
      {"option_decoder_top_k_zero", {},
       "predict --model decoder:layers=2,hidden=64,heads=4,ffn=128,vocab=100,seq=16,experts=4,top_k=0 -o {out}",
       E + "'--model': decoder key 'top_k': '0' is not a whole number ≥ 1\n"},
      {"option_ep_without_experts", {},
       "predict --cluster dgx-h100-ndr --nodes 1 --model decoder:layers=2,hidden=64,heads=4,ffn=128,vocab=100,seq=16 --ep 2 "
       "--gpus 8 -o {out}",
       E + "'--ep': ep 2 needs a model with experts (a mixture of experts)\n"},
      {"option_ep_not_dividing_experts", {},
       "predict --cluster dgx-h100-ndr --nodes 1 --model decoder:layers=2,hidden=64,heads=4,ffn=128,vocab=100,seq=16,experts=4,"
       "top_k=2 --ep 3 --gpus 8 -o {out}",
       E + "'--ep': ep 3 does not divide the 4 experts\n"},
      {"option_ep_not_dividing_dp_cp", {},
       "predict --cluster dgx-h100-ndr --nodes 1 --model decoder:layers=2,hidden=64,heads=4,ffn=128,vocab=100,seq=16,experts=8,"
       "top_k=2 --tp 2 --sp --ep 8 --gpus 8 -o {out}",
       E + "'--ep': ep 8 does not divide dp 4 × cp 1 = 4 ranks\n"},
      {"option_ep_with_tp_without_sp", {},
       "predict --cluster dgx-h100-ndr --nodes 1 --model decoder:layers=2,hidden=64,heads=4,ffn=128,vocab=100,seq=16,experts=8,"
       "top_k=2 --tp 2 --ep 4 --gpus 8 -o {out}",
       E + "'--sp': ep 4 with tp 2 needs sequence parallelism (sp), as Megatron-Core requires of a mixture of experts under "
           "tensor parallelism\n"},
      // eq. P26b: the first and last stages' blocks
      {"option_first_stage_blocks_not_dividing", {},
       "predict --cluster dgx-h100-ndr --nodes 1 --model decoder:layers=8,hidden=64,heads=4,ffn=128,vocab=100,seq=16 --pp 4 "
       "--num-layers-in-first-pipeline-stage 3 --gpus 8 -o {out}",
       E + "'--num-layers-in-first-pipeline-stage': the 5 blocks left of 8 do not split evenly over the other 3 stages\n"},
      {"framework_last_stage_blocks_zero", {{"f.yaml", std::string(kFramework) + "parallel: {num_layers_in_last_pipeline_stage: 0}\n"}},
       kCmdFramework, E + "{dir}/f.yaml:7:47: 'parallel.num_layers_in_last_pipeline_stage': must be at least 1, got 0\n"},
      // eq. P24: a capacity factor, padding to it, a per-expert load spread
      {"framework_moe_capacity_factor_zero", {{"f.yaml", std::string(kFramework) + "parallel: {moe_expert_capacity_factor: 0}\n"}},
       kCmdFramework, E + "{dir}/f.yaml:7:40: 'parallel.moe_expert_capacity_factor': must be a finite number above 0, got 0\n"},
      {"framework_moe_pad_without_capacity", {{"f.yaml", std::string(kFramework) + "parallel: {moe_pad_expert_input_to_capacity: true}\n"}},
       kCmdFramework,
       E + "{dir}/f.yaml:7:46: 'parallel.moe_pad_expert_input_to_capacity': padding to capacity needs a capacity factor "
           "(moe_expert_capacity_factor)\n"},
      {"framework_moe_load_cv_negative", {{"f.yaml", std::string(kFramework) + "parallel: {moe_expert_load_cv: -0.2}\n"}},
       kCmdFramework,
       E + "{dir}/f.yaml:7:32: 'parallel.moe_expert_load_cv': the per-expert load spread must be a finite number of at least 0, "
           "got -0.2\n"},
      {"option_moe_capacity_factor_zero", {},
       "predict --cluster dgx-h100-ndr --nodes 1 --model decoder:layers=2,hidden=64,heads=4,ffn=128,vocab=100,seq=16,experts=8,"
       "top_k=2 --ep 8 --gpus 8 --moe-expert-capacity-factor 0 -o {out}",
       E + "'--moe-expert-capacity-factor': must be a finite number above 0, got 0\n"},
      {"option_moe_pad_without_capacity", {},
       "predict --cluster dgx-h100-ndr --nodes 1 --model decoder:layers=2,hidden=64,heads=4,ffn=128,vocab=100,seq=16,experts=8,"
       "top_k=2 --ep 8 --gpus 8 --moe-pad-expert-input-to-capacity -o {out}",
       E + "'--moe-pad-expert-input-to-capacity': padding to capacity needs a capacity factor (moe_expert_capacity_factor)\n"},
      {"option_moe_load_cv_beside_imbalance", {},
       "predict --cluster dgx-h100-ndr --nodes 1 --model decoder:layers=2,hidden=64,heads=4,ffn=128,vocab=100,seq=16,experts=8,"
       "top_k=2 --ep 8 --gpus 8 --moe-expert-load-cv 0.3 --moe-imbalance 1.2 -o {out}",
       E + "'--moe-expert-load-cv': give the per-expert load spread (0.3) or the routing imbalance (1.2), not both\n"},
      {"option_moe_capacity_factor_not_a_number", {},
       "predict --cluster dgx-h100-ndr --nodes 1 --model decoder:layers=2,hidden=64,heads=4,ffn=128,vocab=100,seq=16,experts=8,"
       "top_k=2 --ep 8 --gpus 8 --moe-expert-capacity-factor lots -o {out}",
       E + "'--moe-expert-capacity-factor': 'lots' is not a number\n"},
      {"option_checkpointing_mode", {}, "predict --checkpointing=everything -o {out}",
       E + "'--checkpointing': unknown mode 'everything' (expected sqrt, none, full, selective, op, or full:FRACTION)\n"},
      {"option_checkpointing_fraction", {}, "predict --checkpointing=full:0 -o {out}",
       E + "'--checkpointing': the fraction of blocks in 'full:0' must lie in (0, 1]\n"},
      {"option_model_show_precision_the_gpu_lacks", {}, "model show alexnet --gpu p40 --precision bf16 -o {out}",
       E + "'--precision': the Tesla P40 has no bf16 mode (it needs bf16 math, Ampere or newer)\n", "{mini}"},
      {"option_zero_accumulate", {}, "predict --accumulate 0 -o {out}",
       E + "'--accumulate': the number of passes per update must be at least 1, got 0\n"},
      {"option_flash_attention_in_fp32", {}, "predict --cluster dgx-a100 --model gpt2 --attention flash -o {out}",
       E + "'--attention': FlashAttention runs in fp16 or bf16 on Ampere or newer GPUs, not in fp32 on the A100 SXM4 40 GB\n"},
      {"option_unknown_memory_format", {}, "predict --memory-format chwn -o {out}",
       E + "'--memory-format': unknown memory format 'chwn' (nchw or nhwc)\n"},
      {"option_unknown_attention", {}, "predict --attention fused -o {out}",
       E + "'--attention': unknown attention kernel 'fused' (expected eager, flash, memory_efficient or sdpa)\n"},
      {"option_unknown_optimizer", {}, "predict --cluster tiny --model alexnet --optimizer rmsprop -o {out}",
       E + "'--optimizer': unknown optimizer 'rmsprop' (expected sgd, momentum, adam, adamw, lamb)\n", "{mini}"},
      {"option_seq_len_on_an_image_model", {}, "predict --cluster tiny --model alexnet --seq-len 128 -o {out}",
       E + "'--seq-len': 'alexnet' takes images, not token ids: use --image-size\n", "{mini}"},
      {"fit_throughput_not_a_number", {{"m.csv", "gpu,gpus,precision,model,global_batch,samples_per_s\np40,1,fp32,alexnet,128,fast\n"}},
       "calibrate fit {dir}/m.csv -o {out}", E + "{dir}/m.csv:2:24: 'samples_per_s': 'fast' is not a positive throughput in samples/s\n",
       "{mini}"},
      {"fit_unknown_gpu", {{"m.csv", "gpu,gpus,precision,model,global_batch,samples_per_s\nv200,1,fp32,alexnet,128,10\n"}},
       "calibrate fit {dir}/m.csv -o {out}", E + "{dir}/m.csv:2:1: 'gpu': unknown GPU 'v200' (known: p40, v100-sxm2)\n", "{mini}"},
      {"fit_unknown_memory_format",
       {{"m.csv", "gpu,gpus,precision,model,global_batch,samples_per_s,memory_format\np40,1,fp32,alexnet,128,10,hwcn\n"}},
       "calibrate fit {dir}/m.csv -o {out}", E + "{dir}/m.csv:2:27: 'memory_format': unknown memory format 'hwcn' (nchw or nhwc)\n",
       "{mini}"},
      {"fit_option_unknown_memory_format",
       {{"m.csv", "gpu,gpus,precision,model,global_batch,samples_per_s\np40,1,fp32,alexnet,128,10\n"}},
       "calibrate fit {dir}/m.csv --memory-format chwn -o {out}",
       E + "'--memory-format': unknown memory format 'chwn' (nchw or nhwc)\n", "{mini}"},
      {"fit_fixed_unknown_parameter",
       {{"m.csv", "gpu,gpus,precision,model,global_batch,samples_per_s\np40,1,fp32,alexnet,128,10\n"}},
       "calibrate fit {dir}/m.csv --fixed kernel_overhead,winograd -o {out}",
       E + "'--fixed': 'winograd' is not a fitted parameter (tensor_efficiency, vector_efficiency, conv_efficiency, "
           "memory_efficiency, kernel_overhead, operand_feed, or all)\n", "{mini}"},
      {"fit_strict_fp32_file_not_measured",
       {{"m.csv", "gpu,gpus,precision,model,global_batch,samples_per_s\np40,1,fp32,alexnet,128,10\n"}},
       "calibrate fit {dir}/m.csv --fp32-is-fp32-in {dir}/n.csv -o {out}",
       E + "'--fp32-is-fp32-in': '{dir}/n.csv' is not one of the measurement files ({dir}/m.csv)\n", "{mini}"},
      {"fit_strict_fp32_twice",
       {{"m.csv", "gpu,gpus,precision,model,global_batch,samples_per_s\np40,1,fp32,alexnet,128,10\n"}},
       "calibrate fit {dir}/m.csv --fp32-is-fp32 --fp32-is-fp32-in {dir}/m.csv -o {out}",
       E + "'--fp32-is-fp32-in': --fp32-is-fp32 already says it of every file: give one or the other\n", "{mini}"},
      {"compute_params_norm_rate_zero", {{"p.yaml", "defaults: {nchw_norm_rate: 0}\n"}},
       "model show {src}/models/alexnet.yaml --gpu p40 --compute-params {dir}/p.yaml -o {out}",
       E + "{dir}/p.yaml:1:28: 'defaults.nchw_norm_rate': a batch norm's element passes per SM per clock lie in (0, 64]\n",
       "{mini}"},
      {"fit_unknown_framework",
       {{"m.csv", "gpu,gpus,precision,model,global_batch,samples_per_s\np40,1,fp32,alexnet,128,10\n"}},
       "calibrate fit {dir}/m.csv --framework horovod -o {out}",
       E + "'--framework': unknown framework 'horovod' (known: caffe-mpi, cntk)\n", "{mini}"},
      {"fit_no_batch_column", {{"m.csv", "gpu,gpus,precision,model,samples_per_s\np40,1,fp32,alexnet,10\n"}},
       "calibrate fit {dir}/m.csv -o {out}", E + "{dir}/m.csv:1:1: 'global_batch': the header names neither global_batch nor batch_per_gpu\n",
       "{mini}"},
      // Issue 35: the parameters and the report go in place together or not at all, so a report that cannot be
      // written (here a directory: the output folder, which must stay empty) leaves no parameters file either.
      {"fit_report_is_a_directory", {{"m.csv", "gpu,gpus,precision,model,global_batch,samples_per_s\np40,1,fp32,alexnet,128,10\n"}},
       "calibrate fit {dir}/m.csv -o {out} --report {outdir}", E + "{outdir}: cannot write output file: is a directory\n",
       "{mini}"},
      {"fit_report_is_the_parameters_file",
       {{"m.csv", "gpu,gpus,precision,model,global_batch,samples_per_s\np40,1,fp32,alexnet,128,10\n"}},
       "calibrate fit {dir}/m.csv -o {out} --report {out}",
       E + "'--report': '{out}' is also the parameters' file (-o): give the report another file\n", "{mini}"},
      {"option_unknown_model", {}, "predict --cluster tiny --model resnet51 -o {out}",
       E + "'--model': unknown model 'resnet51' (known: alexnet)\n", "{mini}"},
      {"option_missing_profile", {}, "predict --profile {dir}/p.yaml -o {out}",
       E + "{dir}/p.yaml: '--profile': cannot open file (no such file)\n"},
      {"option_missing_capture", {}, "topo import nvidia-smi {dir}/smi.txt -o {out}",
       E + "{dir}/smi.txt: cannot open file (no such file)\n"},
      {"option_collective_op", {}, "collective --cluster dgx-a100 --gpus 8 --op gather --bytes 1MiB -o {out}",
       E + "'--op': unknown collective 'gather' (expected one of: allreduce, allgather, reducescatter, broadcast, reduce)\n"},
      {"option_collective_sweep", {}, "collective --cluster dgx-a100 --gpus 8 --sweep 1GiB:1MiB -o {out}",
       E + "'--sweep': MAX is smaller than MIN\n"},
      {"option_collective_gpus_per_thread", {}, "collective --cluster dgx-a100 --gpus 8 --gpus-per-thread 9 --bytes 8B -o {out}",
       E + "'--gpus-per-thread': 9 GPUs per thread: give 1 to the 8 GPUs of a node\n"},
      {"option_collective_algo", {}, "collective --cluster dgx-a100 --gpus 8 --algo Ring --bytes 1MiB -o {out}",
       E + "'--algo': unknown algorithm 'Ring' (expected one of: ring, tree, nvls, nvls_tree, collnet_direct, collnet_chain, pat)\n"},
      {"option_collective_proto", {}, "collective --cluster dgx-a100 --gpus 8 --proto ll64 --bytes 1MiB -o {out}",
       E + "'--proto': unknown protocol 'll64' (expected one of: ll, ll128, simple)\n"},
      {"option_collective_algo_nccl_cannot_run", {}, "collective --cluster dgx-a100 --gpus 8 --algo nvls --bytes 1MiB -o {out}",
       E + "'--algo': nvls cannot run allreduce on 8 GPUs of 'dgx-a100': NVLink SHARP needs NVSwitches and Hopper or newer GPUs, "
           "which this cluster does not have\n"},
      {"option_collective_tree_allgather", {}, "collective --cluster dgx-a100 --gpus 8 --op allgather --algo tree --bytes 1MiB -o {out}",
       E + "'--algo': tree cannot run allgather on 8 GPUs of 'dgx-a100': NCCL runs tree for all-reduce only\n"},
      {"option_collective_collnet_without_sharp", {}, "collective --cluster dgx-a100-hdr --gpus 16 --algo collnet_direct --bytes 1MiB -o {out}",
       E + "'--algo': collnet_direct cannot run allreduce on 16 GPUs of 'dgx-a100-hdr': collnet_direct needs InfiniBand switches "
           "that reduce (SHARP; a cluster's fabric: {sharp: true}), which this cluster's fabric does not have\n"},
      {"option_collective_ll128_over_pcie", {}, "collective --cluster exxact-ts4-rtx2080ti --gpus 8 --proto ll128 --bytes 1MiB -o {out}",
       E + "'--proto': ll128 cannot run allreduce on 8 GPUs of 'exxact-ts4-rtx2080ti': NCCL runs LL128 only over NVLink inside a "
           "node (at most PXB to a NIC) on Volta or newer GPUs\n"},
      {"option_straggler_speed", {}, "simulate --gpus 4 --speed 3=0 -o {out}",
       E + "'--speed': '3=0': the speed factor must be a finite number > 0\n"},
      {"option_explain_target", {}, "explain --gpus 8 --target 150% -o {out}",
       E + "'--target': '150%' is not an efficiency in (0, 100%]\n"},
      {"option_explain_two_counts", {}, "explain --gpus 4,8 -o {out}", E + "'--gpus': explain takes one GPU count\n"},
      {"option_layout_with_a_parameter_server", {},
       "predict --cluster dgx-h100-ndr --nodes 1 --model decoder:layers=8,hidden=64,heads=4,ffn=128,vocab=100,seq=16 "
       "--framework mxnet --tp 2 --gpus 8 -o {out}",
       E + "'--framework': 'mxnet' aggregates by parameter_server; a model-parallel layout's gradients are all-reduced over "
           "its data-parallel group (eq. P5), which this framework does not do\n"},
      {"option_layout_with_optimizer_offload", {},
       "predict --cluster dgx-h100-ndr --nodes 1 --model decoder:layers=8,hidden=64,heads=4,ffn=128,vocab=100,seq=16 "
       "--framework deepspeed-zero3-offload --tp 2 --gpus 8 -o {out}",
       E + "'--framework': 'deepspeed-zero3-offload' offloads its optimiser to the CPU (eq. S9), which a model-parallel "
           "layout's step (eq. P13) does not model: only a layout of tp, pp, cp and ep 1 (data parallelism) takes it\n"},
      {"option_plan_parallel_with_a_parameter_server", {},
       "plan --parallel --cluster dgx-h100 --model gpt3-125m --gpus 8 --frameworks mxnet -o {out}",
       E + "'--frameworks': 'mxnet' aggregates by parameter_server; a model-parallel layout's gradients are all-reduced "
           "over its data-parallel group (eq. P5), which this framework does not do\n"},
      {"option_explain_target_of_a_layout", {},
       "explain --cluster dgx-h100-ndr --nodes 1 --model decoder:layers=8,hidden=64,heads=4,ffn=128,vocab=100,seq=16 --tp 2 "
       "--gpus 8 --target 0.9 -o {out}",
       E + "'--target': searches data-parallel changes (links, buckets, GPU counts); a model-parallel layout's alternatives "
           "are what plan --parallel ranks\n"},
      {"option_report_gpus", {}, "report --gpus 1,x -o {out}", E + "'--gpus': '1,x' is not a list of GPU counts ≥ 1 (e.g. 1,2,4,8)\n"},
      {"option_model_show_batch", {}, "model show alexnet --batch 0 -o {out}", E + "'--batch': the batch must be at least 1\n"},
      {"option_node_gpu", {}, "simulate --cluster tiny --model alexnet --framework cntk --gpus 2 --node-gpu 1=gtx9090 -o {out}",
       E + "'--node-gpu': unknown GPU 'gtx9090' (known: p40, v100-sxm2)\n", "{mini}"},
      {"option_fabric_without_speed", {}, "predict --cluster dgx2 --nodes 2 --fabric infiniband -o {out}",
       E + "'--fabric': 'infiniband' has no speed (expected KIND:SPEED[:COUNT], e.g. infiniband:200Gb/s:8)\n"},
      {"option_fabric_kind", {}, "predict --cluster dgx2 --nodes 2 --fabric tokenring:100Gb/s -o {out}",
       E + "'--fabric': 'tokenring:100Gb/s' names the network 'tokenring' (infiniband or ethernet) (expected KIND:SPEED[:COUNT], e.g. "
           "infiniband:200Gb/s:8)\n"},
      {"option_fabric_count", {}, "collective --cluster dgx2 --gpus 32 --fabric infiniband:100Gb/s:0 --bytes 1MiB -o {out}",
       E + "'--fabric': 'infiniband:100Gb/s:0' has the NIC count '0' (a whole number from 1 to 1024) (expected KIND:SPEED[:COUNT], e.g. "
           "infiniband:200Gb/s:8)\n"},
      {"option_nodes_without_fabric", {}, "predict --cluster dgx2 --nodes 4 --gpus 32 -o {out}",
       E + "'--nodes': 'dgx2' is one node with no network between nodes: say which with --fabric KIND:SPEED[:COUNT] (e.g. "
           "infiniband:100Gb/s:8)\n"},
      {"option_zero_nodes", {}, "predict --cluster dgx2 --nodes 0 -o {out}", E + "'--nodes': a cluster needs at least one node, got 0\n"},
      {"option_zero_gpus_per_node", {}, "predict --cluster dgx2 --gpus-per-node 0 -o {out}",
       E + "'--gpus-per-node': a job uses at least one GPU of each node\n"},
      {"option_gpus_per_node_beyond_the_node", {}, "predict --cluster gb200-nvl72 --gpus-per-node 80 -o {out}",
       E + "'--gpus-per-node': 'gb200-nvl72' has 72 GPUs a node; a job cannot use 80 of them\n"},
      {"option_import_gpu", {{"smi.txt", kSmi}}, "topo import nvidia-smi {dir}/smi.txt --gpu gtx9090 -o {out}",
       E + "'--gpu': unknown GPU 'gtx9090' (known: p40, v100-sxm2)\n", "{mini}"},
      {"option_import_cpu", {{"smi.txt", kSmi}}, "topo import nvidia-smi {dir}/smi.txt --cpu via -o {out}",
       E + "'--cpu': 'via' is not VENDOR[:MODEL] (intel, amd, power or arm; e.g. intel:skylake, intel:sapphire_rapids, amd)\n"},
      {"option_import_nodes_without_fabric", {{"smi.txt", kSmi}}, "topo import nvidia-smi {dir}/smi.txt --nodes 2 -o {out}",
       E + "'--nodes': a cluster of more than one node needs --fabric KIND:SPEED[:COUNT] (e.g. infiniband:200Gb/s)\n"},
      // issue 35: zero lengths and sizes, NaN, an empty list, a directory for a file
      {"option_zero_seq_len", {}, "predict --model gpt2 --seq-len 0 -o {out}", E + "'--seq-len': must be a whole number ≥ 1, got 0\n"},
      {"option_zero_image_size", {}, "predict --image-size 0 -o {out}", E + "'--image-size': must be a whole number ≥ 1, got 0\n"},
      {"option_sharding_stage_out_of_range", {}, "predict --zero 4 -o {out}",
       E + "'--zero': stage 4: a sharding stage is 0, 1, 2 or 3\n"},
      {"option_model_show_zero_seq_len", {}, "model show gpt2 --seq-len 0 -o {out}",
       E + "'--seq-len': must be a whole number ≥ 1, got 0\n"},
      {"option_jitter_cv_nan", {}, "predict --jitter-cv nan -o {out}",
       E + "'--jitter-cv': a coefficient of variation is a number ≥ 0 and < 1 (0.02 for 2 %), got nan\n"},
      {"option_sim_jitter_nan", {}, "simulate --gpus 2 --jitter nan -o {out}", E + "'--jitter': a jitter σ is a finite number ≥ 0, got nan\n"},
      {"option_speed_infinite", {}, "simulate --gpus 4 --speed 3=inf -o {out}",
       E + "'--speed': '3=inf': the speed factor must be a finite number > 0\n"},
      {"option_epochs_infinite", {}, "predict --epochs inf -o {out}", E + "'--epochs': the number of epochs must be a positive number, got inf\n"},
      {"option_empty_gpus", {}, "predict --gpus \"\" -o {out}", E + "'--gpus': '' is not a list of GPU counts ≥ 1 (e.g. 1,2,4,8)\n"},
      {"option_fabric_below_physical", {}, "predict --cluster dgx-a100 --nodes 2 --fabric infiniband:1e-300GB/s -o {out}",
       E + "'--fabric': 'infiniband:1e-300GB/s' has the speed '1e-300GB/s': '1e-300GB/s' is below 1 kB/s, slower than any real "
           "hardware (expected KIND:SPEED[:COUNT], e.g. infiniband:200Gb/s:8)\n"},
      // --gpus of which none can be placed (some can: the rest are answered, Cli.GpuCountsThatCannotBePlacedAreSkipped)
      {"option_gpus_none_in_whole_nodes", {}, "predict --cluster dgx-a100-hdr --gpus 12 -o {out}",
       E + "'--gpus': 12 GPUs do not fill whole nodes of 8 GPUs on cluster 'dgx-a100-hdr'\n"},
      {"option_output_is_a_directory", {}, "predict --gpus 1 -o {outdir}", E + "{dir}/out: cannot write output file: is a directory\n"},
      {"option_profile_is_a_directory", {{"p/keep", ""}}, "predict --profile {dir}/p/ -o {out}",
       E + "{dir}/p/: '--profile': cannot open file (it is a directory)\n"},
      {"option_log_is_a_directory", {{"all_reduce_perf.log/keep", ""}}, kCmdLog,
       E + "{dir}/all_reduce_perf.log: cannot open file (it is a directory)\n"},
      {"sweep_merge_same_part_twice", {{"p1.csv", std::string(kSweepHeader) + "shi-chu-p40,resnet50\n"}},
       "sweep merge {dir}/p1.csv {dir}/p1.csv -o {out}",
       E + "{dir}/p1.csv: the same part as {dir}/p1.csv (part 1 of the list, given again as part 2): each part once\n"},
      {"sweep_merge_copy_of_a_part", {{"p1.csv", std::string(kSweepHeader) + "shi-chu-p40,resnet50\n"},
                                      {"p2.csv", std::string(kSweepHeader) + "shi-chu-p40,resnet50\n"}},
       "sweep merge {dir}/p1.csv {dir}/p2.csv -o {out}",
       E + "{dir}/p2.csv: the same part as {dir}/p1.csv (part 1 of the list, given again as part 2): each part once\n"},
      // an NCCL_TOPO_FILE whose GPUs have no <gpu> element: the model is not guessed
      {"xml_gpus_by_class_alone", {{"topo.xml", "<system version=\"1\">\n  <cpu numaid=\"0\" arch=\"x86_64\">\n"
                                                "    <pci busid=\"0000:06:00.0\" class=\"0x030200\" link_speed=\"8 GT/s\" link_width=\"16\"/>\n"
                                                "  </cpu>\n</system>\n"}},
       kCmdXml, E + "'--gpu': {dir}/topo.xml places its GPUs by PCI class alone (no <gpu> element says which model): --gpu ID says "
                    "which (an id of topologies/gpus.yaml)\n"},
      {"option_reproduce_format", {}, "reproduce shi-chu-2018 --format xml -o {out}",
       E + "'--format': unknown format 'xml' (expected table, json or csv)\n"},
      // plan, plan --parallel and explain print a table or JSON (issue 35): csv is refused before any work
      {"option_plan_format", {}, "plan --cluster dgx-h100 --model gpt3-125m --gpus 8 --format xml -o {out}",
       E + "'--format': unknown format 'xml' (expected table or json)\n"},
      {"option_plan_parallel_format", {}, "plan --parallel --cluster dgx-h100 --model gpt3-125m --gpus 8 --format csv -o {out}",
       E + "'--format': unknown format 'csv' (expected table or json)\n"},
      {"option_explain_format", {}, "explain --cluster dgx1v --model resnet50 --gpus 8 --format jsonl -o {out}",
       E + "'--format': unknown format 'jsonl' (expected table or json)\n"},
      // collective and topo show print a table or JSON (issue 35, "JSON of every command")
      {"option_collective_format", {}, "collective --cluster dgx1v --gpus 8 --bytes 1MiB --format csv -o {out}",
       E + "'--format': unknown format 'csv' (expected table or json)\n"},
      {"option_topo_show_format", {}, "topo show dgx1v --format yaml -o {out}",
       E + "'--format': unknown format 'yaml' (expected table or json)\n"},
  };
  return rows;
}

std::string fill(std::string s, const fs::path& dir) {
  const std::pair<std::string, std::string> subs[] = {{"{out}", (dir / "out" / "result").string()},
                                                      {"{outdir}", (dir / "out").string()},
                                                      {"{dir}", dir.string()},
                                                      {"{src}", DLSCALE_SOURCE_DIR},
                                                      {"{mini}", mini_data_dir().string()}};
  for (const auto& [key, value] : subs)
    for (auto pos = s.find(key); pos != std::string::npos; pos = s.find(key, pos + value.size()))
      s.replace(pos, key.size(), value);
  return s;
}

/// Removes the rows' folders when the test program ends.
class CleanUp : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_dir(), ec);
  }
};
[[maybe_unused]] ::testing::Environment* const kCleanUp = ::testing::AddGlobalTestEnvironment(new CleanUp);

class Catalogue : public ::testing::TestWithParam<Row> {};

TEST_P(Catalogue, OneLineExitTwoNothingWritten) {
  const Row& row = GetParam();
  const fs::path dir = root_dir() / row.name;
  fs::remove_all(dir);
  fs::create_directories(dir / "out");
  for (const auto& [name, text] : row.files) write(dir / name, fill(text, dir));
  copy_compute_params(dir / "data");
  const std::string args = fill(row.args, dir);
  SCOPED_TRACE("dlscale " + args);
  test::RunResult r;
  {
    const test::DataDir data(fill(row.data, dir));
    r = run_cli(args);
  }
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err, fill(row.expected, dir));
  // -o FILE / --dir DIR: neither the file nor a temporary one next to it
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir / "out")) left.push_back(e.path().filename().string());
  EXPECT_TRUE(left.empty()) << "left in the output folder: " << ::testing::PrintToString(left);
}

INSTANTIATE_TEST_SUITE_P(BadInput, Catalogue, ::testing::ValuesIn(catalogue()),
                         [](const auto& param_info) { return param_info.param.name; });

TEST(BadInput, CatalogueHasSeventyRowsOrMoreAndUsesOutputFiles) {
  const auto rows = catalogue();
  EXPECT_GE(rows.size(), 70u);
  const auto with_output = std::count_if(rows.begin(), rows.end(), [](const Row& r) {
    return r.args.find("{out}") != std::string::npos || r.args.find("{outdir}") != std::string::npos;
  });
  EXPECT_EQ(static_cast<std::size_t>(with_output), rows.size());  // every command here writes a file when it succeeds
}

// Every base input above is valid, so each row's error comes from its edit. (The same commands as the
// rows, on the unedited inputs.)
TEST(BadInput, BaseInputsAreAccepted) {
  const fs::path dir = root_dir() / "base";
  fs::create_directories(dir / "out");
  struct Good {
    const char* file;
    const char* text;
    std::string args;
    std::string data = "";
  };
  const Good good[] = {
      {"c.yaml", kCluster, kCmdCluster},
      {"t.yaml", kTopo, kCmdTopo},
      {"data/topologies/gpus.yaml", kGpus, kCmdGpu, "{dir}/data"},
      {"m.yaml", kNet, kCmdNet},
      {"small.yaml", kArch, kCmdArch},
      {"f.yaml", kFramework, kCmdFramework},
      {"p.yaml", kProfile, kCmdProfile},
      {"k.yaml", kCalibration, kCmdCalibration},
      {"s.yaml", kSweep, kCmdSweep},
      {"r.yaml", kPaper, kCmdPaper},
      {"all_reduce_perf.log", kLog, kCmdLog},
      {"all_reduce_perf.log", kOldLog, kCmdLog},
      {"nv.json", kNvb, kCmdNvb},
      {"nv.json", kNvbText, kCmdNvb},
      {"smi.txt", kSmi, kCmdSmi},
      {"topo.xml", kXml, kCmdXml},
  };
  for (const auto& g : good) {
    write(dir / g.file, g.text);
    copy_compute_params(dir / "data");
    const std::string args = fill(g.args, dir);
    SCOPED_TRACE(args);
    test::RunResult r;
    {
      const test::DataDir data(fill(g.data, dir));
      r = run_cli(args);
    }
    EXPECT_EQ(r.status, 0) << r.err;
    for (const auto& e : fs::directory_iterator(dir / "out")) fs::remove_all(e.path());
  }
  const test::DataDir data(mini_data_dir().string());
  const auto r = run_cli("predict --cluster tiny --model alexnet --framework cntk --gpus 1,2");
  EXPECT_EQ(r.status, 0) << r.err;
}

// Layouts of real files (tests/data/real-inputs) that were once refused, each on the base inputs above:
// accepted now, with the same result where the layout is the only difference.
TEST(BadInput, RealLayoutsOnceRefusedAreAccepted) {
  const fs::path dir = root_dir() / "accepted";
  fs::create_directories(dir / "out");
  auto each_line = [](const std::string& text, const std::string& prefix) {
    std::string out;
    std::size_t b = 0;
    while (b < text.size()) {
      const auto e = text.find('\n', b);
      out += prefix + text.substr(b, e - b + 1);
      b = e + 1;
    }
    return out;
  };
  auto each_line_end = [](std::string text, const std::string& eol) {
    for (auto p = text.find('\n'); p != std::string::npos; p = text.find('\n', p + eol.size())) text.replace(p, 1, eol);
    return text;
  };
  std::string spaced = kSmi;  // a terminal copy: spaces for tabs
  std::replace(spaced.begin(), spaced.end(), '\t', ' ');
  const std::string numa = std::string("\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n") +
      "GPU0\t X \tNV2\tPIX\t0-19\t0\t\tN/A\n" + "GPU1\tNV2\t X \tPIX\t0-19\t0\t\tN/A\n" +
      "NIC0\tPIX\tPIX\t X \n\nLegend:\n\n  X    = Self\n\nNIC Legend:\n\n  NIC0: mlx5_0\n";
  const std::string zero_links =
      edit(edit(kXml, 3, "    <pci busid=\"0000:06:00.0\" class=\"0x030200\" link_speed=\"\" link_width=\"0\">"), 8,
           "    <pci busid=\"0000:07:00.0\" class=\"0x030200\" link_speed=\"\" link_width=\"0\">");
  const std::string size_zero = edit(
      kLog, 11,
      std::string(
          "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n") +
          "           0             0     float     sum      -1     6.36    0.00    0.00      0     6.40    0.00    0.00      0");
  const std::string info_inside = edit(kLog, 12,
                                       std::string("host1:100:100 [0] NCCL INFO Launch mode Parallel\n") +
                                           "     1048576        262144     float     sum      -1    50.00   20.97   31.46       "
                                           "0    50.00   20.97   31.46       0");
  // two pdsh hosts ran the same test; pdsh interleaves their lines
  auto interleave = [&](const std::string& a, const std::string& b) {
    std::string out;
    std::size_t i = 0, j = 0;
    while (i < a.size() || j < b.size()) {
      for (std::size_t* k : {&i, &j}) {
        const std::string& t = k == &i ? a : b;
        if (*k >= t.size()) continue;
        const auto e = t.find('\n', *k);
        out += t.substr(*k, e - *k + 1);
        *k = e + 1;
      }
    }
    return out;
  };
  std::string other_host = kLog;
  for (auto p = other_host.find("host1"); p != std::string::npos; p = other_host.find("host1")) other_host.replace(p, 5, "host2");
  // the same table swept in half first (nccl-tests -d all: half, then float), 1 MiB in 60 us in half:
  // 1048576 B / 60 us = 17.48 GB/s, x 1.5 = 26.21
  const std::string dtype_all = edit(kLog, 12,
                                     std::string("     1048576        524288      half     sum      -1    60.00   17.48   26.21  "
                                                 "     0    60.00   17.48   26.21       0\n") +
                                         "     1048576        262144     float     sum      -1    50.00   20.97   31.46       0  "
                                         "  50.00   20.97   31.46       0");
  // rank lines of the first nccl-tests (2017): no Pid; ranks 2 and 3 on a second host
  std::string pidless = kLog;
  for (int r = 0; r < 4; ++r)
    pidless = edit(pidless, 4 + r,
                   fmt::format("#   Rank {:2d} on {} device {:2d} [0x{:02x}] NVIDIA A100-SXM4-80GB", r, r < 2 ? "host1" : "host2",
                               r % 2, 7 + r));
  std::string display_class = kXml;
  for (auto p = display_class.find("0x030200"); p != std::string::npos; p = display_class.find("0x030200"))
    display_class.replace(p, 8, "0x038000");
  const std::string class_only = std::string(kXml).substr(0, std::string(kXml).find("    <pci")) +
      "    <pci busid=\"0000:06:00.0\" class=\"0x030200\" link_speed=\"8 GT/s\" link_width=\"16\"/>\n"
      "    <pci busid=\"0000:07:00.0\" class=\"0x030200\" link_speed=\"8 GT/s\" link_width=\"16\"/>\n"
      "    <pci busid=\"0000:08:00.0\" class=\"0x020700\" link_speed=\"8 GT/s\" link_width=\"16\"/>\n"
      "  </cpu>\n</system>\n";
  // two machines both named localhost, two GPUs each: devices 0 and 1 appear twice
  std::string localhost = kLog;
  for (int r = 0; r < 4; ++r)
    localhost = edit(localhost, 4 + r,
                     fmt::format("#  Rank {:2d} Group  0 Pid  100 on localhost device {:2d} [0x{:02x}] "
                                 "NVIDIA A100-SXM4-80GB",
                                 r, r % 2, 7 + r));
  struct Good {
    const char* name;
    const char* file;
    std::string text;
    std::string args;
    std::string expect;  // in the output
  };
  const Good good[] = {
      {"smi_space_separated", "smi.txt", spaced, kCmdSmi, "{a: gpu0, b: gpu1, kind: nvlink, count: 2}"},
      // nvidia-smi on a terminal underlines the header; a web copy may keep "[4m" without its ESC; CRLF line ends
      {"smi_underlined_header", "smi.txt", edit(kSmi, 1, "\t\x1b[4mGPU0\tGPU1\tmlx5_0\tCPU Affinity\x1b[0m"), kCmdSmi,
       "{a: gpu0, b: gpu1, kind: nvlink, count: 2}"},
      {"smi_underline_without_esc_crlf", "smi.txt",
       each_line_end(edit(kSmi, 1, "\t[4mGPU0\tGPU1\tmlx5_0\tCPU Affinity[0m"), "\r\n"), kCmdSmi,
       "{a: gpu0, b: gpu1, kind: nvlink, count: 2}"},
      {"smi_numa_columns_and_nic_legend", "smi.txt", numa, kCmdSmi, "{name: mlx5_0,"},
      // the matrix without its legend, then what the poster ran next: nvidia-smi -L; another host's capture
      {"smi_then_nvidia_smi_l", "smi.txt",
       drop(kSmi, 4, 5) +
           "$ nvidia-smi -L\nGPU 0: Tesla V100-SXM2-16GB (UUID: GPU-0)\nGPU 1: Tesla V100-SXM2-16GB (UUID: GPU-1)\n",
       kCmdSmi, "gpus_per_node: 2"},
      {"smi_utf8_byte_order_mark", "smi.txt", "\xEF\xBB\xBF" + std::string(kSmi), kCmdSmi, "gpus_per_node: 2"},
      {"smi_two_captures", "smi.txt", drop(kSmi, 4, 5) + "$ ssh node2 nvidia-smi topo -m\n" + kSmi, kCmdSmi, "gpus_per_node: 2"},
      {"smi_gpu_and_cpu_options", "smi.txt", kSmi, kCmdSmi + " --gpu v100-sxm2 --cpu intel:skylake", "model: skylake"},
      {"smi_two_nodes", "smi.txt", kSmi, kCmdSmi + " --nodes 2 --fabric infiniband:100Gb/s", "nodes: 2"},
      {"xml_empty_link_attributes", "topo.xml", zero_links, kCmdXml, "generation: 3, lanes: 16"},
      // dev is the NVML index: a job on GPUs 0 and 5 of a node dumps dev 0 and 5
      {"xml_gpus_numbered_by_nvml", "topo.xml", edit(kXml, 9, "      <gpu dev=\"5\" sm=\"70\" rank=\"1\" gdr=\"1\">"), kCmdXml,
       "{a: gpu0, b: gpu1, kind: nvlink, count: 2}"},
      // a NIC whose speed the device did not give (speed="0"): the default speed, said in the file
      {"xml_net_speed_zero", "topo.xml",
       edit(kXml, 13,
            "    <nic>\n      <net name=\"eth0\" dev=\"0\" speed=\"0\" port=\"0\" guid=\"0x0\" maxconn=\"65536\" gdr=\"0\"/>\n"
            "    </nic>\n  </cpu>"),
       kCmdXml, "{name: eth0, speed: \"100 Gb/s\"}   # speed not in the capture"},
      // GPUs of PCI class 0x0380 (display controller), NVLinked to each other
      {"xml_display_class_gpus", "topo.xml", display_class, kCmdXml, "{a: gpu0, b: gpu1, kind: nvlink, count: 2}"},
      // an NCCL_TOPO_FILE for a VM: GPUs and NICs by their PCI class alone (which GPU, --gpu says)
      {"xml_gpus_by_pci_class_alone", "topo.xml", class_only, kCmdXml + " --gpu v100-sxm2",
       "{a: nic0, b: cpu0, kind: pcie, generation: 3, lanes: 16}"},
      {"log_mpirun_tag_output", "all_reduce_perf.log", each_line(kLog, "[1,0]<stdout>:"), kCmdLog, "gpus: 4"},
      {"log_srun_label", "all_reduce_perf.log", each_line(kLog, "0: "), kCmdLog, "gpus: 4"},
      {"log_indented", "all_reduce_perf.log", each_line(kLog, "    "), kCmdLog, "gpus: 4"},
      {"log_nccl_info_inside_the_table", "all_reduce_perf.log", info_inside, kCmdLog, "gpus: 4"},
      {"log_size_zero_row", "all_reduce_perf.log", size_zero, kCmdLog, "gpus: 4"},
      {"log_named_by_its_columns", "bench.log", kLog, "calibrate import nccl-tests {dir}/bench.log -o {out}", "op: allreduce"},
      {"log_gpus_nodes_options", "all_reduce_perf.log", kLog, kCmdLog + " --nodes 2", "nodes: 2"},
      // the 4 MiB row is the last of the sweep (maxBytes 4194304): complete without its trailer
      {"log_without_its_trailer", "all_reduce_perf.log", drop(kLog, 15, 16), kCmdLog, "{size: \"4194304 B\", time: \"140 us\""},
      // no '# nThread' line (no maxBytes) and no '# Avg bus bandwidth', but '# Out of bounds values' after the rows
      {"log_without_its_average_line", "all_reduce_perf.log", drop(drop(kLog, 16, 16), 1, 1), kCmdLog,
       "{size: \"4194304 B\", time: \"140 us\""},
      {"log_pdsh_host_prefix", "all_reduce_perf.log", each_line(kLog, "gpu-node-01: "), kCmdLog, "gpus: 4"},
      {"log_pdsh_two_hosts_interleaved", "all_reduce_perf.log",
       interleave(each_line(kLog, "gpu-node-01: "), each_line(other_host, "gpu-node-02: ")), kCmdLog, "nodes: 1"},
      {"log_srun_label_padded", "all_reduce_perf.log", each_line(kLog, " 0: "), kCmdLog, "gpus: 4"},
      {"log_mpich_rank_label", "all_reduce_perf.log", each_line(kLog, "[0] "), kCmdLog, "gpus: 4"},
      {"log_alltoall_beside_all_reduce", "all.log",
       "$ ./build/all_reduce_perf -b 1M -e 4M -f 2 -g 4\n" + std::string(kLog) +
           "$ ./build/alltoall_perf -b 1M -e 4M -f 2 -g 4\n" + kLog,
       "calibrate import nccl-tests {dir}/all.log -o {out}", "op: allreduce"},
      {"log_two_data_types", "all_reduce_perf.log", dtype_all, kCmdLog, "{size: \"1048576 B\", time: \"50 us\""},
      {"log_rank_lines_without_pid", "all_reduce_perf.log", pidless, kCmdLog, "nodes: 2"},
      // two machines both named localhost: ranks 2 and 3 take devices 0 and 1 again
      {"log_hosts_that_share_a_name", "all_reduce_perf.log", localhost, kCmdLog, "nodes: 2"},
      // NCCL INFO of a container whose host name starts with a digit, inside the table
      {"log_info_line_of_a_digit_host", "all_reduce_perf.log",
       edit(kLog, 12,
            std::string("9a417caaf03b:746:746 [0] NCCL INFO Launch mode Parallel\n") +
                "     1048576        262144     float     sum      -1    50.00   20.97   31.46       0    50.00   20.97   31.46  "
                "     0"),
       kCmdLog, "gpus: 4"},
      // nccl-tests built without MPI under mpirun: every rank runs (and prints) the test itself
      {"log_every_rank_ran_the_test", "all_reduce_perf.log",
       interleave(each_line(kLog, "[1,0]<stdout>:"), each_line(kLog, "[1,1]<stdout>:")), kCmdLog, "gpus: 4"},
      {"nvbandwidth_between_warnings", "nv.json",
       std::string("WARNING: Failed to acquire log file lock {\n") + kNvb + "WARNING: }}}\n", kCmdNvb, "h2d_pinned"},
      // nvbandwidth without -j (v0.7: 512 MiB): 536870912 B / 53.69 GB/s = 9999.458 us
      {"nvbandwidth_text_output", "nv.json", kNvbText, kCmdNvb,
       "{size: \"536870912 B\", time: \"9999.45822 us\", bandwidth: \"53.69 GB/s\"}"},
      {"nvbandwidth_text_output_crlf", "nv.json", each_line_end(kNvbText, "\r\n"), kCmdNvb, "bandwidth: \"53.69 GB/s\"}"},
      {"collective_bare_byte_count", "", "", "collective --cluster dgx-a100 --gpus 8 --bytes 1073741824 -o {out}", "1073741824"},
      {"collective_nccl_tests_suffix", "", "", "collective --cluster dgx-a100 --gpus 8 --sweep 8:1G -o {out}", "1073741824"},
      {"predict_composed_cluster", "", "",
       "predict --cluster dgx2 --nodes 4 --fabric infiniband:100Gb/s:8 --model alexnet --gpus 16,32,64 --no-train -o {out}",
       "   64     4"},
  };
  for (const auto& g : good) {
    SCOPED_TRACE(g.name);
    if (*g.file) write(dir / g.file, g.text);
    const auto r = run_cli(fill(g.args, dir));
    EXPECT_EQ(r.status, 0) << r.err;
    const fs::path out = dir / "out" / "result";
    EXPECT_NE(test::slurp(out).find(g.expect), std::string::npos) << test::slurp(out);
    for (const auto& e : fs::directory_iterator(dir / "out")) fs::remove_all(e.path());
  }
}

}  // namespace
}  // namespace dlscale
