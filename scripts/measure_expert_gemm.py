#!/usr/bin/env python3
"""Measure grouped expert GEMM throughput against tokens per expert on one GPU.

The MoE training planner (`rail_network::moe::efficiency`) scales the GEMM rate of an expert
layer by the smooth roofline ``n / (n + ridge)``, where ``n`` is the number of tokens per expert
and ``ridge = peak FLOP/s / HBM bytes/s`` comes from the GPU's datasheet. This script measures
what a real GPU does, so that the roofline can be checked against data instead of trusted.

Method (forward pass only, BF16, PyTorch's batched GEMM standing in for a grouped GEMM with equal
token counts per expert):

* for each expert shape (hidden ``h``, expert FFN width ``f``) and each ``n`` in 1..16384 tokens,
  ``E`` local experts each run the up projection ``[n, h] x [h, 2f]`` (gate and up fused, as
  SwiGLU experts do) and the down projection ``[n, f] x [f, h]``;
* each case runs 5 warm-up iterations, then ``reps`` timed iterations with CUDA events; the
  median time is kept;
* achieved FLOP/s = ``2 * E * n * (h * 2f + f * h) / median``.

Output: one CSV row per (shape, n) on stdout or ``--out``: device name, shape, experts, tokens
per expert, median seconds, achieved TFLOP/s. Needs torch with CUDA; exits with a message
otherwise.

Usage: ``python scripts/measure_expert_gemm.py --out expert_gemm.csv``
"""

import argparse
import csv
import statistics
import sys

SHAPES = [
    # name, hidden h, expert FFN width f, local experts E (per GPU, a typical EP layout)
    ("deepseek-v3", 7168, 2048, 8),
    ("qwen3-235b-a22b", 4096, 1536, 8),
    ("mixtral-8x22b", 6144, 16384, 2),
]
TOKENS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="-", help="CSV file (default: stdout)")
    ap.add_argument("--reps", type=int, default=20, help="timed iterations per case (default 20)")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("torch is not installed", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    name = torch.cuda.get_device_name(dev)
    out = sys.stdout if args.out == "-" else open(args.out, "w", newline="")
    w = csv.writer(out)
    w.writerow(["device", "shape", "hidden", "ffn", "experts", "tokens_per_expert", "median_s", "tflops"])
    for shape, h, f, e in SHAPES:
        w_up = torch.randn(e, h, 2 * f, device=dev, dtype=torch.bfloat16)
        w_down = torch.randn(e, f, h, device=dev, dtype=torch.bfloat16)
        for n in TOKENS:
            x = torch.randn(e, n, h, device=dev, dtype=torch.bfloat16)
            y = torch.randn(e, n, f, device=dev, dtype=torch.bfloat16)

            def step():
                torch.bmm(x, w_up)
                torch.bmm(y, w_down)

            for _ in range(5):
                step()
            torch.cuda.synchronize()
            times = []
            for _ in range(args.reps):
                a = torch.cuda.Event(enable_timing=True)
                b = torch.cuda.Event(enable_timing=True)
                a.record()
                step()
                b.record()
                b.synchronize()
                times.append(a.elapsed_time(b) / 1e3)
            med = statistics.median(times)
            flops = 2.0 * e * n * (h * 2 * f + f * h)
            w.writerow([name, shape, h, f, e, n, f"{med:.6e}", f"{flops / med / 1e12:.2f}"])
            out.flush()
            del x, y
        del w_up, w_down
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
