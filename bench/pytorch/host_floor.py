# How much of an eager PyTorch training step the host's kernel issue bounds (docs/compute-model.md, K20): each
# configuration's step timed twice on the GPU, eager and replayed as one CUDA graph captured from the same step
# (torch.cuda.graph, PyTorch's whole-network capture: static inputs, warm-up on a side stream, the optimiser's
# step inside the graph). The graph removes the host's work per kernel and leaves the GPU's; eager − graph is the
# time the GPU waited for the host. Also: the host's own time to issue a step (perf_counter around n steps before
# the synchronisation) and the kernels a step runs (torch.profiler, one eager step: their count and summed time).
# Image networks: torchvision's, SGD with momentum (foreach), bf16 autocast (no GradScaler: it is not capturable;
# fp16's kernels are bf16's plus the scaler's pass) or TF32. Decoders: decoder_steps.py's torchtitan Llama in
# `single` mode (fp32 weights, bf16 autocast), AdamW fused with capturable=True in both runs, the token embedding
# frozen in both (its backward synchronises with the host, which a graph cannot hold). autocast's weight-cast cache
# is off in both (a graph needs that). 3 warm-up steps, then 3 windows of n steps (a window ~0.3 s) timed with
# CUDA events; the median window.
# Usage: OUT=DIR BUDGET=SECONDS python3 bench/pytorch/host_floor.py   (appends to DIR/host.jsonl)
import gc, json, os, sys, time
import torch, torch.nn.functional as F

OUT = os.environ.get("OUT", ".")
BUDGET = float(os.environ.get("BUDGET", "200"))
T0 = time.time()
res = open(os.path.join(OUT, "host.jsonl"), "a")
dev = torch.device("cuda")

def emit(rec):
    print(json.dumps(rec), flush=True); res.write(json.dumps(rec) + "\n"); res.flush()

def windows(fn, n):
    """(GPU ms a step from events, host ms a step to issue it) over one window of n calls."""
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); h = time.perf_counter()
    for _ in range(n): fn()
    host = (time.perf_counter() - h) * 1e3 / n
    e.record(); torch.cuda.synchronize()
    return s.elapsed_time(e) / n, host

def timed(fn, rec, key):
    for _ in range(3): fn()
    torch.cuda.synchronize()
    one, _ = windows(fn, 1)
    n = max(2, min(30, int(300 / max(one, 1e-3))))
    w = sorted(windows(fn, n) for _ in range(3))
    rec[key + "_ms"] = round(w[1][0], 3); rec[key + "_host_ms"] = round(w[1][1], 3)
    rec[key + "_windows_ms"] = [round(x[0], 3) for x in w]; rec[key + "_steps_per_window"] = n

def kernels(fn, rec):
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
        fn(); torch.cuda.synchronize()
    count, busy = 0, 0.0
    for ev in p.events():
        if str(ev.device_type).endswith("CUDA"):
            count += 1; busy += ev.time_range.elapsed_us()
    rec.update(gpu_ops_per_step=count, gpu_ops_ms=round(busy / 1e3, 3))

def image(name, batch, precision, layout):
    import torchvision
    net = getattr(torchvision.models, name)(num_classes=1000).to(dev)
    x = torch.randn(batch, 3, 224, 224, device=dev); y = torch.randint(0, 1000, (batch,), device=dev)
    if layout == "nhwc":
        net = net.to(memory_format=torch.channels_last); x = x.contiguous(memory_format=torch.channels_last)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    return net, opt, (lambda: F.cross_entropy(net(x), y))

def bert(name, seq, batch):
    """transformers' BertForQuestionAnswering (SDPA attention) from its configuration, random weights."""
    from transformers import BertConfig, BertForQuestionAnswering
    big = name == "bert-large-squad"
    cfg = BertConfig(hidden_size=1024 if big else 768, num_hidden_layers=24 if big else 12,
                     num_attention_heads=16 if big else 12, intermediate_size=4096 if big else 3072)
    net = BertForQuestionAnswering(cfg).to(dev).train()
    ids = torch.randint(0, cfg.vocab_size, (batch, seq), device=dev)
    start = torch.randint(0, seq, (batch,), device=dev); end = torch.randint(0, seq, (batch,), device=dev)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-5, fused=True, capturable=True)
    return net, opt, (lambda: net(input_ids=ids, start_positions=start, end_positions=end).loss)

def decoder(shape, layers, seq, batch, fsdp=False):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import decoder_steps as ds
    _, dim, heads, kv, ffn, vocab = ds.SHAPES[shape]
    with torch.device(dev):
        net = ds.Transformer(layers, dim, heads, kv, ffn, vocab, seq, False)
    net.tok_embeddings.weight.requires_grad_(False)
    if fsdp:  # torchtitan's wrapping, as decoder_steps.py's fsdp mode (world size 1)
        ds.process_group(); torch.cuda.set_device(0)
        from torch.distributed.fsdp import fully_shard, MixedPrecisionPolicy
        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        for i, b in enumerate(net.layers):
            fully_shard(b, mp_policy=mp, reshard_after_forward=i < len(net.layers) - 1)
        fully_shard(net, mp_policy=mp)
    tokens = torch.randint(0, vocab, (batch, seq), device=dev); labels = torch.randint(0, vocab, (batch, seq), device=dev)
    opt = torch.optim.AdamW([p for p in net.parameters() if p.requires_grad], lr=1e-5, fused=True, capturable=not fsdp)
    from torch.nn.attention import sdpa_kernel, SDPBackend
    def loss():
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return ds.loss_fn(net(tokens), labels)
    return net, opt, loss

GPT2 = {"gpt2": (12, 768, 12), "gpt2-medium": (24, 1024, 16), "gpt2-large": (36, 1280, 20), "gpt2-xl": (48, 1600, 25)}

def gpt2(name, seq, batch):
    """Hugging Face transformers' GPT-2 with its eager attention (as DeepSpeedExamples' runs, transformers 4.12,
    ran it: no SDPA then), dropout on, the language-model loss on its own input."""
    from transformers import GPT2Config, GPT2LMHeadModel
    layers, dim, heads = GPT2[name]
    cfg = GPT2Config(n_layer=layers, n_embd=dim, n_head=heads, n_positions=1024)
    cfg._attn_implementation = "eager"
    net = GPT2LMHeadModel(cfg).to(dev).train()
    net.transformer.wte.weight.requires_grad_(False)  # tied to the head: the head's GEMM keeps its weight fixed too
    ids = torch.randint(0, cfg.vocab_size, (batch, seq), device=dev)
    opt = torch.optim.AdamW([p for p in net.parameters() if p.requires_grad], lr=1e-5, fused=True, capturable=True)
    return net, opt, (lambda: net(input_ids=ids, labels=ids).loss)

def run(kind, need=10, **cfg):
    left = BUDGET - (time.time() - T0)
    rec = dict(kind=kind, **cfg)
    if left < need:
        rec.update(error=f"skipped: {left:.0f} s of the budget left"); emit(rec); return
    t = time.time()
    net = opt = g = None
    try:
        gc.collect(); torch.cuda.empty_cache()
        precision = cfg.get("precision", "bf16")
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = precision == "tf32"
        if kind == "image":
            net, opt, loss = image(cfg["model"], cfg["batch"], precision, cfg["layout"])
        elif kind == "bert":
            net, opt, loss = bert(cfg["model"], cfg["seq"], cfg["batch"])
        elif kind == "gpt2":
            net, opt, loss = gpt2(cfg["model"], cfg["seq"], cfg["batch"])
        else:
            net, opt, loss = decoder(cfg["model"], cfg["layers"], cfg["seq"], cfg["batch"], cfg.get("fsdp", False))
        amp = precision == "bf16" and not cfg.get("fsdp")  # FSDP's policy casts the parameters itself
        def fwd_bwd():
            with torch.autocast("cuda", torch.bfloat16, enabled=amp, cache_enabled=False):
                out = loss()
            out.backward()
        def step():
            opt.zero_grad(set_to_none=True); fwd_bwd(); opt.step()
        timed(step, rec, "eager")
        try:
            kernels(step, rec)
        except Exception as ex:
            rec["kernels_error"] = f"{type(ex).__name__}: {str(ex)[:200]}"
        # capture: warm up on a side stream, then forward, backward and the optimiser's step in one graph
        s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3): step()
        torch.cuda.current_stream().wait_stream(s)
        opt.zero_grad(set_to_none=True)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fwd_bwd(); opt.step()
        timed(g.replay, rec, "graph")
        rec["host_bound_ms"] = round(rec["eager_ms"] - rec["graph_ms"], 3)
        rec["peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
    except Exception as ex:
        rec.update(error=f"{type(ex).__name__}: {str(ex)[:300]}")
    rec["seconds"] = round(time.time() - t, 1)
    emit(rec)
    del net, opt, g
    gc.collect(); torch.cuda.empty_cache(); torch.cuda.reset_peak_memory_stats()

if __name__ == "__main__":
    torch.backends.cudnn.benchmark = True
    p = torch.cuda.get_device_properties(0)
    emit(dict(torch=torch.__version__, gpu=torch.cuda.get_device_name(), sms=p.multi_processor_count,
              cudnn=torch.backends.cudnn.version(), cpu_count=os.cpu_count()))
    if os.environ.get("LIST") == "call3":  # the third call of 2026-11-28: FSDP2's ops and host time, BERT's small batches
        for b in (2, 16): run("decoder", model="llama-125m", layers=12, seq=2048, batch=b, fsdp=True)
        run("decoder", model="llama-1.3b", layers=24, seq=2048, batch=1, fsdp=True)
        for b in (2, 4, 8, 32): run("bert", model="bert-large-squad", seq=384, batch=b)
        run("gpt2", model="gpt2-medium", seq=512, batch=16); run("gpt2", model="gpt2-xl", seq=512, batch=4)
        print("done in", round(time.time() - T0), "s", flush=True); sys.exit(0)
    if os.environ.get("LIST") == "gpt2":  # the second call of 2026-11-28: DeepSpeedExamples' GPT-2 shapes
        for m, sq, b in (("gpt2-medium", 512, 4), ("gpt2-medium", 1024, 2), ("gpt2-medium", 512, 6), ("gpt2-xl", 512, 1),
                         ("gpt2-xl", 1024, 1), ("gpt2", 1024, 8), ("gpt2-large", 1024, 2), ("gpt2-medium", 512, 16)):
            run("gpt2", model=m, seq=sq, batch=b)
        print("done in", round(time.time() - T0), "s", flush=True); sys.exit(0)
    # the decoders first (issue 33: the 125M rows the issue floor may bound), then the image networks (issue 34)
    run("decoder", model="llama-125m", layers=12, seq=2048, batch=16)
    run("decoder", model="llama-125m", layers=12, seq=1024, batch=8)
    run("decoder", model="llama-125m", layers=12, seq=2048, batch=2)
    run("decoder", model="llama-1.3b", layers=24, seq=2048, batch=8)
    run("decoder", model="llama-1.3b", layers=24, seq=2048, batch=1)
    for b in (32, 64, 128, 256): run("image", model="resnet50", batch=b, precision="bf16", layout="nchw")
    for b in (64, 256): run("image", model="resnet50", batch=b, precision="bf16", layout="nhwc")
    for b in (64, 256): run("image", model="resnet50", batch=b, precision="tf32", layout="nchw")
    for b in (128, 512): run("image", model="alexnet", batch=b, precision="bf16", layout="nchw")
    run("image", model="resnet50", batch=8, precision="bf16", layout="nhwc")
    print("done in", round(time.time() - T0), "s", flush=True)
