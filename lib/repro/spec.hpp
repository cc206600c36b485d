// Internal: a scenario file (examples/papers/*.yaml) parsed into plain structs. Schema: docs/reproduce.md.
#pragma once

#include "dlscale/input_pipeline.hpp"

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dlscale/cluster.hpp"
#include "dlscale/error.hpp"
#include "dlscale/units.hpp"

namespace dlscale::repro {

/// The grid coordinates of one run.
struct RunKey {
  std::string system, model, framework, precision, inputs, variant;
  int gpus = 1;
  int batch = 0;
};

/// Which runs a rule applies to: every given field must match (empty / 0 = any).
struct Selector {
  std::vector<std::string> system, model, framework, precision, inputs, variant;
  std::vector<int> gpus;
  int batch = 0;
  [[nodiscard]] bool matches(const RunKey& k, bool check_gpus = true) const;
};

struct BatchRule {
  Selector when;
  std::vector<int> values;  // several values make batch a grid dimension
};

struct GpusRule {
  Selector when;
  std::vector<int> values;
};

/// Changes to a system for some runs: a variant (a named alternative, e.g. 10 GbE instead of
/// InfiniBand) or an override rule (e.g. Caffe2 reading over NFS from one shared server).
struct SystemChange {
  Selector when;
  std::string name;                              // variants only
  std::optional<LinkSpec> inter_node;            // replaces the network between nodes
  std::optional<BytesPerSecond> shared_storage;  // one server feeds every node, uncached
  std::optional<Bytes> stored_bytes_per_sample;  // bytes read from storage per sample (records, not decoded)
  std::optional<double> jitter_cv;               // replaces the framework's (0: a paper's arithmetic without it)
  std::optional<InputPipeline> input;            // replaces the cluster's input: section (the paper's loader)
  std::string input_at;                          // where that section is written (tells two overrides apart)
};

struct MeasuredEntry {
  Selector when;
  std::map<std::string, double> values;  // keyed like Row::measured
  std::string source;
};

struct ExperimentSpec {
  std::string id, title, source, kind = "training";
  // where the experiment and its 'gpus' key sit in the file, for errors found while running it
  SourceLocation where, gpus_where;
  std::string path, gpus_path;
  std::vector<std::string> tables;
  std::vector<std::string> notes;
  std::vector<std::string> systems, models, frameworks, precisions, inputs;
  std::vector<GpusRule> gpus;
  std::vector<BatchRule> batch;
  bool strong_scaling = false;
  std::string profile_pattern;  // e.g. "table5-{model}-{framework}"
  std::vector<SystemChange> variants;
  std::vector<SystemChange> overrides;
  std::vector<MeasuredEntry> measured;
  std::optional<std::string> ratio_dimension, ratio_of, ratio_to;
  // eq. 12 as the paper applies it: S_g = (MB per GPU) · N_g, over B_rdma
  std::optional<double> efficiency_mb_per_gpu;
  std::optional<BytesPerSecond> efficiency_bandwidth;
  // busbw
  std::vector<std::string> operations;
  Bytes min_size{}, max_size{};
  double size_factor = 2.0;
};

struct PaperSpec {
  std::string paper, title, source, file;
  std::vector<ExperimentSpec> experiments;
};

PaperSpec load_paper(const std::filesystem::path& file);
/// The `paper:` name of a scenario file without parsing the rest (for selection by name).
std::string paper_name(const std::filesystem::path& file);

}  // namespace dlscale::repro
