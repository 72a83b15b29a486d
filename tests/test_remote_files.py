"""`RemoteFiles` with a stand-in store: `follow(order)` fetches the first `ahead` shards in the background, once
each, and publishes the whole order to the node cache (a shard already fetched or held is not fetched again);
`release` waits for a prefetch still running; an index is checked against its sha256; a shard whose bytes hash
wrong is downloaded once more; and the downloads run on named threads."""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from helpers import wait_until

from fastdata.errors import StorageError
from fastdata.storage.cache import ShardCache
from fastdata.storage.client import ChecksumError
from fastdata.storage.fetcher import RemoteFile, RemoteFiles, stop_waits_when


class CountingStore:
    """A stand-in for RemoteStore: every download writes the name's bytes and is counted."""

    url = "s3://bucket/data/"

    def __init__(self, delay: float = 0.0, bad_first: int = 0, index: bytes = b"", fail_first: int = 0) -> None:
        self.downloads: Counter[str] = Counter()
        self.threads: list[str] = []
        self.lock = threading.Lock()
        self.delay, self.bad_first, self.index, self.fail_first = delay, bad_first, index, fail_first

    def download(self, name: str, tmp: Path, *, size: int, sha256: str | None) -> None:
        time.sleep(self.delay)
        with self.lock:
            self.downloads[name] += 1
            self.threads.append(threading.current_thread().name)
            if self.downloads[name] <= self.bad_first:
                raise ChecksumError(f"{self.url}{name}: sha256 differs from the manifest")
            if self.downloads[name] <= self.fail_first:
                raise StorageError(f"{self.url}{name} answered HTTP 500")
        tmp.write_bytes(name.encode().ljust(size, b"."))

    def read(self, name: str) -> bytes:
        return self.index

    def abandon(self) -> None:
        pass


def one_shard(tmp_path: Path, store: CountingStore, fingerprint: str, **kw) -> tuple[ShardCache, RemoteFiles]:
    cache = ShardCache(tmp_path, fingerprint=fingerprint * 64, limit=None)
    return cache, RemoteFiles(cache, [RemoteFile("a.tar", 16, None, store)], **kw)


def test_follow_prefetches_the_first_shards_once_and_schedules_them_all(tmp_path: Path) -> None:
    store = CountingStore()
    names = ["a.tar", "b.tar", "c.tar", "d.tar"]
    cache = ShardCache(tmp_path, fingerprint="e" * 64, limit=None)
    files = RemoteFiles(cache, [RemoteFile(n, 16, None, store) for n in names], ahead=2)
    files.follow(names)
    wait_until(lambda: store.downloads == Counter({"a.tar": 1, "b.tar": 1}), "the first two shards prefetched",
               timeout=5)
    schedule = json.loads((cache.dir / "schedules" / f"{cache.token}.json").read_text())
    assert schedule == names  # the cache's eviction sees the whole order
    assert files.local("a.tar").read_bytes() == b"a.tar..........."  # the prefetched file, not a new download
    files.follow(names[:2])  # "a" held, "b" fetched and waiting to be taken: neither goes again
    files.follow(names[1:3])
    wait_until(lambda: store.downloads["c.tar"] == 1, "the next shard prefetched", timeout=5)
    assert files.local("b.tar").exists() and files.local("c.tar").exists()
    assert store.downloads == Counter({"a.tar": 1, "b.tar": 1, "c.tar": 1})  # d.tar was never among the first two
    for name in ("a.tar", "b.tar", "c.tar"):
        files.release(name)
    files.close()


def test_releasing_a_shard_whose_prefetch_runs_waits_for_it_and_leaves_nothing_held(tmp_path: Path) -> None:
    store = CountingStore(delay=0.3)
    released: list[str] = []
    cache, files = one_shard(tmp_path, store, "f", ahead=1, on_release=released.append)
    files.follow(["a.tar"])  # the plan moved past it before it was read (a skipped shard, a resumed epoch)
    files.release("a.tar")  # while the download runs
    assert store.downloads["a.tar"] == 1 and not cache.held("a.tar") and released == ["a.tar"]
    time.sleep(0.1)
    assert not cache.held("a.tar")  # nothing finished after the release to hold it again
    files.local("a.tar")  # asked again later: held for its new reader, from the file already there
    assert cache.held("a.tar") and store.downloads["a.tar"] == 1
    files.release("a.tar")
    assert not cache.held("a.tar") and released == ["a.tar", "a.tar"]
    files.close()


def test_downloads_run_on_the_fetch_threads_and_a_wrong_hash_is_fetched_once_more(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = CountingStore(bad_first=1)
    cache = ShardCache(tmp_path, fingerprint="0" * 64, limit=None)
    files = RemoteFiles(cache, [RemoteFile(n, 16, None, store) for n in ("a.tar", "b.tar")], ahead=1)
    with caplog.at_level(logging.WARNING, logger="fastdata.storage.fetcher"):
        files.follow(["a.tar"])
        wait_until(lambda: store.downloads["a.tar"] == 2, "a.tar downloaded again", timeout=5)
        assert files.local("a.tar").read_bytes() == b"a.tar..........."
        files.local("b.tar")  # not prefetched: downloaded on demand
    assert [r.getMessage() for r in caplog.records] == [
        "s3://bucket/data/a.tar: sha256 differs from the manifest; downloading it once more",
        "s3://bucket/data/b.tar: sha256 differs from the manifest; downloading it once more"]
    assert [name.rsplit("_", 1)[0] for name in store.threads] == ["fastdata-fetch"] * 2 + ["fastdata-fetch-now"] * 2
    files.close()


def test_an_index_is_checked_against_its_sha256(tmp_path: Path) -> None:
    body = b"0 512\n512 1024\n"
    cache = ShardCache(tmp_path, fingerprint="1" * 64, limit=None)
    good = RemoteFiles(cache, [RemoteFile("a.idx", None, hashlib.sha256(body).hexdigest(), CountingStore(index=body)),
                               RemoteFile("b.idx", None, None, CountingStore(index=b"any"))])  # sha256 unrecorded
    assert good.local("a.idx").read_bytes() == body and good.local("b.idx").read_bytes() == b"any"
    good.close()
    cache = ShardCache(tmp_path / "other", fingerprint="2" * 64, limit=None)
    bad = RemoteFiles(cache, [RemoteFile("a.idx", None, "0" * 64, CountingStore(index=body))])
    with pytest.raises(ChecksumError) as err:
        bad.local("a.idx")
    assert str(err.value) == "s3://bucket/data/a.idx: sha256 differs from the manifest"
    assert not cache.path("a.idx").exists()
    with pytest.raises(KeyError, match="b.idx is not a file of this dataset"):
        bad.local("b.idx")
    bad.close()


def test_a_failed_download_starts_anew_and_a_released_file_is_held_again_when_asked(tmp_path: Path) -> None:
    store = CountingStore(fail_first=1)
    cache, files = one_shard(tmp_path, store, "3")
    with pytest.raises(StorageError, match="answered HTTP 500"):
        files.local("a.tar")
    assert files.local("a.tar").exists() and store.downloads["a.tar"] == 2  # not the failed attempt's answer
    files.release("a.tar")
    assert not cache.held("a.tar")
    files.local("a.tar")  # done before: no download, but held again for this reader
    assert cache.held("a.tar") and store.downloads["a.tar"] == 2
    files.release("a.tar")
    files.close()


def test_a_wait_ends_when_the_loader_stops(tmp_path: Path) -> None:
    _, files = one_shard(tmp_path, CountingStore(delay=2.0), "4")
    stop, errors = threading.Event(), []

    def reader() -> None:
        stop_waits_when(stop)
        try:
            files.local("a.tar")
        except StorageError as exc:
            errors.append(str(exc))

    thread = threading.Thread(target=reader)
    thread.start()
    time.sleep(0.2)
    stop.set()
    thread.join(timeout=1.0)
    assert errors == ["the wait for a.tar abandoned: the loader stopped"]
    files.close()
