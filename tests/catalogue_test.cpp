// The GPU catalogue (topologies/gpus.yaml): every entry parses and resolves by id and alias, no name is
// given twice, and each entry's datasheet peaks agree with a recomputation from its SM count, the
// per-SM width of its architecture (from NVIDIA's whitepapers, written out here, not read from the file)
// and its boost clock.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "dlscale/error.hpp"
#include "dlscale/gpu.hpp"
#include "dlscale/io.hpp"
#include "support/data_dir.hpp"

namespace dlscale {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// The file as written, read with yaml-cpp directly (not through dlscale's loader): id, aliases, name.
struct Written {
  std::string id, name;
  std::vector<std::string> aliases;
};

std::vector<Written> written_entries() {
  const YAML::Node root = YAML::LoadFile((data_dir() / "topologies" / "gpus.yaml").string());
  std::vector<Written> out;
  for (const auto& item : root["gpus"]) {
    Written w;
    w.id = item["id"].as<std::string>();
    w.name = item["name"].as<std::string>();
    if (item["aliases"])
      for (const auto& a : item["aliases"]) w.aliases.push_back(a.as<std::string>());
    out.push_back(std::move(w));
  }
  return out;
}

// FP32 lanes (CUDA cores) per SM. Pascal GP100 (sm_60) 64 and GP10x (sm_61/62) 128 (Pascal GP100
// whitepaper; GP104 whitepaper); Volta GV100 64 (Volta whitepaper); Turing 64 (Turing whitepaper);
// Ampere GA100 (sm_80) 64 (A100 whitepaper) and GA10x (sm_86/87) 128 (GA102 whitepaper: the doubled FP32
// datapath); Ada 128 (Ada whitepaper); Hopper GH100 128 (H100 whitepaper). 0: not known here.
int fp32_lanes_per_sm(const std::string& arch, int sm) {
  if (arch == "pascal") return sm == 60 ? 64 : 128;
  if (arch == "volta" || arch == "turing") return 64;
  if (arch == "ampere") return sm == 80 ? 64 : 128;
  if (arch == "ada" || arch == "hopper" || arch == "blackwell") return 128;  // Blackwell: 18944 cores / 148 SMs (B200)
  return 0;
}

// Dense fp16 multiply-adds per SM per clock with fp16 accumulate, the ceiling the fp16 peak is measured
// against: Volta and Turing 8 tensor cores x 64 = 512 (Volta/Turing whitepapers); GA100 4 x 256 = 1024 (A100
// whitepaper); GA10x and Ada 4 x 128 = 512 (GA102 whitepaper: RTX 3090 142 TFLOPS = 82 SMs x 512 x 2 x
// 1695 MHz; Ada whitepaper: RTX 4090 330.3 = 128 x 512 x 2 x 2520 MHz); Hopper 4 x 512 = 2048 (H100
// whitepaper); Blackwell 4096 (B200: 2.25 PFLOPS dense on 148 SMs, twice Hopper's per SM per clock).
// Pascal has no tensor cores: GP100 runs half2 on its 64 lanes (128), and on GP10x the catalogue takes mixed precision at the
// fp32 rate (128 lanes; GP102's own fp16 rate is 1/64).
int fp16_fmas_per_sm(const std::string& arch, int sm) {
  if (arch == "pascal") return 128;
  if (arch == "volta" || arch == "turing" || arch == "ada") return 512;
  if (arch == "ampere") return sm == 80 ? 1024 : 512;
  if (arch == "hopper") return 2048;
  if (arch == "blackwell") return 4096;  // twice Hopper's: B200's dense 2.25 PFLOPS = 148 x 4096 x 2 x ~1.86 GHz
  return 0;
}

// Compute capabilities of each architecture (CUDA programming guide, "compute capabilities").
bool sm_matches_architecture(const std::string& arch, int sm) {
  if (arch == "pascal") return sm >= 60 && sm <= 62;
  if (arch == "volta") return sm == 70 || sm == 72;
  if (arch == "turing") return sm == 75;
  if (arch == "ampere") return sm == 80 || sm == 86 || sm == 87;
  if (arch == "ada") return sm == 89;
  if (arch == "hopper") return sm == 90;
  if (arch == "blackwell") return sm == 100 || sm == 101 || sm == 103 || sm == 120;  // 103: Blackwell Ultra (B300, GB300)
  return false;
}

int stamp_ = 0;  // each rewritten test catalogue gets a later modification time

double rel(double got, double want) { return std::fabs(got - want) / want; }

TEST(GpuCatalogue, EveryEntryParsesAndResolvesByIdAndAlias) {
  const auto written = written_entries();
  const auto parsed = load_gpu_catalogue();
  ASSERT_EQ(parsed.size(), written.size());
  ASSERT_GE(written.size(), 30u);  // 18 entries before issue 13, 12 added with it
  for (std::size_t i = 0; i < written.size(); ++i) {
    SCOPED_TRACE(written[i].id);
    EXPECT_EQ(parsed[i].name, written[i].name);
    EXPECT_EQ(find_gpu(written[i].id).name, written[i].name);
    EXPECT_EQ(find_gpu(lower(written[i].name)).name, written[i].name);  // names resolve too, in any case
    for (const auto& a : written[i].aliases) EXPECT_EQ(find_gpu(a).name, written[i].name) << a;
  }
}

// find_gpu reads the one entry it is asked for without parsing the others (issue 17's start-up): what it
// returns must be what the whole catalogue gives, field by field.
TEST(GpuCatalogue, OneEntryReadAloneEqualsTheWholeCatalogues) {
  const auto written = written_entries();
  const auto parsed = load_gpu_catalogue();
  ASSERT_EQ(parsed.size(), written.size());
  for (std::size_t i = 0; i < written.size(); ++i) {
    SCOPED_TRACE(written[i].id);
    const GpuSpec a = find_gpu(written[i].id), &b = parsed[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.architecture, b.architecture);
    EXPECT_EQ(a.sm_version, b.sm_version);
    EXPECT_EQ(a.sm_count, b.sm_count);
    EXPECT_EQ(a.peak_fp32.base(), b.peak_fp32.base());
    EXPECT_EQ(a.peak_fp16.base(), b.peak_fp16.base());
    EXPECT_EQ(a.memory_bandwidth.base(), b.memory_bandwidth.base());
    EXPECT_EQ(a.memory_size.base(), b.memory_size.base());
    EXPECT_EQ(a.boost_clock.base(), b.boost_clock.base());
    EXPECT_EQ(a.source, b.source);
  }
}

// What reading one entry alone must not hide: a name that two entries give is still refused (the whole
// file's check), and an entry's own error still names its place in the file; an error in another entry is
// not this command's business and does not stop it.
TEST(GpuCatalogue, ReadingOneEntryAloneKeepsTheChecksThatConcernIt) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "catalogue-alone";
  fs::create_directories(dir / "topologies");
  const std::string good =
      "  - id: alpha\n    name: Alpha\n    architecture: volta\n    sm: 70\n    sms: 80\n"
      "    peak_fp32: \"15.7 TFLOPS\"\n    peak_fp16: \"125 TFLOPS\"\n    memory_bandwidth: \"900 GB/s\"\n"
      "    memory: \"16 GiB\"\n";
  auto write = [&](const std::string& text) {
    std::ofstream(dir / "topologies" / "gpus.yaml") << "# test catalogue\ngpus:\n" << text;
    fs::last_write_time(dir / "topologies" / "gpus.yaml", fs::file_time_type::clock::now() + std::chrono::seconds(++stamp_));
  };
  const test::DataDir data(dir.string());
  write(good + "  - id: beta\n    name: Beta\n    peak_fp32: \"-3 TFLOPS\"\n");
  EXPECT_EQ(find_gpu("ALPHA").name, "Alpha");
  EXPECT_DOUBLE_EQ(find_gpu("alpha").peak_fp32.base(), 15.7e12);
  try {
    (void)find_gpu("beta");
    ADD_FAILURE() << "a broken entry was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("gpus.yaml:"), std::string::npos) << e.what();
  }
  write(good +
        "  - id: alpha-2\n    aliases: [Alpha]\n    name: Alpha Two\n    architecture: volta\n    sm: 70\n"
        "    peak_fp32: \"15.7 TFLOPS\"\n    peak_fp16: \"125 TFLOPS\"\n    memory_bandwidth: \"900 GB/s\"\n"
        "    memory: \"16 GiB\"\n");
  try {
    (void)find_gpu("alpha");
    ADD_FAILURE() << "a name given twice was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("used twice"), std::string::npos) << e.what();
  }
}

TEST(GpuCatalogue, NoNameIsGivenTwice) {
  // find_gpu takes an id, an alias or a name, in any case: each must pick one entry.
  std::map<std::string, std::string> owner;  // lower-cased name -> the id of the entry that gives it
  for (const auto& w : written_entries()) {
    std::vector<std::string> names = w.aliases;
    names.push_back(w.id);
    names.push_back(w.name);
    std::sort(names.begin(), names.end(), [](const auto& a, const auto& b) { return lower(a) < lower(b); });
    names.erase(std::unique(names.begin(), names.end(), [](const auto& a, const auto& b) { return lower(a) == lower(b); }),
                names.end());
    for (const auto& n : names) {
      const auto [it, fresh] = owner.emplace(lower(n), w.id);
      EXPECT_TRUE(fresh) << "'" << n << "' names both " << it->second << " and " << w.id;
    }
  }
}

// The forgiving lookup (spaces, hyphens and a leading NVIDIA/Tesla/GeForce aside) must pick one entry too:
// the key is recomputed here by hand, letters and digits in lower case, the prefixes cut.
std::string written_key(std::string s) {
  std::string k;
  for (char c : s)
    if (std::isalnum(static_cast<unsigned char>(c))) k += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (bool cut = true; cut;) {
    cut = false;
    for (const std::string p : {"nvidia", "tesla", "geforce"})
      if (k.size() > p.size() && k.rfind(p, 0) == 0) {
        k.erase(0, p.size());
        cut = true;
      }
  }
  return k;
}

TEST(GpuCatalogue, NoTwoEntriesShareALookupKey) {
  std::map<std::string, std::string> owner;  // key -> the id of the entry that gives it
  for (const auto& w : written_entries()) {
    std::vector<std::string> names = w.aliases;
    names.push_back(w.id);
    names.push_back(w.name);
    for (const auto& n : names) {
      const auto [it, fresh] = owner.emplace(written_key(n), w.id);
      EXPECT_TRUE(fresh || it->second == w.id)
          << "'" << n << "' and a name of " << it->second << " are both '" << it->first << "'";
    }
  }
}

TEST(GpuCatalogue, NamesAsNvidiaSmiAndTablesWriteThem) {
  // nvidia-smi's names and published tables' spellings resolve to the entry they mean
  EXPECT_EQ(find_gpu("NVIDIA GeForce RTX 3090").name, find_gpu("rtx-3090").name);
  EXPECT_EQ(find_gpu("NVIDIA A100-SXM4-80GB").name, find_gpu("a100-sxm4-80gb").name);
  EXPECT_EQ(find_gpu("NVIDIA H100 80GB HBM3").name, find_gpu("h100-sxm").name);
  EXPECT_EQ(find_gpu("NVIDIA H100 PCIe").name, find_gpu("h100-pcie").name);
  EXPECT_EQ(find_gpu("NVIDIA RTX A6000").name, find_gpu("rtx-a6000").name);
  EXPECT_EQ(find_gpu("rtx 4090").name, find_gpu("rtx4090").name);
  EXPECT_EQ(find_gpu("A100 80GB PCIe").name, find_gpu("a100-pcie-80gb").name);
  // A name that several boards begin with is not guessed: the error lists them.
  try {
    (void)find_gpu("a100");
    ADD_FAILURE() << "'a100' resolved";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean a100-sxm4-40gb, a100-sxm4-80gb, a100-pcie-40gb, a100-pcie-80gb?"),
              std::string::npos)
        << e.what();
  }
}

TEST(GpuCatalogue, ArchitectureAndComputeCapabilityAgree) {
  for (const auto& g : load_gpu_catalogue()) {
    EXPECT_TRUE(sm_matches_architecture(g.architecture, g.sm_version))
        << g.name << ": " << g.architecture << " sm_" << g.sm_version;
    EXPECT_GE(g.boost_clock, g.base_clock) << g.name;
    EXPECT_GT(g.memory_bandwidth, BytesPerSecond{}) << g.name;
    EXPECT_GT(g.memory_size, Bytes{}) << g.name;
    EXPECT_FALSE(g.source.empty()) << g.name;
  }
}

TEST(GpuCatalogue, Fp32PeakIsSmsTimesLanesTimesTwoTimesBoostClock) {
  int checked = 0;
  for (const auto& g : load_gpu_catalogue()) {
    if (g.sm_count == 0 || !(g.boost_clock > Hertz{})) continue;
    SCOPED_TRACE(g.name);
    const int lanes = fp32_lanes_per_sm(g.architecture, g.sm_version);
    ASSERT_GT(lanes, 0) << "no FP32 width known for " << g.architecture << " sm_" << g.sm_version << ": add it to this test";
    const double want = g.sm_count * lanes * 2.0 * in_megahertz(g.boost_clock) * 1e6 / 1e12;  // TFLOP/s, an FMA = 2
    EXPECT_LE(rel(in_teraflops_per_second(g.peak_fp32), want), 0.03)
        << in_teraflops_per_second(g.peak_fp32) << " TFLOPS in the file, " << want << " from " << g.sm_count << " SMs x " << lanes
        << " x 2 x " << in_megahertz(g.boost_clock) << " MHz";
    ++checked;
  }
  EXPECT_GE(checked, 30);  // every entry has its SMs and clocks
}

TEST(GpuCatalogue, Fp16PeakIsDenseWithFp32AccumulateAndHalvedOnGeForce) {
  // peak_fp16 is the dense fp16 rate with fp32 accumulate. Against the fp16-accumulate ceiling
  // SMs x FMAs/SM x 2 x boost clock: data-centre and workstation boards run fp32 accumulate at the full
  // rate (ratio 1; Hopper's datasheet tensor figures assume a clock below the boost clock: 0.87-0.93, and
  // so does the TITAN V's "110 TFLOPS": 0.92), GeForce boards at half (ratio 0.5). A sparsity figure left
  // undivided would give 2 (or 1 on GeForce). The halving is the tensor cores': a GeForce Pascal board (GTX
  // 1080 Ti) has none, and its peak_fp16 is the fp32 rate, like the P40's (ratio 1).
  int checked = 0;
  for (const auto& g : load_gpu_catalogue()) {
    if (g.sm_count == 0 || !(g.boost_clock > Hertz{})) continue;
    SCOPED_TRACE(g.name);
    const int fmas = fp16_fmas_per_sm(g.architecture, g.sm_version);
    ASSERT_GT(fmas, 0) << "no fp16 width known for " << g.architecture;
    const double ceiling = g.sm_count * fmas * 2.0 * in_megahertz(g.boost_clock) * 1e6 / 1e12;
    const double ratio = in_teraflops_per_second(g.peak_fp16) / ceiling;
    if (g.name.rfind("GeForce", 0) == 0 && g.architecture != "pascal") {
      EXPECT_NEAR(ratio, 0.5, 0.015) << "ceiling " << ceiling << " TFLOPS";
    } else {
      EXPECT_GE(ratio, 0.85) << "ceiling " << ceiling << " TFLOPS";
      EXPECT_LE(ratio, 1.03) << "ceiling " << ceiling << " TFLOPS";
    }
    ++checked;
  }
  EXPECT_GE(checked, 30);
}

TEST(GpuCatalogue, Bf16AndTf32FromAmpereOnAtTheFp16RateAndHalfOfIt) {
  // bf16 and tf32 tensor math came with Ampere (sm_80). On every part since, dense bf16 with fp32
  // accumulate runs at the fp16 rate and tf32 at half of it (A100 whitepaper Table 1; GA102 and Ada
  // whitepaper appendices; H100 datasheet).
  for (const auto& g : load_gpu_catalogue()) {
    SCOPED_TRACE(g.name);
    if (g.sm_version < 80) {
      EXPECT_EQ(g.peak_bf16, FlopsPerSecond{});
      EXPECT_EQ(g.peak_tf32, FlopsPerSecond{});
      continue;
    }
    const double fp16 = in_teraflops_per_second(g.peak_fp16);
    EXPECT_LE(rel(in_teraflops_per_second(g.peak_bf16), fp16), 1e-9);
    EXPECT_LE(rel(in_teraflops_per_second(g.peak_tf32), fp16 / 2), 0.03);
  }
}

TEST(GpuCatalogue, TheBoardsAddedForTheKernelModel) {
  // Issue 13's list; each by its id and by a name nvidia-smi or a cloud provider uses.
  for (const auto& [id, alias] : std::vector<std::pair<std::string, std::string>>{{"a10", "NVIDIA-A10"},
                                                                                  {"a30", "nvidia-a30"},
                                                                                  {"a40", "nvidia-a40"},
                                                                                  {"l4", "nvidia-l4"},
                                                                                  {"l40s", "nvidia-l40s"},
                                                                                  {"t4", "tesla-t4"},
                                                                                  {"a100-pcie-40gb", "a100-pcie"},
                                                                                  {"a100-pcie-80gb", "a100-80gb-pcie"},
                                                                                  {"h100-nvl", "h100-nvl-94gb"},
                                                                                  {"rtx-6000-ada", "rtx6000ada"},
                                                                                  {"rtx-a5000", "rtxa5000"},
                                                                                  {"rtx-3080", "rtx3080"}}) {
    SCOPED_TRACE(id);
    const GpuSpec g = find_gpu(id);
    EXPECT_EQ(find_gpu(alias).name, g.name);
    EXPECT_GT(g.sm_count, 0);
  }
  // Boards that published training benchmarks (Lambda's PyTorch benchmark) include, by id and by another name.
  for (const auto& [id, alias] : std::vector<std::pair<std::string, std::string>>{{"titan-rtx", "NVIDIA TITAN RTX"},
                                                                                  {"quadro-rtx-6000", "Quadro RTX 6000"},
                                                                                  {"titan-v", "NVIDIA TITAN V"},
                                                                                  {"gtx-1080ti", "NVIDIA GeForce GTX 1080 Ti"},
                                                                                  {"rtx-3090-ti", "rtx3090ti"},
                                                                                  {"rtx-3080-ti", "NVIDIA GeForce RTX 3080 Ti"},
                                                                                  {"rtx-3070", "rtx3070"},
                                                                                  {"rtx-a4000", "NVIDIA RTX A4000"},
                                                                                  {"rtx-a4500", "rtxa4500"},
                                                                                  {"rtx-a5500", "rtxa5500"},
                                                                                  {"rtx-4080", "NVIDIA GeForce RTX 4080"},
                                                                                  {"rtx-4070-ti", "rtx4070ti"},
                                                                                  {"v100-pcie-32gb", "Tesla V100-PCIE-32GB"},
                                                                                  {"v100-pcie", "v100-pcie-16gb"},
                                                                                  {"v100-sxm2", "v100-sxm2-32gb"},
                                                                                  {"v100-sxm2-16gb", "Tesla V100-SXM2-16GB"}}) {
    SCOPED_TRACE(id);
    const GpuSpec g = find_gpu(id);
    EXPECT_EQ(find_gpu(alias).name, g.name);
    EXPECT_GT(g.sm_count, 0);
  }
  // The V100 memory variants: each id names the memory it says, and the PCIe boards differ in nothing else.
  EXPECT_EQ(find_gpu("v100-pcie-16gb").memory_size, find_gpu("v100-sxm2-16gb").memory_size);
  EXPECT_EQ(find_gpu("v100-pcie-32gb").memory_size, find_gpu("v100-sxm2-32gb").memory_size);
  EXPECT_EQ(find_gpu("v100-pcie-32gb").memory_size, find_gpu("v100-pcie-16gb").memory_size * 2.0);
  EXPECT_EQ(find_gpu("v100-pcie-32gb").peak_fp16, find_gpu("v100-pcie-16gb").peak_fp16);
  EXPECT_EQ(find_gpu("v100-pcie-32gb").memory_bandwidth, find_gpu("v100-pcie-16gb").memory_bandwidth);
  // Products of the same die differ only where the datasheets say: the A100 PCIe boards keep the SXM4's
  // 108 SMs and peaks; the 80 GB PCIe board's HBM2e is slower than the SXM4's (1935 vs 2039 GB/s).
  const GpuSpec pcie80 = find_gpu("a100-pcie-80gb"), sxm80 = find_gpu("a100-sxm4-80gb");
  EXPECT_EQ(pcie80.sm_count, sxm80.sm_count);
  EXPECT_EQ(pcie80.peak_fp16, sxm80.peak_fp16);
  EXPECT_LT(pcie80.memory_bandwidth, sxm80.memory_bandwidth);
}

TEST(GpuCatalogue, BlackwellUltraPerGpuFiguresAreTheSystemTotalsDivided) {
  // NVIDIA publishes Blackwell Ultra's figures per system (recalled, as the file's comments say): the tensor
  // ones with sparsity, so dense per GPU is total / GPUs / 2. Worked by hand, not read from the file:
  //   HGX B300, 8 GPUs: FP8 72 PFLOPS -> 72,000 / 8 / 2 = 4,500 TFLOPS; FP16/BF16 36 -> 2,250; TF32 18 -> 1,125;
  //     FP32 600 TFLOPS / 8 = 75; HBM3e 64 TB/s / 8 = 8 TB/s; 2.3 TB / 8 = 288 GB (2,304 / 8);
  //     NVLink 14.4 TB/s / 8 = 1.8 TB/s = 18 links of 100 GB/s.
  //   GB300 NVL72, 72 GPUs: FP8 720 PFLOPS -> 720,000 / 72 / 2 = 5,000; FP16/BF16 360 -> 2,500; TF32 180 -> 1,250;
  //     FP32 6 PFLOPS / 72 = 83.3; HBM3e 576 TB/s / 72 = 8 TB/s; 20.7 TB / 72 = 288 GB; NVLink 130 TB/s / 72
  //     = 1.8 TB/s = 18 links.
  struct Want {
    std::string id;
    double fp8, bf16, tf32, fp32, tbs, gb;
  };
  for (const auto& w : {Want{"b300", 4500, 2250, 1125, 75, 8, 288}, Want{"gb300", 5000, 2500, 1250, 83.3, 8, 288}}) {
    SCOPED_TRACE(w.id);
    const GpuSpec g = find_gpu(w.id);
    EXPECT_EQ(g.architecture, "blackwell");  // the kernel model's Blackwell parameters apply
    EXPECT_EQ(g.sm_version, 103);
    EXPECT_NEAR(in_teraflops_per_second(g.peak_fp8), w.fp8, 1e-9);
    EXPECT_NEAR(in_teraflops_per_second(g.peak_bf16), w.bf16, 1e-9);
    EXPECT_NEAR(in_teraflops_per_second(g.peak_fp16), w.bf16, 1e-9);
    EXPECT_NEAR(in_teraflops_per_second(g.peak_tf32), w.tf32, 1e-9);
    EXPECT_NEAR(in_teraflops_per_second(g.peak_fp32), w.fp32, 1e-9);
    EXPECT_NEAR(in_gigabytes_per_second(g.memory_bandwidth), w.tbs * 1000, 1e-9);
    EXPECT_NEAR(in_bytes(g.memory_size), w.gb * 1073741824.0, 1.0);  // the catalogue reads NVIDIA's "GB" as GiB
    EXPECT_EQ(g.nvlink_count, 18);
    EXPECT_EQ(g.nvlink_generation, 5);
  }
  // Blackwell Ultra kept Blackwell's dense BF16/FP16, TF32 and FP8 rates (it raised FP4, which the catalogue
  // does not hold) and grew the memory from 180/186 GB to 288 GB.
  for (const auto& [ultra, base] : std::vector<std::pair<std::string, std::string>>{{"b300", "b200"}, {"gb300", "gb200"}}) {
    SCOPED_TRACE(ultra);
    const GpuSpec u = find_gpu(ultra), b = find_gpu(base);
    EXPECT_EQ(u.peak_bf16, b.peak_bf16);
    EXPECT_EQ(u.peak_fp8, b.peak_fp8);
    EXPECT_EQ(u.peak_tf32, b.peak_tf32);
    EXPECT_EQ(u.memory_bandwidth, b.memory_bandwidth);
    EXPECT_GT(u.memory_size, b.memory_size * 1.5);
  }
  EXPECT_EQ(find_gpu("NVIDIA B300 SXM6 AC").name, find_gpu("b300").name);
  EXPECT_EQ(find_gpu("gb300-nvl72").name, find_gpu("gb300").name);
  EXPECT_EQ(find_gpu("B300").name, find_gpu("b300").name);  // "b300" is not a prefix guess between the two
}

// A power limit after the name (gpus.yaml rated_power, clock_at_power; docs/compute-model.md, G1). By hand: HGX
// B100 at 700 W gave 1,750 dense BF16 TFLOPS a GPU where HGX B200 at 1,000 W gives 2,250, so the clock's share at
// 700 W is 0.7778; at 750 W, a sixth of the way to 1,000 W, 0.7778 + (1 - 0.7778) / 6 = 0.81483: 1,833.4 TFLOPS.
TEST(GpuCatalogue, APowerLimitLowersTheClockAsTheDatasheetsDocument) {
  const GpuSpec full = find_gpu("b200"), capped = find_gpu("b200@750W");
  const double share = 0.7778 + (1.0 - 0.7778) * 50.0 / 300.0;
  EXPECT_NEAR(share, 0.81483, 1e-5);
  EXPECT_NEAR(in_teraflops_per_second(capped.peak_bf16), 2250.0 * share, 1e-6);
  EXPECT_NEAR(in_teraflops_per_second(capped.peak_fp8), 4500.0 * share, 1e-6);
  EXPECT_NEAR(in_teraflops_per_second(capped.peak_fp32), 75.0 * share, 1e-6);
  EXPECT_NEAR(capped.boost_clock.base(), full.boost_clock.base() * share, 1e-3);  // the exponentials slow with it
  EXPECT_EQ(capped.memory_bandwidth, full.memory_bandwidth);                      // HBM keeps its rate
  EXPECT_EQ(capped.sm_count, full.sm_count);
  EXPECT_EQ(capped.name, full.name + " at 750 W");
  // at the documented point itself, written as people do, and the same through the whole catalogue's path
  EXPECT_NEAR(in_teraflops_per_second(find_gpu("B200 @ 700 w").peak_bf16), 2250.0 * 0.7778, 1e-6);
  EXPECT_NEAR(in_teraflops_per_second(find_gpu("NVIDIA B200@700W").peak_bf16), 2250.0 * 0.7778, 1e-6);
  EXPECT_NEAR(in_teraflops_per_second(find_gpu("b200@0.7kW").peak_bf16), 2250.0 * 0.7778, 1e-6);
  // GB200 is rated at 1,200 W; at 1,000 W it has B200's 2,250 (0.9 of 2,500)
  EXPECT_NEAR(in_teraflops_per_second(find_gpu("gb200@1000W").peak_bf16), 2250.0, 1e-6);
  // at or above the rated power nothing changes
  EXPECT_EQ(find_gpu("b200@1000W").peak_bf16, full.peak_bf16);
  EXPECT_EQ(find_gpu("b200@1200W").peak_bf16, full.peak_bf16);
  // below the lowest documented point, on a GPU with nothing documented, or not a power with its unit: an error
  EXPECT_THROW((void)find_gpu("b200@500W"), InputError);
  EXPECT_THROW((void)find_gpu("h100-sxm@500W"), InputError);
  EXPECT_THROW((void)find_gpu("b200@fast"), InputError);
  EXPECT_THROW((void)find_gpu("b200@750"), InputError);  // a bare number: watts must be said
  EXPECT_THROW((void)find_gpu("b200@-750W"), InputError);
}

}  // namespace
}  // namespace dlscale
