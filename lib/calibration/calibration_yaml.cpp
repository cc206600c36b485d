// The calibration file (schema 1): reader on yamlio (file:line:col in every error, unknown keys
// rejected) and a writer whose output the reader reads back. The format is documented in
// docs/calibration.md.
#include <fmt/format.h>

#include <cmath>

#include "dlscale/atomic_file.hpp"
#include "dlscale/calibration.hpp"
#include "dlscale/error.hpp"
#include "io/yaml_reader.hpp"
#include "io/yaml_writer.hpp"

namespace dlscale {
using yamlio::MapReader;
using yamlio::Node;

namespace {

// ---- reading ---------------------------------------------------------------------------------------

/// The multiply-adds of an m×n×k GEMM as FLOPs: 2·m·n·k.
Flops gemm_work(const GemmResult& g) {
  return flops(2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k));
}

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

/// Whether a derived figure written in the file differs from the one computed by more than 0.01 + 1 %.
bool disagrees(double got, double want) { return std::fabs(got - want) > 0.01 + 0.01 * want; }

/// A derived bandwidth written for people (algbw, busbw, bandwidth) must agree with size/time: a file
/// edited by hand into inconsistency is an error, not a silent choice of one of the two.
void check_derived(const Node& n, BytesPerSecond expected) {
  const double want = in_gigabytes_per_second(expected);
  if (disagrees(in_gigabytes_per_second(n.bandwidth()), want))
    n.fail(fmt::format("disagrees with size/time ({:.4g} GB/s); fix or remove it", want));
}

/// `iqr` and `samples`, the spread of a measurement's samples and their count, where the file gives them.
void read_spread(MapReader& m, std::optional<Seconds>& iqr, std::size_t& samples) {
  if (auto n = m.optional("iqr")) iqr = n->seconds();
  if (auto n = m.optional("samples")) samples = static_cast<std::size_t>(n->non_negative_integer());
}

/// A list of measured points: each one's `size` (greater than zero and larger than the size of the point
/// before it) and `time`, then its other keys read by `read_rest`.
template <class Point, class ReadRest>
std::vector<Point> read_points(const Node& list, ReadRest read_rest) {
  std::vector<Point> out;
  for (const auto& item : list.items()) {
    MapReader m(item);
    Point p;
    const Node size = m.required("size");
    p.size = size.bytes();
    if (!(p.size > Bytes{})) size.fail("a size must be greater than zero");
    if (!out.empty() && !(p.size > out.back().size)) size.fail("sizes must be listed in increasing order");
    p.time = positive_time(m.required("time"));
    read_rest(m, p);
    m.finish();
    out.push_back(p);
  }
  return out;
}

std::vector<CollectivePoint> read_collective_points(const Node& list, CollectiveOp op, int gpus) {
  return read_points<CollectivePoint>(list, [&](MapReader& m, CollectivePoint& p) {
    if (auto n = m.optional("time_in_place")) p.time_in_place = positive_time(*n);
    read_spread(m, p.iqr, p.samples);
    const BytesPerSecond alg = algorithm_bandwidth(p.size, p.time);
    if (auto n = m.optional("algbw")) check_derived(*n, alg);
    if (auto n = m.optional("busbw")) check_derived(*n, alg * bus_bandwidth_factor(op, gpus));
  });
}

std::vector<BandwidthPoint> read_bandwidth_points(const Node& list) {
  return read_points<BandwidthPoint>(list, [](MapReader& m, BandwidthPoint& p) {
    p.bandwidth = p.size / p.time;
    if (auto n = m.optional("bandwidth")) check_derived(*n, p.bandwidth);
    read_spread(m, p.iqr, p.samples);
  });
}

/// A mapping read into a new T by `read_keys`, which asks for the keys it knows; any other key is an error.
template <class T>
T read_map(const Node& node, void (*read_keys)(MapReader&, T&)) {
  MapReader m(node);
  T value;
  read_keys(m, value);
  m.finish();
  return value;
}

std::string opt_scalar(MapReader& m, std::string_view key) {
  auto n = m.optional(key);
  return n ? n->scalar() : std::string{};
}

void read_provenance(MapReader& m, Provenance& p) {
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
}

void read_device(MapReader& m, DeviceInfo& d) {
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
}

int read_schema(MapReader& m) {
  // The version first: a file of another schema must say so, not fail on a key this version lacks.
  const Node v = m.required("schema");
  const auto version = v.integer();
  if (version != kCalibrationSchema)
    v.fail(fmt::format("calibration schema version {} is not supported (this dlscale reads version {})", version,
                       kCalibrationSchema));
  return static_cast<int>(version);
}

void read_transfer(MapReader& t, TransferCurve& tc) {
  tc.kind = transfer_from(t.required("kind"));
  if (auto v = t.optional("device")) tc.device = small_int(*v, 0);
  tc.source = opt_scalar(t, "source");
  tc.points = read_bandwidth_points(t.required("points"));
}

void read_p2p(MapReader& p, P2PEntry& e) {
  e.src = small_int(p.required("src"), 0);
  e.dst = small_int(p.required("dst"), 0);
  if (auto v = p.optional("peer_access")) e.peer_access = v->boolean();
  if (auto v = p.optional("bandwidth")) e.bandwidth = v->bandwidth();
  if (auto v = p.optional("latency")) e.latency = v->latency();
  if (auto v = p.optional("bidirectional")) e.bidirectional = v->bandwidth();
}

void read_fit(MapReader& f, AlphaBeta& ab) {
  ab.alpha = f.required("alpha").seconds();
  ab.beta = f.required("beta").bandwidth();
}

void read_collective(MapReader& k, CollectiveCurve& cc) {
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
  if (auto v = k.optional("fit")) cc.fit = read_map(*v, read_fit);
  const Node pts = k.required("points");
  cc.points = read_collective_points(pts, cc.op, cc.gpus);
  if (cc.points.empty()) pts.fail("a curve needs at least one point");
}

void read_gemm(MapReader& g, GemmResult& r) {
  r.precision = g.required("precision").choice({"fp32", "tf32", "fp16", "bf16"});
  r.m = g.required("m").non_negative_integer();
  r.n = g.required("n").non_negative_integer();
  r.k = g.required("k").non_negative_integer();
  r.time = positive_time(g.required("time"));
  r.rate = gemm_work(r) / r.time;
  if (auto v = g.optional("rate")) {
    const double want = in_teraflops_per_second(r.rate);
    if (disagrees(in_teraflops_per_second(v->flops_rate()), want))
      v->fail(fmt::format("disagrees with 2·m·n·k/time ({:.4g} TFLOPS); fix or remove it", want));
  }
  read_spread(g, r.iqr, r.samples);
}

void read_layer_timing(MapReader& tm, LayerTiming& lt) {
  lt.name = tm.required("name").scalar();
  if (auto v = tm.optional("forward")) lt.forward = positive_time(*v);
  if (auto v = tm.optional("backward")) lt.backward = positive_time(*v);
  lt.how = opt_scalar(tm, "how");
}

void read_layer_profile(MapReader& l, LayerProfile& lp) {
  lp.model = l.required("model").scalar();
  lp.batch = small_int(l.required("batch"), 1);
  if (auto v = l.optional("precision")) lp.precision = v->choice({"fp32", "tf32", "fp16"});
  lp.gpu = opt_scalar(l, "gpu");
  for (const auto& t : l.required("times").items()) lp.layers.push_back(read_map(t, read_layer_timing));
}

void read_storage(MapReader& s, StorageResult& r) {
  r.path = s.required("path").scalar();
  if (auto v = s.optional("size")) r.size = v->bytes();
  if (auto v = s.optional("page_cache")) r.page_cache = v->bandwidth();
  if (auto v = s.optional("direct")) r.direct = v->bandwidth();
}

/// The optional list `key:`, each item read by `read_keys` and appended to `out`.
template <class T>
void read_list(MapReader& m, std::string_view key, std::vector<T>& out, void (*read_keys)(MapReader&, T&)) {
  if (auto n = m.optional(key))
    for (const auto& item : n->items()) out.push_back(read_map(item, read_keys));
}

Calibration read_calibration(const Node& root, const std::string& source) {
  MapReader m(root);
  Calibration c;
  c.source_file = source;
  c.schema = read_schema(m);
  c.provenance = read_map(m.required("provenance"), read_provenance);
  c.gpu = opt_scalar(m, "gpu");
  c.topology_file = opt_scalar(m, "topology");
  c.raw_samples = opt_scalar(m, "raw_samples");
  read_list(m, "devices", c.devices, read_device);
  read_list(m, "transfers", c.transfers, read_transfer);
  read_list(m, "p2p", c.p2p, read_p2p);
  if (auto n = m.optional("collectives")) {
    for (const auto& item : n->items()) {
      CollectiveCurve cc = read_map(item, read_collective);
      if (c.find_curve(cc.op, cc.gpus, cc.nodes) != nullptr)
        item.fail(fmt::format("a second {} curve on {} GPUs and {} node(s)", to_string(cc.op), cc.gpus, cc.nodes));
      c.collectives.push_back(std::move(cc));
    }
  }
  read_list(m, "gemm", c.gemm, read_gemm);
  read_list(m, "layers", c.layers, read_layer_profile);
  if (auto n = m.optional("storage")) c.storage = read_map(*n, read_storage);
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
// Every string goes out double-quoted and escaped as JSON (a JSON string is a YAML string): provenance,
// notes and paths may hold any character.
std::string q(const std::string& s) { return yamlio::quoted(s, yamlio::Escape::json); }
std::string t_(Seconds t) { return q(fmt::format("{:.9g} us", in_us(t))); }
std::string b_(Bytes b) {
  const double v = in_bytes(b);
  return q(v == std::floor(v) && v < 9e15 ? fmt::format("{} B", static_cast<std::int64_t>(v)) : fmt::format("{:.9g} B", v));
}
std::string bw_(BytesPerSecond b) { return q(fmt::format("{:.9g} GB/s", in_gigabytes_per_second(b))); }
std::string hz_(Hertz h) { return q(fmt::format("{:.9g} MHz", in_megahertz(h))); }
std::string n_(std::int64_t v) { return std::to_string(v); }
std::string nonzero(std::int64_t v) { return v ? std::to_string(v) : std::string(); }
std::string text(const std::string& s) { return s.empty() ? std::string() : q(s); }

void add_spread(yamlio::FlowMap& m, const std::optional<Seconds>& iqr, std::size_t samples) {
  if (iqr) m.add("iqr", t_(*iqr));
  if (samples) m.add("samples", n_(static_cast<std::int64_t>(samples)));
}

/// A top-level list `key:` with each of `items` written by `write_item`; nothing when the list is empty.
template <class T>
void write_list(yamlio::Emitter& o, std::string_view key, const std::vector<T>& items,
                void (*write_item)(yamlio::Emitter&, const T&)) {
  if (items.empty()) return;
  o.key(0, key);
  for (const auto& item : items) write_item(o, item);
}

void write_provenance(yamlio::Emitter& o, const Provenance& p) {
  o.key(0, "provenance").pair(2, "tool", q(p.tool)).pair_if(2, "date", text(p.date)).pair_if(2, "host", text(p.host));
  o.pair_if(2, "command_line", text(p.command_line));
  for (auto [k, v] : {std::pair<const char*, const std::string*>{"driver", &p.driver},
                      {"cuda", &p.cuda},
                      {"nccl", &p.nccl},
                      {"cudnn", &p.cudnn},
                      {"cublas", &p.cublas}})
    o.pair_if(2, k, text(*v));
  if (!p.sources.empty()) {
    o.key(2, "sources");
    for (const auto& src : p.sources) o.item(4, q(src));
  }
  o.pair_if(2, "notes", text(p.notes));
}

void write_device(yamlio::Emitter& o, const DeviceInfo& d) {
  o.item_pair(2, "index", n_(d.index)).pair(4, "name", q(d.name)).pair_if(4, "pci_bus_id", text(d.pci_bus_id));
  o.pair_if(4, "sm", nonzero(d.sm_version)).pair_if(4, "sm_count", nonzero(d.sm_count));
  if (d.sm_clock) o.pair(4, "sm_clock", hz_(*d.sm_clock));
  if (d.memory_clock) o.pair(4, "memory_clock", hz_(*d.memory_clock));
  if (d.memory) o.pair(4, "memory", b_(*d.memory));
  o.pair_if(4, "memory_bus_width", nonzero(d.memory_bus_width));
  if (d.memory_bandwidth) o.pair(4, "memory_bandwidth", bw_(*d.memory_bandwidth));
  if (d.pcie_generation || d.pcie_width || d.pcie_max_generation || d.pcie_max_width)
    o.pair(4, "pcie",
           yamlio::FlowMap()
               .add("generation", n_(d.pcie_generation))
               .add("width", n_(d.pcie_width))
               .add("max_generation", n_(d.pcie_max_generation))
               .add("max_width", n_(d.pcie_max_width))
               .str());
  o.pair_if(4, "nvlinks", nonzero(d.nvlinks));
  if (!d.peers.empty()) {
    std::vector<std::string> peers;
    for (const auto peer : d.peers) peers.push_back(n_(peer));
    o.pair(4, "peers", yamlio::flow_sequence(peers));
  }
}

void write_transfer(yamlio::Emitter& o, const TransferCurve& t) {
  o.item_pair(2, "kind", std::string(to_string(t.kind))).pair(4, "device", n_(t.device)).pair_if(4, "source", text(t.source));
  o.key(4, "points");
  for (const auto& pt : t.points) {
    yamlio::FlowMap m;
    m.add("size", b_(pt.size)).add("time", t_(pt.time)).add("bandwidth", bw_(pt.size / pt.time));
    add_spread(m, pt.iqr, pt.samples);
    o.item(6, m.str());
  }
}

void write_p2p_entry(yamlio::Emitter& o, const P2PEntry& e) {
  yamlio::FlowMap m;
  m.add("src", n_(e.src)).add("dst", n_(e.dst)).add("peer_access", e.peer_access ? "true" : "false");
  if (e.bandwidth) m.add("bandwidth", bw_(*e.bandwidth));
  if (e.bidirectional) m.add("bidirectional", bw_(*e.bidirectional));
  if (e.latency) m.add("latency", t_(*e.latency));
  o.item(2, m.str());
}

void write_collective(yamlio::Emitter& o, const CollectiveCurve& k) {
  o.item_pair(2, "op", std::string(to_string(k.op))).pair(4, "gpus", n_(k.gpus)).pair(4, "nodes", n_(k.nodes));
  o.pair(4, "dtype", q(k.dtype));
  if (k.gpus_per_thread > 1) o.pair(4, "gpus_per_thread", n_(k.gpus_per_thread));
  o.pair_if(4, "source", text(k.source));
  if (k.fit) o.pair(4, "fit", yamlio::FlowMap().add("alpha", t_(k.fit->alpha)).add("beta", bw_(k.fit->beta)).str());
  o.key(4, "points");
  const double factor = bus_bandwidth_factor(k.op, k.gpus);
  for (const auto& pt : k.points) {
    const BytesPerSecond alg = algorithm_bandwidth(pt.size, pt.time);
    yamlio::FlowMap m;
    m.add("size", b_(pt.size)).add("time", t_(pt.time));
    if (pt.time_in_place) m.add("time_in_place", t_(*pt.time_in_place));
    m.add("algbw", bw_(alg));
    if (factor > 0) m.add("busbw", bw_(alg * factor));
    add_spread(m, pt.iqr, pt.samples);
    o.item(6, m.str());
  }
}

void write_gemm_result(yamlio::Emitter& o, const GemmResult& g) {
  yamlio::FlowMap m;
  m.add("precision", g.precision).add("m", n_(g.m)).add("n", n_(g.n)).add("k", n_(g.k)).add("time", t_(g.time));
  m.add("rate", q(fmt::format("{:.9g} TFLOPS", in_teraflops_per_second(gemm_work(g) / g.time))));
  add_spread(m, g.iqr, g.samples);
  o.item(2, m.str());
}

void write_layer_profile(yamlio::Emitter& o, const LayerProfile& l) {
  o.item_pair(2, "model", q(l.model)).pair(4, "batch", n_(l.batch)).pair(4, "precision", l.precision);
  o.pair_if(4, "gpu", text(l.gpu)).key(4, "times");
  for (const auto& t : l.layers) {
    yamlio::FlowMap m;
    m.add("name", q(t.name));
    if (t.forward) m.add("forward", t_(*t.forward));
    if (t.backward) m.add("backward", t_(*t.backward));
    if (!t.how.empty()) m.add("how", q(t.how));
    o.item(6, m.str());
  }
}
}  // namespace

std::string to_yaml(const Calibration& c) {
  yamlio::Emitter o;
  o.comment("dlscale calibration file (schema 1; docs/calibration.md). Sizes in bytes, times per operation.");
  o.pair(0, "schema", n_(kCalibrationSchema));
  write_provenance(o, c.provenance);
  o.pair_if(0, "gpu", text(c.gpu)).pair_if(0, "topology", text(c.topology_file)).pair_if(0, "raw_samples", text(c.raw_samples));
  write_list(o, "devices", c.devices, write_device);
  write_list(o, "transfers", c.transfers, write_transfer);
  write_list(o, "p2p", c.p2p, write_p2p_entry);
  write_list(o, "collectives", c.collectives, write_collective);
  write_list(o, "gemm", c.gemm, write_gemm_result);
  write_list(o, "layers", c.layers, write_layer_profile);
  if (c.storage) {
    o.key(0, "storage").pair(2, "path", q(c.storage->path));
    if (c.storage->size > Bytes{}) o.pair(2, "size", b_(c.storage->size));
    if (c.storage->page_cache) o.pair(2, "page_cache", bw_(*c.storage->page_cache));
    if (c.storage->direct) o.pair(2, "direct", bw_(*c.storage->direct));
  }
  return std::move(o).str();
}

void save_calibration(const Calibration& c, const std::filesystem::path& file) {
  write_file_atomically(file.string(), to_yaml(c));
}

}  // namespace dlscale
