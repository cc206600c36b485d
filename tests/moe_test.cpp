// Mixture-of-experts decoders and expert parallelism (issue 37; docs/model.md, eq. P16-P18): the experts' parameters
// and active work, the layout's expert-parallel groups, the all-to-all's bytes and time, the gradient reduction and
// the memory of the experts, and the checks, each against values worked by hand.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <numbers>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "dlscale/cluster.hpp"
#include "dlscale/collective.hpp"
#include "dlscale/compute.hpp"
#include "dlscale/error.hpp"
#include "dlscale/kernels.hpp"
#include "dlscale/memory.hpp"
#include "dlscale/parallel.hpp"
#include "dlscale/zoo.hpp"
#include "support/hand_cluster.hpp"

namespace dlscale {
namespace {

using test::hand_cluster;

/// A 4-block decoder (h 256, 4 heads, s 128, vocabulary 1,000) whose MLPs are 4 SwiGLU experts of 512, top-2:
/// embedding, 4 × (norm, attention, norm, MoE), norm, output = 19 layers.
Network tiny_moe() {
  return build_decoder(
      DecoderShape{.layers = 4, .hidden = 256, .heads = 4, .ffn = 512, .vocab = 1000, .seq = 128, .experts = 4, .top_k = 2},
      "tiny-moe");
}

/// Mixtral-8x7B's config.json (recalled, not read here: 32 layers, hidden 4096, 32 heads, 8 key/value heads,
/// intermediate 14336, vocabulary 32000, 8 local experts, 2 per token).
DecoderShape mixtral_8x7b() {
  return DecoderShape{.layers = 32,
                      .hidden = 4096,
                      .heads = 32,
                      .kv_heads = 8,
                      .ffn = 14336,
                      .vocab = 32000,
                      .seq = 4096,
                      .experts = 8,
                      .top_k = 2};
}

// ---- eq. P16: the layer --------------------------------------------------------------------------------------------
TEST(MoeLayer, TinyExpertsRouterMacsAndKeptByHand) {
  const Network net = tiny_moe();
  ASSERT_EQ(net.layers.size(), 19u);
  const Layer& moe = net.layers[4];
  EXPECT_EQ(moe.experts, 4);
  EXPECT_EQ(moe.top_k, 2);
  EXPECT_EQ(moe.hidden, 512);
  // 4 experts of 3·256·512 = 393,216 and a router of 256·4 = 1,024
  EXPECT_EQ(moe.params, 4 * 393'216 + 1'024);
  // a token runs 2 experts and the router: 128·(2·393,216 + 1,024) = 100,794,368 MACs a sample
  EXPECT_DOUBLE_EQ(moe.macs_per_sample, 100'794'368.0);
  // kept: 128 tokens × (2 copies × (3·512 hidden + 256 input + 256 output) + 4 probabilities) × 4 B; the combined
  // output only feeds the residual addition, which keeps neither input (as a dense MLP's output)
  EXPECT_DOUBLE_EQ(moe.activation_bytes_per_sample, 128.0 * (2 * (1536 + 512) + 4) * 4);
}

// Eq. K21 on the experts (P16) by hand: where the framework runs its memory-bound kernels by class, the experts' SwiGLU
// runs at the vectorized rate, as a dense MLP's does. tiny_moe's MoE layer on 128 tokens, top-2 of F 512: 131,072 hidden
// elements, 5·2 B each forward (1,310,720 B), 7·2 B backward (1,835,008 B), on a GPU of 500 GB/s with vectorized
// kernels at 0.9 (450 GB/s) and 5 µs a kernel; at the fitted memory efficiency (0.8, 400 GB/s) where it does not.
TEST(MoeLayer, ExpertsActivationByKernelClassAsTheDenseMlp) {
  const Network net = tiny_moe();
  const Layer& moe = net.layers[4];
  GpuSpec gpu;
  gpu.name = gpu.architecture = "toy";
  gpu.sm_version = 80;
  gpu.sm_count = 10;
  gpu.peak_fp32 = teraflops_per_second(10);
  gpu.peak_bf16 = gpu.peak_fp16 = teraflops_per_second(80);
  gpu.memory_bandwidth = gigabytes_per_second(500);
  gpu.boost_clock = megahertz(1953.125);
  ComputeOptions o;
  o.precision = Precision::bf16;
  auto set = std::make_shared<KernelParamSet>();
  set->defaults.tensor_efficiency = 0.5;
  set->defaults.vector_efficiency = 0.8;
  set->defaults.memory_efficiency = 0.8;
  set->defaults.kernel_overhead = microseconds(5);
  set->defaults.memory_classes = {.vectorized = 0.9, .strided = 0.5, .reduction = 0.4, .softmax = 0.6, .chunk_cat = 0.4};
  o.kernel_params = set;
  const auto swiglu = [&](const ComputeOptions& opt, bool bwd) {
    for (const KernelTiming& k : layer_kernels(moe, false, false, gpu, 1, opt))
      if (k.name.ends_with(bwd ? ".experts.swiglu bwd" : ".experts.swiglu fwd")) return k;
    ADD_FAILURE() << "no experts' SwiGLU kernel";
    return KernelTiming{};
  };
  EXPECT_NEAR(in_seconds(swiglu(o, false).time), 1'310'720 / 400e9 + 5e-6, 1e-15);
  o.execution.by_class = true;
  EXPECT_DOUBLE_EQ(in_bytes(swiglu(o, false).traffic), 1'310'720.0);
  EXPECT_NEAR(in_seconds(swiglu(o, false).time), 1'310'720 / 450e9 + 5e-6, 1e-15);
  EXPECT_NEAR(in_seconds(swiglu(o, true).time), 1'835'008 / 450e9 + 5e-6, 1e-15);
}

// Mixtral's paper (Jiang et al. 2024, §2) gives 47B parameters and 13B active a token; HF's model card 46.7B. By
// hand: a block's attention 2·4096² + 2·4096·1024 = 41,943,040, two norms 8,192, 8 experts of 3·4096·14336 =
// 176,160,768 and a router 32,768; × 32, plus embedding and output 2·131,072,000 and the final norm 4,096.
TEST(MoeLayer, Mixtral8x7bTotalAndActiveParameters) {
  const Network net = build_decoder(mixtral_8x7b(), "mixtral-8x7b");
  EXPECT_EQ(net.total_params(), 32LL * (41'943'040 + 8'192 + 8LL * 176'160'768 + 32'768) + 262'144'000 + 4'096);
  EXPECT_EQ(net.total_params(), 46'702'792'704);
  // active: 2 experts a token: 32·(41,943,040 + 8,192 + 2·176,160,768 + 32,768) + 262,144,000 + 4,096 ≈ 12.88 B
  std::int64_t active = 0;
  for (const Layer& l : net.layers) active += l.experts > 0 ? l.params - 6LL * 176'160'768 : l.params;
  EXPECT_EQ(active, 12'879'925'248);
  // the MoE layer's MACs a token are its active parameters
  EXPECT_DOUBLE_EQ(net.layers[4].macs_per_sample / 4096.0, 2.0 * 176'160'768 + 32'768);
  const TransformerShape m = transformer_shape(net);
  EXPECT_EQ(m.experts, 8);
  EXPECT_EQ(m.top_k, 2);
  EXPECT_EQ(m.moe_layers, 32);
}

TEST(MoeLayer, FirstDenseBlocksAndSharedExperts) {
  DecoderShape d{.layers = 4, .hidden = 256, .heads = 4, .ffn = 1024, .vocab = 1000, .seq = 128, .experts = 8, .top_k = 2};
  d.expert_ffn = 128;
  d.shared_experts = 2;
  d.first_dense = 1;
  const Network net = build_decoder(d, "deepseek-like");
  const TransformerShape m = transformer_shape(net);
  EXPECT_EQ(m.moe_layers, 3);
  // block 0 dense (3·256·1024); blocks 1-3 a shared MLP of 2·128 and 8 experts of 128 with a router
  std::int64_t dense_mlp = 0, shared = 0, experts = 0;
  for (const Layer& l : net.layers) {
    if (l.name == "model.layers.0.mlp") dense_mlp = l.params;
    if (l.name == "model.layers.1.shared_experts") shared = l.params;
    if (l.name == "model.layers.1.block_sparse_moe") experts = l.params;
  }
  EXPECT_EQ(dense_mlp, 3 * 256 * 1024);
  EXPECT_EQ(shared, 3 * 256 * 256);
  EXPECT_EQ(experts, 8 * 3 * 256 * 128 + 256 * 8);
}

std::string spec_error(const std::string& spec) {
  try {
    parse_decoder_spec(spec, "--model");
  } catch (const InputError& e) {
    return e.message();
  }
  return "";
}

TEST(MoeLayer, DecoderSpecKeysAndTheirChecks) {
  const std::string base = "decoder:layers=2,hidden=64,heads=4,ffn=128,vocab=100,seq=16";
  const DecoderShape d = parse_decoder_spec(base + ",experts=8,top_k=2,expert_ffn=32,shared_experts=1,first_dense=1", "--model");
  EXPECT_EQ(d.experts, 8);
  EXPECT_EQ(d.top_k, 2);
  EXPECT_EQ(d.expert_ffn, 32);
  EXPECT_EQ(d.shared_experts, 1);
  EXPECT_EQ(d.first_dense, 1);
  EXPECT_EQ(spec_error(base + ",experts=8,top_k=9"), "decoder key 'top_k': 9 is more than the 8 experts");
  EXPECT_EQ(spec_error(base + ",experts=8,top_k=0"), "decoder key 'top_k': '0' is not a whole number ≥ 1");
  EXPECT_EQ(spec_error(base + ",experts=8"), "decoder key 'experts' needs 'top_k', the experts each token runs");
  EXPECT_EQ(spec_error(base + ",top_k=2"), "decoder key 'top_k' needs 'experts' (a mixture of experts)");
  EXPECT_EQ(spec_error(base + ",experts=8,top_k=2,first_dense=2"),
            "decoder key 'first_dense': 2 leaves none of the 2 layers a mixture of experts");
}

// ---- eq. P17: the groups, the parameters of a rank, the checks ---------------------------------------------------
// tp 2 × cp 2 × dp 4 on 16 GPUs, ep 4, rank order tp-cp-dp-pp: rank = tp + 2·(cp + 2·dp); the dp·cp index
// j = cp + 2·dp; EP groups are 4 consecutive j at one tp coordinate (rank 2·j), the expert-data-parallel groups
// the j equal mod 4.
TEST(MoeGroups, ExpertGroupsCarvedFromDpTimesCp) {
  ParallelLayout l;
  l.tp = 2;
  l.cp = 2;
  l.ep = 4;
  const auto ep = group_members(l, 16, ParallelGroup::ep);
  ASSERT_EQ(ep.size(), 4u);
  EXPECT_EQ(ep[0], (std::vector<int>{0, 2, 4, 6}));
  EXPECT_EQ(ep[1], (std::vector<int>{1, 3, 5, 7}));
  const auto edp = group_members(l, 16, ParallelGroup::edp);
  ASSERT_EQ(edp.size(), 8u);
  EXPECT_EQ(edp[0], (std::vector<int>{0, 8}));
  const LayoutPlacement at = place_layout(l, hand_cluster(2), 16);
  EXPECT_TRUE(at[ParallelGroup::ep].inside_node);
  EXPECT_EQ(at[ParallelGroup::edp].size, 2);
  EXPECT_FALSE(at[ParallelGroup::edp].inside_node);
}

TEST(MoeGroups, RankParametersHoldEOverEpExperts) {
  const Network net = tiny_moe();
  ParallelLayout l;
  l.tp = 2;
  l.ep = 2;
  // a MoE layer: the router whole (1,024) and 4·393,216 / (t·ep = 4) = 393,216 of the experts; 4 of them
  EXPECT_EQ(rank_expert_params(net, l, 0), 4 * 393'216);
  // dense: embedding 256,000/2, per block two norms 512 whole and attention 262,144/2, the final norm 256, the
  // output 256,000/2
  const std::int64_t dense = 128'000 + 4 * (512 + 131'072 + 1'024) + 256 + 128'000;
  EXPECT_EQ(rank_params(net, l, 0), dense + 4 * 393'216);
}

// Llama-3-8B's shape, and the same with Mixtral's routing in every block (8 experts, top-2): the checks' models.
TransformerShape llama3_8b_shape() { return {32, 4096, 32, 8, 14336, 128256, 8192}; }
TransformerShape with_mixtral_routing(TransformerShape m) {
  m.experts = 8;
  m.top_k = 2;
  m.moe_layers = m.layers;
  return m;
}

std::string field_of(const ParallelLayout& l, int gpus, const TransformerShape& m) {
  try {
    validate(l, gpus, m);
  } catch (const InputError& e) {
    return e.key() + ": " + e.message();
  }
  return "";
}

TEST(MoeGroups, ExpertParallelChecksNameEp) {
  const TransformerShape dense = llama3_8b_shape();
  const TransformerShape moe = with_mixtral_routing(dense);
  ParallelLayout l;
  l.tp = 8;
  l.sp = true;  // Megatron-Core asks a mixture of experts under TP for sequence parallelism
  l.ep = 2;
  EXPECT_EQ(field_of(l, 16, moe), "");
  EXPECT_EQ(field_of(l, 16, dense), "ep: ep 2 needs a model with experts (a mixture of experts)");
  l.ep = 3;
  EXPECT_EQ(field_of(l, 24, moe), "ep: ep 3 does not divide the 8 experts");
  l.ep = 4;
  EXPECT_EQ(field_of(l, 16, moe), "ep: ep 4 does not divide dp 2 × cp 1 = 2 ranks");
  l.cp = 2;
  EXPECT_EQ(field_of(l, 32, moe), "");  // dp 2 × cp 2
  // without SP every TP rank would route all its tokens (eq. P18 t times over): refused at the field
  l.sp = false;
  EXPECT_EQ(field_of(l, 32, moe),
            "sp: ep 4 with tp 8 needs sequence parallelism (sp), as Megatron-Core requires of a "
            "mixture of experts under tensor parallelism");
  l.ep = 1;  // no expert parallelism: no all-to-all to miscount, accepted
  EXPECT_EQ(field_of(l, 32, moe), "");
}

// ---- eq. P18: the all-to-all -----------------------------------------------------------------------------------
// Mixtral-8x7B, b 1, s 4096, bf16, ep 8: 4096 tokens × 2 copies × 4096 × 2 B × 7/8 = 58,720,256 B a rank.
TEST(MoeAllToAll, BytesOfOneDispatchByHand) {
  const TransformerShape m = transformer_shape(build_decoder(mixtral_8x7b(), "mixtral-8x7b"));
  ParallelLayout l;
  l.ep = 8;
  EXPECT_DOUBLE_EQ(in_bytes(moe_alltoall_bytes(l, m, 2.0)), 58'720'256.0);
  l.tp = 2;
  l.sp = true;  // each TP rank routes its half of the sequence
  EXPECT_DOUBLE_EQ(in_bytes(moe_alltoall_bytes(l, m, 2.0)), 29'360'128.0);
  l.ep = 1;
  EXPECT_EQ(moe_alltoall_bytes(l, m, 2.0), Bytes{});
}

TEST(MoeAllToAll, InsideANodeAndAcrossNodesByHand) {
  const Bytes sent = bytes(58'720'256.0);
  {  // ep 8 on one node: 7 parts over the GPU's link, 1 µs + 58,720,256 B / 100 GB/s, and 6 more latencies
    ParallelLayout l;
    l.ep = 8;
    const Cluster c = hand_cluster(1);
    EXPECT_NEAR(in_seconds(alltoall_time(c, place_layout(l, c, 8)[ParallelGroup::ep], sent)), 7e-6 + 587.20256e-6, 1e-12);
  }
  // tp 2 × ep 8 on two nodes: the EP group of rank 0 is 0, 2, ..., 14, four ranks a node; 3 parts of S/7 stay on
  // the node (1 µs + 3·S/7 / 100 GB/s + 2 µs), 4 leave it over the node's one NIC, which the node's two EP groups
  // (one a TP coordinate) share (eq. P11: share 2): 5 µs + 2·4·S/7 / 10 GB/s + 3·5 µs, the longer
  ParallelLayout l;
  l.tp = 2;
  l.ep = 8;
  const Cluster c = hand_cluster(2);
  const LayoutPlacement at = place_layout(l, c, 16);
  EXPECT_EQ(at[ParallelGroup::ep].first, (std::vector<int>{0, 2, 4, 6, 8, 10, 12, 14}));
  EXPECT_DOUBLE_EQ(at[ParallelGroup::ep].nic_share, 2.0);
  const double part = 58'720'256.0 / 7;
  EXPECT_NEAR(in_seconds(alltoall_time(c, at[ParallelGroup::ep], sent)), 20e-6 + 2 * 4 * part / 1e10, 1e-12);
}

// The tiny MoE decoder's step on 2 GPUs of one node (hand_cluster(1)), fp32, m 1, its 19 layers measured whole: 1 ms
// forward, 2 ms backward, 0.5 ms update each.
ParallelStep tiny_moe_step(const Network& net, const ParallelLayout& l) {
  LayerTimes whole;
  whole.forward.assign(19, milliseconds(1.0));
  whole.backward.assign(19, milliseconds(2.0));
  whole.update.assign(19, milliseconds(0.5));
  const Cluster c = hand_cluster(1);
  return parallel_step(net, whole, c, *make_alpha_beta_model(c), l, 2, ComputeOptions{}, Sharding{});
}

// ---- eq. P13 with P17-P18: a step by hand ------------------------------------------------------------------------
// The tiny MoE decoder on 2 GPUs of one node, ep 2 (dp 2, the experts' data-parallel group of one), fp32, m 1:
// every layer 1 ms forward, 2 ms backward, 0.5 ms update (a MoE layer's over ep: 0.25 ms). Each of the 4 MoE
// blocks: 4 all-to-alls of 128 tokens × 2 × 256 × 4 B × 1/2 = 131,072 B, 1 µs + 1.31072 µs each. The gradients:
// the dense 1,566,976 parameters over dp 2 (2 µs + 4·P / 100 GB/s), the experts' over a group of one (nothing).
TEST(MoeStep, ExpertParallelStepByHand) {
  const Network net = tiny_moe();
  ParallelLayout l;
  l.ep = 2;
  const ParallelStep st = tiny_moe_step(net, l);
  const double a2a = 16 * (1e-6 + 1.31072e-6);
  EXPECT_NEAR(in_seconds(st.ep_comm), a2a, 1e-15);
  EXPECT_NEAR(in_seconds(st.per_microbatch), 57e-3 + a2a, 1e-14);
  const double dense = 256'000 + 4 * (512 + 262'144 + 1'024) + 256 + 256'000;
  EXPECT_EQ(rank_params(net, l, 0) - rank_expert_params(net, l, 0), 1'566'976);
  EXPECT_NEAR(in_seconds(st.dp_comm), 2e-6 + 4.0 * dense / 1e11, 1e-15);
  EXPECT_NEAR(in_seconds(st.update), 15 * 0.5e-3 + 4 * 0.25e-3, 1e-15);
  EXPECT_NEAR(in_seconds(st.step), 57e-3 + a2a + 2e-6 + 4.0 * dense / 1e11 + 8.5e-3, 1e-14);
}

// Eq. P17's memory: under the distributed optimiser (ZeRO-1) on dp 4, ep 2, the dense state is sharded over 4 ranks
// and the experts' over their 2 expert-data-parallel ranks; fp32 weights and gradients whole.
TEST(MoeStep, ExpertStateShardedOverTheExpertDataParallelGroup) {
  const Network net = tiny_moe();
  ParallelLayout l;
  l.ep = 2;
  const ComputeOptions opt;
  Sharding sh;
  sh.stage = 1;
  const MemoryEstimate m = rank_memory(net, l, 0, opt, sh, 4, ActivationRecompute::none);
  const double dense = 1'566'976, experts = 4 * 4 * 393'216 / 2.0;
  const double words = optimizer_state_words(opt.optimizer);
  EXPECT_DOUBLE_EQ(in_bytes(m.optimizer_state), 4.0 * words * (dense / 4 + experts / 2));
  EXPECT_DOUBLE_EQ(in_bytes(m.weights), 4.0 * (dense + experts));
  EXPECT_DOUBLE_EQ(in_bytes(m.gradients), 4.0 * (dense + experts));
}

// ---- eq. P23: routing imbalance ----------------------------------------------------------------------------------
/// The toy GPU and kernel parameters of ExpertsActivationByKernelClassAsTheDenseMlp, bf16.
struct Toy {
  GpuSpec gpu;
  ComputeOptions opt;
  std::shared_ptr<KernelParamSet> set = std::make_shared<KernelParamSet>();
  Toy() {
    gpu.name = gpu.architecture = "toy";
    gpu.sm_version = 80;
    gpu.sm_count = 10;
    gpu.peak_fp32 = teraflops_per_second(10);
    gpu.peak_bf16 = gpu.peak_fp16 = teraflops_per_second(80);
    gpu.memory_bandwidth = gigabytes_per_second(500);
    gpu.boost_clock = megahertz(1953.125);
    opt.precision = Precision::bf16;
    set->defaults.tensor_efficiency = 0.5;
    set->defaults.vector_efficiency = 0.8;
    set->defaults.memory_efficiency = 0.8;
    set->defaults.kernel_overhead = microseconds(5);
    opt.kernel_params = set;
  }
};

KernelTiming kernel_named(const std::vector<KernelTiming>& ks, const std::string& suffix) {
  for (const KernelTiming& k : ks)
    if (k.name.ends_with(suffix)) return k;
  ADD_FAILURE() << "no kernel " << suffix;
  return KernelTiming{};
}

const Layer& first_moe(const Network& net) {
  for (const Layer& l : net.layers)
    if (l.experts > 0) return l;
  throw std::logic_error("no MoE layer");
}

// One Mixtral-8x7B MoE layer (b 1, s 4096, top-2, D 4096, F 14336, SwiGLU) on ep 8, one expert a rank, at imbalance
// 1.5: the busiest rank's expert runs 4096·2·1.5 = 12,288 token copies where balanced routing gives 8,192. Up (and
// gate, 2F = 28,672 wide) forward is a 12,288 × 28,672 × 4,096 GEMM, 2·12,288·28,672·4,096 FLOPs; down forward
// 12,288 × 4,096 × 14,336; the weight gradients have 12,288 as their inner size. Each timed as the kernel model times
// that one GEMM (plan_gemm, the reference); the SwiGLU 5 passes of 12,288·14,336 bf16 elements; the router and the
// permutations stay on the rank's own 8,192 copies.
TEST(MoeImbalance, ExpertGemmsOfTheBusiestRankByHand) {
  const Network net = build_decoder(mixtral_8x7b(), "mixtral-8x7b");
  ParallelLayout l;
  l.ep = 8;
  l.moe_imbalance = 1.5;
  const Layer busiest = first_moe(tp_rank_network(net, l));
  EXPECT_EQ(busiest.local_experts, 1);
  EXPECT_DOUBLE_EQ(busiest.expert_load, 1.5);
  l.moe_imbalance = 1.0;
  const Layer balanced = first_moe(tp_rank_network(net, l));
  const Toy toy;
  const auto ks = layer_kernels(busiest, false, false, toy.gpu, 1, toy.opt);
  const auto even = layer_kernels(balanced, false, false, toy.gpu, 1, toy.opt);
  const auto gemm = [&](std::int64_t m, std::int64_t n, std::int64_t k) {
    return plan_gemm(GemmShape{m, n, k, 1}, toy.gpu, Precision::bf16, toy.set->defaults).time;
  };
  const KernelTiming up = kernel_named(ks, ".experts.up fwd");
  EXPECT_DOUBLE_EQ(in_flops(up.flops), 2.0 * 12'288 * 28'672 * 4'096);
  EXPECT_EQ(up.time, gemm(12'288, 28'672, 4'096));
  EXPECT_EQ(kernel_named(even, ".experts.up fwd").time, gemm(8'192, 28'672, 4'096));
  EXPECT_EQ(kernel_named(ks, ".experts.down fwd").time, gemm(12'288, 4'096, 14'336));
  EXPECT_EQ(kernel_named(ks, ".experts.up wgrad").time, gemm(28'672, 4'096, 12'288));
  EXPECT_EQ(kernel_named(ks, ".experts.down dgrad").time, gemm(12'288, 14'336, 4'096));
  // a large GEMM on the toy GPU runs near its 0.5 × 80 TFLOP/s: the 1.5 × shape takes ~1.5 × the time
  EXPECT_NEAR(in_seconds(up.time) / in_seconds(kernel_named(even, ".experts.up fwd").time), 1.5, 0.05);
  EXPECT_DOUBLE_EQ(in_bytes(kernel_named(ks, ".experts.swiglu fwd").traffic), 5.0 * 12'288 * 14'336 * 2);
  EXPECT_EQ(kernel_named(ks, ".permute fwd").traffic, kernel_named(even, ".permute fwd").traffic);
  EXPECT_EQ(kernel_named(ks, ".router top-k fwd").traffic, kernel_named(even, ".router top-k fwd").traffic);
}

// The all-to-all of that layer (BytesOfOneDispatchByHand's 58,720,256 B a rank): the busiest rank receives 1.5 × the
// mean's copies in the dispatch and sends them back in the combine, 88,080,384 B; at ep 1 nothing, whatever f.
TEST(MoeImbalance, AllToAllBytesOfTheBusiestRankByHand) {
  const TransformerShape m = transformer_shape(build_decoder(mixtral_8x7b(), "mixtral-8x7b"));
  ParallelLayout l;
  l.ep = 8;
  l.moe_imbalance = 1.5;
  EXPECT_DOUBLE_EQ(in_bytes(moe_alltoall_bytes(l, m, 2.0)), 88'080'384.0);
  EXPECT_DOUBLE_EQ(moe_rank_load(l, m.experts, m.top_k), 1.5);
  l.ep = 1;
  EXPECT_EQ(moe_alltoall_bytes(l, m, 2.0), Bytes{});
  EXPECT_DOUBLE_EQ(moe_rank_load(l, m.experts, m.top_k), 1.0);
}

// ExpertParallelStepByHand at imbalance 1.5: every rank waits for the busiest, whose 4 MoE layers (measured whole:
// 1 ms forward, 2 ms backward) take 1.5 × as long, 4·0.5·3 ms = 6 ms more, and whose 16 all-to-alls carry
// 1.5 × 131,072 B: 1 µs + 1.96608 µs each.
TEST(MoeImbalance, StepWaitsForTheBusiestRankByHand) {
  const Network net = tiny_moe();
  ParallelLayout l;
  l.ep = 2;
  l.moe_imbalance = 1.5;
  const ParallelStep st = tiny_moe_step(net, l);
  const double a2a = 16 * (1e-6 + 1.96608e-6);
  EXPECT_NEAR(in_seconds(st.ep_comm), a2a, 1e-15);
  EXPECT_NEAR(in_seconds(st.per_microbatch), 63e-3 + a2a, 1e-14);
  EXPECT_NEAR(in_seconds(st.update), 15 * 0.5e-3 + 4 * 0.25e-3, 1e-15);  // the update is the rank's parameters'
}

// The busiest rank keeps its copies f times (fp32): tiny_moe's layer keeps 128·(2·(1536 + 512) + 4)·4 B a sample,
// 128·2·(1536 + 512)·4 of them the copies' inputs, hidden activations and outputs; at 1.5 half of those again. The
// residual sum after it keeps its 128·256 output whatever f.
TEST(MoeImbalance, BusiestRankKeepsItsCopiesFTimes) {
  const Network net = tiny_moe();
  const Layer& moe = net.layers[4];
  ParallelLayout l;
  l.ep = 2;
  const ComputeOptions opt;
  double ops = 0.0;  // the operators after the layer (the residual sum's output), kept as they are
  for (const Operator& o : moe.ops) ops += o.activation_bytes_per_sample;
  EXPECT_DOUBLE_EQ(ops, 128.0 * 256 * 4);
  const double balanced = 128.0 * (2 * (1536 + 512) + 4) * 4 + ops;
  EXPECT_DOUBLE_EQ(in_bytes(layer_activation_bytes(moe, l, opt, false)), balanced);
  l.moe_imbalance = 1.5;
  EXPECT_DOUBLE_EQ(in_bytes(layer_activation_bytes(moe, l, opt, false)), balanced + 0.5 * 128.0 * 2 * (1536 + 512) * 4);
  l.ep = 1;  // one rank holds every expert: nothing to charge
  EXPECT_DOUBLE_EQ(in_bytes(layer_activation_bytes(moe, l, opt, false)), balanced);
}

// The checks: below 1 or not a number, and above what ep ranks reach: Mixtral's 8 experts, top-2, on ep 8 (one
// expert a rank: a token puts at most 1 of its 2 copies on a rank) at most 8·1/2 = 4; on ep 2 (4 experts a rank) 2.
TEST(MoeImbalance, ChecksNameMoeImbalance) {
  const TransformerShape dense = llama3_8b_shape();
  const TransformerShape moe = with_mixtral_routing(dense);
  ParallelLayout l;
  l.ep = 8;
  l.moe_imbalance = 4.0;
  EXPECT_EQ(field_of(l, 8, moe), "");
  EXPECT_DOUBLE_EQ(moe_imbalance_limit(8, moe), 4.0);
  EXPECT_DOUBLE_EQ(moe_imbalance_limit(2, moe), 2.0);
  l.moe_imbalance = 4.5;
  EXPECT_EQ(field_of(l, 8, moe),
            "moe_imbalance: 4.5 is more than 8 expert-parallel ranks can reach: a token sends at most min(K 2, E/ep 1) of "
            "its copies to one rank, at most 4 times the mean");
  l.moe_imbalance = 0.9;
  EXPECT_EQ(field_of(l, 8, moe),
            "moe_imbalance: the busiest expert-parallel rank's load over the mean must be at least 1, got 0.9");
  l.moe_imbalance = std::nan("");
  EXPECT_EQ(field_of(l, 8, moe),
            "moe_imbalance: the busiest expert-parallel rank's load over the mean must be at least 1, got nan");
  l.ep = 1;  // not charged at ep 1, but still a load over the mean
  l.moe_imbalance = 3.0;
  EXPECT_EQ(field_of(l, 8, dense), "");
}

// ---- eq. P24: capacity factor, padding, and the spread of the experts' loads ---------------------------------------
// One Mixtral-8x7B MoE layer (b 1, s 4096, top-2, D 4096, F 14336) on ep 8 (one expert a rank): balanced, an expert
// runs 4096·2 = 8,192 copies and each rank sends 58,720,256 B in an all-to-all (MoeAllToAll.BytesOfOneDispatchByHand).
// Padded to capacity C 1.25, every expert runs ⌈8,192·1.25⌉ = 10,240 copies whatever the router does: up forward
// 2·10,240·28,672·4,096 FLOPs, every rank sends 1.25·58,720,256 = 73,400,320 B. Dropping at 1.25, the busiest rank
// runs min(f, 1.25): at f 1.5, 10,240 copies and 73,400,320 B; at f 1.1, ⌈9,011.2⌉ = 9,012 copies and
// 1.1·58,720,256 = 64,592,281.6 B (under the cap: nothing dropped).
TEST(MoeCapacity, Mixtral8x7bExpertGemmsAndAllToAllPaddedAndDroppedByHand) {
  const Network net = build_decoder(mixtral_8x7b(), "mixtral-8x7b");
  const TransformerShape m = transformer_shape(net);
  const Toy toy;
  const auto up_flops = [&](const ParallelLayout& l) {
    const Layer x = first_moe(tp_rank_network(net, l));
    return in_flops(kernel_named(layer_kernels(x, false, false, toy.gpu, 1, toy.opt), ".experts.up fwd").flops);
  };
  ParallelLayout l;
  l.ep = 8;
  l.moe_expert_capacity_factor = 1.25;
  l.moe_pad_expert_input_to_capacity = true;
  for (const double f : {1.0, 1.5}) {  // padded: the router's spread does not matter
    l.moe_imbalance = f;
    EXPECT_DOUBLE_EQ(moe_rank_load(l, m.experts, m.top_k), 1.25);
    EXPECT_DOUBLE_EQ(up_flops(l), 2.0 * 10'240 * 28'672 * 4'096);
    EXPECT_DOUBLE_EQ(in_bytes(moe_alltoall_bytes(l, m, 2.0)), 73'400'320.0);
  }
  l.moe_pad_expert_input_to_capacity = false;  // dropping
  l.moe_imbalance = 1.5;
  EXPECT_DOUBLE_EQ(up_flops(l), 2.0 * 10'240 * 28'672 * 4'096);
  EXPECT_DOUBLE_EQ(in_bytes(moe_alltoall_bytes(l, m, 2.0)), 73'400'320.0);
  l.moe_imbalance = 1.1;
  EXPECT_DOUBLE_EQ(up_flops(l), 2.0 * 9'012 * 28'672 * 4'096);
  EXPECT_NEAR(in_bytes(moe_alltoall_bytes(l, m, 2.0)), 64'592'281.6, 1e-6);
  // below 1 the cap drops even balanced copies: C 0.5 leaves 4,096 of the 8,192
  l.moe_imbalance = 1.0;
  l.moe_expert_capacity_factor = 0.5;
  EXPECT_DOUBLE_EQ(up_flops(l), 2.0 * 4'096 * 28'672 * 4'096);
  // one rank of all 8 experts (ep 1), padded to 1.25: each expert 10,240/8 = 1,280 copies, no all-to-all
  l.ep = 1;
  l.moe_expert_capacity_factor = 1.25;
  l.moe_pad_expert_input_to_capacity = true;
  EXPECT_DOUBLE_EQ(up_flops(l), 8.0 * 2.0 * 1'280 * 28'672 * 4'096);
  EXPECT_EQ(moe_alltoall_bytes(l, m, 2.0), Bytes{});
}

// Padded, the busiest rank keeps C times the copies (BusiestRankKeepsItsCopiesFTimes' figures): tiny_moe at C 1.25
// keeps a quarter of 128·2·(1536 + 512)·4 B more; dropping at 0.5 half of them less.
TEST(MoeCapacity, KeptCopiesFollowTheCapacity) {
  const Network net = tiny_moe();
  const Layer& moe = net.layers[4];
  const ComputeOptions opt;
  ParallelLayout l;
  l.ep = 2;
  const double balanced = in_bytes(layer_activation_bytes(moe, l, opt, false));
  const double copies = 128.0 * 2 * (1536 + 512) * 4;
  l.moe_expert_capacity_factor = 1.25;
  l.moe_pad_expert_input_to_capacity = true;
  EXPECT_DOUBLE_EQ(in_bytes(layer_activation_bytes(moe, l, opt, false)), balanced + 0.25 * copies);
  l.moe_pad_expert_input_to_capacity = false;
  l.moe_expert_capacity_factor = 0.5;
  EXPECT_DOUBLE_EQ(in_bytes(layer_activation_bytes(moe, l, opt, false)), balanced - 0.5 * copies);
}

// The expected maximum of n standard normals: 1/√π at 2 and 3/(2√π) at 3 (exact: E|Z1 − Z2|/2 and its order-statistic
// form), 3/(2√π)·(1 + (2/π)·asin(1/3)) at 4 and 5/(4√π)·(1 + (6/π)·asin(1/3)) at 5 (the closed forms for n ≤ 5,
// recalled from the order-statistics literature, David & Nagaraja, "Order Statistics", 3rd ed., §4.9; not read here).
TEST(MoeSpread, ExpectedMaximumOfStandardNormalsClosedForms) {
  const double rpi = std::sqrt(std::numbers::pi), a = std::asin(1.0 / 3.0) / std::numbers::pi;
  EXPECT_EQ(expected_max_standard_normal(1), 0.0);
  EXPECT_NEAR(expected_max_standard_normal(2), 1.0 / rpi, 1e-9);
  EXPECT_NEAR(expected_max_standard_normal(3), 1.5 / rpi, 1e-9);
  EXPECT_NEAR(expected_max_standard_normal(4), 1.5 / rpi * (1.0 + 2.0 * a), 1e-9);
  EXPECT_NEAR(expected_max_standard_normal(5), 1.25 / rpi * (1.0 + 6.0 * a), 1e-9);
}

// Eq. P24 against a Monte Carlo: E experts' loads 1 + v·(W_i − W̄) (W standard normal: the loads' spread v about
// their fixed total), summed over ep ranks of E/ep consecutive experts; the busiest rank's sum over the mean rank's,
// averaged over 20,000 draws (fixed seed), within 4 standard errors of 1 + v·m_ep·√(ep/E). Mixtral's 8 experts and a
// 64-expert layer, v 0.3; the busiest rank's factor shrinks as ep falls.
TEST(MoeSpread, BusiestRankOfSummedExpertLoadsMatchesAMonteCarlo) {
  std::mt19937_64 rng(20261128);
  std::normal_distribution<double> z;
  const double v = 0.3;
  for (const int experts : {8, 64}) {
    double last = 0.0;
    for (int ep = 1; ep <= experts; ep *= 2) {
      const int n = experts / ep;
      constexpr int kDraws = 20'000;
      double sum = 0.0, sum2 = 0.0;
      std::vector<double> w(static_cast<std::size_t>(experts));
      for (int d = 0; d < kDraws; ++d) {
        double mean = 0.0;
        for (double& x : w) mean += (x = z(rng)) / experts;
        double most = -1e300;
        for (int r = 0; r < ep; ++r) {
          double rank = 0.0;
          for (int i = r * n; i < (r + 1) * n; ++i) rank += 1.0 + v * (w[static_cast<std::size_t>(i)] - mean);
          most = std::max(most, rank / n);
        }
        sum += most;
        sum2 += most * most;
      }
      const double mc = sum / kDraws, se = std::sqrt(std::max(sum2 / kDraws - mc * mc, 0.0) / kDraws);
      const double f = moe_imbalance_from_spread(ep, experts, v);
      EXPECT_NEAR(f, mc, 4.0 * se + 1e-12) << experts << " experts, ep " << ep;
      EXPECT_GE(f, last) << experts << " experts, ep " << ep;
      last = f;
    }
  }
}

// The layout's load from the spread: Mixtral (8 experts, top-2) at v 0.3: ep 2, 1 + 0.3·(1/√π)·√(2/8) = 1.0846; ep 8,
// 1 + 0.3·m_8 (1.4236, tabulated; recalled) = 1.427; at v 5 ep 8 reaches P23's limit 4; a dropping cap of 1.25 holds
// ep 8 to 1.25.
TEST(MoeSpread, RankLoadFollowsEpAndItsLimits) {
  const TransformerShape m = with_mixtral_routing(llama3_8b_shape());
  ParallelLayout l;
  l.moe_expert_load_cv = 0.3;
  EXPECT_DOUBLE_EQ(moe_rank_load(l, m.experts, m.top_k), 1.0);  // ep 1
  l.ep = 2;
  EXPECT_NEAR(moe_rank_load(l, m.experts, m.top_k), 1.0 + 0.3 / std::sqrt(std::numbers::pi) * 0.5, 1e-9);
  l.ep = 8;
  EXPECT_NEAR(moe_rank_load(l, m.experts, m.top_k), 1.0 + 0.3 * 1.4236, 1e-4);
  l.moe_expert_capacity_factor = 1.25;
  EXPECT_DOUBLE_EQ(moe_rank_load(l, m.experts, m.top_k), 1.25);
  l.moe_expert_capacity_factor.reset();
  l.moe_expert_load_cv = 5.0;
  EXPECT_DOUBLE_EQ(moe_rank_load(l, m.experts, m.top_k), 4.0);
}

// The checks: a capacity factor finite and above 0, padding only with one, a spread finite and ≥ 0 and not beside an
// imbalance; at ep 1 too (they act on one rank's experts as well).
TEST(MoeCapacity, ChecksNameTheirFields) {
  const TransformerShape moe = with_mixtral_routing(llama3_8b_shape());
  ParallelLayout l;
  l.moe_expert_capacity_factor = 1.0;
  EXPECT_EQ(field_of(l, 8, moe), "");
  for (const double c : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    l.moe_expert_capacity_factor = c;
    EXPECT_EQ(field_of(l, 8, moe), fmt::format("moe_expert_capacity_factor: must be a finite number above 0, got {}", c));
  }
  l.moe_expert_capacity_factor.reset();
  l.moe_pad_expert_input_to_capacity = true;
  EXPECT_EQ(field_of(l, 8, moe),
            "moe_pad_expert_input_to_capacity: padding to capacity needs a capacity factor (moe_expert_capacity_factor)");
  l.moe_pad_expert_input_to_capacity = false;
  l.moe_expert_load_cv = -0.1;
  EXPECT_EQ(field_of(l, 8, moe),
            "moe_expert_load_cv: the per-expert load spread must be a finite number of at least 0, got -0.1");
  l.moe_expert_load_cv = 0.3;
  l.moe_imbalance = 1.2;
  EXPECT_EQ(field_of(l, 8, moe),
            "moe_expert_load_cv: give the per-expert load spread (0.3) or the routing imbalance (1.2), not both");
}

}  // namespace
}  // namespace dlscale
