// The GPU catalogue (topologies/gpus.yaml) and GPUs named or given as YAML (include/dlscale/io.hpp).
#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/power.hpp"
#include "dlscale/error.hpp"
#include "dlscale/io.hpp"
#include "io/files.hpp"
#include "io/text.hpp"
#include "io/yaml_reader.hpp"
#include "loaders/gpu_entry.hpp"
#include "loaders/read_helpers.hpp"
#include "loaders/stamped_cache.hpp"

namespace dlscale {
namespace fs = std::filesystem;
using yamlio::MapReader;
using yamlio::Node;

namespace {
/// A board run below the power its peaks are rated at (a data-centre operator's power cap): the SM clock falls,
/// and with it every peak the SMs set (vector and tensor math, the exponentials); the memory's bandwidth does not.
/// An entry documents the share of its rated clock at lower powers where a datasheet gives the same GPU's rates
/// there (gpus.yaml `rated_power`, `clock_at_power`); between two documented powers the share is interpolated
/// linearly, an assumption (power does not scale linearly with the clock).
struct PowerCurve {
  double rated_w = 0.0;                           // the power the entry's peaks are rated at (0: nothing documented)
  std::vector<std::pair<double, double>> points;  // (watts, share of the rated clock), ascending, below rated_w
};

/// The share of the rated clock at `limit_w` watts: 1 at or above the rated power, interpolated between the
/// documented points below it; an InputError where nothing is documented that low.
double clock_share_at(const PowerCurve& c, double limit_w, const std::string& gpu) {
  if (c.rated_w <= 0.0)
    throw InputError(
        fmt::format("GPU '{}' documents no rate below its rated power (its entry has no rated_power and "
                    "clock_at_power): a power limit cannot be applied",
                    gpu));
  if (limit_w >= c.rated_w) return 1.0;
  std::vector<std::pair<double, double>> pts = c.points;
  pts.emplace_back(c.rated_w, 1.0);
  if (limit_w < pts.front().first)
    throw InputError(
        fmt::format("GPU '{}': no rate is documented below {} W (power limit {} W)", gpu, pts.front().first, limit_w));
  for (std::size_t i = 1; i < pts.size(); ++i) {
    const auto [w0, s0] = pts[i - 1];
    const auto [w1, s1] = pts[i];
    if (limit_w <= w1) return s0 + (s1 - s0) * (limit_w - w0) / (w1 - w0);
  }
  return 1.0;
}

/// `g` under a power limit of `limit_w` watts (0: none): its clock-bound peaks and clocks at clock_share_at.
GpuSpec at_power_limit(GpuSpec g, const PowerCurve& c, double limit_w) {
  if (limit_w <= 0.0) return g;
  const double s = clock_share_at(c, limit_w, g.name);
  for (FlopsPerSecond* p : {&g.peak_fp32, &g.peak_fp16, &g.peak_bf16, &g.peak_tf32, &g.peak_fp8}) *p *= s;
  g.boost_clock *= s;
  g.base_clock = std::min(g.base_clock, g.boost_clock);
  g.name += fmt::format(" at {} W", limit_w);
  return g;
}

/// A YAML value that is a power, "750 W" (parse_watts): its watts; fails naming the key otherwise.
double watts(const Node& n) {
  try {
    return parse_watts(n.scalar());
  } catch (const UnitError& e) {
    n.fail(e.what());
  }
}

PowerCurve read_power_curve(MapReader& m) {
  PowerCurve c;
  if (auto n = m.optional("rated_power")) c.rated_w = watts(*n);
  if (auto n = m.optional("clock_at_power")) {
    if (c.rated_w <= 0.0) n->fail("clock_at_power needs rated_power");
    for (const auto& pt : n->items()) {
      const auto wv = pt.items();
      if (wv.size() != 2) pt.fail("a point is [power, share of the rated clock], e.g. [\"700 W\", 0.78]");
      const double w = watts(wv[0]), share = wv[1].positive_number();
      if (w >= c.rated_w || share > 1.0 || (!c.points.empty() && w <= c.points.back().first))
        pt.fail("points must rise in power below rated_power, with shares of at most 1");
      c.points.emplace_back(w, share);
    }
  }
  return c;
}

/// A power limit written after a GPU's name, "b200@750W" (or "@750 W", "@0.75kW"): the name and the watts (0: none).
std::pair<std::string, double> split_power_limit(const std::string& want) {
  const auto at = want.rfind('@');
  if (at == std::string::npos) return {want, 0.0};
  std::string name = want.substr(0, at);
  while (!name.empty() && name.back() == ' ') name.pop_back();
  // a GPU's name is matched without regard to case, and its power limit with it ("b200@750w")
  std::string power = want.substr(at + 1);
  if (!power.empty() && power.back() == 'w') power.back() = 'W';
  try {
    return {name.substr(std::min(name.size(), name.find_first_not_of(' '))), parse_watts(power)};
  } catch (const UnitError& e) {
    throw InputError(
        fmt::format("GPU '{}': the power limit after '@' must be a power with its unit, e.g. b200@750W ({})", want, e.what()));
  }
}

GpuSpec read_gpu(MapReader& m, bool require_all, PowerCurve* curve = nullptr) {
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
  const PowerCurve c = read_power_curve(m);
  if (curve) *curve = c;
  if (auto n = m.optional("power_limit")) g = at_power_limit(std::move(g), c, watts(*n));
  return g;
}

struct CatalogueEntry {
  std::string id;
  std::vector<std::string> aliases;  // other names users give it (e.g. the names in published tables)
  GpuSpec spec;
  PowerCurve power;
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
    e.spec = read_gpu(m, true, &e.power);
    m.finish();
    out.push_back(std::move(e));
  }
  top.finish();
  return out;
}

// The parsed catalogue, cached per path: a cluster naming its GPU must not re-read gpus.yaml on every load
// (sweeps and reproductions load many clusters).
using Catalogue = std::shared_ptr<const std::vector<CatalogueEntry>>;

Catalogue read_catalogue(const fs::path& data) {
  static StampedCache<Catalogue> cache;
  const fs::path file = data / "topologies" / "gpus.yaml";
  return *cache.get(file.string(), file, [&] {
    return std::optional<Catalogue>(std::make_shared<const std::vector<CatalogueEntry>>(parse_catalogue(file)));
  });
}
}  // namespace

std::vector<GpuSpec> load_gpu_catalogue() {
  std::vector<GpuSpec> out;
  for (const auto& e : *read_catalogue(data_dir())) out.push_back(e.spec);
  return out;
}

std::vector<std::string> list_gpu_ids() {
  std::vector<std::string> out;
  for (const auto& e : *read_catalogue(data_dir())) out.push_back(e.id);
  return out;
}

namespace {
/// A whole regular file mapped read-only: its text straight from the page cache, neither zeroed nor copied
/// (the GPU catalogue is 52 kB, thirteen pages a read touched twice, and its lower-cased copy thirteen more).
class MappedFile {
 public:
  explicit MappedFile(const fs::path& file) {
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
      const auto size = static_cast<std::size_t>(st.st_size);
      if (void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0); p != MAP_FAILED)
        text_ = {static_cast<const char*>(p), size};
    }
    ::close(fd);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile() {
    if (text_) ::munmap(const_cast<char*>(text_->data()), text_->size());
  }
  /// The file's text; nothing when it could not be mapped (an empty file, a FIFO: read it instead).
  [[nodiscard]] const std::optional<std::string_view>& text() const { return text_; }

 private:
  std::optional<std::string_view> text_;
};

// Whether `text` holds `want` where a YAML value equal to it could be written: not inside a longer word (a
// letter, digit, '-', '_' or '.' next to it would make the plain scalar longer; a quoted one ends at its
// quote). Only a filter before parsing: "h100-sxm" does not pick the entry of h100-sxm-hbm2e, whose parse
// would be thrown away; every exact match is still checked on the parsed entry.
bool holds_value(std::string_view text, std::string_view want) {
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.'; };
  for (std::size_t at = text.find(want); at != std::string_view::npos; at = text.find(want, at + 1)) {
    const std::size_t end = at + want.size();
    if ((at == 0 || !word(text[at - 1])) && (end == text.size() || !word(text[end]))) return true;
  }
  return false;
}

// The catalogue entry (its id, name or an alias equal to `want`, lower-cased) read without parsing the
// rest of gpus.yaml: a command that names one GPU should not pay for thirty (issue 17's start-up). The
// file's text is cut at its top-level sequence items; an item whose text holds `want` as a whole value is
// parsed alone, after the file's header. Nothing is returned (and the caller parses the whole catalogue,
// with its checks and its errors) unless exactly one item matches and it parses cleanly: a duplicated name,
// an unknown one or a broken entry gets the whole file's message, so positions in this text are never
// shown. (The other lines were once kept as blank lines: libyaml's scanning of them cost more than the rest
// of the lookup.)
std::optional<GpuSpec> find_gpu_alone(const fs::path& file, const std::string& want, double limit_w) {
  if (want.empty()) return std::nullopt;
  const MappedFile mapped(file);
  std::string copy;  // where the file cannot be mapped (empty, not a regular file)
  if (!mapped.text() && !read_whole_file(file, copy)) return std::nullopt;
  const std::string_view text = mapped.text() ? *mapped.text() : std::string_view(copy);
  constexpr auto npos = std::string::npos;
  std::size_t header_end = npos;   // just past the "gpus:" line
  std::vector<std::size_t> items;  // where each "  - " item starts, then the end of the text
  for (std::size_t b = 0; b < text.size();) {
    const auto e = text.find('\n', b);
    const std::size_t next = e == npos ? text.size() : e + 1;
    const std::string_view l(text.data() + b, next - b);
    if (header_end == npos) {
      if (l.starts_with("gpus:")) header_end = next;
    } else if (l.starts_with("  - ")) {
      items.push_back(b);
    } else if (l[0] != ' ' && l[0] != '#' && l[0] != '\n' && l[0] != '\r') {
      return std::nullopt;  // another top-level key
    }
    b = next;
  }
  if (header_end == npos) return std::nullopt;
  items.push_back(text.size());
  std::string lower;  // one item's text lower-cased, in one buffer (not a second copy of the whole file)
  std::optional<GpuSpec> found;
  for (std::size_t k = 0; k + 1 < items.size(); ++k) {
    const std::string_view block = text.substr(items[k], items[k + 1] - items[k]);
    lower_ascii_into(block, lower);
    if (!holds_value(lower, want)) continue;
    std::string alone(text.substr(0, header_end));  // the header (to its "gpus:" line) and this item
    alone.append(block);
    try {
      MapReader top(yamlio::load_string(alone, file.string()));
      const auto entries = top.required("gpus").items();
      if (entries.size() != 1) return std::nullopt;
      MapReader m(entries.front());
      bool match = lower_ascii(m.required("id").scalar()) == want;
      if (auto al = m.optional("aliases"))
        for (const auto& a : al->items()) match = match || lower_ascii(a.scalar()) == want;
      PowerCurve curve;
      GpuSpec spec = read_gpu(m, true, &curve);
      m.finish();
      if (!match && lower_ascii(spec.name) != want) continue;
      spec = at_power_limit(std::move(spec), curve, limit_w);
      if (found) return std::nullopt;  // two entries answer to the name: the whole file's check says so
      found = std::move(spec);
    } catch (const InputError&) {
      return std::nullopt;
    }
  }
  return found;
}
}  // namespace

GpuSpec find_gpu(std::string_view name) { return find_gpu(name, data_dir()); }

GpuSpec find_gpu(std::string_view written, const fs::path& data) {
  const auto split = split_power_limit(lower_ascii(written));
  const std::string& want = split.first;
  const double limit_w = split.second;
  const std::string name = limit_w > 0.0 ? std::string(written.substr(0, written.rfind('@'))) : std::string(written);
  {
    // One entry read alone, kept per (file, name).
    static StampedCache<GpuSpec> alone;
    const fs::path file = data / "topologies" / "gpus.yaml";
    if (auto spec =
            alone.get(file.string() + '\n' + lower_ascii(written), file, [&] { return find_gpu_alone(file, want, limit_w); }))
      return *spec;
  }
  const auto catalogue = read_catalogue(data);
  const auto& all = *catalogue;
  for (const auto& e : all) {
    if (lower_ascii(e.id) == want || lower_ascii(e.spec.name) == want) return at_power_limit(e.spec, e.power, limit_w);
    for (const auto& a : e.aliases)
      if (lower_ascii(a) == want) return at_power_limit(e.spec, e.power, limit_w);
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
      if (hit && hit != &e)
        throw InputError(fmt::format("GPU '{}' could be '{}' or '{}': name one by its id", name, hit->id, e.id));
      hit = &e;
    }
    if (!key.empty() && gpu_name_key(e.id).starts_with(key)) starting.push_back(e.id);
  }
  if (hit) return at_power_limit(hit->spec, hit->power, limit_w);
  if (!starting.empty()) throw InputError(fmt::format("unknown GPU '{}' (did you mean {}?)", name, fmt::join(starting, ", ")));
  std::string known;
  for (const auto& e : all) known += (known.empty() ? "" : ", ") + e.id;
  throw InputError(fmt::format("unknown GPU '{}' (known: {})", name, known));
}

GpuSpec load_gpu(const std::string& name_or_file) {
  std::error_code ec;
  const fs::path file(name_or_file);
  if (!fs::is_regular_file(file, ec)) {
    const bool looks_like_path =
        name_or_file.find('/') != std::string::npos || file.extension() == ".yaml" || file.extension() == ".yml";
    if (looks_like_path) throw InputError(fmt::format("'{}': no such GPU file (or not readable)", name_or_file));
    return find_gpu(name_or_file);
  }
  return read_gpu_node(yamlio::load_file(file));
}

GpuSpec read_gpu_node(const Node& n) { return read_gpu_node(n, data_dir()); }

GpuSpec read_gpu_node(const Node& n, const fs::path& data) {
  if (n.is_map()) {
    MapReader g(n);
    (void)g.optional("id");  // a catalogue entry copied whole reads as it is
    (void)g.optional("aliases");
    GpuSpec spec = read_gpu(g, false);
    g.finish();
    return spec;
  }
  try {
    return find_gpu(n.scalar(), data);
  } catch (const InputError& e) {
    if (!e.where().file.empty()) throw;  // an error inside the catalogue keeps its own place
    n.fail(e.message());
  }
}

}  // namespace dlscale
