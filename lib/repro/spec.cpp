// Parses a scenario file (examples/papers/*.yaml; schema: docs/reproduce.md). Every error names
// file:line:col and the key; names of systems, models, frameworks and profiles are checked here so that
// a typo points at its line.
#include "repro/spec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "dlscale/error.hpp"
#include "dlscale/io.hpp"
#include "io/yaml_reader.hpp"
#include "loaders/input_entry.hpp"
#include "loaders/link_entry.hpp"

namespace dlscale::repro {
using yamlio::MapReader;
using yamlio::Node;
namespace fs = std::filesystem;

namespace {

template <class T>
bool any_of_or_empty(const std::vector<T>& allowed, const T& v) {
  return allowed.empty() || std::find(allowed.begin(), allowed.end(), v) != allowed.end();
}

/// A string or a list of strings.
std::vector<std::string> strings(const Node& n) {
  std::vector<std::string> out;
  if (n.is_sequence()) {
    for (const auto& item : n.items()) out.push_back(item.scalar());
    if (out.empty()) n.fail("the list must not be empty");
  } else {
    out.push_back(n.scalar());
  }
  return out;
}

/// A whole number ≥ 1 or a list of them.
std::vector<int> counts(const Node& n) {
  std::vector<int> out;
  auto one = [&](const Node& x) {
    const auto v = x.integer();
    if (v < 1 || v > 1'000'000) x.fail(fmt::format("must be a whole number ≥ 1, got {}", x.scalar()));
    out.push_back(static_cast<int>(v));
  };
  if (n.is_sequence()) {
    for (const auto& item : n.items()) one(item);
    if (out.empty()) n.fail("the list must not be empty");
  } else {
    one(n);
  }
  return out;
}

/// "77.61 %" -> 0.7761
double percent(const Node& n) {
  std::string s = n.scalar();
  while (!s.empty() && s.back() == ' ') s.pop_back();
  if (s.empty() || s.back() != '%') n.fail(fmt::format("'{}' is not a percentage like \"59.59 %\"", n.scalar()));
  s.pop_back();
  while (!s.empty() && s.back() == ' ') s.pop_back();
  double v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size())
    n.fail(fmt::format("'{}' is not a percentage like \"59.59 %\"", n.scalar()));
  return v / 100.0;
}

void check_name(DataKind kind, const Node& n, const std::string& name) {
  try {
    (void)resolve(kind, name, n.path());
  } catch (const InputError& e) {
    n.fail(e.message());
  }
}

std::vector<std::string> names(DataKind kind, const Node& n) {
  auto v = strings(n);
  for (const auto& s : v) check_name(kind, n, s);
  return v;
}

std::vector<std::string> choices(const Node& n, std::initializer_list<std::string_view> allowed) {
  std::vector<std::string> out;
  if (n.is_sequence()) {
    for (const auto& item : n.items()) out.push_back(item.choice(allowed));
    if (out.empty()) n.fail("the list must not be empty");
  } else {
    out.push_back(n.choice(allowed));
  }
  return out;
}

/// Reads the selector keys of a rule (system, model, framework, precision, inputs, variant, gpus, batch).
Selector read_selector(MapReader& m) {
  Selector s;
  if (auto n = m.optional("system")) s.system = names(DataKind::cluster, *n);
  if (auto n = m.optional("model")) s.model = names(DataKind::network, *n);
  if (auto n = m.optional("framework")) s.framework = names(DataKind::framework, *n);
  if (auto n = m.optional("precision")) s.precision = choices(*n, {"fp32", "fp16"});
  if (auto n = m.optional("inputs")) s.inputs = choices(*n, {"profile", "spec"});
  if (auto n = m.optional("variant")) s.variant = strings(*n);
  if (auto n = m.optional("gpus")) s.gpus = counts(*n);
  if (auto n = m.optional("batch")) s.batch = counts(*n).front();
  return s;
}

SystemChange read_change(const Node& n, bool variant) {
  MapReader m(n);
  SystemChange c;
  if (variant) c.name = m.required("name").scalar();
  (void)m.optional("note");  // free text for the reader of the file
  c.when = read_selector(m);
  if (auto x = m.optional("inter_node")) c.inter_node = read_link(*x);
  if (auto x = m.optional("shared_storage")) c.shared_storage = x->bandwidth();
  if (auto x = m.optional("stored_bytes_per_sample")) {
    c.stored_bytes_per_sample = x->bytes();
    if (!(*c.stored_bytes_per_sample > Bytes{})) x->fail("must be more than zero bytes");
  }
  if (auto x = m.optional("jitter_cv")) c.jitter_cv = x->coefficient_of_variation();
  if (auto x = m.optional("input")) {
    c.input = read_input(*x, Cluster{});  // storage tiers left out take the system's own (run.cpp)
    c.input_at = fmt::format("{}:{}:{}", x->where().file, x->where().line, x->where().column);
  }
  if (c.stored_bytes_per_sample && !c.shared_storage) m.node().fail("'stored_bytes_per_sample' needs 'shared_storage' beside it");
  m.finish();
  return c;
}

MeasuredEntry read_measured(const Node& n) {
  MapReader m(n);
  MeasuredEntry e;
  e.source = m.required("source").scalar();
  e.when = read_selector(m);
  static const std::pair<const char*, const char*> seconds_keys[] = {{"io", "io_s"},
                                                                     {"io_wait", "io_exposed_s"},
                                                                     {"h2d", "h2d_s"},
                                                                     {"forward", "forward_s"},
                                                                     {"backward", "backward_s"},
                                                                     {"update", "update_s"},
                                                                     {"iteration", "iteration_time_s"},
                                                                     {"comm", "comm_s"}};
  for (const auto& [yaml_key, row_key] : seconds_keys)
    if (auto x = m.optional(yaml_key)) e.values[row_key] = in_seconds(x->seconds());
  if (auto x = m.optional("throughput")) e.values["throughput_samples_per_s"] = x->positive_number();
  if (auto x = m.optional("speedup")) e.values["speedup"] = x->positive_number();
  if (auto x = m.optional("allreduce_efficiency")) e.values["allreduce_efficiency"] = percent(*x);
  if (auto x = m.optional("r_u2g")) e.values["r_u2g"] = percent(*x);
  if (e.values.empty()) m.node().fail("a measured entry needs at least one value (iteration, speedup, comm, io, ...)");
  m.finish();
  return e;
}

/// A list of counts for every run, or rules ({when..., `values_key`}) by system, model, ...: `gpus:` (key
/// `values`) and `batch:` (key `value`).
template <class Rule>
std::vector<Rule> read_count_rules(const Node& n, std::string_view values_key) {
  const auto items = n.is_sequence() ? n.items() : std::vector<Node>{};
  if (items.empty() || !items.front().is_map()) return {Rule{Selector{}, counts(n)}};
  std::vector<Rule> out;
  for (const auto& item : items) {
    MapReader r(item);
    Rule rule;
    rule.when = read_selector(r);
    rule.values = counts(r.required(values_key));
    r.finish();
    out.push_back(std::move(rule));
  }
  return out;
}

/// A collective benchmark's keys (kind: busbw): `operations` and `sizes`.
void read_collective(MapReader& m, ExperimentSpec& x) {
  x.operations = choices(m.required("operations"), {"allreduce", "broadcast"});
  MapReader s(m.required("sizes"));
  x.min_size = s.required("from").bytes();
  x.max_size = s.required("to").bytes();
  if (auto f = s.optional("factor")) {
    x.size_factor = f->positive_number();
    if (x.size_factor <= 1.0) f->fail("the size factor must be greater than 1");
  }
  if (!(x.min_size > Bytes{}) || x.max_size < x.min_size) s.node().fail("sizes need 0 < from ≤ to");
  s.finish();
  for (int g : x.gpus.front().values)
    if (g < 2) m.required("gpus").fail("a collective needs at least 2 GPUs");
}

/// `profile:` the name pattern of the measured profiles; with inputs 'profile', every (model, framework)
/// pair must have its profile.
void read_profile_pattern(MapReader& m, ExperimentSpec& x) {
  const bool wants_profile = std::find(x.inputs.begin(), x.inputs.end(), "profile") != x.inputs.end();
  if (auto v = m.optional("profile")) {
    x.profile_pattern = v->scalar();
    if (wants_profile) {  // every (model, framework) pair must have its profile
      for (const auto& mo : x.models)
        for (const auto& fw : x.frameworks) {
          std::string name = x.profile_pattern;
          for (auto [key, val] : {std::pair<std::string, std::string>{"{model}", mo}, {"{framework}", fw}})
            for (auto pos = name.find(key); pos != std::string::npos; pos = name.find(key)) name.replace(pos, key.size(), val);
          check_name(DataKind::profile, *v, name);
        }
    }
  } else if (wants_profile) {
    m.required("inputs").fail("inputs 'profile' needs a 'profile' name pattern such as \"table5-{model}-{framework}\"");
  }
}

/// `variants`, `overrides`, `measured`, `ratio` and `efficiency`: what a training experiment compares.
void read_comparisons(MapReader& m, ExperimentSpec& x) {
  if (auto v = m.optional("variants"))
    for (const auto& item : v->items()) x.variants.push_back(read_change(item, true));
  if (auto v = m.optional("overrides"))
    for (const auto& item : v->items()) x.overrides.push_back(read_change(item, false));
  if (auto v = m.optional("measured"))
    for (const auto& item : v->items()) x.measured.push_back(read_measured(item));
  if (auto v = m.optional("ratio")) {
    MapReader r(*v);
    x.ratio_dimension = r.required("dimension").choice({"system", "framework", "precision"});
    x.ratio_of = r.required("of").scalar();
    x.ratio_to = r.required("to").scalar();
    r.finish();
  }
  if (auto v = m.optional("efficiency")) {
    MapReader r(*v);
    x.efficiency_mb_per_gpu = r.required("mb_per_gpu").positive_number();
    x.efficiency_bandwidth = r.required("bandwidth").bandwidth();
    r.finish();
  }
}

ExperimentSpec read_experiment(const Node& n) {
  MapReader m(n);
  ExperimentSpec x;
  x.where = n.where();
  x.path = n.path();
  x.id = m.required("id").scalar();
  if (auto v = m.optional("title")) x.title = v->scalar();
  if (auto v = m.optional("source")) x.source = v->scalar();
  if (auto v = m.optional("kind")) x.kind = v->choice({"training", "busbw"});
  if (auto v = m.optional("notes")) x.notes = strings(*v);
  const bool training = x.kind == "training";
  if (auto v = m.optional("tables")) {
    x.tables = training ? choices(*v, {"throughput", "speedup", "comm", "phases", "compare", "ratio"}) : choices(*v, {"busbw"});
  } else {
    x.tables = training ? std::vector<std::string>{"throughput", "speedup"} : std::vector<std::string>{"busbw"};
  }
  x.systems = names(DataKind::cluster, m.required("systems"));
  const Node gpus = m.required("gpus");
  x.gpus_where = gpus.where();
  x.gpus_path = gpus.path();
  x.gpus = read_count_rules<GpusRule>(gpus, "values");
  if (!training) {
    read_collective(m, x);
    m.finish();
    return x;
  }
  x.models = names(DataKind::network, m.required("models"));
  x.frameworks = names(DataKind::framework, m.required("frameworks"));
  x.precisions = m.optional("precision") ? choices(m.required("precision"), {"fp32", "fp16"}) : std::vector<std::string>{"fp32"};
  x.inputs = m.optional("inputs") ? choices(m.required("inputs"), {"profile", "spec"}) : std::vector<std::string>{"spec"};
  if (auto v = m.optional("scaling")) x.strong_scaling = v->choice({"weak", "strong"}) == "strong";
  x.batch = read_count_rules<BatchRule>(m.required("batch"), "value");
  read_profile_pattern(m, x);
  read_comparisons(m, x);
  m.finish();
  return x;
}

}  // namespace

bool Selector::matches(const RunKey& k, bool check_gpus) const {
  return any_of_or_empty(system, k.system) && any_of_or_empty(model, k.model) && any_of_or_empty(framework, k.framework) &&
      any_of_or_empty(precision, k.precision) && any_of_or_empty(inputs, k.inputs) && any_of_or_empty(variant, k.variant) &&
      (!check_gpus || any_of_or_empty(gpus, k.gpus)) && (batch == 0 || batch == k.batch);
}

PaperSpec load_paper(const fs::path& file) {
  MapReader m(yamlio::load_file(file));
  PaperSpec p;
  p.file = file.string();
  p.paper = m.required("paper").scalar();
  if (auto n = m.optional("title")) p.title = n->scalar();
  if (auto n = m.optional("source")) p.source = n->scalar();
  std::vector<std::string> ids;
  for (const auto& item : m.required("experiments").items()) {
    p.experiments.push_back(read_experiment(item));
    const auto& id = p.experiments.back().id;
    if (std::find(ids.begin(), ids.end(), id) != ids.end()) item.fail(fmt::format("experiment id '{}' is used twice", id));
    ids.push_back(id);
  }
  if (p.experiments.empty()) m.required("experiments").fail("a scenario file needs at least one experiment");
  m.finish();
  return p;
}

std::string paper_name(const fs::path& file) {
  MapReader m(yamlio::load_file(file));
  return m.required("paper").scalar();
}

}  // namespace dlscale::repro
