"""`fastdata doctor DATASET --model NAME`: is the training step waiting for data, and what to change."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile

MAX_STEPS = 100_000  # steps a phase may measure (or warm up with)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help="measure how much of a training step waits for data",
                       description="Run a few training steps of a model fed by fastdata.loader(DATASET), then the "
                                   "same steps on one batch already on the device, and report the share of step "
                                   "time spent waiting for data, a verdict and what to change.")
    p.add_argument("dataset", help="converted images dataset directory (or a shard glob)")
    p.add_argument("--model", help="torchvision model name (e.g. resnet50), 'tiny-cnn', or your own "
                   "'module:callable' returning an nn.Module (default: resnet50 on CUDA, resnet18 on CPU)")
    p.add_argument("--batch-size", type=int, help="default 256 on CUDA, 32 on CPU")
    p.add_argument("--image-size", type=int, help="default 224 on CUDA, 128 on CPU")
    p.add_argument("--backend", choices=["dali", "kornia"],
                   help="default: dali on a CUDA device when installed, else kornia (the faster one there)")
    p.add_argument("--device", help="cpu, cuda or cuda:N (default: cuda when available)")
    p.add_argument("--split", help="split to read (default: train)")
    p.add_argument("--num-threads", type=int, help="loader threads (default: the loader's)")
    p.add_argument("--prefetch", type=int, help="loader prefetch depth (default: the loader's)")
    p.add_argument("--dtype", choices=["float32", "float16", "bfloat16", "uint8"], default="float32",
                   help="the loader's output dtype (default float32)")
    p.add_argument("--steps", type=int, default=10, help="measured steps per phase (default 10)")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps first (default 2)")
    p.add_argument("--no-profiler", action="store_true", help="wall clock only, without torch.profiler")
    p.add_argument("--trace", help="write the profiler's Chrome trace of the fed steps to this file")
    p.add_argument("--json", action="store_true", help="print the measurements as JSON")


_KINETO_NOISE = ("USDT:", "gpuGetDeviceCount failed")  # lines the profiler's C++ side prints on every start/stop


@contextlib.contextmanager
def _profiler_noise_filtered():
    """Route the process's stderr (fd 2) through a file while profiling, then pass on every line but
    the profiler library's own start/stop chatter. Python warnings and errors still come out."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            for line in tmp.read().decode(errors="replace").splitlines(keepends=True):
                if not any(noise in line for noise in _KINETO_NOISE):
                    sys.stderr.write(line)
            sys.stderr.flush()


def run(args: argparse.Namespace) -> int:
    import fastdata
    from fastdata.images.loader import build_options
    from fastdata.perf.doctor import diagnose, verdict
    from fastdata.perf.models import TINY, build_model, default_model, default_unavailable

    if not 1 <= args.steps <= MAX_STEPS or not 0 <= args.warmup <= MAX_STEPS:
        raise ValueError(f"--steps must be 1 to {MAX_STEPS:,} and --warmup 0 to {MAX_STEPS:,} (a diagnosis, not a "
                         "training run)")
    device = build_options(device=args.device).device
    cpu = device == "cpu"
    model_name = args.model or default_model(device)
    fallback = None if args.model else default_unavailable()  # no torchvision: a tiny CNN, said below
    if fallback:
        model_name = TINY
    batch_size = args.batch_size or (32 if cpu else 256)
    image_size = args.image_size or (128 if cpu else 224)
    opts = {"batch_size": batch_size, "image_size": image_size, "device": device, "dtype": args.dtype,
            "train": True}
    for name in ("backend", "split", "num_threads", "prefetch"):
        if getattr(args, name) is not None:
            opts[name] = getattr(args, name)
    loader = fastdata.loader(args.dataset, **opts)
    o = loader.options
    model = build_model(model_name, num_classes=max(1, len(loader.classes)))
    params = sum(p.numel() for p in model.parameters())
    if not args.json:
        why = ("; a small model at a small size because this run is on CPU (pass --model/--image-size to choose)"
               if cpu and not (args.model and args.image_size) else "")
        if fallback:
            why = (f"; {TINY}, not {default_model(device)}, because {fallback}: install the torchvision release "
                   "made for your torch, or pass --model module:callable")
        print(f"fastdata doctor {args.dataset}: model {model_name} ({params / 1e6:.1f}M parameters, random weights)"
              f"{why}")
        print(f"  loader: backend={o.backend} device={o.device} batch_size={o.batch_size} image_size={o.image_size} "
              f"dtype={o.dtype} num_threads={o.num_threads} prefetch={o.prefetch}; {args.steps} steps per phase "
              f"after {args.warmup} warm-up", flush=True)
    held = [loader]
    del loader  # diagnose() holds the only reference and releases the loader before the resident phase
    with _profiler_noise_filtered() if not args.no_profiler else contextlib.nullcontext():
        d = diagnose(held.pop(), model, device=device, steps=args.steps, warmup=args.warmup,
                     profile=not args.no_profiler, trace=args.trace, channels_last=o.channels_last)
    v = verdict(d, batch_size=o.batch_size, device=device, backend=o.backend, num_threads=o.num_threads,
                prefetch=o.prefetch)
    if args.json:
        print(json.dumps({
            "model": model_name, "model_fallback": fallback,
            "options": {k: getattr(o, k) for k in ("backend", "device", "batch_size", "image_size", "dtype",
                                                   "num_threads", "prefetch")},
            "fed": {"wait_s": d.fed.wait_s, "step_s": d.fed.step_s, "images": d.fed.images},
            "resident": {"step_s": d.resident.step_s, "images": d.resident.images},
            "wait_fraction": d.fed.wait_fraction, "profiler_wait_fraction": d.profiler_wait_fraction,
            "slowdown": d.slowdown, "level": v.level, "summary": v.summary, "advice": list(v.advice),
        }, indent=1))
        return 0
    fed, res = d.fed, d.resident
    prof = (f" (profiler \"DataLoader\" share: {d.profiler_wait_fraction:.0%})"
            if d.profiler_wait_fraction is not None else "")
    wait_ms = sum(fed.wait_s) / len(fed.wait_s) * 1000
    print(f"\nfed by the loader:        step {fed.median_step_s * 1000:8.1f} ms median, {fed.images_per_s:8.1f} "
          f"images/s; waiting for data {wait_ms:.1f} ms/step = {fed.wait_fraction:.0%} of "
          f"step time{prof}")
    print(f"batch already on device:  step {res.median_step_s * 1000:8.1f} ms median, {res.images_per_s:8.1f} "
          f"images/s (fed steps take {d.slowdown:.2f}x as long)")
    print(f"\nverdict: {v.summary}")
    print("what to change:")
    for line in v.advice:
        print(f"  - {line}")
    if args.trace:
        print(f"profiler trace: {args.trace} (open in chrome://tracing or https://ui.perfetto.dev)")
    return 0
