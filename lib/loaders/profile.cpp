// Measured profiles (docs/input-formats.md, "Profile"): the names they refer to must exist.
#include <exception>
#include <filesystem>
#include <string>

#include "dlscale/error.hpp"
#include "dlscale/io.hpp"
#include "io/yaml_reader.hpp"

namespace dlscale {
namespace fs = std::filesystem;
using yamlio::MapReader;
using yamlio::Node;

// ---- profiles ---------------------------------------------------------------------------------------
namespace {
/// The name of another input that must exist: a typo points at its line, not at a command-line option.
std::string existing(DataKind kind, const Node& n, const fs::path& data) {
  const std::string name = n.scalar();
  try {
    (void)resolve(kind, name, n.path(), data);
  } catch (const InputError& e) {
    n.fail(e.message());
  }
  return name;
}
}  // namespace

namespace {
Profile read_profile(const Node& root, const std::string& source, const fs::path& data) {
  MapReader m(root);
  Profile p;
  p.source_file = source;
  p.model = existing(DataKind::network, m.required("model"), data);
  p.framework = existing(DataKind::framework, m.required("framework"), data);
  if (auto n = m.optional("cluster")) p.cluster = existing(DataKind::cluster, *n, data);
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

Profile load_profile(const fs::path& file) { return read_profile(yamlio::load_file(file), file.string(), data_folder_of(file)); }
Profile parse_profile(const std::string& yaml_text, const std::string& display_name) {
  return read_profile(yamlio::load_string(yaml_text, display_name), display_name, data_dir());
}

}  // namespace dlscale
