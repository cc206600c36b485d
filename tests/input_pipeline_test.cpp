// The input pipeline (docs/input-formats.md, "Input pipeline"): storage tiers, CPU decode, GPU decode, synthetic
// data, and what a profile's measured io means. Every expected value is worked by hand in the comments.
#include <gtest/gtest.h>

#include "dlscale/error.hpp"
#include "dlscale/input_pipeline.hpp"
#include "dlscale/io.hpp"
#include "dlscale/predict.hpp"
#include "support/three_layer.hpp"

#include "support/one_gbps.hpp"
#include "support/p40.hpp"

namespace dlscale {
namespace {

using test::OneGBps;  // tests/support/one_gbps.hpp

// The three-layer scenario (tests/support/three_layer.hpp): GPU side t_gpu(1) = 0.01 + 0.3 + 0.6 + 0.06 =
// 0.97 s, 1.07 s on 4 GPUs of a node (predict_test.cpp works it out); batch 10 per GPU. Its reader reads
// samples of 100 kB and 0.5 megapixels from the page cache at 1 GB/s; one core decodes 10 MP/s.
Scenario piped(int cores, int workers_per_gpu = 0) {
  Scenario sc = test::three_layer_scenario();
  sc.collectives = std::make_shared<OneGBps>();
  InputPipeline ip;
  ip.data = DataSource::ram;
  ip.page_cache = gigabytes_per_second(1);
  ip.dataset = "hand";
  ip.dataset_size = gigabytes(1);
  ip.sample_size = kilobytes(100);
  ip.sample_megapixels = 0.5;
  ip.cpu = "hand CPU";
  ip.decode_mpix_per_core = 10.0;
  ip.cores = cores;
  ip.workers_per_gpu = workers_per_gpu;
  sc.cluster.input = ip;
  return sc;
}

// One core: decoding 4 GPUs × 10 samples × 0.5 MP at 10 MP/s takes 20 / 10 = 2.0 s; reading them
// 40 × 100 kB / 1 GB/s = 4 ms. The reader (2.0 s) is slower than the GPU side (1.07 s): t_iter = 2.0 s (eq. 4),
// the reader-bound loss 2.0 − 1.07 = 0.93 s. One GPU: decode 0.5 s < 0.97 s, hidden.
TEST(InputPipeline, ReaderSlowerThanTheGpusBoundsTheIteration) {
  const Predictor p(piped(1));
  const auto one = p.predict(1);
  EXPECT_NEAR(in_seconds(one.iteration_time), 0.97, 1e-12);
  EXPECT_NEAR(in_seconds(one.breakdown.io), 0.5, 1e-12);
  EXPECT_EQ(one.breakdown.reader_loss, Seconds{});
  const auto four = p.predict(4);
  EXPECT_NEAR(in_seconds(four.breakdown.io_decode), 2.0, 1e-12);
  EXPECT_NEAR(in_seconds(four.breakdown.io_storage), 0.004, 1e-12);
  EXPECT_NEAR(in_seconds(four.iteration_time), 2.0, 1e-12);
  EXPECT_NEAR(in_seconds(four.breakdown.reader_loss), 0.93, 1e-12);
  EXPECT_EQ(four.bottleneck, Bottleneck::io);
  EXPECT_EQ(four.bottleneck_resource.str(), "input decode on the CPU (1 cores of hand CPU per node)");
  EXPECT_NEAR(four.speedup, 4 * 0.97 / 2.0, 1e-12);
}

// Loader workers per GPU cap the cores used: 1 worker × 4 GPUs = 4 of 8 cores → decode 20 MP / (4 × 10 MP/s)
// = 0.5 s, hidden behind 1.07 s. With every core (0): 20 / 80 = 0.25 s.
TEST(InputPipeline, LoaderWorkersPerGpuCapTheDecodingCores) {
  const auto capped = Predictor(piped(8, 1)).predict(4);
  EXPECT_NEAR(in_seconds(capped.breakdown.io_decode), 0.5, 1e-12);
  EXPECT_NEAR(in_seconds(capped.iteration_time), 1.07, 1e-12);
  const auto all = Predictor(piped(8, 0)).predict(4);
  EXPECT_NEAR(in_seconds(all.breakdown.io_decode), 0.25, 1e-12);
}

// A network file system of 4 GB/s in all, 1.25 GB/s per node: a node gets min(1.25, 4/n) GB/s, so it
// saturates from n = 4 / 1.25 = 3.2 nodes on. 8 GPUs × 256 samples × 110 kB = 225.28 MB per node and
// iteration: 225.28 MB / 1.25 GB/s = 0.180224 s up to 3 nodes, / 1.0 GB/s = 0.22528 s at 4, / 0.5 GB/s =
// 0.45056 s at 8.
TEST(InputPipeline, SharedFileSystemSaturatesAtNNodes) {
  InputPipeline ip;
  ip.data = DataSource::nfs;
  ip.first_epoch = true;
  ip.nfs_aggregate = gigabytes_per_second(4);
  ip.nfs_per_node = gigabytes_per_second(1.25);
  ip.page_cache = gigabytes_per_second(10);
  ip.sample_size = kilobytes(110);
  ip.dataset_size = gigabytes(147.9);
  for (auto [nodes, expect] : {std::pair{1, 0.180224}, {2, 0.180224}, {3, 0.180224}, {4, 0.22528}, {8, 0.45056}}) {
    const ReaderTime r = reader_time(ip, 256, 8, nodes);
    EXPECT_EQ(r.tier, DataSource::nfs);
    EXPECT_NEAR(in_seconds(r.storage), expect, 1e-12) << nodes << " nodes";
    EXPECT_NEAR(in_seconds(r.reader), expect, 1e-12) << nodes << " nodes";  // nothing to decode
  }
  EXPECT_NEAR(in_gigabytes_per_second(eq::shared_read_bandwidth(gigabytes_per_second(4), BytesPerSecond{}, 8)), 0.5, 1e-12);
}

// Later epochs read the page cache when the dataset fits in a node's RAM (147.9 GB ≤ 256 GB: 225.28 MB / 10 GB/s
// = 22.528 ms), and the file system again when it does not (64 GB: 0.45056 s at 8 nodes, as above).
TEST(InputPipeline, LaterEpochsReadThePageCacheWhenTheDatasetFits) {
  InputPipeline ip;
  ip.data = DataSource::nfs;
  ip.nfs_aggregate = gigabytes_per_second(4);
  ip.nfs_per_node = gigabytes_per_second(1.25);
  ip.page_cache = gigabytes_per_second(10);
  ip.sample_size = kilobytes(110);
  ip.dataset_size = gigabytes(147.9);
  ip.ram = gigabytes(256);
  const ReaderTime fits = reader_time(ip, 256, 8, 8);
  EXPECT_EQ(fits.tier, DataSource::ram);
  EXPECT_NEAR(in_seconds(fits.storage), 0.022528, 1e-12);
  ip.ram = gigabytes(64);
  const ReaderTime spills = reader_time(ip, 256, 8, 8);
  EXPECT_EQ(spills.tier, DataSource::nfs);
  EXPECT_NEAR(in_seconds(spills.storage), 0.45056, 1e-12);
}

// DALI: the GPU decodes its own 10 × 0.5 MP at 100 MP/s = 0.05 s, added to the GPU side (0.97 + 0.05 =
// 1.02 s on one GPU); the CPU decodes nothing.
TEST(InputPipeline, GpuDecodingCostsGpuTimeInstead) {
  Scenario sc = piped(1);
  sc.cluster.input->gpu_decode_mpix = 100.0;
  const auto one = Predictor(std::move(sc)).predict(1);
  EXPECT_EQ(one.breakdown.io_decode, Seconds{});
  EXPECT_NEAR(in_seconds(one.breakdown.gpu_decode), 0.05, 1e-12);
  EXPECT_NEAR(in_seconds(one.iteration_time), 1.02, 1e-12);
}

// Synthetic data: no reader and no host-to-GPU copy, so t_iter(1) = 0.3 + 0.6 + 0.06 = 0.96 s.
TEST(InputPipeline, SyntheticDataHasNoReaderAndNoCopy) {
  Scenario sc = piped(1);
  sc.cluster.input->data = DataSource::synthetic;
  const auto one = Predictor(std::move(sc)).predict(1);
  EXPECT_EQ(one.breakdown.io, Seconds{});
  EXPECT_EQ(one.breakdown.h2d, Seconds{});
  EXPECT_NEAR(in_seconds(one.iteration_time), 0.96, 1e-12);
}

// A framework that reads bytes (`io: {reader: bytes}`, CNTK in Shi & Chu) keeps Section IV-A's reader on a
// cluster with a pipeline: 4 GPUs × 10 samples × 1 MB over the 100 MB/s page cache = 0.4 s per node, hidden
// behind the GPU side's 1.07 s (the pipeline's one core would have taken 2.0 s). Synthetic data stays
// synthetic: no reader, no copy.
TEST(InputPipeline, AFrameworkThatReadsBytesKeepsSectionIVAsReader) {
  Scenario sc = piped(1);
  sc.strategy.reads_bytes = true;
  EXPECT_EQ(input_pipeline(sc), nullptr);
  const auto four = Predictor(sc).predict(4);
  EXPECT_NEAR(in_seconds(four.breakdown.io), 0.4, 1e-12);
  EXPECT_EQ(four.breakdown.io_decode, Seconds{});
  EXPECT_NEAR(in_seconds(four.iteration_time), 1.07, 1e-12);
  sc.cluster.input->data = DataSource::synthetic;
  EXPECT_NE(input_pipeline(sc), nullptr);
  const auto one = Predictor(std::move(sc)).predict(1);
  EXPECT_EQ(one.breakdown.io, Seconds{});
  EXPECT_EQ(one.breakdown.h2d, Seconds{});
}

// A token network's samples are token ids, not the section's images: Section IV-A's reader of its own bytes.
// BERT-base (sequence 128, 512 B of int32 ids a sample) with MXNet on the shipped Shi & Chu node (whose input
// section decodes ImageNet on 24 cores): 4 GPUs × 32 samples × 512 B / 3.5 GiB/s = 17.4 us, where the
// section would have charged 128 JPEGs of 0.14 MP on 24 cores of 43.4 MP/s, 17.2 ms. Synthetic data: none.
TEST(InputPipeline, ATokenNetworkReadsItsOwnBytesNotTheSectionsImages) {
  Scenario sc = test::p40_scenario("bert-base", "mxnet", 32);
  ASSERT_TRUE(sc.cluster.input.has_value());
  EXPECT_EQ(input_pipeline(sc), nullptr);
  const auto four = Predictor(sc).predict(4);
  EXPECT_NEAR(in_seconds(four.breakdown.io), 4.0 * 32 * 512 / (3.5 * 1073741824.0), 1e-12);
  EXPECT_EQ(four.breakdown.io_decode, Seconds{});
  sc.cluster.input->data = DataSource::synthetic;
  EXPECT_NE(input_pipeline(sc), nullptr);
  EXPECT_EQ(Predictor(std::move(sc)).predict(4).breakdown.io, Seconds{});
}

// The shipped servers decode ImageNet on every core of a node (their `input:` sections). A DGX-2's 48 Xeon
// 8168 cores at 53.3 MP/s each (an estimate in models/input/cpus.yaml) feed 48 × 53.3 / 0.14 = 18,274 images/s:
// AlexNet in fp16 at 256 per GPU on its 16 V100s (4,096 images an iteration, decoded in
// 4096 × 0.14 / (48 × 53.3) = 0.22414 s) is bound there, far below what the GPUs compute; ResNet-50 at 32 per
// GPU (512 images, 28.0 ms of decode) is not.
TEST(InputPipeline, ShippedServersDecodeOnEveryCoreOfTheNode) {
  const auto scenario = [](const char* model, Precision p, int batch) {
    Scenario sc = test::shipped_scenario("dgx2", model, "pytorch-ddp", batch);
    sc.compute.precision = p;
    return sc;
  };
  Scenario alexnet = scenario("alexnet", Precision::fp16, 256);
  ASSERT_NE(input_pipeline(alexnet), nullptr);
  const auto sixteen = Predictor(alexnet).predict(16);
  const double decode = 4096 * 0.14 / (48 * 53.3);
  EXPECT_NEAR(in_seconds(sixteen.breakdown.io_decode), decode, 1e-9);
  EXPECT_NEAR(in_seconds(sixteen.iteration_time), decode, 1e-9);
  EXPECT_NEAR(sixteen.throughput_samples_per_s, 4096 / decode, 1e-6);
  const auto resnet = Predictor(scenario("resnet50", Precision::fp32, 32)).predict(16);
  EXPECT_NEAR(in_seconds(resnet.breakdown.io_decode), 512 * 0.14 / (48 * 53.3), 1e-9);
  EXPECT_GT(in_seconds(resnet.iteration_time), 3 * in_seconds(resnet.breakdown.io_decode));
}

// The shipped Shi & Chu cluster and frameworks, AlexNet at 1024 per GPU on the 4 GPUs of a node. MXNet decodes
// on the node's 24 cores: max(storage 4096 × (147.9 GB / 1,281,167) / 3.5 GiB/s = 0.1258 s, decode
// 4096 × 0.14 MP / (24 × 43.4 MP/s) = 0.55054 s) = 0.55054 s. CNTK reads bytes: 4096 × 224·224·3·4 B /
// 3.5 GiB/s = 0.65625 s, the paper's 0.164·N_g (Section VI-B).
TEST(InputPipeline, ShiChuClusterFeedsMxnetThroughThePipelineAndCntkThroughBytes) {
  auto io4 = [](const char* framework) {
    return in_seconds(Predictor(test::p40_scenario("alexnet", framework, 1024)).predict(4).breakdown.io);
  };
  EXPECT_NEAR(io4("mxnet"), 4096 * 0.14 / (24 * 43.4), 1e-9);
  EXPECT_NEAR(io4("tensorflow"), 4096 * 0.14 / (24 * 43.4), 1e-9);
  EXPECT_NEAR(io4("cntk"), 4096.0 * 224 * 224 * 3 * 4 / (3.5 * 1073741824.0), 1e-9);
}

// A profile whose io is the exposed wait (io_measures: exposed): the one-GPU reader took t_gpu + wait =
// 0.97 + 0.2 = 1.17 s, so one GPU runs 1.17 s (reader-bound) and 4 GPUs of a node 4 × 1.17 = 4.68 s. Read as
// the reader's own time (the default) the same 0.2 s hides behind 0.97 s.
TEST(InputPipeline, ProfileIoCanBeTheExposedWait) {
  Scenario sc = test::three_layer_scenario();
  sc.collectives = std::make_shared<OneGBps>();
  sc.measured_layers.reset();
  Profile pr;
  pr.model = "three";
  pr.batch_per_gpu = 10;
  pr.single_gpu = PhaseTimes{seconds(0.2), seconds(0.01), seconds(0.3), seconds(0.6), seconds(0.06)};
  sc.profile = pr;
  EXPECT_NEAR(in_seconds(Predictor(sc).predict(1).iteration_time), 0.97, 1e-12);
  sc.profile->io_is_exposed_wait = true;
  const Predictor p(sc);
  EXPECT_NEAR(in_seconds(p.predict(1).iteration_time), 1.17, 1e-12);
  EXPECT_NEAR(in_seconds(p.predict(4).iteration_time), 4.68, 1e-12);
}

// Table V's Caffe-MPI AlexNet profile (io_measures: exposed): the GPU waited 0.0002 s of a 0.5866 s iteration,
// within 1 %: the reader kept up, and its time is the model's, Section IV-A's decoded bytes over the page cache:
// 4 GPUs × 1024 × 602,112 B / 3.5 GiB/s = 0.65625 s, above the GPUs' 0.5866 s (eq. 4: the iteration is the
// reader's). Before, 4 × 0.0002 s was taken for the reader and the run was compute-bound.
TEST(InputPipeline, AProfilesNegligibleWaitLeavesTheReaderToTheModel) {
  Scenario sc = test::p40_scenario("alexnet", "caffe-mpi", 1024);
  sc.profile = load_profile(resolve(DataKind::profile, "table5-alexnet-caffe-mpi", "--profile"));
  ASSERT_TRUE(sc.profile->io_is_exposed_wait);
  EXPECT_TRUE(profile_reader_modelled(sc));
  const Predictor p(sc);
  // the GPU side with Caffe-MPI's 0.2 ms hand-over of the prefetched batch (eq. F2b), above the model's 0.164 s read
  EXPECT_NEAR(in_seconds(p.predict(1).iteration_time), 0.0526 + 0.1718 + 0.356 + 0.0062 + 0.0002, 1e-12);
  const Prediction four = p.predict(4);
  EXPECT_NEAR(in_seconds(four.breakdown.io), 4 * 1024 * 602112.0 / (3.5 * 1073741824.0), 1e-9);
  EXPECT_NEAR(in_seconds(four.iteration_time), in_seconds(four.breakdown.io), 1e-12);
  EXPECT_EQ(four.bottleneck, Bottleneck::io);
  // The same wait read as the reader's own time (the default) keeps 4 × 0.0002 s.
  sc.profile->io_is_exposed_wait = false;
  EXPECT_FALSE(profile_reader_modelled(sc));
  EXPECT_NEAR(in_seconds(Predictor(sc).predict(4).breakdown.io), 4 * 0.0002, 1e-12);
}

TEST(InputPipeline, ProfileFileSaysWhatItsIoMeasured) {
  const std::string body =
      "model: alexnet\nframework: cntk\nbatch_per_gpu: 1024\n"
      "single_gpu: {io: \"0.2 s\", h2d: \"0.05 s\", forward: \"0.17 s\", backward: \"0.29 s\", update: \"0.009 s\"}\n";
  EXPECT_FALSE(parse_profile(body, "old.yaml").io_is_exposed_wait);  // files written before the key: the reader's time
  EXPECT_FALSE(parse_profile("io_measures: reader\n" + body, "r.yaml").io_is_exposed_wait);
  EXPECT_TRUE(parse_profile("io_measures: exposed\n" + body, "e.yaml").io_is_exposed_wait);
}

// The shipped data: the Shi & Chu cluster with an input section reads AlexNet's 4 × 1024 samples of 0.14 MP on
// 24 Broadwell cores at 43.4 MP/s each: 4096 × 0.14 / (24 × 43.4) = 0.55054 s, the 0.55 s of Section VI-B that
// the rate was derived from (models/input/cpus.yaml).
TEST(InputPipeline, ClusterInputSectionLoadsTheShippedRates) {
  const std::string text =
      "name: c\nnodes: 1\ngpus_per_node: 4\ngpu: p40\nhost_to_gpu: {pinned: \"11.4 GB/s\"}\n"
      "intra_node: {bandwidth: \"6 GB/s\"}\nstorage: {disk: \"750 MiB/s\", page_cache: \"3.5 GiB/s\"}\n"
      "input: {data: ram, dataset: imagenet, cpu: xeon-e5-2650v4, cores: 24, ram: \"256 GB\"}\n";
  const Cluster c = parse_cluster(text, "c.yaml");
  ASSERT_TRUE(c.input.has_value());
  EXPECT_DOUBLE_EQ(c.input->decode_mpix_per_core, 43.4);
  EXPECT_DOUBLE_EQ(c.input->sample_megapixels, 0.14);
  const ReaderTime r = reader_time(*c.input, 1024, 4, 1);
  EXPECT_NEAR(in_seconds(r.decode), 4096 * 0.14 / (24 * 43.4), 1e-12);
  EXPECT_NEAR(in_seconds(r.decode), 0.55, 0.001);
}

// The measured entry (models/input/cpus.yaml, xeon-emerald-rapids-kvm: one core ran torchvision's pipeline at
// 321.42 images/s of 0.1875 MP, 60.27 MP/s) predicts what all 16 cores of that machine did together, measured
// apart (tests/data/h100-pytorch/decode.json: 5,293.4 images/s from 16 processes). Eq. input-2 on 16 cores:
// 256 samples x 0.1875 MP / (16 x 60.27 MP/s) = 49.78 ms a batch, 5,142.7 images/s, 2.8 % under the measurement.
TEST(InputPipeline, AMeasuredCoreRatePredictsAllTheCoresOfItsMachine) {
  const std::string text =
      "name: c\nnodes: 1\ngpus_per_node: 1\ngpu: p40\nhost_to_gpu: {pinned: \"11.4 GB/s\"}\n"
      "intra_node: {bandwidth: \"6 GB/s\"}\nstorage: {disk: \"750 MiB/s\", page_cache: \"3.5 GiB/s\"}\n"
      "input: {data: ram, dataset: imagenet, cpu: xeon-emerald-rapids-kvm, cores: 16}\n";
  Cluster c = parse_cluster(text, "c.yaml");
  ASSERT_TRUE(c.input.has_value());
  EXPECT_DOUBLE_EQ(c.input->decode_mpix_per_core, 60.27);
  c.input->sample_megapixels = 0.1875;  // the measured images, not ImageNet's mean
  const ReaderTime r = reader_time(*c.input, 256, 1, 1);
  EXPECT_NEAR(in_seconds(r.decode), 256 * 0.1875 / (16 * 60.27), 1e-12);
  EXPECT_NEAR(256 / in_seconds(r.decode), 5293.4, 0.05 * 5293.4);
}

TEST(InputPipeline, BadInputSectionsNameTheKey) {
  const std::string head =
      "name: c\nnodes: 1\ngpus_per_node: 4\ngpu: p40\nhost_to_gpu: {pinned: \"11.4 GB/s\"}\n"
      "intra_node: {bandwidth: \"6 GB/s\"}\nstorage: {disk: \"750 MiB/s\", page_cache: \"3.5 GiB/s\"}\n";
  auto message = [&](const std::string& input) {
    try {
      (void)parse_cluster(head + input, "c.yaml");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("input: {dataset: imagenet, decode: \"43\", cores: 4}\n"),
            "c.yaml:8:36: 'input.decode': '43' is not a decode rate: a number and the unit MP/s (megapixels per "
            "second), e.g. \"43 MP/s\"");
  EXPECT_EQ(message("input: {dataset: imagenet, cpu: xeon-e5-2650v4, cores: 0}\n"),
            "c.yaml:8:56: 'input.cores': a node needs at least one CPU core");
  EXPECT_EQ(message("input: {dataset: imagenet, decode: \"-4 MP/s\", cores: 2}\n"),
            "c.yaml:8:36: 'input.decode': a decode rate must be greater than zero, got '-4 MP/s'");
  EXPECT_EQ(message("input: {dataset: tapes}\n"), "c.yaml:8:18: 'input.dataset': unknown datasets 'tapes' (known: imagenet)");
  EXPECT_EQ(message("input: {data: nfs, dataset: imagenet}\n"),
            "c.yaml:8:15: 'input.data': data 'nfs' needs 'nfs: {aggregate: ..., per_node: ...}'");
}

}  // namespace
}  // namespace dlscale
