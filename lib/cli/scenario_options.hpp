// Options shared by the commands that build a Scenario (predict, and later simulate, explain, report).
#pragma once

#include <CLI/CLI.hpp>

#include <span>
#include <string>
#include <vector>

#include "cli/parallel_options.hpp"
#include "dlscale/cluster.hpp"
#include "dlscale/predict.hpp"
#include "dlscale/report.hpp"

namespace dlscale::cli {

/// --nodes N and --fabric KIND:SPEED[:COUNT]: any single-node cluster file (shipped or imported) made
/// into N nodes on that network (docs/topology.md, "Composing clusters on the command line").
struct ScaleOptions {
  int nodes = 0;          // 0: the file's
  std::string fabric;     // empty: the file's
  std::string gpu;        // --gpu ID|FILE; empty: the file's
  int gpus_per_node = 0;  // --gpus-per-node K: a job on K GPUs of each node; 0: all of them
};
/// --nodes (with_nodes), --fabric, and --gpus-per-node (with_job_gpus: the commands that predict a job on them).
void add_scale_options(CLI::App& cmd, ScaleOptions& o, bool with_nodes = true, bool with_job_gpus = false);
/// --gpu ID|FILE: every GPU of the cluster replaced (a catalogue id or a YAML file with one GPU's keys).
void add_gpu_option(CLI::App& cmd, ScaleOptions& o);
/// The GPU a --gpu value names (load_gpu); an unknown name or missing file is a UsageError naming --gpu,
/// an error inside a GPU file keeps its file:line:col.
GpuSpec gpu_option(const std::string& value);
/// The options as overrides for load_cluster; a malformed --fabric or --nodes < 1 is a UsageError.
ClusterOverrides cluster_overrides(const ScaleOptions& o);

struct ScenarioOptions {
  std::string cluster;
  std::string model;
  std::string framework;
  std::string profile;
  int batch = 0;                   // --batch; not given: from the profile, else the default scenario's
  bool batch_given = false;        // --batch was on the command line (so that --batch 0 is an error, not the default)
  std::string gpus;                // --gpus; empty: default_gpu_counts(cluster)
  std::string precision;           // --precision; empty: the framework's (default_precision), else fp32
  std::string fp8_scaling;         // --fp8-scaling tensorwise|rowwise|mxfp8; empty: tensorwise
  bool fp8_all_gather = false;     // --fp8-all-gather: FSDP gathers the fp8 linear maps' weights in fp8 (eq. S12)
  std::string optimizer;           // --optimizer; empty: momentum for image models, adamw for token models
  bool unfused_optimizer = false;  // --unfused-optimizer: --optimizer-impl for_loop
  std::string optimizer_impl;      // --optimizer-impl; empty: the framework's, else fused
  int accumulate = 1;              // --accumulate K
  bool checkpointing = false;      // --checkpointing given
  std::string checkpointing_mode;  // its value: "" or sqrt (⌈√L⌉ segments), full[:FRACTION], selective, op
  bool compiled = false;           // --compile: element-wise chains fused (torch.compile)
  std::string attention;           // --attention eager|flash; empty: the framework's
  std::string memory_format;       // --memory-format nchw|nhwc; empty: the framework's
  bool offload_optimizer = false;  // --offload-optimizer: the sharded optimiser state in host memory (eq. S9)
  int zero = kNotGiven;            // --zero STAGE: the sharding stage in place of the framework's (not given: the file's)
  double jitter_cv = -1.0;         // --jitter-cv; < 0: the framework file's jitter_cv
  int seq_len = 0;                 // --seq-len: rebuild a token model from its architecture at this length
  int image_size = 0;              // --image-size: rebuild an image model at this height and width
  std::string calibration;         // --calibration FILE (docs/calibration.md)
  std::string compute_params;      // --compute-params FILE: kernel-model parameters (calibrate fit's output)
  bool explain_sources = false;    // --explain-sources: say on stderr where every number came from
  bool sources_in_json = false;    // set by a command printing JSON: the sources go into its document, not stderr
  ScaleOptions scale;              // --nodes, --fabric
  bool memory_warning = true;      // warn on stderr when the step does not fit (plan searches instead)
  // --no-offload-optimizer: the framework's offloaded state back on the GPU; --shard-group N|node|all: the sharding's
  // group (eq. S1, P40; empty: the framework file's)
  bool no_offload_optimizer = false;
  std::string shard_group;
  // the input pipeline (docs/input-formats.md, "Input pipeline"): replace the cluster's `input:` section's values
  std::string data;   // --data synthetic|ram|nvme|nfs
  std::string epoch;  // --epoch first|later
  static constexpr int kNotGiven = -2147483647 - 1;
  int cpu_cores = kNotGiven;       // --cpu-cores N (not given: the cluster file's)
  int loader_workers = kNotGiven;  // --loader-workers N per GPU (not given: the cluster file's; 0: every core)
  ParallelOptions parallel;        // --tp, --pp, --cp, ... (lib/cli/parallel_options.cpp)
};

/// The embedded default scenario: ResNet-50 at batch 32 with Caffe-MPI on the Shi & Chu P40 cluster,
/// 1-16 GPUs (the paper's own configuration).
inline constexpr const char* kDefaultCluster = "shi-chu-p40";
inline constexpr const char* kDefaultModel = "resnet50";
inline constexpr const char* kDefaultFramework = "caffe-mpi";
inline constexpr int kDefaultBatch = 32;

/// --jitter-cv CV into `jitter_cv` (ScenarioOptions::jitter_cv; plan's frameworks take it too).
void add_jitter_option(CLI::App& cmd, double& jitter_cv);
/// `NAME N` into `target`, a length or size that must be at least 1 (--seq-len, --image-size): a 0 given is
/// an error naming the option, not the "not given" that the default 0 means.
inline constexpr const char* kSeqLenHelp = "Rebuild a token model from models/arch/ at this sequence length";
inline constexpr const char* kImageSizeHelp = "Rebuild an image model from models/arch/ at this height and width";
void add_size_option(CLI::App& cmd, const std::string& name, int& target, const std::string& help, const std::string& type);
void add_scenario_options(CLI::App& cmd, ScenarioOptions& o);
/// --fp8-scaling's value (tensorwise, rowwise or mxfp8); a UsageError naming the option otherwise.
Fp8Scaling fp8_scaling_option(const std::string& text);
/// Loads every input named by the options; all errors are InputError/UsageError.
Scenario build_scenario(const ScenarioOptions& o, RunInfo& info);
std::vector<int> parse_gpu_list(const std::string& text);
/// The counts of `counts` that the predictor's cluster can place (Predictor::place); the others are said on
/// one deferred warning line with the reason for each. None placeable: a UsageError naming --gpus.
std::vector<int> placeable_gpu_counts(const Predictor& predictor, std::span<const int> counts);
/// The GPU counts without --gpus: 1, 2, 4, 8, 16 and one node, those the cluster holds (more than a node only in
/// whole nodes), with the whole cluster when it has 16 GPUs or fewer: 1,2,4,8,16 on the Shi & Chu cluster,
/// 1,2,4,8 on one 8-GPU server, 1,2,4,6 on one 6-GPU node.
std::vector<int> default_gpu_counts(const Cluster& cluster);
/// A sharded strategy's memory depends on the GPU count, so build_scenario cannot warn up front: once the
/// predictions exist, one warning on stderr names the GPU counts whose step does not fit the GPU (or, with
/// CPU offload, the node's host memory).
void warn_memory_by_gpu_count(const Scenario& sc, std::span<const Prediction> preds);
/// --memory-format's value as a layout; UsageError naming the option otherwise (predict's family, model show).
TensorLayout memory_format_option(const std::string& text);
/// The help of --attention and --memory-format, shared by predict's family and model show.
inline constexpr const char* kAttentionHelp =
    "eager, flash (FlashAttention: fp16/bf16, Ampere and newer), memory_efficient or sdpa (PyTorch's dispatch: flash where "
    "it runs, else memory_efficient); default: the framework file's, else eager";
inline constexpr const char* kMemoryFormatHelp =
    "nchw or nhwc (channels_last): the layout of image activations; default: the framework file's, else nhwc";
/// --model with --seq-len/--image-size: the network rebuilt from its architecture at that input size.
/// `what` names the option (or positional) that gave the model, for an unknown name.
Network load_model(const std::string& model, int seq_len, int image_size, const char* what = "--model");
/// --calibration and --explain-sources (lib/cli/calibrate.cpp): measured curves and layer times into the
/// scenario, a calibration of another GPU refused; called by build_scenario.
void apply_calibration(const ScenarioOptions& o, Scenario& sc, RunInfo& info);

}  // namespace dlscale::cli
