"""Where the DALI backend's producer thread spends a steady epoch, and what one change to it does.

    python benchmarks/dali_stages.py --device cuda                      # bench-out/images/shards, every variant
    python benchmarks/dali_stages.py --variants base,dlpack --reps 4 --epochs 16 --mode eval

The backend's one producer thread feeds a batch to the graph and schedules it (`_submit`), then takes the
oldest scheduled batch's output (`_collect`, which includes handing it to torch, `_to_torch`). Each run is a
fresh process that reads `--epochs` steady epochs after an untimed one, with timers around those three
methods and around DALI's own `feed_input`, `schedule_run` and `outputs` inside them. Each timer takes the
wall time and the calling thread's CPU time (`time.thread_time`): where the CPU time is much less than the wall
time, the producer thread waits (for DALI, or for the GIL) rather than works. The variants are the backend
with one thing changed:

- base: the backend as it is;
- lag2: two batches scheduled ahead of the one collected instead of one (`DaliBackend._lag`);
- dlpack: on the GPU, torch takes DALI's output buffer through DLPack instead of copying it (on the CPU the
  backend does that already, so this is base);
- prefetch4: the loader's `prefetch=4` (default 2);
- threads-half: half the threads;
- packed: the per-sample numbers of a batch fed in one array instead of one per argument
  (benchmarks/dali_packed.py);
- nocopy: the encoded bytes fed with `no_copy=True`, so that DALI reads them where the loader holds them
  instead of copying them first (each batch's samples stay referenced until its output is taken);
- inline: no reading threads: the producer thread reads and prepares each sample itself as it submits it
  (`InlinePool`). The DALI backend's reading threads run only Python (the bytes, the label and header checks,
  the crop box); if they keep the producer thread waiting for the GIL, reading inline is faster, and if the
  producer thread is the one at work, slower.

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
from concurrent.futures import Future
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import interleaved, json_lines, summarize, write_json  # noqa: E402

VARIANTS = ("base", "lag2", "dlpack", "prefetch4", "threads-half", "packed", "nocopy", "inline")
TIMED = ("_submit", "_collect", "_to_torch")  # the backend's methods
PIPE_TIMED = ("feed_input", "schedule_run", "outputs")  # DALI's, called inside them
STAGES = ("submit", "collect", "to_torch", "feed_input", "schedule_run", "outputs")  # the columns, per batch


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
    elif variant == "nocopy":
        from fastdata.images import dali_graph

        def sources(args: Any) -> dict[str, Any]:
            from nvidia.dali import fn

            return {name: fn.external_source(name=name, no_copy=name == "encoded") for name in args.inputs}

        dali_graph.sources = sources
    elif variant == "inline":
        from fastdata.images import production

        production.ThreadPoolExecutor = InlinePool
    return {}


class InlinePool:
    """A pool without threads, in place of the producer's `ThreadPoolExecutor` (variant inline): each task runs in
    `submit`, on the calling thread, and its Future is done when it returns."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - the task's exception goes to its Future, as in a pool
            future.set_exception(exc)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        pass


class Timers:
    """Wall and CPU seconds, and calls, of methods patched with `patch`, by the method's name without its
    leading underscore."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self._lock = threading.Lock()

    def patch(self, cls: type, names: tuple[str, ...]) -> None:
        for name in names:
            inner, key = getattr(cls, name), name.lstrip("_")

            def timed(obj, *a, _inner=inner, _key=key, **k):
                t, c = time.perf_counter(), time.thread_time()
                try:
                    return _inner(obj, *a, **k)
                finally:
                    with self._lock:
                        self.wall[_key] += time.perf_counter() - t
                        self.cpu[_key] += time.thread_time() - c
                        self.calls[_key] += 1
            setattr(cls, name, timed)

    def clear(self) -> None:
        for d in (self.wall, self.cpu, self.calls):
            d.clear()

    def per_batch(self, spent: dict[str, float]) -> dict[str, float]:
        """ms per batch: a method's time over the batches submitted (DALI's `feed_input` runs once per input)."""
        batches = max(self.calls["submit"], 1)
        return {k: 1e3 * spent[k] / (batches if k in ("feed_input", "schedule_run") else max(self.calls[k], 1))
                for k in STAGES}

    def both_per_batch(self) -> tuple[dict[str, float], dict[str, float]]:
        """(wall, CPU) ms per batch from one snapshot: a call the producer finishes after the loader's close (it
        may still be in DALI) would otherwise be counted in the CPU times and not in the wall times read before."""
        with self._lock:
            return self.per_batch(self.wall), self.per_batch(self.cpu)


def run_one(shards: str, variant: str, mode: str, *, device: str, epochs: int, batch: int, threads: int,
            size: int = 224) -> dict[str, Any]:
    """One variant in this process: steady images/s, ms per batch in each timed method, the first batch's sum."""
    import torch
    from nvidia.dali.pipeline import Pipeline

    import fastdata
    from fastdata.images.dali_backend import DaliBackend

    opts = {"num_threads": threads, **_apply(variant, threads)}
    timers = Timers()
    timers.patch(DaliBackend, TIMED)
    timers.patch(Pipeline, PIPE_TIMED)
    loader = fastdata.loader(shards, split="train", backend="dali", batch_size=batch, train=mode == "train",
                             image_size=size, device=device, dtype="float32", seed=0, **opts)
    first = None
    images, t0 = 0, 0.0
    try:
        for epoch in range(epochs + 1):
            if epoch == 1:
                timers.clear()
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
    ms, cpu_ms = timers.both_per_batch()
    return {"variant": variant, "mode": mode, "images_per_s": images / wall, "first_batch_sum": first,
            "ms_per_batch": ms, "cpu_ms_per_batch": cpu_ms, "batches": -(-images // batch)}


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
    out = [f"### {mode}\n", "ms per batch on the producer thread, medians: wall time (CPU time of the thread)\n",
           "| variant | images/s median | min | max | vs base | submit | collect | of which to torch | DALI feed_input "
           "| DALI schedule_run | DALI outputs |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for v, rs in by.items():
        ips = summarize([r["images_per_s"] for r in rs])
        cells = []
        for k in STAGES:
            wall = statistics.median(r["ms_per_batch"][k] for r in rs)
            cpu = statistics.median(r["cpu_ms_per_batch"][k] for r in rs)
            cells.append(f"{wall:.2f} ({cpu:.2f})")
        out.append(f"| {v} | {ips['median']:.0f} | {ips['min']:.0f} | {ips['max']:.0f} | "
                   f"{ips['median'] / base:.2f}x | {' | '.join(cells)} |")
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
