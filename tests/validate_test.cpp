// validate(const Scenario&) as a program that links only the library sees it: a scenario built in memory
// (no file, no command line), one bad value at a time, and an InputError whose key is the field as
// Scenario names it. Only public headers (include/dlscale/) are used here.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "dlscale/error.hpp"
#include "dlscale/predict.hpp"
#include "support/three_layer.hpp"

namespace dlscale {
namespace {

/// The three-layer scenario worked by hand in predict_test and plan_test (tests/support/three_layer.hpp, itself
/// public headers only): two nodes of four GPUs, three linear layers with measured times, batch 10, every value
/// in range.
Scenario good_scenario() { return test::three_layer_scenario(); }

struct Refusal {
  std::string key;
  std::string what;
  bool has_file = false;
};

/// What validate says of `sc`; an empty key when it takes it.
Refusal refusal(const Scenario& sc) {
  try {
    validate(sc);
  } catch (const InputError& e) {
    return {e.key(), e.what(), !e.where().file.empty()};
  }
  return {};
}

TEST(Validate, TakesAScenarioWithEveryValueInRange) {
  const Refusal r = refusal(good_scenario());
  EXPECT_EQ(r.key, "") << r.what;
  EXPECT_NO_THROW((void)Predictor(good_scenario()).predict(8));
}

TEST(Validate, NamesTheFieldOfAZeroBatch) {
  Scenario sc = good_scenario();
  sc.batch_per_gpu = 0;
  const Refusal r = refusal(sc);
  EXPECT_EQ(r.key, "batch_per_gpu");
  EXPECT_EQ(r.what, "'batch_per_gpu': the batch per GPU must be at least 1, got 0");
  EXPECT_FALSE(r.has_file);  // the value came from no file: the caller says where it did come from
}

TEST(Validate, NamesTheFieldOfANodeWithoutGpus) {
  Scenario sc = good_scenario();
  sc.cluster.gpus_per_node = 0;
  EXPECT_EQ(refusal(sc).what, "'cluster.gpus_per_node': a node needs at least one GPU, got 0");
  sc = good_scenario();
  sc.cluster.max_nodes = -1;
  EXPECT_EQ(refusal(sc).what, "'cluster.max_nodes': a cluster needs at least one node, got -1");
}

TEST(Validate, NamesTheFieldOfANegativeOrNanBandwidth) {
  Scenario sc = good_scenario();
  sc.cluster.inter_node.bandwidth = gigabytes_per_second(-2);
  EXPECT_EQ(refusal(sc).what, "'cluster.inter_node.bandwidth': a bandwidth is a finite number ≥ 0 B/s, got -2000000000 B/s");
  sc = good_scenario();
  sc.cluster.h2d_pinned = bytes_per_second(std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(refusal(sc).key, "cluster.h2d_pinned");  // a NaN fails every comparison: it must not pass as "≥ 0"
  sc = good_scenario();
  sc.cluster.intra_node.latency = seconds(std::numeric_limits<double>::infinity());
  EXPECT_EQ(refusal(sc).key, "cluster.intra_node.latency");
}

TEST(Validate, NamesTheFieldOfANanJitter) {
  Scenario sc = good_scenario();
  sc.strategy.jitter_cv = std::nan("");
  EXPECT_EQ(refusal(sc).what, "'strategy.jitter_cv': a coefficient of variation is a number ≥ 0 and < 1 (0.02 for 2 %), got nan");
  sc.strategy.jitter_cv = 1.0;  // σ as large as the mean: a GPU would stall half the time
  EXPECT_EQ(refusal(sc).key, "strategy.jitter_cv");
  sc.strategy.jitter_cv = 0.999;
  EXPECT_EQ(refusal(sc).key, "");
}

TEST(Validate, NamesTheComputeOptionsField) {
  Scenario sc = good_scenario();
  sc.compute.accumulate = 0;
  EXPECT_EQ(refusal(sc).what, "'compute.accumulate': the number of passes per update must be at least 1, got 0");
  sc = good_scenario();
  sc.compute.precision = Precision::bf16;  // the GPU gives no bf16 peak: run at the fp32 rate, not refused
  EXPECT_EQ(refusal(sc).key, "");
  sc = good_scenario();
  sc.compute.recompute = Recompute::full;
  sc.compute.recompute_blocks = 0.0;
  EXPECT_EQ(refusal(sc).key, "compute.recompute_blocks");
  // row-wise scaling is a recipe of fp8 training (eq. K15): refused on another precision, taken with fp8
  sc = good_scenario();
  sc.compute.precision = Precision::bf16;
  sc.compute.fp8_scaling = Fp8Scaling::rowwise;
  EXPECT_EQ(refusal(sc).what, "'compute.fp8_scaling': rowwise scaling is a recipe of fp8 training; the precision is bf16");
  sc.compute.precision = Precision::fp8;
  EXPECT_EQ(refusal(sc).key, "");
}

// Eq. S12: fp8 all-gather casts tensor-wise Float8Linear weights on FSDP's shards: refused without fp8, with another
// scaling, without a stage-3 strategy, and under a parallel layout (not modelled there); taken with all three.
TEST(Validate, RefusesFp8AllGatherOutsideTensorWiseFsdp) {
  Scenario sc = good_scenario();
  sc.compute.fp8_all_gather = true;
  sc.compute.precision = Precision::bf16;
  EXPECT_EQ(refusal(sc).what,
            "'compute.fp8_all_gather': fp8 all-gather gathers the fp8 linear maps' weights; the precision is bf16");
  sc.compute.precision = Precision::fp8;
  sc.compute.fp8_scaling = Fp8Scaling::rowwise;
  EXPECT_EQ(refusal(sc).what,
            "'compute.fp8_all_gather': fp8 all-gather needs tensor-wise scaling (row-wise and MX weights are gathered in "
            "bf16); the scaling is rowwise");
  sc.compute.fp8_scaling = Fp8Scaling::tensorwise;
  sc.strategy.name = "ddp";
  sc.strategy.sharding.stage = 2;
  EXPECT_EQ(refusal(sc).what,
            "'compute.fp8_all_gather': fp8 all-gather is FSDP's: framework 'ddp' does not shard the "
            "parameters (stage 2)");
  sc.strategy.sharding.stage = 3;
  EXPECT_EQ(refusal(sc).key, "");
}

// Eq. K15c: MX block scaling needs Blackwell's block-scaled tensor cores. The library refuses it elsewhere (a Hopper,
// a GPU of no known architecture), at the field; tensor- and row-wise scaling stay wherever fp8 is asked for.
TEST(Validate, RefusesMxfp8ScalingOffBlackwell) {
  Scenario sc = good_scenario();
  sc.compute.precision = Precision::fp8;
  sc.compute.fp8_scaling = Fp8Scaling::mxfp8;
  sc.cluster.gpu.architecture = "hopper";
  const Refusal r = refusal(sc);
  EXPECT_EQ(r.what,
            "'compute.fp8_scaling': the hand GPU of cluster 'hand' (hopper) has no mxfp8 scaling (it needs Blackwell's "
            "block-scaled tensor cores)");
  EXPECT_FALSE(r.has_file);
  sc.cluster.gpu.architecture.clear();
  EXPECT_EQ(refusal(sc).key, "compute.fp8_scaling");
  sc.cluster.gpu.architecture = "blackwell";
  EXPECT_EQ(refusal(sc).key, "");
  sc.cluster.gpu.architecture = "hopper";
  sc.compute.fp8_scaling = Fp8Scaling::rowwise;
  EXPECT_EQ(refusal(sc).key, "");
}

TEST(Validate, RefusesACheckpointingModeTheNetworkCannotTake) {
  Scenario sc = good_scenario();
  sc.network.layers.resize(1);
  sc.measured_layers.reset();
  sc.compute.checkpointing = true;
  EXPECT_EQ(refusal(sc).what, "'compute.checkpointing': model 'three' has 1 learnable layer: nothing to checkpoint");
  sc = good_scenario();
  sc.compute.recompute = Recompute::selective;  // linear layers only: no transformer block to recompute
  EXPECT_EQ(refusal(sc).what, "'compute.recompute': model 'three' has no repeated blocks to recompute");
}

TEST(Validate, RefusesOffloadWithoutShardingAndMeasuredTimesOfAnotherLength) {
  Scenario sc = good_scenario();
  sc.strategy.sharding.offload_optimizer = true;  // stage 0: nothing sharded to offload
  EXPECT_EQ(refusal(sc).key, "strategy.sharding.offload_optimizer");
  sc = good_scenario();
  sc.measured_layers->forward.pop_back();
  EXPECT_EQ(refusal(sc).what, "'measured_layers': measured layer times have 2 entries, the model 'three' has 3 layers");
}

TEST(Validate, PredictorValidatesBeforeItPredicts) {
  Scenario sc = good_scenario();
  sc.batch_per_gpu = -4;
  for (const auto& make :
       std::vector<std::function<void()>>{[&] { (void)Predictor(sc); }, [&] { (void)Predictor(sc, Predictor::TimesOnly{}); }}) {
    try {
      make();
      ADD_FAILURE() << "a batch of -4 was predicted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.key(), "batch_per_gpu");
    }
  }
}

TEST(Validate, ZeroGpusNamesTheArgument) {
  const Predictor p(good_scenario());
  try {
    (void)p.predict(0);
    FAIL() << "zero GPUs were predicted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "gpus");
    EXPECT_STREQ(e.what(), "'gpus': a GPU count must be at least 1, got 0");
  }
}

}  // namespace
}  // namespace dlscale
