#!/usr/bin/env python3
"""Extract measured NCCL and DeepEP tables from NVIDIA's aiconfigurator-core wheel to small CSVs.

Run once by hand (never in CI); the CSVs it writes are committed under examples/data/measured/.

    python3 -m venv /tmp/venv-aic && /tmp/venv-aic/bin/pip install pyarrow
    /tmp/venv-aic/bin/python scripts/extract_aiconfigurator.py [--version 0.12.0]

It runs `pip download aiconfigurator-core==VERSION --no-deps` into a temporary directory, checks
the wheel's licence metadata is Apache-2.0, reads the parquet tables straight out of the wheel (a
zip) with pyarrow, and writes:

* examples/data/measured/nccl_<gpu>.csv: one NCCL version per GPU type, fp16 (`half`) rows only.
  `message_size` in the package counts elements; we write bytes (2 per fp16 element). `latency`
  is in milliseconds; we write seconds.
* examples/data/measured/deepep_h100_sxm.csv: SGLang's DeepEP normal (24 SMs, the most the
  table measured) and low-latency tables on one 8-GPU H100 node, times in seconds.
"""

import argparse
import csv
import io
import pathlib
import subprocess
import sys
import tempfile
import zipfile

import pyarrow.parquet as pq

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "examples" / "data" / "measured"
DATA = "aiconfigurator_core/systems/data"
NCCL = {"h100_sxm": "2.29.2", "a100_sxm": "2.27.3"}
DEEPEP = ("h100_sxm", "0.5.12")
GPUS_PER_NODE = 8
NORMAL_SMS = 24


def download(version: str, dest: str) -> pathlib.Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "download", f"aiconfigurator-core=={version}",
         "--no-deps", "-d", dest],
        check=True,
    )
    return next(pathlib.Path(dest).glob("aiconfigurator_core-*.whl"))


def check_licence(wheel: zipfile.ZipFile) -> None:
    meta = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
    text = wheel.read(meta).decode()
    if "License-Expression: Apache-2.0" not in text:
        sys.exit("aiconfigurator-core is not declared Apache-2.0: refusing to extract")


def table(wheel: zipfile.ZipFile, path: str) -> dict:
    return pq.read_table(io.BytesIO(wheel.read(f"{DATA}/{path}"))).to_pydict()


def rows(d: dict):
    keys = list(d)
    for i in range(len(d[keys[0]])):
        yield {k: d[k][i] for k in keys}


def write_nccl(wheel: zipfile.ZipFile, gpu: str, version: str) -> None:
    d = table(wheel, f"{gpu}/comm/nccl/{version}/nccl_perf.parquet")
    out = OUT / f"nccl_{gpu}.csv"
    with out.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["gpu", "nccl_version", "collective", "gpus", "bytes", "seconds"])
        for r in sorted(rows(d), key=lambda r: (r["op_name"], r["num_gpus"], r["message_size"])):
            if r["nccl_dtype"] != "half":
                continue
            w.writerow([gpu, version, r["op_name"], r["num_gpus"], 2 * r["message_size"],
                        f"{r['latency'] * 1e-3:.6e}"])
    print("wrote", out)


def write_deepep(wheel: zipfile.ZipFile) -> None:
    gpu, version = DEEPEP
    base = f"{gpu}/comm/sglang/{version}"
    out = OUT / f"deepep_{gpu}.csv"
    with out.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["mode", "ranks", "hidden", "tokens", "top_k", "experts",
                    "dispatch_s", "combine_s"])
        normal = table(wheel, f"{base}/wideep_deepep_normal_perf.parquet")
        for r in rows(normal):
            if r["dispatch_sms"] != NORMAL_SMS or r["combine_sms"] != NORMAL_SMS:
                continue
            w.writerow(["normal", GPUS_PER_NODE * r["node_num"], r["hidden_size"], r["num_token"],
                        r["num_topk"], r["num_experts"],
                        f"{(r['dispatch_transmit_us'] + r['dispatch_notify_us']) * 1e-6:.6e}",
                        f"{(r['combine_transmit_us'] + r['combine_notify_us']) * 1e-6:.6e}"])
        ll = table(wheel, f"{base}/wideep_deepep_ll_perf.parquet")
        for r in rows(ll):
            w.writerow(["low-latency", GPUS_PER_NODE * r["node_num"], r["hidden_size"],
                        r["num_token"], r["num_topk"], r["num_experts"],
                        f"{r['dispatch_avg_t_us'] * 1e-6:.6e}",
                        f"{r['combine_avg_t_us'] * 1e-6:.6e}"])
    print("wrote", out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default="0.12.0")
    parser.add_argument("--wheel", help="use this wheel instead of downloading one")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(args.wheel) if args.wheel else download(args.version, tmp)
        with zipfile.ZipFile(path) as wheel:
            check_licence(wheel)
            for gpu, version in NCCL.items():
                write_nccl(wheel, gpu, version)
            write_deepep(wheel)


if __name__ == "__main__":
    main()
