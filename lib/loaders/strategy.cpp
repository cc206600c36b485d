// Framework strategy files, their sharding and transports (docs/input-formats.md, "Framework strategy").
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "dlscale/io.hpp"
#include "io/yaml_reader.hpp"
#include "loaders/parallel_entry.hpp"
#include "loaders/read_helpers.hpp"

namespace dlscale {
namespace fs = std::filesystem;
using yamlio::MapReader;
using yamlio::Node;

// ---- frameworks -------------------------------------------------------------------------------------
namespace {
/// `sharding: {reduce_dtype, params, shard_dtype}`, after `stage`: the dtypes and layout of the shards (FSDP's
/// reduce_dtype, FSDP2's per-parameter shards, eq. M5's fp32 shards).
void read_shard_layout(MapReader& r, Sharding& sh) {
  if (auto n = r.optional("reduce_dtype")) sh.reduce_fp32 = n->choice({"fp32", "half"}) == "fp32";
  if (auto n = r.optional("params")) {
    sh.per_parameter = n->choice({"flat", "per_parameter"}) == "per_parameter";
    if (sh.per_parameter && sh.stage < 3) n->fail("params: per_parameter is FSDP2's full sharding (stage 3)");
  }
  if (auto n = r.optional("shard_dtype")) {
    sh.fp32_shards = n->choice({"fp32", "working"}) == "fp32";
    if (sh.per_parameter && !sh.fp32_shards)
      n->fail("FSDP2 (params: per_parameter) shards the fp32 parameters: shard_dtype is fp32");
    if (sh.fp32_shards && sh.stage < 3) n->fail("shard_dtype: fp32 is PyTorch FSDP's, whose sharding is stage 3");
  }
}

/// `sharding: {stage, reshard_after_forward, reduce_dtype, params, shard_dtype, group, in_flight, unit_params, wrap, unit_ops}`
/// (docs/model.md, "Sharded data parallelism"). Sharding needs an all-reduce framework that overlaps and updates after
/// aggregation.
void read_sharding(const Node& node, Strategy& s) {
  MapReader r(node);
  Sharding& sh = s.sharding;
  {
    const Node st = r.required("stage");
    const std::int64_t v = st.integer();
    if (v < 0 || v > 3) st.fail(fmt::format("ZeRO has stages 0 (replicas) to 3 (parameters sharded), not {}", v));
    sh.stage = static_cast<int>(v);
  }
  if (auto n = r.optional("reshard_after_forward")) sh.reshard_after_forward = n->boolean();
  read_shard_layout(r, sh);
  if (auto n = r.optional("group")) {
    if (n->is_scalar() && (n->scalar() == "all" || n->scalar() == "node")) {
      sh.group = n->scalar() == "all" ? Sharding::kGroupAll : Sharding::kGroupNode;
    } else {
      sh.group = n->int_at_most(1'000'000);
      if (sh.group < 1) n->fail("a shard group is 'all', 'node' or a number of GPUs ≥ 1");
    }
  }
  if (auto n = r.optional("in_flight")) {
    sh.in_flight = n->int_at_most(1024);
    if (sh.in_flight < 1) n->fail("at least one gathered unit is in flight (1 = no prefetch)");
  }
  if (auto n = r.optional("unit_params")) {
    const double v = n->positive_number();
    if (v > 1e15) n->fail("a gather unit of more than 10^15 parameters");
    sh.unit_params = static_cast<std::int64_t>(v);
    if (sh.unit_params < 1) n->fail("a gather unit holds at least one parameter");
  }
  if (auto n = r.optional("wrap"))
    sh.wrap = n->choice({"size", "block"}) == "block" ? Sharding::Wrap::block : Sharding::Wrap::size;
  if (auto n = r.optional("unit_ops")) {  // eq. S11
    MapReader ops(*n);
    auto count = [&](const char* key) {
      const Node c = ops.required(key);
      const double v = c.number();
      if (!(v >= 0.0) || v > 1e4) c.fail(fmt::format("{} operations per unit: a count from 0 to 10^4", key));
      return v;
    };
    sh.gather_ops = count("gather");
    sh.reduce_ops = count("reduce");
    if (auto c = ops.optional("issue")) {
      sh.unit_op_issue = c->latency();
      if (!(sh.unit_op_issue > Seconds{})) c->fail("an operation costs the host more than zero");
    }
    ops.finish();
  }
  std::optional<Node> offload;
  if ((offload = r.optional("offload_optimizer"))) {  // docs/model.md, eq. S9
    const std::string v = offload->scalar();
    if (v != "cpu" && v != "none") offload->fail(fmt::format("offload_optimizer is 'cpu' or 'none', not '{}'", v));
    sh.offload_optimizer = v == "cpu";
  }
  if (auto n = r.optional("cpu_adam")) {  // "3.9e9 params/s": CPU-Adam parameters per second of one node
    const std::string text = n->scalar();
    std::size_t used = 0;
    double v = -1.0;
    try {
      v = std::stod(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    std::string unit = used ? text.substr(used) : std::string();
    while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
    if (used == 0 || unit != "params/s" || !(v > 0.0) || !std::isfinite(v))
      n->fail(fmt::format("'{}' is not a CPU-Adam rate like \"3.9e9 params/s\" (parameters per second of one node)", text));
    sh.cpu_adam_params_per_s = v;
  }
  r.finish();
  if (sh.offload_optimizer && !sh.sharded())
    offload->fail("offload_optimizer needs a sharded optimiser state (sharding stage 1, 2 or 3)");
  if (sh.sharded()) {
    if (s.aggregation != Aggregation::allreduce) node.fail("sharding needs 'aggregation: allreduce'");
    if (s.update != UpdatePlacement::after_aggregation) node.fail("sharding needs 'update: after_aggregation'");
    if (s.overlap == Overlap::none) node.fail("sharding needs an overlapped aggregation ('layerwise' or 'bucketed')");
  }
}

/// `transport: NAME`: models/frameworks/transports/NAME.yaml (docs/input-formats.md, "Transports").
Transport read_transport(const Node& ref, const fs::path& data) {
  const std::string name = ref.scalar();
  const fs::path dir = data / "models" / "frameworks" / "transports";
  std::error_code ec;
  if (name.find('/') != std::string::npos || !fs::is_regular_file(dir / (name + ".yaml"), ec)) {
    std::vector<std::string> known;
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path().extension() == ".yaml") known.push_back(e.path().stem().string());
    std::sort(known.begin(), known.end());
    ref.fail(fmt::format("unknown transport '{}' (known: {})", name, fmt::join(known, ", ")));
  }
  MapReader m(yamlio::load_file(dir / (name + ".yaml")));
  Transport t;
  t.name = m.required("name").scalar();
  if (auto n = m.optional("description")) t.description = n->scalar();
  if (auto n = m.optional("wire_efficiency")) {
    t.wire_efficiency = n->positive_number();
    if (t.wire_efficiency > 1.0) n->fail("a share of the link is at most 1");
  }
  if (auto n = m.optional("per_message")) {
    t.per_message = n->seconds();
    if (t.per_message < Seconds{}) n->fail("a per-message cost cannot be negative");
  }
  if (auto n = m.optional("staged")) t.staged = n->boolean();
  if (auto n = m.optional("allreduce")) t.root_allreduce = n->choice({"collective", "root"}) == "root";
  if (auto n = m.optional("source")) t.source = n->scalar();
  m.finish();
  return t;
}

/// `io: {prefetch, memory, reader, depth, buffer}`: how the framework reads and stages its batches.
void read_io(const Node& node, Strategy& s) {
  MapReader io(node);
  s.io_prefetch = io.required("prefetch").boolean();
  s.pinned_memory = io.required("memory").choice({"pinned", "pageable"}) == "pinned";
  if (auto r = io.optional("reader")) s.reads_bytes = r->choice({"pipeline", "bytes"}) == "bytes";
  if (auto d = io.optional("depth")) {
    s.prefetch_depth = d->int_at_most(1'000'000);
    if (s.prefetch_depth < 1) d->fail("a prefetch queue holds at least one batch");
  }
  if (auto c = io.optional("copy")) {  // the framework's host-to-GPU copy: a share of the node's rate, a latency
    MapReader copy(*c);
    if (auto r = copy.optional("rate")) {
      s.h2d_rate = r->positive_number();
      if (s.h2d_rate > 1.0) r->fail("a copy runs at most at the node's rate (a share up to 1)");
    }
    if (auto l = copy.optional("latency")) {
      s.h2d_latency = l->latency();
      if (s.h2d_latency < Seconds{}) l->fail("a copy's latency cannot be negative");
    }
    copy.finish();
  }
  if (auto b = io.optional("buffer")) {
    s.prefetch_buffer = b->bytes();
    if (!(s.prefetch_buffer > Bytes{})) b->fail("a prefetch buffer holds more than zero bytes");
    if (!s.io_prefetch) b->fail("a prefetch buffer needs prefetch: true");
  }
  io.finish();
}

/// The kernels the framework picks: `attention`, `conv_algorithms`, `memory_format`.
void read_kernel_choices(MapReader& m, Strategy& s) {
  if (auto n = m.optional("attention")) {
    try {
      s.attention = attention_kernel_from_string(n->scalar());
    } catch (const std::invalid_argument& e) {
      n->fail(e.what());
    }
  }
  if (auto n = m.optional("conv_algorithms")) {  // docs/compute-model.md, "Convolution algorithms"
    MapReader c(*n);
    if (auto w = c.optional("winograd")) s.conv_algorithms.winograd = w->boolean();
    if (auto f = c.optional("fft")) s.conv_algorithms.fft = f->boolean();
    if (auto l = c.optional("workspace_limit")) s.conv_algorithms.workspace_limit = l->bytes();
    c.finish();
  }
  if (auto n = m.optional("memory_format")) {  // docs/compute-model.md, eq. K10
    try {
      s.conv_algorithms.layout = tensor_layout_from_string(n->scalar());
    } catch (const std::invalid_argument& e) {
      n->fail(e.what());
    }
  }
}

/// `kernels: {memory_bound, attention, model_code, fused, host_issue, launch_gap, issued_per_kernel}`: how the framework runs its
/// memory-bound kernels, whose fused attention kernel it runs (flash or cudnn, eq. K9) and how it issues its kernels
/// (docs/compute-model.md, eqs. K18-K21, K24).
void read_kernel_execution(const Node& node, KernelExecution& x) {
  MapReader k(node);
  if (auto n = k.optional("memory_bound")) {
    const std::string how = n->choice({"fitted", "streaming", "by_class"});
    x.streaming = how == "streaming";
    x.by_class = how == "by_class";
  }
  std::optional<Node> code;
  if ((code = k.optional("model_code"))) {
    const std::string which = code->choice({"native", "transformers-gpt2", "transformers-bert"});
    x.transformers_gpt2 = which == "transformers-gpt2";  // K24
    x.transformers_bert = which == "transformers-bert";  // K20: the code the floor was measured on
  }
  if (auto n = k.optional("attention")) x.cudnn_attention = n->choice({"flash", "cudnn"}) == "cudnn";
  if (auto n = k.optional("fused")) {
    for (const Node& item : n->items()) {
      const std::string chain = item.choice({"bn_relu", "bn_add_relu"});
      (chain == "bn_relu" ? x.bn_relu : x.bn_add_relu) = true;
    }
  }
  std::optional<Node> issue, gap, issued;
  if ((issue = k.optional("host_issue"))) x.host_issue = issue->seconds();
  if ((gap = k.optional("launch_gap"))) x.launch_gap = gap->seconds();
  if ((issued = k.optional("issued_per_kernel"))) x.issued_per_kernel = issued->positive_number();
  k.finish();
  if (issued && !issue) issued->fail("issued_per_kernel scales the host's issue floor: it needs host_issue");
  if (x.transformers_bert && !issue)
    code->fail("model_code: transformers-bert says which code the host's floor binds on: it needs host_issue");
  if (issue && !(x.host_issue > Seconds{})) issue->fail("a host's issue cost per kernel is more than zero");
  if (gap && *x.launch_gap < Seconds{}) gap->fail("a launch gap cannot be negative");
  if (gap && !issue)
    gap->fail("launch_gap replaces the fitted kernel_overhead under the host's issue floor: it needs host_issue");
}

/// `update_kernels: {traffic: B, per_tensor: T}`: the framework's own update kernels (UpdateKernelCost).
UpdateKernelCost read_update_kernels(const Node& node) {
  MapReader u(node);
  UpdateKernelCost cost;
  cost.traffic = u.required("traffic").positive_number();
  const Node per_tensor = u.required("per_tensor");
  cost.per_tensor = per_tensor.seconds();
  if (cost.per_tensor < Seconds{}) per_tensor.fail("a cost per tensor cannot be negative");
  cost.optimizer = optimizer_from_string(u.required("optimizer").choice({"sgd", "momentum", "adam", "adamw", "lamb"}));
  u.finish();
  return cost;
}

Strategy read_strategy(const Node& root, const fs::path& data) {
  MapReader m(root);
  Strategy s;
  s.name = m.required("name").scalar();
  if (auto n = m.optional("description")) s.description = n->scalar();
  read_io(m.required("io"), s);
  s.aggregation = m.required("aggregation").choice<Aggregation>();
  s.overlap = m.required("overlap").choice<Overlap>();
  s.update = m.required("update").choice<UpdatePlacement>();
  if (auto n = m.optional("buckets")) {
    MapReader b(*n);
    s.bucket_size = b.required("size").bytes();
    if (!(s.bucket_size > Bytes{})) b.required("size").fail("a bucket must hold more than zero bytes");
    if (auto f = b.optional("first")) s.first_bucket = f->bytes();
    b.finish();
  } else if (s.overlap == Overlap::bucketed) {
    m.node().fail("overlap 'bucketed' needs 'buckets: {size: ..., first: ...}'");
  }
  if (auto n = m.optional("parameter_servers")) s.parameter_servers = small_count(*n, 1'000'000);
  if (auto n = m.optional("compute_efficiency")) s.compute_efficiency = n->positive_number();
  if (auto n = m.optional("compile")) s.compiled = n->boolean();
  if (auto n = m.optional("compile_loss")) s.compile_loss = n->boolean();
  if (auto n = m.optional("checkpoint_early_stop")) s.checkpoint_early_stop = n->boolean();
  if (auto n = m.optional("rmsnorm")) s.rmsnorm_composite = n->choice({"composite", "fused"}) == "composite";
  if (auto n = m.optional("lrn")) s.lrn = n->boolean();
  if (auto n = m.optional("pool_indices")) {
    const std::string v = n->choice({"int64", "int32", "none"});
    s.pool_index_bytes = v == "int64" ? 8 : v == "int32" ? 4 : 0;
  }
  if (auto n = m.optional("optimizer"))
    s.optimizer = optimizer_from_string(n->choice({"sgd", "momentum", "adam", "adamw", "lamb"}));
  if (auto n = m.optional("precision"))  // the runs' precision when the command names none (default_precision)
    s.precision = precision_from_string(n->choice({"fp32", "tf32", "bf16", "fp16"}));
  if (auto n = m.optional("optimizer_impl"))
    s.optimizer_impl = optimizer_impl_from_string(n->choice({"fused", "foreach", "for_loop"}));
  if (auto n = m.optional("update_kernels")) s.update_kernels = read_update_kernels(*n);
  if (auto n = m.optional("jitter_cv")) s.jitter_cv = n->coefficient_of_variation();
  if (auto n = m.optional("iteration_overhead")) {
    s.iteration_overhead = n->seconds();
    if (s.iteration_overhead < Seconds{}) n->fail("a per-iteration overhead cannot be negative");
  }
  if (auto n = m.optional("input_handover")) {  // eq. F2 (docs/model.md)
    s.input_handover = n->seconds();            // refuses a negative time
    // a wait as long as a tenth of a second is a reader that fell behind (eq. 4 from the reader), not a hand-over
    if (s.input_handover > milliseconds(100)) n->fail("an input hand-over is at most 100 ms a batch");
    if (!s.io_prefetch) n->fail("an input hand-over needs a prefetching reader (io: {prefetch: true})");
  }
  if (auto n = m.optional("transport")) s.transport = read_transport(*n, data);
  read_kernel_choices(m, s);
  if (auto n = m.optional("kernels")) read_kernel_execution(*n, s.execution);
  if (auto n = m.optional("sharding")) read_sharding(*n, s);
  if (auto n = m.optional("parallel")) read_parallel_entry(*n, s, true);  // parallel_entry.cpp
  if (auto n = m.optional("mixed_precision")) {                           // docs/input-formats.md, "Framework strategy"
    MapReader mp(*n);
    if (auto g = mp.optional("gradients")) {
      s.fp32_gradients = g->choice({"fp32", "half"}) == "fp32";
      if (s.fp32_gradients && s.sharding.sharded())
        g->fail("a sharded framework's gradients are those of its working copy; 'gradients: fp32' is for replicated ones");
    }
    mp.finish();
  }
  m.finish();
  return s;
}
}  // namespace

Strategy load_strategy(const fs::path& file) { return read_strategy(yamlio::load_file(file), data_folder_of(file)); }
Strategy parse_strategy(const std::string& yaml_text, const std::string& display_name) {
  return read_strategy(yamlio::load_string(yaml_text, display_name), data_dir());
}

}  // namespace dlscale
