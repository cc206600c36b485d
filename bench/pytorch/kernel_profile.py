# Kernel-time breakdown of two training steps (torch.profiler, CUDA activities) of the image networks, as
# tests/data/h200-pytorch/kernels.txt holds it: where a step's time goes, kernel by kernel (eq. K10's
# layout transposes were read off it). Usage: OUT=DIR [RUNS=h200|h100|bert] python3 bench/pytorch/kernel_profile.py
import os, json, time, torch, torch.nn as nn
OUT = os.environ.get("OUT", ".")
from torch.profiler import profile, ProfilerActivity
dev = torch.device("cuda"); torch.backends.cudnn.benchmark = True
from nets import vision, bert  # bench/pytorch/nets.py, beside this script

def one(name, prec, batch, cl, attn="sdpa"):
    tf = prec == "tf32"; torch.backends.cuda.matmul.allow_tf32 = tf; torch.backends.cudnn.allow_tf32 = tf
    if name.startswith("bert"):  # SQuAD at sequence 384, as train_steps.py runs it; AdamW
        net = bert(name, attn).to(dev); seq = 384
        ids = torch.randint(0, 30522, (batch, seq), device=dev)
        sp = torch.randint(0, seq, (batch,), device=dev); ep = torch.randint(0, seq, (batch,), device=dev)
        fwd_loss = lambda: net(input_ids=ids, start_positions=sp, end_positions=ep).loss
        opt = torch.optim.AdamW(net.parameters(), lr=1e-5)
    else:
        net, size = vision(name)
        net = net.to(dev); x = torch.randn(batch, 3, size, size, device=dev); tgt = torch.randint(0, 1000, (batch,), device=dev)
        if cl: net = net.to(memory_format=torch.channels_last); x = x.to(memory_format=torch.channels_last)
        ce = nn.CrossEntropyLoss(); opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
        fwd_loss = lambda: ce(net(x), tgt)
    half = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(prec)
    sc = torch.amp.GradScaler("cuda", enabled=prec == "fp16")
    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=half or torch.float32, enabled=half is not None):
            loss = fwd_loss()
        sc.scale(loss).backward(); sc.step(opt); sc.update()
    for _ in range(5): step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(2): step()
        torch.cuda.synchronize()
    ev = p.key_averages()
    rows = sorted(((e.key, e.device_time_total / 2, e.count // 2) for e in ev if e.device_time_total > 0), key=lambda r: -r[1])
    tot = sum(r[1] for r in rows)
    tag = f"{name} {prec} b{batch} {attn if name.startswith('bert') else 'nhwc' if cl else 'nchw'}"
    with open(os.path.join(OUT, "kernels.txt"), "a") as f:
        f.write(f"== {tag}: {tot/1e3:.2f} ms of kernels per step, {sum(r[2] for r in rows)} kernels\n")
        for k, t, c in rows[:28]: f.write(f"{t/1e3:9.3f} ms {100*t/tot:5.1f}% x{c:<4d} {k[:150]}\n")
    with open(os.path.join(OUT, "kernels.jsonl"), "a") as f:
        f.write(json.dumps(dict(tag=tag, total_us=tot, kernels=[dict(name=k, us=t, count=c) for k, t, c in rows])) + "\n")
    print(tag, round(tot / 1e3, 2), "ms", flush=True)
T = time.time()
H200 = [("resnet50", "fp16", 256, False), ("resnet50", "fp16", 256, True), ("resnet50", "fp32", 256, False),
            ("resnet50", "tf32", 256, False), ("alexnet", "fp16", 512, False), ("alexnet", "fp32", 512, False),
            ("vgg16", "tf32", 128, False), ("vgg16", "fp16", 128, True), ("inception-v3", "fp32", 128, False),
            ("resnet50", "bf16", 256, False)]
H100 = [("vgg16", "fp16", 128, True), ("alexnet", "fp16", 512, True), ("inception-v3", "fp16", 128, True),
        ("resnet50", "fp16", 256, True)]
BERT = [("bert-large-squad", "fp16", 32, False), ("bert-squad", "fp16", 32, False), ("bert-large-squad", "tf32", 32, False),
        ("bert-large-squad", "fp16", 32, False, "eager")]
for cfg in {"h200": H200, "h100": H100, "bert": BERT}[os.environ.get("RUNS", "h200")]:
    if time.time() - T > 110: break
    try: one(*cfg)
    except Exception as e: print(cfg, "ERR", e, flush=True)
    torch.cuda.empty_cache()
print("done", round(time.time() - T), "s")
