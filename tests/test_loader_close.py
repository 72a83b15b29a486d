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
    with pytest.raises(RuntimeError, match=r"^this loader was closed; make a new one with fastdata\.loader\(\.\.\.\)$"):
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


def test_closing_a_remote_text_mixture_gives_every_cache_entry_back(fortunes_tokens: Path, tmp_path: Path):
    for name in ("a", "b"):
        shutil.copytree(fortunes_tokens, tmp_path / "www" / name)
    cache = tmp_path / "cache"
    with FileServer(tmp_path / "www") as server:
        ld = fastdata.loader([server.url + "a/", server.url + "b/"], weights=[1, 1], max_tokens=2048, cache_dir=cache)
        assert len(list(ld)) > 0
        users = next(cache.iterdir()) / "users"  # one cache: the two manifests are alike
        assert len(list(users.iterdir())) == 2
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


def _open_under(folder: Path) -> list[str]:
    """The files under `folder` this process holds open (Linux: /proc/self/fd)."""
    held = []
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = str(fd.readlink())
        except OSError:  # the listing's own descriptor, gone once listed
            continue
        if target.startswith(str(folder)):
            held.append(target)
    return held


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors through /proc")
@pytest.mark.parametrize("kind", ["arrow images", "text", "image mixture"])
def test_a_loader_dropped_unclosed_lets_its_shard_files_go(kind: str, fortunes_tokens: Path, tmp_path: Path):
    """Found by `make fuzz --targets state` (seed 77): an Arrow shard's descriptor was closed only by close(), so
    each loader over Arrow shards dropped without it (made per epoch, or per trial of a search) left one descriptor
    a shard open for good, until the process ran out of them after a few thousand loaders."""
    from conftest_images import make_datasets

    ds = make_datasets(tmp_path / "ds")
    tokens = shutil.copytree(fortunes_tokens, tmp_path / "tokens")  # no other test's loader holds these
    kw = dict(batch_size=2, image_size=16, backend="kornia", device="cpu", num_threads=1)
    make = {"arrow images": lambda: fastdata.loader(ds["arrow"], **kw),
            "text": lambda: fastdata.loader(tokens, max_tokens=2048),
            "image mixture": lambda: fastdata.loader({str(ds["wds"]): 1.0, str(ds["arrow"]): 1.0}, **kw)}[kind]
    for _ in range(3):
        ld = make()
        assert len(list(ld)) > 0
        assert _open_under(tmp_path)  # its shards are open while it lives
        del ld
        deadline = time.monotonic() + 10  # a producer gone on into the next epoch ends on its own thread first
        while _open_under(tmp_path) and time.monotonic() < deadline:
            gc.collect()
            time.sleep(0.05)
        assert _open_under(tmp_path) == []
