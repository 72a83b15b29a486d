"""Images per second, side by side: what users run today against fastdata, in one interleaved run.

    python benchmarks/images_per_sec.py                       # real photos replicated into a tree
    python benchmarks/images_per_sec.py --raw ~/data/imagenet/train --images 0
    python benchmarks/images_per_sec.py --images 256 --reps 2 --batch-size 64   # a short run
    python benchmarks/images_per_sec.py --candidates dehfg --variant both --no-docs  # with FFCV (g)
    python benchmarks/images_per_sec.py --candidates dehfgm --epochs 4 --no-docs  # steady epochs; (m) the kernel floor
    python benchmarks/images_per_sec.py --candidates dehfg --channels-last --no-docs  # channels_last batches

The raw tree is converted once with `fastdata convert`; then every candidate builds a fresh loader
per repetition and iterates one epoch (with --epochs N: N epochs of that loader, the first untimed),
producing the same 224x224 normalised float32 batches (the ceiling only decodes). Results: JSON rows,
a table in docs/benchmarks.md and a PNG chart.
FFCV (g) runs in its own environment, .venv-ffcv (benchmarks/ffcv_candidate.py says how to create it);
without it, it is reported as not run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import (  # noqa: E402
    DOCS,
    environment,
    image_files,
    publish,
    replicate_photos,
    write_json,
)
from benchmarks.image_candidates import CANDIDATES, Spec, raw_split_folder  # noqa: E402
from benchmarks.image_report import markdown_section, summarize_rows  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    cores = os.cpu_count() or 1
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--raw", type=Path, help="ImageNet-style tree (class folders, or train/val/<class>); "
                   "default: the bundled photos replicated into --images files")
    p.add_argument("--images", type=int, default=1536,
                   help="size of the default tree built from the bundled photos (default 1536)")
    p.add_argument("--classes", type=int, default=8, help="class folders of the default tree (default 8)")
    p.add_argument("--work-dir", type=Path, default=Path("bench-out/images"),
                   help="where the default tree, the shards and the results go (default bench-out/images)")
    p.add_argument("--shards", type=Path, help="an already converted dataset of the same tree (skips converting)")
    p.add_argument("--variant", choices=["train", "eval", "both"], default="both",
                   help="train: random resized crop + flip; eval: resize + centre crop (default both)")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--reps", type=int, default=5, help="timed repetitions per candidate (default 5)")
    p.add_argument("--warmup-batches", type=int, default=2, help="batches of the untimed warm-up pass (default 2)")
    p.add_argument("--channels-last", action="store_true",
                   help="every candidate delivers NCHW batches in channels_last memory (fastdata's and FFCV's "
                   "default) instead of contiguous NCHW")
    p.add_argument("--epochs", type=int, default=1,
                   help="epochs of one loader per repetition; above 1 the first epoch is not timed, so images/s "
                   "and CPU ms/image are those of a training loop's later epochs (default 1: one epoch, start-up "
                   "included)")
    p.add_argument("--threads", type=int, default=cores, help=f"workers/threads for every candidate (default {cores})")
    p.add_argument("--candidates", default="abcdefh",
                   help="letters of the candidates to run (default abcdefh): " +
                   "; ".join(f"{c.key}: {c.label}" for c in CANDIDATES.values()))
    p.add_argument("--device", choices=["cpu", "cuda", "auto"], default="cpu",
                   help="where every candidate delivers its batches (default cpu; auto: cuda when there is one). "
                   "A cuda run writes its own docs section (images-cuda), beside the CPU one")
    p.add_argument("--json", type=Path, help="results file (default WORK_DIR/images_per_sec.json)")
    p.add_argument("--chart", type=Path, help="PNG chart (default WORK_DIR/images_per_sec.png)")
    p.add_argument("--docs", type=Path, default=DOCS, help="markdown file whose images section is rewritten")
    p.add_argument("--no-docs", action="store_true", help="do not touch the markdown file")
    args = p.parse_args(argv)
    unknown = sorted(set(args.candidates) - set(CANDIDATES))
    if unknown or not args.candidates:
        p.error(f"--candidates takes letters from {''.join(CANDIDATES)}, got {args.candidates!r}")
    for name in ("batch_size", "reps", "threads", "classes", "epochs"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.raw is None and args.images < 1:
        p.error("--images must be >= 1 when no --raw tree is given")
    if args.device != "cpu":
        import torch

        if args.device == "cuda" and not torch.cuda.is_available():
            p.error("--device cuda: torch sees no CUDA device here (torch.cuda.is_available() is False)")
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    return args


def convert_once(raw: Path, dst: Path, *, images: int, threads: int) -> float:
    """`fastdata convert` the tree (a no-op when dst already holds this conversion); returns seconds."""
    per_shard = max(16, images // 16)  # several shards per worker, like a real dataset's many shards
    cmd = [sys.executable, "-m", "fastdata", "convert", str(raw), str(dst), "--samples-per-shard", str(per_shard),
           "-j", str(threads), "--no-progress"]
    print("$ " + " ".join(cmd[2:]), flush=True)
    t = time.perf_counter()
    subprocess.run(cmd, check=True)
    return time.perf_counter() - t


def run_variant(args: argparse.Namespace, raw: Path, shards: Path, train: bool) -> list[dict]:
    from benchmarks.runner import run_interleaved
    from fastdata.dataset import open_dataset

    split = "train" if train or not (raw / "val").is_dir() else "val"
    images = sum(ref.info.samples for ref in open_dataset(shards, split=split).shards)
    spec = Spec(raw=str(raw_split_folder(raw, split)), shards=str(shards), split=split,
                batch_size=args.batch_size, train=train, threads=args.threads, image_size=args.image_size,
                device=args.device, epochs=args.epochs, images=images, channels_last=args.channels_last)
    if spec.epochs > 1 and spec.warmup_epoch_batches < 1:
        raise SystemExit(f"--epochs {args.epochs}: the split holds {images} images, less than one batch of "
                         f"{args.batch_size}")
    variant = "train" if train else "eval"
    return run_interleaved(args.candidates, spec, reps=args.reps, warmup_batches=args.warmup_batches,
                           tag=f"{variant} ", extra={"variant": variant},
                           show=lambda row: f"{row['images_per_s']:8.1f} images/s  ({row['images']} images, "
                                            f"{row['seconds']:.2f} s, CPU {row['cpu_percent']:.0f}%)")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    work = args.work_dir
    if args.raw is None:
        raw = replicate_photos(work / "raw", images=args.images, classes=args.classes)
        print(f"raw tree: {raw} ({args.images} copies of the bundled real photos in {args.classes} classes)")
    else:
        raw = args.raw
    n_raw = len(image_files(raw))
    shards = args.shards or work / "shards"
    convert_s = None if args.shards else convert_once(raw, shards, images=n_raw, threads=args.threads)
    env = environment()
    variants = [True, False] if args.variant == "both" else [args.variant == "train"]
    rows: list[dict] = []
    for train in variants:
        print(f"variant {'train' if train else 'eval'}: candidates {', '.join(args.candidates)}, {args.reps} reps, "
              f"batch {args.batch_size}, {args.threads} threads", flush=True)
        rows.extend(run_variant(args, raw, shards, train))
    summary = summarize_rows(rows)
    config = {"raw": str(raw), "raw_images": n_raw, "shards": str(shards), "batch_size": args.batch_size,
              "image_size": args.image_size, "reps": args.reps, "threads": args.threads,
              "warmup_batches": args.warmup_batches, "convert_seconds": convert_s, "device": args.device,
              "epochs": args.epochs, "channels_last": args.channels_last}
    out_json = write_json(args.json or work / "images_per_sec.json",
                          {"benchmark": "images_per_sec", "environment": env, "config": config, "rows": rows,
                           "summary": summary})
    print(f"results: {out_json}")
    png = "images_per_sec.png" if args.device == "cpu" else "images_per_sec_cuda.png"
    chart = args.chart or (work if args.no_docs else args.docs.parent) / png
    try:
        from benchmarks.plot import plot_images_per_sec

        plot_images_per_sec(summary, chart, title=f"{env['cpu']} ({env['cores']} cores)")
        print(f"chart: {chart}")
    except ImportError as exc:
        chart = None
        print(f"no chart ({exc}); pip install 'fastdata[bench]'")
    section = "images" if args.device == "cpu" else "images-cuda"
    publish(markdown_section(summary, env, config, chart=chart, docs=args.docs), docs=args.docs, name=section,
            write=not args.no_docs)
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
