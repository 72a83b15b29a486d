"""Where the DALI backend's producer thread spends a steady epoch, and what one change to it does.

    python benchmarks/dali_stages.py --device cuda                      # bench-out/images/shards, every variant
    python benchmarks/dali_stages.py --variants base,dlpack --reps 4 --epochs 16 --mode eval

The backend's one producer thread feeds a batch to the graph and schedules it (`_submit`), then takes the
oldest scheduled batch's output (`_collect`, which includes handing it to torch, `_to_torch`). Each run is a
fresh process that reads `--epochs` steady epochs after an untimed one, with timers around those three
methods. The variants are the backend with one thing changed:

- base: the backend as it is;
- lag2: two batches scheduled ahead of the one collected instead of one (`DaliBackend._lag`);
- dlpack: on the GPU, torch takes DALI's output buffer through DLPack instead of copying it (on the CPU the
  backend does that already, so this is base);
- prefetch4: the loader's `prefetch=4` (default 2);
- threads-half: half the threads;
- packed: the per-sample numbers of a batch fed in one array instead of one per argument
  (benchmarks/dali_packed.py).

Runs are interleaved (every repetition runs every variant, the first one rotating), and every variant must
deliver the same first batch as base: a variant that changes the output fails the script.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import interleaved, json_lines, summarize, write_json  # noqa: E402

VARIANTS = ("base", "lag2", "dlpack", "prefetch4", "threads-half", "packed")
TIMED = ("_submit", "_collect", "_to_torch")


def _apply(variant: str, threads: int) -> dict[str, Any]:
    """Change the backend class for `variant`; return the loader options it changes."""
    from fastdata.images.dali_backend import DaliBackend

    if variant == "lag2":
        DaliBackend._lag = 2
    elif variant == "dlpack":
        import torch

        DaliBackend._to_torch = lambda self, dense: torch.from_dlpack(dense)
    elif variant == "prefetch4":
        return {"prefetch": 4}
    elif variant == "threads-half":
        return {"num_threads": max(1, threads // 2)}
    elif variant == "packed":
        from benchmarks.dali_packed import install

        install()
    return {}


def _timers(cls: type, names: tuple[str, ...]) -> tuple[dict[str, float], dict[str, int]]:
    spent: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)
    lock = threading.Lock()
    for name in names:
        inner = getattr(cls, name)

        def timed(self, *a, _inner=inner, _name=name, **k):
            t = time.perf_counter()
            try:
                return _inner(self, *a, **k)
            finally:
                with lock:
                    spent[_name] += time.perf_counter() - t
                    calls[_name] += 1
        setattr(cls, name, timed)
    return spent, calls


def run_one(shards: str, variant: str, mode: str, *, device: str, epochs: int, batch: int, threads: int,
            size: int = 224) -> dict[str, Any]:
    """One variant in this process: steady images/s, ms per batch in each timed method, the first batch's sum."""
    import torch

    import fastdata
    from fastdata.images.dali_backend import DaliBackend

    opts = {"num_threads": threads, **_apply(variant, threads)}
    spent, calls = _timers(DaliBackend, TIMED)
    loader = fastdata.loader(shards, split="train", backend="dali", batch_size=batch, train=mode == "train",
                             image_size=size, device=device, dtype="float32", seed=0, **opts)
    first = None
    images, t0 = 0, 0.0
    try:
        for epoch in range(epochs + 1):
            if epoch == 1:
                spent.clear()
                calls.clear()
                t0 = time.perf_counter()
            loader.set_epoch(epoch)
            for x, _ in loader:
                if first is None:
                    first = float(x.double().sum())
                images += len(x) if epoch else 0
            if device != "cpu":
                torch.cuda.synchronize()
        wall = time.perf_counter() - t0
    finally:
        loader.close()
    # per call: the producer runs ahead into the next epoch, so the calls timed are not exactly the batches delivered
    return {"variant": variant, "mode": mode, "images_per_s": images / wall, "first_batch_sum": first,
            "ms_per_batch": {k[1:]: 1e3 * spent[k] / max(calls[k], 1) for k in TIMED}, "batches": -(-images // batch)}


def _child(args: argparse.Namespace, variant: str, mode: str) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--one", variant, "--mode", mode, "--shards", args.shards, "--device",
           args.device, "--epochs", str(args.epochs), "--batch-size", str(args.batch_size), "--threads",
           str(args.threads)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    rows = json_lines(p.stdout)
    if p.returncode != 0 or not rows:
        raise SystemExit(f"variant {variant} ({mode}) failed with exit status {p.returncode}:\n{p.stderr[-2000:]}")
    return rows[-1]


def table(rows: list[dict[str, Any]], mode: str) -> str:
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r["mode"] == mode:
            by[r["variant"]].append(r)
    base = statistics.median(r["images_per_s"] for r in by["base"])
    out = [f"### {mode}\n", "| variant | images/s median | min | max | vs base | submit ms/batch | collect ms/batch "
           "| of which to torch |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for v, rs in by.items():
        ips = summarize([r["images_per_s"] for r in rs])
        ms = {k: statistics.median(r["ms_per_batch"][k] for r in rs) for k in ("submit", "collect", "to_torch")}
        out.append(f"| {v} | {ips['median']:.0f} | {ips['min']:.0f} | {ips['max']:.0f} | "
                   f"{ips['median'] / base:.2f}x | {ms['submit']:.2f} | {ms['collect']:.2f} | {ms['to_torch']:.2f} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shards", default=str(ROOT / "bench-out" / "images" / "shards"))
    p.add_argument("--device", default="auto", help="cpu, cuda or auto (cuda when there is one)")
    p.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, from {', '.join(VARIANTS)}")
    p.add_argument("--mode", choices=("train", "eval", "both"), default="both")
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--epochs", type=int, default=12, help="timed epochs of each run, after one untimed")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--timeout", type=float, default=300, help="seconds one run may take")
    p.add_argument("--json", help="write the runs as JSON rows here")
    p.add_argument("--one", help=argparse.SUPPRESS)  # a child process: one run, one JSON line
    args = p.parse_args(argv)
    if not Path(args.shards).is_dir():
        p.error(f"{args.shards} is not a dataset; run benchmarks/images_per_sec.py once (it converts one)")
    if args.device == "auto":
        import torch

        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    variants = [v for v in args.variants.split(",") if v]
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown or not variants:
        p.error(f"unknown variant(s) {unknown}; choose from {', '.join(VARIANTS)}")
    if "base" not in variants:
        variants.insert(0, "base")  # the reference of every ratio and of the output check
    modes = ["train", "eval"] if args.mode == "both" else [args.mode]
    if args.one:
        print(json.dumps(run_one(args.shards, args.one, modes[0], device=args.device, epochs=args.epochs,
                                 batch=args.batch_size, threads=args.threads)), flush=True)
        return []
    rows = []
    for mode in modes:
        for rep, v in interleaved(variants, args.reps):
            r = _child(args, v, mode) | {"rep": rep}
            print(f"{mode} rep {rep} {v}: {r['images_per_s']:.0f} images/s", file=sys.stderr, flush=True)
            rows.append(r)
    if args.json:
        write_json(Path(args.json), rows)
    print(f"DALI backend on {args.device}, {args.shards}: {args.reps} interleaved runs of each variant, "
          f"{args.epochs} steady epochs each, batch {args.batch_size}, {args.threads} threads")
    for mode in modes:
        print("\n" + table(rows, mode))
    base_sum = {r["mode"]: r["first_batch_sum"] for r in rows if r["variant"] == "base"}
    differ = sorted({f"{r['variant']} ({r['mode']})" for r in rows if r["first_batch_sum"] != base_sum[r["mode"]]})
    if differ:
        raise SystemExit(f"these variants delivered another first batch than base: {', '.join(differ)}")
    return rows


if __name__ == "__main__":
    main()
