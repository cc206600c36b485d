// Multi-head latent attention (DeepSeek-V2/V3; docs/models.md, "Decoder-only transformers"; docs/model.md, P5a,
// P9a): its parameters, work and kept tensors by hand, the shipped models against their published totals, the
// kernel model's GEMMs and core with distinct query/key and value head dimensions, and a TP rank's share.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "dlscale/compute.hpp"
#include "dlscale/error.hpp"
#include "dlscale/network.hpp"
#include "dlscale/parallel.hpp"
#include "dlscale/zoo.hpp"

namespace dlscale {
namespace {

/// DeepSeek-V3's config.json (recalled, not read here): 61 layers, hidden 7168, 128 heads, q_lora_rank 1536,
/// kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128, the first 3 blocks dense (18432),
/// 256 routed experts of 2048, 8 a token, 1 shared, vocabulary 129280.
DecoderShape deepseek_v3() {
  return DecoderShape{.layers = 61,
                      .hidden = 7168,
                      .heads = 128,
                      .ffn = 18432,
                      .vocab = 129280,
                      .seq = 4096,
                      .experts = 256,
                      .top_k = 8,
                      .expert_ffn = 2048,
                      .shared_experts = 1,
                      .first_dense = 3,
                      .attention = "mla",
                      .q_lora = 1536,
                      .kv_lora = 512,
                      .qk_nope = 128,
                      .qk_rope = 64,
                      .v_head = 128};
}

/// DeepSeek-V2-Lite's (recalled): 27 layers, hidden 2048, 16 heads, no q_lora, kv_lora 512, the same head
/// dimensions, the first block dense (10944), 64 experts of 1408, 6 a token, 2 shared, vocabulary 102400.
DecoderShape deepseek_v2_lite() {
  return DecoderShape{.layers = 27,
                      .hidden = 2048,
                      .heads = 16,
                      .ffn = 10944,
                      .vocab = 102400,
                      .seq = 4096,
                      .experts = 64,
                      .top_k = 6,
                      .expert_ffn = 1408,
                      .shared_experts = 2,
                      .first_dense = 1,
                      .attention = "mla",
                      .kv_lora = 512,
                      .qk_nope = 128,
                      .qk_rope = 64,
                      .v_head = 128};
}

/// One MLA's parameters by hand: q_a D·r_q, its norm r_q, q_b r_q·a·(n + r) (or q_proj D·a·(n + r)); kv_a
/// D·(r_kv + r), its norm r_kv, kv_b r_kv·a·(n + v); o_proj a·v·D.
std::int64_t mla_by_hand(std::int64_t D, std::int64_t a, std::int64_t rq, std::int64_t rkv, std::int64_t n, std::int64_t r,
                         std::int64_t v) {
  const std::int64_t q = rq > 0 ? D * rq + rq + rq * a * (n + r) : D * a * (n + r);
  return q + D * (rkv + r) + rkv + rkv * a * (n + v) + a * v * D;
}

const Layer& layer(const Network& net, const std::string& name) {
  for (const Layer& l : net.layers)
    if (l.name == name) return l;
  throw std::runtime_error("no layer " + name);
}

// DeepSeek-V3: 671 B published without its multi-token-prediction module (recalled). By hand: embedding and output
// 2·129280·7168, per block an MLA and two norms, 3 dense SwiGLU MLPs 3·7168·18432, 58 MoE MLPs of a shared expert
// 3·7168·2048, 256 routed ones and a router 7168·256, the final norm 7168.
TEST(Mla, DeepSeekV3ParametersByHandAndPublished) {
  const Network net = build_decoder(deepseek_v3(), "deepseek-v3");
  const std::int64_t attn = mla_by_hand(7168, 128, 1536, 512, 128, 64, 128);
  EXPECT_EQ(attn, 187'107'328);
  EXPECT_EQ(layer(net, "model.layers.0.self_attn").params, attn);
  const std::int64_t expert = 3LL * 7168 * 2048;
  const std::int64_t total =
      2LL * 129280 * 7168 + 61 * (attn + 2 * 7168) + 3 * (3LL * 7168 * 18432) + 58 * (expert + 256 * expert + 7168 * 256) + 7168;
  EXPECT_EQ(net.total_params(), total);
  // the published 671 B: ours is 671,026,404,352, 0.004 % above
  EXPECT_NEAR(static_cast<double>(net.total_params()) / 671e9, 1.0, 1e-4);
  // the generated file's layers carry the head dimensions: query/key 128 + 64, value 128
  const Layer& a = layer(net, "model.layers.60.self_attn");
  EXPECT_EQ(a.head_dim, 192);
  EXPECT_EQ(a.v_head_dim, 128);
  EXPECT_EQ(a.q_lora, 1536);
  EXPECT_EQ(a.kv_lora, 512);
  EXPECT_EQ(a.qk_rope, 64);
  EXPECT_EQ(a.kv_heads, 0);
}

// DeepSeek-V2-Lite: 15.7 B published (recalled); a direct query projection (no q_lora).
TEST(Mla, DeepSeekV2LiteParametersByHandAndPublished) {
  const Network net = build_decoder(deepseek_v2_lite(), "deepseek-v2-lite");
  const std::int64_t attn = mla_by_hand(2048, 16, 0, 512, 128, 64, 128);
  EXPECT_EQ(attn, 2048LL * 16 * 192 + 2048 * 576 + 512 + 512LL * 16 * 256 + 16LL * 128 * 2048);
  const std::int64_t expert = 3LL * 2048 * 1408;
  const std::int64_t total =
      2LL * 102400 * 2048 + 27 * (attn + 2 * 2048) + 3LL * 2048 * 10944 + 26 * (2 * expert + 64 * expert + 2048 * 64) + 2048;
  EXPECT_EQ(net.total_params(), total);
  EXPECT_EQ(net.total_params(), 15'706'484'224);  // 0.04 % above the published 15.7 B
}

// The layer's MACs a sequence: every weight once a token (a norm's scale as one per element), and the scores S·S·a·d_qk
// and the weighted sum S·S·a·d_v; kept: latents 2·r_q + 2·r_kv + d_rope, q and k a·d_qk, v and the context a·d_v a
// token, the probabilities a·S·S; the residual branch drops the output.
TEST(Mla, SmallLayerMacsAndKeptByHand) {
  DecoderShape d{.layers = 1, .hidden = 64, .heads = 4, .ffn = 128, .vocab = 100, .seq = 16};
  d.attention = "mla";
  d.q_lora = 24;
  d.kv_lora = 16;
  d.qk_nope = 8;
  d.qk_rope = 4;
  d.v_head = 6;
  const Network net = build_decoder(d, "small-mla");
  const Layer& a = layer(net, "model.layers.0.self_attn");
  const std::int64_t params = 64 * 24 + 24 + 24 * 4 * 12 + 64 * 20 + 16 + 16 * 4 * 14 + 4 * 6 * 64;
  EXPECT_EQ(a.params, params);
  EXPECT_EQ(a.macs_per_sample, 16.0 * params + 16.0 * 16 * 4 * (12 + 6));
  EXPECT_EQ(a.forward_flops_per_sample, 2.0 * a.macs_per_sample);
  const double token = 2 * 24 + 2 * 16 + 4 + 2 * 4 * 12 + 2 * 4 * 6;  // the output (64) dropped
  EXPECT_EQ(a.activation_bytes_per_sample, 4.0 * (16 * token + 4 * 16 * 16));
  // the same layer from the command line's spec
  const DecoderShape p = parse_decoder_spec(
      "decoder:layers=1,hidden=64,heads=4,ffn=128,vocab=100,seq=16,attention=mla,q_lora=24,kv_lora=16,qk_nope=8,qk_rope=4,v_head="
      "6",
      "--model");
  EXPECT_EQ(layer(build_decoder(p, "spec"), "model.layers.0.self_attn").params, params);
}

/// The forward FLOPs of one layer's kernels on a batch of 1.
double forward_kernel_flops(const Layer& l, const ComputeOptions& opt) {
  GpuSpec gpu;
  gpu.name = gpu.architecture = "toy";
  gpu.sm_version = 90;
  gpu.sm_count = 132;
  gpu.peak_fp32 = teraflops_per_second(60);
  gpu.peak_bf16 = gpu.peak_fp16 = teraflops_per_second(900);
  gpu.memory_bandwidth = gigabytes_per_second(3000);
  gpu.boost_clock = megahertz(1980);
  double f = 0.0;
  for (const KernelTiming& k : layer_kernels(l, false, false, gpu, 1, opt))
    if (!k.backward) f += in_flops(k.flops);
  return f;
}

// One DeepSeek-V3 MLA on a TP rank at t = 8 (Megatron-Core: q_b, kv_b column-parallel by heads, o_proj row-parallel,
// the down projections and their norms whole, recalled). Parameters: q_a 7168·1536 + 1536, kv_a 7168·576 + 512 whole;
// (1536·128·192 + 512·128·256 + 128·128·7168)/8 split. Forward FLOPs of its kernels, s = 4096, 16 heads: 2·s·(7168·1536
// + 1536·16·192 + 7168·576 + 512·16·256 + 16·128·7168) for the GEMMs, and the causal core's half of
// 2·s·s·16·(192 + 128).
TEST(Mla, TpRankParametersAndForwardFlopsByHand) {
  const Network net = build_decoder(deepseek_v3(), "deepseek-v3");
  ParallelLayout l;
  l.tp = 8;
  const Network rank = tp_rank_network(net, l);
  const Layer& a = layer(rank, "model.layers.0.self_attn");
  const std::int64_t whole = 7168LL * 1536 + 1536 + 7168LL * 576 + 512;
  const std::int64_t split = (1536LL * 128 * 192 + 512LL * 128 * 256 + 128LL * 128 * 7168) / 8;
  EXPECT_EQ(a.params, whole + split);
  EXPECT_EQ(a.params, 36'636'672);
  EXPECT_EQ(a.heads, 16);
  EXPECT_EQ(a.head_dim, 192);
  EXPECT_EQ(a.v_head_dim, 128);
  EXPECT_EQ(rank_params(net, l, 0), [&] {
    std::int64_t p = 0;
    for (const Layer& x : rank.layers) p += x.params;
    return p;
  }());
  const double s = 4096;
  const double gemms = 2.0 * s * (7168.0 * 1536 + 1536.0 * 16 * 192 + 7168.0 * 576 + 512.0 * 16 * 256 + 16.0 * 128 * 7168);
  const double core = 0.5 * 2.0 * s * s * 16 * (192 + 128);
  ComputeOptions opt;
  opt.precision = Precision::bf16;
  opt.attention = AttentionKernel::flash;
  EXPECT_DOUBLE_EQ(forward_kernel_flops(a, opt), gemms + core);
  // the whole layer's: its 128 heads and every projection
  const Layer& w = layer(net, "model.layers.0.self_attn");
  EXPECT_DOUBLE_EQ(forward_kernel_flops(w, opt),
                   2.0 * s * (7168.0 * 1536 + 1536.0 * 128 * 192 + 7168.0 * 576 + 512.0 * 128 * 256 + 128.0 * 128 * 7168) +
                       0.5 * 2.0 * s * s * 128 * (192 + 128));
}

// Eq. K9 with d_qk ≠ d_v: the fused kernel reads Q (a·d_qk), K (a·d_qk) and V (a·d_v) and writes O (a·d_v) and the fp32
// log-sum-exp (a a token) forward; backward reads Q, K, V, O, dO and the log-sum-exp and writes dQ (fp32), dK and dV.
// The small layer above (a 4, d_qk 12, d_v 6, S 16) in bf16: Q 768, K 768, V 384, O 384 elements, 256 B of log-sum-exp.
TEST(Mla, FusedAttentionTrafficWithDistinctHeadDimensionsByHand) {
  DecoderShape d{.layers = 1, .hidden = 64, .heads = 4, .ffn = 128, .vocab = 100, .seq = 16};
  d.attention = "mla";
  d.q_lora = 24;
  d.kv_lora = 16;
  d.qk_nope = 8;
  d.qk_rope = 4;
  d.v_head = 6;
  const Network net = build_decoder(d, "small-mla");
  const Layer& a = layer(net, "model.layers.0.self_attn");
  GpuSpec gpu;
  gpu.name = gpu.architecture = "toy";
  gpu.sm_version = 90;
  gpu.sm_count = 132;
  gpu.peak_fp32 = teraflops_per_second(60);
  gpu.peak_bf16 = gpu.peak_fp16 = teraflops_per_second(900);
  gpu.memory_bandwidth = gigabytes_per_second(3000);
  gpu.boost_clock = megahertz(1980);
  ComputeOptions opt;
  opt.precision = Precision::bf16;
  opt.attention = AttentionKernel::flash;
  int found = 0;
  for (const KernelTiming& k : layer_kernels(a, false, false, gpu, 1, opt)) {
    if (k.name == "model.layers.0.self_attn.attention fwd (flash)") {
      EXPECT_DOUBLE_EQ(in_bytes(k.traffic), (768 + 768 + 384 + 384) * 2.0 + 256);
      EXPECT_DOUBLE_EQ(in_flops(k.flops), 0.5 * 2.0 * 16 * 16 * 4 * (12 + 6));  // causal: half
      ++found;
    }
    if (k.name == "model.layers.0.self_attn.attention bwd (flash)") {
      EXPECT_DOUBLE_EQ(in_bytes(k.traffic), (768 + 768 + 384 + 384 + 384) * 2.0 + 256 + 768 * 4.0 + (768 + 384) * 2.0);
      ++found;
    }
  }
  EXPECT_EQ(found, 2);
}

// Eq. P9a: at t = 8 a rank keeps the latents (2·1536 + 2·512 + 64 a token) whole and 1/8 of the rest of the layer's
// kept tensors (q, k 128·192, v, context 128·128 a token; the probabilities dropped by the fused kernel); the
// residual addition after it keeps its output (7168 a token) whole without sequence parallelism.
TEST(Mla, TpRankActivationsKeepTheLatentsWhole) {
  const Network net = build_decoder(deepseek_v3(), "deepseek-v3");
  const Layer& a = layer(net, "model.layers.0.self_attn");
  ParallelLayout l;
  l.tp = 8;
  ComputeOptions opt;
  opt.precision = Precision::bf16;
  opt.attention = AttentionKernel::flash;
  const double s = 4096, latent = 2 * 1536 + 2 * 512 + 64, heads = 2 * 128 * 192 + 2 * 128 * 128;
  EXPECT_DOUBLE_EQ(in_bytes(layer_activation_bytes(a, l, opt, true)), 2.0 * s * (latent + heads / 8 + 7168));
}

// The decoder's checks of the new keys: one line naming the key.
TEST(Mla, SpecChecks) {
  auto error = [](const std::string& extra) {
    try {
      parse_decoder_spec("decoder:layers=2,hidden=64,heads=4,ffn=128,vocab=100,seq=16" + extra, "--model");
    } catch (const InputError& e) {
      return e.message();
    }
    return std::string();
  };
  EXPECT_EQ(error(",kv_lora=16"), "decoder key 'kv_lora' needs 'attention=mla' (multi-head latent attention)");
  EXPECT_EQ(error(",attention=mla,kv_lora=16,qk_nope=8,qk_rope=8"),
            "decoder key 'attention': multi-head latent attention needs 'v_head'");
  EXPECT_EQ(error(",attention=mla,kv_heads=2,kv_lora=16,qk_nope=8,qk_rope=8,v_head=8"),
            "decoder key 'kv_heads': multi-head latent attention has no key/value heads of its own");
  EXPECT_EQ(error(",attention=mla,q_lora=0,kv_lora=16,qk_nope=8,qk_rope=8,v_head=8"),
            "decoder key 'q_lora': '0' is not a whole number ≥ 1");
  EXPECT_EQ(error(",attention=gqa"), "");
}

}  // namespace
}  // namespace dlscale
