"""Run benchmark candidates in separate worker processes, one per candidate, interleaved.

Each candidate lives in its own spawned process for the whole run (imports once; its memory and
CPU are measured apart from the others) and builds a fresh loader for every repetition. The parent
sends "run" commands in an interleaved order, so slow drifts of a shared machine hit every
candidate alike.
"""

from __future__ import annotations

import gc
import importlib
import json
import multiprocessing as mp
import os
import subprocess
import sys
import traceback
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
_REPLY = "@@fastdata-bench "  # prefixes an external worker's replies on its stdout (libraries print too)

IMAGES = "benchmarks.image_candidates"  # a candidates module: its `Spec` dataclass and `CANDIDATES` by key


def _describe(batch: Any) -> str:
    first = batch[0] if isinstance(batch, tuple) else batch
    if isinstance(first, list):
        first = first[0]
        return f"list of {type(first).__name__} {getattr(first, 'dtype', '')}{list(getattr(first, 'shape', []))}"
    shape = list(getattr(first, "shape", []))
    dtype = str(getattr(first, "dtype", "?")).replace("torch.", "")
    device = str(getattr(first, "device", "cpu"))
    layout = ""  # a 4-D tensor that is not contiguous NCHW says its memory format: candidates must deliver the same
    if len(shape) == 4 and hasattr(first, "is_contiguous") and not first.is_contiguous():
        import torch

        layout = " channels_last" if first.is_contiguous(memory_format=torch.channels_last) else " strided"
    return f"{dtype}{shape}{layout}" + ("" if device == "cpu" else f" on {device}")


def run_once(cand: Any, spec: Any, state: Any, *, max_batches: int | None) -> dict[str, Any]:
    """One timed repetition of one candidate: build, iterate, tear down, inside a resource monitor."""
    import torch

    from fastdata.perf.monitor import ResourceMonitor, tree_cpu_seconds
    from fastdata.perf.throughput import time_batches

    seen: dict[str, str] = {}
    cuda = torch.cuda.is_available()

    def check(batch: Any) -> None:
        if cuda:
            torch.cuda.synchronize()  # the batch has really arrived on the GPU, for every candidate alike
        if "output" not in seen:
            seen["output"] = _describe(batch)

    skip = getattr(spec, "warmup_epoch_batches", 0)  # several epochs of one loader: the first is not timed
    warm: dict[str, float] = {}
    gc.collect()
    before = tree_cpu_seconds()
    with ResourceMonitor() as mon:
        tp = time_batches(lambda: cand.build(spec, state), max_batches=max_batches, on_batch=check,
                          warmup_batches=skip, on_start=lambda: warm.setdefault("cpu_s", tree_cpu_seconds() - before))
        gc.collect()  # drop the loader (and join its workers) inside the measured block
    u = mon.usage
    cpu_s = max(u.cpu_s - warm.get("cpu_s", 0.0), 0.0)  # the timed epochs' CPU only
    return {
        "candidate": cand.key, "images": tp.images, "batches": tp.batches, "seconds": tp.seconds,
        "images_per_s": tp.images_per_s, "steady_images_per_s": tp.steady_images_per_s,
        "first_batch_s": tp.first_batch_s, "cpu_s": cpu_s,
        "cpu_ms_per_image": 1000.0 * cpu_s / tp.images if tp.images else 0.0, "block_s": u.wall_s,
        "cpu_percent": 100.0 * cpu_s / tp.seconds / u.cores if skip and tp.seconds > 0 else u.cpu_percent,
        "peak_rss": u.peak_rss, "output": seen.get("output", "?"),
    }


def worker_main(conn, key: str, spec_dict: dict[str, Any], start_method: str, module: str = IMAGES) -> None:
    # A spawned process defaults to spawning its own children; give DataLoader workers the start method
    # a user's script gets (fork on Linux), or every repetition of (a) and (b) would re-import torch.
    mp.set_start_method(start_method, force=True)
    candidates = importlib.import_module(module)
    spec = candidates.Spec(**spec_dict)
    try:
        cand = candidates.CANDIDATES[key]
        state = cand.setup(spec) if cand.setup else None
        conn.send({"ready": True})
    except BaseException:
        conn.send({"error": traceback.format_exc()})
        return
    while True:
        cmd = conn.recv()
        if cmd is None:
            return
        try:
            conn.send(run_once(cand, spec, state, max_batches=cmd.get("max_batches")))
        except BaseException:
            conn.send({"error": traceback.format_exc()})


class Worker:
    """The parent's handle on one candidate's process."""

    def __init__(self, key: str, spec: Any, module: str = IMAGES) -> None:
        ctx = mp.get_context("spawn")
        self.key = key
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=worker_main, args=(child, key, asdict(spec), mp.get_start_method(), module),
                                name=f"bench-{key}")
        self.proc.start()
        child.close()
        self.error: str | None = None
        self._ready = False

    def wait_ready(self) -> None:
        """Block until the process has imported and set up its candidate (start all, then wait on each)."""
        if not self._ready:
            reply = self._recv()
            self._ready = True
            if "error" in reply:
                self.error = reply["error"]

    def _recv(self) -> dict[str, Any]:
        try:
            return self.conn.recv()
        except EOFError:
            return {"error": f"worker process for candidate {self.key} died (exit code {self.proc.exitcode})"}

    def run(self, *, max_batches: int | None = None) -> dict[str, Any]:
        self.wait_ready()
        if self.error is not None:
            return {"candidate": self.key, "error": self.error}
        self._send({"max_batches": max_batches})
        reply = self._recv()
        if "error" in reply:
            return {"candidate": self.key, "error": reply["error"]}
        return reply

    def _send(self, command: dict[str, Any]) -> None:
        self.conn.send(command)

    def close(self) -> None:
        try:
            if self.proc.is_alive():
                self.conn.send(None)
        except OSError:
            pass
        self.proc.join(timeout=30)
        if self.proc.is_alive():
            self.proc.terminate()
            self.proc.join()


class ExternalWorker(Worker):
    """A candidate that needs another Python environment (its `python`, e.g. FFCV's): `Worker`'s protocol over
    the pipes of `python -m benchmarks.runner MODULE KEY SPEC`, with PYTHONPATH set to the repository so the
    child imports this module but keeps its own site-packages."""

    def __init__(self, key: str, spec: Any, module: str, python: Path, hint: str) -> None:
        self.key, self.error, self._ready = key, None, False
        self.proc: subprocess.Popen | None = None
        if not Path(python).exists():
            self.error, self._ready = f"not run: {python} does not exist ({hint})", True
            return
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen([str(python), "-m", "benchmarks.runner", module, key, json.dumps(asdict(spec))],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT, env=env)

    def _recv(self) -> dict[str, Any]:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(_REPLY):
                return json.loads(line[len(_REPLY):])
        return {"error": f"worker process for candidate {self.key} died (exit code {self.proc.wait()})"}

    def _send(self, command: dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        if self.proc is None:
            return
        try:
            if self.proc.poll() is None and self.proc.stdin is not None:
                self.proc.stdin.close()  # end of commands
        except OSError:
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def external_main(argv: list[str]) -> int:
    """The child side of ExternalWorker: set up the candidate, then one timed repetition per command line."""
    module, key, spec_json = argv

    def reply(obj: dict[str, Any]) -> None:
        sys.stdout.write(_REPLY + json.dumps(obj) + "\n")
        sys.stdout.flush()

    candidates = importlib.import_module(module)
    try:
        cand = candidates.CANDIDATES[key]
        spec = candidates.Spec(**json.loads(spec_json))
        state = cand.setup(spec) if cand.setup else None
        reply({"ready": True})
    except BaseException:
        reply({"error": traceback.format_exc()})
        return 1
    for line in sys.stdin:
        try:
            reply(run_once(cand, spec, state, max_batches=json.loads(line).get("max_batches")))
        except BaseException:
            reply({"error": traceback.format_exc()})
    return 0


def make_worker(key: str, spec: Any, module: str) -> Worker | ExternalWorker:
    """A `Worker`, or an `ExternalWorker` for a candidate that names its own `python`."""
    cand = importlib.import_module(module).CANDIDATES.get(key)
    python = getattr(cand, "python", None)
    if python is not None:
        return ExternalWorker(key, spec, module, python, getattr(cand, "install", ""))
    return Worker(key, spec, module)


def run_interleaved(keys: str, spec: Any, *, reps: int, warmup_batches: int, module: str = IMAGES,
                    tag: str = "", extra: dict[str, Any] | None = None,
                    show: Callable[[dict[str, Any]], str] = lambda row: "") -> list[dict[str, Any]]:
    """Every candidate of `keys` in its own process: started together, warmed up, then `reps` timed
    repetitions in interleaved order (`common.interleaved`). Returns one row per repetition (`extra` added to
    each); prints each as `show(row)` says, prefixed with `tag`."""
    from benchmarks.common import interleaved

    workers = {key: make_worker(key, spec, module) for key in keys}
    rows: list[dict[str, Any]] = []
    try:
        for key, w in workers.items():
            w.wait_ready()
            if w.error:
                print(f"  {key}: cannot start: {w.error.strip().splitlines()[-1]}", flush=True)
        for w in workers.values():
            w.run(max_batches=warmup_batches)
        for rep, key in interleaved(list(workers), reps):
            row = {**(extra or {}), "rep": rep, **workers[key].run()}
            rows.append(row)
            where = f"[{tag}rep {rep}] {key}"
            if "error" in row:
                print(f"  {where}: FAILED: {row['error'].strip().splitlines()[-1]}", flush=True)
            else:
                print(f"  {where}: {show(row)}", flush=True)
    finally:
        for w in workers.values():
            w.close()
    return rows


if __name__ == "__main__":
    sys.exit(external_main(sys.argv[1:]))
