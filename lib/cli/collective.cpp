// dlscale collective: NCCL's predicted time, algbw and busbw (nccl-tests definitions) of one collective
// on a cluster's topology, for one size or a sweep, as an all_reduce_perf-like table or JSON.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/scenario_options.hpp"
#include "dlscale/error.hpp"
#include "dlscale/io.hpp"
#include "dlscale/topology.hpp"
#include "nccl/model.hpp"

namespace dlscale::cli {
namespace {

struct CollectiveOptions {
  std::string cluster;
  std::string op = "allreduce";
  int gpus = 0;
  int nodes = 0;
  int gpus_per_thread = 1;  // nccl-tests -g
  std::string algo;         // NCCL_ALGO (empty: NCCL's choice)
  std::string proto;        // NCCL_PROTO
  std::string bytes;
  std::string sweep;
  std::string format = "table";
  std::string output;
  ScaleOptions scale;  // --fabric (--nodes is the command's own)
};

struct Row {
  double bytes = 0;
  nccl::Choice choice;
  double algbw = 0, busbw = 0;  // GB/s
};

CollectiveOp parse_op(const std::string& s) {
  if (const auto op = enum_from_string<CollectiveOp>(s)) return *op;
  throw UsageError("--op",
                   fmt::format("unknown collective '{}' (expected one of: allreduce, allgather, "
                               "reducescatter, broadcast, reduce)",
                               s));
}

/// --algo / --proto: NCCL's names (NCCL_ALGO, NCCL_PROTO), one each; empty leaves NCCL's choice.
nccl::Forced parse_forced(const CollectiveOptions& o) {
  nccl::Forced f;
  if (!o.algo.empty() && (f.algorithm = nccl::algorithm_from_name(o.algo)) < 0)
    throw UsageError("--algo",
                     fmt::format("unknown algorithm '{}' (expected one of: ring, tree, nvls, nvls_tree, "
                                 "collnet_direct, collnet_chain, pat)",
                                 o.algo));
  if (!o.proto.empty() && (f.protocol = nccl::protocol_from_name(o.proto)) < 0)
    throw UsageError("--proto", fmt::format("unknown protocol '{}' (expected one of: ll, ll128, simple)", o.proto));
  return f;
}

Bytes parse_size(const std::string& text, const std::string& option) {
  Bytes b{};
  try {
    // nccl-tests semantics: a bare number is bytes (-b 1073741824), a suffix K/M/G is 2^10/2^20/2^30
    if (!text.empty() && std::all_of(text.begin(), text.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
      b = parse_bytes(text + " B");
    else if (text.size() >= 2 && std::string("KMG").find(text.back()) != std::string::npos &&
             std::all_of(text.begin(), text.end() - 1, [](char ch) { return ch >= '0' && ch <= '9'; }))
      b = parse_bytes(text.substr(0, text.size() - 1) + " " + text.back() + "iB");
    else b = parse_bytes(text);
  } catch (const UnitError& e) {
    throw UsageError(option, e.what());
  }
  if (!(b > Bytes{})) throw UsageError(option, "a size must be more than zero bytes");
  return b;
}

std::vector<double> sizes(const CollectiveOptions& o) {
  if (o.bytes.empty() == o.sweep.empty()) throw UsageError("--bytes", "give exactly one of --bytes SIZE and --sweep MIN:MAX");
  if (!o.bytes.empty()) return {in_bytes(parse_size(o.bytes, "--bytes"))};
  const auto colon = o.sweep.find(':');
  if (colon == std::string::npos) throw UsageError("--sweep", fmt::format("'{}' is not MIN:MAX (e.g. 8B:1GiB)", o.sweep));
  const double lo = in_bytes(parse_size(o.sweep.substr(0, colon), "--sweep"));
  const double hi = in_bytes(parse_size(o.sweep.substr(colon + 1), "--sweep"));
  if (hi < lo) throw UsageError("--sweep", "MAX is smaller than MIN");
  std::vector<double> out;
  for (double s = lo; s <= hi * (1 + 1e-12); s *= 2) out.push_back(s);  // nccl-tests -f 2
  return out;
}

// The cluster the collective runs on: --fabric composes as many nodes as the GPUs need (the command's
// own --nodes places them); without it the file's node count stands.
Cluster load_collective_cluster(const CollectiveOptions& o) {
  const auto file = resolve(DataKind::cluster, o.cluster, "--cluster");
  ClusterOverrides ov = cluster_overrides(o.scale);
  ov.graph_only = true;  // no input pipeline, no derived intra-node link: a collective reads neither
  Cluster c = load_cluster(file, ov);
  if (o.gpus > c.max_gpus() || o.nodes > c.max_nodes) {
    const int need = std::max(o.nodes, (o.gpus + c.gpus_per_node - 1) / c.gpus_per_node);
    if (ov.fabric) {
      ov.nodes = std::max(ov.nodes, need);
      c = load_cluster(file, ov);
    }
  }
  if (!c.topology)
    throw UsageError("--cluster",
                     fmt::format("cluster '{}' has no topology graph ('node:' section); "
                                 "dlscale collective needs one",
                                 c.name));
  return c;
}

// --gpus, --nodes and --gpus-per-thread checked against the cluster.
GpuPlacement placement(const CollectiveOptions& o, const Cluster& c) {
  if (o.gpus < 1) throw UsageError("--gpus", "give the number of GPUs (at least 1)");
  int nodes = o.nodes;
  if (nodes <= 0) nodes = o.gpus <= c.gpus_per_node ? 1 : (o.gpus + c.gpus_per_node - 1) / c.gpus_per_node;
  if (o.gpus % nodes != 0) throw UsageError("--nodes", fmt::format("{} GPUs do not split evenly over {} nodes", o.gpus, nodes));
  const int ppn = o.gpus / nodes;
  if (ppn > c.gpus_per_node)
    throw UsageError("--gpus", fmt::format("{} GPUs per node, but a node of '{}' has {}", ppn, c.name, c.gpus_per_node));
  if (nodes > c.max_nodes)
    throw UsageError("--nodes", fmt::format("{} nodes, but '{}' has at most {}", nodes, c.name, c.max_nodes));
  if (o.gpus_per_thread < 1 || o.gpus_per_thread > ppn)
    throw UsageError("--gpus-per-thread",
                     fmt::format("{} GPUs per thread: give 1 to the {} GPUs of a node", o.gpus_per_thread, ppn));
  return GpuPlacement{o.gpus, nodes, ppn};
}

/// One run of the command: the options and what they resolved to.
struct CollectiveRun {
  const CollectiveOptions& o;
  CollectiveOp op;
  nccl::Forced forced;
  const Cluster& c;
  GpuPlacement where;
  const nccl::Table& table;
};

// What NCCL cannot run is bad input, named by the option that asked for it.
void check_forced(const CollectiveRun& run) {
  const auto& [o, op, forced, c, where, table] = run;
  if (forced.algorithm < 0 && forced.protocol < 0) return;
  const auto& topo = *c.topology;
  if (const std::string why = nccl::why_not(topo, table, op, where, forced); !why.empty()) {
    // --algo when the algorithm cannot run whatever the protocol, else the protocol is what fails
    const bool algo_fails = forced.algorithm >= 0 && !nccl::why_not(topo, table, op, where, {forced.algorithm, -1}).empty();
    throw UsageError(algo_fails ? "--algo" : "--proto",
                     fmt::format("{}{}{} cannot run {} on {} GPUs of '{}': {}", forced.algorithm >= 0 ? o.algo : "",
                                 forced.algorithm >= 0 && forced.protocol >= 0 ? "/" : "", forced.protocol >= 0 ? o.proto : "",
                                 o.op, o.gpus, c.name, why));
  }
}

std::vector<Row> predict_rows(const CollectiveRun& run) {
  const auto& [o, op, forced, c, where, table] = run;
  std::vector<Row> rows;
  for (double s : sizes(o)) {
    Row r;
    r.bytes = s;
    r.choice = nccl::choose(*c.topology, table, op, bytes(s), where, forced);
    r.choice.time = nccl::nccl_tests_time(r.choice.time, table, o.gpus_per_thread);  // the host side, as nccl-tests sees it
    const double t = in_seconds(r.choice.time);
    r.algbw = t > 0 ? s / t / 1e9 : 0;
    r.busbw = r.algbw * nccl::busbw_factor(op, o.gpus);
    rows.push_back(r);
  }
  return rows;
}

/// What the table's columns say of a size beyond the prediction (nccl-tests' own columns): the element count of
/// a float buffer (per rank for allgather and reducescatter), the reduction and the root.
struct Columns {
  std::int64_t count = 0;
  const char* redop = "sum";
  int root = -1;
};
Columns columns(CollectiveOp op, int gpus, double bytes) {
  const bool reduces = op != CollectiveOp::broadcast && op != CollectiveOp::allgather;
  const bool rooted = op == CollectiveOp::broadcast || op == CollectiveOp::reduce;
  const double per_count = (op == CollectiveOp::allgather || op == CollectiveOp::reducescatter) ? gpus : 1;
  return {static_cast<std::int64_t>(std::floor(bytes / 4 / per_count)), reduces ? "sum" : "none", rooted ? 0 : -1};
}

double average_busbw(const std::vector<Row>& rows) {
  double sum = 0;
  for (const auto& r : rows) sum += r.busbw;
  return rows.empty() ? 0.0 : sum / static_cast<double>(rows.size());
}

/// The JSON of the table (README, "collective --format json"): every number the table prints, the unit in its key.
void write_json(std::ostringstream& out, const CollectiveRun& run, const std::vector<Row>& rows) {
  const auto& [o, op, forced, c, where, table] = run;
  nlohmann::ordered_json j;
  j["schema"] = 2;  // 2: units in the keys (algbw_gb_per_s, size_bytes), the table's columns and average
  j["command"] = "collective";
  j["cluster"] = c.name;
  j["op"] = o.op;
  j["gpus"] = o.gpus;
  j["nodes"] = where.nodes;
  j["gpus_per_node"] = where.gpus_per_node;
  j["gpus_per_thread"] = o.gpus_per_thread;
  // the host's issue of each further GPU one thread drives (nccl-tests -g K), in the time when gpus_per_thread > 1
  j["launch_s_per_gpu"] = table.launch_us_per_gpu * 1e-6;
  j["algo"] = forced.algorithm >= 0 ? nlohmann::ordered_json(o.algo) : nlohmann::ordered_json(nullptr);   // NCCL_ALGO
  j["proto"] = forced.protocol >= 0 ? nlohmann::ordered_json(o.proto) : nlohmann::ordered_json(nullptr);  // NCCL_PROTO
  j["nccl_version"] = table.version;
  j["command_line"] = command_line();
  j["results"] = nlohmann::ordered_json::array();
  for (const auto& r : rows) {
    const Columns k = columns(op, o.gpus, r.bytes);
    j["results"].push_back({{"size_bytes", r.bytes},
                            {"count_elements", k.count},
                            {"type", "float"},
                            {"redop", k.redop},
                            {"root", k.root},
                            {"time_s", in_seconds(r.choice.time)},
                            {"algbw_gb_per_s", r.algbw},
                            {"busbw_gb_per_s", r.busbw},
                            {"algorithm", std::string(nccl::algorithm_name(r.choice.algorithm))},
                            {"protocol", std::string(nccl::protocol_name(r.choice.protocol))},
                            {"channels", r.choice.channels}});
  }
  j["avg_busbw_gb_per_s"] = average_busbw(rows);
  out << j.dump(2) << "\n";
}

void write_table(std::ostringstream& out, const CollectiveRun& run, const std::vector<Row>& rows) {
  const auto& [o, op, forced, c, where, table] = run;
  const int nodes = where.nodes, ppn = where.gpus_per_node;
  out << fmt::format("# dlscale collective: {} on {} ({} GPUs, {} node{} x {}), NCCL {} cost model (predicted)\n", o.op, c.name,
                     o.gpus, nodes, nodes > 1 ? "s" : "", ppn, table.version);
  if (o.gpus_per_thread > 1)
    out << fmt::format(
        "# one thread issues each call on {} GPUs (nccl-tests -g {}): time = {} x {} us + max({} us, NCCL's time)\n",
        o.gpus_per_thread, o.gpus_per_thread, o.gpus_per_thread - 1, table.launch_us_per_gpu, table.launch_us_per_gpu);
  if (forced.algorithm >= 0 || forced.protocol >= 0)
    out << fmt::format("# restricted as NCCL_ALGO={} NCCL_PROTO={} would (NCCL picks among what is left)\n",
                       forced.algorithm >= 0 ? o.algo : "(any)", forced.protocol >= 0 ? o.proto : "(any)");
  out << "#\n";
  out << fmt::format("# {:>10} {:>13} {:>9} {:>7} {:>7} {:>10} {:>7} {:>7}  {:<9} {:<8} {:>8}\n", "size", "count", "type",
                     "redop", "root", "time", "algbw", "busbw", "algorithm", "protocol", "channels");
  out << fmt::format("# {:>10} {:>13} {:>9} {:>7} {:>7} {:>10} {:>7} {:>7}\n", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)",
                     "(GB/s)");
  for (const auto& r : rows) {
    const Columns k = columns(op, o.gpus, r.bytes);
    out << fmt::format("  {:>10.0f} {:>13} {:>9} {:>7} {:>7} {:>10.1f} {:>7.2f} {:>7.2f}  {:<9} {:<8} {:>8}\n", r.bytes, k.count,
                       "float", k.redop, k.root, in_us(r.choice.time), r.algbw, r.busbw, nccl::algorithm_name(r.choice.algorithm),
                       nccl::protocol_name(r.choice.protocol), r.choice.channels);
  }
  out << fmt::format("# Avg bus bandwidth    : {:.3f}\n", average_busbw(rows));
}

void run_collective(const CollectiveOptions& o) {
  const CollectiveOp op = parse_op(o.op);
  const nccl::Forced forced = parse_forced(o);
  const bool json = json_format(o.format);
  const Cluster c = load_collective_cluster(o);
  const CollectiveRun run{o, op, forced, c, placement(o, c), nccl::default_table()};
  check_forced(run);
  const std::vector<Row> rows = predict_rows(run);
  std::ostringstream out;
  if (json) write_json(out, run, rows);
  else write_table(out, run, rows);
  emit(out.str(), o.output);
}

}  // namespace

void setup_collective(CLI::App& app) {
  auto opt = std::make_shared<CollectiveOptions>();
  auto* cmd = app.add_subcommand("collective", "Predict a NCCL collective's time, algbw and busbw on a cluster topology");
  cmd->add_option("--cluster", opt->cluster, "Cluster name or file (needs a 'node:' graph)")->required();
  cmd->add_option("--op", opt->op, "allreduce, allgather, reducescatter, broadcast or reduce")->capture_default_str();
  cmd->add_option("--gpus", opt->gpus, "GPUs taking part")->required();
  cmd->add_option("--nodes", opt->nodes, "Nodes they sit on (default: as few as hold them)");
  cmd->add_option("--gpus-per-thread", opt->gpus_per_thread,
                  "GPUs one thread drives, as nccl-tests -g K: adds the host's issue of K - 1 of them (4.8 us each)")
      ->capture_default_str();
  cmd->add_option("--algo", opt->algo,
                  "Only this algorithm, as NCCL_ALGO: ring, tree, nvls, nvls_tree, collnet_direct, collnet_chain or pat");
  cmd->add_option("--proto", opt->proto, "Only this protocol, as NCCL_PROTO: ll, ll128 or simple");
  add_scale_options(*cmd, opt->scale, false);
  add_gpu_option(*cmd, opt->scale);
  cmd->add_option("--bytes", opt->bytes, "Message size (nccl-tests semantics), e.g. 256MiB");
  cmd->add_option("--sweep", opt->sweep, "MIN:MAX, doubling (e.g. 8B:1GiB)");
  cmd->add_option("--format", opt->format, "table or json")->capture_default_str();
  cmd->add_option("-o,--output", opt->output, "Write to FILE (atomically) instead of standard output")->type_name("FILE");
  cmd->callback([opt] { run_collective(*opt); });
}

}  // namespace dlscale::cli
