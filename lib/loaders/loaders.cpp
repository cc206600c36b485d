// Parse once, at the edge: YAML files -> plain structs. Schemas: docs/input-formats.md.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <map>
#include <memory>
#include <mutex>

#include "dlscale/io.hpp"
#include "dlscale/topology.hpp"
#include "io/files.hpp"
#include "io/numbers.hpp"
#include "io/text.hpp"
#include "io/yaml_reader.hpp"
#include "loaders/gpu_entry.hpp"
#include "loaders/input_entry.hpp"
#include "loaders/parallel_entry.hpp"
#include "topology/parse.hpp"

#ifndef DLSCALE_SOURCE_DATA_DIR
#define DLSCALE_SOURCE_DATA_DIR ""
#endif
#ifndef DLSCALE_INSTALL_DATA_DIR
#define DLSCALE_INSTALL_DATA_DIR ""
#endif

namespace dlscale {
namespace fs = std::filesystem;
using yamlio::MapReader;
using yamlio::Node;

// ---- data folders ---------------------------------------------------------------------------------
fs::path data_dir() {
  if (const char* env = std::getenv("DLSCALE_DATA_DIR"); env != nullptr && *env != '\0') return env;
  const fs::path installed = DLSCALE_INSTALL_DATA_DIR;
  std::error_code ec;
  if (!installed.empty() && fs::exists(installed / "models", ec)) return installed;
  return DLSCALE_SOURCE_DATA_DIR;
}

namespace {
fs::path folder(DataKind kind) {
  switch (kind) {
    case DataKind::cluster: return data_dir() / "topologies";
    case DataKind::network: return data_dir() / "models";
    case DataKind::framework: return data_dir() / "models" / "frameworks";
    case DataKind::profile: return data_dir() / "models" / "profiles";
  }
  return {};
}
std::string_view noun(DataKind kind) {
  switch (kind) {
    case DataKind::cluster: return "cluster";
    case DataKind::network: return "model";
    case DataKind::framework: return "framework";
    case DataKind::profile: return "profile";
  }
  return "";
}
}  // namespace

std::vector<std::string> list_names(DataKind kind) {
  std::vector<std::string> out;
  std::error_code ec;
  auto visit = [&](const fs::directory_entry& e) {
    if (!e.is_regular_file() || e.path().extension() != ".yaml") return;
    const auto stem = e.path().stem().string();
    if (kind == DataKind::cluster && (stem == "gpus" || stem == "compute-params")) return;  // catalogue, kernel parameters
    out.push_back(stem);
  };
  if (kind == DataKind::profile) {
    for (const auto& e : fs::recursive_directory_iterator(folder(kind), ec)) visit(e);
  } else {
    for (const auto& e : fs::directory_iterator(folder(kind), ec)) visit(e);
  }
  std::sort(out.begin(), out.end());
  return out;
}

fs::path resolve(DataKind kind, std::string_view name_or_file, std::string_view option) {
  const fs::path as_path(name_or_file);
  std::error_code ec;
  const bool looks_like_path = name_or_file.find('/') != std::string_view::npos || as_path.extension() == ".yaml" ||
                               as_path.extension() == ".yml";
  if (looks_like_path || fs::is_regular_file(as_path, ec)) {
    if (!fs::is_regular_file(as_path, ec))
      throw InputError(SourceLocation{std::string(name_or_file), 0, 0}, std::string(option), cannot_open(as_path));
    return as_path;
  }
  const fs::path candidate = folder(kind) / (std::string(name_or_file) + ".yaml");
  if (fs::is_regular_file(candidate, ec)) return candidate;
  if (kind == DataKind::profile) {
    for (const auto& e : fs::recursive_directory_iterator(folder(kind), ec))
      if (e.is_regular_file() && e.path().filename() == candidate.filename()) return e.path();
  } else {
    // Then as people write names ("ResNet-50", "DGX A100", "PyTorch-DDP"): letters and digits compared, when
    // exactly one file answers.
    const std::string key = name_key(name_or_file);
    std::vector<std::string> hits;
    for (const auto& n : list_names(kind))
      if (name_key(n) == key) hits.push_back(n);
    if (hits.size() == 1) return folder(kind) / (hits.front() + ".yaml");
  }
  const std::string known = fmt::format("{}", fmt::join(list_names(kind), ", "));
  throw UsageError(std::string(option), fmt::format("unknown {} '{}' (known: {})", noun(kind), name_or_file,
                                                    known.empty() ? "none found in " + folder(kind).string() : known));
}

// ---- GPUs -------------------------------------------------------------------------------------------
namespace {
/// A whole number from 0 to `max` held in an int (a count, a version, a width).
int small_count(const Node& n, int max) {
  const int v = n.int_at_most(max);
  if (v < 0) n.fail(fmt::format("must not be negative, got {}", v));
  return v;
}

GpuSpec read_gpu(MapReader& m, bool require_all) {
  GpuSpec g;
  auto req_or_opt = [&](std::string_view key) { return require_all ? std::optional<Node>(m.required(key)) : m.optional(key); };
  g.name = m.required("name").scalar();
  if (auto n = m.optional("architecture")) g.architecture = n->scalar();
  if (auto n = m.optional("sm")) g.sm_version = small_count(*n, 1000);
  if (auto n = m.optional("sms")) g.sm_count = small_count(*n, 100000);
  g.peak_fp32 = m.required("peak_fp32").flops_rate();
  if (auto n = req_or_opt("peak_fp16")) g.peak_fp16 = n->flops_rate();
  if (auto n = m.optional("peak_tf32")) g.peak_tf32 = n->flops_rate();
  if (auto n = m.optional("peak_bf16")) g.peak_bf16 = n->flops_rate();
  if (auto n = m.optional("peak_fp8")) g.peak_fp8 = n->flops_rate();
  g.memory_bandwidth = m.required("memory_bandwidth").bandwidth();
  if (auto n = req_or_opt("memory")) g.memory_size = n->bytes();
  if (auto n = m.optional("base_clock")) g.base_clock = n->frequency();
  if (auto n = m.optional("boost_clock")) g.boost_clock = n->frequency();
  if (auto n = m.optional("nvlinks")) g.nvlink_count = small_count(*n, 1000);
  if (auto n = m.optional("nvlink_generation")) g.nvlink_generation = small_count(*n, 1000);
  if (auto n = m.optional("pcie_generation")) g.pcie_generation = small_count(*n, 1000);
  if (auto n = m.optional("pcie_width")) g.pcie_width = small_count(*n, 1000);
  if (auto n = m.optional("source")) g.source = n->scalar();
  return g;
}

struct CatalogueEntry {
  std::string id;
  std::vector<std::string> aliases;  // other names users give it (e.g. the names in published tables)
  GpuSpec spec;
};

std::vector<CatalogueEntry> parse_catalogue(const fs::path& file) {
  MapReader top(yamlio::load_file(file));
  std::vector<CatalogueEntry> out;
  for (const auto& item : top.required("gpus").items()) {
    MapReader m(item);
    CatalogueEntry e;
    const Node id = m.required("id");
    e.id = id.scalar();
    auto taken = [&](const std::string& name) {
      for (const auto& seen : out) {
        if (lower_ascii(seen.id) == lower_ascii(name)) return true;
        for (const auto& a : seen.aliases)
          if (lower_ascii(a) == lower_ascii(name)) return true;
      }
      return false;
    };
    if (taken(e.id)) id.fail(fmt::format("GPU id '{}' is used twice", e.id));
    if (auto al = m.optional("aliases")) {
      for (const auto& a : al->items()) {
        e.aliases.push_back(a.scalar());
        if (taken(e.aliases.back()) || lower_ascii(e.aliases.back()) == lower_ascii(e.id))
          a.fail(fmt::format("GPU name '{}' is used twice", e.aliases.back()));
      }
    }
    e.spec = read_gpu(m, true);
    m.finish();
    out.push_back(std::move(e));
  }
  top.finish();
  return out;
}

// A file's modification time and size: what is read from it is reused while both are unchanged.
struct FileStamp {
  fs::file_time_type mtime;
  std::uintmax_t size = 0;
  bool operator==(const FileStamp&) const = default;
};

std::optional<FileStamp> stamp_of(const fs::path& file) {
  std::error_code ec_time, ec_size;
  const auto mtime = fs::last_write_time(file, ec_time);
  const auto size = fs::file_size(file, ec_size);
  if (ec_time || ec_size) return std::nullopt;
  return FileStamp{mtime, size};
}

/// Values read from a file, kept per key while the file's stamp is unchanged. `make` runs outside the lock
/// (two threads may both read a changed file; both results are equal); an empty result is not kept, so a
/// file that fails to parse gives its error every time.
template <class T>
class StampedCache {
 public:
  template <class Make>
  std::optional<T> get(const std::string& key, const fs::path& file, Make make) {
    const auto stamp = stamp_of(file);
    if (stamp) {
      const std::lock_guard lock(mutex_);
      if (const auto it = kept_.find(key); it != kept_.end() && it->second.first == *stamp) return it->second.second;
    }
    std::optional<T> value = make();
    if (stamp && value) {
      const std::lock_guard lock(mutex_);
      kept_.insert_or_assign(key, std::pair{*stamp, *value});
    }
    return value;
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::pair<FileStamp, T>> kept_;
};

// The parsed catalogue, cached per path: a cluster naming its GPU must not re-read gpus.yaml on every load
// (sweeps and reproductions load many clusters).
using Catalogue = std::shared_ptr<const std::vector<CatalogueEntry>>;

Catalogue read_catalogue() {
  static StampedCache<Catalogue> cache;
  const fs::path file = data_dir() / "topologies" / "gpus.yaml";
  return *cache.get(file.string(), file, [&] {
    return std::optional<Catalogue>(std::make_shared<const std::vector<CatalogueEntry>>(parse_catalogue(file)));
  });
}
}  // namespace

std::vector<GpuSpec> load_gpu_catalogue() {
  std::vector<GpuSpec> out;
  for (const auto& e : *read_catalogue()) out.push_back(e.spec);
  return out;
}

std::vector<std::string> list_gpu_ids() {
  std::vector<std::string> out;
  for (const auto& e : *read_catalogue()) out.push_back(e.id);
  return out;
}

namespace {
// The catalogue entry (its id, name or an alias equal to `want`, lower-cased) read without parsing the
// rest of gpus.yaml: a command that names one GPU should not pay for thirty (issue 17's start-up). The
// file's text is cut at its top-level sequence items; an item whose text contains `want` is parsed alone,
// after the file's header. Nothing is returned (and the caller parses the whole catalogue, with its checks
// and its errors) unless exactly one item matches and it parses cleanly: a duplicated name, an unknown one
// or a broken entry gets the whole file's message, so positions in this text are never shown. (The other
// lines were once kept as blank lines: libyaml's scanning of them cost more than the rest of the lookup.)
std::optional<GpuSpec> find_gpu_alone(const fs::path& file, const std::string& want) {
  std::ifstream in(file, std::ios::binary);
  if (!in || want.empty()) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  std::vector<std::size_t> starts;  // offsets of the lines of the text
  for (std::size_t b = 0; b < text.size();) {
    starts.push_back(b);
    const auto e = text.find('\n', b);
    b = e == std::string::npos ? text.size() : e + 1;
  }
  auto line = [&](std::size_t i) {
    const auto b = starts[i];
    const auto e = i + 1 < starts.size() ? starts[i + 1] : text.size();
    return std::string_view(text).substr(b, e - b);
  };
  std::size_t header = starts.size();  // the "gpus:" line
  for (std::size_t i = 0; i < starts.size(); ++i)
    if (line(i).starts_with("gpus:")) {
      header = i;
      break;
    }
  if (header == starts.size()) return std::nullopt;
  std::vector<std::size_t> items;  // first line of each "  - " item
  for (std::size_t i = header + 1; i < starts.size(); ++i) {
    const auto l = line(i);
    if (l.starts_with("  - ")) items.push_back(i);
    else if (!l.empty() && l[0] != ' ' && l[0] != '#' && l[0] != '\n' && l[0] != '\r') return std::nullopt;  // another top-level key
  }
  const std::string lower = lower_ascii(text);
  auto offset = [&](std::size_t i) { return i < starts.size() ? starts[i] : text.size(); };
  std::optional<GpuSpec> found;
  for (std::size_t k = 0; k < items.size(); ++k) {
    const std::size_t first = items[k], last = k + 1 < items.size() ? items[k + 1] : starts.size();
    const std::string_view block = std::string_view(lower).substr(offset(first), offset(last) - offset(first));
    if (block.find(want) == std::string_view::npos) continue;
    // the header (to its "gpus:" line) and this item
    std::string alone = text.substr(0, offset(header + 1));
    alone.append(text, offset(first), offset(last) - offset(first));
    try {
      MapReader top(yamlio::load_string(alone, file.string()));
      const auto entries = top.required("gpus").items();
      if (entries.size() != 1) return std::nullopt;
      MapReader m(entries.front());
      bool match = lower_ascii(m.required("id").scalar()) == want;
      if (auto al = m.optional("aliases"))
        for (const auto& a : al->items()) match = match || lower_ascii(a.scalar()) == want;
      GpuSpec spec = read_gpu(m, true);
      m.finish();
      if (!match && lower_ascii(spec.name) != want) continue;
      if (found) return std::nullopt;  // two entries answer to the name: the whole file's check says so
      found = std::move(spec);
    } catch (const InputError&) {
      return std::nullopt;
    }
  }
  return found;
}
}  // namespace

GpuSpec find_gpu(std::string_view name) {
  const auto want = lower_ascii(name);
  {
    // One entry read alone, kept per (file, name).
    static StampedCache<GpuSpec> alone;
    const fs::path file = data_dir() / "topologies" / "gpus.yaml";
    if (auto spec = alone.get(file.string() + '\n' + want, file, [&] { return find_gpu_alone(file, want); })) return *spec;
  }
  const auto catalogue = read_catalogue();
  const auto& all = *catalogue;
  for (const auto& e : all) {
    if (lower_ascii(e.id) == want || lower_ascii(e.spec.name) == want) return e.spec;
    for (const auto& a : e.aliases)
      if (lower_ascii(a) == want) return e.spec;
  }
  // Then as people write it (nvidia-smi, published tables): spaces, hyphens and a leading NVIDIA, Tesla or
  // GeForce aside, if exactly one entry answers (the catalogue test checks no two entries share a key).
  const std::string key = gpu_name_key(name);
  const CatalogueEntry* hit = nullptr;
  std::vector<std::string> starting;  // ids the name begins: "a100" → the four A100 boards
  for (const auto& e : all) {
    bool match = gpu_name_key(e.id) == key || gpu_name_key(e.spec.name) == key;
    for (const auto& a : e.aliases) match = match || gpu_name_key(a) == key;
    if (match) {
      if (hit && hit != &e) throw InputError(fmt::format("GPU '{}' could be '{}' or '{}': name one by its id", name, hit->id, e.id));
      hit = &e;
    }
    if (!key.empty() && gpu_name_key(e.id).starts_with(key)) starting.push_back(e.id);
  }
  if (hit) return hit->spec;
  if (!starting.empty())
    throw InputError(fmt::format("unknown GPU '{}' (did you mean {}?)", name, fmt::join(starting, ", ")));
  std::string known;
  for (const auto& e : all) known += (known.empty() ? "" : ", ") + e.id;
  throw InputError(fmt::format("unknown GPU '{}' (known: {})", name, known));
}

GpuSpec load_gpu(const std::string& name_or_file) {
  std::error_code ec;
  const fs::path file(name_or_file);
  if (!fs::is_regular_file(file, ec)) {
    const bool looks_like_path = name_or_file.find('/') != std::string::npos || file.extension() == ".yaml" || file.extension() == ".yml";
    if (looks_like_path) throw InputError(fmt::format("'{}': no such GPU file (or not readable)", name_or_file));
    return find_gpu(name_or_file);
  }
  return read_gpu_node(yamlio::load_file(file));
}

GpuSpec read_gpu_node(const Node& n) {
  if (n.is_map()) {
    MapReader g(n);
    (void)g.optional("id");  // a catalogue entry copied whole reads as it is
    (void)g.optional("aliases");
    GpuSpec spec = read_gpu(g, false);
    g.finish();
    return spec;
  }
  try {
    return find_gpu(n.scalar());
  } catch (const InputError& e) {
    if (!e.where().file.empty()) throw;  // an error inside the catalogue keeps its own place
    n.fail(e.message());
  }
}

// ---- clusters (simple form) -------------------------------------------------------------------------
namespace {
LinkSpec read_link(const Node& n) {
  MapReader m(n);
  LinkSpec l;
  l.bandwidth = m.required("bandwidth").bandwidth();
  if (auto lat = m.optional("latency")) l.latency = lat->latency();
  m.finish();
  return l;
}
}  // namespace

FabricSpec parse_fabric_spec(std::string_view text, std::string_view option) {
  const std::string opt(option);
  const std::string t(text);
  const auto bad = [&](const std::string& why) -> FabricSpec {
    throw InputError(SourceLocation{}, opt, fmt::format("'{}' {} (expected KIND:SPEED[:COUNT], e.g. infiniband:200Gb/s:8)", t, why));
  };
  const auto c1 = t.find(':');
  if (c1 == std::string::npos) return bad("has no speed");
  FabricSpec f;
  f.kind = t.substr(0, c1);
  if (f.kind == "ib") f.kind = "infiniband";
  if (f.kind == "roce" || f.kind == "eth") f.kind = "ethernet";
  if (f.kind != "infiniband" && f.kind != "ethernet") return bad(fmt::format("names the network '{}' (infiniband or ethernet)", f.kind));
  const auto c2 = t.find(':', c1 + 1);
  const std::string speed = t.substr(c1 + 1, c2 == std::string::npos ? std::string::npos : c2 - c1 - 1);
  try {
    f.speed = parse_bandwidth(speed);
  } catch (const std::exception& e) {
    return bad(fmt::format("has the speed '{}': {}", speed, e.what()));
  }
  if (!(f.speed > BytesPerSecond{})) return bad("needs a speed greater than zero");
  if (c2 != std::string::npos) {
    const auto n = whole_number(t.substr(c2 + 1), 1, 1024);
    if (!n) return bad(fmt::format("has the NIC count '{}' (a whole number from 1 to 1024)", t.substr(c2 + 1)));
    f.nics = static_cast<int>(*n);
  }
  return f;
}

namespace {
/// "43.4 MP/s": megapixels decoded per second. A bare number (no unit) or another unit is an error.
double decode_rate(const Node& n) {
  const std::string text = n.scalar();
  const auto space = text.find_first_not_of("0123456789.eE+-");
  double v = -1.0;
  std::size_t used = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = space == std::string::npos ? std::string() : text.substr(space);
  unit.erase(0, unit.find_first_not_of(' '));
  if (used == 0 || used != space || unit != "MP/s")
    n.fail(fmt::format("'{}' is not a decode rate: a number and the unit MP/s (megapixels per second), e.g. \"43 MP/s\"", text));
  if (!(v > 0.0) || !std::isfinite(v)) n.fail(fmt::format("a decode rate must be greater than zero, got '{}'", text));
  return v;
}

/// The entry `id` of the list `key` in models/input/FILE (cpus, datasets); an unknown id fails at `ref`.
template <class F>
void input_entry(const char* file, const char* key, const Node& ref, F&& read) {
  const std::string want = ref.scalar();
  MapReader top(yamlio::load_file(data_dir() / "models" / "input" / file));
  std::string known;
  bool found = false;
  for (const auto& item : top.required(key).items()) {
    MapReader e(item);
    const std::string id = e.required("id").scalar();
    known += (known.empty() ? "" : ", ") + id;
    (void)e.optional("source");
    (void)e.optional("notes");
    if (lower_ascii(id) == lower_ascii(want) && !found) {
      read(e);
      found = true;
    } else {
      (void)e.entries();
    }
    e.finish();
  }
  if (!found) ref.fail(fmt::format("unknown {} '{}' (known: {})", key, want, known));
}

}  // namespace

/// A cluster's `input:` section (docs/input-formats.md, "Input pipeline"); loaders/input_entry.hpp.
InputPipeline read_input(const Node& n, const Cluster& c) {
  MapReader m(n);
  InputPipeline p;
  if (auto d = m.optional("data")) p.data = data_source_from_string(d->choice({"synthetic", "ram", "nvme", "nfs"}));
  if (auto e = m.optional("epoch")) p.first_epoch = e->choice({"first", "later"}) == "first";
  if (auto x = m.optional("nvme")) p.nvme = x->bandwidth();
  if (auto x = m.optional("ram")) p.ram = x->bytes();
  if (auto x = m.optional("nfs")) {
    MapReader f(*x);
    p.nfs_aggregate = f.required("aggregate").bandwidth();
    if (auto pn = f.optional("per_node")) p.nfs_per_node = pn->bandwidth();
    f.finish();
  } else if (p.data == DataSource::nfs) {
    m.required("data").fail("data 'nfs' needs 'nfs: {aggregate: ..., per_node: ...}'");
  }
  if (auto x = m.optional("dataset")) {
    p.dataset = x->scalar();
    input_entry("datasets.yaml", "datasets", *x, [&](MapReader& e) {
      p.dataset_size = e.required("size").bytes();
      const Node samples = e.required("samples");
      const auto count = samples.non_negative_integer();
      if (count < 1) samples.fail("a dataset needs at least one sample");
      p.sample_size = p.dataset_size / static_cast<double>(count);
      const Node mp = e.required("megapixels");
      p.sample_megapixels = mp.positive_number();
    });
  } else if (p.data != DataSource::synthetic) {
    m.node().fail("'input' needs 'dataset' (an id in models/input/datasets.yaml) unless its data is synthetic");
  }
  if (auto x = m.optional("cpu")) {
    p.cpu = x->scalar();
    input_entry("cpus.yaml", "cpus", *x, [&](MapReader& e) { p.decode_mpix_per_core = decode_rate(e.required("decode")); });
  }
  if (auto x = m.optional("decode")) p.decode_mpix_per_core = decode_rate(*x);  // replaces the CPU's rate
  if (auto x = m.optional("cores")) {
    p.cores = x->int_at_most(1'000'000);
    if (p.cores < 1) x->fail("a node needs at least one CPU core");
  }
  if (p.decode_mpix_per_core > 0.0 && p.cores == 0) m.node().fail("a decode rate needs 'cores' (CPU cores per node)");
  if (auto x = m.optional("workers_per_gpu")) p.workers_per_gpu = small_count(*x, 1'000'000);
  if (auto x = m.optional("gpu_decode")) p.gpu_decode_mpix = decode_rate(*x);
  m.finish();
  default_storage(p, c);
  return p;
}

namespace {

Cluster read_cluster(const Node& root, const std::string& source, const ClusterOverrides& ov = {}) {
  MapReader m(root);
  Cluster c;
  c.source_file = source;
  c.name = m.required("name").scalar();
  if (auto n = m.optional("description")) c.description = n->scalar();
  {
    const Node n = m.required("nodes");
    c.max_nodes = n.int_at_most(1'000'000);
    if (c.max_nodes < 1) n.fail("a cluster needs at least one node");
    if (ov.nodes > 0) c.max_nodes = ov.nodes;
  }
  {
    const Node n = m.required("gpus_per_node");
    c.gpus_per_node = n.int_at_most(1024);
    if (c.gpus_per_node < 1) n.fail("a node needs at least one GPU");
  }
  c.gpu = read_gpu_node(m.required("gpu"));
  if (ov.gpu) c.gpu = *ov.gpu;  // --gpu: the whole cluster as if its `gpu:` named this one
  // The graph (docs/topology.md): a node template and the fabric between nodes. With a graph, the
  // simple bandwidths may be left out; they are then derived from it.
  const auto node_section = m.optional("node");
  const auto fabric_section = m.optional("fabric");
  if (fabric_section && !node_section) fabric_section->fail("'fabric' needs a 'node' section beside it");
  if (ov.nodes > 1 && !ov.fabric && !fabric_section && (node_section || !m.optional("inter_node")))
    throw InputError(SourceLocation{}, "nodes", fmt::format("'{}' is one node with no network between nodes: say which with --fabric "
                                            "KIND:SPEED[:COUNT] (e.g. infiniband:100Gb/s:8)",
                                            c.name));
  if (node_section && ov.gpu && ov.gpu->sm_version <= 0)
    throw InputError(SourceLocation{}, "gpu", fmt::format("'{}' gives no 'sm' (compute capability): '{}' has a topology graph, whose NVLink "
                                          "bandwidths depend on it",
                                          ov.gpu->name, c.name));
  if (node_section)
    c.topology = topo::read_topology(*node_section, fabric_section, c.gpus_per_node, c.max_nodes, c.gpu.sm_version,
                                     ov.fabric ? &*ov.fabric : nullptr);
  const bool derive = static_cast<bool>(c.topology);

  if (auto h2d = derive ? m.optional("host_to_gpu") : std::optional<Node>(m.required("host_to_gpu"))) {
    MapReader h(*h2d);
    c.h2d_pinned = h.required("pinned").bandwidth();
    c.h2d_pageable = h.optional("pageable") ? h.required("pageable").bandwidth() : c.h2d_pinned;
    h.finish();
  } else {
    // the GPU's own PCIe link as NCCL rates it
    BytesPerSecond pcie{};
    for (const auto& l : c.topology->links())
      if (l.kind == LinkKind::pcie && (l.a == "gpu0" || l.b == "gpu0")) pcie = max(pcie, l.bandwidth);
    if (!(pcie > BytesPerSecond{})) m.node().fail("'host_to_gpu' is required: gpu0 has no PCIe link to derive it from");
    c.h2d_pinned = c.h2d_pageable = pcie;
  }
  if (auto n = derive ? m.optional("intra_node") : std::optional<Node>(m.required("intra_node"))) {
    c.intra_node = read_link(*n);
  } else if (ov.graph_only) {
    // not asked for: the ring search below is most of a one-node collective's work
  } else if (c.gpus_per_node > 1) {
    // NCCL's ring over the whole node: channels × per-channel speed, one step of Simple latency
    std::vector<int> all(static_cast<std::size_t>(c.gpus_per_node));
    for (int i = 0; i < c.gpus_per_node; ++i) all[static_cast<std::size_t>(i)] = i;
    const auto ring = c.topology->channels(ChannelPattern::ring, all, 1);
    c.intra_node.bandwidth = ring.bw_intra * static_cast<double>(ring.channels);
    c.intra_node.latency = microseconds(ring.type_intra == PathType::nvl ? 3.4 : 5.7);
  } else {
    c.intra_node.bandwidth = c.h2d_pinned;
  }
  const auto inter = m.optional("inter_node");
  if (inter) c.inter_node = read_link(*inter);
  if (ov.fabric && !derive) {  // the simple form: COUNT NICs (one by default) at the fabric's speed
    c.inter_node.bandwidth = ov.fabric->speed * static_cast<double>(std::max(1, ov.fabric->nics));
    if (!(c.inter_node.latency > Seconds{})) c.inter_node.latency = microseconds(14.0);
  } else if (inter && !ov.fabric) {
    // as the file says
  } else if (derive && c.max_nodes > 1) {
    const auto& f = c.topology->fabric();
    c.inter_node.bandwidth = f.effective_nic_bandwidth() * static_cast<double>(std::max(1, f.nics_per_node));
    c.inter_node.latency = microseconds(14.0) + f.latency;
  } else if (c.max_nodes > 1) {
    m.node().fail("a cluster of more than one node needs 'inter_node'");
  }
  {
    MapReader s(m.required("storage"));
    c.disk = s.required("disk").bandwidth();
    c.page_cache = s.required("page_cache").bandwidth();
    if (auto n = s.optional("dataset_in_page_cache")) c.dataset_in_page_cache = n->boolean();
    s.finish();
  }
  if (auto n = m.optional("input"); n && !ov.graph_only) c.input = read_input(*n, c);
  if (auto n = m.optional("gpudirect_rdma")) c.gpudirect_rdma = n->boolean();
  if (auto n = m.optional("host_memory")) c.host_memory = n->bandwidth();
  if (auto n = m.optional("host_memory_size")) {
    c.host_memory_size = n->bytes();
    if (!(c.host_memory_size > Bytes{})) n->fail("a node's host memory is a positive size like \"2 TB\"");
  }
  if (auto n = m.optional("framework")) {  // the default framework of predictions on this cluster
    c.framework = n->scalar();
    const auto known = ov.graph_only ? std::vector<std::string>{c.framework} : list_names(DataKind::framework);
    if (std::find(known.begin(), known.end(), c.framework) == known.end())
      n->fail(fmt::format("unknown framework '{}' (a name in models/frameworks/: {})", c.framework, fmt::join(known, ", ")));
  }
  if (auto n = m.optional("assumed")) {
    for (auto& [key, value] : MapReader(*n).entries()) {
      if (key != "framework" && key != "input" && key != "gpu" && key != "cpu" && key != "nics")
        value.fail("unknown key (known keys here: cpu, framework, gpu, input, nics)");
      c.assumed.emplace_back(key, value.scalar());
    }
  }
  if (auto n = m.optional("price_per_gpu_hour")) {  // "2.5 USD": an amount and a currency code
    const std::string text = n->scalar();
    const auto space = text.find(' ');
    std::size_t used = 0;
    double amount = -1.0;
    try {
      amount = std::stod(text.substr(0, space), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    const std::string cur = space == std::string::npos ? "" : text.substr(space + 1);
    const bool code = cur.size() == 3 && std::all_of(cur.begin(), cur.end(), [](char ch) { return ch >= 'A' && ch <= 'Z'; });
    if (used == 0 || used != std::min(space, text.size()) || !code || !(amount >= 0.0))
      n->fail(fmt::format("'{}' is not a price per GPU-hour like \"2.5 USD\" (an amount ≥ 0 and a currency code)", text));
    c.price_per_gpu_hour = amount;
    c.currency = cur;
  }
  m.finish();
  return c;
}
}  // namespace

Cluster load_cluster(const fs::path& file) { return read_cluster(yamlio::load_file(file), file.string()); }
Cluster load_cluster(const fs::path& file, const ClusterOverrides& overrides) {
  Cluster c = read_cluster(yamlio::load_file(file), file.string(), overrides);
  if (overrides.gpu) c.description += fmt::format(" [GPU: {}]", c.gpu.name);
  if (overrides.nodes > 0 || overrides.fabric) {
    if (overrides.nodes > 0) c.description += fmt::format(" [{} nodes", c.max_nodes);
    if (overrides.fabric)
      c.description += fmt::format("{}{} x {} {}]", overrides.nodes > 0 ? ", " : " [",
                                   overrides.fabric->nics > 0 ? std::to_string(overrides.fabric->nics) : std::string("node's NICs"),
                                   overrides.fabric->kind,
                                   fmt::format("{:.12g} GB/s", in_gigabytes_per_second(overrides.fabric->speed)));
    else
      c.description += "]";
  }
  return c;
}
Cluster parse_cluster(const std::string& yaml_text, const std::string& display_name) {
  return read_cluster(yamlio::load_string(yaml_text, display_name), display_name);
}

// ---- networks ---------------------------------------------------------------------------------------
namespace {
Network read_network(const Node& root) {
  MapReader m(root);
  Network net;
  net.name = m.required("name").scalar();
  if (auto n = m.optional("description")) net.description = n->scalar();
  {
    MapReader in(m.required("input"));
    if (auto n = in.optional("kind")) net.input_kind = n->choice({"image", "tokens"});
    {
      const Node shape = in.required("shape");
      net.input_shape = shape.integer_list();
      for (auto d : net.input_shape)
        if (d <= 0) shape.fail("every dimension of a shape must be positive");
    }
    net.input_bytes_per_sample = in.required("bytes_per_sample").bytes();
    in.finish();
  }
  std::vector<Operator> leading_ops;  // parameter-free entries before the first learnable layer
  for (const auto& item : m.required("layers").items()) {
    MapReader l(item);
    Layer layer;
    layer.name = l.required("name").scalar();
    const Node kind_node = l.required("kind");
    try {
      layer.kind = layer_kind_from_string(kind_node.scalar());
    } catch (const std::invalid_argument& e) {
      kind_node.fail(e.what());
    }
    {
      const Node p = l.required("params");
      layer.params = p.non_negative_integer();
      if (is_parameter_free(layer.kind) && layer.params != 0)
        p.fail(fmt::format("a {} has no parameters (params: 0)", to_string(layer.kind)));
    }
    {
      const Node f = l.required("forward_flops");
      layer.forward_flops_per_sample = f.number();
      if (layer.forward_flops_per_sample < 0) f.fail("must not be negative");
    }
    if (auto n = l.optional("macs")) {
      layer.macs_per_sample = n->number();
      if (layer.macs_per_sample < 0) n->fail("must not be negative");
    } else {
      layer.macs_per_sample = layer.forward_flops_per_sample / 2.0;  // a multiply-add = 2 FLOPs
    }
    if (auto n = l.optional("activation_bytes")) {
      layer.activation_bytes_per_sample = in_bytes(n->bytes());
      if (layer.activation_bytes_per_sample < 0) n->fail("must not be negative");
    }
    auto shape = [](const Node& n) {
      auto v = n.integer_list();
      for (auto d : v)
        if (d <= 0) n.fail("every dimension of a shape must be positive");
      return v;
    };
    auto pair_of = [](const Node& n, int& a, int& b) {
      const auto v = n.integer_list();
      if (v.size() != 2 || v[0] < 1 || v[1] < 1 || v[0] > 1 << 20 || v[1] > 1 << 20)
        n.fail("expected two positive whole numbers [height, width]");
      a = static_cast<int>(v[0]);
      b = static_cast<int>(v[1]);
    };
    if (auto n = l.optional("output_shape")) layer.output_shape = shape(*n);
    if (auto n = l.optional("input_shape")) layer.input_shape = shape(*n);
    if (auto n = l.optional("kernel")) pair_of(*n, layer.kernel_h, layer.kernel_w);
    if (auto n = l.optional("stride")) pair_of(*n, layer.stride_h, layer.stride_w);
    if (auto n = l.optional("groups")) {
      layer.groups = n->int_at_most(1 << 20);
      if (layer.groups < 1) n->fail("must be a positive whole number");
    }
    if (auto n = l.optional("heads")) {
      layer.heads = n->int_at_most(1 << 20);
      if (layer.heads < 1) n->fail("must be a positive whole number");
    }
    if (auto n = l.optional("kv_heads")) {
      layer.kv_heads = n->int_at_most(1 << 20);
      if (layer.kv_heads < 1) n->fail("must be a positive whole number");
      if (layer.heads > 0 && layer.heads % layer.kv_heads != 0)
        n->fail(fmt::format("{} key/value heads do not divide {} heads", layer.kv_heads, layer.heads));
    }
    if (auto n = l.optional("hidden")) {
      layer.hidden = n->non_negative_integer();
      if (layer.hidden < 1) n->fail("must be a positive whole number");
    }
    if (auto n = l.optional("gated")) layer.gated = n->boolean();
    if (auto n = l.optional("causal")) {
      if (layer.kind != LayerKind::attention) n->fail("only an attention layer has a causal mask");
      layer.causal = n->boolean();
    }
    if (auto n = l.optional("rotary")) {
      if (layer.kind != LayerKind::attention) n->fail("only an attention layer rotates its queries and keys");
      layer.rotary = n->boolean();
    }
    if (auto n = l.optional("rms")) {
      if (layer.kind != LayerKind::layernorm) n->fail("only a layernorm layer can be an RMSNorm");
      layer.rms = n->boolean();
    }
    if (auto n = l.optional("probs_dropout")) {
      if (layer.kind != LayerKind::attention) n->fail("only an attention layer has probabilities to drop");
      layer.probs_dropout = n->boolean();
    }
    int branches = 0;
    if (auto n = l.optional("branches")) {
      if (layer.kind != LayerKind::concat) n->fail("only a concat joins branches");
      branches = n->int_at_most(1 << 20);
      if (branches < 1) n->fail("must be a positive whole number");
    }
    l.finish();
    if (is_parameter_free(layer.kind)) {
      // Folded into the learnable layer before it: its backward runs before that layer's, so that layer's
      // gradient is ready only after both (docs/compute-model.md).
      Operator o;
      o.name = std::move(layer.name);
      o.kind = layer.kind;
      o.input_shape = std::move(layer.input_shape);
      o.output_shape = std::move(layer.output_shape);
      o.activation_bytes_per_sample = layer.activation_bytes_per_sample;
      o.kernel_h = layer.kernel_h;
      o.kernel_w = layer.kernel_w;
      o.stride_h = layer.stride_h;
      o.stride_w = layer.stride_w;
      o.branches = branches;
      (net.layers.empty() ? leading_ops : net.layers.back().ops).push_back(std::move(o));
      continue;
    }
    if (net.layers.empty()) layer.ops = std::move(leading_ops);
    net.layers.push_back(std::move(layer));
  }
  if (net.layers.empty()) m.node().fail("a model needs at least one learnable layer");
  m.finish();
  return net;
}
}  // namespace

Network load_network(const fs::path& file) { return read_network(yamlio::load_file(file)); }
Network parse_network(const std::string& yaml_text, const std::string& display_name) {
  return read_network(yamlio::load_string(yaml_text, display_name));
}

// ---- frameworks -------------------------------------------------------------------------------------
namespace {
/// `sharding: {stage, reshard_after_forward, group, in_flight, unit_params}` (docs/model.md, "Sharded data
/// parallelism"). Sharding needs an all-reduce framework that overlaps and updates after aggregation.
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
  if (auto n = r.optional("reduce_dtype")) sh.reduce_fp32 = n->choice({"fp32", "half"}) == "fp32";
  std::optional<Node> params;
  if ((params = r.optional("params"))) sh.per_parameter = params->choice({"flat", "per_parameter"}) == "per_parameter";
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
  if (sh.per_parameter && sh.stage < 3) params->fail("params: per_parameter is FSDP2's full sharding (stage 3)");
  if (sh.sharded()) {
    if (s.aggregation != Aggregation::allreduce) node.fail("sharding needs 'aggregation: allreduce'");
    if (s.update != UpdatePlacement::after_aggregation) node.fail("sharding needs 'update: after_aggregation'");
    if (s.overlap == Overlap::none) node.fail("sharding needs an overlapped aggregation ('layerwise' or 'bucketed')");
  }
}

/// `transport: NAME`: models/frameworks/transports/NAME.yaml (docs/input-formats.md, "Transports").
Transport read_transport(const Node& ref) {
  const std::string name = ref.scalar();
  const fs::path dir = data_dir() / "models" / "frameworks" / "transports";
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
  if (auto n = m.optional("source")) t.source = n->scalar();
  m.finish();
  return t;
}

Strategy read_strategy(const Node& root) {
  MapReader m(root);
  Strategy s;
  s.name = m.required("name").scalar();
  if (auto n = m.optional("description")) s.description = n->scalar();
  {
    MapReader io(m.required("io"));
    s.io_prefetch = io.required("prefetch").boolean();
    s.pinned_memory = io.required("memory").choice({"pinned", "pageable"}) == "pinned";
    if (auto r = io.optional("reader")) s.reads_bytes = r->choice({"pipeline", "bytes"}) == "bytes";
    if (auto d = io.optional("depth")) {
      s.prefetch_depth = d->int_at_most(1'000'000);
      if (s.prefetch_depth < 1) d->fail("a prefetch queue holds at least one batch");
    }
    if (auto b = io.optional("buffer")) {
      s.prefetch_buffer = b->bytes();
      if (!(s.prefetch_buffer > Bytes{})) b->fail("a prefetch buffer holds more than zero bytes");
      if (!s.io_prefetch) b->fail("a prefetch buffer needs prefetch: true");
    }
    io.finish();
  }
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
  if (auto n = m.optional("lrn")) s.lrn = n->boolean();
  if (auto n = m.optional("pool_indices")) {
    const std::string v = n->choice({"int64", "int32", "none"});
    s.pool_index_bytes = v == "int64" ? 8 : v == "int32" ? 4 : 0;
  }
  if (auto n = m.optional("optimizer"))
    s.optimizer = optimizer_from_string(n->choice({"sgd", "momentum", "adam", "adamw", "lamb"}));
  if (auto n = m.optional("optimizer_impl"))
    s.optimizer_impl = optimizer_impl_from_string(n->choice({"fused", "foreach", "for_loop"}));
  if (auto n = m.optional("jitter_cv")) s.jitter_cv = n->coefficient_of_variation();
  if (auto n = m.optional("iteration_overhead")) {
    s.iteration_overhead = n->seconds();
    if (s.iteration_overhead < Seconds{}) n->fail("a per-iteration overhead cannot be negative");
  }
  if (auto n = m.optional("transport")) s.transport = read_transport(*n);
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
  if (auto n = m.optional("sharding")) read_sharding(*n, s);
  if (auto n = m.optional("parallel")) read_parallel_entry(*n, s);  // parallel_entry.cpp
  if (auto n = m.optional("mixed_precision")) {  // docs/input-formats.md, "Framework strategy"
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

Strategy load_strategy(const fs::path& file) { return read_strategy(yamlio::load_file(file)); }
Strategy parse_strategy(const std::string& yaml_text, const std::string& display_name) {
  return read_strategy(yamlio::load_string(yaml_text, display_name));
}

// ---- profiles ---------------------------------------------------------------------------------------
namespace {
/// The name of another input that must exist: a typo points at its line, not at a command-line option.
std::string existing(DataKind kind, const Node& n) {
  const std::string name = n.scalar();
  try {
    (void)resolve(kind, name, n.path());
  } catch (const InputError& e) {
    n.fail(e.message());
  }
  return name;
}
}  // namespace

namespace {
Profile read_profile(const Node& root, const std::string& source) {
  MapReader m(root);
  Profile p;
  p.source_file = source;
  p.model = existing(DataKind::network, m.required("model"));
  p.framework = existing(DataKind::framework, m.required("framework"));
  if (auto n = m.optional("cluster")) p.cluster = existing(DataKind::cluster, *n);
  {
    const Node b = m.required("batch_per_gpu");
    p.batch_per_gpu = b.int_at_most(1'000'000);
    if (p.batch_per_gpu < 1) b.fail("must be at least 1");
  }
  (void)m.optional("source");
  (void)m.optional("notes");
  if (auto n = m.optional("io_measures")) p.io_is_exposed_wait = n->choice({"reader", "exposed"}) == "exposed";
  {
    MapReader s(m.required("single_gpu"));
    p.single_gpu.io = s.required("io").seconds();
    p.single_gpu.h2d = s.required("h2d").seconds();
    p.single_gpu.forward = s.required("forward").seconds();
    p.single_gpu.backward = s.required("backward").seconds();
    p.single_gpu.update = s.required("update").seconds();
    s.finish();
  }
  if (auto meas = m.optional("measured")) {
    MapReader mm(*meas);
    for (auto& [key, node] : mm.entries()) {
      int gpus = 0;
      try {
        std::size_t pos = 0;
        gpus = std::stoi(key, &pos);
        if (pos != key.size()) gpus = 0;
      } catch (const std::exception&) {
        gpus = 0;
      }
      if (gpus < 1) node.fail("keys of 'measured' are GPU counts (whole numbers ≥ 1)");
      MapReader at(node);
      MeasuredAt v;
      if (auto n = at.optional("io")) v.io = n->seconds();
      if (auto n = at.optional("h2d")) v.h2d = n->seconds();
      if (auto n = at.optional("comm")) v.comm = n->seconds();
      if (auto n = at.optional("iteration")) v.iteration = n->seconds();
      if (auto n = at.optional("iteration_sd")) {
        v.iteration_sd = n->seconds();  // seconds() refuses a negative time
        if (!v.iteration) n->fail("'iteration_sd' needs the mean 'iteration' beside it");
      }
      at.finish();
      p.measured[gpus] = v;
    }
  }
  m.finish();
  return p;
}
}  // namespace

Profile load_profile(const fs::path& file) { return read_profile(yamlio::load_file(file), file.string()); }
Profile parse_profile(const std::string& yaml_text, const std::string& display_name) {
  return read_profile(yamlio::load_string(yaml_text, display_name), display_name);
}

}  // namespace dlscale
