// SVG plots written by hand (include/dlscale/plot.hpp): axes with linear or log scales, lines, stacked
// bars, a busbw curve and a timeline from a Chrome trace.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "dlscale/error.hpp"
#include "dlscale/format.hpp"
#include "dlscale/plot.hpp"

namespace dlscale {

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

namespace {

constexpr int kLeft = 72, kTop = 36, kBottom = 52;  // margins; the legend is on the right (PlotFrame::legend_width)

/// Maps data values to pixels on one axis, linear or logarithmic.
struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  double p0 = 0, p1 = 1;  // pixel positions of lo and hi
  [[nodiscard]] double t(double v) const {
    const double a = log ? std::log10(lo) : lo, b = log ? std::log10(hi) : hi;
    const double x = log ? std::log10(std::max(v, lo * 1e-3)) : v;
    return p0 + (x - a) / (b - a) * (p1 - p0);
  }
};

std::string number_label(double v) {
  const double a = std::fabs(v);
  if (a >= 1e6) return fmt::format("{:g}M", v / 1e6);
  if (a >= 1e4) return fmt::format("{:g}k", v / 1e3);
  return fmt::format("{:g}", v);
}

/// Tick values: decades (with 2 and 5 between when the range is short) on a log axis; 1-2-5 steps on a
/// linear one.
std::vector<double> ticks(const Axis& a) {
  std::vector<double> out;
  if (a.log) {
    const double decades = std::log10(a.hi / a.lo);
    const std::vector<double> mult = decades < 1.5 ? std::vector<double>{1, 2, 5}
        : decades < 3                              ? std::vector<double>{1, 2, 5}
                                                   : std::vector<double>{1};
    for (double d = std::pow(10.0, std::floor(std::log10(a.lo))); d <= a.hi * 1.0001; d *= 10)
      for (double m : mult)
        if (d * m >= a.lo * 0.9999 && d * m <= a.hi * 1.0001) out.push_back(d * m);
    return out;
  }
  const double span = a.hi - a.lo;
  const double raw = span / 6;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) {
      step = m * mag;
      break;
    }
  for (double v = std::ceil(a.lo / step) * step; v <= a.hi + step * 1e-9; v += step) out.push_back(v);
  return out;
}

/// Range of values for an axis: log axes snap to powers of two around the data; linear ones start at 0.
void fit(Axis& a, double lo, double hi) {
  if (!(hi > lo)) hi = lo > 0 ? lo * 2 : lo + 1;
  if (a.log) {
    lo = std::max(lo, 1e-12);
    a.lo = std::pow(2.0, std::floor(std::log2(lo)));
    a.hi = std::pow(2.0, std::ceil(std::log2(hi)));
    if (a.hi <= a.lo) a.hi = a.lo * 2;
  } else {
    a.lo = std::min(0.0, lo);
    a.hi = hi * 1.05;
  }
}

void open_svg(std::string& s, const PlotFrame& f) {
  s += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"12\">\n"
      "<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"#ffffff\"/>\n"
      "<text x=\"{2}\" y=\"22\" font-size=\"{4}\" font-weight=\"bold\">{3}</text>\n",
      f.width, f.height, kLeft, xml_escape(f.title),
      // about 0.6 em a character: a title too long for the width at 15 px gets a smaller font (down to 10)
      std::clamp(static_cast<int>((f.width - kLeft - 8) / (0.6 * static_cast<double>(std::max<std::size_t>(f.title.size(), 1)))),
                 10, 15));
}

void draw_axes(std::string& s, const PlotFrame& f, const Axis& x, const Axis& y, bool x_ticks = true,
               const std::vector<double>* x_at = nullptr) {
  const int x0 = kLeft, x1 = f.width - f.legend_width, y0 = f.height - kBottom, y1 = kTop;
  for (double v : ticks(y)) {
    const double py = y.t(v);
    s += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#e0e0e0\"/>\n", x0, py, x1, py);
    s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", x0 - 6, py + 4, number_label(v));
  }
  if (x_ticks)
    for (double v : x_at ? *x_at : ticks(x)) {
      const double px = x.t(v);
      s += fmt::format("<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#e0e0e0\"/>\n", px, y0, px, y1);
      s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", px, y0 + 16, number_label(v));
    }
  s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333333\"/>\n", x0, y1, x1 - x0,
                   y0 - y1);
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", (x0 + x1) / 2, f.height - 12,
                   xml_escape(f.x_label));
  s += fmt::format("<text transform=\"translate(16 {}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n", (y0 + y1) / 2,
                   xml_escape(f.y_label));
}

void legend_entry(std::string& s, const PlotFrame& f, int index, const std::string& name, const std::string& colour, bool dashed,
                  bool box, int entries = 0, const std::string& dash_pattern = {}) {
  // 20 px a row, closer when that many rows would not fit beside the plot
  const int row = entries > 0 ? std::clamp((f.height - kTop - kBottom - 12) / entries, 12, 20) : 20;
  const int lx = f.width - f.legend_width + 12, ly = kTop + 12 + row * index;
  if (box) s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"18\" height=\"12\" fill=\"{}\"/>\n", lx, ly - 9, colour);
  else
    s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"3\"{}/>\n", lx, ly - 4, lx + 18,
                     ly - 4, colour,
                     dashed ? fmt::format(" stroke-dasharray=\"{}\"", dash_pattern.empty() ? "6 4" : dash_pattern) : "");
  s += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", lx + 24, ly, xml_escape(name));
}

}  // namespace

std::string line_plot_svg(const PlotFrame& f, std::span<const Series> series) {
  double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo, ylo = xlo, yhi = -xlo;
  for (const auto& se : series)
    for (std::size_t i = 0; i < se.x.size() && i < se.y.size(); ++i) {
      if (f.log_x && !(se.x[i] > 0)) continue;
      if (f.log_y && !(se.y[i] > 0)) continue;
      xlo = std::min(xlo, se.x[i]);
      xhi = std::max(xhi, se.x[i]);
      ylo = std::min(ylo, se.y[i]);
      yhi = std::max(yhi, se.y[i]);
    }
  if (!std::isfinite(xlo)) xlo = 1, xhi = 2, ylo = 1, yhi = 2;
  Axis x{0, 1, f.log_x, double(kLeft), double(f.width - f.legend_width)};
  Axis y{0, 1, f.log_y, double(f.height - kBottom), double(kTop)};
  fit(x, xlo, xhi);
  fit(y, ylo, yhi);
  std::vector<double> x_at;  // the distinct x values, for x_ticks_at_data
  if (f.x_ticks_at_data) {
    for (const auto& se : series)
      for (double v : se.x)
        if (!f.log_x || v > 0) x_at.push_back(v);
    std::sort(x_at.begin(), x_at.end());
    x_at.erase(std::unique(x_at.begin(), x_at.end()), x_at.end());
  }
  std::string s;
  open_svg(s, f);
  draw_axes(s, f, x, y, true, f.x_ticks_at_data ? &x_at : nullptr);
  const int entries =
      static_cast<int>(std::count_if(series.begin(), series.end(), [](const Series& se) { return se.in_legend; }));
  int index = 0;
  for (const auto& se : series) {
    std::string pts;
    for (std::size_t i = 0; i < se.x.size() && i < se.y.size(); ++i) {
      if ((f.log_x && !(se.x[i] > 0)) || (f.log_y && !(se.y[i] > 0))) continue;
      pts += fmt::format("{}{:.1f},{:.1f}", pts.empty() ? "" : " ", x.t(se.x[i]), y.t(se.y[i]));
    }
    const std::string dash = se.dash_pattern.empty() ? "6 4" : se.dash_pattern;
    s += fmt::format("<polyline class=\"series\" fill=\"none\" stroke=\"{}\" stroke-width=\"{:g}\"{}{} points=\"{}\"/>\n",
                     se.colour, se.stroke_width, se.dashed ? fmt::format(" stroke-dasharray=\"{}\"", dash) : "",
                     se.opacity < 1.0 ? fmt::format(" stroke-opacity=\"{:g}\"", se.opacity) : "", pts);
    if (se.markers)
      for (std::size_t i = 0; i < se.x.size() && i < se.y.size(); ++i) {
        if ((f.log_x && !(se.x[i] > 0)) || (f.log_y && !(se.y[i] > 0))) continue;
        s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{:g}\" fill=\"{}\"/>\n", x.t(se.x[i]), y.t(se.y[i]),
                         se.marker_radius, se.colour);
      }
    if (se.in_legend) legend_entry(s, f, index++, se.name, se.colour, se.dashed, false, entries, se.dash_pattern);
  }
  if (!f.note.empty())
    s += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"#666666\" font-size=\"11\">{}</text>\n", f.width - f.legend_width + 12,
                     f.height - kBottom, xml_escape(f.note));
  s += "</svg>\n";
  return s;
}

namespace {
/// The model's line (solid, with markers) and the ideal line (grey, dashed), filled by the caller.
std::pair<Series, Series> model_and_ideal(std::string ideal_name) {
  Series model;
  model.name = "predicted";
  Series ideal;
  ideal.name = std::move(ideal_name);
  ideal.colour = std::string(kPlotIdealColour);
  ideal.dashed = true;
  ideal.markers = false;
  return {model, ideal};
}
}  // namespace

std::string throughput_plot_svg(std::span<const Prediction> preds, const std::string& title) {
  auto [model, ideal] = model_and_ideal("ideal (linear)");
  double one = 0;
  for (const auto& p : preds)
    if (p.gpus == 1) one = p.throughput_samples_per_s;
  if (one == 0 && !preds.empty()) one = preds.front().throughput_samples_per_s / preds.front().speedup;
  for (const auto& p : preds) {
    model.x.push_back(p.gpus);
    model.y.push_back(p.throughput_samples_per_s);
    ideal.x.push_back(p.gpus);
    ideal.y.push_back(one * p.gpus);  // X(N_g) = N_g · X(1)
  }
  const Series all[] = {ideal, model};
  return line_plot_svg(plot_frame(title, "GPUs", "samples/s", true, true), all);
}

std::string speedup_plot_svg(std::span<const Prediction> preds, const std::string& title) {
  auto [model, ideal] = model_and_ideal("ideal S = N_g");
  for (const auto& p : preds) {
    model.x.push_back(p.gpus);
    model.y.push_back(p.speedup);
    ideal.x.push_back(p.gpus);
    ideal.y.push_back(p.gpus);
  }
  const Series all[] = {ideal, model};
  return line_plot_svg(plot_frame(title, "GPUs", "speedup (eq. 8)", true, true), all);
}

std::string stacked_bars_svg(const PlotFrame& f, std::span<const BarSegment> segments, std::span<const std::string> labels,
                             std::span<const std::vector<double>> values) {
  double top = 0;
  for (const auto& v : values) {
    double sum = 0;
    for (double x : v) sum += std::max(0.0, x);
    top = std::max(top, sum);
  }
  Axis x{0, 1, false, double(kLeft), double(f.width - f.legend_width)};
  Axis y{0, 1, false, double(f.height - kBottom), double(kTop)};
  fit(y, 0, top > 0 ? top : 1);
  std::string s;
  open_svg(s, f);
  draw_axes(s, f, x, y, false);
  const double slot = (x.p1 - x.p0) / static_cast<double>(std::max<std::size_t>(1, labels.size()));
  for (std::size_t b = 0; b < labels.size() && b < values.size(); ++b) {
    const double bx = x.p0 + slot * static_cast<double>(b) + slot * 0.15, w = slot * 0.7;
    double acc = 0;
    for (std::size_t k = 0; k < segments.size() && k < values[b].size(); ++k) {
      const double v = std::max(0.0, values[b][k]);
      if (v <= 0) continue;
      const double ya = y.t(acc), yb = y.t(acc + v);
      s += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"><title>{}: {:.4g}</title></rect>\n", bx,
          yb, w, ya - yb, segments[k].colour, xml_escape(segments[k].name), v);
      acc += v;
    }
    s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", bx + w / 2, f.height - kBottom + 16,
                     xml_escape(labels[b]));
  }
  for (std::size_t k = 0; k < segments.size(); ++k)
    legend_entry(s, f, static_cast<int>(k), segments[k].name, segments[k].colour, false, true);
  s += "</svg>\n";
  return s;
}

std::string breakdown_plot_svg(std::span<const Prediction> preds, const Strategy& strategy, Seconds first_update,
                               const std::string& title) {
  static const char* colours[] = {"#8c564b", "#9467bd", "#1f77b4", "#2ca02c", "#e377c2", "#ff7f0e"};
  // a layout's twelve parts (critical_path), each its own colour
  static const char* layout_colours[] = {"#1f77b4", "#2ca02c", "#9467bd", "#17becf", "#bcbd22", "#e377c2",
                                         "#7f7f7f", "#d62728", "#8c564b", "#ff7f0e", "#aec7e8", "#98df8a"};
  std::vector<BarSegment> segs;
  std::vector<std::string> labels;
  std::vector<std::vector<double>> values;
  for (const auto& p : preds) {
    const auto path = critical_path(p, strategy, first_update);
    if (segs.empty())
      for (std::size_t k = 0; k < path.size(); ++k)
        segs.push_back({path[k].name == "communication (exposed)" ? std::string("comm (exposed)") : path[k].name,
                        p.breakdown.parallel ? layout_colours[k % 12] : colours[k % 6]});
    labels.push_back(fmt::format("{}", p.gpus));
    std::vector<double> v;
    for (const auto& seg : path) v.push_back(in_ms(seg.time));
    values.push_back(std::move(v));
  }
  return stacked_bars_svg(plot_frame(title, "GPUs", "ms per iteration", false, false), segs, labels, values);
}

std::string busbw_plot_svg(const CollectiveModel& model, std::span<const GpuPlacement> where, Bytes from, Bytes to,
                           const std::string& title) {
  static const char* colours[] = {"#1f77b4", "#17becf", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};
  std::vector<Series> all;
  std::vector<Bytes> sizes;
  for (double b = in_bytes(from); b <= in_bytes(to) * 1.0001; b *= 2) sizes.push_back(bytes(b));
  std::vector<Seconds> t(sizes.size());
  for (std::size_t k = 0; k < where.size(); ++k) {
    const GpuPlacement& at = where[k];
    if (at.gpus < 2) continue;
    model.times(CollectiveOp::allreduce, sizes, at, t);
    Series s;
    s.name = fmt::format("{} GPUs / {} node{}", at.gpus, at.nodes, at.nodes > 1 ? "s" : "");
    s.colour = colours[k % 6];
    s.dashed = false;
    s.markers = false;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      // nccl-tests (doc/PERFORMANCE.md): algbw = S / t, busbw = algbw · 2(n−1)/n for all-reduce
      const double algbw = in_bytes(sizes[i]) / in_seconds(t[i]);
      s.x.push_back(in_bytes(sizes[i]));
      s.y.push_back(algbw * 2.0 * (at.gpus - 1) / at.gpus / 1e9);
    }
    all.push_back(std::move(s));
  }
  return line_plot_svg(plot_frame(title, "message size (bytes)", "all-reduce busbw (GB/s)", true, true), all);
}

namespace {
/// The complete events ('X') of a Chrome trace, by track (pid, tid), with the tracks' names and the
/// time they span (the window [t0, t1] when one is given).
struct TimelineTrace {
  struct Slice {
    double ts, dur;
    std::string name;
  };
  std::map<std::pair<long, long>, std::string> thread_names;
  std::map<std::pair<long, long>, std::vector<Slice>> tracks;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
};

TimelineTrace read_trace(std::string_view text, double t0, double t1) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("timeline: not a Chrome trace ({})", e.what()));
  }
  const auto& events = j.is_object() && j.contains("traceEvents") ? j["traceEvents"] : j;
  if (!events.is_array()) throw InputError("timeline: a Chrome trace needs a 'traceEvents' array");
  TimelineTrace tr;
  for (const auto& e : events) {
    if (!e.is_object() || !e.contains("ph")) continue;
    const std::string ph = e.value("ph", "");
    const std::pair<long, long> key{e.value("pid", 0L), e.value("tid", 0L)};
    if (ph == "M" && e.value("name", "") == "thread_name" && e.contains("args"))
      tr.thread_names[key] = e["args"].value("name", "");
    if (ph != "X") continue;
    const double ts = e.value("ts", 0.0) * 1e-6, dur = e.value("dur", 0.0) * 1e-6;
    if (t1 > t0 && (ts + dur <= t0 || ts >= t1)) continue;
    tr.tracks[key].push_back(TimelineTrace::Slice{ts, dur, e.value("name", "")});
    tr.lo = std::min(tr.lo, ts);
    tr.hi = std::max(tr.hi, ts + dur);
  }
  if (t1 > t0) tr.lo = t0, tr.hi = t1;
  if (!std::isfinite(tr.lo) || !(tr.hi > tr.lo)) tr.lo = 0, tr.hi = 1;
  return tr;
}

/// The timeline's drawing: rows of tracks from x0 to x1, a colour per event kind (the name up to the
/// first space or digit-run), in order of first appearance.
class TimelineDrawing {
 public:
  static constexpr int kRowHeight = 26, kLeft = 170;

  TimelineDrawing(const TimelineTrace& tr, const PlotFrame& f, int rows)
      : tr_(tr), f_(f), rows_(rows), x0_(kLeft), x1_(f.width - f.legend_width) {}

  /// The time axis in ms: grid lines, tick labels and the axis label.
  void time_axis(std::string& s) const {
    Axis ax{0, in_ms(seconds(tr_.hi - tr_.lo)), false, x0_, x1_};
    for (double v : ticks(ax)) {
      const double xx = x0_ + v / ax.hi * (x1_ - x0_);
      s += fmt::format("<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#e0e0e0\"/>\n", xx, kTop, xx,
                       kTop + rows_ * kRowHeight);
      s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{:g}</text>\n", xx, kTop + rows_ * kRowHeight + 16, v);
    }
    s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", (x0_ + x1_) / 2, f_.height - 14,
                     xml_escape(f_.x_label));
  }

  /// The first `rows` tracks, each its label and its slices.
  void tracks(std::string& s) {
    int row = 0;
    for (const auto& [key, slices] : tr_.tracks) {
      if (row >= rows_) break;
      track(s, kTop + row * kRowHeight, key, slices);
      ++row;
    }
  }

  /// The frame around the tracks and the legend of the first 12 kinds.
  void frame_and_legend(std::string& s) {
    s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"none\" stroke=\"#333333\"/>\n", x0_, kTop,
                     x1_ - x0_, rows_ * kRowHeight);
    for (std::size_t k = 0; k < kinds_.size() && k < 12; ++k)
      legend_entry(s, f_, static_cast<int>(k), kinds_[k], colour_of_[kinds_[k]], false, true);
  }

 private:
  void track(std::string& s, int y, const std::pair<long, long>& key, const std::vector<TimelineTrace::Slice>& slices) {
    const auto it = tr_.thread_names.find(key);
    const std::string label = it != tr_.thread_names.end() ? it->second : fmt::format("pid {} tid {}", key.first, key.second);
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", kLeft - 8, y + 17, xml_escape(label));
    for (const auto& sl : slices) {
      const std::string& colour = colour_of(kind(sl.name));
      const double a = std::max(px(sl.ts), x0_), b = std::min(px(sl.ts + sl.dur), x1_);
      if (b <= a) continue;
      s += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\"><title>{} {:.3f} ms</title></rect>\n", a, y + 4,
          std::max(b - a, 0.5), kRowHeight - 8, colour, xml_escape(sl.name), sl.dur * 1e3);
    }
  }
  static std::string kind(const std::string& n) {
    std::string k;
    for (char c : n) {
      if (c == ' ' || c == '(' || (c >= '0' && c <= '9')) break;
      k += c;
    }
    return k.empty() ? n : k;
  }
  const std::string& colour_of(const std::string& k) {
    static const char* palette[] = {"#1f77b4", "#2ca02c", "#bcbd22", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};
    if (!colour_of_.count(k)) {
      colour_of_[k] = palette[kinds_.size() % 8];
      kinds_.push_back(k);
    }
    return colour_of_[k];
  }
  [[nodiscard]] double px(double t) const { return x0_ + (t - tr_.lo) / (tr_.hi - tr_.lo) * (x1_ - x0_); }

  const TimelineTrace& tr_;
  const PlotFrame& f_;
  int rows_;
  double x0_, x1_;
  std::map<std::string, std::string> colour_of_;
  std::vector<std::string> kinds_;
};
}  // namespace

std::string timeline_svg(std::string_view text, double t0, double t1, int max_tracks, const std::string& title) {
  const TimelineTrace tr = read_trace(text, t0, t1);
  PlotFrame f = plot_frame(title, "time (ms)", "", false, false);
  f.width = 900;
  const int rows = std::min<int>(max_tracks, static_cast<int>(tr.tracks.size()));
  f.height = kTop + rows * TimelineDrawing::kRowHeight + kBottom + 10;
  TimelineDrawing d(tr, f, rows);
  std::string s;
  open_svg(s, f);
  d.time_axis(s);
  d.tracks(s);
  d.frame_and_legend(s);
  s += "</svg>\n";
  return s;
}

}  // namespace dlscale
