"""Builders of WebDataset shards written by other tools (webdataset's own ShardWriter, raw tarfile)
for the `fastdata index` tests; the bundled real photos are the images."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import numpy as np
from helpers import PHOTOS
from PIL import Image


def photo_bytes(limit: int) -> list[tuple[str, bytes]]:
    return [(p.stem, p.read_bytes()) for p in sorted(PHOTOS.glob("*.jpg"))[:limit]]


def shardwriter_shards(folder: Path, *, count: int = 10, per_shard: int = 4, labeled: bool = True,
                       pattern: str = "f-%06d.tar") -> dict[str, int]:
    """Shards of real photos written by `webdataset.ShardWriter`; returns key -> label (or -1)."""
    import webdataset as wds

    folder.mkdir(parents=True, exist_ok=True)
    labels = {}
    with wds.ShardWriter(str(folder / pattern), maxcount=per_shard, verbose=0) as sink:
        for i, (_, data) in enumerate(photo_bytes(count)):
            key = f"s{i:05d}"
            sample = {"__key__": key, "jpg": data}
            if labeled:
                sample["cls"] = i % 3
            labels[key] = i % 3 if labeled else -1
            sink.write(sample)
    return labels


def encoded(fmt: str, *, size: tuple[int, int] = (48, 40), seed: int = 0, **save: object) -> bytes:
    """A smooth random image in `fmt` ('JPEG', 'PNG', 'WEBP'; mode via save['mode'])."""
    rng = np.random.default_rng(seed)
    w, h = size
    base = rng.integers(0, 256, size=(max(h // 6, 1), max(w // 6, 1), 3), dtype=np.uint8)
    im = Image.fromarray(base, "RGB").resize((w, h), Image.Resampling.BILINEAR)
    mode = save.pop("mode", None)
    if mode:
        im = im.convert(mode)
    buf = io.BytesIO()
    im.save(buf, fmt, **save)
    return buf.getvalue()


def raw_tar(path: Path, members: list[tuple[str, bytes]], *, types: dict[str, bytes] | None = None) -> Path:
    """A tar with exactly these members in this order (names unchecked: hostile names allowed).
    `types` maps a name to a tarfile type (e.g. tarfile.SYMTYPE) for special entries."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            if types and name in types:
                info.type = types[name]
                info.size = 0
                info.linkname = "target"
                tar.addfile(info)
            else:
                tar.addfile(info, io.BytesIO(data))
    return path
