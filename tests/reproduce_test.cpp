// dlscale reproduce: the scenario files of the reference papers (examples/papers/*.yaml) as a user runs
// them — experiment counts per paper, the Table V rows and worked examples beside the paper's values
// with their errors (checked against hand arithmetic), bad scenario files, plots, a golden table.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "support/run.hpp"

namespace dlscale {
namespace {

using nlohmann::json;
using test::run_cli;
using test::slurp;
using test::temp_file;
using ::testing::HasSubstr;

/// `reproduce all --format json`, run once for the whole file.
const json& all_json() {
  static const json j = [] {
    const auto r = run_cli("reproduce all --format json");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.err, "");
    return json::parse(r.out);
  }();
  return j;
}

const json& find_row(const std::string& experiment, const std::string& model, const std::string& framework,
                     const std::string& inputs, int gpus) {
  for (const auto& e : all_json().at("experiments"))
    if (e.at("experiment") == experiment && e.at("model") == model && e.at("framework") == framework &&
        e.at("inputs") == inputs && e.at("gpus") == gpus)
      return e;
  ADD_FAILURE() << "no row " << experiment << " " << model << " " << framework << " " << inputs << " " << gpus;
  static const json none = json::object();
  return none;
}

TEST(Reproduce, CoversEveryExperimentOfEveryPaper) {
  std::map<std::string, int> per_paper;
  for (const auto& e : all_json().at("experiments")) ++per_paper[e.at("paper").get<std::string>()];
  // Counts from the scenario grids, by hand:
  // shi-chu-2018: Table V 3 models x 4 frameworks x 1 GPU count x 2 inputs = 24; scaling 3 x 4 x 5 (1,2,4,8,16)
  //   x 2 = 120; t_comm 3 x 4 x 4 (2,4,8,16) x 1 = 48; worked examples 1 x 1 x 5 x 2 = 10; r_u2g 2 x 1 x 1 x 2 = 4
  //   -> 206
  EXPECT_EQ(per_paper["shi-chu-2018"], 206);
  // dell-v100: PCIe scaling 3 frameworks x 2 precisions x 6 (1..32) = 36; SXM2 vs PCIe 2 systems x 3 x 2 x 4
  //   (1..8) = 48; V100 vs P100 2 systems x 2 frameworks x 2 precisions x 1 (4 GPUs) = 8 -> 92
  EXPECT_EQ(per_paper["dell-v100"], 92);
  // dell-p100: NV-Caffe 3 (1,2,4) + TensorFlow 3 + MXNet GoogLeNet 6 (1,2,4,8,12,16) x 2 networks
  //   + MXNet Inception-BN 6 x 2 -> 30
  EXPECT_EQ(per_paper["dell-p100"], 30);
  // dgx2-comparison: GPU counts per system DGX-2 5, P3 5, AC922 5, RTX 4 = 19; large models 4 x 19 = 76;
  //   high-throughput 3 x 19 = 57; mixed precision (fp32 b256, fp16 b128, fp16 b256) 3 x 5 = 15;
  //   DataParallel vs DDP 2 frameworks x (16: 5, P3: 4, AC922: 3, RTX: 4 = 16) = 32 -> 180
  EXPECT_EQ(per_paper["dgx2-comparison"], 180);
  EXPECT_EQ(per_paper.size(), 4u);
  // bus bandwidth: (DGX-2 4 + DGX-1V 3 + P3 4 + AC922 4 + RTX 3 = 18 (system, GPU count)) x 2 operations
  //   x 11 sizes (1 MiB .. 1 GiB by 2) = 396
  EXPECT_EQ(all_json().at("bus_bandwidth").size(), 396u);
}

TEST(Reproduce, JsonRowsFollowTheContract) {
  const auto& j = all_json();
  EXPECT_EQ(j.at("schema"), 2);  // 2: algbw_gb_per_s, busbw_gb_per_s (issue 35)
  const std::set<std::string> papers{"shi-chu-2018", "dell-v100", "dell-p100", "dgx2-comparison"};
  const std::set<std::string> frameworks{"caffe-mpi", "cntk",     "mxnet",       "tensorflow",          "horovod-tensorflow",
                                         "caffe2",    "nv-caffe", "pytorch-ddp", "pytorch-dataparallel"};
  const std::set<std::string> models{"alexnet",   "googlenet",    "vgg16",        "resnet18",  "resnet50",  "resnet101",
                                     "resnet152", "inception-v3", "inception-bn", "bert-swag", "bert-squad"};
  for (const auto& e : j.at("experiments")) {
    for (const char* key : {"paper", "experiment", "system", "model", "framework", "precision", "batch_per_gpu", "gpus", "nodes",
                            "inputs", "iteration_time_s", "throughput_samples_per_s", "speedup", "comm_s", "comm_exposed_s"})
      ASSERT_TRUE(e.contains(key)) << key;
    EXPECT_TRUE(papers.count(e.at("paper"))) << e.at("paper");
    EXPECT_TRUE(frameworks.count(e.at("framework"))) << e.at("framework");
    EXPECT_TRUE(models.count(e.at("model"))) << e.at("model");
    EXPECT_TRUE(e.at("precision") == "fp32" || e.at("precision") == "fp16");
    EXPECT_TRUE(e.at("inputs") == "profile" || e.at("inputs") == "spec");
    // throughput = gpus * batch / t_iter
    EXPECT_NEAR(e.at("throughput_samples_per_s").get<double>(),
                e.at("gpus").get<double>() * e.at("batch_per_gpu").get<double>() / e.at("iteration_time_s").get<double>(),
                1e-9 * e.at("throughput_samples_per_s").get<double>());
  }
}

TEST(Reproduce, TableVRowsPrintWithTheirErrors) {
  // CNTK AlexNet from its Table V profile: CNTK does not prefetch (eq. 1), so
  // t_iter = 0.2233 + 0.0528 + 0.1684 + 0.2919 + 0.0086 = 0.7450 s against the measured 0.7433 s:
  // (0.7450 − 0.7433) / 0.7433 = +0.229 %.
  const auto& cntk = find_row("table5-single-gpu", "alexnet", "cntk", "profile", 1);
  EXPECT_NEAR(cntk.at("iteration_time_s").get<double>(), 0.7450, 1e-9);
  EXPECT_DOUBLE_EQ(cntk.at("measured").at("iteration_time_s").get<double>(), 0.7433);
  EXPECT_NEAR(cntk.at("error_percent").at("iteration_time_s").get<double>(), 0.2287, 1e-3);
  // Caffe-MPI AlexNet prefetches (eq. 4 with its 0.2 ms input hand-over on the GPU side, eq. F2b; the profile's
  // 0.0002 s wait is under 1 % of the iteration, so its reader is the model's, 0.164 s): t_iter =
  // max(0.0526 + 0.1718 + 0.3560 + 0.0062 + 0.0002, 0.164) = 0.5868 s against 0.5772 s: +1.6632 %.
  const auto& caffe = find_row("table5-single-gpu", "alexnet", "caffe-mpi", "profile", 1);
  EXPECT_NEAR(caffe.at("iteration_time_s").get<double>(), 0.5868, 1e-9);
  EXPECT_NEAR(caffe.at("error_percent").at("iteration_time_s").get<double>(), 1.6632, 1e-3);
  // Table V's t_io is the wait for data: all of the read for CNTK (no prefetching), for Caffe-MPI the hand-over or
  // what exceeds the GPU side if more (eq. F2b): max(0.0002, 0.164 − 0.5866) = 0.0002 against 0.0002 s.
  EXPECT_NEAR(cntk.at("derived").at("io_exposed_s").get<double>(), 0.2233, 1e-12);
  EXPECT_NEAR(caffe.at("derived").at("io_exposed_s").get<double>(), 0.0002, 1e-12);
  // The spec rows carry the same measured phases (every phase compared).
  const auto& spec = find_row("table5-single-gpu", "resnet50", "tensorflow", "spec", 1);
  for (const char* k : {"io_exposed_s", "h2d_s", "forward_s", "backward_s", "update_s", "iteration_time_s"})
    EXPECT_TRUE(spec.at("measured").contains(k)) << k;

  const auto r = run_cli("reproduce shi-chu-2018 --experiment table5-single-gpu");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("0.7450 (0.7433 +0.2%)"));
  EXPECT_THAT(r.out, HasSubstr("0.5868 (0.5772 +1.7%)"));
  EXPECT_THAT(r.out, HasSubstr("from specifications"));
}

// Issue 34: every phase of Table V from specifications (t_io wait, t_h2d, t_f, t_b, t_u of the 12 cells, 60 in all),
// each error computed here from the row's predicted and measured seconds, and printed; the goal (all within 15 %,
// mean at most 6 %) is not reached yet, so the test holds what the model reaches (docs/reproduce.md, "Table V's remaining
// misses", lists the 14 that miss and the readings tested against them).
TEST(Reproduce, TableVEveryPhaseFromSpecifications) {
  static const std::pair<const char*, const char*> phases[] = {
      {"io_exposed_s", "t_io wait"}, {"h2d_s", "t_h2d"}, {"forward_s", "t_f"}, {"backward_s", "t_b"}, {"update_s", "t_u"}};
  int within = 0, count = 0;
  double sum = 0;
  for (const char* model : {"alexnet", "googlenet", "resnet50"})
    for (const char* framework : {"caffe-mpi", "cntk", "mxnet", "tensorflow"}) {
      const json& row = find_row("table5-single-gpu", model, framework, "spec", 1);
      std::string line = fmt::format("Table V {:<10} {:<11}", model, framework);
      for (const auto& [key, label] : phases) {
        const json& from = std::string(key) == "io_exposed_s" ? row.at("derived") : row.at("breakdown");
        const double predicted = from.at(key).get<double>(), measured = row.at("measured").at(key).get<double>();
        const double err = predicted / measured - 1.0;
        line += fmt::format(" {} {:+.1f}%", label, 100 * err);
        within += std::abs(err) <= 0.15;
        sum += std::abs(err);
        ++count;
      }
      std::printf("%s\n", line.c_str());
    }
  std::printf("Table V every phase from specifications: %d of %d within 15%%, mean absolute error %.1f%%\n", within, count,
              100 * sum / count);
  EXPECT_EQ(count, 60);
  // where the model stands (issue 34's goal: 60): 37 before eq. F2's input hand-over, 46 with it (the nine
  // hand-over cells of Caffe-MPI, CNTK, MXNet and TensorFlow's AlexNet met; TensorFlow's GoogLeNet and ResNet-50 not)
  EXPECT_GE(within, 46);
}

// Eq. F2 (docs/model.md): a prefetching framework's fixed input hand-over, `input_handover` in its framework file,
// the median of its prefetched networks' Table V t_io cells, by hand:
//   Caffe-MPI  median(0.0002, 0.0002, 0.0002) = 0.0002 s
//   CNTK       median(0.0001, 0.0001)         = 0.0001 s (GoogLeNet, ResNet-50; AlexNet's 588 MiB batch passes
//                                                its 256 MiB buffer: read in the iteration, eq. 2, no hand-over)
//   MXNet      median(0.0001, 0.0001, 0.0001) = 0.0001 s
//   TensorFlow median(0.0008, 0.0010, 0.0003) = 0.0008 s
// From specifications every prefetched read is hidden on one P40, so the predicted wait (eq. F2b, max(h, t_io − t_gpu))
// is h itself. In-sample: 0 % for Caffe-MPI, CNTK and MXNet; TensorFlow 0.8/0.8 − 1 = 0, 0.8/1.0 − 1 = −20 %,
// 0.8/0.3 − 1 = +166.7 %: mean absolute error over the 11 cells (20 + 166.667)/11 = 16.97 %. Leave one network out
// (the median of the framework's other networks; of two, their mean): 0 % for Caffe-MPI, CNTK (each from the other)
// and MXNet; TensorFlow AlexNet (1.0+0.3)/2 = 0.65, −18.75 %; GoogLeNet (0.8+0.3)/2 = 0.55, −45 %; ResNet-50
// (0.8+1.0)/2 = 0.9, +200 %: mean (18.75 + 45 + 200)/11 = 23.98 %.
TEST(Reproduce, TableVInputHandoverFittedAndLeftOut) {
  const std::map<std::string, double> handover = {
      {"caffe-mpi", 0.0002}, {"cntk", 0.0001}, {"mxnet", 0.0001}, {"tensorflow", 0.0008}};
  double in_sample = 0, left_out = 0;
  int cells = 0;
  for (const auto& [framework, h] : handover) {
    std::vector<std::pair<std::string, double>> measured;  // the framework's prefetched networks' cells
    for (const char* model : {"alexnet", "googlenet", "resnet50"}) {
      const json& row = find_row("table5-single-gpu", model, framework, "spec", 1);
      const double wait = row.at("derived").at("io_exposed_s").get<double>();
      if (framework == "cntk" && std::string(model) == "alexnet") {  // not prefetched: the wait is the whole read
        EXPECT_DOUBLE_EQ(wait, row.at("breakdown").at("io_s").get<double>());
        continue;
      }
      EXPECT_NEAR(wait, h, 1e-12) << framework << " " << model;
      measured.emplace_back(model, row.at("measured").at("io_exposed_s").get<double>());
    }
    std::string line = fmt::format("F2 {:<11} h {:.4f} s:", framework, h);
    for (std::size_t i = 0; i < measured.size(); ++i) {
      std::vector<double> others;
      for (std::size_t j = 0; j < measured.size(); ++j)
        if (j != i) others.push_back(measured[j].second);
      std::sort(others.begin(), others.end());
      const std::size_t n = others.size();
      const double median = n % 2 == 1 ? others[n / 2] : (others[n / 2 - 1] + others[n / 2]) / 2;
      const double m = measured[i].second, in = h / m - 1, out = median / m - 1;
      line += fmt::format(" {} {:.4f} in-sample {:+.1f}% left out {:.4f} {:+.1f}%;", measured[i].first, m, 100 * in, median,
                          100 * out);
      in_sample += std::abs(in);
      left_out += std::abs(out);
      ++cells;
    }
    std::printf("%s\n", line.c_str());
  }
  std::printf("F2 input hand-over, %d cells: in-sample mean %.2f%%, leave-one-network-out mean %.2f%%\n", cells,
              100 * in_sample / cells, 100 * left_out / cells);
  EXPECT_EQ(cells, 11);
  EXPECT_NEAR(100 * in_sample / cells, 100 * (0.2 + 0.8 / 0.3 - 1) / 11, 1e-6);
  EXPECT_NEAR(100 * left_out / cells, 100 * (0.1875 + 0.45 + 2.0) / 11, 1e-6);
}

TEST(Reproduce, WorkedExamplesPrintWithTheirErrors) {
  // Eq. 8 with the paper's inputs (Section VI-B): t_iter(1) = 0.223 + 0.5215 = 0.7445 s;
  // S(2) = 2·0.7445 / (0.5215 + 0.45 + 0.0359) = 1.47806; S(4) = 4·0.7445 / (0.5215 + 0.72 + 0.042) = 2.32022.
  const auto& two = find_row("worked-examples", "alexnet", "cntk", "profile", 2);
  const auto& four = find_row("worked-examples", "alexnet", "cntk", "profile", 4);
  EXPECT_NEAR(two.at("speedup").get<double>(), 1.47806, 1e-5);
  EXPECT_NEAR(four.at("speedup").get<double>(), 2.32022, 1e-5);
  EXPECT_NEAR(two.at("error_percent").at("speedup").get<double>(), 100 * (1.47806 / 1.478 - 1), 1e-3);
  // Eq. 12 (Section VI-C): E = 63·8 / (0.0906·7·1024) = 0.77608; 63·16 / (0.236·7·1024) = 0.59587.
  const auto& eight = find_row("worked-examples", "alexnet", "cntk", "profile", 8);
  const auto& sixteen = find_row("worked-examples", "alexnet", "cntk", "profile", 16);
  EXPECT_NEAR(eight.at("derived").at("allreduce_efficiency").get<double>(), 0.77608, 1e-5);
  EXPECT_NEAR(sixteen.at("derived").at("allreduce_efficiency").get<double>(), 0.59587, 1e-5);
  EXPECT_DOUBLE_EQ(eight.at("measured").at("allreduce_efficiency").get<double>(), 0.7761);
  // Ideal t_io from specifications (Section VI-A): 1024·602112 B / (3.5·2^30 B/s) = 0.164062 s vs 0.164 s.
  const auto& io = find_row("worked-examples", "alexnet", "cntk", "spec", 1);
  EXPECT_NEAR(io.at("breakdown").at("io_s").get<double>(), 1024.0 * 602112 / (3.5 * 1073741824.0), 1e-9);
  EXPECT_NEAR(io.at("error_percent").at("io_s").get<double>(), 100 * (0.1640625 / 0.164 - 1), 1e-3);
  // r_u2g from Table V (Section VI-B): GoogLeNet 0.0005/(0.0161+0.1192+0.1856) = 0.15581 % vs 0.16 %;
  // ResNet-50 0.0015/(0.0045+0.0767+0.1355) = 0.69220 % vs 0.59 % (the paper used t_h2d = 0.045 s).
  const auto& g = find_row("r-u2g", "googlenet", "tensorflow", "profile", 1);
  const auto& res = find_row("r-u2g", "resnet50", "tensorflow", "profile", 1);
  EXPECT_NEAR(g.at("derived").at("r_u2g").get<double>(), 0.0005 / 0.3209, 1e-9);
  EXPECT_NEAR(res.at("derived").at("r_u2g").get<double>(), 0.0015 / 0.2167, 1e-9);
  EXPECT_NEAR(res.at("error_percent").at("r_u2g").get<double>(), 100 * (0.0015 / 0.2167 / 0.0059 - 1), 1e-6);

  const auto r = run_cli("reproduce shi-chu-2018 --experiment worked-examples");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("1.478 (1.478 +0.0%)"));
  EXPECT_THAT(r.out, HasSubstr("77.61%"));
}

// CNTK's all-reduce across nodes (eq. transport-3, docs/model.md F1): AlexNet's 8 learnable layers, S = 244,403,360 B,
// conv1 93,184 B first and fc8 16,388,000 B last, on 2 and 4 nodes of 56 Gb/s (7 GB/s, 14 us) with 11.4 GB/s
// copies: 2·(8·14e-6 + S/7e9) + (93184 + 16388000)/11.4e9 = 0.0714992493 s; 6·(…) + the same copies =
// 0.2116063122 s. Eq. 12 from that: 63·8/(0.0714992493·7·1024) and 63·16/(0.2116063122·7·1024).
TEST(Reproduce, CntkAllreduceAcrossNodesIsRootedOnHostCopies) {
  const double s = 244403360.0, copies = (93184.0 + 16388000.0) / 11.4e9, per_node = 8 * 14e-6 + s / 7e9;
  const double eight = 2 * per_node + copies, sixteen = 6 * per_node + copies;
  EXPECT_NEAR(eight, 0.0714992493, 1e-9);
  EXPECT_NEAR(sixteen, 0.2116063122, 1e-9);
  EXPECT_NEAR(find_row("tcomm", "alexnet", "cntk", "profile", 8).at("comm_s").get<double>(), eight, 1e-9);
  EXPECT_NEAR(find_row("tcomm", "alexnet", "cntk", "profile", 16).at("comm_s").get<double>(), sixteen, 1e-9);
  const json& spec16 = find_row("worked-examples", "alexnet", "cntk", "spec", 16);
  EXPECT_NEAR(spec16.at("comm_s").get<double>(), sixteen, 1e-9);
  EXPECT_NEAR(spec16.at("derived").at("allreduce_efficiency").get<double>(), 63.0 * 16 / (sixteen * 7 * 1024), 1e-9);
  // inside a node CNTK keeps NCCL: the ring of the collective model, not this
  const json& four = find_row("tcomm", "alexnet", "cntk", "profile", 4);
  EXPECT_GT(four.at("comm_s").get<double>(), 0.0);
  EXPECT_LT(four.at("comm_s").get<double>(), eight);
}

TEST(Reproduce, StrongScalingDividesTheGlobalBatch) {
  // MXNet GoogLeNet on the P100 cluster keeps 192 samples per iteration: 192/12 = 16 per GPU on 12 GPUs,
  // and the speedup is the throughput ratio (= time ratio, the work per iteration being fixed).
  const auto& one = find_row("mxnet-googlenet", "googlenet", "mxnet", "spec", 1);
  const auto& twelve = find_row("mxnet-googlenet", "googlenet", "mxnet", "spec", 12);
  EXPECT_EQ(one.at("batch_per_gpu"), 192);
  EXPECT_EQ(twelve.at("batch_per_gpu"), 16);
  EXPECT_EQ(twelve.at("nodes"), 3);
  EXPECT_NEAR(twelve.at("speedup").get<double>(),
              one.at("iteration_time_s").get<double>() / twelve.at("iteration_time_s").get<double>(), 1e-9);
}

TEST(Reproduce, TenGigabitVariantOnlySlowsRunsThatCrossNodes) {
  for (const auto& e : all_json().at("experiments")) {
    if (e.at("experiment") != "mxnet-inception-bn" || e.at("variant") != "10gbe") continue;
    const auto& ib = [&]() -> const json& {
      for (const auto& f : all_json().at("experiments"))
        if (f.at("experiment") == "mxnet-inception-bn" && f.at("variant") == "edr-infiniband" && f.at("gpus") == e.at("gpus"))
          return f;
      throw std::runtime_error("no InfiniBand row");
    }();
    if (e.at("nodes") == 1) EXPECT_DOUBLE_EQ(e.at("iteration_time_s").get<double>(), ib.at("iteration_time_s").get<double>());
    else  // 100 Gb/s against 10 Gb/s between nodes
      EXPECT_GT(e.at("comm_s").get<double>(), ib.at("comm_s").get<double>());
  }
}

// The DGX-2 comparison's Section IV-B: 4 loader processes per GPU decode ImageNet (the experiment's
// overrides). The DGX-2's Xeon 8168 decodes 53.3 MP/s per core (models/input/cpus.yaml) and an image is 0.14
// megapixels: one GPU's AlexNet is decode-bound at 4 × 53.3 / 0.14 = 1522.86 images/s (its GPU alone would
// do about 3,400), and 16 GPUs share 48 cores, not 64 workers: 48 × 53.3 / 0.14 = 18274.3. ResNet-50 (about
// 310 images/s per GPU) does not wait for its loaders: it is what predict gives without them. BERT reads
// tokens and is not touched.
TEST(Reproduce, DgxTwoComparisonDecodesOnFourLoaderProcessesPerGpu) {
  auto row = [](const std::string& experiment, const std::string& model, int gpus) -> const json& {
    for (const auto& e : all_json().at("experiments"))
      if (e.at("experiment") == experiment && e.at("system") == "dgx2" && e.at("model") == model && e.at("gpus") == gpus)
        return e;
    throw std::runtime_error("no row " + experiment + " " + model);
  };
  EXPECT_NEAR(row("high-throughput-models", "alexnet", 1).at("throughput_samples_per_s").get<double>(), 4 * 53.3 / 0.14, 1e-6);
  EXPECT_NEAR(row("high-throughput-models", "alexnet", 16).at("throughput_samples_per_s").get<double>(), 48 * 53.3 / 0.14, 1e-6);
  EXPECT_THAT(row("high-throughput-models", "alexnet", 1).at("bottleneck").get<std::string>(), HasSubstr("io"));
  const auto p = run_cli("predict --cluster dgx2 --model resnet50 --framework pytorch-ddp --batch 256 --gpus 1 --format json");
  ASSERT_EQ(p.status, 0) << p.err;
  EXPECT_DOUBLE_EQ(row("high-throughput-models", "resnet50", 1).at("throughput_samples_per_s").get<double>(),
                   json::parse(p.out).at("predictions")[0].at("throughput_samples_per_s").get<double>());
  const auto b = run_cli("predict --cluster dgx2 --model bert-squad --framework pytorch-ddp --batch 32 --gpus 16 --format json");
  ASSERT_EQ(b.status, 0) << b.err;
  EXPECT_DOUBLE_EQ(row("large-models", "bert-squad", 16).at("throughput_samples_per_s").get<double>(),
                   json::parse(b.out).at("predictions")[0].at("throughput_samples_per_s").get<double>());
}

// Each row's breakdown shows the wait for the slowest GPU: CNTK's AlexNet from its Table V profile at 2 GPUs,
// 0.5642 (E[max of 2 normals]) × 0.0635 (cntk's jitter_cv) × (0.1684 + 0.2919) s; none at one GPU.
TEST(Reproduce, RowsShowTheWaitForTheSlowestGpu) {
  EXPECT_NEAR(find_row("tcomm", "alexnet", "cntk", "profile", 2).at("breakdown").at("sync_wait_s").get<double>(),
              0.56419 * 0.0635 * (0.1684 + 0.2919), 1e-6);
  EXPECT_EQ(find_row("table5-single-gpu", "alexnet", "cntk", "profile", 1).at("breakdown").at("sync_wait_s").get<double>(), 0.0);
}

TEST(Reproduce, BusBandwidthFollowsNcclTestsDefinitions) {
  for (const auto& b : all_json().at("bus_bandwidth")) {
    const double n = b.at("gpus").get<double>();
    const double algbw = b.at("size_bytes").get<double>() / b.at("time_s").get<double>() / 1e9;
    EXPECT_NEAR(b.at("algbw_gb_per_s").get<double>(), algbw, 1e-9 * algbw);
    const double factor = b.at("operation") == "allreduce" ? 2 * (n - 1) / n : 1.0;  // doc/PERFORMANCE.md
    EXPECT_NEAR(b.at("busbw_gb_per_s").get<double>(), algbw * factor, 1e-9 * algbw);
  }
}

TEST(Reproduce, TablesHaveThePapersShapes) {
  const auto r = run_cli("reproduce dgx2-comparison");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("throughput ratio exxact-ts4-rtx2080ti / dgx2"));
  EXPECT_THAT(r.out, HasSubstr("throughput ratio pytorch-dataparallel / pytorch-ddp"));
  EXPECT_THAT(r.out, HasSubstr("allreduce bus bandwidth (GB/s) on dgx2"));
  EXPECT_THAT(r.out, HasSubstr("broadcast bus bandwidth (GB/s) on aws-p3dn"));
  const auto s = run_cli("reproduce shi-chu-2018 --experiment tcomm");
  ASSERT_EQ(s.status, 0) << s.err;
  EXPECT_THAT(s.out, HasSubstr("t_comm (s, total / exposed after overlap) by GPU count"));
}

TEST(Reproduce, CsvHasOneLinePerRun) {
  const auto r = run_cli("reproduce dell-p100 --format csv");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1 + 30);  // header + the 30 runs counted above
}

// The bus-bandwidth rows of the CSV, after their own header, carry the JSON's numbers under the same unit
// suffixes as collective's (issue 35: algbw_gb_per_s, busbw_gb_per_s; algbw_gb_s before).
TEST(Reproduce, CsvBusBandwidthRowsCarryTheJsonNumbers) {
  const auto c = run_cli("reproduce dgx2-comparison --experiment bus-bandwidth --format csv");
  ASSERT_EQ(c.status, 0) << c.err;
  const std::string header = "\npaper,experiment,system,operation,gpus,nodes,size_bytes,time_s,algbw_gb_per_s,busbw_gb_per_s\n";
  const auto at = c.out.find(header);
  ASSERT_NE(at, std::string::npos) << c.out.substr(0, 400);
  std::istringstream rows(c.out.substr(at + header.size()));
  const auto& bus = all_json().at("bus_bandwidth");
  std::size_t n = 0;
  for (std::string line; std::getline(rows, line); ++n) {
    std::vector<std::string> f;
    std::istringstream cells(line);
    for (std::string cell; std::getline(cells, cell, ',');) f.push_back(cell);
    ASSERT_EQ(f.size(), 10u) << line;
    const nlohmann::json* match = nullptr;  // the JSON row of the same system, operation, GPU count and size
    for (const auto& b : bus)
      if (b.at("experiment") == "bus-bandwidth" && b.at("system") == f[2] && b.at("operation") == f[3] &&
          b.at("gpus").get<int>() == std::stoi(f[4]) && b.at("size_bytes").get<double>() == std::stod(f[6]))
        match = &b;
    ASSERT_NE(match, nullptr) << line;
    EXPECT_DOUBLE_EQ(std::stod(f[8]), match->at("algbw_gb_per_s").get<double>()) << line;  // both print round-trip digits
    EXPECT_DOUBLE_EQ(std::stod(f[9]), match->at("busbw_gb_per_s").get<double>()) << line;
  }
  EXPECT_EQ(n, 396u);  // every bus-bandwidth row of JsonHasEveryPaper's count
}

TEST(Reproduce, BadScenarioFilesNameFileLineAndKey) {
  const std::string head = "paper: test\nexperiments:\n  - id: x\n    systems: shi-chu-p40\n";
  struct Case {
    std::string body, where, key;
  };
  const std::vector<Case> cases{
      {"    models: alexnet\n    frameworks: cntk\n    gpus: [1]\n    batch: 64\n    colour: red\n", ":9:5", "colour"},
      {"    models: alexnett\n    frameworks: cntk\n    gpus: [1]\n    batch: 64\n", ":5:13", "models"},
      {"    models: alexnet\n    frameworks: cntk\n    gpus: [0]\n    batch: 64\n", ":7:12", "gpus"},
      {"    models: alexnet\n    frameworks: cntk\n    gpus: [1]\n    batch: 64\n    measured:\n"
       "      - {gpus: 1, iteration: \"0.7 furlongs\", source: x}\n",
       ":10:30", "iteration"},
      {"    models: alexnet\n    frameworks: cntk\n    gpus: [1]\n    batch: 64\n    inputs: profile\n", ":9:13", "inputs"},
      {"    models: alexnet\n    frameworks: cntk\n    gpus: [1]\n    batch: 64\n    overrides:\n"
       "      - {input: {data: ram, dataset: imagenet, cpuu: x}}\n",
       ":10:48", "cpuu"},
      {"    models: alexnet\n    frameworks: cntk\n    gpus: [1]\n    batch: 64\n    overrides:\n"
       "      - {jitter_cv: 1.5}\n",
       ":10:21", "jitter_cv"},
  };
  int i = 0;
  for (const auto& c : cases) {
    const auto file = temp_file("bad-scenario-" + std::to_string(i++) + ".yaml", head + c.body);
    const auto r = run_cli("reproduce " + file.string());
    EXPECT_EQ(r.status, 2) << c.body;
    EXPECT_EQ(r.out, "") << c.body;
    EXPECT_THAT(r.err, HasSubstr(file.string() + c.where)) << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.key)) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  const auto unknown = run_cli("reproduce no-such-paper");
  EXPECT_EQ(unknown.status, 2);
  EXPECT_THAT(unknown.err, HasSubstr("unknown paper 'no-such-paper'"));
  EXPECT_EQ(unknown.out, "");
}

TEST(Reproduce, PlotsAreWrittenAsSvg) {
  const auto dir = std::filesystem::temp_directory_path() / ("dlscale-repro-plots-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const auto r = run_cli("reproduce dell-p100 --plots " + dir.string());
  ASSERT_EQ(r.status, 0) << r.err;
  // 4 training experiments x (throughput, speedup)
  int svgs = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    ++svgs;
    const auto text = slurp(e.path());
    EXPECT_EQ(text.rfind("<svg", 0), 0u) << e.path();
    EXPECT_THAT(text, HasSubstr("</svg>"));
  }
  EXPECT_EQ(svgs, 8);
  EXPECT_TRUE(std::filesystem::exists(dir / "dell-p100-mxnet-googlenet-repro-throughput.svg"));
  // a folder that cannot be created: exit 2, nothing on stdout
  const auto bad = run_cli("reproduce dell-p100 --plots /proc/no-such-dir/plots");
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.out, "");
  std::filesystem::remove_all(dir);
}

TEST(Reproduce, GoldenTableVExperiment) {
  // refresh on purpose with tests/golden/refresh.sh
  const auto r = run_cli("reproduce shi-chu-2018 --experiment table5-single-gpu");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, slurp(std::filesystem::path(DLSCALE_SOURCE_DIR) / "tests/golden/reproduce-table5.txt"));
}

}  // namespace
}  // namespace dlscale
