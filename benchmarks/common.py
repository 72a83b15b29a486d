"""Shared helpers of the benchmark scripts: environment capture, statistics, interleaved schedules,
JSON rows, a replicated photo tree, and rewriting one marked section of docs/benchmarks.md."""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # scripts run as `python benchmarks/x.py`; make `fastdata` importable from the checkout
    sys.path.insert(0, str(ROOT))

SAMPLES = ROOT / "tests" / "data"  # real data bundled in the repository
PHOTOS = SAMPLES / "photos"
DOCS = ROOT / "docs" / "benchmarks.md"
PACKAGES = ("fastdata", "torch", "torchvision", "nvidia-dali-cuda120", "kornia", "simplejpeg", "webdataset",
            "pillow", "numpy", "psutil")
# DALI is one package built per CUDA major version: a machine with CUDA 13 has nvidia-dali-cuda130 instead
DALI_BUILDS = ("nvidia-dali-cuda120", "nvidia-dali-cuda130", "nvidia-dali-cuda110")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_bytes() -> int | None:
    try:
        import psutil

        return int(psutil.virtual_memory().total)
    except ImportError:
        return None


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                             timeout=10)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def versions(packages: Sequence[str] = PACKAGES) -> dict[str, str]:
    out = {"python": platform.python_version()}
    found = _installed(packages)
    for name in packages:
        if name in found:
            out[name] = found[name]
        elif name in DALI_BUILDS:  # another CUDA build of DALI stands in for the one named
            out.update(_installed(DALI_BUILDS) or {name: "not installed"})
        else:
            out[name] = "not installed"
    return out


def _installed(names: Sequence[str]) -> dict[str, str]:
    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def environment() -> dict[str, Any]:
    """Machine, software and command of this run; stored with every result."""
    cores = os.cpu_count() or 1
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores
    gpu = None
    try:
        import torch

        if torch.cuda.is_available():
            gpu = torch.cuda.get_device_name(0)
    except ImportError:
        pass
    return {
        "date_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": _cpu_model(),
        "cores": cores,
        "usable_cores": usable,
        "memory_bytes": _memory_bytes(),
        "gpu": gpu,
        "os": f"{platform.system()} {platform.release()}",
        "load_avg": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "versions": versions(),
        "git_commit": _git_commit(),
        "command": " ".join(shlex.quote(a) for a in [Path(sys.executable).name, *sys.argv]),
    }


def summarize(values: Sequence[float]) -> dict[str, float]:
    if not values:
        raise ValueError("summarize() needs at least one value")
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def interleaved(names: Sequence[str], reps: int) -> list[tuple[int, str]]:
    """(rep, name) in run order: every repetition runs each candidate once, and the starting
    candidate rotates so that no candidate always runs first (or right after the same one)."""
    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps}")
    order = []
    for rep in range(reps):
        k = rep % len(names)
        order.extend((rep, n) for n in [*names[k:], *names[:k]])
    return order


def json_lines(stdout: str) -> list[dict[str, Any]]:
    """The JSON objects a child process printed one per line (its other output left out), in order."""
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def write_json(path: Path, obj: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=1, sort_keys=False, default=str) + "\n")
    os.replace(tmp, path)
    return path


def replace_section(path: Path, name: str, body: str, *, title: str = "# Benchmarks") -> None:
    """Rewrite the text between `<!-- name:begin -->` and `<!-- name:end -->` in `path`, leaving
    everything else (other scripts' sections) untouched; append the section if it is missing."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    block = f"{begin}\n{body.strip()}\n{end}"
    text = path.read_text() if path.exists() else f"{title}\n"
    if text.count(begin) > 1 or text.count(end) > 1:
        raise ValueError(f"{path} holds the marker for section {name!r} more than once; fix the file by hand")
    if begin in text and end in text and text.index(begin) < text.index(end):
        head, rest = text.split(begin, 1)
        tail = rest.split(end, 1)[1]
        text = head + block + tail
    elif begin in text or end in text:
        raise ValueError(f"{path} has only one of the markers {begin} / {end}; fix the file by hand")
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def publish(section: str, *, docs: Path, name: str, write: bool) -> None:
    """Print a results section and, when `write` (no --no-docs), rewrite section `name` of `docs` with it."""
    print()
    print(section)
    if write:
        replace_section(docs, name, section)
        print(f"wrote the {name} section of {docs}")


def environment_markdown(env: dict[str, Any]) -> str:
    v = env["versions"]
    mem = f", {env['memory_bytes'] / 2**30:.0f} GiB RAM" if env.get("memory_bytes") else ""
    gpu = env.get("gpu") or "no GPU"
    load = env.get("load_avg")
    load_text = f"; load average at start {load[0]:.2f}" if load else ""
    soft = ", ".join(f"{k} {val}" for k, val in v.items() if val != "not installed")
    return (f"- Machine: {env['cpu']}, {env['cores']} cores ({env['usable_cores']} usable){mem}, {gpu}; "
            f"{env['os']}{load_text}\n"
            f"- Software: {soft}\n"
            f"- Date: {env['date_utc']}; commit {env.get('git_commit') or 'unknown'}\n"
            f"- Command: `{env['command']}`")


def image_files(folder: Path) -> list[Path]:
    """The image files (.jpg, .jpeg, .png, any case) anywhere under `folder`, sorted."""
    return sorted(p for p in folder.rglob("*") if p.suffix.lower() in (".jpg", ".jpeg", ".png") and p.is_file())


def replicate_photos(dst: Path, *, images: int, classes: int = 8, src: Path = PHOTOS) -> Path:
    """An ImageNet-style tree `dst/class_k/rNN_name.jpg` of `images` real photos, copied round-robin
    from `src` (each photo repeated as often as needed). Reuses `dst` if it already matches."""
    photos = sorted(p for p in src.glob("*") if p.suffix.lower() in (".jpg", ".jpeg"))
    if not photos:
        raise FileNotFoundError(f"no JPEG photos in {src}")
    if images < 1 or classes < 1:
        raise ValueError(f"images and classes must be >= 1, got images={images}, classes={classes}")
    stamp = dst.with_name(dst.name + ".replicated.json")  # beside the tree: readers must see only images
    want = {"src": str(src), "images": images, "classes": classes, "photos": [p.name for p in photos]}
    if stamp.exists() and json.loads(stamp.read_text()) == want:
        return dst
    if dst.exists():
        shutil.rmtree(dst)
    for i in range(images):
        p = photos[i % len(photos)]
        folder = dst / f"class_{i % classes:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, folder / f"r{i // len(photos):03d}_{p.name}")
    stamp.write_text(json.dumps(want))
    return dst
