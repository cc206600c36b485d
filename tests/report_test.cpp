// Plots and the HTML report: pixel positions of the log-log axes worked by hand, the busbw curve
// against the α-β formula, the timeline from a Chrome trace, a self-contained page, and a screenshot
// of the page in headless Chromium that must show the plot lines (skipped when chromium is missing).
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "dlscale/collective.hpp"
#include "dlscale/error.hpp"
#include "dlscale/plot.hpp"
#include "dlscale/report.hpp"
#include "support/run.hpp"

namespace dlscale {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

/// The points of the n-th <polyline> of an SVG.
std::vector<std::pair<double, double>> polyline(const std::string& svg, int n) {
  std::size_t pos = 0;
  for (int i = 0; i <= n; ++i) {
    pos = svg.find("<polyline", pos);
    if (pos == std::string::npos) return {};
    if (i < n) ++pos;
  }
  const auto a = svg.find("points=\"", pos) + 8;
  const auto b = svg.find('"', a);
  std::istringstream in(svg.substr(a, b - a));
  std::vector<std::pair<double, double>> out;
  double x, y;
  char comma;
  while (in >> x >> comma >> y) out.emplace_back(x, y);
  return out;
}

// The reproduce figures' options (lib/repro/svg.cpp): a series out of the legend, x ticks at the data's x
// values (1 and 3: a 1-2-5 axis would label 2), a faint dashed line, a note at the foot of the legend column.
TEST(Plot, ReproduceFigureOptions) {
  Series measured;
  measured.name = "measured";
  measured.x = {1, 3};
  measured.y = {10, 20};
  Series ideal = measured;
  ideal.name = "hidden ideal";
  ideal.y = {10, 30};
  ideal.dashed = true;
  ideal.dash_pattern = "4,4";
  ideal.opacity = 0.35;
  ideal.in_legend = false;
  PlotFrame f = plot_frame("t", "GPUs", "y", false, false);
  f.legend_width = 230;
  f.x_ticks_at_data = true;
  f.note = "faint: ideal";
  const Series all[] = {ideal, measured};
  const std::string svg = line_plot_svg(f, all);
  EXPECT_THAT(svg, HasSubstr(">measured</text>"));
  EXPECT_THAT(svg, Not(HasSubstr("hidden ideal")));
  EXPECT_THAT(svg, HasSubstr("stroke-dasharray=\"4,4\" stroke-opacity=\"0.35\""));
  EXPECT_THAT(svg, HasSubstr(">faint: ideal</text>"));
  // legend column: 640 − 230 + 12 = 422 px
  EXPECT_THAT(svg, HasSubstr("<text x=\"422\" y=\"348\" fill=\"#666666\""));
  EXPECT_THAT(svg, HasSubstr("text-anchor=\"middle\">3</text>"));
  EXPECT_THAT(svg, Not(HasSubstr("text-anchor=\"middle\">2</text>")));
}

TEST(Plot, LogLogAxesPlacePowersOfTwoEvenly) {
  // x from 1 to 16 GPUs on a log axis between the margins: left 72 px, right edge 640 − 150 = 490 px.
  // log2 positions 0, 1, 2, 3, 4 → 72 + k/4 · 418 = 72, 176.5, 281, 385.5, 490.
  // y from 1 to 16 too: bottom 400 − 52 = 348 px, top 36 px → 348 − k/4 · 312.
  Series s;
  s.name = "s";
  s.x = {1, 2, 4, 8, 16};
  s.y = {1, 2, 4, 8, 16};
  const Series all[] = {s};
  const std::string svg = line_plot_svg(plot_frame("t", "x", "y", true, true), all);
  const auto pts = polyline(svg, 0);
  ASSERT_EQ(pts.size(), 5u);
  for (int k = 0; k < 5; ++k) {
    EXPECT_NEAR(pts[k].first, 72 + k / 4.0 * 418, 0.051);
    EXPECT_NEAR(pts[k].second, 348 - k / 4.0 * 312, 0.051);
  }
}

TEST(Plot, ThroughputPlotHasTheIdealLineThroughTheOneGpuPoint) {
  std::vector<Prediction> preds(3);
  // X(1) = 100 samples/s; X(4) = 300 (75 %), X(16) = 800 (50 %). Ideal: 100, 400, 1600.
  const double x[] = {100, 300, 800};
  const int g[] = {1, 4, 16};
  for (int i = 0; i < 3; ++i) {
    preds[i].gpus = g[i];
    preds[i].throughput_samples_per_s = x[i];
    preds[i].speedup = x[i] / 100 * 1.0;
  }
  const std::string svg = throughput_plot_svg(preds, "t");
  const auto ideal = polyline(svg, 0), model = polyline(svg, 1);
  ASSERT_EQ(ideal.size(), 3u);
  ASSERT_EQ(model.size(), 3u);
  EXPECT_EQ(ideal[0], model[0]);                // both start at X(1)
  EXPECT_LT(ideal[2].second, model[2].second);  // the ideal is higher (smaller y pixel) at 16 GPUs
  EXPECT_THAT(svg, HasSubstr(std::string(kPlotModelColour)));
  EXPECT_THAT(svg, HasSubstr("stroke-dasharray"));  // the ideal line is dashed
}

TEST(Plot, BusbwApproachesTheLinkBandwidthForLargeMessages) {
  // α-β ring, one node of 4 GPUs at 10 GB/s with 5 µs per step: t = 6·5 µs + 1.5·S/β, busbw = S/t · 1.5.
  // At S = 1 GiB: t = 30 µs + 0.161 s → busbw = 9.998 GB/s; at 1 KiB: t = 30 µs + 0.15 µs → 0.051 GB/s.
  Cluster c;
  c.intra_node = {gigabytes_per_second(10), microseconds(5)};
  const auto model = make_alpha_beta_model(c);
  const GpuPlacement at{4, 1, 4};
  const std::string svg = busbw_plot_svg(*model, {&at, 1}, bytes(1024), gibibytes(1), "busbw");
  const auto pts = polyline(svg, 0);
  ASSERT_EQ(pts.size(), 21u);  // 2^10 … 2^30
  // the y axis is log: the largest message is the highest point, the smallest the lowest
  EXPECT_LT(pts.back().second, pts.front().second);
  for (std::size_t i = 1; i < pts.size(); ++i) EXPECT_LE(pts[i].second, pts[i - 1].second + 1e-9);
  EXPECT_THAT(svg, HasSubstr("4 GPUs / 1 node"));
}

TEST(Plot, TimelineDrawsCompleteEventsPerTrack) {
  const std::string trace = R"({"traceEvents":[
    {"ph":"M","name":"thread_name","pid":0,"tid":0,"args":{"name":"GPU 0 compute"}},
    {"ph":"M","name":"thread_name","pid":1,"tid":0,"args":{"name":"aggregation channel"}},
    {"ph":"X","name":"forward","pid":0,"tid":0,"ts":0,"dur":1000},
    {"ph":"X","name":"backward","pid":0,"tid":0,"ts":1000,"dur":2000},
    {"ph":"X","name":"allreduce 3","pid":1,"tid":0,"ts":1500,"dur":2500}]})";
  const std::string svg = timeline_svg(trace, 0, 0, 8, "one iteration");
  EXPECT_THAT(svg, HasSubstr("GPU 0 compute"));
  EXPECT_THAT(svg, HasSubstr("aggregation channel"));
  // three slices; the window is 0–4 ms over 170 … 900 − 150 = 750 px: forward spans 0–1 ms → 580/4 = 145 px,
  // on the first track (y = 36 px top margin + 4)
  EXPECT_THAT(svg, HasSubstr("x=\"170.0\" y=\"40\" width=\"145.00\""));
  EXPECT_THROW((void)timeline_svg("not json", 0, 0, 8, "t"), InputError);
}

TEST(Report, HtmlIsSelfContained) {
  ReportContent c;
  c.title = "A <report>";
  c.inputs = {{"cluster", "x & y"}};
  Prediction p;
  p.gpus = 1;
  p.throughput_samples_per_s = 10;
  c.predictions = {p};
  c.plots = {{"plot", throughput_plot_svg(c.predictions, "t")}};
  const std::string html = html_report(c, Cluster{});
  EXPECT_THAT(html, HasSubstr("<title>A &lt;report&gt;</title>"));
  EXPECT_THAT(html, HasSubstr("x &amp; y"));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("src=")));
  EXPECT_THAT(html, Not(HasSubstr("href=")));
  EXPECT_THAT(html, Not(HasSubstr("@import")));
}

// A token model's row: 12,000 tokens/s and 64.1 % MFU shown beside samples/s; 239 GB on an 80 GB GPU is
// marked as a step that cannot run; the bottleneck carries its share of the iteration.
TEST(Report, PredictionsShowTokensMfuMemoryAndWhatDoesNotFit) {
  ReportContent c;
  Prediction p;
  p.gpus = 8;
  p.iteration_time = seconds(2.0);
  p.throughput_samples_per_s = 4.0;
  p.throughput_tokens_per_s = 12000.0;
  p.mfu = 0.641;
  p.memory = MemoryUse{gigabytes(239.0), gigabytes(80.0), false};
  p.bottleneck = Bottleneck::compute;
  p.bottleneck_share = 0.98;
  p.bottleneck_resource = ResourceName(std::string("GPU compute (H100)"));
  c.predictions = {p};
  const std::string html = html_report(c, Cluster{});
  EXPECT_THAT(html, HasSubstr("<th>tokens/s</th><th>MFU</th>"));
  EXPECT_THAT(html, HasSubstr("<td>1.2e+04</td><td>64.1%</td>"));
  EXPECT_THAT(html, HasSubstr("<b>239 (does not fit)</b>"));
  EXPECT_THAT(html, HasSubstr("more than the GPU's 80 GB of memory"));
  EXPECT_THAT(html, HasSubstr("compute (98%): GPU compute (H100)"));
  // An image model's row has neither column, and a step that fits is not marked.
  p.throughput_tokens_per_s = 0.0;
  p.memory.fits = true;
  c.predictions = {p};
  const std::string images = html_report(c, Cluster{});
  EXPECT_THAT(images, Not(HasSubstr("tokens/s")));
  EXPECT_THAT(images, Not(HasSubstr("does not fit")));
}

// CPU offload (eq. S9d): a column of host memory per node, only then. ZeRO-2 offload of Llama-2-7B keeps
// 14 × 6,738,415,616 B = 94.3 GB on a node (tests/sharding_test.cpp): it fits a 2 TB host, not a 64 GB one.
TEST(Report, PredictionsShowHostMemoryUnderCpuOffload) {
  ReportContent c;
  Prediction p;
  p.gpus = 8;
  p.iteration_time = seconds(2.0);
  p.throughput_samples_per_s = 4.0;
  p.memory = MemoryUse{gigabytes(60.0), gigabytes(80.0), true};
  p.memory.host_per_node = bytes(14.0 * 6'738'415'616);
  p.memory.host_capacity = bytes(2e12);
  c.predictions = {p};
  std::string html = html_report(c, Cluster{});
  EXPECT_THAT(html, HasSubstr("<th>memory/GPU (GB)</th><th>host memory/node (GB)</th><th>comm (ms)</th>"));
  EXPECT_THAT(html, HasSubstr("<td>60</td><td>94.3</td>"));
  EXPECT_THAT(html, Not(HasSubstr("does not fit")));
  p.memory.host_capacity = bytes(64e9);
  p.memory.host_fits = false;
  c.predictions = {p};
  html = html_report(c, Cluster{});
  EXPECT_THAT(html, HasSubstr("<td>60</td><td><b>94.3 (does not fit)</b></td>"));
  EXPECT_THAT(html, HasSubstr("more than the node's 64 GB of host memory"));
  // Without offload, no column.
  p.memory = MemoryUse{gigabytes(60.0), gigabytes(80.0), true};
  c.predictions = {p};
  EXPECT_THAT(html_report(c, Cluster{}), Not(HasSubstr("host memory")));
}

// to_json is the record write_predictions prints for each GPU count (one writer), and says what only some
// predictions have: null tokens/s for images, "offload" with a host footprint, "time_to_train" with a workload.
TEST(Report, ToJsonIsTheRecordOfThePredictionsDocument) {
  Prediction image;
  image.gpus = 4;
  image.iteration_time = seconds(0.5);
  image.throughput_samples_per_s = 512.0;
  Prediction offload = image;
  offload.throughput_tokens_per_s = 1e5;
  offload.memory.host_per_node = gigabytes(100.0);
  const std::vector<Prediction> preds{image, offload};
  TrainingCost cost;
  cost.iterations = 10;
  const std::vector<TrainingCost> train{cost, cost};
  std::ostringstream out;
  write_predictions(out, OutputFormat::json, RunInfo{}, preds, train);
  const auto doc = nlohmann::ordered_json::parse(out.str());
  ASSERT_EQ(doc["predictions"].size(), 2u);
  for (std::size_t i = 0; i < preds.size(); ++i) {
    auto expected = doc["predictions"][i];
    EXPECT_EQ(expected["time_to_train"]["iterations"], 10.0);
    expected.erase("time_to_train");
    EXPECT_EQ(to_json(preds[i]), expected.dump()) << i;
  }
  const auto one = nlohmann::ordered_json::parse(to_json(image));
  EXPECT_TRUE(one["throughput_tokens_per_s"].is_null());
  EXPECT_FALSE(one.contains("offload"));
  EXPECT_EQ(nlohmann::ordered_json::parse(to_json(offload))["offload"].size(), 5u);
}

// ---- a PNG reader (zlib through dlopen, so no link dependency) ---------------------------------------
struct Image {
  int width = 0, height = 0;
  std::vector<std::uint8_t> rgb;  // 3 bytes per pixel
};

std::uint32_t be32(const std::string& s, std::size_t at) {
  return (std::uint32_t(std::uint8_t(s[at])) << 24) | (std::uint32_t(std::uint8_t(s[at + 1])) << 16) |
      (std::uint32_t(std::uint8_t(s[at + 2])) << 8) | std::uint32_t(std::uint8_t(s[at + 3]));
}

std::optional<Image> read_png(const std::string& file, std::string& why) {
  using uncompress_fn = int (*)(unsigned char*, unsigned long*, const unsigned char*, unsigned long);
  void* z = ::dlopen("libz.so.1", RTLD_NOW);
  if (!z) return why = "libz.so.1 not found", std::nullopt;
  auto uncompress = reinterpret_cast<uncompress_fn>(::dlsym(z, "uncompress"));
  const std::string s = test::slurp(file);
  if (s.size() < 8 || s.compare(1, 3, "PNG") != 0) return why = "not a PNG", std::nullopt;
  Image img;
  int depth = 0, type = 0;
  std::string idat;
  for (std::size_t at = 8; at + 8 <= s.size();) {
    const std::uint32_t len = be32(s, at);
    const std::string kind = s.substr(at + 4, 4);
    if (kind == "IHDR") {
      img.width = int(be32(s, at + 8));
      img.height = int(be32(s, at + 12));
      depth = std::uint8_t(s[at + 16]);
      type = std::uint8_t(s[at + 17]);
      if (s[at + 20] != 0) return why = "interlaced PNG", std::nullopt;
    } else if (kind == "IDAT") {
      idat += s.substr(at + 8, len);
    }
    at += 12 + len;
  }
  const int channels = type == 6 ? 4 : type == 2 ? 3 : 0;
  if (depth != 8 || channels == 0) return why = "unsupported PNG format", std::nullopt;
  const std::size_t stride = std::size_t(img.width) * channels;
  std::vector<std::uint8_t> raw((stride + 1) * img.height);
  unsigned long raw_len = raw.size();
  if (uncompress(raw.data(), &raw_len, reinterpret_cast<const unsigned char*>(idat.data()), idat.size()) != 0)
    return why = "bad zlib stream", std::nullopt;
  // Undo the per-row filters (PNG spec, section 9).
  std::vector<std::uint8_t> px(stride * img.height), zero(stride, 0);
  for (int y = 0; y < img.height; ++y) {
    const std::uint8_t f = raw[y * (stride + 1)];
    const std::uint8_t* in = &raw[y * (stride + 1) + 1];
    std::uint8_t* out = &px[y * stride];
    const std::uint8_t* up = y ? &px[(y - 1) * stride] : zero.data();
    for (std::size_t i = 0; i < stride; ++i) {
      const int a = i >= std::size_t(channels) ? out[i - channels] : 0, b = up[i],
                c = i >= std::size_t(channels) ? up[i - channels] : 0;
      int v = in[i];
      switch (f) {
        case 1:
          v += a;
          break;
        case 2:
          v += b;
          break;
        case 3:
          v += (a + b) / 2;
          break;
        case 4: {
          const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
          v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
          break;
        }
        default:
          break;
      }
      out[i] = std::uint8_t(v);
    }
  }
  img.rgb.resize(std::size_t(img.width) * img.height * 3);
  for (std::size_t i = 0; i < std::size_t(img.width) * img.height; ++i)
    for (int k = 0; k < 3; ++k) img.rgb[i * 3 + k] = px[i * channels + k];
  return img;
}

std::string find_chromium() {
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"})
    if (std::filesystem::exists(p)) return p;
  return "";
}

TEST(Report, HeadlessChromiumScreenshotShowsThePlots) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (Debian package 'chromium'): screenshot not checked";
  const auto dir = std::filesystem::temp_directory_path() / ("dlscale-report-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "profile");
  const auto html = dir / "report.html", png = dir / "shot.png";
  // AlexNet with CNTK scales at 63 % on 16 GPUs: the ideal line stands apart from the model's.
  const auto r = test::run_cli(
      "report --cluster shi-chu-p40 --model alexnet --framework cntk --batch 1024 --gpus 1,2,4,8,16 -o " + html.string());
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string cmd = chromium +
      " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
      " --disable-background-networking --disable-component-update --disable-sync"
      " --user-data-dir=" +
      (dir / "profile").string() + " --screenshot=" + png.string() + " --window-size=1200,1600 file://" + html.string() + " >" +
      (dir / "chromium.log").string() + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << test::slurp(dir / "chromium.log");
  std::string why;
  const auto img = read_png(png.string(), why);
  ASSERT_TRUE(img.has_value()) << why;
  EXPECT_EQ(img->width, 1200);
  EXPECT_EQ(img->height, 1600);
  // The model's line colour (#d62728) must appear in the left half (the throughput plot) and the right
  // half (the speedup plot), and the ideal line's grey (#7f7f7f) too.
  auto near = [](const std::uint8_t* p, int r0, int g0, int b0) {
    return std::abs(p[0] - r0) <= 12 && std::abs(p[1] - g0) <= 12 && std::abs(p[2] - b0) <= 12;
  };
  long red_left = 0, red_right = 0, grey = 0;
  for (int y = 0; y < img->height; ++y)
    for (int x = 0; x < img->width; ++x) {
      const std::uint8_t* p = &img->rgb[(std::size_t(y) * img->width + x) * 3];
      if (near(p, 0xd6, 0x27, 0x28)) (x < 600 ? red_left : red_right)++;
      if (near(p, 0x7f, 0x7f, 0x7f)) ++grey;
    }
  EXPECT_GT(red_left, 300) << "no throughput line in the screenshot " << png;
  EXPECT_GT(red_right, 300) << "no speedup line in the screenshot " << png;
  EXPECT_GT(grey, 300) << "no ideal line in the screenshot " << png;
  std::filesystem::copy_file(png, std::filesystem::temp_directory_path() / "dlscale-report-last.png",
                             std::filesystem::copy_options::overwrite_existing);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dlscale
