// Per-layer compute time from the kernel model (include/dlscale/compute.hpp, docs/compute-model.md):
// each layer and each parameter-free operator is a list of kernels (GEMMs, convolutions, memory-bound
// passes), forward and backward, each timed by lib/compute/kernels.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "compute/executed_params.hpp"
#include "dlscale/compute.hpp"
#include "dlscale/equations.hpp"
#include "dlscale/sharding.hpp"

namespace dlscale {
namespace {
/// Eq. K14: an element-wise chain as eager PyTorch runs it, an operator a kernel, in bytes moved per element
/// (fixed + per_eb × eb, where eb is a working element's bytes: 2 in bf16/fp16, 4 in fp32) and kernels, forward
/// and backward. Compiled (torch.compile, XLA) the chain is one kernel that reads its input and writes its
/// output once (2·eb). Counted from the models' source as written (docs/compute-model.md, K14).
struct EagerChain {
  double fixed_forward, per_eb_forward;
  int forward_kernels;
  double fixed_backward, per_eb_backward;
  int backward_kernels;
  [[nodiscard]] double forward_bytes(double eb) const noexcept { return fixed_forward + per_eb_forward * eb; }
  [[nodiscard]] double backward_bytes(double eb) const noexcept { return fixed_backward + per_eb_backward * eb; }
};
// RMSNorm as Llama writes it, x.float() · rsqrt(mean(x²) + ε), .type_as(x) · weight. Forward: the upcast
// (eb + 4), pow (4 + 4), mean (4), the product (4 + 4), the downcast (4 + eb), the weight (eb + eb): 28 + 4·eb B
// in 7 kernels (with the ε and rsqrt on the row statistics). Backward: the weight's product and its gradient's
// reduction (2·eb + 2·eb), the downcast's (eb + 4), the product's two gradients (8 + 8), the mean-square path
// (8), their sum (12), the upcast's (4 + eb): 44 + 6·eb B in 9 kernels.
constexpr EagerChain kEagerRmsNorm{28.0, 4.0, 7, 44.0, 6.0, 9};
// Rotary embedding of one q or k element (torchtitan's apply_rotary_emb: view_as_complex(x.float()), a complex
// product with the frequencies, view_as_real, type_as): the upcast (eb + 4), the product (4 + 4), the downcast
// (4 + eb): 16 + 2·eb B in 3 kernels a tensor, and the same backward.
constexpr EagerChain kEagerRotary{16.0, 2.0, 3, 16.0, 2.0, 3};
// Eq. K24, Hugging Face transformers' GPT-2 as its code runs in eager PyTorch (modeling_gpt2.py and activations.py of
// transformers 4.12; recalled, not read here). gelu_new, 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), an operator a
// kernel over the MLP's activation. Forward: pow (2·eb), ·0.044715 (2·eb), x + (3·eb), ·√(2/π) (2·eb), tanh (2·eb),
// 1 + (2·eb), 0.5·x (2·eb), the product (3·eb): 18·eb in 8 kernels. Backward (autograd): the product's two gradients
// (3·eb each), 0.5·x's (2·eb), tanh_backward (3·eb), the two scalings' (2·eb each), pow's 3·x²·grad (pow 2·eb, ·3
// 2·eb, ·grad 3·eb), the sum of the gradients of x's three uses (two additions, 3·eb each): 28·eb in 11 kernels (an
// addition of a scalar passes the gradient through, no kernel).
constexpr EagerChain kTransformersGeluNew{0.0, 18.0, 8, 0.0, 28.0, 11};
// The scores' chain of GPT2Attention._attn, per element of the heads·S² scores: ÷ √d_h (2·eb), torch.where with the
// causal bias buffer (2·eb; the S×S boolean mask is re-read from cache), + the additive padding mask that run_clm's
// batches carry (2·eb), softmax (2·eb), dropout (2·eb and a 1-byte mask): 10·eb + 1 in 5 kernels. Backward: dropout's
// masked scale (2·eb + 1), softmax's (3·eb), torch.where's gradient, zeros_like and a where (eb + 3·eb), the
// division's (2·eb); the mask's addition passes the gradient through: 11·eb + 1 in 5 kernels.
constexpr EagerChain kTransformersScores{1.0, 10.0, 5, 1.0, 11.0, 5};
// A dropout on activations (GPT-2's embd_pdrop and resid_pdrop): read and write, and the 1-byte mask, each way.
constexpr EagerChain kDropout{1.0, 2.0, 1, 1.0, 2.0, 1};

/// Eq. K21: bytes per element that kernels of one class move.
struct ClassBytes {
  MemoryClass cls;
  double bytes;
};
constexpr MemoryClass kVec = MemoryClass::vectorized, kStrided = MemoryClass::strided, kUpcast = MemoryClass::upcast,
                      kReduce = MemoryClass::reduction;

/// Eq. K15, row-wise scaling: what its backward casts beyond tensor-wise scaling's, per linear map of r rows, i inputs
/// and o outputs (torchao's "rowwise" recipe; bench/pytorch/decoder_steps.py's Fp8RowMatmul runs it). Each fp8 operand
/// is scaled along its product's reduction dimension, so no fp8 copy made for one product serves another: the data gradient takes
/// the output gradient scaled along o (tensor-wise's one cast) and the weight re-cast from bf16 along o (i·o); the weight
/// gradient the output gradient again along the rows (r·o) and the saved bf16 input re-cast along the rows (r·i, by each of the
/// `readers` maps that read it). Eager, the transposed copies stay those tensor-wise scaling makes (compiled they fuse into the
/// casts). Without a data gradient only the weight gradient's casts remain: the input's.
struct Fp8Recast {
  double elements = 0.0;  // bf16 elements cast again, each read and cast as a forward cast is
  int casts = 0;          // casts (kernels or chains) a step runs for them
};
Fp8Recast fp8_recast_elements(double r, double i, double o, bool input_grad, int readers) {
  const double inputs = static_cast<double>(readers) * r * i;
  if (!input_grad) return {inputs, readers};
  return {inputs + r * o + i * o, 3 * readers};
}

Seconds sum(const std::vector<Seconds>& v) { return std::accumulate(v.begin(), v.end(), Seconds{}); }

double elements(const std::vector<std::int64_t>& shape) {
  double n = 1;
  for (auto d : shape) n *= static_cast<double>(d);
  return shape.empty() ? 0.0 : n;
}

/// Collects a layer's kernels (and, when asked, their names for `model show --kernels`).
/// The GEMM plans of one network's layers on one GPU, by shape: a decoder's blocks repeat a handful of
/// shapes, and planning one (tile search, eqs. K1-K3) costs more than the rest of its layer's timing.
class GemmMemo {
 public:
  template <class Plan>
  GemmPlan get(const GemmShape& g, Precision p, Plan plan) {
    for (const auto& [key, value] : seen_)
      if (key.first.m == g.m && key.first.n == g.n && key.first.k == g.k && key.first.count == g.count &&
          key.first.stored_elements == g.stored_elements && key.second == p)
        return value;
    seen_.emplace_back(std::pair{g, p}, plan());
    return seen_.back().second;
  }

 private:
  std::vector<std::pair<std::pair<GemmShape, Precision>, GemmPlan>> seen_;
};

class Kernels {
 public:
  /// `kp`: the parameters as the framework runs its kernels (executed_params).
  Kernels(const GpuSpec& gpu, const ComputeOptions& opt, const KernelParams& kp, bool named, std::vector<KernelTiming>* out,
          GemmMemo* memo = nullptr)
      : gpu_(gpu), opt_(opt), kp_(kp), named_(named), out_(out), memo_(memo) {}

  Seconds forward{}, backward{};
  double forward_kernels = 0, backward_kernels = 0;  // kernels issued, for the host's issue floor (eq. K20)
  // The parts of `forward` that the recompute modes tell apart (eq. R1-R3): GEMMs (linear maps and
  // convolutions) and the attention core (the fused kernel, or the unfused scores, softmax and weighted sum).
  Seconds forward_gemm{}, forward_attention{};
  Seconds forward_copies{};        // FSDP2's copy-out before the forward (eq. S10): not run again by a recompute
  Seconds trailing_product{};      // an MLP's down projection's forward product, whose output only what follows reads
  Seconds forward_unsaved{};       // that product and the residual additions after it (eq. R1b)
  Seconds backward_attention{};    // the attention core's backward
  Seconds input_wgrad{};           // the weight gradient of the layer's first linear map (eq. P28)
  bool input_linear_seen = false;  // set once the layer's first linear map is added
  bool in_attention_core = false;  // set while the unfused attention core's kernels are added
  bool fp8_layer = false;          // the layer's GEMMs multiply in fp8 when the step's precision is fp8 (eq. K15)

  /// Eq. K16: the share of the modelled tensor-core rate a sharded step's GEMMs keep (1 unsharded).
  [[nodiscard]] double sharded_rate() const noexcept { return opt_.sharded ? kp_.sharded_tensor : 1.0; }

  /// The precision a GEMM of the current layer runs in: fp8 only in the layers that fp8 training converts
  /// (the blocks' linear maps), bf16 for the rest of an fp8 step.
  [[nodiscard]] Precision gemm_precision() const noexcept {
    return opt_.precision == Precision::fp8 && !fp8_layer ? Precision::bf16 : opt_.precision;
  }

  /// Eq. K15: the casts of one fp8 linear map with dynamic tensor-wise scaling. Forward: the input's cast to
  /// fp8 and the weight's (in·out); backward: the output gradient's (rows·out), and the transposed fp8 copies
  /// the other two products take (input and output gradient for the weight gradient, the weight for the data
  /// gradient: read 1, write 1 B each). Compiled, a cast is one kernel with its amax fused into the producer
  /// (read eb, write 1 B). Eager, it is torchao's chain of operators, a kernel each: abs (read and write eb),
  /// max (read eb), the upcast to fp32 (eb + 4), the multiply by the scale and the saturating clamp (4 + 4
  /// each), the cast to fp8 (4 + 1): 5·eb + 25 B an element (bench/pytorch/decoder_steps.py runs that chain;
  /// measured on an H200 it made an eager fp8 step 18 % slower than bf16, tests/data/h200-pytorch).
  /// Row-wise scaling (Fp8Scaling::rowwise) adds the backward's re-casts (fp8_recast_elements); compiled, those
  /// and the output gradient's cast all run in the backward graph, where torch.compile writes each fp8 operand in
  /// the layout its product takes (the transpose fused into the cast), so no transposed copy is charged.
  /// MX block scaling (Fp8Scaling::mxfp8, eq. K15c) casts what row-wise scaling casts, each cast also writing its
  /// blocks' E8M0 scales (1 B per 32 elements, eq::mx_scale_bytes); its products run at the fp8 rate as the others'.
  void fp8_casts(const std::string& what, std::int64_t rows, std::int64_t in, std::int64_t out, bool input_grad,
                 int readers = 1) {
    if (opt_.precision != Precision::fp8 || !fp8_layer) return;
    const double eb = activation_bytes_per_element(opt_.precision);
    const double cast = (opt_.compiled ? eb + 1.0 : 5.0 * eb + 25.0) + scale_bytes();
    const int chain = opt_.compiled ? 1 : 6;  // kernels a cast takes
    const double r = static_cast<double>(rows), i = static_cast<double>(in), o = static_cast<double>(out);
    if (by_class()) {
      fp8_casts_by_class(what, r, i, o, input_grad, readers);
      return;
    }
    // compiled row-wise or MX, every backward cast writes the layout its product takes: no transposed copies of their own
    const bool copies = !(opt_.compiled && both_axes());
    pass(name(what, " fp8 cast fwd"), r * i + weight_cast() * i * o, cast, false, 0.0, (1 + weight_cast()) * chain);
    pass(name(what, " fp8 cast bwd"), r * o, cast, true, copies ? (r * i + r * o + (input_grad ? i * o : 0.0)) * 2.0 : 0.0,
         copies ? chain + 3 : chain);
    if (both_axes()) {
      const Fp8Recast re = fp8_recast_elements(r, i, o, input_grad, 1);
      pass(name(what, recast_name()), re.elements, cast, true, 0.0, re.casts * chain);
    }
  }
  /// Eq. S12: 1 where the forward casts the gathered weight (in·out elements), 0 under fp8 all-gather, whose all-gather
  /// brings the weight in fp8, cast on the shard before it (in·out/n elements, on FSDP's copy-in stream: not charged
  /// here, as eq. S11 charges not the shard's cast to the working dtype).
  [[nodiscard]] int weight_cast() const noexcept { return opt_.fp8_all_gather ? 0 : 1; }
  /// Eq. K15/K15c: whether the recipe casts every operand along both axes (row-wise and MX block scaling).
  [[nodiscard]] bool both_axes() const noexcept { return opt_.fp8_scaling != Fp8Scaling::tensorwise; }
  /// Eq. K15c: the scale bytes a cast writes per element, MX's 1/32 B (0 for the other recipes).
  [[nodiscard]] double scale_bytes() const noexcept {
    return opt_.fp8_scaling == Fp8Scaling::mxfp8 ? eq::mx_scale_bytes(1.0) : 0.0;
  }
  [[nodiscard]] std::string_view recast_name() const noexcept {
    return opt_.fp8_scaling == Fp8Scaling::mxfp8 ? " fp8 mx re-casts bwd" : " fp8 row-wise re-casts bwd";
  }

  /// Eq. K21, the casts above by class. Eager torchao's chain: abs, the cast to fp8 and the clamp vectorized
  /// (2·eb + 13 B), the amax a reduction (eb), the upcast and the multiply by the 0-d scale strided (eb + 4 + 8, and
  /// the chain's fifth eb); compiled, one vectorized kernel (eb + 1). The transposed fp8 copies are strided. The input
  /// is cast, and transposed, by each of the `readers` linear maps the model's fused product stands for (torchao's
  /// Float8Linear per nn.Linear: torchtitan's wq, wk, wv read one input, w1 and w3 another; its H200 profile shows
  /// 84 casts a step for 4 blocks, 3 a linear map of 7). Row-wise, the backward's re-casts run the same chain (the
  /// multiply by a per-row scale broadcasts, strided as the 0-d one), or compiled the same one kernel.
  /// MX block scaling (eq. K15c) as row-wise, each cast writing its scales (vectorized, 1/32 B an element); eager, its
  /// block maximum (torch.amax over blocks of 32 in torchao's eager to_mx, recalled) reads each element as the
  /// tensor's or row's amax does but reduces within a block, so its eb is counted vectorized, not as a reduction pass
  /// (an assumption: no block maximum is measured here).
  void fp8_casts_by_class(const std::string& what, double r, double i, double o, bool input_grad, int readers) {
    const double eb = activation_bytes_per_element(opt_.precision);
    const double inputs = static_cast<double>(readers) * r * i;
    const double transposed = inputs + r * o + (input_grad ? i * o : 0.0);
    const bool recast = both_axes(), mx = opt_.fp8_scaling == Fp8Scaling::mxfp8;
    const Fp8Recast re = recast ? fp8_recast_elements(r, i, o, input_grad, readers) : Fp8Recast{};
    const double one = eb + 1.0 + scale_bytes();  // a compiled cast's bytes an element
    if (opt_.compiled) {
      classed(name(what, " fp8 cast fwd"), inputs + weight_cast() * i * o, {{kVec, one}}, false, weight_cast() + readers);
      if (recast) {  // every operand cast in the backward graph, its transposed copy fused into its cast (K15)
        classed(name(what, " fp8 cast bwd"), r * o, {{kVec, one}}, true, 1);
        classed(name(what, recast_name()), re.elements, {{kVec, one}}, true, re.casts);
        return;
      }
      classed(name(what, " fp8 cast bwd"), 1.0, {{kVec, r * o * one}, {kStrided, transposed * 2.0}}, true, 4);
      return;
    }
    const std::initializer_list<ClassBytes> chain{
        {kVec, 2.0 * eb + 13.0 + (mx ? eb + scale_bytes() : 0.0)}, {kReduce, mx ? 0.0 : eb}, {kStrided, 2.0 * eb + 12.0}};
    classed(name(what, " fp8 cast fwd"), inputs + weight_cast() * i * o, chain, false, 6 * (weight_cast() + readers));
    classed(name(what, " fp8 cast bwd"), r * o, chain, true, 6);
    classed(name(what, " fp8 transposes bwd"), transposed * 2.0, {{kStrided, 1.0}}, true, 3);
    if (recast) classed(name(what, recast_name()), re.elements, chain, true, 6 * re.casts);
  }

  /// plan_gemm on this GPU, remembered by shape across the network's layers where a memo is given.
  [[nodiscard]] GemmPlan planned(const GemmShape& g, Precision p) const {
    const auto plan = [&] { return plan_gemm(g, gpu_, p, kp_); };
    return memo_ ? memo_->get(g, p, plan) : plan();
  }

  /// A kernel's name for `model show --kernels`; empty (no allocation) when nobody asks.
  [[nodiscard]] std::string name(const std::string& base, std::string_view suffix) const {
    return named_ ? base + std::string(suffix) : std::string();
  }

  /// Adds the GEMM and returns its time.
  Seconds gemm(const std::string& what, const GemmShape& g, bool bwd) {
    if (g.m <= 0 || g.n <= 0 || g.k <= 0) return Seconds{};
    const GemmPlan plan = planned(g, gemm_precision());
    const Seconds t = gpu_.on_tensor_cores(gemm_precision()) ? plan.time / sharded_rate() : plan.time;
    add(what, t, flops(g.flops()), bytes(0), bwd);
    if (!bwd && !in_attention_core) forward_gemm += t;
    return t;
  }
  void conv(const std::string& what, const ConvGeometry& c, ConvPass pass, bool bwd) {
    const ConvPlan plan = plan_conv(c, pass, gpu_, gemm_precision(), kp_, opt_.conv_algorithms);
    add(named_
            ? fmt::format("{} ({}{}{})", what, to_string(plan.algorithm), plan.transposes > Seconds{} ? ", nchw transposes" : "",
                          plan.padding > Seconds{} ? ", channels padded" : "")
            : std::string(),
        plan.time, flops(conv_as_gemm(c, pass).flops()), bytes(0), bwd);
    if (!bwd) forward_gemm += plan.time;
  }
  /// A memory-bound pass over `elements` elements of `element_bytes` each (plus `extra` bytes).
  void pass(const std::string& what, double elements_moved, double element_bytes, bool bwd, double extra_bytes = 0.0,
            int kernels = 1) {
    const Bytes traffic = bytes(elements_moved * element_bytes + extra_bytes);
    if (!(traffic > Bytes{})) return;  // nothing to move: no kernel
    const Seconds t = memory_kernel_time(traffic, gpu_, kp_) + kp_.kernel_overhead * static_cast<double>(kernels - 1);
    add(what, t, flops(0), traffic, bwd);
    (bwd ? backward_kernels : forward_kernels) += kernels - 1;
  }
  /// Eq. K21: whether the framework runs its memory-bound kernels by class (`memory_bound: by_class`).
  [[nodiscard]] bool by_class() const noexcept { return opt_.execution.by_class; }
  /// Eq. K21: a chain of `kernels` memory-bound kernels over `elements` elements, its bytes per element by the
  /// class of kernel that moves them, each class's bytes at its own rate.
  void classed(const std::string& what, double elements, std::initializer_list<ClassBytes> parts, bool bwd, int kernels = 1) {
    Seconds t{};
    double moved = 0.0;
    for (const ClassBytes& p : parts) {
      t += bytes(elements * p.bytes) / (gpu_.memory_bandwidth * memory_class_efficiency(kp_, p.cls));
      moved += elements * p.bytes;
    }
    if (!(moved > 0.0)) return;  // nothing to move: no kernel
    add(what, t + kp_.kernel_overhead * static_cast<double>(kernels), flops(0), bytes(moved), bwd);
    (bwd ? backward_kernels : forward_kernels) += kernels - 1;
  }
  /// A layer's share of a memory-bound kernel that spans several layers (FSDP2's copies of a gather unit): its
  /// bytes at the memory-bound rate (or its class's, eq. K21), the kernel's launch charged to none of them.
  void share(const std::string& what, double elements_moved, double element_bytes, bool bwd,
             MemoryClass cls = MemoryClass::fitted) {
    const Bytes traffic = bytes(elements_moved * element_bytes);
    if (!(traffic > Bytes{})) return;
    const double efficiency = by_class() ? memory_class_efficiency(kp_, cls) : kp_.memory_efficiency;
    const Seconds t = traffic / (gpu_.memory_bandwidth * efficiency);
    add(what, t, flops(0), traffic, bwd);
    (bwd ? backward_kernels : forward_kernels) -= 1;  // the unit's kernel is eq. S11's, counted per unit
    if (!bwd) forward_copies += t;
  }
  /// A batch norm pass: streamed at memory speed (K5), or on NCHW activations no faster than its
  /// per-channel kernels walk the elements (K12), over `fitted_kernels` kernels as the fitted blend counts them, or
  /// as many as the profiles show (batch_norm_kernels) where the framework's memory-bound kernels are timed as they
  /// run (K18).
  void norm(const std::string& what, double elements_moved, double element_bytes, bool bwd, int fitted_kernels) {
    const Bytes traffic = bytes(elements_moved * element_bytes);
    if (!(traffic > Bytes{})) return;
    const Seconds stream = memory_kernel_time(traffic, gpu_, kp_);  // K5, with one kernel's overhead
    const Seconds walk =
        nchw_norm_time(elements_moved, gpu_, opt_.precision, opt_.conv_algorithms.layout, kp_) + kp_.kernel_overhead;
    const int kernels =
        opt_.execution.streaming ? batch_norm_kernels(opt_.precision, opt_.conv_algorithms.layout, bwd) : fitted_kernels;
    add(named_ && walk > stream ? what + " (per-channel nchw)" : what,
        max(stream, walk) + kp_.kernel_overhead * static_cast<double>(kernels - 1), flops(0), traffic, bwd);
    (bwd ? backward_kernels : forward_kernels) += kernels - 1;
  }
  /// A pooling pass (eq. K23): streamed at memory speed (K5), or no faster than its threads walk `window_elements`
  /// window elements at the architecture's rate per SM.
  void pool(const std::string& what, double elements_moved, double element_bytes, bool bwd, double extra_bytes,
            double window_elements) {
    const Bytes traffic = bytes(elements_moved * element_bytes + extra_bytes);
    if (!(traffic > Bytes{})) return;
    const Seconds stream = memory_kernel_time(traffic, gpu_, kp_);
    const Seconds walk = pool_walk_time(window_elements, bwd, gpu_, kp_) + kp_.kernel_overhead;
    add(named_ && walk > stream ? what + " (window walk)" : what, max(stream, walk), flops(0), traffic, bwd);
  }
  /// A layer without the shape of its work: the roofline of its FLOPs and bytes.
  void roofline(const std::string& what, Flops work, Bytes traffic, bool tensor_math, bool bwd) {
    const bool tensor = gpu_.on_tensor_cores(opt_.precision);
    const FlopsPerSecond rate = (tensor_math ? gpu_.peak(gemm_precision()) : gpu_.peak_fp32) *
        (tensor ? kp_.tensor_efficiency : kp_.vector_efficiency) *
        gemm_tiles(tensor, operand_feed_cost(gpu_, gemm_precision(), kp_)).front().efficiency;
    const Seconds compute = rate > FlopsPerSecond{} ? work / rate : Seconds{};
    if (!(work > Flops{}) && !(traffic > Bytes{})) return;  // no work: no kernel
    add(what, max(compute, traffic / (gpu_.memory_bandwidth * kp_.memory_efficiency)) + kp_.kernel_overhead, work, traffic, bwd);
  }
  [[nodiscard]] const KernelParams& params() const noexcept { return kp_; }

  /// Eq. K9, FlashAttention-2 (Dao 2023): one fused kernel forward and one backward per attention layer.
  /// Forward: S = Q·Kᵀ and O = P·V per sequence and head in on-chip tiles, whose products run as the GEMM
  /// model times them (K1–K3, compute part) and whose softmax exponentials run on the special-function
  /// units, 16 per SM per clock from Maxwell to Hopper (CUDA C++ Programming Guide, throughput of
  /// arithmetic instructions; 3.9 T/s on an H100 SXM5 beside 989 TFLOP/s of matrix math, as the
  /// FlashAttention-3 paper notes), after the products rather than overlapped with them in
  /// FlashAttention-2. The heads·S² scores never reach memory. Backward: S recomputed, then dV = Pᵀ·dO,
  /// dP = dO·Vᵀ, dQ = dS·K and dK = dSᵀ·Q (five products) and the exponentials again. A causal mask skips
  /// the tiles above the diagonal: half of the products and exponentials; a sliding window of `window` < s positions
  /// the tiles outside its band as well, which leaves the band's share of them, eq. K25b over s² (FlashAttention-2's
  /// window_size). Memory: Q, K, V read, O and the
  /// per-row log-sum-exp (fp32) written forward; Q, K, V, O, dO and the log-sum-exp read, dQ (fp32
  /// accumulator), dK and dV written backward. Time = max(math, memory) + one kernel's overhead.
  /// `dh`: the query/key head dimension (Q·Kᵀ's depth); `dv` the value head dimension (P·V's width, the output's;
  /// 0: dh), distinct in multi-head latent attention; `dkv` the keys' width a token, the values' dkv/dh·dv.
  void flash_attention(const std::string& name, std::int64_t seqs, std::int64_t s, std::int64_t heads, std::int64_t dh,
                       std::int64_t dkv, bool causal, std::int64_t window, std::string_view kernel, std::int64_t dv = 0) {
    double frac = causal ? 0.5 : 1.0;
    if (causal && window > 0 && window < s)  // eq. K25b: the band |i − j| < W of the square the causal half counts
      frac *= static_cast<double>(eq::attention_band_pairs(s, window)) / (static_cast<double>(s) * static_cast<double>(s));
    const std::int64_t bh = seqs * heads, dvh = dv > 0 ? dv : dh;
    const GemmShape qk{s, s, dh, bh}, pv{s, dvh, s, bh};
    // The kernel keeps its Q tile in shared memory over the whole key loop, so a head dimension below 128
    // does not pay a stand-alone product's short-K tile feeding: its products run at head dimension 128's
    // rate per FLOP (measured on an H200, PyTorch 2.11's flash kernels: 258 and 286 TFLOP/s forward at head
    // dimensions 64 and 128, 241 and 238 backward; tests/data/h200-pytorch/decoder/call3-profile-*.txt).
    const std::int64_t dr = std::max<std::int64_t>(dh, 128), dvr = std::max<std::int64_t>(dvh, 128);
    const double per_flop = static_cast<double>(dh) / static_cast<double>(dr);
    const double per_flop_v = static_cast<double>(dvh) / static_cast<double>(dvr);
    const GemmShape qk_rate{s, s, dr, bh}, pv_rate{s, dvr, s, bh};
    // The memory-efficient kernel on fp32 data (PyTorch's, from xformers' CUTLASS kernels) multiplies on
    // the tensor cores from Ampere on as three TF32 products per fp32 product (CUTLASS's
    // OpMultiplyAddFastF32), whether or not TF32 is allowed; before Ampere on the fp32 units.
    const bool fast_f32 = !is_mixed(opt_.precision) && gpu_.supports(Precision::tf32) && gpu_.has_tensor_cores();
    const Precision math = fast_f32         ? Precision::tf32
        : opt_.precision == Precision::tf32 ? Precision::fp32
        : opt_.precision == Precision::fp8  ? Precision::bf16  // attention stays bf16
                                            : opt_.precision;
    const double passes = fast_f32 ? 3.0 : 1.0;
    const Seconds t_qk = planned(qk_rate, math).compute * frac * passes * per_flop;
    const Seconds t_pv = planned(pv_rate, math).compute * frac * passes * per_flop_v;
    const double scores = static_cast<double>(bh) * static_cast<double>(s) * static_cast<double>(s) * frac;
    const double exp_rate = 16.0 * gpu_.sm_count * gpu_.boost_clock.base();  // exponentials per second
    const Seconds t_exp = exp_rate > 0.0 ? seconds(scores / exp_rate) : Seconds{};
    const double eb = element_bytes(opt_.precision);
    const double rows = static_cast<double>(seqs) * static_cast<double>(s);
    const double q = rows * static_cast<double>(heads * dh), o = rows * static_cast<double>(heads * dvh);
    const double kv = rows * static_cast<double>(dkv + dkv / dh * dvh);  // K and V
    const double lse = static_cast<double>(bh) * static_cast<double>(s) * 4.0;
    const BytesPerSecond bw = gpu_.memory_bandwidth * kp_.memory_efficiency;
    const Bytes fwd_traffic = bytes((q + kv + o) * eb + lse);
    const Bytes bwd_traffic = bytes((q + kv + o + o) * eb + lse + q * 4.0 + kv * eb);
    const double fwd_flops = (qk.flops() + pv.flops()) * frac;  // the two products (Q·Kᵀ, P·V)
    // FlashAttention-2's products run at its published share of the GEMM rate on this architecture
    const double fe = kp_.flash_forward_efficiency * sharded_rate(), be = kp_.flash_backward_efficiency * sharded_rate();
    const Seconds t_fwd = max((t_qk + t_pv) / fe + t_exp, fwd_traffic / bw) + kp_.kernel_overhead;
    add(named_ ? fmt::format("{} fwd ({})", name, kernel) : std::string(), t_fwd, flops(fwd_flops), fwd_traffic, false);
    forward_attention += t_fwd;
    const Seconds t_bwd = max((2.0 * t_qk + 3.0 * t_pv) / be + t_exp, bwd_traffic / bw) + kp_.kernel_overhead;
    add(named_ ? fmt::format("{} bwd ({})", name, kernel) : std::string(), t_bwd, flops(2.5 * fwd_flops), bwd_traffic, true);
    backward_attention += t_bwd;
  }

 private:
  void add(const std::string& what, Seconds t, Flops f, Bytes traffic, bool bwd) {
    (bwd ? backward : forward) += t;
    (bwd ? backward_kernels : forward_kernels) += 1;
    if (in_attention_core) (bwd ? backward_attention : forward_attention) += t;
    if (named_ && out_) out_->push_back(KernelTiming{what, t, f, traffic, bwd});
  }
  const GpuSpec& gpu_;
  const ComputeOptions& opt_;
  const KernelParams& kp_;
  bool named_;
  std::vector<KernelTiming>* out_;
  GemmMemo* memo_;
};

/// Whether a convolution layer has a bias: parameters beyond its filters' C_in/groups · kh · kw · C_out.
bool conv_has_bias(const Layer& l, const ConvGeometry& c) {
  const std::int64_t filters = c.in_channels / std::max(c.groups, 1) * c.kernel_h * c.kernel_w * c.out_channels;
  return l.params > filters;
}

/// A linear map on the last dimension: forward, data gradient (unless the layer is first), weight gradient.
/// `readers`: the separate linear maps the product stands for, each casting the input in fp8 (eq. K21's by-class casts).
void linear_gemms(Kernels& k, const std::string& name, std::int64_t rows, std::int64_t in, std::int64_t out, bool input_grad,
                  int readers = 1) {
  k.gemm(k.name(name, " fwd"), GemmShape{rows, out, in}, false);
  if (input_grad) k.gemm(k.name(name, " dgrad"), GemmShape{rows, in, out}, true);
  const Seconds wgrad = k.gemm(k.name(name, " wgrad"), GemmShape{out, in, rows}, true);
  if (!k.input_linear_seen) {  // eq. P28: the first linear map reads the layer's input
    k.input_wgrad = wgrad;
    k.input_linear_seen = true;
  }
  k.fp8_casts(name, rows, in, out, input_grad, readers);
}

/// What the parts of time_layer read: the layer, the batch, and figures derived from them once.
struct LayerWork {
  const Layer& l;
  int batch;
  double B;         // the batch, as a double
  double eb;        // activation bytes per element
  bool input_grad;  // a data gradient is computed (not the first layer, not an embedding)
  double out_e;     // the batch's output elements
  const ComputeOptions& opt;
};

/// Eq. K24: whether the step runs Hugging Face transformers' GPT-2 code (`model_code: transformers-gpt2`).
bool transformers_gpt2(const LayerWork& w) noexcept { return w.opt.execution.transformers_gpt2; }

/// An eager chain of `kernels` over `elements` elements, forward or backward (K14, K24).
void chain(Kernels& k, const std::string& what, double elements, const EagerChain& c, double eb) {
  k.pass(k.name(what, " fwd"), elements, c.forward_bytes(eb), false, 0.0, c.forward_kernels);
  k.pass(k.name(what, " bwd"), elements, c.backward_bytes(eb), true, 0.0, c.backward_kernels);
}

/// Eq. K24: GPT-2's Conv1D, torch.addmm(bias, x, W), on `outputs` output elements. PyTorch's addmm copies the
/// broadcast bias into the output and multiplies with beta = 1, reading it back (2·eb an output, the copy a kernel);
/// backward, the bias's gradient is a column sum of the output's gradient (eb an output, a kernel).
void addmm_bias(Kernels& k, const std::string& what, double outputs, double eb) {
  k.pass(k.name(what, " bias copy fwd (addmm)"), outputs, 2.0 * eb, false);
  k.pass(k.name(what, " bias grad bwd"), outputs, eb, true);
}

/// Whether a layer of linear maps carries biases: its parameters exceed the maps' `weights`.
bool has_bias(const Layer& l, double weights) noexcept { return static_cast<double>(l.params) > weights; }

/// A convolution with known shapes: forward, data and weight gradients, and its bias (eq. K13).
bool time_conv(Kernels& k, const LayerWork& w) {
  const Layer& l = w.l;
  const auto& in = l.input_shape;
  if (in.size() != 3 || l.output_shape.size() != 3) return false;
  const ConvGeometry c{w.batch,           in[0],      l.output_shape[0], in[1],      in[2],      l.output_shape[1],
                       l.output_shape[2], l.kernel_h, l.kernel_w,        l.stride_h, l.stride_w, l.groups};
  k.conv(k.name(l.name, " fwd"), c, ConvPass::forward, false);
  if (w.input_grad) k.conv(k.name(l.name, " dgrad"), c, ConvPass::data_gradient, true);
  k.conv(k.name(l.name, " wgrad"), c, ConvPass::weight_gradient, true);
  if (conv_has_bias(l, c)) {  // eq. K13: added to the output in a pass of its own, its gradient a reduction
    k.pass(k.name(l.name, " bias fwd"), 2.0 * w.out_e, w.eb, false);
    k.pass(k.name(l.name, " bias bwd"), w.out_e, w.eb, true);
  }
  return true;
}

/// An MLP's activation over `h` elements of its hidden width: GELU reads and writes (2 passes of H); SwiGLU, SiLU of
/// the gate and its product with up (read 2H, write H, + 2H), backward 3 and 7. Where the framework runs its
/// memory-bound kernels by class (eq. K21), contiguous element-wise kernels (silu, mul, silu_backward), vectorized.
void mlp_activation(Kernels& k, const std::string& base, double h, bool gated, double eb) {
  const double fwd = gated ? 5.0 : 2.0, bwd = gated ? 7.0 : 3.0;
  const std::string_view f = gated ? ".swiglu fwd" : ".gelu fwd", b = gated ? ".swiglu bwd" : ".gelu bwd";
  if (k.by_class()) {
    k.classed(k.name(base, f), h, {{kVec, fwd * eb}}, false);
    k.classed(k.name(base, b), h, {{kVec, bwd * eb}}, true);
  } else {
    k.pass(k.name(base, f), fwd * h, eb, false);
    k.pass(k.name(base, b), bwd * h, eb, true);
  }
}

/// Eq. P16 (docs/model.md): a mixture of experts on `rows` tokens of width d: the router's GEMM (D×E) and its
/// softmax and top-k, the K copies of each token permuted to their experts and combined back (memory-bound), and
/// the rank's experts (E, or E/ep under expert parallelism) as grouped GEMMs of rows·K/E_local rows each: balanced
/// routing assumed, every expert gets the same share of the rows·K copies the rank's experts run. Where the framework
/// runs its memory-bound kernels by class (eq. K21), the experts' SwiGLU or GELU as the dense MLP's (vectorized); the
/// router's top-k and the permutations stay at the fitted memory-bound rate (no profile of them). Eq. P23: under routing
/// imbalance the busiest expert-parallel rank's experts run ⌈rows·K·f⌉ copies (`expert_load` f), their GEMMs and
/// activation stretched; the router and the permutations stay on the rank's own rows·K. Eq. P24: a capacity factor
/// sets f (padded: C; dropping: at most C, below 1 where C is).
void time_experts(Kernels& k, const LayerWork& w, std::int64_t rows, std::int64_t d) {
  const Layer& l = w.l;
  const std::int64_t local = l.local_experts > 0 ? l.local_experts : l.experts;
  const std::int64_t own = rows * l.top_k;
  const auto routed = static_cast<std::int64_t>(std::ceil(static_cast<double>(own) * std::max(l.expert_load, 0.0)));
  const std::int64_t per_expert = (routed + local - 1) / local;
  const double logits = static_cast<double>(rows) * l.experts, copies = static_cast<double>(own) * static_cast<double>(d);
  const double tokens = static_cast<double>(rows) * static_cast<double>(d);
  linear_gemms(k, k.name(l.name, ".router"), rows, d, l.experts, w.input_grad);
  k.pass(k.name(l.name, ".router top-k fwd"), 3.0 * logits, w.eb, false);  // read the logits, write probabilities, pick
  k.pass(k.name(l.name, ".router top-k bwd"), 3.0 * logits, w.eb, true);
  k.pass(k.name(l.name, ".permute fwd"), 2.0 * copies, w.eb, false);  // gather the K copies in expert order
  k.pass(k.name(l.name, ".permute bwd"), 2.0 * copies, w.eb, true);
  k.pass(k.name(l.name, ".unpermute fwd"), copies + tokens, w.eb, false);  // the K outputs weighted into one
  k.pass(k.name(l.name, ".unpermute bwd"), copies + tokens, w.eb, true);
  const std::int64_t up = l.hidden * (l.gated ? 2 : 1);
  k.gemm(k.name(l.name, ".experts.up fwd"), GemmShape{per_expert, up, d, local}, false);
  k.gemm(k.name(l.name, ".experts.up dgrad"), GemmShape{per_expert, d, up, local}, true);
  k.gemm(k.name(l.name, ".experts.up wgrad"), GemmShape{up, d, per_expert, local}, true);
  const double h = static_cast<double>(routed) * static_cast<double>(l.hidden);
  mlp_activation(k, k.name(l.name, ".experts"), h, l.gated, w.eb);  // as the dense MLP's
  k.gemm(k.name(l.name, ".experts.down fwd"), GemmShape{per_expert, d, l.hidden, local}, false);
  k.gemm(k.name(l.name, ".experts.down dgrad"), GemmShape{per_expert, l.hidden, d, local}, true);
  k.gemm(k.name(l.name, ".experts.down wgrad"), GemmShape{d, l.hidden, per_expert, local}, true);
}

/// Eq. K24: GPT-2's MLP as transformers writes it, beyond its GEMMs: gelu_new an operator a kernel over the `h`
/// activations, the two Conv1D biases (addmm), and the dropout on the `rows`·`d` output.
void transformers_mlp(Kernels& k, const LayerWork& w, std::int64_t rows, std::int64_t d, double h) {
  const Layer& l = w.l;
  const double r = static_cast<double>(rows), out = static_cast<double>(l.output_shape.empty() ? d : l.output_shape.back());
  chain(k, k.name(l.name, ".gelu_new"), h, kTransformersGeluNew, w.eb);
  if (has_bias(l, static_cast<double>(d) * static_cast<double>(l.hidden) + static_cast<double>(l.hidden) * out)) {
    addmm_bias(k, k.name(l.name, ".up"), h, w.eb);
    addmm_bias(k, k.name(l.name, ".down"), r * out, w.eb);
  }
  chain(k, k.name(l.name, ".dropout"), r * out, kDropout, w.eb);
}

/// A linear map with a known input shape, or an MLP: up (and gate), the activation, down.
bool time_linear(Kernels& k, const LayerWork& w) {
  const Layer& l = w.l;
  const auto& in = l.input_shape;
  if (in.empty()) return false;
  const double eb = w.eb;
  const std::int64_t d = in.back();
  const std::int64_t rows = static_cast<std::int64_t>(elements(in) / static_cast<double>(d) * w.B);
  if (l.experts > 0) {
    time_experts(k, w, rows, d);
  } else if (l.hidden > 0) {  // an MLP: up (and gate), the activation, down
    const std::int64_t up = l.hidden * (l.gated ? 2 : 1);
    linear_gemms(k, k.name(l.name, ".up"), rows, d, up, w.input_grad, l.gated ? 2 : 1);
    const double h = static_cast<double>(rows) * static_cast<double>(l.hidden);
    if (transformers_gpt2(w) && !l.gated && !w.opt.compiled) {  // eq. K24: gelu_new's operators
      transformers_mlp(k, w, rows, d, h);
    } else {
      mlp_activation(k, l.name, h, l.gated, eb);  // GELU or SwiGLU
    }
    const Seconds before = k.forward_gemm;
    linear_gemms(k, k.name(l.name, ".down"), rows, l.hidden, l.output_shape.empty() ? d : l.output_shape.back(), true);
    // eq. R1b: the down product's output is read by the operators after the layer only (K24's GPT-2 code drops it out
    // first, and dropout keeps its mask: there the product must run again)
    if (!transformers_gpt2(w) || l.gated || w.opt.compiled) k.trailing_product = k.forward_gemm - before;
  } else {
    const std::int64_t out = l.output_shape.empty() ? d : l.output_shape.back();
    linear_gemms(k, l.name, rows, d, out, w.input_grad);
  }
  return true;
}

/// Eq. K14: the rotation of q and k (over `qk` elements), fused or an operator a kernel.
void time_rotary(Kernels& k, const LayerWork& w, double qk) {
  const std::string& name = w.l.name;
  if (k.by_class()) {  // eq. K21: compiled one vectorized kernel; eager the upcast, the complex product strided
    const double eb = w.eb;
    const std::initializer_list<ClassBytes> eager{{kUpcast, 4.0 + eb}, {kStrided, 8.0}, {kVec, 4.0 + eb}},
        fused{{kVec, 2.0 * eb}};
    const int kernels = w.opt.compiled ? 1 : 2 * kEagerRotary.forward_kernels;
    k.classed(k.name(name, w.opt.compiled ? ".rotary fwd" : ".rotary fwd (eager)"), qk, w.opt.compiled ? fused : eager, false,
              kernels);
    k.classed(k.name(name, w.opt.compiled ? ".rotary bwd" : ".rotary bwd (eager)"), qk, w.opt.compiled ? fused : eager, true,
              kernels);
    return;
  }
  if (w.opt.compiled) {
    k.pass(k.name(name, ".rotary fwd"), 2.0 * qk, w.eb, false);
    k.pass(k.name(name, ".rotary bwd"), 2.0 * qk, w.eb, true);
  } else {
    k.pass(k.name(name, ".rotary fwd (eager)"), qk, kEagerRotary.forward_bytes(w.eb), false, 0.0,
           2 * kEagerRotary.forward_kernels);
    k.pass(k.name(name, ".rotary bwd (eager)"), qk, kEagerRotary.backward_bytes(w.eb), true, 0.0,
           2 * kEagerRotary.backward_kernels);
  }
}

/// The attention core without a fused kernel, `bh` sequences × heads of `s` positions and `dh` features.
void time_unfused_core(Kernels& k, const LayerWork& w, std::int64_t s, std::int64_t dh, std::int64_t bh, std::int64_t dv = 0) {
  const std::string& name = w.l.name;
  if (dv == 0) dv = dh;  // the value head dimension (multi-head latent attention's differs)
  // Scores Q·Kᵀ and the weighted sum P·V, one small GEMM per sequence and head; backward: two each.
  k.in_attention_core = true;
  k.gemm(k.name(name, ".scores fwd"), GemmShape{s, s, dh, bh}, false);
  k.gemm(k.name(name, ".context fwd"), GemmShape{s, dv, s, bh}, false);
  k.gemm(k.name(name, ".context dgrad"), GemmShape{s, s, dv, bh}, true);  // dP = dC·Vᵀ
  k.gemm(k.name(name, ".context wgrad"), GemmShape{s, dv, s, bh}, true);  // dV = Pᵀ·dC
  k.gemm(k.name(name, ".scores dgrad"), GemmShape{s, dh, s, bh}, true);   // dQ = dS·K
  k.gemm(k.name(name, ".scores wgrad"), GemmShape{s, dh, s, bh}, true);   // dK = dSᵀ·Q
  const double probs = static_cast<double>(bh) * static_cast<double>(s) * static_cast<double>(s);
  if (w.opt.compiled) {
    // Eq. K14, compiled (Megatron's fused scale-mask-softmax, Inductor's fusion): scale, mask and softmax one
    // kernel each way, the scores read and the probabilities written (fwd), the probabilities and their
    // gradient read and the scores' gradient written (bwd); a dropout on the probabilities writes its output
    // and one-byte mask (fwd) and reads them back (bwd).
    k.pass(k.name(name, ".softmax fwd (fused)"), 2.0 * probs, w.eb, false);
    k.pass(k.name(name, ".softmax bwd (fused)"), 3.0 * probs, w.eb, true);
    if (w.l.probs_dropout) {
      k.pass(k.name(name, ".dropout fwd"), 2.0 * probs, w.eb, false, probs);
      k.pass(k.name(name, ".dropout bwd"), 2.0 * probs, w.eb, true, probs);
    }
  } else if (transformers_gpt2(w)) {  // eq. K24: GPT2Attention._attn's operators
    chain(k, k.name(name, ".scores chain (transformers)"), probs, kTransformersScores, w.eb);
  } else {
    // Scale and mask, softmax, dropout on the heads·S² probabilities: read and write each (fwd), read
    // two and write one (bwd).
    k.pass(k.name(name, ".softmax fwd"), 3 * 2.0 * probs, w.eb, false, 0.0, 3);
    k.pass(k.name(name, ".softmax bwd"), 3 * 3.0 * probs, w.eb, true, 0.0, 3);
  }
  k.in_attention_core = false;
}

/// Eq. K24: GPT-2's attention as transformers writes it, beyond its GEMMs and core: the two Conv1D biases (addmm) on
/// the q/k/v and output projections of `rows` rows, and the residual branch's dropout.
void transformers_attention(Kernels& k, const LayerWork& w, double rows, std::int64_t d, std::int64_t dq, std::int64_t dkv) {
  const Layer& l = w.l;
  const double width = static_cast<double>(d), qkv = static_cast<double>(dq + 2 * dkv);
  if (has_bias(l, width * qkv + static_cast<double>(dq) * width)) {
    addmm_bias(k, k.name(l.name, ".qkv"), rows * qkv, w.eb);
    addmm_bias(k, k.name(l.name, ".out"), rows * width, w.eb);
  }
  chain(k, k.name(l.name, ".dropout"), rows * width, kDropout, w.eb);
}

void time_norm_elements(Kernels& k, const LayerWork& w, const std::string& name, double elements);

/// The attention core (eq. K9 fused, or the unfused products and softmax) and the heads' copies of `act` elements.
void time_attention_core(Kernels& k, const LayerWork& w, std::int64_t seqs, std::int64_t s, std::int64_t dh, std::int64_t dkv,
                         double act, std::int64_t dv = 0) {
  const Layer& l = w.l;
  const double eb = w.eb;
  if (fused_attention(w.opt.attention)) {
    // the kernel's label: cuDNN's where the framework runs it in place of FlashAttention (eq. K9, `attention: cudnn`)
    const bool cudnn = w.opt.execution.cudnn_attention && w.opt.attention == AttentionKernel::flash;
    k.flash_attention(k.name(l.name, ".attention"), seqs, s, l.heads, dh, dkv, l.causal, l.window,
                      cudnn ? std::string_view("cudnn") : to_string(w.opt.attention), dv);
  } else time_unfused_core(k, w, s, dh, seqs * l.heads, dv);
  if (k.by_class()) {  // eq. K21: copies of transposed heads, strided
    k.classed(k.name(l.name, ".heads fwd"), act, {{kStrided, 8.0 * eb}}, false, 2);
    k.classed(k.name(l.name, ".heads bwd"), act, {{kStrided, 8.0 * eb}}, true, 2);
  } else {
    k.pass(k.name(l.name, ".heads fwd"), 2.0 * 4.0 * act, eb, false, 0.0, 2);
    k.pass(k.name(l.name, ".heads bwd"), 2.0 * 4.0 * act, eb, true, 0.0, 2);
  }
}

/// Multi-head latent attention (Layer::kv_lora; docs/compute-model.md, K9): its projections ordinary linear maps —
/// q_a D→r_q, its RMSNorm, q_b r_q→a·d_qk (or q_proj D→a·d_qk); kv_a D→r_kv+d_rope, its RMSNorm, kv_b
/// r_kv→a·(d_nope+d_v); o_proj a·d_v→D — rotary on the a·d_rope query and the d_rope key features, and the core over
/// a heads of d_qk (scores) and d_v (values). On a TP rank a is its a/t heads; the down projections stay whole.
bool time_mla(Kernels& k, const LayerWork& w, std::int64_t seqs, std::int64_t s, std::int64_t d) {
  const Layer& l = w.l;
  const std::int64_t rows = seqs * s, a = l.heads, dqk = l.head_dim, dv = l.v_head_dim > 0 ? l.v_head_dim : dqk;
  const std::int64_t nope = dqk - l.qk_rope;
  const double r = static_cast<double>(rows);
  if (l.q_lora > 0) {
    linear_gemms(k, k.name(l.name, ".q_a_proj"), rows, d, l.q_lora, w.input_grad);
    time_norm_elements(k, w, k.name(l.name, ".q_a_layernorm"), r * l.q_lora);
    linear_gemms(k, k.name(l.name, ".q_b_proj"), rows, l.q_lora, a * dqk, true);
  } else {
    linear_gemms(k, k.name(l.name, ".q_proj"), rows, d, a * dqk, w.input_grad);
  }
  linear_gemms(k, k.name(l.name, ".kv_a_proj_with_mqa"), rows, d, l.kv_lora + l.qk_rope, w.input_grad);
  time_norm_elements(k, w, k.name(l.name, ".kv_a_layernorm"), r * l.kv_lora);
  linear_gemms(k, k.name(l.name, ".kv_b_proj"), rows, l.kv_lora, a * (nope + dv), true);
  if (l.rotary) time_rotary(k, w, r * static_cast<double>((a + 1) * l.qk_rope));
  time_attention_core(k, w, seqs, s, dqk, a * dqk, r * static_cast<double>(a * dqk), dv);
  linear_gemms(k, k.name(l.name, ".o_proj"), rows, a * dv, d, true);
  return true;
}

/// Attention with a known input shape: the q/k/v projection, rotary, the core (fused or not), the
/// heads' copies and the output projection.
bool time_attention(Kernels& k, const LayerWork& w) {
  const Layer& l = w.l;
  const auto& in = l.input_shape;
  if (in.size() < 2 || l.heads <= 0) return false;
  if (is_mla(l)) {
    const std::int64_t d = in.back(), s = in[in.size() - 2];
    return time_mla(k, w, static_cast<std::int64_t>(elements(in) / static_cast<double>(s * d) * w.B), s, d);
  }
  const std::int64_t d = in.back(), s = in[in.size() - 2];
  const std::int64_t seqs = static_cast<std::int64_t>(elements(in) / static_cast<double>(s * d) * w.B);
  const std::int64_t rows = seqs * s, dh = l.head_dim > 0 ? l.head_dim : d / l.heads;
  // q (and the context) of `heads` heads: the width d, or a tensor-parallel rank's heads/t × d_h (head_dim set);
  // k and v of kv_heads heads each (grouped-query attention: fewer key/value heads)
  const std::int64_t dq = l.head_dim > 0 ? dh * l.heads : d;
  const std::int64_t dkv = l.kv_heads > 0 ? dh * l.kv_heads : dq;
  linear_gemms(k, k.name(l.name, ".qkv"), rows, d, dq + 2 * dkv, w.input_grad, 3);
  if (l.rotary) time_rotary(k, w, static_cast<double>(rows) * static_cast<double>(dq + dkv));
  const double act = static_cast<double>(rows) * static_cast<double>(dq);
  time_attention_core(k, w, seqs, s, dh, dkv, act);
  linear_gemms(k, k.name(l.name, ".out"), rows, dq, d, true);
  if (transformers_gpt2(w)) transformers_attention(k, w, static_cast<double>(rows), d, dq, dkv);
  return true;
}

}  // namespace

/// Eq. S12: the in·out of the linear maps whose products eq. K15 casts, as time_linear, time_mla and time_attention call
/// linear_gemms for a layer fp8 training converts (time_layer's fp8_layer); a layer without its input shape runs as a
/// roofline and casts nothing.
double fp8_weight_elements(const Layer& l) noexcept {
  const auto& in = l.input_shape;
  const auto prod = [](std::int64_t a, std::int64_t b) { return static_cast<double>(a) * static_cast<double>(b); };
  if (l.kind == LayerKind::linear && l.hidden > 0 && !in.empty()) {
    const std::int64_t d = in.back();
    if (l.experts > 0) return prod(d, l.experts);  // the router; the experts' grouped products are not Float8Linear
    const std::int64_t out = l.output_shape.empty() ? d : l.output_shape.back();
    return prod(d, l.hidden * (l.gated ? 2 : 1)) + prod(l.hidden, out);
  }
  if (l.kind != LayerKind::attention || in.size() < 2 || l.heads <= 0) return 0.0;
  const std::int64_t d = in.back();
  if (is_mla(l)) {
    const std::int64_t a = l.heads, dqk = l.head_dim, dv = l.v_head_dim > 0 ? l.v_head_dim : dqk;
    const double q = l.q_lora > 0 ? prod(d, l.q_lora) + prod(l.q_lora, a * dqk) : prod(d, a * dqk);
    return q + prod(d, l.kv_lora + l.qk_rope) + prod(l.kv_lora, a * (dqk - l.qk_rope + dv)) + prod(a * dv, d);
  }
  const std::int64_t dh = l.head_dim > 0 ? l.head_dim : d / l.heads;
  const std::int64_t dq = l.head_dim > 0 ? dh * l.heads : d;
  const std::int64_t dkv = l.kv_heads > 0 ? dh * l.kv_heads : dq;
  return prod(d, dq + 2 * dkv) + prod(dq, d);
}

namespace {

/// Eq. K21, the norm by kernel class. Eager RMSNorm forward: the upcast (eb + 4) its own class; x·rsqrt and ·weight
/// (8 + 2·eb), both broadcasting, strided; pow and the downcast (8 + 4 + eb) vectorized; the mean (4) a reduction.
/// Backward: the products with the weight and with rsqrt and the mean's broadcast division (2·eb + 8 + 4) strided, the
/// downcast's gradient an upcast (eb + 4); the weight gradient's product (eb), grad·x (8), the sum of the two paths
/// (12) and the upcast's gradient (4 + eb) vectorized; the weight gradient's column sum (eb) and the row sum (4)
/// reductions. A fused norm (compiled, or PyTorch's layer norm kernels): vectorized.
void time_layernorm_by_class(Kernels& k, const LayerWork& w, const std::string& name, double elements, bool rms) {
  const double eb = w.eb;
  if (rms && !w.opt.compiled) {
    k.classed(k.name(name, " fwd (eager)"), elements,
              {{kUpcast, 4.0 + eb}, {kStrided, 8.0 + 2.0 * eb}, {kVec, 12.0 + eb}, {kReduce, 4.0}}, false,
              kEagerRmsNorm.forward_kernels);
    k.classed(k.name(name, " bwd (eager)"), elements,
              {{kUpcast, 4.0 + eb}, {kStrided, 12.0 + 2.0 * eb}, {kVec, 24.0 + 2.0 * eb}, {kReduce, 4.0 + eb}}, true,
              kEagerRmsNorm.backward_kernels);
    return;
  }
  k.classed(k.name(name, " fwd"), elements, {{kVec, 2.0 * eb}}, false);
  k.classed(k.name(name, " bwd"), elements, {{kVec, 4.0 * eb}}, true, 2);
}

/// A norm named `name` over `elements` elements: one pass forward; dx and the parameter gradients backward.
void time_norm(Kernels& k, const LayerWork& w, const std::string& name, double elements, bool rms) {
  if (k.by_class()) {
    time_layernorm_by_class(k, w, name, elements, rms);
    return;
  }
  if (rms && !w.opt.compiled) {  // eq. K14: eager RMSNorm, an operator a kernel
    k.pass(k.name(name, " fwd (eager)"), elements, kEagerRmsNorm.forward_bytes(w.eb), false, 0.0, kEagerRmsNorm.forward_kernels);
    k.pass(k.name(name, " bwd (eager)"), elements, kEagerRmsNorm.backward_bytes(w.eb), true, 0.0, kEagerRmsNorm.backward_kernels);
    return;
  }
  k.pass(k.name(name, " fwd"), 2.0 * elements, w.eb, false);
  k.pass(k.name(name, " bwd"), 4.0 * elements, w.eb, true, 0.0, 2);
}

/// An RMSNorm inside a layer (multi-head latent attention's two) over `elements` elements.
void time_norm_elements(Kernels& k, const LayerWork& w, const std::string& name, double elements) {
  time_norm(k, w, name, elements, true);
}

/// Layer norm or RMSNorm: one pass forward; dx and the parameter gradients backward.
void time_layernorm(Kernels& k, const LayerWork& w) { time_norm(k, w, w.l.name, w.out_e, w.l.rms); }

/// No shape of the work: the roofline of its FLOPs and of reading its input and writing its output.
void time_roofline(Kernels& k, const LayerWork& w) {
  const Layer& l = w.l;
  const Flops work = flops(l.forward_flops_per_sample * w.B);
  const Bytes traffic = bytes(2.0 * l.activation_bytes_per_sample * (w.eb / 4.0) * w.B + static_cast<double>(l.params) * w.eb);
  const bool matmul = l.kind == LayerKind::conv || l.kind == LayerKind::linear || l.kind == LayerKind::attention;
  k.roofline(k.name(l.name, " fwd"), work, traffic, matmul, false);
  k.roofline(k.name(l.name, " bwd"), work * (w.input_grad ? 2.0 : 1.0), traffic * (w.input_grad ? 2.0 : 1.0), matmul, true);
}

/// Eq. K19: how many of the operators after a batch norm its kernels take in: the ReLU (`bn_relu`), or the residual
/// addition and the ReLU after it (`bn_add_relu`); 0 where the framework fuses neither or other operators follow.
std::size_t fused_after_norm(const Layer& l, const KernelExecution& x) {
  if (l.kind != LayerKind::batchnorm) return 0;
  const auto& ops = l.ops;
  if (x.bn_add_relu && ops.size() >= 2 && ops[0].kind == LayerKind::add && ops[1].kind == LayerKind::relu) return 2;
  if (x.bn_relu && !ops.empty() && ops[0].kind == LayerKind::relu) return 1;
  return 0;
}

/// A batch norm: a statistics pass and a normalise pass (3E), backward the reductions and dx (5E), two kernels
/// each way as the fitted set counts them (Kernels::norm counts them as profiled where a measured rate times the pass).
/// Eq. K19, with the operators after it fused into those kernels: the normalise pass applies the ReLU (nothing more to
/// move) and reads the residual it adds (+E); backward reads the output for the ReLU's mask (+E) and writes the
/// residual's gradient (+E). The fused operators' own passes (ReLU 2E and 3E, addition 3E and 3E) are not run.
void time_batchnorm(Kernels& k, const LayerWork& w, std::size_t fused) {
  const bool add = fused == 2;
  const std::string suffix = fused == 0 ? "" : add ? " (+add+relu)" : " (+relu)";
  k.norm(k.name(w.l.name, " fwd" + suffix), (add ? 4.0 : 3.0) * w.out_e, w.eb, false, 2);
  k.norm(k.name(w.l.name, " bwd" + suffix), (5.0 + (fused > 0 ? 1.0 : 0.0) + (add ? 1.0 : 0.0)) * w.out_e, w.eb, true, 2);
}

void time_layer(Kernels& k, const Layer& l, bool first, int batch, const ComputeOptions& opt) {
  const double eb = activation_bytes_per_element(opt.precision);
  const double B = batch;
  const LayerWork w{l, batch, B, eb, !first && l.kind != LayerKind::embedding, elements(l.output_shape) * B, opt};
  // fp8 training converts the blocks' linear maps (attention projections, MLPs), not the output projection
  // over the vocabulary (torchtitan's and Transformer Engine's default) nor anything else.
  k.fp8_layer = l.kind == LayerKind::attention || (l.kind == LayerKind::linear && l.hidden > 0);
  switch (l.kind) {
    case LayerKind::conv:
      if (time_conv(k, w)) return;
      break;
    case LayerKind::linear:
      if (time_linear(k, w)) return;
      break;
    case LayerKind::attention:
      if (time_attention(k, w)) return;
      break;
    case LayerKind::batchnorm:
      time_batchnorm(k, w, fused_after_norm(l, opt.execution));
      return;
    case LayerKind::layernorm:
      time_layernorm(k, w);
      return;
    case LayerKind::embedding: {  // a gather; backward zero-fills the dense table gradient and scatter-adds
      const bool adds = l.input_shape.size() == l.output_shape.size();  // position/type embeddings add to activations
      k.pass(k.name(l.name, " fwd"), (adds ? 3.0 : 2.0) * w.out_e, eb, false);
      k.pass(k.name(l.name, " bwd"), 2.0 * w.out_e, eb, true, static_cast<double>(l.params) * gradient_bytes_per_element(opt), 2);
      if (adds && transformers_gpt2(w)) chain(k, k.name(l.name, ".dropout"), w.out_e, kDropout, eb);  // K24: embd_pdrop
      return;
    }
    default:
      break;
  }
  time_roofline(k, w);
}

/// Max and average pooling: their bytes (eq. K17), and the windows their kernels walk (eq. K23): each output's kh·kw
/// window elements, forward and backward.
void time_pool(Kernels& k, const Operator& o, double ei, double eo, double eb, const ComputeOptions& opt) {
  const double forward_walk = eo * o.kernel_h * o.kernel_w, backward_walk = forward_walk;
  if (o.kind == LayerKind::avgpool) {
    k.pool(k.name(o.name, " fwd"), ei + eo, eb, false, 0.0, forward_walk);
    k.pool(k.name(o.name, " bwd"), ei + eo, eb, true, 0.0, backward_walk);
    return;
  }
  // Eq. K17: read the input, write the output and, where the framework keeps one, an index per output (PyTorch
  // int64, Caffe int32); backward zero-fills dx and scatters dy through the index, or (cuDNN, no index) reads the
  // input, output and dy again to find each window's maximum and writes dx
  if (opt.pool_index_bytes > 0) {
    k.pool(k.name(o.name, " fwd"), ei + eo, eb, false, opt.pool_index_bytes * eo, forward_walk);
    k.pool(k.name(o.name, " bwd"), 2.0 * ei + eo, eb, true, opt.pool_index_bytes * eo, backward_walk);
  } else {
    k.pool(k.name(o.name, " fwd"), ei + eo, eb, false, 0.0, forward_walk);
    k.pool(k.name(o.name, " bwd"), 2.0 * ei + 2.0 * eo, eb, true, 0.0, backward_walk);
  }
}

void time_operator(Kernels& k, const Operator& o, int batch, const ComputeOptions& opt) {
  if (o.kind == LayerKind::lrn && !opt.lrn) return;  // a framework without LRN (`lrn: false`) does not run it
  const double eb = activation_bytes_per_element(opt.precision);
  const double ei = elements(o.input_shape) * batch, eo = elements(o.output_shape) * batch;
  switch (o.kind) {
    case LayerKind::relu:
    case LayerKind::gelu:
    case LayerKind::silu:
    case LayerKind::tanh:  // y = f(x): read x, write y; dx = dy·f'(x or y): read two, write one
      if (k.by_class()) {  // eq. K21: contiguous, vectorized
        k.classed(k.name(o.name, " fwd"), eo, {{kVec, 2.0 * eb}}, false);
        k.classed(k.name(o.name, " bwd"), eo, {{kVec, 3.0 * eb}}, true);
        return;
      }
      k.pass(k.name(o.name, " fwd"), 2.0 * eo, eb, false);
      k.pass(k.name(o.name, " bwd"), 3.0 * eo, eb, true);
      return;
    case LayerKind::dropout:  // and a one-byte mask written forward, read backward
      k.pass(k.name(o.name, " fwd"), 2.0 * eo, eb, false, eo);
      k.pass(k.name(o.name, " bwd"), 2.0 * eo, eb, true, eo);
      return;
    case LayerKind::maxpool:
    case LayerKind::avgpool:
      time_pool(k, o, ei, eo, eb, opt);
      return;
    case LayerKind::add:   // read two, write one; backward: the gradients of the two paths meet at the fork
      if (k.by_class()) {  // eq. K21: contiguous, vectorized
        k.classed(k.name(o.name, " fwd"), eo, {{kVec, 3.0 * eb}}, false);
        k.classed(k.name(o.name, " bwd"), eo, {{kVec, 3.0 * eb}}, true);
        return;
      }
      k.pass(k.name(o.name, " fwd"), 3.0 * eo, eb, false);
      k.pass(k.name(o.name, " bwd"), 3.0 * eo, eb, true);
      return;
    case LayerKind::concat:  // copies the branches into one tensor; backward takes views of its gradient,
      // and the fork's input, read by every branch, sums their gradients: branches − 1 additions of 3 Ein
      k.pass(k.name(o.name, " fwd"), 2.0 * eo, eb, false);
      if (o.branches > 1) k.pass(k.name(o.name, " fork bwd"), 3.0 * ei * (o.branches - 1), eb, true, 0.0, o.branches - 1);
      return;
    case LayerKind::lrn:  // Caffe's cross-channel LRN (lrn_layer.cu): forward fills the scale (read x, write
      // scale) and computes y = x·scale^−β (read two, write one); backward reads x, y, scale and dy and writes dx
      k.pass(k.name(o.name, " fwd"), 5.0 * eo, eb, false, 0.0, 2);
      k.pass(k.name(o.name, " bwd"), 5.0 * eo, eb, true);
      return;
    default:
      return;  // reshape: a view
  }
}

/// Eq. K21, the loss by kernel class: eager mixed precision's upcast (its class), its three fp32 passes each way
/// cunn_SoftMax's, the gradient's downcast vectorized; fused with the compiled step, one vectorized kernel each way.
void time_loss_by_class(Kernels& k, double e, const ComputeOptions& opt) {
  const double eb = activation_bytes_per_element(opt.precision);
  if (loss_fused(opt)) {
    k.classed(k.name("loss", " fwd"), e, {{kVec, 3.0 * eb}}, false, 2);
    k.classed(k.name("loss", " bwd"), e, {{kVec, 3.0 * eb}}, true);
    return;
  }
  const bool upcast = is_mixed(opt.precision);
  const double pass = upcast ? 4.0 : eb;  // the log-softmax's element
  k.classed(k.name("loss", upcast ? " fwd (fp32)" : " fwd"), e,
            {{kUpcast, upcast ? 4.0 + eb : 0.0}, {MemoryClass::softmax, 3.0 * pass}}, false, upcast ? 3 : 2);
  k.classed(k.name("loss", upcast ? " bwd (fp32)" : " bwd"), e,
            {{MemoryClass::softmax, 3.0 * pass}, {kVec, upcast ? 4.0 + eb : 0.0}}, true, upcast ? 2 : 1);
}

/// The loss on the last layer's output: log-softmax and its gradient (read, reduce, write).
void time_loss(Kernels& k, const Layer& last, int batch, const ComputeOptions& opt) {
  const std::vector<std::int64_t>& shape = last.ops.empty() ? last.output_shape : last.ops.back().output_shape;
  const double e = elements(shape) * batch;
  if (e <= 0) return;
  const double eb = activation_bytes_per_element(opt.precision);
  if (k.by_class()) {
    time_loss_by_class(k, e, opt);
    return;
  }
  if (is_mixed(opt.precision) && !loss_fused(opt)) {
    // Eq. K14: eager mixed precision takes the log-softmax in fp32 (autocast's fp32 list; Llama's
    // logits.float()): the upcast (eb + 4) before the three fp32 passes, the downcast (4 + eb) after backward.
    k.pass(k.name("loss", " fwd (fp32)"), e, 4.0 + eb + 3.0 * 4.0, false, 0.0, 3);
    k.pass(k.name("loss", " bwd (fp32)"), e, 3.0 * 4.0 + 4.0 + eb, true, 0.0, 2);
    return;
  }
  k.pass(k.name("loss", " fwd"), 3.0 * e, eb, false, 0.0, 2);
  k.pass(k.name("loss", " bwd"), 3.0 * e, eb, true);
}

/// The parameter tensors a layer's update walks: a convolution's or linear map's weight and its bias where it has
/// one (parameters beyond the weight), a normalisation's scale and shift (RMSNorm's scale alone); two elsewhere.
double parameter_tensors(const Layer& l) {
  const auto& in = l.input_shape;
  const auto& out = l.output_shape;
  switch (l.kind) {
    case LayerKind::conv:
      if (in.empty() || out.empty()) return 2.0;
      return l.params > in[0] / std::max(l.groups, 1) * l.kernel_h * l.kernel_w * out[0] ? 2.0 : 1.0;
    case LayerKind::linear:
      if (in.empty() || out.empty()) return 2.0;
      return l.params > in.back() * out.back() ? 2.0 : 1.0;
    case LayerKind::layernorm:
      return l.rms ? 1.0 : 2.0;
    default:
      return 2.0;
  }
}

/// The kernels a layer's update launches (a share of a multi-tensor launch counts its share).
double update_kernel_count(const Layer& l, const ComputeOptions& opt) {
  if (l.params <= 0) return 0.0;
  if (opt.update_kernels) return parameter_tensors(l);  // the framework's own update: a kernel a tensor
  // Fused: one multi-tensor kernel per layer. Foreach: each pass a multi-tensor launch over up to 48 tensors (three
  // tensor lists; PyTorch's multi_tensor_apply, depth_to_max_tensors) or 320 chunks of 65,536 elements, so a
  // layer's weight and bias take 2/48 of a launch per pass, or more where it has more elements. For-loop: each
  // pass a kernel per parameter tensor (_single_tensor_adamw walks the tensors one by one).
  const int passes = optimizer_passes(opt.optimizer);
  const OptimizerImpl impl = opt.optimizer_impl.value_or(OptimizerImpl::fused);
  double kernels = 1.0;
  switch (impl) {
    case OptimizerImpl::fused:
      kernels = 1.0;
      break;
    case OptimizerImpl::foreach:
      kernels = passes * std::max(2.0 / 48.0, static_cast<double>(l.params) / (320.0 * 65536.0));
      break;
    case OptimizerImpl::for_loop:
      kernels = parameter_tensors(l) * passes;
      break;
  }
  return kernels;
}

/// The host's dispatches of the update's operators a layer takes its share of, each charged kernel_overhead (the
/// fitted per-operator cost), among the `param_layers` layers that hold parameters. A multi-tensor operator is one
/// dispatch whatever it launches: fused, one torch._fused_adamw_ (or apex's multi_tensor_applier) over every
/// parameter; foreach, one _foreach_* operator a pass; its launches run back to back on the GPU at the bytes' rate
/// (an H200, AdamW over 2^30 fp32 parameters in 400 tensors and over 2^27 in 50: fused 9.418 and 1.183 ms, foreach
/// 25.049 and 3.188 ms, eight times the work in eight times the time less 0.05 and 0.46 ms, where 45 and 359 more
/// launches ran; tests/data/h200-pytorch/host-2026-11-28/elementwise.jsonl). For-loop: an operator a pass and tensor.
double update_dispatches(const Layer& l, const ComputeOptions& opt, double param_layers) {
  if (l.params <= 0) return 0.0;
  const int passes = optimizer_passes(opt.optimizer);
  switch (opt.optimizer_impl.value_or(OptimizerImpl::fused)) {
    case OptimizerImpl::fused:
      return 1.0 / param_layers;
    case OptimizerImpl::foreach:
      return passes / param_layers;
    case OptimizerImpl::for_loop:
      return parameter_tensors(l) * passes;
  }
  return 1.0;
}

/// A layer's share of the update: its bytes at the optimiser kernels' rate and its share of the dispatches.
Seconds update_time(const Layer& l, const GpuSpec& gpu, const ComputeOptions& opt, const KernelParams& kp, double param_layers) {
  if (l.params <= 0) return Seconds{};
  if (opt.update_kernels) {  // the framework's own kernels: its traffic at the datasheet rate, its cost a tensor
    const UpdateKernelCost& u = *opt.update_kernels;
    return bytes(static_cast<double>(l.params) * u.traffic) / gpu.memory_bandwidth + u.per_tensor * parameter_tensors(l);
  }
  const Bytes traffic = bytes(static_cast<double>(l.params) * update_bytes_per_param(opt));
  const OptimizerImpl impl = opt.optimizer_impl.value_or(OptimizerImpl::fused);
  // the optimiser kernels' own measured streaming rate where the architecture has one, else the memory-bound one; the
  // for-loop's passes are PyTorch's single-tensor element-wise kernels, the vectorized class of eq. K21
  const double measured = impl == OptimizerImpl::fused ? kp.fused_optimizer_efficiency
      : impl == OptimizerImpl::foreach                 ? kp.optimizer_pass_efficiency
                                                       : memory_class_efficiency(kp, MemoryClass::vectorized);
  const double efficiency = measured > 0.0 ? measured : kp.memory_efficiency;
  return traffic / (gpu.memory_bandwidth * efficiency) + kp.kernel_overhead * update_dispatches(l, opt, param_layers);
}

[[nodiscard]] bool executed_differently(const KernelExecution& x) noexcept {
  return x.streaming || x.cudnn_attention || x.host_issue > Seconds{};
}

/// Eq. K20: a phase takes at least its kernels × the host's cost of issuing one. Where the GPU's kernels are
/// shorter than that, it waits for the host: every layer's time in the phase (and its parts) grows by one factor.
/// Returns the floor's excess over the GPU's time (zero where it does not bind).
Seconds issue_floor(std::vector<Seconds>& phase, double kernels, Seconds issue,
                    std::initializer_list<std::vector<Seconds>*> parts) {
  const Seconds total = sum(phase), floor = issue * kernels;
  if (!(floor > total) || !(total > Seconds{})) return Seconds{};
  const double scale = floor / total;
  for (Seconds& x : phase) x = x * scale;
  for (std::vector<Seconds>* part : parts)
    for (Seconds& x : *part) x = x * scale;
  return floor - total;
}

/// Eq. K20: whether the framework's issue floor binds on `net`: wherever it sets one, unless it was measured on
/// transformers' BERT code (`model_code: transformers-bert`), whose floor binds on encoders only, networks whose
/// attention has no causal mask (an image network's or a decoder's kernels are issued in other numbers).
[[nodiscard]] bool issue_floor_binds(const Network& net, const KernelExecution& x) noexcept {
  if (!(x.host_issue > Seconds{})) return false;
  if (!x.transformers_bert) return true;
  return std::any_of(net.layers.begin(), net.layers.end(),
                     [](const Layer& l) { return l.kind == LayerKind::attention && !l.causal; });
}

/// Eq. S10, FSDP2's copies on the compute stream around a layer's collectives (torch.distributed.fsdp's
/// _fully_shard: foreach_all_gather_copy_out after each all-gather, split_with_sizes_copy of the gathered buffer
/// into the parameters, read and written at the working width; foreach_reduce_scatter_copy_in before each
/// reduce-scatter, torch._chunk_cat of the gradients into the reduce-scatter's input, read at the working width
/// and written at the reduce width), at the memory-bound rate (an H200's profile: copy-out and chunk_cat 6.1 and
/// 6.0 ms a step for 1.92 G parameters, 0.53 and 0.40 of its bandwidth). A kernel per gather unit, not per layer:
/// no launch charged. The all-gather's copy-in runs on a stream of its own and is not charged.
void shard_copies(Kernels& k, const Layer& l, const ComputeOptions& opt) {
  const Sharding& s = opt.sharding;
  if (!per_parameter_copies(s) || l.params <= 0) return;
  const double p = static_cast<double>(l.params), wb = working_bytes_per_element(opt.precision);
  // eq. S12: under fp8 all-gather the linear maps' weights are gathered, and copied out, at 1 B an element
  const double gathered = gathered_param_bytes(p, opt.fp8_all_gather ? fp8_weight_elements(l) : 0.0, opt.precision) / bytes(p);
  k.share(k.name(l.name, " fsdp2 copy-out fwd"), 2.0 * p, gathered, false);
  if (s.reshard_after_forward) k.share(k.name(l.name, " fsdp2 copy-out bwd"), 2.0 * p, gathered, true);
  k.share(k.name(l.name, " fsdp2 chunk_cat bwd"), p, wb + reduce_bytes_per_element(s, opt.precision), true,
          MemoryClass::chunk_cat);
}

/// Eq. S12, precompute_float8_dynamic_scale_for_fsdp: after the optimiser step one fused amax (torch._foreach_norm, inf)
/// reads every fp8 weight's fp32 shard, 4 B an element, at the memory-bound rate; the layer's share of it, whole here as
/// the update is (the sharded step divides the update by n). Its launch is charged once a step (estimate_layer_times);
/// the amaxes' all-reduce and the scales' few kernels over U numbers are left out.
Seconds fp8_scale_precompute(const Layer& l, const GpuSpec& gpu, const ComputeOptions& opt, const KernelParams& kp) {
  if (!opt.fp8_all_gather || opt.precision != Precision::fp8) return Seconds{};
  return bytes(4.0 * fp8_weight_elements(l)) / (gpu.memory_bandwidth * kp.memory_efficiency);
}

/// Eq. S11: FSDP's own operations a step issues per pass, over the gather units of the framework's wrap (eq. S4, S4b):
/// each unit's all-gather before its forward (`gather_ops`), and in the backward its all-gather again where the unit is
/// resharded after the forward (not a block wrap's held root) and its reduce-scatter (`reduce_ops`). They cost the host
/// the framework's host_issue each (eq. K20), as issued (not scaled by issued_per_kernel), and the GPU nothing beyond
/// eq. S10's copies and the collectives (eq. S5-S7): the rest (the casts and copy-in of the all-gather's input, the
/// gradient's copy into its shard) run on the collectives' streams or move a unit's parameters once, as S10 does not
/// charge.
UnitOps fsdp_unit_ops(const Network& net, const Sharding& s) {
  if (s.stage < 3 || (!(s.gather_ops > 0.0) && !(s.reduce_ops > 0.0))) return {};
  return unit_ops(gather_units(net, s), s);
}

/// A layer, the operators after it, and (for the last layer) the loss.
void time_all(Kernels& k, const Layer& l, bool first, bool last, int batch, const ComputeOptions& opt) {
  shard_copies(k, l, opt);
  time_layer(k, l, first, batch, opt);
  const Seconds before_ops = k.forward;
  for (std::size_t i = fused_after_norm(l, opt.execution); i < l.ops.size(); ++i) time_operator(k, l.ops[i], batch, opt);
  // eq. R1b: an MLP's down product and the residual additions after it produce no tensor the backward keeps (the
  // product keeps its input, an addition nothing)
  const bool additions = std::all_of(l.ops.begin(), l.ops.end(), [](const Operator& o) { return o.kind == LayerKind::add; });
  if (k.trailing_product > Seconds{} && !l.ops.empty() && additions && !last)
    k.forward_unsaved = k.trailing_product + (k.forward - before_ops);
  if (last) time_loss(k, l, batch, opt);
}
}  // namespace

KernelParams executed_params(const KernelParams& kp, const KernelExecution& x) {
  KernelParams e = kp;
  if (x.streaming) e.memory_efficiency = kp.copy_efficiency;
  if (x.host_issue > Seconds{} && x.launch_gap) e.kernel_overhead = *x.launch_gap;
  if (x.cudnn_attention && kp.cudnn_forward_efficiency > 0.0) e.flash_forward_efficiency = kp.cudnn_forward_efficiency;
  if (x.cudnn_attention && kp.cudnn_backward_efficiency > 0.0) e.flash_backward_efficiency = kp.cudnn_backward_efficiency;
  return e;
}

Seconds LayerTimes::total_forward() const noexcept { return sum(forward); }
Seconds LayerTimes::total_backward() const noexcept { return sum(backward); }
Seconds LayerTimes::total_update() const noexcept { return sum(update); }

const KernelParams& ComputeOptions::kernel(const GpuSpec& gpu) const {
  if (kernel_params) return kernel_params->for_architecture(gpu.architecture);
  static const std::shared_ptr<const KernelParamSet> shipped = shipped_kernel_params();  // built in, no file read
  return shipped->for_architecture(gpu.architecture);
}

double activation_bytes_per_element(Precision p) noexcept { return is_mixed(p) ? 2.0 : 4.0; }
double gradient_bytes_per_element(const ComputeOptions& opt) noexcept {
  return opt.fp32_gradients ? 4.0 : gradient_bytes_per_element(opt.precision);
}

double optimizer_gradient_bytes_per_element(const ComputeOptions& opt) noexcept {
  // eq. K27a: a sharded step's optimiser reads its gradient shard as the reduce left it (fp32 under an fp32 reduce or
  // fp32 shards, eq. M5); a replicated one the gradient the backward made
  return opt.sharding.sharded() ? gradient_shard_bytes_per_element(opt.sharding, opt.precision) : gradient_bytes_per_element(opt);
}

bool optimizer_writes_half_copy(const ComputeOptions& opt) noexcept {
  // eq. K27b: apex O2 and DeepSpeed keep a half working copy the step writes; plain autocast (fp32 parameters) and FSDP's
  // fp32 shards (eq. M5: param_dtype casts each unit as it is gathered) keep none
  if (!is_mixed(opt.precision) || opt.fp32_gradients) return false;
  return !(opt.sharding.sharded() && opt.sharding.held_in_fp32());
}

Sharding layer_times_sharding(const ComputeOptions& opt) noexcept {
  const Sharding& s = opt.sharding;
  Sharding read;  // what the kernel model does not read stays at its default
  if (!s.sharded()) return read;
  if (is_mixed(opt.precision)) {  // eq. K27a-b; in fp32 and TF32 the optimiser reads what a replicated step's does
    read.stage = 1;
    read.fp32_shards = s.held_in_fp32();
    // the reduce's width: the gradient shard's where the shards are not fp32 (eq. K27a), eq. S10's chunk_cat's
    if (!s.held_in_fp32() || per_parameter_copies(s)) read.reduce_fp32 = s.reduce_fp32;
  }
  if (s.stage < 3) return read;
  read.stage = 3;
  read.per_parameter = s.per_parameter;            // eq. S10 (per_parameter_copies)
  if (s.gather_ops > 0.0 || s.reduce_ops > 0.0) {  // eq. S11 (fsdp_unit_ops)
    read.wrap = s.wrap;
    read.unit_params = s.unit_params;
    read.gather_ops = s.gather_ops;
    read.reduce_ops = s.reduce_ops;
    if (opt.execution.host_issue > Seconds{}) read.unit_op_issue = s.unit_op_issue;  // eq. K20's floor only
  }
  if (s.per_parameter || s.gather_ops > 0.0) read.reshard_after_forward = s.reshard_after_forward;
  return read;
}

double update_bytes_per_param(const ComputeOptions& opt) noexcept {
  const double g = optimizer_gradient_bytes_per_element(opt);            // eq. K27a
  const double half_copy = optimizer_writes_half_copy(opt) ? 2.0 : 0.0;  // eq. K27b
  if (opt.optimizer_impl.value_or(OptimizerImpl::fused) == OptimizerImpl::fused || opt.optimizer == Optimizer::lamb) {
    const double state = 8.0 * optimizer_state_words(opt.optimizer);   // read + write each fp32 state word
    const double lamb = opt.optimizer == Optimizer::lamb ? 8.0 : 0.0;  // trust ratio: read weight and update again
    // read the fp32 weight (the master in mixed precision) and the gradient, write the weight and any half copy
    return 4.0 + g + 4.0 + half_copy + state + lamb;
  }
  // torch.optim's passes (_multi_tensor_sgd/_adam/_adamw; _single_tensor_* make the same ones a tensor at a
  // time) over fp32 weights and state, each reading its operands and writing its result; g the gradient's bytes.
  double passes = 0.0;
  switch (opt.optimizer) {
    case Optimizer::sgd:
      passes = 8.0 + g;
      break;                   // w += -lr·g
    case Optimizer::momentum:  // buf ·= μ; buf += g; w += -lr·buf
      passes = 8.0 + (8.0 + g) + 12.0;
      break;
    // m.lerp_(g) 8+g; v ·= β2 8; v.addcmul_(g, g) 8+g (one tensor twice: read once, as an H100's profile moved
    // it); sqrt(v) 8; ÷ 8; + ε 8; w.addcdiv_(m, d) 16; AdamW first its decoupled decay, w ·= 1 − lr·λ: 8
    case Optimizer::adam:
    case Optimizer::adamw:
      passes = (8.0 + g) + 8.0 + (8.0 + g) + 8.0 + 8.0 + 8.0 + 16.0 + (opt.optimizer == Optimizer::adamw ? 8.0 : 0.0);
      break;
    case Optimizer::lamb:
      break;  // above
  }
  return passes + half_copy;
}

std::vector<KernelTiming> layer_kernels(const Layer& layer, bool first, bool last, const GpuSpec& gpu, int batch,
                                        const ComputeOptions& opt) {
  std::vector<KernelTiming> out;
  const KernelParams kp = executed_params(opt.kernel(gpu), opt.execution);
  Kernels k(gpu, opt, kp, true, &out);
  time_all(k, layer, first, last, batch, opt);
  return out;
}

LayerTimes estimate_layer_times(const Network& net, const GpuSpec& gpu, int batch, const ComputeOptions& opt) {
  if (batch < 1) throw std::invalid_argument("estimate_layer_times: the batch must be at least 1");
  LayerTimes t;
  const std::size_t L = net.layers.size();
  t.forward.resize(L);
  t.backward.resize(L);
  t.update.resize(L);
  t.forward_gemm.resize(L);
  t.forward_attention.resize(L);
  t.forward_copies.resize(L);
  t.forward_unsaved.resize(L);
  t.backward_attention.resize(L);
  t.input_wgrad.resize(L);
  const KernelParams& fitted = opt.kernel(gpu);
  const bool executed = executed_differently(opt.execution);
  const KernelParams adjusted = executed ? executed_params(fitted, opt.execution) : KernelParams{};
  const KernelParams& kp = executed ? adjusted : fitted;
  GemmMemo memo;
  double kernels_forward = 0, kernels_backward = 0, kernels_update = 0;
  const auto param_layers = static_cast<double>(std::max<std::ptrdiff_t>(
      1, std::count_if(net.layers.begin(), net.layers.end(), [](const Layer& l) { return l.params > 0; })));
  for (std::size_t i = 0; i < L; ++i) {
    Kernels k(gpu, opt, kp, false, nullptr, &memo);
    time_all(k, net.layers[i], i == 0, i + 1 == L, batch, opt);
    t.forward[i] = k.forward;
    t.backward[i] = k.backward;
    t.forward_gemm[i] = k.forward_gemm;
    t.forward_attention[i] = k.forward_attention;
    t.forward_copies[i] = k.forward_copies;
    t.forward_unsaved[i] = k.forward_unsaved;
    t.backward_attention[i] = k.backward_attention;
    t.input_wgrad[i] = k.input_wgrad;
    t.update[i] = update_time(net.layers[i], gpu, opt, kp, param_layers) + fp8_scale_precompute(net.layers[i], gpu, opt, kp);
    kernels_forward += k.forward_kernels;
    kernels_backward += k.backward_kernels;
    kernels_update += update_kernel_count(net.layers[i], opt);
  }
  const UnitOps fsdp = fsdp_unit_ops(net, opt.sharding);  // eq. S11
  t.forward_kernels = kernels_forward + fsdp.forward;
  t.backward_kernels = kernels_backward + fsdp.backward;
  if (opt.fp8_all_gather && opt.precision == Precision::fp8 &&
      std::any_of(net.layers.begin(), net.layers.end(), [](const Layer& l) { return fp8_weight_elements(l) > 0.0; })) {
    kernels_update += 1.0;  // eq. S12: precompute's one amax kernel a step over every shard
    const auto at = std::find_if(t.update.begin(), t.update.end(), [](Seconds u) { return u > Seconds{}; });
    if (at != t.update.end()) *at += kp.kernel_overhead;
  }
  t.update_kernels = kernels_update;
  if (issue_floor_binds(net, opt.execution)) {  // eq. K20, with FSDP's own operations (eq. S11) as issued
    const Seconds issue = opt.execution.host_issue;
    const double code = opt.execution.issued_per_kernel;
    const Seconds op = opt.sharding.unit_op_issue > Seconds{} ? opt.sharding.unit_op_issue : issue;
    const double op_share = op / issue;  // an FSDP operation in kernels' host time
    t.forward_floor = issue_floor(t.forward, kernels_forward * code + fsdp.forward * op_share, issue,
                                  {&t.forward_gemm, &t.forward_attention, &t.forward_copies, &t.forward_unsaved});
    t.backward_floor = issue_floor(t.backward, kernels_backward * code + fsdp.backward * op_share, issue,
                                   {&t.backward_attention, &t.input_wgrad});
    t.update_floor = issue_floor(t.update, kernels_update, issue, {});
  }
  return t;
}

LayerTimes spread_phase_totals(const LayerTimes& modelled, Seconds forward, Seconds backward, Seconds update) {
  auto spread = [](const std::vector<Seconds>& shape, Seconds total) {
    std::vector<Seconds> out(shape.size());
    const Seconds s = sum(shape);
    for (std::size_t i = 0; i < shape.size(); ++i)
      out[i] = s > Seconds{} ? total * (shape[i] / s) : total / static_cast<double>(shape.size());
    return out;
  };
  LayerTimes t{
      spread(modelled.forward, forward), spread(modelled.backward, backward), spread(modelled.update, update), {}, {}, {}, {}};
  // the recompute modes' parts of each layer's forward keep their share of it (eq. R1-R3)
  const Seconds s = sum(modelled.forward);
  const double scale = s > Seconds{} ? forward / s : 0.0;
  for (const auto& [part, out] :
       {std::pair{&modelled.forward_gemm, &t.forward_gemm}, std::pair{&modelled.forward_attention, &t.forward_attention},
        std::pair{&modelled.forward_copies, &t.forward_copies}, std::pair{&modelled.forward_unsaved, &t.forward_unsaved}})
    for (const Seconds x : *part) out->push_back(x * scale);
  const Seconds sb = sum(modelled.backward);
  for (const auto& [part, out] :
       {std::pair{&modelled.backward_attention, &t.backward_attention}, std::pair{&modelled.input_wgrad, &t.input_wgrad}})
    for (const Seconds x : *part) out->push_back(sb > Seconds{} ? x * (backward / sb) : x);
  return t;
}

std::string_view to_string(Optimizer o) noexcept {
  switch (o) {
    case Optimizer::sgd:
      return "sgd";
    case Optimizer::momentum:
      return "momentum";
    case Optimizer::adam:
      return "adam";
    case Optimizer::adamw:
      return "adamw";
    case Optimizer::lamb:
      return "lamb";
  }
  return "sgd";
}

std::string_view to_string(Recompute r) noexcept {
  switch (r) {
    case Recompute::none:
      return "none";
    case Recompute::full:
      return "full";
    case Recompute::selective:
      return "selective";
    case Recompute::op:
      return "op";
  }
  return "none";
}

Recompute recompute_from_string(std::string_view name) {
  for (Recompute r : {Recompute::none, Recompute::full, Recompute::selective, Recompute::op})
    if (name == to_string(r)) return r;
  throw std::invalid_argument("unknown recompute mode '" + std::string(name) + "' (expected " + std::string(kRecomputeNames) +
                              ")");
}

std::string_view to_string(AttentionKernel a) noexcept {
  switch (a) {
    case AttentionKernel::eager:
      return "eager";
    case AttentionKernel::flash:
      return "flash";
    case AttentionKernel::memory_efficient:
      return "memory_efficient";
    case AttentionKernel::sdpa:
      return "sdpa";
  }
  return "eager";
}

AttentionKernel attention_kernel_from_string(std::string_view name) {
  for (AttentionKernel a :
       {AttentionKernel::eager, AttentionKernel::flash, AttentionKernel::memory_efficient, AttentionKernel::sdpa})
    if (name == to_string(a)) return a;
  throw std::invalid_argument("unknown attention kernel '" + std::string(name) +
                              "' (expected eager, flash, memory_efficient or sdpa)");
}

bool flash_attention_supported(const GpuSpec& gpu, Precision p) noexcept {
  return gpu.sm_version >= 80 && (p == Precision::fp16 || p == Precision::bf16 || p == Precision::fp8);
}

AttentionKernel effective_attention(AttentionKernel wanted, const GpuSpec& gpu, Precision p) noexcept {
  const bool flash = flash_attention_supported(gpu, p);
  switch (wanted) {
    case AttentionKernel::flash:
      return flash ? AttentionKernel::flash : AttentionKernel::eager;
    case AttentionKernel::sdpa:
      return flash ? AttentionKernel::flash : AttentionKernel::memory_efficient;
    default:
      return wanted;
  }
}

std::string_view to_string(Fp8Scaling s) noexcept {
  return s == Fp8Scaling::rowwise ? "rowwise" : s == Fp8Scaling::mxfp8 ? "mxfp8" : "tensorwise";
}

Fp8Scaling fp8_scaling_from_string(std::string_view name) {
  for (auto s : {Fp8Scaling::tensorwise, Fp8Scaling::rowwise, Fp8Scaling::mxfp8})
    if (to_string(s) == name) return s;
  throw std::invalid_argument("unknown fp8 scaling '" + std::string(name) + "' (expected " + std::string(kFp8ScalingNames) + ")");
}

std::string_view precision_label(Precision p, Fp8Scaling s) noexcept {
  if (p != Precision::fp8) return to_string(p);
  return s == Fp8Scaling::rowwise ? "fp8-rowwise" : s == Fp8Scaling::mxfp8 ? "fp8-mxfp8" : "fp8";
}

bool supports_fp8_scaling(const GpuSpec& gpu, Fp8Scaling s) noexcept {
  return s != Fp8Scaling::mxfp8 || gpu.architecture == "blackwell";  // eq. K15c: block-scaled MMA is sm_100's
}

std::string missing_fp8_scaling(const GpuSpec& gpu, Fp8Scaling s, std::string_view cluster) {
  const std::string where = cluster.empty() ? gpu.name : fmt::format("{} of cluster '{}'", gpu.name, cluster);
  return fmt::format("the {} ({}) has no {} scaling (it needs Blackwell's block-scaled tensor cores)", where,
                     gpu.architecture.empty() ? "architecture unknown" : gpu.architecture, to_string(s));
}

Optimizer optimizer_from_string(std::string_view name) {
  for (auto o : {Optimizer::sgd, Optimizer::momentum, Optimizer::adam, Optimizer::adamw, Optimizer::lamb})
    if (to_string(o) == name) return o;
  throw std::invalid_argument("unknown optimizer '" + std::string(name) + "' (expected " + std::string(kOptimizerNames) + ")");
}

Optimizer default_optimizer(const Network& net) noexcept {
  return net.input_kind == "tokens" ? Optimizer::adamw : Optimizer::momentum;
}

int optimizer_passes(Optimizer o) noexcept {
  switch (o) {
    case Optimizer::sgd:
      return 1;
    case Optimizer::momentum:
      return 3;
    case Optimizer::adam:
      return 7;
    case Optimizer::adamw:
      return 8;
    case Optimizer::lamb:
      return 8;
  }
  return 1;
}

std::string_view to_string(OptimizerImpl o) noexcept {
  switch (o) {
    case OptimizerImpl::fused:
      return "fused";
    case OptimizerImpl::foreach:
      return "foreach";
    case OptimizerImpl::for_loop:
      return "for_loop";
  }
  return "fused";
}

OptimizerImpl optimizer_impl_from_string(std::string_view name) {
  for (auto o : {OptimizerImpl::fused, OptimizerImpl::foreach, OptimizerImpl::for_loop})
    if (to_string(o) == name) return o;
  throw std::invalid_argument("unknown optimizer implementation '" + std::string(name) + "' (expected " +
                              std::string(kOptimizerImplNames) + ")");
}

int optimizer_state_words(Optimizer o) noexcept {
  switch (o) {
    case Optimizer::sgd:
      return 0;
    case Optimizer::momentum:
      return 1;
    default:
      return 2;
  }
}

}  // namespace dlscale
