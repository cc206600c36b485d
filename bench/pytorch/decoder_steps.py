# Real single-GPU training steps of decoder language models, for checking dlscale's LLM step (issue 33) against
# them (tests/data/h200-pytorch/README.md, "Decoder steps"). The model is torchtitan's Llama as its code writes it
# (torchtitan/models/llama/model.py, 2024): RMSNorm in fp32 as three operators, rotary embeddings through
# complex fp32, grouped-query attention with repeat_kv, F.scaled_dot_product_attention (causal, the flash
# backend unless a row says cudnn), a SwiGLU MLP, an untied output head and the cross-entropy of fp32 logits.
# Two ways of running it:
#   fsdp:   torchtitan's: fully_shard on every block and on the root, MixedPrecisionPolicy(param_dtype=bf16,
#           reduce_dtype=fp32), fp32 master weights, AdamW (fused unless the row says foreach). One process
#           (world size 1): the all-gathers and reduce-scatters are NCCL copies, so the step is the compute alone.
#   single: a plain module with fp32 weights under bf16 autocast, AdamW foreach (torch.optim's default).
# ac=full recomputes each block's forward in the backward (torch.utils.checkpoint, non-reentrant, as
# torchtitan's checkpoint_wrapper); ac=op is torchtitan's per-op selective checkpointing (selective_ac_option
# = "op": the same checkpoint with a policy that saves the output of every odd-numbered mm of the block and of
# SDPA, and recomputes the rest; eq. R3; recalled from torchtitan's parallelize_llama.py, not read here);
# fp8 = torchao float8's tensor-wise dynamic scaling (e4m3 forward, e5m2 gradients) written out here with
# torch._scaled_mm for the blocks' linear maps (the output head stays bf16), eager; compile = torch.compile of each
# block and of the loss, as torchtitan; compile="blocks" compiles the blocks only and leaves the loss eager, as
# torchtitan did at the end of 2024 (models/frameworks/torchtitan-2024.yaml).
# Synthetic tokens already on the GPU. 3 warm-up steps, then 3 windows of n steps (n so that a window lasts
# about 0.4 s) timed with CUDA events; ms_per_iter is the median window. Memory: the allocator's peaks over the
# timed steps. Also times the decoder's GEMM shapes in bf16 and fp8 (torch.mm against torch._scaled_mm).
# Usage: OUT=DIR BUDGET=SECONDS python3 bench/pytorch/decoder_steps.py   (appends to DIR/decoder.jsonl)
import gc, json, os, time
import torch, torch.nn as nn, torch.nn.functional as F
import torch.utils.checkpoint as ckpt

OUT = os.environ.get("OUT", ".")
BUDGET = float(os.environ.get("BUDGET", "300"))
T0 = time.time()
res = open(os.path.join(OUT, "decoder.jsonl"), "a")
dev = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
E4 = getattr(torch, "float8_e4m3fn", None)
E5 = getattr(torch, "float8_e5m2", None)

def emit(rec):
    print(json.dumps(rec), flush=True); res.write(json.dumps(rec) + "\n"); res.flush()

# Shapes: (layers, hidden, heads, kv_heads, ffn, vocab). The 8B/70B/7B rows keep a few of the full model's blocks.
SHAPES = {
    "llama3-8b": (32, 4096, 32, 8, 14336, 128256), "llama3-70b": (80, 8192, 64, 8, 28672, 128256),
    "llama2-7b": (32, 4096, 32, 32, 11008, 32000), "llama-1.3b": (24, 2048, 16, 16, 5632, 32000),
    "llama-125m": (12, 768, 12, 12, 2048, 32000), "tiny": (2, 64, 4, 2, 128, 256),
}

class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__(); self.eps = eps; self.weight = nn.Parameter(torch.ones(dim))
    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
    def forward(self, x):
        return self._norm(x.float()).type_as(x) * self.weight

def precompute_freqs_cis(dim, end, theta=500000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    freqs = torch.outer(torch.arange(end, device=freqs.device).float(), freqs)
    return torch.polar(torch.ones_like(freqs), freqs)

def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    fc = freqs_cis.view(1, xq_.shape[1], 1, xq_.shape[-1])
    return torch.view_as_real(xq_ * fc).flatten(3).type_as(xq), torch.view_as_real(xk_ * fc).flatten(3).type_as(xk)

def repeat_kv(x, n_rep):
    bs, slen, n_kv, hd = x.shape
    if n_rep == 1: return x
    return x[:, :, :, None, :].expand(bs, slen, n_kv, n_rep, hd).reshape(bs, slen, n_kv * n_rep, hd)

def to_fp8(t, dtype):
    """torchao's tensor-wise dynamic scaling: amax, scale, then the saturated cast of the scaled tensor."""
    amax = t.abs().max().float().clamp(min=1e-12)
    fmax = torch.finfo(dtype).max
    scale = fmax / amax
    return (t.float() * scale).clamp(-fmax, fmax).to(dtype), scale.reciprocal()

class Fp8Matmul(torch.autograd.Function):
    """y = x w^T with every GEMM (forward, grad input, grad weight) in fp8 through torch._scaled_mm."""
    @staticmethod
    def forward(ctx, x, w):
        x2 = x.reshape(-1, x.shape[-1])
        xf, xs = to_fp8(x2, E4); wf, ws = to_fp8(w, E4)
        out = torch._scaled_mm(xf, wf.t(), scale_a=xs, scale_b=ws, out_dtype=torch.bfloat16)
        ctx.save_for_backward(xf, xs, wf, ws); ctx.shape, ctx.dtypes = x.shape, (x.dtype, w.dtype)
        return out.view(*x.shape[:-1], w.shape[0]).to(x.dtype)
    @staticmethod
    def backward(ctx, go):
        xf, xs, wf, ws = ctx.saved_tensors
        gf, gs = to_fp8(go.reshape(-1, go.shape[-1]), E5)
        gx = torch._scaled_mm(gf, wf.t().contiguous().t(), scale_a=gs, scale_b=ws, out_dtype=torch.bfloat16)
        gw = torch._scaled_mm(gf.t().contiguous(), xf.t().contiguous().t(), scale_a=gs, scale_b=xs,
                              out_dtype=torch.bfloat16)
        return gx.view(ctx.shape).to(ctx.dtypes[0]), gw.to(ctx.dtypes[1])

def to_fp8_axis(t, dtype, dim):
    """torchao's axis-wise ("rowwise") dynamic scaling: one scale per row (dim -1) or per column (dim 0)."""
    amax = t.abs().amax(dim=dim, keepdim=True).float().clamp(min=1e-12)
    fmax = torch.finfo(dtype).max
    scale = fmax / amax
    return (t.float() * scale).clamp(-fmax, fmax).to(dtype), scale.reciprocal().contiguous()

class Fp8RowMatmul(torch.autograd.Function):
    """y = x w^T with torchao's rowwise recipe (float8 ROWWISE, recalled: e4m3 for every operand, each scaled along
    its GEMM's reduction dimension): the backward casts the saved bf16 x and w again along the other axis."""
    @staticmethod
    def forward(ctx, x, w):
        x2 = x.reshape(-1, x.shape[-1])
        xf, xs = to_fp8_axis(x2, E4, -1); wf, ws = to_fp8_axis(w, E4, -1)          # (M,1), (N,1)
        out = torch._scaled_mm(xf, wf.t(), scale_a=xs, scale_b=ws.t().contiguous(), out_dtype=torch.bfloat16)
        ctx.save_for_backward(x2, w); ctx.shape, ctx.dtypes = x.shape, (x.dtype, w.dtype)
        return out.view(*x.shape[:-1], w.shape[0]).to(x.dtype)
    @staticmethod
    def backward(ctx, go):
        x2, w = ctx.saved_tensors
        g2 = go.reshape(-1, go.shape[-1])
        gf, gs = to_fp8_axis(g2, E4, -1); wcf, wcs = to_fp8_axis(w, E4, 0)          # (M,1), (1,K)
        gx = torch._scaled_mm(gf, wcf.t().contiguous().t(), scale_a=gs, scale_b=wcs, out_dtype=torch.bfloat16)
        gtf, gts = to_fp8_axis(g2, E4, 0); xcf, xcs = to_fp8_axis(x2, E4, 0)        # (1,N), (1,K)
        gw = torch._scaled_mm(gtf.t().contiguous(), xcf.t().contiguous().t(), scale_a=gts.t().contiguous(),
                              scale_b=xcs, out_dtype=torch.bfloat16)
        return gx.view(ctx.shape).to(ctx.dtypes[0]), gw.to(ctx.dtypes[1])

class Linear(nn.Linear):
    fp8 = False  # False, "tensor" or "row"
    def forward(self, x):
        if self.fp8 == "row": return Fp8RowMatmul.apply(x, self.weight)
        return Fp8Matmul.apply(x, self.weight) if self.fp8 else F.linear(x, self.weight)

class Attention(nn.Module):
    def __init__(self, dim, heads, kv):
        super().__init__()
        self.h, self.kv, self.hd = heads, kv, dim // heads
        self.wq = Linear(dim, heads * self.hd, bias=False); self.wk = Linear(dim, kv * self.hd, bias=False)
        self.wv = Linear(dim, kv * self.hd, bias=False); self.wo = Linear(heads * self.hd, dim, bias=False)
    def forward(self, x, freqs_cis):
        bs, seqlen, _ = x.shape
        xq = self.wq(x).view(bs, seqlen, self.h, self.hd)
        xk = self.wk(x).view(bs, seqlen, self.kv, self.hd)
        xv = self.wv(x).view(bs, seqlen, self.kv, self.hd)
        xq, xk = apply_rotary_emb(xq, xk, freqs_cis)
        keys, values = repeat_kv(xk, self.h // self.kv), repeat_kv(xv, self.h // self.kv)
        out = F.scaled_dot_product_attention(xq.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2),
                                             is_causal=True)
        return self.wo(out.transpose(1, 2).contiguous().view(bs, seqlen, -1))

class FeedForward(nn.Module):
    def __init__(self, dim, ffn):
        super().__init__()
        self.w1 = Linear(dim, ffn, bias=False); self.w2 = Linear(ffn, dim, bias=False); self.w3 = Linear(dim, ffn, bias=False)
    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))

# torchtitan's per-op SAC policy (recalled): MUST_SAVE for the ops of this list, except every second mm of the
# block, counted separately in the forward and in the recompute; PREFER_RECOMPUTE for every other op.
_SAC_SAVE = {torch.ops.aten.mm.default, torch.ops.aten._scaled_dot_product_efficient_attention.default,
             torch.ops.aten._scaled_dot_product_flash_attention.default}
if hasattr(torch.ops.aten, "_scaled_dot_product_cudnn_attention"):
    _SAC_SAVE.add(torch.ops.aten._scaled_dot_product_cudnn_attention.default)

def op_sac_context():
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts
    count = {"forward": 0, "recompute": 0}
    def policy(ctx, func, *args, **kwargs):
        mode = "recompute" if ctx.is_recompute else "forward"
        if func == torch.ops.aten.mm.default:
            count[mode] += 1
        save = func in _SAC_SAVE and not (func == torch.ops.aten.mm.default and count[mode] % 2 == 0)
        return CheckpointPolicy.MUST_SAVE if save else CheckpointPolicy.PREFER_RECOMPUTE
    return create_selective_checkpoint_contexts(policy)

class Block(nn.Module):
    def __init__(self, dim, heads, kv, ffn, ac):
        super().__init__()
        self.attention = Attention(dim, heads, kv); self.feed_forward = FeedForward(dim, ffn)
        self.attention_norm = RMSNorm(dim); self.ffn_norm = RMSNorm(dim); self.ac = ac
    def _forward(self, x, freqs_cis):
        h = x + self.attention(self.attention_norm(x), freqs_cis)
        return h + self.feed_forward(self.ffn_norm(h))
    def forward(self, x, freqs_cis):
        if self.ac == "op":
            return ckpt.checkpoint(self._forward, x, freqs_cis, use_reentrant=False, preserve_rng_state=False,
                                   context_fn=op_sac_context)
        if self.ac == "full":
            return ckpt.checkpoint(self._forward, x, freqs_cis, use_reentrant=False, preserve_rng_state=False)
        return self._forward(x, freqs_cis)

class Transformer(nn.Module):
    def __init__(self, layers, dim, heads, kv, ffn, vocab, seq, ac):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab, dim)
        self.register_buffer("freqs_cis", precompute_freqs_cis(dim // heads, seq), persistent=False)
        self.layers = nn.ModuleList(Block(dim, heads, kv, ffn, ac) for _ in range(layers))
        self.norm = RMSNorm(dim); self.output = nn.Linear(dim, vocab, bias=False)
    def forward(self, tokens):
        h = self.tok_embeddings(tokens)
        for layer in self.layers:
            h = layer(h, self.freqs_cis)
        return self.output(self.norm(h))

def loss_fn(pred, labels):
    return F.cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0, 1))

_pg = None
def process_group():
    global _pg
    if _pg is None:
        import torch.distributed as dist
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29511")
        dist.init_process_group("nccl" if dev.type == "cuda" else "gloo", rank=0, world_size=1)
        _pg = dist
    return _pg

def elapsed_ms(fn, n):
    if dev.type != "cuda":
        t = time.perf_counter(); [fn() for _ in range(n)]; return (time.perf_counter() - t) * 1e3 / n
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); [fn() for _ in range(n)]; e.record(); torch.cuda.synchronize()
    return s.elapsed_time(e) / n

def run(shape, layers, seq, batch, mode="fsdp", ac="none", precision="bf16", sdpa="flash", optimizer=None,
        compile=False, need=0, profile=None):
    left = BUDGET - (time.time() - T0)
    rec = dict(shape=shape, layers=layers, seq=seq, batch=batch, mode=mode, ac=ac, precision=precision, sdpa=sdpa,
               optimizer=optimizer or ("fused" if mode == "fsdp" else "foreach"), compile=bool(compile))
    if compile == "blocks": rec["compile_loss"] = False  # the blocks compiled, the loss eager
    if left < need + 10:
        rec.update(error=f"skipped: {left:.0f} s of the budget left"); emit(rec); return
    _, dim, heads, kv, ffn, vocab = SHAPES[shape]
    rec.update(hidden=dim, heads=heads, kv_heads=kv, ffn=ffn, vocab=vocab)
    net = opt = None
    t_start = time.time()
    try:
        gc.collect()
        if dev.type == "cuda":
            torch.cuda.empty_cache(); torch.cuda.reset_peak_memory_stats()
            rec["allocated_before_bytes"] = torch.cuda.memory_allocated()  # 0 unless an earlier run leaked
        with torch.device(dev):
            net = Transformer(layers, dim, heads, kv, ffn, vocab, seq, ac)
        Linear.fp8 = {"fp8": "tensor", "fp8-rowwise": "row"}.get(precision, False)
        if compile:
            for b in net.layers:
                b.compile(fullgraph=True)
        loss = torch.compile(loss_fn) if compile and compile != "blocks" else loss_fn
        if mode == "fsdp":
            process_group()
            if dev.type == "cuda": torch.cuda.set_device(0)
            try:
                from torch.distributed.fsdp import fully_shard, MixedPrecisionPolicy
            except ImportError:
                from torch.distributed._composable.fsdp import fully_shard, MixedPrecisionPolicy
            mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
            for i, b in enumerate(net.layers):
                fully_shard(b, mp_policy=mp, reshard_after_forward=i < len(net.layers) - 1)
            fully_shard(net, mp_policy=mp)
        kind = rec["optimizer"]
        opt = torch.optim.AdamW(net.parameters(), lr=1e-5, fused=kind == "fused", foreach=kind == "foreach")
        tokens = torch.randint(0, vocab, (batch, seq), device=dev)
        labels = torch.randint(0, vocab, (batch, seq), device=dev)
        backend = {"flash": "FLASH_ATTENTION", "cudnn": "CUDNN_ATTENTION", "math": "MATH"}[sdpa]
        from torch.nn.attention import sdpa_kernel, SDPBackend
        auto = mode == "single" and dev.type == "cuda"
        def step():
            opt.zero_grad(set_to_none=True)
            # the backward inside the backend's scope too: a checkpointed block recomputes its attention there
            with sdpa_kernel(getattr(SDPBackend, backend)):
                with torch.autocast(dev.type, torch.bfloat16, enabled=auto):
                    out = loss(net(tokens), labels)
                out.backward()
            opt.step()
        for _ in range(3): step()
        if dev.type == "cuda":
            torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats()
        one = elapsed_ms(step, 1)
        n = max(2, min(20, int(400 / max(one, 1e-3))))
        wins = sorted(elapsed_ms(step, n) for _ in range(3))
        rec.update(ms_per_iter=round(wins[1], 3), windows_ms=[round(w, 3) for w in wins], steps_per_window=n,
                   tokens_per_s=round(batch * seq * 1000 / wins[1], 1),
                   params=sum(p.numel() for p in net.parameters()), seconds=round(time.time() - t_start, 1))
        if dev.type == "cuda":
            rec.update(peak_allocated_bytes=torch.cuda.max_memory_allocated(),
                       peak_reserved_bytes=torch.cuda.max_memory_reserved())
        if profile:  # two steps under torch.profiler: the GPU time of every kernel, summed over the two
            from torch.profiler import profile as prof, ProfilerActivity
            with prof(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
                step(); step(); torch.cuda.synchronize()
            with open(os.path.join(OUT, profile), "w") as f:
                f.write(json.dumps(rec) + "\n")
                f.write(p.key_averages().table(sort_by="self_cuda_time_total", row_limit=60, max_name_column_width=90))
    except Exception as ex:  # OOM and the like: recorded, the rest go on
        rec.update(error=f"{type(ex).__name__}: {str(ex)[:300]}", seconds=round(time.time() - t_start, 1))
    emit(rec)
    del net, opt
    Linear.fp8 = False
    gc.collect()  # FSDP's module state holds reference cycles: without this, each run's tensors outlive it
    if dev.type == "cuda":
        torch.cuda.empty_cache()

def gemms_rowwise(tokens=8192):
    """bf16 torch.mm against fp8 torch._scaled_mm with tensor-wise and with row-wise scales (random scales)."""
    for n, k in ((4096, 4096), (1024, 4096), (14336, 4096), (4096, 14336), (8192, 8192), (28672, 8192),
                 (8192, 28672), (2048, 2048), (5632, 2048), (768, 768), (2048, 768)):
        rec = dict(gemm=True, m=tokens, n=n, k=k)
        try:
            a = torch.randn(tokens, k, device=dev, dtype=torch.bfloat16); b = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
            torch.mm(a, b.t()); ms = min(elapsed_ms(lambda: torch.mm(a, b.t()), 10) for _ in range(3))
            af, bf = a.to(E4), b.to(E4); one = torch.ones((), device=dev)
            f = lambda: torch._scaled_mm(af, bf.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
            f(); ms8 = min(elapsed_ms(f, 10) for _ in range(3))
            sa = torch.rand(tokens, 1, device=dev) + 0.5; sb = torch.rand(1, n, device=dev) + 0.5
            r = lambda: torch._scaled_mm(af, bf.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
            r(); msr = min(elapsed_ms(r, 10) for _ in range(3))
            fl = 2 * tokens * n * k
            rec.update(bf16_ms=round(ms, 4), bf16_tflops=round(fl / ms / 1e9, 1), fp8_ms=round(ms8, 4),
                       fp8_tflops=round(fl / ms8 / 1e9, 1), fp8_rowwise_ms=round(msr, 4),
                       fp8_rowwise_tflops=round(fl / msr / 1e9, 1))
        except Exception as ex:
            rec.update(error=f"{type(ex).__name__}: {str(ex)[:200]}")
        emit(rec)

def gemms(tokens=8192):
    """bf16 torch.mm and fp8 torch._scaled_mm (e4m3 x e4m3, tensor-wise scales) on the Llama-3-8B/70B shapes."""
    for n, k in ((4096, 4096), (1024, 4096), (14336, 4096), (4096, 14336), (128256, 4096), (8192, 8192),
                 (28672, 8192), (8192, 28672), (2048, 2048), (5632, 2048), (768, 768), (2048, 768)):
        rec = dict(gemm=True, m=tokens, n=n, k=k)
        try:
            a = torch.randn(tokens, k, device=dev, dtype=torch.bfloat16); b = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
            ms = [elapsed_ms(lambda: torch.mm(a, b.t()), 1) for _ in range(3)]
            ms = min(elapsed_ms(lambda: torch.mm(a, b.t()), 10) for _ in range(3))
            rec.update(bf16_ms=round(ms, 4), bf16_tflops=round(2 * tokens * n * k / ms / 1e9, 1))
            if E4 is not None and dev.type == "cuda":
                af, bf = a.to(E4), b.to(E4); one = torch.ones((), device=dev)
                f = lambda: torch._scaled_mm(af, bf.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
                f(); ms8 = min(elapsed_ms(f, 10) for _ in range(3))
                rec.update(fp8_ms=round(ms8, 4), fp8_tflops=round(2 * tokens * n * k / ms8 / 1e9, 1))
        except Exception as ex:
            rec.update(error=f"{type(ex).__name__}: {str(ex)[:200]}")
        emit(rec)

if __name__ == "__main__":
    info = dict(torch=torch.__version__, device=str(dev))
    if dev.type == "cuda":
        p = torch.cuda.get_device_properties(0)
        info.update(gpu=torch.cuda.get_device_name(), sms=p.multi_processor_count, memory_bytes=p.total_memory,
                    cudnn=torch.backends.cudnn.version())
    emit(info)
    LIST = os.environ.get("LIST", "h200")
    if LIST == "tiny":  # the local check on a CPU: every path once on a toy shape
        run("tiny", 2, 32, 2, mode="single", sdpa="math"); run("tiny", 2, 32, 2, mode="fsdp", ac="full", sdpa="math")
        run("tiny", 2, 32, 2, mode="fsdp", sdpa="math", optimizer="foreach")
        run("tiny", 2, 32, 2, mode="fsdp", ac="op", sdpa="math")
    elif LIST == "sac":  # issue 33 item 6 (eq. M6, not run yet): per-op SAC eager beside compiled, same shapes
        # compile="blocks" keeps the loss eager in both, so the pair's allocated peaks differ by the blocks' saves only
        # (the model today: by nothing; the compiled partitioner's drop of the down projection's output: 2·D·T·L B)
        for c in (False, "blocks", True): run("llama-1.3b", 24, 2048, 8, ac="op", compile=c, need=60)
        for c in (False, "blocks", True): run("llama3-8b", 4, 4096, 2, ac="op", compile=c, need=60)
        run("llama3-8b", 4, 4096, 2, compile="blocks", need=60)  # the no-AC pair with the loss eager in both
    elif LIST == "rowwise":  # 2026-11-28: fp8 with row-wise scales beside tensor-wise and bf16 (issue 33)
        run("llama3-8b", 4, 8192, 1, precision="fp8-rowwise")
        gemms_rowwise()
        for p in ("bf16", "fp8"): run("llama3-8b", 4, 8192, 1, precision=p)
        run("llama3-8b", 4, 8192, 1, precision="fp8-rowwise", ac="full")
        run("llama3-8b", 4, 8192, 1, precision="fp8", ac="full")
        run("llama3-8b", 4, 8192, 1, precision="fp8-rowwise", profile="profile-8b-fp8-rowwise.txt")
        run("llama3-70b", 2, 8192, 1, precision="fp8-rowwise"); run("llama3-70b", 2, 8192, 1, precision="fp8")
        for p in ("fp8", "fp8-rowwise"): run("llama3-8b", 4, 8192, 1, precision=p, compile=True, need=60)
    elif LIST == "hostfsdp":  # 2026-11-28, second call: FSDP2's step where the host may bound it; the compiled bf16 baseline
        for b in (1, 2, 4, 8): run("llama-125m", 12, 2048, b)
        for b in (1, 2): run("llama-1.3b", 24, 2048, b)
        run("llama3-8b", 4, 8192, 1, compile=True, need=60)
        run("llama-125m", 12, 2048, 2, compile=True, need=60)
    elif LIST == "more":  # the fourth call: deeper 8B stacks (less of the step in the head), small models compiled
        for ac in ("none", "full"): run("llama3-8b", 16, 8192, 1, ac=ac)
        run("llama3-8b", 16, 4096, 2)
        run("llama-1.3b", 24, 2048, 8, compile=True, need=40); run("llama-125m", 12, 1024, 32, compile=True, need=40)
    elif LIST == "profile":  # the third call: kernel times of the reference row, eager and compiled, and the 125M
        run("llama3-8b", 4, 4096, 2, profile="profile-8b-eager.txt")
        run("llama3-8b", 4, 4096, 2, profile="profile-8b-fp8.txt", precision="fp8")
        run("llama-125m", 12, 2048, 16, profile="profile-125m-eager.txt")
        run("llama3-8b", 4, 4096, 2, compile=True, profile="profile-8b-compiled.txt")
    elif LIST == "rerun":  # the second call (README): the rows the first lost, and clean memory for the rest
        for s, b in ((2048, 4), (4096, 2), (8192, 1)): run("llama3-8b", 4, s, b, ac="full")
        for ac in ("none", "full"): run("llama3-70b", 2, 4096, 1, ac=ac)
        run("llama-1.3b", 24, 2048, 8); run("llama-1.3b", 24, 2048, 8, ac="full")
        run("llama3-8b", 4, 4096, 2, mode="single"); run("llama2-7b", 4, 4096, 2, ac="full")
        run("llama-125m", 12, 2048, 16, ac="full"); run("llama3-8b", 4, 4096, 2, precision="fp8", ac="full")
        for s, b in ((2048, 4), (4096, 2), (8192, 1), (8192, 2)): run("llama3-8b", 4, s, b)
        run("llama3-8b", 4, 4096, 2, optimizer="foreach"); run("llama2-7b", 4, 4096, 2)
        run("llama-1.3b", 24, 4096, 4); run("llama-1.3b", 24, 2048, 8, mode="single")
        for s, b in ((2048, 16), (1024, 32)): run("llama-125m", 12, s, b)
        run("llama-125m", 12, 2048, 16, mode="single")
        for s, b in ((4096, 2), (8192, 1)): run("llama3-8b", 4, s, b, precision="fp8")
        run("llama3-70b", 2, 4096, 1, precision="fp8"); run("llama-1.3b", 24, 4096, 4, precision="fp8")
        run("llama3-8b", 4, 4096, 2, ac="full", compile=True, need=60)
    else:
        run("llama3-8b", 4, 4096, 2)                       # the reference row, first
        gemms()
        for s, b in ((2048, 4), (8192, 1), (8192, 2)): run("llama3-8b", 4, s, b)
        for s, b in ((2048, 4), (4096, 2), (8192, 1)): run("llama3-8b", 4, s, b, ac="full")
        run("llama3-8b", 4, 4096, 2, sdpa="cudnn"); run("llama3-8b", 4, 4096, 2, optimizer="foreach")
        run("llama3-8b", 4, 4096, 2, mode="single")
        for ac in ("none", "full"): run("llama2-7b", 4, 4096, 2, ac=ac)
        for ac in ("none", "full"): run("llama3-70b", 2, 4096, 1, ac=ac)
        for s, b in ((2048, 8), (4096, 4)): run("llama-1.3b", 24, s, b)
        run("llama-1.3b", 24, 2048, 8, ac="full"); run("llama-1.3b", 24, 2048, 8, mode="single")
        for s, b in ((2048, 16), (1024, 32)): run("llama-125m", 12, s, b)
        run("llama-125m", 12, 2048, 16, ac="full"); run("llama-125m", 12, 2048, 16, mode="single")
        for s, b in ((4096, 2), (8192, 1)): run("llama3-8b", 4, s, b, precision="fp8")
        run("llama3-8b", 4, 4096, 2, precision="fp8", ac="full"); run("llama3-70b", 2, 4096, 1, precision="fp8")
        run("llama-1.3b", 24, 4096, 4, precision="fp8")
        run("llama3-8b", 4, 4096, 2, compile=True, need=90)
        run("llama-125m", 12, 2048, 16, compile=True, need=90)
    print("done in", round(time.time() - T0), "s", flush=True)
