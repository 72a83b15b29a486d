"""Data builders shared by the tests: exact-control synthetic image trees and a one-call conversion."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

SAMPLES = Path(__file__).resolve().parent / "data"  # real data bundled in the repository (see its README)
PHOTOS = SAMPLES / "photos"


def small_photos(n: int, side: int, mode: str = "RGB") -> np.ndarray:
    """`n` real photos in `mode`, centre-cropped square and made `side` pixels a side: what image datasets kept as
    arrays (CIFAR, MNIST, SVHN, STL-10, tables of pixels) hold."""
    out = []
    for path in sorted(PHOTOS.glob("*.jpg"))[:n]:
        im = Image.open(path).convert(mode)
        s = min(im.size)
        left, top = (im.width - s) // 2, (im.height - s) // 2
        out.append(np.asarray(im.crop((left, top, left + s, top + s)).resize((side, side), Image.BILINEAR)))
    return np.stack(out)


def converted_pixels(dst: Path, split: str, mode: str = "RGB") -> dict[str, tuple[int | None, np.ndarray]]:
    """Each sample of `split` converted into `dst`: its source (`file#i`) -> (its label, its decoded pixels in
    `mode`, as ints)."""
    import io
    import tarfile

    from fastdata.manifest import read_manifest

    meta, images = {}, {}
    for shard in read_manifest(dst).split(split).shards:
        with tarfile.open(dst / shard.name) as tar:
            for member in tar:
                key, ext = member.name.rsplit(".", 1)
                data = tar.extractfile(member).read()
                if ext == "jpg":
                    images[key] = np.asarray(Image.open(io.BytesIO(data)).convert(mode)).astype(int)
                elif ext == "json":
                    meta[key] = json.loads(data)
    return {m["source"]: (m.get("label"), images[k]) for k, m in meta.items()}


def make_image(path: Path, *, size: tuple[int, int] = (64, 48), seed: int = 0, mode: str = "RGB",
               fmt: str | None = None, **save: object) -> Path:
    """Write a smooth random image (compresses like a photo) of `size` = (width, height)."""
    rng = np.random.default_rng(seed)
    w, h = size
    base = rng.integers(0, 256, size=(max(h // 8, 1), max(w // 8, 1), 3), dtype=np.uint8)
    im = Image.fromarray(base, "RGB").resize((w, h), Image.Resampling.BILINEAR)
    if mode != "RGB":
        im = im.convert(mode)
    path.parent.mkdir(parents=True, exist_ok=True)
    im.save(path, fmt, **save)
    return path


def make_image_tree(root: Path, *, classes: int = 3, per_class: int = 4, size: tuple[int, int] = (64, 48),
                    splits: tuple[str, ...] = ()) -> Path:
    """`root/<class>/img_<i>.jpg` (or `root/<split>/<class>/...`) with deterministic content."""
    seed = 0
    for split in splits or ("",):
        for c in range(classes):
            for i in range(per_class):
                seed += 1
                make_image(root / split / f"class_{c}" / f"img_{i}.jpg", size=size, seed=seed, quality=92)
    return root


def copy_photos(root: Path, *, classes: int = 3, limit: int | None = None) -> Path:
    """Real photos from tests/data/photos dealt round-robin into `classes` class folders."""
    photos = sorted(PHOTOS.glob("*.jpg"))[:limit]
    for i, p in enumerate(photos):
        dst = root / f"class_{i % classes}" / p.name
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, dst)
    return root


def convert_images(src: Path, dst: Path, **config: object):
    """Run the images conversion in-process with test-friendly defaults (1 job, small shards)."""
    from converters import get_kind
    from converters.engine import ConvertConfig, convert
    from converters.images import ImageOptions

    image_keys = {"short_side", "quality", "max_pixels", "labels", "split", "unlabeled", "keep_metadata", "image_field",
                  "label_field", "label_pattern", "split_lists", "classes", "val_fraction", "multi_label", "uncertain"}
    opts = ImageOptions(**{k: v for k, v in config.items() if k in image_keys})
    cfg = {"jobs": 1, "samples_per_shard": 5, **{k: v for k, v in config.items() if k not in image_keys}}
    return convert(get_kind("images"), src, dst, options=opts, config=ConvertConfig(**cfg))


def class_lists(dst: Path, key=lambda source: source, field: str = "labels") -> dict[str, tuple[str, Any]]:
    """Each sample of a converted dataset -> (its split, its json member's `field`: a --multi-label sample's list of
    classes, whose sample has no `cls` member; `label` for one class), by its source as `key` makes it."""
    import tarfile

    from fastdata.manifest import read_manifest

    out = {}
    m = read_manifest(dst)
    for split in m.splits:
        for shard in m.split(split).shards:
            with tarfile.open(dst / shard.name) as tar:
                for member in tar:
                    assert field != "labels" or not member.name.endswith(".cls")
                    if member.name.endswith(".json"):
                        meta = json.loads(tar.extractfile(member).read())
                        out[key(meta["source"])] = (split, meta[field])
    return out


@contextlib.contextmanager
def crash_after_first_record():
    """Inside it, a conversion stops with KeyboardInterrupt once it has recorded its first finished shard (a run
    killed there), and must: the block fails otherwise."""
    from converters import state

    original = state.save_record

    def crashing(*args, **kwargs):
        original(*args, **kwargs)
        raise KeyboardInterrupt("simulated crash")

    state.save_record = crashing
    try:
        with pytest.raises(KeyboardInterrupt):
            yield
    finally:
        state.save_record = original


def fake_cgroup(root: Path, membership: str, files: dict[str, str]) -> dict[str, Path]:
    """A process's cgroup membership (`/proc/self/cgroup`'s text) and a cgroup mount holding `files` (paths under
    the mount -> text), under `root`: the `mount` and `membership` keywords of fastdata/cgroup.py's readers."""
    (root / "cgroup").write_text(membership)
    for name, text in files.items():
        (root / "mount" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "mount" / name).write_text(text)
    return {"mount": root / "mount", "membership": root / "cgroup"}


def tree_digest(root: Path) -> dict[str, str]:
    """sha256 of every file under root (the dataset as a user gets it; no state left behind)."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def current_umask() -> int:
    """The process's umask (read by setting it and putting it back)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def wait_until(condition, what: str, *, timeout: float = 20.0, poll: float = 0.01) -> None:
    """Poll `condition()` until it is true; fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(poll)


def rewrite_arrow_shard(root: Path, name: str, change) -> None:
    """Rewrite Arrow shard `name` of dataset `root` as `change(table)` and give the manifest its new size and
    sha256, so that only the shard's contents are wrong (a forger who knows the format)."""
    import hashlib
    import io
    import json

    import pyarrow as pa

    path = root / name
    table = change(pa.ipc.open_stream(path.read_bytes()).read_all())
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    data = sink.getvalue()
    path.write_bytes(data)
    manifest = json.loads((root / "manifest.json").read_text())
    for entry in (e for split in manifest["splits"].values() for e in split["shards"] if e["name"] == name):
        entry.update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    (root / "manifest.json").write_text(json.dumps(manifest))


def cut_scan(data: bytes) -> bytes:
    """A JPEG with part of its entropy-coded data replaced by zeros and the end marker kept: the header reads and
    the file "ends" normally, but a strict decode fails (premature end of data)."""
    sos = data.index(b"\xff\xda")
    middle = (sos + len(data)) // 2
    return data[:middle] + bytes(len(data) - middle - 2) + b"\xff\xd9"


def touch(root: Path, *names: str | bytes) -> Path:
    """`root/<name>` for each of `names` (bytes for a name that is not UTF-8), each holding a JPEG marker and no
    image: enough for a discovery, which opens nothing."""
    for name in names:
        path = os.path.join(os.fsencode(str(root)), os.fsencode(name))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(b"\xff\xd8 not decoded at discovery")
    return root


def split_items(d) -> dict[str, list[tuple[str, int | None]]]:
    """A discovery's inputs as {split: sorted (rel, label)}."""
    return {s: sorted((it.rel, it.label) for it in items) for s, items in d.splits.items()}


def split_rejections(d) -> list[tuple[str, str, str]]:
    """A discovery's rejections as sorted (split, source, reason)."""
    return sorted((r.split, r.source, r.reason) for r in d.rejected)


def with_features(table, features: dict):
    """`table` (pyarrow) with `features` in its schema metadata, as the `datasets` library writes them."""
    return table.replace_schema_metadata({b"huggingface": json.dumps({"info": {"features": features}}).encode()})
