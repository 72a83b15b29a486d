"""The node cache on its own: one download however many threads want a file, never a deadlock, a hard
budget, and eviction that takes unscheduled (consumed) files first, then the farthest next use, and never a
file in use."""

from __future__ import annotations

import fcntl
import gc
import os
import re
import threading
import time
from pathlib import Path

import pytest

import fastdata.exiting as exiting
import fastdata.storage.cache as cache_module
from fastdata.errors import StorageError
from fastdata.storage.cache import ShardCache


def writer(data: bytes, calls: list[str], *, delay: float = 0.0):
    def fetch(tmp: Path) -> None:
        calls.append(tmp.name)
        time.sleep(delay)
        tmp.write_bytes(data)

    return fetch


def test_many_threads_one_download_and_no_deadlock(tmp_path: Path):
    cache = ShardCache(tmp_path, fingerprint="a" * 64, limit=10_000)
    calls: list[str] = []
    paths: list[Path] = []

    def worker() -> None:
        paths.append(cache.acquire("s.tar", size=100, fetch=writer(b"x" * 100, calls, delay=0.2)))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert not any(t.is_alive() for t in threads), "a thread is stuck"
    assert len(calls) == 1 and len(paths) == 8 and paths[0].read_bytes() == b"x" * 100
    cache.release("s.tar")
    cache.close()


def test_the_budget_holds_and_a_held_file_is_never_evicted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(cache_module, "WAIT_FOR_SPACE_S", 0.5)
    cache = ShardCache(tmp_path, fingerprint="b" * 64, limit=100)
    calls: list[str] = []
    cache.acquire("a", size=60, fetch=writer(b"a" * 60, calls))
    with pytest.raises(StorageError, match="cannot fit"):
        cache.acquire("b", size=60, fetch=writer(b"b" * 60, calls))
    assert cache.path("a").exists() and cache.used() == 60
    cache.release("a")
    cache.acquire("b", size=60, fetch=writer(b"b" * 60, calls))  # now "a" may go
    assert not cache.path("a").exists() and cache.used() == 60
    with pytest.raises(StorageError, match="whole cache_limit"):
        cache.acquire("huge", size=101, fetch=writer(b"h" * 101, calls))
    cache.close()


def test_eviction_takes_consumed_files_first_then_the_farthest_next_use(tmp_path: Path):
    cache = ShardCache(tmp_path, fingerprint="c" * 64, limit=100)
    calls: list[str] = []
    for name in ("a", "b", "c"):
        cache.acquire(name, size=30, fetch=writer(b"z" * 30, calls))
        cache.release(name)
    cache.schedule(["c", "a"])  # "b" was consumed; "a" is needed after "c"
    cache.acquire("d", size=30, fetch=writer(b"d" * 30, calls))
    assert not cache.path("b").exists() and cache.path("a").exists() and cache.path("c").exists()
    cache.release("d")
    cache.schedule(["c", "d", "a"])
    cache.acquire("e", size=30, fetch=writer(b"e" * 30, calls))
    assert not cache.path("a").exists() and cache.path("c").exists() and cache.path("d").exists()
    cache.close()


def test_a_failed_download_leaves_nothing_and_can_be_retried(tmp_path: Path):
    cache = ShardCache(tmp_path, fingerprint="d" * 64, limit=1000)

    def broken(tmp: Path) -> None:
        tmp.write_bytes(b"half")
        raise StorageError("the network went away")

    with pytest.raises(StorageError, match="went away"):
        cache.acquire("s", size=10, fetch=broken)
    assert not [p for p in cache.dir.glob("s*") if p.is_file()] and cache.used() == 0
    calls: list[str] = []
    assert cache.acquire("s", size=10, fetch=writer(b"0123456789", calls)).read_bytes() == b"0123456789"
    cache.close()


@pytest.mark.parametrize("gone_at_look", [1, 2])
def test_used_skips_a_file_removed_while_it_counts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   gone_at_look: int):
    """Another thread's failed download removes its temporary file between listing and reading its size (a CI
    failure): `used()` counts it or not, and never raises."""
    cache = ShardCache(tmp_path, fingerprint="e" * 64, limit=1000)
    calls: list[str] = []
    cache.acquire("kept", size=10, fetch=writer(b"k" * 10, calls))
    gone = cache.path("s.123.tmp")
    gone.write_bytes(b"t" * 7)
    real_stat = Path.stat
    looks = []

    def vanishing(self: Path, **kw):
        if self == gone:
            looks.append(1)
            if len(looks) == gone_at_look:
                self.unlink()
        return real_stat(self, **kw)

    monkeypatch.setattr(Path, "stat", vanishing)
    assert cache.used() in (10, 17) and looks
    cache.release("kept")
    cache.close()


def test_two_loaders_of_one_process_write_their_schedules_at_once(tmp_path: Path):
    """One loader producing its next epoch ahead while another runs: both write this process's schedule."""
    cache = ShardCache(tmp_path, fingerprint="f" * 64, limit=None)
    errors: list[BaseException] = []

    def write(names: list[str]) -> None:
        try:
            for _ in range(300):
                cache.schedule(names)
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=([f"s{k}.tar"],)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert not list((cache.dir / "schedules").glob("*.tmp"))  # every write replaced its own file


def test_a_schedule_write_cut_short_by_a_dead_process_is_removed_at_open(tmp_path: Path):
    first = ShardCache(tmp_path, fingerprint="f" * 64, limit=None)
    schedules = first.dir / "schedules"
    dead = schedules / "999999999-0.json.140000.tmp"  # no such process
    mine = schedules / f"{os.getpid()}-0.json.140000.tmp"  # a live process's write in flight
    dead.write_text("[]")
    mine.write_text("[]")
    ShardCache(tmp_path, fingerprint="f" * 64, limit=None)
    assert not dead.exists() and mine.exists()


def test_two_open_caches_of_one_process_keep_each_others_files_and_holds(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch):
    """A train and a val loader of one remote dataset open its cache twice in one process: opening or closing
    one must not take away the other's lock files (its holds), user entry or schedule."""
    monkeypatch.setattr(cache_module, "WAIT_FOR_SPACE_S", 0.3)
    calls: list[str] = []
    train = ShardCache(tmp_path, fingerprint="e" * 64, limit=100)
    train.acquire("a", size=60, fetch=writer(b"a" * 60, calls))  # held while train reads it
    train.schedule(["a"])
    val = ShardCache(tmp_path, fingerprint="e" * 64, limit=100)
    with pytest.raises(StorageError, match="cannot fit"):  # "a" is held by the other open cache
        val.acquire("b", size=60, fetch=writer(b"b" * 60, calls))
    assert train.path("a").read_bytes() == b"a" * 60
    assert sorted(p.name for p in (train.dir / "schedules").iterdir()) == [f"{train.token}.json"]
    val.close()
    assert [p.name for p in (train.dir / "users").iterdir()] == [train.token]
    assert (train.dir / "schedules" / f"{train.token}.json").exists()
    again = ShardCache(tmp_path, fingerprint="e" * 64, limit=100)  # opened after the other closed: same rules
    with pytest.raises(StorageError, match="cannot fit"):
        again.acquire("b", size=60, fetch=writer(b"b" * 60, calls))
    train.release("a")
    again.acquire("b", size=60, fetch=writer(b"b" * 60, calls))  # now "a" may go
    assert not train.path("a").exists()
    again.close()
    train.close()
    assert not list((train.dir / "users").iterdir()) and not list((train.dir / "schedules").iterdir())


def test_a_download_left_running_by_a_closed_cache_never_shares_a_file_with_a_new_one(tmp_path: Path):
    """A loader let go while its prefetch still downloads a shard: its open cache closes (user entry gone), so a
    cache opened next removes the lock files as unused and downloads the same shard at once. The two downloads
    once shared `<shard>.<pid>.tmp`: the old one wrote into the file the new one had renamed into place (a
    complete-looking shard of mixed bytes) and then failed with FileNotFoundError (found by the remote fuzz
    target)."""
    old = ShardCache(tmp_path, fingerprint="d" * 64, limit=None)
    opened, go, errors = threading.Event(), threading.Event(), []

    def slow(tmp: Path) -> None:  # a download that opened its file, then is slow to write
        with open(tmp, "wb") as f:
            opened.set()
            go.wait(10)
            f.write(b"o" * 100)

    def left_running() -> None:
        try:
            old.acquire("s.tar", size=100, fetch=slow)
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion below
            errors.append(exc)

    thread = threading.Thread(target=left_running)
    thread.start()
    assert opened.wait(10)
    old.close()
    new = ShardCache(tmp_path, fingerprint="d" * 64, limit=None)
    path = new.acquire("s.tar", size=100, fetch=writer(b"n" * 100, []))
    assert path.read_bytes() == b"n" * 100
    go.set()
    thread.join(10)
    assert not errors and path.read_bytes() in (b"n" * 100, b"o" * 100)  # one download's bytes, whole
    assert not list(new.dir.glob("*.tmp"))
    new.close()


def test_an_exit_ends_a_wait_for_cache_space(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Waiting for other processes to release shards (up to WAIT_FOR_SPACE_S) ends when the process exits."""
    monkeypatch.setattr(exiting, "EXITING", threading.Event())
    cache = ShardCache(tmp_path, fingerprint="f" * 64, limit=100)
    calls: list[str] = []
    cache.acquire("a", size=60, fetch=writer(b"a" * 60, calls))  # held: "b" must wait for space
    threading.Timer(0.5, exiting.EXITING.set).start()
    started = time.monotonic()
    with pytest.raises(StorageError, match="cache space for b abandoned: the process is exiting"):
        cache.acquire("b", size=60, fetch=writer(b"b" * 60, calls))
    assert time.monotonic() - started < 2.0 and len(calls) == 1
    assert re.fullmatch(rf"a\.{os.getpid()}-\d+\.tmp", calls[0])
    assert not list(cache.dir.glob("*.tmp"))
    cache.close()


def test_an_open_cache_dropped_unclosed_gives_its_holds_and_entries_back(tmp_path: Path):
    """A loader dropped without close(): once its open cache is garbage-collected, its held shards may be evicted
    by another open cache, and its user entry, schedule and lock descriptors are gone."""
    calls: list[str] = []
    dropped = ShardCache(tmp_path, fingerprint="d" * 64, limit=100)
    dropped.acquire("a", size=60, fetch=writer(b"a" * 60, calls))
    dropped.schedule(["a"])
    dropped_lock = dropped.dir / "locks" / "a"
    users, schedules = dropped.dir / "users", dropped.dir / "schedules"
    assert len(list(users.iterdir())) == 1 and len(list(schedules.iterdir())) == 1
    del dropped
    gc.collect()
    assert not list(users.iterdir()) and not list(schedules.iterdir())
    probe = os.open(dropped_lock, os.O_RDWR)
    try:  # the shared lock went with the descriptor that held it: an exclusive one is free to take
        fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(probe)
    other = ShardCache(tmp_path, fingerprint="d" * 64, limit=100)
    other.acquire("b", size=60, fetch=writer(b"b" * 60, calls))  # "a" is no longer held: it may go
    assert not other.path("a").exists() and other.path("b").read_bytes() == b"b" * 60
    other.close()
    other.close()  # twice: nothing happens
