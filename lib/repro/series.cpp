// An experiment's rows cut into prediction series and labelled (lib/repro/series.hpp).
#include "repro/series.hpp"

#include <fmt/format.h>

#include <set>

namespace dlscale::repro {
namespace {

bool same_series_key(const Row& a, const Row& b) {
  return a.system == b.system && a.variant == b.variant && a.model == b.model && a.framework == b.framework &&
      a.precision == b.precision && a.inputs == b.inputs;
}

}  // namespace

std::vector<RowSeries> series_of(const ExperimentResult& x) {
  std::vector<RowSeries> out;
  for (const auto& r : x.rows) {
    if (out.empty() || !same_series_key(*out.back().rows.back(), r) || r.gpus <= out.back().rows.back()->gpus) out.emplace_back();
    out.back().rows.push_back(&r);
  }
  return out;
}

std::vector<std::string> series_labels(const std::vector<RowSeries>& ss, bool with_batch) {
  std::set<std::string> sys, var, mod, fw, prec, inp;
  std::set<int> batch;
  for (const auto& s : ss) {
    const Row& r = *s.rows.front();
    sys.insert(r.system);
    var.insert(r.variant);
    mod.insert(r.model);
    fw.insert(r.framework);
    prec.insert(r.precision);
    inp.insert(r.inputs);
    batch.insert(r.batch_per_gpu);
  }
  std::vector<std::string> out;
  for (const auto& s : ss) {
    const Row& r = *s.rows.front();
    std::string l;
    auto add = [&](bool varies, const std::string& v) {
      if (varies) l += (l.empty() ? "" : " ") + v;
    };
    add(sys.size() > 1, r.system);
    add(!r.variant.empty() && var.size() > 1, r.variant);
    add(mod.size() > 1, r.model);
    add(fw.size() > 1, r.framework);
    add(prec.size() > 1, r.precision);
    if (with_batch && batch.size() > 1) l += fmt::format("{}b{}", l.empty() ? "" : " ", r.batch_per_gpu);
    add(inp.size() > 1, r.inputs);
    if (l.empty()) l = r.model + " " + r.framework;
    out.push_back(l);
  }
  return out;
}

}  // namespace dlscale::repro
