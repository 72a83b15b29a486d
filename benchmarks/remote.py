"""Streaming from object storage, side by side on one local S3 server (moto, 127.0.0.1), same images:

    python benchmarks/remote.py                        # 2,000 real photos, 3 repetitions, 2 epochs each
    python benchmarks/remote.py --images 500 --reps 1  # a short run

Candidates (each a fresh process per repetition; epoch 0 cold, the next ones warm):
  fastdata-s3      fastdata.loader("s3://...") through its node cache (a fresh cache each repetition)
  fastdata-local   fastdata.loader on the same shards on local disk (the ceiling)
  mds              MosaicML Streaming StreamingDataset(remote="s3://...") + DataLoader(num_workers=threads)
  litdata          LitData StreamingDataset("s3://...") + StreamingDataLoader(num_workers=threads)
MDS and LitData hold the very JPEG bytes of fastdata's shards (written with MDSWriter and litdata.optimize)
and decode them with PIL + torchvision v2 RandomResizedCrop(224) + flip + normalise, as their docs show.
They run in their own environment (`--peers-python`, default .venv-peers/bin/python; create it with
`python -m venv .venv-peers && .venv-peers/bin/pip install torch==2.14.1 torchvision==0.29.1 mosaicml-streaming
litdata boto3 pillow psutil`); without it they are reported as not run. Writes bench-out/remote.json, a chart
and the `remote` section of docs/benchmarks.md (with --no-docs: the chart into bench-out/, docs/ untouched).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import (  # noqa: E402
    DOCS,
    ROOT,
    environment,
    environment_markdown,
    interleaved,
    json_lines,
    publish,
    replicate_photos,
    summarize,
    write_json,
)

LABELS = {"fastdata-s3": "fastdata from S3 (node cache)", "fastdata-local": "fastdata, local disk",
          "mds": "MosaicML Streaming (MDS) from S3", "litdata": "LitData from S3"}
PEERS = ("mds", "litdata")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--images", type=int, default=2000)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--threads", type=int, default=2, help="fastdata num_threads / peers' num_workers")
    p.add_argument("--backend", default="dali", choices=["dali", "kornia"])
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--epochs", type=int, default=3, help="epochs per repetition (the first is cold)")
    p.add_argument("--shard-size", default="16MB", help="shard size of every format")
    p.add_argument("--peers-python", type=Path, default=ROOT / ".venv-peers" / "bin" / "python")
    p.add_argument("--candidates", default="fastdata-s3,fastdata-local,mds,litdata")
    p.add_argument("--work-dir", type=Path, default=Path("bench-out") / "remote")
    p.add_argument("--no-docs", action="store_true")
    return p.parse_args(argv)


def _run(cmd: list[str], *, env: dict[str, str], python: Path | None = None) -> str:
    exe = [str(python)] if python else [sys.executable]
    done = subprocess.run(exe + cmd, env=env, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done.stdout


def prepare(args: argparse.Namespace, work: Path, env: dict[str, str], options: dict[str, str]) -> dict[str, Any]:
    """Photos -> fastdata shards (local) -> the same JPEG bytes as MDS and LitData; all uploaded to the bucket."""
    from fastdata.cli.format import parse_size
    from fastdata.storage.client import RemoteStore

    photos = replicate_photos(work / "photos", images=args.images)
    local = work / "fastdata"
    if not (local / "manifest.json").exists():
        _run(["-m", "fastdata", "convert", str(photos), str(local), "--shard-size", args.shard_size,
              "--no-progress"], env=env)
    raw = work / "raw"
    if not (raw / "labels.json").exists():
        raw.mkdir(parents=True, exist_ok=True)
        labels, i = [], 0
        for tar in sorted(local.glob("train-*.tar")):
            with tarfile.open(tar) as t:
                members = {m.name: m for m in t}
                for name in sorted(n for n in members if n.endswith(".jpg")):
                    (raw / f"{i:06d}.jpg").write_bytes(t.extractfile(members[name]).read())
                    labels.append(int(t.extractfile(members[name[:-4] + ".cls"]).read()))
                    i += 1
        (raw / "labels.json").write_text(json.dumps(labels))
    urls = {"fastdata": "s3://bench/fastdata/"}
    store = RemoteStore(urls["fastdata"], options)
    for p in sorted(local.iterdir()):
        if p.is_file() and p.name != "manifest.json":
            store.upload(p.name, p)
    store.upload("manifest.json", (local / "manifest.json").read_bytes())
    peers_ok = args.peers_python.exists()
    for peer in PEERS if peers_ok else ():
        out = work / peer
        cfg = work / f"write-{peer}.json"
        cfg.write_text(json.dumps({"raw": str(raw), "out": str(out), "shard_bytes": parse_size(args.shard_size)}))
        if out.exists():
            shutil.rmtree(out)
        _run([str(Path(__file__).with_name("remote_candidates.py")), f"write-{peer}", str(cfg)], env=env,
             python=args.peers_python)
        peer_store = RemoteStore(f"s3://bench/{peer}/", options)
        for p in sorted(out.rglob("*")):
            if p.is_file():
                peer_store.upload(p.relative_to(out).as_posix(), p)
        urls[peer] = f"s3://bench/{peer}/"
    return {"local": str(local), "urls": urls, "peers": peers_ok}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from moto.server import ThreadedMotoServer

    work = args.work_dir.resolve()
    work.mkdir(parents=True, exist_ok=True)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    s3_env = {"AWS_ENDPOINT_URL": endpoint, "S3_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "bench",
              "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1"}
    env = {**os.environ, **s3_env, "PYTHONPATH": str(ROOT)}  # the candidates' processes; this one is left alone
    options = {"endpoint": endpoint, "access_key_id": "bench", "secret_access_key": "bench", "region": "us-east-1"}
    try:
        import boto3

        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="bench",
                     aws_secret_access_key="bench").create_bucket(Bucket="bench")
        data = prepare(args, work, env, options)
        names = [n for n in args.candidates.split(",") if n in LABELS]
        rows: list[dict[str, Any]] = []
        skipped: dict[str, str] = {}
        for rep, name in interleaved(names, args.reps):
            if name in PEERS and not data["peers"]:
                skipped[name] = f"no peers environment at {args.peers_python}"
                continue
            cache = work / "caches" / f"{name}-{rep}"
            shutil.rmtree(cache, ignore_errors=True)
            cfg = {"url": data["urls"].get("fastdata" if name.startswith("fastdata") else name),
                   "local": data["local"], "cache": str(cache), "batch_size": args.batch_size,
                   "threads": args.threads, "backend": args.backend, "epochs": args.epochs}
            path = work / f"run-{name}-{rep}.json"
            path.write_text(json.dumps(cfg))
            try:
                out = _run([str(Path(__file__).with_name("remote_candidates.py")), name, str(path)], env=env,
                           python=args.peers_python if name in PEERS else None)
            except RuntimeError as exc:
                skipped[name] = str(exc)[-600:]
                continue
            rows.extend({**row, "rep": rep} for row in json_lines(out))
            shutil.rmtree(cache, ignore_errors=True)
    finally:
        server.stop()
    summary = summarise(rows, names)
    env_info = environment()
    write_json(Path("bench-out") / "remote.json", {"environment": env_info, "args": vars(args) | {
        "peers_python": str(args.peers_python), "work_dir": str(args.work_dir)}, "rows": rows, "summary": summary,
        "not_run": skipped})
    chart = plot(summary, (Path("bench-out") if args.no_docs else DOCS.parent) / "remote.png")
    publish(report(summary, skipped, env_info, args, chart), docs=DOCS, name="remote", write=not args.no_docs)
    return 0


def summarise(rows: list[dict[str, Any]], names: list[str]) -> list[dict[str, Any]]:
    out = []
    for name in names:
        for epoch in sorted({r["epoch"] for r in rows if r["candidate"] == name}):
            mine = [r for r in rows if r["candidate"] == name and r["epoch"] == epoch]
            out.append({"candidate": name, "epoch": epoch, "images_per_s": summarize([r["images_per_s"] for r in mine]),
                        "cpu_ms_per_image": summarize([1000 * r["cpu_s"] / r["images"] for r in mine]),
                        "downloaded_mb": summarize([r["downloaded_bytes"] / 1e6 for r in mine]),
                        "first_batch_s": summarize([r["first_batch_s"] for r in mine]),
                        "images": mine[0]["images"]})
    return out


def epoch_label(epoch: int) -> str:
    return "cold" if epoch == 0 else f"warm {epoch}"


def _median(summary: list[dict[str, Any]], name: str, epoch: int) -> float | None:
    row = next((r for r in summary if r["candidate"] == name and r["epoch"] == epoch), None)
    return row["images_per_s"]["median"] if row else None


def report(summary: list[dict[str, Any]], skipped: dict[str, str], env: dict[str, Any], args: argparse.Namespace,
           chart: Path | None) -> str:
    lines = ["## Remote datasets: streaming from S3 (`benchmarks/remote.py`)", "", environment_markdown(env), "",
             f"{args.images} real photos (fastdata shards of {args.shard_size}; MDS and LitData hold the same JPEG "
             f"bytes), train transforms to 224, float32, batch {args.batch_size}, {args.threads} threads/workers, "
             f"fastdata backend `{args.backend}`, a local S3 server (moto) on 127.0.0.1; median of {args.reps} "
             "repetitions, each a fresh process with an empty cache (epoch 0 cold, then warm epochs).", "",
             "| candidate | epoch | images/s | CPU ms/image | MB downloaded | first batch s |",
             "|---|---|---|---|---|---|"]
    for r in summary:
        lines.append(f"| {LABELS[r['candidate']]} | {epoch_label(r['epoch'])} | "
                     f"{r['images_per_s']['median']:.0f} | {r['cpu_ms_per_image']['median']:.2f} | "
                     f"{r['downloaded_mb']['median']:.1f} | {r['first_batch_s']['median']:.2f} |")
    local = [_median(summary, "fastdata-local", e) for e in (0, 1, 2)]
    s3 = [_median(summary, "fastdata-s3", e) for e in (0, 1, 2)]
    lines.append("")
    if any(r["candidate"] == "litdata" for r in summary):
        lines.append("- LitData builds its obstore S3 store without client options and so cannot reach a plain-HTTP "
                     "endpoint; in its process `obstore.store.S3Store` is given `allow_http=True`, nothing else.")
    if all(local[:2]) and all(s3[:2]):
        second = f"; second warm epoch {s3[2] / local[2]:.2f}x" if local[2] and s3[2] else ""
        lines.append(f"- fastdata from S3 vs local disk: cold {s3[0] / local[0]:.2f}x (target >= 0.80), first warm "
                     f"epoch {s3[1] / local[1]:.2f}x (target >= 0.95){second}.")
    for epoch, word in ((0, "cold"), (1, "warm")):
        peers = [v for v in (_median(summary, p, epoch) for p in PEERS) if v]
        if peers and s3[epoch]:
            lines.append(f"- fastdata from S3 vs the faster of MDS and LitData, {word}: "
                         f"{s3[epoch] / max(peers):.2f}x (target >= 1.5).")
    for name, why in skipped.items():
        lines.append(f"- {LABELS.get(name, name)} not run: {why.strip().splitlines()[-1][:300]}")
    if chart is not None:
        lines += ["", f"![remote streaming]({chart.name})"]
    return "\n".join(lines)


def plot(summary: list[dict[str, Any]], out: Path) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    from benchmarks.plot import save_figure

    names = list(dict.fromkeys(r["candidate"] for r in summary))
    fig, ax = plt.subplots(figsize=(7, 3.2))
    for k, epoch in enumerate((0, 1)):
        values = [_median(summary, n, epoch) or 0 for n in names]
        ax.bar([i + 0.38 * k for i in range(len(names))], values, width=0.36, label="cold" if epoch == 0 else "warm")
    ax.set_xticks([i + 0.19 for i in range(len(names))], [LABELS[n] for n in names], fontsize=7)
    ax.set_ylabel("images/s")
    ax.legend()
    ax.set_title("Streaming from a local S3 server, CPU, train transforms to 224")
    return save_figure(fig, out)


if __name__ == "__main__":
    sys.exit(main())
