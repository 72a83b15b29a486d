"""Image-text pairs per second, side by side in one interleaved run: the OpenCLIP-style webdataset pipeline, plain
DALI with a txt member, and fastdata (stored token ids, or tokenized at load), on the same shards.

    python benchmarks/pairs_per_sec.py                           # 1536 pairs from the bundled photos + captions
    python benchmarks/pairs_per_sec.py --pairs 256 --reps 1 --no-docs   # a short run

The pairs are the bundled captioned photos replicated; they are converted twice with `fastdata convert`
(with `--tokenizer --max-length 77`, and without: the jpg + txt + json shards img2dataset writes). Every
candidate builds a fresh loader per repetition and yields [B, 3, 224, 224] float32 images and [B, 77] ids.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import DOCS, SAMPLES, environment, environment_markdown, publish  # noqa: E402
from benchmarks.common import write_json as save_json  # noqa: E402
from benchmarks.pair_candidates import CANDIDATES, Spec  # noqa: E402

MODULE = "benchmarks.pair_candidates"
TOKENIZER = SAMPLES / "tokenizers" / "bert-base-uncased.json"
CAPTIONS = SAMPLES / "captions" / "captions_photos.json"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    cores = os.cpu_count() or 1
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pairs", type=int, default=1536, help="pairs in the replicated set (default 1536)")
    p.add_argument("--work-dir", type=Path, default=Path("bench-out/pairs"))
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--reps", type=int, default=3, help="timed repetitions per candidate (default 3)")
    p.add_argument("--warmup-batches", type=int, default=2)
    p.add_argument("--threads", type=int, default=cores, help=f"workers/threads for every candidate (default {cores})")
    p.add_argument("--candidates", default="abcde", help="letters of the candidates (default abcde): " +
                   "; ".join(f"{c.key}: {c.label}" for c in CANDIDATES.values()))
    p.add_argument("--docs", type=Path, default=DOCS, help="markdown file whose pairs section is rewritten")
    p.add_argument("--no-docs", action="store_true", help="do not touch the markdown file")
    args = p.parse_args(argv)
    if set(args.candidates) - set(CANDIDATES) or not args.candidates:
        p.error(f"--candidates takes letters from {''.join(CANDIDATES)}, got {args.candidates!r}")
    for name in ("pairs", "batch_size", "reps", "threads"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    return args


def replicate_pairs(dst: Path, *, pairs: int) -> Path:
    """`dst/rNNN_<photo>.jpg` + `.txt` (that photo's bundled captions, one a line), `pairs` of them."""
    coco = json.loads(CAPTIONS.read_text())
    names = {im["id"]: im["file_name"] for im in coco["images"]}
    captions: dict[str, list[str]] = {}
    for ann in coco["annotations"]:
        captions.setdefault(names[ann["image_id"]], []).append(ann["caption"])
    photos = sorted(captions)
    if dst.exists():
        shutil.rmtree(dst)
    dst.mkdir(parents=True)
    for i in range(pairs):
        name = photos[i % len(photos)]
        stem = f"r{i // len(photos):04d}_{Path(name).stem}"
        shutil.copyfile(SAMPLES / "photos" / name, dst / f"{stem}.jpg")
        (dst / f"{stem}.txt").write_text("\n".join(captions[name]) + "\n")
    return dst


def convert(raw: Path, dst: Path, *, threads: int, pairs: int, tokenize: bool) -> float:
    cmd = [sys.executable, "-m", "fastdata", "convert", str(raw), str(dst), "--kind", "image_text",
           "--samples-per-shard", str(max(16, pairs // 16)), "-j", str(threads), "--no-progress"]
    if tokenize:
        cmd += ["--tokenizer", str(TOKENIZER), "--max-length", "77"]
    print("$ " + " ".join(cmd[2:]), flush=True)
    t = time.perf_counter()
    subprocess.run(cmd, check=True)
    return time.perf_counter() - t


def run(args: argparse.Namespace, spec: Spec) -> list[dict]:
    from benchmarks.runner import run_interleaved

    return run_interleaved(args.candidates, spec, reps=args.reps, warmup_batches=args.warmup_batches, module=MODULE,
                           show=lambda row: f"{row['images_per_s']:8.1f} pairs/s  ({row['images']} pairs, "
                                            f"{row['seconds']:.2f} s, CPU {row['cpu_ms_per_image']:.2f} ms/pair)")


def summarize(rows: list[dict]) -> list[dict]:
    out = []
    for key, cand in CANDIDATES.items():
        ok = [r for r in rows if r.get("candidate") == key and "error" not in r]
        if ok:
            out.append({"candidate": key, "label": cand.label, "reps": len(ok),
                        "pairs_per_s": statistics.median(r["images_per_s"] for r in ok),
                        "min": min(r["images_per_s"] for r in ok), "max": max(r["images_per_s"] for r in ok),
                        "cpu_ms_per_pair": statistics.median(r["cpu_ms_per_image"] for r in ok),
                        "first_batch_s": statistics.median(r["first_batch_s"] for r in ok),
                        "output": ok[0]["output"]})
    base = next((s["pairs_per_s"] for s in out if s["candidate"] == "a"), None)
    for s in out:
        s["vs_a"] = s["pairs_per_s"] / base if base else None
    return out


def markdown(summary: list[dict], env: dict, config: dict) -> str:
    lines = ["## Image-text pairs per second (CLIP-style training batches)", "",
             f"{config['pairs']} pairs (the bundled captioned photos replicated), batch {config['batch_size']}, "
             f"{config['threads']} threads/workers, 224x224 float32 images and 77 token ids a caption, median of "
             f"{config['reps']} interleaved repetitions after a warm-up; CPU ms/pair counts every process of a "
             "candidate.", "",
             "| | candidate | pairs/s (min-max) | vs (a) | CPU ms/pair | first batch s |",
             "|---|---|---|---|---|---|"]
    for s in summary:
        ratio = f"{s['vs_a']:.2f}x" if s["vs_a"] else "-"
        lines.append(f"| {s['candidate']} | {s['label']} | {s['pairs_per_s']:.0f} ({s['min']:.0f}-{s['max']:.0f}) "
                     f"| {ratio} | {s['cpu_ms_per_pair']:.2f} | {s['first_batch_s']:.2f} |")
    lines += ["", "Target (issue #16): fastdata >= 2x the OpenCLIP-style pipeline (a).", "",
              environment_markdown(env)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    raw = replicate_pairs(args.work_dir / "raw", pairs=args.pairs)
    shards, plain = args.work_dir / "shards", args.work_dir / "plain"
    for d in (shards, plain):
        if d.exists():
            shutil.rmtree(d)
    seconds = {"with ids": convert(raw, shards, threads=args.threads, pairs=args.pairs, tokenize=True),
               "without ids": convert(raw, plain, threads=args.threads, pairs=args.pairs, tokenize=False)}
    spec = Spec(shards=str(shards), plain=str(plain), tokenizer=str(TOKENIZER), batch_size=args.batch_size,
                threads=args.threads)
    env = environment()
    rows = run(args, spec)
    summary = summarize(rows)
    config = {"pairs": args.pairs, "batch_size": args.batch_size, "threads": args.threads, "reps": args.reps,
              "convert_seconds": seconds}
    out = save_json(args.work_dir / "pairs_per_sec.json", {"benchmark": "pairs_per_sec", "environment": env,
                                                           "config": config, "rows": rows, "summary": summary})
    print(f"results: {out}")
    publish(markdown(summary, env, config), docs=args.docs, name="pairs", write=not args.no_docs)
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
