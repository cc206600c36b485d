// A cluster's `input:` section: the input pipeline, its dataset and CPU looked up in models/input/
// (docs/input-formats.md, "Input pipeline"; loaders/input_entry.hpp).
#include <fmt/format.h>

#include <cmath>
#include <exception>
#include <filesystem>
#include <string>

#include "dlscale/io.hpp"
#include "io/text.hpp"
#include "io/yaml_reader.hpp"
#include "loaders/input_entry.hpp"
#include "loaders/read_helpers.hpp"

namespace dlscale {
namespace fs = std::filesystem;
using yamlio::MapReader;
using yamlio::Node;

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
void input_entry(const fs::path& data, const char* file, const char* key, const Node& ref, F&& read) {
  const std::string want = ref.scalar();
  MapReader top(yamlio::load_file(data / "models" / "input" / file));
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
InputPipeline read_input(const Node& n, const Cluster& c) { return read_input(n, c, data_dir()); }

InputPipeline read_input(const Node& n, const Cluster& c, const fs::path& data) {
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
    input_entry(data, "datasets.yaml", "datasets", *x, [&](MapReader& e) {
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
    input_entry(data, "cpus.yaml", "cpus", *x, [&](MapReader& e) { p.decode_mpix_per_core = decode_rate(e.required("decode")); });
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

}  // namespace dlscale
