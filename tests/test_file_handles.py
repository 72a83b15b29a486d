"""The shard descriptors the decode threads share (fastdata/images/file_handles.py): one descriptor a file while
it stays open, idle ones closed least recently used first beyond the capacity, one in use never closed, and
`drop` (a shard a remote plan is past) closing an idle descriptor at once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fastdata.images.file_handles import FileHandles


def is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


@pytest.fixture
def files(tmp_path: Path) -> list[Path]:
    paths = [tmp_path / f"s{i}.tar" for i in range(3)]
    for p in paths:
        p.write_bytes(p.name.encode())
    return paths


def test_one_descriptor_a_file_and_the_idle_ones_beyond_capacity_closed_oldest_first(files: list[Path]):
    h = FileHandles(capacity=2)
    a = h.acquire(files[0])
    assert h.acquire(files[0]) == a and os.pread(a, 6, 0) == b"s0.tar"
    h.release(files[0])
    h.release(files[0])
    b = h.acquire(files[1])
    h.release(files[1])
    c = h.acquire(files[2])  # a third file: the oldest idle one (s0) goes
    h.release(files[2])
    assert len(h) == 2 and not is_open(a) and is_open(b) and is_open(c)
    h.close()
    assert len(h) == 0 and not is_open(b) and not is_open(c)


def test_a_descriptor_in_use_is_never_closed_by_the_capacity(files: list[Path]):
    h = FileHandles(capacity=1)
    a = h.acquire(files[0])  # held
    b = h.acquire(files[1])
    assert len(h) == 2 and is_open(a) and is_open(b)  # over capacity: nothing idle to close
    h.release(files[1])  # now b is idle and over capacity
    assert len(h) == 1 and is_open(a) and not is_open(b)
    assert os.pread(a, 6, 0) == b"s0.tar"
    h.release(files[0])
    h.close()


def test_drop_closes_an_idle_descriptor_now_and_leaves_one_in_use(files: list[Path]):
    h = FileHandles(capacity=8)
    a = h.acquire(files[0])
    b = h.acquire(files[1])
    h.release(files[1])
    h.drop(files[1])  # idle: closed now
    assert not is_open(b) and len(h) == 1
    h.drop(files[0])  # in use: kept
    assert is_open(a) and len(h) == 1 and os.pread(a, 6, 0) == b"s0.tar"
    h.drop(files[2])  # never opened: nothing to do
    h.release(files[0])
    h.drop(files[0])
    assert not is_open(a) and len(h) == 0
    again = h.acquire(files[0])  # read again: opened again
    assert os.pread(again, 6, 0) == b"s0.tar"
    h.release(files[0])
    h.close()


def test_capacity_must_be_positive():
    with pytest.raises(ValueError, match="capacity must be >= 1, got 0"):
        FileHandles(capacity=0)


def test_two_threads_opening_the_same_file_at_once_share_one_descriptor(files: list[Path],
                                                                        monkeypatch: pytest.MonkeyPatch):
    """The open runs outside the lock; when another thread has opened the file meanwhile, the later open is
    closed again and both readers use the first descriptor (counted twice, so it stays open for both)."""
    import fastdata.images.file_handles as file_handles

    h = FileHandles(capacity=1)
    opened: list[int] = []
    real_open = os.open

    def racing_open(path: Path, flags: int) -> int:
        fd = real_open(path, flags)
        opened.append(fd)
        if len(opened) == 1:  # while this open is under way, another thread acquires the same file
            assert h.acquire(path) == opened[1]
        return fd

    monkeypatch.setattr(file_handles.os, "open", racing_open)
    fd = h.acquire(files[0])
    assert len(opened) == 2 and fd == opened[1] and not is_open(opened[0]) and len(h) == 1
    h.release(files[0])
    h.acquire(files[1])  # over capacity, but the shared descriptor still has a user: kept
    assert is_open(fd)
    h.release(files[0])
    h.release(files[1])
    assert not is_open(fd) and len(h) == 1
    h.close()


def test_descriptors_are_closed_when_the_handles_are_garbage_collected(files: list[Path]):
    import gc

    h = FileHandles(capacity=4)
    fds = [h.acquire(p) for p in files]
    for p in files:
        h.release(p)
    del h
    gc.collect()
    assert not any(map(is_open, fds))


def test_a_file_read_again_is_not_opened_again(files: list[Path], monkeypatch: pytest.MonkeyPatch):
    """What the handles are for: one open a file while its descriptor stays, however many samples are read."""
    import fastdata.images.file_handles as file_handles

    opens: list[Path] = []
    real_open = os.open
    monkeypatch.setattr(file_handles.os, "open", lambda path, flags: opens.append(path) or real_open(path, flags))
    h = FileHandles(capacity=2)
    for _ in range(3):
        for p in files[:2]:
            h.acquire(p)
            h.release(p)
    assert opens == files[:2]
    h.close()
