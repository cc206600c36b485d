# Prepared 2026-11-27 for the next lent GPU; run only on a CPU so far (SMALL=1), not yet on a GPU.
# The rate of PyTorch's memory-bound kernels on this GPU (docs/compute-model.md, "Checked on a real H200:
# decoder steps", what the model lacks (3)): element-wise operators and reductions at the sizes a decoder step
# runs them, the eager RMSNorm chain, and AdamW's three implementations (for-loop, foreach, fused) over many
# tensors. Each row: the bytes its kernels must move (read + written, counted by hand per operator) over the
# time (CUDA events, the best of 3 windows of 10 after 3 warm-ups), against the device-to-device copy's rate.
# Usage: OUT=DIR python3 bench/pytorch/elementwise_rate.py   (writes DIR/elementwise.jsonl)
import json, os, time
import torch

OUT = os.environ.get("OUT", ".")
dev = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
res = open(os.path.join(OUT, "elementwise.jsonl"), "a")

def ms(fn, n=10):
    for _ in range(3): fn()
    if dev.type != "cuda":
        t = time.perf_counter(); [fn() for _ in range(n)]; return (time.perf_counter() - t) * 1e3 / n
    best = 1e30
    for _ in range(3):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); [fn() for _ in range(n)]; e.record(); torch.cuda.synchronize()
        best = min(best, s.elapsed_time(e) / n)
    return best

def emit(name, rows, cols, dtype, moved_bytes, t_ms, kernels=1):
    rec = dict(op=name, shape=[rows, cols], dtype=str(dtype).replace("torch.", ""), bytes=moved_bytes,
               kernels=kernels, ms=round(t_ms, 4), gb_per_s=round(moved_bytes / t_ms / 1e6, 1))
    print(json.dumps(rec), flush=True); res.write(json.dumps(rec) + "\n"); res.flush()

def elementwise(rows, cols):
    for dt in (torch.bfloat16, torch.float32):
        eb = torch.finfo(dt).bits // 8
        x = torch.randn(rows, cols, device=dev, dtype=dt); y = torch.randn(rows, cols, device=dev, dtype=dt)
        n = rows * cols
        emit("copy", rows, cols, dt, 2 * n * eb, ms(lambda: x.clone()))
        emit("add", rows, cols, dt, 3 * n * eb, ms(lambda: x + y))
        emit("mul_scalar", rows, cols, dt, 2 * n * eb, ms(lambda: x * 0.5))
        emit("silu", rows, cols, dt, 2 * n * eb, ms(lambda: torch.nn.functional.silu(x)))
        emit("pow2", rows, cols, dt, 2 * n * eb, ms(lambda: x.pow(2)))
        emit("mean_lastdim", rows, cols, dt, n * eb + rows * eb, ms(lambda: x.mean(-1, keepdim=True)))
        emit("sum_all", rows, cols, dt, n * eb, ms(lambda: x.sum()))
        other = torch.float32 if dt == torch.bfloat16 else torch.bfloat16
        ob = torch.finfo(other).bits // 8
        emit("to_" + str(other).replace("torch.", ""), rows, cols, dt, n * (eb + ob), ms(lambda: x.to(other)))
    # the eager RMSNorm of torchtitan's Llama on bf16 activations: x.float(), pow, mean, +eps/rsqrt, product,
    # type_as, weight: 28 + 4*eb B an element by the model's count (K14), 7 kernels
    x = torch.randn(rows, cols, device=dev, dtype=torch.bfloat16); w = torch.ones(cols, device=dev, dtype=torch.bfloat16)
    def rms():
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5)).type_as(x) * w
    emit("rmsnorm_eager", rows, cols, torch.bfloat16, rows * cols * (28 + 4 * 2), ms(rms), kernels=7)

def adamw(total, tensors):
    per = total // tensors
    for impl in ("fused", "foreach", "forloop"):
        if dev.type != "cuda" and impl == "fused": continue
        ps = [torch.nn.Parameter(torch.randn(per, device=dev)) for _ in range(tensors)]
        for p in ps: p.grad = torch.randn_like(p)
        kw = dict(fused=True) if impl == "fused" else dict(foreach=impl == "foreach")
        opt = torch.optim.AdamW(ps, lr=1e-4, **kw)
        t = ms(opt.step, n=5)
        # the fused kernel's minimum: read p, g, m, v and write p, m, v: 28 B a parameter in fp32
        emit("adamw_" + impl, tensors, per, torch.float32, 28 * per * tensors, t)
        del opt, ps
        if dev.type == "cuda": torch.cuda.empty_cache()

if __name__ == "__main__":
    info = dict(torch=torch.__version__, device=str(dev))
    if dev.type == "cuda": info.update(gpu=torch.cuda.get_device_name())
    print(json.dumps(info)); res.write(json.dumps(info) + "\n")
    small = os.environ.get("SMALL")
    for rows, cols in (((64, 128),) if small else ((8192, 4096), (32768, 768), (8192, 14336), (16384, 32000))):
        elementwise(rows, cols)
    adamw(*((4096, 8) if small else (1 << 30, 400)))
    adamw(*((4096, 8) if small else (1 << 27, 50)))
