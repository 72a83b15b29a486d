"""Weighted mixing, side by side: what a 2- and a 5-way mixture costs against one dataset of the same data, and
how MosaicML Streaming and LitData mix and resume the same token sequences.

    python benchmarks/mixing.py                       # real fortunes text and real photos, 5 repetitions
    python benchmarks/mixing.py --reps 1 --images 400 # a short run

1. Overhead. The same data converted three ways: as one dataset, split in 2 and split in 5 (text: the five
   fortunes files, --text-copies times each; images: --images real photos in 10 classes, 2 or 5 classes a
   dataset). Each mixture is
   weighted by the parts' own sizes (tokens for text, samples for images), so every candidate carries the same
   epoch. tokens/s (bucketing='length', --max-tokens) and images/s (--backend, train, 224 px, --batch-size) of
   a whole epoch, loader construction excluded, median of interleaved repetitions after a warm-up epoch
   (text first, then images: no image loader's threads run beside a text epoch).
2. Peers. The 2-way text split (one copy) mixed 70/30 by samples, an epoch of --samples-per-epoch: fastdata
   (`weights=`, `weight_by="samples"`), MosaicML Streaming (`Stream(proportion=...)`, `epoch_size`) and
   LitData (`CombinedStreamingDataset(weights=...)`). Realised shares per epoch, whether two runs agree, and whether a
   run stopped in the middle of epoch 1 resumes exactly from its state_dict (num_workers 0 and 2). The peers
   run in their own environment (`--peers-python`, default .venv-peers/bin/python, see benchmarks/remote.py);
   without it they are reported as not run.

Writes bench-out/mixing.json and the `mixing` section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

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

SAMPLES = ROOT / "tests" / "data"
FORTUNES = ("computers", "education", "linux", "science", "wisdom")
SPLITS = {"one": [FORTUNES], "2-way": [FORTUNES[:3], FORTUNES[3:]], "5-way": [(f,) for f in FORTUNES]}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--images", type=int, default=1000)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--backend", default="dali", choices=["dali", "kornia"])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--max-tokens", type=int, default=8192)
    p.add_argument("--text-copies", type=int, default=30, help="copies of each fortunes file (a longer epoch)")
    p.add_argument("--samples-per-epoch", type=int, default=1000, help="peers part: samples an epoch")
    p.add_argument("--peers-python", type=Path, default=ROOT / ".venv-peers" / "bin" / "python")
    p.add_argument("--work-dir", type=Path, default=Path("bench-out") / "mixing")
    p.add_argument("--no-docs", action="store_true")
    return p.parse_args(argv)


# ------------------------------------------------------------------------------------------ data
def _convert_parts(work: Path, kind: str, groups: dict[str, list[Any]], *, tag: str, options: Any,
                   fill: Callable[[Path, Any], None]) -> dict[str, list[Path]]:
    """Each group's parts converted once into `work/kind/<group>-<k><tag>` (reused when already there);
    `fill(src, part)` lays out the source folder of one part."""
    from converters import get_kind
    from converters.engine import ConvertConfig, convert

    out: dict[str, list[Path]] = {}
    for name, parts in groups.items():
        out[name] = []
        for k, part in enumerate(parts):
            dst = work / kind / f"{name}-{k}{tag}"
            if not (dst / "manifest.json").exists():
                src = work / f"{kind}-src" / f"{name}-{k}"
                shutil.rmtree(src, ignore_errors=True)
                fill(src, part)
                convert(get_kind(kind), src, dst, options=options, config=ConvertConfig(jobs=os.cpu_count() or 1))
            out[name].append(dst)
    return out


def prepare_text(work: Path, copies: int) -> dict[str, list[Path]]:
    from converters.text import TextOptions

    def fill(src: Path, files: tuple[str, ...]) -> None:
        for f in files:
            (src / f).mkdir(parents=True)
            for c in range(copies):
                shutil.copyfile(SAMPLES / "text" / "fortunes" / f, src / f / f"{f}-{c}.txt")

    tokenizer = SAMPLES / "tokenizers" / "bert-base-uncased.json"
    return _convert_parts(work, "text", SPLITS, tag=f"-x{copies}", fill=fill,
                          options=TextOptions(tokenizer=str(tokenizer), separator="%"))


def prepare_images(work: Path, images: int) -> dict[str, list[Path]]:
    from converters.images import ImageOptions

    photos = replicate_photos(work / "photos", images=images, classes=10)
    classes = sorted(p.name for p in photos.iterdir())
    groups = {"one": [classes], "2-way": [classes[:5], classes[5:]],
              "5-way": [classes[i:i + 2] for i in range(0, 10, 2)]}

    def fill(src: Path, names: list[str]) -> None:
        for c in names:
            shutil.copytree(photos / c, src / c)

    return _convert_parts(work, "images", groups, tag=f"-{images}", fill=fill, options=ImageOptions())


# ------------------------------------------------------------------------------------------ overhead
def _source(parts: list[Path], sizes: list[int]) -> Any:
    return parts[0] if len(parts) == 1 else {str(p): float(n) for p, n in zip(parts, sizes)}


def text_loader(parts: list[Path], args: argparse.Namespace):
    import fastdata

    sizes = [int(fastdata.loader(p, batch_size=1).store.lengths.sum()) for p in parts]
    return fastdata.loader(_source(parts, sizes), max_tokens=args.max_tokens, bucketing="length")


def image_loader(parts: list[Path], args: argparse.Namespace):
    import fastdata
    from fastdata.dataset import open_dataset

    sizes = [open_dataset(p).num_samples for p in parts]
    return fastdata.loader(_source(parts, sizes), batch_size=args.batch_size, image_size=224, backend=args.backend,
                           device="cpu", num_threads=args.threads)


def epoch_rate(loader, epoch: int, *, kind: str) -> tuple[float, int]:
    loader.set_epoch(epoch)
    items = 0
    start = time.perf_counter()
    for batch in loader:
        items += int(batch["lengths"].sum()) if kind == "text" else int(batch[0].shape[0])
    return items / (time.perf_counter() - start), items


def overhead(data: dict[str, dict[str, list[Path]]], args: argparse.Namespace) -> dict[str, Any]:
    """Each kind on its own (text first, then images, so no image loader's threads run beside a text epoch):
    its three loaders warmed up, then interleaved repetitions of whole epochs."""
    makers = {"text": text_loader, "images": image_loader}
    out: dict[str, Any] = {}
    for kind, split in data.items():
        loaders = {name: makers[kind](parts, args) for name, parts in split.items()}
        for loader in loaders.values():
            epoch_rate(loader, 0, kind=kind)  # warm-up: page cache, DALI graph, thread pools
        rates: dict[str, list[float]] = {name: [] for name in loaders}
        counts: dict[str, int] = {}
        for rep, name in interleaved(list(rates), args.reps):
            rate, items = epoch_rate(loaders[name], 1 + rep, kind=kind)
            rates[name].append(rate)
            counts[name] = items
            print(f"rep {rep} {kind}/{name:>5}: {rate:,.0f} {'tokens' if kind == 'text' else 'images'}/s "
                  f"({items:,} an epoch)")
        out.update({f"{kind}/{name}": {**summarize(v), "items_per_epoch": counts[name]} for name, v in rates.items()})
        del loaders
    return out


# ------------------------------------------------------------------------------------------ peers
def fastdata_mixing(parts: list[Path], args: argparse.Namespace, stop: int) -> dict[str, Any]:
    import fastdata

    def make():
        return fastdata.loader([str(p) for p in parts], weights=[0.7, 0.3], weight_by="samples",
                               samples_per_epoch=args.samples_per_epoch, batch_size=16, seed=0)

    def epoch_keys(loader, epoch: int, limit: int | None = None) -> list[list[int]]:
        loader.set_epoch(epoch)
        out = []
        for b, _ in enumerate(loader):
            out.append(loader.last_index.tolist())
            if limit is not None and b + 1 == limit:
                break
        return out

    from benchmarks.mixing_peers import shares

    loader = make()
    whole = [epoch_keys(loader, e) for e in range(3)]
    again = make()
    repeatable = [epoch_keys(again, e) for e in range(2)] == whole[:2]
    mixture, offsets = loader.mixture, loader.mixture.offsets
    lengths = [loader.store.lengths[offsets[d]:offsets[d + 1]] for d in (0, 1)]

    def named(keys: list[list[int]]) -> list[list[str]]:  # "dataset:index in it", as the peers name samples
        return [[f"{d}:{i - offsets[d]}" for i, d in zip(b, mixture.dataset_of(np.asarray(b)).tolist())]
                for b in keys]

    epochs = shares([named(k) for k in whole], lengths, 2)
    part = make()
    epoch_keys(part, 0)
    epoch_keys(part, 1, stop)
    resumed = make()
    resumed.load_state_dict(part.state_dict())
    rest = epoch_keys(resumed, 1)
    return {"candidate": "fastdata", "epochs": epochs, "repeatable": repeatable,
            "resume": "exact" if rest == whole[1][stop:] else "differs"}


def peers(parts: list[Path], args: argparse.Namespace, work: Path) -> list[dict[str, Any]]:
    import fastdata

    stop = 10
    results = [{**fastdata_mixing(parts, args, stop), "workers": 0}]
    if not args.peers_python.exists():
        return results + [{"candidate": p, "error": f"not run: {args.peers_python} does not exist"}
                          for p in ("mds", "litdata")]
    raw = work / "peers" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for d, p in enumerate(parts):  # the very token ids of fastdata's shards
        store = fastdata.loader(p, batch_size=1).store
        ids = [store.ids(i).astype(np.int32) for i in range(len(store))]
        offsets = np.concatenate([[0], np.cumsum([len(x) for x in ids])])
        np.savez(raw / f"{d}.npz", ids=np.concatenate(ids), offsets=offsets)
    for workers in (0, 2):
        cfg = {"raw": str(raw), "work": str(work / "peers"), "weights": [0.7, 0.3], "seed": 0, "batch_size": 16,
               "samples_per_epoch": args.samples_per_epoch, "epochs": 3, "stop_batch": stop, "workers": workers}
        path = work / "peers" / f"config-{workers}.json"
        path.write_text(json.dumps(cfg))
        for name in ("mds", "litdata"):
            done = subprocess.run([str(args.peers_python), str(Path(__file__).with_name("mixing_peers.py")), name,
                                   str(path)], capture_output=True, text=True, timeout=1800)
            lines = json_lines(done.stdout)
            result = lines[-1] if lines else {"candidate": name, "error": done.stderr[-500:]}
            results.append({**result, "workers": workers})
            print(json.dumps({k: v for k, v in results[-1].items() if k != "traceback"})[:400])
    return results


# ------------------------------------------------------------------------------------------ report
def report(over: dict[str, Any], mixes: list[dict[str, Any]], env: dict[str, Any], args: argparse.Namespace) -> str:
    lines = ["## Weighted mixing", "", environment_markdown(env), "",
             "### Overhead: the same data as one dataset, a 2-way and a 5-way mixture", "",
             "| data | one dataset | 2-way mixture | 5-way mixture |", "|---|---|---|---|"]
    for kind, unit in (("text", "tokens/s"), ("images", "images/s")):
        one = over[f"{kind}/one"]["median"]
        mixed = [over[f"{kind}/{n}"]["median"] for n in ("2-way", "5-way")]
        cells = [f"{one:,.0f} {unit}"] + [f"{m:,.0f} ({m / one:.2f}x)" for m in mixed]
        lines.append(f"| {kind} ({over[f'{kind}/one']['items_per_epoch']:,} an epoch) | " + " | ".join(cells) + " |")
    spread = {kind: max((over[f"{kind}/{n}"]["max"] - over[f"{kind}/{n}"]["min"]) / over[f"{kind}/{n}"]["median"]
                        for n in ("one", "2-way", "5-way")) for kind in ("text", "images")}
    lines += ["", f"Medians of {args.reps} interleaved whole epochs each (text: bucketing='length', "
              f"max_tokens={args.max_tokens}; images: {args.backend} backend, train, 224 px, batch {args.batch_size}, "
              f"{args.threads} threads, CPU). The target is a mixture at most 5% slower than one dataset (>= 0.95x); "
              f"the repetitions of one candidate spread over up to {spread['text']:.0%} (text) and "
              f"{spread['images']:.0%} (images) of its median.", "",
              "Columns below: *repeats in an epoch*, items delivered twice within one epoch; *repeats before all "
              "seen*, items an epoch repeats from earlier epochs although their dataset had still not been seen "
              "whole at the end of that epoch (summed over epochs 0-2; the 70% dataset holds 1,590 sequences, "
              "700 an epoch).", "",
              "### Peers: the 2-way text split mixed 70/30 by samples, "
              f"{args.samples_per_epoch} samples an epoch (LitData: its own epoch length)", "",
              "| loader | workers | samples an epoch | sample shares, epochs 0-2 | token shares, epoch 0 "
              "| repeats in an epoch | repeats before all seen | two runs agree | resume mid-epoch 1 |",
              "|---|---|---|---|---|---|---|---|---|"]
    names = {"fastdata": "fastdata `weights=`", "mds": "MosaicML Streaming `Stream(proportion=)`",
             "litdata": "LitData `CombinedStreamingDataset(weights=)`"}
    for r in mixes:
        if "error" in r:
            failed = f"failed: {r['error'][:200]}"
            lines.append(f"| {names[r['candidate']]} | {r.get('workers', '')} | {failed} | | | | | | |")
            continue
        ep = r["epochs"]
        share = "; ".join("/".join(f"{s:.3f}" for s in e["sample_share"]) for e in ep)
        lines.append(f"| {names[r['candidate']]} | {r['workers']} | {ep[0]['samples']} | {share} | "
                     f"{'/'.join(f'{s:.3f}' for s in ep[0]['token_share'])} | {max(e['repeats'] for e in ep)} | "
                     f"{ep[-1]['early_repeats']} | {'yes' if r.get('repeatable') else 'no'} | {r.get('resume', '')} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    work = args.work_dir
    env = environment()
    print("converting the text and the photos (once) ...")
    data = {"text": prepare_text(work, args.text_copies), "images": prepare_images(work, args.images)}
    over = overhead(data, args)
    mixes = peers(prepare_text(work, 1)["2-way"], args, work)
    write_json(work.parent / "mixing.json", {"environment": env, "overhead": over, "peers": mixes,
                                             "args": {k: str(v) for k, v in vars(args).items()}})
    publish(report(over, mixes, env, args), docs=DOCS, name="mixing", write=not args.no_docs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
