#include "cli/scenario_options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <memory>

#include "cli/commands.hpp"
#include "dlscale/error.hpp"
#include "dlscale/format.hpp"
#include "dlscale/io.hpp"
#include "dlscale/kernels.hpp"
#include "dlscale/memory.hpp"
#include "dlscale/zoo.hpp"
#include "loaders/input_entry.hpp"

namespace dlscale::cli {

void add_scale_options(CLI::App& cmd, ScaleOptions& o, bool with_nodes, bool with_job_gpus) {
  if (with_nodes)
    cmd.add_option_function<int>(
           "--nodes", [&o](const int& v) { o.nodes = v == 0 ? -1 : v; },
           "Make the cluster N nodes (with --fabric for a single-node file)")
        ->type_name("N");
  if (with_job_gpus)
    cmd.add_option_function<int>(
           "--gpus-per-node", [&o](const int& v) { o.gpus_per_node = v < 1 ? -1 : v; },
           "A job on the first K GPUs of each node (64 of an NVL72 rack's 72): nodes of K GPUs, the graph what they "
           "reach")
        ->type_name("K");
  cmd.add_option("--fabric", o.fabric,
                 "The network between nodes, KIND:SPEED[:COUNT] NICs per node (e.g. infiniband:200Gb/s:8); "
                 "replaces the file's")
      ->type_name("KIND:SPEED[:COUNT]");
}

void add_gpu_option(CLI::App& cmd, ScaleOptions& o) {
  cmd.add_option("--gpu", o.gpu,
                 "Replace the cluster's GPU: an id of topologies/gpus.yaml, with @POWER for a power limit where the entry "
                 "documents one (b200@750W), or a YAML file with one GPU's keys (the links stay the file's)")
      ->type_name("ID|FILE");
}

GpuSpec gpu_option(const std::string& value) {
  try {
    return load_gpu(value);
  } catch (const InputError& e) {
    if (!e.where().file.empty()) throw;  // an error inside the GPU file or the catalogue keeps its place
    throw UsageError("--gpu", e.message());
  }
}

namespace {
FabricSpec fabric_option(const std::string& value) {
  try {
    return parse_fabric_spec(value);
  } catch (const InputError& e) {
    throw UsageError("--fabric", e.message());  // the library names the field, `fabric`
  }
}
}  // namespace

ClusterOverrides cluster_overrides(const ScaleOptions& o) {
  ClusterOverrides ov;
  if (o.nodes < 0)
    throw UsageError("--nodes", fmt::format("a cluster needs at least one node, got {}", o.nodes == -1 ? 0 : o.nodes));
  ov.nodes = o.nodes;
  if (o.gpus_per_node < 0) throw UsageError("--gpus-per-node", "a job uses at least one GPU of each node");
  ov.gpus_per_node = o.gpus_per_node;
  if (!o.fabric.empty()) ov.fabric = fabric_option(o.fabric);
  if (!o.gpu.empty()) ov.gpu = gpu_option(o.gpu);
  return ov;
}

void add_jitter_option(CLI::App& cmd, double& jitter_cv) {
  // A NaN passes every comparison's negation: without the test here it would read as "not given".
  cmd.add_option_function<double>(
         "--jitter-cv",
         [&jitter_cv](const double& v) {
           if (!(v >= 0.0 && v < 1.0))
             throw UsageError("--jitter-cv",
                              fmt::format("a coefficient of variation is a number ≥ 0 and < 1 (0.02 for 2 %), got {}", v));
           jitter_cv = v;
         },
         "Coefficient of variation of a GPU's compute time per iteration (replaces the framework's jitter_cv; "
         "0: no wait for the slowest GPU)")
      ->type_name("CV");
}

void add_size_option(CLI::App& cmd, const std::string& name, int& target, const std::string& help, const std::string& type) {
  cmd.add_option_function<int>(
         name,
         [&target, name](const int& v) {
           if (v < 1) throw UsageError(name, fmt::format("must be a whole number ≥ 1, got {}", v));
           target = v;
         },
         help)
      ->type_name(type);
}

namespace {
// --precision, --fp8-scaling and --fp8-all-gather (eq. K15, K15c, S12).
void add_precision_options(CLI::App& cmd, ScenarioOptions& o) {
  cmd.add_option("--precision", o.precision,
                 "fp32, tf32 (Ampere and newer), bf16 or fp16 (automatic mixed precision), fp8 (Hopper and newer: bf16 "
                 "with the transformer blocks' linear maps in fp8) (default: the framework's `precision:`, bf16 for "
                 "torchtitan, llm-foundry, megatron-core and nemo, fp16 where the GPU lacks bf16; else fp32)")
      ->type_name("NAME");
  cmd.add_option("--fp8-scaling", o.fp8_scaling,
                 "With --precision fp8: tensorwise (one scale a tensor, the default), rowwise (one scale a row, torchao's "
                 "rowwise recipe: the backward casts its operands again along the other axis) or mxfp8 (MX block scaling, "
                 "Blackwell only: one scale per 32 elements, cast along both axes as rowwise)")
      ->type_name("SCALING");
  cmd.add_flag("--fp8-all-gather", o.fp8_all_gather,
               "With --precision fp8, tensor-wise scaling and an FSDP (stage-3) framework: the weight shards of the fp8 "
               "linear maps cast to fp8 before their all-gather, which moves and holds them at 1 B (torchao's "
               "enable_fsdp_float8_all_gather with precompute_float8_dynamic_scale_for_fsdp)");
}
}  // namespace

namespace {
/// --zero, --offload-optimizer, --no-offload-optimizer and --shard-group: the framework's sharding changed.
void add_sharding_options(CLI::App& cmd, ScenarioOptions& o) {
  cmd.add_option("--zero", o.zero,
                 "Optimiser sharding stage in place of the framework's (ZeRO/FSDP): 0 replicated, 1 optimiser state "
                 "(Megatron's distributed optimiser), 2 and gradients, 3 and parameters; the rest of the framework's "
                 "sharding and its GEMM rate (eq. K16) kept (plan --parallel's rows print it)")
      ->type_name("STAGE");
  cmd.add_flag("--offload-optimizer", o.offload_optimizer,
               "CPU offload of a sharded framework's optimiser state (ZeRO-Offload): the step runs on the CPU");
  cmd.add_flag("--no-offload-optimizer", o.no_offload_optimizer,
               "The optimiser state on the GPU where the framework offloads it (deepspeed-zero2-offload, "
               "deepspeed-zero3-offload; plan --parallel's layouts with tp, pp, cp or ep above 1)");
  cmd.add_option("--shard-group", o.shard_group,
                 "GPUs a sharded framework shards over, the rest replicas (HSDP; eqs. S1, P40): N (data-parallel ranks "
                 "under a layout: dividing dp x cp, else the GPUs), node (a node's), all (default: the framework's)")
      ->type_name("N|node|all");
}
}  // namespace

void add_scenario_options(CLI::App& cmd, ScenarioOptions& o) {
  add_scale_options(cmd, o.scale, true, true);
  cmd.add_option("--cluster", o.cluster, "Cluster: a name in topologies/ or a YAML file")->type_name("NAME|FILE");
  add_gpu_option(cmd, o.scale);
  cmd.add_option("--model", o.model, "Network: a name in models/ or a YAML file")->type_name("NAME|FILE");
  cmd.add_option("--framework", o.framework, "Framework strategy: a name in models/frameworks/ or a YAML file")
      ->type_name("NAME|FILE");
  cmd.add_option_function<int>(
         "--batch",
         [&o](const int& v) {
           o.batch = v;
           o.batch_given = true;
         },
         "Samples per GPU per iteration (weak scaling; default 32, one sequence for a decoder language model)")
      ->type_name("M");
  cmd.add_option_function<std::string>(
         "--gpus",
         [&o](const std::string& v) {
           if (v.empty()) (void)parse_gpu_list(v);  // an empty list is an error, not the default counts
           o.gpus = v;
         },
         "GPU counts, comma-separated (default: 1,2,4,8,16 and one node, those the cluster holds in whole nodes, "
         "and the whole cluster up to 16)")
      ->type_name("LIST");
  cmd.add_option("--profile", o.profile, "Measured single-GPU phase times (and optional measured values at larger counts)")
      ->type_name("FILE");
  add_precision_options(cmd, o);
  cmd.add_option("--optimizer", o.optimizer,
                 "sgd, momentum, adam, adamw or lamb (default: momentum for image models, adamw for token models)")
      ->type_name("NAME");
  cmd.add_option("--optimizer-impl", o.optimizer_impl,
                 "fused (one kernel per update), foreach (torch.optim's default: a multi-tensor kernel per arithmetic "
                 "pass) or for_loop (a kernel per pass and tensor) (default: the framework's, else fused)")
      ->type_name("NAME");
  cmd.add_flag("--unfused-optimizer", o.unfused_optimizer, "Same as --optimizer-impl for_loop");
  cmd.add_option("--accumulate", o.accumulate,
                 "Gradient accumulation: K forward/backward passes per gradient exchange and update")
      ->type_name("K")
      ->capture_default_str();
  cmd.add_option_function<std::string>(
         "--checkpointing",
         [&o](const std::string& v) {
           o.checkpointing = true;
           o.checkpointing_mode = v;
         },
         "Activation checkpointing: the option alone (or sqrt) keeps sqrt(L) segment inputs and recomputes each segment; per "
         "transformer block: full[:FRACTION] (every block, or that fraction of them), selective (the attention core, "
         "Megatron-LM) or op (torchtitan's per-op SAC)")
      ->expected(0, 1)
      ->type_name("[MODE]");
  cmd.add_flag("--compile", o.compiled, "The framework compiles the step (torch.compile): element-wise chains fused");
  cmd.add_option("--attention", o.attention, kAttentionHelp)->type_name("KIND");
  cmd.add_option("--memory-format", o.memory_format, kMemoryFormatHelp)->type_name("LAYOUT");
  add_sharding_options(cmd, o);
  add_jitter_option(cmd, o.jitter_cv);
  add_size_option(cmd, "--seq-len", o.seq_len, kSeqLenHelp, "S");
  add_size_option(cmd, "--image-size", o.image_size, kImageSizeHelp, "PIXELS");
  cmd.add_option("--compute-params", o.compute_params,
                 "Kernel-model parameters (topologies/compute-params.yaml's schema; what `dlscale calibrate fit` writes)")
      ->type_name("FILE");
  cmd.add_option("--calibration", o.calibration, "Measured curves and layer times (dlscale-calibrate or calibrate import)")
      ->type_name("FILE");
  cmd.add_flag("--explain-sources", o.explain_sources,
               "Say which numbers came from where: on stderr, or with --format json as the document's \"sources\"");
  cmd.add_option("--data", o.data, "Where the samples come from: synthetic, ram (page cache), nvme or nfs")->type_name("SOURCE");
  cmd.add_option("--epoch", o.epoch, "first (read from storage) or later (page cache when the dataset fits in RAM)")
      ->type_name("first|later");
  cmd.add_option("--cpu-cores", o.cpu_cores, "CPU cores per node that decode input (the cluster's input.cores)")->type_name("N");
  cmd.add_option("--loader-workers", o.loader_workers, "Loader worker threads per GPU (0: every core of the node)")
      ->type_name("N");
  add_parallel_options(cmd, o.parallel);  // lib/cli/parallel_options.cpp
}

namespace {
/// --data, --epoch, --cpu-cores, --loader-workers on the cluster's input pipeline (a cluster without an
/// `input:` section gets one from its storage figures).
void apply_input_options(const ScenarioOptions& o, Cluster& c) {
  constexpr int unset = ScenarioOptions::kNotGiven;
  if (o.data.empty() && o.epoch.empty() && o.cpu_cores == unset && o.loader_workers == unset) return;
  if (o.cpu_cores != unset && o.cpu_cores < 1)
    throw UsageError("--cpu-cores", fmt::format("a node needs at least one CPU core, got {}", o.cpu_cores));
  if (o.loader_workers != unset && o.loader_workers < 0)
    throw UsageError("--loader-workers", fmt::format("a worker count cannot be negative, got {}", o.loader_workers));
  if (!o.epoch.empty() && o.epoch != "first" && o.epoch != "later")
    throw UsageError("--epoch", fmt::format("'{}' is not an epoch (first or later)", o.epoch));
  const bool had = c.input.has_value();
  if (!had) {
    c.input = InputPipeline{};
    default_storage(*c.input, c);
  }
  InputPipeline& p = *c.input;
  if (!o.data.empty()) p.data = data_source_from_string(o.data, "--data");
  if (!o.epoch.empty()) p.first_epoch = o.epoch == "first";
  if (o.cpu_cores != unset) p.cores = o.cpu_cores;
  if (o.loader_workers != unset) p.workers_per_gpu = o.loader_workers;
  if (p.data != DataSource::synthetic && p.dataset.empty())
    throw UsageError(!o.data.empty()                 ? "--data"
                         : o.cpu_cores != unset      ? "--cpu-cores"
                         : o.loader_workers != unset ? "--loader-workers"
                                                     : "--epoch",
                     fmt::format("cluster '{}' has no 'input:' section naming its dataset and CPU "
                                 "(docs/input-formats.md); only --data synthetic works without one",
                                 c.name));
  if (o.cpu_cores != unset && !(p.decode_mpix_per_core > 0.0) && p.data != DataSource::synthetic)
    throw UsageError("--cpu-cores", fmt::format("cluster '{}' gives no CPU decode rate (input.cpu or input.decode)", c.name));
  if (p.data == DataSource::nfs && !(p.nfs_aggregate > BytesPerSecond{}))
    throw UsageError("--data", fmt::format("cluster '{}' describes no network file system (input.nfs)", c.name));
}
}  // namespace

std::vector<int> parse_gpu_list(const std::string& text) {
  std::vector<int> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    int v = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || v < 1)
      throw UsageError("--gpus", fmt::format("'{}' is not a list of GPU counts ≥ 1 (e.g. 1,2,4,8)", text));
    out.push_back(v);
    start = end + 1;
  }
  return out;
}

std::vector<int> placeable_gpu_counts(const Predictor& predictor, std::span<const int> counts) {
  std::vector<int> out;
  std::vector<std::string> skipped;
  for (int g : counts) {
    try {
      (void)predictor.place(g);
      out.push_back(g);
    } catch (const InputError& e) {  // Predictor::place: "gpus"
      skipped.push_back(e.message());
    }
  }
  if (out.empty()) throw UsageError("--gpus", fmt::format("{}", fmt::join(skipped, "; ")));
  if (!skipped.empty())
    defer_note(
        fmt::format("warning: --gpus: skipped {} of {} counts: {}", skipped.size(), counts.size(), fmt::join(skipped, "; ")));
  return out;
}

std::vector<int> default_gpu_counts(const Cluster& cluster) {
  const int node = cluster.gpus_per_node, all = cluster.max_gpus();
  std::vector<int> out;
  for (int n : {1, 2, 4, 8, 16, node})
    if (n <= all && (n <= node || n % node == 0)) out.push_back(n);
  if (all <= 16) out.push_back(all);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Network load_model(const std::string& model, int seq_len, int image_size, const char* what) {
  if (is_decoder_spec(model)) {  // a decoder by its sizes (docs/models.md, "Decoder-only transformers")
    if (image_size != 0) throw UsageError("--image-size", "a decoder takes token ids, not images: use --seq-len");
    if (seq_len < 0) throw UsageError("--seq-len", "must be a positive whole number");
    DecoderShape shape = parse_decoder_spec(model, what);
    if (seq_len > 0) shape.seq = seq_len;
    return build_decoder(shape, fmt::format("decoder-{}x{}", shape.layers, shape.hidden));
  }
  const auto file = resolve(DataKind::network, model, what);
  if (seq_len == 0 && image_size == 0) return load_network(file);
  const char* option = seq_len != 0 ? "--seq-len" : "--image-size";
  if (seq_len < 0 || image_size < 0) throw UsageError(option, "must be a positive whole number");
  if (seq_len != 0 && image_size != 0)
    throw UsageError("--image-size", "give --seq-len for a token model or --image-size for an image model, not both");
  // The generated models/NAME.yaml comes from models/arch/NAME.yaml: rebuild from the description.
  const auto arch = architecture_dir() / (file.stem().string() + ".yaml");
  std::error_code ec;
  if (!std::filesystem::is_regular_file(arch, ec))
    throw UsageError(
        option, fmt::format("'{}' has no architecture description in {} to rebuild it from", model, architecture_dir().string()));
  InputOverride over;
  over.seq_len = seq_len;
  over.image_size = image_size;
  try {
    return build_network(arch, over);
  } catch (const InputError& e) {
    if (e.where().file.empty() && (e.key() == "image_size" || e.key() == "seq_len")) throw;  // main names the option
    throw UsageError(option, e.what());  // the description's limit (e.g. its position table), with its place
  }
}

void warn_memory_by_gpu_count(const Scenario& sc, std::span<const Prediction> preds) {
  if (!sc.strategy.sharding.sharded()) return;  // build_scenario warned up front
  std::vector<std::string> gpu, host;
  for (const Prediction& p : preds) {
    const std::string at = fmt::format("{} GPU{}", p.gpus, p.gpus == 1 ? "" : "s");
    if (!p.memory.fits) gpu.push_back(fmt::format("{} at {}", p.memory.per_gpu, at));
    if (!p.memory.host_fits) host.push_back(fmt::format("{} at {}", p.memory.host_per_node, at));
  }
  if (!gpu.empty())
    defer_note(
        fmt::format("warning: {} at batch {} with {} needs more than the {} per GPU of the {}: {}; such a step "
                    "cannot run as configured",
                    sc.network.name, sc.batch_per_gpu, sc.strategy.name, preds.front().memory.capacity, sc.cluster.gpu.name,
                    fmt::join(gpu, ", ")));
  if (!host.empty())
    defer_note(fmt::format("warning: the offloaded optimiser state of {} needs more than a node's {} of host memory: {}",
                           sc.network.name, preds.front().memory.host_capacity, fmt::join(host, ", ")));
}

TensorLayout memory_format_option(const std::string& text) {
  try {
    return tensor_layout_from_string(text);
  } catch (const std::invalid_argument& e) {
    throw UsageError("--memory-format", e.what());
  }
}

static void apply_checkpointing_option(const ScenarioOptions& o, ComputeOptions& c) {
  if (!o.checkpointing) return;
  const std::string& v = o.checkpointing_mode;
  if (v.empty() || v == "sqrt") {
    c.checkpointing = true;
    return;
  }
  const std::size_t colon = v.find(':');
  try {
    c.recompute = recompute_from_string(v.substr(0, colon));
  } catch (const std::invalid_argument&) {
    throw UsageError("--checkpointing",
                     fmt::format("unknown mode '{}' (expected sqrt, {}, or full:FRACTION)", v, kRecomputeNames));
  }
  if (colon != std::string::npos) {
    if (c.recompute != Recompute::full)
      throw UsageError("--checkpointing", fmt::format("only full takes a fraction of the blocks, not '{}'", v));
    const std::string f = v.substr(colon + 1);
    char* end = nullptr;
    const double x = std::strtod(f.c_str(), &end);
    if (f.empty() || end != f.c_str() + f.size() || !(x > 0.0 && x <= 1.0))
      throw UsageError("--checkpointing", fmt::format("the fraction of blocks in '{}' must lie in (0, 1]", v));
    c.recompute_blocks = x;
  }
}

namespace {
/// The model, framework and cluster a scenario is built from: the options', else the profile's, else the
/// defaults (the framework's default is the cluster's, known once the cluster is loaded).
struct ScenarioNames {
  std::string model, framework, cluster;
};

// --profile: its model, framework, cluster and batch, checked against the options that also name them.
ScenarioNames apply_profile(const ScenarioOptions& o, Scenario& sc, RunInfo& info) {
  ScenarioNames n{o.model, o.framework, o.cluster};
  if (!o.profile.empty()) {
    Profile p = load_profile(resolve(DataKind::profile, o.profile, "profile"));
    if (!n.model.empty() && n.model != p.model && resolve(DataKind::network, n.model, "network").stem() != p.model)
      throw UsageError("--model", fmt::format("the profile {} is for model '{}', not '{}'", o.profile, p.model, n.model));
    if (!n.framework.empty() && n.framework != p.framework &&
        resolve(DataKind::framework, n.framework, "framework").stem() != p.framework)
      throw UsageError("--framework",
                       fmt::format("the profile {} is for framework '{}', not '{}'", o.profile, p.framework, n.framework));
    if (n.model.empty()) n.model = p.model;
    if (n.framework.empty()) n.framework = p.framework;
    if (n.cluster.empty() && !p.cluster.empty()) n.cluster = p.cluster;
    if (o.batch_given && o.batch != p.batch_per_gpu)
      throw UsageError(
          "--batch", fmt::format("the profile {} was measured at batch {} per GPU, not {}", o.profile, p.batch_per_gpu, o.batch));
    sc.batch_per_gpu = p.batch_per_gpu;
    info.profile = o.profile;
    sc.profile = std::move(p);
  } else {
    sc.batch_per_gpu = o.batch_given ? o.batch : kDefaultBatch;
  }
  if (n.cluster.empty()) n.cluster = kDefaultCluster;
  if (n.model.empty()) n.model = kDefaultModel;
  return n;
}

// --precision (else the framework's default on the cluster's GPU), --accumulate, --checkpointing, --compiled,
// --unfused-optimizer and --optimizer-impl.
void apply_compute_options(const ScenarioOptions& o, const Scenario& sc, ComputeOptions& c) {
  try {
    c.precision = !o.precision.empty() ? precision_from_string(o.precision) : default_precision(sc.strategy, sc.cluster.gpu);
  } catch (const std::invalid_argument& e) {
    throw UsageError("--precision", e.what());
  }
  if (!o.fp8_scaling.empty()) c.fp8_scaling = fp8_scaling_option(o.fp8_scaling);
  c.fp8_all_gather = o.fp8_all_gather;
  c.accumulate = o.accumulate;
  apply_checkpointing_option(o, c);
  c.compiled = o.compiled;
  if (o.unfused_optimizer) c.optimizer_impl = OptimizerImpl::for_loop;
  if (!o.optimizer_impl.empty()) {
    try {
      c.optimizer_impl = optimizer_impl_from_string(o.optimizer_impl);
    } catch (const std::invalid_argument& e) {
      throw UsageError("--optimizer-impl", e.what());
    }
  }
}

// The cluster with the command's input options.
void load_scenario_cluster(const ScenarioOptions& o, const std::string& cluster, Scenario& sc) {
  sc.cluster = load_cluster(resolve(DataKind::cluster, cluster, "cluster"), cluster_overrides(o.scale));
  apply_input_options(o, sc.cluster);
}

// The cluster's GPU checked against the precision.
void check_precision(const ScenarioOptions& o, const Scenario& sc) {
  // The library runs a mode the GPU lacks at the fp32 rate (GpuSpec::peak); the command refuses it.
  if (!sc.cluster.gpu.supports(sc.compute.precision))
    throw UsageError("--precision", sc.cluster.gpu.missing_mode(sc.compute.precision, sc.cluster.name));
  // MX block scaling (eq. K15c) needs Blackwell's block-scaled tensor cores: refused as a precision the GPU lacks is
  if (sc.compute.precision == Precision::fp8 && !supports_fp8_scaling(sc.cluster.gpu, sc.compute.fp8_scaling))
    throw UsageError("--fp8-scaling", missing_fp8_scaling(sc.cluster.gpu, sc.compute.fp8_scaling, sc.cluster.name));
  // A language model in fp32 because neither the command nor the framework named a precision: said, since its runs
  // train in bf16 (or fp16) and fp32 makes them about an order of magnitude slower on tensor-core GPUs.
  if (sc.compute.precision == Precision::fp32 && o.precision.empty() && sc.network.input_kind == "tokens" && o.profile.empty() &&
      sc.cluster.gpu.supports(Precision::bf16))
    defer_note(
        fmt::format("note: {} names no precision, so this is fp32 (PyTorch's and DeepSpeed's own default); "
                    "language models train in bf16: --precision bf16 predicts that",
                    sc.strategy.name));
  // "fp32" on a GPU with TF32 is strict FP32 here, which is not what frameworks run by default there.
  else if (sc.compute.precision == Precision::fp32 && sc.cluster.gpu.supports(Precision::tf32) && o.profile.empty() &&
           o.calibration.empty())
    defer_note(
        fmt::format("note: fp32 is strict FP32; on the {} PyTorch (convolutions since 1.7, matrix multiplies in "
                    "1.7-1.11) and TensorFlow 2.4+ compute in TF32 unless told not to: --precision tf32 predicts that",
                    sc.cluster.gpu.name));
}

int shard_group_option(const std::string& text) {
  if (text == "node") return Sharding::kGroupNode;
  if (text == "all") return Sharding::kGroupAll;
  std::size_t used = 0;
  int n = 0;
  try {
    n = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || n < 1)
    throw UsageError("--shard-group", fmt::format("'{}' is not a count of at least 1, node or all", text));
  return n;
}

// --attention, --memory-format, --jitter, --zero, --shard-group and --(no-)offload-optimizer on the framework's strategy.
void apply_strategy_options(const ScenarioOptions& o, Scenario& sc) {
  if (!o.attention.empty()) {
    try {
      sc.strategy.attention = attention_kernel_from_string(o.attention);
    } catch (const std::invalid_argument& e) {
      throw UsageError("--attention", e.what());
    }
    if (sc.strategy.attention == AttentionKernel::flash && !flash_attention_supported(sc.cluster.gpu, sc.compute.precision))
      throw UsageError("--attention",
                       fmt::format("FlashAttention runs in fp16 or bf16 on Ampere or newer GPUs, not in {} on the {}",
                                   to_string(sc.compute.precision), sc.cluster.gpu.name));
  }
  if (!o.memory_format.empty()) sc.strategy.conv_algorithms.layout = memory_format_option(o.memory_format);
  if (o.jitter_cv >= 0.0) sc.strategy.jitter_cv = o.jitter_cv;
  if (o.zero != ScenarioOptions::kNotGiven) {
    if (o.zero < 0 || o.zero > 3) throw UsageError("--zero", fmt::format("stage {}: a sharding stage is 0, 1, 2 or 3", o.zero));
    // eq. P42: the stage only; the GEMMs keep the framework's rate (eq. K16)
    if (!sc.strategy.sharded_rate) sc.strategy.sharded_rate = sc.strategy.sharding.sharded();
    sc.strategy.sharding.stage = o.zero;
  }
  if (!o.shard_group.empty()) {  // eq. S1, P40: the library checks it against the GPUs (shard_groups, layout_shards)
    if (!sc.strategy.sharding.sharded())
      throw UsageError("--shard-group",
                       fmt::format("framework '{}' does not shard (stage 0); a shard group needs ZeRO "
                                   "stage 1-3 or FSDP (e.g. --zero 3)",
                                   sc.strategy.name));
    sc.strategy.sharding.group = shard_group_option(o.shard_group);
  }
  if (o.offload_optimizer && o.no_offload_optimizer)
    throw UsageError("--no-offload-optimizer", "give --offload-optimizer or --no-offload-optimizer, not both");
  if (o.no_offload_optimizer) sc.strategy.sharding.offload_optimizer = false;
  if (o.offload_optimizer) {  // docs/model.md, eq. S9
    if (!sc.strategy.sharding.sharded())
      throw UsageError("--offload-optimizer",
                       fmt::format("framework '{}' does not shard its optimiser state; offload needs ZeRO stage 1-3 or FSDP "
                                   "(e.g. --framework deepspeed-zero2)",
                                   sc.strategy.name));
    sc.strategy.sharding.offload_optimizer = true;
  }
}

// What the run is, for the report's header.
void describe_run(const ScenarioOptions& o, const Scenario& sc, RunInfo& info) {
  info.cluster = sc.cluster.name;
  // What the cluster file assumed, less what the command line (or the profile) says instead.
  for (const auto& [key, what] : sc.cluster.assumed) {
    const bool replaced = (key == "framework" && (!o.framework.empty() || !o.profile.empty())) ||
        (key == "gpu" && !o.scale.gpu.empty()) || (key == "input" && !o.data.empty()) ||
        (key == "nics" && !o.scale.fabric.empty());
    if (!replaced) info.assumed.push_back(fmt::format("{} {}", key, what));
  }
  info.gpu = sc.cluster.gpu.name;
  info.model = sc.network.name;
  info.framework = sc.strategy.name;
  info.batch_per_gpu = sc.batch_per_gpu;
  if (sc.parallel) {
    info.layout = layout_text(*sc.parallel);
    info.layout_data_parallel = data_parallel_layout(*sc.parallel);
    if (info.layout_data_parallel)
      info.layout += fmt::format(": data parallelism, {} micro-batches accumulated (eq. P39)", sc.parallel->micro_batches);
  }
  info.precision = std::string(precision_label(sc.compute.precision, sc.compute.fp8_scaling));  // "fp8-rowwise", "fp8-mxfp8" too
}
}  // namespace

Fp8Scaling fp8_scaling_option(const std::string& text) {
  try {
    return fp8_scaling_from_string(text);
  } catch (const std::invalid_argument& e) {
    throw UsageError("--fp8-scaling", e.what());
  }
}

Scenario build_scenario(const ScenarioOptions& o, RunInfo& info) {
  Scenario sc;
  if (o.batch_given && o.batch < 1)
    throw UsageError("--batch", fmt::format("the batch per GPU must be at least 1, got {}", o.batch));
  ScenarioNames names = apply_profile(o, sc, info);
  load_scenario_cluster(o, names.cluster, sc);
  if (names.framework.empty()) names.framework = !sc.cluster.framework.empty() ? sc.cluster.framework : kDefaultFramework;
  sc.network = load_model(names.model, o.seq_len, o.image_size);
  // A decoder language model's default batch is one sequence a GPU (its 2k-8k tokens a sequence make 32 of them hundreds
  // of GB: Llama-3-8B 1.4 TB); an image model's and an encoder's stays kDefaultBatch.
  if (!o.batch_given && !sc.profile && std::any_of(sc.network.layers.begin(), sc.network.layers.end(), [](const Layer& l) {
        return l.kind == LayerKind::attention && l.causal;
      }))
    sc.batch_per_gpu = 1;
  sc.strategy = load_strategy(resolve(DataKind::framework, names.framework, "framework"));
  apply_compute_options(o, sc, sc.compute);
  check_precision(o, sc);
  apply_strategy_options(o, sc);
  try {
    sc.compute.optimizer = !o.optimizer.empty() ? optimizer_from_string(o.optimizer) : default_optimizer(sc.network, sc.strategy);
  } catch (const std::invalid_argument& e) {
    throw UsageError("--optimizer", e.what());
  }
  // The library's checks (passes per update, a checkpointing mode the model can take, ...): main names the
  // option of the field an InputError names (cli::option_for_field).
  apply_parallel_options(o.parallel, o, sc);  // lib/cli/parallel_options.cpp
  validate(sc);

  describe_run(o, sc, info);
  sc = data_parallel_form(std::move(sc));  // eq. P39: explain, report and simulate take it as predict does
  if (!o.compute_params.empty())           // docs/compute-model.md, "Parameters and where they come from"
    sc.compute.kernel_params = std::make_shared<const KernelParamSet>(load_kernel_params(o.compute_params));
  if (!o.calibration.empty() || o.explain_sources) apply_calibration(o, sc, info);
  // A step that cannot run says so (docs/compute-model.md, "Memory"); a sharded strategy's memory depends
  // on the GPU count, and each prediction row says whether it fits.
  if (o.memory_warning && !sc.profile && !sc.measured_layers && !sc.strategy.sharding.sharded() && !sc.parallel) {
    const MemoryFit fit = check_memory_fit(sc.network, sc.cluster.gpu, sc.batch_per_gpu, step_compute(sc));
    if (!fit.fits) defer_note(fit.warning);
  }
  return sc;
}

}  // namespace dlscale::cli
