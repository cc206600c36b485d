# Real single-GPU training steps on this machine, for checking dlscale's predictions against them
# (tests/data/h200-pytorch/README.md). Synthetic data already on the GPU, so the step alone is timed:
# 6 warm-up steps (cudnn.benchmark searches there), then 4 windows of n steps (n so that a window lasts
# about 0.6 s) timed with CUDA events; ms_per_iter is the mean of the two middle windows. Memory: the peak
# over the whole run (peak_*_bytes, the CSV's columns) and over the timed steps alone (peak_*_steady_bytes,
# torch.jsonl only): their difference is cudnn.benchmark's trial workspaces in the warm-up.
# Usage: OUT=DIR BUDGET=SECONDS [RUNS=h200|h100-1|h100-2|small|issue34] python3 bench/pytorch/train_steps.py   (writes DIR/torch.jsonl, one line per run,
# and DIR/steps.csv in `dlscale calibrate fit`'s format, the GPU as the driver names it)
# Needs PyTorch, torchvision and transformers (BERT from its configuration: random weights, no download).
import json, os, sys, time
import torch, torch.nn as nn
from nets import vision, bert  # bench/pytorch/nets.py, beside this script
OUT = os.environ.get("OUT", ".")
res = open(os.path.join(OUT, "torch.jsonl"), "a")
dev = torch.device("cuda")
torch.backends.cudnn.benchmark = True
BUDGET = float(os.environ.get("BUDGET", "230"))
T0 = time.time()

def set_prec(p):
    tf = p == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf
    torch.backends.cudnn.allow_tf32 = tf

def run(model, prec, batch, seq=None, attn="sdpa", cl=False, mlp=None, comp=False):
    if time.time() - T0 > BUDGET:
        print("budget spent, skip", model, prec, batch, flush=True); return
    set_prec(prec)
    torch.cuda.empty_cache(); torch.cuda.reset_peak_memory_stats()
    rec = dict(model=model, precision=prec, batch=batch, seq=seq, attention=attn if seq else None, channels_last=cl,
               compile=comp)
    try:
        if mlp:
            width, depth = mlp
            net = nn.Sequential(*[nn.Linear(width, width, bias=False) for _ in range(depth)]).to(dev)
            x = torch.randn(batch, width, device=dev); y = torch.randn(batch, width, device=dev)
            lossf = lambda out: ((out - y) ** 2).mean()
            fwd = lambda: net(x)
            opt = torch.optim.SGD(net.parameters(), lr=1e-6, momentum=0.9)
        elif seq:
            net = bert(model, attn).to(dev)
            rec["attention_used"] = getattr(net.config, "_attn_implementation", None)
            ids = torch.randint(0, 30522, (batch, seq), device=dev)
            sp = torch.randint(0, seq, (batch,), device=dev); ep = torch.randint(0, seq, (batch,), device=dev)
            if "squad" in model:
                fwd = lambda: net(input_ids=ids, start_positions=sp, end_positions=ep)
                lossf = lambda out: out.loss
            else:  # encoder and pooler, as models/bert-base.yaml: a scalar of the pooled output
                fwd = lambda: net(input_ids=ids)
                lossf = lambda out: out.pooler_output.float().pow(2).mean()
            opt = torch.optim.AdamW(net.parameters(), lr=1e-5)
        else:
            net, size = vision(model); net = net.to(dev)
            x = torch.randn(batch, 3, size, size, device=dev); tgt = torch.randint(0, 1000, (batch,), device=dev)
            if cl:
                net = net.to(memory_format=torch.channels_last); x = x.to(memory_format=torch.channels_last)
            ce = nn.CrossEntropyLoss()
            fwd = torch.compile(net) if comp else net
            fwd = (lambda f: lambda: f(x))(fwd)
            lossf = lambda out: ce(out, tgt)
            opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
        half = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(prec)
        scaler = torch.amp.GradScaler("cuda", enabled=prec == "fp16")
        def step():
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=half or torch.float32, enabled=half is not None):
                loss = lossf(fwd())
            scaler.scale(loss).backward(); scaler.step(opt); scaler.update()
        for _ in range(6): step()
        torch.cuda.synchronize()
        # The warm-up's peak holds cudnn.benchmark's trial workspaces (each candidate algorithm's, freed after
        # the search, and skipped when it cannot be allocated); the timed steps' peak is what training keeps.
        warm_alloc, warm_res = torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()
        torch.cuda.reset_peak_memory_stats()
        # timed windows of n steps; n so a window is ~0.6 s
        t0 = time.perf_counter(); step(); torch.cuda.synchronize(); one = time.perf_counter() - t0
        n = max(3, min(40, int(0.6 / max(one, 1e-4))))
        wins = []
        for _ in range(4):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(n): step()
            e.record(); torch.cuda.synchronize()
            wins.append(s.elapsed_time(e) / n)
        wins.sort(); ms = (wins[1] + wins[2]) / 2
        rec.update(ms_per_iter=round(ms, 3), samples_per_s=round(batch * 1000 / ms, 1), windows_ms=[round(w, 3) for w in wins],
                   steps_per_window=n,
                   peak_allocated_bytes=max(warm_alloc, torch.cuda.max_memory_allocated()),
                   peak_reserved_bytes=max(warm_res, torch.cuda.max_memory_reserved()),
                   peak_allocated_steady_bytes=torch.cuda.max_memory_allocated(),
                   peak_reserved_steady_bytes=torch.cuda.max_memory_reserved(),
                   params=sum(p.numel() for p in net.parameters()))
    except Exception as ex:  # OOM and the like: recorded, the rest go on
        rec.update(error=f"{type(ex).__name__}: {str(ex)[:200]}")
    print(json.dumps(rec), flush=True); res.write(json.dumps(rec) + "\n"); res.flush()
    torch.cuda.empty_cache()

print(json.dumps(dict(torch=torch.__version__, cudnn=torch.backends.cudnn.version(), gpu=torch.cuda.get_device_name(),
                      sms=torch.cuda.get_device_properties(0).multi_processor_count)), flush=True)
res.write(json.dumps(dict(torch=torch.__version__, cudnn=torch.backends.cudnn.version(), gpu=torch.cuda.get_device_name())) + "\n")
RUNS = os.environ.get("RUNS", "h200")  # which list: the H200 file's, or the two calls of the H100 file
if RUNS == "h200":
    for p in ("fp16", "tf32", "fp32"): run("bert-large-squad", p, 32, seq=384)
    for p in ("fp16", "tf32", "fp32"): run("bert-squad", p, 32, seq=384)
    run("bert-large-squad", "fp16", 32, seq=384, attn="eager")
    for p in ("fp16", "bf16", "tf32", "fp32"): run("resnet50", p, 256)
    run("resnet50", "fp16", 256, cl=True)
    for p in ("fp32", "tf32", "bf16", "fp16"): run("mlp-8192x8", p, 8192, mlp=(8192, 8))
    for p in ("fp16", "tf32", "fp32"): run("vgg16", p, 128)
    for p in ("fp16", "tf32", "fp32"): run("alexnet", p, 512)
    for p in ("fp16", "tf32", "fp32"): run("inception-v3", p, 128)
    run("resnet50", "fp16", 64)
elif RUNS == "h100-1":
    for p in ("fp16", "tf32"): run("bert-large-squad", p, 32, seq=384)
    for p in ("fp16", "tf32", "fp32"): run("bert-squad", p, 32, seq=384)
    run("resnet50", "fp16", 256, cl=True); run("resnet50", "fp16", 256); run("resnet50", "tf32", 256)
    run("resnet50", "bf16", 256, cl=True); run("resnet50", "tf32", 256, cl=True)
    for p in ("fp16", "tf32", "fp32"): run("mlp-8192x8", p, 8192, mlp=(8192, 8))
    for p in ("fp16", "tf32"): run("vgg16", p, 128)
    for p in ("fp16", "tf32"): run("alexnet", p, 512)
    for p in ("fp16", "tf32"): run("inception-v3", p, 128)
    run("resnet50", "fp16", 64, cl=True)
    run("bert-large-squad", "fp16", 32, seq=384, attn="eager")
    run("resnet50", "fp32", 256)
    run("bert-large-squad", "fp32", 32, seq=384)
elif RUNS == "h100-2":
    run("vgg16", "fp16", 128, cl=True); run("alexnet", "fp16", 512, cl=True); run("inception-v3", "fp16", 128, cl=True)
    run("resnet50", "fp16", 128, cl=True); run("vgg16", "tf32", 128, cl=True); run("inception-v3", "tf32", 128, cl=True)
    run("bert-squad", "bf16", 32, seq=384); run("resnet50", "bf16", 256)
    for m, b in (("vgg16", 128), ("alexnet", 512), ("inception-v3", 128)): run(m, "fp32", b)
elif RUNS == "small":  # batch 1 and 8: steps the host's kernel launches bound (the kernel counts are kernels.txt's)
    for b in (1, 8): run("resnet50", "fp16", b, cl=True)
    run("inception-v3", "fp16", 1, cl=True); run("vgg16", "fp16", 1, cl=True); run("alexnet", "fp16", 1, cl=True)
    run("bert-squad", "fp16", 1, seq=384); run("bert-large-squad", "fp16", 1, seq=384)
elif RUNS == "issue34":  # BERT-large SQuAD at the small batches issue 34 names; ResNet-50 channels_last AMP eager and compiled
    for b in (2, 4, 8): run("bert-large-squad", "fp16", b, seq=384)
    run("resnet50", "fp16", 256, cl=True); run("resnet50", "bf16", 256, cl=True)
    run("resnet50", "bf16", 256, cl=True, comp=True); run("resnet50", "fp16", 256, cl=True, comp=True)
elif RUNS == "issue34-2":  # the second call: the fp16 compiled row the first call's budget skipped
    run("resnet50", "fp16", 256, cl=True, comp=True)
else:
    sys.exit(f"RUNS={RUNS}: h200, h100-1, h100-2, small, issue34 or issue34-2")
print("done in", round(time.time() - T0), "s", flush=True)

# The runs in `dlscale calibrate fit`'s format (docs/compute-model.md): precision fp32 is strict here, so fit
# with --fp32-is-fp32; the GEMM-only network is tests/data/h200-pytorch/mlp-8192x8.yaml (copy it beside).
res.close()
with open(os.path.join(OUT, "torch.jsonl")) as f, open(os.path.join(OUT, "steps.csv"), "w") as csv:
    csv.write("gpu,gpus,model,precision,batch_per_gpu,memory_format,attention,ms_per_iter,samples_per_s,"
              "peak_allocated_bytes,peak_reserved_bytes\n")
    gpu = torch.cuda.get_device_name()
    for line in f:
        r = json.loads(line)
        if "ms_per_iter" not in r or r.get("compile"): continue  # compiled rows: torch.jsonl only
        model = r["model"] + (".yaml" if r["model"].startswith("mlp") else "")
        layout = "" if r["seq"] or r["model"].startswith("mlp") else ("nhwc" if r["channels_last"] else "nchw")
        csv.write(f'{gpu},1,{model},{r["precision"]},{r["batch"]},{layout},{r.get("attention_used") or ""},'
                  f'{r["ms_per_iter"]},{r["samples_per_s"]},{r["peak_allocated_bytes"]},{r["peak_reserved_bytes"]}\n')
