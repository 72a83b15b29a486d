"""`close()` and `with` on every kind of loader: a closed loader cannot be iterated, closing twice does nothing,
and a remote dataset's loader gives its node-cache entry back (fastdata/closing.py)."""

from __future__ import annotations

import gc
import shutil
import time
from pathlib import Path

import pytest
from conftest_text import fortunes_tokens_fixture  # noqa: F401  (the fortunes_tokens fixture)
from helpers import convert_images, make_image_tree
from http_server import FileServer

import fastdata


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> Path:
    src = make_image_tree(tmp_path_factory.mktemp("close") / "src", classes=2, per_class=3, splits=("val",))
    out = tmp_path_factory.mktemp("close") / "ds"
    convert_images(src, out, samples_per_shard=4)
    return out


@pytest.fixture(scope="module")
def volumes(tmp_path_factory) -> Path:
    pytest.importorskip("pydicom")
    from conftest_dicom import convert_dicom, write_phantom

    root = tmp_path_factory.mktemp("vols")
    write_phantom(root / "dcm" / "p1")
    convert_dicom(root / "dcm", root / "ds")
    return root / "ds"


def _open(kind: str, source, images: Path, fortunes_tokens: Path, volumes_dir, **kw):
    if kind == "images":
        return fastdata.loader(source or images, split="val", train=False, backend="kornia", batch_size=2,
                               image_size=32, device="cpu", num_threads=1, **kw)
    if kind == "text":
        return fastdata.loader(source or fortunes_tokens, max_tokens=2048, seed=3, **kw)
    return fastdata.loader(source or volumes_dir(), batch_size=1, patch_size=(4, 8, 8), seed=1, device="cpu", **kw)


@pytest.mark.parametrize("kind", ["images", "text", "volumes"])
def test_a_closed_loader_cannot_be_iterated(kind: str, images: Path, fortunes_tokens: Path, request):
    def volumes_dir() -> Path:
        return request.getfixturevalue("volumes")

    with _open(kind, None, images, fortunes_tokens, volumes_dir) as ld:
        assert len(list(ld)) > 0
    with pytest.raises(RuntimeError, match="was closed"):
        iter(ld)
    ld.close()  # twice: nothing happens


@pytest.mark.parametrize("kind", ["images", "text"])
def test_closing_a_remote_loader_gives_its_cache_entry_back(kind: str, images: Path, fortunes_tokens: Path,
                                                            tmp_path: Path):
    shutil.copytree(images if kind == "images" else fortunes_tokens, tmp_path / "www" / "ds")
    cache = tmp_path / "cache"
    with FileServer(tmp_path / "www") as server:
        ld = _open(kind, server.url + "ds/", images, fortunes_tokens, None, cache_dir=cache)
        assert len(list(ld)) > 0
        users = next(cache.iterdir()) / "users"
        assert len(list(users.iterdir())) == 1  # this loader's open cache
        ld.close()
        assert not list(users.iterdir())


@pytest.mark.parametrize("kind", ["images", "text"])
def test_a_remote_loader_dropped_unclosed_gives_its_cache_entry_back(kind: str, images: Path, fortunes_tokens: Path,
                                                                   tmp_path: Path):
    """A loader made per epoch and dropped without close() (an eval loader in a training loop) leaves no user
    entry in the node cache once it is garbage-collected, even when its producer had gone on into the next
    epoch."""
    shutil.copytree(images if kind == "images" else fortunes_tokens, tmp_path / "www" / "ds")
    cache = tmp_path / "cache"
    with FileServer(tmp_path / "www") as server:
        for _ in range(2):
            ld = _open(kind, server.url + "ds/", images, fortunes_tokens, None, cache_dir=cache)
            assert len(list(ld)) > 0
            users = next(cache.iterdir()) / "users"
            assert len(list(users.iterdir())) == 1
            del ld
            deadline = time.monotonic() + 10  # the producer gone ahead ends on its own thread first
            while list(users.iterdir()) and time.monotonic() < deadline:
                gc.collect()
                time.sleep(0.05)
            assert not list(users.iterdir())
