// SVG versions of the papers' scaling figures: throughput against GPUs on log-log axes with the ideal
// (linear) line of each series, and speedup against GPUs with the ideal y = x. A minimal writer of our
// own, written before include/dlscale/plot.hpp landed; its line_plot_svg gives every series (ideal lines
// included) a legend entry in a 150 px column, which cannot hold the 12-24 labelled series of these figures.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "dlscale/error.hpp"
#include "dlscale/plot.hpp"
#include "dlscale/reproduce.hpp"

namespace dlscale::repro {
namespace fs = std::filesystem;
namespace {

constexpr double kW = 760, kH = 480, kLeft = 70, kRight = 230, kTop = 40, kBottom = 50;
constexpr const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                                   "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
constexpr const char* kDashes[] = {"", "6,3", "2,2", "8,3,2,3"};

std::string escape(const std::string& s) { return xml_escape(s); }  // plot.hpp's escaping

struct Line {
  std::string label;
  std::vector<std::pair<double, double>> points;  // (gpus, value)
  std::vector<std::pair<double, double>> ideal;
};

struct Axis {
  double lo, hi;
  bool log;
  [[nodiscard]] double map(double v, double a, double b) const {
    const double t = log ? (std::log(v) - std::log(lo)) / (std::log(hi) - std::log(lo)) : (v - lo) / (hi - lo);
    return a + t * (b - a);
  }
};

std::string plot(const std::string& title, const std::string& ylabel, const std::vector<Line>& lines, bool log_y) {
  double xmax = 1, ymin = 1e300, ymax = 0;
  std::set<double> xs;
  for (const auto& l : lines) {
    for (const auto& [x, y] : l.points) {
      xs.insert(x);
      xmax = std::max(xmax, x);
      ymin = std::min(ymin, y);
      ymax = std::max(ymax, y);
    }
    for (const auto& [x, y] : l.ideal) {
      ymin = std::min(ymin, y);
      ymax = std::max(ymax, y);
    }
  }
  if (ymax <= 0) ymax = 1;
  const Axis ax{1, std::max(2.0, xmax), true};
  const Axis ay = log_y ? Axis{std::pow(10, std::floor(std::log10(ymin))), std::pow(10, std::ceil(std::log10(ymax))), true}
                        : Axis{0, std::ceil(ymax), false};
  const double x0 = kLeft, x1 = kW - kRight, y0 = kH - kBottom, y1 = kTop;
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"22\" font-size=\"13\" text-anchor=\"middle\">{}</text>\n",
      kW, kH, kW, kH, (x0 + x1) / 2, escape(title));
  // axes, ticks and grid
  s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"black\"/>\n", x0, y1, x1 - x0, y0 - y1);
  for (double x : xs) {
    const double px = ax.map(x, x0, x1);
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#ddd\"/>\n"
                     "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4:g}</text>\n",
                     px, y0, y1, y0 + 15, x);
  }
  std::vector<double> yt;
  if (log_y) {
    for (double d = ay.lo; d <= ay.hi * 1.0001; d *= 10) yt.push_back(d);
  } else {
    const double step = ay.hi <= 5 ? 1 : ay.hi <= 20 ? 2 : 5;
    for (double v = 0; v <= ay.hi + 1e-9; v += step) yt.push_back(v);
  }
  for (double y : yt) {
    const double py = ay.map(y, y0, y1);
    s += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>\n"
                     "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5:g}</text>\n",
                     x0, py, x1, x0 - 5, py + 4, y);
  }
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">GPUs{}</text>\n", (x0 + x1) / 2, kH - 12,
                   " (log scale)");
  s += fmt::format("<text x=\"16\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {0})\">{1}</text>\n",
                   (y0 + y1) / 2, escape(ylabel));
  auto path = [&](const std::vector<std::pair<double, double>>& pts) {
    std::string d;
    for (const auto& [x, y] : pts)
      d += fmt::format("{}{:.1f},{:.1f}", d.empty() ? "M" : " L", ax.map(x, x0, x1), ay.map(std::max(y, ay.lo), y0, y1));
    return d;
  };
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto& l = lines[i];
    const char* color = kColors[i % std::size(kColors)];
    const char* dash = kDashes[(i / std::size(kColors)) % std::size(kDashes)];
    if (!l.ideal.empty())
      s += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-opacity=\"0.35\" stroke-dasharray=\"4,4\"/>\n",
                       path(l.ideal), color);
    s += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.8\"{}/>\n", path(l.points), color,
                     *dash ? fmt::format(" stroke-dasharray=\"{}\"", dash) : "");
    for (const auto& [x, y] : l.points)
      s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"{}\"/>\n", ax.map(x, x0, x1),
                       ay.map(std::max(y, ay.lo), y0, y1), color);
    const double ly = y1 + 14.0 * static_cast<double>(i) + 6;
    s += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"2\"/>\n"
                     "<text x=\"{}\" y=\"{:.1f}\">{}</text>\n",
                     x1 + 10, ly, x1 + 30, ly, color, x1 + 35, ly + 4, escape(l.label));
  }
  s += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"#666\">faint dashed lines: ideal linear scaling</text>\n", x1 + 10,
                   y0);
  s += "</svg>\n";
  return s;
}

std::string series_label(const Row& r, const ExperimentResult& x) {
  std::set<std::string> sys, mod, fw, prec, inp, var;
  std::set<int> batch;
  for (const auto& q : x.rows) {
    sys.insert(q.system);
    mod.insert(q.model);
    fw.insert(q.framework);
    prec.insert(q.precision);
    inp.insert(q.inputs);
    var.insert(q.variant);
  }
  std::string l;
  auto add = [&](bool v, const std::string& s) {
    if (v) l += (l.empty() ? "" : " ") + s;
  };
  add(sys.size() > 1, r.system);
  add(var.size() > 1, r.variant);
  add(mod.size() > 1, r.model);
  add(fw.size() > 1, r.framework);
  add(prec.size() > 1, r.precision);
  add(inp.size() > 1, r.inputs);
  return l.empty() ? r.model + " " + r.framework : l;
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
      std::size_t i = 0;
      while (i < x.rows.size()) {
        // one series: consecutive rows with the same coordinates and increasing GPU counts
        std::size_t j = i + 1;
        while (j < x.rows.size() && x.rows[j].gpus > x.rows[j - 1].gpus && x.rows[j].system == x.rows[i].system &&
               x.rows[j].model == x.rows[i].model && x.rows[j].framework == x.rows[i].framework &&
               x.rows[j].precision == x.rows[i].precision && x.rows[j].inputs == x.rows[i].inputs &&
               x.rows[j].variant == x.rows[i].variant)
          ++j;
        Line t, s;
        t.label = s.label = series_label(x.rows[i], x);
        // ideal: the 1-GPU throughput times N (throughput / speedup is that 1-GPU throughput)
        const double one = x.rows[i].throughput_samples_per_s / x.rows[i].speedup;
        for (std::size_t k = i; k < j; ++k) {
          const auto& r = x.rows[k];
          t.points.emplace_back(r.gpus, r.throughput_samples_per_s);
          t.ideal.emplace_back(r.gpus, one * r.gpus);
          s.points.emplace_back(r.gpus, r.speedup);
        }
        if (t.points.size() >= 2) {
          thr.push_back(std::move(t));
          sp.push_back(std::move(s));
        }
        i = j;
      }
      if (thr.empty()) continue;
      Line ideal;
      ideal.label = "ideal";
      double gmax = 1;
      for (const auto& l : sp)
        for (const auto& pt : l.points) gmax = std::max(gmax, pt.first);
      for (double g = 1; g <= gmax; g *= 2) ideal.points.emplace_back(g, g);
      if (ideal.points.back().first < gmax) ideal.points.emplace_back(gmax, gmax);
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
