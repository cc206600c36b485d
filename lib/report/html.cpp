// The self-contained HTML report (include/dlscale/plot.hpp): inline CSS and SVG, no script, no fetch.
#include <fmt/format.h>

#include "dlscale/format.hpp"
#include "dlscale/plot.hpp"

namespace dlscale {

namespace {
/// The predictions table and its notes. Token models also get tokens/s and MFU; every row its memory per GPU,
/// marked where the GPU cannot hold it.
std::string predictions_section(const ReportContent& c, const Cluster& cluster) {
  std::string h;
  // CPU offload (eq. S9d) adds what one node's host memory holds, marked where the node cannot hold it.
  bool tokens = false, overflow = false, offload = false, host_overflow = false;
  for (const auto& p : c.predictions) {
    tokens = tokens || p.throughput_tokens_per_s > 0.0;
    overflow = overflow || !p.memory.fits;
    offload = offload || p.memory.host_per_node > Bytes{};
    host_overflow = host_overflow || !p.memory.host_fits;
  }
  h += "<h2>Predictions</h2>\n<table>\n<tr><th>GPUs</th><th>nodes</th><th>iteration (ms)</th><th>samples/s</th>";
  if (tokens) h += "<th>tokens/s</th><th>MFU</th>";
  h += "<th>speedup</th><th>efficiency</th><th>memory/GPU (GB)</th>";
  if (offload) h += "<th>host memory/node (GB)</th>";
  h += "<th>comm (ms)</th><th>exposed (ms)</th><th class=\"l\">bottleneck (share of the iteration)</th>";
  if (c.workload) h += "<th>time to train (h)</th><th>GPU-hours</th>";
  if (c.workload && cluster.price_per_gpu_hour > 0) h += fmt::format("<th>cost ({})</th>", xml_escape(cluster.currency));
  h += "</tr>\n";
  for (const auto& p : c.predictions) {
    h += fmt::format("<tr><td>{}</td><td>{}</td><td>{:.3f}</td><td>{:.1f}</td>", p.gpus, p.nodes, in_ms(p.iteration_time),
                     p.throughput_samples_per_s);
    if (tokens) h += fmt::format("<td>{:.4g}</td><td>{:.1f}%</td>", p.throughput_tokens_per_s, 100.0 * p.mfu);
    h += fmt::format("<td>{:.3f}</td><td>{:.1f}%</td><td>{}</td>", p.speedup, 100 * p.efficiency,
                     p.memory.fits ? fmt::format("{:.3g}", in_bytes(p.memory.per_gpu) / 1e9)
                                   : fmt::format("<b>{:.3g} (does not fit)</b>", in_bytes(p.memory.per_gpu) / 1e9));
    if (offload)
      h += fmt::format("<td>{}</td>",
                       p.memory.host_fits ? fmt::format("{:.3g}", in_bytes(p.memory.host_per_node) / 1e9)
                                          : fmt::format("<b>{:.3g} (does not fit)</b>", in_bytes(p.memory.host_per_node) / 1e9));
    h += fmt::format("<td>{:.3f}</td><td>{:.3f}</td><td class=\"l\">{}</td>", in_ms(p.breakdown.comm),
                     in_ms(p.breakdown.comm_exposed), xml_escape(bottleneck_text(p)));
    if (c.workload) {
      const TrainingCost tc = time_to_train(p, *c.workload, cluster);
      h += fmt::format("<td>{:.2f}</td><td>{:.1f}</td>", in_seconds(tc.wall_time) / 3600.0, tc.gpu_hours);
      if (tc.cost) h += fmt::format("<td>{:.2f}</td>", *tc.cost);
    }
    h += "</tr>\n";
  }
  h += "</table>\n";
  if (overflow && !c.predictions.empty())
    h += fmt::format(
        "<p class=\"small\"><b>does not fit</b>: more than the GPU's {:.3g} GB of memory; such a step cannot "
        "run as configured.</p>\n",
        in_bytes(c.predictions.front().memory.capacity) / 1e9);
  if (host_overflow && !c.predictions.empty())
    h += fmt::format(
        "<p class=\"small\"><b>host memory does not fit</b>: CPU offload needs more than the node's {:.3g} GB of host "
        "memory; such a step cannot run as configured.</p>\n",
        in_bytes(c.predictions.front().memory.host_capacity) / 1e9);
  h += "<p class=\"small\">bottleneck: the resource whose doubling gains the most samples/s (as the explanation doubles "
       "it), with its share of the iteration.";
  if (tokens) h += fmt::format(" MFU = 3 × forward FLOPs per sample × samples/s / (GPUs × the GPU's dense peak).");
  h += "</p>\n";
  if (c.workload) h += fmt::format("<p class=\"small\">time to train: {}</p>\n", xml_escape(c.workload->source));

  return h;
}
}  // namespace

std::string html_report(const ReportContent& c, const Cluster& cluster) {
  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  h += fmt::format("<title>{}</title>\n", xml_escape(c.title));
  h += R"(<style>
body { font-family: "DejaVu Sans", Arial, sans-serif; margin: 24px; color: #222; background: #fff; max-width: 1160px; }
h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 13px; }
td, th { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th { background: #f2f2f2; } td.l, th.l { text-align: left; }
pre { background: #f7f7f7; padding: 10px; font-size: 12px; overflow-x: auto; }
.plots { display: flex; flex-wrap: wrap; gap: 12px; } figure { margin: 0; }
figure svg { width: 560px; height: auto; } figure.wide svg { width: 1132px; } figcaption { font-size: 12px; color: #555; }
.small { font-size: 12px; color: #555; }
</style>
</head>
<body>
)";
  h += fmt::format("<h1>{}</h1>\n", xml_escape(c.title));
  if (!c.command_line.empty()) h += fmt::format("<p class=\"small\">made by: <code>{}</code></p>\n", xml_escape(c.command_line));

  h += "<h2>Inputs</h2>\n<table>\n";
  for (const auto& [k, v] : c.inputs)
    h += fmt::format("<tr><th class=\"l\">{}</th><td class=\"l\">{}</td></tr>\n", xml_escape(k), xml_escape(v));
  h += "</table>\n";

  h += predictions_section(c, cluster);

  h += "<h2>Plots</h2>\n<div class=\"plots\">\n";
  for (const auto& [caption, svg] : c.plots)  // the timeline (900 px wide) gets a row of its own
    h += fmt::format("<figure{}>\n{}<figcaption>{}</figcaption>\n</figure>\n",
                     svg.find("width=\"900\"") != std::string::npos ? " class=\"wide\"" : "", svg, xml_escape(caption));
  h += "</div>\n";

  if (!c.explanation_text.empty())
    h += fmt::format("<h2>Explanation (largest GPU count)</h2>\n<pre>{}</pre>\n", xml_escape(c.explanation_text));
  h += "<p class=\"small\">dlscale: S-SGD performance model of Shi &amp; Chu (2018); every number above comes out of the "
       "model.</p>\n</body>\n</html>\n";
  return h;
}

}  // namespace dlscale
