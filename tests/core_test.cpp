// The core folder (lib/core, include/dlscale/detail): the enum name tables' template over every table, the
// error types' messages and exit codes, a network's totals and a GPU's missing precision modes. Units have
// their own test (units_test.cpp). Expected strings are written out by hand from each type's contract.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "dlscale/bottleneck.hpp"
#include "dlscale/calibration.hpp"
#include "dlscale/collective.hpp"
#include "dlscale/error.hpp"
#include "dlscale/gpu.hpp"
#include "dlscale/network.hpp"
#include "dlscale/parallel_layout.hpp"
#include "dlscale/strategy.hpp"
#include "dlscale/topology.hpp"

namespace dlscale {
namespace {

// ---- enum names (include/dlscale/detail/enum_names.hpp; each table beside its type) ----------------

/// Every value of E from 0 to `last` has a name, each name reads back as its value, and no two values
/// share a name: a value added to the type without a name, or a copied line, fails here.
template <class E>
void expect_names_round_trip(E last) {
  std::vector<std::string_view> seen;
  for (int i = 0; i <= static_cast<int>(last); ++i) {
    const auto v = static_cast<E>(i);
    const std::string_view name = to_string(v);
    EXPECT_FALSE(name.empty()) << "value " << i << " has no name";
    EXPECT_EQ(enum_from_string<E>(name), v) << name;
    EXPECT_EQ(std::count(seen.begin(), seen.end(), name), 0) << name << " twice";
    seen.push_back(name);
  }
  EXPECT_EQ(seen.size(), EnumNames<E>::names.size());
}

TEST(EnumNames, EveryTableNamesEachValueOnceAndReadsItBack) {
  expect_names_round_trip(Precision::fp8);
  expect_names_round_trip(LayerKind::reshape);
  expect_names_round_trip(Aggregation::broadcast_reduce);
  expect_names_round_trip(Overlap::bucketed);
  expect_names_round_trip(UpdatePlacement::on_root);
  expect_names_round_trip(CollectiveOp::reduce);
  expect_names_round_trip(Bottleneck::update);
  expect_names_round_trip(Resource::host_issue);
  expect_names_round_trip(PathType::dis);
  expect_names_round_trip(VertexKind::storage);
  expect_names_round_trip(LinkKind::ethernet);
  expect_names_round_trip(TransferKind::device_copy);
}

TEST(EnumNames, AnUnknownNameIsNothingAndCaseMattersUnlessAsked) {
  EXPECT_EQ(enum_from_string<CollectiveOp>("alltoall"), std::nullopt);
  EXPECT_EQ(enum_from_string<CollectiveOp>("AllReduce"), std::nullopt);
  EXPECT_EQ(enum_from_string<CollectiveOp>("AllReduce", NameCase::ignore_ascii_case), CollectiveOp::allreduce);
  EXPECT_EQ(enum_from_string<Overlap>(""), std::nullopt);
  static_assert(to_string(Overlap::layerwise) == "layerwise");  // constexpr: usable in tables of its own
}

TEST(EnumNames, AliasesReadAsTheirValueAndPrintAsItsName) {
  EXPECT_EQ(enum_from_string<Precision>("bfloat16"), Precision::bf16);
  EXPECT_EQ(enum_from_string<Precision>("Half", NameCase::ignore_ascii_case), Precision::fp16);
  EXPECT_EQ(to_string(*enum_from_string<Precision>("amp")), "fp16");
}

TEST(EnumNames, TheTypesOwnReadersKeepTheirMessages) {
  EXPECT_EQ(precision_from_string("FP16"), Precision::fp16);
  try {
    (void)precision_from_string("fp7");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "unknown precision 'fp7' (expected fp32, tf32, bf16, fp16, fp8)");
  }
  try {
    (void)layer_kind_from_string("Conv");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "unknown layer kind 'Conv' (expected conv, linear, batchnorm, layernorm, embedding, attention, "
                 "other, or a parameter-free relu, gelu, silu, tanh, dropout, maxpool, avgpool, add, concat, "
                 "lrn, reshape)");
  }
}

// ---- errors (include/dlscale/error.hpp) --------------------------------------------------------------

// An InputError says where (file:line:col, or the file alone), then the key quoted, then the message.
TEST(Errors, AnInputErrorSaysFileLineColumnKeyAndMessage) {
  const InputError at(SourceLocation{"c.yaml", 3, 7}, "nodes", "a cluster needs at least one node");
  EXPECT_STREQ(at.what(), "c.yaml:3:7: 'nodes': a cluster needs at least one node");
  EXPECT_EQ(at.key(), "nodes");
  EXPECT_EQ(at.message(), "a cluster needs at least one node");
  EXPECT_EQ(at.where().column, 7);
  EXPECT_STREQ(InputError(SourceLocation{"p.yaml", 0, 0}, "profile", "cannot open file").what(),
               "p.yaml: 'profile': cannot open file");
  EXPECT_STREQ(InputError(SourceLocation{}, "gpus", "must be at least 1").what(), "'gpus': must be at least 1");
  EXPECT_STREQ(InputError("no key, no place").what(), "no key, no place");
}

// A UsageError is an InputError whose key is the option, with no place.
TEST(Errors, AUsageErrorNamesTheOptionAsItsKey) {
  const UsageError e("--fabric", "'ib' has no speed");
  EXPECT_STREQ(e.what(), "'--fabric': 'ib' has no speed");
  EXPECT_EQ(e.key(), "--fabric");
  EXPECT_TRUE(e.where().file.empty());
}

// Exit codes: 2 for what the user gave (input, usage, units), 3 for the device or a feature not built, else 1.
TEST(Errors, ExitCodesSortTheUsersMistakesFromTheMachines) {
  EXPECT_EQ(exit_code_for(InputError("x")), 2);
  EXPECT_EQ(exit_code_for(UsageError("--x", "y")), 2);
  EXPECT_EQ(exit_code_for(UnitError("x")), 2);
  EXPECT_EQ(exit_code_for(DeviceError("x")), 3);
  EXPECT_EQ(exit_code_for(NotCompiled("x")), 3);
  EXPECT_EQ(exit_code_for(Error("x")), 1);
  EXPECT_EQ(exit_code_for(std::runtime_error("x")), 1);
}

// ---- a network's totals and a GPU's modes ----------------------------------------------------------

TEST(Network, TotalsSumTheLayers) {
  Network net;
  Layer conv;
  conv.params = 1'728;  // 3x3 kernel, 3 -> 64 channels: 3*3*3*64
  conv.forward_flops_per_sample = 2.0 * 1'728 * 32 * 32;
  Layer fc;
  fc.params = 10'250;  // 1024 -> 10 with bias: 1024*10 + 10
  fc.forward_flops_per_sample = 2.0 * 10'240;
  net.layers = {conv, fc};
  EXPECT_EQ(net.total_params(), 11'978);
  EXPECT_DOUBLE_EQ(net.total_forward_flops_per_sample(), 3'538'944.0 + 20'480.0);
  EXPECT_EQ(Network{}.total_params(), 0);
}

TEST(Gpu, AMissingModeSaysWhatItNeedsAndWhere) {
  GpuSpec v100;
  v100.name = "Tesla V100";
  EXPECT_EQ(v100.missing_mode(Precision::tf32, ""),
            "the Tesla V100 has no tf32 mode (it needs TF32 tensor cores, Ampere or newer)");
  EXPECT_EQ(v100.missing_mode(Precision::bf16, "dgx1v"),
            "the Tesla V100 of cluster 'dgx1v' has no bf16 mode (it needs bf16 math, Ampere or newer)");
  EXPECT_EQ(v100.missing_mode(Precision::fp8, ""), "the Tesla V100 has no fp8 mode (it needs fp8 tensor cores, Hopper or newer)");
}

TEST(ParallelLayout, ScheduleNamesAndAliasesReadBack) {
  EXPECT_EQ(pipeline_schedule_from_string("one_f_one_b"), PipelineSchedule::one_f_one_b);
  EXPECT_EQ(pipeline_schedule_from_string("interleaved_1f1b"), PipelineSchedule::interleaved);
  EXPECT_EQ(to_string(PipelineSchedule::one_f_one_b), "1f1b");
  try {
    (void)pipeline_schedule_from_string("zero-bubble", "strategy.schedule");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "strategy.schedule");
    EXPECT_EQ(e.message(), "unknown pipeline schedule 'zero-bubble' (gpipe, 1f1b, interleaved)");
  }
}

}  // namespace
}  // namespace dlscale
