#!/usr/bin/env python3
"""Writes the synthetic nccl-tests logs of tests/data/calibration/.

They are SYNTHETIC SAMPLES IN THE REAL FORMATS (shared/docs/nccl-model.md, nccl-tests common.cu's
printf formats), not measurements: times come from t = alpha + S/beta with a little deterministic
noise, and algbw/busbw are computed from them exactly as nccl-tests does (algbw = S/t in GB/s, busbw =
algbw * factor). Run it on purpose to regenerate; the tests check the numbers by hand, not against
this script.
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))

FACTOR = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
}


def fmt_time(us):
    # nccl-tests: %7.0f from 10 ms, %7.1f from 100 us, %7.2f below
    if us >= 10000:
        return "%7.0f" % us
    if us >= 100:
        return "%7.1f" % us
    return "%7.2f" % us


def noise(i, k):
    return 1.0 + 0.01 * (((i * 7 + k * 3) % 5) - 2) / 2.0  # within ±1 %


def rows(op, n, alpha_us, beta_gbs, sizes, elem=4):
    out = []
    for i, s in enumerate(sizes):
        t_out = alpha_us + s / (beta_gbs * 1e3)
        t_out = float(fmt_time(t_out * noise(i, 0)))
        t_in = float(fmt_time((alpha_us + s / (beta_gbs * 1e3)) * noise(i, 1)))
        out.append((s, s // elem, t_out, t_in))
    return out


def bw(op, n, s, t):
    alg = s / (t * 1e-6) / 1e9
    return alg, alg * FACTOR[op](n)


def table_new(op, n, data, redop="sum", root=-1, timing=False):
    lines = [
        "#",
        "#                                                              out-of-place                       in-place          ",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong"
        + ("   i_min   i_max   i_p99  i_cv%" if timing else ""),
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       "
        + ("    (us)    (us)    (us)      " if timing else ""),
    ]
    total = 0.0
    for s, count, t_out, t_in in data:
        a1, b1 = bw(op, n, s, t_out)
        a2, b2 = bw(op, n, s, t_in)
        total += b1 + b2
        line = "%12d  %12d  %8s  %6s  %6d  %7s  %6.2f  %6.2f  %6d  %7s  %6.2f  %6.2f  %6d" % (
            s, count, "float", redop, root, fmt_time(t_out), a1, b1, 0, fmt_time(t_in), a2, b2, 0)
        if timing:
            line += "  %6.2f  %6.2f  %6.2f  %5.2f" % (t_out * 0.97, t_out * 1.05, t_out * 1.04, 1.3)
        lines.append(line)
    lines.append("# Out of bounds values : 0 OK")
    lines.append("# Avg bus bandwidth    : %g " % (total / (2 * len(data))))
    lines.append("#")
    return lines


def table_old(op, n, data, redop="sum"):
    lines = [
        "#",
        "#                                                     out-of-place                       in-place",
        "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error",
        "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)",
    ]
    total = 0.0
    for s, count, t_out, t_in in data:
        a1, b1 = bw(op, n, s, t_out)
        a2, b2 = bw(op, n, s, t_in)
        total += b1 + b2
        lines.append("%12d  %12d  %6s  %6s  %7s  %6.2f  %6.2f  %5.0e  %7s  %6.2f  %6.2f  %5.0e" % (
            s, count, "float", redop, fmt_time(t_out), a1, b1, 1e-7, fmt_time(t_in), a2, b2, 1e-7))
    lines.append("# Out of bounds values : 0 OK")
    lines.append("# Avg bus bandwidth    : %g " % (total / (2 * len(data))))
    lines.append("#")
    return lines


SYNTH = [
    "# SYNTHETIC SAMPLE in the real nccl-tests format, written by tests/data/calibration/make_fixtures.py:",
    "# not a measurement (t = alpha + S/beta with <= 1 % deterministic noise).",
]


def header_new(binary, n, hosts, gpu, minb, maxb, nthread=1, ngpus=None, procs=1):
    ngpus = n if ngpus is None else ngpus
    lines = [
        "$ ./build/%s -b %d -e %d -f 2 %s-g %d" % (binary, minb, maxb, "-t %d " % nthread if nthread > 1 else "", ngpus),
        "# nccl-tests version 2.13.9 nccl-headers=21805 nccl-library=21805",
        "# Collective test starting: %s" % binary,
        "# nThread %d nGpus %d minBytes %d maxBytes %d step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0"
        % (nthread, ngpus, minb, maxb),
        "#",
        "# Using devices",
    ]
    per_host = n // len(hosts)
    for r in range(n):
        host = hosts[r // per_host]
        dev = r % per_host
        lines.append("#  Rank %2d Group  0 Pid %6d on %10s device %2d [0x%02x] %s" % (
            r, 41000 + r // (ngpus * nthread), host, dev, [0x07, 0x0f, 0x47, 0x4e, 0x87, 0x90, 0xb7, 0xbd][dev], gpu))
    return lines


def pow2(lo, hi):
    s, out = lo, []
    while s <= hi:
        out.append(s)
        s *= 2
    return out


def write(name, lines):
    with open(os.path.join(HERE, name), "w") as f:
        f.write("\n".join(lines) + "\n")


A100 = "NVIDIA A100-SXM4-80GB"

# 1. all-reduce on 8 A100 (NVSwitch), current format, 8 B .. 1 GiB; one thread per GPU (-t 8 -g 1), so that the
#    times are NCCL's own (with -g 8 one thread would add 7 launches of host issue to each: nccl_tests_time)
d = rows("all_reduce", 8, 22.0, 230.0 * 8 / 14, pow2(8, 1 << 30))
write("all_reduce_perf-a100x8.log",
      SYNTH + header_new("all_reduce_perf", 8, ["dgxa100-01"], A100, 8, 1 << 30, nthread=8, ngpus=1) + table_new("all_reduce", 8, d)
      + ["# Collective test concluded: all_reduce_perf", ""])

# 2. several GPU counts in one log (2 and 4 GPUs of the same node), run one after another
lines = list(SYNTH)
for n, alpha, busbw in [(2, 9.0, 190.0), (4, 14.0, 210.0)]:
    lines += header_new("all_reduce_perf", n, ["dgxa100-01"], A100, 1024, 1 << 28)
    lines += table_new("all_reduce", n, rows("all_reduce", n, alpha, busbw * n / (2 * (n - 1)), pow2(1024, 1 << 28)))
write("all_reduce_perf-a100-2and4.log", lines)

# 3. old format (error column, no root), DGX-1V 8 x V100, older rank lines without "Group"
V100 = "Tesla V100-SXM2-16GB"
d = rows("all_reduce", 8, 30.0, 130.0 * 8 / 14, pow2(8, 1 << 27))
lines = SYNTH + [
    "# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 validation: 1",
    "#",
    "# Using devices",
]
for r in range(8):
    lines.append("#   Rank  %d Pid  12345 on      dgx1v device  %d [0x%02x] %s" % (r, r, [6, 7, 10, 11, 0x85, 0x86, 0x89, 0x8a][r], V100))
lines += table_old("all_reduce", 8, d)
write("all_reduce_perf-v100-old.log", lines)

# 4. all-gather on 8 A100, with the -I timing columns; the file name names the test
d = rows("all_gather", 8, 18.0, 220.0 * 8 / 7, pow2(1024, 1 << 30))
write("all_gather_perf-a100x8.log",
      SYNTH + [l for l in header_new("all_gather_perf", 8, ["dgxa100-01"], A100, 1024, 1 << 30) if "_perf" not in l]
      + table_new("all_gather", 8, d, redop="none", timing=True))

# 5. two nodes x 8 A100 through MPI (one process per GPU): 16 ranks on two hosts
d = rows("all_reduce", 16, 45.0, 90.0 * 16 / 30, pow2(1024, 1 << 30))
write("all_reduce_perf-a100-2nodes.log",
      SYNTH + header_new("all_reduce_perf", 16, ["node-a", "node-b"], A100, 1024, 1 << 30, ngpus=1)
      + table_new("all_reduce", 16, d))
