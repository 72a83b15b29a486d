"""Builders of WebDataset shards written by other tools (webdataset's own ShardWriter, raw tarfile)
for the `fastdata index` tests; the bundled real photos are the images."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from helpers import PHOTOS
from PIL import Image

if TYPE_CHECKING:
    import torch


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


def labels_of(source: Path, backend: str) -> list[int]:
    """The labels an eval epoch of `fastdata.loader` on `source` yields, in order (padding rows left out)."""
    import fastdata

    ld = fastdata.loader(source, batch_size=3, image_size=32, train=False, backend=backend, device="cpu",
                         num_threads=2)
    return [v for _, y in ld for v in y.tolist() if v != -100]


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


def encoded_image(im: Image.Image, fmt: str, **save: object) -> bytes:
    buf = io.BytesIO()
    im.save(buf, fmt, **save)
    return buf.getvalue()


HEIGHT, WIDTH, CLEAR = 40, 48, 20  # columns 0..CLEAR-1 fully transparent where the image has transparency
UNDER = (200, 30, 30)  # the colour stored under the transparent pixels


def _rgb() -> np.ndarray:
    y, x = np.mgrid[0:HEIGHT, 0:WIDTH]
    rgb = np.stack([x * 5 % 256, y * 6 % 256, (x + y) * 3 % 256], -1).astype(np.uint8)
    rgb[:, :CLEAR] = UNDER
    return rgb


def _alpha() -> np.ndarray:
    alpha = np.full((HEIGHT, WIDTH), 255, np.uint8)
    alpha[:, :CLEAR] = 0
    alpha[:, CLEAR:CLEAR + 10] = 128
    return alpha


def _palette_with_clear_index() -> bytes:
    pal = Image.fromarray(_rgb()).quantize(16)
    clear = pal.getpixel((0, 0))  # the index of the colour under the transparent columns
    return encoded_image(pal, "PNG", transparency=clear)


# Adopted members in the modes whose pixels the backends must read alike (tests/test_adopt_pixels.py, test_gpu.py):
# label -> (extension, bytes, whether columns 0..CLEAR-1 are transparent)
MODE_MEMBERS = {
    0: ("png", encoded_image(Image.fromarray(np.dstack([_rgb(), _alpha()]), "RGBA"), "PNG"), True),
    1: ("png", encoded_image(Image.fromarray(np.dstack([_rgb()[..., 0], _alpha()]), "LA"), "PNG"), True),
    2: ("png", _palette_with_clear_index(), True),
    3: ("webp", encoded_image(Image.fromarray(np.dstack([_rgb(), _alpha()]), "RGBA"), "WEBP", lossless=True), True),
    4: ("tif", encoded_image(Image.fromarray(np.dstack([_rgb(), _alpha()]), "RGBA"), "TIFF"), True),
    5: ("png", encoded_image(Image.fromarray(_rgb()[..., 1].astype(np.uint16) * 257), "PNG"), False),
    6: ("tif", encoded_image(Image.fromarray(_rgb()[..., 2].astype(np.float32) / 255), "TIFF"), False),
    7: ("tif", encoded_image(Image.fromarray(_rgb()).convert("CMYK"), "TIFF"), False),
}


def mode_shards(folder: Path) -> Path:
    """One adopted shard of MODE_MEMBERS in `folder`, key k<label>."""
    from converters.adopt import AdoptOptions, adopt

    members = []
    for label, (ext, data, _) in MODE_MEMBERS.items():
        members += [(f"k{label}.{ext}", data), (f"k{label}.cls", str(label).encode())]
    raw_tar(folder / "x-000000.tar", members)
    result = adopt(folder, options=AdoptOptions(jobs=1))
    assert not result.rejected
    return folder


def by_label(folder: Path, backend: str, **kw: object) -> dict[int, torch.Tensor]:
    """One epoch of 32-px uint8 images (on the host), by label: MODE_MEMBERS' labels name their members."""
    import fastdata

    kw.setdefault("device", "cpu")
    loader = fastdata.loader(folder, batch_size=4, image_size=32, backend=backend, num_threads=2, dtype="uint8",
                             **kw)
    out = {}
    for images, labels in loader:
        out.update({int(y): x.cpu() for x, y in zip(images, labels) if y != -100})
    return out
