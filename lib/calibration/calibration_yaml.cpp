// The calibration file (schema 1): reader on yamlio (file:line:col in every error, unknown keys
// rejected) and a writer whose output the reader reads back. The format is documented in
// docs/calibration.md.
#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "dlscale/atomic_file.hpp"
#include "dlscale/calibration.hpp"
#include "dlscale/error.hpp"
#include "io/yaml_reader.hpp"

namespace dlscale {
using yamlio::MapReader;
using yamlio::Node;

namespace {

// ---- reading ---------------------------------------------------------------------------------------

CollectiveOp op_from(const Node& n) { return n.choice<CollectiveOp>(); }

TransferKind transfer_from(const Node& n) { return n.choice<TransferKind>(); }

int small_int(const Node& n, int lo) {
  const auto v = n.integer();
  if (v < lo || v > 1'000'000) n.fail(fmt::format("must be a whole number from {} to 1000000, got {}", lo, v));
  return static_cast<int>(v);
}

Seconds positive_time(const Node& n) {
  const Seconds t = n.seconds();
  if (!(t > Seconds{})) n.fail("a measured time must be greater than zero");
  return t;
}

/// A derived bandwidth written for people (algbw, busbw, bandwidth) must agree with size/time: a file
/// edited by hand into inconsistency is an error, not a silent choice of one of the two.
void check_derived(const Node& n, BytesPerSecond expected) {
  const double got = in_gigabytes_per_second(n.bandwidth());
  const double want = in_gigabytes_per_second(expected);
  if (std::fabs(got - want) > 0.01 + 0.01 * want)
    n.fail(fmt::format("disagrees with size/time ({:.4g} GB/s); fix or remove it", want));
}

std::vector<CollectivePoint> read_collective_points(const Node& list, CollectiveOp op, int gpus) {
  std::vector<CollectivePoint> out;
  for (const auto& item : list.items()) {
    MapReader m(item);
    CollectivePoint p;
    const Node size = m.required("size");
    p.size = size.bytes();
    if (!(p.size > Bytes{})) size.fail("a size must be greater than zero");
    if (!out.empty() && !(p.size > out.back().size)) size.fail("sizes must be listed in increasing order");
    p.time = positive_time(m.required("time"));
    if (auto n = m.optional("time_in_place")) p.time_in_place = positive_time(*n);
    if (auto n = m.optional("iqr")) p.iqr = n->seconds();
    if (auto n = m.optional("samples")) p.samples = static_cast<std::size_t>(n->non_negative_integer());
    const BytesPerSecond alg = algorithm_bandwidth(p.size, p.time);
    if (auto n = m.optional("algbw")) check_derived(*n, alg);
    if (auto n = m.optional("busbw")) check_derived(*n, alg * bus_bandwidth_factor(op, gpus));
    m.finish();
    out.push_back(p);
  }
  return out;
}

std::vector<BandwidthPoint> read_bandwidth_points(const Node& list) {
  std::vector<BandwidthPoint> out;
  for (const auto& item : list.items()) {
    MapReader m(item);
    BandwidthPoint p;
    const Node size = m.required("size");
    p.size = size.bytes();
    if (!(p.size > Bytes{})) size.fail("a size must be greater than zero");
    if (!out.empty() && !(p.size > out.back().size)) size.fail("sizes must be listed in increasing order");
    p.time = positive_time(m.required("time"));
    p.bandwidth = p.size / p.time;
    if (auto n = m.optional("bandwidth")) check_derived(*n, p.bandwidth);
    if (auto n = m.optional("iqr")) p.iqr = n->seconds();
    if (auto n = m.optional("samples")) p.samples = static_cast<std::size_t>(n->non_negative_integer());
    m.finish();
    out.push_back(p);
  }
  return out;
}

std::string opt_scalar(MapReader& m, std::string_view key) {
  auto n = m.optional(key);
  return n ? n->scalar() : std::string{};
}

Provenance read_provenance(const Node& node) {
  MapReader m(node);
  Provenance p;
  p.tool = m.required("tool").scalar();
  p.date = opt_scalar(m, "date");
  p.host = opt_scalar(m, "host");
  p.command_line = opt_scalar(m, "command_line");
  p.driver = opt_scalar(m, "driver");
  p.cuda = opt_scalar(m, "cuda");
  p.nccl = opt_scalar(m, "nccl");
  p.cudnn = opt_scalar(m, "cudnn");
  p.cublas = opt_scalar(m, "cublas");
  if (auto n = m.optional("sources"))
    for (const auto& s : n->items()) p.sources.push_back(s.scalar());
  p.notes = opt_scalar(m, "notes");
  m.finish();
  return p;
}

DeviceInfo read_device(const Node& node) {
  MapReader m(node);
  DeviceInfo d;
  d.index = small_int(m.required("index"), 0);
  d.name = m.required("name").scalar();
  d.pci_bus_id = opt_scalar(m, "pci_bus_id");
  if (auto n = m.optional("sm")) d.sm_version = small_int(*n, 0);
  if (auto n = m.optional("sm_count")) d.sm_count = small_int(*n, 0);
  if (auto n = m.optional("sm_clock")) d.sm_clock = n->frequency();
  if (auto n = m.optional("memory_clock")) d.memory_clock = n->frequency();
  if (auto n = m.optional("memory")) d.memory = n->bytes();
  if (auto n = m.optional("memory_bus_width")) d.memory_bus_width = small_int(*n, 0);
  if (auto n = m.optional("memory_bandwidth")) d.memory_bandwidth = n->bandwidth();
  if (auto n = m.optional("pcie")) {
    MapReader p(*n);
    if (auto v = p.optional("generation")) d.pcie_generation = small_int(*v, 0);
    if (auto v = p.optional("width")) d.pcie_width = small_int(*v, 0);
    if (auto v = p.optional("max_generation")) d.pcie_max_generation = small_int(*v, 0);
    if (auto v = p.optional("max_width")) d.pcie_max_width = small_int(*v, 0);
    p.finish();
  }
  if (auto n = m.optional("nvlinks")) d.nvlinks = small_int(*n, 0);
  if (auto n = m.optional("peers"))
    for (const auto& v : n->items()) d.peers.push_back(small_int(v, 0));
  m.finish();
  return d;
}

Calibration read_calibration(const Node& root, const std::string& source) {
  MapReader m(root);
  Calibration c;
  c.source_file = source;
  {
    // The version first: a file of another schema must say so, not fail on a key this version lacks.
    const Node v = m.required("schema");
    const auto version = v.integer();
    if (version != kCalibrationSchema)
      v.fail(fmt::format("calibration schema version {} is not supported (this dlscale reads version {})", version,
                         kCalibrationSchema));
    c.schema = static_cast<int>(version);
  }
  c.provenance = read_provenance(m.required("provenance"));
  c.gpu = opt_scalar(m, "gpu");
  c.topology_file = opt_scalar(m, "topology");
  c.raw_samples = opt_scalar(m, "raw_samples");
  if (auto n = m.optional("devices"))
    for (const auto& d : n->items()) c.devices.push_back(read_device(d));
  if (auto n = m.optional("transfers")) {
    for (const auto& item : n->items()) {
      MapReader t(item);
      TransferCurve tc;
      tc.kind = transfer_from(t.required("kind"));
      if (auto v = t.optional("device")) tc.device = small_int(*v, 0);
      tc.source = opt_scalar(t, "source");
      tc.points = read_bandwidth_points(t.required("points"));
      t.finish();
      c.transfers.push_back(std::move(tc));
    }
  }
  if (auto n = m.optional("p2p")) {
    for (const auto& item : n->items()) {
      MapReader p(item);
      P2PEntry e;
      e.src = small_int(p.required("src"), 0);
      e.dst = small_int(p.required("dst"), 0);
      if (auto v = p.optional("peer_access")) e.peer_access = v->boolean();
      if (auto v = p.optional("bandwidth")) e.bandwidth = v->bandwidth();
      if (auto v = p.optional("latency")) e.latency = v->latency();
      if (auto v = p.optional("bidirectional")) e.bidirectional = v->bandwidth();
      p.finish();
      c.p2p.push_back(e);
    }
  }
  if (auto n = m.optional("collectives")) {
    for (const auto& item : n->items()) {
      MapReader k(item);
      CollectiveCurve cc;
      cc.op = op_from(k.required("op"));
      cc.gpus = small_int(k.required("gpus"), 1);
      if (auto v = k.optional("nodes")) cc.nodes = small_int(*v, 1);
      if (cc.nodes > cc.gpus) k.required("nodes").fail("more nodes than GPUs");
      if (auto v = k.optional("dtype")) cc.dtype = v->scalar();
      if (auto v = k.optional("gpus_per_thread")) {
        cc.gpus_per_thread = small_int(*v, 1);
        if (cc.gpus_per_thread > cc.gpus) v->fail("more GPUs per thread than GPUs");
      }
      cc.source = opt_scalar(k, "source");
      if (auto v = k.optional("fit")) {
        MapReader f(*v);
        AlphaBeta ab;
        ab.alpha = f.required("alpha").seconds();
        ab.beta = f.required("beta").bandwidth();
        f.finish();
        cc.fit = ab;
      }
      const Node pts = k.required("points");
      cc.points = read_collective_points(pts, cc.op, cc.gpus);
      if (cc.points.empty()) pts.fail("a curve needs at least one point");
      k.finish();
      if (c.find_curve(cc.op, cc.gpus, cc.nodes) != nullptr)
        item.fail(fmt::format("a second {} curve on {} GPUs and {} node(s)", to_string(cc.op), cc.gpus, cc.nodes));
      c.collectives.push_back(std::move(cc));
    }
  }
  if (auto n = m.optional("gemm")) {
    for (const auto& item : n->items()) {
      MapReader g(item);
      GemmResult r;
      r.precision = g.required("precision").choice({"fp32", "tf32", "fp16", "bf16"});
      r.m = g.required("m").non_negative_integer();
      r.n = g.required("n").non_negative_integer();
      r.k = g.required("k").non_negative_integer();
      r.time = positive_time(g.required("time"));
      r.rate = flops(2.0 * static_cast<double>(r.m) * static_cast<double>(r.n) * static_cast<double>(r.k)) / r.time;
      if (auto v = g.optional("rate")) {
        const double got = in_teraflops_per_second(v->flops_rate()), want = in_teraflops_per_second(r.rate);
        if (std::fabs(got - want) > 0.01 + 0.01 * want)
          v->fail(fmt::format("disagrees with 2·m·n·k/time ({:.4g} TFLOPS); fix or remove it", want));
      }
      if (auto v = g.optional("iqr")) r.iqr = v->seconds();
      if (auto v = g.optional("samples")) r.samples = static_cast<std::size_t>(v->non_negative_integer());
      g.finish();
      c.gemm.push_back(r);
    }
  }
  if (auto n = m.optional("layers")) {
    for (const auto& item : n->items()) {
      MapReader l(item);
      LayerProfile lp;
      lp.model = l.required("model").scalar();
      lp.batch = small_int(l.required("batch"), 1);
      if (auto v = l.optional("precision")) lp.precision = v->choice({"fp32", "tf32", "fp16"});
      lp.gpu = opt_scalar(l, "gpu");
      for (const auto& t : l.required("times").items()) {
        MapReader tm(t);
        LayerTiming lt;
        lt.name = tm.required("name").scalar();
        if (auto v = tm.optional("forward")) lt.forward = positive_time(*v);
        if (auto v = tm.optional("backward")) lt.backward = positive_time(*v);
        lt.how = opt_scalar(tm, "how");
        tm.finish();
        lp.layers.push_back(std::move(lt));
      }
      l.finish();
      c.layers.push_back(std::move(lp));
    }
  }
  if (auto n = m.optional("storage")) {
    MapReader s(*n);
    StorageResult r;
    r.path = s.required("path").scalar();
    if (auto v = s.optional("size")) r.size = v->bytes();
    if (auto v = s.optional("page_cache")) r.page_cache = v->bandwidth();
    if (auto v = s.optional("direct")) r.direct = v->bandwidth();
    s.finish();
    c.storage = r;
  }
  m.finish();
  return c;
}
}  // namespace

Calibration load_calibration(const std::filesystem::path& file) {
  return read_calibration(yamlio::load_file(file), file.string());
}

Calibration parse_calibration(const std::string& yaml_text, const std::string& display_name) {
  return read_calibration(yamlio::load_string(yaml_text, display_name), display_name);
}

// ---- writing ---------------------------------------------------------------------------------------

namespace {
std::string q(const std::string& s) { return nlohmann::json(s).dump(); }  // a JSON string is a YAML string
std::string t_(Seconds t) { return q(fmt::format("{:.9g} us", in_us(t))); }
std::string b_(Bytes b) {
  const double v = in_bytes(b);
  return q(v == std::floor(v) && v < 9e15 ? fmt::format("{} B", static_cast<std::int64_t>(v)) : fmt::format("{:.9g} B", v));
}
std::string bw_(BytesPerSecond b) { return q(fmt::format("{:.9g} GB/s", in_gigabytes_per_second(b))); }
std::string hz_(Hertz h) { return q(fmt::format("{:.9g} MHz", in_megahertz(h))); }

void kv(std::ostringstream& o, int indent, std::string_view key, const std::string& value) {
  if (value.empty()) return;
  o << std::string(static_cast<std::size_t>(indent), ' ') << key << ": " << value << '\n';
}
}  // namespace

std::string to_yaml(const Calibration& c) {
  std::ostringstream o;
  o << "# dlscale calibration file (schema 1; docs/calibration.md). Sizes in bytes, times per operation.\n";
  o << "schema: " << kCalibrationSchema << '\n';
  o << "provenance:\n";
  const auto& p = c.provenance;
  kv(o, 2, "tool", q(p.tool));
  if (!p.date.empty()) kv(o, 2, "date", q(p.date));
  if (!p.host.empty()) kv(o, 2, "host", q(p.host));
  if (!p.command_line.empty()) kv(o, 2, "command_line", q(p.command_line));
  for (auto [k, v] : {std::pair<const char*, const std::string*>{"driver", &p.driver}, {"cuda", &p.cuda},
                      {"nccl", &p.nccl}, {"cudnn", &p.cudnn}, {"cublas", &p.cublas}})
    if (!v->empty()) kv(o, 2, k, q(*v));
  if (!p.sources.empty()) {
    o << "  sources:\n";
    for (const auto& s : p.sources) o << "    - " << q(s) << '\n';
  }
  if (!p.notes.empty()) kv(o, 2, "notes", q(p.notes));
  if (!c.gpu.empty()) kv(o, 0, "gpu", q(c.gpu));
  if (!c.topology_file.empty()) kv(o, 0, "topology", q(c.topology_file));
  if (!c.raw_samples.empty()) kv(o, 0, "raw_samples", q(c.raw_samples));

  if (!c.devices.empty()) {
    o << "devices:\n";
    for (const auto& d : c.devices) {
      o << "  - index: " << d.index << '\n';
      kv(o, 4, "name", q(d.name));
      if (!d.pci_bus_id.empty()) kv(o, 4, "pci_bus_id", q(d.pci_bus_id));
      if (d.sm_version) kv(o, 4, "sm", std::to_string(d.sm_version));
      if (d.sm_count) kv(o, 4, "sm_count", std::to_string(d.sm_count));
      if (d.sm_clock) kv(o, 4, "sm_clock", hz_(*d.sm_clock));
      if (d.memory_clock) kv(o, 4, "memory_clock", hz_(*d.memory_clock));
      if (d.memory) kv(o, 4, "memory", b_(*d.memory));
      if (d.memory_bus_width) kv(o, 4, "memory_bus_width", std::to_string(d.memory_bus_width));
      if (d.memory_bandwidth) kv(o, 4, "memory_bandwidth", bw_(*d.memory_bandwidth));
      if (d.pcie_generation || d.pcie_width || d.pcie_max_generation || d.pcie_max_width)
        kv(o, 4, "pcie",
           fmt::format("{{generation: {}, width: {}, max_generation: {}, max_width: {}}}", d.pcie_generation,
                       d.pcie_width, d.pcie_max_generation, d.pcie_max_width));
      if (d.nvlinks) kv(o, 4, "nvlinks", std::to_string(d.nvlinks));
      if (!d.peers.empty()) kv(o, 4, "peers", fmt::format("[{}]", fmt::join(d.peers, ", ")));
    }
  }
  if (!c.transfers.empty()) {
    o << "transfers:\n";
    for (const auto& t : c.transfers) {
      o << "  - kind: " << to_string(t.kind) << '\n';
      o << "    device: " << t.device << '\n';
      if (!t.source.empty()) kv(o, 4, "source", q(t.source));
      o << "    points:\n";
      for (const auto& pt : t.points) {
        o << "      - {size: " << b_(pt.size) << ", time: " << t_(pt.time) << ", bandwidth: " << bw_(pt.size / pt.time);
        if (pt.iqr) o << ", iqr: " << t_(*pt.iqr);
        if (pt.samples) o << ", samples: " << pt.samples;
        o << "}\n";
      }
    }
  }
  if (!c.p2p.empty()) {
    o << "p2p:\n";
    for (const auto& e : c.p2p) {
      o << "  - {src: " << e.src << ", dst: " << e.dst << ", peer_access: " << (e.peer_access ? "true" : "false");
      if (e.bandwidth) o << ", bandwidth: " << bw_(*e.bandwidth);
      if (e.bidirectional) o << ", bidirectional: " << bw_(*e.bidirectional);
      if (e.latency) o << ", latency: " << t_(*e.latency);
      o << "}\n";
    }
  }
  if (!c.collectives.empty()) {
    o << "collectives:\n";
    for (const auto& k : c.collectives) {
      o << "  - op: " << to_string(k.op) << '\n';
      o << "    gpus: " << k.gpus << '\n';
      o << "    nodes: " << k.nodes << '\n';
      kv(o, 4, "dtype", q(k.dtype));
      if (k.gpus_per_thread > 1) o << "    gpus_per_thread: " << k.gpus_per_thread << '\n';
      if (!k.source.empty()) kv(o, 4, "source", q(k.source));
      if (k.fit) o << "    fit: {alpha: " << t_(k.fit->alpha) << ", beta: " << bw_(k.fit->beta) << "}\n";
      o << "    points:\n";
      const double factor = bus_bandwidth_factor(k.op, k.gpus);
      for (const auto& pt : k.points) {
        const BytesPerSecond alg = algorithm_bandwidth(pt.size, pt.time);
        o << "      - {size: " << b_(pt.size) << ", time: " << t_(pt.time);
        if (pt.time_in_place) o << ", time_in_place: " << t_(*pt.time_in_place);
        o << ", algbw: " << bw_(alg);
        if (factor > 0) o << ", busbw: " << bw_(alg * factor);
        if (pt.iqr) o << ", iqr: " << t_(*pt.iqr);
        if (pt.samples) o << ", samples: " << pt.samples;
        o << "}\n";
      }
    }
  }
  if (!c.gemm.empty()) {
    o << "gemm:\n";
    for (const auto& g : c.gemm) {
      o << "  - {precision: " << g.precision << ", m: " << g.m << ", n: " << g.n << ", k: " << g.k
        << ", time: " << t_(g.time) << ", rate: "
        << q(fmt::format("{:.9g} TFLOPS", in_teraflops_per_second(
                                              flops(2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) *
                                                    static_cast<double>(g.k)) / g.time)));
      if (g.iqr) o << ", iqr: " << t_(*g.iqr);
      if (g.samples) o << ", samples: " << g.samples;
      o << "}\n";
    }
  }
  if (!c.layers.empty()) {
    o << "layers:\n";
    for (const auto& l : c.layers) {
      o << "  - model: " << q(l.model) << '\n';
      o << "    batch: " << l.batch << '\n';
      o << "    precision: " << l.precision << '\n';
      if (!l.gpu.empty()) kv(o, 4, "gpu", q(l.gpu));
      o << "    times:\n";
      for (const auto& t : l.layers) {
        o << "      - {name: " << q(t.name);
        if (t.forward) o << ", forward: " << t_(*t.forward);
        if (t.backward) o << ", backward: " << t_(*t.backward);
        if (!t.how.empty()) o << ", how: " << q(t.how);
        o << "}\n";
      }
    }
  }
  if (c.storage) {
    o << "storage:\n";
    kv(o, 2, "path", q(c.storage->path));
    if (c.storage->size > Bytes{}) kv(o, 2, "size", b_(c.storage->size));
    if (c.storage->page_cache) kv(o, 2, "page_cache", bw_(*c.storage->page_cache));
    if (c.storage->direct) kv(o, 2, "direct", bw_(*c.storage->direct));
  }
  return o.str();
}

void save_calibration(const Calibration& c, const std::filesystem::path& file) {
  write_file_atomically(file.string(), to_yaml(c));
}

}  // namespace dlscale
