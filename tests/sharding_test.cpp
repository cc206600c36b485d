// Sharded data parallelism (ZeRO-1/2/3, FSDP): memory per GPU, bytes per step and the all-gather
// timeline, each against values worked by hand (docs/model.md, "Sharded data parallelism").
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "dlscale/cluster.hpp"
#include "dlscale/compute.hpp"
#include "dlscale/error.hpp"
#include "dlscale/io.hpp"
#include "dlscale/memory.hpp"
#include "dlscale/predict.hpp"
#include "dlscale/sharding.hpp"
#include "dlscale/zoo.hpp"
#include "support/run.hpp"

namespace dlscale {
namespace {

Network zoo(const std::string& name) { return load_network(resolve(DataKind::network, name, "--model")); }
Strategy framework(const std::string& name) { return load_strategy(resolve(DataKind::framework, name, "--framework")); }

constexpr double kLlamaParams = 6'738'415'616.0;  // models/llama2-7b.yaml, "Totals"

// ---- bytes per GPU per step on 2 nodes × 8 GPUs (eq. S2) ---------------------------------------------------
// P = 6,738,415,616 parameters, bf16: gradients and working copy 2 B each.
TEST(ShardingTraffic, Llama7bOnTwoNodesOfEightByHand) {
  const GpuPlacement at{16, 2, 8};
  const auto P = static_cast<std::int64_t>(kLlamaParams);
  // DDP: all-reduce of 2P bytes over 16: 2P · 2 · 15/16 = 3.75 P = 25,269,058,560 B.
  const StepTraffic ddp = step_traffic(P, framework("pytorch-ddp").sharding, Precision::bf16, at);
  EXPECT_DOUBLE_EQ(in_bytes(ddp.allreduce), 25'269'058'560.0);
  EXPECT_DOUBLE_EQ(in_bytes(ddp.total()), 25'269'058'560.0);
  // ZeRO-1 and ZeRO-2: reduce-scatter 2P · 15/16 = 12,634,529,280 B and the all-gather of the updated
  // parameters, the same: 25,269,058,560 B in all, as much as DDP (Rajbhandari et al. 2020, Section 7).
  for (const char* fw : {"deepspeed-zero1", "deepspeed-zero2"}) {
    SCOPED_TRACE(fw);
    const StepTraffic t = step_traffic(P, framework(fw).sharding, Precision::bf16, at);
    EXPECT_DOUBLE_EQ(in_bytes(t.reducescatter), 12'634'529'280.0);
    EXPECT_DOUBLE_EQ(in_bytes(t.allgather_update), 12'634'529'280.0);
    EXPECT_DOUBLE_EQ(in_bytes(t.allreduce) + in_bytes(t.allgather_forward) + in_bytes(t.allgather_backward), 0.0);
    EXPECT_DOUBLE_EQ(in_bytes(t.total()), 25'269'058'560.0);
  }
  // ZeRO-3 (a unit of 5·10^7 parameters, wrap size): gathers for forward and backward and the reduce-scatter:
  // 3 × 12,634,529,280 = 37,903,587,840 B (1.5 × DDP).
  const Network net = zoo("llama2-7b");
  ASSERT_EQ(net.total_params(), P);
  const StepTraffic z3 = step_traffic(net, framework("deepspeed-zero3").sharding, Precision::bf16, at);
  EXPECT_DOUBLE_EQ(in_bytes(z3.allgather_forward), 12'634'529'280.0);
  EXPECT_DOUBLE_EQ(in_bytes(z3.allgather_backward), 12'634'529'280.0);
  EXPECT_DOUBLE_EQ(in_bytes(z3.total()), 37'903'587'840.0);
  EXPECT_DOUBLE_EQ(in_bytes(step_traffic(P, framework("deepspeed-zero3").sharding, Precision::bf16, at).total()),
                   37'903'587'840.0);
  // FSDP full shard, a unit per block (wrap block, eq. S4b): the root (embedding 131,072,000 + final norm 4,096 +
  // output 131,072,000 = 262,148,096 parameters) is gathered before the first forward and held to the end of the
  // backward, so the backward gathers only the blocks: (P − 262,148,096) · 2 · 15/16 = 12,143,001,600 B; in all
  // 2 × 12,634,529,280 + 12,143,001,600 = 37,412,060,160 B. The params-only form cannot know the root: it refuses.
  const StepTraffic f = step_traffic(net, framework("fsdp").sharding, Precision::bf16, at);
  EXPECT_DOUBLE_EQ(in_bytes(f.allgather_forward), 12'634'529'280.0);
  EXPECT_DOUBLE_EQ(in_bytes(f.allgather_backward), 12'143'001'600.0);
  EXPECT_DOUBLE_EQ(in_bytes(f.reducescatter), 12'634'529'280.0);
  EXPECT_DOUBLE_EQ(in_bytes(f.total()), 37'412'060'160.0);
  EXPECT_THROW((void)step_traffic(P, framework("fsdp").sharding, Precision::bf16, at), std::invalid_argument);
  // SHARD_GRAD_OP: no second gather: 25,269,058,560 B.
  EXPECT_DOUBLE_EQ(in_bytes(step_traffic(net, framework("fsdp-shard-grad-op").sharding, Precision::bf16, at).total()),
                   25'269'058'560.0);
  // Hybrid: full shard over the 8 GPUs of a node: the forward's gather 2P · 7/8 = 11,792,227,328 B, the backward's
  // without the held root (P − 262,148,096) · 2 · 7/8 = 11,333,468,160 B, the reduce-scatter 11,792,227,328 B; the
  // 2P/8 shard all-reduced across the two nodes: 2P/8 · 2 · 1/2 = 0.25 P = 1,684,603,904 B (the only inter-node bytes);
  // in all 36,602,526,720 B.
  const StepTraffic h = step_traffic(net, framework("fsdp-hybrid").sharding, Precision::bf16, at);
  EXPECT_DOUBLE_EQ(in_bytes(h.allgather_forward), 11'792'227'328.0);
  EXPECT_DOUBLE_EQ(in_bytes(h.allgather_backward), 11'333'468'160.0);
  EXPECT_DOUBLE_EQ(in_bytes(h.reducescatter), 11'792'227'328.0);
  EXPECT_DOUBLE_EQ(in_bytes(h.allreduce_replicas), 1'684'603'904.0);
  EXPECT_DOUBLE_EQ(in_bytes(h.total()), 36'602'526'720.0);
}

// Eq. S7b (P11's share): every shard position's replica group all-reduces at once, so the groups with ranks on a
// node ask for its N NICs k·min(ranks, N)/N times over (at least once).
TEST(ShardingGroups, ReplicaGroupsShareTheNodesNics) {
  auto cluster = [](const char* fabric) {
    ClusterOverrides ov;
    ov.nodes = 16;
    if (fabric != nullptr) ov.fabric = parse_fabric_spec(fabric);
    return load_cluster(resolve(DataKind::cluster, "dgx-a100-hdr", "--cluster"), ov);
  };
  const Cluster two_nics = cluster("ib:200Gb/s:2"), rails = cluster(nullptr);  // fms-fsdp's 400 Gb/s a node; 8 HDR rails
  Sharding s;
  s.stage = 3;
  s.group = Sharding::kGroupNode;  // HSDP: 8 replica groups of 16, one rank on each node: 8 · 1/2 = 4, 8 · 1/8 = 1
  const ShardGroups node = shard_groups(s, GpuPlacement{128, 16, 8});
  EXPECT_DOUBLE_EQ(replica_nic_share(node, two_nics), 4.0);
  EXPECT_DOUBLE_EQ(replica_nic_share(node, rails), 1.0);
  s.group = 4;  // 4 replica groups of 32, two ranks on each node: 4 · min(2, 2)/2 = 4, 4 · 2/8 = 1
  const ShardGroups four = shard_groups(s, GpuPlacement{128, 16, 8});
  EXPECT_DOUBLE_EQ(replica_nic_share(four, two_nics), 4.0);
  EXPECT_DOUBLE_EQ(replica_nic_share(four, rails), 1.0);
  s.group = 16;  // shard groups of two nodes: 8 replica groups of 8 on a node, one rank each: 8 · 1/2 = 4
  EXPECT_DOUBLE_EQ(replica_nic_share(shard_groups(s, GpuPlacement{128, 16, 8}), two_nics), 4.0);
  s.group = Sharding::kGroupAll;  // no replicas
  EXPECT_DOUBLE_EQ(replica_nic_share(shard_groups(s, GpuPlacement{128, 16, 8}), two_nics), 1.0);
  Cluster simple;  // the simple form: one link a node, 8 groups on it
  simple.gpus_per_node = 8;
  EXPECT_DOUBLE_EQ(replica_nic_share(node, simple), 8.0);
}

TEST(ShardingGroups, PlacementsOfShardAndReplicaGroups) {
  Sharding s;
  s.stage = 3;
  s.group = Sharding::kGroupNode;
  const ShardGroups g = shard_groups(s, GpuPlacement{64, 8, 8});  // 8 shard groups of 8, replicas of 8 on 8 nodes
  EXPECT_EQ(g.shard, 8);
  EXPECT_EQ(g.replicas, 8);
  EXPECT_EQ(g.shard_at.nodes, 1);
  EXPECT_EQ(g.replica_at.nodes, 8);
  EXPECT_EQ(g.replica_at.gpus_per_node, 1);
  s.group = 4;  // two shard groups per node: a replica group has 2 GPUs on each of the 2 nodes
  const ShardGroups four = shard_groups(s, GpuPlacement{16, 2, 8});
  EXPECT_EQ(four.replicas, 4);
  EXPECT_EQ(four.replica_at.nodes, 2);
  EXPECT_EQ(four.replica_at.gpus_per_node, 2);
  s.group = 16;  // a group of two nodes: replicas one per group
  const ShardGroups two_nodes = shard_groups(s, GpuPlacement{64, 8, 8});
  EXPECT_EQ(two_nodes.shard_at.nodes, 2);
  EXPECT_EQ(two_nodes.replica_at.gpus, 4);
  EXPECT_EQ(two_nodes.replica_at.nodes, 4);
  s.group = 6;  // divides neither 16 GPUs nor a node of 8
  try {
    (void)shard_groups(s, GpuPlacement{16, 2, 8});
    ADD_FAILURE() << "a group of 6 taken on 16 GPUs";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "'strategy.sharding.group': the framework shards over groups of 6 GPUs; 16 GPUs do not divide into them");
  }
  s.group = 12;  // divides 24 GPUs, but not a whole number of nodes
  try {
    (void)shard_groups(s, GpuPlacement{24, 3, 8});
    ADD_FAILURE() << "a group of 12 taken on nodes of 8";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "'strategy.sharding.group': a shard group of 12 GPUs is not a whole number of nodes of 8 GPUs");
  }
}

// ---- memory per GPU, Llama-2-7B, bf16, AdamW, batch 1 (eq. S3) ------------------------------------------------
// P = 6,738,415,616; per parameter: fp32 master 4 B, bf16 working copy 2 B, bf16 gradient 2 B, Adam 8 B.
TEST(ShardingMemory, Llama7bUnderEachStrategyByHand) {
  const Network net = zoo("llama2-7b");
  ASSERT_DOUBLE_EQ(static_cast<double>(net.total_params()), kLlamaParams);
  ComputeOptions o;
  o.precision = Precision::bf16;
  o.optimizer = Optimizer::adamw;
  const GpuSpec h100 = find_gpu("h100-sxm");
  const double P = kLlamaParams;
  auto mem = [&](const char* fw, int n) { return estimate_training_memory(net, 1, o, framework(fw).sharding, n); };
  auto state = [](const MemoryEstimate& m) { return in_bytes(m.weights) + in_bytes(m.gradients) + in_bytes(m.optimizer_state); };
  // DDP: 16 P = 107.8 GB of weights, gradients and state: no 80 GB GPU holds it.
  const MemoryEstimate ddp = mem("pytorch-ddp", 8);
  EXPECT_DOUBLE_EQ(state(ddp), 16.0 * P);
  EXPECT_FALSE(check_memory_fit(net, h100, 1, o, framework("pytorch-ddp").sharding, 8).fits);
  // ZeRO-1 on 8: working copy 2P + master 4P/8, gradients 2P, Adam 8P/8 → 5.5 P.
  const MemoryEstimate z1 = mem("deepspeed-zero1", 8);
  EXPECT_DOUBLE_EQ(in_bytes(z1.weights), 2.5 * P);
  EXPECT_DOUBLE_EQ(in_bytes(z1.gradients), 2.0 * P);
  EXPECT_DOUBLE_EQ(in_bytes(z1.optimizer_state), P);
  // ZeRO-2 on 8: gradients 2P/8 as well → 3.75 P.
  const MemoryEstimate z2 = mem("deepspeed-zero2", 8);
  EXPECT_DOUBLE_EQ(state(z2), 3.75 * P);
  EXPECT_DOUBLE_EQ(in_bytes(z2.gathered), 0.0);
  // FSDP full shard on 8, a unit per block (wrap block, eq. S4b), FSDP1's fp32 shards (shard_dtype fp32, eq. M5a):
  // the fp32 parameters 4P/8 (no bf16 shard kept), the gradients cast back to fp32 4P/8, AdamW 8P/8: 16P/8 = 2P, plus
  // the gathered units: the root (embedding 131,072,000 + final norm 4096 + output 131,072,000 = 262,148,096
  // parameters) held at 2 B, beside it one more of the two in flight, a decoder block (4096 + 67,108,864 + 4096 +
  // 135,266,304 = 202,383,360 parameters) at 2 B, one block's gradient at 2 B and its bf16 reduced shard beside the fp32
  // cast (eq. M5b), 202,383,360 · 2 / 8: 524,296,192 + 404,766,720 + 404,766,720 + 50,595,840 = 1,384,425,472 B.
  const MemoryEstimate fsdp = mem("fsdp", 8);
  EXPECT_DOUBLE_EQ(in_bytes(fsdp.weights), 0.5 * P);
  EXPECT_DOUBLE_EQ(in_bytes(fsdp.gradients), 0.5 * P);
  EXPECT_DOUBLE_EQ(state(fsdp), 2.0 * P);
  EXPECT_DOUBLE_EQ(in_bytes(fsdp.gathered), 1'384'425'472.0);
  EXPECT_TRUE(check_memory_fit(net, h100, 1, o, framework("fsdp").sharding, 8).fits);
  // SHARD_GRAD_OP on 8: the whole working copy is held through forward and backward: 2P + 4P/8 (fp32 shards) + 4P/8
  // (fp32 gradient shards) + 8P/8 = 4 P, gathered = one unit's gradient and its reduced shard, 202,383,360 · (2 + 2/8)
  // = 455,362,560 B.
  const MemoryEstimate sgo = mem("fsdp-shard-grad-op", 8);
  EXPECT_DOUBLE_EQ(state(sgo), 4.0 * P);
  EXPECT_DOUBLE_EQ(in_bytes(sgo.gathered), 455'362'560.0);
  // Sharding changes nothing else: activations, input and reserve are DDP's.
  EXPECT_DOUBLE_EQ(in_bytes(fsdp.activations), in_bytes(ddp.activations));
  EXPECT_DOUBLE_EQ(in_bytes(fsdp.input + fsdp.reserved), in_bytes(ddp.input + ddp.reserved));
}

// ---- llm-foundry (Composer's FSDP1) under mixed_precision DEFAULT and PURE: the reduce dtype --------------------------
// MPT-1B of llm-foundry's recipe (models/mpt-1b.yaml): P = 50368 · 2048 + 24 · (12 · 2048² + 2 · 2048) + 2048
// = 1,311,213,568 parameters, bf16, one node of 8 GPUs, full shard (n = 8, (n − 1)/n = 7/8).
TEST(ShardingReduceDtype, LlmFoundryDefaultReduceScattersTwicePuresBytes) {
  const Strategy def = framework("llm-foundry"), pure = framework("llm-foundry-pure");
  EXPECT_TRUE(def.sharding.reduce_fp32);
  EXPECT_FALSE(pure.sharding.reduce_fp32);
  const Network net = zoo("mpt-1b");
  const std::int64_t P = net.total_params();
  ASSERT_EQ(P, 1'311'213'568);
  const GpuPlacement at{8, 1, 8};
  const StepTraffic d = step_traffic(net, def.sharding, Precision::bf16, at),
                    p = step_traffic(net, pure.sharding, Precision::bf16, at);
  // DEFAULT (reduce_dtype fp32): P · 4 B · 7/8 = 4,589,247,488 B a step; PURE (bf16): P · 2 B · 7/8 = 2,294,623,744 B.
  EXPECT_DOUBLE_EQ(in_bytes(d.reducescatter), 4'589'247'488.0);
  EXPECT_DOUBLE_EQ(in_bytes(p.reducescatter), 2'294'623'744.0);
  EXPECT_DOUBLE_EQ(in_bytes(d.reducescatter), 2.0 * in_bytes(p.reducescatter));
  // The gathers are the bf16 working copy under both (param_dtype bf16): P · 2 B · 7/8 = 2,294,623,744 B before each
  // unit's forward, and before each block's backward again, without the root (a unit per MPTBlock, wrap block, eq. S4b:
  // the embedding, 50368 · 2048 = 103,153,664, and norm_f, 2048; the head is tied), which is held: (P − 103,155,712)
  // · 2 B · 7/8 = 2,114,101,248 B; no all-reduce (one shard group).
  for (const StepTraffic* t : {&d, &p}) {
    EXPECT_DOUBLE_EQ(in_bytes(t->allgather_forward), 2'294'623'744.0);
    EXPECT_DOUBLE_EQ(in_bytes(t->allgather_backward), 2'114'101'248.0);
    EXPECT_DOUBLE_EQ(in_bytes(t->allreduce) + in_bytes(t->allreduce_replicas), 0.0);
  }
  // Memory per GPU (eq. S3 with M5), AdamW, batch 1: FSDP1's shards are the fp32 flat parameters, P · 4 / 8 =
  // 655,606,784 B (no bf16 shard kept), and the gradient shards are fp32 under both, 655,606,784 B: reduced in fp32
  // under DEFAULT, cast back after the bf16 reduce-scatter under PURE (eq. M5a). AdamW's state P · 8 / 8 =
  // 1,311,213,568 B. Gathered: the root held at 2 B (206,311,424), one more block of the two in flight (12 · 2048² +
  // 2 · 2048 = 50,335,744) at 2 B and a block's gradient at 2 B (100,671,488 each): 407,654,400 B; and what the cast of
  // that block's gradient holds beside them (eq. M5b): under DEFAULT its fp32 copy before the reduce-scatter,
  // 50,335,744 · 4 = 201,342,976 B (608,997,376 B in all); under PURE the bf16 reduced shard beside its fp32 cast,
  // 50,335,744 · 2 / 8 = 12,583,936 B (420,238,336 B). The allocator's slack takes 5 % of the difference.
  ComputeOptions o;
  o.precision = Precision::bf16;
  o.optimizer = Optimizer::adamw;
  const MemoryEstimate md = estimate_training_memory(net, 1, o, def.sharding, 8);
  const MemoryEstimate mp = estimate_training_memory(net, 1, o, pure.sharding, 8);
  for (const MemoryEstimate* m : {&md, &mp}) {
    EXPECT_DOUBLE_EQ(in_bytes(m->gradients), 655'606'784.0);
    EXPECT_DOUBLE_EQ(in_bytes(m->weights), 655'606'784.0);
    EXPECT_DOUBLE_EQ(in_bytes(m->optimizer_state), 1'311'213'568.0);
  }
  EXPECT_DOUBLE_EQ(in_bytes(md.gathered), 608'997'376.0);
  EXPECT_DOUBLE_EQ(in_bytes(mp.gathered), 420'238'336.0);
  EXPECT_DOUBLE_EQ(in_bytes(md.activations), in_bytes(mp.activations));
  EXPECT_NEAR(in_bytes(md.total()) - in_bytes(mp.total()), 1.05 * (201'342'976.0 - 12'583'936.0), 1.0);
  // The rest of the two files is the same: FSDP1's flat parameters, full shard over every GPU, two gathers in flight,
  // flash attention, eager, Composer's DecoupledAdamW as a per-parameter loop (optimizer_impl for_loop).
  for (const Strategy* s : {&def, &pure}) {
    EXPECT_EQ(s->sharding.stage, 3);
    EXPECT_TRUE(s->sharding.reshard_after_forward);
    EXPECT_FALSE(s->sharding.per_parameter);
    EXPECT_TRUE(s->sharding.fp32_shards);
    EXPECT_EQ(s->sharding.group, Sharding::kGroupAll);
    EXPECT_EQ(s->sharding.in_flight, 2);
    EXPECT_EQ(s->sharding.unit_params, 100'000'000);
    EXPECT_EQ(s->attention, AttentionKernel::flash);
    EXPECT_FALSE(s->compiled);
    EXPECT_EQ(s->optimizer, Optimizer::adamw);
    EXPECT_EQ(s->optimizer_impl, OptimizerImpl::for_loop);
  }
  // fsdp.yaml, FSDP1 as Hugging Face runs it, reduces in bf16 (unchanged); every FSDP file keeps fp32 shards (eq. M5),
  // DeepSpeed's half partitions do not
  EXPECT_FALSE(framework("fsdp").sharding.reduce_fp32);
  for (const char* fw : {"fsdp", "fsdp-hybrid", "fsdp-shard-grad-op", "llm-foundry", "llm-foundry-pure", "torchtitan"}) {
    EXPECT_TRUE(framework(fw).sharding.held_in_fp32()) << fw;
  }
  EXPECT_FALSE(framework("deepspeed-zero3").sharding.held_in_fp32());
}

TEST(ShardingUnits, SizeBasedWrapGroupsEachDecoderBlock) {
  // 1e8 parameters: the embedding (131,072,000) alone, then each block from its input RMSNorm to its MLP
  // (202,383,360), then the final norm and the output projection (4096 + 131,072,000): 1 + 32 + 1 units.
  const auto units = gather_units(zoo("llama2-7b"), 100'000'000);
  ASSERT_EQ(units.size(), 34u);
  EXPECT_EQ(units.front().params, 131'072'000);
  EXPECT_EQ(units[1].params, 202'383'360);
  EXPECT_EQ(units.back().params, 131'076'096);
}

// A two-block decoder (hidden 64, 4 heads, SwiGLU 128, vocabulary 100, untied): layers 0 embedding (100 · 64 = 6,400),
// 1-4 block 0 (RMSNorm 64, attention 4 · 64² = 16,384, RMSNorm 64, MLP 3 · 64 · 128 = 24,576: 41,088), 5-8 block 1, 9
// the final RMSNorm (64), 10 the output projection (6,400).
Network two_block_decoder() {
  return build_decoder(DecoderShape{.layers = 2, .hidden = 64, .heads = 4, .kv_heads = 4, .ffn = 128, .vocab = 100, .seq = 16},
                       "tiny");
}

TEST(ShardingUnits, BlockWrapGivesEachBlockItsUnitAndTheRestTheRoot) {
  const Network net = two_block_decoder();
  ASSERT_EQ(net.layers.size(), 11u);
  ASSERT_EQ(net.total_params(), 6'400 + 2 * 41'088 + 64 + 6'400);
  Sharding s;
  s.stage = 3;
  s.wrap = Sharding::Wrap::block;
  // eq. S4b: the root (layer 0, holding 6,400 + 64 + 6,400 = 12,864), each block, the final norm and head (nothing)
  const auto units = gather_units(net, s);
  ASSERT_EQ(units.size(), 4u);
  const std::vector<GatherUnit> by_hand{{0, 0, 12'864, true}, {1, 4, 41'088, false}, {5, 8, 41'088, false}, {9, 10, 0, false}};
  for (std::size_t i = 0; i < units.size(); ++i) {
    EXPECT_EQ(units[i].first, by_hand[i].first) << i;
    EXPECT_EQ(units[i].last, by_hand[i].last) << i;
    EXPECT_EQ(units[i].params, by_hand[i].params) << i;
    EXPECT_EQ(units[i].held, by_hand[i].held) << i;
  }
  // eq. S4 at 50,000: 6,400 + 41,088 = 47,488, + 64 + 16,384 = 63,936 closes layers 0-6; the rest, 64 + 24,576 + 64 +
  // 6,400 = 31,104, is layers 7-10
  s.wrap = Sharding::Wrap::size;
  s.unit_params = 50'000;
  const auto sized = gather_units(net, s);
  ASSERT_EQ(sized.size(), 2u);
  EXPECT_EQ(sized[0].last, 6);
  EXPECT_EQ(sized[0].params, 63'936);
  EXPECT_EQ(sized[1].params, 31'104);
  EXPECT_FALSE(sized[0].held || sized[1].held);
}

TEST(ShardingUnits, FsdpOpsPerUnitByHand) {
  // eq. S11 with torchtitan's counts (11 a gather, 3 a reduce-scatter) over the two-block decoder's units: forward, the
  // root's and two blocks' gathers, 3 · 11 = 33; backward, the two blocks gathered again and three reduce-scatters,
  // 2 · 11 + 3 · 3 = 31 (the root is held; the final norm and head gather nothing of their own)
  const Sharding titan = framework("torchtitan").sharding;
  EXPECT_EQ(titan.wrap, Sharding::Wrap::block);
  EXPECT_DOUBLE_EQ(titan.gather_ops, 11.0);
  EXPECT_DOUBLE_EQ(titan.reduce_ops, 3.0);
  const Network net = two_block_decoder();
  UnitOps o = unit_ops(gather_units(net, titan), titan);
  EXPECT_DOUBLE_EQ(o.forward, 33.0);
  EXPECT_DOUBLE_EQ(o.backward, 31.0);
  Sharding kept = titan;  // SHARD_GRAD_OP: no gather in the backward, 3 · 3 = 9
  kept.reshard_after_forward = false;
  o = unit_ops(gather_units(net, kept), kept);
  EXPECT_DOUBLE_EQ(o.forward, 33.0);
  EXPECT_DOUBLE_EQ(o.backward, 9.0);
  // a file without unit_ops counts none; ZeRO-1/2 gather no units
  EXPECT_DOUBLE_EQ(unit_ops(gather_units(net, framework("fsdp").sharding), framework("fsdp").sharding).forward, 0.0);
  Sharding z2 = titan;
  z2.stage = 2;
  EXPECT_DOUBLE_EQ(unit_ops(gather_units(net, z2), z2).backward, 0.0);
}

// ---- the three-unit all-gather timeline of docs/model.md (eq. S5-S7) ----------------------------------------
// Forward 2 ms per unit, backward 4 ms, all-gathers (5, 1, 1) ms in both passes, reduce-scatters 1 ms each.
Seconds ms(double v) { return milliseconds(v); }
const std::vector<Seconds> kF{ms(2), ms(2), ms(2)}, kB{ms(4), ms(4), ms(4)}, kAg{ms(5), ms(1), ms(1)}, kRs{ms(1), ms(1), ms(1)};

TEST(ShardingTimeline, ThreeUnitsTwoInFlightByHand) {
  // docs/model.md: C = 7, 9, 11 (forward), 15, 19, 24 (backward, unit 1 waits for its gather: 15 + 5 = 20);
  // reduce-scatters end at 16, 20, 25.
  const ShardedTimeline t = sharded_timeline_exact(kF, kB, kAg, kAg, kRs, 2);
  EXPECT_NEAR(in_ms(t.compute_end), 24.0, 1e-12);
  EXPECT_NEAR(in_ms(t.reduce_end), 25.0, 1e-12);
  EXPECT_NEAR(in_ms(t.end()), 25.0, 1e-12);
}

TEST(ShardingTimeline, MorePrefetchNoPrefetchAndNoSecondGather) {
  EXPECT_NEAR(in_ms(sharded_timeline_exact(kF, kB, kAg, kAg, kRs, 3).end()), 24.0, 1e-12);  // three in flight
  EXPECT_NEAR(in_ms(sharded_timeline_exact(kF, kB, kAg, kAg, kRs, 1).end()), 33.0, 1e-12);  // 18 + 14 + 1
  EXPECT_NEAR(in_ms(sharded_timeline_exact(kF, kB, kAg, {}, kRs, 2).end()), 24.0, 1e-12);   // SHARD_GRAD_OP
  // Without communication the timeline is the compute: 3 × 2 + 3 × 4 = 18 ms.
  const std::vector<Seconds> zero(3, Seconds{});
  EXPECT_NEAR(in_ms(sharded_timeline_exact(kF, kB, zero, zero, zero, 2).end()), 18.0, 1e-12);
}

TEST(ShardingTimeline, OffloadCopiesFollowTheReduceScatters) {
  // Eq. S9a on the three-unit timeline: reduce-scatters end at 16 (unit 3), 20 (unit 2), 25 (unit 1); each
  // unit's gradient-shard copy starts when its reduce-scatter and the previous copy have ended. Copies of
  // 3 ms: 16 + 3 = 19, max(19, 20) + 3 = 23, max(23, 25) + 3 = 28. Copies of 5 ms: 21, max(21, 20) + 5 = 26,
  // max(26, 25) + 5 = 31 (the copy engine, not the reduce-scatters, sets the end).
  const std::vector<Seconds> three(3, ms(3)), five(3, ms(5));
  EXPECT_NEAR(in_ms(sharded_timeline_exact(kF, kB, kAg, kAg, kRs, 2, three).reduce_end), 28.0, 1e-12);
  EXPECT_NEAR(in_ms(sharded_timeline_exact(kF, kB, kAg, kAg, kRs, 2, five).end()), 31.0, 1e-12);
  EXPECT_NEAR(in_ms(sharded_timeline_exact(kF, kB, kAg, kAg, kRs, 2, five).compute_end), 24.0, 1e-12);
}

/// All-gathers at 1 GB/s of the total array, reduce-scatters 1 ms, all-reduces 2 ms, one GPU free.
class FixedCollectives final : public CollectiveModel {
 public:
  [[nodiscard]] Seconds time(CollectiveOp op, Bytes size, const GpuPlacement& where) const override {
    if (where.gpus <= 1) return Seconds{};
    switch (op) {
      case CollectiveOp::allgather:
        return size / gigabytes_per_second(1);
      case CollectiveOp::reducescatter:
        return milliseconds(1);
      case CollectiveOp::allreduce:
        return milliseconds(2);
      default:
        return Seconds{};
    }
  }
  [[nodiscard]] std::string describe() const override { return "fixed"; }
};

TEST(ShardingPredict, ThePredictorRunsTheHandTimeline) {
  // Three layers, each its own unit (unit_params 1); fp32 working copy: 4 B per parameter, so all-gathers of
  // (5, 1, 1) ms at 1 GB/s are 1.25 M, 0.25 M and 0.25 M parameters. No input, no update: the iteration is
  // the timeline, 25 ms on 2 GPUs; 18 ms on one.
  Scenario sc;
  sc.cluster.name = "hand";
  sc.cluster.max_nodes = 2;
  sc.cluster.gpus_per_node = 2;
  sc.cluster.gpu.name = "hand GPU";
  sc.cluster.gpu.peak_fp32 = teraflops_per_second(10);
  sc.cluster.gpu.memory_bandwidth = gigabytes_per_second(300);
  sc.cluster.gpu.memory_size = bytes(1e12);
  sc.cluster.h2d_pinned = sc.cluster.h2d_pageable = gigabytes_per_second(1);
  sc.cluster.page_cache = sc.cluster.disk = gigabytes_per_second(1);
  sc.network.name = "three";
  for (std::int64_t params : {1'250'000, 250'000, 250'000}) {
    Layer l;
    l.name = "l";
    l.kind = LayerKind::linear;
    l.params = params;
    sc.network.layers.push_back(l);
  }
  sc.measured_layers = LayerTimes{kF, kB, {Seconds{}, Seconds{}, Seconds{}}, {}, {}, {}, {}};
  sc.strategy = framework("fsdp");
  sc.strategy.sharding.unit_params = 1;
  sc.strategy.jitter_cv = 0.0;  // the timeline alone: no wait for the slowest GPU (fsdp.yaml carries PyTorch's 0.0055)
  sc.collectives = std::make_shared<FixedCollectives>();
  const Predictor pred(sc);
  EXPECT_NEAR(in_ms(pred.predict(1).iteration_time), 18.0, 1e-9);
  const Prediction two = pred.predict(2);
  EXPECT_NEAR(in_ms(two.iteration_time), 25.0, 1e-9);
  EXPECT_NEAR(in_ms(two.breakdown.comm), 2 * 7.0 + 3.0, 1e-9);  // gathers twice, three reduce-scatters
  EXPECT_NEAR(in_ms(two.breakdown.comm_exposed), 7.0, 1e-9);    // 25 − 18
  // Two micro-batches (eq. S5-S7, P20). A flat FSDP under no_sync gathers in both and reduce-scatters in the last:
  // comm 2 · 2 · 7 + 3 = 31 ms. FSDP2 reduce-scatters in both, each micro-batch the same 25 ms timeline (no input,
  // no update): 50 ms, comm 2 · 17 = 34 ms.
  Scenario acc = sc;
  acc.compute.accumulate = 2;
  EXPECT_NEAR(in_ms(Predictor(acc).predict(2).breakdown.comm), 31.0, 1e-9);
  acc.strategy.sharding.per_parameter = true;
  const Prediction fsdp2 = Predictor(acc).predict(2);
  EXPECT_NEAR(in_ms(fsdp2.iteration_time), 50.0, 1e-9);
  EXPECT_NEAR(in_ms(fsdp2.breakdown.comm), 34.0, 1e-9);
  // its memory is one micro-batch's (gradient shards, not whole gradients); the flat FSDP's holds whole gradients
  Scenario one = acc;
  one.compute.accumulate = 1;
  EXPECT_EQ(fsdp2.memory.per_gpu, Predictor(one).predict(2).memory.per_gpu);
  acc.strategy.sharding.per_parameter = false;
  EXPECT_GT(Predictor(acc).predict(2).memory.per_gpu, fsdp2.memory.per_gpu);
  // Hybrid on 2 nodes × 2: the same timeline inside a node, each reduce-scatter followed by the shard's
  // 2 ms all-reduce across nodes: reduce-scatters + all-reduces end at 15+3 = 18, max(18, 19)+3 = 22,
  // max(22, 24)+3 = 27.
  sc.strategy.sharding.group = Sharding::kGroupNode;
  EXPECT_NEAR(in_ms(Predictor(sc).predict(4).iteration_time), 27.0, 1e-9);
  // ZeRO-2 with per-layer reduce-scatters of 1 ms (eq. S8): the forward 6 ms; the recurrence over the
  // backward ends at max(max(4 + 1, 8) + 1, 12) + 1 = 13 ms; then the updated parameters are all-gathered,
  // 5 + 1 + 1 = 7 ms: 6 + 13 + 7 = 26 ms.
  Scenario z = sc;
  z.strategy = framework("deepspeed-zero2");
  z.strategy.overlap = Overlap::layerwise;
  z.strategy.jitter_cv = 0.0;
  EXPECT_NEAR(in_ms(Predictor(z).predict(2).iteration_time), 26.0, 1e-9);
  // The same with the optimiser offloaded to the CPU (eq. S9). fp32: gradients 4 B per parameter, 5, 1 and 1 MB
  // per layer; each GPU's shard (n = 2) 2.5, 0.5, 0.5 MB copied at 1 GB/s (h2d_pinned): 2.5, 0.5, 0.5 ms.
  // Reduce-scatters end at 5 (layer 3), 9, 13; copies at 5 + 0.5 = 5.5, max(5.5, 9) + 0.5 = 9.5,
  // max(9.5, 13) + 2.5 = 15.5: 2.5 ms past the last reduce-scatter. CPU Adam: the node's 2 GPUs × 1.75 M / 2
  // parameters at 1.75e9 params/s = 1 ms; the updated shard, 1.75 M / 2 × 4 B = 3.5 MB at 1 GB/s = 3.5 ms;
  // then the all-gather, 7 ms: 6 + 13 + 2.5 + 1 + 3.5 + 7 = 33 ms.
  z.strategy = framework("deepspeed-zero2-offload");
  z.strategy.overlap = Overlap::layerwise;
  z.strategy.jitter_cv = 0.0;
  z.strategy.sharding.cpu_adam_params_per_s = 1.75e9;
  const Prediction off = Predictor(z).predict(2);
  EXPECT_NEAR(in_ms(off.iteration_time), 33.0, 1e-9);
  EXPECT_NEAR(in_ms(off.breakdown.offload_d2h), 3.5, 1e-9);
  EXPECT_NEAR(in_ms(off.breakdown.offload_d2h_exposed), 2.5, 1e-9);
  EXPECT_NEAR(in_ms(off.breakdown.offload_cpu), 1.0, 1e-9);
  EXPECT_NEAR(in_ms(off.breakdown.offload_h2d), 3.5, 1e-9);
  EXPECT_NEAR(in_ms(off.breakdown.update), 4.5, 1e-9);                      // the CPU step and the copy back
  EXPECT_NEAR(in_bytes(off.breakdown.offload_bytes), 7e6, 1e-3);            // 3.5 MB each way
  EXPECT_NEAR(in_ms(off.breakdown.comm_exposed), 13.0 - 12.0 + 7.0, 1e-9);  // unchanged by the copies
}

// ---- eq. S12, FSDP's fp8 all-gather: one Llama-3-8B block (models/llama3-8b.yaml) on 8 GPUs, by hand ---------------
// Width 4096, 32 heads of 128, 8 key/value heads (1024), SwiGLU 14,336. The weights fp8 training converts: attention
// q, k, v 4096 · (4096 + 2 · 1024) = 25,165,824 and output 4096 · 4096 = 16,777,216 → 41,943,040; MLP gate and up
// 4096 · 2 · 14,336 = 117,440,512 and down 14,336 · 4096 = 58,720,256 → 176,160,768; 218,103,808 a block. The block's
// two RMSNorms (2 · 4096 = 8,192) stay bf16: 218,112,000 parameters.
constexpr double kBlockFp8 = 218'103'808.0, kBlockParams = 218'112'000.0;

const Layer& first_of(const Network& net, LayerKind kind, bool mlp) {
  return *std::find_if(net.layers.begin(), net.layers.end(),
                       [&](const Layer& l) { return l.kind == kind && (!mlp || l.hidden > 0); });
}

TEST(ShardingFp8AllGather, TheWeightsALlama3BlockConvertsByHand) {
  const Network net = zoo("llama3-8b");
  EXPECT_DOUBLE_EQ(fp8_weight_elements(first_of(net, LayerKind::attention, false)), 41'943'040.0);
  EXPECT_DOUBLE_EQ(fp8_weight_elements(first_of(net, LayerKind::linear, true)), 176'160'768.0);
  // nothing else converts: the embedding, the norms, the output projection over the vocabulary
  double all = 0.0;
  for (const Layer& l : net.layers) all += fp8_weight_elements(l);
  EXPECT_DOUBLE_EQ(all, 32.0 * kBlockFp8);
}

TEST(ShardingFp8AllGather, BytesOfABlockOnEightGpusByHand) {
  // eq. S2 with S12, full shard on 8 (7/8 of the total on each GPU's wire), forward and the backward's gather again.
  // bf16: 218,112,000 · 2 = 436,224,000 B a gather, 381,696,000 on the wire, 763,392,000 a step. fp8 all-gather:
  // 8,192 · 2 + 218,103,808 · 1 = 218,120,192 B a gather, 190,855,168 on the wire, 381,710,336 a step: 381,681,664 B
  // (the converted weights, once per gather, times 7/8 times 2) fewer.
  const Sharding fsdp = framework("torchtitan").sharding;
  const GpuPlacement eight{8, 1, 8};
  // the block as one unit that is resharded (torchtitan wraps per block, eq. S4b; the held root is another unit)
  const GatherUnit block{0, 0, static_cast<std::int64_t>(kBlockParams), false};
  const std::span<const GatherUnit> units(&block, 1);
  const StepTraffic bf16 = step_traffic(units, fsdp, Precision::fp8, eight);
  const StepTraffic fp8 = step_traffic(units, fsdp, Precision::fp8, eight, kBlockFp8);
  EXPECT_DOUBLE_EQ(in_bytes(gathered_param_bytes(kBlockParams, kBlockFp8, Precision::fp8)), 218'120'192.0);
  EXPECT_DOUBLE_EQ(in_bytes(bf16.allgather_forward + bf16.allgather_backward), 763'392'000.0);
  EXPECT_DOUBLE_EQ(in_bytes(fp8.allgather_forward), 190'855'168.0);
  EXPECT_DOUBLE_EQ(in_bytes(fp8.allgather_forward + fp8.allgather_backward), 381'710'336.0);
  EXPECT_DOUBLE_EQ(in_bytes(fp8.reducescatter), in_bytes(bf16.reducescatter));  // the gradients stay as they were
}

TEST(ShardingUnitBytes, ALlama3BlockOnEightGpusUnderEachFrameworkByHand) {
  // One Llama-3-8B block, 218,112,000 parameters, on a shard group of 8 (the bytes predict and simulate both time,
  // shard_unit_bytes). torchtitan (FSDP2, reduce_dtype fp32): gathered at 2 B = 436,224,000 B, reduce-scattered at 4 B
  // = 872,448,000 B, no cast (FSDP2 casts in its chunk_cat, eq. S10); its shard across 2 replicas at share 1:
  // 872,448,000 / 8 = 109,056,000 B. fsdp (FSDP1, bf16 reduce): 436,224,000 B reduced, the reduced half shard cast to
  // fp32 (eq. M5c): 27,264,000 elements x 6 B = 163,584,000 B. llm-foundry (FSDP1, reduce_dtype fp32): the unsharded
  // gradient cast before the reduce: 218,112,000 x 6 = 1,308,672,000 B. fp8 all-gather: 8,192 x 2 + 218,103,808 x 1
  // = 218,120,192 B gathered.
  const double P = kBlockParams;
  const ShardUnitBytes titan = shard_unit_bytes(P, 0.0, framework("torchtitan").sharding, Precision::bf16, 8, 1.0);
  EXPECT_DOUBLE_EQ(in_bytes(titan.gather), 436'224'000.0);
  EXPECT_DOUBLE_EQ(in_bytes(titan.reduce), 872'448'000.0);
  EXPECT_DOUBLE_EQ(in_bytes(titan.replica), 109'056'000.0);
  EXPECT_DOUBLE_EQ(in_bytes(titan.cast), 0.0);
  const ShardUnitBytes fsdp = shard_unit_bytes(P, 0.0, framework("fsdp").sharding, Precision::bf16, 8, 1.0);
  EXPECT_DOUBLE_EQ(in_bytes(fsdp.reduce), 436'224'000.0);
  EXPECT_DOUBLE_EQ(in_bytes(fsdp.cast), 163'584'000.0);
  const ShardUnitBytes foundry = shard_unit_bytes(P, 0.0, framework("llm-foundry").sharding, Precision::bf16, 8, 1.0);
  EXPECT_DOUBLE_EQ(in_bytes(foundry.reduce), 872'448'000.0);
  EXPECT_DOUBLE_EQ(in_bytes(foundry.cast), 1'308'672'000.0);
  const ShardUnitBytes fp8 = shard_unit_bytes(P, kBlockFp8, framework("torchtitan").sharding, Precision::fp8, 8, 1.0);
  EXPECT_DOUBLE_EQ(in_bytes(fp8.gather), 218'120'192.0);
  EXPECT_DOUBLE_EQ(in_bytes(fp8.reduce), 872'448'000.0);  // the gradients stay fp32 on the wire
  const ShardUnitBytes none = shard_unit_bytes(0.0, 0.0, framework("torchtitan").sharding, Precision::bf16, 8, 1.0);
  EXPECT_DOUBLE_EQ(in_bytes(none.gather + none.reduce + none.replica + none.cast), 0.0);  // eq. S4b's tail unit
}

TEST(ShardingFp8AllGather, ThePredictorGathersEachBlockAtOneByteAWeight) {
  // The whole model under torchtitan (FSDP2, a unit per block, the root held) on 8 GPUs, all-gathers at 1 GB/s
  // (FixedCollectives): 32 blocks gathered twice a step, each 218,103,808 B fewer under fp8 all-gather: 64 ·
  // 0.218103808 s = 13.958643712 s less communication; the root (embedding, norm, head) gathers the same bytes.
  Scenario sc;
  sc.cluster = load_cluster(resolve(DataKind::cluster, "dgx-h100", "--cluster"));
  sc.network = zoo("llama3-8b");
  sc.strategy = framework("torchtitan");
  sc.strategy.jitter_cv = 0.0;
  sc.batch_per_gpu = 1;
  sc.compute.precision = Precision::fp8;
  sc.compute.optimizer = Optimizer::adamw;
  sc.collectives = std::make_shared<FixedCollectives>();
  const Prediction bf16 = Predictor(sc).predict(8);
  sc.compute.fp8_all_gather = true;
  const Prediction fp8 = Predictor(sc).predict(8);
  EXPECT_NEAR(in_seconds(bf16.breakdown.comm - fp8.breakdown.comm), 64.0 * kBlockFp8 / 1e9, 1e-9);
  // eq. S3 with S12: one block in flight beside the held root, 218,103,808 B smaller (218,120,192 against 436,224,000)
  EXPECT_NEAR(in_bytes(bf16.memory.per_gpu - fp8.memory.per_gpu), kBlockFp8 * 1.05, 1.0);  // with the allocator's 5 %
}

TEST(ShardingFp8AllGather, MemoryOfTheGatheredUnitsByHand) {
  // eq. S3 under torchtitan's block wrap, 2 in flight, on 8: the root (embedding 128,256 · 4096 = 525,336,576, final
  // norm 4,096, output 525,336,576: 1,050,677,248 parameters) held at 2 B, one block beside it, and one block's
  // gradient at 2 B (436,224,000). bf16: 2,101,354,496 + 436,224,000 + 436,224,000 = 2,973,802,496 B; fp8 all-gather:
  // the block at 218,120,192: 2,755,698,688 B.
  const Network net = zoo("llama3-8b");
  ComputeOptions o;
  o.precision = Precision::fp8;
  o.optimizer = Optimizer::adamw;
  const Sharding fsdp = framework("torchtitan").sharding;
  EXPECT_DOUBLE_EQ(in_bytes(estimate_training_memory(net, 1, o, fsdp, 8).gathered), 2'973'802'496.0);
  o.fp8_all_gather = true;
  EXPECT_DOUBLE_EQ(in_bytes(estimate_training_memory(net, 1, o, fsdp, 8).gathered), 2'755'698'688.0);
}

TEST(ShardingFp8AllGather, TheForwardCastsNoGatheredWeight) {
  // eq. K15 compiled, not by class: a cast reads 2 B and writes 1 B an element. The attention's forward casts its input
  // for q/k/v and for the output projection (rows · 4096 each) and, without fp8 all-gather, the two weights,
  // 41,943,040 elements · 3 B = 125,829,120 B; with it the weights arrive in fp8 (cast on the 1/8 shard, on FSDP's
  // copy-in stream) and the backward's transposed weight copy stays.
  const Network net = zoo("llama3-8b");
  const Layer& attention = first_of(net, LayerKind::attention, false);
  ComputeOptions o;
  o.precision = Precision::fp8;
  o.compiled = true;
  const GpuSpec h100 = find_gpu("h100-sxm");
  auto cast_bytes = [&](bool backward) {
    double sum = 0.0;
    for (const KernelTiming& k : layer_kernels(attention, false, false, h100, 1, o))
      if (k.backward == backward && k.name.find(" fp8 ") != std::string::npos) sum += in_bytes(k.traffic);
    return sum;
  };
  const double fwd = cast_bytes(false), bwd = cast_bytes(true);
  o.fp8_all_gather = true;
  EXPECT_DOUBLE_EQ(fwd - cast_bytes(false), 41'943'040.0 * 3.0);
  EXPECT_DOUBLE_EQ(cast_bytes(true), bwd);
}

/// two_block_decoder() on one node of 4 hand GPUs under fsdp.yaml (wrap block), every layer's time zero: the step is
/// its collectives (FixedCollectives) and nothing else.
Scenario two_blocks_on_four(Precision p) {
  Scenario sc;
  sc.cluster.name = "hand";
  sc.cluster.max_nodes = 1;
  sc.cluster.gpus_per_node = 4;
  sc.cluster.gpu.name = "hand GPU";
  sc.cluster.gpu.peak_fp32 = sc.cluster.gpu.peak_fp16 = sc.cluster.gpu.peak_bf16 = teraflops_per_second(10);
  sc.cluster.gpu.memory_bandwidth = gigabytes_per_second(300);
  sc.cluster.gpu.memory_size = bytes(1e12);
  sc.cluster.h2d_pinned = sc.cluster.h2d_pageable = gigabytes_per_second(1);
  sc.cluster.page_cache = sc.cluster.disk = gigabytes_per_second(1);
  sc.network = two_block_decoder();
  const std::vector<Seconds> zero(sc.network.layers.size(), Seconds{});
  LayerTimes times;
  times.forward = times.backward = times.update = zero;
  sc.measured_layers = times;
  sc.strategy = framework("fsdp");
  sc.strategy.jitter_cv = 0.0;
  sc.compute.precision = p;
  sc.collectives = std::make_shared<FixedCollectives>();
  return sc;
}

// Eq. S2 over eq. S4b's units: the two-block decoder (root 12,864 parameters, held; blocks 41,088 each; the tail
// unit nothing) in fp32 on 4 GPUs, bus bytes (n − 1)/n = 3/4 of each array: the forward gathers 95,040 · 4 · 3/4 =
// 285,120 B, the backward only the blocks, 82,176 · 4 · 3/4 = 246,528 B, the reduce-scatters 285,120 B. The timing
// charges the same arrays: at FixedCollectives' 1 GB/s of the gathered array, (95,040 + 82,176) · 4 B = 708,864 B
// of all-gathers, 708.864 µs, beside a 1 ms reduce-scatter for each of the three units that hold parameters.
TEST(ShardingTraffic, BlockWrapHoldsItsRootAsTheTimingDoes) {
  const Scenario sc = two_blocks_on_four(Precision::fp32);
  const StepTraffic t = step_traffic(sc.network, sc.strategy.sharding, Precision::fp32, GpuPlacement{4, 1, 4});
  EXPECT_DOUBLE_EQ(in_bytes(t.allgather_forward), 285'120.0);
  EXPECT_DOUBLE_EQ(in_bytes(t.allgather_backward), 246'528.0);
  EXPECT_DOUBLE_EQ(in_bytes(t.reducescatter), 285'120.0);
  EXPECT_DOUBLE_EQ(in_bytes(t.total()), 816'768.0);
  const Prediction p = Predictor(sc).predict(4);
  EXPECT_NEAR(in_seconds(p.breakdown.comm), 708.864e-6 + 3e-3, 1e-15);
  // the same arrays, one source: what the timing gathers is the traffic's all-gather bytes over (n − 1)/n
  EXPECT_NEAR(in_seconds(p.breakdown.comm) - 3e-3, in_bytes(t.allgather_forward + t.allgather_backward) * 4.0 / 3.0 / 1e9, 1e-15);
}

// Eq. M5c: in bf16, fsdp.yaml's shards are fp32 (shard_dtype), so FSDP1 casts each unit's reduced bf16 shard to fp32
// on the reduce-scatter's stream, a memory-bound pass over P_u/4 elements reading 2 B and writing 4 B, after the
// unit's reduce-scatter: root 12,864 / 4 · 6 = 19,296 B, each block 41,088 / 4 · 6 = 61,632 B, each at the kernel
// model's memory rate with one kernel's overhead (eq. K5). ZeRO's half shards (shard_dtype working) cast nothing.
TEST(ShardingPredict, Fsdp1CastsEachReducedShardToFp32OnTheReduceStream) {
  const Scenario sc = two_blocks_on_four(Precision::bf16);
  Scenario half = sc;
  half.strategy.sharding.fp32_shards = false;
  const Seconds with = Predictor(sc).predict(4).breakdown.comm, without = Predictor(half).predict(4).breakdown.comm;
  const KernelParams& kp = sc.compute.kernel(sc.cluster.gpu);
  const double rate = 300e9 * kp.memory_efficiency, overhead = in_seconds(kp.kernel_overhead);
  const double casts = 19'296.0 / rate + 2 * 61'632.0 / rate + 3 * overhead;
  EXPECT_NEAR(in_seconds(with - without), casts, 1e-15);
  EXPECT_DOUBLE_EQ(in_bytes(shard_cast_bytes(41'088.0, sc.strategy.sharding, Precision::bf16, 4)), 61'632.0);
  // under reduce_dtype fp32 the unit's whole bf16 gradient is cast before the reduce-scatter: 41,088 · 6 B
  Sharding fp32_reduce = sc.strategy.sharding;
  fp32_reduce.reduce_fp32 = true;
  EXPECT_DOUBLE_EQ(in_bytes(shard_cast_bytes(41'088.0, fp32_reduce, Precision::bf16, 4)), 246'528.0);
  // nothing on one GPU, in fp32, under FSDP2 (its cast is eq. S10's chunk_cat) or for ZeRO's half shards
  EXPECT_DOUBLE_EQ(in_bytes(shard_cast_bytes(41'088.0, sc.strategy.sharding, Precision::bf16, 1)), 0.0);
  EXPECT_DOUBLE_EQ(in_bytes(shard_cast_bytes(41'088.0, sc.strategy.sharding, Precision::fp32, 4)), 0.0);
  Sharding fsdp2 = sc.strategy.sharding;
  fsdp2.per_parameter = true;
  EXPECT_DOUBLE_EQ(in_bytes(shard_cast_bytes(41'088.0, fsdp2, Precision::bf16, 4)), 0.0);
  EXPECT_DOUBLE_EQ(in_bytes(shard_cast_bytes(41'088.0, half.strategy.sharding, Precision::bf16, 4)), 0.0);
}

// ---- CPU offload of the optimiser: Llama-2-7B, bf16, AdamW on 8 × H100 (dgx-h100), eq. S9 ----------------------
TEST(ShardingOffload, Llama7bOnEightH100ByHand) {
  const auto P = static_cast<std::int64_t>(kLlamaParams);
  // S9a: each GPU's gradient shard, 2 B × P / 8 = 1,684,603,904 B to the host; S9c: the updated bf16 shard,
  // the same back: 3,369,207,808 B over PCIe per GPU and step.
  EXPECT_DOUBLE_EQ(
      in_bytes(offload_gradient_bytes(kLlamaParams, framework("deepspeed-zero2-offload").sharding, Precision::bf16, 8)),
      1'684'603'904.0);
  EXPECT_DOUBLE_EQ(in_bytes(offload_param_bytes(P, Precision::bf16, 8)), 1'684'603'904.0);
  // S9b: the node's CPU steps 8 shards of P/8 = P parameters at 3.9e9 params/s (ZeRO-Offload's CPU-Adam):
  // 6,738,415,616 / 3.9e9 = 1.727799 s. On 2 nodes (16 GPUs) each node steps 8 × P/16 = P/2: 0.863900 s.
  EXPECT_NEAR(in_seconds(cpu_adam_time(P, 8, 8, 3.9e9)), 1.7277988759, 1e-9);
  EXPECT_NEAR(in_seconds(cpu_adam_time(P, 16, 8, 3.9e9)), 0.8638994379, 1e-9);
  // S9d: host memory per node, 8 × P/8 × (4 master + 8 Adam + 2 gradient) = 14 P = 94,337,818,624 B.
  EXPECT_DOUBLE_EQ(
      in_bytes(offload_host_bytes_per_node(P, framework("deepspeed-zero2-offload").sharding, Precision::bf16, 2, 8, 8)),
      14.0 * kLlamaParams);

  // GPU memory: ZeRO-2 on 8 holds 2P working + 4P/8 master + 2P/8 gradients + 8P/8 Adam = 3.75 P; offloaded,
  // the master and Adam leave: 2P + 0.25P = 2.25 P, 1.5 P = 10,107,623,424 B less. ZeRO-3 offloaded: 2P/8
  // working + 2P/8 gradients = 0.5 P (FSDP's full shard holds 2 P).
  const Network net = zoo("llama2-7b");
  ComputeOptions o;
  o.precision = Precision::bf16;
  o.optimizer = Optimizer::adamw;
  auto state = [](const MemoryEstimate& m) { return in_bytes(m.weights) + in_bytes(m.gradients) + in_bytes(m.optimizer_state); };
  const MemoryEstimate z2 = estimate_training_memory(net, 1, o, framework("deepspeed-zero2").sharding, 8);
  const MemoryEstimate z2o = estimate_training_memory(net, 1, o, framework("deepspeed-zero2-offload").sharding, 8);
  const MemoryEstimate z3o = estimate_training_memory(net, 1, o, framework("deepspeed-zero3-offload").sharding, 8);
  EXPECT_DOUBLE_EQ(state(z2), 3.75 * kLlamaParams);
  EXPECT_DOUBLE_EQ(state(z2o), 2.25 * kLlamaParams);
  EXPECT_NEAR(in_bytes(z2.total() - z2o.total()), 1.5 * kLlamaParams, 1.0);
  EXPECT_DOUBLE_EQ(in_bytes(z3o.optimizer_state), 0.0);
  EXPECT_DOUBLE_EQ(state(z3o), 0.5 * kLlamaParams);

  // The predictor on dgx-h100: PCIe Gen5 x16 as NCCL rates it, 16 × 240 / 80 = 48 GB/s each way:
  // 1,684,603,904 / 48e9 = 35.0959 ms down and as much up; the update on the path is 1.727799 + 0.035096 s.
  Scenario sc;
  sc.cluster = load_cluster(resolve(DataKind::cluster, "dgx-h100", "--cluster"));
  ASSERT_DOUBLE_EQ(in_gigabytes_per_second(sc.cluster.h2d_pinned), 48.0);
  sc.network = net;
  sc.strategy = framework("deepspeed-zero2-offload");
  sc.compute = o;
  sc.batch_per_gpu = 1;
  const Prediction p = Predictor(sc).predict(8);
  EXPECT_NEAR(in_seconds(p.breakdown.offload_d2h), 1'684'603'904.0 / 48e9, 1e-9);
  EXPECT_NEAR(in_seconds(p.breakdown.offload_h2d), 1'684'603'904.0 / 48e9, 1e-9);
  EXPECT_NEAR(in_seconds(p.breakdown.offload_cpu), 1.7277988759, 1e-9);
  EXPECT_NEAR(in_seconds(p.breakdown.update), 1.7277988759 + 1'684'603'904.0 / 48e9, 1e-9);
  EXPECT_DOUBLE_EQ(in_bytes(p.breakdown.offload_bytes), 3'369'207'808.0);
  // host memory: 14 P = 94.3 GB of the 2 TB in dgx-h100.yaml; the GPU holds 1.5 P less than under ZeRO-2
  EXPECT_DOUBLE_EQ(in_bytes(p.memory.host_per_node), 14.0 * kLlamaParams);
  EXPECT_DOUBLE_EQ(in_bytes(p.memory.host_capacity), 2e12);
  EXPECT_TRUE(p.memory.host_fits);
  EXPECT_TRUE(p.memory.fits);
  sc.strategy = framework("deepspeed-zero2");
  EXPECT_NEAR(in_bytes(Predictor(sc).predict(8).memory.per_gpu - p.memory.per_gpu), 1.5 * kLlamaParams, 1.0);
  // A host too small for 14 P says so.
  sc.strategy = framework("deepspeed-zero2-offload");
  sc.cluster.host_memory_size = bytes(64e9);
  EXPECT_FALSE(Predictor(sc).predict(8).memory.host_fits);
}

// ZeRO-2-Offload reducing in fp32 (a hand-made file: no shipped offload file sets reduce_dtype fp32): the gradient shard
// each unit copies to the host is the reduce's fp32 one (eq. S9a at eq. K27's width), not the bf16 working gradient.
// Llama-2-7B, bf16, AdamW on one DGX H100 (8 GPUs, 48 GB/s pinned each way, as above):
//   S9a  4 B x P/8 = 4 x 842,301,952 = 3,369,207,808 B down, 3,369,207,808 / 48e9 = 70.1918 ms (35.0959 ms at 2 B)
//   S9c  the updated bf16 shard back, 2 B x P/8 = 1,684,603,904 B, 35.0959 ms (unchanged)
//   PCIe 3,369,207,808 + 1,684,603,904 = 5,053,811,712 B a step
//   S9d  8 x P/8 x (4 master + 8 Adam + 4 gradient) = 16 P = 107,814,649,856 B of host memory (14 P at 2 B)
TEST(ShardingOffload, AnFp32ReduceCopiesFp32GradientShardsByHand) {
  const auto fw = test::temp_file("zero2-offload-fp32.yaml",
                                  "name: zero2-offload-fp32\nio: {prefetch: true, memory: pinned}\naggregation: allreduce\n"
                                  "overlap: bucketed\nupdate: after_aggregation\nattention: flash\n"
                                  "buckets: {size: \"1 GB\", first: \"1 GB\"}\n"
                                  "sharding: {stage: 2, group: all, offload_optimizer: cpu, cpu_adam: \"3.9e9 params/s\", "
                                  "reduce_dtype: fp32}\n");
  const Strategy st = load_strategy(fw);
  ASSERT_TRUE(st.sharding.reduce_fp32);
  ASSERT_TRUE(st.sharding.offload_optimizer);
  EXPECT_DOUBLE_EQ(gradient_shard_bytes_per_element(st.sharding, Precision::bf16), 4.0);
  EXPECT_DOUBLE_EQ(in_bytes(offload_gradient_bytes(kLlamaParams, st.sharding, Precision::bf16, 8)), 3'369'207'808.0);
  EXPECT_DOUBLE_EQ(
      in_bytes(offload_host_bytes_per_node(static_cast<std::int64_t>(kLlamaParams), st.sharding, Precision::bf16, 2, 8, 8)),
      16.0 * kLlamaParams);
  // a unit's copy: the first bucket's gradient shard, P_u x 4 / 8 (eq. S9a, d_u), whatever the unit
  EXPECT_DOUBLE_EQ(in_bytes(offload_gradient_bytes(202'383'360.0, st.sharding, Precision::bf16, 8)), 101'191'680.0);

  Scenario sc;
  sc.cluster = load_cluster(resolve(DataKind::cluster, "dgx-h100", "--cluster"));
  sc.network = zoo("llama2-7b");
  sc.strategy = st;
  sc.compute.precision = Precision::bf16;
  sc.compute.optimizer = Optimizer::adamw;
  sc.batch_per_gpu = 1;
  const Prediction p = Predictor(sc).predict(8);
  EXPECT_NEAR(in_seconds(p.breakdown.offload_d2h), 3'369'207'808.0 / 48e9, 1e-9);
  EXPECT_NEAR(in_seconds(p.breakdown.offload_h2d), 1'684'603'904.0 / 48e9, 1e-9);
  EXPECT_DOUBLE_EQ(in_bytes(p.breakdown.offload_bytes), 5'053'811'712.0);
  EXPECT_DOUBLE_EQ(in_bytes(p.memory.host_per_node), 16.0 * kLlamaParams);
}

// ---- the optimiser's step over the local shard (eq. K27): the gradient's width is the one the reduce leaves --------
// Llama-2-7B (P = 6,738,415,616) on 8 GPUs, bf16, AdamW: each GPU steps its shard of P/8 = 842,301,952 parameters.
//   bf16 gradients (DeepSpeed ZeRO-3: half partitions, bf16 reduce): fused reads the fp32 master 4, the gradient 2,
//     writes the master 4 and the half working copy 2, reads and writes m and v 16: 28 B, 842,301,952 x 28 =
//     23,584,454,656 B. Foreach: m.lerp_(g) 8 + 2, v *= b2 8, v.addcmul_(g, g) 8 + 2, sqrt 8, / 8, + eps 8,
//     w.addcdiv_ 16, decay 8 = 76, + the half copy 2 = 78 B: 65,699,552,256 B.
//   fp32 gradients under a bf16 reduce (fsdp.yaml, FSDP1's fp32 flat shards, eq. M5: the reduced shard cast to fp32,
//     no half copy kept): foreach 72 + 2 x 4 = 80 B, 67,384,156,160 B (78 B, 65,699,552,256, before eq. K27).
//   fp32 reduce (torchtitan.yaml, FSDP2: fp32 reduce-scatter, fp32 per-parameter shards): fused 4 + 4 + 4 + 16 = 28 B,
//     23,584,454,656 B, of which the gradient 4 x 842,301,952 = 3,369,207,808 B (1,684,603,904 at 2 B before, and a
//     half copy that FSDP2 does not keep: the same total).
//   fp32 reduce with half partitions (a ZeRO-3 file with reduce_dtype fp32): fused 4 + 4 + 4 + 2 + 16 = 30 B,
//     25,269,058,560 B (28 B before).
TEST(ShardingOptimizer, Llama7bShardStepBytesOnEightGpusByHand) {
  const double shard = kLlamaParams / 8.0;
  ASSERT_DOUBLE_EQ(shard, 842'301'952.0);
  auto with = [](const Strategy& st, OptimizerImpl impl) {
    ComputeOptions o;
    o.precision = Precision::bf16;
    o.optimizer = Optimizer::adamw;
    o.optimizer_impl = impl;
    o.sharding = st.sharding;
    o.sharded = st.sharding.sharded();
    return o;
  };
  const Strategy zero3 = framework("deepspeed-zero3"), fsdp = framework("fsdp"), titan = framework("torchtitan");
  // bf16 gradients
  const ComputeOptions z3 = with(zero3, OptimizerImpl::fused);
  EXPECT_DOUBLE_EQ(optimizer_gradient_bytes_per_element(z3), 2.0);
  EXPECT_TRUE(optimizer_writes_half_copy(z3));
  EXPECT_DOUBLE_EQ(shard * update_bytes_per_param(z3), 23'584'454'656.0);
  EXPECT_DOUBLE_EQ(shard * update_bytes_per_param(with(zero3, OptimizerImpl::foreach)), 65'699'552'256.0);
  // fp32 gradients: FSDP1's fp32 shards under a bf16 reduce (eq. M5)
  const ComputeOptions f1 = with(fsdp, OptimizerImpl::foreach);
  ASSERT_FALSE(fsdp.sharding.reduce_fp32);
  EXPECT_DOUBLE_EQ(optimizer_gradient_bytes_per_element(f1), 4.0);
  EXPECT_FALSE(optimizer_writes_half_copy(f1));
  EXPECT_DOUBLE_EQ(shard * update_bytes_per_param(f1), 67'384'156'160.0);
  // fp32 gradients: FSDP2's fp32 reduce
  const ComputeOptions f2 = with(titan, OptimizerImpl::fused);
  ASSERT_TRUE(titan.sharding.reduce_fp32);
  EXPECT_DOUBLE_EQ(shard * optimizer_gradient_bytes_per_element(f2), 3'369'207'808.0);
  EXPECT_FALSE(optimizer_writes_half_copy(f2));
  EXPECT_DOUBLE_EQ(shard * update_bytes_per_param(f2), 23'584'454'656.0);
  // fp32 reduce into half partitions
  Strategy zero3_fp32 = zero3;
  zero3_fp32.sharding.reduce_fp32 = true;
  const ComputeOptions z3f = with(zero3_fp32, OptimizerImpl::fused);
  EXPECT_DOUBLE_EQ(optimizer_gradient_bytes_per_element(z3f), 4.0);
  EXPECT_DOUBLE_EQ(shard * update_bytes_per_param(z3f), 25'269'058'560.0);
  // replicated steps keep the gradient the backward made: DDP's bf16 2 B, plain autocast's fp32 4 B (no half copy)
  ComputeOptions ddp = with(framework("pytorch-ddp"), OptimizerImpl::fused);
  EXPECT_DOUBLE_EQ(optimizer_gradient_bytes_per_element(ddp), 2.0);
  ddp.fp32_gradients = true;
  EXPECT_DOUBLE_EQ(optimizer_gradient_bytes_per_element(ddp), 4.0);
  EXPECT_FALSE(optimizer_writes_half_copy(ddp));
}

// ---- memory: where the gradient shard is fp32, eqs. S3/M5a count it at 4 B an element a shard (eq. K27's width) -----
// Llama-2-7B on 8 GPUs, bf16, AdamW, batch 1: gradient shards P x 4 / 8 = 3,369,207,808 B under torchtitan (fp32
// reduce, FSDP2's fp32 shards), llm-foundry (fp32 reduce, FSDP1's flat fp32 shards), fsdp (bf16 reduce cast back to fp32,
// M5a) and a ZeRO-3 reducing in fp32; P x 2 / 8 = 1,684,603,904 B under ZeRO-3's bf16 reduce. The weights: ZeRO-3's
// half partitions P x 2 / 8 beside the fp32 master P x 4 / 8 = 6P/8 = 5,053,811,712 B, whatever the reduce width.
TEST(ShardingMemory, Fp32GradientShardsOfLlama7bOnEightGpusByHand) {
  const Network net = zoo("llama2-7b");
  ComputeOptions o;
  o.precision = Precision::bf16;
  o.optimizer = Optimizer::adamw;
  auto mem = [&](const Sharding& sh) { return estimate_training_memory(net, 1, o, sh, 8); };
  for (const char* fw : {"torchtitan", "llm-foundry", "fsdp"})
    EXPECT_DOUBLE_EQ(in_bytes(mem(framework(fw).sharding).gradients), 3'369'207'808.0) << fw;
  Sharding zero3 = framework("deepspeed-zero3").sharding;
  EXPECT_DOUBLE_EQ(in_bytes(mem(zero3).gradients), 1'684'603'904.0);
  zero3.reduce_fp32 = true;
  EXPECT_DOUBLE_EQ(in_bytes(mem(zero3).gradients), 3'369'207'808.0);
  EXPECT_DOUBLE_EQ(in_bytes(mem(zero3).weights), 5'053'811'712.0);
}

std::string fsdp_with(const std::string& sharding) {
  return "name: bad\nio: {prefetch: true, memory: pinned}\naggregation: allreduce\noverlap: layerwise\n"
         "update: after_aggregation\nsharding: " +
      sharding + "\n";
}

TEST(ShardingBadInput, AShardGroupThatDoesNotDivideTheGpusIsOneLineExitTwo) {
  const auto fw = test::temp_file("group3.yaml", fsdp_with("{stage: 3, group: 3}"));
  const auto r = test::run_cli("predict --cluster dgx-h100-ndr --model gpt2 --framework " + fw.string() + " --gpus 3,8");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("--shard-group"), std::string::npos) << r.err;  // the option that sets the group's field
  EXPECT_NE(r.err.find("groups of 3 GPUs; 8 GPUs do not divide into them"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(ShardingBadInput, ZeroStageFourAndShardingWithoutAllReduceNameTheLine) {
  const auto four = test::temp_file("stage4.yaml", fsdp_with("{stage: 4}"));
  const auto r = test::run_cli("predict --cluster dgx-h100-ndr --model gpt2 --framework " + four.string() + " --gpus 8");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find("stage4.yaml:6:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sharding.stage"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("not 4"), std::string::npos) << r.err;
  const auto ps =
      test::temp_file("ps.yaml",
                      "name: bad\nio: {prefetch: true, memory: pinned}\naggregation: parameter_server\noverlap: layerwise\n"
                      "update: after_aggregation\nsharding: {stage: 2}\n");
  const auto q = test::run_cli("predict --cluster dgx-h100-ndr --model gpt2 --framework " + ps.string() + " --gpus 8");
  EXPECT_EQ(q.status, 2);
  EXPECT_NE(q.err.find("sharding needs 'aggregation: allreduce'"), std::string::npos) << q.err;
}

// Eq. M5's key: fp32 shards are FSDP's (stage 3), and FSDP2's per-parameter shards have no other dtype.
TEST(ShardingBadInput, ShardDtypeOutsideFsdpNamesTheLine) {
  for (const auto& [file, sharding, says] :
       {std::tuple<std::string, std::string, std::string>{"sd2.yaml", "{stage: 2, shard_dtype: fp32}", "stage 3"},
        {"sdw.yaml", "{stage: 3, params: per_parameter, shard_dtype: working}", "shard_dtype is fp32"},
        {"sdx.yaml", "{stage: 3, shard_dtype: bf16}", "bf16"}}) {
    SCOPED_TRACE(file);
    const auto fw = test::temp_file(file, fsdp_with(sharding));
    const auto r = test::run_cli("predict --cluster dgx-h100-ndr --model gpt2 --framework " + fw.string() + " --gpus 8");
    EXPECT_EQ(r.status, 2);
    EXPECT_TRUE(r.out.empty());
    EXPECT_NE(r.err.find(file + ":6:"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("shard_dtype"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

TEST(ShardingPredict, Llama7bFsdpOnDgxH100FitsAndScales) {
  // The command: llama2-7b, FSDP, bf16, 8/16/64 GPUs on DGX H100 nodes with NDR InfiniBand.
  const auto r = test::run_cli(
      "predict --cluster dgx-h100-ndr --model llama2-7b --framework fsdp --gpus 8,16,64 --precision bf16 --batch 1 "
      "--format csv");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;  // every row fits: no memory warning
}

TEST(ShardingPredict, TokensPerSecondAndMfuFollowFromSamplesPerSecond) {
  // Llama-2-7B: 4096 tokens per sample; forward 62,923,451,924,480 FLOPs per sample (models/llama2-7b.yaml,
  // "Totals"), so a trained sample is 3 × that; H100 SXM dense bf16 989 TFLOPS (topologies/gpus.yaml).
  Scenario sc;
  sc.cluster = load_cluster(resolve(DataKind::cluster, "dgx-h100-ndr", "--cluster"));
  sc.network = zoo("llama2-7b");
  sc.strategy = framework("fsdp");
  sc.batch_per_gpu = 1;
  sc.compute.precision = Precision::bf16;
  sc.compute.optimizer = Optimizer::adamw;
  const Prediction p = Predictor(sc).predict(16);
  EXPECT_NEAR(p.throughput_tokens_per_s, p.throughput_samples_per_s * 4096.0, 1e-6);
  EXPECT_NEAR(p.mfu, p.throughput_samples_per_s * 3.0 * 62'923'451'924'480.0 / (16 * 989e12), 1e-12);
  // Image models have no tokens: 0 (JSON null).
  Scenario img = sc;
  img.network = zoo("resnet50");
  img.strategy = framework("pytorch-ddp");
  EXPECT_EQ(Predictor(img).predict(8).throughput_tokens_per_s, 0.0);
}

}  // namespace
}  // namespace dlscale
