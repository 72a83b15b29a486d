"""The node cache's bookkeeping read back on its own: which process a file is named after, whether it lives, the
soonest next use over every live schedule, and one eviction (held, locked by another process, already gone)."""

from __future__ import annotations

import fcntl
import json
import logging
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import current_umask

from fastdata.storage.cache import ShardCache, default_cache_dir
from fastdata.storage.node_locks import alive, pid_of


@pytest.fixture(scope="module")
def dead_pid() -> int:
    """The pid of a process that has exited (and was reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.mark.parametrize("name,pid", [
    ("123", 123), ("123.json", 123), ("123-4.json", 123), ("123-4-5.json", 123), ("123.json.140001.tmp", 123),
    ("123-4.json.77.tmp", 123), ("2147483647-0.json", 2147483647), ("12345678901-0.json", None), ("x1-0.json", None),
    (".json", None), ("-1.json", None), (" 1.json", None)])
def test_the_process_a_file_is_named_after(name: str, pid: int | None) -> None:
    assert pid_of(name) == pid


def test_a_live_process_lives_and_an_exited_one_does_not(dead_pid: int) -> None:
    assert alive(os.getpid()) is True and alive(1) is True  # init: alive, owned by another user or not
    assert alive(dead_pid) is False and alive(2**40) is False  # more than a pid_t holds


def test_a_process_of_another_user_that_may_not_be_signalled_lives(monkeypatch: pytest.MonkeyPatch) -> None:
    def kill(pid: int, sig: int) -> None:
        assert sig == 0  # a probe, never a signal
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "kill", kill)
    assert alive(4242) is True


def write_schedule(cache: ShardCache, token: str, names: list) -> None:
    (cache.dir / "schedules" / f"{token}.json").write_text(json.dumps(names))


def test_the_soonest_use_over_every_live_schedule(tmp_path: Path, dead_pid: int) -> None:
    cache = ShardCache(tmp_path, fingerprint="c" * 64, limit=None)
    me = os.getpid()
    write_schedule(cache, f"{dead_pid}-0", ["gone.tar"])  # a dead process's schedule counts for nothing
    (cache.dir / "schedules" / "nobody.json").write_text('["nameless.tar"]')  # no pid in the name
    (cache.dir / "schedules" / f"{me}-90.json").write_text('["cut short')  # not JSON: skipped, not fatal
    write_schedule(cache, f"{me}-91", ["z.tar", "y.tar", "z.tar", 7, "x.tar"])  # z.tar twice: its first place
    write_schedule(cache, f"{me}-92", ["x.tar", "w.tar"])
    assert cache._next_use() == {"z.tar": 0, "y.tar": 1, "x.tar": 0, "w.tar": 1}
    cache.close()


def test_one_eviction(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cache = ShardCache(tmp_path, fingerprint="d" * 64, limit=None)
    held = cache.acquire("held.tar", size=3, fetch=lambda tmp: tmp.write_bytes(b"abc"))
    assert cache._evict(held) is False and held.exists()  # this process holds it
    free = cache.path("free.tar")
    free.write_bytes(b"xyz")
    other = os.open(cache.dir / "locks" / "free.tar", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(other, fcntl.LOCK_SH)  # another user (an open file description of its own) reads it
    try:
        assert cache._evict(free) is False and free.exists()
    finally:
        os.close(other)
    with caplog.at_level(logging.INFO, logger="fastdata.storage.cache"):
        assert cache._evict(free) is True and not free.exists()
    assert [r.getMessage() for r in caplog.records] == ["evicting free.tar from the shard cache"]
    assert cache._evict(cache.path("never.tar")) is True  # already gone: nothing to remove, no error
    lock = cache.dir / "locks" / "never.tar"  # the lock file it made is readable by every user of the node
    assert stat.S_IMODE(lock.stat().st_mode) == 0o644 & ~current_umask()
    cache.release("held.tar")
    cache.close()



def test_the_default_cache_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("FASTDATA_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "fastdata" / "shards"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "fastdata" / "shards"
    monkeypatch.setenv("FASTDATA_CACHE", str(tmp_path / "mine"))  # the project's own variable comes first
    assert default_cache_dir() == tmp_path / "mine" / "shards"
