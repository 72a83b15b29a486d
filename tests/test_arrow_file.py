"""`ArrowFile`, the reader under every Arrow shard: `close` gives back its descriptor, its memory map and its
cached blocks (and may be called twice); reads through the block cache equal the file's bytes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest_images import make_datasets

import fastdata.arrow_file as arrow_file
from fastdata.arrow_file import ArrowFile
from fastdata.errors import ShardError


@pytest.fixture(scope="module")
def shard(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_datasets(tmp_path_factory.mktemp("arrow-file"))["arrow"] / "train-000000.arrow"


def _cached(f: ArrowFile) -> list[tuple[int, int]]:
    return [k for k in arrow_file._BLOCKS.data if k[0] == f._owner]


def test_close_gives_back_the_descriptor_the_map_and_the_cached_blocks(shard, monkeypatch):
    monkeypatch.setattr(arrow_file, "BLOCK", 4096)  # several blocks in this small shard
    data = shard.read_bytes()
    f, other = ArrowFile(shard), ArrowFile(shard)
    assert bytes(f.read(4090, 12)) == data[4090:4102]  # across a block boundary: blocks 0 and 1
    assert bytes(other.read(0, 10)) == data[:10]
    assert sorted(_cached(f)) == [(f._owner, 0), (f._owner, 1)] and _cached(other) == [(other._owner, 0)]
    fd, mapped = f._fd, f._map
    f.close()
    with pytest.raises(OSError):
        os.fstat(fd)
    assert mapped.closed and _cached(f) == [] and _cached(other) == [(other._owner, 0)]  # another file's stay
    f.close()  # twice: nothing left to give back
    assert bytes(other.read(8000, 100)) == data[8000:8100]
    other.close()


def test_the_block_cache_is_bounded_least_recently_used_first(shard, monkeypatch):
    monkeypatch.setattr(arrow_file, "BLOCK", 512)
    monkeypatch.setattr(arrow_file, "CACHED_BLOCKS", 3)
    data = shard.read_bytes()
    f = ArrowFile(shard)
    try:
        for k in (0, 1, 2):
            assert bytes(f.read(k * 512, 8)) == data[k * 512:k * 512 + 8]
        f.read(0, 8)  # block 0 used again: block 1 is now the least recently used
        f.read(3 * 512, 8)
        assert sorted(k for _, k in _cached(f)) == [0, 2, 3] and len(arrow_file._BLOCKS.data) <= 3
        assert bytes(f.read(100, 2000)) == data[100:2100]  # longer than a block: read directly
    finally:
        f.close()


def test_a_path_that_opens_but_cannot_be_mapped_is_a_shard_error_and_keeps_no_descriptor(tmp_path: Path):
    """A folder opens read-only on Linux but is no file to map: the map step fails before `_map` exists, and
    close() must still give the descriptor back and let the ShardError through."""
    before = len(os.listdir("/proc/self/fd"))
    with pytest.raises(ShardError, match=r"is truncated, damaged or not an Arrow IPC stream: .*is a directory"):
        ArrowFile(tmp_path)
    assert len(os.listdir("/proc/self/fd")) == before


def test_a_shard_collected_while_its_thread_holds_the_block_cache_lock_does_not_deadlock(shard, monkeypatch):
    """A shard's finalizer runs wherever a garbage collection happens, also inside the block cache's own locked
    code (an allocation there sets one off). Its blocks were dropped under the same lock, which that thread then
    waited for, for ever: a fuzz run hung so (seed 1618). Now they are noted, and dropped by the lock's holder."""
    import gc
    import threading

    monkeypatch.setattr(arrow_file, "BLOCK", 4096)
    f, other = ArrowFile(shard), ArrowFile(shard)
    f.read(0, 10)
    other.read(0, 10)
    fd, owner = f._fd, f._owner
    done = threading.Event()

    def collect_under_the_lock() -> None:
        nonlocal f
        with arrow_file._BLOCKS.lock:
            f = None  # the last reference: its finalizer runs here, in this thread, the lock held
            gc.collect()
        done.set()

    threading.Thread(target=collect_under_the_lock, daemon=True).start()
    assert done.wait(10), "the finalizer waited for the lock its own thread holds"
    with pytest.raises(OSError):
        os.fstat(fd)  # the descriptor went at once
    assert [k for k in arrow_file._BLOCKS.data if k[0] == owner]  # the blocks are noted, not yet dropped
    other.read(0, 10)  # the next use of the cache drops them
    assert not [k for k in arrow_file._BLOCKS.data if k[0] == owner] and _cached(other) == [(other._owner, 0)]
    other.close()
