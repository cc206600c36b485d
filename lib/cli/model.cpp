// dlscale model list | show NAME | export [NAME|all]: the model zoo from the command line.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/scenario_options.hpp"
#include "dlscale/compute.hpp"
#include "dlscale/error.hpp"
#include "dlscale/format.hpp"
#include "dlscale/io.hpp"
#include "dlscale/memory.hpp"
#include "dlscale/report.hpp"
#include "dlscale/zoo.hpp"

namespace dlscale::cli {
namespace {
namespace fs = std::filesystem;

/// 25557032 -> "25.56 M"; counts, not bytes.
std::string count(double v) {
  if (v >= 1e9) return fmt::format("{:.2f} G", v / 1e9);
  if (v >= 1e6) return fmt::format("{:.2f} M", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.1f} k", v / 1e3);
  return fmt::format("{:.0f}", v);
}

std::string shape(const std::vector<std::int64_t>& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? "x" : "") + std::to_string(s[i]);
  return out;
}

Precision precision_from(const std::string& p) {
  try {
    return precision_from_string(p);
  } catch (const std::invalid_argument& e) {
    throw UsageError("--precision", e.what());
  }
}

// ---- list ---------------------------------------------------------------------------------------
struct ListOptions {
  std::string format = "table";
  std::string output;
};

void run_list(const ListOptions& o) {
  const bool json = json_format(o.format);
  std::vector<Network> nets;
  for (const auto& name : list_names(DataKind::network)) nets.push_back(load_network(resolve(DataKind::network, name, "NAME")));
  std::string out;
  if (json) {
    auto arr = nlohmann::ordered_json::array();
    for (const auto& n : nets)
      arr.push_back({{"name", n.name},
                     {"params", n.total_params()},
                     {"macs_per_sample", n.total_macs_per_sample()},
                     {"input_shape", n.input_shape},
                     {"description", n.description}});
    // 2: input_shape (1: input), every numeric key a unit or a count (README, "Output keys and units")
    out = nlohmann::ordered_json{{"schema", 2}, {"models", arr}}.dump(2) + "\n";
  } else {
    out += fmt::format("{:<14} {:>10} {:>12} {:<12} {}\n", "model", "params", "MACs/sample", "input", "description");
    for (const auto& n : nets)
      out += fmt::format("{:<14} {:>10} {:>12} {:<12} {}\n", n.name, count(static_cast<double>(n.total_params())),
                         count(n.total_macs_per_sample()), shape(n.input_shape), n.description);
  }
  emit(out, o.output);
}

// ---- show ---------------------------------------------------------------------------------------
struct ShowOptions {
  std::string model;
  int batch = 32;
  std::string gpu;
  std::string precision;    // --precision; empty: --framework's (default_precision), else fp32
  std::string fp8_scaling;  // --fp8-scaling tensorwise|rowwise|mxfp8 (with --precision fp8)
  std::string format = "table";
  std::string output;
  bool kernels = false;  // --kernels: every kernel of every layer, with the algorithm the model chose
  std::string optimizer;
  std::string optimizer_impl;  // --optimizer-impl fused|foreach|for_loop (default: the framework's, else fused)
  bool compiled = false;       // --compile: element-wise chains fused (torch.compile; eq. K14)
  std::string attention;       // --attention eager|flash (default: the framework's, else eager)
  std::string compute_params;  // --compute-params FILE (default: topologies/compute-params.yaml)
  std::string memory_format;   // --memory-format nchw|nhwc (default: the framework's, else nhwc)
  std::string framework;       // --framework: its cuDNN algorithm search, attention kernel and gradient precision
  int seq_len = 0;             // --seq-len / --image-size: the network rebuilt from models/arch at that input size
  int image_size = 0;
};

// --precision (else --framework's on the GPU), --compute-params and --optimizer: the compute options before the
// step is the framework's.
ComputeOptions base_compute(const ShowOptions& o, const Network& net, const std::optional<GpuSpec>& gpu) {
  ComputeOptions copt;
  if (!o.precision.empty()) copt.precision = precision_from(o.precision);
  else if (!o.framework.empty())
    copt.precision =
        default_precision(load_strategy(resolve(DataKind::framework, o.framework, "--framework")), gpu ? *gpu : GpuSpec{});
  if (!o.fp8_scaling.empty()) {
    copt.fp8_scaling = fp8_scaling_option(o.fp8_scaling);
    if (copt.fp8_scaling != Fp8Scaling::tensorwise && copt.precision != Precision::fp8)
      throw UsageError("--fp8-scaling",
                       fmt::format("{} scaling is a recipe of fp8 training; the precision is {}", to_string(copt.fp8_scaling),
                                   to_string(copt.precision)));
  }
  copt.compiled = o.compiled;  // step_compute keeps it (or the framework's)
  if (!o.optimizer_impl.empty()) {
    try {
      copt.optimizer_impl = optimizer_impl_from_string(o.optimizer_impl);
    } catch (const std::invalid_argument& e) {
      throw UsageError("--optimizer-impl", e.what());
    }
  }
  if (!o.compute_params.empty())
    copt.kernel_params = std::make_shared<const KernelParamSet>(load_kernel_params(o.compute_params));
  try {
    copt.optimizer = !o.optimizer.empty() ? optimizer_from_string(o.optimizer) : default_optimizer(net);
  } catch (const std::invalid_argument& e) {
    throw UsageError("--optimizer", e.what());
  }
  return copt;
}

// --framework, --attention and --memory-format on top, checked against the GPU (if any).
void step_options(const ShowOptions& o, const std::optional<GpuSpec>& gpu, ComputeOptions& copt) {
  if (gpu && !gpu->supports(copt.precision)) throw UsageError("--precision", gpu->missing_mode(copt.precision, ""));
  if (gpu && copt.precision == Precision::fp8 && !supports_fp8_scaling(*gpu, copt.fp8_scaling))  // eq. K15c
    throw UsageError("--fp8-scaling", missing_fp8_scaling(*gpu, copt.fp8_scaling, ""));
  if (o.kernels && !gpu) throw UsageError("--kernels", "needs --gpu");
  if (!o.framework.empty()) {  // the step as that framework runs it (predict's step_compute)
    // without a GPU nothing is timed: the attention kernel (eager on an unknown GPU) does not matter
    copt = step_compute(copt, load_strategy(resolve(DataKind::framework, o.framework, "--framework")), gpu ? *gpu : GpuSpec{});
  }
  if (!o.attention.empty()) {
    try {
      copt.attention = attention_kernel_from_string(o.attention);
    } catch (const std::invalid_argument& e) {
      throw UsageError("--attention", e.what());
    }
  }
  if (copt.attention == AttentionKernel::flash && (!gpu || !flash_attention_supported(*gpu, copt.precision)))
    throw UsageError("--attention", "FlashAttention needs --gpu, an Ampere or newer GPU, and fp16 or bf16");
  if (gpu) copt.attention = effective_attention(copt.attention, *gpu, copt.precision);  // sdpa: the kernel it dispatches to
  if (!o.memory_format.empty()) copt.conv_algorithms.layout = memory_format_option(o.memory_format);
}

/// What `model show` prints: the network, and with a GPU its predicted times and memory.
struct Shown {
  const Network& net;
  const std::optional<GpuSpec>& gpu;
  const ComputeOptions& copt;
  const std::optional<LayerTimes>& times;
  const std::optional<MemoryFit>& fit;
  double grad_elem = 0, total_grad = 0;
};

nlohmann::ordered_json json_totals(const Shown& d) {
  const auto& [net, gpu, copt, times, fit, grad_elem, total_grad] = d;
  nlohmann::ordered_json totals{{"params", net.total_params()},
                                {"macs_per_sample", net.total_macs_per_sample()},
                                {"flops_per_sample", net.total_forward_flops_per_sample()},
                                {"gradient_bytes", total_grad},
                                {"activation_bytes_per_sample", net.total_activation_bytes_per_sample()}};
  if (times) {
    totals["forward_s"] = in_seconds(times->total_forward());
    totals["backward_s"] = in_seconds(times->total_backward());
    totals["update_s"] = in_seconds(times->total_update());
  }
  if (fit) {
    totals["memory"] = {{"weights_bytes", in_bytes(fit->need.weights)},
                        {"gradients_bytes", in_bytes(fit->need.gradients)},
                        {"optimizer_state_bytes", in_bytes(fit->need.optimizer_state)},
                        {"activations_bytes", in_bytes(fit->need.activations)},
                        {"input_bytes", in_bytes(fit->need.input)},
                        {"reserved_bytes", in_bytes(fit->need.reserved)},
                        {"allocator_slack_bytes", in_bytes(fit->need.allocator_slack)},
                        {"total_bytes", in_bytes(fit->need.total())},
                        {"gpu_memory_bytes", in_bytes(fit->available)},
                        {"fits", fit->fits},
                        {"largest_batch", fit->largest_batch}};
  }
  return totals;
}

std::string show_json(const ShowOptions& o, const Shown& d) {
  const auto& [net, gpu, copt, times, fit, grad_elem, total_grad] = d;
  nlohmann::ordered_json j;
  j["schema"] = 1;
  j["model"] = net.name;
  j["description"] = net.description;
  j["input"] = {{"kind", net.input_kind}, {"shape", net.input_shape}, {"bytes_per_sample", in_bytes(net.input_bytes_per_sample)}};
  j["batch"] = o.batch;
  j["precision"] = precision_label(copt.precision, copt.fp8_scaling);  // "fp8-rowwise", "fp8-mxfp8" (eq. K15c)
  j["gpu"] = gpu ? nlohmann::ordered_json(gpu->name) : nlohmann::ordered_json(nullptr);
  j["totals"] = json_totals(d);
  auto layers = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < net.layers.size(); ++i) {
    const Layer& l = net.layers[i];
    nlohmann::ordered_json e{{"name", l.name},
                             {"kind", std::string(to_string(l.kind))},
                             {"params", l.params},
                             {"macs", l.macs_per_sample},
                             {"flops", l.forward_flops_per_sample},
                             {"gradient_bytes", static_cast<double>(l.params) * grad_elem},
                             {"activation_bytes", l.activation_bytes_per_sample},
                             {"output_shape", l.output_shape}};
    if (times) {
      e["forward_s"] = in_seconds(times->forward[i]);
      e["backward_s"] = in_seconds(times->backward[i]);
      e["update_s"] = in_seconds(times->update[i]);
    }
    if (o.kernels) {  // the table's kernel lines (eq. K1..): time, and FLOPs or the bytes a memory-bound kernel moves
      auto ks = nlohmann::ordered_json::array();
      for (const auto& k : layer_kernels(l, i == 0, i + 1 == net.layers.size(), *gpu, o.batch, copt))
        ks.push_back({{"name", k.name},
                      {"backward", k.backward},
                      {"time_s", in_seconds(k.time)},
                      {"flops", in_flops(k.flops)},
                      // the table's TFLOP/s (× 1e12), null for a kernel without FLOPs (the table then gives its bytes)
                      {"flops_per_s",
                       k.flops > Flops{} ? nlohmann::ordered_json(in_flops(k.flops) / in_seconds(k.time))
                                         : nlohmann::ordered_json(nullptr)},
                      {"traffic_bytes", in_bytes(k.traffic)}});
      e["kernels"] = std::move(ks);
    }
    layers.push_back(e);
  }
  j["layers"] = layers;
  j["warnings"] = fit && !fit->fits ? nlohmann::ordered_json::array({fit->warning}) : nlohmann::ordered_json::array();
  return j.dump(2) + "\n";
}

std::string show_table(const ShowOptions& o, const Shown& d) {
  const auto& [net, gpu, copt, times, fit, grad_elem, total_grad] = d;
  std::string out;
  out += fmt::format("{}: {}\n", net.name, net.description);
  out += fmt::format("input {} ({}) = {} per sample; batch {}, {}{}\n\n", shape(net.input_shape), net.input_kind,
                     net.input_bytes_per_sample, o.batch, to_string(copt.precision),
                     gpu ? fmt::format(", on {} (kernel model, docs/compute-model.md)", gpu->name) : std::string());
  out += fmt::format("{:>4} {:<40} {:<10} {:>10} {:>10} {:>10} {:>14}", "#", "layer", "kind", "params", "MACs", "grad", "output");
  if (times) out += fmt::format(" {:>10} {:>10}", "forward", "backward");
  out += "\n";
  for (std::size_t i = 0; i < net.layers.size(); ++i) {
    const Layer& l = net.layers[i];
    out += fmt::format("{:>4} {:<40} {:<10} {:>10} {:>10} {:>10} {:>14}", i + 1, l.name, to_string(l.kind),
                       count(static_cast<double>(l.params)), count(l.macs_per_sample),
                       fmt::format("{}", bytes(static_cast<double>(l.params) * grad_elem)), shape(l.output_shape));
    if (times) out += fmt::format(" {:>10} {:>10}", fmt::format("{}", times->forward[i]), fmt::format("{}", times->backward[i]));
    out += "\n";
    if (o.kernels)
      for (const auto& k : layer_kernels(l, i == 0, i + 1 == net.layers.size(), *gpu, o.batch, copt))
        out += fmt::format("{:>4}   {:<62} {:>10} {:>10}\n", "", k.name, fmt::format("{}", k.time),
                           k.flops > Flops{} ? fmt::format("{:.3g} TFLOP/s", in_teraflops_per_second(k.flops / k.time))
                                             : fmt::format("{}", k.traffic));
  }
  out += fmt::format("\ntotals: {} params ({}), {} MACs and {} FLOPs per sample, gradients {}\n", net.total_params(),
                     count(static_cast<double>(net.total_params())), count(net.total_macs_per_sample()),
                     count(net.total_forward_flops_per_sample()), bytes(total_grad));
  if (times)
    out += fmt::format("predicted at batch {}: forward {}, backward {}, update {}\n", o.batch, times->total_forward(),
                       times->total_backward(), times->total_update());
  if (fit)
    out += fmt::format(
        "memory per GPU: {} of {} (weights {}, gradients {}, optimiser {}, activations {}, input {}, "
        "reserve {}, allocator slack {}); {}\n",
        fit->need.total(), fit->available > Bytes{} ? fmt::format("{}", fit->available) : std::string("an unknown size"),
        fit->need.weights, fit->need.gradients, fit->need.optimizer_state, fit->need.activations, fit->need.input,
        fit->need.reserved, fit->need.allocator_slack,
        fit->available > Bytes{} ? fmt::format("largest batch that fits about {}", fit->largest_batch)
                                 : std::string("the GPU gives no memory size, so nothing is checked"));
  return out;
}

void run_show(const ShowOptions& o) {
  const bool json = json_format(o.format);
  if (o.batch < 1) throw UsageError("--batch", "the batch must be at least 1");
  const Network net = load_model(o.model, o.seq_len, o.image_size, "NAME");
  std::optional<GpuSpec> gpu;
  if (!o.gpu.empty()) gpu = gpu_option(o.gpu);
  ComputeOptions copt = base_compute(o, net, gpu);
  step_options(o, gpu, copt);
  std::optional<LayerTimes> times;
  std::optional<MemoryFit> fit;
  if (gpu) {
    times = estimate_layer_times(net, *gpu, o.batch, copt);
    fit = check_memory_fit(net, *gpu, o.batch, copt);
  }
  const double grad_elem = gradient_bytes_per_element(copt);
  const Shown shown{net, gpu, copt, times, fit, grad_elem, static_cast<double>(net.total_params()) * grad_elem};
  emit(json ? show_json(o, shown) : show_table(o, shown), o.output);
  if (fit && !fit->fits) fmt::print(stderr, "dlscale: {}\n", fit->warning);
}

// ---- export -------------------------------------------------------------------------------------
struct ExportOptions {
  std::string name = "all";
  std::string dir;
};

void run_export(const ExportOptions& o) {
  std::vector<fs::path> archs;
  if (o.name == "all") {
    for (const auto& n : architecture_names()) archs.push_back(architecture_dir() / (n + ".yaml"));
    if (archs.empty()) throw UsageError("NAME", "no architecture descriptions in " + architecture_dir().string());
  } else {
    archs.push_back(resolve_architecture(o.name, "NAME"));
  }
  const fs::path dir = o.dir.empty() ? data_dir() / "models" : fs::path(o.dir);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw UsageError("--dir", fmt::format("'{}' is not a folder", dir.string()));
  // Build every network first, so that a bad description writes nothing.
  std::vector<std::pair<fs::path, std::string>> files;
  for (const auto& a : archs) {
    const Network net = build_network(a);
    files.emplace_back(dir / (net.name + ".yaml"), network_to_yaml(net, a.stem().string()));
  }
  std::string out;
  for (const auto& [path, text] : files) {
    write_file_atomically(path.string(), text);
    out += path.string() + "\n";
  }
  emit(out, "");
}

}  // namespace

void setup_model(CLI::App& app) {
  auto* cmd = app.add_subcommand("model", "The model zoo: list networks, show one layer by layer, regenerate the files");
  cmd->require_subcommand(1);

  auto lo = std::make_shared<ListOptions>();
  auto* list = cmd->add_subcommand("list", "List the networks in models/ with parameters and MACs per sample");
  list->add_option("--format", lo->format, "table or json")->capture_default_str();
  list->add_option("-o,--output", lo->output, "Write to FILE (atomically) instead of standard output")->type_name("FILE");
  list->callback([lo] { run_list(*lo); });

  auto so = std::make_shared<ShowOptions>();
  auto* show = cmd->add_subcommand("show", "Per-layer table and totals; with --gpu, predicted layer times and memory fit");
  show->add_option("NAME", so->model, "Network name (models/NAME.yaml) or file")->required();
  show->add_option("-b,--batch", so->batch, "Samples per GPU")->capture_default_str();
  show->add_option("--gpu", so->gpu,
                   "GPU: an id of topologies/gpus.yaml (e.g. p40, v100-sxm2; b200@750W under a power limit) or a YAML file "
                   "with one GPU's keys")
      ->type_name("ID|FILE");
  show->add_option("--precision", so->precision,
                   "fp32, tf32, bf16, fp16 (mixed precision) or fp8 (default: --framework's `precision:`, else fp32)")
      ->type_name("NAME");
  show->add_option("--fp8-scaling", so->fp8_scaling,
                   "With --precision fp8: tensorwise (the default), rowwise or mxfp8 (Blackwell only)")
      ->type_name("SCALING");
  show->add_option("--optimizer", so->optimizer, "sgd, momentum, adam, adamw or lamb (default: by the model's input)");
  show->add_option("--optimizer-impl", so->optimizer_impl,
                   "fused, foreach or for_loop: the optimiser's kernels (default: the framework's, else fused)")
      ->type_name("NAME");
  show->add_flag("--compile", so->compiled, "The step is compiled (torch.compile): element-wise chains fused (eq. K14)");
  show->add_option("--compute-params", so->compute_params, "Kernel-model parameters (what `dlscale calibrate fit` writes)")
      ->type_name("FILE");
  show->add_option("--memory-format", so->memory_format, kMemoryFormatHelp)->type_name("LAYOUT");
  show->add_option("--attention", so->attention, std::string(kAttentionHelp) + " (flash needs --gpu)");
  show->add_option("--framework", so->framework,
                   "Time and size the step as this framework runs it: its cuDNN algorithm search, attention kernel and "
                   "gradient precision (models/frameworks/NAME.yaml or a file)")
      ->type_name("NAME|FILE");
  add_size_option(*show, "--seq-len", so->seq_len, kSeqLenHelp, "S");
  add_size_option(*show, "--image-size", so->image_size, kImageSizeHelp, "PIXELS");
  show->add_flag("--kernels", so->kernels,
                 "List every kernel of every layer with its time and the algorithm chosen (needs --gpu)");
  show->add_option("--format", so->format, "table or json")->capture_default_str();
  show->add_option("-o,--output", so->output, "Write to FILE (atomically) instead of standard output")->type_name("FILE");
  show->callback([so] { run_show(*so); });

  auto eo = std::make_shared<ExportOptions>();
  auto* exp = cmd->add_subcommand("export", "Regenerate models/NAME.yaml from models/arch/NAME.yaml (NAME or all)");
  exp->add_option("NAME", eo->name, "Architecture name, or all")->capture_default_str();
  exp->add_option("--dir", eo->dir, "Write into DIR instead of the data folder's models/")->type_name("DIR");
  exp->callback([eo] { run_export(*eo); });
}

}  // namespace dlscale::cli
