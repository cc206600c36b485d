// SVG versions of the papers' scaling figures: throughput against GPUs on log-log axes with the ideal
// (linear) line of each series, and speedup against GPUs with the ideal y = x. Drawn by plot.hpp's
// line_plot_svg (lib/report/svg.cpp, the one SVG writer), with a wider legend column for the 12–24 labelled
// series of these figures and each series' ideal line faint and out of the legend.
#include <algorithm>

#include "dlscale/error.hpp"
#include "dlscale/plot.hpp"
#include "dlscale/reproduce.hpp"
#include "repro/series.hpp"

namespace dlscale::repro {
namespace fs = std::filesystem;
namespace {

constexpr const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
constexpr const char* kDashes[] = {"", "6,3", "2,2", "8,3,2,3"};

/// One series of a figure: its points and, for throughput, the ideal N · X(1) line.
struct Line {
  std::string label;
  std::vector<double> gpus, values, ideal;
};

std::string plot(const std::string& title, const std::string& ylabel, const std::vector<Line>& lines, bool log_y) {
  std::vector<Series> series;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto& l = lines[i];
    const std::string colour = kColors[i % std::size(kColors)];
    const std::string dash = kDashes[(i / std::size(kColors)) % std::size(kDashes)];
    if (!l.ideal.empty()) {
      Series ideal;
      ideal.name = l.label + " (ideal)";
      ideal.x = l.gpus;
      ideal.y = l.ideal;
      ideal.colour = colour;
      ideal.dashed = true;
      ideal.markers = false;
      ideal.dash_pattern = "4,4";
      ideal.opacity = 0.35;
      ideal.stroke_width = 1;
      ideal.in_legend = false;
      series.push_back(std::move(ideal));
    }
    Series s;
    s.name = l.label;
    s.x = l.gpus;
    s.y = l.values;
    s.colour = colour;
    s.dashed = !dash.empty();
    s.dash_pattern = dash;
    s.stroke_width = 1.8;
    s.marker_radius = 2.5;
    series.push_back(std::move(s));
  }
  PlotFrame f;
  f.title = title;
  f.x_label = "GPUs (log scale)";
  f.y_label = ylabel;
  f.log_x = true;
  f.log_y = log_y;
  f.width = 760;
  f.height = 480;
  f.legend_width = 230;
  f.x_ticks_at_data = true;
  f.note = "faint dashed lines: ideal linear scaling";
  return line_plot_svg(f, series);
}

}  // namespace

std::vector<fs::path> write_plots(const fs::path& dir, const std::vector<PaperResult>& papers) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir, ec)) throw InputError(SourceLocation{dir.string(), 0, 0}, "--plots", "cannot create the folder");
  // Render every figure first, then write: a bad folder fails before anything is written.
  std::vector<std::pair<fs::path, std::string>> files;
  for (const auto& p : papers)
    for (const auto& x : p.experiments) {
      if (x.kind != "training") continue;
      std::vector<Line> thr, sp;
      const auto series = series_of(x);
      const auto labels = series_labels(series, false);
      for (std::size_t i = 0; i < series.size(); ++i) {
        Line t, s;
        t.label = s.label = labels[i];
        // ideal: the 1-GPU throughput times N (throughput / speedup is that 1-GPU throughput)
        const Row& first = *series[i].rows.front();
        const double one = first.throughput_samples_per_s / first.speedup;
        for (const Row* r : series[i].rows) {
          t.gpus.push_back(r->gpus);
          t.values.push_back(r->throughput_samples_per_s);
          t.ideal.push_back(one * r->gpus);
          s.gpus.push_back(r->gpus);
          s.values.push_back(r->speedup);
        }
        if (t.gpus.size() >= 2) {
          thr.push_back(std::move(t));
          sp.push_back(std::move(s));
        }
      }
      if (thr.empty()) continue;
      Line ideal;
      ideal.label = "ideal";
      double gmax = 1;
      for (const auto& l : sp) gmax = std::max(gmax, *std::max_element(l.gpus.begin(), l.gpus.end()));
      for (double g = 1; g <= gmax; g *= 2) ideal.gpus.push_back(g);
      if (ideal.gpus.back() < gmax) ideal.gpus.push_back(gmax);
      ideal.values = ideal.gpus;
      sp.push_back(ideal);
      const std::string stem = p.paper + "-" + x.id + "-repro";
      files.emplace_back(dir / (stem + "-throughput.svg"),
                         plot(p.paper + ": " + x.title, "throughput (samples/s, log scale)", thr, true));
      files.emplace_back(dir / (stem + "-speedup.svg"), plot(p.paper + ": " + x.title, "speedup vs 1 GPU", sp, false));
    }
  std::vector<fs::path> out;
  for (const auto& [path, text] : files) {
    write_file_atomically(path.string(), text);
    out.push_back(path);
  }
  return out;
}

}  // namespace dlscale::repro
