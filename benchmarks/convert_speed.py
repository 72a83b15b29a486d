"""Conversion speed: `fastdata convert` against a straightforward single-process PIL loop, and -j scaling.

    python benchmarks/convert_speed.py                         # bundled photos replicated to 240 files
    python benchmarks/convert_speed.py --images 60 --reps 1 --no-docs   # a short run
    python benchmarks/convert_speed.py --images 2000 --jobs 2 --ray     # --executor ray against -j 2
    python benchmarks/convert_speed.py --tfrecords                      # also the same images as TFRecord files
    ray start --head --num-cpus 2 && python benchmarks/convert_speed.py --jobs 2 --ray --ray-address auto

Both sides run as fresh processes (interpreter start included), read the same raw tree, cap the
shorter side at 256 px and write quality-90 JPEGs; they are interleaved over the repetitions.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import (  # noqa: E402
    DOCS,
    environment,
    environment_markdown,
    image_files,
    interleaved,
    publish,
    replicate_photos,
    summarize,
    write_json,
)

SHORT_SIDE = 256
QUALITY = 90


def pil_loop(src: Path, dst: Path) -> int:
    """What one writes without a tool: open, RGB, resize the shorter side to 256, save; one file at a time."""
    from PIL import Image

    n = 0
    for path in image_files(src):
        with Image.open(path) as im:
            im = im.convert("RGB")
            w, h = im.size
            scale = SHORT_SIDE / min(w, h)
            if scale < 1:
                im = im.resize((max(1, round(w * scale)), max(1, round(h * scale))), Image.Resampling.BICUBIC)
            out = dst / path.relative_to(src).with_suffix(".jpg")
            out.parent.mkdir(parents=True, exist_ok=True)
            im.save(out, "JPEG", quality=QUALITY)
        n += 1
    return n


RAY_ADDRESS: str | None = None  # --ray-address: a running Ray cluster for the ray candidate


def tfrecord_tree(raw: Path, dst: Path) -> Path:
    """The images of the tree `raw` (`class/file.jpg`) as TFRecord files in TensorFlow's ImageNet layout, a file a
    class (`train-00000-of-00008`: image/encoded, image/class/synset), written by the tfrecord package."""
    from tfrecord import TFRecordWriter  # the dev extra

    if dst.exists():
        shutil.rmtree(dst)
    dst.mkdir(parents=True)
    classes = sorted(p for p in raw.iterdir() if p.is_dir())
    for k, folder in enumerate(classes):
        writer = TFRecordWriter(str(dst / f"train-{k:05d}-of-{len(classes):05d}"))
        for path in image_files(folder):
            writer.write({"image/encoded": (path.read_bytes(), "byte"),
                          "image/class/synset": (folder.name.encode(), "byte")})
        writer.close()
    return dst


def command(name: str, src: Path, dst: Path) -> list[str]:
    if name == "pil":
        return [sys.executable, str(Path(__file__).resolve()), "--pil-loop", str(src), str(dst)]
    ray = name.startswith("fastdata-ray-j")
    jobs = int(name.rsplit("-j", 1)[1])  # fastdata-j2, fastdata-ray-j2, fastdata-tfrecords-j1
    return [sys.executable, "-m", "fastdata", "convert", str(src), str(dst), "-j", str(jobs), "--no-progress",
            "--short-side", str(SHORT_SIDE), "--quality", str(QUALITY), "--samples-per-shard", "64",
            *(["--executor", "ray"] if ray else []), *(["--address", RAY_ADDRESS] if ray and RAY_ADDRESS else [])]


def label(name: str) -> str:
    if name == "pil":
        return "PIL loop, 1 process"
    if name.startswith("fastdata-ray-j"):
        where = f"running cluster {RAY_ADDRESS}" if RAY_ADDRESS else "local Ray"
        return f"fastdata convert --executor ray ({where}, {name.removeprefix('fastdata-ray-j')} CPUs)"
    if name.startswith("fastdata-tfrecords-j"):
        return f"fastdata convert -j {name.removeprefix('fastdata-tfrecords-j')}, the images in TFRecord files"
    return f"fastdata convert -j {name.removeprefix('fastdata-j')}"


def run_once(name: str, src: Path, dst: Path, images: int) -> dict:
    from fastdata.perf.monitor import ResourceMonitor

    if dst.exists():
        shutil.rmtree(dst)
    with ResourceMonitor(children_only=True) as mon:
        proc = subprocess.run(command(name, src, dst), capture_output=True, text=True)
    shutil.rmtree(dst, ignore_errors=True)
    if proc.returncode != 0:
        return {"candidate": name, "error": (proc.stderr or proc.stdout).strip()[-2000:]}
    u = mon.usage
    return {"candidate": name, "images": images, "seconds": u.wall_s, "images_per_s": images / u.wall_s,
            "cpu_percent": u.cpu_percent, "peak_rss": u.peak_rss}


def summarize_convert(rows: list[dict], names: list[str]) -> list[dict]:
    out = []
    for name in names:
        ok = [r for r in rows if r["candidate"] == name and "error" not in r]
        if not ok:
            continue
        out.append({"candidate": name, "label": label(name), "runs": len(ok),
                    "images_per_s": summarize([r["images_per_s"] for r in ok]),
                    "cpu_percent": summarize([r["cpu_percent"] for r in ok])["median"],
                    "peak_rss": max(r["peak_rss"] for r in ok)})
    base = next((e["images_per_s"]["median"] for e in out if e["candidate"] == "pil"), None)
    j1 = next((e["images_per_s"]["median"] for e in out if e["candidate"] == "fastdata-j1"), None)
    for e in out:
        if base:
            e["vs_pil"] = e["images_per_s"]["median"] / base
        if j1 and e["candidate"].startswith("fastdata-j"):
            e["vs_j1"] = e["images_per_s"]["median"] / j1
        if e["candidate"].startswith("fastdata-ray-j"):  # Ray against the local executor on the same CPUs
            local = next((x for x in out if x["candidate"] == e["candidate"].replace("-ray", "")), None)
            if local:
                e["vs_local"] = e["images_per_s"]["median"] / local["images_per_s"]["median"]
        if e["candidate"].startswith("fastdata-tfrecords-j"):  # against the same images as files, same -j
            files = next((x for x in out if x["candidate"] == e["candidate"].replace("-tfrecords", "")), None)
            if files:
                e["vs_files"] = e["images_per_s"]["median"] / files["images_per_s"]["median"]
    return out


def markdown(summary: list[dict], env: dict, config: dict, chart: Path | None, docs: Path) -> str:
    lines = [
        "## Conversion speed (`benchmarks/convert_speed.py`)", "",
        "*This section is rewritten by the script; numbers below are exactly what its last run measured.*", "",
        environment_markdown(env),
        f"- Data: {config['images']} JPEGs in `{config['raw']}`; every side caps the shorter side at "
        f"{SHORT_SIDE} px and "
        f"writes quality-{QUALITY} JPEGs (fastdata also writes tar shards, indexes and the manifest); "
        f"{config['reps']} interleaved repetitions; each run is a fresh process (start-up included).", "",
        "| candidate | images/s median | min | max | vs PIL loop | vs -j 1 | CPU % of machine | peak RSS MiB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for e in summary:
        s = e["images_per_s"]
        vs_pil = f"{e['vs_pil']:.2f}x" if "vs_pil" in e else "-"
        vs_j1 = f"{e['vs_j1']:.2f}x" if "vs_j1" in e else "-"
        lines.append(f"| {e['label']} | {s['median']:.1f} | {s['min']:.1f} | {s['max']:.1f} | {vs_pil} | {vs_j1} | "
                     f"{e['cpu_percent']:.0f} | {e['peak_rss'] / 2**20:.0f} |")
    for e in summary:
        if "vs_files" in e:
            lines += ["", f"{e['label']}: {e['vs_files']:.2f}x the images/s of the same images as files with the "
                          "same -j (records read one at a time, each frame's CRCs checked, each image spilled to "
                          "a temporary file on the way: docs/converting.md)."]
        if "vs_local" in e:
            lines += ["", f"{e['label']}: {e['vs_local']:.2f}x the images/s of the local executor on the same CPUs "
                          f"(Ray's overhead: start-up of the local instance and one task per 64-image shard; "
                          "docs/cluster.md has the cost model)."]
    if chart is not None:
        lines += ["", f"![conversion speed]({os.path.relpath(chart, docs.parent)})"]
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    cores = os.cpu_count() or 1
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--raw", type=Path, help="raw image tree (default: the bundled photos replicated)")
    p.add_argument("--images", type=int, default=240, help="size of the default tree (default 240)")
    p.add_argument("--jobs", default=",".join(str(j) for j in sorted({1, cores})),
                   help=f"comma-separated -j values for fastdata convert (default 1,{cores})")
    p.add_argument("--ray", action="store_true", help="also --executor ray with the largest --jobs value")
    p.add_argument("--ray-address", help="with --ray: a Ray cluster already running (`ray start --head`), so that "
                   "its start-up is not timed; default: each run starts a local instance")
    p.add_argument("--tfrecords", action="store_true",
                   help="also the same images as TFRecord files (TensorFlow's ImageNet layout), with -j 1")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--work-dir", type=Path, default=Path("bench-out/convert"))
    p.add_argument("--json", type=Path)
    p.add_argument("--chart", type=Path)
    p.add_argument("--docs", type=Path, default=DOCS)
    p.add_argument("--no-docs", action="store_true")
    p.add_argument("--pil-loop", nargs=2, metavar=("SRC", "DST"), type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    try:
        args.job_list = [int(j) for j in args.jobs.split(",") if j.strip()]
    except ValueError:
        p.error(f"--jobs takes comma-separated integers like 1,2, got {args.jobs!r}")
    if not args.job_list or any(j < 1 for j in args.job_list) or args.reps < 1 or args.images < 1:
        p.error("--jobs values, --reps and --images must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.pil_loop:
        pil_loop(*args.pil_loop)
        return 0
    global RAY_ADDRESS
    RAY_ADDRESS = args.ray_address
    work = args.work_dir
    raw = args.raw or replicate_photos(work / "raw", images=args.images)
    n = len(image_files(raw))
    names = ["pil", *[f"fastdata-j{j}" for j in args.job_list]]
    if args.ray:
        names.append(f"fastdata-ray-j{max(args.job_list)}")
    sources = {name: raw for name in names}
    if args.tfrecords:
        names.append("fastdata-tfrecords-j1")
        sources["fastdata-tfrecords-j1"] = tfrecord_tree(raw, work / "tfrecords")
    env = environment()
    rows = []
    for rep, name in interleaved(names, args.reps):
        row = {"rep": rep, **run_once(name, sources[name], work / f"out-{name}", n)}
        rows.append(row)
        shown = f"{row['images_per_s']:.1f} images/s" if "error" not in row else "FAILED: " + row["error"][-300:]
        print(f"  [rep {rep}] {label(name)}: {shown}", flush=True)
    summary = summarize_convert(rows, names)
    config = {"raw": str(raw), "images": n, "reps": args.reps, "jobs": args.job_list}
    out = write_json(args.json or work / "convert_speed.json",
                     {"benchmark": "convert_speed", "environment": env, "config": config, "rows": rows,
                      "summary": summary})
    print(f"results: {out}")
    chart = args.chart or (work if args.no_docs else args.docs.parent) / "convert_speed.png"
    try:
        from benchmarks.plot import plot_convert_speed

        plot_convert_speed(summary, chart, title=f"{env['cpu']} ({env['cores']} cores)")
    except ImportError:
        chart = None
    publish(markdown(summary, env, config, chart, args.docs), docs=args.docs, name="convert", write=not args.no_docs)
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
