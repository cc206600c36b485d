// Model parallelism (tensor, sequence, pipeline, context): layout checks, bytes per block, the pipeline's bubble
// and in-flight micro-batches, activation memory per layer and placement on the topology, each against values
// worked by hand (docs/model.md, "Model parallelism", P1-P12).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "dlscale/cluster.hpp"
#include "dlscale/equations.hpp"
#include "dlscale/error.hpp"
#include "dlscale/io.hpp"
#include "dlscale/kernels.hpp"
#include "dlscale/parallel.hpp"
#include "dlscale/zoo.hpp"
#include "support/hand_cluster.hpp"

namespace dlscale {
namespace {

Network arch(const std::string& name) { return build_network(resolve_architecture(name, "NAME")); }
Cluster cluster(const std::string& name) { return load_cluster(resolve(DataKind::cluster, name, "--cluster")); }

double sum(const std::vector<CollectiveCall>& calls, int n, bool backward) {
  double b = 0;
  for (const auto& c : calls)
    if (c.backward == backward) b += in_bytes(wire_bytes(c, n));
  return b;
}

constexpr double kBf16 = 2.0;

using test::hand_cluster;

/// The 4-block decoder of the hand-timed steps (h 256, 4 heads, ffn 512, vocabulary 1,000, s 128): 19 layers
/// (4·blocks + 3 for `blocks`).
Network tiny_decoder(int blocks = 4) {
  DecoderShape d;
  d.layers = blocks;
  d.hidden = 256;
  d.heads = 4;
  d.ffn = 512;
  d.vocab = 1000;
  d.seq = 128;
  return build_decoder(d, blocks == 4 ? "tiny" : "tiny" + std::to_string(blocks));
}

// ---- the shape read from a network ---------------------------------------------------------------------
TEST(ParallelShape, Llama2_7bFromItsLayers) {
  const TransformerShape m = transformer_shape(arch("llama2-7b"));
  EXPECT_EQ(m.layers, 32);
  EXPECT_EQ(m.hidden, 4096);
  EXPECT_EQ(m.heads, 32);
  EXPECT_EQ(m.kv_heads, 32);
  EXPECT_EQ(m.head_dim(), 128);
  EXPECT_EQ(m.ffn, 11008);
  EXPECT_EQ(m.vocab, 32000);
  EXPECT_EQ(m.seq, 4096);
}

// ---- eq. P1-P4 on one Llama-2-7B block: h 4096, s 4096, b 1, bf16, 32 heads --------------------------------
// The activation of one TP collective: S = b·s·h·2 B = 4096·4096·2 = 33,554,432 B.
TEST(ParallelTraffic, TensorParallelAllReducesOfOneLlamaBlock) {
  const TransformerShape m = transformer_shape(arch("llama2-7b"));
  ParallelLayout l;
  l.tp = 8;
  EXPECT_DOUBLE_EQ(in_bytes(tp_activation_bytes(l, m, kBf16)), 33'554'432.0);
  const auto calls = tp_block_collectives(l, m, kBf16);
  // Two all-reduces forward, two backward; each puts 2·(7/8)·S = 58,720,256 B on a GPU's wire.
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].op, CollectiveOp::allreduce);
  EXPECT_EQ(calls[0].count, 2);
  EXPECT_DOUBLE_EQ(sum(calls, 8, false), 2 * 58'720'256.0);  // 117,440,512
  EXPECT_DOUBLE_EQ(sum(calls, 8, true), 2 * 58'720'256.0);
  // TP 1: nothing.
  l.tp = 1;
  EXPECT_TRUE(tp_block_collectives(l, m, kBf16).empty());
}

TEST(ParallelTraffic, SequenceParallelSameForwardVolumePlusBackwardRegather) {
  const TransformerShape m = transformer_shape(arch("llama2-7b"));
  ParallelLayout l;
  l.tp = 8;
  l.sp = true;
  const auto calls = tp_block_collectives(l, m, kBf16);
  // Forward: 2 all-gathers + 2 reduce-scatters of S, (7/8)·S = 29,360,128 B each: 117,440,512 B, the same bus
  // volume as the two all-reduces. Backward: the conjugates (2 RS + 2 AG) and the 2 re-gathers of the
  // column-parallel inputs: 6 × 29,360,128 = 176,160,768 B, of which 58,720,256 overlapped with dgrad.
  EXPECT_DOUBLE_EQ(sum(calls, 8, false), 117'440'512.0);
  EXPECT_DOUBLE_EQ(sum(calls, 8, true), 176'160'768.0);
  double overlapped = 0;
  for (const auto& c : calls)
    if (c.overlapped) overlapped += in_bytes(wire_bytes(c, 8));
  EXPECT_DOUBLE_EQ(overlapped, 58'720'256.0);
  // The pipeline's p2p tensor is scattered over the TP group: S/8 = 4,194,304 B (eq. P4); without SP all of S.
  EXPECT_DOUBLE_EQ(in_bytes(pp_p2p_bytes(l, m, kBf16)), 4'194'304.0);
  l.sp = false;
  EXPECT_DOUBLE_EQ(in_bytes(pp_p2p_bytes(l, m, kBf16)), 33'554'432.0);
}

TEST(ParallelTraffic, ContextParallelKvRingOfOneLlamaBlock) {
  const TransformerShape m = transformer_shape(arch("llama2-7b"));
  ParallelLayout l;
  l.cp = 2;
  // CP 2, TP 1: the rank's K and V of s/2 = 2048 tokens, 32 heads × 128: 2·2048·4096·2 B = 33,554,432 B, what a
  // forward ring step sends (eq. P15b: c−1 = 1 of them; backward 2(c−1) such blocks, K/V and dK/dV).
  EXPECT_DOUBLE_EQ(in_bytes(cp_kv_chunk_bytes(l, m, kBf16)), 33'554'432.0);
  // CP 4: three steps of 2·1024·4096·2 = 16,777,216 B.
  l.cp = 4;
  EXPECT_DOUBLE_EQ(in_bytes(cp_kv_chunk_bytes(l, m, kBf16)), 16'777'216.0);
  // CP 2 with TP 8: each rank holds 32/8 = 4 heads: 2·2048·4·128·2 = 4,194,304 B a chunk.
  l.cp = 2;
  l.tp = 8;
  EXPECT_DOUBLE_EQ(in_bytes(cp_kv_chunk_bytes(l, m, kBf16)), 4'194'304.0);
  // GQA, 8 key/value heads (Llama-3-70B: h 8192, 64 heads) on TP 16: one head per rank, replicated (eq. P3):
  // 2·(8192/2)·1·128·2 = 2,097,152 B.
  const TransformerShape g{80, 8192, 64, 8, 28672, 128256, 8192};
  l.tp = 16;
  EXPECT_DOUBLE_EQ(in_bytes(cp_kv_chunk_bytes(l, g, kBf16)), 2'097'152.0);
}

// ---- eq. P15: context parallelism's ring step by step --------------------------------------------------------
// P15a against the mask itself: s = 2c·n tokens in 2c chunks, rank i holding chunks i and 2c−1−i, at step j the
// tokens of rank (i−j) mod c. Count, for each rank and step, the causal pairs (key ≤ query, the diagonal pair a
// half), the queries that see any key, and the keys any query sees: the equation's shares of the (s/c)² square,
// of the s/c queries and of the s/c keys; over all ranks and steps every pair of the mask once, ½·s².
TEST(ParallelRing, LoadBalancedBlocksCoverTheCausalMaskOnce) {
  for (const int c : {2, 3, 4, 8}) {
    const int n = 3, s = 2 * c * n, local = s / c;
    const auto tokens = [&](int rank) {
      std::vector<int> t;
      for (int chunk : {rank, 2 * c - 1 - rank})
        for (int k = 0; k < n; ++k) t.push_back(chunk * n + k);
      return t;
    };
    double all = 0.0;
    for (int rank = 0; rank < c; ++rank) {
      for (int step = 0; step < c; ++step) {
        const std::vector<int> q = tokens(rank), kv = tokens(((rank - step) % c + c) % c);
        double pairs = 0.0;
        std::vector<bool> q_sees(q.size(), false), k_seen(kv.size(), false);
        for (std::size_t a = 0; a < q.size(); ++a)
          for (std::size_t b = 0; b < kv.size(); ++b) {
            if (kv[b] > q[a]) continue;
            pairs += kv[b] == q[a] ? 0.5 : 1.0;
            q_sees[a] = k_seen[b] = true;
          }
        const eq::RingBlock blk = eq::ring_attention_block(rank, step, c);
        const auto share = [&](const std::vector<bool>& v) {
          return static_cast<double>(std::count(v.begin(), v.end(), true)) / local;
        };
        EXPECT_DOUBLE_EQ(blk.work(), pairs / (local * local)) << c << " " << rank << " " << step;
        EXPECT_DOUBLE_EQ(blk.queries, share(q_sees)) << c << " " << rank << " " << step;
        EXPECT_DOUBLE_EQ(blk.keys, share(k_seen)) << c << " " << rank << " " << step;
        EXPECT_DOUBLE_EQ(blk.work(), 0.5);  // every step the same work: the timed causal block of s/c
        all += pairs;
      }
    }
    EXPECT_DOUBLE_EQ(all, 0.5 * s * s) << c;
  }
}

// P15b by hand: four steps of 2 ms attention beside 3 ms sends (the last step sends nothing) expose 3 × 1 ms; in
// backward, sends of 3 ms (K/V), 5 ms (K/V and dK/dV) twice and 3 ms (dK/dV) beside 4 ms steps expose 2 × 1 ms.
TEST(ParallelRing, SendsPastEachStepByHand) {
  const std::vector<Seconds> fwd(4, milliseconds(2.0)), bwd(4, milliseconds(4.0));
  const std::vector<Seconds> fwd_send{milliseconds(3.0), milliseconds(3.0), milliseconds(3.0), Seconds{}};
  const std::vector<Seconds> bwd_send{milliseconds(3.0), milliseconds(5.0), milliseconds(5.0), milliseconds(3.0)};
  EXPECT_NEAR(in_seconds(eq::ring_exposed(fwd, fwd_send)), 3e-3, 1e-15);
  EXPECT_NEAR(in_seconds(eq::ring_forward_exposed(milliseconds(3.0), milliseconds(2.0), 4)), 3e-3, 1e-15);
  EXPECT_NEAR(in_seconds(eq::ring_exposed(bwd, bwd_send)), 2e-3, 1e-15);
  EXPECT_NEAR(in_seconds(eq::ring_backward_exposed(milliseconds(3.0), milliseconds(5.0), milliseconds(4.0), 4)), 2e-3, 1e-15);
  // sends shorter than the steps are hidden whole; one rank has no ring
  EXPECT_EQ(eq::ring_forward_exposed(milliseconds(1.0), milliseconds(2.0), 4), Seconds{});
  EXPECT_EQ(eq::ring_backward_exposed(milliseconds(3.0), milliseconds(5.0), milliseconds(4.0), 1), Seconds{});
  // c 2: backward sends the K/V, then the dK/dV, one block each: 2 × (3 − 2) ms beside 2 ms steps
  EXPECT_NEAR(in_seconds(eq::ring_backward_exposed(milliseconds(3.0), milliseconds(5.0), milliseconds(2.0), 2)), 2e-3, 1e-15);
}

// P15c on a Llama-3-70B block (h 8192, 64 heads, 8 key/value heads, d_h 128, s 8192) at TP 8, CP 2, b 1, bf16: the
// rank's T = 4096 tokens, 8 heads: its output 4096·8·128 = 4,194,304 elements, 32,768 log-sum-exp rows, K and V
// 2·4096·1·128 = 1,048,576 elements. A full step's forward merge: 4,194,304·(2 + 8) + 32,768·12 = 42,336,256 B;
// the cast 4,194,304·6 = 25,165,824 B. Rank 1 (step 1 from rank 0 < 1: all its queries) two full steps and the
// cast, 109,838,336 B; rank 0 (step 1 from rank 1: half its queries) less. Backward, at 3·2 B an element: rank 1
// (4,194,304 + 1,048,576)·6 + (4,194,304 + 524,288)·6 = 59,768,832 B, rank 0 31,457,280 + 18,874,368 less.
TEST(ParallelRing, MergesOfALlamaBlockByHand) {
  const TransformerShape g{80, 8192, 64, 8, 28672, 128256, 8192};
  ParallelLayout l;
  l.tp = 8;
  l.cp = 2;
  const CpMergeTraffic m = cp_merge_traffic(l, g, kBf16);
  EXPECT_DOUBLE_EQ(in_bytes(m.forward), 2 * 42'336'256.0 + 25'165'824.0);
  EXPECT_DOUBLE_EQ(in_bytes(m.backward), 59'768'832.0);
  EXPECT_EQ(m.forward_kernels, 4);
  EXPECT_EQ(m.backward_kernels, 4);
  l.cp = 1;
  EXPECT_EQ(cp_merge_traffic(l, g, kBf16).forward, Bytes{});
}

// P15d on the alpha-beta model: TP 4 × CP 4 on two 8-GPU nodes, Megatron's order: the first CP group is ranks
// {0, 4, 8, 12}, two on each node; its ring's pairs 4→8 and 12→0 cross nodes. The simple form has one NIC a
// node, asked by the 4 CP groups with 2 ranks each (eq. P11: share 4·min(2, 1)/1 = 4): a step of 4 MiB takes
// 5 µs + 4·4,194,304 B / 10 GB/s. TP 2 × CP 4 on one node: {0, 2, 4, 6}, 1 µs + 4,194,304 B / 100 GB/s.
TEST(ParallelRing, RingStepOnItsSlowestPair) {
  Cluster c = hand_cluster(2);
  ParallelLayout l;
  l.tp = 4;
  l.cp = 4;
  const LayoutPlacement at = place_layout(l, c, 16);
  EXPECT_EQ(at[ParallelGroup::cp].first, (std::vector<int>{0, 4, 8, 12}));
  EXPECT_DOUBLE_EQ(at[ParallelGroup::cp].nic_share, 4.0);
  EXPECT_NEAR(in_seconds(cp_ring_step_time(c, at[ParallelGroup::cp], bytes(4'194'304.0))), 5e-6 + 4 * 419.4304e-6, 1e-12);
  l.tp = 2;
  const LayoutPlacement one = place_layout(l, c, 8);
  EXPECT_NEAR(in_seconds(cp_ring_step_time(c, one[ParallelGroup::cp], bytes(4'194'304.0))), 1e-6 + 41.94304e-6, 1e-12);
  l.cp = 1;
  EXPECT_EQ(cp_ring_step_time(c, place_layout(l, c, 8)[ParallelGroup::cp], bytes(4'194'304.0)), Seconds{});
}

// ---- eq. P5: parameters per rank ------------------------------------------------------------------------
TEST(ParallelParams, Llama7bFirstStageOfTp8Pp4ByHand) {
  // Stage 0 of 4 holds the embedding and blocks 0-7. Per block: attention 4·4096² = 67,108,864 and MLP
  // 3·4096·11008 = 135,266,304 over 8, two RMSNorms of 4096 whole: 8,388,608 + 16,908,288 + 8,192 = 25,305,088.
  // Eight blocks 202,440,704, embedding 32000·4096/8 = 16,384,000: 218,824,704.
  const Network net = arch("llama2-7b");
  ParallelLayout l;
  l.tp = 8;
  l.pp = 4;
  EXPECT_EQ(rank_params(net, l, 0), 218'824'704);
  // The last stage: eight blocks, the final norm 4,096 and the output projection 131,072,000/8 = 16,384,000.
  EXPECT_EQ(rank_params(net, l, 3), 202'440'704 + 4'096 + 16'384'000);
  // DDP over dp·cp = 4: the all-reduce of 2 B a gradient, 2·3/4 of it on the wire (eq. S2a).
  const StepTraffic t = dp_step_traffic(218'824'704, Sharding{}, Precision::bf16, 4);
  EXPECT_DOUBLE_EQ(in_bytes(t.allreduce), 218'824'704.0 * 2.0 * 2.0 * 3.0 / 4.0);
}

// ---- eq. P6: one rank's layer times ------------------------------------------------------------------------
TEST(ParallelCompute, SplitLayersDivideByTpAndCpNormsBySpOnly) {
  const Network net = arch("llama2-7b");
  LayerTimes whole;
  for (auto* v : {&whole.forward, &whole.backward, &whole.update}) v->assign(net.layers.size(), seconds(1.0));
  ParallelLayout l;
  l.tp = 8;
  l.cp = 2;
  LayerTimes t = shard_layer_times(whole, net, l);
  // layer 0 the embedding (tokens over c only), 1 a norm, 2 attention, 4 the MLP
  EXPECT_EQ(net.layers[1].kind, LayerKind::layernorm);
  EXPECT_EQ(net.layers[2].kind, LayerKind::attention);
  EXPECT_DOUBLE_EQ(in_seconds(t.forward[0]), 0.5);
  EXPECT_DOUBLE_EQ(in_seconds(t.update[0]), 1.0 / 8);
  EXPECT_DOUBLE_EQ(in_seconds(t.forward[1]), 0.5);  // replicated over TP without SP
  EXPECT_DOUBLE_EQ(in_seconds(t.update[1]), 1.0);
  EXPECT_DOUBLE_EQ(in_seconds(t.forward[2]), 1.0 / 16);
  EXPECT_DOUBLE_EQ(in_seconds(t.backward[4]), 1.0 / 16);
  l.sp = true;
  t = shard_layer_times(whole, net, l);
  EXPECT_DOUBLE_EQ(in_seconds(t.forward[1]), 1.0 / 16);
  // a rank's own times (the kernel model on tp_rank_network, at its s/c tokens): as they are, the update too; the
  // attention core c times over: 0.25 s of the attention layer's 1 s forward and 0.5 s of its backward are its
  // core, so at c 2 it takes 1.25 s and 1.5 s, its core 0.5 and 1.0 s
  whole.forward_attention.assign(net.layers.size(), Seconds{});
  whole.backward_attention.assign(net.layers.size(), Seconds{});
  whole.forward_attention[2] = seconds(0.25);
  whole.backward_attention[2] = seconds(0.5);
  t = shard_layer_times(whole, net, l, LayerTimesOf::tp_rank);
  for (std::size_t i : {0u, 1u, 4u}) EXPECT_DOUBLE_EQ(in_seconds(t.forward[i]), 1.0);
  EXPECT_DOUBLE_EQ(in_seconds(t.forward[2]), 1.25);
  EXPECT_DOUBLE_EQ(in_seconds(t.backward[2]), 1.5);
  EXPECT_DOUBLE_EQ(in_seconds(t.forward_attention[2]), 0.5);
  EXPECT_DOUBLE_EQ(in_seconds(t.backward_attention[2]), 1.0);
  EXPECT_DOUBLE_EQ(in_seconds(t.update[2]), 1.0);
}

// Eq. P6 with a TP rank's own layers: Llama-3-70B (h 8192, a 64, a_kv 8, d_h 128, f 28672, V 128256, s 8192), b 1.
// One rank of t 8: q and the context 64/8 = 8 heads × 128 = 1,024 wide, K and V 8/8 = 1 head each: the
// column-parallel q/k/v GEMM is (M, N, K) = (8192, 1024 + 2·128, 8192) = (8192, 1280, 8192), the row-parallel
// output (8192, 8192, 1024); the MLP's gate and up (8192, 2·28672/8, 8192) = (8192, 7168, 8192), its down
// (8192, 8192, 3584); the output projection (8192, 128256/8, 8192) = (8192, 16032, 8192). t 16: 4 heads (512 wide)
// and K, V replicated, one head each: q/k/v (8192, 512 + 256, 8192) = (8192, 768, 8192).
TEST(ParallelCompute, TpRankTimesItsNarrowerGemms) {
  const Network net = build_decoder(
      DecoderShape{.layers = 2, .hidden = 8192, .heads = 64, .kv_heads = 8, .ffn = 28672, .vocab = 128256, .seq = 8192}, "l70");
  const GpuSpec gpu = cluster("dgx-h100-ndr").gpu;
  ComputeOptions opt;
  opt.precision = Precision::bf16;
  opt.attention = AttentionKernel::flash;
  const KernelParams& kp = opt.kernel(gpu);
  ParallelLayout l;
  l.tp = 8;
  const Network rank = tp_rank_network(net, l);
  ASSERT_EQ(rank.layers.size(), net.layers.size());
  // the kernel model's time of a named GEMM of a layer, against the GEMM model at the hand shape
  const auto gemm = [&](const Layer& x, bool last, const std::string& name) {
    for (const auto& k : layer_kernels(x, false, last, gpu, 1, opt))
      if (k.name == x.name + name) return in_seconds(k.time);
    return -1.0;
  };
  const auto planned = [&](std::int64_t m, std::int64_t n, std::int64_t k) {
    return in_seconds(plan_gemm(GemmShape{m, n, k}, gpu, Precision::bf16, kp).time);
  };
  const Layer& attn = rank.layers[2];
  ASSERT_EQ(attn.kind, LayerKind::attention);
  EXPECT_EQ(attn.heads, 8);
  EXPECT_EQ(attn.kv_heads, 1);
  EXPECT_EQ(attn.head_dim, 128);
  EXPECT_EQ(attn.params, (2 * 8192LL * 8192 + 2 * 8192LL * 1024) / 8);
  EXPECT_DOUBLE_EQ(gemm(attn, false, ".qkv fwd"), planned(8192, 1280, 8192));
  EXPECT_DOUBLE_EQ(gemm(attn, false, ".out fwd"), planned(8192, 8192, 1024));
  EXPECT_DOUBLE_EQ(gemm(attn, false, ".out dgrad"), planned(8192, 1024, 8192));  // the data gradient: (M, K, N)
  const Layer& mlp = rank.layers[4];
  ASSERT_EQ(mlp.kind, LayerKind::linear);
  EXPECT_EQ(mlp.hidden, 3584);
  EXPECT_DOUBLE_EQ(gemm(mlp, false, ".up fwd"), planned(8192, 7168, 8192));
  EXPECT_DOUBLE_EQ(gemm(mlp, false, ".down fwd"), planned(8192, 8192, 3584));
  const Layer& head = rank.layers.back();
  EXPECT_EQ(head.output_shape.back(), 16032);
  EXPECT_DOUBLE_EQ(gemm(head, true, " fwd"), planned(8192, 16032, 8192));
  // the norms are whole without SP, on s/8 tokens with it
  EXPECT_EQ(rank.layers[1].output_shape, (std::vector<std::int64_t>{8192, 8192}));
  l.sp = true;
  EXPECT_EQ(tp_rank_network(net, l).layers[1].output_shape, (std::vector<std::int64_t>{1024, 8192}));
  l.tp = 16;
  const Network rank16 = tp_rank_network(net, l);
  const Layer& attn16 = rank16.layers[2];
  EXPECT_EQ(attn16.heads, 4);
  EXPECT_EQ(attn16.kv_heads, 1);
  EXPECT_DOUBLE_EQ(gemm(attn16, false, ".qkv fwd"), planned(8192, 768, 8192));
  // t 1: the network itself, timed as the whole layer (head_dim unset)
  l.tp = 1;
  EXPECT_EQ(tp_rank_network(net, l).layers[2].head_dim, 0);
}

// ---- eq. P7-P8: the pipeline at p 4, m 8, v 2 --------------------------------------------------------------
TEST(ParallelPipeline, BubbleFractionsAndStepForP4M8V2) {
  // 1F1B and GPipe: (p−1)/m = 3/8; interleaved: (p−1)/(v·m) = 3/16.
  EXPECT_DOUBLE_EQ(bubble_fraction(PipelineSchedule::one_f_one_b, 4, 8, 1), 0.375);
  EXPECT_DOUBLE_EQ(bubble_fraction(PipelineSchedule::gpipe, 4, 8, 1), 0.375);
  EXPECT_DOUBLE_EQ(bubble_fraction(PipelineSchedule::interleaved, 4, 8, 2), 0.1875);
  // v is ignored by the non-interleaved schedules
  EXPECT_DOUBLE_EQ(bubble_fraction(PipelineSchedule::one_f_one_b, 4, 8, 2), 0.375);
  // step: (m + p − 1)·t = 11 t; interleaved (m + (p−1)/v)·t = 9.5 t
  EXPECT_DOUBLE_EQ(in_seconds(pipeline_time(PipelineSchedule::one_f_one_b, 4, 8, 1, seconds(1.0))), 11.0);
  EXPECT_DOUBLE_EQ(in_seconds(pipeline_time(PipelineSchedule::interleaved, 4, 8, 2, seconds(1.0))), 9.5);
  // and the ideal m·t plus its bubble is that step: 8·(1 + 3/16) = 9.5
  EXPECT_DOUBLE_EQ(8.0 * (1.0 + bubble_fraction(PipelineSchedule::interleaved, 4, 8, 2)), 9.5);
}

TEST(ParallelPipeline, InFlightMicroBatchesPerStage) {
  // 1F1B: stage i holds p − i: 4, 3, 2, 1. GPipe: all m = 8.
  for (int i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(in_flight_microbatches(PipelineSchedule::one_f_one_b, 4, 8, 1, i), 4 - i);
  EXPECT_DOUBLE_EQ(in_flight_microbatches(PipelineSchedule::gpipe, 4, 8, 1, 0), 8.0);
  // 1F1B with fewer micro-batches than stages: m.
  EXPECT_DOUBLE_EQ(in_flight_microbatches(PipelineSchedule::one_f_one_b, 4, 2, 1, 0), 2.0);
  // Interleaved, stage 0: Megatron's warm-up 2·(p−1) + (v−1)·p = 6 + 4 = 10 chunks, +1 = 11 chunks of 1/v of
  // the stage: 5.5 = p·(1 + (p−1)/(p·v)) = 4·1.375 (Korthikanti et al., §4.2.3). The last stage: 0 + 4 + 1 = 5 → 2.5.
  EXPECT_DOUBLE_EQ(in_flight_microbatches(PipelineSchedule::interleaved, 4, 8, 2, 0), 5.5);
  EXPECT_DOUBLE_EQ(in_flight_microbatches(PipelineSchedule::interleaved, 4, 8, 2, 3), 2.5);
}

TEST(ParallelPipeline, InterleavedChunksGoRoundTheStages) {
  // Llama-2-7B, 32 blocks on p 4 × v 2: chunks of 4 blocks, chunk k on stage k mod 4.
  const Network net = arch("llama2-7b");
  ParallelLayout l;
  l.pp = 4;
  l.vp = 2;
  l.schedule = PipelineSchedule::interleaved;
  const auto stage = layer_stages(net, l);
  const auto block = transformer_blocks(net);
  for (std::size_t i = 0; i < stage.size(); ++i) {
    if (block[i] < 0) continue;
    EXPECT_EQ(stage[i], (block[i] / 4) % 4) << net.layers[i].name;
  }
  EXPECT_EQ(stage.front(), 0);  // the embedding
  EXPECT_EQ(stage.back(), 3);   // the output projection
}

// Eq. P26: Llama-3.1-405B's 126 blocks on p 8 × v 8 with the embedding and the loss each counted as a layer:
// (126 + 2)/64 = 2 units a chunk. Chunk 0 is the embedding and block 0, chunk k (1 ≤ k ≤ 62) blocks 2k − 1 and 2k, chunk
// 63 block 125 and the output layer; chunk k on stage k mod 8. Stage 0: 1 + 7·2 = 15 blocks, stages 1-6: 16, stage 7:
// 7·2 + 1 = 15. Without the accounts (⌊64·b/126⌋) chunks 31 and 63 hold one block each: stage 7 has 14, the others 16.
TEST(ParallelPipeline, AccountedEmbeddingAndLossEvenThe405bStages) {
  const Network net = build_decoder(
      DecoderShape{.layers = 126, .hidden = 16384, .heads = 128, .kv_heads = 8, .ffn = 53248, .vocab = 128256, .seq = 8192},
      "llama3-405b-shape");
  ParallelLayout l;
  l.pp = 8;
  l.vp = 8;
  l.schedule = PipelineSchedule::interleaved;
  l.micro_batches = 8;
  l.account_for_embedding_in_pipeline_split = true;
  l.account_for_loss_in_pipeline_split = true;
  const auto block = transformer_blocks(net);
  const auto count_blocks = [&](const std::vector<int>& stage) {
    std::vector<std::set<int>> per(8);
    for (std::size_t i = 0; i < stage.size(); ++i)
      if (block[i] >= 0) per[static_cast<std::size_t>(stage[i])].insert(block[i]);
    std::vector<std::size_t> n;
    for (const auto& p : per) n.push_back(p.size());
    return n;
  };
  const auto stage = layer_stages(net, l);
  EXPECT_EQ(count_blocks(stage), (std::vector<std::size_t>{15, 16, 16, 16, 16, 16, 16, 15}));
  for (std::size_t i = 0; i < stage.size(); ++i) {
    if (block[i] == 0) {
      EXPECT_EQ(stage[i], 0);  // chunk 0, beside the embedding
    } else if (block[i] == 1) {
      EXPECT_EQ(stage[i], 1);  // chunk 1
    } else if (block[i] == 124) {
      EXPECT_EQ(stage[i], 6);  // chunk 62
    } else if (block[i] == 125) {
      EXPECT_EQ(stage[i], 7);  // chunk 63, beside the output layer
    }
  }
  ParallelLayout even = l;
  even.account_for_embedding_in_pipeline_split = even.account_for_loss_in_pipeline_split = false;
  EXPECT_EQ(count_blocks(layer_stages(net, even)), (std::vector<std::size_t>{16, 16, 16, 16, 16, 16, 16, 14}));

  // The slowest stage by hand from the kernel model's own layer times (H100, b 1, bf16): one block's forward and
  // backward f_B, b_B (block 1's layers; every block has the same shapes), the embedding's e and the final norm's and
  // output layer's (and loss's) o. Stage 0 runs e + 15 blocks, stages 1-6 16 blocks, stage 7 15 blocks + o.
  const Cluster h100 = cluster("dgx-h100-ndr");
  ComputeOptions opt;
  opt.precision = Precision::bf16;
  const LayerTimes t = estimate_layer_times(net, h100.gpu, 1, opt);
  double blk = 0, emb = 0, out = 0;
  for (std::size_t i = 0; i < block.size(); ++i) {
    const double x = in_seconds(t.forward[i] + t.backward[i]);
    if (block[i] == 1) blk += x;
    else if (block[i] < 0 && i == 0) emb += x;
    else if (block[i] < 0) out += x;
  }
  const double stage0 = emb + 15 * blk, middle = 16 * blk, stage7 = 15 * blk + out;
  ASSERT_GT(middle, stage0);  // the embedding is a lookup, the output layer smaller than a block (2.1 G of 3.2 G weights)
  ASSERT_GT(middle, stage7);
  const ParallelStep st = parallel_step(net, t, h100, *make_collective_model(h100), l, 64, opt, Sharding{});
  EXPECT_GE(st.slowest_stage, 1);
  EXPECT_LE(st.slowest_stage, 6);
  EXPECT_NEAR(in_seconds(st.forward + st.backward), middle, 1e-9 * middle);
  // the even split's slowest is stage 0: the embedding beside 16 blocks
  const ParallelStep st_even = parallel_step(net, t, h100, *make_collective_model(h100), even, 64, opt, Sharding{});
  EXPECT_EQ(st_even.slowest_stage, 0);
  EXPECT_NEAR(in_seconds(st_even.forward + st_even.backward), emb + 16 * blk, 1e-9 * middle);

  // Megatron-Core asks the units to divide: 126 + 1 over 64 chunks does not
  ParallelLayout one = l;
  one.account_for_loss_in_pipeline_split = false;
  try {
    validate(one, 64, transformer_shape(net));
    ADD_FAILURE() << "127 units over 64 chunks accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "account_for_embedding_in_pipeline_split");
  }
  // without virtual stages, (126 + 2) over 8 stages: 16 units each
  ParallelLayout flat = l;
  flat.vp = 1;
  flat.schedule = PipelineSchedule::one_f_one_b;
  EXPECT_NO_THROW(validate(flat, 64, transformer_shape(net)));
}

// Eq. P27 on Llama-2-7B (h 4096, s 4096, b 1, bf16) at TP 8: S = 33,554,432 B. The embedding's all-reduce puts
// 2·(7/8)·S = 58,720,256 B on a GPU's wire forward; with SP its reduce-scatter (7/8)·S = 29,360,128 B forward and the
// all-gather of its gradient the same backward. The cross entropy: 3 all-reduces of 4096 fp32 = 16,384 B,
// 3·2·(7/8)·16,384 = 86,016 B forward, nothing backward. CP 2 halves every one of them; TP 1: none.
TEST(ParallelTraffic, EmbeddingAndCrossEntropyCollectivesOfTheEdgeStages) {
  const TransformerShape m = transformer_shape(arch("llama2-7b"));
  ParallelLayout l;
  l.tp = 8;
  EXPECT_DOUBLE_EQ(sum(tp_edge_collectives(l, m, kBf16, true, false), 8, false), 58'720'256.0);
  EXPECT_DOUBLE_EQ(sum(tp_edge_collectives(l, m, kBf16, true, false), 8, true), 0.0);
  EXPECT_DOUBLE_EQ(sum(tp_edge_collectives(l, m, kBf16, false, true), 8, false), 86'016.0);
  // eq. P27b: the output layer's input gradient, an all-reduce of S backward
  EXPECT_DOUBLE_EQ(sum(tp_edge_collectives(l, m, kBf16, false, true), 8, true), 58'720'256.0);
  l.sp = true;
  EXPECT_DOUBLE_EQ(sum(tp_edge_collectives(l, m, kBf16, true, false), 8, false), 29'360'128.0);
  EXPECT_DOUBLE_EQ(sum(tp_edge_collectives(l, m, kBf16, true, false), 8, true), 29'360'128.0);
  // with SP the output layer's all-gather forward; backward its input gradient's reduce-scatter and its input again
  EXPECT_DOUBLE_EQ(sum(tp_edge_collectives(l, m, kBf16, false, true), 8, false), 29'360'128.0 + 86'016.0);
  EXPECT_DOUBLE_EQ(sum(tp_edge_collectives(l, m, kBf16, false, true), 8, true), 2 * 29'360'128.0);
  EXPECT_DOUBLE_EQ(sum(tp_edge_collectives(l, m, kBf16, true, true), 8, false), 2 * 29'360'128.0 + 86'016.0);
  l.cp = 2;
  EXPECT_DOUBLE_EQ(sum(tp_edge_collectives(l, m, kBf16, true, true), 8, false), (2 * 29'360'128.0 + 86'016.0) / 2);
  l.tp = 1;
  EXPECT_TRUE(tp_edge_collectives(l, m, kBf16, true, true).empty());
}

// ---- eq. P9: a GPT-3 175B layer against Korthikanti et al. 2022 (Table 2) ------------------------------------
// Korthikanti et al.'s bytes per layer (16-bit activations, 1-byte dropout masks), the reference: s·b·h·(34 +
// 5·a·s/h) unsplit, s·b·h·(10 + 24/t + 5·a·s/(h·t)) with TP, /t of the unsplit with TP + SP, selective without
// the 5·a·s/h term, full 2·s·b·h (/t with SP).
double korthikanti(double s, double b, double h, double a, double t, bool sp, ActivationRecompute r) {
  const double sbh = s * b * h, scores = 5.0 * a * s / h;
  if (r == ActivationRecompute::full) return sp ? 2.0 * sbh / t : 2.0 * sbh;
  if (r == ActivationRecompute::selective) return sp ? sbh * 34.0 / t : sbh * (10.0 + 24.0 / t);
  if (t <= 1) return sbh * (34.0 + scores);
  return sp ? sbh * (34.0 + scores) / t : sbh * (10.0 + 24.0 / t + scores / t);
}

// One GPT-3 175B block as Korthikanti et al. count it: pre-norm, attention with dropout on the probabilities and
// after the output projection, a GELU MLP of 4·h with dropout after it.
Network gpt3_block_with_dropout() {
  return build_network_from_string(R"(name: gpt3-block
description: "one GPT-3 175B block with dropout"
input: {tokens: 2048}
layers:
  - embedding: {name: wte, vocab: 50257, dim: 12288}
  - repeat: {name: h, count: 1, body: [
      {residual: {body: [{layernorm: {name: ln_1}}, {attention: {name: attn, heads: 96, causal: true, dropout: 0.1}}, {dropout: 0.1}]}},
      {residual: {body: [{layernorm: {name: ln_2}}, {mlp: {name: mlp, hidden: 49152}}, {dropout: 0.1}]}}]}
)",
                                   "gpt3-block");
}

// s 2048, b 1, h 12288, a 96: s·b·h = 25,165,824, a·s²·b = 402,653,184. The network's own count in bf16
// (the memory model's fp32 figure × 2/4), per block: the two residual sums (the norms' inputs) 2 + 2, the two
// norms' outputs (the attention's and the MLP's inputs) 2 + 2, q, k, v and the context 8, the MLP's 4·h hidden
// and GELU output 16, the probabilities 2·a·s²·b, their dropout's output 2·a·s²·b and mask, and the two
// dropout masks after the branches: 32·s·b·h + 4·a·s²·b plus the masks. A mask is 1 B an element in the fp32
// figure, scaled like every kept tensor by 2/4: half a byte where Korthikanti counts 1. So the network's figure
// is Korthikanti's less s·b·h + 0.5·a·s²·b: 33·s·b·h + 4.5·a·s²·b = 2,642,411,520 B against 2,868,903,936 B
// (7.9 % less, all of it the masks' half byte).
TEST(ParallelActivations, Gpt3_175bLayerAgainstKorthikanti) {
  const Network net = gpt3_block_with_dropout();
  const double sbh = 25'165'824.0, as2b = 402'653'184.0;
  const double masks = sbh + 0.5 * as2b;  // what the half-byte masks leave out, unsplit
  using R = ActivationRecompute;
  ComputeOptions opt;
  opt.precision = Precision::bf16;
  ParallelLayout l;
  const auto ours = [&](R r) { return in_bytes(block_activation_bytes(net, 0, l, opt, r)); };
  EXPECT_DOUBLE_EQ(korthikanti(2048, 1, 12288, 96, 1, false, R::none), 2'868'903'936.0);
  EXPECT_DOUBLE_EQ(ours(R::none), 2'642'411'520.0);
  EXPECT_DOUBLE_EQ(ours(R::none), korthikanti(2048, 1, 12288, 96, 1, false, R::none) - masks);
  // TP 8 without SP: the norms' outputs, residual sums and branch masks stay whole (4 + 4 + 0.5 + 0.5 = 9·sbh;
  // Korthikanti's 10 with 1-byte masks); the attention's and MLP's interiors (24·sbh) and the probabilities
  // over 8: 12·sbh + 0.5625·a·s²·b = 528,482,304 B, Korthikanti's 578,813,952 B less sbh + 0.5·a·s²·b/8.
  l.tp = 8;
  EXPECT_DOUBLE_EQ(ours(R::none), 528'482'304.0);
  EXPECT_DOUBLE_EQ(ours(R::none), korthikanti(2048, 1, 12288, 96, 8, false, R::none) - sbh - 0.5 * as2b / 8);
  // TP 8 with SP: everything over 8, 330,301,440 B (Korthikanti 358,612,992 B less the masks' share / 8)
  l.sp = true;
  EXPECT_DOUBLE_EQ(ours(R::none), 330'301'440.0);
  EXPECT_DOUBLE_EQ(ours(R::none), korthikanti(2048, 1, 12288, 96, 8, true, R::none) - masks / 8);
  // selective recompute with SP: the probabilities, their dropout's output and mask go: 33·sbh/8 = 103,809,024 B
  // (Korthikanti's 34·sbh/8 = 106,954,752 B less sbh/8); a fused kernel keeps the same
  EXPECT_DOUBLE_EQ(ours(R::selective), 103'809'024.0);
  EXPECT_DOUBLE_EQ(ours(R::selective), korthikanti(2048, 1, 12288, 96, 8, true, R::selective) - sbh / 8);
  opt.attention = AttentionKernel::flash;
  EXPECT_DOUBLE_EQ(ours(R::none), 103'809'024.0);
  opt.attention = AttentionKernel::eager;
  // full recompute: the block's input, 2·sbh/8 = 6,291,456 B with SP, 2·sbh = 50,331,648 B without: Korthikanti's
  EXPECT_DOUBLE_EQ(ours(R::full), korthikanti(2048, 1, 12288, 96, 8, true, R::full));
  EXPECT_DOUBLE_EQ(ours(R::full), 6'291'456.0);
  l.sp = false;
  EXPECT_DOUBLE_EQ(ours(R::full), 50'331'648.0);
  // CP 2 halves the tokens: half of TP 8's 528,482,304 B
  l.cp = 2;
  EXPECT_DOUBLE_EQ(ours(R::none), 264'241'152.0);
}

/// GPT-3 175B's layout in the two tests below: TP 8 with SP, PP 8 (12 blocks a stage), 1F1B, 16 micro-batches.
ParallelLayout gpt3_tp8_sp_pp8() {
  ParallelLayout l;
  l.tp = 8;
  l.sp = true;
  l.pp = 8;
  l.micro_batches = 16;
  return l;
}

TEST(ParallelActivations, FirstStageHoldsPMicroBatchesOfItsBlocks) {
  // GPT-3 175B as shipped (no dropout: masks and the probabilities' dropout gone), bf16, eager attention, TP 8 + SP,
  // PP 8 (12 blocks a stage), 1F1B, m 16. A block keeps 32·sbh + 2·a·s²·b (the count above without dropout), over
  // 8: 4·25,165,824 + 0.25·402,653,184 = 201,326,592 B. Stage 0 also holds the token and position embeddings'
  // outputs, 2·sbh/8 each: 12,582,912 B; 12 blocks + that = 2,428,502,016 B a micro-batch, 8 in flight:
  // 19,428,016,128 B (96 layers' worth: Korthikanti's "the first stage holds L layers").
  const Network net = arch("gpt3-175b");
  ParallelLayout l = gpt3_tp8_sp_pp8();
  ComputeOptions opt;
  opt.precision = Precision::bf16;
  opt.optimizer = Optimizer::adamw;
  EXPECT_DOUBLE_EQ(in_bytes(block_activation_bytes(net, 0, l, opt, ActivationRecompute::none)), 201'326'592.0);
  const MemoryEstimate first = rank_memory(net, l, 0, opt, Sharding{}, 1, ActivationRecompute::none);
  EXPECT_DOUBLE_EQ(in_bytes(first.activations), 8 * 2'428'502'016.0);
  // weights: mixed precision 6 B, gradients 2 B, AdamW 8 B a parameter of the rank (eq. S3 without sharding)
  const double p0 = static_cast<double>(rank_params(net, l, 0));
  EXPECT_DOUBLE_EQ(in_bytes(first.weights + first.gradients + first.optimizer_state), 16.0 * p0);
  // full recompute: each block's input 2·sbh/8 = 6,291,456 B a micro-batch (12 of them and the embeddings'
  // 12,582,912 B: 88,080,384 B, 8 in flight: 704,643,072 B) and once the block that runs again, 201,326,592 B
  const MemoryEstimate full = rank_memory(net, l, 0, opt, Sharding{}, 1, ActivationRecompute::full);
  EXPECT_DOUBLE_EQ(in_bytes(full.activations), 704'643'072.0 + 201'326'592.0);
}

TEST(ParallelActivations, LastStageKeepsTheLogitsAndTheLoss) {
  // GPT-3 175B as above, stage 7 of 8: one micro-batch in flight of 12 blocks (12 × 201,326,592 B), the final
  // norm's output 2·sbh/8 = 6,291,456 B and the bf16 logits, 2 B × 2048 × 50257 / 8 = 25,731,584 B:
  // 2,447,942,144 B. Eager mixed precision adds the loss's fp32 logits and log-softmax (eq. K14), 8 B a logit of
  // the rank's vocabulary share: 8 × 2048 × 50257 / 8 = 102,926,336 B, which replace the bf16 logits (eq. M7 with
  // M2: the output layer's kept output not counted again): 2,447,942,144 − 25,731,584 + 102,926,336 = 2,525,136,896 B
  // kept. Its backward (eq. P45, the data-parallel estimate's 12 B a logit: the log-softmax's output and two fp32
  // gradients) holds 4 B a logit more at the stage's peak, 51,463,168 B: 2,576,600,064 B. (GPT-3's LayerNorm, GELU MLP
  // and full K/V heads: none of M1's eager saves.)
  const Network net = arch("gpt3-175b");
  ParallelLayout l = gpt3_tp8_sp_pp8();
  ComputeOptions opt;
  opt.precision = Precision::bf16;
  EXPECT_DOUBLE_EQ(in_bytes(rank_memory(net, l, 7, opt, Sharding{}, 1, ActivationRecompute::none).activations), 2'576'600'064.0);
  // the loss compiled with the step keeps its half logits (the output layer's count) and its backward writes their
  // half gradient beside them, 2 B × 2048 × 50257 / 8 = 25,731,584 B: 2,447,942,144 + 25,731,584 = 2,473,673,728 B
  opt.compiled = true;
  EXPECT_DOUBLE_EQ(in_bytes(rank_memory(net, l, 7, opt, Sharding{}, 1, ActivationRecompute::none).activations), 2'473'673'728.0);
  // CP 2 halves the tokens of all of it, the loss too: 1,262,568,448 B kept eager, 1,288,300,032 B at the peak
  opt.compiled = false;
  l.cp = 2;
  EXPECT_DOUBLE_EQ(in_bytes(rank_memory(net, l, 7, opt, Sharding{}, 1, ActivationRecompute::none).activations), 1'288'300'032.0);
  // and the time: the kernel model times the loss with the last layer (time_loss), so the output projection's
  // stage runs it; with the layout's stages the last layer is on stage 7
  EXPECT_EQ(layer_stages(net, l).back(), 7);
}

// Eq. P45 by hand: the last stage's peak takes the loss's backward as the data-parallel estimate does
// (loss_backward_bytes_per_sample: eager, the fp32 log-softmax output and two fp32 gradients, 12 B a logit, in place of
// the 8 B the loss keeps; its max against a block's recompute, which comes after the loss's backward has freed them).
// The 4-block decoder (h 256, 4 heads, F 512, V 1000, s 128), bf16, eager, TP 2 + SP × PP 2, 1F1B, m 4, b 1, full
// recompute: stage 1 (blocks 2-3, the final norm, the output layer) holds 1 micro-batch in flight:
//   2 block inputs, 128 × 256 × 2 B / 2 = 32,768 B each, and the final norm's output, 32,768 B: 98,304 B;
//   the loss's fp32 logits and log-softmax, 8 B × 128 × 1000 / 2 = 512,000 B (the head's half logits not again);
//   its backward 12 B × 128 × 1000 / 2 = 768,000 B, more than a block rebuilt (its tensors, < 768,000 B):
//   98,304 + 512,000 − 512,000 + 768,000 = 866,304 B (before: 610,304 B and the block).
// With V 100 the block rebuilt is the larger (76,800 B the backward): 98,304 B and the block, the loss's 51,200 B freed
// before it (before: 149,504 B and the block).
TEST(ParallelActivations, LastStagePeaksAtTheLossBackwardOrABlockRecomputeByHand) {
  const auto stage1 = [](std::int64_t vocab) {
    DecoderShape d;
    d.layers = 4;
    d.hidden = 256;
    d.heads = 4;
    d.ffn = 512;
    d.vocab = vocab;
    d.seq = 128;
    const Network net = build_decoder(d, "tiny-v" + std::to_string(vocab));
    ParallelLayout l;
    l.tp = 2;
    l.sp = true;
    l.pp = 2;
    l.micro_batches = 4;
    ComputeOptions opt;
    opt.precision = Precision::bf16;
    const double block = in_bytes(block_activation_bytes(net, 3, l, opt, ActivationRecompute::none));
    const double peak = in_bytes(rank_memory(net, l, 1, opt, Sharding{}, 1, ActivationRecompute::full).activations);
    return std::pair{peak, block};
  };
  const auto [peak, block] = stage1(1000);
  ASSERT_LT(block, 768'000.0);
  EXPECT_DOUBLE_EQ(peak, 866'304.0);
  const auto [small, small_block] = stage1(100);
  ASSERT_GT(small_block, 76'800.0);
  EXPECT_DOUBLE_EQ(small, 98'304.0 + small_block);
}

// Eq. M7 (docs/model.md, P43): eager decoder code's saves under a layout, split as the tensors they belong to.
// Llama-3-8B (D 4096, 32 heads of 128, 8 K/V heads, F 14336), s 8192, b 1, bf16, TP 2 with SP, CP 1; eager with the
// composite RMSNorm (torchtitan's code) against compiled (Megatron-Core's fused kernels: nothing beyond the count):
// - M1a, a norm: the fp32 x and the normalized bf16 tensor, 4 B an element beyond the count, over t (SP):
//   8192 × 4096 × 4 / 2 = 67,108,864 B;
// - M1b, the SwiGLU MLP: a fourth tensor of F at 2 B, over t: 8192 × 14336 × 2 / 2 = 117,440,512 B;
// - M1c, attention: K and V expanded to the query's heads, (32 − 8) × 128 × 2 × 2 B a token, over t:
//   8192 × 24 × 128 × 4 / 2 = 50,331,648 B.
// Under plain autocast (fp32 gradients) M4a adds: the norm's normalized tensor at 4 B (+2 B, over t): 33,554,432 B;
// attention's two more half copies of its input for q, k and v, whole on each TP rank (the column-parallel products'
// input): 8192 × 4096 × 2 × 2 = 134,217,728 B; the MLP's one more: 67,108,864 B.
TEST(ParallelActivations, EagerCodeSavesSplitAsTheirTensorsByHand) {
  const Network net = arch("llama3-8b");
  ParallelLayout l;
  l.tp = 2;
  l.sp = true;
  ComputeOptions eager;
  eager.precision = Precision::bf16;
  eager.rmsnorm_composite = true;
  ComputeOptions compiled = eager;
  compiled.compiled = true;
  ComputeOptions autocast = eager;
  autocast.fp32_gradients = true;
  const auto find = [&net](auto pred) { return *std::find_if(net.layers.begin(), net.layers.end(), pred); };
  const Layer norm = find([](const Layer& x) { return x.kind == LayerKind::layernorm && x.rms; });
  const Layer mlp = find([](const Layer& x) { return x.kind == LayerKind::linear && x.gated; });
  const Layer attn = find([](const Layer& x) { return x.kind == LayerKind::attention; });
  const auto extra = [&l](const Layer& x, const ComputeOptions& o, const ComputeOptions& base) {
    return in_bytes(layer_activation_bytes(x, l, o, true)) - in_bytes(layer_activation_bytes(x, l, base, true));
  };
  EXPECT_DOUBLE_EQ(extra(norm, eager, compiled), 67'108'864.0);
  EXPECT_DOUBLE_EQ(extra(mlp, eager, compiled), 117'440'512.0);
  EXPECT_DOUBLE_EQ(extra(attn, eager, compiled), 50'331'648.0);
  EXPECT_DOUBLE_EQ(extra(norm, autocast, eager), 33'554'432.0);
  EXPECT_DOUBLE_EQ(extra(attn, autocast, eager), 134'217'728.0);
  EXPECT_DOUBLE_EQ(extra(mlp, autocast, eager), 67'108'864.0);
  // CP 2 halves every one of them (the rank's s/c tokens)
  l.cp = 2;
  EXPECT_DOUBLE_EQ(extra(mlp, eager, compiled), 58'720'256.0);
}

// ---- eq. P11: placement ------------------------------------------------------------------------------------
TEST(ParallelPlacement, Tp8Pp4OnFourDgxH100NodesKeepsTpInsideANode) {
  const Cluster c = cluster("dgx-h100-ndr");
  ParallelLayout l;
  l.tp = 8;
  l.pp = 4;
  const LayoutPlacement at = place_layout(l, c, 32);
  const GroupPlacement& tp = at[ParallelGroup::tp];
  // Megatron's order tp-cp-dp-pp: TP groups are ranks 8k … 8k+7, the GPUs of node k.
  EXPECT_EQ(tp.groups, 4);
  EXPECT_EQ(tp.size, 8);
  EXPECT_TRUE(tp.inside_node);
  EXPECT_EQ(tp.first, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(tp.path, PathType::nvl);
  EXPECT_EQ(tp.at.gpus, 8);
  EXPECT_EQ(tp.at.nodes, 1);
  // PP groups {j, 8+j, 16+j, 24+j}: one rank on each of the 4 nodes; 8 of them leave every node, each on its
  // own NIC of the 8: no sharing.
  const GroupPlacement& pp = at[ParallelGroup::pp];
  EXPECT_EQ(pp.groups, 8);
  EXPECT_EQ(pp.first, (std::vector<int>{0, 8, 16, 24}));
  EXPECT_FALSE(pp.inside_node);
  EXPECT_EQ(pp.nodes, 4);
  EXPECT_EQ(pp.per_node, 1);
  EXPECT_EQ(pp.groups_per_node, 8);
  EXPECT_DOUBLE_EQ(pp.nic_share, 1.0);
  EXPECT_EQ(pp.path, PathType::net);
  // dp is 1: one-rank groups
  EXPECT_EQ(at[ParallelGroup::dp].size, 1);
  // The same degrees numbered pp fastest, tp slowest: a TP group is {0, 4, …, 28}, across all four nodes.
  l.order = parse_rank_order("pp-cp-dp-tp");
  const GroupPlacement bad = place_layout(l, c, 32)[ParallelGroup::tp];
  EXPECT_EQ(bad.first, (std::vector<int>{0, 4, 8, 12, 16, 20, 24, 28}));
  EXPECT_FALSE(bad.inside_node);
  EXPECT_EQ(bad.nodes, 4);
  EXPECT_EQ(bad.per_node, 2);
}

TEST(ParallelPlacement, Gb200Nvl72KeepsTpAndDpInItsNvlinkDomain) {
  // 64 GPUs, TP 8 × DP 8: on one NVL72 rack every group is inside its NVLink domain; on 8 DGX H100 nodes the
  // DP groups {j, 8+j, …, 56+j} cross all 8 nodes.
  ParallelLayout l;
  l.tp = 8;
  const Cluster nvl = cluster("gb200-nvl72");
  const LayoutPlacement a = place_layout(l, nvl, 64);
  EXPECT_TRUE(a[ParallelGroup::tp].inside_node);
  EXPECT_EQ(a[ParallelGroup::tp].path, PathType::nvl);
  EXPECT_TRUE(a[ParallelGroup::dp].inside_node);
  EXPECT_EQ(a[ParallelGroup::dp].first, (std::vector<int>{0, 8, 16, 24, 32, 40, 48, 56}));
  const Cluster dgx = cluster("dgx-h100-ndr");
  const LayoutPlacement b = place_layout(l, dgx, 64);
  EXPECT_TRUE(b[ParallelGroup::tp].inside_node);
  EXPECT_FALSE(b[ParallelGroup::dp].inside_node);
  EXPECT_EQ(b[ParallelGroup::dp].nodes, 8);
  // and the collective model times the DP all-reduce of 1 GB faster on the rack's NVLink than across 8 nodes
  const CollectiveCall ar{"DP", ParallelGroup::dp, CollectiveOp::allreduce, gigabytes(1.0), 1, false, false};
  const Seconds t_nvl = group_collective_time(*make_collective_model(nvl), ar, a[ParallelGroup::dp]);
  const Seconds t_dgx = group_collective_time(*make_collective_model(dgx), ar, b[ParallelGroup::dp]);
  EXPECT_LT(t_nvl, t_dgx);
}

// ---- eq. P12: times on the alpha-beta model, by hand ---------------------------------------------------------
TEST(ParallelTiming, AlphaBetaTpAllReduceAndSharedNicP2p) {
  Cluster c = hand_cluster(4);
  ParallelLayout l;
  l.tp = 8;
  l.pp = 4;
  const LayoutPlacement at = place_layout(l, c, 32);
  const auto model = make_alpha_beta_model(c);
  // TP all-reduce of 32 MiB in a node: 2·7 steps of 1 µs + 2·(7/8)·33,554,432 B / 100 GB/s = 14 µs + 587.20256 µs.
  const CollectiveCall ar{"TP", ParallelGroup::tp, CollectiveOp::allreduce, bytes(33'554'432.0), 1, false, false};
  EXPECT_NEAR(in_seconds(group_collective_time(*model, ar, at[ParallelGroup::tp])), 14e-6 + 587.20256e-6, 1e-12);
  // PP p2p of 4 MiB across nodes: the simple form has one NIC a node, shared by the 8 PP groups leaving it
  // (eq. P11: share 8): 5 µs + 8·4,194,304 B / 10 GB/s = 5 µs + 3,355.4432 µs.
  EXPECT_DOUBLE_EQ(at[ParallelGroup::pp].nic_share, 8.0);
  EXPECT_NEAR(in_seconds(pipeline_p2p_time(c, at[ParallelGroup::pp], bytes(4'194'304.0))), 5e-6 + 3355.4432e-6, 1e-12);
}

/// Every one of `layers` layers 1 ms forward, 2 ms backward and 0.5 ms update (the hand-timed steps below).
LayerTimes uniform_times(std::size_t layers) {
  LayerTimes t;
  t.forward.assign(layers, milliseconds(1.0));
  t.backward.assign(layers, milliseconds(2.0));
  t.update.assign(layers, milliseconds(0.5));
  return t;
}

/// PP 2, 1F1B, 4 micro-batches of 1 (the rest of the GPUs data-parallel).
ParallelLayout two_stages_of_four() {
  ParallelLayout l;
  l.pp = 2;
  l.micro_batches = 4;
  return l;
}

// ---- eq. P13: one step, by hand on the alpha-beta model -----------------------------------------------------
TEST(ParallelStep, PipelineOfTwoStagesByHand) {
  // A 4-block decoder (h 256, 4 heads, s 128): embedding, 4 × (norm, attention, norm, MLP), norm, output = 19
  // layers. PP 2 × DP 2 on 4 GPUs of one 8-GPU node, 1F1B, m 4, b 1, fp32. Every layer 1 ms forward, 2 ms
  // backward, 0.5 ms update. Stage 0: embedding and blocks 0-1 (9 layers); stage 1: blocks 2-3, the norm and the
  // output (10 layers), the slowest: f 10 ms, b 20 ms.
  const Network net = tiny_decoder();
  ASSERT_EQ(net.layers.size(), 19u);
  const LayerTimes whole = uniform_times(19);
  Cluster c = hand_cluster(1);
  ParallelLayout l = two_stages_of_four();
  const ComputeOptions opt;  // fp32: 4 B activations and gradients
  const ParallelStep st = parallel_step(net, whole, c, *make_alpha_beta_model(c), l, 4, opt, Sharding{});
  EXPECT_EQ(st.slowest_stage, 1);
  EXPECT_NEAR(in_seconds(st.forward), 10e-3, 1e-15);
  EXPECT_NEAR(in_seconds(st.backward), 20e-3, 1e-15);
  // p2p (P4): b·s·h·4 = 131,072 B between ranks 0 and 2 of the node: 1 µs + 1.31072 µs, twice a micro-batch.
  EXPECT_NEAR(in_seconds(st.p2p), 2 * (1e-6 + 1.31072e-6), 1e-15);
  const double mb = 30e-3 + 2 * (1e-6 + 1.31072e-6);
  EXPECT_NEAR(in_seconds(st.per_microbatch), mb, 1e-15);
  // P7: (m + p − 1)·t_mb = 5·t_mb, of which one t_mb is the bubble
  EXPECT_NEAR(in_seconds(st.pipeline), 5 * mb, 1e-14);
  EXPECT_NEAR(in_seconds(st.bubble), mb, 1e-14);
  // P5: the larger stage's parameters all-reduced over the 2 DP ranks: 2 µs + 2·(1/2)·4·P / 100 GB/s
  const double P = static_cast<double>(std::max(rank_params(net, l, 0), rank_params(net, l, 1)));
  EXPECT_NEAR(in_seconds(st.dp_comm), 2e-6 + 4.0 * P / 1e11, 1e-15);
  EXPECT_NEAR(in_seconds(st.update), 5e-3, 1e-15);
  EXPECT_NEAR(in_seconds(st.step), 5 * mb + 2e-6 + 4.0 * P / 1e11 + 5e-3, 1e-14);
  // 8 samples (b 1 × m 4 × dp 2) of 128 tokens a step
  EXPECT_EQ(st.global_batch, 8);
  EXPECT_NEAR(st.tokens_per_s, 8 * 128 / in_seconds(st.step), 1e-9);
  ASSERT_EQ(st.memory.size(), 2u);
}

// Eq. P33 by hand: the 4-block decoder of PipelineOfTwoStagesByHand with its output layer tied to the embedding. PP 2 ×
// DP 2 on 4 GPUs of one node (fp32 gradients): the word embedding's gradient, 1,000 × 256 × 4 B = 1,024,000 B,
// all-reduced between ranks 0 and 2 (stage 0 and stage 1 of the first pipeline) as a ring of two: two steps of
// 512,000 B at 100 GB/s after 1 µs, 2·(1 + 5.12) µs = 12.24 µs, after the DP reduction and before the update. TP 4 ×
// PP 2 × DP 2 on two nodes (tp-cp-dp-pp: stage 0 on node 0, stage 1 on node 1): (1,000/4)·256·4 = 256,000 B, two
// steps of 128,000 B across the nodes, where the node's 8 pipelines share its one NIC (P11): 2·(5 µs + 8·128,000 B /
// 10 GB/s) = 214.8 µs. Untied, or without a pipeline: nothing.
TEST(ParallelStep, TiedEmbeddingGradientBetweenFirstAndLastStageByHand) {
  DecoderShape d{.layers = 4, .hidden = 256, .heads = 4, .ffn = 512, .vocab = 1000, .seq = 128};
  d.tied = true;
  const Network tied = build_decoder(d, "tiny-tied");
  ASSERT_EQ(tied.layers.size(), 19u);
  EXPECT_TRUE(tied_output_embedding(tied));
  EXPECT_FALSE(tied_output_embedding(tiny_decoder()));
  const LayerTimes whole = uniform_times(19);
  const ComputeOptions opt;  // fp32
  Cluster c = hand_cluster(1);
  ParallelLayout l = two_stages_of_four();
  const ParallelStep st = parallel_step(tied, whole, c, *make_alpha_beta_model(c), l, 4, opt, Sharding{});
  EXPECT_NEAR(in_seconds(st.embedding_grads), 2 * (1e-6 + 5.12e-6), 1e-15);
  EXPECT_NEAR(in_seconds(st.step), in_seconds(st.pipeline + st.dp_comm + st.update) + 12.24e-6, 1e-14);
  const ParallelStep untied = parallel_step(tiny_decoder(), whole, c, *make_alpha_beta_model(c), l, 4, opt, Sharding{});
  EXPECT_EQ(untied.embedding_grads, Seconds{});
  ParallelLayout flat = l;
  flat.pp = 1;
  EXPECT_EQ(parallel_step(tied, whole, c, *make_alpha_beta_model(c), flat, 4, opt, Sharding{}).embedding_grads, Seconds{});

  Cluster two = hand_cluster(2);
  ParallelLayout across = l;
  across.tp = 4;
  const TransformerShape m = transformer_shape(tied);
  EXPECT_DOUBLE_EQ(in_bytes(tied_embedding_grad_bytes(across, m, 4.0)), 256'000.0);
  const ParallelStep x = parallel_step(tied, whole, two, *make_alpha_beta_model(two), across, 16, opt, Sharding{});
  EXPECT_NEAR(in_seconds(x.embedding_grads), 2 * (5e-6 + 8 * 128'000.0 / 10e9), 1e-15);
}

// Eq. P34 by hand: GPT-3 175B (zoo: h 12288, V 50257, biases, learned positions, tied) on TP 8 × PP 8: 12 blocks a
// stage. A block on one TP rank: the attention's 4h² + 4h = 604,028,928 over 8 = 75,503,616; the MLP's up projection
// 4h² + 4h, 75,503,616, and down 4h² + h = 603,992,064 over 8 = 75,499,008; two LayerNorms of 2h whole, 49,152:
// 226,555,392. The last stage: 12 blocks, the final LayerNorm (24,576) and its copy of the word embedding,
// ⌈50257/8⌉ = 6,283 rows of 12,288 = 77,205,504, in all 2,795,894,784 (before P34: 2,718,689,280). In fp32 with no
// sharding its weights and gradients are 4 B each of them; under the distributed optimiser over dp 8 (stage 1) the
// Adam state (8 B a parameter) is an eighth, P bytes. Its DP all-reduce over 2 ranks (TP 8 × PP 8 × DP 2 on 128)
// carries 2·(1/2)·4·P = 4P bytes. Without a pipeline, or untied: no copy.
TEST(ParallelMemory, LastStageHoldsItsCopyOfATiedEmbeddingByHand) {
  const Network net = arch("gpt3-175b");
  ParallelLayout l;
  l.tp = 8;
  l.pp = 8;
  l.micro_batches = 8;
  EXPECT_EQ(tied_output_copy_params(net, l), 77'205'504);
  const std::int64_t block = 75'503'616 + 75'503'616 + 75'499'008 + 49'152;
  const std::int64_t last = 12 * block + 24'576 + 77'205'504;
  EXPECT_EQ(last, 2'795'894'784);
  EXPECT_EQ(rank_params(net, l, 7), last);
  EXPECT_EQ(rank_params(net, l, 3), 12 * block);  // a middle stage: no copy
  ComputeOptions opt;                             // fp32
  opt.optimizer = Optimizer::adam;
  const MemoryEstimate m = rank_memory(net, l, 7, opt, Sharding{}, 1, ActivationRecompute::full);
  EXPECT_DOUBLE_EQ(in_bytes(m.weights), 4.0 * 2'795'894'784.0);
  EXPECT_DOUBLE_EQ(in_bytes(m.gradients), 4.0 * 2'795'894'784.0);
  Sharding distributed;
  distributed.stage = 1;
  const MemoryEstimate d = rank_memory(net, l, 7, opt, distributed, 8, ActivationRecompute::full);
  EXPECT_DOUBLE_EQ(in_bytes(d.optimizer_state), 2'795'894'784.0);
  EXPECT_DOUBLE_EQ(in_bytes(dp_step_traffic(rank_params(net, l, 7), Sharding{}, Precision::fp32, 2).allreduce),
                   4.0 * 2'795'894'784.0);
  ParallelLayout flat = l;
  flat.pp = 1;
  EXPECT_EQ(tied_output_copy_params(net, flat), 0);
  EXPECT_EQ(tied_output_copy_params(arch("llama2-7b"), l), 0);
}

/// Llama-2-7B's shape (32 blocks), the network of the explicit-stage checks below.
Network llama2_7b_shape() {
  return build_decoder(
      DecoderShape{.layers = 32, .hidden = 4096, .heads = 32, .kv_heads = 32, .ffn = 11008, .vocab = 32000, .seq = 4096},
      "llama2-7b-shape");
}

/// The key `validate` refuses layout `l` at on 8 GPUs with model `m`; empty where it accepts it.
std::string refused_key(const ParallelLayout& l, const TransformerShape& m) {
  try {
    validate(l, 8, m);
  } catch (const InputError& e) {
    return e.key();
  }
  return "";
}

// Eq. P26b: a Llama-2-7B shape (32 blocks, h 4096, s 4096) on PP 4 with 6 blocks given to the first stage and 6 to the
// last: the other two stages hold (32 − 6 − 6)/2 = 10 each. Layers of a block: norm, attention, norm, MLP (4), so
// stage 0 runs the embedding and 24 layers, stages 1-2 40 layers, stage 3 24 layers, the final norm and the output (26).
// Every layer 1 ms forward, 2 ms backward, 0.5 ms update (fp32, 4 GPUs of the hand cluster's node, m 8, 1F1B): the
// slowest is stage 1, 40 ms + 80 ms; the even split (8 blocks a stage) has stage 3 slowest at 34 layers.
TEST(ParallelStep, ExplicitFirstAndLastStageBlocksByHand) {
  const Network net = llama2_7b_shape();
  ASSERT_EQ(net.layers.size(), 131u);
  ParallelLayout l;
  l.pp = 4;
  l.micro_batches = 8;
  l.num_layers_in_first_pipeline_stage = 6;
  l.num_layers_in_last_pipeline_stage = 6;
  const auto block = transformer_blocks(net);
  const auto count_blocks = [&](const std::vector<int>& stage) {
    std::vector<std::set<int>> per(4);
    for (std::size_t i = 0; i < stage.size(); ++i)
      if (block[i] >= 0) per[static_cast<std::size_t>(stage[i])].insert(block[i]);
    std::vector<std::size_t> n;
    for (const auto& p : per) n.push_back(p.size());
    return n;
  };
  const auto stage = layer_stages(net, l);
  EXPECT_EQ(count_blocks(stage), (std::vector<std::size_t>{6, 10, 10, 6}));
  EXPECT_EQ(stage.front(), 0);  // the embedding
  EXPECT_EQ(stage.back(), 3);   // the output layer
  // blocks in order: 0-5 on stage 0, 6-15 on 1, 16-25 on 2, 26-31 on 3
  for (std::size_t i = 0; i < stage.size(); ++i)
    if (block[i] >= 0) {
      EXPECT_EQ(stage[i], block[i] < 6 ? 0 : block[i] < 16 ? 1 : block[i] < 26 ? 2 : 3) << i;
    }

  // the step by hand (P7, P13)
  const LayerTimes whole = uniform_times(131);
  Cluster c = hand_cluster(1);
  const ComputeOptions opt;  // fp32
  const ParallelStep st = parallel_step(net, whole, c, *make_alpha_beta_model(c), l, 4, opt, Sharding{});
  EXPECT_EQ(st.slowest_stage, 1);
  EXPECT_NEAR(in_seconds(st.forward), 40e-3, 1e-15);
  EXPECT_NEAR(in_seconds(st.backward), 80e-3, 1e-15);
  // P4: b·s·h·4 = 67,108,864 B between neighbouring ranks of the node: 1 µs + 671.08864 µs, twice a micro-batch
  const double send = 1e-6 + 671.08864e-6;
  EXPECT_NEAR(in_seconds(st.p2p), 2 * send, 1e-12);
  const double mb = 120e-3 + 2 * send;
  EXPECT_NEAR(in_seconds(st.pipeline), (8 + 3) * mb, 1e-12);  // (m + p − 1)·t_mb
  EXPECT_NEAR(in_seconds(st.bubble), 3 * mb, 1e-12);
  EXPECT_NEAR(in_seconds(st.dp_comm), 0.0, 1e-15);  // dp 1
  EXPECT_NEAR(in_seconds(st.update), 40 * 0.5e-3, 1e-15);
  EXPECT_NEAR(in_seconds(st.step), 11 * mb + 20e-3, 1e-12);
  // the even split: stage 3 of 34 layers sets the pace, 34 + 68 ms
  ParallelLayout even = l;
  even.num_layers_in_first_pipeline_stage = even.num_layers_in_last_pipeline_stage = 0;
  const ParallelStep st_even = parallel_step(net, whole, c, *make_alpha_beta_model(c), even, 4, opt, Sharding{});
  EXPECT_EQ(st_even.slowest_stage, 3);
  EXPECT_NEAR(in_seconds(st_even.per_microbatch), 102e-3 + 2 * send, 1e-12);

  // memory per stage follows the split (P10): stage 0 holds the embedding and 6 blocks' weights, stage 1 10 blocks'
  std::int64_t embedding = 0, one_block = 0;
  for (std::size_t i = 0; i < block.size(); ++i) {
    if (net.layers[i].kind == LayerKind::embedding) embedding += net.layers[i].params;
    if (block[i] == 0) one_block += net.layers[i].params;
  }
  EXPECT_EQ(rank_params(net, l, 0), embedding + 6 * one_block);
  EXPECT_EQ(rank_params(net, l, 1), 10 * one_block);
  ASSERT_EQ(st.memory.size(), 4u);
  EXPECT_GT(st.memory[1].weights, st.memory[0].weights);

  // interleaved, vp 2: each stage's blocks in two chunks, chunk j of stage s the (4j + s)-th: 3, 5, 5, 3, 3, 5, 5, 3 blocks
  ParallelLayout vl = l;
  vl.vp = 2;
  vl.schedule = PipelineSchedule::interleaved;
  vl.micro_batches = 8;
  const auto vs = layer_stages(net, vl);
  EXPECT_EQ(count_blocks(vs), (std::vector<std::size_t>{6, 10, 10, 6}));
  for (std::size_t i = 0; i < vs.size(); ++i) {
    if (block[i] < 0) continue;
    const int b = block[i] % 16;  // the second round of chunks repeats the first's pattern
    EXPECT_EQ(vs[i], b < 3 ? 0 : b < 8 ? 1 : b < 13 ? 2 : 3) << i;
  }
  EXPECT_NO_THROW(validate(vl, 4, transformer_shape(net)));
}

TEST(ParallelValidate, ExplicitStageBlocksAsMegatronChecksThem) {
  const Network net = llama2_7b_shape();
  const TransformerShape m = transformer_shape(net);
  const auto key_of = [&](const ParallelLayout& l) { return refused_key(l, m); };
  ParallelLayout l;
  l.pp = 4;
  l.micro_batches = 8;
  l.num_layers_in_first_pipeline_stage = 7;  // 25 left over 3 stages
  EXPECT_EQ(key_of(l), "num_layers_in_first_pipeline_stage");
  l.num_layers_in_first_pipeline_stage = 5;  // 27 over 3: 9 each
  EXPECT_EQ(key_of(l), "");
  l.num_layers_in_last_pipeline_stage = 6;  // 21 over 2
  EXPECT_EQ(key_of(l), "num_layers_in_first_pipeline_stage");
  l.num_layers_in_first_pipeline_stage = 0;  // the last alone: 26 over 3
  EXPECT_EQ(key_of(l), "num_layers_in_last_pipeline_stage");
  l.num_layers_in_last_pipeline_stage = -1;
  EXPECT_EQ(key_of(l), "num_layers_in_last_pipeline_stage");
  // pp 2: the two given stages hold every block
  ParallelLayout two;
  two.pp = 2;
  two.num_layers_in_first_pipeline_stage = 10;
  two.num_layers_in_last_pipeline_stage = 20;
  EXPECT_EQ(key_of(two), "num_layers_in_first_pipeline_stage");
  two.num_layers_in_last_pipeline_stage = 22;
  EXPECT_EQ(key_of(two), "");
  // no pipeline; beside eq. P26's accounts (Megatron refuses the combination)
  ParallelLayout one;
  one.num_layers_in_last_pipeline_stage = 4;
  EXPECT_EQ(key_of(one), "num_layers_in_last_pipeline_stage");
  two.account_for_loss_in_pipeline_split = true;
  EXPECT_EQ(key_of(two), "num_layers_in_first_pipeline_stage");
  // virtual stages: every stage's blocks a multiple of vp (6 + 10 + 10 + 6 over vp 2 passes, 5 + 9 + 9 + 9 does not)
  ParallelLayout v;
  v.pp = 4;
  v.vp = 2;
  v.schedule = PipelineSchedule::interleaved;
  v.micro_batches = 8;
  v.num_layers_in_first_pipeline_stage = 5;
  EXPECT_EQ(key_of(v), "num_layers_in_first_pipeline_stage");
  v.num_layers_in_first_pipeline_stage = 6;
  v.num_layers_in_last_pipeline_stage = 6;
  EXPECT_EQ(key_of(v), "");
  v.num_layers_in_first_pipeline_stage = 8;  // 18 left, 9 a middle stage: not a multiple of 2
  v.num_layers_in_last_pipeline_stage = 6;
  EXPECT_EQ(key_of(v), "num_layers_in_first_pipeline_stage");
}

// Eq. P26b beside P31: partial full recompute counts the blocks of the chunks P26b makes. 32 blocks on PP 4 with 6
// on the first and the last stage: 6/10/10/6, so N may reach 10 (not 8, the even split's) and no more; block N = 7
// reruns the first 7 of each chunk: blocks 0-5 (all 6 of stage 0), 6-12, 16-22 and 26-31 (all 6 of the last), 26.
// Under VP 2 each stage's blocks split in two chunks (3/5/5/3 twice): N at most 5.
TEST(ParallelValidate, PartialRecomputeCountsTheExplicitStagesBlocks) {
  const Network net = llama2_7b_shape();
  const TransformerShape m = transformer_shape(net);
  const auto key_of = [&](const ParallelLayout& l) { return refused_key(l, m); };
  ParallelLayout l;
  l.pp = 4;
  l.micro_batches = 8;
  l.num_layers_in_first_pipeline_stage = 6;
  l.num_layers_in_last_pipeline_stage = 6;
  l.recompute_method = RecomputeMethod::block;
  l.recompute_num_layers = 10;
  EXPECT_EQ(key_of(l), "");
  l.recompute_num_layers = 11;
  EXPECT_EQ(key_of(l), "recompute_num_layers");
  l.recompute_num_layers = 7;
  const std::vector<BlockRecompute> again = full_recompute_blocks(net, l);
  ASSERT_EQ(again.size(), 32U);
  int rerun = 0;
  for (int b = 0; b < 32; ++b) {
    const bool want = b < 6 || (b >= 6 && b < 13) || (b >= 16 && b < 23) || b >= 26;
    EXPECT_EQ(again[static_cast<std::size_t>(b)].again, want) << "block " << b;
    rerun += again[static_cast<std::size_t>(b)].again ? 1 : 0;
  }
  EXPECT_EQ(rerun, 26);
  l.vp = 2;
  l.schedule = PipelineSchedule::interleaved;
  l.recompute_num_layers = 5;
  EXPECT_EQ(key_of(l), "");
  l.recompute_num_layers = 6;
  EXPECT_EQ(key_of(l), "recompute_num_layers");
}

// Eq. P25 by hand. The equation: 16 chunks each way, sends of 3 µs beside 1 µs forward and 2 µs backward chunks:
// 15·2 + 16·1 + 3 = 49 µs; chunks of no compute leave all 32 sends; chunks longer than the send leave the last one.
TEST(ParallelStep, OverlappedSendsLeaveWhatTheNextChunkCannotCover) {
  EXPECT_NEAR(in_seconds(pp_overlap_exposed_sends(microseconds(3.0), microseconds(1.0), microseconds(2.0), 8, 2)), 49e-6, 1e-18);
  EXPECT_NEAR(in_seconds(pp_overlap_exposed_sends(microseconds(3.0), Seconds{}, Seconds{}, 8, 2)), 32 * 3e-6, 1e-18);
  EXPECT_NEAR(in_seconds(pp_overlap_exposed_sends(microseconds(3.0), microseconds(4.0), microseconds(8.0), 8, 2)), 3e-6, 1e-18);
  // the pipeline: (m + (p−1)/v)·t_c + E + 2·(p−1)·t_s; p 4, m 8, v 2, t_c 10 µs: 95 + 49 + 18 µs
  EXPECT_NEAR(in_seconds(pipeline_time_overlapped(4, 8, 2, microseconds(10.0), microseconds(49.0), microseconds(3.0))), 162e-6,
              1e-18);
}

// Eq. P25 in a step: the 8-block decoder (35 layers) on PP 4 × VP 2 (interleaved, m 8, fp32, 4 GPUs of one node), every
// layer 0.2 µs forward and 0.4 µs backward. Chunks of one block: stage 0 holds the embedding and blocks 0, 4 (9 layers),
// stages 1-2 8 layers, stage 3 blocks 3, 7, the final norm and the output (10 layers). A send (P4): b·s·h·4 = 131,072 B
// at 1 µs + 1.31072 µs = t_s = 2.31072 µs.
// Unoverlapped (P7): stage 3's t_mb = 2 + 4 + 2·2·t_s = 15.24288 µs, the pipeline (8 + 3/2)·t_mb = 144.80736 µs.
// Overlapped: stage 3's chunks are 1 µs forward and 2 µs backward; m·v = 16 chunks each way:
//   E = 15·(t_s − 1) + 16·(t_s − 2) + t_s = 19.6608 + 4.97152 + 2.31072 = 26.94304 µs,
//   t_pipe = 9.5·6 + E + 2·3·t_s = 57 + 26.94304 + 13.86432 = 97.80736 µs.
// Stage 0 (chunks 0.9 and 1.8 µs): E = 15·1.41072 + 16·0.51072 + t_s = 31.64304, t_pipe = 9.5·5.4 + 31.64304 + 13.86432 =
// 96.80736 µs; stages 1-2: 9.5·4.8 + 36.34304 + 13.86432 = 95.80736 µs: stage 3 is the slowest.
TEST(ParallelStep, OverlappedSendsOfAnInterleavedPipelineByHand) {
  const Network net = tiny_decoder(8);
  ASSERT_EQ(net.layers.size(), 35u);
  LayerTimes t = uniform_times(net.layers.size());
  for (auto* v : {&t.forward, &t.backward, &t.update})
    for (auto& x : *v) x = x / 5000.0;  // 0.2 µs, 0.4 µs, 0.1 µs
  Cluster c = hand_cluster(1);
  ParallelLayout l;
  l.pp = 4;
  l.vp = 2;
  l.schedule = PipelineSchedule::interleaved;
  l.micro_batches = 8;
  const ComputeOptions opt;
  const double ts = 1e-6 + 1.31072e-6;
  const ParallelStep plain = parallel_step(net, t, c, *make_alpha_beta_model(c), l, 4, opt, Sharding{});
  EXPECT_EQ(plain.slowest_stage, 3);
  EXPECT_NEAR(in_seconds(plain.pipeline), 9.5 * (6e-6 + 4 * ts), 1e-15);
  l.pp_comm_overlap = true;
  const ParallelStep over = parallel_step(net, t, c, *make_alpha_beta_model(c), l, 4, opt, Sharding{});
  EXPECT_EQ(over.slowest_stage, 3);
  const double exposed = 15 * (ts - 1e-6) + 16 * (ts - 2e-6) + ts;
  EXPECT_NEAR(exposed, 26.94304e-6, 1e-15);
  EXPECT_NEAR(in_seconds(over.p2p), exposed / 8, 1e-15);
  EXPECT_NEAR(in_seconds(over.pipeline), 97.80736e-6, 1e-15);
  EXPECT_NEAR(in_seconds(over.bubble), 1.5 * 6e-6 + 6 * ts, 1e-15);
  EXPECT_NEAR(in_seconds(plain.step - over.step), 2 * 16 * ts - exposed, 1e-15);
  // 1F1B without virtual stages: Megatron does not overlap, nor does the model
  ParallelLayout flat = l;
  flat.vp = 1;
  flat.schedule = PipelineSchedule::one_f_one_b;
  const ParallelStep a = parallel_step(net, t, c, *make_alpha_beta_model(c), flat, 4, opt, Sharding{});
  flat.pp_comm_overlap = false;
  const ParallelStep b = parallel_step(net, t, c, *make_alpha_beta_model(c), flat, 4, opt, Sharding{});
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.p2p, b.p2p);
}

// Eq. P19 by hand: a collective of 10 ms beside 4 ms of compute leaves 6 ms; beside 20 ms, the quarter that cannot
// start before the window ends (2.5 ms); nothing to overlap, nothing exposed.
TEST(ParallelStep, DpOverlapLeavesWhatTheWindowCannotCover) {
  EXPECT_NEAR(in_seconds(dp_overlap_exposed(milliseconds(10.0), milliseconds(4.0), 0.25)), 6e-3, 1e-15);
  EXPECT_NEAR(in_seconds(dp_overlap_exposed(milliseconds(10.0), milliseconds(20.0), 0.25)), 2.5e-3, 1e-15);
  EXPECT_EQ(dp_overlap_exposed(Seconds{}, milliseconds(20.0), 0.25), Seconds{});
}

// Eq. P19 in the step of PipelineOfTwoStagesByHand: the DP all-reduce (2 µs + 4·P / 100 GB/s, microseconds) beside
// the slowest stage's 20 ms backward of a micro-batch; each rank holds 4 / 2 = 2 blocks, so the half that is the
// stage's first block is left after the window: the step saves the other half.
TEST(ParallelStep, DpReductionOverlappedWithTheLastBackward) {
  const Network net = tiny_decoder();
  const LayerTimes whole = uniform_times(19);
  Cluster c = hand_cluster(1);
  ParallelLayout l = two_stages_of_four();
  const ComputeOptions opt;
  const ParallelStep plain = parallel_step(net, whole, c, *make_alpha_beta_model(c), l, 4, opt, Sharding{});
  l.dp_comm_overlap = true;
  const ParallelStep over = parallel_step(net, whole, c, *make_alpha_beta_model(c), l, 4, opt, Sharding{});
  const double P = static_cast<double>(std::max(rank_params(net, l, 0), rank_params(net, l, 1)));
  const double allreduce = 2e-6 + 4.0 * P / 1e11;
  ASSERT_LT(allreduce, 20e-3);
  EXPECT_NEAR(in_seconds(plain.dp_comm), allreduce, 1e-15);
  EXPECT_NEAR(in_seconds(over.dp_comm), allreduce / 2, 1e-15);
  EXPECT_NEAR(in_seconds(plain.step - over.step), allreduce / 2, 1e-14);
  EXPECT_EQ(over.pipeline, plain.pipeline);
}

// Eq. P21 by hand: 12 ms of collective in 3 chunks of 4 ms, each beside its chunk's 1 ms backward (half its first
// block's): chunk 0's max(2, 3) = 3 ms, and the two chunks queued before it finish p·1 = 2 ms apart, 4 − 2 ms each
// past: 7 ms. Beside 4 ms chunks nothing queues: the last block's quarter, 1 ms. One chunk is eq. P19.
TEST(ParallelStep, DpOverlapOverInterleavedChunksByHand) {
  EXPECT_NEAR(in_seconds(dp_overlap_exposed(milliseconds(12.0), milliseconds(1.0), 0.5, 3, 2)), 7e-3, 1e-15);
  EXPECT_NEAR(in_seconds(dp_overlap_exposed(milliseconds(12.0), milliseconds(4.0), 0.25, 3, 2)), 1e-3, 1e-15);
  EXPECT_NEAR(in_seconds(dp_overlap_exposed(milliseconds(10.0), milliseconds(4.0), 0.25, 1, 4)), 6e-3, 1e-15);
  // FSDP2 under a pipeline (eq. P20): nothing of a chunk before its last backward (share 1)
  EXPECT_NEAR(in_seconds(dp_overlap_exposed(milliseconds(12.0), milliseconds(1.0), 1.0, 3, 2)), 8e-3, 1e-15);
}

// Eq. P21 in a step: an 8-block decoder on PP 2 × VP 2 × DP 2 (interleaved, m 4, fp32), every layer 1 µs forward and
// 2 µs backward. Stage 1 holds chunks 1 and 3 (blocks 2-3 and 6-7), the final norm and the output: 18 layers, a
// micro-batch's backward 36 µs, 18 µs a chunk; a chunk's first block is half its blocks. Its all-reduce c = 2 µs +
// 4·P / 100 GB/s: chunk 0's half max(c/4, c/2 − 18 µs), and chunk 1's half queued 2 chunk backwards (36 µs) earlier,
// c/2 − 36 µs past. Eq. P19 alone (one micro-batch's 36 µs, a quarter left) would leave c − 36 µs.
TEST(ParallelStep, DpReductionOverInterleavedChunksByHand) {
  const Network net = tiny_decoder(8);
  LayerTimes t = uniform_times(net.layers.size());
  for (auto* v : {&t.forward, &t.backward, &t.update})
    for (auto& x : *v) x = x / 1000.0;  // microseconds
  Cluster c = hand_cluster(1);
  ParallelLayout l;
  l.pp = 2;
  l.vp = 2;
  l.schedule = PipelineSchedule::interleaved;
  l.micro_batches = 4;
  l.dp_comm_overlap = true;
  const ParallelStep st = parallel_step(net, t, c, *make_alpha_beta_model(c), l, 4, ComputeOptions{}, Sharding{});
  ASSERT_EQ(st.slowest_stage, 1);
  EXPECT_NEAR(in_seconds(st.backward), 36e-6, 1e-15);
  const double P = static_cast<double>(std::max(rank_params(net, l, 0), rank_params(net, l, 1)));
  const double ar = 2e-6 + 4.0 * P / 1e11;
  ASSERT_GT(ar / 2 - 18e-6, ar / 4);  // the chunk's collective outlasts its window
  EXPECT_NEAR(in_seconds(st.dp_comm), (ar / 2 - 18e-6) + (ar / 2 - 36e-6), 1e-15);
  EXPECT_LT(in_seconds(st.dp_comm), ar - 36e-6);
}

// Eq. P20 by hand: the step of PipelineOfTwoStagesByHand (slowest stage 1: 10 ms forward, 20 ms backward a
// micro-batch, 2 blocks a rank) with its DP 2 sharded at stage 3, fp32: the all-gather of the larger stage's P
// parameters and their reduce-scatter over the node's 2 ranks take 1 µs + (1/2)·4·P / 100 GB/s each, far inside
// either window, so each gather leaves its first block's half.
TEST(ParallelStep, Stage3ShardsGatherAsThePipelineRunsThem) {
  const Network net = tiny_decoder();
  const LayerTimes whole = uniform_times(19);
  Cluster c = hand_cluster(1);
  ParallelLayout l = two_stages_of_four();
  const ComputeOptions opt;
  Sharding sh;
  sh.stage = 3;
  const double P = static_cast<double>(std::max(rank_params(net, l, 0), rank_params(net, l, 1)));
  const double a = 1e-6 + 0.5 * 4.0 * P / 1e11;
  // torchtitan under PP (kept whole): one gather a step beside the first forward; the reduce-scatter after the
  // stage's last backward, whole (the post-backward runs after it)
  l.pp_reshard_after_forward = false;
  const ParallelStep kept = parallel_step(net, whole, c, *make_alpha_beta_model(c), l, 4, opt, sh);
  EXPECT_NEAR(in_seconds(kept.dp_comm), a / 2 + a, 1e-15);
  // resharded after each forward: stage 1 of 2 gathers for its one forward before the first backward, then for the 4
  // backwards that each follow a forward: 5 gathers
  l.pp_reshard_after_forward = true;
  const ParallelStep re = parallel_step(net, whole, c, *make_alpha_beta_model(c), l, 4, opt, sh);
  EXPECT_NEAR(in_seconds(re.dp_comm), 5 * a / 2 + a, 1e-15);
  // the stage's parameters and gradients whole over the step (4 B each in fp32)
  const MemoryEstimate m1 = rank_memory(net, l, 1, opt, sh, 2, ActivationRecompute::none);
  EXPECT_NEAR(in_bytes(m1.weights), 4.0 * static_cast<double>(rank_params(net, l, 1)), 1e-3);
  EXPECT_NEAR(in_bytes(m1.gradients), 4.0 * static_cast<double>(rank_params(net, l, 1)), 1e-3);
  // no pipeline (DP 4, m 4, 4 blocks a rank): every micro-batch gathers before its forward and its backward, a quarter
  // left each, 8·a4/4; a flat FSDP reduce-scatters once (no_sync before), beside the last backward: its quarter;
  // FSDP2 (per-parameter shards) every micro-batch: 4·a4/4
  ParallelLayout dp;
  dp.micro_batches = 4;
  const double P4 = static_cast<double>(rank_params(net, dp, 0)), a4 = 3e-6 + 0.75 * 4.0 * P4 / 1e11;
  const ParallelStep flat = parallel_step(net, whole, c, *make_alpha_beta_model(c), dp, 4, opt, sh);
  EXPECT_NEAR(in_seconds(flat.dp_comm), 8 * a4 / 4 + a4 / 4, 1e-15);
  sh.per_parameter = true;
  const ParallelStep fsdp2 = parallel_step(net, whole, c, *make_alpha_beta_model(c), dp, 4, opt, sh);
  EXPECT_NEAR(in_seconds(fsdp2.dp_comm), 8 * a4 / 4 + 4 * a4 / 4, 1e-15);
}

// Eq. P45 by hand: a stage-2 rank (ZeRO-2) under a layout holds its gradients as P20's stage 3 does, since its step
// reduces them once, after the last micro-batch (P5/P19): whole while it accumulates, sharded over its dp·cp ranks
// only where one micro-batch runs or FSDP2 (per-parameter) reduce-scatters each without a pipeline. The 4-block decoder,
// fp32 (4 B a gradient), over 2 dp·cp ranks: PP 2 with m 4 (stage 1), its P_1 parameters: 4·P_1 B of gradients, the
// same as stage 1; without a pipeline (P_0 the whole model's) m 1: 4·P_0/2; m 4: 4·P_0; m 4 per-parameter: 4·P_0/2. The
// optimiser state (AdamW's two moments, 8 B a parameter) over the 2 ranks in every case. Before, stage 2 sharded the
// gradients whatever m: 2·P_1 B for the pipeline's stage 1.
TEST(ParallelMemory, Stage2GradientsWholeWhileTheStepAccumulatesByHand) {
  const Network net = tiny_decoder();
  ComputeOptions opt;
  opt.optimizer = Optimizer::adamw;
  Sharding z2;
  z2.stage = 2;
  Sharding z1 = z2;
  z1.stage = 1;
  const ParallelLayout pipe = two_stages_of_four();
  const double P1 = static_cast<double>(rank_params(net, pipe, 1));
  const MemoryEstimate m2 = rank_memory(net, pipe, 1, opt, z2, 2, ActivationRecompute::none);
  EXPECT_NEAR(in_bytes(m2.gradients), 4.0 * P1, 1e-3);
  EXPECT_NEAR(in_bytes(m2.gradients), in_bytes(rank_memory(net, pipe, 1, opt, z1, 2, ActivationRecompute::none).gradients), 1e-3);
  EXPECT_NEAR(in_bytes(m2.optimizer_state), 8.0 * P1 / 2, 1e-3);
  ParallelLayout one;  // TP 1 × PP 1, m micro-batches
  const double P0 = static_cast<double>(rank_params(net, one, 0));
  const auto gradients = [&](int m, bool per_parameter) {
    one.micro_batches = m;
    Sharding sh = z2;
    sh.per_parameter = per_parameter;
    return in_bytes(rank_memory(net, one, 0, opt, sh, 2, ActivationRecompute::none).gradients);
  };
  EXPECT_NEAR(gradients(1, false), 4.0 * P0 / 2, 1e-3);
  EXPECT_NEAR(gradients(4, false), 4.0 * P0, 1e-3);
  EXPECT_NEAR(gradients(4, true), 4.0 * P0 / 2, 1e-3);
}

// Eq. P40 by hand: HSDP (fsdp-hybrid's `group: node`, stage 3, FULL_SHARD, flat) under TP 2 on 2 hand nodes of 8
// (16 GPUs, DP 8, m 1, fp32), the 4-block decoder. Megatron's order puts rank = tp + 2·dp, so each dp·cp group
// {j, j+2, …, j+14} has 4 ranks on each node: shard groups of n = 4 inside a node ({0,2,4,6}, …), replica groups of R = 2
// ({j, j+8}, one rank a node). A rank holds P = 1,569,024 parameters (P5: the embedding's 256,000/2 = 128,000, four
// blocks of 2·256 + 262,144/2 + 393,216/2 = 328,192, the final norm's 256, the head's 128,000), 4 B each:
//   bytes per step (S2 with n = 4, R = 2): reduce-scatter 4P·3/4 = 3P, all-gather forward 3P and backward 3P, the
//   shard's all-reduce (4P/4)·2·(1/2) = P: 10P = 15,690,240 B, where sharding over all 8 moved 3·4P·7/8 = 10.5P =
//   16,474,752 B and none across replicas;
//   times (alpha-beta): all-gather or reduce-scatter in the node a = 3·1 µs + (3/4)·4P / 100 GB/s; the replicas'
//   all-reduce across the 2 nodes, the node's 8 replica groups sharing its one NIC (P11, share 8): 2·5 µs + 8·P/10 GB/s;
//   the gathers and the reduce-scatter (+ all-reduce) far inside the millisecond passes, so P20 leaves their first
//   block's quarter: 2 gathers a/4 each, the reduce r/4: dp_comm = a/2 + (a + x)/4;
//   memory (S3 with n = 4): weights and gradients P·4/4 each, twice what sharding over 8 holds; the update over 4.
TEST(ParallelStep, HybridShardingShardsInsideTheNodeAndReducesAcrossReplicasByHand) {
  const Network net = tiny_decoder();
  const LayerTimes whole = uniform_times(19);
  const Cluster c = hand_cluster(2);
  ParallelLayout l;
  l.tp = 2;
  const ComputeOptions opt;  // fp32
  Sharding hsdp;
  hsdp.stage = 3;
  hsdp.group = Sharding::kGroupNode;
  Sharding all = hsdp;
  all.group = Sharding::kGroupAll;
  const double P = static_cast<double>(rank_params(net, l, 0));
  ASSERT_EQ(P, 128'000 + 4 * 328'192 + 256 + 128'000);
  const LayoutShards sg = layout_shards(l, hsdp, c, 16, place_layout(l, c, 16));
  EXPECT_EQ(sg.shard, 4);
  EXPECT_EQ(sg.replicas, 2);
  EXPECT_TRUE(sg.shard_at.inside_node);
  EXPECT_EQ(sg.shard_at.first, (std::vector<int>{0, 2, 4, 6}));
  EXPECT_EQ(sg.replica_at.first, (std::vector<int>{0, 8}));
  EXPECT_EQ(sg.replica_at.nodes, 2);
  EXPECT_DOUBLE_EQ(sg.replica_at.nic_share, 8.0);
  // bytes per step
  const StepTraffic t = dp_step_traffic(static_cast<std::int64_t>(P), hsdp, Precision::fp32, 8, sg.shard);
  EXPECT_DOUBLE_EQ(in_bytes(t.reducescatter), 3 * P);
  EXPECT_DOUBLE_EQ(in_bytes(t.allgather_forward), 3 * P);
  EXPECT_DOUBLE_EQ(in_bytes(t.allgather_backward), 3 * P);
  EXPECT_DOUBLE_EQ(in_bytes(t.allreduce_replicas), P);
  EXPECT_DOUBLE_EQ(in_bytes(t.total()), 10 * P);
  EXPECT_DOUBLE_EQ(in_bytes(dp_step_traffic(static_cast<std::int64_t>(P), all, Precision::fp32, 8).total()), 10.5 * P);
  // the step's DP part and memory
  const ParallelStep h = parallel_step(net, whole, c, *make_alpha_beta_model(c), l, 16, opt, hsdp);
  const ParallelStep w = parallel_step(net, whole, c, *make_alpha_beta_model(c), l, 16, opt, all);
  const double a = 3e-6 + 0.75 * 4.0 * P / 1e11, x = 2 * 5e-6 + 8.0 * P / 1e10;
  EXPECT_NEAR(in_seconds(h.dp_comm), a / 2 + (a + x) / 4, 1e-15);
  EXPECT_NEAR(in_bytes(h.memory[0].weights), 4.0 * P / 4, 1e-3);
  EXPECT_NEAR(in_bytes(h.memory[0].gradients), 4.0 * P / 4, 1e-3);
  EXPECT_NEAR(in_bytes(w.memory[0].weights), 4.0 * P / 8, 1e-3);
  EXPECT_NEAR(in_seconds(h.update) * 4, in_seconds(w.update) * 8, 1e-15);
  EXPECT_GT(in_seconds(w.update), 0.0);
}

// Eq. P40's refusals: a shard group that does not divide the layout's dp·cp ranks, or is larger than them.
TEST(ParallelStep, HybridShardGroupThatDoesNotDivideTheDataParallelRanksIsRefused) {
  const Network net = tiny_decoder();
  const Cluster c = hand_cluster(2);
  ParallelLayout l;
  l.tp = 2;  // dp 8 on 16 GPUs
  Sharding sh;
  sh.stage = 3;
  for (int n : {3, 16}) {
    sh.group = n;
    try {
      (void)parallel_step(net, uniform_times(19), c, *make_alpha_beta_model(c), l, 16, ComputeOptions{}, sh);
      ADD_FAILURE() << "group " << n << " taken";
    } catch (const InputError& e) {
      EXPECT_EQ(e.key(), "strategy.sharding.group");  // the CLI's --shard-group (eq. P44)
      EXPECT_NE(e.message().find("groups of " + std::to_string(n) + " data-parallel ranks"), std::string::npos) << e.message();
    }
  }
  sh.group = 2;  // divides: 4 replicas of 2
  EXPECT_EQ(layout_shards(l, sh, c, 16, place_layout(l, c, 16)).replicas, 4);
}

// Eq. P13 with P15: the 4-block decoder of PipelineOfTwoStagesByHand on CP 2 (2 GPUs of one node, fp32), a rank's
// own times: every layer 1 ms forward and 2 ms backward, each attention core 1 µs and 2 µs of it, run c = 2 times
// (eq. P6): +1 µs and +2 µs a block. The ring: K/V of 64 tokens, 4 heads of 64, 2·64·4·64·4 = 131,072 B a step:
// 1 µs + 1.31072 µs on the node's link; K/V with dK/dV 1 µs + 2.62144 µs. Forward (c−1)·(2.31072 − 1) µs past
// the 1 µs steps; backward 2·(2.31072 − 2) µs past the 2 µs steps: 1.93216 µs a block. The merges (P15c) of the
// slowest rank: forward two full steps of 16,384·(4 + 8) + 256·12 B and the cast 16,384·8 B, 530,432 B; backward
// rank 0's (16,384 + 32,768)·12 + (8,192 + 32,768)·12 = 1,081,344 B (K and V as wide as Q here: the rank whose
// later steps take all the keys); 4 kernels each, at the kernel model's memory efficiency and overhead.
TEST(ParallelStep, ContextParallelRingByHand) {
  const Network net = tiny_decoder();
  LayerTimes own;
  own.forward.assign(19, milliseconds(1.0));
  own.backward.assign(19, milliseconds(2.0));
  own.update.assign(19, milliseconds(0.5));
  own.forward_attention.assign(19, Seconds{});
  own.backward_attention.assign(19, Seconds{});
  for (std::size_t i = 0; i < net.layers.size(); ++i)
    if (net.layers[i].kind == LayerKind::attention) {
      own.forward_attention[i] = microseconds(1.0);
      own.backward_attention[i] = microseconds(2.0);
    }
  Cluster c = hand_cluster(1);
  c.gpu.memory_bandwidth = gigabytes_per_second(1000.0);
  ParallelLayout l;
  l.cp = 2;
  const ComputeOptions opt;  // fp32
  const ParallelStep st = parallel_step(net, own, c, *make_alpha_beta_model(c), l, 2, opt, Sharding{}, LayerTimesOf::tp_rank);
  EXPECT_NEAR(in_seconds(st.cp_exposed), 4 * (1.31072e-6 + 2 * 0.31072e-6), 1e-15);
  const KernelParams& kp = opt.kernel(c.gpu);
  const double bw = 1e12 * kp.memory_efficiency, k = 4 * in_seconds(kp.kernel_overhead);
  EXPECT_NEAR(in_seconds(st.forward), 19e-3 + 4 * 1e-6 + 4 * (530'432.0 / bw + k), 1e-14);
  EXPECT_NEAR(in_seconds(st.backward), 38e-3 + 4 * 2e-6 + 4 * (1'081'344.0 / bw + k), 1e-14);
  // selective recompute runs the core again in backward, its ring and its merges too
  ComputeOptions sel = opt;
  sel.recompute = Recompute::selective;
  const ParallelStep again = parallel_step(net, own, c, *make_alpha_beta_model(c), l, 2, sel, Sharding{}, LayerTimesOf::tp_rank);
  EXPECT_NEAR(in_seconds(again.cp_exposed), 4 * (2 * 1.31072e-6 + 2 * 0.31072e-6), 1e-15);
  EXPECT_NEAR(in_seconds(again.backward), 38e-3 + 4 * 2e-6 + 4 * 2e-6 + 4 * (1'081'344.0 / bw + k + 530'432.0 / bw + k), 1e-14);
}

// ---- eq. P28: the column-parallel backward's input gradients beside their weight gradients -------------------
// One Llama-3-70B block (h 8192, 64 heads, 8 key/value heads, ffn 28672, vocabulary 128256, s 8192, b 1, bf16) at TP 8
// on one hand-timed node: S = 8192·8192·2 = 134,217,728 B. Without SP the backward's two all-reduces of S are the
// input gradients of q/k/v and of up-and-gate, 2·(7/8)·S = 234,881,024 B on a GPU's wire each, and the output layer's
// input gradient one more; with SP the two reduce-scatters, (7/8)·S = 117,440,512 B each (and the output layer's).
// The weight-gradient GEMMs the rank runs beside them, from the GEMM model at the hand shapes (out, in, rows): q/k/v
// (1280, 8192, 8192) with 1280 = 8·128 + 2·1·128, up and gate (7168, 8192, 8192), the output layer (16032, 8192, 8192).
TEST(ParallelStep, AsyncColumnParallelBackwardOfOneLlamaBlockByHand) {
  const Network net = build_decoder(
      DecoderShape{.layers = 1, .hidden = 8192, .heads = 64, .kv_heads = 8, .ffn = 28672, .vocab = 128256, .seq = 8192}, "l70x1");
  const TransformerShape m = transformer_shape(net);
  Cluster c = hand_cluster(1);
  c.gpu = cluster("dgx-h100-ndr").gpu;
  ComputeOptions opt;
  opt.precision = Precision::bf16;
  opt.attention = AttentionKernel::flash;
  ParallelLayout l;
  l.tp = 8;
  const auto calls = tp_block_collectives(l, m, kBf16);
  double grads = 0;
  for (const auto& x : calls)
    if (x.input_grad) grads += in_bytes(wire_bytes(x, 8));
  EXPECT_DOUBLE_EQ(grads, 2 * 234'881'024.0);
  const auto head = tp_edge_collectives(l, m, kBf16, false, true);
  EXPECT_DOUBLE_EQ(sum(head, 8, true), 234'881'024.0);                    // the output layer's input gradient
  EXPECT_DOUBLE_EQ(sum(head, 8, false), 3 * 2 * (7.0 / 8.0) * 8192 * 4);  // the cross entropy's, fp32 a token

  const KernelParams& kp = opt.kernel(c.gpu);
  const auto planned = [&](std::int64_t n, std::int64_t k, std::int64_t rows) {
    return in_seconds(plan_gemm(GemmShape{n, k, rows}, c.gpu, Precision::bf16, kp).time);
  };
  const double w_qkv = planned(1280, 8192, 8192), w_up = planned(7168, 8192, 8192), w_head = planned(16032, 8192, 8192);
  // the alpha-beta model in a node (100 GB/s, 1 us a step): an all-reduce of S 14 us + 2·(7/8)·S / 100 GB/s, a
  // reduce-scatter or all-gather 7 us + (7/8)·S / 100 GB/s; the cross entropy's all-reduces of 8192·4 B
  const double S = 134'217'728.0, ar = 14e-6 + 1.75 * S / 1e11, rs = 7e-6 + 0.875 * S / 1e11;
  const double ce = 14e-6 + 1.75 * 32768.0 / 1e11;
  const LayerTimes t = estimate_layer_times(tp_rank_network(net, l), c.gpu, 1, opt);
  const auto coll = make_alpha_beta_model(c);
  const auto step = [&](const ParallelLayout& x) {
    return in_seconds(parallel_step(net, t, c, *coll, x, 8, opt, Sharding{}, LayerTimesOf::tp_rank).tp_exposed);
  };
  // without SP, synchronous: the block's 2 + 2, the embedding's and the output layer's all-reduces and the cross
  // entropy's, whole; asynchronous: each input gradient only past its own weight gradient
  const double sync = 6 * ar + 3 * ce;
  EXPECT_NEAR(step(l), sync, 1e-12);
  l.tp_async_backward = true;
  EXPECT_NEAR(step(l), sync - std::min(ar, w_qkv) - std::min(ar, w_up) - std::min(ar, w_head), 1e-12);
  // with SP the reduce-scatters: what the async backward saves is each one's overlap with its weight gradient (the
  // re-gathers, the forward's and the row-parallel outputs' all-gathers as they were)
  l.sp = true;
  const double async_sp = step(l);
  l.tp_async_backward = false;
  EXPECT_NEAR(step(l) - async_sp, std::min(rs, w_qkv) + std::min(rs, w_up) + std::min(rs, w_head), 1e-12);
  // under P14 (userbuffers) the blocks' collectives are P14's; only the output layer's input gradient changes
  l.tp_comm_overlap = true;
  const double p14 = step(l);
  l.tp_async_backward = true;
  EXPECT_NEAR(p14 - step(l), std::min(rs, w_head), 1e-12);
}

// Eq. P30 by hand: full recompute reruns a block's forward in its backward, and with it the forward's TP collectives.
// One Llama-3-70B block at t 8 on the hand cluster (100 GB/s, 1 µs in a node), S = b·s·h·2 = 134,217,728 B. Without SP
// the forward's two all-reduces again: 2 × 2·(7/8)·S = 469,762,048 B on a GPU's wire, 2 × (14 µs + 1.75·S/100 GB/s)
// more exposed; with SP two all-gathers and two reduce-scatters, 4 × (7/8)·S, the same bytes, 4 × (7 µs +
// 0.875·S/100 GB/s). Under P14 (userbuffers) as the forward's: max(0, c − g) + c/8 + min(c, g)·16/(132 − 16), g the
// block's forward GEMMs. Selective recompute reruns no collective.
TEST(ParallelStep, FullRecomputeRunsTheForwardTpCollectivesAgainByHand) {
  const Network net = build_decoder(
      DecoderShape{.layers = 1, .hidden = 8192, .heads = 64, .kv_heads = 8, .ffn = 28672, .vocab = 128256, .seq = 8192}, "l70x1");
  const TransformerShape m = transformer_shape(net);
  Cluster c = hand_cluster(1);
  c.gpu = cluster("dgx-h100-ndr").gpu;
  ComputeOptions opt;
  opt.precision = Precision::bf16;
  opt.attention = AttentionKernel::flash;
  ParallelLayout l;
  l.tp = 8;
  const double S = 134'217'728.0, ar = 14e-6 + 1.75 * S / 1e11, rs = 7e-6 + 0.875 * S / 1e11;
  const auto again = tp_recompute_collectives(l, m, kBf16);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].what, "TP all-reduce (recomputed forward)");
  EXPECT_DOUBLE_EQ(sum(again, 8, true), 2 * 2 * (7.0 / 8.0) * S);
  const auto coll = make_alpha_beta_model(c);
  const auto exposed = [&](const ParallelLayout& x, Recompute r) {
    ComputeOptions o = opt;
    o.recompute = r;
    const LayerTimes tx = estimate_layer_times(tp_rank_network(net, x), c.gpu, 1, o);
    return in_seconds(parallel_step(net, tx, c, *coll, x, 8, o, Sharding{}, LayerTimesOf::tp_rank).tp_exposed);
  };
  EXPECT_NEAR(exposed(l, Recompute::full) - exposed(l, Recompute::none), 2 * ar, 1e-12);
  EXPECT_NEAR(exposed(l, Recompute::selective) - exposed(l, Recompute::none), 0.0, 1e-12);
  l.sp = true;
  EXPECT_DOUBLE_EQ(sum(tp_recompute_collectives(l, m, kBf16), 8, true), 4 * (7.0 / 8.0) * S);
  EXPECT_NEAR(exposed(l, Recompute::full) - exposed(l, Recompute::none), 4 * rs, 1e-12);
  // P14: the recomputed forward's collectives beside its GEMMs, as the forward's
  l.tp_comm_overlap = true;
  const LayerTimes t = estimate_layer_times(tp_rank_network(net, l), c.gpu, 1, opt);
  const std::vector<int> block = transformer_blocks(net);
  double g = 0;
  for (std::size_t i = 0; i < block.size(); ++i)
    if (block[i] == 0) g += in_seconds(t.forward_gemm[i]);
  const double cc = 4 * rs, p14 = std::max(0.0, cc - g) + cc / 8 + std::min(cc, g) * 16.0 / 116.0;
  EXPECT_NEAR(exposed(l, Recompute::full) - exposed(l, Recompute::none), p14, 1e-12);
  // eq. R1b: under the non-reentrant checkpoint's early stop the down projection is not recomputed, nor its collective:
  // without SP one all-reduce again, not two; with SP two all-gathers and one reduce-scatter
  ParallelLayout plain;
  plain.tp = 8;
  EXPECT_DOUBLE_EQ(sum(tp_recompute_collectives(plain, m, kBf16, true), 8, true), 2 * (7.0 / 8.0) * S);
  opt.recompute_early_stop = true;
  EXPECT_NEAR(exposed(plain, Recompute::full) - exposed(plain, Recompute::none), ar, 1e-12);
  plain.sp = true;
  EXPECT_DOUBLE_EQ(sum(tp_recompute_collectives(plain, m, kBf16, true), 8, true), 3 * (7.0 / 8.0) * S);
  EXPECT_NEAR(exposed(plain, Recompute::full) - exposed(plain, Recompute::none), 3 * rs, 1e-12);
}

// Eq. P31 by hand on the 4-block decoder of PipelineOfTwoStagesByHand (stage 1: blocks 2-3, 4 layers of 1 ms forward
// each, and the final norm and output): full recompute adds the blocks' forward, 8 ms, to the backward; block N = 1
// only the chunk's first block, 4 ms; uniform N = 2 every block (time as full).
TEST(ParallelStep, PartialFullRecomputeRerunsTheFirstBlocksOfEachChunk) {
  const Network net = tiny_decoder();
  const LayerTimes whole = uniform_times(19);
  Cluster c = hand_cluster(1);
  ParallelLayout l = two_stages_of_four();
  ComputeOptions opt;
  opt.recompute = Recompute::full;
  const auto backward = [&](const ParallelLayout& x) {
    return in_seconds(parallel_step(net, whole, c, *make_alpha_beta_model(c), x, 4, opt, Sharding{}).backward);
  };
  EXPECT_NEAR(backward(l), 28e-3, 1e-15);
  l.recompute_method = RecomputeMethod::block;
  EXPECT_NEAR(backward(l), 24e-3, 1e-15);
  l.recompute_num_layers = 2;
  EXPECT_NEAR(backward(l), 28e-3, 1e-15);
  l.recompute_method = RecomputeMethod::uniform;
  EXPECT_NEAR(backward(l), 28e-3, 1e-15);
}

// Eq. P31's blocks: 96 blocks on PP 8 × VP 2 (16 chunks of 6, block b in chunk ⌊b/6⌋): block N = 2 reruns the two
// first of each chunk (32 blocks), each keeping its input; uniform N = 4 reruns all 96, a checkpoint at each chunk's
// blocks 0 and 4 (the chunk's 6 blocks in groups of 4 and 2).
TEST(ParallelActivations, PartialFullRecomputeBlocksByChunk) {
  const Network net = arch("gpt3-175b");
  ParallelLayout l = gpt3_tp8_sp_pp8();
  l.vp = 2;
  l.schedule = PipelineSchedule::interleaved;
  l.recompute_method = RecomputeMethod::block;
  l.recompute_num_layers = 2;
  auto r = full_recompute_blocks(net, l);
  ASSERT_EQ(r.size(), 96u);
  int again = 0;
  for (int b = 0; b < 96; ++b) {
    EXPECT_EQ(r[static_cast<std::size_t>(b)].again, b % 6 < 2) << b;
    EXPECT_EQ(r[static_cast<std::size_t>(b)].keeps_input, b % 6 < 2) << b;
    again += r[static_cast<std::size_t>(b)].again ? 1 : 0;
  }
  EXPECT_EQ(again, 32);
  l.recompute_method = RecomputeMethod::uniform;
  l.recompute_num_layers = 4;
  r = full_recompute_blocks(net, l);
  for (int b = 0; b < 96; ++b) {
    EXPECT_TRUE(r[static_cast<std::size_t>(b)].again) << b;
    EXPECT_EQ(r[static_cast<std::size_t>(b)].keeps_input, b % 6 == 0 || b % 6 == 4) << b;
  }
}

// Eq. P31's memory against Korthikanti's per-layer counts: GPT-3 175B as FirstStageHoldsPMicroBatchesOfItsBlocks (TP 8
// + SP, PP 8, 12 blocks on stage 0, 8 micro-batches in flight): a kept block 201,326,592 B, a recomputed one its input
// 2·sbh/8 = 6,291,456 B, the embeddings' outputs 12,582,912 B a micro-batch.
//   block N = 4: 4 inputs + 8 kept blocks + embeddings = 1,648,361,472 B, × 8 = 13,186,891,776 B, and one block
//     rebuilt at a time, 201,326,592 B;
//   uniform N = 4: 3 inputs + embeddings = 31,457,280 B, × 8 = 251,658,240 B, and a checkpoint of 4 blocks rebuilt,
//     805,306,368 B.
TEST(ParallelActivations, PartialFullRecomputeKeepsTheOtherBlocks) {
  const Network net = arch("gpt3-175b");
  ParallelLayout l = gpt3_tp8_sp_pp8();
  ComputeOptions opt;
  opt.precision = Precision::bf16;
  const double kept = 201'326'592.0, input = 6'291'456.0, embeddings = 12'582'912.0;
  const auto activations = [&](const ParallelLayout& x) {
    return in_bytes(rank_memory(net, x, 0, opt, Sharding{}, 1, ActivationRecompute::full).activations);
  };
  EXPECT_DOUBLE_EQ(activations(l), 8 * (12 * input + embeddings) + kept);
  l.recompute_method = RecomputeMethod::block;
  l.recompute_num_layers = 4;
  EXPECT_DOUBLE_EQ(activations(l), 8 * (4 * input + 8 * kept + embeddings) + kept);
  l.recompute_num_layers = 12;  // every block: full recompute's
  EXPECT_DOUBLE_EQ(activations(l), 8 * (12 * input + embeddings) + kept);
  l.recompute_method = RecomputeMethod::uniform;
  l.recompute_num_layers = 4;
  EXPECT_DOUBLE_EQ(activations(l), 8 * (3 * input + embeddings) + 4 * kept);
}

// ---- validation: each error names its field -------------------------------------------------------------------
std::string field_of(const ParallelLayout& l, int gpus, const TransformerShape& m) {
  try {
    validate(l, gpus, m);
  } catch (const InputError& e) {
    return e.key();
  }
  return "";
}

TEST(ParallelValidate, ErrorsNameTheField) {
  const TransformerShape m{32, 4096, 32, 8, 14336, 128256, 8192};  // Llama-3-8B: 8 key/value heads
  ParallelLayout l;
  l.tp = 8;
  l.pp = 4;
  EXPECT_EQ(field_of(l, 32, m), "");
  EXPECT_EQ(field_of(l, 48, m), "gpus");  // 32 does not divide 48
  l.tp = 3;
  EXPECT_EQ(field_of(l, 96, m), "tp");  // 3 does not divide 32 heads
  l.tp = 16;
  EXPECT_EQ(field_of(l, 64, m), "");  // a multiple of 8 key/value heads: replicated
  const TransformerShape odd{32, 4096, 32, 12, 14336, 128256, 8192};
  l.tp = 8;
  EXPECT_EQ(field_of(l, 32, odd), "tp");  // 8 neither divides nor is a multiple of 12
  l.pp = 64;
  EXPECT_EQ(field_of(l, 512, m), "pp");  // 64 stages for 32 blocks
  l.pp = 4;
  l.cp = 3;
  EXPECT_EQ(field_of(l, 96, m), "cp");  // 8192 tokens do not split into 6 chunks
  l.cp = 1;
  l.vp = 2;
  EXPECT_EQ(field_of(l, 32, m), "vp");  // vp without the interleaved schedule
  l.schedule = PipelineSchedule::interleaved;
  l.micro_batches = 8;
  EXPECT_EQ(field_of(l, 32, m), "");
  l.vp = 3;
  EXPECT_EQ(field_of(l, 32, m), "");  // 4 × 3 chunks of 32 blocks: uneven, 2 or 3 blocks each
  l.vp = 2;                           // eq. P31: 4 × 2 chunks of 4 blocks
  l.recompute_num_layers = 4;
  EXPECT_EQ(field_of(l, 32, m), "");
  l.recompute_num_layers = 5;
  EXPECT_EQ(field_of(l, 32, m), "recompute_num_layers");
  l.recompute_num_layers = 0;
  EXPECT_EQ(field_of(l, 32, m), "recompute_num_layers");
  l.recompute_num_layers = 1;
  l.vp = 9;
  EXPECT_EQ(field_of(l, 32, m), "vp");  // 4 × 9 = 36 chunks for 32 blocks
  l.vp = 2;
  l.micro_batches = 6;
  EXPECT_EQ(field_of(l, 32, m), "micro_batches");
  l.micro_batch = 0;
  EXPECT_EQ(field_of(l, 32, m), "micro_batch");
  try {
    validate(ParallelLayout{.tp = 8, .pp = 4}, 48, m);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("tp 8 × pp 4 × cp 1 = 32 does not divide 48 GPUs"), std::string::npos) << e.what();
  }
}

TEST(ParallelValidate, RankOrderAndScheduleNames) {
  EXPECT_EQ(parse_rank_order("tp-cp-ep-dp-pp"), kMegatronRankOrder);
  EXPECT_EQ(to_string(parse_rank_order("pp,dp,cp,tp")), "pp-dp-cp-tp");
  EXPECT_THROW(parse_rank_order("tp-cp-dp"), InputError);
  EXPECT_THROW(parse_rank_order("tp-tp-dp-pp"), InputError);
  EXPECT_EQ(pipeline_schedule_from_string("1f1b"), PipelineSchedule::one_f_one_b);
  try {
    pipeline_schedule_from_string("zb", "schedule");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "schedule");
  }
}

}  // namespace
}  // namespace dlscale

namespace dlscale {
namespace {

// Eq. P14 by hand: a TP collective overlapped with its block's GEMMs costs what they cannot cover, one chunk of t,
// and the GEMMs' slowdown while 16 of the GPU's SMs run the collective (16/(132−16) of the hidden time on an H100).
TEST(ParallelOverlap, TpCommunicationBesideTheGemmsByHand) {
  const auto ms = [](double v) { return seconds(v * 1e-3); };
  const auto in_ms = [](Seconds t) { return in_seconds(t) * 1e3; };
  // 1 ms beside 4 ms of GEMMs at t 4: all covered; 1/4 ms the first chunk; 1 ms × 16/116 the slowdown
  EXPECT_NEAR(in_ms(tp_overlap_exposed(ms(1), ms(4), 4, 132)), 0.25 + 16.0 / 116.0, 1e-12);
  // 5 ms beside 4 ms at t 8: 1 ms uncovered, 5/8 ms the chunk, 4 ms × 16/116
  EXPECT_NEAR(in_ms(tp_overlap_exposed(ms(5), ms(4), 8, 132)), 1.0 + 0.625 + 4.0 * 16.0 / 116.0, 1e-12);
  // an unknown SM count charges no slowdown; no communication costs nothing
  EXPECT_NEAR(in_ms(tp_overlap_exposed(ms(1), ms(4), 4, 0)), 0.25, 1e-12);
  EXPECT_EQ(tp_overlap_exposed(Seconds{}, ms(4), 4, 132), Seconds{});
}

// Overlapped, Llama-3-70B's TP exposure on 64 H100s (TP 8 × PP 2, SP) falls to at most what the GEMMs cannot
// cover plus a chunk and the slowdown: between 1/8 of the plain exposure and the plain exposure itself.
TEST(ParallelOverlap, OverlappedTpIsExposedLessButNotFree) {
  const Network net = build_decoder(
      DecoderShape{.layers = 80, .hidden = 8192, .heads = 64, .kv_heads = 8, .ffn = 28672, .vocab = 128256, .seq = 8192},
      "llama3-70b");
  ClusterOverrides ov;
  ov.nodes = 8;
  const Cluster cluster = load_cluster(resolve(DataKind::cluster, "dgx-h100-ndr", "--cluster"), ov);
  ComputeOptions opt;
  opt.precision = Precision::bf16;
  opt.optimizer = Optimizer::adamw;
  opt.attention = AttentionKernel::flash;
  ParallelLayout l;
  l.tp = 8;
  l.sp = true;
  l.pp = 2;
  l.micro_batches = 32;
  const LayerTimes t = estimate_layer_times(tp_rank_network(net, l), cluster.gpu, 1, opt);
  const auto coll = make_collective_model(cluster);
  Sharding sh;
  const ParallelStep plain = parallel_step(net, t, cluster, *coll, l, 64, opt, sh, LayerTimesOf::tp_rank);
  l.tp_comm_overlap = true;
  const ParallelStep over = parallel_step(net, t, cluster, *coll, l, 64, opt, sh, LayerTimesOf::tp_rank);
  EXPECT_LT(over.tp_exposed, plain.tp_exposed);
  EXPECT_GT(over.tp_exposed, plain.tp_exposed / 8.0);
  EXPECT_EQ(over.forward, plain.forward);
  EXPECT_LT(over.step, plain.step);
}

// ---- eq. P29: the CP exchange's other forms, all_gather and a2a (Megatron-Core's cp_comm_type) ------------------
// One Llama-3-8B block (h 4096, 32 heads, 8 key/value heads, d_h 128) at s 32,768, b 1, bf16, TP 1 × CP 4: a rank holds
// T = 8,192 tokens. C_KV = 2·8192·8·128·2 = 33,554,432 B (P3). Its Q and output 8192·32·128·2 = 67,108,864 B each,
// K and V 8192·8·128·2 = 16,777,216 B each.
TransformerShape llama3_8b_at_32k() {
  TransformerShape m = transformer_shape(arch("llama3-8b"));
  m.seq = 32768;
  return m;
}

TEST(ParallelCpComm, BytesOfALlama3_8bBlockAtSeq32kOnCp4ByHand) {
  const TransformerShape m = llama3_8b_at_32k();
  ASSERT_EQ(m.heads, 32);
  ASSERT_EQ(m.kv_heads, 8);
  ASSERT_EQ(m.head_dim(), 128);
  ParallelLayout l;
  l.cp = 4;
  const CpLocalTensors t = cp_local_tensors(l, m, kBf16);
  EXPECT_DOUBLE_EQ(in_bytes(t.q), 67'108'864.0);
  EXPECT_DOUBLE_EQ(in_bytes(t.k), 16'777'216.0);
  EXPECT_DOUBLE_EQ(in_bytes(t.v), 16'777'216.0);
  EXPECT_DOUBLE_EQ(in_bytes(t.o), 67'108'864.0);
  // p2p (P15b): 3 ring steps of C_KV forward, 3 of K/V and 3 of dK/dV backward
  CpTraffic p = cp_block_traffic(l, m, kBf16);
  EXPECT_DOUBLE_EQ(in_bytes(p.forward), 3 * 33'554'432.0);
  EXPECT_DOUBLE_EQ(in_bytes(p.backward), 6 * 33'554'432.0);
  EXPECT_EQ(cp_exchange_buffer_bytes(l, m, kBf16), Bytes{});
  // all_gather: the gather of 4·C_KV brings the other 3 ranks' C_KV; backward that again and the reduce-scatter of
  // dK/dV sends 3 of the 4 parts: the same bytes as the ring. It holds the other ranks' K/V and dK/dV: 2·3·C_KV.
  l.cp_comm = CpComm::all_gather;
  p = cp_block_traffic(l, m, kBf16);
  EXPECT_DOUBLE_EQ(in_bytes(p.forward), 100'663'296.0);
  EXPECT_DOUBLE_EQ(in_bytes(p.backward), 201'326'592.0);
  EXPECT_DOUBLE_EQ(in_bytes(cp_exchange_buffer_bytes(l, m, kBf16)), 201'326'592.0);
  // a2a: 3/4 of Q, K, V and the output leave the rank forward, of their gradients backward: 3/4·167,772,160 B, more
  // than the ring's forward under GQA (Q and the output have 4 times K's heads), less than its backward. It holds a
  // second Q, K and V: 100,663,296 B.
  l.cp_comm = CpComm::a2a;
  p = cp_block_traffic(l, m, kBf16);
  EXPECT_DOUBLE_EQ(in_bytes(p.forward), 125'829'120.0);
  EXPECT_DOUBLE_EQ(in_bytes(p.backward), 125'829'120.0);
  EXPECT_DOUBLE_EQ(in_bytes(cp_exchange_buffer_bytes(l, m, kBf16)), 100'663'296.0);
  l.cp = 1;
  EXPECT_EQ(cp_block_traffic(l, m, kBf16).forward, Bytes{});
  EXPECT_EQ(cp_exchange_buffer_bytes(l, m, kBf16), Bytes{});
}

// The same block on one DGX H100 (8 GPUs, 4 NVSwitches), TP 1 × CP 4 × DP 2: the CP groups {0, 1, 2, 3} and
// {4, 5, 6, 7}, each inside the node. Every GPU pair's path is NVLink through the switches: a send of S takes
// L + S/B (p2p_copy_time: L NCCL's NVLink Simple step latency, B the path's bandwidth, both read from the graph).
// p2p: a ring step L + C_KV/B. a2a: each all-to-all sends 3 equal parts to the 3 peers over the GPU's NVLink,
// L + (3/4)·x/B and a latency for each peer beyond the first: 3L + (3/4)·x/B, four of them 12·L + 125,829,120 B / B each
// way. all_gather on the alpha-beta ring of the node's link (α, β the cluster's intra_node): 3·α + (3/4)·4·C_KV/β
// forward, and the reduce-scatter of the same again backward.
TEST(ParallelCpComm, TimesOfALlama3_8bBlockOnOneDgxH100ByHand) {
  const Cluster c = cluster("dgx-h100");
  ASSERT_TRUE(c.topology);
  const TransformerShape m = llama3_8b_at_32k();
  ParallelLayout l;
  l.cp = 4;
  const LayoutPlacement at = place_layout(l, c, 8);
  const GroupPlacement& cpg = at[ParallelGroup::cp];
  EXPECT_EQ(cpg.first, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(cpg.inside_node);
  const GpuPath path = c.topology->path(0, 1);
  const double B = in_bytes_per_second(path.bandwidth);
  const double L = in_seconds(p2p_copy_time(*c.topology, 0, 1, Bytes{}));
  ASSERT_GT(B, 0.0);
  for (int a = 0; a < 4; ++a) {
    for (int b = 0; b < 4; ++b) {
      if (a != b) {
        ASSERT_EQ(c.topology->path(a, b).bandwidth, path.bandwidth);
      }
    }
  }
  const auto coll = make_alpha_beta_model(c);
  // p2p: the ring's steps (P15d); all_gather and a2a charge nothing of theirs there
  EXPECT_NEAR(in_seconds(cp_ring_step_time(c, cpg, bytes(33'554'432.0))), L + 33'554'432.0 / B, 1e-12);
  EXPECT_EQ(cp_collective_times(*coll, c, cpg, l, m, kBf16).forward, Seconds{});
  l.cp_comm = CpComm::a2a;
  CpCollectiveTimes t = cp_collective_times(*coll, c, cpg, l, m, kBf16);
  EXPECT_NEAR(in_seconds(t.forward), 12 * L + 125'829'120.0 / B, 1e-12);
  EXPECT_NEAR(in_seconds(t.backward), 12 * L + 125'829'120.0 / B, 1e-12);
  l.cp_comm = CpComm::all_gather;
  t = cp_collective_times(*coll, c, cpg, l, m, kBf16);
  const double alpha = in_seconds(c.intra_node.latency), beta = in_bytes_per_second(c.intra_node.bandwidth);
  EXPECT_NEAR(in_seconds(t.forward), 3 * alpha + 0.75 * 134'217'728.0 / beta, 1e-12);
  EXPECT_NEAR(in_seconds(t.backward), 2 * (3 * alpha + 0.75 * 134'217'728.0 / beta), 1e-12);
}

// Eq. P29b in a step: the 4-block decoder of ContextParallelRingByHand (h 256, 4 heads, s 128, fp32) on CP 2 of the
// hand node (100 GB/s, 1 µs), 1 µs cores. C_KV = 2·64·4·64·4 = 131,072 B. all_gather: the gather of 2·C_KV, 1 µs +
// (1/2)·262,144 B / 100 GB/s = 2.31072 µs forward, with the reduce-scatter 4.62144 µs backward, whole: 6.93216 µs a
// block. a2a: Q, K, V and the output 64·4·64·4 = 65,536 B each, half of each to the one peer, 1 µs + 32,768 B / 100 GB/s
// = 1.32768 µs, four each way: 10.62144 µs a block. Neither merges partial outputs (P15c): the forward and backward are
// the cores' c-fold work alone (P6).
TEST(ParallelCpComm, AllGatherAndA2aInAStepByHand) {
  const Network net = tiny_decoder();
  LayerTimes own = uniform_times(19);
  own.forward_attention.assign(19, Seconds{});
  own.backward_attention.assign(19, Seconds{});
  for (std::size_t i = 0; i < net.layers.size(); ++i)
    if (net.layers[i].kind == LayerKind::attention) {
      own.forward_attention[i] = microseconds(1.0);
      own.backward_attention[i] = microseconds(2.0);
    }
  const Cluster c = hand_cluster(1);
  ParallelLayout l;
  l.cp = 2;
  l.cp_comm = CpComm::all_gather;
  const ComputeOptions opt;  // fp32
  const auto coll = make_alpha_beta_model(c);
  ParallelStep st = parallel_step(net, own, c, *coll, l, 2, opt, Sharding{}, LayerTimesOf::tp_rank);
  EXPECT_NEAR(in_seconds(st.cp_exposed), 4 * (2.31072e-6 + 4.62144e-6), 1e-15);
  EXPECT_NEAR(in_seconds(st.forward), 19e-3 + 4 * 1e-6, 1e-14);
  EXPECT_NEAR(in_seconds(st.backward), 38e-3 + 4 * 2e-6, 1e-14);
  l.cp_comm = CpComm::a2a;
  st = parallel_step(net, own, c, *coll, l, 2, opt, Sharding{}, LayerTimesOf::tp_rank);
  EXPECT_NEAR(in_seconds(st.cp_exposed), 4 * 8 * 1.32768e-6, 1e-15);
  EXPECT_NEAR(in_seconds(st.forward), 19e-3 + 4 * 1e-6, 1e-14);
  // selective recompute runs the core again, its four forward all-to-alls with it
  ComputeOptions sel = opt;
  sel.recompute = Recompute::selective;
  st = parallel_step(net, own, c, *coll, l, 2, sel, Sharding{}, LayerTimesOf::tp_rank);
  EXPECT_NEAR(in_seconds(st.cp_exposed), 4 * 12 * 1.32768e-6, 1e-15);
  // eq. P29c: all_gather's stage holds 2·(c−1)·C_KV = 262,144 B more than the ring's, once (not per micro-batch)
  l.micro_batches = 4;
  l.cp_comm = CpComm::p2p;
  const MemoryEstimate ring = rank_memory(net, l, 0, opt, Sharding{}, 2, ActivationRecompute::none);
  l.cp_comm = CpComm::all_gather;
  const MemoryEstimate gathered = rank_memory(net, l, 0, opt, Sharding{}, 2, ActivationRecompute::none);
  EXPECT_DOUBLE_EQ(in_bytes(gathered.activations - ring.activations), 262'144.0);
}

// Eq. P29: Ulysses splits a TP rank's heads and its key/value heads over the CP ranks; validate refuses a2a where cp
// does not divide them, naming the field cp_comm.
TEST(ParallelCpComm, A2aNeedsTheHeadsOfATpRankDivisibleByCp) {
  TransformerShape m = llama3_8b_at_32k();  // 32 heads, 8 key/value heads
  ParallelLayout l;
  l.cp = 8;
  l.cp_comm = CpComm::a2a;
  EXPECT_EQ(field_of(l, 8, m), "");  // 32/8 and 8/8
  l.cp = 16;
  EXPECT_EQ(field_of(l, 16, m), "cp_comm");  // 8 key/value heads over 16
  l.cp = 8;
  l.tp = 2;
  EXPECT_EQ(field_of(l, 16, m), "cp_comm");  // a TP rank's 4 key/value heads over 8
  l.cp_comm = CpComm::all_gather;
  EXPECT_EQ(field_of(l, 16, m), "");  // the gather and the ring split no heads
  l.cp_comm = CpComm::a2a;
  try {
    validate(l, 16, m);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "cp_comm");
    EXPECT_NE(std::string(e.what()).find("cp_comm a2a over cp 8 needs the heads of a TP rank divisible by cp: 16 attention and "
                                         "4 key/value heads (heads 32 and kv_heads 8 over tp 2)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(cp_comm_from_string("allgather"), CpComm::all_gather);  // torchtitan's spelling
  EXPECT_THROW(cp_comm_from_string("alltoall"), InputError);        // torchtitan's ring rotation, not Ulysses
}

// Eq. P35 by hand: Megatron-Core's distribute_saved_activations on a Llama-3-70B-shaped pair of blocks (h 8192, s 8192,
// bf16, b 1), TP 8 without SP in one node of the hand cluster (α 1 µs, β 100 GB/s). A checkpoint's input, b·s·h·2 B =
// S = 134,217,728 B whole on each rank, is S/8 = 16,777,216 B split; before its recompute the block gathers it again:
// one all-gather of S, 7·α + (7/8)·S/β = 1,181.4 µs, exposed. Every block a checkpoint: two gathers; recompute_num_layers
// 2 (uniform): one checkpoint for both blocks, one gather. Beside SP, refused (key distribute_saved_activations).
TEST(ParallelStep, DistributedCheckpointInputsSplitOverTpAndGatheredBeforeRecomputeByHand) {
  const Network net = build_decoder(
      DecoderShape{.layers = 2, .hidden = 8192, .heads = 64, .kv_heads = 8, .ffn = 28672, .vocab = 128256, .seq = 8192}, "l70x2");
  const TransformerShape m = transformer_shape(net);
  Cluster c = hand_cluster(1);
  c.gpu = cluster("dgx-h100-ndr").gpu;
  ComputeOptions opt;
  opt.precision = Precision::bf16;
  opt.attention = AttentionKernel::flash;
  opt.recompute = Recompute::full;
  ParallelLayout l;
  l.tp = 8;
  const double S = 134'217'728.0, ag = 7e-6 + 0.875 * S / 1e11;
  EXPECT_TRUE(checkpoint_input_collectives(l, m, kBf16).empty());
  EXPECT_DOUBLE_EQ(in_bytes(block_activation_bytes(net, 0, l, opt, ActivationRecompute::full)), S);
  ParallelLayout d = l;
  d.distribute_saved_activations = true;
  const auto calls = checkpoint_input_collectives(d, m, kBf16);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].op, CollectiveOp::allgather);
  EXPECT_DOUBLE_EQ(sum(calls, 8, true), (7.0 / 8.0) * S);
  EXPECT_DOUBLE_EQ(in_bytes(block_activation_bytes(net, 0, d, opt, ActivationRecompute::full)), S / 8);
  const auto coll = make_alpha_beta_model(c);
  const auto exposed = [&](const ParallelLayout& x) {
    const LayerTimes tx = estimate_layer_times(tp_rank_network(net, x), c.gpu, 1, opt);
    return in_seconds(parallel_step(net, tx, c, *coll, x, 8, opt, Sharding{}, LayerTimesOf::tp_rank).tp_exposed);
  };
  EXPECT_NEAR(exposed(d) - exposed(l), 2 * ag, 1e-12);
  l.recompute_num_layers = 2;
  d.recompute_num_layers = 2;
  EXPECT_NEAR(exposed(d) - exposed(l), ag, 1e-12);
  // the stage keeps one checkpoint input (b·s·h, an eighth of it distributed) per micro-batch, not two
  const double kept = in_bytes(rank_memory(net, l, 0, opt, Sharding{}, 1, ActivationRecompute::full).activations);
  const double split = in_bytes(rank_memory(net, d, 0, opt, Sharding{}, 1, ActivationRecompute::full).activations);
  EXPECT_NEAR(kept - split, S * 7.0 / 8.0, 1.0);
  d.sp = true;
  EXPECT_EQ(field_of(d, 8, m), "distribute_saved_activations");
}

// Eq. P36 by hand: the Llama-3-8B block at s 32,768 (b 1, bf16, TP 1) on CP 4 as 2×2 (cp_comm a2a+p2p,
// hierarchical_cp 2). The rank's own T = 8,192 tokens: Q = O = 67,108,864 B, K = V = 16,777,216 B. The all-to-alls
// inside each pair send half of each: 1/2·167,772,160 = 83,886,080 B each way; then the rank holds 16,384 tokens of
// 16 heads (4 key/value heads) and runs P15's ring between the 2 pairs: C_KV = 2·16,384·4·128·2 = 33,554,432 B (as
// p2p's 2·8,192·8·128·2), one step forward, K/V and dK/dV backward. Forward 83,886,080 + 33,554,432 = 117,440,512 B,
// backward 83,886,080 + 67,108,864 = 150,994,944 B (the ring's 100,663,296 and 201,326,592; Ulysses' 125,829,120 each
// way). It holds a second Q, K and V (100,663,296 B), as a2a does.
TEST(ParallelCpComm, HierarchicalA2aP2pBytesOfALlama3_8bBlockAtSeq32kOnCp4As2x2ByHand) {
  const TransformerShape m = llama3_8b_at_32k();
  ParallelLayout l;
  l.cp = 4;
  l.cp_comm = CpComm::a2a_p2p;
  l.hierarchical_cp = 2;
  EXPECT_EQ(cp_ring_ranks(l), 2);
  EXPECT_DOUBLE_EQ(in_bytes(cp_kv_chunk_bytes(l, m, kBf16)), 33'554'432.0);
  const CpTraffic p = cp_block_traffic(l, m, kBf16);
  EXPECT_DOUBLE_EQ(in_bytes(p.forward), 117'440'512.0);
  EXPECT_DOUBLE_EQ(in_bytes(p.backward), 150'994'944.0);
  EXPECT_DOUBLE_EQ(in_bytes(cp_exchange_buffer_bytes(l, m, kBf16)), 100'663'296.0);
  // the ring's merges are P15c's on a ring of 2 ranks each holding 16,384 tokens of 16 heads (4 key/value heads)
  ParallelLayout ring;
  ring.cp = 2;
  TransformerShape half = m;
  half.heads = 16;
  half.kv_heads = 4;
  half.hidden = 2048;
  EXPECT_EQ(cp_merge_traffic(l, m, kBf16).forward, cp_merge_traffic(ring, half, kBf16).forward);
  EXPECT_EQ(cp_merge_traffic(l, m, kBf16).backward, cp_merge_traffic(ring, half, kBf16).backward);
  // the names, and the checks (key hierarchical_cp): a divides cp, a TP rank's key/value heads divisible by a, given
  // only with a2a+p2p
  EXPECT_EQ(cp_comm_from_string("a2a+p2p"), CpComm::a2a_p2p);
  EXPECT_EQ(field_of(l, 4, m), "");
  l.hierarchical_cp = 3;
  EXPECT_EQ(field_of(l, 4, m), "hierarchical_cp");
  l.hierarchical_cp = 0;
  EXPECT_EQ(field_of(l, 4, m), "hierarchical_cp");
  l.cp = 8;
  l.tp = 2;
  l.hierarchical_cp = 8;  // 4 key/value heads a TP rank
  EXPECT_EQ(field_of(l, 16, m), "hierarchical_cp");
  l.hierarchical_cp = 4;
  EXPECT_EQ(field_of(l, 16, m), "");
  ParallelLayout ring_only;
  ring_only.cp = 4;
  ring_only.hierarchical_cp = 2;
  EXPECT_EQ(field_of(ring_only, 4, m), "hierarchical_cp");
}

// Eq. P36's groups and times on one DGX H100 (TP 1 × CP 4 × DP 2, tp-cp-ep-dp-pp): the CP group {0, 1, 2, 3} splits
// into the all-to-all pairs {0, 1} and {2, 3} and the rings {0, 2} and {1, 3}, all inside the node, every pair NVLink
// through the switches (B, L as TimesOfALlama3_8bBlockOnOneDgxH100ByHand). The all-to-alls: one peer each, L + half
// the tensor / B, four each way: 4·L + 83,886,080 B / B; a ring step L + C_KV/B.
TEST(ParallelCpComm, HierarchicalA2aP2pGroupsAndTimesOnOneDgxH100ByHand) {
  const Cluster c = cluster("dgx-h100");
  ASSERT_TRUE(c.topology);
  const TransformerShape m = llama3_8b_at_32k();
  ParallelLayout l;
  l.cp = 4;
  l.cp_comm = CpComm::a2a_p2p;
  l.hierarchical_cp = 2;
  const LayoutPlacement at = place_layout(l, c, 8);
  EXPECT_EQ(at.cp_inner.first, (std::vector<int>{0, 1}));
  EXPECT_EQ(at.cp_inner.groups, 4);
  EXPECT_EQ(at.cp_outer.first, (std::vector<int>{0, 2}));
  EXPECT_EQ(at.cp_outer.groups, 4);
  EXPECT_TRUE(at.cp_inner.inside_node);
  const double B = in_bytes_per_second(c.topology->path(0, 1).bandwidth);
  const double L = in_seconds(p2p_copy_time(*c.topology, 0, 1, Bytes{}));
  ASSERT_EQ(c.topology->path(0, 2).bandwidth, c.topology->path(0, 1).bandwidth);
  const auto coll = make_alpha_beta_model(c);
  const CpCollectiveTimes t = cp_collective_times(*coll, c, at.cp_inner, l, m, kBf16);
  EXPECT_NEAR(in_seconds(t.forward), 4 * L + 83'886'080.0 / B, 1e-12);
  EXPECT_NEAR(in_seconds(t.backward), 4 * L + 83'886'080.0 / B, 1e-12);
  EXPECT_NEAR(in_seconds(cp_ring_step_time(c, at.cp_outer, bytes(33'554'432.0))), L + 33'554'432.0 / B, 1e-12);
  // without a2a+p2p: groups of one
  l.cp_comm = CpComm::p2p;
  l.hierarchical_cp = 0;
  EXPECT_EQ(place_layout(l, c, 8).cp_inner.size, 1);
}

}  // namespace
}  // namespace dlscale
