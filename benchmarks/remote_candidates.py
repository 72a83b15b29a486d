"""The candidates of benchmarks/remote.py, each run as its own process: `python remote_candidates.py NAME CONFIG.json`.

fastdata candidates run in the project environment; MosaicML Streaming (MDS) and LitData run in a separate
environment (`--peers-python`), since they pin other numpy/tokenizers versions. Every candidate yields the
same tensors: RandomResizedCrop(224) + horizontal flip of the same JPEG bytes, float32, ImageNet-normalised,
batches of `batch_size`, on the CPU. Each prints one JSON line per epoch: images, seconds, CPU seconds of
the process tree, bytes its cache grew by, and the bytes downloaded.

    write-mds / write-litdata     write the peers' formats from a folder of JPEGs (`raw/NNNNNN.jpg`, labels.json)
"""

from __future__ import annotations

import io
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def torchvision_transform():
    import torch
    from torchvision.transforms import v2 as T

    return T.Compose([T.ToImage(), T.RandomResizedCrop(224, antialias=True), T.RandomHorizontalFlip(),
                      T.ToDtype(torch.float32, scale=True), T.Normalize(MEAN, STD)])


def decode(data: bytes):
    from PIL import Image

    return Image.open(io.BytesIO(data)).convert("RGB")


# ------------------------------------------------------------------------------------------ writers (peers)
def write_mds(cfg: dict[str, Any]) -> None:
    from streaming import MDSWriter

    labels = json.loads((Path(cfg["raw"]) / "labels.json").read_text())
    with MDSWriter(out=cfg["out"], columns={"image": "bytes", "label": "int"}, size_limit=cfg["shard_bytes"]) as w:
        for i, label in enumerate(labels):
            w.write({"image": (Path(cfg["raw"]) / f"{i:06d}.jpg").read_bytes(), "label": int(label)})


def _litdata_item(args: tuple[str, int, int]) -> dict[str, Any]:
    raw, i, label = args
    return {"image": (Path(raw) / f"{i:06d}.jpg").read_bytes(), "label": label}


def write_litdata(cfg: dict[str, Any]) -> None:
    from litdata import optimize

    labels = json.loads((Path(cfg["raw"]) / "labels.json").read_text())
    optimize(fn=_litdata_item, inputs=[(cfg["raw"], i, int(lab)) for i, lab in enumerate(labels)],
             output_dir=cfg["out"], chunk_bytes=cfg["shard_bytes"], num_workers=1, mode="overwrite")


# ------------------------------------------------------------------------------------------ loaders
def fastdata_loader(cfg: dict[str, Any], source: str):
    import fastdata

    return fastdata.loader(source, batch_size=cfg["batch_size"], train=True, image_size=224, device="cpu",
                           backend=cfg["backend"], num_threads=cfg["threads"], seed=0, cache_dir=cfg["cache"])


def mds_loader(cfg: dict[str, Any]):
    from streaming import StreamingDataset
    from torch.utils.data import DataLoader

    transform = torchvision_transform()

    class Images(StreamingDataset):
        def __getitem__(self, i: int):
            sample = super().__getitem__(i)
            return transform(decode(sample["image"])), sample["label"]

    ds = Images(remote=cfg["url"], local=cfg["cache"], shuffle=True, batch_size=cfg["batch_size"])
    return DataLoader(ds, batch_size=cfg["batch_size"], num_workers=cfg["threads"], drop_last=True)


def litdata_loader(cfg: dict[str, Any]):
    # LitData builds its obstore S3 store without client options, so it cannot reach the plain-HTTP local
    # server (reqwest "BadScheme"); its stores get allow_http=True here, nothing else changes.
    import obstore.store

    real = obstore.store.S3Store

    def s3_store(*a: Any, **k: Any) -> Any:
        return real(*a, client_options={**(k.pop("client_options", None) or {}), "allow_http": True}, **k)

    obstore.store.S3Store = s3_store
    from litdata import StreamingDataLoader, StreamingDataset

    transform = torchvision_transform()

    class Images(StreamingDataset):
        def __getitem__(self, i: int):
            sample = super().__getitem__(i)
            return transform(decode(sample["image"])), sample["label"]

    ds = Images(cfg["url"], cache_dir=cfg["cache"], shuffle=True,
                storage_options={"endpoint_url": os.environ["AWS_ENDPOINT_URL"]})
    return StreamingDataLoader(ds, batch_size=cfg["batch_size"], num_workers=cfg["threads"], drop_last=True)


def epochs(name: str, cfg: dict[str, Any]) -> None:
    from fastdata.perf.monitor import ResourceMonitor

    started = time.perf_counter()
    if name.startswith("fastdata"):
        loader = fastdata_loader(cfg, cfg["url"] if name.endswith("-s3") else cfg["local"])
    else:
        loader = mds_loader(cfg) if name == "mds" else litdata_loader(cfg)
    built = time.perf_counter() - started
    cache = Path(cfg["cache"])
    for epoch in range(cfg["epochs"]):
        if hasattr(loader, "set_epoch"):
            loader.set_epoch(epoch)
        remote = getattr(getattr(getattr(loader, "backend", None), "_view", None), "remote", None)
        before_bytes = folder_bytes(cache)
        before_down = remote.cache.downloaded_bytes if remote is not None else None
        images = batches = 0
        first = None
        with ResourceMonitor() as mon:
            t0 = time.perf_counter()
            for x, _ in loader:
                if first is None:
                    first = time.perf_counter() - t0
                    assert tuple(x.shape[1:]) == (3, 224, 224) and str(x.dtype) == "torch.float32", x.shape
                images += int(x.shape[0])
                batches += 1
            seconds = time.perf_counter() - t0
        grew = folder_bytes(cache) - before_bytes
        down = remote.cache.downloaded_bytes - before_down if remote is not None else max(grew, 0)
        print(json.dumps({"candidate": name, "epoch": epoch, "images": images, "batches": batches,
                          "seconds": seconds, "images_per_s": images / seconds if seconds else 0.0,
                          "first_batch_s": (first or 0.0) + (built if epoch == 0 else 0.0),
                          "cpu_s": mon.usage.cpu_s, "downloaded_bytes": down}), flush=True)


def main(argv: list[str]) -> int:
    name, cfg = argv[0], json.loads(Path(argv[1]).read_text())
    if name == "write-mds":
        write_mds(cfg)
    elif name == "write-litdata":
        write_litdata(cfg)
    else:
        epochs(name, cfg)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
