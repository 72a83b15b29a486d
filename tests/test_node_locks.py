"""The locks a node's processes share in a shard cache (fastdata/storage/node_locks.py), one at a time: a lock waits
or says it could not take, the budget lock is exclusive, and a download takes a free slot rather than waiting on
a held one. flock goes with the open file, so two descriptors of one process contend as two processes do."""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

from fastdata.storage.node_locks import NODE_DOWNLOADS, Budget, Slot, lock

WAIT_S = 0.3  # how long a blocked lock is watched not to return


def _entered_in(enter, seconds: float) -> tuple[threading.Event, threading.Thread]:
    """Run `enter()` in a thread; the event is set once it returned."""
    done = threading.Event()

    def run() -> None:
        enter()
        done.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    done.wait(seconds)
    return done, thread


def test_a_lock_waits_for_its_holder_unless_told_not_to(tmp_path: Path) -> None:
    path = tmp_path / "shard.tar"
    holder = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    other = os.open(path, os.O_RDWR)
    waiter = os.open(path, os.O_RDWR)
    try:
        assert lock(holder, fcntl.LOCK_EX) is True
        said: list[bool] = []
        done, _ = _entered_in(lambda: said.append(lock(other, fcntl.LOCK_SH, block=False)), 5)
        assert done.is_set() and said == [False]  # held: said at once
        done, thread = _entered_in(lambda: lock(waiter, fcntl.LOCK_SH), WAIT_S)
        assert not done.is_set()  # waits while the holder downloads
        os.close(holder)
        holder = -1
        thread.join(5)
        assert done.is_set()
        assert lock(other, fcntl.LOCK_SH, block=False) is True  # shared with the waiter now
    finally:
        for fd in (holder, other, waiter):
            if fd >= 0:
                os.close(fd)


def test_the_budget_is_held_by_one_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / ".budget"
    first = Budget(path)
    first.__enter__()
    done, thread = _entered_in(lambda: Budget(path).__enter__(), WAIT_S)
    assert not done.is_set()  # counting and reserving space is one process's at a time
    first.__exit__(None, None, None)
    thread.join(5)
    assert done.is_set()


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_download_takes_a_free_slot_and_waits_only_when_every_slot_is_held(tmp_path: Path) -> None:
    held = [Slot(tmp_path) for _ in range(NODE_DOWNLOADS - 1)]
    for slot in held:  # in threads: a slot that waited on a held one would hang the test, not fail it
        assert _entered_in(slot.__enter__, 5)[0].is_set()
    before = _open_fds()
    last = Slot(tmp_path)
    done, _ = _entered_in(last.__enter__, 5)
    assert done.is_set()  # the one slot left, not a wait on slot 0
    assert _open_fds() == before + 1  # the descriptors of the held slots it tried are closed
    assert sorted(os.listdir(tmp_path)) == [f".slot-{k}" for k in range(NODE_DOWNLOADS)]
    more = Slot(tmp_path)
    done, thread = _entered_in(more.__enter__, WAIT_S)
    assert not done.is_set()  # NODE_DOWNLOADS at once on a node, no more
    held[1].__exit__(None, None, None)
    thread.join(5)
    assert done.is_set()
    for slot in (held[0], *held[2:], last, more):
        slot.__exit__(None, None, None)
