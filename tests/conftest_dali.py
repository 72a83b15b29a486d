"""Builders for the DALI backend tests: a small converted dataset, its keys in manifest order, corruption."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest
from conftest_images import jpg_entry
from helpers import convert_images, make_image_tree

from fastdata.dataset import open_dataset
from fastdata.images.options import ImageLoaderOptions

CLASSES, PER_CLASS = 3, 9  # 27 samples in shards of 5: 5 5 5 5 5 2


def make_dataset(root: Path, *, size: tuple[int, int] = (64, 48), per_class: int = PER_CLASS) -> Path:
    src = make_image_tree(root / "src", classes=CLASSES, per_class=per_class, size=size)
    convert_images(src, root / "ds")
    return root / "ds"


def manifest_keys(ds: Path, split: str = "train") -> list[tuple[str, int]]:
    """(key, label) of every sample: shards in manifest order, samples in shard order (read with tarfile)."""
    view = open_dataset(ds, split=split)
    out = []
    for ref in view.shards:
        with tarfile.open(ref.path) as tar:
            for m in tar:
                key, _, ext = m.name.partition(".")
                if ext == "cls":
                    out.append((key, int(tar.extractfile(m).read())))
    return out


def key_of(last_key: str) -> str:
    """`train-000002.tar:00000012` (an entry of `backend.last_keys`) -> `00000012`."""
    return last_key.rsplit(":", 1)[1]


_made: list = []  # the backends `backend` made, closed by `close_backends` after each test


def backend(ds: Path, **kw):
    """A DaliBackend of `ds` (no Loader around it: closed after the test by `close_backends`, or its prefetch
    threads outlive the test, as a backend's threads hold it)."""
    from fastdata.images.dali_backend import DaliBackend

    base = dict(batch_size=4, image_size=32, num_threads=2, prefetch=2, backend="dali")
    made = DaliBackend(open_dataset(ds, split=kw.pop("split", "train")), ImageLoaderOptions(**{**base, **kw}))
    _made.append(made)
    return made


@pytest.fixture(autouse=True)
def close_backends():
    """Import it into a test module that calls `backend`: every backend a test made is closed after it."""
    yield
    while _made:
        _made.pop().close()


def corrupt_jpeg(ds: Path, shard: str, line: int, *, mode: str = "garbage") -> str:
    """Corrupt the jpg of sample `line` of `shard` in place (same size); returns its key.

    garbage: every byte replaced (no JPEG header); tail: the last quarter zeroed (entropy data cut short).
    """
    offset, size, key = jpg_entry(ds, shard, line)
    data = bytearray((ds / shard).read_bytes())
    if mode == "garbage":
        data[offset:offset + size] = bytes((7 * k) % 251 for k in range(size))
    else:
        data[offset + size * 3 // 4:offset + size] = bytes(size - size * 3 // 4)
    (ds / shard).write_bytes(bytes(data))
    return key
