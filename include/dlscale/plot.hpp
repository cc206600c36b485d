// Self-written SVG plots (no dependency) and the self-contained HTML report of `dlscale report`.
// Every plot is a complete <svg> element that can be saved as a file or inlined in HTML.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dlscale/collective.hpp"
#include "dlscale/plan.hpp"
#include "dlscale/predict.hpp"

namespace dlscale {

/// The colours the plots use (the report test looks for kPlotModelColour in the screenshot).
inline constexpr std::string_view kPlotModelColour = "#d62728";  // the model's line
inline constexpr std::string_view kPlotIdealColour = "#7f7f7f";  // the ideal (linear) line

struct Series {
  std::string name;
  std::vector<double> x, y;
  std::string colour = std::string(kPlotModelColour);
  bool dashed = false;
  bool markers = true;
  std::string dash_pattern;  // SVG stroke-dasharray when dashed (empty: "6 4")
  double opacity = 1.0;      // stroke opacity (a faint reference line: 0.35)
  double stroke_width = 3.0;
  double marker_radius = 4.0;
  bool in_legend = true;
};

struct PlotFrame {
  std::string title, x_label, y_label;
  bool log_x = false, log_y = false;
  int width = 640, height = 400;
  int legend_width = 150;        // the column on the right that holds the legend
  bool x_ticks_at_data = false;  // x ticks at the data's x values (GPU counts) instead of 1-2-5 steps
  std::string note;              // a grey line at the foot of the legend column
};

/// A frame of the default size (640 × 400) with these labels and axes.
inline PlotFrame plot_frame(std::string title, std::string x_label, std::string y_label, bool log_x, bool log_y) {
  PlotFrame f;
  f.title = std::move(title);
  f.x_label = std::move(x_label);
  f.y_label = std::move(y_label);
  f.log_x = log_x;
  f.log_y = log_y;
  return f;
}

/// A line plot of the series; log axes use decades (and 2× steps when they span less than two decades).
std::string line_plot_svg(const PlotFrame& frame, std::span<const Series> series);

/// Throughput (samples/s) vs GPUs with the ideal line N_g · X(1), log-log.
std::string throughput_plot_svg(std::span<const Prediction> preds, const std::string& title);
/// Speedup vs GPUs with the ideal line S = N_g, log-log.
std::string speedup_plot_svg(std::span<const Prediction> preds, const std::string& title);

struct BarSegment {
  std::string name;
  std::string colour;
};
/// Stacked bars: one bar per label, one value per segment (same order as `segments`).
std::string stacked_bars_svg(const PlotFrame& frame, std::span<const BarSegment> segments, std::span<const std::string> labels,
                             std::span<const std::vector<double>> values);
/// The iteration's critical path (plan.hpp, critical_path) per GPU count, in milliseconds.
std::string breakdown_plot_svg(std::span<const Prediction> preds, const Strategy& strategy, Seconds first_update,
                               const std::string& title);

/// Bus bandwidth of all-reduce vs message size, as nccl-tests reports it: busbw = (S / t) · 2(n−1)/n,
/// over sizes from `from` to `to` (×2 steps), for each placement.
std::string busbw_plot_svg(const CollectiveModel& model, std::span<const GpuPlacement> where, Bytes from, Bytes to,
                           const std::string& title);

/// A timeline (Gantt chart) of the complete ("X") events of a Chrome trace-event JSON — the simulator's
/// `SimResult::trace_json` — between `t0` and `t1` (seconds; t1 ≤ t0: the whole trace), at most
/// `max_tracks` tracks in (pid, tid) order. Throws InputError when the text is not a trace.
std::string timeline_svg(std::string_view chrome_trace_json, double t0, double t1, int max_tracks, const std::string& title);

/// What `dlscale report` puts on its page.
struct ReportContent {
  std::string title;
  std::vector<std::pair<std::string, std::string>> inputs;  // name, value
  std::vector<Prediction> predictions;
  std::optional<Explanation> explanation;  // for the largest GPU count
  std::string explanation_text;            // format_explanation of it
  std::optional<TrainingWorkload> workload;
  std::vector<std::pair<std::string, std::string>> plots;  // caption, inline SVG
  std::string command_line;
};

/// One self-contained HTML page (inline CSS and SVG, no script, nothing fetched).
std::string html_report(const ReportContent& content, const Cluster& cluster);

/// Escapes text for HTML and SVG (&, <, >, ").
std::string xml_escape(std::string_view text);

}  // namespace dlscale
