// Fitting the kernel model's parameters to measured throughputs (include/dlscale/fit.hpp).
#include "dlscale/fit.hpp"

#include <Eigen/Dense>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "dlscale/error.hpp"
#include "dlscale/io.hpp"
#include "dlscale/strategy.hpp"
#include "io/files.hpp"

namespace dlscale {
namespace fs = std::filesystem;

namespace {
std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  for (char c : line) {
    if (c == ',') {
      out.push_back(cell);
      cell.clear();
    } else if (c != '\r') {
      cell += c;
    }
  }
  out.push_back(cell);
  return out;
}

struct Raw {
  std::string gpu, model, precision;
  int gpus = 0;
  std::string batch;  // global_batch or batch_per_gpu, as written
  bool batch_is_global = true;
  std::string memory_format, attention, framework;  // optional columns; empty: the options'
  double samples_per_s = 0;
  int line = 0;
  // 1-based column of each field, for messages: gpu, gpus, precision, model, batch, rate, memory_format, attention,
  // framework
  std::vector<int> col;
};

[[noreturn]] void fail_at(const fs::path& file, int l, int c, const std::string& key, const std::string& msg) {
  throw InputError(SourceLocation{file.string(), l, c}, key, msg);
}

// Column positions in characters for messages.
int col_of(const std::string& text, int index) {
  int c = 1;
  for (int i = 0; i < index; ++i) c = static_cast<int>(text.find(',', static_cast<std::size_t>(c - 1))) + 2;
  return c;
}

/// The measurements file read line by line: the header's columns, then the rows as written.
class ThroughputCsv {
 public:
  explicit ThroughputCsv(const fs::path& file) : file_(file), in_(read_input_file(file, "measurements")) {}

  [[noreturn]] void fail(int l, int c, const std::string& key, const std::string& msg) const { fail_at(file_, l, c, key, msg); }
  int lineno() const { return lineno_; }

  void read_header() {
    std::string line;
    while (std::getline(in_, line)) {
      ++lineno_;
      if (line.empty() || line[0] == '#') continue;
      header_ = split_csv(line);
      break;
    }
    if (header_.empty()) fail(std::max(lineno_, 1), 1, "header", "no header line (gpu,gpus,precision,model,samples_per_s,...)");
    c_gpu_ = column("gpu", true);
    c_gpus_ = column("gpus", true);
    c_prec_ = column("precision", true);
    c_model_ = column("model", true);
    c_rate_ = column("samples_per_s", true);
    c_batch_ = column("global_batch", false);
    if (c_batch_ < 0) {
      c_batch_ = column("batch_per_gpu", false);
      global_ = false;
    }
    if (c_batch_ < 0) fail(lineno_, 1, "global_batch", "the header names neither global_batch nor batch_per_gpu");
    c_layout_ = column("memory_format", false);
    c_attention_ = column("attention", false);
    c_framework_ = column("framework", false);
  }

  /// The rows run on `gpus` GPUs.
  std::vector<Raw> read_rows(int gpus) {
    std::vector<Raw> raws;
    std::string line;
    while (std::getline(in_, line)) {
      ++lineno_;
      if (line.empty() || line[0] == '#' || line == "\r") continue;
      Raw r = read_row(line);
      if (r.gpus == gpus) raws.push_back(std::move(r));
    }
    return raws;
  }

 private:
  int column(std::string_view name, bool required) const {
    for (std::size_t i = 0; i < header_.size(); ++i)
      if (header_[i] == name) return static_cast<int>(i);
    if (required) fail(lineno_, 1, std::string(name), "the header has no such column");
    return -1;
  }

  const std::string& cell(const std::vector<std::string>& cells, int c) const { return cells[static_cast<std::size_t>(c)]; }

  Raw read_row(const std::string& line) const {
    const auto cells = split_csv(line);
    if (cells.size() != header_.size())
      fail(lineno_, 1, "row", fmt::format("{} cells where the header has {}", cells.size(), header_.size()));
    Raw r;
    r.line = lineno_;
    r.gpu = cell(cells, c_gpu_);
    r.model = cell(cells, c_model_);
    r.precision = cell(cells, c_prec_);
    r.col = {col_of(line, c_gpu_),   col_of(line, c_gpus_),  col_of(line, c_prec_),
             col_of(line, c_model_), col_of(line, c_batch_), col_of(line, c_rate_)};
    try {
      std::size_t used = 0;
      const std::string g = cell(cells, c_gpus_);
      r.gpus = std::stoi(g, &used);
      if (used != g.size() || r.gpus < 1) throw std::invalid_argument(g);
    } catch (const std::exception&) {
      fail(lineno_, r.col[1], "gpus", fmt::format("'{}' is not a GPU count ≥ 1", cell(cells, c_gpus_)));
    }
    try {
      std::size_t used = 0;
      const std::string v = cell(cells, c_rate_);
      r.samples_per_s = std::stod(v, &used);
      if (used != v.size() || !(r.samples_per_s > 0) || !std::isfinite(r.samples_per_s)) throw std::invalid_argument(v);
    } catch (const std::exception&) {
      fail(lineno_, r.col[5], "samples_per_s",
           fmt::format("'{}' is not a positive throughput in samples/s", cell(cells, c_rate_)));
    }
    r.batch = cell(cells, c_batch_);
    r.batch_is_global = global_;
    if (c_layout_ >= 0) r.memory_format = cell(cells, c_layout_);
    if (c_attention_ >= 0) r.attention = cell(cells, c_attention_);
    if (c_framework_ >= 0) r.framework = cell(cells, c_framework_);
    r.col.push_back(col_of(line, std::max(c_layout_, 0)));
    r.col.push_back(col_of(line, std::max(c_attention_, 0)));
    r.col.push_back(col_of(line, std::max(c_framework_, 0)));
    return r;
  }

  const fs::path& file_;
  std::istringstream in_;
  int lineno_ = 0;
  std::vector<std::string> header_;
  int c_gpu_ = -1, c_gpus_ = -1, c_prec_ = -1, c_model_ = -1, c_rate_ = -1, c_batch_ = -1, c_layout_ = -1, c_attention_ = -1,
      c_framework_ = -1;
  bool global_ = true;
};

// The batch per GPU of a row: as written, or (empty) the one published for the same model and precision
// on the GPU with the most memory.
int batch_per_gpu(const fs::path& file, const Raw& r, const std::vector<Raw>& raws) {
  std::string batch = r.batch;
  int gpus = r.gpus;
  if (batch.empty()) {
    Bytes best{};
    for (const auto& o : raws) {
      if (o.model != r.model || o.precision != r.precision || o.batch.empty()) continue;
      const Bytes mem = find_gpu(o.gpu).memory_size;
      if (mem > best) {
        best = mem;
        batch = o.batch;
        gpus = o.gpus;
      }
    }
    if (batch.empty())
      fail_at(file, r.line, r.col[4], "global_batch", "empty, and no other row of this model and precision gives one");
  }
  try {
    std::size_t used = 0;
    const int b = std::stoi(batch, &used);
    if (used != batch.size() || b < 1) throw std::invalid_argument(batch);
    return r.batch_is_global ? std::max(1, b / gpus) : b;
  } catch (const std::exception&) {
    fail_at(file, r.line, r.col[4], r.batch_is_global ? "global_batch" : "batch_per_gpu",
            fmt::format("'{}' is not a batch ≥ 1", batch));
  }
}

using NetworkCache = std::map<std::string, std::shared_ptr<const Network>>;

// The row's model, loaded once: a model given as a YAML file is found beside the measurements when its
// path is relative.
std::shared_ptr<const Network> network_of(const fs::path& file, const Raw& r, const MeasurementOptions& opt,
                                          NetworkCache& networks) {
  const auto mapped = opt.model_names.find(r.model);
  std::string zoo = mapped != opt.model_names.end() ? mapped->second : r.model;
  if (fs::path(zoo).extension() == ".yaml" && fs::path(zoo).is_relative()) zoo = (file.parent_path() / zoo).string();
  auto& net = networks[zoo];
  if (!net) {
    try {
      net = std::make_shared<const Network>(load_network(resolve(DataKind::network, zoo, "model")));
    } catch (const InputError& e) {
      if (!e.where().file.empty()) throw;  // the model file's own error, with its place
      fail_at(file, r.line, r.col[3], "model", e.what());
    }
  }
  return net;
}

using FrameworkCache = std::map<std::string, std::shared_ptr<const Strategy>>;

// The framework a row's cell names, loaded once: a YAML file is found beside the measurements when its path is
// relative.
std::shared_ptr<const Strategy> framework_of(const fs::path& file, const Raw& r, FrameworkCache& frameworks) {
  std::string name = r.framework;
  if (fs::path(name).extension() == ".yaml" && fs::path(name).is_relative()) name = (file.parent_path() / name).string();
  auto& f = frameworks[name];
  if (!f) {
    try {
      f = std::make_shared<const Strategy>(load_strategy(resolve(DataKind::framework, name, "framework")));
    } catch (const InputError& e) {
      if (!e.where().file.empty()) throw;  // the framework file's own error, with its place
      fail_at(file, r.line, r.col[8], "framework", e.what());
    }
  }
  return f;
}

// The options a row ran with: its framework cell's, else the framework of the layout its memory_format cell names
// (MeasurementOptions::framework_by_layout), else the file's.
MeasurementOptions row_options(const fs::path& file, const Raw& r, const MeasurementOptions& opt, FrameworkCache& frameworks) {
  std::shared_ptr<const Strategy> framework;
  if (!r.framework.empty()) {
    framework = framework_of(file, r, frameworks);
  } else if (!r.memory_format.empty() && !opt.framework_by_layout.empty()) {
    try {
      const auto it = opt.framework_by_layout.find(tensor_layout_from_string(r.memory_format));
      if (it != opt.framework_by_layout.end()) framework = it->second;
    } catch (const std::invalid_argument&) {
      // to_sample reports the cell
    }
  }
  MeasurementOptions o = opt;
  if (framework) o.take_framework(*framework);
  return o;
}

ThroughputSample to_sample(const fs::path& file, const Raw& r, const std::vector<Raw>& raws, const MeasurementOptions& opt,
                           NetworkCache& networks) {
  auto fail = [&](int l, int c, const std::string& key, const std::string& msg) { fail_at(file, l, c, key, msg); };
  ThroughputSample s;
  s.line = r.line;
  s.gpu_id = r.gpu;
  s.model_id = r.model;
  try {
    s.gpu = find_gpu(r.gpu);
  } catch (const InputError& e) {
    fail(r.line, r.col[0], "gpu", e.what());
  }
  try {
    s.precision = precision_from_string(r.precision);
  } catch (const std::invalid_argument& e) {
    fail(r.line, r.col[2], "precision", e.what());
  }
  if (s.precision == Precision::fp32 && opt.fp32_means_tf32 && s.gpu.supports(Precision::tf32)) s.precision = Precision::tf32;
  if (!s.gpu.supports(s.precision))
    fail(r.line, r.col[2], "precision", fmt::format("the {} has no {} mode", s.gpu.name, to_string(s.precision)));
  s.network = network_of(file, r, opt, networks);
  s.optimizer = opt.optimizer ? *opt.optimizer : default_optimizer(*s.network);
  try {  // docs/compute-model.md, K10 and K9: as the run was laid out and attended
    s.layout = r.memory_format.empty() ? opt.layout : tensor_layout_from_string(r.memory_format);
  } catch (const std::invalid_argument& e) {
    fail(r.line, r.col[6], "memory_format", e.what());
  }
  s.conv_algorithms = opt.conv_algorithms;
  s.lrn = opt.lrn;
  s.pool_index_bytes = opt.pool_index_bytes;
  s.optimizer_impl = opt.optimizer_impl;
  s.execution = opt.execution;
  s.update_kernels = opt.update_kernels;
  s.attention = opt.attention;
  try {
    if (!r.attention.empty()) s.attention = attention_kernel_from_string(r.attention);
  } catch (const std::invalid_argument& e) {
    fail(r.line, r.col[7], "attention", e.what());
  }
  s.framework = opt.framework;
  s.source = file.string();
  s.samples_per_s = r.samples_per_s;
  s.batch = batch_per_gpu(file, r, raws);
  return s;
}
}  // namespace

std::vector<ThroughputSample> read_throughput_csv(const fs::path& file, const MeasurementOptions& opt) {
  ThroughputCsv csv(file);
  csv.read_header();
  const std::vector<Raw> raws = csv.read_rows(opt.gpus);
  NetworkCache networks;
  FrameworkCache frameworks;
  std::vector<ThroughputSample> out;
  for (const auto& r : raws) out.push_back(to_sample(file, r, raws, row_options(file, r, opt, frameworks), networks));
  if (out.empty())
    throw InputError(SourceLocation{file.string(), csv.lineno(), 1}, "gpus",
                     fmt::format("no row with gpus = {} to fit", opt.gpus));
  return out;
}

void MeasurementOptions::take_framework(const Strategy& strategy) {
  conv_algorithms = strategy.conv_algorithms;
  layout = strategy.conv_algorithms.layout;
  attention = strategy.attention;
  lrn = strategy.lrn;
  pool_index_bytes = strategy.pool_index_bytes;
  optimizer = strategy.optimizer;
  optimizer_impl = strategy.optimizer_impl;
  execution = strategy.execution;
  update_kernels = strategy.update_kernels;
  framework = strategy.name;
}

double predicted_throughput(const ThroughputSample& s, const KernelParamSet& params) {
  ComputeOptions o;
  o.precision = s.precision;
  o.optimizer = s.optimizer;
  o.conv_algorithms = s.conv_algorithms;
  o.conv_algorithms.layout = s.layout;
  o.lrn = s.lrn;
  o.pool_index_bytes = s.pool_index_bytes;
  o.optimizer_impl = s.optimizer_impl;
  o.execution = s.execution;
  o.update_kernels = s.update_kernels;
  o.attention = effective_attention(s.attention, s.gpu, s.precision);
  o.kernel_params = std::shared_ptr<const KernelParamSet>(std::shared_ptr<void>{}, &params);  // non-owning
  const LayerTimes t = estimate_layer_times(*s.network, s.gpu, s.batch, o);
  return s.batch / in_seconds(t.total_forward() + t.total_backward() + t.total_update());
}

namespace {
// The free parameters as unbounded numbers: efficiencies through the logit, the overhead through its log.
double logit(double p) { return std::log(p / (1.0 - p)); }
double logistic(double x) { return 1.0 / (1.0 + std::exp(-x)); }
constexpr double kMaxEff = 0.999;
constexpr double kMaxFeed = 64.0;  // c = 64 at the reference demand: a 256×128 tile would lose 43 %

std::vector<double*> free_fields(KernelParams& p, const FitOptions& o) {
  std::vector<double*> f;
  if (o.tensor_efficiency) f.push_back(&p.tensor_efficiency);
  if (o.vector_efficiency) f.push_back(&p.vector_efficiency);
  if (o.conv_efficiency) f.push_back(&p.conv_efficiency);
  if (o.memory_efficiency) f.push_back(&p.memory_efficiency);
  return f;
}

Eigen::VectorXd pack(KernelParams p, const FitOptions& o) {
  auto f = free_fields(p, o);
  const Eigen::Index extra = (o.kernel_overhead ? 1 : 0) + (o.winograd_gain ? 1 : 0) + (o.operand_feed ? 1 : 0);
  Eigen::VectorXd x(static_cast<Eigen::Index>(f.size()) + extra);
  Eigen::Index j = 0;
  for (std::size_t i = 0; i < f.size(); ++i) x[j++] = logit(std::min(*f[i], kMaxEff));
  if (o.kernel_overhead) x[j++] = std::log(std::max(in_us(p.kernel_overhead), 1e-3));
  if (o.winograd_gain) x[j++] = logit(std::clamp((p.winograd_gain - 1.0) / 3.0, 1e-3, kMaxEff));  // in (1, 4)
  if (o.operand_feed) x[j++] = logit(std::clamp(p.operand_feed / kMaxFeed, 1e-3, kMaxEff));       // in (0, 64)
  return x;
}

/// Writes x into every parameter set (the defaults and each architecture: a global fit).
KernelParamSet unpack(const KernelParamSet& start, const Eigen::VectorXd& x, const FitOptions& o) {
  KernelParamSet s = start;
  auto apply = [&](KernelParams& p) {
    auto f = free_fields(p, o);
    Eigen::Index j = 0;
    for (std::size_t i = 0; i < f.size(); ++i) *f[i] = logistic(x[j++]);
    if (o.kernel_overhead) p.kernel_overhead = microseconds(std::exp(x[j++]));
    if (o.winograd_gain) p.winograd_gain = 1.0 + 3.0 * logistic(x[j++]);
    if (o.operand_feed) p.operand_feed = kMaxFeed * logistic(x[j++]);
  };
  apply(s.defaults);
  for (auto& a : s.architectures) apply(a);
  return s;
}

Eigen::VectorXd residuals(const std::vector<ThroughputSample>& samples, const std::vector<std::size_t>& rows,
                          const KernelParamSet& p) {
  Eigen::VectorXd r(static_cast<Eigen::Index>(rows.size()));
  for (std::size_t i = 0; i < rows.size(); ++i)
    r[static_cast<Eigen::Index>(i)] = std::log(predicted_throughput(samples[rows[i]], p) / samples[rows[i]].samples_per_s);
  return r;
}

KernelParamSet fit_rows(const std::vector<ThroughputSample>& samples, const std::vector<std::size_t>& rows,
                        const KernelParamSet& start, const FitOptions& o) {
  Eigen::VectorXd x = pack(start.defaults, o);
  KernelParamSet cur = unpack(start, x, o);
  Eigen::VectorXd r = residuals(samples, rows, cur);
  double cost = r.squaredNorm();
  double lambda = 1e-2;
  for (int it = 0; it < o.iterations; ++it) {
    Eigen::MatrixXd J(r.size(), x.size());
    for (Eigen::Index j = 0; j < x.size(); ++j) {
      Eigen::VectorXd xh = x;
      const double h = 1e-4;
      xh[j] += h;
      J.col(j) = (residuals(samples, rows, unpack(start, xh, o)) - r) / h;
    }
    const Eigen::MatrixXd JtJ = J.transpose() * J;
    const Eigen::VectorXd g = J.transpose() * r;
    bool accepted = false;
    double gain = 0.0;
    for (int tries = 0; tries < 8 && !accepted; ++tries) {
      Eigen::MatrixXd A = JtJ;
      A.diagonal() += lambda * (JtJ.diagonal().array() + 1e-9).matrix();
      const Eigen::VectorXd step = A.ldlt().solve(-g);
      Eigen::VectorXd xn = x + step;
      for (Eigen::Index j = 0; j < xn.size(); ++j) xn[j] = std::clamp(xn[j], -8.0, 8.0);
      KernelParamSet cand = unpack(start, xn, o);
      Eigen::VectorXd rn = residuals(samples, rows, cand);
      const double c = rn.squaredNorm();
      if (c < cost) {
        gain = (cost - c) / cost;
        x = xn;
        r = rn;
        cost = c;
        cur = std::move(cand);
        lambda = std::max(lambda / 3.0, 1e-7);
        accepted = true;
      } else {
        lambda *= 4.0;
      }
    }
    if (!accepted || gain < 1e-9) break;
  }
  return cur;
}

double mape_of(const std::vector<ThroughputSample>& samples, const std::vector<std::size_t>& rows,
               const std::vector<double>& predicted) {
  double s = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) s += std::abs(predicted[i] / samples[rows[i]].samples_per_s - 1.0);
  return rows.empty() ? 0.0 : 100.0 * s / static_cast<double>(rows.size());
}
}  // namespace

FitResult fit_kernel_params(const std::vector<ThroughputSample>& samples, const KernelParamSet& start, const FitOptions& opt) {
  std::vector<std::size_t> rows(samples.size());
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = i;
  FitResult res;
  res.params = fit_rows(samples, rows, start, opt);
  double sq = 0;
  for (const auto& s : samples) {
    res.predicted.push_back(predicted_throughput(s, res.params));
    sq += std::pow(std::log(res.predicted.back() / s.samples_per_s), 2);
  }
  res.mape = mape_of(samples, rows, res.predicted);
  res.rms_log = std::sqrt(sq / static_cast<double>(samples.size()));
  return res;
}

namespace {
// What a leave-one-out run groups rows by: the catalogue's GPU (Lambda's h100-sxm5-80gb is the H100 files'
// h100-sxm), the zoo's network (Lambda's bert-base is bert-squad), the file.
const std::string& group_of(const ThroughputSample& s, LeaveOut by) {
  switch (by) {
    case LeaveOut::gpu:
      return s.gpu.name;
    case LeaveOut::network:
      return s.network->name;
    case LeaveOut::source:
      break;
  }
  return s.source;
}
}  // namespace

std::vector<LeaveOneOut> leave_one_out(const std::vector<ThroughputSample>& samples, const KernelParamSet& start, LeaveOut by,
                                       const FitOptions& opt) {
  std::vector<std::string> keys;
  for (const auto& s : samples) {
    const std::string& k = group_of(s, by);
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  }
  std::vector<LeaveOneOut> out;
  for (const auto& k : keys) {
    std::vector<std::size_t> train, test;
    for (std::size_t i = 0; i < samples.size(); ++i) (group_of(samples[i], by) == k ? test : train).push_back(i);
    const KernelParamSet p = fit_rows(samples, train, start, opt);
    LeaveOneOut l;
    l.left_out = k;
    l.rows = test;
    for (auto i : test) l.predicted.push_back(predicted_throughput(samples[i], p));
    l.mape = mape_of(samples, test, l.predicted);
    out.push_back(std::move(l));
  }
  return out;
}

double leave_one_out_mape(const std::vector<LeaveOneOut>& runs, const std::vector<ThroughputSample>& samples) {
  double s = 0;
  std::size_t n = 0;
  for (const auto& r : runs)
    for (std::size_t i = 0; i < r.rows.size(); ++i, ++n) s += std::abs(r.predicted[i] / samples[r.rows[i]].samples_per_s - 1.0);
  return n ? 100.0 * s / static_cast<double>(n) : 0.0;
}

}  // namespace dlscale
