// Measurements of a real machine that replace the model's estimates where they exist: the calibration
// file (schema version 1, docs/calibration.md). It is written by `dlscale-calibrate` (CUDA) and by the
// importers of what users already measured (`dlscale calibrate import nccl-tests|nvbandwidth`), and read
// by `predict --calibration` through a CollectiveModel that wraps the topology/α-β model as fallback.
//
// Plain structs only: parsing and writing live in lib/calibration/ (yaml-cpp stays out of this header).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dlscale/collective.hpp"
#include "dlscale/compute.hpp"
#include "dlscale/detail/enum_names.hpp"
#include "dlscale/units.hpp"

namespace dlscale {

struct Scenario;  // predict.hpp

struct Cluster;
struct Network;

inline constexpr int kCalibrationSchema = 1;

// ---- statistics of repeated samples ----------------------------------------------------------------

/// Median and quartiles of a set of samples (quartiles by linear interpolation between order
/// statistics, R's type 7 / numpy's default), as nvbench and Google Benchmark report them.
struct SampleStats {
  std::size_t count = 0;
  double median = 0, q1 = 0, q3 = 0, min = 0, max = 0, mean = 0;
  [[nodiscard]] double iqr() const noexcept { return q3 - q1; }
  /// IQR / median: the relative noise nvbench stops on.
  [[nodiscard]] double relative_noise() const noexcept { return median > 0 ? iqr() / median : 0.0; }
};
/// Throws std::invalid_argument on an empty span.
SampleStats summarize(std::span<const double> samples);

/// When to stop sampling one measurement (nvbench's "stop on relative noise or time budget").
struct StoppingRule {
  std::size_t min_samples = 10;
  std::size_t max_samples = 1000;
  double max_relative_noise = 0.02;  // IQR/median below which enough samples have been taken
  double min_time_s = 0.05;          // measured time that must accumulate before noise may stop it
  double budget_s = 2.0;             // wall time after which sampling stops whatever the noise
};

/// Collects samples of one measurement, dropping throttled ones, and says when to stop.
class SampleCollector {
 public:
  explicit SampleCollector(StoppingRule rule) : rule_(rule) {}
  /// `throttled`: the GPU clock fell below the throttle threshold during the sample (dropped).
  void add(double sample_s, bool throttled = false);
  /// `elapsed_s`: wall time since the measurement started (warm-up included).
  [[nodiscard]] bool done(double elapsed_s) const;
  [[nodiscard]] const std::vector<double>& samples() const noexcept { return kept_; }
  [[nodiscard]] std::size_t dropped() const noexcept { return dropped_; }
  [[nodiscard]] SampleStats stats() const { return summarize(kept_); }

 private:
  StoppingRule rule_;
  std::vector<double> kept_;
  std::size_t dropped_ = 0;
  double total_ = 0;
};

// ---- collective curves ---------------------------------------------------------------------------

/// t(S) = α + S/β, the latency-bandwidth ("Hockney") model of one collective on one GPU set.
struct AlphaBeta {
  Seconds alpha{};
  BytesPerSecond beta{};
  [[nodiscard]] Seconds at(Bytes size) const noexcept { return alpha + size / beta; }
};

/// One row of an nccl-tests table (or one dlscale-calibrate measurement), out-of-place unless noted.
struct CollectivePoint {
  Bytes size{};    // nccl-tests "size": per-rank array (all-reduce, broadcast), total (all-gather, reduce-scatter)
  Seconds time{};  // out-of-place time
  std::optional<Seconds> time_in_place;
  std::optional<Seconds> iqr;  // spread of the samples (dlscale-calibrate only)
  std::size_t samples = 0;     // samples behind `time` (0: unknown, e.g. an nccl-tests average)
};

/// nccl-tests' definitions (doc/PERFORMANCE.md): algbw = S/t; busbw = algbw × factor(op, n).
BytesPerSecond algorithm_bandwidth(Bytes size, Seconds time) noexcept;
/// all-reduce 2(n−1)/n; all-gather, reduce-scatter (n−1)/n; broadcast, reduce 1.
double bus_bandwidth_factor(CollectiveOp op, int ranks) noexcept;

struct CollectiveCurve {
  CollectiveOp op = CollectiveOp::allreduce;
  int gpus = 2;
  int nodes = 1;
  std::string dtype = "float";
  /// nccl-tests -g k: one thread issued each call on k GPUs, so every time holds (k − 1) launches of host
  /// issue (nccl::nccl_tests_time); a prediction, one process per GPU, takes them out.
  int gpus_per_thread = 1;
  std::string source;                   // file it came from (for --explain-sources)
  std::vector<CollectivePoint> points;  // sorted by size, sizes distinct
  std::optional<AlphaBeta> fit;         // least-squares fit over the points (fit_alpha_beta)
};

enum class FitWeighting {
  absolute,  // minimise Σ (t_i − α − S_i/β)²: dominated by the largest sizes
  relative   // minimise Σ ((t_i − α − S_i/β) / t_i)²: every size counts alike (the default)
};

/// Least-squares α-β fit (Eigen, normal equations solved by QR). Needs two distinct sizes. When the
/// unconstrained fit gives a negative α or a non-positive 1/β, the offending term is pinned at zero
/// and the other refitted, so the result is always physical.
AlphaBeta fit_alpha_beta(std::span<const CollectivePoint> points, FitWeighting w = FitWeighting::relative);

/// Where a curve's value for a size came from.
enum class CurveSource { interpolated, extrapolated };

/// The time of `size` on a curve: linear interpolation in size between the two measured sizes around
/// it (exact on a measured size). Outside the measured range the fitted α-β line's slope 1/β is
/// continued from the nearest measured point, so the curve stays continuous (docs/calibration.md).
/// A curve without a fit is fitted on the fly. Throws std::invalid_argument on an empty curve.
Seconds curve_time(const CollectiveCurve& curve, Bytes size, CurveSource* source = nullptr);

// ---- copies, p2p, GEMM, layers, storage -----------------------------------------------------------

struct BandwidthPoint {
  Bytes size{};
  Seconds time{};  // median time of one copy of `size`
  BytesPerSecond bandwidth{};
  std::optional<Seconds> iqr;
  std::size_t samples = 0;
};

enum class TransferKind { h2d_pinned, h2d_pageable, d2h_pinned, d2h_pageable, device_copy };
template <>
struct EnumNames<TransferKind> {
  static constexpr std::array<EnumName<TransferKind>, 5> names{{
      {TransferKind::h2d_pinned, "h2d_pinned"},
      {TransferKind::h2d_pageable, "h2d_pageable"},
      {TransferKind::d2h_pinned, "d2h_pinned"},
      {TransferKind::d2h_pageable, "d2h_pageable"},
      {TransferKind::device_copy, "device_copy"},
  }};
  static constexpr std::array<EnumName<TransferKind>, 0> aliases{};
};

struct TransferCurve {
  TransferKind kind = TransferKind::h2d_pinned;
  int device = 0;
  std::string source;
  std::vector<BandwidthPoint> points;  // sorted by size
  /// The bandwidth at the largest measured size (what a large batch copy sees).
  [[nodiscard]] BytesPerSecond peak() const noexcept;
};
/// Bandwidth for a copy of `size`: size / (time interpolated linearly in size; the last two points'
/// line beyond the range). Throws std::invalid_argument on an empty curve.
BytesPerSecond transfer_bandwidth(const TransferCurve& curve, Bytes size);

struct P2PEntry {
  int src = 0, dst = 0;
  bool peer_access = true;  // false: copy staged through host memory
  std::optional<BytesPerSecond> bandwidth;
  std::optional<Seconds> latency;
  std::optional<BytesPerSecond> bidirectional;
};

struct GemmResult {
  std::string precision;  // fp32, tf32, fp16, bf16
  std::int64_t m = 0, n = 0, k = 0;
  Seconds time{};
  FlopsPerSecond rate{};  // 2·m·n·k / time
  std::optional<Seconds> iqr;
  std::size_t samples = 0;
};

struct LayerTiming {
  std::string name;
  std::optional<Seconds> forward, backward;  // absent: not measured (the roofline is used)
  std::string how;                           // e.g. "cudnn conv 3x3 s1, algo 1" or "cublas gemm"
};

/// Per-layer times of one network at one batch size on one GPU.
struct LayerProfile {
  std::string model;
  int batch = 0;
  std::string precision = "fp32";  // fp32 (strict), tf32 or fp16 (mixed precision), as --precision
  std::string gpu;
  std::vector<LayerTiming> layers;  // input side first, names as in models/NAME.yaml
};

struct StorageResult {
  std::string path;
  Bytes size{};
  std::optional<BytesPerSecond> page_cache;  // buffered sequential read of a cached file
  std::optional<BytesPerSecond> direct;      // O_DIRECT sequential read (the device)
};

struct DeviceInfo {
  int index = 0;
  std::string name;
  std::string pci_bus_id;
  int sm_version = 0;  // e.g. 90
  int sm_count = 0;
  std::optional<Hertz> sm_clock, memory_clock;
  std::optional<Bytes> memory;
  int memory_bus_width = 0;                        // bits
  std::optional<BytesPerSecond> memory_bandwidth;  // theoretical, from clock and bus width
  int pcie_generation = 0, pcie_width = 0;         // current link, from sysfs (0: unknown)
  int pcie_max_generation = 0, pcie_max_width = 0;
  int nvlinks = 0;         // from NVML or the NCCL topology dump
  std::vector<int> peers;  // devices it can access directly (cudaDeviceCanAccessPeer)
};

struct Provenance {
  std::string tool;  // "dlscale-calibrate 0.1.0" or "dlscale calibrate import nccl-tests"
  std::string date;  // ISO 8601 UTC
  std::string host;
  std::string command_line;
  std::string driver, cuda, nccl, cudnn, cublas;  // versions (empty: unknown / not used)
  std::vector<std::string> sources;               // imported files
  std::string notes;
};

struct Calibration {
  int schema = kCalibrationSchema;
  std::string source_file;  // set by the loader
  Provenance provenance;
  std::string gpu;  // the GPU model measured (empty: unknown, e.g. an nvbandwidth import without names)
  std::vector<DeviceInfo> devices;
  std::vector<TransferCurve> transfers;
  std::vector<P2PEntry> p2p;
  std::vector<CollectiveCurve> collectives;
  std::vector<GemmResult> gemm;
  std::vector<LayerProfile> layers;
  std::optional<StorageResult> storage;
  std::string topology_file;  // topology YAML of the machine written beside (dlscale-calibrate)
  std::string raw_samples;    // CSV of every sample, beside the file

  [[nodiscard]] const CollectiveCurve* find_curve(CollectiveOp op, int gpus, int nodes) const noexcept;
  [[nodiscard]] const TransferCurve* find_transfer(TransferKind kind) const noexcept;  // device 0 first
  [[nodiscard]] const LayerProfile* find_layers(std::string_view model, int batch, std::string_view precision) const noexcept;
};

// ---- files -----------------------------------------------------------------------------------------

/// Reads a calibration file; every problem (another schema version, unknown key, bad unit) is an
/// InputError with file:line:col and the key.
Calibration load_calibration(const std::filesystem::path& file);
/// The same on text already read (`display_name` stands for the file in errors and in source_file).
Calibration parse_calibration(const std::string& yaml_text, const std::string& display_name);
/// The YAML text of a calibration (schema 1); load_calibration(to_yaml(c)) gives `c` back.
std::string to_yaml(const Calibration& c);
/// Writes a calibration through a temporary file and a rename.
void save_calibration(const Calibration& c, const std::filesystem::path& file);

/// Parses nccl-tests logs (all_reduce_perf, all_gather_perf, reduce_scatter_perf, broadcast_perf,
/// reduce_perf; every table layout in shared/docs/nccl-model.md). `op_hint` names the collective when
/// neither the file name nor the log says it. Each table becomes one curve; its GPU count comes from the
/// "# Rank ... device" lines (nodes: distinct host names) or else the nThread·nGpus header. Truncated or
/// garbled logs are InputErrors naming file:line:col.
/// Warnings (failed validation rows, averages that disagree, mixed GPUs) go to `warnings`.
Calibration import_nccl_tests(std::span<const std::filesystem::path> logs, std::optional<CollectiveOp> op_hint = {},
                              std::vector<std::string>* warnings = nullptr);
/// What `calibrate import nccl-tests` is told beyond the logs: `op` names the collective of a table that
/// does not say (and selects one collective of a log that measured several); `gpus`/`nodes` (> 0) replace
/// the counts read from the log (a trimmed log, or one without its "# Rank" lines).
struct NcclTestsImport {
  std::optional<CollectiveOp> op;
  int gpus = 0;
  int nodes = 0;
};
Calibration import_nccl_tests(std::span<const std::filesystem::path> logs, const NcclTestsImport& options,
                              std::vector<std::string>* warnings = nullptr);
/// What one nccl-tests log holds.
struct NcclTestsLog {
  std::vector<CollectiveCurve> curves;
  std::string gpu_name;               // from the "# Rank ... device N [0x..] NAME" lines
  std::string nccl_version;           // from "NCCL version X" or "nccl-library=NNNNN"
  std::vector<std::string> warnings;  // one line each, "file:line: message"
};
/// The same on text already read (`display_name` is used in errors and warnings).
NcclTestsLog parse_nccl_tests(const std::string& text, const std::string& display_name, std::optional<CollectiveOp> op_hint = {});
NcclTestsLog parse_nccl_tests(const std::string& text, const std::string& display_name, const NcclTestsImport& options);

/// Parses the output of NVIDIA's nvbandwidth, its JSON (`nvbandwidth -j`) or its text (read into the
/// same test cases): host↔device copies become
/// transfer curves (one point at the buffer size), device↔device matrices the P2P table, latency
/// tests the P2P latencies. Waived and failed test cases are skipped and listed in provenance.notes.
Calibration import_nvbandwidth(const std::filesystem::path& json_file, std::vector<std::string>* warnings = nullptr);
/// The same on text already read (`display_name` stands for the file in errors, warnings and provenance).
Calibration parse_nvbandwidth(const std::string& json_text, const std::string& display_name,
                              std::vector<std::string>* warnings = nullptr);

// ---- the model reads calibration -------------------------------------------------------------------

/// A collective model that answers from measured curves where one exists for (op, GPU count, nodes) and
/// from `fallback` elsewhere.
class CalibratedCollectiveModel final : public CollectiveModel {
 public:
  CalibratedCollectiveModel(std::shared_ptr<const Calibration> cal, std::shared_ptr<const CollectiveModel> fallback);
  [[nodiscard]] Seconds time(CollectiveOp op, Bytes size, const GpuPlacement& where) const override;
  [[nodiscard]] std::string describe() const override;

  /// Which source answers for (op, where): the curve used, or null for the fallback.
  [[nodiscard]] const CollectiveCurve* curve_for(CollectiveOp op, const GpuPlacement& where) const noexcept;
  [[nodiscard]] const CollectiveModel& fallback() const noexcept { return *fallback_; }
  [[nodiscard]] const Calibration& calibration() const noexcept { return *cal_; }

 private:
  std::shared_ptr<const Calibration> cal_;
  std::shared_ptr<const CollectiveModel> fallback_;
};

/// The GPU family token of a name ("NVIDIA H100 80GB HBM3" → "h100", "Tesla P40 (1.3 GHz base clock)" →
/// "p40", "NVIDIA GeForce RTX 2080 Ti" → "2080"): the first word with a digit, lower-cased, after
/// removing vendor and brand words.
std::string gpu_family(std::string_view name);

/// Measured forward/backward times of `net` at `batch` and `precision` from the calibration, indexed like
/// net.layers (zero where a layer was not measured). `matched` receives how many layers were found.
/// Null when the calibration has no profile for that (model, batch, precision).
std::optional<LayerTimes> measured_layer_times(const Calibration& cal, const Network& net, int batch, std::string_view precision,
                                               std::size_t* matched = nullptr);

/// What apply_calibration took from a calibration, for a front end that says where each number came from.
struct CalibrationUse {
  bool layer_times = false;                  // Scenario::measured_layers now holds the calibration's layer times
  std::vector<std::string> roofline_layers;  // ... except for these layers, left to the compute model
  std::optional<TransferKind> h2d;           // the copy whose measured curve replaced the cluster's h2d bandwidth
  bool storage = false;                      // measured page-cache / direct-read bandwidths replaced the cluster's
  std::shared_ptr<const CalibratedCollectiveModel> collectives;  // now Scenario::collectives; null: no curves
  std::shared_ptr<const CollectiveModel> fallback;               // what answers where no curve does (the scenario's model)
  std::vector<std::string> warnings;  // one line each, "FILE: message" (an unnamed GPU, no layer times)
};

/// Puts a calibration's measurements into `sc` (docs/calibration.md, "Using a calibration"): per-layer times
/// for the scenario's network, batch and precision (Scenario::measured_layers, the compute model's times
/// scaled by the framework's compute efficiency for layers not measured), the host-to-GPU bandwidth of the
/// framework's copy at one GPU's batch, the storage bandwidths, and a CalibratedCollectiveModel over the
/// scenario's collective model. A calibration (or one of its layer profiles) of another GPU family than the
/// cluster's is an InputError at the line of `cal->source_file` that names the GPU. Null `cal`: nothing is
/// applied, and `fallback` is still the scenario's collective model.
CalibrationUse apply_calibration(Scenario& sc, std::shared_ptr<const Calibration> cal);

// ---- shapes dlscale-calibrate times layers with ------------------------------------------------------

/// A 2-D convolution as cuDNN needs it, recovered from a models/ layer (which records only parameters,
/// FLOPs and the output shape): C_in·k² = forward FLOPs / (2·C_out·H_out·W_out); k is the candidate
/// (3, 1, 5, 7, 11) whose C_in is the channel count of the most recent earlier layer (or the input),
/// whose spatial size gives the stride, and the padding is the one that yields H_out. Null when no
/// candidate is consistent (params = C_in·k²·C_out, optionally + C_out for a bias).
struct ConvShape {
  int in_channels = 0, out_channels = 0, kernel = 1, stride = 1, padding = 0;
  int in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  bool first = false;  // fed by the network input: no input gradient in backward
};
std::optional<ConvShape> infer_conv_shape(const Network& net, std::size_t layer);

/// A linear layer as a GEMM per sample: out = output_shape.back(), rows = the other output dimensions'
/// product (tokens), in = forward FLOPs / (2·out·rows). Null unless params = in·out (+ out).
struct LinearShape {
  std::int64_t in_features = 0, out_features = 0, rows_per_sample = 1;
};
std::optional<LinearShape> infer_linear_shape(const Network& net, std::size_t layer);

}  // namespace dlscale
