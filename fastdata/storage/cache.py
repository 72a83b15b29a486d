"""The node-local shard cache: one download per shard per node, within a hard byte budget.

Layout (`cache_dir/<first 32 hex of the manifest's sha256>/`, so a changed dataset never mixes with an old one):

    <shard>                  a complete, verified shard (or index) file
    <shard>.<pid>-<n>.tmp    a download in progress, preallocated to its full size (its space is reserved);
                             <n> numbers this process's downloads, so that two never share a file
    locks/<shard>            lock file: exclusive while downloading, shared while a process uses the shard
    locks/.budget            exclusive while the budget is counted and space reserved or freed
    locks/.slot-<k>          one of NODE_DOWNLOADS download slots, held while downloading
    users/<pid>-<n>          one per open cache of a live process (a process may open one dataset twice)
    schedules/<pid>-<n>.json the shards that open cache needs next, in order (read when choosing what to evict)

- `acquire(name)` returns the local path of a shard that stays on disk until `release(name)`: it is used
  at once when complete, else downloaded by exactly one process of the node (the others wait on its lock),
  written to a temporary name, checked (size, sha256) by the fetch function, and renamed into place.
- Before a download its full size is reserved. When the budget would be exceeded, shards no live process
  holds are evicted: first those no process has scheduled (consumed this epoch), then those whose next use
  is farthest. A held shard is never evicted; a budget that cannot fit the next shard is an error naming it.
- At start-up temporary files and schedules of processes that are gone are removed, and when nothing else
  uses the cache (no other process, no other open cache of this process), the lock files too.
- `close()` gives every held shard back and removes this open cache's user entry and schedule; an open cache
  that is garbage-collected unclosed (its loader dropped without `close()`) does the same then, so a process
  that makes a loader per epoch does not pile up held shards, lock descriptors and user entries.

The locks themselves, and how a file names its process, are in node_locks.py.
"""

from __future__ import annotations

import fcntl
import itertools
import json
import logging
import os
import shutil
import stat
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path

from fastdata.errors import StorageError
from fastdata.exiting import stop_if_exiting
from fastdata.json_text import BadJSON, parse_json
from fastdata.storage.node_locks import WAIT_POLL_S, Budget, Slot, alive, lock, pid_of

log = logging.getLogger(__name__)

WAIT_FOR_SPACE_S = 120.0  # how long a download waits for other processes to release shards before failing


def default_cache_dir() -> Path:
    """$FASTDATA_CACHE, else $XDG_CACHE_HOME/fastdata, else ~/.cache/fastdata (the `shards` folder in it)."""
    root = os.environ.get("FASTDATA_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "fastdata")
    return Path(root) / "shards"


_opened = itertools.count()  # numbers the caches this process opens: users/<pid>-<n>
_downloads = itertools.count()  # numbers the downloads this process starts: <shard>.<pid>-<n>.tmp


def _let_go(held: dict[str, int], own: tuple[Path, ...]) -> None:
    """An open cache's end, by `close()` or garbage collection: the lock descriptors of the shards it holds
    closed (their shared locks go with them) and its own files (user entry, schedule) removed."""
    while held:
        os.close(held.popitem()[1])
    for path in own:
        path.unlink(missing_ok=True)


class ShardCache:
    """Files of one dataset (named by its fingerprint) cached in `root`, within `limit` bytes (None: no limit)."""

    def __init__(self, root: Path | str, *, fingerprint: str, limit: int | None) -> None:
        if limit is not None and limit < 1:
            raise ValueError(f"cache_limit must be a positive number of bytes, got {limit}")
        self.dir = Path(root).absolute() / fingerprint[:32]  # a relative cache_dir stays where it was given
        self.limit = limit
        for sub in ("locks", "users", "schedules"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        self._held: dict[str, int] = {}  # name -> fd of its lock file, holding a shared lock
        self._guard = threading.Lock()
        self._acquiring: dict[str, threading.Lock] = {}  # one acquisition of a name at a time in this process
        self.downloads = 0  # files this process downloaded (tests and benchmarks count them)
        self.downloaded_bytes = 0
        self.token = f"{os.getpid()}-{next(_opened)}"  # this open cache among the node's users
        with self._budget():
            self._clean_stale()
            (self.dir / "users" / self.token).touch()
        self._finalizer = weakref.finalize(self, _let_go, self._held, (self.dir / "users" / self.token,
                                                                       self.dir / "schedules" / f"{self.token}.json"))

    # ------------------------------------------------------------------ housekeeping
    def _clean_stale(self) -> None:
        """Temporary files, schedules and users of dead processes; all lock files when nothing else uses the
        cache. Another open cache of this same process counts as a user: its shared locks live on those files."""
        others = False
        for user in (self.dir / "users").iterdir():
            pid = pid_of(user.name)
            if pid is not None and not alive(pid):
                user.unlink(missing_ok=True)
            elif pid is not None and user.name != self.token:
                others = True
        for tmp in self.dir.glob("*.tmp"):
            pid = pid_of(tmp.name.rsplit(".", 2)[-2])
            if pid is None or not alive(pid):
                log.info("removing a stale partial download %s", tmp)
                tmp.unlink(missing_ok=True)
        for sched in (self.dir / "schedules").iterdir():  # <token>.json, and <token>.json.<thread>.tmp cut short
            pid = pid_of(sched.name)
            if pid is None or not alive(pid):
                sched.unlink(missing_ok=True)
        if not others:
            for lock in (self.dir / "locks").iterdir():
                if not lock.name.startswith("."):
                    lock.unlink(missing_ok=True)

    def close(self) -> None:
        """Give every held shard back and leave the node's users; closing twice does nothing."""
        self._finalizer()

    def _budget(self) -> Budget:
        return Budget(self.dir / "locks" / ".budget")

    # ------------------------------------------------------------------ what is where
    def path(self, name: str) -> Path:
        return self.dir / name

    def complete(self, name: str, size: int | None) -> bool:
        """Whether `name` is in the cache whole (files are renamed into place complete; `size` double-checks)."""
        try:
            found = self.path(name).stat().st_size
        except FileNotFoundError:
            return False
        return size is None or found == size

    def used(self) -> int:
        """Bytes in the cache: complete files and reserved temporary files."""
        total = 0
        for p in self.dir.iterdir():
            try:
                st = p.stat()
            except FileNotFoundError:  # a temporary file another thread or process removed meanwhile
                continue
            if stat.S_ISREG(st.st_mode):
                total += st.st_size
        return total

    def schedule(self, names: Sequence[str]) -> None:
        """The shards this open cache needs next, soonest first (what eviction keeps longest)."""
        path = self.dir / "schedules" / f"{self.token}.json"
        # a temporary name per thread: a loader producing its next epoch ahead may write while the current
        # epoch's follower does, and a shared name lost the race (FileNotFoundError at the replace)
        tmp = path.with_name(f"{path.name}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(list(names)))
        os.replace(tmp, path)

    def _next_use(self) -> dict[str, int]:
        """For every shard some live process has scheduled: the soonest position at which one needs it."""
        soonest: dict[str, int] = {}
        for sched in (self.dir / "schedules").glob("*.json"):
            pid = pid_of(sched.name)
            if pid is None or not alive(pid):
                continue
            try:
                names = parse_json(sched.read_bytes())
            except (OSError, BadJSON):
                continue
            for i, name in enumerate(names):
                if isinstance(name, str):
                    soonest[name] = min(i, soonest.get(name, i))
        return soonest

    # ------------------------------------------------------------------ holding shards
    def held(self, name: str) -> bool:
        return name in self._held

    def release(self, name: str) -> None:
        """This process no longer needs `name`: it may be evicted."""
        fd = self._held.pop(name, None)
        if fd is not None:
            os.close(fd)

    def acquire(self, name: str, *, size: int | None, fetch: Callable[[Path], None]) -> Path:
        """The local path of `name`, complete and held until `release(name)`; `fetch(tmp)` downloads it.

        Within a process one thread acquires a name at a time. Across processes the downloader holds the
        name's lock exclusively and users hold it shared; a process that finds the file missing takes the
        exclusive lock only when nobody holds the name (never waiting on a user, who may hold it for long),
        and otherwise looks again shortly: the file is then complete, or a download finished or failed."""
        with self._guard:
            one = self._acquiring.setdefault(name, threading.Lock())
        with one:
            if name in self._held:
                return self.path(name)
            lock_path = self.dir / "locks" / name
            while True:
                fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
                try:
                    lock(fd, fcntl.LOCK_SH)  # waits while a download runs (exclusive)
                    if self.complete(name, size):
                        self._held[name] = fd
                        return self.path(name)
                    fcntl.flock(fd, fcntl.LOCK_UN)
                    if lock(fd, fcntl.LOCK_EX, block=False):  # nobody holds it: this process downloads
                        if not self.complete(name, size):
                            self._download(name, size, fetch)
                        lock(fd, fcntl.LOCK_SH)  # downgrade: now a user like the others
                        if self.complete(name, size):
                            self._held[name] = fd
                            return self.path(name)
                except BaseException:
                    os.close(fd)
                    raise
                os.close(fd)  # held by someone, or evicted meanwhile: look again
                stop_if_exiting(f"the wait for {name}")
                time.sleep(WAIT_POLL_S / 4)

    def _download(self, name: str, size: int | None, fetch: Callable[[Path], None]) -> None:
        # a name of its own: a download of this name by another open cache of this process may still run (its
        # loader let go, lock files then removed as unused); sharing one file, each wrote into the other's
        tmp = self.dir / f"{name}.{os.getpid()}-{next(_downloads)}.tmp"
        self._reserve(name, size or 0, tmp)
        try:
            with self._slot():
                fetch(tmp)
            got = tmp.stat().st_size
            if size is not None and got != size:
                raise StorageError(f"the download of {name} has {got} bytes, expected {size}")
            os.replace(tmp, self.path(name))
        finally:
            tmp.unlink(missing_ok=True)
        self.downloads += 1
        self.downloaded_bytes += got

    def _slot(self) -> Slot:
        """One of the node's download slots: at most NODE_DOWNLOADS downloads run at once on a node."""
        return Slot(self.dir / "locks")

    def _reserve(self, name: str, size: int, tmp: Path) -> None:
        """Make room for `size` bytes (evicting what no process holds) and preallocate `tmp` to that size."""
        if self.limit is not None and size > self.limit:
            raise StorageError(f"{name} has {size} bytes, more than the whole cache_limit ({self.limit} bytes); "
                               "raise cache_limit")
        waited = time.monotonic()
        while True:
            with self._budget():
                if self._make_room(size):
                    with open(tmp, "wb") as f:
                        f.truncate(size)  # counted by every process's `used()` from now on
                    return
            if time.monotonic() - waited > WAIT_FOR_SPACE_S:
                raise StorageError(f"cache_limit {self.limit} bytes cannot fit {name} ({size} bytes): "
                                   f"{self.used()} bytes are held by processes using {self.dir}; raise cache_limit "
                                   "or lower the prefetch depth")
            stop_if_exiting(f"the wait for cache space for {name}")
            time.sleep(WAIT_POLL_S)  # others hold everything: wait for them to release shards

    def _make_room(self, size: int) -> bool:
        """Evict until `size` more bytes fit (caller holds the budget lock); False when nothing more can go."""
        if self.limit is None:
            free = shutil.disk_usage(self.dir).free
            if size > free:
                raise StorageError(f"the disk of {self.dir} has {free} bytes free, {size} are needed; free space "
                                   "or pass cache_limit/cache_dir")
            return True
        used = self.used()
        if used + size <= self.limit:
            return True
        soonest = self._next_use()
        far = 1 << 62
        candidates = sorted((p for p in self.dir.iterdir() if p.is_file() and not p.name.endswith(".tmp")),
                            key=lambda p: (p.name in soonest, -soonest.get(p.name, far)))
        for victim in candidates:
            if self._evict(victim) and self.used() + size <= self.limit:
                return True
        return self.used() + size <= self.limit

    def _evict(self, victim: Path) -> bool:
        """Remove `victim` if no process holds or downloads it."""
        if victim.name in self._held:
            return False
        fd = os.open(self.dir / "locks" / victim.name, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if not lock(fd, fcntl.LOCK_EX, block=False):
                return False
            log.info("evicting %s from the shard cache", victim.name)
            victim.unlink(missing_ok=True)
            return True
        finally:
            os.close(fd)
