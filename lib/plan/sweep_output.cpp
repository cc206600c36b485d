// A sweep's output (include/dlscale/sweep.hpp): the ranking of its rows and the CSV / JSON-lines
// printers.
#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <ostream>

#include "dlscale/error.hpp"
#include "dlscale/format.hpp"
#include "dlscale/sweep.hpp"
#include "plan/bottleneck_json.hpp"
#include "plan/sweep_csv.hpp"

namespace dlscale {
using sweep_detail::kCsvHeader;
using sweep_detail::kCsvLayoutHeader;

SweepFormat sweep_format_from_string(std::string_view s) {
  if (s == "csv") return SweepFormat::csv;
  if (s == "jsonl") return SweepFormat::jsonl;
  throw InputError(SourceLocation{}, "format", fmt::format("unknown format '{}' (expected csv or jsonl)", s));
}

SweepRank sweep_rank_from_string(std::string_view s) {
  if (s == "throughput") return SweepRank::throughput;
  if (s == "efficiency") return SweepRank::efficiency;
  if (s == "cost") return SweepRank::cost;
  if (s == "tokens") return SweepRank::tokens;
  throw InputError(SourceLocation{}, "rank",
                   fmt::format("unknown ranking '{}' (expected throughput, tokens, efficiency or cost)", s));
}

bool fits_in_memory(const Prediction& p) noexcept { return p.memory.fits && p.memory.host_fits; }
bool fits_in_memory(const SweepRow& row) noexcept { return row.error.empty() && fits_in_memory(row.prediction); }

std::vector<std::size_t> top_rows(const SweepSpec& spec, const SweepResult& r, std::size_t k, SweepRank by, std::string* note) {
  // Only configurations that run and fit in memory are ranked: one that cannot run is no candidate.
  std::vector<std::size_t> idx;
  idx.reserve(r.rows.size());
  std::size_t invalid = 0, no_tokens = 0;
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    // by tokens/s: a model without tokens (an image model) has no tokens/s to rank by
    const bool tokenless = by == SweepRank::tokens && !(r.rows[i].prediction.throughput_tokens_per_s > 0.0);
    if (fits_in_memory(r.rows[i]) && !tokenless) idx.push_back(i);
    invalid += r.rows[i].error.empty() ? 0 : 1;
    no_tokens += r.rows[i].error.empty() && tokenless ? 1 : 0;
  }
  const std::size_t left_out = r.rows.size() - idx.size() - invalid - no_tokens;
  bool all_priced = true;
  for (const auto& row : r.rows) all_priced = all_priced && row.cost.has_value();
  if (by == SweepRank::cost && !all_priced && note) {
    std::string missing;
    for (const auto& c : spec.clusters)
      if (c.price_per_gpu_hour <= 0.0) missing += (missing.empty() ? "" : ", ") + c.name;
    *note = missing.empty()
        ? "some models have no training workload (give dataset: {samples: N}); ranked by GPU-hours, unknown last"
        : fmt::format("no price_per_gpu_hour for cluster {}: ranked by GPU-hours (cost at equal price)", missing);
  }
  auto key = [&](const SweepRow& row) -> double {
    switch (by) {
      case SweepRank::throughput:
        return -row.prediction.throughput_samples_per_s;
      case SweepRank::tokens:
        return -row.prediction.throughput_tokens_per_s;
      case SweepRank::efficiency:
        return -row.prediction.efficiency;
      case SweepRank::cost: {
        const double v = all_priced ? row.cost.value_or(0.0) : row.gpu_hours;
        return v > 0.0 ? v : std::numeric_limits<double>::infinity();
      }
    }
    return 0.0;
  };
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return key(r.rows[a]) < key(r.rows[b]); });
  if (idx.size() > k) idx.resize(k);
  if (left_out > 0 && note) {
    const std::string oom =
        fmt::format("{} of {} configurations do not fit in GPU (or host) memory and are not ranked", left_out, r.rows.size());
    *note = note->empty() ? oom : *note + "; " + oom;
  }
  if (no_tokens > 0 && note) {
    const std::string tokenless = fmt::format(
        "{} of {} configurations are of models without tokens (no tokens/s) and are not ranked", no_tokens, r.rows.size());
    *note = note->empty() ? tokenless : *note + "; " + tokenless;
  }
  if (invalid > 0 && note) {
    const std::string bad = fmt::format(
        "{} of {} configurations have a layout that cannot run (their 'error' column says why) "
        "and are not ranked",
        invalid, r.rows.size());
    *note = note->empty() ? bad : *note + "; " + bad;
  }
  return idx;
}

namespace {
std::string bucket_label(const SweepSpec& spec, const SweepGroup& g) {
  if (g.bucket) return fmt::format("{:g} MiB", in_mebibytes(*g.bucket));
  const Strategy& s = spec.strategies[g.framework];
  if (s.overlap == Overlap::bucketed) return fmt::format("{:g} MiB", in_mebibytes(s.bucket_size));
  return s.overlap == Overlap::layerwise ? "layerwise" : "-";
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

/// tokens/s per GPU (token models; 0 otherwise)
double tokens_per_gpu(const Prediction& p) noexcept {
  return p.gpus > 0 ? p.throughput_tokens_per_s / static_cast<double>(p.gpus) : 0.0;
}

/// The token columns of every row (issue 35): tokens/s over the job and per GPU (token models: the prediction's
/// samples/s × tokens per sample; empty for other models), MFU and HFU (3 × forward FLOPs per sample, HFU with the
/// recomputed forward counted, × samples/s / (GPUs × the GPU's dense peak): every model), as predict's JSON and CSV
/// print them. Empty for a row whose layout cannot run.
void append_token_csv(fmt::memory_buffer& buf, const SweepRow& row) {
  auto out = std::back_inserter(buf);
  const Prediction& p = row.prediction;
  if (!row.error.empty()) {
    fmt::format_to(out, ",,,,");
    return;
  }
  if (p.throughput_tokens_per_s > 0.0) fmt::format_to(out, ",{:.6g},{:.6g}", p.throughput_tokens_per_s, tokens_per_gpu(p));
  else fmt::format_to(out, ",,");
  fmt::format_to(out, ",{:.4g},{:.4g}", p.mfu, p.hfu);
}

void add_token_json(nlohmann::ordered_json& j, const SweepRow& row) {
  const nlohmann::ordered_json null(nullptr);
  const Prediction& p = row.prediction;
  const bool ran = row.error.empty();
  const bool tokens = ran && p.throughput_tokens_per_s > 0.0;
  j["throughput_tokens_per_s"] = tokens ? nlohmann::ordered_json(p.throughput_tokens_per_s) : null;
  j["tokens_per_s_per_gpu"] = tokens ? nlohmann::ordered_json(tokens_per_gpu(p)) : null;
  j["mfu"] = ran ? nlohmann::ordered_json(p.mfu) : null;
  j["hfu"] = ran ? nlohmann::ordered_json(p.hfu) : null;
}

/// A row's layout columns (SweepSpec::layout_columns): its degrees, m and b·m·dp for its GPU count (with_global_batch,
/// as the prediction resolved them), nothing for data parallelism.
struct LayoutColumns {
  const ParallelLayout* layout = nullptr;
  std::int64_t micro_batches = 0, global_batch = 0;  // 0: not resolved (an error row)
};
LayoutColumns layout_columns(const SweepSpec& spec, const SweepRow& row) {
  const SweepGroup& g = spec.groups[row.group];
  LayoutColumns c;
  if (!g.layout) return c;
  c.layout = &spec.layouts[*g.layout];
  if (!row.error.empty()) return c;
  const ParallelLayout l = with_global_batch(*c.layout, row.prediction.gpus);  // ran: it resolved
  c.micro_batches = l.micro_batches;
  c.global_batch = l.global_batch(row.prediction.gpus);
  return c;
}

void append_layout_csv(fmt::memory_buffer& buf, const SweepSpec& spec, const SweepRow& row) {
  const LayoutColumns c = layout_columns(spec, row);
  auto out = std::back_inserter(buf);
  if (const ParallelLayout* l = c.layout) {
    fmt::format_to(out, ",{},{},{},{},{},{},{},", l->tp, l->pp, l->vp, l->cp, l->ep, l->sp ? "true" : "false",
                   to_string(l->schedule));
    if (c.micro_batches > 0) fmt::format_to(out, "{},{}", c.micro_batches, c.global_batch);
    else fmt::format_to(out, ",");
  } else {
    fmt::format_to(out, ",,,,,,,,,");
  }
  fmt::format_to(out, ",{}\n", csv_field(row.error));
}

void add_layout_json(nlohmann::ordered_json& j, const SweepSpec& spec, const SweepRow& row) {
  const LayoutColumns c = layout_columns(spec, row);
  const nlohmann::ordered_json null(nullptr);
  const ParallelLayout* l = c.layout;
  j["tp"] = l ? nlohmann::ordered_json(l->tp) : null;
  j["pp"] = l ? nlohmann::ordered_json(l->pp) : null;
  j["vp"] = l ? nlohmann::ordered_json(l->vp) : null;
  j["cp"] = l ? nlohmann::ordered_json(l->cp) : null;
  j["ep"] = l ? nlohmann::ordered_json(l->ep) : null;
  j["sp"] = l ? nlohmann::ordered_json(l->sp) : null;
  j["schedule"] = l ? nlohmann::ordered_json(to_string(l->schedule)) : null;
  j["micro_batches"] = c.micro_batches > 0 ? nlohmann::ordered_json(c.micro_batches) : null;
  j["global_batch"] = c.micro_batches > 0 ? nlohmann::ordered_json(c.global_batch) : null;
  j["error"] = row.error.empty() ? null : nlohmann::ordered_json(row.error);
}

/// One CSV row: the group's labels (`pre`, formatted once per group), the prediction's numbers (empty for a row
/// whose layout cannot run) and, with a layout axis, the layout columns.
void append_csv_row(fmt::memory_buffer& buf, const std::string& pre, const SweepSpec& spec, const SweepRow& row) {
  const Prediction& p = row.prediction;
  auto out = std::back_inserter(buf);
  if (!row.error.empty()) {  // a layout that cannot run: its GPU count, nodes and why (the numbers empty)
    fmt::format_to(out, "{},{},{},,,,,,,,,,,false,,,,", pre, p.gpus, p.nodes);
    append_token_csv(buf, row);
    append_layout_csv(buf, spec, row);
    return;
  }
  fmt::format_to(out, "{},{},{},{:.6g},{:.6g},{:.6g},{:.6g},{},{},{:.4g},{:.6g},{:.6g},{:.6g},{},", pre, p.gpus, p.nodes,
                 in_seconds(p.iteration_time), p.throughput_samples_per_s, p.speedup, p.efficiency, p.hiding_case,
                 to_string(p.bottleneck), p.bottleneck_share, in_seconds(p.breakdown.comm), in_seconds(p.breakdown.comm_exposed),
                 in_bytes(p.memory.per_gpu), fits_in_memory(p) ? "true" : "false");
  if (row.gpu_hours > 0.0) fmt::format_to(out, "{:.6g},{:.6g},", row.train_hours, row.gpu_hours);
  else fmt::format_to(out, ",,");
  if (row.cost) fmt::format_to(out, "{:.2f},{}", *row.cost, spec.clusters[spec.groups[row.group].cluster].currency);
  else fmt::format_to(out, ",");
  append_token_csv(buf, row);
  if (spec.layout_columns) append_layout_csv(buf, spec, row);
  else buf.push_back('\n');
}

/// One JSON line (write_sweep's members; null numbers for a row whose layout cannot run).
void append_json_row(fmt::memory_buffer& buf, const SweepSpec& spec, const SweepRow& row) {
  const SweepGroup& g = spec.groups[row.group];
  const Prediction& p = row.prediction;
  const Cluster& cl = spec.clusters[g.cluster];
  const nlohmann::ordered_json null(nullptr);
  nlohmann::ordered_json j;
  j["cluster"] = cl.name;
  j["model"] = spec.networks[g.model].name;
  j["framework"] = spec.strategies[g.framework].name;
  j["precision"] = precision_label(g.precision, g.fp8_scaling);
  j["batch_per_gpu"] = g.batch;
  j["bucket"] = bucket_label(spec, g);
  j["links"] = spec.links[g.links].label;
  j["gpus"] = p.gpus;
  j["nodes"] = p.nodes;
  if (!row.error.empty()) {  // a layout that cannot run: the numbers null, the error says why
    for (const char* k :
         {"iteration_time_s", "throughput_samples_per_s", "speedup", "efficiency", "hiding_case", "bottleneck",
          "bottleneck_resource", "bottleneck_share", "bottleneck_gain", "comm_s", "comm_exposed_s", "memory_per_gpu_bytes"})
      j[k] = null;
    j["memory_fits"] = false;
    for (const char* k : {"train_hours", "gpu_hours", "cost", "currency"}) j[k] = null;
  } else {
    j["iteration_time_s"] = in_seconds(p.iteration_time);
    j["throughput_samples_per_s"] = p.throughput_samples_per_s;
    j["speedup"] = p.speedup;
    j["efficiency"] = p.efficiency;
    j["hiding_case"] = p.hiding_case;
    add_bottleneck_json(j, p);
    j["comm_s"] = in_seconds(p.breakdown.comm);
    j["comm_exposed_s"] = in_seconds(p.breakdown.comm_exposed);
    j["memory_per_gpu_bytes"] = in_bytes(p.memory.per_gpu);
    j["memory_fits"] = fits_in_memory(p);
    j["train_hours"] = row.gpu_hours > 0.0 ? nlohmann::ordered_json(row.train_hours) : null;
    j["gpu_hours"] = row.gpu_hours > 0.0 ? nlohmann::ordered_json(row.gpu_hours) : null;
    j["cost"] = row.cost ? nlohmann::ordered_json(*row.cost) : null;
    j["currency"] = row.cost ? nlohmann::ordered_json(cl.currency) : null;
  }
  add_token_json(j, row);
  if (spec.layout_columns) add_layout_json(j, spec, row);
  const std::string line = j.dump();
  buf.append(line.data(), line.data() + line.size());
  buf.push_back('\n');
}
}  // namespace

void write_sweep(std::ostream& out, SweepFormat f, const SweepSpec& spec, const SweepResult& r,
                 std::span<const std::size_t> rows) {
  std::vector<std::size_t> all;
  if (rows.empty()) {
    all.resize(r.rows.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
    rows = all;
  }
  // Labels per group, formatted once.
  std::vector<std::string> prefix(spec.groups.size());
  fmt::memory_buffer buf;
  const std::string_view header = spec.layout_columns ? kCsvLayoutHeader : kCsvHeader;
  if (f == SweepFormat::csv) buf.append(header.data(), header.data() + header.size());
  for (std::size_t ri : rows) {
    const SweepRow& row = r.rows[ri];
    if (f == SweepFormat::csv) {
      const SweepGroup& g = spec.groups[row.group];
      std::string& pre = prefix[row.group];
      if (pre.empty())
        pre = fmt::format("{},{},{},{},{},{},{}", csv_field(spec.clusters[g.cluster].name),
                          csv_field(spec.networks[g.model].name), csv_field(spec.strategies[g.framework].name),
                          precision_label(g.precision, g.fp8_scaling),  // "fp8-rowwise", "fp8-mxfp8" (eq. K15c)
                          g.batch, csv_field(bucket_label(spec, g)), csv_field(spec.links[g.links].label));
      append_csv_row(buf, pre, spec, row);
    } else {
      append_json_row(buf, spec, row);
    }
    if (buf.size() > (1u << 20)) {
      out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
      buf.clear();
    }
  }
  out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
}

}  // namespace dlscale
